/* dataplane/engine/esp_ip.h: the engine's IP header helpers that know nothing of an SA (esp_ip.c and
 * the inline ones the packet paths need): walking IPv4/IPv6 headers to where ESP/AH goes or is, the
 * traffic class byte, RFC 6040 ECN decapsulation and the transport checksums. Internal to the engine. */
#ifndef XIPSEC_ESP_IP_H
#define XIPSEC_ESP_IP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "dataplane/engine/crypto/esp_crypto.h"
#include "dataplane/engine/ip_bytes.h"

/* UDP checksum over an IPv6 pseudo header + UDP header + payload (udp points to the UDP header). */
uint16_t esp_udp6_csum(const uint8_t *ip6, const uint8_t *udp, unsigned udp_len);

/* Recompute the TCP/UDP checksum of the segment at ip + l4 (packet length len). */
void esp_l4_set_csum(uint8_t *ip, uint32_t l4, uint32_t len, uint8_t proto);
/* Length of an IP header chain before the point where ESP/AH goes in transport mode, and the offset
 * of the next-header byte to rewrite. Returns false if malformed. */
bool esp_transport_split(const uint8_t *pkt, uint32_t len, uint32_t *hdr_len, uint32_t *nh_off);
/* Walk the received IP packet to the ESP/AH/UDP header: offset of that header, offset of the byte
 * that names it, protocol. False if malformed. An IPv6 non-first fragment ends the walk at its
 * Fragment header: protocol is that header's next header, *frag is set. */
bool esp_find_l4(const uint8_t *pkt, uint32_t len, uint32_t *l4_off, uint32_t *nh_off, uint8_t *proto,
		 bool *frag);

/* RFC 6040 decapsulation: new inner ECN from outer and inner ECN; -1 = drop. */
int esp_ecn_decap(unsigned outer, unsigned inner);

/* Traffic class byte (DSCP+ECN) of an IP header, and set it (fixing the IPv4 checksum). */
static inline uint8_t esp_ip_tos(const uint8_t *ip)
{
	if ((ip[0] >> 4) == 4)
		return ip[1];
	return (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
}

static inline void esp_ip_set_tos(uint8_t *ip, uint8_t tos)
{
	if ((ip[0] >> 4) == 4) {
		if (ip[1] == tos)
			return;
		/* RFC 1624 incremental update of the header checksum (word 0 holds the TOS byte). */
		uint32_t sum = (uint16_t)~esp_rd16(ip + 10);
		sum += (uint16_t)~esp_rd16(ip);
		ip[1] = tos;
		sum += esp_rd16(ip);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		esp_wr16(ip + 10, (uint16_t)~sum);
		return;
	}
	ip[0] = (uint8_t)((ip[0] & 0xf0) | tos >> 4);
	ip[1] = (uint8_t)((ip[1] & 0x0f) | (tos & 0x0f) << 4);
}

/* Length of the IP packet at ip from its own header (IPv4 total length, IPv6 40 + payload length)
 * and its family; false if the len bytes there do not start with a well-formed IPv4/IPv6 header.
 * The bare IPv4 header, by far the most common, is tested first. */
static inline __attribute__((always_inline)) bool esp_ip_len(const uint8_t *ip, uint32_t len, uint32_t *out,
							     uint8_t *fam)
{
	if (len < 20)
		return false;
	if (ESP_LIKELY(ip[0] == 0x45)) {
		uint32_t tl = esp_rd16(ip + 2);
		if (tl < 20 || tl > len)
			return false;
		*out = tl;
		*fam = AF_INET;
		return true;
	}
	if ((ip[0] >> 4) == 4) {
		uint32_t tl = esp_rd16(ip + 2);
		if ((ip[0] & 0x0f) < 5 || tl < (ip[0] & 0x0fu) * 4u || tl > len)
			return false;
		*out = tl;
		*fam = AF_INET;
		return true;
	}
	if ((ip[0] >> 4) == 6 && len >= 40) {
		uint32_t tl = 40u + esp_rd16(ip + 4);
		if (tl > len)
			return false;
		*out = tl;
		*fam = AF_INET6;
		return true;
	}
	return false;
}

/* esp_find_l4 with the bare IPv4 header, by far the most common, inline. The call's results go
 * through temporaries so that the caller's variables stay in registers on the inline path. */
static inline __attribute__((always_inline)) bool esp_find_l4_fast(const uint8_t *ip, uint32_t len, uint32_t *l4_off,
								   uint32_t *nh_off, uint8_t *proto, bool *frag)
{
	if (ESP_LIKELY(ip[0] == 0x45)) {
		*l4_off = 20;
		*nh_off = 9;
		*proto = ip[9];
		*frag = (esp_rd16(ip + 6) & 0x3fff) != 0;
		return true;
	}
	uint32_t l4x, nhx;
	uint8_t px;
	bool fx;
	if (!esp_find_l4(ip, len, &l4x, &nhx, &px, &fx))
		return false;
	*l4_off = l4x, *nh_off = nhx, *proto = px, *frag = fx;
	return true;
}

/* Set the length fields of the IP header at ip for a packet of len bytes (IPv4: total length and
 * header checksum; IPv6: payload length); returns its family. */
static inline uint8_t esp_ip_set_len(uint8_t *ip, uint32_t len)
{
	if ((ip[0] >> 4) == 4) {
		esp_wr16(ip + 2, (uint16_t)len);
		esp_ip4_set_csum(ip);
		return AF_INET;
	}
	esp_wr16(ip + 4, (uint16_t)(len - 40));
	return AF_INET6;
}

/* Transport mode, both ways: the prefix bytes of IP headers move from src to dst (ESP/AH goes in
 * behind them, or comes out), the byte at nh_off names nh and the lengths say len bytes; returns
 * the family. */
static inline uint8_t esp_transport_move(uint8_t *dst, const uint8_t *src, uint32_t prefix, uint32_t nh_off,
					 uint8_t nh, uint32_t len)
{
	memmove(dst, src, prefix);
	dst[nh_off] = nh;
	return esp_ip_set_len(dst, len);
}

#endif
