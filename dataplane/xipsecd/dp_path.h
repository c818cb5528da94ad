/* dataplane/xipsecd/dp_path.h: the worker's packet path as stages, one file each, the way a frame goes:
 *   dp_rx.c     RX loop: rings, classification by port       -> dp_out (inside) | dp_in (outside)
 *   dp_tun.c    the TUN device (worker 0)                     -> dp_out; dp_fwd writes into it
 *   dp_out.c    outbound SPD, MTU, protect                    -> dp_fwd (bypass) | dp_group_add
 *   dp_in.c     outer fragments, SA by SPI, plaintext policy  -> dp_group_add | dp_fwd (bypass)
 *   dp_burst.c  the engine: one SA's packets as one burst     -> dp_fwd (protected) | dp_in_check
 *                                                                + dp_fwd (decapsulated)
 *   dp_fwd.c    route, TTL, fragmentation, hold queue, TX     -> dp_tx | TUN | dp_out (FWD_SPD_OUT)
 * A frame is owned by exactly one stage at a time: each entry point consumes it (hands it on, holds,
 * sends or frees it with a counted drop, doc/architecture.md rule 4). What they share is here: the
 * frame layout, the forwarding flags, the SA burst and the drop accounting, all inline so that the
 * split costs the per-packet path no call it did not make before. */
#ifndef XIPSEC_DP_PATH_H
#define XIPSEC_DP_PATH_H

#include <netinet/in.h>

#include "dataplane/xipsecd/dp.h"
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
/* The home agent's own signalling (dp_mip6.c): the outbound SPD honours its type 2 routing header
 * (esp_pkt_sel_mobile: the policy is the home address's, not the care-of address's). */
#define FWD_MOBILE   16u

/* Consecutive packets of one SA and direction, handed to the engine as one burst. */
struct dp_group {
	struct dp_sa *sa;
	bool out;
	unsigned n;
	unsigned flags[DP_BATCH];
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

/* ---- dp_out.c: plaintext that may need protection (from the inside or the TUN device) ---- */
void dp_out(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, unsigned flags);

/* ---- dp_in.c: from the outside interface; whole: a reassembled datagram ---- */
void dp_in(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, bool whole);
/* After decapsulation: SADB_DROP_NONE when the inner packet is what the SA and its policy allow. */
unsigned dp_in_check(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3, uint32_t len);

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
/* TTL / hop limit: decremented, or "time exceeded" sent and false returned. */
bool dp_dec_ttl(struct dp_worker *w, uint8_t *l3, uint32_t len);
/* Send "fragmentation needed" / "packet too big" about the packet at l3 to its source. */
void dp_fwd_too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu);
/* The fragments dp_cut made: each in a frame of its own. */
struct dp_frags {
	uint64_t addr[DP_FRAG_MAX];
	uint32_t len[DP_FRAG_MAX];
};
/* Cut the IPv4 packet at src (len bytes, no DF) into fragments of at most mtu bytes; fragment 0 in
 * place when in_place (src is then frame memory at src_addr). Returns their number, or -reason. */
int dp_cut(struct dp_worker *w, const uint8_t *src, bool in_place, uint64_t src_addr, uint32_t len,
	   uint32_t mtu, struct dp_frags *f);

/* ---- dp_tun.c ---- */
/* Read a burst from the TUN device into the outbound path. Returns the packets read. */
unsigned dp_tun_burst(struct dp_worker *w, struct dp_group *g);

/* dp_mip6.c, workers: take a decapsulated Mobility Header packet of a mobile node's transport SA
 * for the home agent (true: consumed, the caller frees the frame); worker 0 injects the home agent's
 * Binding Acknowledgements into the outbound path. */
struct dp_sa;
bool dp_mip6_take(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3, uint32_t len);
unsigned dp_mip6_inject(struct dp_worker *w, struct dp_group *g);

#endif
