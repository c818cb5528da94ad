/* snmpd/snmp_view.c: joins one snapshot of the metrics collection layer into XIPSEC-MIB's scalars
 * and table rows (snmpd/snmp_view.h). The families are walked by id and their samples joined by row;
 * nothing is read from the SADB or xipsec-iked here but through xm_collect(), so the SNMP subagent
 * and the Prometheus export cannot disagree. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snmpd/snmp_view.h"

static const struct xm_family *fam(const struct xm_snapshot *s, enum xm_id id)
{
	return &s->fam[id];
}

/* The value of a global family (its one sample), or 0 when its source gave none. */
static uint64_t global1(const struct xm_snapshot *s, enum xm_id id)
{
	const struct xm_family *f = fam(s, id);

	return f->n ? f->s[0].value : 0;
}

/* The sum of every sample of a family (a global family with a sub label: IKE SAs by state...). */
static uint64_t sum_all(const struct xm_snapshot *s, enum xm_id id)
{
	const struct xm_family *f = fam(s, id);
	uint64_t t = 0;

	for (size_t i = 0; i < f->n; i++)
		t += f->s[i].value;
	return t;
}

/* A global family's one sample, or XS_C_NONE when it has none. */
static uint64_t global_or_none(const struct xm_snapshot *s, enum xm_id id)
{
	const struct xm_family *f = fam(s, id);

	return f->n ? f->s[0].value : XS_C_NONE;
}

/* The samples of a global family with a sub label into out[sub] (subs from 0 up to n). */
static void by_sub(const struct xm_snapshot *s, enum xm_id id, uint64_t *out, unsigned n)
{
	const struct xm_family *f = fam(s, id);

	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].sub < n)
			out[f->s[i].sub] = f->s[i].value;
}

static const char *sub_name(const struct xm_family *f, uint32_t sub)
{
	return f->sub_label && sub < f->n_sub ? f->sub_values[sub] : NULL;
}

/* One value per SA row, for the families with one sample per row. */
static void sa_join(const struct xm_snapshot *s, enum xm_id id, struct xs_sa_row *rows, size_t n,
		    size_t off)
{
	const struct xm_family *f = fam(s, id);

	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].row < n)
			*(uint64_t *)((char *)&rows[f->s[i].row] + off) = f->s[i].value;
}

static void sa_join32(const struct xm_snapshot *s, enum xm_id id, struct xs_sa_row *rows, size_t n,
		      size_t off)
{
	const struct xm_family *f = fam(s, id);

	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].row < n)
			*(uint32_t *)((char *)&rows[f->s[i].row] + off) = (uint32_t)f->s[i].value;
}

/* A remaining-lifetime family: samples only for the limits that are set, sub = "soft" / "hard". */
static void sa_left(const struct xm_snapshot *s, enum xm_id id, struct xs_sa_row *rows, size_t n,
		    enum xs_left soft, enum xs_left hard)
{
	const struct xm_family *f = fam(s, id);

	for (size_t i = 0; i < f->n; i++) {
		const char *lim = sub_name(f, f->s[i].sub);
		enum xs_left which;

		if (f->s[i].row >= n || !lim)
			continue;
		if (!strcmp(lim, "soft"))
			which = soft;
		else if (!strcmp(lim, "hard"))
			which = hard;
		else
			continue;
		rows[f->s[i].row].left[which] = f->s[i].value;
		rows[f->s[i].row].have_left |= 1u << which;
	}
}

static int build_sa(struct xs_view *v)
{
	const struct xm_snapshot *s = &v->snap;
	const struct xm_family *d = fam(s, XM_SA_DROPS);
	size_t n = s->sa.n_rows;

	if (!n)
		return 0;
	v->sa = calloc(n, sizeof(*v->sa));
	if (!v->sa)
		return -ENOMEM;
	v->n_sa = n;
	for (size_t r = 0; r < n; r++)
		v->sa[r].key = &s->sa.sa[r];
	sa_join(s, XM_SA_PACKETS, v->sa, n, offsetof(struct xs_sa_row, packets));
	sa_join(s, XM_SA_BYTES, v->sa, n, offsetof(struct xs_sa_row, bytes));
	sa_join(s, XM_SA_CREATED, v->sa, n, offsetof(struct xs_sa_row, created));
	sa_join(s, XM_SA_LAST_USED, v->sa, n, offsetof(struct xs_sa_row, last_used));
	sa_join32(s, XM_SA_STATE, v->sa, n, offsetof(struct xs_sa_row, state));
	sa_join32(s, XM_SA_EXPIRY, v->sa, n, offsetof(struct xs_sa_row, expiry));
	for (size_t i = 0; i < d->n; i++)
		if (d->s[i].row < n)
			v->sa[d->s[i].row].drops += d->s[i].value;
	sa_left(s, XM_SA_REMAIN_SECONDS, v->sa, n, XS_LEFT_SOFT_SECONDS, XS_LEFT_HARD_SECONDS);
	sa_left(s, XM_SA_REMAIN_BYTES, v->sa, n, XS_LEFT_SOFT_BYTES, XS_LEFT_HARD_BYTES);
	sa_left(s, XM_SA_REMAIN_PACKETS, v->sa, n, XS_LEFT_SOFT_PACKETS, XS_LEFT_HARD_PACKETS);
	return 0;
}

static int build_workers(struct xs_view *v)
{
	static const enum xm_id col[XS_W_MAX] = {
		[XS_W_RX_PACKETS] = XM_W_RX_PACKETS, [XS_W_RX_BYTES] = XM_W_RX_BYTES,
		[XS_W_TX_PACKETS] = XM_W_TX_PACKETS, [XS_W_TX_BYTES] = XM_W_TX_BYTES,
		[XS_W_FRAG_PACKETS] = XM_W_FRAG_PACKETS, [XS_W_FRAG_MADE] = XM_W_FRAG_MADE,
		[XS_W_REASM_PACKETS] = XM_W_REASM_PACKETS, [XS_W_REASM_FRAGS] = XM_W_REASM_FRAGS,
		[XS_W_DROPS] = XM_W_DROPS,
		[XS_W_HANDOFF_JOBS] = XM_W_HANDOFF_JOBS, [XS_W_HANDOFF_PKTS] = XM_W_HANDOFF_PKTS,
		[XS_W_HANDOFF_BACK] = XM_W_HANDOFF_BACK, [XS_W_HANDOFF_DONE] = XM_W_HANDOFF_DONE,
	};
	const struct xm_snapshot *s = &v->snap;
	size_t n = s->worker.n_rows;

	if (!n)
		return 0;
	v->worker = calloc(n, sizeof(*v->worker));
	if (!v->worker)
		return -ENOMEM;
	v->n_worker = n;
	for (size_t r = 0; r < n; r++)
		v->worker[r].id = (uint32_t)r;
	for (unsigned c = 0; c < XS_W_MAX; c++) {
		const struct xm_family *f = fam(s, col[c]);

		/* XM_W_DROPS has one sample per reason that counted: they add up. */
		for (size_t i = 0; i < f->n; i++)
			if (f->s[i].row < n)
				v->worker[f->s[i].row].v[c] += f->s[i].value;
	}
	return 0;
}

/* Every reason the layer names (whether or not it counted), in reason-number order. */
static int build_drops(struct xs_view *v)
{
	const struct xm_snapshot *s = &v->snap;
	const struct xm_family *tot = fam(s, XM_DROPS), *sa = fam(s, XM_SA_DROPS), *w = fam(s, XM_W_DROPS);
	unsigned n_sub = tot->n_sub;
	size_t *at;

	if (!n_sub)
		return 0;
	at = calloc(n_sub, sizeof(*at));
	v->drop = calloc(n_sub, sizeof(*v->drop));
	if (!at || !v->drop) {
		free(at);
		return -ENOMEM;
	}
	for (unsigned r = 0; r < n_sub; r++) {
		/* reason 0 is "none": a drop never counts under it */
		if (r == 0 || !tot->sub_values[r]) {
			at[r] = SIZE_MAX;
			continue;
		}
		at[r] = v->n_drop;
		v->drop[v->n_drop++].name = tot->sub_values[r];
	}
	for (size_t i = 0; i < tot->n; i++)
		if (tot->s[i].sub < n_sub && at[tot->s[i].sub] != SIZE_MAX)
			v->drop[at[tot->s[i].sub]].total += tot->s[i].value;
	for (size_t i = 0; i < sa->n; i++)
		if (sa->s[i].sub < n_sub && at[sa->s[i].sub] != SIZE_MAX)
			v->drop[at[sa->s[i].sub]].sa += sa->s[i].value;
	for (size_t i = 0; i < w->n; i++)
		if (w->s[i].sub < n_sub && at[w->s[i].sub] != SIZE_MAX)
			v->drop[at[w->s[i].sub]].nosa += w->s[i].value;
	free(at);
	return 0;
}

/* The home agent's acknowledgements by status (the statuses it sent), in status order. */
static int build_ba(struct xs_view *v)
{
	const struct xm_family *f = fam(&v->snap, XM_HA_BA_STATUS);

	if (!f->n)
		return 0;
	if (!(v->ba = calloc(f->n, sizeof(*v->ba))))
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++)
		v->ba[v->n_ba++] = (struct xs_ba_row){ f->s[i].sub, f->s[i].value };
	return 0;
}

/* A node family's sample into its row's field (one sample per row, or one per row and sub). */
static void node_join(const struct xm_snapshot *s, enum xm_id id, uint32_t sub, struct xs_node_row *rows,
		      size_t n, size_t off)
{
	const struct xm_family *f = fam(s, id);

	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].row < n && f->s[i].sub == sub)
			*(uint64_t *)((char *)&rows[f->s[i].row] + off) = f->s[i].value;
}

/* The mobile nodes: their rows are the node row set's (label home_address), each node's
 * acknowledgements by status its samples of XM_HA_NODE_BA_STATUS (in row, then status order). */
static int build_nodes(struct xs_view *v)
{
	const struct xm_snapshot *s = &v->snap;
	const struct xm_family *ba = fam(s, XM_HA_NODE_BA_STATUS), *age = fam(s, XM_HA_NODE_LAST_BU_AGE);
	const struct xm_family *bound = fam(s, XM_HA_NODE_BOUND);
	size_t n = s->node.n_rows;

	if (!n)
		return 0;
	v->node = calloc(n, sizeof(*v->node));
	v->node_ba = ba->n ? calloc(ba->n, sizeof(*v->node_ba)) : NULL;
	if (!v->node || (ba->n && !v->node_ba))
		return -ENOMEM;
	v->n_node = n;
	for (size_t r = 0; r < n; r++)
		if (inet_pton(AF_INET6, s->node.text + s->node.off[r], v->node[r].hoa) != 1)
			memset(v->node[r].hoa, 0, 16);
	node_join(s, XM_HA_NODE_BU, 0, v->node, n, offsetof(struct xs_node_row, bu_accepted));
	node_join(s, XM_HA_NODE_BU, 1, v->node, n, offsetof(struct xs_node_row, bu_refused));
	node_join(s, XM_HA_NODE_MOVES, 0, v->node, n, offsetof(struct xs_node_row, moves));
	for (size_t i = 0; i < age->n; i++)
		if (age->s[i].row < n) {
			v->node[age->s[i].row].last_bu_age = age->s[i].value;
			v->node[age->s[i].row].has_age = true;
		}
	for (size_t i = 0; i < bound->n; i++)
		if (bound->s[i].row < n)
			v->node[bound->s[i].row].bound = bound->s[i].value != 0;
	for (size_t i = 0; i < ba->n; i++)
		if (ba->s[i].row < n)
			v->node_ba[v->n_node_ba++] = (struct xs_node_ba_row){ &v->node[ba->s[i].row],
									      ba->s[i].sub, ba->s[i].value };
	return 0;
}

static void build_globals(struct xs_view *v)
{
	const struct xm_snapshot *s = &v->snap;
	uint64_t *g = v->g;

	g[XS_G_SADB_UP] = global1(s, XM_SADB_UP);
	g[XS_G_SAS] = global1(s, XM_SADB_SAS);
	g[XS_G_SA_CAPACITY] = global1(s, XM_SADB_SA_CAPACITY);
	g[XS_G_POLICIES] = global1(s, XM_SADB_POLICIES);
	g[XS_G_POLICY_CAPACITY] = global1(s, XM_SADB_POLICY_CAPACITY);
	g[XS_G_SADB_CHANGES] = global1(s, XM_SADB_CHANGES);
	g[XS_G_DP_UP] = global1(s, XM_DP_UP);
	g[XS_G_DP_START_TIME] = global1(s, XM_DP_START_TIME);
	g[XS_G_WORKERS] = global1(s, XM_DP_WORKERS);
	g[XS_G_DROPS_TOTAL] = sum_all(s, XM_DROPS);
	g[XS_G_IKE_UP] = global1(s, XM_IKE_UP);
	g[XS_G_IKE_SAS] = sum_all(s, XM_IKE_SAS);
	g[XS_G_IKE_HALF_OPEN] = global1(s, XM_IKE_HALF_OPEN);
	g[XS_G_CHILD_SAS] = sum_all(s, XM_IKE_CHILD_SAS);
	g[XS_G_HA_UP] = global1(s, XM_HA_UP);
	g[XS_G_HA_BINDINGS] = global1(s, XM_HA_BINDINGS);
	const struct xm_family *ev = &s->fam[XM_HA_EVENTS];
	for (size_t i = 0; i < ev->n; i++)
		if (ev->s[i].sub < SADB_HA_KINDS)
			g[XS_G_HA_EVENTS + ev->s[i].sub] = ev->s[i].value;
}

/* The cluster's scalars (the roles as the metrics have them: 1 active, 0 standby) and segment rows. */
static void build_cluster(struct xs_view *v)
{
	static const enum xm_id one[XS_C_SYNC] = {
		[XS_C_UP] = XM_CL_UP, [XS_C_ROLE] = XM_CL_ACTIVE, [XS_C_ELIGIBLE] = XM_CL_ELIGIBLE,
		[XS_C_PEER_REACHABLE] = XM_CL_PEER_REACHABLE, [XS_C_PEER_ROLE] = XM_CL_PEER_ACTIVE,
		[XS_C_LAST_MESSAGE_MS] = XM_CL_LAST_MESSAGE_MS, [XS_C_SYNC_LAG_MS] = XM_CL_SYNC_LAG_MS,
		[XS_C_COVERED_SAS] = XM_CL_COVERED_SAS, [XS_C_HEADROOM_MIN] = XM_CL_HEADROOM_MIN,
		[XS_C_HEADROOM_MIN_SPI] = XM_CL_HEADROOM_MIN_SPI, [XS_C_SEGMENTS] = XM_CL_SEGMENTS,
		[XS_C_FOREIGN] = XM_CL_FOREIGN,
	};
	const struct xm_snapshot *s = &v->snap;
	uint64_t owned[SADB_STATS_SEGMENTS] = { 0 }, kept[SADB_STATS_SEGMENTS] = { 0 },
		 dropped[SADB_STATS_SEGMENTS] = { 0 };
	uint64_t *c = v->c;

	for (unsigned i = 0; i < XS_C_SYNC; i++) {
		c[i] = global_or_none(s, one[i]);
		/* only the roles, the ages and the headroom have a value for "none"; the rest read 0 */
		if (c[i] == XS_C_NONE && i != XS_C_ROLE && i != XS_C_PEER_ROLE && i != XS_C_LAST_MESSAGE_MS &&
		    i != XS_C_SYNC_LAG_MS && i != XS_C_HEADROOM_MIN)
			c[i] = 0;
	}
	memset(c + XS_C_SYNC, 0, (XS_C_MAX - XS_C_SYNC) * sizeof(*c));
	by_sub(s, XM_CL_SYNC, c + XS_C_SYNC, SADB_CL_COUNTERS);
	by_sub(s, XM_CL_SYNC_DROPPED, c + XS_C_SYNC_DROPPED, SADB_CL_DROPS);
	by_sub(s, XM_CL_SEG_OWNED, owned, SADB_STATS_SEGMENTS);
	by_sub(s, XM_CL_SEG_KEPT, kept, SADB_STATS_SEGMENTS);
	by_sub(s, XM_CL_SEG_DROPPED, dropped, SADB_STATS_SEGMENTS);
	v->n_seg = c[XS_C_SEGMENTS] == XS_C_NONE ? 0 : c[XS_C_SEGMENTS] < SADB_STATS_SEGMENTS ?
		   (size_t)c[XS_C_SEGMENTS] : SADB_STATS_SEGMENTS;
	for (size_t i = 0; i < v->n_seg; i++)
		v->seg[i] = (struct xs_seg_row){ (uint32_t)i + 1, owned[i], kept[i], dropped[i] };
}

void xs_view_free(struct xs_view *v)
{
	if (v->have_snap)
		xm_snapshot_free(&v->snap);
	free(v->sa);
	free(v->worker);
	free(v->drop);
	free(v->ba);
	free(v->node);
	free(v->node_ba);
	memset(v, 0, sizeof(*v));
}

int xs_view_build(struct xs_view *v, struct xm_snapshot *snap)
{
	int rc;

	xs_view_free(v);
	v->snap = *snap;
	v->have_snap = true;
	build_globals(v);
	build_cluster(v);
	rc = build_sa(v);
	if (!rc)
		rc = build_workers(v);
	if (!rc)
		rc = build_drops(v);
	if (!rc)
		rc = build_ba(v);
	if (!rc)
		rc = build_nodes(v);
	if (rc) {
		free(v->sa);
		free(v->worker);
		free(v->drop);
		free(v->ba);
		free(v->node);
		free(v->node_ba);
		v->sa = NULL, v->worker = NULL, v->drop = NULL;
		v->ba = NULL, v->node = NULL, v->node_ba = NULL;
		v->n_sa = v->n_worker = v->n_drop = v->n_ba = v->n_node = v->n_node_ba = 0;
	}
	return rc;
}

int xs_view_refresh(struct xs_view *v, const struct xm_opts *o)
{
	struct xm_snapshot snap;
	int rc = xm_collect(&snap, o);

	if (rc) {
		xm_snapshot_free(&snap);
		xs_view_free(v);
		return rc;
	}
	return xs_view_build(v, &snap);
}
