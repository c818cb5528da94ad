/* dataplane/xipsecd/dp_cluster_seg.c: where active/active segments (dp_segment.c) meet the cluster's
 * sequence leases (dp_cluster.c): a segment this node gains has its SAs taken over before the XDP
 * program and the workers see the new owner, so that none of its outbound SAs resumes below the
 * numbers the other node used (dp_cluster_lease.c has the argument) and each inbound window starts
 * at the top the other node reported. Control thread only. */
#include "config.h"

#include <syslog.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_segment.h"

void dp_cluster_segments_gained(struct dp_ctx *ctx, uint32_t mask)
{
	uint32_t st = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed);
	struct dp_sa *const *v;
	uint32_t n, moved = 0;

	if (!dp_cluster_enabled(ctx) || !mask)
		return;
	n = dp_sa_cluster_list(ctx, &v);
	for (uint32_t i = 0; i < n; i++) {
		struct dp_sa *s = v[i];
		/* the peer is the destination of an outbound SA, the source of an inbound one */
		uint32_t seg = s->sa.dir == SADB_DIR_OUT ? dp_seg_peer(ctx, st, &s->sa.src, &s->sa.dst) :
							   dp_seg_peer(ctx, st, &s->sa.dst, &s->sa.src);

		if (!seg || !(mask & (1u << (seg - 1))))
			continue;
		dp_cluster_take_sa(ctx, s);
		moved++;
	}
	dp_log(LOG_NOTICE, "cluster: %u SA(s) of the segments gained taken over", moved);
}
