/* bench/bench_pkt.h: the inner packet the in-memory benchmarks feed the engine: an IPv4/UDP datagram
 * of a given length between two addresses, header checksum set, payload a byte pattern (its UDP
 * checksum is left 0, which IPv4 allows). One definition, so the benchmarks measure the same packet. */
#ifndef XIPSEC_BENCH_PKT_H
#define XIPSEC_BENCH_PKT_H

#include <stdint.h>
#include <string.h>

#include "dataplane/engine/esp_ip.h"

/* len bytes at o (len >= 28): src and dst as four bytes each, ports in host order (0: left 0). */
static inline uint32_t bench_ipv4_udp(uint8_t *o, uint32_t len, const uint8_t src[4], const uint8_t dst[4],
				      uint16_t sport, uint16_t dport)
{
	memset(o, 0, 28);
	o[0] = 0x45;
	o[2] = (uint8_t)(len >> 8);
	o[3] = (uint8_t)len;
	o[6] = 0x40; /* DF */
	o[8] = 64;
	o[9] = 17;
	memcpy(o + 12, src, 4);
	memcpy(o + 16, dst, 4);
	esp_ip4_set_csum(o);
	o[20] = (uint8_t)(sport >> 8);
	o[21] = (uint8_t)sport;
	o[22] = (uint8_t)(dport >> 8);
	o[23] = (uint8_t)dport;
	o[24] = (uint8_t)((len - 20) >> 8);
	o[25] = (uint8_t)(len - 20);
	for (uint32_t i = 28; i < len; i++)
		o[i] = (uint8_t)i;
	return len;
}

#endif
