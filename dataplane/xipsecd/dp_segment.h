/* dataplane/xipsecd/dp_segment.h: active/active segment ownership in xipsecd (dp_segment.c): which
 * of the cluster's segments (xdp_segment.h) this node owns, as strongSwan's ha plugin in xipsec-iked
 * decides it and `ipsecctl cluster segments` pushes it over the control socket. The XDP program
 * drops inbound frames of foreign segments; the workers drop outbound plaintext whose SA's peer is
 * in one (dp_out.c), so a packet is protected or decrypted on exactly one node. */
#ifndef XIPSEC_DP_SEGMENT_H
#define XIPSEC_DP_SEGMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/xdp_segment.h"
#include "sadb/sadb_stats.h"

/* ctx->seg_state, one word the workers read relaxed per outbound packet: the owned mask in bits
 * 0-15, the segment count in bits 16-20 (0: no cluster), the jhash variant in bits 21-22. Written
 * by the control thread only; a worker that reads the old word for one more packet sends what the
 * old owner would have (a segment is taken only after the other node has let it go, dp_segment.c). */
#define DP_SEG_OWNED_MASK 0xffffu
#define DP_SEG_COUNT_SHIFT 16
#define DP_SEG_JHASH_SHIFT 21

/* The segment (1..count) of the SA between the local address local and peer, as of the state word
 * st: 0 without a cluster or for an SA whose local end is not the cluster address. */
static inline uint32_t dp_seg_peer(const struct dp_ctx *ctx, uint32_t st, const struct sadb_addr *local,
				   const struct sadb_addr *peer)
{
	uint32_t count = (st >> DP_SEG_COUNT_SHIFT) & 0x1f;

	if (!count || local->family != AF_INET || local->a.w[0] != ctx->cfg.cluster_addr)
		return 0;
	/* the plugin hashes every IPv6 peer as the address 0 */
	return dp_seg_of(st >> DP_SEG_JHASH_SHIFT & 3, count, peer->family == AF_INET ? peer->a.w[0] : 0);
}

/* Whether this node handles the outbound SA from src to peer: always without a cluster or for an
 * SA that does not leave from the cluster address, else when it owns the peer's segment. */
static inline bool dp_seg_keeps(const struct dp_ctx *ctx, const struct sadb_addr *src,
				const struct sadb_addr *peer)
{
	uint32_t st = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed);
	uint32_t seg = dp_seg_peer(ctx, st, src, peer);

	return !seg || st & (1u << (seg - 1));
}

/* The jhash the running kernel's CLUSTERIP used, from a uname release such as "6.1.0-13-amd64",
 * decided exactly as the ha plugin decides it (an unreadable release: lookup3, as the plugin). */
enum dp_seg_jhash dp_segment_jhash(const char *release);

/* A segment list as the plugin logs it ("1,3", "none") or "all", into a mask (bit s-1 for s):
 * 0, or -EINVAL for a segment outside 1..count or anything else. */
int dp_segment_parse(const char *list, unsigned count, uint32_t *mask);

/* After dp_xdp_load: the cluster map from --cluster-segments/--cluster-address (cfg.cluster's
 * strings, else $XIPSEC_CLUSTER_SEGMENTS/_ADDRESS), no segment owned. 0, or -EINVAL (logged) for
 * a bad value. */
int dp_segment_init(struct dp_ctx *ctx);

/* The owned segments into a control socket answer at *p (dp_put): as a JSON member
 * ("segments":{"count":N,"owned":[...]}) or a line of text; for `show cluster` (dp_cluster.c). */
void dp_segment_put(struct dp_ctx *ctx, bool json, char **p, size_t *left);

/* The segments' part of the cluster's section of the counters view: count, owned mask, per
 * segment the frames the XDP program kept and dropped, the workers' cluster_foreign. */
void dp_segment_stats(struct dp_ctx *ctx, struct sadb_stats_cluster *st);

/* The control socket's "segments" requests (control thread): "segments" shows, "segments set LIST"
 * sets the owned segments; the answer (JSON or "error: ...") is written to buf. */
size_t dp_segment_ctl(struct dp_ctx *ctx, const char *req, char *buf, size_t len);

/* Control thread, every round of its loop: a segment given to this node and still held by the other
 * one (ctx->seg_wait) is taken once the other's heartbeat says it let it go, or at the deadline. */
void dp_segment_tick(struct dp_ctx *ctx, uint64_t now);

#endif
