/* dataplane/xipsecd/dp_stats.c: the control thread's production of the counters view
 * (sadb/sadb_stats.h), the key-less copy of the counters that the exporter and xipsec-snmpd read
 * as an unprivileged user instead of mapping the SADB. A reading every SADB_STATS_INTERVAL_MS, and
 * one SADB_STATS_CHANGE_MS after a change the control thread applied, so a new SA shows within a
 * scrape. A view that cannot be made is logged and left out: monitoring is not worth a dataplane
 * that refuses to forward (the exporter then says the view is missing). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp.h"

void dp_stats_open(struct dp_ctx *ctx)
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
	dp_stats_tick(ctx, dp_now_ns());
}

void dp_stats_tick(struct dp_ctx *ctx, uint64_t now)
{
	uint64_t since = now - ctx->stats_at;
	int err;

	if (!ctx->stats || (since < SADB_STATS_INTERVAL_MS * 1000000ull &&
			    (ctx->stats_gen == ctx->sadb_gen || since < SADB_STATS_CHANGE_MS * 1000000ull)))
		return;
	err = sadb_stats_publish(ctx->stats, ctx->db);
	if (err < 0)
		dp_log(LOG_WARNING, "counters view: reading the SADB: %s", strerror(-err));
	ctx->stats_at = now;
	ctx->stats_gen = ctx->sadb_gen;
}

void dp_stats_close(struct dp_ctx *ctx)
{
	if (ctx->stats)
		(void)sadb_stats_publish(ctx->stats, ctx->db); /* the last counters of this run */
	sadb_stats_close(ctx->stats);
	ctx->stats = NULL;
}
