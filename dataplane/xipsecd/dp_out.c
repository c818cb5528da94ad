/* dataplane/xipsecd/dp_out.c: the outbound stage: plaintext that is about to cross the IPsec boundary
 * outbound meets the outbound SPD (dp_spd.c, doc/architecture.md rule 6). A frame gets here from the
 * RX loop (inside interface), from the gateway's own packets (dp_local.c: the TUN device, the home
 * agent; FWD_FROM_TUN) and from the forwarding stage (a packet from the outside whose route leaves by
 * the outside again, FWD_SPD_OUT). It leaves as a counted drop (no policy, discard, no SA yet: an
 * acquire is raised, dp_acquire.c; too big), as plaintext another node of an active/active cluster
 * protects (its SA's peer is in a segment this node does not own; counted apart, dp_segment.h),
 * into the SA's burst for the engine (dp_group_add), or back to its caller to be forwarded: the
 * packet itself where a policy bypasses it, or the ICMP error written about a packet dropped here.
 * An IPv4 packet without DF that is too big for the SA is cut into fragments first (dp_l3_cut), each
 * protected on its own (RFC 4301 section 8.1). Calls down only: the SPD, the L3 helpers, the engine
 * stage, the ICMP builders, the acquire channel. */
#include "config.h"

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/xipsecd/dp_segment.h"
#include "dataplane/xipsecd/dp_spd.h"

static bool protect(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, uint64_t addr,
		    uint32_t len, unsigned flags, struct dp_next *nx);

/* An ICMP error built about the packet at l3 (0 bytes: none is owed): about a decapsulated packet,
 * protected here by the one SA via; otherwise forwarded by the caller like a packet from the outside
 * (dp_pkt.c says why). */
static bool icmp_back(struct dp_worker *w, struct dp_group *g, uint32_t n, uint64_t a,
		      struct dp_sa *via, struct dp_next *nx)
{
	if (n && via)
		return protect(w, g, via, a, n, 0, nx);
	nx->addr = a;
	nx->len = n;
	nx->flags = FWD_SPD_OUT;
	return n != 0;
}

/* A packet for sa (the policy protects it): the MTU, the TTL, then the engine's burst. */
static bool protect(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, uint64_t addr,
		    uint32_t len, unsigned flags, struct dp_next *nx)
{
	uint8_t *l3 = dp_mem(w, addr);
	struct dp_sa *via;
	uint64_t a = 0;
	uint32_t mtu, n;

	/* Checked here rather than by the engine so the ICMP error can quote the intact packet (before
	 * the TTL changes; an expiring TTL gets "time exceeded" instead). */
	mtu = sa->sa.mtu ? sa->sa.mtu : atomic_load_explicit(&w->ctx->ifc[DP_OUT].mtu,
							      memory_order_relaxed);
	mtu = esp_sa_inner_mtu(sa->e[w->id], mtu, dp_l3_family(l3));
	if (dp_l3_too_big(l3, len, mtu, flags & FWD_DEC_TTL)) {
		n = dp_icmp_too_big(w, l3, len, mtu, &a, &via);
		dp_drop_sa(w, sa, addr, SADB_DROP_MTU);
		return icmp_back(w, g, n, a, via, nx);
	}
	/* As a router we decrement the inner TTL before encapsulating (RFC 4301 5.1.2.1). */
	if ((flags & FWD_DEC_TTL) && !dp_l3_dec_ttl(l3)) {
		n = dp_icmp_ttl(w, l3, len, &a, &via);
		dp_drop(w, addr, SADB_DROP_TTL);
		return icmp_back(w, g, n, a, via, nx);
	}
	if (len > mtu && sa->sa.mode != SADB_MODE_TUNNEL) {
		/* transport mode protects whole datagrams only (RFC 4303 3.3.4) */
		dp_drop_sa(w, sa, addr, SADB_DROP_MTU);
		return false;
	}
	if (len > mtu) {
		/* IPv4 without DF: fragments first, each then protected on its own */
		struct dp_frags f;
		int k = dp_l3_cut(w, l3, true, addr, len, mtu, &f);

		if (k < 0) {
			dp_drop_sa(w, sa, addr, (unsigned)-k);
			return false;
		}
		for (int i = 0; i < k; i++)
			dp_group_add(w, g, sa, true, f.addr[i], f.len[i], flags & FWD_FROM_TUN);
		return false;
	}
	dp_group_add(w, g, sa, true, addr, len, flags & FWD_FROM_TUN);
	return false;
}

bool dp_out(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, unsigned flags,
	    struct dp_next *nx)
{
	struct sadb_policy pol;
	struct dp_sa *sa;
	unsigned r = dp_spd_out(w->ctx->db, dp_mem(w, addr), len, flags & FWD_MOBILE, &pol);

	if (r != SADB_DROP_NONE) {
		dp_drop(w, addr, r);
		return false;
	}
	if (pol.action == SADB_ACT_BYPASS) {
		DP_STAT(w, bypass, 1);
		nx->addr = addr;
		nx->len = len;
		nx->flags = flags & ~(FWD_SPD_OUT | FWD_MOBILE);
		return true;
	}
	sa = dp_sa_find_out(w->ctx, pol.reqid);
	if (!sa) {
		/* on demand: the IKE daemon negotiates the SA; this packet is not kept (dp_acquire.c) */
		dp_acquire_raise(w, &pol, dp_mem(w, addr), len, flags & FWD_MOBILE);
		dp_drop(w, addr, SADB_DROP_ACQUIRE);
		return false;
	}
	if (sa->unusable) {
		dp_drop_sa(w, sa, addr, SADB_DROP_UNSUPPORTED);
		return false;
	}
	/* Both nodes receive the inside's traffic; only the owner of the peer's segment may use the
	 * SA's sequence numbers. Not an error of this packet: the other node sends it. */
	if (!dp_seg_keeps(w->ctx, &sa->sa.src, &sa->sa.dst)) {
		__atomic_store_n(&w->cluster_foreign, w->cluster_foreign + 1, __ATOMIC_RELAXED);
		dp_frame_free(w, addr);
		return false;
	}
	/* Taken over since this worker reserved numbers (the segment was the other node's for a
	 * while): those below the takeover's start would be under the peer's window, or the other
	 * node's. Only a cluster ever sets it. */
	uint64_t floor = atomic_load_explicit(&sa->seq_floor, memory_order_acquire);
	if (floor)
		esp_sa_seq_floor(sa->e[w->id], floor);
	/* A mobile node's tunnel whose peer is its home address: it has no binding (dp_mip6_move.c). */
	if ((sa->sa.flags & SADB_SAF_MOBILE) && sa->sa.mode == SADB_MODE_TUNNEL &&
	    sadb_addr_eq(&sa->sa.dst, &sa->sa.sel.dst)) {
		dp_drop_sa(w, sa, addr, SADB_DROP_NO_BINDING);
		return false;
	}
	return protect(w, g, sa, addr, len, flags, nx);
}

bool dp_out_via(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, uint64_t addr,
		uint32_t len, struct dp_next *nx)
{
	return protect(w, g, sa, addr, len, 0, nx);
}
