/* dataplane/xipsecd/dp_mip6.c: the Mobile IPv6 home agent in xipsecd (RFC 6275 section 10, protected
 * as RFC 3776 says), on the control thread: the home agent's state (libmip6: the rules and the
 * binding cache), the Binding Updates the workers queued (dp_mip6_queue.c) taken in batches, what
 * each changes (dp_mip6_move.c: the tunnel SAs, proxy ND), the Binding Acknowledgements queued for
 * worker 0's outbound path (dp_local.c drains them), binding expiry, start and stop, and the control
 * socket's "bindings" answer. dp_mip6.h lists the files and who calls whom.
 *
 * Configuration comes from the SADB: the home agent record (sadb_home_agent_get) and the mobile
 * nodes' SAs (SADB_SAF_MOBILE; ipsecctl's mobile-node statement makes them): per home address an
 * inbound transport SA its Binding Updates arrive on, an outbound transport SA for the
 * acknowledgements, and a pair of tunnel SAs whose outer peer is the home address itself while the
 * mobile node has no binding ("at home": dp_out tunnels nothing into such an SA, SADB_DROP_NO_BINDING)
 * and its care-of address while it has one.
 *
 * What stays off the fast path: a worker that decapsulates a Mobility Header packet of a mobile
 * node's transport SA copies it into a bounded queue (full: dropped and counted) and wakes the
 * control thread; everything else happens there.
 *
 * Security argument.
 *  - Outside attacker: a Binding Update is acted on only after ESP authenticated it with the SA the
 *    configuration binds to that home address (the engine and dp_spd_in_check verify ICV, replay window
 *    and selectors, the Home Address option included: dp_spd_in_check); libmip6 then checks that
 *    the SA it arrived on is that home address's own (mip6_ha_bu), so a mobile node cannot move
 *    another's binding. Unprotected or wrongly protected Binding Updates never reach this file or are
 *    dropped by it, never answered with an acceptance. Replays are stopped by the ESP window and the
 *    Binding Update sequence number. A flood of valid packets from one mobile node costs a queue
 *    slot each, within that node's share (dp_mip6_queue.c): the queue is bounded, the workers never
 *    wait for it, and the other nodes' Binding Updates still find room.
 *  - Ordering: on a move, the tunnel SAs are migrated and the dataplane's SA table republished (after
 *    an RCU grace period no worker still encrypts towards the old care-of address) before the
 *    acknowledgement is queued, so the old address gets nothing after the BA. The control thread
 *    takes the Binding Updates queued since its last look together: their migrations are each one
 *    SADB transaction, then one republication covers them all, then their BAs go out (flush_moves;
 *    a BA that follows no move and no waiting BA goes out at once),
 *    so a home agent that thousands of mobile nodes register with at once (after its restart) pays
 *    the table's republication once per batch, not once per mobile node. Migration keeps the
 *    SA's runtime area, so its sequence numbers continue: nothing is re-keyed and no nonce repeats.
 *  - Restart: bindings are this process's state. A restarted xipsecd starts with an empty cache and
 *    moves every mobile node's tunnel SAs back home, so nothing is tunnelled on the word of a
 *    binding it no longer knows; mobile nodes re-register at their next refresh. Each mobile
 *    node's last accepted sequence number outlives it, on disk before the BA goes
 *    (dp_mip6_cfg.c), so a recorded Binding Update is refused (135) after a restart or reboot.
 *  - Local user: the SADB and the control socket are root's (0600); the sysctls set here
 *    (proxy_ndp, proxy_delay of the home link) are the ones RFC 6275 section 10.4.1 needs. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "dataplane/xipsecd/dp_mip6.h"

static void expired_cb(const struct mip6_binding *b, void *arg)
{
	struct dp_ctx *ctx = arg;
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];

	dp_log(LOG_NOTICE, "home agent: binding of %s (care-of %s) expired", a6(b->hoa, h), a6(b->coa, c));
	dp_mip6_binding_down(ctx, b->hoa);
}

static void handle_bu(struct dp_ctx *ctx, const struct mq_msg *q)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_ha_result res;
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];

	if (q->v4.set) {
		/* RFC 5555: from an IPv4 care-of address; the IPv6 source is the home address */
		bool rebound = dp_mip6_v4_input(ctx, q, dp_mip6_rec_of(m, q->pkt + 8), &res);

		if (res.drop != MIP6_DROP_NONE)
			return;                  /* no error goes back into IPv4: logged there */
		if (rebound)
			dp_mip6_tunnel_move(ctx, res.hoa, res.coa);
	} else {
		mip6_ha_input(m->ha, q->pkt, q->len, q->sa_id, now_ms(), &res);
	}
	if (res.drop != MIP6_DROP_NONE) {
		dp_log(LOG_INFO, "home agent: Binding Update dropped: %s", mip6_drop_name(res.drop));
		dp_mip6_error(ctx, q, res.drop);
		return;
	}
	if (dp_mip6_dad_hold(ctx, &res))
		return;  /* answered when Duplicate Address Detection ends (dp_mip6_dad.c) */
	switch (res.change) {
	case MIP6_CHANGE_NEW:
		dp_log(LOG_NOTICE, "home agent: %s registered at %s for %u s", a6(res.hoa, h), a6(res.coa, c),
		       res.lifetime_s);
		dp_mip6_binding_up(ctx, res.hoa, res.coa, true);
		break;
	case MIP6_CHANGE_MOVE:
		dp_log(LOG_NOTICE, "home agent: %s moved to %s", a6(res.hoa, h), a6(res.coa, c));
		dp_mip6_binding_up(ctx, res.hoa, res.coa, false);
		break;
	case MIP6_CHANGE_DELETE:
		dp_log(LOG_NOTICE, "home agent: %s deregistered", a6(res.hoa, h));
		dp_mip6_binding_down(ctx, res.hoa);
		break;
	case MIP6_CHANGE_REFRESH:  /* a router may register other networks (RFC 3963 6.2) */
		dp_mip6_nemo_refresh(ctx, dp_mip6_mn_find(m->mns, m->n_mns, res.hoa));
		break;
	default:
		if (res.ba.status >= 128)
			dp_log(LOG_INFO, "home agent: Binding Update of %s refused: %s (%s)", a6(res.hoa, h),
			       mip6_reject_name(res.reject), mip6_status_name(res.ba.status));
		break;
	}
	if (res.ba.status < 128)
		dp_mip6_brr_track(ctx, res.hoa);
	dp_mip6_queue_ba(ctx, &res);
}

/* The end of a batch: republish the SA table if tunnels moved (an RCU grace period: no worker
 * encrypts towards an old care-of address any more), then queue the batch's acknowledgements. */
static void flush_moves(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	if (m->sync_due) {
		int r = dp_sa_sync(ctx);

		m->sync_due = false;
		m->republished++;
		if (r)
			dp_log(LOG_WARNING, "home agent: SA table not republished after moving tunnels: %s",
			       strerror(-r));
	}
	for (unsigned i = 0; i < m->ba.n; i++)
		dp_mip6_out_push_v4(ctx, m->ba.m[i].pkt, m->ba.m[i].len, &m->ba.m[i].v4);
	m->ba.n = 0;
}

void dp_mip6_run(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	uint64_t v, now = now_ms();

	if (!m)
		return;
	if (read(m->in_fd, &v, sizeof(v)) < 0) {
		/* nothing signalled: a periodic call */
	}
	dp_mip6_sync_config(ctx);
	for (;;) {
		struct mq_msg q;

		/* A Binding Update is taken only with room for its acknowledgement: in the outbound
		 * queue (only this thread fills it; worker 0 empties it) together with those the batch
		 * holds. The rest waits in the inbound queue for the next round, within its shares. */
		if (atomic_load_explicit(&m->out_n, memory_order_acquire) + m->ba.n >= MQ_LEN)
			break;
		if (!dp_mip6_in_pop(m, &q))
			break;
		if (m->ha && !dp_mip6_mps(ctx, &q))
			handle_bu(ctx, &q);
	}
	if (m->ha && mip6_ha_next_expiry(m->ha) <= now)
		mip6_ha_expire(m->ha, now, expired_cb, ctx);
	dp_mip6_dad_run(ctx, now);
	dp_mip6_brr_run(ctx, now);
	flush_moves(ctx);
	dp_mip6_na_run(ctx, now);
	dp_mip6_disc_run(ctx, now);
}

static void mip6_free(struct dp_mip6 *m)
{
	if (!m)
		return;
	if (m->ha)
		mip6_ha_destroy(m->ha);
	if (m->wdb)
		sadb_close(m->wdb);
	if (m->in_fd >= 0)
		close(m->in_fd);
	if (m->out_fd >= 0)
		close(m->out_fd);
	if (m->nd_fd >= 0)
		close(m->nd_fd);
	if (m->nl_fd >= 0)
		close(m->nl_fd);
	if (m->state_fd >= 0)
		close(m->state_fd);
	dp_mip6_dad_close(m);
	dp_mip6_brr_clear(m);
	if (m->disc_fd >= 0)
		close(m->disc_fd);
	dp_mip6_v4_clear(m);
	free(m->mns);
	free(m->mn_slot);
	free(m->na);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int dp_mip6_init(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = calloc(1, sizeof(*m));
	char msg[256];
	int r;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->state_fd = m->disc_fd = -1;
	m->in_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->out_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->in_fd < 0 || m->out_fd < 0) {
		r = -errno;
		m->nd_fd = m->nl_fd = m->dad_tx = m->dad_rx = -1;
		mip6_free(m);
		return r;
	}
	dp_mip6_nd_open(ctx, m);
	dp_mip6_dad_open(ctx, m);
	dp_mip6_err_init(ctx, m);
	m->brr_at = ctx->cfg.mip6_brr_at < 0 ? 75u : (unsigned)ctx->cfg.mip6_brr_at;
	m->brr_max = ctx->cfg.mip6_brr_max < 0 ? 2u : (unsigned)ctx->cfg.mip6_brr_max;
	m->brr_next = UINT64_MAX;
	dp_mip6_disc_open(m);
	/* The home agent moves tunnel SAs: it needs a writer handle of its own. Opened here, before
	 * any binding exists, so a SADB that refuses it is reported at start. */
	r = sadb_open(ctx->cfg.sadb_path, SADB_RDWR, NULL, &m->wdb, msg, sizeof(msg));
	if (r) {
		dp_log(LOG_WARNING, "home agent: cannot open the SADB for writing (%s): mobile nodes "
		       "cannot be served", msg);
		m->wdb = NULL;
	}
	m->seen_gen = 0;
	ctx->mip6 = m;
	return 0;
}

static void unproxy_cb(const struct mip6_binding *b, void *arg)
{
	struct dp_mip6 *m = arg;
	uint8_t ll[16];

	dp_mip6_proxy_neigh(m, b->hoa, false);
	dp_mip6_ll_of(b->hoa, ll);
	dp_mip6_proxy_neigh(m, ll, false);
}

/* After the workers have stopped. The tunnels stay where the bindings put them: a restarted
 * dataplane moves them home (sync_config). The home link is given back as it was: no proxy entry
 * answers for a mobile node nobody serves any more, the sysctls take their earlier values. */
void dp_mip6_fini(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = ctx->mip6;

	if (m && m->ha) {
		mip6_ha_foreach(m->ha, unproxy_cb, m);
		dp_mip6_nemo_stop(ctx);  /* no route into a tunnel nobody moves any more */
		dp_mip6_nd_unlink(ctx);
	}
	mip6_free(ctx->mip6);
	ctx->mip6 = NULL;
}

void dp_mip6_stats(struct dp_ctx *ctx, struct sadb_stats_ha *ha)
{
	struct dp_mip6 *m = M(ctx);

	memset(ha, 0, sizeof(*ha));
	if (!m || !m->ha)
		return;
	const struct mip6_ha_stats *st = mip6_ha_stats(m->ha);
	uint64_t *k = ha->kind;

	ha->present = 1;
	ha->bindings = mip6_ha_count(m->ha);
	k[SADB_HA_BU_RECEIVED] = st->bu_received;
	k[SADB_HA_BU_ACCEPTED] = st->bu_accepted;
	k[SADB_HA_BU_REJECTED] = st->bu_rejected;
	k[SADB_HA_BU_DROPPED] = st->dropped;
	k[SADB_HA_BA_SENT] = st->ba_sent;
	k[SADB_HA_BE_SENT] = m->err_sent[MIP6_ERR_BE_UNKNOWN_BINDING] + m->err_sent[MIP6_ERR_BE_UNKNOWN_MH_TYPE];
	k[SADB_HA_PP_SENT] = m->err_sent[MIP6_ERR_PP_PAYLOAD_PROTO] + m->err_sent[MIP6_ERR_PP_HEADER_LEN];
	for (unsigned e = 1; e < MIP6_ERR_MAX; e++)
		k[SADB_HA_ERRORS_LIMITED] += m->err_limited[e];
	k[SADB_HA_BRR_SENT] = m->brr_sent;
	k[SADB_HA_MOVES] = st->bindings_moved;
	k[SADB_HA_PROXY_NA_SENT] = m->na_sent;
	k[SADB_HA_DAD_OK] = m->dad_ok;
	k[SADB_HA_DAD_FAILED] = st->dad_failed;
	k[SADB_HA_EXPIRED] = st->bindings_expired;
	memcpy(ha->ba_status, m->ba_status, sizeof(ha->ba_status));
}

_Static_assert(MIP6_MN_BA_SLOTS <= SADB_STATS_NODE_BA, "a node record holds every status slot");

struct node_walk {
	struct sadb_stats_node *v;
	uint32_t n, cap;
	uint64_t now;
};

static void view_node_cb(const struct mip6_mn *mn, const struct mip6_mn_stats *st,
			 const struct mip6_binding *bd, void *arg)
{
	struct node_walk *k = arg;

	if (k->n == k->cap)
		return;
	struct sadb_stats_node *o = &k->v[k->n++];
	memset(o, 0, sizeof(*o));
	memcpy(o->hoa, mn->hoa, 16);
	o->bound = bd != NULL;
	o->bu_accepted = st->bu_accepted;
	o->bu_refused = st->bu_refused;
	o->moves = st->moves;
	o->last_bu_age_ms = st->bu_accepted + st->bu_refused ? k->now - st->last_bu_ms : UINT64_MAX;
	for (unsigned s = 0; s < MIP6_MN_BA_SLOTS; s++)
		if (st->ba[s]) {
			o->ba[o->n_ba].status = mip6_ba_slot_status(s);
			o->ba[o->n_ba++].count = st->ba[s];
		}
}

void dp_mip6_stats_nodes(struct dp_ctx *ctx, struct sadb_stats_writer *w)
{
	struct dp_mip6 *m = M(ctx);
	struct node_walk k = { NULL, 0, 0, now_ms() };

	if (m && m->ha && m->n_mns) {
		k.cap = (uint32_t)m->n_mns;
		if (!(k.v = malloc((size_t)k.cap * sizeof(*k.v)))) {
			dp_log(LOG_WARNING, "counters view: no memory for %u mobile nodes' records", k.cap);
			return;  /* the view keeps the previous records */
		}
		mip6_ha_mn_foreach(m->ha, view_node_cb, &k);
	}
	if (sadb_stats_set_nodes(w, k.v, k.n) == -ENOSPC)
		dp_log(LOG_WARNING, "counters view: %u mobile nodes, more than it holds; their records are "
		       "not updated", k.n);
	free(k.v);
}

/* ---- the control socket's "bindings" ---- */
/* Tab-separated lines, for ipsecctl show bindings to render as text or JSON:
 *   home-agent ADDR LINK MAX_LIFETIME MOBILE_NODES PREFIX[,PREFIX...]     (absent: no home agent)
 *   binding HOA COA SEQ LIFETIME LEFT AGE TO_MN_PACKETS TO_MN_BYTES FROM_MN_PACKETS FROM_MN_BYTES
 *   node HOA BU_ACCEPTED BU_REFUSED MOVES LAST_BU_AGE BA_STATUS   (every configured mobile node:
 *        LAST_BU_AGE in seconds or "-" before its first, BA_STATUS "STATUS:COUNT,..." of the
 *        statuses it was answered with, or "-")
 *   counter NAME VALUE        rejected STATUS COUNT        refused REASON COUNT
 *   dropped REASON COUNT      (refused: the rejections by reason, mip6_reject_name)
 *   end */

struct ctl_buf {
	char *p;
	size_t left;
};

static void put(struct ctl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->p, b->left, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->left)
		n = b->left ? (int)b->left - 1 : 0;
	b->p += n;
	b->left -= (size_t)n;
}

struct bind_walk {
	struct dp_ctx *ctx;
	struct ctl_buf *b;
	uint64_t now;
};

/* The counters of the SA in slot id - 1, read as every reader does (sadb_runtime_read): an SA
 * deleted meanwhile, or a slot given to another SA, shows 0, never another SA's figures. */
static void rt_put(struct bind_walk *k, uint32_t id)
{
	struct sadb_runtime_view v = { 0 };
	struct sadb_sa sa;

	if (id && sadb_sa_get(k->ctx->db, id - 1, &sa) == 0) {
		if (sadb_runtime_read(k->ctx->db, id - 1, sa.instance, 0, &v) < 0)
			memset(&v, 0, sizeof(v));
		explicit_bzero(&sa, sizeof(sa));
	}
	put(k->b, "\t%llu\t%llu", (unsigned long long)v.packets, (unsigned long long)v.bytes);
}

static void bind_cb(const struct mip6_binding *bd, void *arg)
{
	struct bind_walk *k = arg;
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];
	uint64_t left = bd->expires_ms > k->now ? (bd->expires_ms - k->now + 999) / 1000 : 0;

	put(k->b, "binding\t%s\t%s\t%u\t%u\t%llu\t%llu", a6(bd->hoa, h), a6(bd->coa, c), bd->seq,
	    bd->lifetime_s, (unsigned long long)left, (unsigned long long)((k->now - bd->created_ms) / 1000));
	rt_put(k, bd->mn ? bd->mn->tun_out_sa : 0);
	rt_put(k, bd->mn ? bd->mn->tun_in_sa : 0);
	put(k->b, "\n");
}

static void node_cb(const struct mip6_mn *mn, const struct mip6_mn_stats *st, const struct mip6_binding *bd,
		    void *arg)
{
	struct bind_walk *k = arg;
	char h[INET6_ADDRSTRLEN];
	const char *sep = "\t";

	(void)bd;
	put(k->b, "node\t%s\t%llu\t%llu\t%llu", a6(mn->hoa, h), (unsigned long long)st->bu_accepted,
	    (unsigned long long)st->bu_refused, (unsigned long long)st->moves);
	if (st->bu_accepted + st->bu_refused)
		put(k->b, "\t%llu", (unsigned long long)((k->now - st->last_bu_ms) / 1000));
	else
		put(k->b, "\t-");
	for (unsigned s = 0; s < MIP6_MN_BA_SLOTS; s++)
		if (st->ba[s]) {
			put(k->b, "%s%u:%llu", sep, mip6_ba_slot_status(s), (unsigned long long)st->ba[s]);
			sep = ",";
		}
	put(k->b, "%s\n", *sep == '\t' ? "\t-" : "");
}

size_t dp_mip6_ctl_cap(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	/* a binding line is at most two addresses and eight numbers (under 220 bytes), a node line
	 * an address, four numbers and fifteen status:count pairs (under 600); the home agent,
	 * counter and drop lines fit in the rest */
	return 16384 + (m && m->ha ? (size_t)mip6_ha_count(m->ha) * 256 + (size_t)m->n_mns * 640 : 0);
}

size_t dp_mip6_ctl(struct dp_ctx *ctx, char *buf, size_t len)
{
	struct dp_mip6 *m = M(ctx);
	struct ctl_buf b = { buf, len };
	char a[INET6_ADDRSTRLEN];

	if (!m || !m->ha) {
		put(&b, "end\n");
		return (size_t)(b.p - buf);
	}
	const struct mip6_ha_stats *st = mip6_ha_stats(m->ha);
	for (unsigned r = 0; r < m->n_rec; r++) {  /* one line per home agent address */
		const struct sadb_home_agent *rec = &m->rec[r];

		put(&b, "home-agent\t%s\t%s\t%u\t%zu\t", a6(rec->addr.a.b, a), ctx->ifc[DP_IN].name,
		    rec->max_lifetime, m->n_mns);
		for (unsigned i = 0; i < rec->n_prefix; i++)
			put(&b, "%s%s/%u", i ? "," : "", a6(rec->prefix[i].a.b, a), rec->plen[i]);
		put(&b, "\n");
	}
	struct bind_walk k = { ctx, &b, now_ms() };
	mip6_ha_foreach(m->ha, bind_cb, &k);
	mip6_ha_mn_foreach(m->ha, node_cb, &k);
	const struct { const char *name; uint64_t v; } c[] = {
		{ "bu_received", st->bu_received }, { "bu_accepted", st->bu_accepted },
		{ "bu_rejected", st->bu_rejected }, { "bu_dropped", st->dropped }, { "ba_sent", st->ba_sent },
		{ "bindings_added", st->bindings_added }, { "bindings_refreshed", st->bindings_refreshed },
		{ "bindings_moved", st->bindings_moved }, { "bindings_deleted", st->bindings_deleted },
		{ "bindings_expired", st->bindings_expired }, { "proxy_na_sent", m->na_sent },
		{ "nd_errors", m->nd_errors }, { "migrations", m->migrations },
		{ "republished", m->republished },
		{ "migrate_errors", m->migrate_errors }, { "mobile_nodes_refused", m->refused_mns },
		{ "queue_taken", atomic_load(&m->taken) }, { "queue_drop_share", atomic_load(&m->in_share) },
		{ "queue_drop_evicted", atomic_load(&m->in_evicted) },
		{ "queue_full_in", atomic_load(&m->in_full) },
		{ "queue_drop_too_big", atomic_load(&m->in_too_big) },
		{ "queue_full_out", atomic_load(&m->out_full) },
		{ "dad_started", m->dad_started }, { "dad_ok", m->dad_ok },
		{ "dad_skipped", m->dad_skipped }, { "dad_ns_sent", m->dad_ns_sent },
		{ "dad_failed", st->dad_failed }, { "brr_sent", m->brr_sent },
		{ "ra_heard", m->halist.ra_taken }, { "ra_dropped", m->halist.ra_bad },
		{ "home_agents_list_full", m->halist.full }, { "dhaad_requests", m->dhaad_requests },
		{ "dhaad_replies", m->dhaad_replies }, { "dhaad_dropped", m->dhaad_dropped },
		{ "mps_received", m->mps_received }, { "mpa_sent", m->mpa_sent },
		{ "mps_dropped", m->mps_dropped },
		{ "bu_ipv4_received", m->v4_bu }, { "bu_ipv4_dropped", m->v4_dropped },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		put(&b, "counter\t%s\t%llu\n", c[i].name, (unsigned long long)c[i].v);
	for (unsigned e = 1; e < MIP6_ERR_MAX; e++)
		put(&b, "counter\terror_sent_%s\t%llu\ncounter\terror_limited_%s\t%llu\n", mip6_err_name(e),
		    (unsigned long long)m->err_sent[e], mip6_err_name(e), (unsigned long long)m->err_limited[e]);
	for (unsigned s = 128; s < 256; s++)
		if (st->rejected[s])
			put(&b, "rejected\t%u\t%llu\n", s, (unsigned long long)st->rejected[s]);
	for (unsigned r = 1; r < MIP6_REJECT_MAX; r++)
		if (st->reject_why[r])
			put(&b, "refused\t%s\t%llu\n", mip6_reject_name(r), (unsigned long long)st->reject_why[r]);
	for (unsigned d = 1; d < MIP6_DROP_MAX; d++)
		if (st->drops[d])
			put(&b, "dropped\t%s\t%llu\n", mip6_drop_name(d), (unsigned long long)st->drops[d]);
	put(&b, "end\n");
	return (size_t)(b.p - buf);
}
