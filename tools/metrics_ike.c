/* tools/metrics_ike.c: the xipsec-iked part of the metrics collection layer. Two sources:
 *  - VICI (libvici, the daemon's charon.vici socket): IKE SAs and CHILD SAs counted by state
 *    (list-sas), half-open IKE SAs (stats) and charon's counters plugin (get-counters, the global
 *    set) — only when built with strongSwan;
 *  - the daemon's status file in its run directory (ike/maxqm.c writes it atomically): the counters
 *    xipsec-iked keeps itself (IKE SAs and Quick Modes established, rekeys, maxqm renewals, SADB adds
 *    and deletes, expiries). Read only while the pid it names runs, so a stale file of a daemon that
 *    died counts nothing. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/metrics_int.h"

#define IKE_DEFAULT_RUN_DIR "/run/xipsec-iked"
#define IKE_ENV_RUN_DIR     "XIPSEC_IKED_RUN"

static const char *run_dir(const struct xm_opts *o)
{
	const char *d = o->ike_run_dir;

	if (!d || !*d)
		d = getenv(IKE_ENV_RUN_DIR);
	return d && *d ? d : IKE_DEFAULT_RUN_DIR;
}

static const struct {
	const char *key;
	enum xm_id id;
} status_keys[] = {
	{ "ike_sa_established", XM_IKE_ESTABLISHED },
	{ "main_modes", XM_IKE_MAIN_MODES },
	{ "ikev2_ike_sas", XM_IKE_V2_SAS },
	{ "child_sa_established", XM_IKE_CHILD_ESTABLISHED },
	{ "child_sa_rekeyed", XM_IKE_CHILD_REKEYED },
	{ "maxqm_renewals", XM_IKE_MAXQM_RENEWALS },
	{ "sadb_sa_added", XM_IKE_SADB_ADDED },
	{ "sadb_sa_deleted", XM_IKE_SADB_DELETED },
	{ "sadb_soft_expired", XM_IKE_SOFT_EXPIRED },
	{ "sadb_hard_expired", XM_IKE_HARD_EXPIRED },
	{ "sadb_seq_soft_expired", XM_IKE_SEQ_SOFT_EXPIRED },
};
#define N_STATUS_KEYS (sizeof(status_keys) / sizeof(status_keys[0]))

static int collect_status(struct xm_snapshot *s, const char *dir)
{
	char path[4096 + 16], line[256], k[48];
	unsigned long long v, val[N_STATUS_KEYS];
	bool have[N_STATUS_KEYS] = { false };
	long pid = 0;
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/status", dir);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%47s %llu", k, &v) != 2)
			continue;
		if (strcmp(k, "pid") == 0) {
			pid = (long)v;
			continue;
		}
		for (unsigned i = 0; i < N_STATUS_KEYS; i++)
			if (strcmp(k, status_keys[i].key) == 0) {
				val[i] = v;
				have[i] = true;
			}
	}
	fclose(f);
	if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno != EPERM))
		return 0;
	for (unsigned i = 0; i < N_STATUS_KEYS; i++)
		if (have[i])
			rc |= xm_add(s, status_keys[i].id, 0, 0, val[i]);
	return rc;
}

#ifndef XIPSEC_HAVE_VICI
int xm_global_init(void)
{
	return 0;
}

void xm_global_deinit(void)
{
}

int xm_collect_ike(struct xm_snapshot *s, const struct xm_opts *o)
{
	snprintf(s->ike_err, sizeof(s->ike_err), "built without strongSwan (no VICI)");
	if (xm_add(s, XM_IKE_UP, 0, 0, 0))
		return -ENOMEM;
	return collect_status(s, run_dir(o));
}
#else
#include <libvici.h>
#include <sys/socket.h>
#include <sys/un.h>

static bool vici_ready;

int xm_global_init(void)
{
	if (!vici_ready) {
		vici_init();
		vici_ready = true;
	}
	return 0;
}

void xm_global_deinit(void)
{
	if (vici_ready) {
		vici_deinit();
		vici_ready = false;
	}
}

struct ike_count {
	uint64_t ike[XM_IKE_STATES], child[XM_CHILD_STATES];
	bool bad;                   /* a message did not parse */
};

static int index_of(const char *const *names, unsigned n, const char *v)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], v) == 0)
			return (int)i;
	return -1;
}

/* One list-sa event: { NAME { state = S, child-sas { NAME-ID { state = S ... } } ... } }. The
 * IKE SA's state is at depth 1, a CHILD SA's at depth 3 under child-sas. */
static void on_list_sa(void *user, char *name, vici_res_t *res)
{
	struct ike_count *c = user;
	char sect[4][32] = { "" };
	int depth = 0;

	(void)name;
	for (;;) {
		int t = vici_parse(res), len = 0, i;
		char *v, buf[32];

		switch (t) {
		case VICI_PARSE_BEGIN_SECTION:
			depth++;
			if (depth < 4)
				snprintf(sect[depth], sizeof(sect[0]), "%s", vici_parse_name(res));
			break;
		case VICI_PARSE_END_SECTION:
			depth--;
			break;
		case VICI_PARSE_KEY_VALUE:
			if (strcmp(vici_parse_name(res), "state") != 0)
				break;
			v = vici_parse_value(res, &len);
			if (len <= 0 || len >= (int)sizeof(buf))
				break;
			memcpy(buf, v, (size_t)len);
			buf[len] = '\0';
			if (depth == 1 && (i = index_of(xm_ike_state_names, XM_IKE_STATES, buf)) >= 0)
				c->ike[i]++;
			else if (depth == 3 && strcmp(sect[2], "child-sas") == 0 &&
				 (i = index_of(xm_child_state_names, XM_CHILD_STATES, buf)) >= 0)
				c->child[i]++;
			break;
		case VICI_PARSE_BEGIN_LIST:
		case VICI_PARSE_LIST_ITEM:
		case VICI_PARSE_END_LIST:
			break;
		case VICI_PARSE_END:
			return;
		default:
			c->bad = true;
			return;
		}
	}
}

/* The global set of charon's counters: counters { "" { ike-rekey-init = N ... } }. */
static int collect_counters(struct xm_snapshot *s, vici_conn_t *conn)
{
	vici_req_t *req = vici_begin("get-counters");
	vici_res_t *res = vici_submit(req, conn);
	uint64_t val[XM_IKE_EVENTS_N];
	bool have[XM_IKE_EVENTS_N] = { false };
	int depth = 0, rc = 0;

	if (!res)
		return 0;
	for (bool done = false; !done;) {
		int t = vici_parse(res), len = 0, i;
		char *v, buf[32];

		switch (t) {
		case VICI_PARSE_BEGIN_SECTION:
			depth++;
			break;
		case VICI_PARSE_END_SECTION:
			depth--;
			break;
		case VICI_PARSE_KEY_VALUE:
			if (depth != 2 || (i = index_of(xm_ike_event_names, XM_IKE_EVENTS_N,
							vici_parse_name(res))) < 0)
				break;
			v = vici_parse_value(res, &len);
			if (len <= 0 || len >= (int)sizeof(buf))
				break;
			memcpy(buf, v, (size_t)len);
			buf[len] = '\0';
			val[i] = strtoull(buf, NULL, 10);
			have[i] = true;
			break;
		case VICI_PARSE_BEGIN_LIST:
		case VICI_PARSE_LIST_ITEM:
		case VICI_PARSE_END_LIST:
			break;
		default:
			done = true;
		}
	}
	vici_free_res(res);
	for (unsigned i = 0; i < XM_IKE_EVENTS_N; i++)
		if (have[i])
			rc |= xm_add(s, XM_IKE_EVENTS, 0, i, val[i]);
	return rc;
}

/* 0 when something accepts connections on the Unix socket path, else -1 with errno set. */
static int unix_probe(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, rc, e;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

static int collect_vici(struct xm_snapshot *s, const struct xm_opts *o, const char *dir)
{
	struct ike_count c = { { 0 }, { 0 }, false };
	char uri[4096 + 32];
	vici_conn_t *conn;
	vici_req_t *req;
	vici_res_t *res;
	int rc = 0;

	if (o->vici_uri && *o->vici_uri)
		snprintf(uri, sizeof(uri), "%s", o->vici_uri);
	else
		snprintf(uri, sizeof(uri), "unix://%s/charon.vici", dir);
	xm_global_init();
	/* A socket nobody answers on is the daemon not running: find out with a plain connect
	 * first, so that libvici does not print its own message on stderr at every scrape. */
	if (strncmp(uri, "unix://", 7) == 0 && unix_probe(uri + 7) != 0) {
		snprintf(s->ike_err, sizeof(s->ike_err), "%.160s: %s", uri + 7, strerror(errno));
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	if (!(conn = vici_connect(uri))) {
		snprintf(s->ike_err, sizeof(s->ike_err), "cannot connect to %.160s: %s", uri, strerror(errno));
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	if (vici_register(conn, "list-sa", on_list_sa, &c) != 0) {
		snprintf(s->ike_err, sizeof(s->ike_err), "%.160s: list-sa events: %s", uri, strerror(errno));
		vici_disconnect(conn);
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	req = vici_begin("list-sas");
	/* do not wait for IKE SAs another thread of the daemon holds */
	vici_add_key_valuef(req, "noblock", "yes");
	res = vici_submit(req, conn);
	vici_register(conn, "list-sa", NULL, NULL);
	if (!res || c.bad) {
		snprintf(s->ike_err, sizeof(s->ike_err), "%.160s: list-sas failed", uri);
		if (res)
			vici_free_res(res);
		vici_disconnect(conn);
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	vici_free_res(res);
	rc |= xm_add(s, XM_IKE_UP, 0, 0, 1);
	for (unsigned i = 0; i < XM_IKE_STATES; i++)
		rc |= xm_add(s, XM_IKE_SAS, 0, i, c.ike[i]);
	for (unsigned i = 0; i < XM_CHILD_STATES; i++)
		rc |= xm_add(s, XM_IKE_CHILD_SAS, 0, i, c.child[i]);
	req = vici_begin("stats");
	if ((res = vici_submit(req, conn)) != NULL) {
		const char *h = vici_find_str(res, NULL, "ikesas.half-open");

		if (h)
			rc |= xm_add(s, XM_IKE_HALF_OPEN, 0, 0, strtoull(h, NULL, 10));
		vici_free_res(res);
	}
	rc |= collect_counters(s, conn);
	vici_disconnect(conn);
	return rc;
}

int xm_collect_ike(struct xm_snapshot *s, const struct xm_opts *o)
{
	const char *dir = run_dir(o);

	if (collect_vici(s, o, dir))
		return -ENOMEM;
	return collect_status(s, dir) ? -ENOMEM : 0;
}
#endif /* XIPSEC_HAVE_VICI */
