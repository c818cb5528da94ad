/* tests/unit/test_dp_icmp.c: which packets the dataplane answers with an ICMP/ICMPv6 error
 * (dataplane/xipsecd/dp_icmp.h), one row per case: RFC 1812 §4.3.2.7 for IPv4, RFC 4443 §2.4 (e) for IPv6. */
#include "config.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_icmp.h"

static uint32_t v4(uint8_t *p, const char *src, const char *dst, uint8_t proto, uint8_t icmp_type,
		   uint16_t frag)
{
	memset(p, 0, 64);
	p[0] = 0x45;
	p[3] = 48;
	p[6] = (uint8_t)(frag >> 8);
	p[7] = (uint8_t)frag;
	p[8] = 64;
	p[9] = proto;
	inet_pton(AF_INET, src, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	p[20] = icmp_type;
	return 48;
}

static uint32_t v6(uint8_t *p, const char *src, const char *dst, uint8_t nh, uint8_t icmp_type)
{
	memset(p, 0, 64);
	p[0] = 0x60;
	p[5] = 8;
	p[6] = nh;
	p[7] = 64;
	inet_pton(AF_INET6, src, p + 8);
	inet_pton(AF_INET6, dst, p + 24);
	p[40] = icmp_type;
	return 48;
}

static void test_v4(void **state)
{
	(void)state;
	static const struct { const char *src, *dst; uint8_t proto, type; uint16_t frag; bool ok; } rows[] = {
		{ "10.1.0.2", "10.2.0.2", 17, 0, 0, true },          /* an ordinary UDP packet */
		{ "10.1.0.2", "10.2.0.2", 17, 0, 0x4000, true },     /* DF set */
		{ "10.1.0.2", "10.2.0.2", 17, 0, 0x2000, true },     /* first fragment */
		{ "10.1.0.2", "10.2.0.2", 17, 0, 0x0010, false },    /* non-first fragment */
		{ "10.1.0.2", "10.2.0.2", 1, 8, 0, true },           /* echo request */
		{ "10.1.0.2", "10.2.0.2", 1, 0, 0, true },           /* echo reply */
		{ "10.1.0.2", "10.2.0.2", 1, 3, 0, false },          /* an error itself */
		{ "10.1.0.2", "10.2.0.2", 1, 11, 0, false },
		{ "0.0.0.0", "10.2.0.2", 17, 0, 0, false },          /* unspecified source */
		{ "0.1.2.3", "10.2.0.2", 17, 0, 0, false },          /* "this network" */
		{ "127.0.0.1", "10.2.0.2", 17, 0, 0, false },        /* loopback */
		{ "224.0.0.5", "10.2.0.2", 17, 0, 0, false },        /* multicast source */
		{ "255.255.255.255", "10.2.0.2", 17, 0, 0, false },  /* broadcast source */
		{ "240.0.0.1", "10.2.0.2", 17, 0, 0, false },        /* class E */
		{ "10.1.0.2", "239.1.1.1", 17, 0, 0, false },        /* to a multicast group */
		{ "10.1.0.2", "255.255.255.255", 17, 0, 0, false },  /* to the limited broadcast */
	};
	uint8_t p[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t len = v4(p, rows[i].src, rows[i].dst, rows[i].proto, rows[i].type, rows[i].frag);
		if (dp_icmp_may_answer(p, len) != rows[i].ok)
			fail_msg("row %zu (%s -> %s proto %u type %u frag 0x%04x)", i, rows[i].src, rows[i].dst,
				 rows[i].proto, rows[i].type, rows[i].frag);
	}
	v4(p, "10.1.0.2", "10.2.0.2", 17, 0, 0);
	assert_false(dp_icmp_may_answer(p, 19)); /* truncated */
	p[0] = 0x44;
	assert_false(dp_icmp_may_answer(p, 48)); /* bad header length */
}

static void test_v6(void **state)
{
	(void)state;
	static const struct { const char *src, *dst; uint8_t nh, type; bool ok; } rows[] = {
		{ "fd01::2", "fd02::2", 17, 0, true },
		{ "fd01::2", "fd02::2", 58, 128, true },   /* echo request */
		{ "fd01::2", "fd02::2", 58, 129, true },   /* echo reply */
		{ "fd01::2", "fd02::2", 58, 1, false },    /* destination unreachable: an error */
		{ "fd01::2", "fd02::2", 58, 2, false },    /* packet too big */
		{ "::", "fd02::2", 17, 0, false },         /* unspecified */
		{ "::1", "fd02::2", 17, 0, false },        /* loopback */
		{ "ff02::1", "fd02::2", 17, 0, false },    /* multicast source */
		{ "fd01::2", "ff05::1:3", 17, 0, false },  /* to a multicast group */
	};
	uint8_t p[64];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t len = v6(p, rows[i].src, rows[i].dst, rows[i].nh, rows[i].type);
		if (dp_icmp_may_answer(p, len) != rows[i].ok)
			fail_msg("row %zu (%s -> %s nh %u type %u)", i, rows[i].src, rows[i].dst, rows[i].nh,
				 rows[i].type);
	}
	v6(p, "fd01::2", "fd02::2", 17, 0);
	assert_false(dp_icmp_may_answer(p, 39));
	p[0] = 0x50;
	assert_false(dp_icmp_may_answer(p, 48)); /* neither IPv4 nor IPv6 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4),
		cmocka_unit_test(test_v6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
