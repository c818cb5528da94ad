/* dataplane/xipsecd/dp_cluster_status.c: what the cluster node shows: the counters view's cluster
 * section (dp_cluster_stats, the figures monitoring reads) and `ipsecctl show cluster` (text or JSON,
 * the same figures under the same names, with each covered SA's row and why the node is or is not
 * eligible). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "dataplane/xipsecd/dp_cluster_int.h"
#include "dataplane/xipsecd/dp_segment.h"

/* One covered SA as `show cluster` lists it: its reservation (outbound) or window top, the lease
 * its engine may use, what this node recorded, and the headroom between the two first. */
struct sa_row {
	bool out;
	uint64_t top, lease, recorded, headroom;
};

static void sa_row(struct dp_cluster *cl, struct dp_sa *s, uint64_t now, struct sa_row *r)
{
	struct cent *c = cent_get(cl, &s->ckey, now);

	r->out = s->sa.dir == SADB_DIR_OUT;
	r->top = r->out ? rd(&s->rt->seq_reserved) : rd(&s->rt->replay_top);
	r->lease = r->out ? rd(&s->rt->seq_lease) : 0;
	r->recorded = c ? (r->out ? c->l.recorded : c->win_top) : 0;
	r->headroom = r->out && r->lease > r->top ? r->lease - r->top : 0;
}

static uint64_t ago_ms(uint64_t then, uint64_t now)
{
	return then ? (now - then) / MS : SADB_STATS_NONE;
}

_Static_assert((int)DPC_DROP_MAX == (int)SADB_CL_DROPS, "the view's drop reasons are the channel's");

void dp_cluster_stats(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, struct sadb_stats_cluster *st)
{
	struct dp_cluster *cl = ctx->cluster;
	uint64_t now = dp_now_ns();
	const uint64_t cnt[SADB_CL_COUNTERS] = {
		[SADB_CL_SENT] = cl ? cl->c.sent : 0, [SADB_CL_RECEIVED] = cl ? cl->c.received : 0,
		[SADB_CL_SEND_ERRORS] = cl ? cl->c.send_errors : 0,
		[SADB_CL_LEASES_ASKED] = cl ? cl->c.leases_asked : 0,
		[SADB_CL_LEASES_ACKED] = cl ? cl->c.leases_acked : 0,
		[SADB_CL_LEASES_REFUSED] = cl ? cl->c.leases_refused : 0,
		[SADB_CL_RESYNCS_ASKED] = cl ? cl->c.resyncs_asked : 0,
		[SADB_CL_RESYNCS_SERVED] = cl ? cl->c.resyncs_served : 0,
		[SADB_CL_TAKEOVERS] = cl ? cl->c.takeovers : 0, [SADB_CL_SOLO_SOFT] = cl ? cl->c.solo_soft : 0,
		[SADB_CL_SOLO_HARD] = cl ? cl->c.solo_hard : 0,
	};

	memset(st, 0, sizeof(*st));
	dp_segment_stats(ctx, st);
	if (!cl)
		return;
	st->present = 1;
	st->active = cl->active;
	st->eligible = ready(cl, now);
	st->peer_reachable = reachable(cl, now);
	st->peer_active = cl->peer_active;
	st->last_message_ms = ago_ms(cl->last_rx_ns, now);
	st->sync_lag_ms = ago_ms(cl->last_sync_rx_ns, now);
	memcpy(st->counter, cnt, sizeof(cnt));
	memcpy(st->dropped, cl->c.dropped, sizeof(st->dropped));
	st->min_headroom = SADB_STATS_NONE;
	for (uint32_t i = 0; i < n; i++) {
		struct sa_row r;

		if (!rt_ours(v[i]))
			continue;
		st->covered_sas++;
		sa_row(cl, v[i], now, &r);
		/* a standby sends on no SA: its leases are 0 by design, not a headroom running out */
		if (r.out && cl->active && r.headroom < st->min_headroom) {
			st->min_headroom = r.headroom;
			st->min_headroom_spi = v[i]->sa.spi;
			st->min_headroom_slot = v[i]->slot;
		}
	}
}

static long long or_minus_one(uint64_t ms)
{
	return ms == SADB_STATS_NONE ? -1LL : (long long)ms;
}

size_t dp_cluster_status(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, bool json, char *buf,
			 size_t len)
{
	struct dp_cluster *cl = ctx->cluster;
	struct sadb_stats_cluster st;
	uint64_t now = dp_now_ns();
	const char *q = json ? "\"" : "";
	char *p = buf, why[160];
	size_t left = len;
	bool first = true;

	if (!cl)
		return (size_t)snprintf(buf, len, json ? "{\"enabled\":false}\n" : "not clustered\n");
	/* the figures the counters view shows, under the same names (sadb_stats.h) */
	dp_cluster_stats(ctx, v, n, &st);
	if (st.eligible)
		snprintf(why, sizeof(why), "eligible");
	else if (!cl->eligible)
		snprintf(why, sizeof(why), "not eligible (catching up)");
	else
		snprintf(why, sizeof(why), "not eligible (it holds %llu covered SAs, the active %llu or other "
			 "ones: waiting for the SAs the active holds)", (unsigned long long)cl->sas.n,
			 (unsigned long long)cl->sas.peer_n);
	if (json)
		dp_put(&p, &left, "{\"enabled\":true,\"role\":\"%s\",\"rank\":%u,\"local\":\"%s\","
		       "\"peer\":\"%s\",\"peer_reachable\":%s,\"peer_role\":\"%s\",\"eligible\":%s,"
		       "\"last_message_ms\":%lld,\"sync_lag_ms\":%lld,\"lease\":%llu,\"budget\":%llu,"
		       "\"sync_packets\":%u,\"sync_ms\":%u,\"covered_sas\":%llu,\"min_headroom\":%lld,"
		       "\"min_headroom_spi\":\"0x%08x\",\"eligibility\":\"%s\",\"sas_match\":%s,"
		       "\"peer_covered_sas\":%llu,\"counters\":{",
		       st.active ? "active" : "standby", cl->rank, cl->local_str, cl->peer_str,
		       st.peer_reachable ? "true" : "false", st.peer_active ? "active" : "standby",
		       st.eligible ? "true" : "false", or_minus_one(st.last_message_ms),
		       or_minus_one(st.sync_lag_ms), (unsigned long long)cl->cfg.lease,
		       (unsigned long long)cl->cfg.budget, cl->cfg.sync_packets, cl->cfg.sync_ms,
		       (unsigned long long)st.covered_sas, or_minus_one(st.min_headroom), st.min_headroom_spi,
		       why, dpc_sas_differ(&cl->sas, now) ? "false" : "true", (unsigned long long)cl->sas.peer_n);
	else
		dp_put(&p, &left, "role %s (rank %u), local %s, peer %s %s (%s), %s\n"
		       "last message %lld ms ago, sync lag %lld ms; lease %llu, budget %llu, window sync "
		       "every %u packets or %u ms\ncounters:",
		       st.active ? "active" : "standby", cl->rank, cl->local_str, cl->peer_str,
		       st.peer_reachable ? "reachable" : "unreachable", st.peer_active ? "active" : "standby",
		       why, or_minus_one(st.last_message_ms),
		       or_minus_one(st.sync_lag_ms), (unsigned long long)cl->cfg.lease,
		       (unsigned long long)cl->cfg.budget, cl->cfg.sync_packets, cl->cfg.sync_ms);
	for (unsigned i = 0; i < SADB_CL_COUNTERS; i++)
		dp_put(&p, &left, json ? "%s\"%s\":%llu" : "%s %s %llu", json && i ? "," : "",
		       sadb_stats_cl_counter_name(i), (unsigned long long)st.counter[i]);
	dp_put(&p, &left, json ? ",\"dropped\":{" : "\ndropped:");
	for (unsigned r = 0; r < SADB_CL_DROPS; r++)
		dp_put(&p, &left, json ? "%s%s%s%s:%llu" : "%s %s%s%s %llu", json && r ? "," : "", q,
		       sadb_stats_cl_drop_name(r), q, (unsigned long long)st.dropped[r]);
	dp_put(&p, &left, json ? "}}," : "\n");
	dp_segment_put(ctx, json, &p, &left);
	if (json)
		dp_put(&p, &left, ",\"sas\":[");
	else
		dp_put(&p, &left, "%-10s %-3s %20s %20s %20s %20s\n", "spi", "dir", "reserved/top",
		       "lease", "recorded", "headroom");
	for (uint32_t i = 0; i < n && left > 256; i++) {
		struct sa_row r;

		if (!rt_ours(v[i]))
			continue;
		sa_row(cl, v[i], now, &r);
		if (json)
			dp_put(&p, &left, "%s{\"spi\":\"0x%08x\",\"dir\":\"%s\",\"%s\":%llu,\"lease\":%llu,"
			       "\"recorded\":%llu,\"headroom\":%llu}", first ? "" : ",", v[i]->sa.spi,
			       r.out ? "out" : "in", r.out ? "reserved" : "top", (unsigned long long)r.top,
			       (unsigned long long)r.lease, (unsigned long long)r.recorded,
			       (unsigned long long)r.headroom);
		else
			dp_put(&p, &left, "0x%08x %-3s %20llu %20llu %20llu %20llu\n", v[i]->sa.spi,
			       r.out ? "out" : "in", (unsigned long long)r.top, (unsigned long long)r.lease,
			       (unsigned long long)r.recorded, (unsigned long long)r.headroom);
		first = false;
	}
	if (json)
		dp_put(&p, &left, "]}\n");
	return (size_t)(p - buf);
}

