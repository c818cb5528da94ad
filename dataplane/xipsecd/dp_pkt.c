/* dataplane/xipsecd/dp_pkt.c: frame bookkeeping of a worker (free pool, TX ring) and the ICMP errors the
 * gateway owes senders (time exceeded, fragmentation needed / packet too big), built here in frames
 * of the worker's own, rate limited, with the source and the one SA an error about a decapsulated
 * packet may take (RFC 4301 section 6.2; the argument is at icmp_decap_source); the forwarding and
 * outbound stages (dp_fwd.c, dp_out.c) send them on. Nothing here calls back into the packet path. */
#include "config.h"

#include <errno.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/ip_icmp.h>
#include <string.h>
#include <sys/socket.h>

#include "dataplane/engine/ip_bytes.h"
#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_icmp.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_spd.h"

#define DP_ICMP_PER_SEC 200

void dp_frame_free(struct dp_worker *w, uint64_t addr)
{
	uint64_t base = addr & ~(uint64_t)(DP_FRAME_SIZE - 1);
	uint64_t i = base / DP_FRAME_SIZE;

	/* A frame returns once per hand-out: a return of a frame that is not out (a completion the
	 * ring should not hold) would give one frame two owners, so it is refused and counted. Seen
	 * once as an overflow of bench/fwd-gen's pool under the bad-ICV flood (the same pool logic,
	 * copy-mode TX); the cause is not established, the guard costs a byte per frame. */
	if (i >= DP_NUM_FRAMES || !w->frame_out[i]) {
		w->frame_anomalies++;
		return;
	}
	w->frame_out[i] = 0;
	w->free_frames[w->n_free++] = base;
}

void dp_tx_kick(struct dp_port *pt)
{
	/* Copy mode transmits only inside sendto(), at most 32 frames per call (the kernel's
	 * TX_BATCH_SIZE, -EAGAIN when more are left): call until the ring is drained, so a full burst
	 * goes out now instead of one slice per loop (measured: TX ring overflows otherwise; with
	 * --tx-budget one call takes up to that many). */
	for (unsigned i = 0; i < DP_RING_SIZE / 32; i++) {
		if (sendto(pt->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS)
			break;
		if (xsk_prod_nb_free(&pt->tx, DP_RING_SIZE) == DP_RING_SIZE)
			break;
	}
}

bool dp_tx(struct dp_worker *w, unsigned port, uint64_t addr, uint32_t len)
{
	struct dp_port *pt = &w->port[port];
	uint32_t idx;

	if (xsk_ring_prod__reserve(&pt->tx, 1, &idx) != 1) {
		dp_tx_kick(pt);
		if (xsk_ring_prod__reserve(&pt->tx, 1, &idx) == 1)
			goto put;
		DP_STAT(w, drops[SADB_DROP_TX_FULL], 1);
		dp_frame_free(w, addr);
		return false;
	}
put:
	xsk_ring_prod__tx_desc(&pt->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&pt->tx, idx)->len = len;
	xsk_ring_prod__tx_desc(&pt->tx, idx)->options = 0;
	xsk_ring_prod__submit(&pt->tx, 1);
	pt->tx_pending++;
	dp_count_tx(w, port, len);
	return true;
}

static bool icmp_allowed(struct dp_worker *w)
{
	uint64_t now = dp_now_ns(), cost = 1000000000ull / DP_ICMP_PER_SEC;

	/* token bucket of one second's worth */
	if (w->icmp_tokens_ns + 1000000000ull < now)
		w->icmp_tokens_ns = now - 1000000000ull;
	if (w->icmp_tokens_ns + cost > now)
		return false;
	w->icmp_tokens_ns += cost;
	return true;
}

/* The checksums of the error at p (v4: IPv4 + ICMP, else IPv6 + ICMPv6; tot bytes), its source in
 * place. */
static void icmp_csum(uint8_t *p, bool v4, uint32_t tot)
{
	uint16_t c;

	if (v4) {
		p[10] = p[11] = p[22] = p[23] = 0;
		c = htons(esp_csum(p, 20));
		memcpy(p + 10, &c, 2);
		c = htons(esp_csum(p + 20, tot - 20));
		memcpy(p + 22, &c, 2);
		return;
	}
	/* over the pseudo header (addresses, length, next header) and the message */
	p[42] = p[43] = 0;
	c = htons(esp_csum_fold(esp_csum_add(esp_csum_add(tot - 40 + IPPROTO_ICMPV6, p + 8, 32), p + 40,
					     tot - 40)));
	memcpy(p + 42, &c, 2);
}

/* The source and the way back of an error about a decapsulated packet (RFC 4301 section 6.2).
 *
 * The packet at l3 arrived in the inbound SA w->decap_sa; the error quotes up to 548 (IPv4) or 1232
 * (IPv6) bytes of it, decrypted. Left to the outbound SPD like any packet, it would take whatever
 * policy its own addresses match: with a source the tunnel's selectors do not cover and a broader
 * BYPASS behind them (a gateway that also routes other traffic), the quote of protected traffic
 * would leave in clear, or through another tunnel. So the error goes back only the way the packet
 * came: protected by the outbound SA paired with the inbound one (same reqid), with a source that
 * SA's selector and the outbound policy protecting it with that reqid both cover, so that the peer's
 * check after decapsulation lets it in too. The source is the first that fits of: the packet's
 * destination if it is one of the gateway's addresses (the error is then from the host the sender
 * addressed), the inside interface's global addresses in order. None fits, or no outbound SA is
 * paired (reqid 0, not yet installed, unusable): the error is not sent, and counted as ICMP_DECAP;
 * the sender's own timers cover a lost error, a leaked quote cannot be taken back. */
static struct dp_sa *icmp_decap_source(struct dp_worker *w, const struct dp_srcaddr *src,
				       const uint8_t *l3, uint8_t *p, uint32_t tot)
{
	struct dp_sa *out = w->decap_sa->sa.reqid ? dp_sa_find_out(w->ctx, w->decap_sa->sa.reqid) : NULL;
	bool v4 = (p[0] >> 4) == 4;
	unsigned alen = v4 ? 4 : 16, n = v4 ? src->n4 : src->n6;
	uint8_t *at = p + (v4 ? 12 : 8);
	const uint8_t *dst = l3 + (v4 ? 16 : 24);

	if (!out || out->unusable)
		return NULL;
	if (dp_xdp_is_local(w->ctx, v4 ? AF_INET : AF_INET6, dst)) {
		memcpy(at, dst, alen);
		if (dp_spd_icmp_via(w->ctx->db, &out->sa, p, tot) == SADB_DROP_NONE)
			return out;
	}
	for (unsigned i = 0; i < n; i++) {
		memcpy(at, v4 ? src->v4[i] : src->v6[i], alen);
		if (dp_spd_icmp_via(w->ctx->db, &out->sa, p, tot) == SADB_DROP_NONE)
			return out;
	}
	return NULL;
}

/* Build an ICMP(v6) error about the packet at l3, to its source. type/code per family; `info` is the
 * 32-bit field after the checksum (next-hop MTU, pointer, unused). Returns its length (0: none).
 *
 * The error is built here as a packet in a frame of ours. About a packet that arrived in clear, the
 * caller hands it to the forwarding path like any packet that came from the outside (dp_fwd.c,
 * FWD_SPD_OUT): if its way to the original sender leaves through the outside interface it takes the
 * outbound SPD lookup, bypassed or discarded as a policy says; its source is the inside interface's
 * first address. About a decapsulated packet (w->decap_sa), it goes only through the outbound SA of
 * that tunnel, *via, or nowhere (icmp_decap_source). */
static uint32_t icmp_error(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint8_t type,
			   uint8_t code, uint32_t info, uint64_t *out, struct dp_sa **via)
{
	const struct dp_srcaddr *src = &w->ctx->src[atomic_load_explicit(&w->ctx->src_cur,
									  memory_order_acquire)];
	bool v4 = (l3[0] >> 4) == 4;
	uint64_t addr;
	uint8_t *p;
	uint32_t quote, tot;

	*via = NULL;
	if (!dp_icmp_may_answer(l3, len))
		return 0;
	if (w->n_free <= DP_FRAME_RESERVE || !icmp_allowed(w))
		return 0;
	if (!w->decap_sa && (v4 ? !src->n4 : !src->n6))
		return 0;
	addr = dp_frame_take(w) + XDP_PACKET_HEADROOM + 14;
	p = (uint8_t *)w->umem_area + addr;
	info = htonl(info);
	if (v4) {
		/* RFC 1812 4.3.2.3: no more than 576 bytes in all */
		quote = len < 576 - 8 - 20 ? len : 576 - 8 - 20;
		tot = 20 + 8 + quote;
		memset(p, 0, 28);
		p[0] = 0x45;
		p[1] = 0xc0; /* internetwork control */
		p[2] = (uint8_t)(tot >> 8);
		p[3] = (uint8_t)tot;
		p[4] = (uint8_t)(w->icmp_ipid >> 8);
		p[5] = (uint8_t)w->icmp_ipid;
		w->icmp_ipid++;
		p[8] = 64;
		p[9] = IPPROTO_ICMP;
		memcpy(p + 16, l3 + 12, 4);
		p[20] = type;
		p[21] = code;
		memcpy(p + 24, &info, 4);
		memcpy(p + 28, l3, quote);
		if (!w->decap_sa)
			memcpy(p + 12, src->v4[0], 4);
	} else {
		/* RFC 4443 2.4 (c): as much as fits the IPv6 minimum MTU */
		quote = len < 1280 - 48 ? len : 1280 - 48;
		tot = 40 + 8 + quote;
		memset(p, 0, 48);
		p[0] = 0x60;
		p[4] = (uint8_t)((tot - 40) >> 8);
		p[5] = (uint8_t)(tot - 40);
		p[6] = IPPROTO_ICMPV6;
		p[7] = 64;
		memcpy(p + 24, l3 + 8, 16);
		p[40] = type;
		p[41] = code;
		memcpy(p + 44, &info, 4);
		memcpy(p + 48, l3, quote);
		if (!w->decap_sa)
			memcpy(p + 8, src->v6[0], 16);
	}
	if (w->decap_sa) {
		*via = icmp_decap_source(w, src, l3, p, tot);
		if (!*via) {
			DP_STAT(w, drops[SADB_DROP_ICMP_DECAP], 1);
			dp_frame_free(w, addr);
			return 0;
		}
	}
	icmp_csum(p, v4, tot);
	DP_STAT(w, icmp_sent, 1);
	*out = addr;
	return tot;
}

uint32_t dp_icmp_too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu,
			 uint64_t *addr, struct dp_sa **via)
{
	if ((l3[0] >> 4) == 4)
		return icmp_error(w, l3, len, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu & 0xffff, addr, via);
	return icmp_error(w, l3, len, ICMP6_PACKET_TOO_BIG, 0, mtu < 1280 ? 1280 : mtu, addr, via);
}

uint32_t dp_icmp_ttl(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint64_t *addr,
		     struct dp_sa **via)
{
	if ((l3[0] >> 4) == 4)
		return icmp_error(w, l3, len, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0, addr, via);
	return icmp_error(w, l3, len, ICMP6_TIME_EXCEEDED, ICMP6_TIME_EXCEED_TRANSIT, 0, addr, via);
}
