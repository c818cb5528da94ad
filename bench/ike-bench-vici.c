/* bench/ike-bench-vici.c: the timing client of bench/ike-bench. It drives one xipsec-iked over VICI
 * (libvici) and times each exchange from the request to charon's reply, which charon sends once the
 * IKE SA / CHILD SA is established and installed (in the SADB):
 *   ike-bench-vici URI ike NAME N [CHILD]
 *                                        initiate IKE SA NAME alone (no CHILD SA; with CHILD, with its
 *                                        first CHILD SA CHILD) N times, terminating it after each; prints
 *                                        one line "ike <µs>" per try
 *   ike-bench-vici URI up P N NAME       bring up N IKE SAs of connection NAME (alone) from scratch, none
 *                                        terminated, over P VICI connections in parallel (the daemon
 *                                        runs with reuse_ikesa = no, so each initiate makes a new one);
 *                                        prints "up <µs>" per IKE SA, the time since the start at which
 *                                        it was established, in order, then "span <N> <µs>"
 *   ike-bench-vici URI rekey NAME N      rekey IKE SA NAME N times one after the other, each timed from
 *                                        the request to charon's "ike-rekey" event (the new IKE SA is
 *                                        established; charon's rekey command only queues the job);
 *                                        prints "rekey <µs>" per rekey
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
 *   ike-bench-vici URI rate P K SADB...  the installation rate over P IKE SAs in parallel, the way a
 *                                        remote-access gateway sees CHILD SAs arrive: P threads, one
 *                                        VICI connection each (P written FIRST-LAST: IKE SAs r<FIRST>..
 *                                        r<LAST>, for rounds on top of earlier ones); thread p brings up IKE SA r<p> with its
 *                                        CHILD SA c1 (untimed), then, once all P are up, initiates
 *                                        c2..c<K+1> of r<p> back to back. The span ends when every SADB
 *                                        named holds the 2*P*K new mature SAs of the IKE daemons (SAs
 *                                        read from the SADB, not VICI's answers). Prints "child <µs>" per
 *                                        CHILD SA and "rate <CHILD SAs> <µs>"
 *   ike-bench-vici URI rate-queue P K SADB...
 *                                        the same, but each thread hands its K initiations to charon
 *                                        without waiting for them (VICI timeout -1): they queue on the
 *                                        IKE SA, which runs them back to back; only the SADBs tell when
 *                                        they are in. Prints "rate <CHILD SAs> <µs>"
 * Process start-up and terminations are outside the timed spans. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvici.h>

#include "sadb/sadb.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int call_t(vici_conn_t *c, const char *cmd, const char *ike, const char *child, int timeout);

/* 0 on success; prints charon's error otherwise. */
static int call(vici_conn_t *c, const char *cmd, const char *ike, const char *child)
{
	return call_t(c, cmd, ike, child, 20000);
}

/* call with charon's wait: timeout ms, or -1 to return once the exchange is queued on its IKE SA. */
static int call_t(vici_conn_t *c, const char *cmd, const char *ike, const char *child, int timeout)
{
	vici_req_t *req = vici_begin((char *)cmd);
	vici_res_t *res;
	int rc = 0;

	if (ike)
		vici_add_key_valuef(req, "ike", "%s", ike);
	if (child)
		vici_add_key_valuef(req, "child", "%s", child);
	vici_add_key_valuef(req, "timeout", "%d", timeout);
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

/* Mature SAs an IKE daemon installed (ike_id set): manual SAs and reserved SPIs are not counted. */
static long sadb_count(struct sadb *db)
{
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	long n = 0;

	while (sadb_sa_next(db, &cur, &sa, &slot) == 0)
		if (sa.state == SADB_STATE_MATURE && sa.ike_id)
			n++;
	return n;
}

struct rate_arg {
	const char *uri;
	int p, k;                   /* IKE SA r<p>, K CHILD SAs */
	bool queue;                 /* initiate without waiting: all K queue on the IKE SA at once */
	pthread_barrier_t *bar;
	double *us;                 /* k latencies */
	int rc;
};

static void *rate_thread(void *v)
{
	struct rate_arg *a = v;
	char ike[32], child[32];
	vici_conn_t *c = vici_connect((char *)a->uri);
	int i, rc = 0;

	snprintf(ike, sizeof(ike), "r%d", a->p);
	if (!c) {
		fprintf(stderr, "ike-bench-vici: cannot connect to %s: %s\n", a->uri, strerror(errno));
		rc = -1;
	}
	if (rc == 0)
		rc = call(c, "initiate", ike, "c1");
	/* everybody waits here, failed or not, so that no thread stays blocked */
	pthread_barrier_wait(a->bar);
	pthread_barrier_wait(a->bar);
	for (i = 0; i < a->k && rc == 0; i++) {
		double t0 = now_us();

		snprintf(child, sizeof(child), "c%d", i + 2);
		rc = call_t(c, "initiate", ike, child, a->queue ? -1 : 20000);
		a->us[i] = now_us() - t0;
	}
	if (c)
		vici_disconnect(c);
	a->rc = rc;
	return NULL;
}

static int rate(const char *uri, int first, int p, int k, bool queue, char **paths, int npaths)
{
	struct rate_arg *args = calloc(p, sizeof(*args));
	double *us = calloc((size_t)p * k, sizeof(*us));
	struct sadb *db[8];
	long base[8];
	pthread_t *th = calloc(p, sizeof(*th));
	pthread_barrier_t bar;
	double t0, end;
	char err[256];
	int i, rc = 0, done;

	if (!args || !us || !th || npaths > 8)
		return -1;
	for (i = 0; i < npaths; i++) {
		if (sadb_open(paths[i], SADB_RDONLY, NULL, &db[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "ike-bench-vici: %s: %s\n", paths[i], err);
			return -1;
		}
	}
	pthread_barrier_init(&bar, NULL, p + 1);
	for (i = 0; i < p; i++) {
		args[i] = (struct rate_arg){ .uri = uri, .p = first + i, .k = k, .queue = queue, .bar = &bar,
					     .us = us + (size_t)i * k };
		pthread_create(&th[i], NULL, rate_thread, &args[i]);
	}
	pthread_barrier_wait(&bar);
	/* the CHILD SAs of the set-up are in: count from here */
	for (i = 0; i < npaths; i++)
		base[i] = sadb_count(db[i]);
	t0 = now_us();
	pthread_barrier_wait(&bar);
	for (i = 0; i < p; i++) {
		pthread_join(th[i], NULL);
		if (args[i].rc)
			rc = -1;
	}
	end = now_us() + 30e6;
	do {
		done = 1;
		for (i = 0; i < npaths && rc == 0 && done; i++) {
			struct sadb_info in;

			/* the cheap count (reserved SPIs included) first: a full walk costs the daemons CPU */
			if (sadb_info(db[i], &in) < 0 || in.n_sa < base[i] + 2L * p * k ||
			    sadb_count(db[i]) < base[i] + 2L * p * k)
				done = 0;
		}
		if (!done)
			usleep(1000);
	} while (rc == 0 && !done && now_us() < end);
	if (rc == 0 && !done) {
		fprintf(stderr, "ike-bench-vici: the SADBs do not hold the %d new SAs after 30 s\n", 2 * p * k);
		rc = -1;
	}
	if (rc == 0) {
		double span = now_us() - t0;

		for (i = 0; i < p * k && !queue; i++)
			printf("child %.0f\n", us[i]);
		printf("rate %d %.0f\n", p * k, span);
	}
	for (i = 0; i < npaths; i++)
		sadb_close(db[i]);
	pthread_barrier_destroy(&bar);
	free(args);
	free(us);
	free(th);
	return rc;
}

struct up_arg {
	const char *uri, *name;
	int n;
	int *next;                  /* the next IKE SA to bring up, shared */
	int *done;
	double t0, *at;             /* the time each IKE SA was up, since t0 */
	pthread_mutex_t *mu;
	int rc;
};

static void *up_thread(void *v)
{
	struct up_arg *a = v;
	vici_conn_t *c = vici_connect((char *)a->uri);
	int rc = c ? 0 : -1;

	if (!c)
		fprintf(stderr, "ike-bench-vici: cannot connect to %s: %s\n", a->uri, strerror(errno));
	while (rc == 0) {
		double t;

		pthread_mutex_lock(a->mu);
		if (*a->next >= a->n) {
			pthread_mutex_unlock(a->mu);
			break;
		}
		(*a->next)++;
		pthread_mutex_unlock(a->mu);
		rc = call(c, "initiate", a->name, NULL);
		t = now_us() - a->t0;
		pthread_mutex_lock(a->mu);
		if (rc == 0)
			a->at[(*a->done)++] = t;
		pthread_mutex_unlock(a->mu);
	}
	if (c)
		vici_disconnect(c);
	a->rc = rc;
	return NULL;
}

/* N IKE SAs of NAME from scratch over P connections; the completion times are recorded under the
 * lock in the order they came, so they are sorted already. */
static int up(const char *uri, int p, int n, const char *name)
{
	struct up_arg *args = calloc(p, sizeof(*args));
	pthread_t *th = calloc(p, sizeof(*th));
	double *at = calloc(n, sizeof(*at)), t0;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int i, next = 0, done = 0, rc = 0;

	if (!args || !th || !at) {
		free(args);
		free(th);
		free(at);
		return -1;
	}
	t0 = now_us();
	for (i = 0; i < p; i++) {
		args[i] = (struct up_arg){ .uri = uri, .name = name, .n = n, .next = &next, .done = &done,
					   .t0 = t0, .at = at, .mu = &mu };
		pthread_create(&th[i], NULL, up_thread, &args[i]);
	}
	for (i = 0; i < p; i++) {
		pthread_join(th[i], NULL);
		if (args[i].rc)
			rc = -1;
	}
	for (i = 0; i < done; i++)
		printf("up %.0f\n", at[i]);
	if (rc == 0)
		printf("span %d %.0f\n", done, now_us() - t0);
	free(args);
	free(th);
	free(at);
	return rc;
}

struct rekey_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int seen;
};

static void rekey_event(void *user, char *name, vici_res_t *ev)
{
	struct rekey_wait *w = user;

	(void)name;
	(void)ev;
	pthread_mutex_lock(&w->mu);
	w->seen++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* N rekeys of IKE SA NAME, one after the other, each until its "ike-rekey" event (20 s at most). */
static int rekey(vici_conn_t *c, const char *name, int n)
{
	struct rekey_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	int i, rc = 0;

	if (vici_register(c, "ike-rekey", rekey_event, &w) != 0) {
		fprintf(stderr, "ike-bench-vici: cannot register for ike-rekey events: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < n && rc == 0; i++) {
		double t0 = now_us();
		struct timespec end;

		rc = call(c, "rekey", name, NULL);
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_sec += 20;
		pthread_mutex_lock(&w.mu);
		while (rc == 0 && w.seen <= i)
			if (pthread_cond_timedwait(&w.cv, &w.mu, &end) == ETIMEDOUT) {
				fprintf(stderr, "ike-bench-vici: rekey %d of %s: no ike-rekey event within 20 s\n", i + 1, name);
				rc = -1;
			}
		pthread_mutex_unlock(&w.mu);
		if (rc == 0)
			printf("rekey %.0f\n", now_us() - t0);
	}
	vici_register(c, "ike-rekey", NULL, NULL);
	return rc;
}

int main(int argc, char **argv)
{
	vici_conn_t *c;
	int rc = 0, i;

	if (argc < 4) {
		fprintf(stderr, "usage: %s URI ike NAME N [CHILD] | child IKE CHILD... | bringup STATUS IKE CHILD... | rate[-queue] P|FIRST-LAST K SADB... | up P N NAME | rekey NAME N | terminate IKE\n", argv[0]);
		return 2;
	}
	vici_init();
	c = vici_connect(argv[1]);
	if (!c) {
		fprintf(stderr, "ike-bench-vici: cannot connect to %s: %s\n", argv[1], strerror(errno));
		vici_deinit();
		return 1;
	}
	if (strcmp(argv[2], "ike") == 0 && (argc == 5 || argc == 6)) {
		int n = atoi(argv[4]);

		for (i = 0; i < n && rc == 0; i++) {
			double t0 = now_us();

			rc = call(c, "initiate", argv[3], argc == 6 ? argv[5] : NULL);
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
	} else if ((strcmp(argv[2], "rate") == 0 || strcmp(argv[2], "rate-queue") == 0) && argc >= 6) {
		int first = 1, last = 0, k = atoi(argv[4]);

		if (sscanf(argv[3], "%d-%d", &first, &last) != 2) {
			first = 1;
			last = atoi(argv[3]);
		}
		if (first < 1 || last - first < 0 || last - first >= 1024 || k < 1 || k > 100000) {
			fprintf(stderr, "ike-bench-vici: rate: P (or FIRST-LAST) must span 1-1024 IKE SAs and K be 1-100000\n");
			rc = -2;
		} else {
			rc = rate(argv[1], first, last - first + 1, k, strcmp(argv[2], "rate-queue") == 0, argv + 5, argc - 5);
		}
	} else if (strcmp(argv[2], "up") == 0 && argc == 6) {
		int p = atoi(argv[3]), n = atoi(argv[4]);

		if (p < 1 || p > 1024 || n < 1 || n > 1000000) {
			fprintf(stderr, "ike-bench-vici: up: P must be 1-1024 and N 1-1000000\n");
			rc = -2;
		} else {
			rc = up(argv[1], p, n, argv[5]);
		}
	} else if (strcmp(argv[2], "rekey") == 0 && argc == 5) {
		rc = rekey(c, argv[3], atoi(argv[4]));
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
