/* metrics/metrics_tunnel.c: the tunnel families of a metrics snapshot. A tunnel is what an operator
 * names — a connection's CHILD SA, with its reqid — and outlives its SAs: every rekey replaces them
 * with new SPIs, so per-SA series start again from zero while the tunnel's must not. A tunnel's
 * counter is the sum over its SAs now plus the totals of its SAs already gone, remembered by the
 * exporter (struct xm_tunnel_memory) from the last snapshot that saw each of them:
 *  - monotonic while the exporter runs: an SA's counters only grow, and an SA leaves the sum only
 *    by moving, with the last value seen, into the gone totals;
 *  - an SA gone from the SADB leaves its runtime area behind until its slot is given to another
 *    SA (libsadb quarantines freed slots while the dataplane may hold them): its final counters
 *    are read from there, by slot and instance, when the snapshot that finds it gone is taken;
 *    when the snapshot comes from xipsecd's key-less counters view (the unprivileged exporter
 *    cannot open the SADB), from the SA's gone record there, which xipsecd wrote once no worker
 *    could add to them (dataplane/xipsecd/dp_stats.c); only when neither is there any more (the
 *    slot reused, the record's time over) do the counters of the last snapshot that saw it stand
 *    (the tunnel is then short of that SA's last moments; never above the truth);
 *  - reading the view, an SA may leave the SADB's SAs one reading before its gone record comes
 *    (the SADB deleted it while xipsecd was applying an earlier change): it is kept in its tunnel
 *    with its last counters, no longer counted among the tunnel's SAs, for XM_GONE_WAIT seconds
 *    or until its gone record shows, so its final counters are not replaced by the last seen;
 *  - an SA that is still in the SADB but lost its names (xipsec-iked did not answer this time) is
 *    kept in its tunnel with its last counters until it returns or goes: never counted twice in one
 *    tunnel.
 * The memory starts empty with the exporter (the families' HELP says so); without one, a tunnel
 * counts its SAs now. SAs with neither a reqid nor a connection name belong to no tunnel. An SA
 * that list-sas did not name this time keeps the names the memory has for it (keep_names), so its
 * series and its tunnel's do not change for one scrape. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_int.h"

enum { T_PACKETS, T_BYTES, T_DROPS, T_N };

/* How long an SA gone from the view's SAs waits for its gone record: xipsecd publishes it within
 * SADB_STATS_CHANGE_MS of applying the deletion, and a reading every SADB_STATS_INTERVAL_MS. */
#define XM_GONE_WAIT 2

/* One SA as a tunnel last saw it. */
struct tsa {
	uint64_t instance;
	uint32_t slot;
	unsigned dir;               /* 0 in, 1 out */
	uint64_t v[T_N];
	uint64_t missing;           /* snapshot time it was first found gone without its final
	                             * counters (waiting for its gone record), 0 = not gone */
};

struct tunnel {
	char *conn, *child;
	uint32_t reqid;
	uint64_t gone[2][T_N];      /* [dir]: totals of the SAs gone */
	struct tsa *sa;
	size_t n_sa;
	uint64_t last_seen;         /* snapshot time it last had an SA */
};

struct xm_tunnel_memory {
	struct tunnel *t;           /* sorted by (conn, child, reqid) */
	size_t n;
};

/* Where the final counters of the SAs gone since the last snapshot come from: the SADB the
 * snapshot was read from, or the gone records of the counters view's reading (either may be
 * absent). */
struct finals {
	struct sadb *db;
	bool view;                  /* the snapshot is the view's: its gone records may be late */
	const struct sadb_stats_sa *gone;
	size_t n_gone;
};

/* One SA of the snapshot that belongs to a tunnel. */
struct cur {
	const char *conn, *child;
	uint32_t reqid;
	struct tsa sa;
};

struct xm_tunnel_memory *xm_tunnel_memory_new(void)
{
	return calloc(1, sizeof(struct xm_tunnel_memory));
}

static void tunnel_free(struct tunnel *t)
{
	free(t->conn);
	free(t->child);
	free(t->sa);
}

void xm_tunnel_memory_free(struct xm_tunnel_memory *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		tunnel_free(&m->t[i]);
	free(m->t);
	free(m);
}

static int key_cmp(const char *c1, const char *h1, uint32_t r1, const char *c2, const char *h2,
		   uint32_t r2)
{
	int d = strcmp(c1, c2);

	if (!d)
		d = strcmp(h1, h2);
	if (!d)
		d = r1 < r2 ? -1 : r1 > r2;
	return d;
}

static int cur_cmp(const void *a, const void *b)
{
	const struct cur *x = a, *y = b;

	return key_cmp(x->conn, x->child, x->reqid, y->conn, y->child, y->reqid);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const char *sa_label(const struct xm_rowset *r, size_t row, unsigned i)
{
	return r->text + r->off[row * r->n_labels + i];
}

/* An SA and the memory's tunnel it belongs to: by instance, or (named tunnels only) by reqid. */
struct idx {
	uint64_t key;
	const struct tunnel *t;
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* The tunnel of v (sorted) with key; with unique, NULL when two tunnels have it. */
static const struct tunnel *idx_find(const struct idx *v, size_t n, uint64_t key, bool unique)
{
	struct idx k = { key, NULL };
	const struct idx *e = n ? bsearch(&k, v, n, sizeof(*v), idx_cmp) : NULL;

	if (!e)
		return NULL;
	if (unique && ((e > v && e[-1].key == key) || (e + 1 < v + n && e[1].key == key)))
		return NULL;
	return e->t;
}

/* An SA without names this time keeps those the memory has for it: by its instance (list-sas
 * leaves out an IKE SA another thread of charon holds, as during a rekey, rather than wait for
 * it), else by its reqid when one named tunnel has it (an SA of a rekey that charon lists only
 * once the exchange is done). So neither the SA's series nor its tunnel change names for a
 * scrape. */
static int keep_names(struct xm_snapshot *s, const struct xm_tunnel_memory *m)
{
	struct xm_rowset *r = &s->sa;
	struct idx *by_inst, *by_reqid;
	size_t n_sa = 0, ni = 0, nr = 0;
	int rc = 0;

	for (size_t i = 0; i < m->n; i++)
		n_sa += m->t[i].n_sa;
	by_inst = malloc((n_sa + 1) * sizeof(*by_inst));
	by_reqid = malloc((m->n + 1) * sizeof(*by_reqid));
	if (!by_inst || !by_reqid) {
		free(by_inst);
		free(by_reqid);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct tunnel *t = &m->t[i];

		if (!*t->conn && !*t->child)
			continue;
		for (size_t j = 0; j < t->n_sa; j++)
			by_inst[ni++] = (struct idx){ t->sa[j].instance, t };
		if (t->reqid)
			by_reqid[nr++] = (struct idx){ t->reqid, t };
	}
	qsort(by_inst, ni, sizeof(*by_inst), idx_cmp);
	qsort(by_reqid, nr, sizeof(*by_reqid), idx_cmp);
	for (size_t row = 0; row < r->n_rows && !rc; row++) {
		const struct xm_sa_key *k = &r->sa[row];
		const struct tunnel *t;

		if (*sa_label(r, row, XM_SA_L_CONN) || *sa_label(r, row, XM_SA_L_CHILD))
			continue;
		t = idx_find(by_inst, ni, k->instance, false);
		if (!t && k->reqid)
			t = idx_find(by_reqid, nr, k->reqid, true);
		if (t && t->reqid == k->reqid) {
			rc |= xm_rows_set(r, row, XM_SA_L_CONN, t->conn);
			rc |= xm_rows_set(r, row, XM_SA_L_CHILD, t->child);
		}
	}
	free(by_inst);
	free(by_reqid);
	return rc ? -ENOMEM : 0;
}

/* The snapshot's SAs that belong to a tunnel, with their counters (the SA families hold one
 * packets and one bytes sample per row, drops only for the reasons that counted). */
static int current(const struct xm_snapshot *s, struct cur **out, size_t *n_out)
{
	const struct xm_rowset *r = &s->sa;
	const struct xm_family *fp = &s->fam[XM_SA_PACKETS], *fb = &s->fam[XM_SA_BYTES];
	const struct xm_family *fd = &s->fam[XM_SA_DROPS];
	struct cur *c = calloc(r->n_rows ? r->n_rows : 1, sizeof(*c));
	long *at = malloc((r->n_rows ? r->n_rows : 1) * sizeof(*at));
	size_t n = 0;

	if (!c || !at) {
		free(c);
		free(at);
		return -ENOMEM;
	}
	for (size_t row = 0; row < r->n_rows; row++) {
		const struct xm_sa_key *k = &r->sa[row];
		const char *conn = sa_label(r, row, XM_SA_L_CONN);

		at[row] = -1;
		if ((!k->reqid && !*conn) || (k->dir != SADB_DIR_IN && k->dir != SADB_DIR_OUT))
			continue;
		at[row] = (long)n;
		c[n++] = (struct cur){ conn, sa_label(r, row, XM_SA_L_CHILD), k->reqid,
				       { k->instance, k->slot, k->dir == SADB_DIR_IN ? 0 : 1, { 0 }, 0 } };
	}
	for (size_t i = 0; i < fp->n; i++)
		if (fp->s[i].row < r->n_rows && at[fp->s[i].row] >= 0)
			c[at[fp->s[i].row]].sa.v[T_PACKETS] = fp->s[i].value;
	for (size_t i = 0; i < fb->n; i++)
		if (fb->s[i].row < r->n_rows && at[fb->s[i].row] >= 0)
			c[at[fb->s[i].row]].sa.v[T_BYTES] = fb->s[i].value;
	for (size_t i = 0; i < fd->n; i++)
		if (fd->s[i].row < r->n_rows && at[fd->s[i].row] >= 0)
			c[at[fd->s[i].row]].sa.v[T_DROPS] += fd->s[i].value;
	free(at);
	qsort(c, n, sizeof(*c), cur_cmp);
	*out = c;
	*n_out = n;
	return 0;
}

static bool has_instance(const uint64_t *v, size_t n, uint64_t instance)
{
	return bsearch(&instance, v, n, sizeof(*v), u64_cmp) != NULL;
}

/* The counters an SA that left the SADB ended with: its runtime area's while its slot still
 * holds it, or its gone record's in the view, else the last ones seen; never below the last ones
 * seen. Whether they are its final ones (not only the last seen). */
static bool final_counters(const struct finals *f, const struct tsa *o, uint64_t v[T_N])
{
	struct sadb_runtime_view rv;
	uint64_t fin[T_N] = { 0 };
	bool found = false;

	memcpy(v, o->v, sizeof(o->v));
	if (f->db && sadb_runtime_read(f->db, o->slot, o->instance, 0, &rv) == 0) {
		fin[T_PACKETS] = rv.packets;
		fin[T_BYTES] = rv.bytes;
		fin[T_DROPS] = rv.drops_total;
		found = true;
	}
	for (size_t i = 0; i < f->n_gone && !found; i++) {
		const struct sadb_stats_sa *g = &f->gone[i];

		if (g->instance != o->instance || g->slot != o->slot)
			continue;
		fin[T_PACKETS] = g->packets;
		fin[T_BYTES] = g->bytes;
		for (unsigned d = 1; d < SADB_DROP_MAX; d++)
			fin[T_DROPS] += g->drops[d];
		found = true;
	}
	for (unsigned k = 0; k < T_N && found; k++)
		if (fin[k] > v[k])
			v[k] = fin[k];
	return found;
}

/* Tunnel nt (from old, the memory's entry for the same key, or NULL) with the SAs c[0..n) it has
 * now: SAs of old that left the SADB go into the gone totals with their final counters, those
 * still in it (under other names this time) stay with their last counters. */
static int tunnel_next(struct tunnel *nt, struct tunnel *old, const struct cur *c, size_t n,
		       const uint64_t *inst, size_t n_inst, uint64_t now, const struct finals *f)
{
	size_t cap = n + (old ? old->n_sa : 0);

	memset(nt, 0, sizeof(*nt));
	if (old) {
		memcpy(nt->gone, old->gone, sizeof(nt->gone));
		nt->last_seen = old->last_seen;
	}
	if (cap && !(nt->sa = malloc(cap * sizeof(*nt->sa))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		nt->sa[nt->n_sa++] = c[i].sa;
	for (size_t i = 0; old && i < old->n_sa; i++) {
		const struct tsa *o = &old->sa[i];
		bool here = false;

		for (size_t j = 0; j < n && !here; j++)
			here = c[j].sa.instance == o->instance;
		if (here)
			continue;
		if (has_instance(inst, n_inst, o->instance)) {
			nt->sa[nt->n_sa] = *o;
			nt->sa[nt->n_sa++].missing = 0;
			continue;
		}
		uint64_t fin[T_N];

		if (!final_counters(f, o, fin) && f->view && (!o->missing || now - o->missing < XM_GONE_WAIT)) {
			nt->sa[nt->n_sa] = *o;
			nt->sa[nt->n_sa++].missing = o->missing ? o->missing : now;
			continue;
		}
		for (unsigned v = 0; v < T_N; v++)
			nt->gone[o->dir][v] += fin[v];
	}
	if (nt->n_sa)
		nt->last_seen = now;
	nt->reqid = n ? c[0].reqid : old->reqid;
	nt->conn = strdup(n ? c[0].conn : old->conn);
	nt->child = strdup(n ? c[0].child : old->child);
	return nt->conn && nt->child ? 0 : -ENOMEM;
}

static int emit(struct xm_snapshot *s, const struct tunnel *t)
{
	char reqid[16];
	const char *vals[3] = { t->conn, t->child, reqid };
	uint64_t sum[2][T_N], nsa[2] = { 0, 0 };
	long row;
	int rc = 0;

	snprintf(reqid, sizeof(reqid), "%" PRIu32, t->reqid);
	if ((row = xm_rows_add(&s->tunnel, vals)) < 0)
		return -ENOMEM;
	memcpy(sum, t->gone, sizeof(sum));
	for (size_t i = 0; i < t->n_sa; i++) {
		nsa[t->sa[i].dir] += !t->sa[i].missing;
		for (unsigned v = 0; v < T_N; v++)
			sum[t->sa[i].dir][v] += t->sa[i].v[v];
	}
	for (unsigned d = 0; d < 2; d++) {
		rc |= xm_add(s, XM_TUNNEL_SAS, (uint32_t)row, d, nsa[d]);
		rc |= xm_add(s, XM_TUNNEL_PACKETS, (uint32_t)row, d, sum[d][T_PACKETS]);
		rc |= xm_add(s, XM_TUNNEL_BYTES, (uint32_t)row, d, sum[d][T_BYTES]);
		rc |= xm_add(s, XM_TUNNEL_DROPS, (uint32_t)row, d, sum[d][T_DROPS]);
	}
	return rc ? -ENOMEM : 0;
}

/* Merge the memory's tunnels and the snapshot's (both sorted by key) into the next memory. */
static int merge(struct xm_tunnel_memory *m, const struct cur *c, size_t n, const uint64_t *inst,
		 size_t n_inst, uint64_t now, const struct finals *f, struct tunnel **out, size_t *n_out)
{
	struct tunnel *nt = calloc(m->n + n + 1, sizeof(*nt));
	size_t k = 0, i = 0, j = 0;
	int rc = 0;

	if (!nt)
		return -ENOMEM;
	while (!rc && (i < m->n || j < n)) {
		struct tunnel *old = i < m->n ? &m->t[i] : NULL;
		size_t e = j;
		int d;

		if (!old)
			d = 1;
		else if (j == n)
			d = -1;
		else
			d = key_cmp(old->conn, old->child, old->reqid, c[j].conn, c[j].child, c[j].reqid);
		if (d >= 0)
			while (e < n && cur_cmp(&c[j], &c[e]) == 0)
				e++;
		rc = tunnel_next(&nt[k], d <= 0 ? old : NULL, c + j, d >= 0 ? e - j : 0, inst,
				 n_inst, now, f);
		if (d <= 0)
			i++;
		j = e;
		if (!rc && !nt[k].n_sa && now - nt[k].last_seen >= XM_TUNNEL_KEEP_SECONDS)
			tunnel_free(&nt[k]);        /* gone long enough: forgotten */
		else
			k++;
	}
	if (rc) {
		for (size_t x = 0; x <= k; x++)
			tunnel_free(&nt[x]);
		free(nt);
		return rc;
	}
	*out = nt;
	*n_out = k;
	return 0;
}

int xm_collect_tunnels(struct xm_snapshot *s, struct xm_tunnel_memory *mem, struct sadb *db,
		       const struct sadb_stats_reading *view)
{
	struct finals f = { db, view != NULL, view ? view->sa + view->n_rec : NULL, view ? view->n_gone : 0 };
	struct xm_tunnel_memory none = { NULL, 0 }, *m = mem ? mem : &none;
	uint64_t *inst = malloc((s->sa.n_rows ? s->sa.n_rows : 1) * sizeof(*inst));
	struct tunnel *nt = NULL;
	struct cur *c = NULL;
	size_t n = 0, n_nt = 0;
	int rc;

	if (!inst)
		return -ENOMEM;
	for (size_t r = 0; r < s->sa.n_rows; r++)
		inst[r] = s->sa.sa[r].instance;
	qsort(inst, s->sa.n_rows, sizeof(*inst), u64_cmp);
	if ((rc = keep_names(s, m)) == 0 && (rc = current(s, &c, &n)) == 0 &&
	    (rc = merge(m, c, n, inst, s->sa.n_rows, s->now, &f, &nt, &n_nt)) == 0) {
		for (size_t i = 0; i < n_nt && !rc; i++)
			rc = emit(s, &nt[i]);
		for (size_t i = 0; i < m->n; i++)
			tunnel_free(&m->t[i]);
		free(m->t);
		m->t = nt;
		m->n = n_nt;
	}
	if (m == &none) {
		for (size_t i = 0; i < none.n; i++)
			tunnel_free(&none.t[i]);
		free(none.t);
	}
	free(c);
	free(inst);
	return rc;
}
