/* dataplane/xipsecd/dp_worker.c: a worker's packet path. One worker per queue, pinned to a CPU, owns a UMEM
 * and the inside and outside AF_XDP sockets of its queue. Per burst: completions back to the pool,
 * fill rings topped up, RX in bursts, then per packet:
 *   inside  -> SPD (out): bypass -> forward | discard | protect -> engine (outbound) -> forward
 *   outside -> ESP/AH/ESP-in-UDP -> SA by SPI -> engine (inbound) -> inner vs SA selector and
 *              inbound policy (POLICY_MISMATCH otherwise) -> forward (or TUN if for us)
 *           -> plaintext -> SPD (fwd, then in): bypass -> forward | anything else dropped
 *   TUN (worker 0) -> as inside, never decrementing TTL (locally originated)
 * Consecutive packets of one SA are handed to the engine as one burst. Every drop is counted with
 * its reason (rule 4); a bad packet never stops the burst.
 * Fragments: an IPv4 packet without DF that is too big for the SA (or the next link) is cut into
 * fragments first, each in its own frame and its own ESP/AH packet (RFC 4301 section 8.1, RFC 4303
 * section 3.3.4); received outer fragments of ESP, AH and ESP-in-UDP are reassembled (dp_frag.c)
 * before the engine sees them (RFC 4303 section 3.4.1). */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <urcu-qsbr.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_frag.h"

#define L2 14u
#define FWD_DEC_TTL  1u
#define FWD_FROM_TUN 2u
#define FWD_OUTSIDE  4u   /* ESP/AH we made: always through the outside interface */
/* Came in from the outside (decapsulated, or plaintext an inbound policy let in): if its route leaves
 * through the outside interface again it crosses the IPsec boundary outbound, so it takes the
 * outbound SPD lookup first (RFC 4301 §5.1; a hub re-protects spoke-to-spoke traffic for the other
 * spoke, or bypasses or discards it as a policy says), never straight out in clear. */
#define FWD_SPD_OUT  8u

struct group {
	struct dp_sa *sa;
	bool out;
	unsigned n;
	unsigned flags[DP_BATCH];
	struct esp_pkt pk[DP_BATCH];
	struct esp_pkt *pp[DP_BATCH];
};

static inline uint8_t *mem(struct dp_worker *w, uint64_t addr)
{
	return (uint8_t *)w->umem_area + addr;
}

/* A drop that belongs to no SA: counted in the worker's SADB record as well (ipsecctl show stats). */
static inline void drop(struct dp_worker *w, uint64_t addr, unsigned reason)
{
	DP_COUNT(w, drops[reason], 1);
	dp_frame_free(w, addr);
}

/* A drop already counted in an SA's runtime drops: not again in the SADB worker record, so that
 * per-SA + SA-less is the total. */
static inline void drop_charged(struct dp_worker *w, uint64_t addr, unsigned reason)
{
	DP_STAT(w, drops[reason], 1);
	dp_frame_free(w, addr);
}

static inline void sa_drop(struct dp_sa *sa, unsigned reason)
{
	__atomic_fetch_add(&sa->rt->drops[reason], 1, __ATOMIC_RELAXED);
}

/* n packets dropped that hold no frame any more (fragments whose bytes were copied). */
static inline void drop_count(struct dp_worker *w, unsigned reason, uint64_t n)
{
	if (!n)
		return;
	DP_COUNT(w, drops[reason], n);
}

static inline bool ttl_expiring(const uint8_t *l3)
{
	return (l3[0] >> 4) == 4 ? l3[8] <= 1 : l3[7] <= 1;
}

/* Where a packet written by the dataplane starts in a fresh frame: room before it for Ethernet and
 * the engine's headers, as for received frames. */
#define FRESH_L3 (XDP_PACKET_HEADROOM + L2)
/* Largest L3 packet a frame holds at FRESH_L3 with the engine's tailroom after it. */
#define FRAME_L3_MAX (DP_FRAME_SIZE - FRESH_L3 - ESP_TAILROOM)

/* Cut the IPv4 packet at src (len bytes, no DF) into fragments of at most mtu bytes, each in a frame
 * of its own: fragment 0 in place when in_place (src is then frame memory at src_addr), the others in
 * fresh frames, all written before the caller hands any of them on (encrypting fragment 0 in place
 * would overwrite the bytes of fragment 1 that follow it). Returns the number of fragments with
 * addrs/lens filled, or -reason. */
static int cut(struct dp_worker *w, const uint8_t *src, bool in_place, uint64_t src_addr,
	       uint32_t len, uint32_t mtu, uint64_t addrs[DP_FRAG_MAX], uint32_t lens[DP_FRAG_MAX])
{
	struct dp_frag4 f;
	int r = dp_frag4_plan(&f, src, len, mtu);
	unsigned first = in_place ? 1 : 0;

	if (r < 0)
		return r;
	if (mtu > FRAME_L3_MAX)
		return -SADB_DROP_MTU;
	/* keep the reserve refill() keeps for the TUN device and held packets */
	if (w->n_free < f.n - first + 2 * DP_BATCH)
		return -SADB_DROP_FRAG_NOBUF;
	for (unsigned i = first; i < f.n; i++) {
		addrs[i] = dp_frame_take(w) + FRESH_L3;
		lens[i] = dp_frag4_write(&f, i, mem(w, addrs[i]));
	}
	if (in_place) {
		addrs[0] = src_addr;
		lens[0] = dp_frag4_write(&f, 0, mem(w, src_addr));
	}
	DP_COUNT(w, frag_packets, 1);
	DP_COUNT(w, frag_made, f.n);
	return (int)f.n;
}

/* TTL / hop limit, RFC 1812 5.3.1; the IPv4 checksum is updated incrementally (RFC 1624). */
static bool dec_ttl(struct dp_worker *w, uint8_t *l3, uint32_t len)
{
	if ((l3[0] >> 4) == 4) {
		uint16_t check;
		uint32_t c;

		/* byte access: the IP header sits 2 bytes past a 4-byte boundary behind Ethernet */
		if (l3[8] <= 1)
			goto expired;
		l3[8]--;
		memcpy(&check, l3 + 10, 2);
		c = (uint32_t)check + htons(0x0100);
		check = (uint16_t)(c + (c >= 0xffff));
		memcpy(l3 + 10, &check, 2);
		return true;
	}
	if (l3[7] <= 1)
		goto expired;
	l3[7]--;
	return true;
expired:
	dp_icmp_ttl(w, l3, len);
	return false;
}

static void outbound(struct dp_worker *w, struct group *g, uint64_t addr, uint32_t len,
		     unsigned flags);

/* Send the L3 packet at addr to its next hop; consumes the frame. */
static void forward(struct dp_worker *w, uint64_t addr, uint32_t len, unsigned flags)
{
	uint8_t *l3 = mem(w, addr);
	uint8_t family = (l3[0] >> 4) == 4 ? AF_INET : AF_INET6;
	const uint8_t *dst = family == AF_INET ? l3 + 16 : l3 + 24;
	struct dp_rentry *e;
	enum sadb_drop why;
	enum dp_route_res r;
	uint8_t *eth;
	uint32_t mtu;

	r = dp_route_lookup(w, family, dst, (flags & FWD_OUTSIDE) ? DP_OUT : -1, &e, &why);
	if (r == DP_ROUTE_DROP) {
		drop(w, addr, why);
		return;
	}
	/* e is filled for an unresolved neighbour too (DP_ROUTE_PENDING) */
	if ((flags & FWD_SPD_OUT) && e->port == DP_OUT) {
		DP_STAT(w, spd_out, 1);
		outbound(w, w->regroup, addr, len, flags & FWD_DEC_TTL);
		return;
	}
	if (e->port == DP_RT_LOCAL) {
		if ((flags & FWD_FROM_TUN) || w->ctx->tun_fd < 0) {
			drop(w, addr, SADB_DROP_NO_ROUTE);
			return;
		}
		if (dp_tun_write(w->ctx, l3, len) == 0) {
			DP_STAT(w, to_tun, 1);
		} else {
			DP_COUNT(w, drops[SADB_DROP_TX_FULL], 1);
		}
		dp_frame_free(w, addr);
		return;
	}
	/* The MTU is known for an unresolved neighbour too (PENDING): a held packet must fit as well.
	 * Too big with DF (always, for IPv6): the ICMP error that makes PMTUD work quotes the packet as
	 * received, so it is sent before the TTL changes (an expiring TTL is answered instead). */
	mtu = e->port <= DP_OUT ? e->mtu : UINT32_MAX;
	if (len > mtu && (family == AF_INET6 || (l3[6] & 0x40)) &&
	    !((flags & FWD_DEC_TTL) && ttl_expiring(l3))) {
		if (!(flags & FWD_OUTSIDE)) /* not about our own ESP: its source is us */
			dp_icmp_too_big(w, l3, len, mtu);
		drop(w, addr, SADB_DROP_MTU);
		return;
	}
	if ((flags & FWD_DEC_TTL) && !dec_ttl(w, l3, len)) {
		drop(w, addr, SADB_DROP_TTL);
		return;
	}
	if (len > mtu) {
		/* IPv4 without DF: as a router, fragment (RFC 791, RFC 1812 section 5.2.6) */
		uint64_t fa[DP_FRAG_MAX];
		uint32_t fl[DP_FRAG_MAX];
		int n = cut(w, l3, true, addr, len, mtu, fa, fl);

		if (n < 0) {
			drop(w, addr, (unsigned)-n);
			return;
		}
		for (int i = 0; i < n; i++)
			forward(w, fa[i], fl[i], flags & ~FWD_DEC_TTL);
		return;
	}
	eth = l3 - L2;
	eth[12] = family == AF_INET ? 0x08 : 0x86;
	eth[13] = family == AF_INET ? 0x00 : 0xdd;
	if (r == DP_ROUTE_PENDING) {
		struct dp_held *h;

		if (w->n_hold >= DP_HOLD_MAX) {
			drop(w, addr, SADB_DROP_NO_NEIGH);
			return;
		}
		h = &w->hold[w->n_hold++];
		h->addr = addr - L2;
		h->len = len + L2;
		h->family = family;
		/* Held for the port it was cleared for: a packet from the outside that was let through
		 * towards the inside (not through the outbound SPD) must not leave by the outside if the
		 * route changes while it waits. */
		h->want = (flags & FWD_OUTSIDE) ? DP_OUT : (flags & FWD_SPD_OUT) ? (int8_t)e->port : -1;
		h->deadline_ns = dp_now_ns() + DP_HOLD_NS;
		DP_STAT(w, held, 1);
		return;
	}
	memcpy(eth, e->dmac, 6);
	memcpy(eth + 6, w->ctx->ifc[e->port].mac, 6);
	dp_tx(w, e->port, addr - L2, len + L2);
}

void dp_forward(struct dp_worker *w, uint64_t addr, uint32_t len)
{
	forward(w, addr, len, FWD_DEC_TTL);
}

void dp_forward_generated(struct dp_worker *w, uint64_t addr, uint32_t len)
{
	forward(w, addr, len, FWD_SPD_OUT);
}

/* The policy for traffic arriving from the outside: a forward policy (as XFRM's "fwd") first, an
 * inbound one otherwise. */
static int lookup_in(struct dp_worker *w, const struct sadb_pkt_sel *sel, struct sadb_policy *pol)
{
	if (sadb_policy_lookup(w->ctx->db, SADB_DIR_FWD, sel, pol) == 0)
		return 0;
	return sadb_policy_lookup(w->ctx->db, SADB_DIR_IN, sel, pol);
}

/* After decapsulation: the inner packet must be what the SA and its policy allow. */
static unsigned inner_check(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3,
			    uint32_t len)
{
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;

	if (esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE)
		return SADB_DROP_TRUNCATED;
	if (!sadb_selector_match(&sa->sa.sel, &sel) || lookup_in(w, &sel, &pol) ||
	    pol.action != SADB_ACT_PROTECT || pol.proto != sa->sa.proto ||
	    (pol.reqid && sa->sa.reqid && pol.reqid != sa->sa.reqid))
		return SADB_DROP_POLICY_MISMATCH;
	return SADB_DROP_NONE;
}

static void flush(struct dp_worker *w, struct group *g)
{
	struct dp_sa *sa = g->sa;
	unsigned k, n = g->n;

	if (!n)
		return;
	g->n = 0;
	if (g->out) {
		k = esp_outbound_burst(sa->eo[w->id], g->pp, n);
		DP_STAT(w, protect, k);
	} else {
		pthread_spin_lock(sa->in_lock);
		k = esp_inbound_burst(sa->ei, g->pp, n);
		pthread_spin_unlock(sa->in_lock);
		DP_STAT(w, unprotect, k);
	}
	for (unsigned i = k; i < n; i++) {
		struct esp_pkt *p = g->pp[i];

		/* the engine counted it in the SA, except when the SA's area was no longer its own */
		if (p->drop == SADB_DROP_STALE_SA)
			drop(w, p->user, p->drop);
		else
			drop_charged(w, p->user, p->drop);
	}
	for (unsigned i = 0; i < k; i++) {
		struct esp_pkt *p = g->pp[i];
		uint64_t base = p->user;
		unsigned flags = g->flags[p - g->pk];

		if (g->out) {
			forward(w, base + p->off, p->len, (flags & FWD_FROM_TUN) | FWD_OUTSIDE);
		} else {
			unsigned r = inner_check(w, sa, p->buf + p->off, p->len);

			if (r != SADB_DROP_NONE) {
				sa_drop(sa, r);
				drop_charged(w, base, r);
				continue;
			}
			forward(w, base + p->off, p->len, FWD_DEC_TTL | FWD_SPD_OUT);
		}
	}
	if (!g->out)
		flush(w, w->regroup); /* what those re-entered the outbound path with */
}

static void group_add(struct dp_worker *w, struct group *g, struct dp_sa *sa, bool out,
		      uint64_t addr, uint32_t len, unsigned flags)
{
	struct esp_pkt *p;
	uint64_t base = addr & ~(uint64_t)(DP_FRAME_SIZE - 1);

	if (g->n && (g->sa != sa || g->out != out))
		flush(w, g);
	g->sa = sa;
	g->out = out;
	p = &g->pk[g->n];
	p->buf = mem(w, base);
	p->buf_len = DP_FRAME_SIZE;
	p->off = (uint32_t)(addr - base);
	p->len = len;
	p->drop = 0;
	p->user = base;
	g->flags[g->n] = flags;
	g->pp[g->n] = p;
	if (++g->n == DP_BATCH)
		flush(w, g);
}

/* Plaintext that may need protection: from the inside or the TUN device. */
static void outbound(struct dp_worker *w, struct group *g, uint64_t addr, uint32_t len,
		     unsigned flags)
{
	uint8_t *l3 = mem(w, addr);
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;
	struct dp_sa *sa;
	uint32_t mtu;

	if (esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE) {
		drop(w, addr, SADB_DROP_TRUNCATED);
		return;
	}
	if (sadb_policy_lookup(w->ctx->db, SADB_DIR_OUT, &sel, &pol)) {
		drop(w, addr, SADB_DROP_NO_POLICY);
		return;
	}
	switch (pol.action) {
	case SADB_ACT_BYPASS:
		DP_STAT(w, bypass, 1);
		forward(w, addr, len, flags);
		return;
	case SADB_ACT_PROTECT:
		break;
	default:
		drop(w, addr, SADB_DROP_POLICY_DISCARD);
		return;
	}
	sa = dp_sa_find_out(w->ctx, pol.reqid);
	if (!sa) {
		drop(w, addr, SADB_DROP_SA_STATE);
		return;
	}
	if (sa->unusable) {
		sa_drop(sa, SADB_DROP_UNSUPPORTED);
		drop_charged(w, addr, SADB_DROP_UNSUPPORTED);
		return;
	}
	/* Checked here rather than by the engine so the ICMP error can quote the intact packet (before
	 * the TTL changes; an expiring TTL gets "time exceeded" instead). */
	mtu = sa->sa.mtu ? sa->sa.mtu : atomic_load_explicit(&w->ctx->ifc[DP_OUT].mtu,
							      memory_order_relaxed);
	mtu = esp_sa_inner_mtu(sa->eo[w->id], mtu, sel.src.family);
	if (len > mtu && (sel.src.family == AF_INET6 || (l3[6] & 0x40)) &&
	    !((flags & FWD_DEC_TTL) && ttl_expiring(l3))) {
		dp_icmp_too_big(w, l3, len, mtu);
		sa_drop(sa, SADB_DROP_MTU);
		drop_charged(w, addr, SADB_DROP_MTU);
		return;
	}
	/* As a router we decrement the inner TTL before encapsulating (RFC 4301 5.1.2.1). */
	if ((flags & FWD_DEC_TTL) && !dec_ttl(w, l3, len)) {
		drop(w, addr, SADB_DROP_TTL);
		return;
	}
	if (len > mtu && sa->sa.mode != SADB_MODE_TUNNEL) {
		/* transport mode protects whole datagrams only (RFC 4303 3.3.4) */
		sa_drop(sa, SADB_DROP_MTU);
		drop_charged(w, addr, SADB_DROP_MTU);
		return;
	}
	if (len > mtu) {
		/* IPv4 without DF: fragments first, each then protected on its own (RFC 4301 8.1) */
		uint64_t fa[DP_FRAG_MAX];
		uint32_t fl[DP_FRAG_MAX];
		int n = cut(w, l3, true, addr, len, mtu, fa, fl);

		if (n < 0) {
			sa_drop(sa, (unsigned)-n);
			drop_charged(w, addr, (unsigned)-n);
			return;
		}
		for (int i = 0; i < n; i++)
			group_add(w, g, sa, true, fa[i], fl[i], flags & FWD_FROM_TUN);
		return;
	}
	group_add(w, g, sa, true, addr, len, flags & FWD_FROM_TUN);
}

static void from_outside(struct dp_worker *w, struct group *g, uint64_t addr, uint32_t len,
			 bool whole);

/* A decrypted packet from a datagram too big for a frame (at l3 in the worker's reassembly buffer):
 * one that fits a frame is copied into one; a larger IPv4 packet without DF leaves as fragments of
 * the next link's MTU, written straight into frames; otherwise the sender gets "fragmentation
 * needed" / "packet too big" with the largest size a frame carries. Drops are counted here. */
static void forward_large(struct dp_worker *w, uint8_t *l3, uint32_t len)
{
	uint8_t family = (l3[0] >> 4) == 4 ? AF_INET : AF_INET6;
	struct dp_rentry *e;
	uint64_t fa[DP_FRAG_MAX];
	uint32_t fl[DP_FRAG_MAX], mtu;
	enum sadb_drop why;
	int n;

	if (dp_route_lookup(w, family, family == AF_INET ? l3 + 16 : l3 + 24, -1, &e, &why) ==
	    DP_ROUTE_DROP) {
		drop_count(w, why, 1);
		return;
	}
	if (e->port == DP_RT_LOCAL) {
		/* for the gateway itself: the kernel reassembles nothing here, it takes it whole */
		if (w->ctx->tun_fd >= 0 && dp_tun_write(w->ctx, l3, len) == 0)
			DP_STAT(w, to_tun, 1);
		else
			drop_count(w, w->ctx->tun_fd >= 0 ? SADB_DROP_TX_FULL : SADB_DROP_NO_ROUTE, 1);
		return;
	}
	if (len <= FRAME_L3_MAX) {
		/* the inner packet fits a frame after all: the ordinary path */
		uint64_t a;

		if (w->n_free <= 2 * DP_BATCH) {
			drop_count(w, SADB_DROP_NOMEM, 1);
			return;
		}
		a = dp_frame_take(w) + FRESH_L3;
		memcpy(mem(w, a), l3, len);
		forward(w, a, len, FWD_DEC_TTL | FWD_SPD_OUT);
		return;
	}
	if (e->port == DP_OUT) {
		/* back out through the outside: only where an outbound policy bypasses it (a datagram
		 * larger than a frame cannot be protected again here) */
		struct sadb_pkt_sel sel;
		struct sadb_policy pol;

		why = SADB_DROP_NONE;
		DP_STAT(w, spd_out, 1);
		if (esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE)
			why = SADB_DROP_TRUNCATED;
		else if (sadb_policy_lookup(w->ctx->db, SADB_DIR_OUT, &sel, &pol))
			why = SADB_DROP_NO_POLICY;
		else if (pol.action == SADB_ACT_DISCARD)
			why = SADB_DROP_POLICY_DISCARD;
		else if (pol.action == SADB_ACT_PROTECT)
			why = SADB_DROP_MTU;
		if (why != SADB_DROP_NONE) {
			drop_count(w, why, 1);
			return;
		}
	}
	/* e is filled for an unresolved neighbour too (PENDING): its port and MTU are known */
	mtu = e->mtu < FRAME_L3_MAX ? e->mtu : FRAME_L3_MAX;
	if (family == AF_INET6 || (l3[6] & 0x40)) {
		if (ttl_expiring(l3)) {
			dp_icmp_ttl(w, l3, len);
			drop_count(w, SADB_DROP_TTL, 1);
		} else {
			dp_icmp_too_big(w, l3, len, mtu);
			drop_count(w, SADB_DROP_MTU, 1);
		}
		return;
	}
	if (!dec_ttl(w, l3, len)) {
		drop_count(w, SADB_DROP_TTL, 1);
		return;
	}
	n = cut(w, l3, false, 0, len, mtu, fa, fl);
	if (n < 0) {
		drop_count(w, (unsigned)-n, 1);
		return;
	}
	for (int i = 0; i < n; i++)
		forward(w, fa[i], fl[i], 0);
}

/* A reassembled datagram too big for a frame (it is in w->rbuf): the engine runs on that buffer,
 * alone, under the SA's lock like a burst of one. */
static void inbound_large(struct dp_worker *w, uint32_t len)
{
	struct esp_outer o;
	struct esp_pkt p = { .buf = w->rbuf, .buf_len = DP_REASM_OUT_MAX, .off = 0, .len = len };
	struct esp_pkt *pp = &p;
	struct dp_sa *sa;
	unsigned k, r = esp_parse_outer(w->rbuf, len, DP_NATT_PORT, &o);

	if (r != SADB_DROP_NONE) {
		drop_count(w, r, 1);
		return;
	}
	sa = dp_sa_find_in(w->ctx, o.spi, o.proto, &o.dst);
	if (!sa) {
		drop_count(w, SADB_DROP_BAD_SPI, 1);
		return;
	}
	r = sa->unusable ? SADB_DROP_UNSUPPORTED :
	    o.udp_encap != (sa->sa.encap_dport != 0) ? SADB_DROP_BAD_ENCAP : SADB_DROP_NONE;
	if (r != SADB_DROP_NONE) {
		sa_drop(sa, r);
		DP_STAT(w, drops[r], 1);
		return;
	}
	pthread_spin_lock(sa->in_lock);
	k = esp_inbound_burst(sa->ei, &pp, 1);
	pthread_spin_unlock(sa->in_lock);
	if (!k) {
		/* counted in the SA by the engine */
		DP_STAT(w, drops[p.drop], 1);
		return;
	}
	DP_STAT(w, unprotect, 1);
	r = inner_check(w, sa, p.buf + p.off, p.len);
	if (r != SADB_DROP_NONE) {
		sa_drop(sa, r);
		DP_STAT(w, drops[r], 1);
		return;
	}
	forward_large(w, p.buf + p.off, p.len);
}

/* An outer fragment of ESP, AH or ESP-in-UDP: into the shared table; a datagram it completes goes on
 * as if received whole, in this fragment's frame when it fits. */
static void reassemble(struct dp_worker *w, struct group *g, uint64_t addr, uint32_t len)
{
	struct dp_ctx *ctx = w->ctx;
	uint64_t base = addr & ~(uint64_t)(DP_FRAME_SIZE - 1);
	struct dp_reasm_res res;

	pthread_spin_lock(&ctx->reasm_lock);
	res = dp_reasm_add(ctx->reasm, mem(w, addr), len, dp_now_ns(), w->rbuf, DP_REASM_OUT_MAX);
	pthread_spin_unlock(&ctx->reasm_lock);
	drop_count(w, SADB_DROP_FRAG_TIMEOUT, res.n_expired);
	switch (res.verdict) {
	case DP_REASM_HELD:
		dp_frame_free(w, base);
		return;
	case DP_REASM_DROP:
		drop_count(w, res.reason, res.n_dropped);
		drop(w, base, res.reason);
		return;
	default:
		break;
	}
	DP_COUNT(w, reasm_packets, 1);
	DP_COUNT(w, reasm_frags, res.n_frags);
	if (res.len > DP_FRAME_SIZE - FRESH_L3) {
		dp_frame_free(w, base);
		inbound_large(w, res.len);
		return;
	}
	memcpy(mem(w, base + FRESH_L3), w->rbuf, res.len);
	from_outside(w, g, base + FRESH_L3, res.len, true);
}

/* From the outside interface; whole: a reassembled datagram (a fragment inside is an error). */
static void from_outside(struct dp_worker *w, struct group *g, uint64_t addr, uint32_t len,
			 bool whole)
{
	uint8_t *l3 = mem(w, addr);
	struct esp_outer o;
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;
	struct dp_sa *sa;
	enum sadb_drop r;
	uint8_t fproto;

	/* Outer fragments for us (RFC 4303 3.4.1: reassembly before ESP processing). Transit fragments
	 * of other protocols are forwarded as they are, like any plaintext. */
	if (dp_frag_is_fragment(l3, len, &fproto) &&
	    (fproto == IPPROTO_ESP || fproto == IPPROTO_AH ||
	     (fproto == IPPROTO_UDP && dp_xdp_is_local(w->ctx, (l3[0] >> 4) == 4 ? AF_INET : AF_INET6,
						      (l3[0] >> 4) == 4 ? l3 + 16 : l3 + 24)))) {
		if (whole) {
			drop(w, addr, SADB_DROP_FRAG_BAD);
			return;
		}
		reassemble(w, g, addr, len);
		return;
	}
	r = esp_parse_outer(l3, len, DP_NATT_PORT, &o);
	if (r == SADB_DROP_NONE) {
		sa = dp_sa_find_in(w->ctx, o.spi, o.proto, &o.dst);
		if (!sa) {
			drop(w, addr, SADB_DROP_BAD_SPI);
			return;
		}
		if (sa->unusable) {
			sa_drop(sa, SADB_DROP_UNSUPPORTED);
			drop_charged(w, addr, SADB_DROP_UNSUPPORTED);
			return;
		}
		if (o.udp_encap != (sa->sa.encap_dport != 0)) {
			sa_drop(sa, SADB_DROP_BAD_ENCAP);
			drop_charged(w, addr, SADB_DROP_BAD_ENCAP);
			return;
		}
		group_add(w, g, sa, false, addr, len, 0);
		return;
	}
	if (r == SADB_DROP_TRUNCATED) {
		drop(w, addr, r);
		return;
	}
	/* plaintext from the outside (UNSUPPORTED: not ESP/AH; BAD_ENCAP: UDP 4500 not ESP) */
	if (esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE) {
		drop(w, addr, SADB_DROP_TRUNCATED);
		return;
	}
	if (lookup_in(w, &sel, &pol)) {
		drop(w, addr, SADB_DROP_NO_POLICY);
		return;
	}
	if (pol.action == SADB_ACT_BYPASS) {
		DP_STAT(w, bypass, 1);
		forward(w, addr, len, FWD_DEC_TTL | FWD_SPD_OUT);
	} else {
		/* plaintext where the policy demands protection is a mismatch, not a discard */
		drop(w, addr, pol.action == SADB_ACT_PROTECT ? SADB_DROP_POLICY_MISMATCH :
			       SADB_DROP_POLICY_DISCARD);
	}
}

/* Trim Ethernet padding: the IP length is authoritative. */
static bool l3_len(const uint8_t *l3, uint32_t caplen, uint32_t *len)
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

static unsigned rx_burst(struct dp_worker *w, struct group *g, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n;

	n = xsk_ring_cons__peek(&pt->rx, DP_BATCH, &idx);
	if (!n)
		return 0;
	dp_count_rx(w, p, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&pt->rx, idx + i);
		uint64_t addr = d->addr;
		uint8_t *eth = mem(w, addr);
		uint32_t len;

		DP_SST_ADD(w, rx_bytes, d->len);

		if (d->len < L2 + 20 || !l3_len(eth + L2, d->len - L2, &len) ||
		    (eth[12] != 0x08 && eth[12] != 0x86)) {
			drop(w, addr, SADB_DROP_TRUNCATED);
			continue;
		}
		if (p == DP_IN)
			outbound(w, g, addr + L2, len, FWD_DEC_TTL);
		else
			from_outside(w, g, addr + L2, len, false);
	}
	xsk_ring_cons__release(&pt->rx, n);
	flush(w, g);
	flush(w, w->regroup);
	return n;
}

static unsigned tun_burst(struct dp_worker *w, struct group *g)
{
	unsigned n = 0;

	while (n < DP_BATCH && w->n_free > DP_BATCH) {
		uint64_t base, addr;
		ssize_t r;
		uint32_t len;

		base = dp_frame_take(w);
		addr = base + XDP_PACKET_HEADROOM + L2;
		r = read(w->ctx->tun_fd, mem(w, addr), DP_FRAME_SIZE - XDP_PACKET_HEADROOM - L2 -
			 ESP_TAILROOM - 256);
		if (r <= 0) {
			dp_frame_free(w, base);
			break;
		}
		n++;
		DP_STAT(w, from_tun, 1);
		if (!l3_len(mem(w, addr), (uint32_t)r, &len)) {
			drop(w, addr, SADB_DROP_TRUNCATED);
			continue;
		}
		outbound(w, g, addr, len, FWD_FROM_TUN);
	}
	flush(w, g);
	flush(w, w->regroup);
	return n;
}

static void complete(struct dp_worker *w, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n;

	if (!pt->tx_pending)
		return;
	n = xsk_ring_cons__peek(&pt->comp, DP_RING_SIZE, &idx);
	for (uint32_t i = 0; i < n; i++)
		dp_frame_free(w, *xsk_ring_cons__comp_addr(&pt->comp, idx + i));
	xsk_ring_cons__release(&pt->comp, n);
	pt->tx_pending -= n;
}

static void refill(struct dp_worker *w, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n = xsk_prod_nb_free(&pt->fill, DP_RING_SIZE);

	/* keep a reserve for the TUN device and held packets */
	if (w->n_free <= 2 * DP_BATCH)
		return;
	if (n > w->n_free - 2 * DP_BATCH)
		n = w->n_free - 2 * DP_BATCH;
	if (!n || xsk_ring_prod__reserve(&pt->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&pt->fill, idx + i) = dp_frame_take(w);
	xsk_ring_prod__submit(&pt->fill, n);
}

static void kick(struct dp_worker *w)
{
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		struct dp_port *pt = &w->port[p];

		if (pt->tx_pending && xsk_ring_prod__needs_wakeup(&pt->tx))
			dp_tx_kick(pt);
		if (xsk_ring_prod__needs_wakeup(&pt->fill))
			recvfrom(pt->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	}
}

static void pin(struct dp_worker *w)
{
	cpu_set_t set;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (w->ctx->cfg.no_pin || ncpu <= 0)
		return;
	CPU_ZERO(&set);
	CPU_SET((int)(w->id % (unsigned)ncpu), &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		dp_log(LOG_WARNING, "worker %u: cannot pin to CPU %u", w->id, w->id % (unsigned)ncpu);
	else
		w->cpu = (int)(w->id % (unsigned)ncpu);
}

/* Datagrams whose fragments stopped coming: looked for every 100 ms by whichever worker gets the
 * lock (a busy worker does not wait for it). */
static void reasm_expire(struct dp_worker *w)
{
	struct dp_ctx *ctx = w->ctx;
	uint64_t now = dp_now_ns();
	uint32_t n;

	if (now < w->reasm_expire_ns)
		return;
	w->reasm_expire_ns = now + 100000000ull;
	if (pthread_spin_trylock(&ctx->reasm_lock))
		return;
	n = dp_reasm_expire(ctx->reasm, now);
	pthread_spin_unlock(&ctx->reasm_lock);
	drop_count(w, SADB_DROP_FRAG_TIMEOUT, n);
}

int dp_worker_frag_init(struct dp_ctx *ctx)
{
	struct dp_reasm_cfg rc = {
		.max_dgrams = DP_REASM_DGRAMS,
		.max_bytes = DP_REASM_BYTES,
		.max_frags = DP_REASM_FRAGS,
		.timeout_ns = DP_REASM_NS,
	};
	int err;

	ctx->local_addrs_fd = -1;
	err = pthread_spin_init(&ctx->reasm_lock, PTHREAD_PROCESS_PRIVATE);
	if (err)
		return -err;
	err = dp_reasm_create(&rc, &ctx->reasm);
	if (err)
		return err;
	for (unsigned i = 0; i < ctx->n_workers; i++) {
		ctx->w[i].rbuf = malloc(DP_REASM_OUT_MAX);
		if (!ctx->w[i].rbuf)
			return -ENOMEM;
	}
	return 0;
}

void dp_worker_frag_fini(struct dp_ctx *ctx)
{
	if (!ctx->reasm)
		return;
	for (unsigned i = 0; ctx->w && i < ctx->n_workers; i++) {
		free(ctx->w[i].rbuf);
		ctx->w[i].rbuf = NULL;
	}
	dp_reasm_destroy(ctx->reasm);
	ctx->reasm = NULL;
	pthread_spin_destroy(&ctx->reasm_lock);
	if (ctx->local_addrs_fd >= 0)
		close(ctx->local_addrs_fd);
	ctx->local_addrs_fd = -1;
}

void *dp_worker_main(void *arg)
{
	struct dp_worker *w = arg;
	struct dp_ctx *ctx = w->ctx;
	static __thread struct group g, rg;
	bool tun = w->id == 0 && ctx->tun_fd >= 0;

	w->regroup = &rg;
	pin(w);
	rcu_register_thread();
	while (!atomic_load_explicit(&ctx->stop, memory_order_relaxed)) {
		unsigned work = 0;
		bool busy = false;

		for (unsigned p = 0; p < DP_NPORTS; p++) {
			complete(w, p);
			refill(w, p);
		}
		for (unsigned p = 0; p < DP_NPORTS; p++)
			work += rx_burst(w, &g, p);
		if (tun)
			work += tun_burst(w, &g);
		kick(w);
		dp_route_hold_retry(w, false);
		reasm_expire(w);
		rcu_quiescent_state();
		if (work)
			continue;
		for (unsigned p = 0; p < DP_NPORTS; p++)
			busy |= w->port[p].tx_pending != 0;
		{
			struct pollfd pf[3] = {
				{ .fd = w->port[DP_IN].fd, .events = POLLIN },
				{ .fd = w->port[DP_OUT].fd, .events = POLLIN },
				{ .fd = tun ? ctx->tun_fd : -1, .events = POLLIN },
			};

			rcu_thread_offline();
			poll(pf, 3, (busy || w->n_hold) ? 1 : 100);
			rcu_thread_online();
		}
	}
	rcu_unregister_thread();
	return NULL;
}
