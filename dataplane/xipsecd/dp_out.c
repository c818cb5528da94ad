/* dataplane/xipsecd/dp_out.c: the outbound stage: plaintext that is about to cross the IPsec boundary
 * outbound meets the outbound SPD (doc/architecture.md rule 6). A frame gets here from the RX loop
 * (inside interface), from the TUN device (the gateway's own traffic, FWD_FROM_TUN) and from the
 * forwarding stage (a packet from the outside whose route leaves by the outside again, FWD_SPD_OUT).
 * It leaves to dp_fwd (bypass), as a counted drop (no policy, discard, no SA, too big), or into the
 * SA's burst for the engine (dp_group_add); an IPv4 packet without DF that is too big for the SA is
 * cut into fragments first, each protected on its own (RFC 4301 section 8.1). */
#include "config.h"

#include "dataplane/xipsecd/dp_path.h"

void dp_out(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, unsigned flags)
{
	uint8_t *l3 = dp_mem(w, addr);
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;
	struct dp_sa *sa;
	uint32_t mtu;

	if (((flags & FWD_MOBILE) ? esp_pkt_sel_mobile(l3, len, &sel) : esp_pkt_sel(l3, len, &sel)) !=
	    SADB_DROP_NONE) {
		dp_drop(w, addr, SADB_DROP_TRUNCATED);
		return;
	}
	if (sadb_policy_lookup(w->ctx->db, SADB_DIR_OUT, &sel, &pol)) {
		dp_drop(w, addr, SADB_DROP_NO_POLICY);
		return;
	}
	switch (pol.action) {
	case SADB_ACT_BYPASS:
		DP_STAT(w, bypass, 1);
		dp_fwd(w, addr, len, flags);
		return;
	case SADB_ACT_PROTECT:
		break;
	default:
		dp_drop(w, addr, SADB_DROP_POLICY_DISCARD);
		return;
	}
	sa = dp_sa_find_out(w->ctx, pol.reqid);
	if (!sa) {
		dp_drop(w, addr, SADB_DROP_SA_STATE);
		return;
	}
	if (sa->unusable) {
		dp_drop_sa(w, sa, addr, SADB_DROP_UNSUPPORTED);
		return;
	}
	/* A mobile node's tunnel whose peer is its home address: it has no binding (dp_mip6.c). */
	if ((sa->sa.flags & SADB_SAF_MOBILE) && sa->sa.mode == SADB_MODE_TUNNEL &&
	    sadb_addr_eq(&sa->sa.dst, &sa->sa.sel.dst)) {
		dp_drop_sa(w, sa, addr, SADB_DROP_NO_BINDING);
		return;
	}
	/* Checked here rather than by the engine so the ICMP error can quote the intact packet (before
	 * the TTL changes; an expiring TTL gets "time exceeded" instead). */
	mtu = sa->sa.mtu ? sa->sa.mtu : atomic_load_explicit(&w->ctx->ifc[DP_OUT].mtu,
							      memory_order_relaxed);
	mtu = esp_sa_inner_mtu(sa->e[w->id], mtu, sel.src.family);
	if (len > mtu && (sel.src.family == AF_INET6 || (l3[6] & 0x40)) &&
	    !((flags & FWD_DEC_TTL) && dp_ttl_expiring(l3))) {
		dp_fwd_too_big(w, l3, len, mtu);
		dp_drop_sa(w, sa, addr, SADB_DROP_MTU);
		return;
	}
	/* As a router we decrement the inner TTL before encapsulating (RFC 4301 5.1.2.1). */
	if ((flags & FWD_DEC_TTL) && !dp_dec_ttl(w, l3, len)) {
		dp_drop(w, addr, SADB_DROP_TTL);
		return;
	}
	if (len > mtu && sa->sa.mode != SADB_MODE_TUNNEL) {
		/* transport mode protects whole datagrams only (RFC 4303 3.3.4) */
		dp_drop_sa(w, sa, addr, SADB_DROP_MTU);
		return;
	}
	if (len > mtu) {
		/* IPv4 without DF: fragments first, each then protected on its own */
		struct dp_frags f;
		int n = dp_cut(w, l3, true, addr, len, mtu, &f);

		if (n < 0) {
			dp_drop_sa(w, sa, addr, (unsigned)-n);
			return;
		}
		for (int i = 0; i < n; i++)
			dp_group_add(w, g, sa, true, f.addr[i], f.len[i], flags & FWD_FROM_TUN);
		return;
	}
	dp_group_add(w, g, sa, true, addr, len, flags & FWD_FROM_TUN);
}
