/* tests/fuzz/fuzz_roundtrip.c: libFuzzer target for the outbound path and a differential round trip.
 * An arbitrary "inner" packet goes through an outbound SA (ESP or AH, tunnel or transport, ESN,
 * NAT-T, every backend): outbound parsing (IPv4 options, IPv6 extension header walk for the
 * transport split, AH mutable-field zeroing) sees hostile input. When the engine accepts it, the
 * protected packet goes through the matching inbound SA, which must accept it and give back the
 * same packet (the IPv4 header checksum aside, which transport decapsulation recomputes).
 * Input: cfg byte (bits 0-3 select any of the 16 transforms, ESP and AH), a flags byte (bit 0:
 * NAT-T for ESP), then the inner IP packet. */
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* FZ_BREAK=1: the runner's self-test: one bit of the protected packet's last byte is flipped in
	 * transit, so the round trip must fail and this harness must say so. */
	static int brk = -1;
	if (brk < 0)
		brk = getenv("FZ_BREAK") && atoi(getenv("FZ_BREAK")) == 1;
	if (size < 3 || size > 9000)
		return 0;
	unsigned xf = data[0] & 15;
	uint8_t proto = fz_xforms[xf].proto;
	struct fz_cfg f = fz_cfg(data[0], proto, proto == SADB_PROTO_ESP && (data[1] & 1));
	struct fz_slot *out = fz_get(&f, SADB_DIR_OUT);
	struct fz_slot *in = fz_get(&f, SADB_DIR_IN);
	const uint8_t *inner = data + 2;
	size_t len = size - 2;

	uint8_t *prot = NULL, *back = NULL;
	uint32_t plen = 0, blen = 0;
	unsigned d = fz_run(out->sa, inner, len, ESP_HEADROOM, ESP_TAILROOM + 4, &prot, &plen);
	if (d != SADB_DROP_NONE)
		return 0;
	if (brk && plen)
		prot[plen - 1] ^= 0x01;
	fz_reset_window(in->rt, 0);
	/* AH with ESN appends the high half after the packet for the ICV: 4 bytes of tailroom. */
	d = fz_run(in->sa, prot, plen, 0, 4, &back, &blen);
	/* A transport-mode fragment is protected as it is, but refused inbound (reassembly comes
	 * before the engine): the only drop allowed here. */
	if (d == SADB_DROP_UNSUPPORTED && !f.tunnel) {
		free(prot);
		return 0;
	}
	/* Transport ESP of a packet whose upper protocol is 59 (IPv6 No Next Header): the receiver must
	 * discard it as a dummy packet (RFC 4303 §2.6), so it cannot come back. */
	struct sadb_pkt_sel sel;
	if (d == SADB_DROP_BAD_NEXT_HDR && !f.tunnel && proto == SADB_PROTO_ESP &&
	    esp_pkt_sel(inner, (uint32_t)len, &sel) == SADB_DROP_NONE && sel.proto == 59) {
		free(prot);
		return 0;
	}
	uint32_t tl = (inner[0] >> 4) == 4 ? (uint32_t)(inner[2] << 8 | inner[3]) : 40u + (uint32_t)(inner[4] << 8 | inner[5]);
	int bad = d != SADB_DROP_NONE || blen != tl;
	if (!bad) {
		for (uint32_t i = 0; i < tl; i++)
			if (back[i] != inner[i] && !(!f.tunnel && (inner[0] >> 4) == 4 && (i == 10 || i == 11)))
				bad = 1;
	}
	if (bad) {
		fprintf(stderr, "fuzz: round trip failed (xform %u tunnel %d esn %d natt %d backend %d): inbound "
			"drop %u, %u bytes back for %u\n", xf, f.tunnel, f.esn, f.natt, (int)esp_sa_backend(out->sa),
			d, blen, tl);
		fz_hexdump("inner", inner, len);
		fz_hexdump("protected", prot, plen);
		if (back)
			fz_hexdump("back", back, blen);
		abort();
	}
	free(prot);
	free(back);
	return 0;
}
