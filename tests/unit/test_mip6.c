/* tests/unit/test_mip6.c: unit tests of libmip6 (mobility/): the wire formats (Binding Update,
 * Acknowledgement and Error built and parsed back, a Binding Update scapy built and checksummed,
 * every drop reason of the parser on a packet broken in that one way), and the home agent's rules
 * (every status it answers with, every reason it drops for, the sequence window modulo 2^16, the
 * granted lifetime, the binding changes, the care-of address bound to the Binding Update, the move
 * bucket), with the binding cache compared before and after each negative case (unchanged) and the
 * counters checked; the cache's expiry against a naive model at 10,000 mobile nodes. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "mobility/mip6.h"
#include "mobility/mip6_ha.h"

static void A(uint8_t a[16], const char *s)
{
	assert_int_equal(inet_pton(AF_INET6, s, a), 1);
}

static const uint8_t *ad(const char *s)
{
	static uint8_t ring[16][16];
	static unsigned n;
	uint8_t *a = ring[n++ % 16];
	A(a, s);
	return a;
}

/* ---- wire formats ---- */

static int build_bu(uint8_t *buf, const char *src, const char *dst, const char *hoa, uint16_t seq,
		    uint16_t flags, uint16_t lifetime, const char *alt)
{
	struct mip6_bu bu = { .seq = seq, .flags = flags, .lifetime = lifetime };
	if (alt) {
		bu.has_alt_coa = true;
		A(bu.alt_coa, alt);
	}
	uint8_t s[16], d[16], h[16];
	A(s, src);
	A(d, dst);
	if (hoa)
		A(h, hoa);
	int n = mip6_build_bu(buf, MIP6_BU_MAX_LEN, s, d, hoa ? h : NULL, &bu);
	assert_true(n > 0);
	return n;
}

/* Recompute the MH checksum of a packet whose layout the test knows: the MH at mh_off, the
 * pseudo-header's source psrc (NULL: the IPv6 source) and destination pdst (NULL: IPv6 dst). */
static void refix(uint8_t *pkt, uint32_t mh_off, const uint8_t *psrc, const uint8_t *pdst)
{
	uint8_t *mh = pkt + mh_off;
	uint32_t mh_len = (mh[1] + 1u) * 8u;
	uint16_t c = mip6_mh_checksum(psrc ? psrc : pkt + 8, pdst ? pdst : pkt + 24, mh, mh_len);
	mh[4] = (uint8_t)(c >> 8);
	mh[5] = (uint8_t)c;
}

static void test_bu_roundtrip(void **state)
{
	(void)state;
	uint8_t b[MIP6_BU_MAX_LEN];
	struct mip6_pkt p;
	int n = build_bu(b, "2001:db8:1::5", "2001:db8::1", "2001:db8::99", 0xbeef,
			 MIP6_BU_A | MIP6_BU_H | MIP6_BU_K, 1234, "2001:db8:1::6");
	assert_int_equal(n, 40 + 24 + 32);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.mh_type, MIP6_MH_BU);
	assert_true(p.has_hao);
	assert_memory_equal(p.hoa, ad("2001:db8::99"), 16);
	assert_memory_equal(p.src, ad("2001:db8:1::5"), 16);
	assert_memory_equal(p.dst, ad("2001:db8::1"), 16);
	assert_false(p.has_rh2);
	assert_int_equal(p.mh_off, 64);
	assert_int_equal(p.mh_len, 32);
	assert_int_equal(p.m.bu.seq, 0xbeef);
	assert_int_equal(p.m.bu.flags, MIP6_BU_A | MIP6_BU_H | MIP6_BU_K);
	assert_int_equal(p.m.bu.lifetime, 1234);
	assert_true(p.m.bu.has_alt_coa);
	assert_memory_equal(p.m.bu.alt_coa, ad("2001:db8:1::6"), 16);

	/* No Home Address option, no Alternate Care-of Address: the source is the pseudo-header's. */
	n = build_bu(b, "2001:db8::99", "2001:db8::1", NULL, 1, MIP6_BU_H, 0, NULL);
	assert_int_equal(n, 40 + 16);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_false(p.has_hao);
	assert_false(p.m.bu.has_alt_coa);
	assert_int_equal(p.m.bu.lifetime, 0);

	/* Trailing bytes past the IPv6 payload length (Ethernet padding) are ignored. */
	uint8_t big[MIP6_BU_MAX_LEN + 8];
	memset(big, 0xee, sizeof(big));
	memcpy(big, b, (size_t)n);
	assert_int_equal(mip6_parse(big, (uint32_t)n + 8, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_build_bu(b, 40, p.src, p.dst, NULL, &p.m.bu), -ENOSPC);
}

/* A Binding Update as scapy 2.5.0 builds it (IPv6 / IPv6ExtHdrDestOpt(HAO) / MIP6MH_BU(seq=7,
 * flags=AH, mhtime=100, Alternate CoA)), with scapy's checksum 0x710e. */
static const char scapy_bu[] =
	"6000000000383c4020010db800010000000000000000000520010db8000000000000000000000001870201020000"
	"c91020010db80000000000000000000000993b030500710e0007c00000640100031020010db80001000000000000"
	"00000005";

static int unhex(const char *s, uint8_t *out)
{
	size_t n = strlen(s) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return (int)n;
}

static void test_scapy_vector(void **state)
{
	(void)state;
	uint8_t b[128];
	struct mip6_pkt p;
	int n = unhex(scapy_bu, b);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.m.bu.seq, 7);
	assert_int_equal(p.m.bu.flags, MIP6_BU_A | MIP6_BU_H);
	assert_int_equal(p.m.bu.lifetime, 100);
	assert_memory_equal(p.hoa, ad("2001:db8::99"), 16);
	assert_memory_equal(p.m.bu.alt_coa, ad("2001:db8:1::5"), 16);
	/* Our checksum of the same bytes is scapy's. */
	uint8_t *mh = b + p.mh_off;
	assert_int_equal(mip6_mh_checksum(p.hoa, p.dst, mh, p.mh_len), 0x710e);
	/* The pseudo-header's source is the home address, not the IPv6 source. */
	uint8_t c[128];
	memcpy(c, b, (size_t)n);
	c[8 + 15] ^= 1;  /* the IPv6 source is not covered when a HAO is present */
	assert_int_equal(mip6_parse(c, (uint32_t)n, &p), MIP6_DROP_NONE);
	c[40 + 8 + 15] ^= 1;  /* the home address is */
	assert_int_equal(mip6_parse(c, (uint32_t)n, &p), MIP6_DROP_BAD_CHECKSUM);
}

static void test_ba_roundtrip(void **state)
{
	(void)state;
	struct mip6_ba_params bp = { .rh2 = true, .status = MIP6_ST_SEQ_OUT_OF_WINDOW, .k = true,
				     .seq = 65535, .lifetime = 900, .refresh = 450 };
	A(bp.src, "2001:db8::1");
	A(bp.dst, "2001:db8:1::5");
	A(bp.hoa, "2001:db8::99");
	uint8_t b[MIP6_BA_MAX_LEN];
	struct mip6_pkt p;
	int n = mip6_build_ba(b, sizeof(b), &bp);
	assert_int_equal(n, 80);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.mh_type, MIP6_MH_BA);
	assert_true(p.has_rh2);
	assert_int_equal(p.rh2_segleft, 1);
	assert_memory_equal(p.rh2_addr, bp.hoa, 16);
	assert_memory_equal(p.dst, bp.dst, 16);
	assert_int_equal(p.m.ba.status, MIP6_ST_SEQ_OUT_OF_WINDOW);
	assert_int_equal(p.m.ba.flags, MIP6_BA_K);
	assert_int_equal(p.m.ba.seq, 65535);
	assert_int_equal(p.m.ba.lifetime, 900);
	assert_true(p.m.ba.has_refresh);
	assert_int_equal(p.m.ba.refresh, 450);
	/* The checksum is over the home address as destination: the same bytes with segments left 0
	 * (final destination = the IPv6 destination) fail it. */
	b[40 + 3] = 0;
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_BAD_CHECKSUM);

	/* To the home address itself: no routing header, no refresh advice, PadN. */
	bp.rh2 = false;
	bp.refresh = 0;
	bp.k = false;
	memcpy(bp.dst, bp.hoa, 16);
	n = mip6_build_ba(b, sizeof(b), &bp);
	assert_int_equal(n, 56);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_false(p.has_rh2);
	assert_false(p.m.ba.has_refresh);
	assert_int_equal(p.m.ba.flags, 0);
	assert_int_equal(mip6_build_ba(b, 79, &(struct mip6_ba_params){ .rh2 = true }), -ENOSPC);
}

static void test_be_roundtrip(void **state)
{
	(void)state;
	struct mip6_be_params e = { .status = MIP6_BE_UNKNOWN_MH_TYPE };
	A(e.src, "2001:db8::1");
	A(e.dst, "2001:db8:1::5");
	A(e.hoa, "2001:db8::99");
	uint8_t b[MIP6_BE_MAX_LEN];
	struct mip6_pkt p;
	int n = mip6_build_be(b, sizeof(b), &e);
	assert_int_equal(n, 64);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.mh_type, MIP6_MH_BE);
	assert_int_equal(p.m.be.status, MIP6_BE_UNKNOWN_MH_TYPE);
	assert_memory_equal(p.m.be.hoa, e.hoa, 16);
	assert_int_equal(mip6_build_be(b, 63, &e), -ENOSPC);
}

/* A packet assembled by hand: IPv6 + the given extension header bytes + an MH, checksum fixed. */
struct hand {
	uint8_t b[512];
	uint32_t len, mh_off;
};

static void hand_init(struct hand *h, uint8_t first_nh, const uint8_t *ext, uint32_t ext_len,
		      const uint8_t *mh, uint32_t mh_len)
{
	memset(h, 0, sizeof(*h));
	h->b[0] = 0x60;
	h->b[4] = (uint8_t)((ext_len + mh_len) >> 8);
	h->b[5] = (uint8_t)(ext_len + mh_len);
	h->b[6] = first_nh;
	h->b[7] = 64;
	A(h->b + 8, "2001:db8:1::5");
	A(h->b + 24, "2001:db8::1");
	if (ext_len)
		memcpy(h->b + 40, ext, ext_len);
	if (mh_len)
		memcpy(h->b + 40 + ext_len, mh, mh_len);
	h->mh_off = 40 + ext_len;
	h->len = 40 + ext_len + mh_len;
}

/* A plain BU message (16 bytes: header, seq 1, H, lifetime 10, PadN 4). */
static const uint8_t plain_mh[16] = { 59, 1, 5, 0, 0, 0, 0, 1, 0x40, 0, 0, 10, 1, 2, 0, 0 };

static enum mip6_drop parse_hand(struct hand *h, const uint8_t *psrc, const uint8_t *pdst)
{
	struct mip6_pkt p;
	if (h->mh_off + 6 <= sizeof(h->b) && h->b[h->mh_off + 1] < 40)
		refix(h->b, h->mh_off, psrc, pdst);
	return mip6_parse(h->b, h->len, &p);
}

static void test_parse_drops(void **state)
{
	(void)state;
	struct hand h;
	struct mip6_pkt p;
	uint8_t hoa[16];
	A(hoa, "2001:db8::99");

	/* the baseline passes */
	hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 16);
	assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_NONE);

	/* truncated: short IPv6 header, payload length beyond the buffer, an extension header
	 * beyond the payload, an MH shorter than its first 6 bytes */
	assert_int_equal(mip6_parse(h.b, 39, &p), MIP6_DROP_TRUNCATED);
	assert_int_equal(mip6_parse(h.b, h.len - 1, &p), MIP6_DROP_TRUNCATED);
	{
		uint8_t dopt[8] = { MIP6_PROTO_MH, 1, 1, 4, 0, 0, 0, 0 };  /* claims 16 bytes, has 8 */
		hand_init(&h, 60, dopt, 8, NULL, 0);
		assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_TRUNCATED);
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 5);
		assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_TRUNCATED);
	}
	/* not IPv6 */
	hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 16);
	h.b[0] = 0x45;
	assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_NOT_IPV6);
	/* bad extension headers: hop-by-hop after a destination options header; two routing
	 * headers; an option overrunning its header */
	{
		uint8_t e[16] = { 0, 0, 1, 4, 0, 0, 0, 0, MIP6_PROTO_MH, 0, 1, 4, 0, 0, 0, 0 };
		hand_init(&h, 60, e, 16, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_EXT_HDR);
		uint8_t r[16] = { 43, 0, 0, 0, 0, 0, 0, 0, MIP6_PROTO_MH, 0, 0, 0, 0, 0, 0, 0 };
		hand_init(&h, 43, r, 16, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_EXT_HDR);
		uint8_t o[8] = { MIP6_PROTO_MH, 0, 1, 5, 0, 0, 0, 0 };
		hand_init(&h, 60, o, 8, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_EXT_HDR);
		/* and hop-by-hop first is fine */
		uint8_t hbh[8] = { MIP6_PROTO_MH, 0, 1, 4, 0, 0, 0, 0 };
		hand_init(&h, 0, hbh, 8, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_NONE);
	}
	/* a fragment */
	{
		uint8_t f[8] = { MIP6_PROTO_MH, 0, 0, 1, 0, 0, 0, 1 };
		hand_init(&h, 44, f, 8, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_FRAGMENT);
	}
	/* an unknown destination option that says "discard"; one that says "skip" passes */
	{
		uint8_t o[8] = { MIP6_PROTO_MH, 0, 0x82, 4, 0, 0, 0, 0 };
		hand_init(&h, 60, o, 8, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_IPV6_OPT);
		o[2] = 0x1e;
		hand_init(&h, 60, o, 8, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_NONE);
		/* option 201 in hop-by-hop is not a HAO: an unknown "discard" option there */
		uint8_t hb[24] = { MIP6_PROTO_MH, 2, 1, 2, 0, 0, 201, 16 };
		memcpy(hb + 8, hoa, 16);
		hand_init(&h, 0, hb, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_BAD_IPV6_OPT);
	}
	/* Home Address option: good, wrong length, misaligned, twice, before a routing header */
	{
		uint8_t d[24] = { MIP6_PROTO_MH, 2, 1, 2, 0, 0, 201, 16 };
		memcpy(d + 8, hoa, 16);
		hand_init(&h, 60, d, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_NONE);
		uint8_t l[24] = { MIP6_PROTO_MH, 2, 1, 3, 0, 0, 0, 201, 15 };
		memcpy(l + 9, hoa, 15);
		hand_init(&h, 60, l, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_BAD_HAO);
		uint8_t m[24] = { MIP6_PROTO_MH, 2, 1, 0, 201, 16 };  /* at offset 4 */
		memcpy(m + 6, hoa, 16);
		m[22] = 1;
		m[23] = 0;
		hand_init(&h, 60, m, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_BAD_HAO);
		uint8_t t[48] = { MIP6_PROTO_MH, 5, 1, 2, 0, 0, 201, 16 };
		memcpy(t + 8, hoa, 16);
		t[24] = 1; t[25] = 4;      /* PadN 6 bytes: the second HAO at 30 = 8n+6 */
		t[30] = 201; t[31] = 16;
		memcpy(t + 32, hoa, 16);
		hand_init(&h, 60, t, 48, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_BAD_HAO);
		uint8_t b4[48] = { 43, 2, 1, 2, 0, 0, 201, 16 };
		memcpy(b4 + 8, hoa, 16);
		b4[24] = MIP6_PROTO_MH; b4[25] = 2; b4[26] = 2; b4[27] = 0;  /* RH2, segments left 0 */
		memcpy(b4 + 32, hoa, 16);
		hand_init(&h, 60, b4, 48, plain_mh, 16);
		assert_int_equal(parse_hand(&h, hoa, NULL), MIP6_DROP_BAD_HAO);
	}
	/* a home address that is not unicast routable */
	{
		static const char *const bad[] = { "ff02::1", "fe80::1", "::", "::1" };
		for (unsigned i = 0; i < 4; i++) {
			uint8_t d[24] = { MIP6_PROTO_MH, 2, 1, 2, 0, 0, 201, 16 };
			A(d + 8, bad[i]);
			hand_init(&h, 60, d, 24, plain_mh, 16);
			assert_int_equal(parse_hand(&h, d + 8, NULL), MIP6_DROP_HAO_NOT_UNICAST);
		}
	}
	/* type 2 routing header: good, wrong length, segments left 2, multicast address; another
	 * routing type with segments left; with none left it is ignored */
	{
		uint8_t r[24] = { MIP6_PROTO_MH, 2, 2, 1 };
		memcpy(r + 8, hoa, 16);
		hand_init(&h, 43, r, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, hoa), MIP6_DROP_NONE);
		uint8_t r4[40] = { MIP6_PROTO_MH, 4, 2, 1 };
		memcpy(r4 + 8, hoa, 16);
		hand_init(&h, 43, r4, 40, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, hoa), MIP6_DROP_BAD_RH2);
		r[3] = 2;
		hand_init(&h, 43, r, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, hoa), MIP6_DROP_BAD_RH2);
		r[3] = 1;
		A(r + 8, "ff0e::1");
		hand_init(&h, 43, r, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, r + 8), MIP6_DROP_BAD_RH2);
		uint8_t r0[24] = { MIP6_PROTO_MH, 2, 0, 1 };
		memcpy(r0 + 8, hoa, 16);
		hand_init(&h, 43, r0, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, hoa), MIP6_DROP_BAD_ROUTING_HDR);
		r0[3] = 0;
		hand_init(&h, 43, r0, 24, plain_mh, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_NONE);
	}
	/* not a Mobility Header: UDP, ESP (not decrypted), no next header */
	{
		static const uint8_t nhs[] = { 17, 50, 51, 59, 58 };
		for (unsigned i = 0; i < sizeof(nhs); i++) {
			hand_init(&h, nhs[i], NULL, 0, plain_mh, 16);
			assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_NOT_MH);
		}
	}
	/* header length: beyond the payload; below the type's minimum (a BU of 8 bytes) */
	{
		uint8_t m[16];
		memcpy(m, plain_mh, 16);
		m[1] = 2;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 16);
		assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_BAD_HDR_LEN);
		m[1] = 0;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 8);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_HDR_LEN);
		/* bytes after the MH inside the payload are ignored (Payload Proto 59) */
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 16);
		h.b[5] += 8;
		h.len += 8;
		refix(h.b, h.mh_off, NULL, NULL);
		assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_NONE);
		assert_int_equal(p.mh_len, 16);
	}
	/* checksum: one flipped bit anywhere in the MH or the addresses */
	for (unsigned i = 0; i < 16; i++) {
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 16);
		refix(h.b, h.mh_off, NULL, NULL);
		h.b[h.mh_off + i] ^= 0x10;
		if (i == 1)
			continue;  /* the header length: a different failure */
		assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_BAD_CHECKSUM);
	}
	hand_init(&h, MIP6_PROTO_MH, NULL, 0, plain_mh, 16);
	refix(h.b, h.mh_off, NULL, NULL);
	h.b[24 + 15] ^= 1;
	assert_int_equal(mip6_parse(h.b, h.len, &p), MIP6_DROP_BAD_CHECKSUM);
	/* payload proto */
	{
		uint8_t m[16];
		memcpy(m, plain_mh, 16);
		m[0] = 6;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_PAYLOAD_PROTO);
		m[0] = 59;
		m[2] = 8;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_UNKNOWN_MH_TYPE);
		m[2] = 255;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 16);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_UNKNOWN_MH_TYPE);
	}
	/* mobility options */
	{
		uint8_t m[32] = { 59, 3, 5, 0, 0, 0, 0, 1, 0x40, 0, 0, 10 };
		/* Alternate CoA at 12: misaligned (then PadN 2 to 32) */
		m[12] = 3; m[13] = 16; memcpy(m + 14, hoa, 16); m[30] = 1; m[31] = 0;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION_ALIGN);
		/* Alternate CoA of 15 bytes */
		memset(m + 12, 0, 20);
		m[12] = 1; m[13] = 0; m[14] = 3; m[15] = 15;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		/* an option running past the message */
		memset(m + 12, 0, 20);
		m[12] = 1; m[13] = 30;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		/* a type byte as the last byte, with no length */
		memset(m + 12, 0, 20);
		m[31] = 1;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		/* a Binding Refresh Advice of 3 bytes; one at an odd offset */
		memset(m + 12, 0, 20);
		m[12] = 2; m[13] = 3;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		memset(m + 12, 0, 20);
		m[13] = 2; m[14] = 2;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION_ALIGN);
		/* nonce indices of 3 bytes */
		memset(m + 12, 0, 20);
		m[12] = 4; m[13] = 3;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		/* two Alternate CoAs */
		uint8_t m2[56] = { 59, 6, 5, 0, 0, 0, 0, 1, 0x40, 0, 0, 10, 1, 0, 3, 16 };
		memcpy(m2 + 16, hoa, 16);
		m2[32] = 1; m2[33] = 4;       /* PadN 6: next at 38 = 8n+6 */
		m2[38] = 3; m2[39] = 16;
		memcpy(m2 + 40, hoa, 16);
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m2, 56);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_BAD_OPTION);
		/* an unknown option (type 42) is skipped; Pad1s are fine */
		memset(m + 12, 0, 20);
		m[12] = 42; m[13] = 6; m[20] = 0; m[21] = 1; m[22] = 8;
		hand_init(&h, MIP6_PROTO_MH, NULL, 0, m, 32);
		assert_int_equal(parse_hand(&h, NULL, NULL), MIP6_DROP_NONE);
	}
	/* every drop reason has its own name */
	for (unsigned i = 0; i < MIP6_DROP_MAX; i++) {
		assert_string_not_equal(mip6_drop_name(i), "?");
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(mip6_drop_name(i), mip6_drop_name(j));
	}
	assert_string_equal(mip6_drop_name(MIP6_DROP_MAX), "?");
	assert_string_equal(mip6_status_name(135), "sequence-number-out-of-window");
	assert_string_equal(mip6_status_name(7), "unknown");
	assert_string_equal(mip6_mh_type_name(5), "binding-update");
	assert_string_equal(mip6_mh_type_name(9), "unknown");
	assert_true(mip6_addr_unicast_routable(ad("2001:db8::1")));
	assert_false(mip6_addr_unicast_routable(ad("fe80::1")));
}

/* Random bytes and random mutations of a good Binding Update never crash the parser (ASan) and,
 * when accepted, give an MH inside the packet. */
static void test_parse_mutations(void **state)
{
	(void)state;
	uint8_t good[MIP6_BU_MAX_LEN], b[MIP6_BU_MAX_LEN];
	int n = build_bu(good, "2001:db8:1::5", "2001:db8::1", "2001:db8::99", 3, MIP6_BU_H, 9,
			 "2001:db8:1::5");
	srand(6275);
	for (int it = 0; it < 200000; it++) {
		memcpy(b, good, (size_t)n);
		int k = 1 + rand() % 4;
		for (int j = 0; j < k; j++)
			b[rand() % n] = (uint8_t)rand();
		uint32_t len = (uint32_t)(rand() % 8 ? n : rand() % (n + 1));
		uint8_t *heap = malloc(len ? len : 1);
		memcpy(heap, b, len);
		struct mip6_pkt p;
		if (mip6_parse(heap, len, &p) == MIP6_DROP_NONE)
			assert_true(p.mh_off + p.mh_len <= len);
		free(heap);
	}
}

/* ---- the home agent ---- */

#define HA1 "2001:db8::1"
#define HA2 "2001:db8::2"
#define HA3 "2001:db8:f::1"  /* an address of the home agent outside the home prefixes */
#define MN_A "2001:db8::100"   /* SAs 11 (BU in) 12 (BA out) */
#define MN_B "2001:db8::101"   /* 21, 22 */
#define MN_OFF "2001:db8::102" /* disabled, 31 */
#define MN_OUT "2001:db9::5"   /* outside the home prefixes, 41 */
#define MN_HA2 "2001:db8:2::7" /* served by HA2 only, 51 */
#define COA1 "2001:db8:77::5"
#define COA2 "2001:db8:88::6"

/* The caller's stable storage of sequence numbers (mip6_ha_config.seq_store), as a test sees it. */
static struct {
	int fail;         /* what the next stores return */
	unsigned n;
	uint16_t last;
	uint8_t hoa[16];
} store;

static int store_seq(void *arg, const uint8_t hoa[16], uint16_t seq)
{
	assert_ptr_equal(arg, &store);
	if (store.fail)
		return store.fail;
	store.n++;
	store.last = seq;
	memcpy(store.hoa, hoa, 16);
	return 0;
}

static struct mip6_ha *mk_ha(uint32_t max_bindings, bool kmm, uint32_t refresh_s)
{
	struct mip6_ha_config c;
	memset(&c, 0, sizeof(c));
	A(c.ha_addrs[0], HA1);
	A(c.ha_addrs[1], HA2);
	A(c.ha_addrs[2], HA3);
	c.n_ha_addrs = 3;
	A(c.prefixes[0].addr, "2001:db8::");
	c.prefixes[0].len = 64;
	A(c.prefixes[1].addr, "2001:db8:2::");
	c.prefixes[1].len = 48;
	c.n_prefixes = 2;
	c.max_lifetime_s = 3600;
	c.refresh_s = refresh_s;
	c.max_mns = 16;
	c.max_bindings = max_bindings;
	c.key_mgmt_mobility = kmm;
	c.hash_seed = 0x5eed;
	c.seq_store = store_seq;
	c.seq_arg = &store;
	struct mip6_ha *ha;
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	struct { const char *hoa; uint32_t sa; bool off; const char *ha; } mns[] = {
		{ MN_A, 11, false, NULL }, { MN_B, 21, false, NULL }, { MN_OFF, 31, true, NULL },
		{ MN_OUT, 41, false, NULL }, { MN_HA2, 51, false, HA2 },
	};
	for (unsigned i = 0; i < 5; i++) {
		struct mip6_mn m = { .bu_sa = mns[i].sa, .ba_sa = mns[i].sa + 1, .tun_out_sa = mns[i].sa + 2,
				     .tun_in_sa = mns[i].sa + 3, .disabled = mns[i].off };
		A(m.hoa, mns[i].hoa);
		if (mns[i].ha)
			A(m.ha_addr, mns[i].ha);
		assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	}
	return ha;
}

struct bu_args {
	const char *src, *dst, *hoa, *alt;
	uint16_t seq, flags, lifetime;
	uint32_t sa;
	uint64_t now;
};

/* A Binding Update from MN_A at COA1 (HAO, Alternate CoA), overridden by the fields given. */
static void send_bu(struct mip6_ha *ha, struct bu_args a, struct mip6_ha_result *r)
{
	uint8_t b[MIP6_BU_MAX_LEN];
	const char *hoa = a.hoa ? a.hoa : MN_A;
	const char *src = a.src ? a.src : COA1;
	int n = build_bu(b, src, a.dst ? a.dst : HA1, strcmp(hoa, src) ? hoa : NULL, a.seq,
			 a.flags ? a.flags : (MIP6_BU_A | MIP6_BU_H), a.lifetime,
			 a.alt ? (a.alt[0] ? a.alt : NULL) : src);
	mip6_ha_input(ha, b, (uint32_t)n, a.sa ? a.sa : 11, a.now, r);
}

/* The whole cache as a comparable value. */
struct snap {
	unsigned n;
	struct mip6_binding b[16];
};

static int cmp_b(const void *x, const void *y)
{
	return memcmp(((const struct mip6_binding *)x)->hoa, ((const struct mip6_binding *)y)->hoa, 16);
}

static void snap_one(const struct mip6_binding *b, void *arg)
{
	struct snap *s = arg;
	s->b[s->n++] = *b;
}

static void snap(const struct mip6_ha *ha, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	unsigned n = mip6_ha_foreach(ha, snap_one, s);
	assert_int_equal(n, s->n);
	assert_int_equal(n, mip6_ha_count(ha));
	qsort(s->b, s->n, sizeof(s->b[0]), cmp_b);
}

static void assert_totals(const struct mip6_ha *ha)
{
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);
	assert_int_equal(st->bu_received, st->bu_accepted + st->bu_rejected + st->dropped);
	uint64_t r = 0, d = 0, w = 0;
	for (unsigned i = 0; i < 256; i++)
		r += st->rejected[i];
	for (unsigned i = 0; i < MIP6_DROP_MAX; i++)
		d += st->drops[i];
	for (unsigned i = 0; i < MIP6_REJECT_MAX; i++)
		w += st->reject_why[i];
	assert_int_equal(r, st->bu_rejected);
	assert_int_equal(d, st->dropped);
	assert_int_equal(w, st->bu_rejected);
	assert_int_equal(st->reject_why[MIP6_REJECT_NONE], 0);
}

static void test_ha_register(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);

	/* new: lifetime 100 units (400 s) is below the maximum */
	send_bu(ha, (struct bu_args){ .seq = 10, .lifetime = 100, .now = 1000 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.ba.status, MIP6_ST_ACCEPTED);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	assert_int_equal(r.lifetime_s, 400);
	assert_int_equal(r.ba.lifetime, 100);
	assert_int_equal(r.ba.seq, 10);
	assert_false(r.ba.k);
	assert_int_equal(r.ba.refresh, 0);
	assert_memory_equal(r.ba.src, ad(HA1), 16);
	assert_memory_equal(r.ba.dst, ad(COA1), 16);
	assert_true(r.ba.rh2);
	assert_memory_equal(r.ba.hoa, ad(MN_A), 16);
	assert_memory_equal(r.hoa, ad(MN_A), 16);
	assert_memory_equal(r.coa, ad(COA1), 16);
	assert_non_null(r.mn);
	assert_int_equal(r.mn->ba_sa, 12);
	assert_int_equal(r.mn->tun_out_sa, 13);
	const struct mip6_binding *b = mip6_ha_lookup(ha, ad(MN_A));
	assert_non_null(b);
	assert_memory_equal(b->coa, ad(COA1), 16);
	assert_int_equal(b->seq, 10);
	assert_int_equal(b->lifetime_s, 400);
	assert_int_equal(b->created_ms, 1000);
	assert_int_equal(b->expires_ms, 1000 + 400000);
	assert_int_equal(b->bu_flags, MIP6_BU_A | MIP6_BU_H);
	assert_ptr_equal(b->mn, r.mn);
	assert_int_equal(mip6_ha_count(ha), 1);
	assert_null(mip6_ha_lookup(ha, ad(MN_B)));

	/* the BA built from it is what the result says */
	uint8_t ba[MIP6_BA_MAX_LEN];
	struct mip6_pkt p;
	int n = mip6_ha_build_ba(ha, &r, ba, sizeof(ba));
	assert_int_equal(n, 80);
	assert_int_equal(mip6_parse(ba, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.mh_type, MIP6_MH_BA);
	assert_int_equal(p.m.ba.status, 0);
	assert_int_equal(p.m.ba.seq, 10);
	assert_int_equal(p.m.ba.lifetime, 100);
	assert_memory_equal(p.rh2_addr, ad(MN_A), 16);
	assert_memory_equal(p.dst, ad(COA1), 16);
	assert_memory_equal(p.src, ad(HA1), 16);
	assert_int_equal(st->ba_sent, 1);

	/* refresh: same care-of address, the lifetime capped at the maximum (3600 s = 900 units);
	 * the A bit clear still gets a BA (§10.3.1) */
	send_bu(ha, (struct bu_args){ .seq = 11, .flags = MIP6_BU_H, .lifetime = 65535, .now = 2000 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.change, MIP6_CHANGE_REFRESH);
	assert_int_equal(r.lifetime_s, 3600);
	assert_int_equal(r.ba.lifetime, 900);
	b = mip6_ha_lookup(ha, ad(MN_A));
	assert_int_equal(b->created_ms, 1000);
	assert_int_equal(b->updated_ms, 2000);
	assert_int_equal(b->expires_ms, 2000 + 3600000);

	/* move: from the new care-of address, named in the Alternate CoA option; the BA goes there */
	send_bu(ha, (struct bu_args){ .src = COA2, .seq = 12, .lifetime = 10, .now = 3000 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_MOVE);
	assert_memory_equal(r.old_coa, ad(COA1), 16);
	assert_memory_equal(r.coa, ad(COA2), 16);
	assert_memory_equal(r.ba.dst, ad(COA2), 16);
	assert_memory_equal(mip6_ha_lookup(ha, ad(MN_A))->coa, ad(COA2), 16);
	/* and back */
	send_bu(ha, (struct bu_args){ .src = COA1, .seq = 13, .lifetime = 10, .now = 3100 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_MOVE);
	assert_memory_equal(mip6_ha_lookup(ha, ad(MN_A))->coa, ad(COA1), 16);

	/* delete with lifetime 0 */
	send_bu(ha, (struct bu_args){ .seq = 14, .lifetime = 0, .now = 4000 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.ba.status, 0);
	assert_int_equal(r.change, MIP6_CHANGE_DELETE);
	assert_memory_equal(r.old_coa, ad(COA1), 16);
	assert_int_equal(r.lifetime_s, 0);
	assert_int_equal(r.ba.lifetime, 0);
	assert_null(mip6_ha_lookup(ha, ad(MN_A)));
	assert_int_equal(mip6_ha_count(ha), 0);

	/* delete from home: source = home address, no HAO; the BA goes to the home address
	 * directly, without a routing header */
	send_bu(ha, (struct bu_args){ .seq = 15, .lifetime = 50, .now = 5000 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	send_bu(ha, (struct bu_args){ .src = MN_A, .seq = 16, .lifetime = 50, .now = 6000 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.change, MIP6_CHANGE_DELETE);
	assert_false(r.ba.rh2);
	assert_memory_equal(r.ba.dst, ad(MN_A), 16);
	n = mip6_ha_build_ba(ha, &r, ba, sizeof(ba));
	assert_int_equal(n, 56);
	assert_int_equal(mip6_parse(ba, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_false(p.has_rh2);

	/* after the binding is gone the sequence number starts afresh (§9.5.1: no previous one) */
	send_bu(ha, (struct bu_args){ .seq = 3, .lifetime = 50, .now = 7000 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);

	assert_int_equal(st->bu_accepted, 8);
	assert_int_equal(st->bindings_added, 3);
	assert_int_equal(st->bindings_refreshed, 1);
	assert_int_equal(st->bindings_moved, 2);
	assert_int_equal(st->bindings_deleted, 2);
	assert_int_equal(st->ba_sent, 2);
	assert_totals(ha);
	mip6_ha_destroy(ha);
}

static void test_ha_seq_window(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;
	struct snap before, after;
	send_bu(ha, (struct bu_args){ .seq = 65530, .lifetime = 10 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	/* equal, older, and exactly half the space ahead: out of window, with the last accepted */
	static const uint16_t bad[] = { 65530, 65529, (uint16_t)(65530 + 32768), (uint16_t)(65530 + 40000), 0 };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snap(ha, &before);
		uint64_t n135 = mip6_ha_stats(ha)->rejected[135];
		send_bu(ha, (struct bu_args){ .seq = bad[i], .lifetime = 10, .now = 10 }, &r);
		if (bad[i] == 0)
			continue;  /* 0 is ahead of 65530 (wraps): accepted below */
		assert_int_equal(r.drop, MIP6_DROP_NONE);
		assert_int_equal(r.ba.status, MIP6_ST_SEQ_OUT_OF_WINDOW);
		assert_int_equal(r.ba.seq, 65530);
		assert_int_equal(r.ba.lifetime, 0);
		assert_int_equal(r.change, MIP6_CHANGE_NONE);
		assert_int_equal(mip6_ha_stats(ha)->rejected[135], n135 + 1);
		snap(ha, &after);
		assert_memory_equal(&before, &after, sizeof(before));
	}
	/* 0 was accepted (65530 + 6 modulo 2^16); the largest step ahead (32767) is too */
	assert_int_equal(mip6_ha_lookup(ha, ad(MN_A))->seq, 0);
	send_bu(ha, (struct bu_args){ .seq = 32767, .lifetime = 10, .now = 20 }, &r);
	assert_int_equal(r.ba.status, 0);
	assert_int_equal(mip6_ha_lookup(ha, ad(MN_A))->seq, 32767);
	/* a binding past its expiry (not yet reaped) does not hold its sequence number */
	send_bu(ha, (struct bu_args){ .seq = 5, .lifetime = 10, .now = 20 + 40000 }, &r);
	assert_int_equal(r.ba.status, 0);
	assert_int_equal(r.change, MIP6_CHANGE_REFRESH);
	assert_totals(ha);
	mip6_ha_destroy(ha);
}

static void expect_reject(struct mip6_ha *ha, struct bu_args a, uint8_t status, uint16_t seq);

/* A restart: the last accepted number, stored before anything changed, comes back with
 * mip6_ha_seq_restore and binds with no binding in the cache (a recorded Binding Update is
 * rejected with 135 naming it, nothing changes); a newer one is accepted and ends the hold. A
 * number that cannot be stored is 130, nothing changed. */
static void test_ha_seq_restart(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;

	memset(&store, 0, sizeof(store));
	send_bu(ha, (struct bu_args){ .seq = 100, .lifetime = 10, .now = 10 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	assert_int_equal(store.n, 1);
	assert_int_equal(store.last, 100);
	assert_memory_equal(store.hoa, ad(MN_A), 16);
	mip6_ha_destroy(ha);

	ha = mk_ha(0, false, 0); /* restarted: an empty cache */
	assert_int_equal(mip6_ha_seq_restore(ha, ad(MN_A), store.last), 0);
	assert_int_equal(mip6_ha_seq_restore(ha, ad("2001:db8::dead"), 1), -ENOENT);
	static const uint16_t recorded[] = { 100, 99, 1, (uint16_t)(100 + 32768) };
	for (unsigned i = 0; i < sizeof(recorded) / sizeof(recorded[0]); i++)
		expect_reject(ha, (struct bu_args){ .seq = recorded[i], .lifetime = 10, .now = 20 },
			      MIP6_ST_SEQ_OUT_OF_WINDOW, 100);
	assert_int_equal(mip6_ha_count(ha), 0);
	assert_int_equal(store.n, 1);
	/* the registration's next number: accepted, stored first */
	send_bu(ha, (struct bu_args){ .seq = 101, .lifetime = 10, .now = 30 }, &r);
	assert_int_equal(r.ba.status, 0);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	assert_int_equal(store.last, 101);
	/* storage fails: 130, nothing changes, nothing stored */
	store.fail = -EIO;
	expect_reject(ha, (struct bu_args){ .src = COA2, .seq = 102, .lifetime = 10, .now = 40 },
		      MIP6_ST_INSUFFICIENT, 102);
	assert_int_equal(mip6_ha_stats(ha)->reject_why[MIP6_REJECT_SEQ_STORE], 1);
	assert_memory_equal(mip6_ha_lookup(ha, ad(MN_A))->coa, ad(COA1), 16);
	store.fail = 0;
	send_bu(ha, (struct bu_args){ .src = COA2, .seq = 102, .lifetime = 10, .now = 50 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_MOVE);
	assert_int_equal(store.last, 102);
	assert_totals(ha);
	mip6_ha_destroy(ha);
}

/* Each rejection: the status, no change, the cache as before, counted once by status. */
static void expect_reject(struct mip6_ha *ha, struct bu_args a, uint8_t status, uint16_t seq)
{
	struct snap before, after;
	struct mip6_ha_result r;
	uint64_t n = mip6_ha_stats(ha)->rejected[status], acc = mip6_ha_stats(ha)->bu_accepted;
	snap(ha, &before);
	send_bu(ha, a, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.ba.status, status);
	assert_int_equal(r.ba.seq, seq);
	assert_int_equal(r.ba.lifetime, 0);
	assert_int_equal(r.lifetime_s, 0);
	assert_int_equal(r.change, MIP6_CHANGE_NONE);
	assert_non_null(r.mn);
	snap(ha, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(mip6_ha_stats(ha)->rejected[status], n + 1);
	assert_int_equal(mip6_ha_stats(ha)->bu_accepted, acc);
	uint8_t ba[MIP6_BA_MAX_LEN];
	struct mip6_pkt p;
	int len = mip6_ha_build_ba(ha, &r, ba, sizeof(ba));
	assert_int_equal(mip6_parse(ba, (uint32_t)len, &p), MIP6_DROP_NONE);
	assert_int_equal(p.m.ba.status, status);
	assert_totals(ha);
}

/* A mobile router's Binding Update (R bit) from hoa on SA sa with the Mobile Network Prefix
 * options "P/LEN" of mnp (NULL-terminated), as mip6_parse leaves it. */
static void nemo_bu(struct mip6_ha *ha, const char *hoa, uint32_t sa, uint16_t seq, uint16_t flags,
		    const char *const *mnp, struct mip6_ha_result *r)
{
	uint8_t b[MIP6_BU_MAX_LEN];
	struct mip6_pkt p;
	int n = build_bu(b, COA1, HA1, hoa, seq, flags, 10, COA1);

	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	for (; mnp && *mnp; mnp++) {
		char a[64];
		unsigned len;

		assert_int_equal(sscanf(*mnp, "%63[^/]/%u", a, &len), 2);
		if (p.m.bu.n_mnp < MIP6_MAX_MNP) {
			A(p.m.bu.mnp[p.m.bu.n_mnp].addr, a);
			p.m.bu.mnp[p.m.bu.n_mnp++].len = (uint8_t)len;
		}
		p.m.bu.n_mnp_seen++;
	}
	mip6_ha_bu(ha, &p, sa, 0, r);
}

/* NEMO (RFC 3963 6.2): a mobile router registers the prefixes it owns, named (explicit mode) or
 * not (implicit mode: all of them); a prefix it does not own is 142, one that is no unicast prefix
 * 141, implicit mode with none configured 143, R from a host 140; a refusal leaves the binding and
 * its prefixes as they were. The acknowledgement of a router's Binding Update carries R. */
static void test_ha_nemo(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_mn mr = { .bu_sa = 61, .ba_sa = 62, .tun_out_sa = 63, .tun_in_sa = 64, .router = true,
			      .n_mnp = 2 }, bare = mr;
	const uint16_t R = MIP6_BU_A | MIP6_BU_H | MIP6_BU_R;
	static const char *const none[] = { NULL };
	static const struct {
		const char *what;
		const char *mnp[6];
		uint8_t status;
		unsigned n_mnp;          /* the binding's prefixes after it */
	} rows[] = {
		{ "explicit, owned", { "2001:db8:100::/48", NULL }, 0, 1 },
		{ "explicit, not owned", { "2001:db8:300::/48", NULL }, 142, 1 },
		{ "owned and not", { "2001:db8:100::/48", "2001:db8:300::/48", NULL }, 142, 1 },
		{ "owned, longer", { "2001:db8:100::/56", NULL }, 142, 1 },
		{ "owned, shorter", { "2001:db8::/32", NULL }, 142, 1 },
		{ "multicast", { "ff0e::/16", NULL }, 141, 1 },
		{ "host bits", { "2001:db8:100::1/48", NULL }, 141, 1 },
		{ "length 0", { "::/0", NULL }, 141, 1 },
		{ "length 129", { "2001:db8:100::/129", NULL }, 141, 1 },
		{ "five options", { "2001:db8:100::/48", "2001:db8:100::/48", "2001:db8:100::/48",
				    "2001:db8:100::/48", "2001:db8:100::/48", NULL }, 130, 1 },
		{ "both, explicit", { "2001:db8:100::/48", "2001:db8:200:5::/64", NULL }, 0, 2 },
		{ "implicit: all", { NULL }, 0, 2 },
	};
	struct mip6_ha_result r;
	uint16_t seq = 1;

	A(mr.hoa, "2001:db8::77");
	A(mr.mnp[0].addr, "2001:db8:100::");
	mr.mnp[0].len = 48;
	A(mr.mnp[1].addr, "2001:db8:200:5::");
	mr.mnp[1].len = 64;
	assert_int_equal(mip6_ha_mn_add(ha, &mr), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++, seq++) {
		nemo_bu(ha, "2001:db8::77", 61, seq, R, rows[i].mnp, &r);
		const struct mip6_binding *b = mip6_ha_lookup(ha, ad("2001:db8::77"));

		if (r.ba.status != rows[i].status || !b || b->n_mnp != rows[i].n_mnp || !r.ba.r)
			fail_msg("%s: status %u (want %u), %u prefixes bound (want %u), R %d", rows[i].what,
				 r.ba.status, rows[i].status, b ? b->n_mnp : 0, rows[i].n_mnp, r.ba.r);
	}
	const struct mip6_binding *b = mip6_ha_lookup(ha, ad("2001:db8::77"));
	assert_memory_equal(b->mnp[1].addr, ad("2001:db8:200:5::"), 16);
	assert_int_equal(b->mnp[1].len, 64);
	/* its Binding Update without R: a host's registration, no prefix routed, no R answered */
	nemo_bu(ha, "2001:db8::77", 61, seq++, MIP6_BU_A | MIP6_BU_H, none, &r);
	assert_int_equal(r.ba.status, 0);
	assert_false(r.ba.r);
	assert_int_equal(mip6_ha_lookup(ha, ad("2001:db8::77"))->n_mnp, 0);
	/* a router with no prefix configured: implicit mode cannot set up forwarding (143) */
	A(bare.hoa, "2001:db8::78");
	bare.bu_sa = 71;
	bare.n_mnp = 0;
	assert_int_equal(mip6_ha_mn_add(ha, &bare), 0);
	nemo_bu(ha, "2001:db8::78", 71, 1, R, none, &r);
	assert_int_equal(r.ba.status, MIP6_ST_FWD_SETUP_FAILED);
	assert_null(mip6_ha_lookup(ha, ad("2001:db8::78")));
	/* R from a mobile node that is no router: 140, without R in the answer */
	nemo_bu(ha, MN_A, 11, 1, R, none, &r);
	assert_int_equal(r.ba.status, MIP6_ST_MR_NOT_PERMITTED);
	assert_false(r.ba.r);
	/* configuration: prefixes only on a router, each a unicast prefix without host bits */
	bare.router = false;
	bare.n_mnp = 1;
	A(bare.hoa, "2001:db8::79");
	A(bare.mnp[0].addr, "2001:db8:400::");
	bare.mnp[0].len = 48;
	assert_int_equal(mip6_ha_mn_add(ha, &bare), -EINVAL);
	bare.router = true;
	bare.mnp[0].len = 36;                  /* host bits set */
	assert_int_equal(mip6_ha_mn_add(ha, &bare), -EINVAL);
	bare.mnp[0].len = 48;
	assert_int_equal(mip6_ha_mn_add(ha, &bare), 0);
	/* the option on the wire: Reserved, Prefix Length, the prefix; 8n+4 aligned (RFC 3963 4.3) */
	uint8_t pkt[40 + 40];
	struct mip6_pkt p;
	int n = build_bu(pkt, COA1, HA1, NULL, 9, R, 10, NULL);
	uint8_t *mh = pkt + 40;

	assert_int_equal(n, 40 + 16);          /* the BU's 12 bytes, padded to 16 */
	memset(mh + 12, 0, 28);
	mh[1] = 4;                             /* 40 bytes */
	pkt[5] = 40;                           /* the IPv6 payload length */
	mh[12] = MIP6_OPT_PADN;                /* 12..19: PadN, so the option starts at 20 */
	mh[13] = 6;
	mh[20] = MIP6_OPT_MNP;
	mh[21] = 18;
	mh[23] = 48;
	A(mh + 24, "2001:db8:100::");
	refix(pkt, 40, NULL, NULL);
	assert_int_equal(mip6_parse(pkt, 80, &p), MIP6_DROP_NONE);
	assert_int_equal(p.m.bu.n_mnp, 1);
	assert_int_equal(p.m.bu.mnp[0].len, 48);
	assert_memory_equal(p.m.bu.mnp[0].addr, ad("2001:db8:100::"), 16);
	memmove(mh + 19, mh + 20, 20);         /* the same option a byte earlier: misaligned */
	mh[13] = 5;
	mh[39] = MIP6_OPT_PAD1;
	refix(pkt, 40, NULL, NULL);
	assert_int_equal(mip6_parse(pkt, 80, &p), MIP6_DROP_BAD_OPTION_ALIGN);
	mip6_ha_destroy(ha);
}

static void test_ha_rejections(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(2, false, 0);
	struct mip6_ha_result r;
	/* 131: no H bit and no binding; 139: no H bit with a home registration */
	expect_reject(ha, (struct bu_args){ .flags = MIP6_BU_A, .seq = 1, .lifetime = 10 }, 131, 1);
	send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 10 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	expect_reject(ha, (struct bu_args){ .flags = MIP6_BU_A, .seq = 2, .lifetime = 10 }, 139, 2);
	/* 129: the mobile node is configured but disabled */
	expect_reject(ha, (struct bu_args){ .hoa = MN_OFF, .sa = 31, .seq = 1, .lifetime = 10 }, 129, 1);
	/* 140: mobile router */
	expect_reject(ha, (struct bu_args){ .flags = MIP6_BU_A | MIP6_BU_H | MIP6_BU_R, .seq = 2,
					    .lifetime = 10 }, 140, 2);
	/* 132: a home address outside the home prefixes */
	expect_reject(ha, (struct bu_args){ .hoa = MN_OUT, .sa = 41, .seq = 1, .lifetime = 10 }, 132, 1);
	/* 133: sent to the home agent address that does not serve this mobile node */
	expect_reject(ha, (struct bu_args){ .hoa = MN_HA2, .sa = 51, .dst = HA1, .seq = 1, .lifetime = 10 },
		      133, 1);
	send_bu(ha, (struct bu_args){ .hoa = MN_HA2, .sa = 51, .dst = HA2, .seq = 1, .lifetime = 10 }, &r);
	assert_int_equal(r.ba.status, 0);
	assert_memory_equal(r.ba.src, ad(HA2), 16);
	/* 133: deregistration without a binding (§10.3.2) */
	expect_reject(ha, (struct bu_args){ .hoa = MN_B, .sa = 21, .seq = 1, .lifetime = 0 }, 133, 1);
	/* 128: a care-of address in a home prefix, or one of the home agent's addresses */
	expect_reject(ha, (struct bu_args){ .alt = "2001:db8::55", .seq = 2, .lifetime = 10 }, 128, 2);
	expect_reject(ha, (struct bu_args){ .alt = HA2, .seq = 2, .lifetime = 10 }, 128, 2);
	expect_reject(ha, (struct bu_args){ .alt = HA3, .seq = 2, .lifetime = 10 }, 128, 2);
	/* 130: two bindings is the most this cache takes */
	expect_reject(ha, (struct bu_args){ .hoa = MN_B, .sa = 21, .seq = 1, .lifetime = 10 }, 130, 1);
	/* a binding that exists is still refreshed when the cache is full */
	send_bu(ha, (struct bu_args){ .seq = 2, .lifetime = 10 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_REFRESH);
	/* the rejections did not consume sequence numbers: seq 2 was accepted above */
	assert_int_equal(mip6_ha_lookup(ha, ad(MN_A))->seq, 2);
	assert_int_equal(mip6_ha_count(ha), 2);
	assert_totals(ha);
	mip6_ha_destroy(ha);
}

#define VICTIM "2001:db9:66::1"  /* an address nobody here registered: a third party */

/* One Binding Update and what must come of it: accepted (status 0) with that change, or rejected
 * with that status for that reason, the cache as before and the reason counted once. */
static void bu_step(struct mip6_ha *ha, struct bu_args a, uint8_t status, enum mip6_change change,
		    enum mip6_reject why, const char *what)
{
	struct snap before, after;
	struct mip6_ha_result r;
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);
	uint64_t n = st->reject_why[why];
	snap(ha, &before);
	send_bu(ha, a, &r);
	if (r.drop != MIP6_DROP_NONE || r.ba.status != status || r.change != change || r.reject != why)
		fail_msg("%s: drop %s status %u change %s reason %s, expected status %u change %s reason %s",
			 what, mip6_drop_name(r.drop), r.ba.status, mip6_change_name(r.change),
			 mip6_reject_name(r.reject), status, mip6_change_name(change), mip6_reject_name(why));
	/* every BA, accepted or not, goes back to the Binding Update's source (§9.5.4) */
	assert_memory_equal(r.ba.dst, ad(a.src ? a.src : COA1), 16);
	if (status >= 128) {
		assert_int_equal(r.lifetime_s, 0);
		assert_int_equal(r.ba.lifetime, 0);
		snap(ha, &after);
		assert_memory_equal(&before, &after, sizeof(before));
		assert_int_equal(st->reject_why[why], n + 1);
		assert_int_equal(mip6_reject_status(why), status);
	}
	assert_totals(ha);
}

/* The care-of address is bound to the Binding Update (RFC 3776 §3.1: the Alternate Care-of Address
 * option is what ESP protects; it must also be the source): one row per case, on a fresh home agent
 * with MN_A bound at COA1 (sequence 1) or not bound at all. */
static void test_ha_coa_bound(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		bool bound;
		struct bu_args bu;
		uint8_t status;
		enum mip6_change change;
		enum mip6_reject why;
	} rows[] = {
		{ "registration without the Alternate CoA option (source alone is not covered by ESP)", true,
		  { .alt = "", .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE, MIP6_REJECT_NO_ALT_COA },
		{ "first registration without it", false,
		  { .alt = "", .seq = 1, .lifetime = 10 }, 174, MIP6_CHANGE_NONE, MIP6_REJECT_NO_ALT_COA },
		{ "move without it: the source alone names the new address", true,
		  { .src = COA2, .alt = "", .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_NO_ALT_COA },
		{ "Alternate CoA a third party's, source the mobile node's (reflection)", true,
		  { .src = COA2, .alt = VICTIM, .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_ALT_COA_NOT_SRC },
		{ "first registration pointed at a third party", false,
		  { .src = COA1, .alt = VICTIM, .seq = 1, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_ALT_COA_NOT_SRC },
		{ "source rewritten in flight, Alternate CoA the mobile node's", true,
		  { .src = VICTIM, .alt = COA2, .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_ALT_COA_NOT_SRC },
		{ "refresh whose source was rewritten", true,
		  { .src = VICTIM, .alt = COA1, .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_ALT_COA_NOT_SRC },
		{ "source rewritten to the home address, Home Address option stripped: no deregistration", true,
		  { .src = MN_A, .alt = COA1, .seq = 2, .lifetime = 10 }, 174, MIP6_CHANGE_NONE,
		  MIP6_REJECT_ALT_COA_NOT_SRC },
		{ "move with the Alternate CoA = source", true,
		  { .src = COA2, .seq = 2, .lifetime = 10 }, 0, MIP6_CHANGE_MOVE, MIP6_REJECT_NONE },
		{ "refresh with the Alternate CoA = source", true,
		  { .src = COA1, .seq = 2, .lifetime = 10 }, 0, MIP6_CHANGE_REFRESH, MIP6_REJECT_NONE },
		{ "first registration with the Alternate CoA = source", false,
		  { .src = COA2, .seq = 1, .lifetime = 10 }, 0, MIP6_CHANGE_NEW, MIP6_REJECT_NONE },
		/* §10.3.2 and §11.5.4: deregistrations redirect nothing and need no Alternate CoA */
		{ "deregistration from home: no Home Address option, no Alternate CoA", true,
		  { .src = MN_A, .alt = "", .seq = 2, .lifetime = 0 }, 0, MIP6_CHANGE_DELETE, MIP6_REJECT_NONE },
		{ "from home with a lifetime: care-of address = home address", true,
		  { .src = MN_A, .alt = "", .seq = 2, .lifetime = 10 }, 0, MIP6_CHANGE_DELETE, MIP6_REJECT_NONE },
		{ "deregistration from away without the Alternate CoA", true,
		  { .alt = "", .seq = 2, .lifetime = 0 }, 0, MIP6_CHANGE_DELETE, MIP6_REJECT_NONE },
		{ "deregistration whose Alternate CoA is not the source", true,
		  { .src = VICTIM, .alt = COA2, .seq = 2, .lifetime = 0 }, 0, MIP6_CHANGE_DELETE,
		  MIP6_REJECT_NONE },
		{ "deregistration by an Alternate CoA = home address", true,
		  { .src = COA2, .alt = MN_A, .seq = 2, .lifetime = 10 }, 0, MIP6_CHANGE_DELETE,
		  MIP6_REJECT_NONE },
		{ "deregistration from home without a binding", false,
		  { .src = MN_A, .alt = "", .seq = 1, .lifetime = 0 }, 133, MIP6_CHANGE_NONE,
		  MIP6_REJECT_DEREG_UNBOUND },
	};
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mip6_ha *ha = mk_ha(0, false, 0);
		struct mip6_ha_result r;
		if (rows[i].bound) {
			send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 10 }, &r);
			assert_int_equal(r.change, MIP6_CHANGE_NEW);
		}
		bu_step(ha, rows[i].bu, rows[i].status, rows[i].change, rows[i].why, rows[i].what);
		const struct mip6_binding *b = mip6_ha_lookup(ha, ad(MN_A));
		if (rows[i].change == MIP6_CHANGE_DELETE || (!rows[i].bound && rows[i].status))
			assert_null(b);
		else if (rows[i].status)
			assert_memory_equal(b->coa, ad(COA1), 16);  /* where it was */
		else
			assert_memory_equal(b->coa, ad(rows[i].bu.src), 16);
		mip6_ha_destroy(ha);
	}
	/* every reason has its own name; 174's status has its name */
	for (unsigned i = 0; i < MIP6_REJECT_MAX; i++) {
		assert_string_not_equal(mip6_reject_name(i), "?");
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(mip6_reject_name(i), mip6_reject_name(j));
		assert_true(i == MIP6_REJECT_NONE ? mip6_reject_status(i) == 0 : mip6_reject_status(i) >= 128);
	}
	assert_string_equal(mip6_reject_name(MIP6_REJECT_MAX), "?");
	assert_string_equal(mip6_status_name(174), "invalid-care-of-address");
}

/* The move bucket: a new binding or a new care-of address takes a token (burst 4, one a second by
 * default), a refresh or a deregistration none; one mobile node's bucket is not another's. One row
 * per Binding Update, in order, on one home agent; each row's sequence number is the next. */
static void test_ha_move_rate(void **state)
{
	(void)state;
	static const struct {
		const char *what, *hoa, *src;
		uint64_t now;
		uint16_t lifetime;
		uint8_t status;
		enum mip6_change change;
	} rows[] = {
		{ "new: token 1", MN_A, COA1, 0, 10, 0, MIP6_CHANGE_NEW },
		{ "move: token 2", MN_A, COA2, 0, 10, 0, MIP6_CHANGE_MOVE },
		{ "move: token 3", MN_A, COA1, 0, 10, 0, MIP6_CHANGE_MOVE },
		{ "move: token 4", MN_A, COA2, 0, 10, 0, MIP6_CHANGE_MOVE },
		{ "move over the burst", MN_A, COA1, 0, 10, 130, MIP6_CHANGE_NONE },
		{ "refresh: not paced", MN_A, COA2, 0, 10, 0, MIP6_CHANGE_REFRESH },
		{ "refresh again", MN_A, COA2, 10, 10, 0, MIP6_CHANGE_REFRESH },
		{ "and again", MN_A, COA2, 20, 10, 0, MIP6_CHANGE_REFRESH },
		{ "another mobile node has its own bucket", MN_B, COA1, 20, 10, 0, MIP6_CHANGE_NEW },
		{ "move 1 ms before a token is back", MN_A, COA1, 999, 10, 130, MIP6_CHANGE_NONE },
		{ "move when a token is back", MN_A, COA1, 1000, 10, 0, MIP6_CHANGE_MOVE },
		{ "the next one is over again", MN_A, COA2, 1000, 10, 130, MIP6_CHANGE_NONE },
		{ "deregistration: not paced", MN_A, COA1, 1000, 0, 0, MIP6_CHANGE_DELETE },
		{ "deregistering did not refill the bucket", MN_A, COA1, 1500, 10, 130, MIP6_CHANGE_NONE },
		{ "a token back", MN_A, COA1, 2000, 10, 0, MIP6_CHANGE_NEW },
		{ "a quiet while refills the whole burst: 1", MN_A, COA2, 60000, 10, 0, MIP6_CHANGE_MOVE },
		{ "2", MN_A, COA1, 60000, 10, 0, MIP6_CHANGE_MOVE },
		{ "3", MN_A, COA2, 60000, 10, 0, MIP6_CHANGE_MOVE },
		{ "4", MN_A, COA1, 60000, 10, 0, MIP6_CHANGE_MOVE },
		{ "and no more", MN_A, COA2, 60000, 10, 130, MIP6_CHANGE_NONE },
	};
	struct mip6_ha *ha = mk_ha(0, false, 0);
	assert_int_equal(mip6_ha_config(ha)->move_burst, 4);
	assert_int_equal(mip6_ha_config(ha)->move_interval_ms, 1000);
	uint16_t seq = 1;
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool b = !strcmp(rows[i].hoa, MN_B);
		bu_step(ha, (struct bu_args){ .hoa = rows[i].hoa, .src = rows[i].src, .sa = b ? 21 : 11,
					      .seq = seq++, .lifetime = rows[i].lifetime, .now = rows[i].now },
			rows[i].status, rows[i].change, rows[i].status ? MIP6_REJECT_MOVE_RATE : MIP6_REJECT_NONE,
			rows[i].what);
	}
	assert_int_equal(mip6_ha_stats(ha)->reject_why[MIP6_REJECT_MOVE_RATE], 5);
	assert_int_equal(mip6_ha_stats(ha)->rejected[130], 5);
	mip6_ha_destroy(ha);

	/* configured: one move, then one a minute */
	struct mip6_ha_config c = *mip6_ha_config(ha = mk_ha(0, false, 0));
	mip6_ha_destroy(ha);
	c.move_burst = 1;
	c.move_interval_ms = 60000;
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	struct mip6_mn m = { .bu_sa = 11, .ba_sa = 12 };
	A(m.hoa, MN_A);
	assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	bu_step(ha, (struct bu_args){ .seq = 1, .lifetime = 10, .now = 0 }, 0, MIP6_CHANGE_NEW,
		MIP6_REJECT_NONE, "configured: new");
	bu_step(ha, (struct bu_args){ .src = COA2, .seq = 2, .lifetime = 10, .now = 59999 }, 130,
		MIP6_CHANGE_NONE, MIP6_REJECT_MOVE_RATE, "configured: a minute not yet gone");
	bu_step(ha, (struct bu_args){ .src = COA2, .seq = 3, .lifetime = 10, .now = 60000 }, 0,
		MIP6_CHANGE_MOVE, MIP6_REJECT_NONE, "configured: a minute later");
	mip6_ha_destroy(ha);
	/* out of range */
	c.move_burst = 1025;
	assert_int_equal(mip6_ha_create(&c, &ha), -EINVAL);
	c.move_burst = 1024;
	c.move_interval_ms = 3600001;
	assert_int_equal(mip6_ha_create(&c, &ha), -EINVAL);
	c.move_interval_ms = 3600000;
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	mip6_ha_destroy(ha);
}

/* Each drop: nothing answered, the cache as before, counted once by reason. */
static void expect_drop_pkt(struct mip6_ha *ha, const uint8_t *pkt, uint32_t len, uint32_t sa,
			    enum mip6_drop why, bool mn_known)
{
	struct snap before, after;
	struct mip6_ha_result r;
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);
	uint64_t n = st->drops[why], rej = st->bu_rejected, acc = st->bu_accepted;
	snap(ha, &before);
	mip6_ha_input(ha, pkt, len, sa, 100, &r);
	assert_int_equal(r.drop, why);
	assert_int_equal(r.change, MIP6_CHANGE_NONE);
	assert_int_equal(r.lifetime_s, 0);
	if (!mn_known)
		assert_null(r.mn);
	snap(ha, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(st->drops[why], n + 1);
	assert_int_equal(st->bu_rejected, rej);
	assert_int_equal(st->bu_accepted, acc);
	uint8_t ba[MIP6_BA_MAX_LEN];
	assert_int_equal(mip6_ha_build_ba(ha, &r, ba, sizeof(ba)), -EINVAL);
	assert_totals(ha);
}

static void expect_drop(struct mip6_ha *ha, struct bu_args a, enum mip6_drop why)
{
	uint8_t b[MIP6_BU_MAX_LEN];
	const char *hoa = a.hoa ? a.hoa : MN_A;
	const char *src = a.src ? a.src : COA1;
	int n = build_bu(b, src, a.dst ? a.dst : HA1, strcmp(hoa, src) ? hoa : NULL, a.seq,
			 a.flags ? a.flags : (MIP6_BU_A | MIP6_BU_H), a.lifetime,
			 a.alt ? (a.alt[0] ? a.alt : NULL) : src);
	expect_drop_pkt(ha, b, (uint32_t)n, a.sa, why, false);
}

static void test_ha_drops(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;
	send_bu(ha, (struct bu_args){ .seq = 100, .lifetime = 10 }, &r);
	send_bu(ha, (struct bu_args){ .hoa = MN_B, .sa = 21, .seq = 100, .lifetime = 10 }, &r);
	assert_int_equal(mip6_ha_count(ha), 2);

	uint8_t b[MIP6_BU_MAX_LEN];
	/* unprotected: a perfectly formed BU, SA 0 */
	int n = build_bu(b, COA2, HA1, MN_A, 101, MIP6_BU_A | MIP6_BU_H, 10, COA2);
	expect_drop_pkt(ha, b, (uint32_t)n, 0, MIP6_DROP_UNPROTECTED, false);
	/* protected by mobile node B's SA but for A's home address (a BU for someone else's home
	 * address, or A's HAO rewritten): never answered */
	expect_drop_pkt(ha, b, (uint32_t)n, 21, MIP6_DROP_WRONG_SA, false);
	/* an SA nobody has */
	expect_drop_pkt(ha, b, (uint32_t)n, 999, MIP6_DROP_WRONG_SA, false);
	/* a home address nobody is configured with */
	expect_drop(ha, (struct bu_args){ .hoa = "2001:db8::dead", .seq = 1, .lifetime = 10, .sa = 11 },
		    MIP6_DROP_UNKNOWN_HOA);
	/* not sent to one of our addresses */
	expect_drop(ha, (struct bu_args){ .dst = "2001:db8::3", .seq = 101, .lifetime = 10, .sa = 11 },
		    MIP6_DROP_NOT_FOR_US);
	/* a care-of address that is not unicast routable (from the Alternate CoA option) */
	expect_drop(ha, (struct bu_args){ .alt = "ff05::2", .seq = 101, .lifetime = 10, .sa = 11 },
		    MIP6_DROP_COA_NOT_UNICAST);
	expect_drop(ha, (struct bu_args){ .alt = "fe80::9", .seq = 101, .lifetime = 10, .sa = 11 },
		    MIP6_DROP_COA_NOT_UNICAST);
	/* a valid MH that is not a Binding Update */
	struct mip6_ba_params bp = { .status = 0, .seq = 101 };
	memcpy(bp.src, ad(COA1), 16);
	memcpy(bp.dst, ad(HA1), 16);
	uint8_t ba[MIP6_BA_MAX_LEN];
	n = mip6_build_ba(ba, sizeof(ba), &bp);
	expect_drop_pkt(ha, ba, (uint32_t)n, 11, MIP6_DROP_NOT_BU, false);
	/* a parse failure, through mip6_ha_input */
	n = build_bu(b, COA1, HA1, MN_A, 101, MIP6_BU_A | MIP6_BU_H, 10, COA1);
	b[n - 1] ^= 0x40;
	expect_drop_pkt(ha, b, (uint32_t)n, 11, MIP6_DROP_BAD_CHECKSUM, false);
	expect_drop_pkt(ha, b, 30, 11, MIP6_DROP_TRUNCATED, false);
	/* the bindings were never touched: both still at sequence 100 with their care-of address */
	assert_int_equal(mip6_ha_lookup(ha, ad(MN_A))->seq, 100);
	assert_memory_equal(mip6_ha_lookup(ha, ad(MN_A))->coa, ad(COA1), 16);
	assert_int_equal(mip6_ha_lookup(ha, ad(MN_B))->seq, 100);
	assert_int_equal(mip6_ha_stats(ha)->ba_sent, 0);
	mip6_ha_destroy(ha);
}

/* Each mobile node's own counters: what its authenticated Binding Updates did to it, never what
 * another node's or a Binding Update on the wrong SA did; the BAs by status slot; the last age. */
struct mn_walk {
	unsigned n, bound;
	uint64_t accepted;
};

static void mn_cb(const struct mip6_mn *mn, const struct mip6_mn_stats *st, const struct mip6_binding *b,
		  void *arg)
{
	struct mn_walk *w = arg;

	(void)mn;
	w->n++;
	w->bound += b != NULL;
	w->accepted += st->bu_accepted;
}

static void build_ba_for(struct mip6_ha *ha, const struct mip6_ha_result *r)
{
	uint8_t ba[256];

	assert_true(mip6_ha_build_ba(ha, r, ba, sizeof(ba)) > 0);
}

static void test_ha_mn_counters(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;
	const struct mip6_mn_stats *a = mip6_ha_mn_stats(ha, ad(MN_A)), *b = mip6_ha_mn_stats(ha, ad(MN_B));

	assert_non_null(a);
	assert_non_null(b);
	assert_null(mip6_ha_mn_stats(ha, ad(VICTIM)));
	send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 10, .now = 1000 }, &r);       /* new */
	build_ba_for(ha, &r);
	send_bu(ha, (struct bu_args){ .src = COA2, .seq = 2, .lifetime = 10, .now = 2000 }, &r); /* move */
	build_ba_for(ha, &r);
	send_bu(ha, (struct bu_args){ .src = COA2, .seq = 2, .lifetime = 10, .now = 3000 }, &r); /* 135 */
	assert_int_equal(r.ba.status, 135);
	build_ba_for(ha, &r);
	send_bu(ha, (struct bu_args){ .src = COA2, .alt = "", .seq = 3, .lifetime = 10, .now = 4000 }, &r);
	assert_int_equal(r.ba.status, 174);
	build_ba_for(ha, &r);
	/* MN_B's Binding Update on MN_A's SA is dropped and counts for neither */
	send_bu(ha, (struct bu_args){ .hoa = MN_B, .seq = 9, .lifetime = 10, .sa = 11, .now = 5000 }, &r);
	assert_int_not_equal(r.drop, MIP6_DROP_NONE);

	assert_int_equal(a->bu_accepted, 2);
	assert_int_equal(a->bu_refused, 2);
	assert_int_equal(a->moves, 1);
	assert_int_equal(a->last_bu_ms, 4000);
	assert_int_equal(a->ba[mip6_ba_slot(0)], 2);
	assert_int_equal(a->ba[mip6_ba_slot(135)], 1);
	assert_int_equal(a->ba[mip6_ba_slot(174)], 1);
	assert_int_equal(b->bu_accepted + b->bu_refused + b->moves + b->last_bu_ms, 0);
	for (unsigned s = 0; s < MIP6_MN_BA_SLOTS; s++)
		assert_int_equal(b->ba[s], 0);
	for (unsigned st = 0; st < 256; st++) {
		unsigned slot = mip6_ba_slot((uint8_t)st);
		bool sent = st == 0 || (st >= 128 && st <= 140) || st == 174;  /* RFC 6275 6.1.8, RFC 3963 */
		assert_int_equal(slot < MIP6_MN_BA_SLOTS, sent);
		if (sent)
			assert_int_equal(mip6_ba_slot_status(slot), st);
	}

	struct mn_walk w = { 0 };
	assert_int_equal(mip6_ha_mn_foreach(ha, mn_cb, &w), 5);
	assert_int_equal(w.n, 5);
	assert_int_equal(w.bound, 1);
	assert_int_equal(w.accepted, 2);

	/* a node removed and configured again starts from zero */
	struct mip6_mn m = *mip6_ha_mn_find(ha, ad(MN_A));
	assert_int_equal(mip6_ha_mn_remove(ha, ad(MN_A), NULL), 1);
	assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	a = mip6_ha_mn_stats(ha, ad(MN_A));
	assert_int_equal(a->bu_accepted + a->bu_refused + a->moves + a->ba[0], 0);
	mip6_ha_destroy(ha);
}

static void test_ha_k_and_refresh(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, true, 200);
	struct mip6_ha_result r;
	send_bu(ha, (struct bu_args){ .flags = MIP6_BU_A | MIP6_BU_H | MIP6_BU_K, .seq = 1, .lifetime = 100 }, &r);
	assert_true(r.ba.k);
	assert_true(mip6_ha_lookup(ha, ad(MN_A))->k);
	assert_int_equal(r.ba.refresh, 50);  /* 200 s */
	send_bu(ha, (struct bu_args){ .seq = 2, .lifetime = 30 }, &r);
	assert_false(r.ba.k);                /* K not asked for */
	assert_int_equal(r.ba.refresh, 29);  /* below the granted 30 units */
	send_bu(ha, (struct bu_args){ .seq = 3, .lifetime = 1 }, &r);
	assert_int_equal(r.ba.refresh, 0);   /* no room below one unit: no advice */
	uint8_t ba[MIP6_BA_MAX_LEN];
	struct mip6_pkt p;
	send_bu(ha, (struct bu_args){ .flags = MIP6_BU_A | MIP6_BU_H | MIP6_BU_K, .seq = 4, .lifetime = 100 }, &r);
	int n = mip6_ha_build_ba(ha, &r, ba, sizeof(ba));
	assert_int_equal(mip6_parse(ba, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.m.ba.flags, MIP6_BA_K);
	assert_true(p.m.ba.has_refresh);
	assert_int_equal(p.m.ba.refresh, 50);
	mip6_ha_destroy(ha);
	/* K is not granted by a home agent configured without it */
	ha = mk_ha(0, false, 0);
	send_bu(ha, (struct bu_args){ .flags = MIP6_BU_A | MIP6_BU_H | MIP6_BU_K, .seq = 1, .lifetime = 100 }, &r);
	assert_false(r.ba.k);
	mip6_ha_destroy(ha);
}

/* RFC 6275 §10.4.1: the home address in use on the home link after the decision: the binding goes,
 * the BA says 134 with lifetime 0; a refresh of a binding is never withdrawn (no binding: -ENOENT). */
static void test_ha_dad_failed(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 200);
	struct mip6_ha_result r;
	send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 100 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	assert_int_equal(mip6_ha_dad_failed(ha, r.hoa, &r), 0);
	assert_int_equal(r.ba.status, MIP6_ST_DAD_FAILED);
	assert_int_equal(r.ba.lifetime, 0);
	assert_int_equal(r.ba.refresh, 0);
	assert_int_equal(r.change, MIP6_CHANGE_NONE);
	assert_null(mip6_ha_lookup(ha, ad(MN_A)));
	assert_int_equal(mip6_ha_count(ha), 0);
	assert_int_equal(mip6_ha_next_expiry(ha), UINT64_MAX);
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);
	assert_int_equal(st->dad_failed, 1);
	assert_int_equal(st->bindings_added, 1);
	assert_int_equal(st->bindings_deleted, 1);
	assert_int_equal(mip6_ha_dad_failed(ha, ad(MN_A), &r), -ENOENT);
	/* the next registration is a new binding again (with no binding any sequence number is
	 * taken, §9.5.1, as after a deregistration; replays are ESP's to stop) */
	send_bu(ha, (struct bu_args){ .seq = 2, .lifetime = 100 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	assert_int_equal(r.ba.status, 0);
	mip6_ha_destroy(ha);
}

/* The Binding Refresh Request (§6.1.2) parses back with its routing header and checksum; the DAD
 * solicitation (RFC 4862 §5.4.2) goes from :: to the solicited-node group, hop limit 255. */
static void test_brr_and_dad_ns(void **state)
{
	(void)state;
	uint8_t b[MIP6_BRR_LEN + 8];
	struct mip6_pkt p;
	int n = mip6_build_brr(b, sizeof(b), ad(HA1), ad(COA1), ad(MN_A));
	assert_int_equal(n, MIP6_BRR_LEN);
	assert_int_equal(mip6_parse(b, (uint32_t)n, &p), MIP6_DROP_NONE);
	assert_int_equal(p.mh_type, MIP6_MH_BRR);
	assert_true(p.has_rh2);
	assert_memory_equal(p.rh2_addr, ad(MN_A), 16);
	assert_memory_equal(p.dst, ad(COA1), 16);
	assert_int_equal(mip6_build_brr(b, MIP6_BRR_LEN - 1, ad(HA1), ad(COA1), ad(MN_A)), -ENOSPC);
	n = mip6_build_dad_ns(b, sizeof(b), ad("2001:db8::12:3456"));
	assert_int_equal(n, MIP6_DAD_NS_LEN);
	assert_memory_equal(b + 8, ad("::"), 16);
	assert_memory_equal(b + 24, ad("ff02::1:ff12:3456"), 16);
	assert_int_equal(b[6], 58);
	assert_int_equal(b[7], 255);
	assert_int_equal(b[40], 135);
	assert_memory_equal(b + 48, ad("2001:db8::12:3456"), 16);
	/* RFC 1071 over the pseudo-header and the message: all ones */
	uint32_t s = 24 + 58;
	for (int i = 8; i < 64; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	assert_int_equal(s, 0xffff);
	assert_int_equal(mip6_build_dad_ns(b, MIP6_DAD_NS_LEN - 1, ad("2001:db8::1")), -ENOSPC);
}

/* RFC 4877 7: an IKE-keyed mobile node (key_mobility) is granted K by a home agent configured
 * without it for all; its SAs replaced by a CHILD_SA rekey (mip6_ha_mn_update) leave its binding and
 * sequence number as they were, and its Binding Updates then arrive on the new signalling SA only. */
static void test_ha_ike_node(void **state)
{
	(void)state;
	struct mip6_ha *ha = mk_ha(0, false, 0);
	struct mip6_ha_result r;
	struct mip6_mn m = { .bu_sa = 111, .ba_sa = 112, .tun_out_sa = 113, .tun_in_sa = 114,
			     .key_mobility = true };

	A(m.hoa, MN_A);
	assert_int_equal(mip6_ha_mn_update(ha, &m), 0);
	const uint16_t ahk = MIP6_BU_A | MIP6_BU_H | MIP6_BU_K;

	send_bu(ha, (struct bu_args){ .flags = ahk, .seq = 1, .lifetime = 100, .sa = 111 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_true(r.ba.k);
	assert_true(mip6_ha_lookup(ha, ad(MN_A))->k);
	/* MN_B is manually keyed: no K */
	send_bu(ha, (struct bu_args){ .hoa = MN_B, .flags = ahk, .seq = 1, .lifetime = 100, .sa = 21 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_false(r.ba.k);
	/* the rekey: new SAs, the binding and its sequence number stay */
	m.bu_sa = 211; m.ba_sa = 212; m.tun_out_sa = 213; m.tun_in_sa = 214;
	assert_int_equal(mip6_ha_mn_update(ha, &m), 0);
	const struct mip6_binding *b = mip6_ha_lookup(ha, ad(MN_A));
	assert_non_null(b);
	assert_int_equal(b->seq, 1);
	assert_int_equal(b->mn->bu_sa, 211);
	assert_int_equal(b->mn->tun_out_sa, 213);
	send_bu(ha, (struct bu_args){ .seq = 2, .lifetime = 100, .sa = 111 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_WRONG_SA);           /* the replaced SA */
	send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 100, .sa = 211 }, &r);
	assert_int_equal(r.ba.status, mip6_reject_status(MIP6_REJECT_SEQ)); /* not newer */
	send_bu(ha, (struct bu_args){ .seq = 2, .lifetime = 100, .sa = 211 }, &r);
	assert_int_equal(r.drop, MIP6_DROP_NONE);
	assert_int_equal(r.ba.status, 0);
	assert_int_equal(r.change, MIP6_CHANGE_REFRESH);
	/* errors: no signalling SA, an unknown home address */
	m.bu_sa = 0;
	assert_int_equal(mip6_ha_mn_update(ha, &m), -EINVAL);
	m.bu_sa = 311;
	A(m.hoa, "2001:db8::99");
	assert_int_equal(mip6_ha_mn_update(ha, &m), -ENOENT);
	mip6_ha_destroy(ha);
}

static void test_ha_config(void **state)
{
	(void)state;
	struct mip6_ha_config c;
	struct mip6_ha *ha;
	memset(&c, 0, sizeof(c));
	A(c.ha_addrs[0], HA1);
	c.n_ha_addrs = 1;
	A(c.prefixes[0].addr, "2001:db8::");
	c.prefixes[0].len = 64;
	c.n_prefixes = 1;
	c.max_lifetime_s = 3600;
	c.max_mns = 2;
	struct mip6_ha_config bad;
	bad = c; bad.n_ha_addrs = 0;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	assert_null(ha);
	bad = c; bad.n_prefixes = 0;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.prefixes[0].len = 0;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.prefixes[0].len = 129;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.max_lifetime_s = 3;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.max_lifetime_s = 262141;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.max_mns = 0;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; bad.max_bindings = 3;
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	bad = c; A(bad.ha_addrs[0], "ff02::2");
	assert_int_equal(mip6_ha_create(&bad, &ha), -EINVAL);
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	assert_int_equal(mip6_ha_config(ha)->max_lifetime_s, 3600);

	struct mip6_mn m = { .bu_sa = 0 };
	A(m.hoa, MN_A);
	assert_int_equal(mip6_ha_mn_add(ha, &m), -EINVAL);   /* no signalling SA */
	m.bu_sa = 1;
	A(m.ha_addr, HA2);
	assert_int_equal(mip6_ha_mn_add(ha, &m), -EINVAL);   /* not our address */
	memset(m.ha_addr, 0, 16);
	A(m.hoa, "fe80::1");
	assert_int_equal(mip6_ha_mn_add(ha, &m), -EINVAL);
	A(m.hoa, MN_A);
	assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	assert_int_equal(mip6_ha_mn_add(ha, &m), -EEXIST);
	A(m.hoa, MN_B);
	m.bu_sa = 2;
	assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	A(m.hoa, MN_OFF);
	assert_int_equal(mip6_ha_mn_add(ha, &m), -ENOSPC);
	assert_int_equal(mip6_ha_mn_find(ha, ad(MN_B))->bu_sa, 2);
	assert_null(mip6_ha_mn_find(ha, ad(MN_OFF)));

	/* removal: with its binding (returned), without, and of nobody */
	struct mip6_ha_result r;
	send_bu(ha, (struct bu_args){ .seq = 1, .lifetime = 10, .sa = 1 }, &r);
	assert_int_equal(r.change, MIP6_CHANGE_NEW);
	struct mip6_binding was;
	assert_int_equal(mip6_ha_mn_remove(ha, ad(MN_A), &was), 1);
	assert_memory_equal(was.coa, ad(COA1), 16);
	assert_int_equal(mip6_ha_count(ha), 0);
	assert_int_equal(mip6_ha_mn_remove(ha, ad(MN_A), &was), -ENOENT);
	assert_int_equal(mip6_ha_mn_remove(ha, ad(MN_B), NULL), 0);
	assert_int_equal(mip6_ha_stats(ha)->bindings_deleted, 1);
	/* the slot is reused */
	A(m.hoa, MN_OFF);
	assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	/* a removed mobile node's BUs are dropped as unknown */
	expect_drop(ha, (struct bu_args){ .seq = 2, .lifetime = 10, .sa = 1 }, MIP6_DROP_UNKNOWN_HOA);
	mip6_ha_destroy(ha);
	mip6_ha_destroy(NULL);
}

/* ---- expiry at scale, against a naive model ---- */

#define BIG 10000

struct exp_log {
	unsigned n;
	uint64_t last_expiry;
	bool ordered;
	uint8_t seen[BIG];
};

static unsigned idx_of(const uint8_t hoa[16])
{
	return (unsigned)(hoa[14] << 8 | hoa[15]) | (unsigned)hoa[13] << 16;
}

static void on_expire(const struct mip6_binding *b, void *arg)
{
	struct exp_log *l = arg;
	if (b->expires_ms < l->last_expiry)
		l->ordered = false;
	l->last_expiry = b->expires_ms;
	l->seen[idx_of(b->hoa)]++;
	l->n++;
}

static void test_ha_scale_expiry(void **state)
{
	(void)state;
	struct mip6_ha_config c;
	memset(&c, 0, sizeof(c));
	A(c.ha_addrs[0], HA1);
	c.n_ha_addrs = 1;
	A(c.prefixes[0].addr, "2001:db8::");
	c.prefixes[0].len = 64;
	c.n_prefixes = 1;
	c.max_lifetime_s = 262140;
	c.max_mns = BIG;
	struct mip6_ha *ha;
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	static uint64_t model[BIG];  /* expiry per mobile node, 0 = no binding */
	uint8_t hoa[16], b[MIP6_BU_MAX_LEN];
	char s[64];
	for (unsigned i = 0; i < BIG; i++) {
		struct mip6_mn m = { .bu_sa = 1000 + i };
		snprintf(s, sizeof(s), "2001:db8::%x:%x", i >> 16, i & 0xffff);
		A(m.hoa, s);
		assert_int_equal(mip6_ha_mn_add(ha, &m), 0);
	}
	srand(4877);
	uint16_t seq[BIG] = { 0 };
	struct mip6_ha_result r;
	uint64_t now = 0;
	struct exp_log *log = calloc(1, sizeof(*log));
	for (int round = 0; round < 6; round++) {
		/* register or refresh a random two thirds with random lifetimes, expire a step */
		for (unsigned i = 0; i < BIG; i++) {
			if (rand() % 3 == 0)
				continue;
			snprintf(s, sizeof(s), "2001:db8::%x:%x", i >> 16, i & 0xffff);
			A(hoa, s);
			uint16_t units = (uint16_t)(1 + rand() % 200);
			int n = build_bu(b, COA1, HA1, s, ++seq[i], MIP6_BU_A | MIP6_BU_H, units, COA1);
			mip6_ha_input(ha, b, (uint32_t)n, 1000 + i, now, &r);
			assert_int_equal(r.drop, MIP6_DROP_NONE);
			assert_int_equal(r.ba.status, 0);
			assert_int_equal(r.change, model[i] ? MIP6_CHANGE_REFRESH : MIP6_CHANGE_NEW);
			model[i] = now + units * 4000ull;
		}
		unsigned want = 0, bound = 0;
		uint64_t step = now + 400000;  /* half the longest lifetime */
		uint64_t next = UINT64_MAX;
		for (unsigned i = 0; i < BIG; i++) {
			if (model[i] && model[i] < next)
				next = model[i];
		}
		assert_int_equal(mip6_ha_next_expiry(ha), next);
		memset(log, 0, sizeof(*log));
		log->ordered = true;
		for (unsigned i = 0; i < BIG; i++) {
			if (model[i] && model[i] <= step) {
				want++;
				log->seen[i] = 0;
			} else if (model[i]) {
				bound++;
			}
		}
		assert_int_equal(mip6_ha_expire(ha, step, on_expire, log), want);
		assert_int_equal(log->n, want);
		assert_true(log->ordered);
		for (unsigned i = 0; i < BIG; i++) {
			bool due = model[i] && model[i] <= step;
			assert_int_equal(log->seen[i], due ? 1 : 0);
			if (due)
				model[i] = 0;
			snprintf(s, sizeof(s), "2001:db8::%x:%x", i >> 16, i & 0xffff);
			A(hoa, s);
			const struct mip6_binding *bb = mip6_ha_lookup(ha, hoa);
			if (model[i]) {
				assert_non_null(bb);
				assert_int_equal(bb->expires_ms, model[i]);
			} else {
				assert_null(bb);
			}
		}
		assert_int_equal(mip6_ha_count(ha), bound);
		/* nothing else is due at the same instant */
		assert_int_equal(mip6_ha_expire(ha, step, on_expire, log), 0);
		now = step - 200000;
	}
	assert_int_equal(mip6_ha_stats(ha)->bindings_expired + mip6_ha_count(ha),
			 mip6_ha_stats(ha)->bindings_added);
	free(log);
	mip6_ha_destroy(ha);
}

/* The addresses a mobile node's packet is selected by (RFC 3776 section 4): a Binding Update from the
 * care-of address with a Home Address option selects by the home address, a Binding Acknowledgement
 * with a type 2 routing header by its final destination; anything malformed or repeated keeps the
 * header's own addresses. One row per case: a base packet, bytes changed in it, the length given. */
enum sel_base { SEL_BU_HAO, SEL_BA_RH2, SEL_V4 };

static uint32_t sel_packet(uint8_t *p, enum sel_base base)
{
	static const uint8_t coa[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 2, [15] = 5 };
	static const uint8_t ha[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1 };
	static const uint8_t hoa[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [14] = 1 };

	memset(p, 0, 200);
	if (base == SEL_V4) {
		p[0] = 0x45; p[3] = 28; p[8] = 64; p[9] = 17;
		return 28;
	}
	p[0] = 0x60;
	p[5] = 40;
	p[7] = 64;
	if (base == SEL_BU_HAO) {
		/* CoA -> HA | DSTOPTS (PadN 2, HAO at 8n+6) | MH BU */
		p[6] = 60;
		memcpy(p + 8, coa, 16);
		memcpy(p + 24, ha, 16);
		p[40] = MIP6_PROTO_MH; p[41] = 2; p[42] = 1; p[43] = 2;
		p[46] = MIP6_OPT_HAO; p[47] = 16;
		memcpy(p + 48, hoa, 16);
		p[64] = 59; p[65] = 1; p[66] = MIP6_MH_BU;
	} else {
		/* HA -> CoA | RH2 (segments left 1, HoA) | MH BA */
		p[6] = 43;
		memcpy(p + 8, ha, 16);
		memcpy(p + 24, coa, 16);
		p[40] = MIP6_PROTO_MH; p[41] = 2; p[42] = MIP6_RH_TYPE2; p[43] = 1;
		memcpy(p + 48, hoa, 16);
		p[64] = 59; p[65] = 1; p[66] = MIP6_MH_BA;
	}
	return 80;
}

static void test_sel_addrs(void **state)
{
	(void)state;
	/* what src and dst should be after: the header's own (H), or the home address (M) */
	enum { H, M };
	static const struct {
		const char *name;
		enum sel_base base;
		uint32_t len;            /* 0: the whole packet */
		uint8_t n_set, at[4], v[4];
		int src, dst;
	} rows[] = {
		{ "BU, one Home Address option", SEL_BU_HAO, 0, 0, {0}, {0}, M, H },
		{ "HAO of the wrong length", SEL_BU_HAO, 0, 3, { 47, 62, 63 }, { 14, 1, 0 }, H, H },
		{ "two HAOs: neither counts", SEL_BU_HAO, 0, 4, { 42, 43, 44, 45 }, { 201, 0, 1, 0 }, H, H },
		{ "an option overrunning its header", SEL_BU_HAO, 0, 2, { 42, 43 }, { 1, 40 }, H, H },
		{ "HAO misaligned (not 8n+6)", SEL_BU_HAO, 0, 4, { 42, 43, 46, 47 }, { 201, 16, 1, 2 }, H, H },
		{ "BA, type 2 routing header", SEL_BA_RH2, 0, 0, {0}, {0}, H, M },
		{ "RH2 with segments left 0", SEL_BA_RH2, 0, 1, { 43 }, { 0 }, H, H },
		{ "type 0 routing header", SEL_BA_RH2, 0, 1, { 42 }, { 0 }, H, H },
		{ "RH2 of the wrong length", SEL_BA_RH2, 0, 1, { 41 }, { 1 }, H, H },
		{ "payload length past the packet", SEL_BU_HAO, 45, 0, {0}, {0}, H, H },
		{ "IPv4", SEL_V4, 0, 0, {0}, {0}, H, H },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[200], src[16], dst[16], hoa[16], want_src[16], want_dst[16];
		uint32_t len = sel_packet(p, rows[r].base);

		for (unsigned k = 0; k < rows[r].n_set; k++)
			p[rows[r].at[k]] = rows[r].v[k];
		if (rows[r].len)
			len = rows[r].len;
		memcpy(src, p + 8, 16);
		memcpy(dst, p + 24, 16);
		memcpy(hoa, p + 48, 16);
		memcpy(want_src, rows[r].src == M ? hoa : src, 16);
		memcpy(want_dst, rows[r].dst == M ? hoa : dst, 16);
		mip6_sel_addrs(p, len, src, dst);
		if (memcmp(src, want_src, 16) || memcmp(dst, want_dst, 16))
			fail_msg("%s: wrong selector addresses", rows[r].name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bu_roundtrip),
		cmocka_unit_test(test_scapy_vector),
		cmocka_unit_test(test_ba_roundtrip),
		cmocka_unit_test(test_be_roundtrip),
		cmocka_unit_test(test_parse_drops),
		cmocka_unit_test(test_parse_mutations),
		cmocka_unit_test(test_ha_register),
		cmocka_unit_test(test_ha_seq_window),
		cmocka_unit_test(test_ha_seq_restart),
		cmocka_unit_test(test_ha_rejections),
		cmocka_unit_test(test_ha_nemo),
		cmocka_unit_test(test_ha_coa_bound),
		cmocka_unit_test(test_ha_move_rate),
		cmocka_unit_test(test_ha_drops),
		cmocka_unit_test(test_ha_k_and_refresh),
		cmocka_unit_test(test_ha_mn_counters),
		cmocka_unit_test(test_ha_ike_node),
		cmocka_unit_test(test_ha_config),
		cmocka_unit_test(test_ha_dad_failed),
		cmocka_unit_test(test_brr_and_dad_ns),
		cmocka_unit_test(test_ha_scale_expiry),
		cmocka_unit_test(test_sel_addrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
