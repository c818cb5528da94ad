/* tests/fuzz/fuzz_roundtrip.c: libFuzzer target for the outbound path and a differential round trip.
 * An arbitrary "inner" packet goes through an outbound SA (ESP or AH, tunnel or transport, ESN,
 * NAT-T, every backend): outbound parsing (IPv4 options, IPv6 extension header walk for the
 * transport split, AH mutable-field zeroing) sees hostile input. When the engine accepts it, the
 * protected packet goes through the matching inbound SA, which must accept it and give back the
 * same packet (the IPv4 header checksum aside, which transport decapsulation recomputes, and with
 * NAT-T the TCP/UDP checksum, which must then verify). With a path MTU, the MTU answer of a refused
 * packet is checked against the engine itself (see check_mtu).
 * Input: cfg byte (bits 0-3 select any of the 16 transforms, ESP and AH), a flags byte (bit 0:
 * NAT-T for ESP, bit 1: TFC padding to 200 bytes, bit 2: path MTU 1280, so outbound may refuse a
 * packet with SADB_DROP_MTU), then the inner IP packet. */
#include "tests/fuzz/fuzz_common.h"

/* What names the payload that starts at prefix (the protocol ESP was inserted in front of), or -1. */
static int next_at(const uint8_t *p, uint32_t len, uint32_t prefix)
{
	if ((p[0] >> 4) == 4)
		return p[9];
	uint32_t off = 40;
	int nh = p[6];
	while (off < prefix && off + 8 <= len) {
		uint32_t hl = nh == 44 ? 8 : (p[off + 1] + 1u) * 8u;
		nh = p[off];
		off += hl;
	}
	return off == prefix ? nh : -1;
}

/* Whether the TCP/UDP checksum of the segment at l4 verifies (RFC 768/793 pseudo header). */
static int l4_csum_ok(const uint8_t *p, uint32_t len, uint32_t l4, int proto)
{
	uint32_t s = 0, seg = len - l4;
	const uint8_t *a = (p[0] >> 4) == 4 ? p + 12 : p + 8;
	unsigned alen = (p[0] >> 4) == 4 ? 8 : 32;
	for (unsigned i = 0; i < alen; i += 2)
		s += (uint32_t)(a[i] << 8 | a[i + 1]);
	s += (seg >> 16) + (seg & 0xffff) + (uint32_t)proto;
	for (uint32_t i = 0; i + 1 < seg; i += 2)
		s += (uint32_t)(p[l4 + i] << 8 | p[l4 + i + 1]);
	if (seg & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

/* The same packet cut to n bytes, its IP length field saying so. */
static unsigned run_cut(struct esp_sa *sa, const uint8_t *inner, uint32_t n, int tfc)
{
	uint8_t *c = malloc(n + 1);
	memcpy(c, inner, n);
	if ((c[0] >> 4) == 4) {
		c[2] = (uint8_t)(n >> 8);
		c[3] = (uint8_t)n;
	} else {
		c[4] = (uint8_t)((n - 40) >> 8);
		c[5] = (uint8_t)(n - 40);
	}
	unsigned d = fz_run(sa, c, n, ESP_HEADROOM, ESP_TAILROOM + 4 + (tfc ? 200 : 0), NULL, NULL);
	free(c);
	return d;
}

/* With SADB_DROP_MTU the engine answers the largest packet that would have fitted (the caller sends
 * it back as ICMP "fragmentation needed"): the same packet cut to that size must not be refused for
 * its size (that would be a PMTU black hole), and one byte more must be. */
static void check_mtu(const struct fz_cfg *f, struct esp_sa *sa, const uint8_t *inner, size_t len, uint32_t m)
{
	uint32_t tl = (inner[0] >> 4) == 4 ? (uint32_t)(inner[2] << 8 | inner[3]) : 40u + (uint32_t)(inner[4] << 8 | inner[5]);
	if (tl > len)
		return;
	if (m >= tl) {
		fprintf(stderr, "fuzz: a %u-byte packet was refused for its size, answer %u\n", tl, m);
		abort();
	}
	if (m < 40)
		return;
	unsigned d1 = run_cut(sa, inner, m, f->tfc);
	unsigned d2 = m + 1 < tl ? run_cut(sa, inner, m + 1, f->tfc) : SADB_DROP_MTU;
	if (d1 == SADB_DROP_MTU || (d1 == SADB_DROP_NONE && d2 == SADB_DROP_NONE)) {
		fprintf(stderr, "fuzz: MTU answer %u for a %u-byte packet (xform %u tunnel %d natt %d): cut to %u it "
			"gets drop %u, to %u drop %u\n", m, tl, f->xf, f->tunnel, f->natt, m, d1, m + 1, d2);
		fz_hexdump("inner", inner, len);
		abort();
	}
}

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
	f.tfc = !!(data[1] & 2);
	f.mtu = !!(data[1] & 4);
	struct fz_slot *out = fz_get(&f, SADB_DIR_OUT);
	struct fz_slot *in = fz_get(&f, SADB_DIR_IN);
	const uint8_t *inner = data + 2;
	size_t len = size - 2;

	uint8_t *prot = NULL, *back = NULL;
	uint32_t plen = 0, blen = 0;
	unsigned d = fz_run(out->sa, inner, len, ESP_HEADROOM, ESP_TAILROOM + 4 + (f.tfc ? 200 : 0), &prot, &plen);
	if (d == SADB_DROP_MTU)
		check_mtu(&f, out->sa, inner, len, fz_last_mtu);
	if (d != SADB_DROP_NONE)
		return 0;
	if (f.mtu && plen > 1280) {
		fprintf(stderr, "fuzz: a %u-byte packet left an SA with path MTU 1280\n", plen);
		abort();
	}
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
	/* Transport mode with NAT-T: RFC 3948 §3.1.2, the receiver recomputes the TCP/UDP checksum
	 * (the NAT changed the addresses it covers): that checksum may differ but must verify. */
	uint32_t ck = UINT32_MAX;
	if (!bad && !f.tunnel && f.natt) {
		struct esp_outer o;
		if (esp_parse_outer(prot, plen, 4500, &o) == SADB_DROP_NONE && o.udp_encap) {
			uint32_t prefix = o.l4_off - 8;
			int nx = next_at(back, blen, prefix);
			uint32_t at = prefix + (nx == 6 ? 16u : 6u);
			if ((nx == 6 || nx == 17) && blen >= prefix + (nx == 6 ? 20u : 8u)) {
				ck = at;
				int zero_udp4 = nx == 17 && (back[0] >> 4) == 4 && !back[at] && !back[at + 1] &&
						!inner[at] && !inner[at + 1];
				if (!zero_udp4 && !l4_csum_ok(back, blen, prefix, nx)) {
					fprintf(stderr, "fuzz: transport NAT-T decapsulation left a wrong %s checksum\n",
						nx == 6 ? "TCP" : "UDP");
					bad = 1;
				}
			}
		}
	}
	if (!bad) {
		for (uint32_t i = 0; i < tl; i++)
			if (back[i] != inner[i] && !(!f.tunnel && (inner[0] >> 4) == 4 && (i == 10 || i == 11)) &&
			    i != ck && i != ck + 1)
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
