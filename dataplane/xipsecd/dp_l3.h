/* dataplane/xipsecd/dp_l3.h: the IP rules every stage that sends a packet on applies, in one place
 * below the stages: the TTL / hop limit a router decrements (RFC 1812 section 5.3.1, RFC 8200
 * section 3), when a packet too big for the next MTU is refused with an ICMP error rather than cut
 * (DF set, or IPv6), and the cut itself (IPv4 without DF, RFC 791). The outbound stage (dp_out.c,
 * before protection) and the forwarding stage (dp_fwd.c, before sending) both call them; neither
 * sends the ICMP errors through here: the caller does, with the frame dp_pkt.c builds. Worker
 * threads only (dp_l3_cut takes frames of the worker's own). */
#ifndef XIPSEC_DP_L3_H
#define XIPSEC_DP_L3_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/xipsecd/dp.h"

/* Decrement the TTL (IPv4, its checksum updated incrementally, RFC 1624) or the hop limit (IPv6) of
 * the header at l3. False, with nothing changed, when it is 1 or 0: the packet expires here and its
 * source is owed "time exceeded". */
bool dp_l3_dec_ttl(uint8_t *l3);

/* Whether the packet at l3 (len bytes) is refused for the MTU mtu with "fragmentation needed" /
 * "packet too big" (RFC 1191, RFC 8201): larger than mtu and not to be cut (IPv6, or IPv4 with DF).
 * Not when it would expire here first (dec_ttl: it is forwarded, and its TTL is 1 or 0): then the
 * source is owed "time exceeded", which the TTL decrement answers. */
bool dp_l3_too_big(const uint8_t *l3, uint32_t len, uint32_t mtu, bool dec_ttl);

/* The fragments dp_l3_cut made: each in a frame of its own. */
struct dp_frags {
	uint64_t addr[DP_FRAG_MAX];
	uint32_t len[DP_FRAG_MAX];
};
/* Cut the IPv4 packet at src (len bytes, no DF) into fragments of at most mtu bytes; fragment 0 in
 * place when in_place (src is then frame memory at src_addr). Returns their number, or -reason
 * (SADB_DROP_*: the plan's, MTU when a fragment would not fit a frame, FRAG_NOBUF without the
 * frames). All fragments are written before any is handed on: encrypting fragment 0 in place would
 * overwrite the bytes of fragment 1 that follow it. */
int dp_l3_cut(struct dp_worker *w, const uint8_t *src, bool in_place, uint64_t src_addr, uint32_t len,
	      uint32_t mtu, struct dp_frags *f);

#endif
