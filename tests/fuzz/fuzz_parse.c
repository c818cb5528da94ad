/* tests/fuzz/fuzz_parse.c: libFuzzer target for the engine's two parse helpers, esp_parse_outer (the
 * outer headers of a received packet, IPv6 extension headers, ESP-in-UDP, AH) and esp_pkt_sel (the
 * selector fields), on arbitrary bytes. Input: 2 bytes of encap port, then the packet. */
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint16_t port = (uint16_t)(data[0] << 8 | data[1]);
	size_t len = size - 2;
	uint8_t *pkt = malloc(len + 1); /* exactly the packet: ASan catches any overread */
	memcpy(pkt, data + 2, len);
	struct esp_outer o;
	enum sadb_drop r = esp_parse_outer(pkt, (uint32_t)len, port, &o);
	if (r == SADB_DROP_NONE) {
		uint32_t need = o.proto == SADB_PROTO_AH ? 12 : 8;
		if (o.l4_off > len || len - o.l4_off < need || (o.family != AF_INET && o.family != AF_INET6) ||
		    (o.proto != SADB_PROTO_ESP && o.proto != SADB_PROTO_AH)) {
			fprintf(stderr, "fuzz: esp_parse_outer accepted with l4_off %u proto %u family %u len %zu\n",
				o.l4_off, o.proto, o.family, len);
			abort();
		}
	} else if (r != SADB_DROP_TRUNCATED && r != SADB_DROP_BAD_ENCAP && r != SADB_DROP_UNSUPPORTED) {
		fprintf(stderr, "fuzz: esp_parse_outer returned %u\n", r);
		abort();
	}
	struct sadb_pkt_sel sel;
	r = esp_pkt_sel(pkt, (uint32_t)len, &sel);
	if (r != SADB_DROP_NONE && r != SADB_DROP_TRUNCATED)
		abort();
	free(pkt);
	return 0;
}
