/* bench/ike-bench-vici.c: the timing client of bench/ike-bench. It drives one xipsec-iked over VICI
 * (libvici) and times each exchange from the request to charon's reply, which charon sends once the
 * IKE SA / CHILD SA is established and installed (in the SADB):
 *   ike-bench-vici URI ike NAME N        initiate IKE SA NAME alone (no CHILD SA) N times, terminating
 *                                        it after each; prints one line "ike <µs>" per try
 *   ike-bench-vici URI child IKE C...    initiate CHILD SAs C... of IKE (on the established IKE SA),
 *                                        prints "child <µs>" per CHILD SA
 *   ike-bench-vici URI terminate IKE     terminate IKE SA IKE
 *   ike-bench-vici URI bringup STATUS IKE C...
 *                                        bring up CHILD SAs C... of IKE one after the other the way an
 *                                        operator's script would under maxqm: before each one (and after
 *                                        the last) wait until xipsec-iked's status file STATUS counts the
 *                                        CHILD SAs so far and shows no IKE SA renewing, so that every
 *                                        CHILD SA goes on the IKE SA that maxqm leaves; prints "child <µs>" per CHILD SA and one line
 *                                        "bringup <µs> <count>" for the whole series, waits included
 * Process start-up and terminations are outside the timed spans. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvici.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* 0 on success; prints charon's error otherwise. */
static int call(vici_conn_t *c, const char *cmd, const char *ike, const char *child)
{
	vici_req_t *req = vici_begin((char *)cmd);
	vici_res_t *res;
	int rc = 0;

	if (ike)
		vici_add_key_valuef(req, "ike", "%s", ike);
	if (child)
		vici_add_key_valuef(req, "child", "%s", child);
	vici_add_key_valuef(req, "timeout", "%d", 20000);
	if (strcmp(cmd, "initiate") == 0)
		vici_add_key_valuef(req, "init-limits", "no");
	res = vici_submit(req, c);
	if (!res) {
		fprintf(stderr, "ike-bench-vici: %s: %s\n", cmd, strerror(errno));
		return -1;
	}
	if (strcmp(vici_find_str(res, "no", "success"), "yes") != 0) {
		fprintf(stderr, "ike-bench-vici: %s %s %s: %s\n", cmd, ike ? ike : "", child ? child : "",
			vici_find_str(res, "?", "errmsg"));
		rc = -1;
	}
	vici_free_res(res);
	return rc;
}

/* The counter KEY of xipsec-iked's status file STATUS, -1 if the file cannot be read (the daemon
 * rewrites it by rename: it is absent only for a moment); *renewing: a maxqm renewal is under way. */
static long status_get(const char *status, const char *key, int *renewing)
{
	char line[512], k[64];
	long v, found = -1;
	FILE *f = fopen(status, "r");

	if (!f)
		return -1;
	*renewing = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " renewing"))
			*renewing = 1;
		if (sscanf(line, "%63s %ld", k, &v) == 2 && strcmp(k, key) == 0)
			found = v;
	}
	fclose(f);
	return found;
}

/* 0 once the daemon has counted at least `want` CHILD SAs (its maxqm listener has seen the last one,
 * which may have started a renewal: charon answers the initiate before every listener has run) and no
 * IKE SA is renewing; -1 after 30 s. */
static int settled(const char *status, long want)
{
	double end = now_us() + 30e6;
	int renewing = 1;

	while (now_us() < end) {
		long n = status_get(status, "child_sa_established", &renewing);

		if (n >= want && !renewing)
			return 0;
		usleep(500);
	}
	fprintf(stderr, "ike-bench-vici: %s: the CHILD SAs are not all counted or a renewal is still under way after 30 s\n", status);
	return -1;
}

int main(int argc, char **argv)
{
	vici_conn_t *c;
	int rc = 0, i;

	if (argc < 4) {
		fprintf(stderr, "usage: %s URI ike NAME N | child IKE CHILD... | bringup STATUS IKE CHILD... | terminate IKE\n", argv[0]);
		return 2;
	}
	vici_init();
	c = vici_connect(argv[1]);
	if (!c) {
		fprintf(stderr, "ike-bench-vici: cannot connect to %s: %s\n", argv[1], strerror(errno));
		vici_deinit();
		return 1;
	}
	if (strcmp(argv[2], "ike") == 0 && argc == 5) {
		int n = atoi(argv[4]);

		for (i = 0; i < n && rc == 0; i++) {
			double t0 = now_us();

			rc = call(c, "initiate", argv[3], NULL);
			if (rc == 0)
				printf("ike %.0f\n", now_us() - t0);
			if (rc == 0)
				rc = call(c, "terminate", argv[3], NULL);
		}
	} else if (strcmp(argv[2], "child") == 0) {
		for (i = 4; i < argc && rc == 0; i++) {
			double t0 = now_us();

			rc = call(c, "initiate", argv[3], argv[i]);
			if (rc == 0)
				printf("child %.0f\n", now_us() - t0);
		}
	} else if (strcmp(argv[2], "bringup") == 0 && argc >= 6) {
		double t0 = now_us();
		int renewing;
		long base = status_get(argv[3], "child_sa_established", &renewing);

		if (base < 0) {
			fprintf(stderr, "ike-bench-vici: cannot read child_sa_established from %s\n", argv[3]);
			rc = -1;
		}
		for (i = 5; i < argc && rc == 0; i++) {
			double t1;

			rc = settled(argv[3], base + (i - 5));
			t1 = now_us();
			if (rc == 0)
				rc = call(c, "initiate", argv[4], argv[i]);
			if (rc == 0)
				printf("child %.0f\n", now_us() - t1);
		}
		if (rc == 0)
			rc = settled(argv[3], base + (argc - 5));
		if (rc == 0)
			printf("bringup %.0f %d\n", now_us() - t0, argc - 5);
	} else if (strcmp(argv[2], "terminate") == 0) {
		rc = call(c, "terminate", argv[3], NULL);
	} else {
		fprintf(stderr, "ike-bench-vici: unknown command %s\n", argv[2]);
		rc = -2;
	}
	fflush(stdout);
	vici_disconnect(c);
	vici_deinit();
	return rc == -2 ? 2 : rc ? 1 : 0;
}
