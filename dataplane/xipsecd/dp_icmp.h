/* dataplane/xipsecd/dp_icmp.h: which packets the dataplane may answer with an ICMP or ICMPv6 error (RFC 1812
 * §4.3.2.7, RFC 4443 §2.4 (e)): never about an error message, a non-first fragment, or a packet
 * whose source cannot take an answer (unspecified, loopback, multicast, broadcast, class E) or whose
 * destination was a multicast or broadcast address. Inline so the unit tests check the rule as
 * compiled into the workers. */
#ifndef XIPSEC_DP_ICMP_H
#define XIPSEC_DP_ICMP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline bool dp_icmp_v4_bad_addr(const uint8_t *a, bool src)
{
	uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];

	if (v == 0xffffffffu || (v >> 28) == 0xe) /* limited broadcast, multicast 224/4 */
		return true;
	if (!src)
		return false;
	return v == 0 || (v >> 24) == 0 || (v >> 24) == 127 || (v >> 28) == 0xf; /* this network,
	                                                                            * loopback, class E */
}

static inline bool dp_icmp_v6_bad_addr(const uint8_t *a, bool src)
{
	static const uint8_t zero[16], loop[16] = { [15] = 1 };

	if (a[0] == 0xff)
		return true; /* multicast */
	return src && (!memcmp(a, zero, 16) || !memcmp(a, loop, 16));
}

/* Whether the IP packet l3 (len bytes, at least its fixed header) may be answered with an error. */
static inline bool dp_icmp_may_answer(const uint8_t *l3, uint32_t len)
{
	if (len >= 20 && (l3[0] >> 4) == 4) {
		uint32_t ihl = (l3[0] & 0xfu) * 4;

		if (ihl < 20 || ihl > len)
			return false;
		if (((l3[6] & 0x1f) << 8 | l3[7]) != 0)
			return false; /* a non-first fragment */
		if (l3[9] == 1 /* ICMP */) {
			if (len < ihl + 1)
				return false;
			if (l3[ihl] != 8 && l3[ihl] != 0) /* only echo request/reply among ICMP */
				return false;
		}
		return !dp_icmp_v4_bad_addr(l3 + 12, true) && !dp_icmp_v4_bad_addr(l3 + 16, false);
	}
	if (len >= 40 && (l3[0] >> 4) == 6) {
		if (l3[6] == 58 /* ICMPv6 */ && (len < 41 || !(l3[40] & 0x80)))
			return false; /* an error message (types below 128) */
		return !dp_icmp_v6_bad_addr(l3 + 8, true) && !dp_icmp_v6_bad_addr(l3 + 24, false);
	}
	return false;
}

#endif
