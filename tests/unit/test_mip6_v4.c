/* tests/unit/test_mip6_v4.c: unit tests of libmip6's Dual Stack Mobile IPv6 part
 * (mobility/mip6_v4.h, RFC 5555): the IPv4 options of a Binding Update read (one row per shape:
 * absent, well formed, wrong length, off 4n, repeated, overrunning, unknown ones skipped), the home
 * agent's decision for each way a Binding Update can arrive over IPv4 (plain, UDP without and with a
 * NAT, plain through a NAT, an IPv4 home address asked for), and the acknowledgement's options
 * appended and read back by mip6_parse (its checksum verified there) byte for byte. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "mobility/mip6_v4.h"

/* A Binding Update's Mobility Header: the 12 fixed bytes, then opts[0..n) (padded with zeros, Pad1s,
 * to a multiple of 8). Returns the MH length. */
static uint32_t bu_mh(uint8_t *mh, const uint8_t *opts, uint32_t n)
{
	uint32_t len = (12u + n + 7u) / 8u * 8u;

	memset(mh, 0, len);
	mh[0] = MIP6_PROTO_NONE;
	mh[1] = (uint8_t)(len / 8 - 1);
	mh[2] = MIP6_MH_BU;
	memcpy(mh + 12, opts, n);
	return len;
}

#define COA   32, 6, 0, 0, 198, 51, 100, 7
#define HOA4  29, 6, 24 << 2, 0, 192, 0, 2, 9
#define PADN2 1, 0

static void test_bu_opts(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		uint8_t opts[32];
		uint32_t n;
		enum mip6_drop want;
		bool coa, hoa;
	} rows[] = {
		{ "none", { 0 }, 0, MIP6_DROP_NONE, false, false },
		{ "care-of at 12 (4n)", { COA }, 8, MIP6_DROP_NONE, true, false },
		{ "care-of and home address", { COA, HOA4 }, 16, MIP6_DROP_NONE, true, true },
		{ "unknown option skipped first", { 40, 2, 9, 9, COA }, 12, MIP6_DROP_NONE, true, false },
		{ "care-of at 14: off 4n", { PADN2, COA }, 10, MIP6_DROP_BAD_OPTION_ALIGN, false, false },
		{ "care-of length 4", { 32, 4, 0, 0, 1, 2 }, 6, MIP6_DROP_BAD_OPTION, false, false },
		{ "care-of twice", { COA, COA }, 16, MIP6_DROP_BAD_OPTION, false, false },
		{ "home address twice", { HOA4, HOA4 }, 16, MIP6_DROP_BAD_OPTION, false, false },
		{ "an option overruns the message", { 0, 0, 0, 0, 1, 9 }, 6, MIP6_DROP_BAD_OPTION, false, false },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t mh[64];
		struct mip6_v4_bu bu;
		uint32_t len = bu_mh(mh, rows[i].opts, rows[i].n);
		enum mip6_drop d = mip6_v4_bu_opts(mh, len, &bu);

		print_message("%s\n", rows[i].name);
		assert_int_equal(d, rows[i].want);
		if (d != MIP6_DROP_NONE)
			continue;
		assert_int_equal(bu.has_coa, rows[i].coa);
		assert_int_equal(bu.has_hoa, rows[i].hoa);
		if (bu.has_coa)
			assert_memory_equal(bu.coa, ((const uint8_t[]){ 198, 51, 100, 7 }), 4);
		if (bu.has_hoa) {
			assert_memory_equal(bu.hoa, ((const uint8_t[]){ 192, 0, 2, 9 }), 4);
			assert_int_equal(bu.hoa_plen, 24);
			assert_false(bu.hoa_p);
		}
	}
}

static void test_register(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		bool has_coa, has_hoa;
		uint8_t coa[4], hoa[4], src[4];
		bool udp;
		enum mip6_v4_refusal want;
		bool nat, natd;
		uint8_t ack;             /* 0xff: no IPv4 Address Acknowledgement */
	} rows[] = {
		{ "plain IPv4, no NAT", true, false, { 198, 51, 100, 7 }, { 0 }, { 198, 51, 100, 7 }, false,
		  MIP6_V4_OK, false, false, 0xff },
		{ "UDP, no NAT: F clear", true, false, { 198, 51, 100, 7 }, { 0 }, { 198, 51, 100, 7 }, true,
		  MIP6_V4_OK, false, true, 0xff },
		{ "UDP through a NAT: F set", true, false, { 10, 0, 0, 7 }, { 0 }, { 203, 0, 113, 1 }, true,
		  MIP6_V4_OK, true, true, 0xff },
		{ "plain through a NAT: told to use UDP", true, false, { 10, 0, 0, 7 }, { 0 }, { 203, 0, 113, 1 },
		  false, MIP6_V4_OK, true, true, 0xff },
		{ "dynamic IPv4 home address asked: 132", true, true, { 198, 51, 100, 7 }, { 0 },
		  { 198, 51, 100, 7 }, true, MIP6_V4_OK, false, true, MIP6_V4ACK_NO_DYNAMIC },
		{ "static IPv4 home address asked: 129", true, true, { 198, 51, 100, 7 }, { 192, 0, 2, 9 },
		  { 198, 51, 100, 7 }, true, MIP6_V4_OK, false, true, MIP6_V4ACK_PROHIBITED },
		{ "no care-of option", false, false, { 0 }, { 0 }, { 198, 51, 100, 7 }, true,
		  MIP6_V4_NO_COA_OPTION, false, false, 0xff },
		{ "care-of multicast", true, false, { 224, 0, 0, 5 }, { 0 }, { 198, 51, 100, 7 }, true,
		  MIP6_V4_COA_NOT_UNICAST, false, false, 0xff },
		{ "outer source loopback", true, false, { 198, 51, 100, 7 }, { 0 }, { 127, 0, 0, 1 }, true,
		  MIP6_V4_COA_NOT_UNICAST, false, false, 0xff },
		{ "care-of 0.0.0.0", true, false, { 0 }, { 0 }, { 198, 51, 100, 7 }, true,
		  MIP6_V4_COA_NOT_UNICAST, false, false, 0xff },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mip6_v4_bu bu = { .has_coa = rows[i].has_coa, .has_hoa = rows[i].has_hoa, .hoa_plen = 24 };
		struct mip6_v4_outer o = { .udp = rows[i].udp, .sport = rows[i].udp ? 40123 : 0 };
		struct mip6_v4_reg r;
		uint8_t v4[4];

		print_message("%s\n", rows[i].name);
		memcpy(bu.coa, rows[i].coa, 4);
		memcpy(bu.hoa, rows[i].hoa, 4);
		memcpy(o.src, rows[i].src, 4);
		assert_int_equal(mip6_v4_register(&bu, &o, &r), rows[i].want);
		if (rows[i].want != MIP6_V4_OK)
			continue;
		/* the binding follows the outer header, whatever the option says */
		assert_true(mip6_v4_is_mapped(r.coa, v4));
		assert_memory_equal(v4, rows[i].src, 4);
		assert_int_equal(r.udp, rows[i].udp);
		assert_int_equal(r.port, rows[i].udp ? 40123 : 0);
		assert_int_equal(r.nat, rows[i].nat);
		assert_int_equal(r.natd_option, rows[i].natd);
		assert_int_equal(r.nat_refresh_s, rows[i].nat ? MIP6_V4_NAT_REFRESH_S : 0);
		assert_int_equal(r.ack_option, rows[i].ack != 0xff);
		if (r.ack_option) {
			assert_int_equal(r.ack_status, rows[i].ack);
			assert_int_equal(r.ack_plen, 24);
			assert_memory_equal(r.ack_hoa, rows[i].hoa, 4);
		}
	}
	assert_string_equal(mip6_v4_refusal_name(MIP6_V4_NO_COA_OPTION), "no-ipv4-coa-option");
	assert_string_equal(mip6_v4_refusal_name(MIP6_V4_REFUSAL_MAX), "?");
}

/* The acknowledgement of an IPv4 registration (RFC 5555 4.2: to the home address, no routing
 * header) and of an IPv6 one with a routing header, each with both options: parsed back, checksum
 * verified by mip6_parse, options byte for byte. */
static void test_ba_append(void **state)
{
	(void)state;
	for (int rh2 = 0; rh2 <= 1; rh2++) {
		struct mip6_ba_params p = { .status = 0, .seq = 9, .lifetime = 150, .refresh = 30, .rh2 = rh2 };
		struct mip6_v4_reg r = { .natd_option = true, .nat = true, .nat_refresh_s = 110,
					 .ack_option = true, .ack_status = MIP6_V4ACK_NO_DYNAMIC, .ack_plen = 24 };
		uint8_t b[MIP6_BA_MAX_LEN + MIP6_V4_BA_EXTRA];
		struct mip6_pkt pk;

		inet_pton(AF_INET6, "2001:db8:1::1", p.src);
		inet_pton(AF_INET6, rh2 ? "2001:db8:a::100" : "2001:db8:1::100", p.dst);
		inet_pton(AF_INET6, "2001:db8:1::100", p.hoa);
		int n = mip6_build_ba(b, sizeof(b), &p);
		assert_true(n > 0);
		assert_int_equal(mip6_v4_ba_append(b, (size_t)n, (size_t)n + 15, &r), -ENOSPC);
		int m = mip6_v4_ba_append(b, (size_t)n, sizeof(b), &r);
		assert_int_equal(m, n + 16);
		assert_int_equal(mip6_parse(b, (uint32_t)m, &pk), MIP6_DROP_NONE);
		assert_int_equal(pk.mh_type, MIP6_MH_BA);
		assert_int_equal(pk.mh_len, 32);
		assert_int_equal(pk.m.ba.seq, 9);
		assert_true(pk.m.ba.has_refresh);
		static const uint8_t want[16] = { 31, 6, 0x80, 0, 0, 0, 0, 110, 30, 6, 132, 24 << 2, 0, 0, 0, 0 };
		assert_memory_equal(b + pk.mh_off + 16, want, 16);
		/* not a BA, or a length that is not the packet's: refused */
		assert_int_equal(mip6_v4_ba_append(b, (size_t)m - 1, sizeof(b), &r), -EINVAL);
	}
}

static void test_mapped(void **state)
{
	(void)state;
	uint8_t a[16], v4[4], six[16];

	mip6_v4_mapped((const uint8_t[]){ 198, 51, 100, 7 }, a);
	assert_true(inet_pton(AF_INET6, "::ffff:198.51.100.7", six) == 1);
	assert_memory_equal(a, six, 16);
	assert_true(mip6_v4_is_mapped(a, v4));
	assert_memory_equal(v4, ((const uint8_t[]){ 198, 51, 100, 7 }), 4);
	assert_true(inet_pton(AF_INET6, "2001:db8::1", six) == 1);
	assert_false(mip6_v4_is_mapped(six, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bu_opts),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_ba_append),
		cmocka_unit_test(test_mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
