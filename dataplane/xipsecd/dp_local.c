/* dataplane/xipsecd/dp_local.c: the stage where the gateway's own packets enter the packet path, on
 * worker 0: those the local stack routes into the TUN device (dp_tun.c) and those the Mobile IPv6
 * home agent originates on the control thread (its Binding Acknowledgements, Binding Errors,
 * Parameter Problems and Binding Refresh Requests, queued by dp_mip6_queue.c). Either is read into a fresh frame and starts its way in the outbound stage as
 * locally originated (FWD_FROM_TUN: no TTL decrement, never back into the device); the home agent's
 * carry FWD_MOBILE, so the outbound SPD honours their type 2 routing header. Data flows one way:
 * the home agent only fills its queue, this stage drains it; neither the device nor the home agent
 * calls into the packet path. */
#include "config.h"

#include "dataplane/xipsecd/dp_path.h"

/* The frame at addr (len bytes read) into the outbound stage; a bypassed packet, or the ICMP error
 * about one refused, is forwarded from here. */
static void local_out(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len,
		      unsigned flags)
{
	struct dp_next nx;

	if (!dp_l3_len(dp_mem(w, addr), len, &len)) {
		dp_drop(w, addr, SADB_DROP_TRUNCATED);
		return;
	}
	if (dp_out(w, g, addr, len, flags, &nx))
		dp_fwd(w, nx.addr, nx.len, nx.flags);
}

/* The end of a local burst: its SA bursts through the engine. */
static void local_flush(struct dp_worker *w, struct dp_group *g)
{
	dp_group_flush(w, g);
	dp_group_flush(w, w->regroup);
}

unsigned dp_local_tun_burst(struct dp_worker *w, struct dp_group *g)
{
	unsigned n = 0;

	while (n < w->ctx->batch && w->n_free > DP_BATCH) {
		uint64_t base = dp_frame_take(w), addr = base + FRESH_L3;
		ssize_t r = dp_tun_read(w->ctx, dp_mem(w, addr), FRAME_L3_MAX - 256);

		if (r <= 0) {
			dp_frame_free(w, base);
			break;
		}
		n++;
		DP_STAT(w, from_tun, 1);
		local_out(w, g, addr, (uint32_t)r, FWD_FROM_TUN);
	}
	local_flush(w, g);
	return n;
}

unsigned dp_local_ha_burst(struct dp_worker *w, struct dp_group *g)
{
	unsigned n = 0;

	/* Looked at every round of worker 0: an empty queue costs one load, not a frame taken back. */
	if (!dp_mip6_pending(w->ctx))
		return 0;
	while (n < w->ctx->batch && w->n_free > DP_BATCH) {
		uint64_t base = dp_frame_take(w), addr = base + FRESH_L3;
		struct dp_v4_outer v4;
		uint32_t len = dp_mip6_pop(w->ctx, dp_mem(w, addr), &v4);

		if (!len) {
			dp_frame_free(w, base);
			break;
		}
		n++;
		w->v4_next = v4.set ? &v4 : NULL;  /* RFC 5555: it leaves in IPv4 once protected */
		local_out(w, g, addr, len, FWD_FROM_TUN | FWD_MOBILE);
		w->v4_next = NULL;
	}
	if (n)
		local_flush(w, g);
	return n;
}
