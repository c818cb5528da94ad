/* dataplane/xipsecd/dp_path.h: the worker's packet path as stages, one file each, the way a frame goes:
 *   dp_rx.c     RX loop: rings, classification by port       -> dp_out (inside) | dp_in (outside)
 *                                                                | dp_local (worker 0) | dp_fwd
 *   dp_local.c  the gateway's own packets (worker 0): the TUN -> dp_out | dp_fwd (bypass)
 *               device's and the home agent's queue
 *   dp_out.c    outbound SPD, MTU, protect                    -> dp_group_add; a bypassed packet or
 *                                                                its ICMP error back to the caller
 *   dp_in.c     outer fragments, SA by SPI, plaintext policy  -> dp_group_add | dp_fwd (bypass)
 *   dp_burst.c  the engine: one SA's packets as one burst     -> dp_fwd (protected, decapsulated)
 *                                                                | dp_mip6_take (Binding Updates)
 *   dp_fwd.c    route, TTL, fragmentation, hold queue, TX     -> dp_tx | TUN | dp_out (FWD_SPD_OUT)
 * Below them, called by the stages and calling none back: dp_spd.c (every SPD decision), dp_l3.c (TTL,
 * too big, the IPv4 cut), dp_pkt.c (frames, TX, ICMP errors), dp_route.c, dp_frag.c, dp_handoff.c,
 * the engine and libmip6. A frame is owned by exactly one stage at a time: each entry point consumes
 * it (hands it on, holds, sends or frees it with a counted drop, doc/architecture.md rule 4), except
 * that dp_out hands the frame it does not protect back to its caller (struct dp_next). What they
 * share is here: the frame layout, the forwarding flags, the SA burst and the drop accounting, all
 * inline so that the split costs the per-packet path no call it did not make before. */
#ifndef XIPSEC_DP_PATH_H
#define XIPSEC_DP_PATH_H

#include <netinet/in.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_l3.h"
#include "dataplane/xipsecd/dp_sa.h"

#define L2 14u
/* Where a packet written by the dataplane starts in a fresh frame: room before it for Ethernet and
 * the engine's headers, as for received frames. */
#define FRESH_L3 (XDP_PACKET_HEADROOM + L2)
/* Largest L3 packet a frame holds at FRESH_L3 with the engine's tailroom after it. */
#define FRAME_L3_MAX (DP_FRAME_SIZE - FRESH_L3 - ESP_TAILROOM)

/* How dp_fwd treats a packet. */
#define FWD_DEC_TTL  1u   /* forwarded, not originated: TTL / hop limit is decremented */
#define FWD_FROM_TUN 2u   /* from the local stack: never back into the TUN device */
#define FWD_OUTSIDE  4u   /* ESP/AH we made: always through the outside interface */
/* Came in from the outside (decapsulated, or plaintext an inbound policy let in): if its route leaves
 * through the outside interface again it crosses the IPsec boundary outbound, so it takes the
 * outbound SPD lookup first (RFC 4301 §5.1; a hub re-protects spoke-to-spoke traffic for the other
 * spoke, or bypasses or discards it as a policy says), never straight out in clear. */
#define FWD_SPD_OUT  8u
/* The home agent's own signalling (dp_local.c): the outbound SPD honours its type 2 routing header
 * (dp_spd_out, mip6_sel_addrs: the policy is the home address's, not the care-of address's). */
#define FWD_MOBILE   16u

/* The IPv4 header (and UDP header, when sport) a Mobile IPv6 signalling packet travels in for a
 * mobile node on an IPv4 network (RFC 5555 section 4.1): the Binding Update came in it, its
 * acknowledgement leaves in it. Addresses and ports as on the wire seen from the home agent (src
 * the peer's, dst ours on the way in; the other way round on the way out); ports host order. */
struct dp_v4_outer {
	bool set;
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
};

/* Consecutive packets of one SA and direction, handed to the engine as one burst. */
struct dp_group {
	struct dp_sa *sa;
	bool out;
	unsigned n;
	unsigned flags[DP_BATCH];
	struct dp_v4_outer v4[DP_BATCH]; /* w->v4_next when each was added (dp_mip6_v4_path.c) */
	struct esp_pkt pk[DP_BATCH];
	struct esp_pkt *pp[DP_BATCH];
};

static inline uint8_t *dp_mem(struct dp_worker *w, uint64_t addr)
{
	return (uint8_t *)w->umem_area + addr;
}

static inline uint8_t dp_l3_family(const uint8_t *l3)
{
	return (l3[0] >> 4) == 4 ? AF_INET : AF_INET6;
}

/* The destination address of an IPv4 or IPv6 header. */
static inline const uint8_t *dp_l3_dst(const uint8_t *l3, uint8_t family)
{
	return family == AF_INET ? l3 + 16 : l3 + 24;
}

/* Trim Ethernet padding: the IP length is authoritative. */
static inline bool dp_l3_len(const uint8_t *l3, uint32_t caplen, uint32_t *len)
{
	uint32_t n;

	if (caplen < 20)
		return false;
	if ((l3[0] >> 4) == 4) {
		n = (uint32_t)(l3[2] << 8 | l3[3]);
		if (n < 20 || n > caplen)
			return false;
	} else if ((l3[0] >> 4) == 6) {
		if (caplen < 40)
			return false;
		n = 40u + (uint32_t)(l3[4] << 8 | l3[5]);
		if (n > caplen)
			return false;
	} else {
		return false;
	}
	*len = n;
	return true;
}

static inline bool dp_ttl_expiring(const uint8_t *l3)
{
	return (l3[0] >> 4) == 4 ? l3[8] <= 1 : l3[7] <= 1;
}

/* A drop that belongs to no SA: the worker's drops[] (ipsecctl show stats adds it to the SAs'). */
static inline void dp_drop(struct dp_worker *w, uint64_t addr, unsigned reason)
{
	DP_STAT(w, drops[reason], 1);
	dp_frame_free(w, addr);
}

/* n packets dropped that hold no frame any more (fragments whose bytes were copied). */
static inline void dp_drop_count(struct dp_worker *w, unsigned reason, uint64_t n)
{
	if (!n)
		return;
	DP_STAT(w, drops[reason], n);
}

/* A drop already counted in an SA's runtime drops (by the engine): in the worker's sa_drops[], not
 * its drops[], so that per-SA + SA-less is the total. */
static inline void dp_drop_charged(struct dp_worker *w, uint64_t addr, unsigned reason)
{
	DP_STAT(w, sa_drops[reason], 1);
	dp_frame_free(w, addr);
}

/* A drop of a packet of sa, found here rather than by the engine: charged to the SA (its runtime
 * drops), so, as for dp_drop_charged, in the worker's sa_drops[]. */
static inline void dp_drop_sa_count(struct dp_worker *w, struct dp_sa *sa, unsigned reason)
{
	__atomic_fetch_add(&sa->rt->drops[reason], 1, __ATOMIC_RELAXED);
	DP_STAT(w, sa_drops[reason], 1);
}

static inline void dp_drop_sa(struct dp_worker *w, struct dp_sa *sa, uint64_t addr, unsigned reason)
{
	dp_drop_sa_count(w, sa, reason);
	dp_frame_free(w, addr);
}

/* ---- dp_out.c: plaintext that may need protection (from the inside, the gateway or the outside) ---- */
/* A frame dp_out hands back to its caller, who forwards it (dp_fwd) with these flags. */
struct dp_next {
	uint64_t addr;
	uint32_t len;
	unsigned flags;
};
/* Consumes the frame at addr (protected, or dropped with its reason) and returns false; or returns
 * true with *nx a frame to forward: the packet itself where an outbound policy bypasses it, or the
 * ICMP error owed to the source of a packet dropped as too big or expiring. */
bool dp_out(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, unsigned flags,
	    struct dp_next *nx);
/* The gateway's own packet at addr protected by sa, whatever the outbound SPD would choose for it:
 * an ICMP error about a packet that came out of sa's tunnel, which dp_pkt.c checked sa may carry.
 * Consumes the frame as dp_out does. */
bool dp_out_via(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, uint64_t addr,
		uint32_t len, struct dp_next *nx);

/* ---- dp_in.c: from the outside interface; whole: a reassembled datagram ---- */
void dp_in(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, bool whole);

/* ---- dp_burst.c: the engine ---- */
void dp_group_add(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, bool out,
		  uint64_t addr, uint32_t len, unsigned flags);
/* Run the group's packets through the engine and hand each on; the group is empty after. */
void dp_group_flush(struct dp_worker *w, struct dp_group *g);

/* ---- dp_handoff.c ---- */
/* esp_inbound_burst's contract for the burst pp[0..n) of sa, its crypto shared with other workers
 * when they have spare capacity (results in the burst's order). */
unsigned dp_handoff_inbound(struct dp_worker *w, struct dp_sa *sa, struct esp_pkt **pp, unsigned n);

/* ---- dp_fwd.c ---- */
/* Send the L3 packet at addr to its next hop (flags FWD_*); consumes the frame. */
void dp_fwd(struct dp_worker *w, uint64_t addr, uint32_t len, unsigned flags);
/* A decrypted packet too big for a frame, at l3 in the worker's reassembly buffer; counts its drops. */
void dp_fwd_large(struct dp_worker *w, uint8_t *l3, uint32_t len);
/* ---- dp_local.c (worker 0) ---- */
/* The gateway's own packets into the outbound path: a burst read from the TUN device, and the home
 * agent's queued signalling (dp_mip6_pop). Each returns the packets it took. */
unsigned dp_local_tun_burst(struct dp_worker *w, struct dp_group *g);
unsigned dp_local_ha_burst(struct dp_worker *w, struct dp_group *g);

/* ---- dp_mip6_queue.c: the home agent's two queues, as the packet path sees them ---- */
/* A decapsulated packet of a mobile node's transport SA: a Mobility Header packet or a Mobile Prefix
 * Solicitation is copied to the control thread's queue (true: consumed, the caller frees the frame; a full queue or an oversized
 * packet is a counted drop). Any worker. */
bool dp_mip6_take(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3, uint32_t len,
		  const struct dp_v4_outer *v4);
/* Worker 0: the next packet the home agent originated, copied to buf (at least DP_MIP6_PKT bytes),
 * with the IPv4 header it leaves in (v4->set false: none): its length, or 0 when none waits. */
#define DP_MIP6_PKT 1280u
uint32_t dp_mip6_pop(struct dp_ctx *ctx, uint8_t *buf, struct dp_v4_outer *v4);
/* Whether the home agent has queued packets for worker 0: one load, no lock (the queue's count is
 * published with release after each change). */
bool dp_mip6_pending(struct dp_ctx *ctx);

/* ---- dp_mip6_v4_path.c: DSMIPv6 signalling in IPv4 (RFC 5555) on the packet path ---- */
/* An IPv4 packet from the outside at l3 that carries IPv6 (protocol 41, or UDP to port 4191) to one
 * of the gateway's addresses: *v4 says its outer header, *off where the IPv6 packet starts and
 * *inner_len its length; false for anything else (nothing written). */
bool dp_v4_outer_strip(struct dp_worker *w, const uint8_t *l3, uint32_t len, struct dp_v4_outer *v4,
		       uint32_t *off, uint32_t *inner_len);
/* The protected IPv6 packet at base + *off (*len bytes) put into the IPv4 header v4 (and UDP header,
 * when v4->dport) in the frame's headroom: *off and *len then describe the IPv4 packet; false when
 * there is no room. */
bool dp_v4_outer_wrap(struct dp_worker *w, uint64_t base, uint32_t *off, uint32_t *len,
		      const struct dp_v4_outer *v4);

#endif
