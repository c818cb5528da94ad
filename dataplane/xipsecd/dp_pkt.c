/* dataplane/xipsecd/dp_pkt.c: frame bookkeeping of a worker (free pool, TX ring) and the ICMP errors the
 * gateway owes senders (time exceeded, fragmentation needed / packet too big), built here in frames
 * of the worker's own, rate limited; the forwarding stage (dp_fwd.c) sends them on. Nothing here
 * calls back into the packet path. */
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

/* Build an ICMP(v6) error about the packet at l3, to its source. type/code per family; `info` is the
 * 32-bit field after the checksum (next-hop MTU, pointer, unused). Returns its length (0: none).
 *
 * The error is built here as a packet in a frame of ours; the caller hands it to the forwarding path
 * like any packet that came from the outside (dp_fwd.c, FWD_SPD_OUT): if its way to the original sender leaves through the outside
 * interface it takes the outbound SPD lookup, so an error about a packet that came through a tunnel
 * goes back through the tunnel, protected (path MTU discovery then works from that side too), or is
 * dropped by policy; it never goes to a protected network in clear. Its source is the inside
 * interface's address, an address of the protected site, which the tunnel's selectors cover. */
static uint32_t icmp_error(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint8_t type,
			   uint8_t code, uint32_t info, uint64_t *out)
{
	const struct dp_srcaddr *src = &w->ctx->src[atomic_load_explicit(&w->ctx->src_cur,
									  memory_order_acquire)];
	uint64_t addr;
	uint8_t *p;
	uint32_t quote, tot;

	if (!dp_icmp_may_answer(l3, len))
		return 0;
	if (w->n_free <= DP_FRAME_RESERVE || !icmp_allowed(w))
		return 0;
	if ((l3[0] >> 4) == 4) {
		if (!src->has4)
			return 0;
		/* RFC 1812 4.3.2.3: no more than 576 bytes in all */
		quote = len < 576 - 8 - 20 ? len : 576 - 8 - 20;
		tot = 20 + 8 + quote;
		addr = dp_frame_take(w) + XDP_PACKET_HEADROOM + 14;
		p = (uint8_t *)w->umem_area + addr;
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
		memcpy(p + 12, src->v4, 4);
		memcpy(p + 16, l3 + 12, 4);
		uint16_t c = htons(esp_csum(p, 20));
		memcpy(p + 10, &c, 2);
		p[20] = type;
		p[21] = code;
		info = htonl(info);
		memcpy(p + 24, &info, 4);
		memcpy(p + 28, l3, quote);
		c = htons(esp_csum(p + 20, 8 + quote));
		memcpy(p + 22, &c, 2);
	} else {
		if (!src->has6)
			return 0;
		/* RFC 4443 2.4 (c): as much as fits the IPv6 minimum MTU */
		quote = len < 1280 - 48 ? len : 1280 - 48;
		tot = 40 + 8 + quote;
		addr = dp_frame_take(w) + XDP_PACKET_HEADROOM + 14;
		p = (uint8_t *)w->umem_area + addr;
		memset(p, 0, 48);
		p[0] = 0x60;
		p[4] = (uint8_t)((tot - 40) >> 8);
		p[5] = (uint8_t)(tot - 40);
		p[6] = IPPROTO_ICMPV6;
		p[7] = 64;
		memcpy(p + 8, src->v6, 16);
		memcpy(p + 24, l3 + 8, 16);
		p[40] = type;
		p[41] = code;
		info = htonl(info);
		memcpy(p + 44, &info, 4);
		memcpy(p + 48, l3, quote);
		/* checksum over the pseudo header (addresses, length, next header) and the message */
		uint32_t ml = 8 + quote;
		uint16_t c = htons(esp_csum_fold(esp_csum_add(esp_csum_add(ml + IPPROTO_ICMPV6, p + 8, 32), p + 40, ml)));
		memcpy(p + 42, &c, 2);
	}
	DP_STAT(w, icmp_sent, 1);
	*out = addr;
	return tot;
}

uint32_t dp_icmp_too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu,
			 uint64_t *addr)
{
	if ((l3[0] >> 4) == 4)
		return icmp_error(w, l3, len, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu & 0xffff, addr);
	return icmp_error(w, l3, len, ICMP6_PACKET_TOO_BIG, 0, mtu < 1280 ? 1280 : mtu, addr);
}

uint32_t dp_icmp_ttl(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint64_t *addr)
{
	if ((l3[0] >> 4) == 4)
		return icmp_error(w, l3, len, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0, addr);
	return icmp_error(w, l3, len, ICMP6_TIME_EXCEEDED, ICMP6_TIME_EXCEED_TRANSIT, 0, addr);
}
