/* tests/unit/test_mip6_v4.c: unit tests of libmip6's Dual Stack Mobile IPv6 part
 * (mobility/mip6_v4.h, RFC 5555): the IPv4 options of a Binding Update read (one row per shape:
 * absent, well formed, wrong length, off 4n, repeated, overrunning, unknown ones skipped), the home
 * agent's decision for each way a Binding Update can arrive over IPv4 (plain, UDP without and with a
 * NAT, plain through a NAT, an IPv4 home address asked for), and the acknowledgement's options
 * appended and read back by mip6_parse (its checksum verified there) byte for byte; the whole home
 * agent on IPv4 registrations (mip6_v4_ha_bu, mip6_v4_build_ba) with libmip6's rules. */
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

/* An IPv6 Binding Update from hoa to the home agent as a mobile node on IPv4 sends it (RFC 5555
 * 4.1: no Home Address option), with an IPv4 Care-of Address option of coa4. */
static uint32_t v4_bu(uint8_t *b, const char *hoa, const uint8_t coa4[4], uint16_t seq, uint16_t units)
{
	uint8_t *mh = b + 40;

	memset(b, 0, 64);
	b[0] = 0x60;
	b[5] = 24;                           /* payload length */
	b[6] = MIP6_PROTO_MH;
	b[7] = 64;
	assert_int_equal(inet_pton(AF_INET6, hoa, b + 8), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", b + 24), 1);
	mh[0] = MIP6_PROTO_NONE;
	mh[1] = 2;                           /* 24 bytes */
	mh[2] = MIP6_MH_BU;
	mh[6] = (uint8_t)(seq >> 8);
	mh[7] = (uint8_t)seq;
	mh[8] = (MIP6_BU_A | MIP6_BU_H) >> 8;
	mh[10] = (uint8_t)(units >> 8);
	mh[11] = (uint8_t)units;
	mh[12] = MIP6_OPT_V4COA;
	mh[13] = 6;
	memcpy(mh + 16, coa4, 4);
	mh[20] = MIP6_OPT_PADN;
	mh[21] = 2;
	uint16_t c = mip6_mh_checksum(b + 8, b + 24, mh, 24);
	mh[4] = (uint8_t)(c >> 8);
	mh[5] = (uint8_t)c;
	return 64;
}

/* The whole home agent on IPv4 registrations: a registration through a NAT binds the IPv4-mapped
 * outer source and is acknowledged to the home address with NAT Detection; a move to another
 * IPv4 address; a deregistration; another node's SA, a Home Address option and a missing IPv4
 * option are refused or dropped with nothing changed. */
static void test_ha_bu(void **state)
{
	(void)state;
	struct mip6_ha_config c = { .n_ha_addrs = 1, .n_prefixes = 1, .max_lifetime_s = 3600, .max_mns = 8 };
	struct mip6_mn mn = { .bu_sa = 11, .ba_sa = 12 };
	struct mip6_ha *ha;
	struct mip6_ha_result res;
	struct mip6_v4_reg r;
	struct mip6_pkt p;
	uint8_t pkt[128], ba[MIP6_BA_MAX_LEN + MIP6_V4_BA_EXTRA], want[16];
	const uint8_t nat[4] = { 203, 0, 113, 1 }, priv[4] = { 10, 0, 0, 7 }, other[4] = { 198, 51, 100, 9 };
	struct mip6_v4_outer o = { .udp = true, .sport = 40123 };

	inet_pton(AF_INET6, "2001:db8::1", c.ha_addrs[0]);
	inet_pton(AF_INET6, "2001:db8::", c.prefixes[0].addr);
	c.prefixes[0].len = 64;
	inet_pton(AF_INET6, "2001:db8::100", mn.hoa);
	assert_int_equal(mip6_ha_create(&c, &ha), 0);
	assert_int_equal(mip6_ha_mn_add(ha, &mn), 0);

	/* 1. through a NAT: bound to ::ffff:203.0.113.1, BA to the home address with F set */
	memcpy(o.src, nat, 4);
	uint32_t n = v4_bu(pkt, "2001:db8::100", priv, 1, 150);
	assert_int_equal(mip6_parse(pkt, n, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 11, 1000, &res, &r), MIP6_V4_OK);
	assert_int_equal(res.drop, MIP6_DROP_NONE);
	assert_int_equal(res.ba.status, 0);
	assert_int_equal(res.change, MIP6_CHANGE_NEW);
	inet_pton(AF_INET6, "::ffff:203.0.113.1", want);
	assert_memory_equal(res.coa, want, 16);
	assert_true(r.nat && r.udp && r.port == 40123);
	const struct mip6_binding *b = mip6_ha_lookup(ha, mn.hoa);
	assert_non_null(b);
	assert_memory_equal(b->coa, want, 16);
	int len = mip6_v4_build_ba(ha, &res, &r, ba, sizeof(ba));
	assert_true(len > 0);
	assert_int_equal(mip6_parse(ba, (uint32_t)len, &p), MIP6_DROP_NONE);
	assert_false(p.has_rh2);
	assert_memory_equal(p.dst, mn.hoa, 16);
	assert_int_equal(p.m.ba.seq, 1);
	assert_int_equal(ba[p.mh_off + 16], MIP6_OPT_NATD);
	assert_int_equal(ba[p.mh_off + 18], 0x80);

	/* 2. moved to another IPv4 address, no NAT */
	memcpy(o.src, other, 4);
	n = v4_bu(pkt, "2001:db8::100", other, 2, 150);
	assert_int_equal(mip6_parse(pkt, n, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 11, 2000, &res, &r), MIP6_V4_OK);
	assert_int_equal(res.change, MIP6_CHANGE_MOVE);
	assert_false(r.nat);

	/* 3. a Binding Update on another node's SA: dropped, the binding stays */
	n = v4_bu(pkt, "2001:db8::100", other, 3, 150);
	assert_int_equal(mip6_parse(pkt, n, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 21, 3000, &res, &r), MIP6_V4_OK);
	assert_int_equal(res.drop, MIP6_DROP_WRONG_SA);

	/* 4. no IPv4 Care-of Address option (a PadN in its place): refused before the rules */
	n = v4_bu(pkt, "2001:db8::100", other, 3, 150);
	pkt[40 + 12] = MIP6_OPT_PADN;
	pkt[40 + 4] = pkt[40 + 5] = 0;
	uint16_t ck = mip6_mh_checksum(pkt + 8, pkt + 24, pkt + 40, 24);
	pkt[40 + 4] = (uint8_t)(ck >> 8);
	pkt[40 + 5] = (uint8_t)ck;
	assert_int_equal(mip6_parse(pkt, n, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 11, 3000, &res, &r), MIP6_V4_NO_COA_OPTION);
	assert_int_equal(res.drop, MIP6_DROP_BAD_OPTION);
	p.mh_type = MIP6_MH_BA;
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 11, 3000, &res, &r), MIP6_V4_MALFORMED);
	assert_int_equal(res.drop, MIP6_DROP_NOT_BU);

	/* 5. deregistration (lifetime 0) */
	n = v4_bu(pkt, "2001:db8::100", other, 4, 0);
	assert_int_equal(mip6_parse(pkt, n, &p), MIP6_DROP_NONE);
	assert_int_equal(mip6_v4_ha_bu(ha, &p, pkt, &o, 11, 4000, &res, &r), MIP6_V4_OK);
	assert_int_equal(res.change, MIP6_CHANGE_DELETE);
	assert_null(mip6_ha_lookup(ha, mn.hoa));
	mip6_ha_destroy(ha);
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
		cmocka_unit_test(test_ha_bu),
		cmocka_unit_test(test_mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
