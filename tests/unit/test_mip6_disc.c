/* tests/unit/test_mip6_disc.c: unit tests of libmip6's home agent discovery (mobility/mip6_disc.h,
 * RFC 6275 section 10.5): a Router Advertisement scapy built read into the home agents list, every
 * malformed RA refused with the list unchanged, the list's rules (H bit cleared, lifetime 0, the
 * Router Lifetime as default, expiry, a full list), the Home-Agents anycast address (RFC 2526), and
 * the DHAAD Reply (order by preference, the own address always in, other prefixes out, equal
 * preferences turned, the size limit, malformed requests); Mobile Prefix Discovery (section 10.6):
 * a Solicitation scapy built read, each fault refused, and the Advertisement built byte for byte as
 * scapy builds it. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "mobility/mip6.h"
#include "mobility/mip6_disc.h"

static const uint8_t *ad(const char *s)
{
	static uint8_t ring[16][16];
	static unsigned n;
	uint8_t *a = ring[n++ % 16];

	assert_int_equal(inet_pton(AF_INET6, s, a), 1);
	return a;
}

/* scapy: ICMPv6ND_RA(H=1, routerlifetime=1800) / ICMPv6NDOptPrefixInfo(prefix='2001:db8:1::10',
 * R=1, prefixlen=64) / ICMPv6NDOptHAInfo(pref=20, lifetime=3) / ICMPv6NDOptSrcLLAddr(), from
 * fe80::1 to ff02::1 (the ICMPv6 message only) */
static const uint8_t scapy_ra[64] = {
	0x86, 0x00, 0xf8, 0x06, 0x00, 0x28, 0x07, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x03, 0x04, 0x40, 0xe0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
	0x08, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x03, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
};
#define OFF_PREFIX  16   /* the Prefix Information option */
#define OFF_HA_INFO 48   /* the Home Agent Information option */

/* An RA like scapy's: router ll, address addr (R bit), preference pref, lifetime life (-1: no Home
 * Agent Information option, the Router Lifetime rl applies). Its length. */
static size_t ra(uint8_t *b, const char *addr, int pref, int life, uint16_t rl)
{
	memcpy(b, scapy_ra, sizeof(scapy_ra));
	memcpy(b + OFF_PREFIX + 16, ad(addr), 16);
	b[6] = (uint8_t)(rl >> 8);
	b[7] = (uint8_t)rl;
	if (life < 0) {              /* the source link-layer option moves into its place */
		memmove(b + OFF_HA_INFO, b + OFF_HA_INFO + 8, 8);
		return sizeof(scapy_ra) - 8;
	}
	b[OFF_HA_INFO + 4] = (uint8_t)((uint16_t)pref >> 8);
	b[OFF_HA_INFO + 5] = (uint8_t)pref;
	b[OFF_HA_INFO + 6] = (uint8_t)(life >> 8);
	b[OFF_HA_INFO + 7] = (uint8_t)life;
	return sizeof(scapy_ra);
}

static const uint8_t dhaad_req[8] = { MIP6_ICMP_DHAAD_REQ, 0, 0, 0, 0xbe, 0xef, 0, 0 };

/* The reply's addresses as text, one space between: what a mobile node would try, in order. */
static const char *reply(struct mip6_halist *l, const char *own, const char *prefix, unsigned plen)
{
	static char s[1024];
	uint8_t out[MIP6_DHAAD_HDR + 16 * MIP6_DHAAD_MAX_ADDRS];
	int n = mip6_dhaad_reply(l, ad(own), ad(prefix), plen, dhaad_req, sizeof(dhaad_req), out,
				 sizeof(out));

	assert_true(n >= (int)MIP6_DHAAD_HDR + 16);
	assert_int_equal((n - MIP6_DHAAD_HDR) % 16, 0);
	assert_int_equal(out[0], MIP6_ICMP_DHAAD_REP);
	assert_int_equal(out[1], 0);
	assert_memory_equal(out + 4, dhaad_req + 4, 2);   /* the identifier (section 6.6) */
	s[0] = 0;
	for (int off = MIP6_DHAAD_HDR; off < n; off += 16) {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, out + off, a, sizeof(a));
		if (s[0])
			strcat(s, " ");
		strcat(s, a);
	}
	return s;
}

static void test_scapy_ra(void **state)
{
	struct mip6_halist l = { 0 };

	(void)state;
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::1"), scapy_ra, sizeof(scapy_ra), 1000), 0);
	assert_int_equal(l.n, 1);
	assert_memory_equal(l.e[0].addr, ad("2001:db8:1::10"), 16);
	assert_memory_equal(l.e[0].ll, ad("fe80::1"), 16);
	assert_int_equal(l.e[0].pref, 20);
	assert_int_equal(l.e[0].expires_ms, 1000 + 3000);  /* the option's lifetime, not the RA's */
	assert_int_equal(l.ra_taken, 1);
	assert_int_equal(l.ra_bad, 0);
}

/* RFC 4861 section 6.1.2 and 4.6: each row one fault; nothing in the list changes. */
static void test_bad_ra(void **state)
{
	static const struct {
		const char *what;
		int off, val;            /* byte changed (-1: none) */
		size_t len;              /* length given (0: whole) */
		const char *src;
	} rows[] = {
		{ "shorter than the RA header", -1, 0, 12, "fe80::1" },
		{ "not an RA", 0, 133, 0, "fe80::1" },
		{ "code not 0", 1, 1, 0, "fe80::1" },
		{ "source not link-local", -1, 0, 0, "2001:db8:1::99" },
		{ "an option of length 0", OFF_PREFIX + 1, 0, 0, "fe80::1" },
		{ "an option past the end", OFF_HA_INFO + 1, 3, 0, "fe80::1" },
		{ "Home Agent Information of length 2", OFF_HA_INFO + 1, 2, 0, "fe80::1" },
		{ "an R-bit Prefix Information of length 3", OFF_PREFIX + 1, 3, 0, "fe80::1" },
		{ "an option header cut", -1, 0, sizeof(scapy_ra) - 7, "fe80::1" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mip6_halist l = { 0 }, before;
		uint8_t b[sizeof(scapy_ra)];

		assert_int_equal(mip6_halist_ra(&l, ad("fe80::2"), scapy_ra, sizeof(scapy_ra), 0), 0);
		before = l;
		memcpy(b, scapy_ra, sizeof(b));
		if (rows[i].off >= 0)
			b[rows[i].off] = (uint8_t)rows[i].val;
		if (mip6_halist_ra(&l, ad(rows[i].src), b, rows[i].len ? rows[i].len : sizeof(b), 5) !=
		    -EINVAL)
			fail_msg("%s: taken", rows[i].what);
		assert_int_equal(l.ra_bad, before.ra_bad + 1);
		l.ra_bad = before.ra_bad;
		assert_memory_equal(&l, &before, sizeof(l));
	}
}

/* Section 10.5.1: the list follows each router's latest RA. */
static void test_list_rules(void **state)
{
	struct mip6_halist l = { 0 };
	uint8_t b[sizeof(scapy_ra)];
	size_t n;

	(void)state;
	n = ra(b, "2001:db8:1::10", 20, 30, 1800);
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::1"), b, n, 0), 0);
	n = ra(b, "2001:db8:1::20", 5, -1, 40);       /* no HA option: preference 0, Router Lifetime */
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::2"), b, n, 0), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.e[1].pref, 0);
	assert_int_equal(l.e[1].expires_ms, 40000);
	/* the same router announces another address: the old one goes */
	n = ra(b, "2001:db8:1::11", 20, 30, 1800);
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::1"), b, n, 1000), 0);
	assert_string_equal(reply(&l, "2001:db8:1::1", "2001:db8:1::", 64),
			    "2001:db8:1::11 2001:db8:1::1 2001:db8:1::20");
	/* H bit cleared: no longer a home agent */
	n = ra(b, "2001:db8:1::11", 20, 30, 1800);
	b[5] &= (uint8_t)~MIP6_RA_H;
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::1"), b, n, 2000), 0);
	assert_int_equal(l.n, 1);
	/* lifetime 0: the same */
	n = ra(b, "2001:db8:1::20", 0, 0, 1800);
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::2"), b, n, 2000), 0);
	assert_int_equal(l.n, 0);
	/* expiry */
	n = ra(b, "2001:db8:1::10", 20, 3, 1800);
	assert_int_equal(mip6_halist_ra(&l, ad("fe80::1"), b, n, 10000), 0);
	mip6_halist_expire(&l, 12999);
	assert_int_equal(l.n, 1);
	mip6_halist_expire(&l, 13000);
	assert_int_equal(l.n, 0);
	/* a full list takes no more and counts it */
	for (unsigned i = 0; i <= MIP6_HALIST_MAX; i++) {
		char ll[64], a[64];

		snprintf(ll, sizeof(ll), "fe80::%x", i + 1);
		snprintf(a, sizeof(a), "2001:db8:1::%x", i + 0x100);
		n = ra(b, a, 1, 60, 1800);
		assert_int_equal(mip6_halist_ra(&l, ad(ll), b, n, 0), 0);
	}
	assert_int_equal(l.n, MIP6_HALIST_MAX);
	assert_int_equal(l.full, 1);
}

/* RFC 2526 section 2 and 3: the prefix, ones, anycast ID 126 in the last 7 bits; the EUI-64
 * universal/local bit 0 in a /64. */
static void test_anycast(void **state)
{
	static const struct { const char *prefix; unsigned plen; const char *want; } rows[] = {
		{ "2001:db8:1::", 64, "2001:db8:1:0:fdff:ffff:ffff:fffe" },
		{ "2001:db8:1::", 48, "2001:db8:1:ffff:ffff:ffff:ffff:fffe" },
		{ "2001:db8:1:ab00::", 56, "2001:db8:1:abff:ffff:ffff:ffff:fffe" },
		{ "2001:db8:1:2:3:4:5:0", 112, "2001:db8:1:2:3:4:5:fffe" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t out[16];

		mip6_ha_anycast(ad(rows[i].prefix), rows[i].plen, out);
		assert_memory_equal(out, ad(rows[i].want), 16);
	}
}

static void test_reply(void **state)
{
	struct mip6_halist l = { 0 };
	uint8_t b[sizeof(scapy_ra)], out[MIP6_DHAAD_HDR + 32], req[8];
	size_t n;

	(void)state;
	/* alone: the own address, though no RA named it */
	assert_string_equal(reply(&l, "2001:db8:1::1", "2001:db8:1::", 64), "2001:db8:1::1");
	n = ra(b, "2001:db8:1::10", 20, 60, 1800);
	mip6_halist_ra(&l, ad("fe80::10"), b, n, 0);
	n = ra(b, "2001:db8:1::1", 30, 60, 1800);     /* our own RA, looped back: its preference */
	mip6_halist_ra(&l, ad("fe80::1"), b, n, 0);
	n = ra(b, "2001:db8:2::5", 90, 60, 1800);     /* another prefix's: never listed for this one */
	mip6_halist_ra(&l, ad("fe80::5"), b, n, 0);
	n = ra(b, "2001:db8:1::8", -3, 60, 1800);     /* a negative preference: last */
	mip6_halist_ra(&l, ad("fe80::8"), b, n, 0);
	assert_string_equal(reply(&l, "2001:db8:1::1", "2001:db8:1::", 64),
			    "2001:db8:1::1 2001:db8:1::10 2001:db8:1::8");
	assert_string_equal(reply(&l, "2001:db8:2::1", "2001:db8:2::", 64),
			    "2001:db8:2::5 2001:db8:2::1");
	/* equal preferences take turns at the head */
	n = ra(b, "2001:db8:1::30", 30, 60, 1800);
	mip6_halist_ra(&l, ad("fe80::30"), b, n, 0);
	const char *r1 = reply(&l, "2001:db8:1::1", "2001:db8:1::", 64);
	char first[256];
	snprintf(first, sizeof(first), "%s", r1);
	const char *r2 = reply(&l, "2001:db8:1::1", "2001:db8:1::", 64);
	assert_string_not_equal(first, r2);
	assert_true(strstr(first, "2001:db8:1::10 2001:db8:1::8") != NULL);
	assert_true(strstr(r2, "2001:db8:1::10 2001:db8:1::8") != NULL);
	/* room for two: the two most preferred */
	assert_int_equal(mip6_dhaad_reply(&l, ad("2001:db8:1::1"), ad("2001:db8:1::"), 64, dhaad_req,
					  sizeof(dhaad_req), out, sizeof(out)), MIP6_DHAAD_HDR + 32);
	for (unsigned k = 0; k < 2; k++)
		assert_true(!memcmp(out + 8 + 16 * k, ad("2001:db8:1::1"), 16) ||
			    !memcmp(out + 8 + 16 * k, ad("2001:db8:1::30"), 16));
	assert_memory_not_equal(out + 8, out + 24, 16);
	/* what is no DHAAD Request */
	memcpy(req, dhaad_req, sizeof(req));
	assert_int_equal(mip6_dhaad_reply(&l, ad("2001:db8:1::1"), ad("2001:db8:1::"), 64, req, 7, out,
					  sizeof(out)), -EINVAL);
	req[1] = 1;
	assert_int_equal(mip6_dhaad_reply(&l, ad("2001:db8:1::1"), ad("2001:db8:1::"), 64, req, 8, out,
					  sizeof(out)), -EINVAL);
	req[1] = 0;
	req[0] = MIP6_ICMP_DHAAD_REP;
	assert_int_equal(mip6_dhaad_reply(&l, ad("2001:db8:1::1"), ad("2001:db8:1::"), 64, req, 8, out,
					  sizeof(out)), -EINVAL);
}

/* scapy: IPv6(src='2001:db8:a::100', dst='2001:db8:1::1') / IPv6ExtHdrDestOpt(options=[HAO(
 * hoa='2001:db8:1::100')]) / ICMPv6MPSol(id=0x1234), checksummed by scapy */
static const uint8_t scapy_mps[72] = {
	0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3c, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0a, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x3a, 0x02, 0x01, 0x02, 0x00, 0x00, 0xc9, 0x10,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x92, 0x00, 0xff, 0x13, 0x12, 0x34, 0x00, 0x00,
};

static void test_mps(void **state)
{
	static const struct {
		const char *what;
		int off, val;            /* byte changed (-1: none) */
		size_t len;              /* length given (0: whole) */
		int want;
	} rows[] = {
		{ "scapy's", -1, 0, 0, 0 },
		{ "bytes past the payload length ignored", -1, 0, sizeof(scapy_mps) + 8, 0 },
		{ "a bad checksum", 66, 0x00, 0, -EINVAL },
		{ "code 1", 65, 1, 0, -EINVAL },
		{ "the Home Address option padded away", 46, 1, 0, -EINVAL }, /* PadN of its length */
		{ "shorter than its payload length", -1, 0, 70, -EINVAL },
		{ "not version 6", 0, 0x40, 0, -EINVAL },
		{ "a Router Solicitation", 64, 133, 0, -ENOMSG },
		{ "a Mobility Header", 40, 135, 0, -ENOMSG },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t b[sizeof(scapy_mps) + 8] = { 0 };
		struct mip6_mps m;
		int r;

		memcpy(b, scapy_mps, sizeof(scapy_mps));
		if (rows[i].off >= 0)
			b[rows[i].off] = (uint8_t)rows[i].val;
		r = mip6_mps_parse(b, rows[i].len ? (uint32_t)rows[i].len : sizeof(scapy_mps), &m);
		if (r != rows[i].want)
			fail_msg("%s: %d, not %d", rows[i].what, r, rows[i].want);
		if (r == 0) {
			assert_memory_equal(m.coa, ad("2001:db8:a::100"), 16);
			assert_memory_equal(m.hoa, ad("2001:db8:1::100"), 16);
			assert_memory_equal(m.dst, ad("2001:db8:1::1"), 16);
			assert_int_equal(m.id, 0x1234);
		}
	}
}

/* scapy: IPv6(src='2001:db8:1::1', dst='2001:db8:a::100') / IPv6ExtHdrRouting(type=2, segleft=1,
 * addresses=['2001:db8:1::100']) / ICMPv6MPAdv(id=0x1234, flags=0) / two ICMPv6NDOptPrefixInfo
 * (2001:db8:1::/64 and 2001:db8:9::/48, L=1, A=1, valid 2592000, preferred 604800) */
static const uint8_t scapy_mpa[136] = {
	0x60, 0x00, 0x00, 0x00, 0x00, 0x60, 0x2b, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0a, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x3a, 0x02, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00,
	0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x93, 0x00, 0x9b, 0x6d, 0x12, 0x34, 0x00, 0x00, 0x03, 0x04, 0x40, 0xc0, 0x00, 0x27, 0x8d, 0x00,
	0x00, 0x09, 0x3a, 0x80, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x04, 0x30, 0xc0, 0x00, 0x27, 0x8d, 0x00,
	0x00, 0x09, 0x3a, 0x80, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x09, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_mpa(void **state)
{
	struct mip6_mpa_params p = { .id = 0x1234, .n_prefix = 2, .valid_s = 2592000,
				     .preferred_s = 604800 };
	uint8_t b[MIP6_MPA_MAX_LEN];

	(void)state;
	memcpy(p.src, ad("2001:db8:1::1"), 16);
	memcpy(p.dst, ad("2001:db8:a::100"), 16);
	memcpy(p.hoa, ad("2001:db8:1::100"), 16);
	memcpy(p.prefix[0].addr, ad("2001:db8:1::"), 16);
	p.prefix[0].len = 64;
	memcpy(p.prefix[1].addr, ad("2001:db8:9::"), 16);
	p.prefix[1].len = 48;
	assert_int_equal(mip6_build_mpa(b, sizeof(b), &p), sizeof(scapy_mpa));
	assert_memory_equal(b, scapy_mpa, sizeof(scapy_mpa));
	assert_int_equal(mip6_build_mpa(b, sizeof(scapy_mpa) - 1, &p), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scapy_ra),
		cmocka_unit_test(test_bad_ra),
		cmocka_unit_test(test_list_rules),
		cmocka_unit_test(test_anycast),
		cmocka_unit_test(test_reply),
		cmocka_unit_test(test_mps),
		cmocka_unit_test(test_mpa),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
