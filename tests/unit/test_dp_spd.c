/* tests/unit/test_dp_spd.c: the packet path's SPD decisions (dataplane/xipsecd/dp_spd.c) on a real
 * SADB segment, one row per case: the outbound SPD's BYPASS, DISCARD, PROTECT and no-policy verdicts
 * and an unparsable packet (RFC 4301 section 5.1), the home agent's own signalling selected by its
 * type 2 routing header (RFC 3776 section 4), plaintext from the outside against the forward and
 * inbound policies, and a decapsulated packet against its SA's selector and policy (RFC 4301
 * section 5.2), a mobile node's by its Home Address option, a mobile router's network (RFC 3963) by
 * the home agent's route for it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_spd.h"
#include "tests/unit/sadb_testlib.h"

static struct sadb *db;

/* A UDP packet src -> dst, dport; IPv4 or IPv6 by the addresses. */
static uint32_t mk_udp(uint8_t *p, const char *src, const char *dst, uint16_t dport)
{
	struct sadb_addr s = t_addr(src), d = t_addr(dst);

	memset(p, 0, 128);
	if (s.family == AF_INET) {
		p[0] = 0x45; p[3] = 28; p[8] = 64; p[9] = 17;
		memcpy(p + 12, s.a.b, 4);
		memcpy(p + 16, d.a.b, 4);
		p[22] = (uint8_t)(dport >> 8); p[23] = (uint8_t)dport;
		return 28;
	}
	p[0] = 0x60; p[5] = 8; p[6] = 17; p[7] = 64;
	memcpy(p + 8, s.a.b, 16);
	memcpy(p + 24, d.a.b, 16);
	p[42] = (uint8_t)(dport >> 8); p[43] = (uint8_t)dport;
	return 48;
}

/* IPv6 src -> dst | hdr (a type 2 routing header or a Home Address option naming hoa) | MH */
static uint32_t mk_mobile(uint8_t *p, const char *src, const char *dst, bool rh2, const char *hoa)
{
	struct sadb_addr s = t_addr(src), d = t_addr(dst), h = t_addr(hoa);

	memset(p, 0, 128);
	p[0] = 0x60; p[5] = 40; p[6] = rh2 ? 43 : 60; p[7] = 64;
	memcpy(p + 8, s.a.b, 16);
	memcpy(p + 24, d.a.b, 16);
	p[40] = 135; p[41] = 2;
	if (rh2) {
		p[42] = 2; p[43] = 1;
	} else {
		p[42] = 1; p[43] = 2; p[46] = 201; p[47] = 16;
	}
	memcpy(p + 48, h.a.b, 16);
	p[64] = 59; p[65] = 1; p[66] = rh2 ? 6 : 5;
	return 80;
}

static struct sadb_policy pol(uint8_t dir, uint8_t action, const char *dst, uint8_t plen, uint32_t reqid)
{
	struct sadb_policy p = t_pol(dir, NULL, 0, dst, plen, 10);

	p.action = action;
	p.reqid = reqid;
	return p;
}

static int setup(void **state)
{
	char msg[256];
	const struct sadb_policy v[] = {
		pol(SADB_DIR_OUT, SADB_ACT_BYPASS, "10.1.0.0", 16, 0),
		pol(SADB_DIR_OUT, SADB_ACT_DISCARD, "10.2.0.0", 16, 0),
		pol(SADB_DIR_OUT, SADB_ACT_PROTECT, "10.3.0.0", 16, 7),
		pol(SADB_DIR_OUT, SADB_ACT_PROTECT, "2001:db8:1::100", 128, 9),
		pol(SADB_DIR_FWD, SADB_ACT_BYPASS, "10.5.0.0", 16, 0),
		pol(SADB_DIR_IN, SADB_ACT_PROTECT, "10.6.0.0", 16, 7),
		pol(SADB_DIR_IN, SADB_ACT_DISCARD, "10.7.0.0", 16, 0),
	};

	(void)state;
	assert_int_equal(sadb_open(t_path("spd"), SADB_RDWR | SADB_CREATE, NULL, &db, msg, sizeof(msg)), 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(sadb_policy_add(db, &v[i], NULL), 0);
	/* the mobile node's own inbound policy: from its home address */
	struct sadb_policy m = t_pol(SADB_DIR_IN, "2001:db8:1::100", 128, NULL, 0, 10);
	m.reqid = 9;
	assert_int_equal(sadb_policy_add(db, &m, NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sadb_close(db);
	return 0;
}

static void test_out(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *dst;
		int mobile;         /* 0: UDP; 1: the home agent's BA (RH2 to the home address) */
		bool flag_mobile;
		unsigned drop;
		uint8_t action;
		uint32_t reqid;
	} rows[] = {
		{ "BYPASS", "10.1.2.3", 0, false, SADB_DROP_NONE, SADB_ACT_BYPASS, 0 },
		{ "DISCARD", "10.2.2.3", 0, false, SADB_DROP_POLICY_DISCARD, 0, 0 },
		{ "PROTECT", "10.3.2.3", 0, false, SADB_DROP_NONE, SADB_ACT_PROTECT, 7 },
		{ "no policy", "10.9.2.3", 0, false, SADB_DROP_NO_POLICY, 0, 0 },
		{ "no policy (IPv6)", "2001:db8:9::1", 0, false, SADB_DROP_NO_POLICY, 0, 0 },
		{ "truncated", "10.1.2.3", -1, false, SADB_DROP_TRUNCATED, 0, 0 },
		{ "home agent's BA: by its RH2", "2001:db8:2::5", 1, true, SADB_DROP_NONE, SADB_ACT_PROTECT, 9 },
		{ "same BA not flagged mobile: by the CoA", "2001:db8:2::5", 1, false, SADB_DROP_NO_POLICY, 0, 0 },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[128];
		struct sadb_policy got;
		uint32_t len = rows[r].mobile == 1 ?
			mk_mobile(p, "2001:db8:1::1", rows[r].dst, true, "2001:db8:1::100") :
			mk_udp(p, strchr(rows[r].dst, ':') ? "2001:db8::5" : "192.168.0.5", rows[r].dst, 53);
		if (rows[r].mobile < 0)
			len = 19;
		unsigned d = dp_spd_out(db, p, len, rows[r].flag_mobile, &got);
		if (d != rows[r].drop)
			fail_msg("%s: verdict %u, want %u", rows[r].name, d, rows[r].drop);
		if (d == SADB_DROP_NONE && (got.action != rows[r].action || got.reqid != rows[r].reqid))
			fail_msg("%s: policy action %u reqid %u", rows[r].name, got.action, got.reqid);
	}
}

static void test_in(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		const char *dst;
		unsigned drop;
	} rows[] = {
		{ "forward policy bypasses", "10.5.1.1", SADB_DROP_NONE },
		{ "inbound PROTECT: plaintext is a mismatch", "10.6.1.1", SADB_DROP_POLICY_MISMATCH },
		{ "inbound DISCARD", "10.7.1.1", SADB_DROP_POLICY_DISCARD },
		{ "no policy", "10.8.1.1", SADB_DROP_NO_POLICY },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[128];
		uint32_t len = mk_udp(p, "203.0.113.9", rows[r].dst, 53);
		unsigned d = dp_spd_in(db, p, len);

		if (d != rows[r].drop)
			fail_msg("%s: verdict %u, want %u", rows[r].name, d, rows[r].drop);
	}
}

/* The mobile node's inbound transport SA (its Binding Updates), reqid 9 as its policy's. */
static struct sadb_sa mn_sa(void)
{
	struct sadb_sa mn = t_sa(0x200, "2001:db8:2::5", "2001:db8:1::1");

	mn.dir = SADB_DIR_IN;
	mn.mode = SADB_MODE_TRANSPORT;
	mn.flags = SADB_SAF_MOBILE;
	mn.reqid = 9;
	mn.sel.src = t_addr("2001:db8:1::100");
	mn.sel.src_plen = 128;
	return mn;
}

static void test_in_check(void **state)
{
	(void)state;
	struct sadb_sa tun = t_sa(0x100, "203.0.113.1", "192.0.2.1");
	struct sadb_sa mn = mn_sa();

	tun.dir = SADB_DIR_IN;
	tun.sel.dst = t_addr("10.6.0.0");
	tun.sel.dst_plen = 16;
	static const struct {
		const char *name;
		int sa;             /* 0: the tunnel SA; 1: the mobile node's transport SA */
		const char *src, *dst;
		bool hao;
		unsigned drop;
	} rows[] = {
		{ "inside the SA's selector and policy", 0, "10.9.0.1", "10.6.1.1", false, SADB_DROP_NONE },
		{ "outside the SA's selector", 0, "10.9.0.1", "10.5.1.1", false, SADB_DROP_POLICY_MISMATCH },
		{ "mobile node's BU: by its Home Address option", 1, "2001:db8:2::5", "2001:db8:1::1", true,
		  SADB_DROP_NONE },
		{ "mobile node's packet without one: its CoA", 1, "2001:db8:2::5", "2001:db8:1::1", false,
		  SADB_DROP_POLICY_MISMATCH },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[128];
		uint32_t len = rows[r].hao ? mk_mobile(p, rows[r].src, rows[r].dst, false, "2001:db8:1::100") :
			mk_udp(p, rows[r].src, rows[r].dst, 53);
		unsigned d = dp_spd_in_check(db, rows[r].sa ? &mn : &tun, p, len);

		if (d != rows[r].drop)
			fail_msg("%s: verdict %u, want %u", rows[r].name, d, rows[r].drop);
	}
}

/* A decapsulated packet both a FWD and an IN policy match takes the one of higher priority (FWD on a
 * tie): an IKE-keyed mobile node's Binding Update takes its transport policy (priority 10 here), not
 * the FWD policy of its tunnel, home address to any (charon's 20); a FWD policy that wins sends it to
 * that policy's reqid. */
static void test_in_fwd_priority(void **state)
{
	(void)state;
	struct sadb_sa mn = mn_sa();
	static const struct { uint32_t fwd_prio; unsigned drop; } rows[] = {
		{ 20, SADB_DROP_NONE },            /* IN's 10 wins */
		{ 10, SADB_DROP_POLICY_MISMATCH }, /* a tie: FWD, of the tunnel's reqid */
		{ 5, SADB_DROP_POLICY_MISMATCH },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct sadb_policy f = t_pol(SADB_DIR_FWD, "2001:db8:1::100", 128, NULL, 0, rows[r].fwd_prio);
		uint32_t id;
		uint8_t p[128];
		uint32_t len = mk_mobile(p, "2001:db8:2::5", "2001:db8:1::1", false, "2001:db8:1::100");

		f.reqid = 10;
		assert_int_equal(sadb_policy_add(db, &f, &id), 0);
		unsigned d = dp_spd_in_check(db, &mn, p, len);
		assert_int_equal(sadb_policy_delete(db, id), 0);
		if (d != rows[r].drop)
			fail_msg("FWD priority %u: verdict %u, want %u", rows[r].fwd_prio, d, rows[r].drop);
	}
}

/* A mobile router's tunnel SA carries what a host of a network it registered sends: the home
 * agent's forward policy for the network (dataplane/xipsecd/dp_mip6_nemo.c) names the router's
 * reqid (30). The same packet through another mobile node's tunnel (31), the router sending from a
 * network with no route, or an SA that is no mobile node's is dropped. */
static void test_in_mobile_network(void **state)
{
	(void)state;
	struct sadb_policy route = t_pol(SADB_DIR_FWD, "2001:db8:77::", 64, NULL, 0, 10);
	uint32_t id;
	static const struct {
		const char *name;
		uint32_t reqid;
		uint32_t flags;
		const char *src;
		unsigned drop;
	} rows[] = {
		{ "a registered network through its router's tunnel", 30, SADB_SAF_MOBILE, "2001:db8:77::10",
		  SADB_DROP_NONE },
		{ "the same through another mobile node's tunnel", 31, SADB_SAF_MOBILE, "2001:db8:77::10",
		  SADB_DROP_POLICY_MISMATCH },
		{ "a network with no route through the router's tunnel", 30, SADB_SAF_MOBILE, "2001:db8:78::1",
		  SADB_DROP_POLICY_MISMATCH },
		{ "the route's reqid on an SA of no mobile node", 30, 0, "2001:db8:77::10",
		  SADB_DROP_POLICY_MISMATCH },
		{ "the router's home address (its selector)", 30, SADB_SAF_MOBILE, "2001:db8:1::200",
		  SADB_DROP_NONE },
	};

	route.reqid = 30;
	assert_int_equal(sadb_policy_add(db, &route, &id), 0);
	struct sadb_policy own = t_pol(SADB_DIR_IN, "2001:db8:1::200", 128, NULL, 0, 10);
	uint32_t own_id;
	own.reqid = 30;
	assert_int_equal(sadb_policy_add(db, &own, &own_id), 0);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct sadb_sa sa = t_sa(0x300, "2001:db8:a::100", "2001:db8:1::1");
		uint8_t p[128];
		uint32_t len = mk_udp(p, rows[r].src, "2001:db8:1::10", 53);

		sa.dir = SADB_DIR_IN;
		sa.flags = rows[r].flags;
		sa.reqid = rows[r].reqid;
		sa.sel.src = t_addr("2001:db8:1::200");
		sa.sel.src_plen = 128;
		unsigned d = dp_spd_in_check(db, &sa, p, len);
		if (d != rows[r].drop)
			fail_msg("%s: verdict %u, want %u", rows[r].name, d, rows[r].drop);
	}
	assert_int_equal(sadb_policy_delete(db, id), 0);
	assert_int_equal(sadb_policy_delete(db, own_id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out),
		cmocka_unit_test(test_in),
		cmocka_unit_test(test_in_check),
		cmocka_unit_test(test_in_fwd_priority),
		cmocka_unit_test(test_in_mobile_network),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
