/* tests/unit/test_mip6_err.c: unit tests of libmip6's error answers (mobility/mip6_err.h): one row
 * per drop reason for which error RFC 6275 §9.2 / §9.3.1 asks (and silence for a bad checksum or a
 * Header Len beyond the packet), the Binding Error with its type 2 routing header parsed back by
 * mip6_parse (checksum over the home address), the Parameter Problem's pointer, quote and ICMPv6
 * checksum checked by an independent sum, and the token bucket's burst and refill. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "mobility/mip6_err.h"

static void A(uint8_t a[16], const char *s)
{
	assert_int_equal(inet_pton(AF_INET6, s, a), 1);
}

/* A protected Binding Update as the mobile node sends it (IPv6 / Home Address option / MH), then
 * broken at byte mh_off + at by setting it to v (checksum fixed again unless keep_sum). */
static uint32_t bu_pkt(uint8_t *b, int at, uint8_t v, bool keep_sum, uint32_t *mh_off)
{
	uint8_t src[16], dst[16], hoa[16];
	struct mip6_bu bu = { .seq = 7, .flags = MIP6_BU_A | MIP6_BU_H, .lifetime = 15 };
	A(src, "2001:db8:a::100");
	A(dst, "2001:db8:1::1");
	A(hoa, "2001:db8:1::100");
	int n = mip6_build_bu(b, MIP6_BU_MAX_LEN, src, dst, hoa, &bu);
	assert_true(n > 0);
	*mh_off = 64;
	if (at >= 0) {
		uint8_t *mh = b + *mh_off;
		mh[at] = v;
		if (!keep_sum) {
			mh[4] = mh[5] = 0;
			uint16_t s = mip6_mh_checksum(hoa, dst, mh, (mh[1] + 1u) * 8u);
			mh[4] = (uint8_t)(s >> 8);
			mh[5] = (uint8_t)s;
		}
	}
	return (uint32_t)n;
}

static void test_due(void **state)
{
	(void)state;
	static const struct {
		int at;           /* MH byte changed, -1 none */
		uint8_t v;
		bool keep_sum;    /* leave the checksum wrong */
		bool bound;
		enum mip6_err want;
	} rows[] = {
		{ 2, 42, false, false, MIP6_ERR_BE_UNKNOWN_MH_TYPE },  /* §9.2: unknown type: BE 2 */
		{ 0, 6, false, false, MIP6_ERR_PP_PAYLOAD_PROTO },     /* §9.2: Payload Proto not 59 */
		{ 1, 0, false, false, MIP6_ERR_PP_HEADER_LEN },        /* 8 bytes: below a BU's 12 */
		{ 1, 9, true, false, MIP6_ERR_NONE },                  /* beyond the packet: truncated */
		{ 2, 42, true, false, MIP6_ERR_NONE },                 /* bad checksum: silent (§9.2) */
		{ 2, MIP6_MH_BRR, false, false, MIP6_ERR_BE_UNKNOWN_BINDING }, /* §9.3.1 */
		{ 2, MIP6_MH_BRR, false, true, MIP6_ERR_NONE },        /* with a binding: no error */
		{ -1, 0, false, false, MIP6_ERR_NONE },                /* a Binding Update: its BA answers */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t b[MIP6_BU_MAX_LEN];
		uint32_t off, n = bu_pkt(b, rows[i].at, rows[i].v, rows[i].keep_sum, &off);
		struct mip6_pkt p;
		enum mip6_drop d = mip6_parse(b, n, &p);
		if (d == MIP6_DROP_NONE && p.mh_type != MIP6_MH_BU)
			d = MIP6_DROP_NOT_BU;  /* what the home agent's rules say of it */
		print_message("row %zu: drop %s\n", i, mip6_drop_name(d));
		assert_int_equal(mip6_err_due(d, &p, rows[i].bound), rows[i].want);
	}
}

static void test_be_build(void **state)
{
	(void)state;
	uint8_t b[MIP6_BU_MAX_LEN], out[MIP6_ERR_MAX_LEN], hoa[16], coa[16], ha[16];
	uint32_t off, n = bu_pkt(b, 2, 42, false, &off);
	struct mip6_pkt p, e;
	A(hoa, "2001:db8:1::100");
	A(coa, "2001:db8:a::100");
	A(ha, "2001:db8:1::1");
	assert_int_equal(mip6_parse(b, n, &p), MIP6_DROP_UNKNOWN_MH_TYPE);
	int len = mip6_err_build(MIP6_ERR_BE_UNKNOWN_MH_TYPE, &p, b, n, out, sizeof(out));
	assert_int_equal(len, 40 + 24 + 24);
	assert_int_equal(mip6_parse(out, (uint32_t)len, &e), MIP6_DROP_NONE);
	assert_int_equal(e.mh_type, MIP6_MH_BE);
	assert_int_equal(e.m.be.status, MIP6_BE_UNKNOWN_MH_TYPE);
	assert_memory_equal(e.m.be.hoa, hoa, 16);
	assert_memory_equal(e.src, ha, 16);
	assert_memory_equal(e.dst, coa, 16);
	assert_true(e.has_rh2);
	assert_memory_equal(e.rh2_addr, hoa, 16);
	assert_int_equal(mip6_err_build(MIP6_ERR_NONE, &p, b, n, out, sizeof(out)), -EINVAL);
	assert_int_equal(mip6_err_build(MIP6_ERR_BE_UNKNOWN_MH_TYPE, &p, b, n, out, 40), -ENOSPC);
}

/* RFC 1071's sum, written apart from mip6.c's */
static uint16_t naive_icmp6_sum(const uint8_t *ip, uint32_t plen)
{
	uint32_t s = 0;
	for (int i = 8; i < 40; i += 2)
		s += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	s += plen + 58;
	for (uint32_t i = 0; i < plen; i += 2)
		s += (uint32_t)(ip[40 + i] << 8 | (i + 1 < plen ? ip[41 + i] : 0));
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void test_pp_build(void **state)
{
	(void)state;
	static const struct { int at; uint8_t v; enum mip6_err err; uint32_t ptr; } rows[] = {
		{ 0, 6, MIP6_ERR_PP_PAYLOAD_PROTO, 64 },
		{ 1, 0, MIP6_ERR_PP_HEADER_LEN, 65 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t b[MIP6_BU_MAX_LEN], out[MIP6_ERR_MAX_LEN], hoa[16];
		uint32_t off, n = bu_pkt(b, rows[i].at, rows[i].v, false, &off);
		struct mip6_pkt p;
		A(hoa, "2001:db8:1::100");
		mip6_parse(b, n, &p);
		assert_int_equal(mip6_err_due(rows[i].at ? MIP6_DROP_BAD_HDR_LEN : MIP6_DROP_BAD_PAYLOAD_PROTO,
					      &p, false), rows[i].err);
		int len = mip6_err_build(rows[i].err, &p, b, n, out, sizeof(out));
		assert_int_equal(len, 48 + (int)n);
		assert_int_equal(out[6], 58);
		assert_memory_equal(out + 24, hoa, 16);  /* to the home address, through its tunnel */
		assert_int_equal(out[40], 4);
		assert_int_equal(out[41], 0);
		uint32_t ptr = (uint32_t)out[44] << 24 | (uint32_t)out[45] << 16 | (uint32_t)out[46] << 8 | out[47];
		assert_int_equal(ptr, rows[i].ptr);
		assert_memory_equal(out + 48, b, n);
		assert_int_equal(naive_icmp6_sum(out, (uint32_t)len - 40), 0xffff);
	}
	/* a quote never takes the error past the IPv6 minimum MTU */
	uint8_t big[1400] = { 0x60 }, out[MIP6_ERR_MAX_LEN];
	struct mip6_pkt p = { .mh_off = 40, .mh_len = 8 };
	A(p.src, "2001:db8:a::100");
	A(p.dst, "2001:db8:1::1");
	assert_int_equal(mip6_err_build(MIP6_ERR_PP_PAYLOAD_PROTO, &p, big, sizeof(big), out, sizeof(out)), 1280);
	A(p.src, "ff02::1");  /* RFC 4443 §2.4 (e): no error to a multicast source */
	assert_int_equal(mip6_err_build(MIP6_ERR_PP_PAYLOAD_PROTO, &p, big, sizeof(big), out, sizeof(out)), -EINVAL);
}

static void test_bucket(void **state)
{
	(void)state;
	struct mip6_err_bucket b;
	mip6_err_bucket_init(&b, 3, 10, 1000);
	for (int i = 0; i < 3; i++)
		assert_true(mip6_err_bucket_take(&b, 1000));
	assert_false(mip6_err_bucket_take(&b, 1000));
	assert_false(mip6_err_bucket_take(&b, 1099));  /* 10 a second: one per 100 ms */
	assert_true(mip6_err_bucket_take(&b, 1100));
	assert_false(mip6_err_bucket_take(&b, 1100));
	/* a long pause refills to the burst, never beyond */
	for (int i = 0; i < 3; i++)
		assert_true(mip6_err_bucket_take(&b, 100000000));
	assert_false(mip6_err_bucket_take(&b, 100000000));
	mip6_err_bucket_init(&b, 0, 0, 0);
	assert_int_equal(b.burst, MIP6_ERR_BURST_DEFAULT);
	assert_int_equal(b.per_s, MIP6_ERR_RATE_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_due),
		cmocka_unit_test(test_be_build),
		cmocka_unit_test(test_pp_build),
		cmocka_unit_test(test_bucket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
