/* dataplane/xipsecd/dp_stats.c: the control thread's production of the counters view
 * (sadb/sadb_stats.h), the key-less copy of the counters that the exporter and xipsec-snmpd read
 * as an unprivileged user instead of mapping the SADB. A reading every SADB_STATS_INTERVAL_MS, and
 * one SADB_STATS_CHANGE_MS after a change the control thread applied, so a new SA shows within a
 * scrape; each reading carries the home agent's counters and the cluster's state (dp_mip6_stats,
 * dp_cluster_stats), the producer's own. A view that cannot be made is logged and left out:
 * monitoring is not worth a dataplane that refuses to forward (the exporter then says the view is
 * missing).
 *
 * A deleted SA's final counters (dp_stats_gone): a tunnel's counters in the exporter add those of
 * its SAs gone by rekeys, and a reading only has an SA's counters as they were when it was taken,
 * up to an interval before its last packet. So the view also shows, for a while, a gone record of
 * every SA the dataplane deleted, with counters that are exact, not a late reading: dp_sa_sync
 * reads them from the SA's runtime area after the RCU grace period that follows the table without
 * it, and before it releases the slot. Every counter of the runtime area is added by a worker while
 * it holds the SA, inside an RCU read-side section that ends at its next quiescent state (a helper
 * decrypting a handed-off burst works inside its owner's: dp_handoff.c); the grace period waits for
 * every such section that could have found the SA, and a section that starts later looks it up in
 * the new table, where it is not. So no one adds to these counters any more, and the slot, still
 * not released, holds the runtime area of this SA instance and no other (sadb_runtime_read checks
 * the instance). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_cluster.h"

void dp_stats_open(struct dp_ctx *ctx, struct dp_sa *const *cv, uint32_t ncv)
{
	const char *path = ctx->cfg.stats_path ? ctx->cfg.stats_path : sadb_stats_default_path();
	struct sadb_info info;
	char msg[512];
	gid_t gid;
	int err;

	if (!*path)
		return;
	if (sadb_stats_group(ctx->cfg.stats_group, &gid) < 0) {
		/* no monitoring group on this host: the view is the owner's only */
		dp_log(ctx->cfg.stats_group ? LOG_WARNING : LOG_NOTICE, "counters view: no group %s; "
		       "%s readable by its owner only", ctx->cfg.stats_group ? ctx->cfg.stats_group :
		       SADB_STATS_DEFAULT_GROUP, path);
		gid = getegid();
	}
	if ((err = sadb_info(ctx->db, &info)) < 0)
		snprintf(msg, sizeof(msg), "%s", sadb_errmsg(ctx->db));
	else
		err = sadb_stats_create(path, gid, info.max_sa, &ctx->stats, msg, sizeof(msg));
	if (err < 0) {
		dp_log(LOG_WARNING, "counters view: %s; monitoring without the SADB will show nothing", msg);
		return;
	}
	dp_stats_tick(ctx, dp_now_ns(), cv, ncv);
}

void dp_stats_tick(struct dp_ctx *ctx, uint64_t now, struct dp_sa *const *cv, uint32_t ncv)
{
	uint64_t since = now - ctx->stats_at;
	int err;

	if (!ctx->stats || (since < SADB_STATS_INTERVAL_MS * 1000000ull &&
			    (ctx->stats_gen == ctx->sadb_gen || since < SADB_STATS_CHANGE_MS * 1000000ull)))
		return;
	struct sadb_stats_ha ha;
	struct sadb_stats_cluster cl;

	dp_mip6_stats(ctx, &ha);
	sadb_stats_set_ha(ctx->stats, &ha);
	dp_mip6_stats_nodes(ctx, ctx->stats);
	dp_cluster_stats(ctx, cv, ncv, &cl);
	sadb_stats_set_cluster(ctx->stats, &cl);
	err = sadb_stats_publish(ctx->stats, ctx->db);
	if (err < 0)
		dp_log(LOG_WARNING, "counters view: reading the SADB: %s", strerror(-err));
	ctx->stats_at = now;
	ctx->stats_gen = ctx->sadb_gen;
}

void dp_stats_gone(struct dp_ctx *ctx, const struct sadb_sa *sa, uint32_t slot)
{
	if (ctx->stats && sadb_stats_gone(ctx->stats, ctx->db, sa, slot) < 0)
		dp_log(LOG_WARNING, "counters view: the runtime area of deleted SA %08x (slot %u) belongs to "
		       "another SA; its final counters are not shown", sa->spi, slot);
}

void dp_stats_close(struct dp_ctx *ctx)
{
	if (ctx->stats)
		(void)sadb_stats_publish(ctx->stats, ctx->db); /* the last counters of this run */
	sadb_stats_close(ctx->stats);
	ctx->stats = NULL;
}
