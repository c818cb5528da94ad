/* metrics/metrics_ike.c: the xipsec-iked part of the metrics collection layer. Two sources:
 *  - VICI (libvici, the daemon's charon.vici socket): IKE SAs and CHILD SAs counted by state
 *    (list-sas, which also names every CHILD SA's SPIs: the connection and child labels of the
 *    snapshot's SA rows, joined by SPI and reqid), half-open IKE SAs (stats) and charon's counters plugin (get-counters, the global
 *    set) — only when built with strongSwan; a daemon that does not answer within 3 s counts as
 *    down (vici_query_timed);
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

#include "metrics/metrics_int.h"

/* charon's enums as VICI prints them (ike_sa_state_names, child_sa_state_names in strongSwan
 * 5.9.8); the sub index is the enum value. */
const char *const xm_ike_state_names[XM_IKE_STATES] = {
	"CREATED", "CONNECTING", "ESTABLISHED", "PASSIVE", "REKEYING", "REKEYED", "DELETING",
	"DESTROYING"
};
const char *const xm_child_state_names[XM_CHILD_STATES] = {
	"CREATED", "ROUTED", "INSTALLING", "INSTALLED", "UPDATING", "REKEYING", "REKEYED", "RETRYING",
	"DELETING", "DELETED", "DESTROYING"
};
/* charon's counters plugin, named as VICI's get-counters names them. */
const char *const xm_ike_event_names[XM_IKE_EVENTS_N] = {
	"ike-rekey-init", "ike-rekey-resp", "child-rekey", "invalid", "invalid-spi",
	"ike-init-in-req", "ike-init-in-resp", "ike-init-out-req", "ike-init-out-resp",
	"ike-auth-in-req", "ike-auth-in-resp", "ike-auth-out-req", "ike-auth-out-resp",
	"create-child-in-req", "create-child-in-resp", "create-child-out-req", "create-child-out-resp",
	"info-in-req", "info-in-resp", "info-out-req", "info-out-resp"
};

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
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "metrics/vici_dl.h"

/* libvici, loaded and started once; NULL while it is not (a host without strongswan-swanctl: the
 * IKE families are then left out, as when xipsec-iked does not run). */
static const struct vici_dl *vici;
static bool vici_ready;

int xm_global_init(void)
{
	if (!vici_ready && (vici = vici_dl()) != NULL) {
		vici->init();
		vici_ready = true;
	}
	return 0;
}

static _Atomic bool vici_stuck;

void xm_global_deinit(void)
{
	/* not under a query left behind (collect_vici): it still uses libvici */
	if (vici_ready && !atomic_load(&vici_stuck)) {
		vici->deinit();
		vici_ready = false;
	}
}

/* One SPI of a CHILD SA as list-sas names it: the key of the SA rows' connection and child
 * labels. */
struct child_spi {
	uint32_t spi, reqid;
	char conn[64], child[64];
};

struct ike_count {
	uint64_t ike[XM_IKE_STATES], child[XM_CHILD_STATES];
	struct child_spi *spi;      /* malloc'ed, n_spi of them (both SPIs of every CHILD SA) */
	size_t n_spi, cap_spi;
	bool bad;                   /* a message did not parse, or no memory for the names */
};

/* The CHILD SA at depth 3 being parsed: its name, reqid and SPIs, kept when its section ends. */
struct child_rec {
	char name[64];
	uint32_t reqid, spi_in, spi_out;
};

static void child_keep(struct ike_count *c, const char *conn, const struct child_rec *r)
{
	const uint32_t spis[2] = { r->spi_in, r->spi_out };

	for (unsigned i = 0; i < 2; i++) {
		struct child_spi *e;

		if (!spis[i])
			continue;
		if (c->n_spi == c->cap_spi) {
			size_t cap = c->cap_spi ? c->cap_spi * 2 : 16;
			struct child_spi *v = realloc(c->spi, cap * sizeof(*v));

			if (!v) {
				c->bad = true;
				return;
			}
			c->spi = v;
			c->cap_spi = cap;
		}
		e = &c->spi[c->n_spi++];
		e->spi = spis[i];
		e->reqid = r->reqid;
		snprintf(e->conn, sizeof(e->conn), "%s", conn);
		snprintf(e->child, sizeof(e->child), "%s", r->name);
	}
}

static int index_of(const char *const *names, unsigned n, const char *v)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], v) == 0)
			return (int)i;
	return -1;
}

/* The value of the key vici->parse() is at, as a string in buf; false when it is empty or does not
 * fit (no value this file reads is longer than a counter or a state name). */
static bool value_str(vici_res_t *res, char *buf, size_t size)
{
	int len = 0;
	char *v = vici->parse_value(res, &len);

	if (!v || len <= 0 || (size_t)len >= size)
		return false;
	memcpy(buf, v, (size_t)len);
	buf[len] = '\0';
	return true;
}

/* A CHILD SA's name, reqid or SPI into r: true when the key was one of them. */
static bool child_field(vici_res_t *res, struct child_rec *r)
{
	const char *k = vici->parse_name(res);
	char buf[64];

	if (strcmp(k, "name") == 0) {
		if (!value_str(res, r->name, sizeof(r->name)))
			r->name[0] = '\0';
		return true;
	}
	if (strcmp(k, "reqid") != 0 && strcmp(k, "spi-in") != 0 && strcmp(k, "spi-out") != 0)
		return false;
	if (value_str(res, buf, sizeof(buf))) {
		if (k[0] == 'r')
			r->reqid = (uint32_t)strtoul(buf, NULL, 10);
		else if (strcmp(k, "spi-in") == 0)
			r->spi_in = (uint32_t)strtoul(buf, NULL, 16);
		else
			r->spi_out = (uint32_t)strtoul(buf, NULL, 16);
	}
	return true;
}

/* One list-sa event: { NAME { state = S, child-sas { NAME-ID { name = CHILD, state = S,
 * reqid = N, spi-in = HEX, spi-out = HEX ... } } ... } }. The IKE SA's state is at depth 1, a CHILD
 * SA's at depth 3 under child-sas; NAME is the connection. */
static void on_list_sa(void *user, char *name, vici_res_t *res)
{
	struct ike_count *c = user;
	char sect[4][64] = { "" };
	struct child_rec rec = { "", 0, 0, 0 };
	int depth = 0;

	(void)name;
	for (;;) {
		int t = vici->parse(res), i;
		char buf[32];

		switch (t) {
		case VICI_PARSE_BEGIN_SECTION:
			depth++;
			if (depth < 4)
				snprintf(sect[depth], sizeof(sect[0]), "%s", vici->parse_name(res));
			if (depth == 3)
				memset(&rec, 0, sizeof(rec));
			break;
		case VICI_PARSE_END_SECTION:
			if (depth == 3 && strcmp(sect[2], "child-sas") == 0)
				child_keep(c, sect[1], &rec);
			depth--;
			break;
		case VICI_PARSE_KEY_VALUE:
			if (depth == 3 && strcmp(sect[2], "child-sas") == 0 &&
			    child_field(res, &rec))
				break;
			if (strcmp(vici->parse_name(res), "state") != 0)
				break;
			if (!value_str(res, buf, sizeof(buf)))
				break;
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

/* What one VICI query found: filled by the query thread, turned into samples by the caller. */
struct vici_found {
	struct ike_count c;
	bool up;                    /* list-sas answered */
	bool have_half;
	uint64_t half;
	uint64_t ev[XM_IKE_EVENTS_N];
	bool have_ev[XM_IKE_EVENTS_N];
	char err[sizeof(((struct xm_snapshot *)0)->ike_err)];
};

/* The global set of charon's counters: counters { "" { ike-rekey-init = N ... } }. */
static void query_counters(struct vici_found *f, vici_conn_t *conn)
{
	vici_req_t *req = vici->begin("get-counters");
	vici_res_t *res = vici->submit(req, conn);
	int depth = 0;

	if (!res)
		return;
	for (bool done = false; !done;) {
		int t = vici->parse(res), i;
		char buf[32];

		switch (t) {
		case VICI_PARSE_BEGIN_SECTION:
			depth++;
			break;
		case VICI_PARSE_END_SECTION:
			depth--;
			break;
		case VICI_PARSE_KEY_VALUE:
			if (depth != 2 || (i = index_of(xm_ike_event_names, XM_IKE_EVENTS_N,
							vici->parse_name(res))) < 0)
				break;
			if (!value_str(res, buf, sizeof(buf)))
				break;
			f->ev[i] = strtoull(buf, NULL, 10);
			f->have_ev[i] = true;
			break;
		case VICI_PARSE_BEGIN_LIST:
		case VICI_PARSE_LIST_ITEM:
		case VICI_PARSE_END_LIST:
			break;
		default:
			done = true;
		}
	}
	vici->free_res(res);
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

/* list-sas, stats and get-counters on one connection. Blocks as long as the daemon takes: libvici
 * has no timeout, so it runs on a thread of its own (below). */
static void vici_query(const char *uri, struct vici_found *f)
{
	vici_conn_t *conn;
	vici_req_t *req;
	vici_res_t *res;

	if (!(conn = vici->connect((char *)uri))) {
		snprintf(f->err, sizeof(f->err), "cannot connect to %.160s: %s", uri, strerror(errno));
		return;
	}
	if (vici->register_event(conn, "list-sa", on_list_sa, &f->c) != 0) {
		snprintf(f->err, sizeof(f->err), "%.160s: list-sa events: %s", uri, strerror(errno));
		vici->disconnect(conn);
		return;
	}
	req = vici->begin("list-sas");
	/* do not wait for IKE SAs another thread of the daemon holds */
	vici->add_key_valuef(req, "noblock", "yes");
	res = vici->submit(req, conn);
	vici->register_event(conn, "list-sa", NULL, NULL);
	if (!res || f->c.bad) {
		snprintf(f->err, sizeof(f->err), "%.160s: list-sas failed", uri);
		if (res)
			vici->free_res(res);
		vici->disconnect(conn);
		return;
	}
	vici->free_res(res);
	f->up = true;
	req = vici->begin("stats");
	if ((res = vici->submit(req, conn)) != NULL) {
		const char *h = vici->find_str(res, NULL, "ikesas.half-open");

		if (h) {
			f->half = strtoull(h, NULL, 10);
			f->have_half = true;
		}
		vici->free_res(res);
	}
	query_counters(f, conn);
	vici->disconnect(conn);
}

/* A query the collector waits for at most XM_VICI_TIMEOUT_MS. A daemon that accepts the connection
 * but does not answer (every thread busy, stopped under a debugger) would otherwise hang the scrape,
 * and with it the HTTP exporter's next clients or the SNMP subagent's master agent. On time-out the
 * collector reports the daemon down and leaves: the thread finishes when (if) the daemon answers and
 * frees the job, whichever side is last. At most one query is left behind at a time; while it
 * waits, the collector does not start another (it would only pile up behind it). */
#define XM_VICI_TIMEOUT_MS 3000
struct vici_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, abandoned;
	char uri[4096 + 32];
	struct vici_found f;
};

static void *vici_thread(void *arg)
{
	struct vici_job *j = arg;
	bool abandoned;

	vici_query(j->uri, &j->f);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	abandoned = j->abandoned;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (abandoned) {
		free(j->f.c.spi);
		pthread_mutex_destroy(&j->lock);
		pthread_cond_destroy(&j->cond);
		free(j);
		atomic_store(&vici_stuck, false);
	}
	return NULL;
}

/* 0 with f filled (f->up says whether the daemon answered), or -1 with f->err set. */
static int vici_query_timed(const char *uri, struct vici_found *f)
{
	struct vici_job *j;
	struct timespec dl;
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t th;
	bool done;
	int rc;

	memset(f, 0, sizeof(*f));
	if (atomic_load(&vici_stuck)) {
		snprintf(f->err, sizeof(f->err), "%.160s: an earlier query is still unanswered", uri);
		return -1;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		snprintf(f->err, sizeof(f->err), "out of memory");
		return -1;
	}
	snprintf(j->uri, sizeof(j->uri), "%s", uri);
	pthread_mutex_init(&j->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &ta, vici_thread, j);
	pthread_attr_destroy(&ta);
	if (rc) {
		pthread_mutex_destroy(&j->lock);
		pthread_cond_destroy(&j->cond);
		free(j);
		snprintf(f->err, sizeof(f->err), "cannot start the VICI query: %s", strerror(rc));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += XM_VICI_TIMEOUT_MS / 1000;
	dl.tv_nsec += (long)(XM_VICI_TIMEOUT_MS % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->lock);
	while (!j->done && pthread_cond_timedwait(&j->cond, &j->lock, &dl) != ETIMEDOUT)
		;
	done = j->done;
	if (done)
		*f = j->f;
	else {
		j->abandoned = true;
		atomic_store(&vici_stuck, true);
	}
	pthread_mutex_unlock(&j->lock);
	if (!done) {
		snprintf(f->err, sizeof(f->err), "%.160s: no answer in %d ms", uri, XM_VICI_TIMEOUT_MS);
		return -1;
	}
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
	return 0;
}

static int spi_cmp(const void *a, const void *b)
{
	const struct child_spi *x = a, *y = b;

	return x->spi < y->spi ? -1 : x->spi > y->spi;
}

static int reqid_cmp(const void *a, const void *b)
{
	const struct child_spi *x = a, *y = b;

	return x->reqid < y->reqid ? -1 : x->reqid > y->reqid;
}

/* The entry of v (sorted by cmp) that names an SA with key's SPI (by_spi) or reqid: for an SPI the
 * one with the SA's reqid too (an inbound SPI we chose may equal an outbound one the peer chose);
 * for a reqid the first, if every entry of that reqid names the same CHILD SA. NULL if none. */
static const struct child_spi *lookup(const struct child_spi *v, size_t n, const struct child_spi *key,
				      bool by_spi)
{
	int (*cmp)(const void *, const void *) = by_spi ? spi_cmp : reqid_cmp;
	const struct child_spi *e = bsearch(key, v, n, sizeof(*v), cmp), *f;

	if (!e)
		return NULL;
	while (e > v && cmp(&e[-1], key) == 0)
		e--;
	for (f = e; f < v + n && cmp(f, key) == 0; f++) {
		if (by_spi && f->reqid == key->reqid)
			return f;
		if (!by_spi && (strcmp(f->conn, e->conn) != 0 || strcmp(f->child, e->child) != 0))
			return NULL;
	}
	return by_spi ? NULL : e;
}

/* The SA rows' connection and child labels: the CHILD SA list-sas gives the row's SPI, or else
 * the one CHILD SA that has the row's reqid (an SA is in the SADB a moment before charon lists the
 * CHILD SA being rekeyed to it; the reqid stays with the CHILD SA across rekeys). */
static int name_sa_rows(struct xm_snapshot *s, struct child_spi *v, size_t n)
{
	struct xm_rowset *r = &s->sa;
	struct child_spi *by_reqid;
	int rc = 0;

	if (!n)
		return 0;
	if (!(by_reqid = malloc(n * sizeof(*by_reqid))))
		return -ENOMEM;
	memcpy(by_reqid, v, n * sizeof(*v));
	qsort(v, n, sizeof(*v), spi_cmp);
	qsort(by_reqid, n, sizeof(*v), reqid_cmp);
	for (size_t row = 0; row < r->n_rows && !rc; row++) {
		const struct xm_sa_key *k = &r->sa[row];
		struct child_spi key = { .spi = k->spi, .reqid = k->reqid };
		const struct child_spi *e = lookup(v, n, &key, true);

		if (!e && k->reqid)
			e = lookup(by_reqid, n, &key, false);
		if (!e)
			continue;
		rc |= xm_rows_set(r, row, XM_SA_L_CONN, e->conn);
		rc |= xm_rows_set(r, row, XM_SA_L_CHILD, e->child);
	}
	free(by_reqid);
	return rc ? -ENOMEM : 0;
}

static int collect_vici(struct xm_snapshot *s, const struct xm_opts *o, const char *dir)
{
	char uri[4096 + 32];
	struct vici_found f;
	int rc = 0;

	if (o->vici_uri && *o->vici_uri)
		snprintf(uri, sizeof(uri), "%s", o->vici_uri);
	else
		snprintf(uri, sizeof(uri), "unix://%s/charon.vici", dir);
	xm_global_init();
	if (!vici_ready) {
		snprintf(s->ike_err, sizeof(s->ike_err), "libvici not loaded: %.200s", vici_dl_error());
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	/* A socket nobody answers on is the daemon not running: find out with a plain connect
	 * first, so that libvici does not print its own message on stderr at every scrape. */
	if (strncmp(uri, "unix://", 7) == 0 && unix_probe(uri + 7) != 0) {
		snprintf(s->ike_err, sizeof(s->ike_err), "%.160s: %s", uri + 7, strerror(errno));
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	if (vici_query_timed(uri, &f) != 0 || !f.up) {
		free(f.c.spi);
		snprintf(s->ike_err, sizeof(s->ike_err), "%s", f.err);
		return xm_add(s, XM_IKE_UP, 0, 0, 0);
	}
	rc |= name_sa_rows(s, f.c.spi, f.c.n_spi);
	free(f.c.spi);
	rc |= xm_add(s, XM_IKE_UP, 0, 0, 1);
	for (unsigned i = 0; i < XM_IKE_STATES; i++)
		rc |= xm_add(s, XM_IKE_SAS, 0, i, f.c.ike[i]);
	for (unsigned i = 0; i < XM_CHILD_STATES; i++)
		rc |= xm_add(s, XM_IKE_CHILD_SAS, 0, i, f.c.child[i]);
	if (f.have_half)
		rc |= xm_add(s, XM_IKE_HALF_OPEN, 0, 0, f.half);
	for (unsigned i = 0; i < XM_IKE_EVENTS_N; i++)
		if (f.have_ev[i])
			rc |= xm_add(s, XM_IKE_EVENTS, 0, i, f.ev[i]);
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
