/* dataplane/dp_pkt.c: frame bookkeeping of a worker (free pool, TX ring) and the ICMP errors the
 * gateway owes senders (time exceeded, fragmentation needed / packet too big). ICMP errors go out
 * through the kernel on raw sockets: it picks the source address, routes them back and resolves the
 * neighbour, and they are rare enough (rate limited) that the kernel's cost does not matter. */
#include "config.h"

#include <errno.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/ip_icmp.h>
#include <string.h>
#include <sys/socket.h>

#include "dataplane/dp.h"

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
	 * goes out now instead of one slice per loop (measured: TX ring overflows otherwise). */
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
		atomic_fetch_add_explicit(&w->st.drops[SADB_DROP_TX_FULL], 1, memory_order_relaxed);
		DP_SST_ADD(w, drops[SADB_DROP_TX_FULL], 1);
		dp_frame_free(w, addr);
		return false;
	}
put:
	xsk_ring_prod__tx_desc(&pt->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&pt->tx, idx)->len = len;
	xsk_ring_prod__tx_desc(&pt->tx, idx)->options = 0;
	xsk_ring_prod__submit(&pt->tx, 1);
	pt->tx_pending++;
	atomic_fetch_add_explicit(&w->st.tx[port], 1, memory_order_relaxed);
	DP_SST_ADD(w, tx_packets, 1);
	DP_SST_ADD(w, tx_bytes, len);
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

static uint16_t csum16(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t s = 0;

	for (; len > 1; len -= 2, p += 2)
		s += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Send an ICMP(v6) error about the packet at l3 to its source. type/code per family; `info` is the
 * 32-bit field after the checksum (next-hop MTU, pointer, unused). */
static void icmp_error(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint8_t type,
		       uint8_t code, uint32_t info)
{
	uint8_t msg[1280 - 40];     /* ICMPv6: up to the IPv6 minimum MTU (RFC 4443 2.4 c) */
	size_t quote;

	if (len < 20 || !icmp_allowed(w))
		return;
	if ((l3[0] >> 4) == 4) {
		/* byte access: frames put the IP header at a 2-byte boundary */
		struct sockaddr_in to = { .sin_family = AF_INET };
		uint32_t ihl = (l3[0] & 0xfu) * 4;

		memcpy(&to.sin_addr.s_addr, l3 + 12, 4);
		/* never about an ICMP error or a non-first fragment (RFC 1812 4.3.2.7) */
		if (l3[9] == IPPROTO_ICMP && len >= ihl + 1) {
			uint8_t t = l3[ihl];

			if (t != ICMP_ECHO && t != ICMP_ECHOREPLY)
				return;
		}
		if (((l3[6] & 0x1f) << 8 | l3[7]) != 0)
			return;
		/* RFC 1812 4.3.2.3: no more than 576 bytes in all */
		quote = len < 576 - 8 - 20 ? len : 576 - 8 - 20;
		memset(msg, 0, 8);
		msg[0] = type;
		msg[1] = code;
		info = htonl(info);
		memcpy(msg + 4, &info, 4);
		memcpy(msg + 8, l3, quote);
		uint16_t c = htons(csum16(msg, 8 + quote));
		memcpy(msg + 2, &c, 2);
		if (sendto(w->icmp4_fd, msg, 8 + quote, MSG_DONTWAIT, (struct sockaddr *)&to,
			   sizeof(to)) >= 0)
			atomic_fetch_add_explicit(&w->st.icmp_sent, 1, memory_order_relaxed);
	} else if ((l3[0] >> 4) == 6 && len >= 40) {
		struct sockaddr_in6 to = { .sin6_family = AF_INET6 };

		memcpy(&to.sin6_addr, l3 + 8, 16);
		if (l3[6] == IPPROTO_ICMPV6 && len >= 41 && !(l3[40] & 0x80))
			return; /* an ICMPv6 error itself */
		quote = len < 1280 - 48 ? len : 1280 - 48;
		if (quote > sizeof(msg) - 8)
			quote = sizeof(msg) - 8;
		memset(msg, 0, 8);
		msg[0] = type;
		msg[1] = code;
		info = htonl(info);
		memcpy(msg + 4, &info, 4);
		memcpy(msg + 8, l3, quote);
		/* the kernel computes the ICMPv6 checksum on raw ICMPv6 sockets */
		if (sendto(w->icmp6_fd, msg, 8 + quote, MSG_DONTWAIT, (struct sockaddr *)&to,
			   sizeof(to)) >= 0)
			atomic_fetch_add_explicit(&w->st.icmp_sent, 1, memory_order_relaxed);
	}
}

void dp_icmp_too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu)
{
	if ((l3[0] >> 4) == 4)
		icmp_error(w, l3, len, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED, mtu & 0xffff);
	else
		icmp_error(w, l3, len, ICMP6_PACKET_TOO_BIG, 0, mtu < 1280 ? 1280 : mtu);
}

void dp_icmp_ttl(struct dp_worker *w, const uint8_t *l3, uint32_t len)
{
	if ((l3[0] >> 4) == 4)
		icmp_error(w, l3, len, ICMP_TIME_EXCEEDED, ICMP_EXC_TTL, 0);
	else
		icmp_error(w, l3, len, ICMP6_TIME_EXCEEDED, ICMP6_TIME_EXCEED_TRANSIT, 0);
}
