/* dataplane/xipsecd/dp_fwd.c: the forwarding stage, where every frame that is not dropped leaves the
 * worker. A frame gets here as an L3 packet from the callers of the outbound stage (bypassed
 * plaintext and the ICMP errors dp_out wrote), the engine (ESP/AH we made, FWD_OUTSIDE; decapsulated
 * inner packets, FWD_SPD_OUT), the inbound stage (plaintext an inbound policy let in, FWD_SPD_OUT) or
 * as an ICMP error dp_pkt.c built. Here: the route and neighbour (dp_route.c's cache), the IPsec
 * boundary once more (a packet from the outside that leaves by the outside goes through dp_out,
 * doc/architecture.md rule 6), the MTU with its ICMP error, the TTL, fragmentation of IPv4 without
 * DF (RFC 791, RFC 1812 section 5.2.6; the rules in dp_l3.c), then out: the TX ring of the port, the
 * TUN device for the gateway itself, or the hold queue while the neighbour is being resolved
 * (retried from the worker loop, dropped NO_NEIGH after DP_HOLD_NS). */
#include "config.h"

#include <string.h>

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/xipsecd/dp_spd.h"

/* An ICMP error dp_pkt.c built (n bytes at a; 0: none): about a decapsulated packet, protected by
 * the one SA via and by no other way; otherwise it goes its way like a packet that came from the
 * outside, through the outbound SPD if that way leaves by the outside (dp_pkt.c says why). */
static void icmp_send(struct dp_worker *w, uint64_t a, uint32_t n, struct dp_sa *via)
{
	struct dp_next nx;

	if (!n)
		return;
	if (!via)
		dp_fwd(w, a, n, FWD_SPD_OUT);
	else if (dp_out_via(w, w->regroup, via, a, n, &nx))
		dp_fwd(w, nx.addr, nx.len, nx.flags);
}

static void too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu)
{
	struct dp_sa *via;
	uint64_t a;
	uint32_t n = dp_icmp_too_big(w, l3, len, mtu, &a, &via);

	icmp_send(w, a, n, via);
}

static void ttl_exceeded(struct dp_worker *w, const uint8_t *l3, uint32_t len)
{
	struct dp_sa *via;
	uint64_t a;
	uint32_t n = dp_icmp_ttl(w, l3, len, &a, &via);

	icmp_send(w, a, n, via);
}

/* The TTL / hop limit of a forwarded packet (RFC 1812 5.3.1): decremented, or "time exceeded" sent
 * and false returned. */
static bool dec_ttl(struct dp_worker *w, uint8_t *l3, uint32_t len)
{
	if (dp_l3_dec_ttl(l3))
		return true;
	ttl_exceeded(w, l3, len);
	return false;
}

/* The Ethernet frame at eth (len bytes, EtherType written) to the next hop e names. */
static inline void send_eth(struct dp_worker *w, const struct dp_rentry *e, uint64_t eth,
			    uint32_t len)
{
	uint8_t *p = dp_mem(w, eth);

	memcpy(p, e->dmac, 6);
	memcpy(p + 6, w->ctx->ifc[e->port].mac, 6);
	dp_tx(w, e->port, eth, len);
}

/* Wait for the neighbour of e: the Ethernet frame at eth (len bytes) joins the hold queue. */
static void hold(struct dp_worker *w, const struct dp_rentry *e, uint64_t eth, uint32_t len,
		 uint8_t family, unsigned flags)
{
	struct dp_held *h;

	if (w->n_hold >= DP_HOLD_MAX) {
		dp_drop(w, eth, SADB_DROP_NO_NEIGH);
		return;
	}
	h = &w->hold[w->n_hold++];
	h->addr = eth;
	h->len = len;
	h->family = family;
	/* Held for the port it was cleared for: a packet from the outside that was let through towards
	 * the inside (not through the outbound SPD) must not leave by the outside if the route changes
	 * while it waits. */
	h->want = (flags & FWD_OUTSIDE) ? DP_OUT : (flags & FWD_SPD_OUT) ? (int8_t)e->port : -1;
	h->deadline_ns = dp_now_ns() + DP_HOLD_NS;
	DP_STAT(w, held, 1);
}

void dp_fwd(struct dp_worker *w, uint64_t addr, uint32_t len, unsigned flags)
{
	uint8_t *l3 = dp_mem(w, addr);
	uint8_t family = dp_l3_family(l3);
	struct dp_rentry *e;
	enum sadb_drop why;
	enum dp_route_res r;
	uint8_t *eth;
	uint32_t mtu;

	r = dp_route_lookup(w, family, dp_l3_dst(l3, family), (flags & FWD_OUTSIDE) ? DP_OUT : -1, &e,
			    &why);
	if (r == DP_ROUTE_DROP) {
		dp_drop(w, addr, why);
		return;
	}
	/* e is filled for an unresolved neighbour too (DP_ROUTE_PENDING) */
	if ((flags & FWD_SPD_OUT) && e->port == DP_OUT) {
		struct dp_next nx;

		DP_STAT(w, spd_out, 1);
		if (dp_out(w, w->regroup, addr, len, flags & FWD_DEC_TTL, &nx))
			dp_fwd(w, nx.addr, nx.len, nx.flags);
		return;
	}
	if (e->port == DP_RT_LOCAL) {
		if ((flags & FWD_FROM_TUN) || w->ctx->tun_fd < 0) {
			dp_drop(w, addr, SADB_DROP_NO_ROUTE);
			return;
		}
		if (dp_tun_write(w->ctx, l3, len) == 0)
			DP_STAT(w, to_tun, 1);
		else
			DP_STAT(w, drops[SADB_DROP_TX_FULL], 1);
		dp_frame_free(w, addr);
		return;
	}
	/* The MTU is known for an unresolved neighbour too (PENDING): a held packet must fit as well.
	 * Too big with DF (always, for IPv6): the ICMP error that makes PMTUD work quotes the packet as
	 * received, so it is sent before the TTL changes (an expiring TTL is answered instead). */
	mtu = e->port <= DP_OUT ? e->mtu : UINT32_MAX;
	if (dp_l3_too_big(l3, len, mtu, flags & FWD_DEC_TTL)) {
		if (!(flags & FWD_OUTSIDE)) /* not about our own ESP: its source is us */
			too_big(w, l3, len, mtu);
		dp_drop(w, addr, SADB_DROP_MTU);
		return;
	}
	if ((flags & FWD_DEC_TTL) && !dec_ttl(w, l3, len)) {
		dp_drop(w, addr, SADB_DROP_TTL);
		return;
	}
	if (len > mtu) {
		/* IPv4 without DF: as a router, fragment */
		struct dp_frags f;
		int n = dp_l3_cut(w, l3, true, addr, len, mtu, &f);

		if (n < 0) {
			dp_drop(w, addr, (unsigned)-n);
			return;
		}
		for (int i = 0; i < n; i++)
			dp_fwd(w, f.addr[i], f.len[i], flags & ~FWD_DEC_TTL);
		return;
	}
	eth = l3 - L2;
	eth[12] = family == AF_INET ? 0x08 : 0x86;
	eth[13] = family == AF_INET ? 0x00 : 0xdd;
	if (r == DP_ROUTE_PENDING)
		hold(w, e, addr - L2, len + L2, family, flags);
	else
		send_eth(w, e, addr - L2, len + L2);
}

/* One that fits a frame is copied into one and forwarded as usual; a larger IPv4 packet without DF
 * leaves as fragments of the next link's MTU, written straight into frames; otherwise the sender
 * gets "fragmentation needed" / "packet too big" with the largest size a frame carries. */
void dp_fwd_large(struct dp_worker *w, uint8_t *l3, uint32_t len)
{
	uint8_t family = dp_l3_family(l3);
	struct dp_rentry *e;
	struct dp_frags f;
	enum sadb_drop why;
	uint32_t mtu;
	int n;

	if (dp_route_lookup(w, family, dp_l3_dst(l3, family), -1, &e, &why) == DP_ROUTE_DROP) {
		dp_drop_count(w, why, 1);
		return;
	}
	if (e->port == DP_RT_LOCAL) {
		/* for the gateway itself: the kernel reassembles nothing here, it takes it whole */
		if (w->ctx->tun_fd >= 0 && dp_tun_write(w->ctx, l3, len) == 0)
			DP_STAT(w, to_tun, 1);
		else
			dp_drop_count(w, w->ctx->tun_fd >= 0 ? SADB_DROP_TX_FULL : SADB_DROP_NO_ROUTE, 1);
		return;
	}
	if (len <= FRAME_L3_MAX) {
		/* the inner packet fits a frame after all: the ordinary path */
		uint64_t a;

		if (w->n_free <= DP_FRAME_RESERVE) {
			dp_drop_count(w, SADB_DROP_NOMEM, 1);
			return;
		}
		a = dp_frame_take(w) + FRESH_L3;
		memcpy(dp_mem(w, a), l3, len);
		dp_fwd(w, a, len, FWD_DEC_TTL | FWD_SPD_OUT);
		return;
	}
	if (e->port == DP_OUT) {
		/* back out through the outside: only where an outbound policy bypasses it */
		struct sadb_policy pol;
		unsigned r = dp_spd_out(w->ctx->db, l3, len, false, &pol);

		DP_STAT(w, spd_out, 1);
		/* it cannot be protected here: larger than a frame */
		if (r == SADB_DROP_NONE && pol.action == SADB_ACT_PROTECT)
			r = SADB_DROP_MTU;
		if (r != SADB_DROP_NONE) {
			dp_drop_count(w, r, 1);
			return;
		}
	}
	/* e is filled for an unresolved neighbour too (PENDING): its port and MTU are known */
	mtu = e->mtu < FRAME_L3_MAX ? e->mtu : FRAME_L3_MAX;
	if (family == AF_INET6 || (l3[6] & 0x40)) {
		if (dp_ttl_expiring(l3)) {
			ttl_exceeded(w, l3, len);
			dp_drop_count(w, SADB_DROP_TTL, 1);
		} else {
			too_big(w, l3, len, mtu);
			dp_drop_count(w, SADB_DROP_MTU, 1);
		}
		return;
	}
	if (!dec_ttl(w, l3, len)) {
		dp_drop_count(w, SADB_DROP_TTL, 1);
		return;
	}
	n = dp_l3_cut(w, l3, false, 0, len, mtu, &f);
	if (n < 0) {
		dp_drop_count(w, (unsigned)-n, 1);
		return;
	}
	for (int i = 0; i < n; i++)
		dp_fwd(w, f.addr[i], f.len[i], 0);
}

/* Called from the worker loop. Each distinct next hop is asked once per round; resolved ones are
 * sent, expired ones dropped and counted. */
void dp_hold_retry(struct dp_worker *w, bool force)
{
	uint64_t now = dp_now_ns();
	uint32_t keep = 0;

	if (!w->n_hold || (!force && now < w->hold_retry_ns))
		return;
	w->hold_retry_ns = now + 1000000;
	for (uint32_t i = 0; i < w->n_hold; i++) {
		struct dp_held *h = &w->hold[i];
		struct dp_rentry *e;
		/* the L3 destination is what the cache is keyed by: re-run the lookup on it */
		const uint8_t *l3 = dp_mem(w, h->addr + L2);
		enum sadb_drop why;
		enum dp_route_res r = dp_route_lookup(w, h->family, dp_l3_dst(l3, h->family), h->want,
						      &e, &why);

		if (r == DP_ROUTE_OK && e->port <= DP_OUT) {
			send_eth(w, e, h->addr, h->len);
			continue;
		}
		if (r == DP_ROUTE_PENDING && now < h->deadline_ns) {
			w->hold[keep++] = *h;
			continue;
		}
		/* waited too long, or the way it was held for is gone (DP_RT_LOCAL: no frame to the stack
		 * from here) */
		if (r != DP_ROUTE_DROP)
			why = r == DP_ROUTE_PENDING ? SADB_DROP_NO_NEIGH : SADB_DROP_NO_ROUTE;
		DP_STAT(w, drops[why], 1);
		dp_frame_free(w, h->addr);
	}
	w->n_hold = keep;
}
