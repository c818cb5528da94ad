/* dataplane/engine/ip_bytes.h: the dataplane's one set of big-endian byte accessors and its one
 * Internet checksum (RFC 1071), shared by the ESP/AH engine and xipsecd (fragmentation, ICMP errors).
 * Header-only and free of any engine type, so that a file of the daemon can use it without linking
 * libesp (tests/fuzz builds dp_frag.c alone). */
#ifndef XIPSEC_IP_BYTES_H
#define XIPSEC_IP_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Big-endian loads and stores as single unaligned accesses (the compiler emits movbe/bswap). */
static inline uint16_t esp_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return __builtin_bswap16(v);
}

static inline uint32_t esp_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}

static inline void esp_wr16(uint8_t *p, uint16_t v)
{
	v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
}

static inline void esp_wr32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

/* One 8-byte store: an IV written in halves and read back whole stalls store forwarding. */
static inline void esp_wr64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* One 16-byte store of bytes lo (0-7, little-endian) and hi (8-15): headers, IVs and nonces read
 * back by the crypto code in 12/16-byte loads must not be written in pieces (store forwarding). */
static inline void esp_st16(void *p, uint64_t lo, uint64_t hi)
{
#ifdef __SSE2__
	_mm_storeu_si128((__m128i *)p, _mm_set_epi64x((long long)hi, (long long)lo));
#else
	memcpy(p, &lo, 8);
	memcpy((uint8_t *)p + 8, &hi, 8);
#endif
}

/* One's complement sum of len bytes added to sum, in 16-bit big-endian words (an odd length only
 * for the last piece: its last byte is the high half of a word). */
static inline uint32_t esp_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (; len > 1; len -= 2, p += 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

/* The checksum of a sum: folded to 16 bits and complemented. */
static inline uint16_t esp_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Internet checksum of len bytes (0 over data that holds a correct checksum). */
static inline uint16_t esp_csum(const void *data, size_t len)
{
	return esp_csum_fold(esp_csum_add(0, data, len));
}

/* Recompute the IPv4 header checksum in place, over the header length its IHL gives. */
static inline void esp_ip4_set_csum(uint8_t *hdr)
{
	hdr[10] = hdr[11] = 0;
	esp_wr16(hdr + 10, esp_csum(hdr, (hdr[0] & 0x0fu) * 4u));
}

#endif
