/* tests/unit/test_dp_frag.c: xipsecd's IPv4 fragmenter and IPv4/IPv6 reassembler (dataplane/xipsecd/dp_frag.c)
 * on plain buffers: exact fragment layouts (RFC 791: 8-byte offsets, MF, options by copy flag, header
 * checksums), reassembly in order, out of order, with duplicates, overlaps (RFC 5722), timeouts, the
 * table's limits and the 65535-byte maximum. The kernel's own reassembly of our fragments is checked
 * end to end by tests/netns/test_dp_frag.sh. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sadb/sadb_drops.h"
#include "dataplane/xipsecd/dp_frag.h"

#define SEC 1000000000ull

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* Independent of dp_frag.c's: the RFC 1071 sum over the header must fold to 0xffff. */
static bool csum_ok(const uint8_t *h, unsigned hlen)
{
	uint32_t s = 0;

	for (unsigned i = 0; i < hlen; i += 2)
		s += rd16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

static void set_csum(uint8_t *h, unsigned hlen)
{
	uint32_t s = 0;

	h[10] = h[11] = 0;
	for (unsigned i = 0; i < hlen; i += 2)
		s += rd16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	wr16(h + 10, ~s & 0xffff);
}

/* An IPv4 packet: header with opts (olen bytes, a multiple of 4), payload bytes i*7+1. */
static unsigned ip4_pkt(uint8_t *p, const uint8_t *opts, unsigned olen, unsigned plen, uint16_t ff)
{
	unsigned hlen = 20 + olen;

	memset(p, 0, hlen);
	p[0] = (uint8_t)(0x40 | hlen / 4);
	p[1] = 0x10;
	wr16(p + 2, hlen + plen);
	wr16(p + 4, 0x1234);
	wr16(p + 6, ff);
	p[8] = 63;
	p[9] = 50;                           /* ESP */
	p[12] = 10; p[13] = 1; p[14] = 0; p[15] = 1;
	p[16] = 10; p[17] = 2; p[18] = 0; p[19] = 1;
	if (olen)
		memcpy(p + 20, opts, olen);
	for (unsigned i = 0; i < plen; i++)
		p[hlen + i] = (uint8_t)(i * 7 + 1);
	set_csum(p, hlen);
	return hlen + plen;
}

static uint8_t big[70000], out[DP_REASM_OUT_MAX], frag[DP_FRAG_MAX][4096];

/* ---- fragmenter ---- */

struct layout {
	unsigned len, hlen;
	uint16_t off;  /* 8-byte units */
	bool mf;
};

static void check_layout(const struct dp_frag4 *f, const uint8_t *orig, const struct layout *want,
			 unsigned n)
{
	unsigned data = 0, ohlen = (orig[0] & 15u) * 4;

	assert_int_equal(f->n, n);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *o = frag[i];
		unsigned len = dp_frag4_write(f, i, o), hlen = (o[0] & 15u) * 4;

		assert_int_equal(len, want[i].len);
		assert_int_equal(dp_frag4_len(f, i), len);
		assert_int_equal(hlen, want[i].hlen);
		assert_int_equal(rd16(o + 2), len);
		assert_int_equal(rd16(o + 6) & 0x1fff, want[i].off);
		assert_int_equal(!!(rd16(o + 6) & 0x2000), want[i].mf);
		assert_false(rd16(o + 6) & 0x4000);
		assert_true(csum_ok(o, hlen));
		/* identification, TOS, TTL, protocol, addresses as in the original */
		assert_int_equal(rd16(o + 4), rd16(orig + 4));
		assert_int_equal(o[1], orig[1]);
		assert_int_equal(o[8], orig[8]);
		assert_int_equal(o[9], orig[9]);
		assert_memory_equal(o + 12, orig + 12, 8);
		/* the bytes are the original's, in order */
		assert_memory_equal(o + hlen, orig + ohlen + data, len - hlen);
		if (i + 1 < n)
			assert_int_equal((len - hlen) % 8, 0);
		data += len - hlen;
	}
	assert_int_equal(data, rd16(orig + 2) - ohlen);
}

static void test_frag_plain(void **state)
{
	struct dp_frag4 f;
	unsigned len = ip4_pkt(big, NULL, 0, 3000, 0);
	/* 1480 = 185 units per full fragment */
	static const struct layout want[] = {
		{ 1500, 20, 0, true }, { 1500, 20, 185, true }, { 60, 20, 370, false },
	};

	(void)state;
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), 0);
	check_layout(&f, big, want, 3);
	/* an MTU that is not 20 + a multiple of 8: data rounded down to 8 bytes (1001 -> 976) */
	static const struct layout want2[] = {
		{ 996, 20, 0, true }, { 996, 20, 122, true }, { 996, 20, 244, true },
		{ 92, 20, 366, false },
	};
	assert_int_equal(dp_frag4_plan(&f, big, len, 1001), 0);
	check_layout(&f, big, want2, 4);
}

/* RFC 791 3.1: options with the copy flag go into every fragment, the others only into the first. */
static void test_frag_options(void **state)
{
	static const uint8_t opts[12] = {
		0x01,                                   /* NOP, not copied */
		0x07, 0x07, 0x04, 0, 0, 0, 0,           /* record route, not copied */
		0x94, 0x04, 0x00, 0x00,                 /* router alert, copied */
	};
	struct dp_frag4 f;
	unsigned len = ip4_pkt(big, opts, sizeof(opts), 200, 0);
	/* first: hlen 32, (100-32)&~7 = 64; later: hlen 24, (100-24)&~7 = 72 */
	static const struct layout want[] = {
		{ 96, 32, 0, true }, { 96, 24, 8, true }, { 88, 24, 17, false },
	};

	(void)state;
	assert_int_equal(dp_frag4_plan(&f, big, len, 100), 0);
	check_layout(&f, big, want, 3);
	dp_frag4_write(&f, 0, frag[0]);
	assert_memory_equal(frag[0] + 20, opts, 12);     /* the first keeps them all */
	dp_frag4_write(&f, 1, frag[1]);
	assert_memory_equal(frag[1] + 20, opts + 8, 4);  /* later: only router alert */

	/* a copied option that needs padding: 3 bytes + 1 end-of-list byte */
	static const uint8_t opts2[8] = { 0x07, 0x03, 0x04, 0x83, 0x03, 0x04, 0x00, 0x00 };
	len = ip4_pkt(big, opts2, sizeof(opts2), 100, 0);
	assert_int_equal(dp_frag4_plan(&f, big, len, 68), 0);
	assert_int_equal(f.hlen, 24);
	dp_frag4_write(&f, 1, frag[1]);
	assert_int_equal(frag[1][0], 0x46);
	assert_memory_equal(frag[1] + 20, "\x83\x03\x04\x00", 4);
	assert_true(csum_ok(frag[1], 24));
}

static void test_frag_refuse(void **state)
{
	struct dp_frag4 f;
	unsigned len;

	(void)state;
	len = ip4_pkt(big, NULL, 0, 3000, 0x4000);           /* DF */
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), -SADB_DROP_MTU);
	len = ip4_pkt(big, NULL, 0, 3000, 0);
	assert_int_equal(dp_frag4_plan(&f, big, len, 67), -SADB_DROP_MTU);   /* below RFC 791's 68 */
	len = ip4_pkt(big, NULL, 0, 3500, 0);                /* (68-20) = 48: 73 fragments */
	assert_int_equal(dp_frag4_plan(&f, big, len, 68), -SADB_DROP_MTU);
	len = ip4_pkt(big, NULL, 0, 3000, 0);                /* 63 fragments: allowed */
	assert_int_equal(dp_frag4_plan(&f, big, len, 68), 0);
	assert_int_equal(f.n, 63);
	{
		static const uint8_t bad[4] = { 0x07, 0x00, 0x00, 0x00 };   /* option length 0 */
		static const uint8_t over[4] = { 0x01, 0x01, 0x83, 0x09 };  /* runs past the header */

		len = ip4_pkt(big, bad, 4, 3000, 0);
		assert_int_equal(dp_frag4_plan(&f, big, len, 1500), -SADB_DROP_TRUNCATED);
		len = ip4_pkt(big, over, 4, 3000, 0);
		assert_int_equal(dp_frag4_plan(&f, big, len, 1500), -SADB_DROP_TRUNCATED);
	}
	/* fits: one piece, the packet unchanged */
	len = ip4_pkt(big, NULL, 0, 1000, 0x4000);
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(dp_frag4_write(&f, 0, frag[0]), len);
	assert_memory_equal(frag[0], big, len);
}

/* Re-fragmenting a fragment: offsets continue from the original's, its MF stays on the last piece. */
static void test_frag_fragment(void **state)
{
	struct dp_frag4 f;
	unsigned len = ip4_pkt(big, NULL, 0, 2000, 0x2000 | 100);
	static const struct layout want_mf[] = {
		{ 1500, 20, 100, true }, { 540, 20, 285, true },
	};
	static const struct layout want_last[] = {
		{ 1500, 20, 100, true }, { 540, 20, 285, false },
	};

	(void)state;
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), 0);
	check_layout(&f, big, want_mf, 2);
	len = ip4_pkt(big, NULL, 0, 2000, 100);
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), 0);
	check_layout(&f, big, want_last, 2);
}

/* Fragment 0 written in place over the original after the others (the worker's order). */
static void test_frag_in_place(void **state)
{
	static uint8_t copy[4096];
	struct dp_frag4 f;
	unsigned len = ip4_pkt(big, NULL, 0, 3000, 0);

	(void)state;
	memcpy(copy, big, len);
	assert_int_equal(dp_frag4_plan(&f, big, len, 1500), 0);
	for (unsigned i = 1; i < f.n; i++)
		dp_frag4_write(&f, i, frag[i]);
	assert_int_equal(dp_frag4_write(&f, 0, big), 1500);
	assert_memory_equal(big + 20, copy + 20, 1480);
	assert_memory_equal(frag[1] + 20, copy + 1500, 1480);
	assert_memory_equal(frag[2] + 20, copy + 2980, 40);
	assert_true(csum_ok(big, 20));
	assert_int_equal(rd16(big + 6), 0x2000);
}

/* ---- reassembler ---- */

static struct dp_reasm *mk(uint32_t dgrams, uint32_t bytes, uint32_t frags)
{
	struct dp_reasm_cfg c = { dgrams, bytes, frags, 5 * SEC };
	struct dp_reasm *r;

	assert_int_equal(dp_reasm_create(&c, &r), 0);
	return r;
}

static struct dp_reasm_res add(struct dp_reasm *r, const uint8_t *p, uint64_t t)
{
	unsigned len = (p[0] >> 4) == 4 ? rd16(p + 2) : 40u + rd16(p + 4);

	return dp_reasm_add(r, p, len, t, out, sizeof(out));
}

static void held(struct dp_reasm_res x)
{
	assert_int_equal(x.verdict, DP_REASM_HELD);
	assert_int_equal(x.n_expired, 0);
}

static void dropped(struct dp_reasm_res x, unsigned reason, unsigned others)
{
	assert_int_equal(x.verdict, DP_REASM_DROP);
	assert_int_equal(x.reason, reason);
	assert_int_equal(x.n_dropped, others);
}

/* Fragments of a 3000-byte IPv4 ESP packet at mtu 1500 (into frag[0..2]); returns the count. */
static unsigned v4_frags(uint16_t id, unsigned plen, unsigned mtu)
{
	struct dp_frag4 f;
	unsigned len = ip4_pkt(big, NULL, 0, plen, 0);

	wr16(big + 4, id);
	set_csum(big, 20);
	assert_int_equal(dp_frag4_plan(&f, big, len, mtu), 0);
	for (unsigned i = 0; i < f.n; i++)
		dp_frag4_write(&f, i, frag[i]);
	return f.n;
}

static void done_is_big(struct dp_reasm_res x, unsigned nfrags)
{
	unsigned len = rd16(big + 2);

	assert_int_equal(x.verdict, DP_REASM_DONE);
	assert_int_equal(x.n_frags, nfrags);
	assert_int_equal(x.len, len);
	assert_memory_equal(out, big, len);     /* header (checksum too) and payload restored */
}

static void test_reasm4_orders(void **state)
{
	static const unsigned order[][3] = { { 0, 1, 2 }, { 2, 1, 0 }, { 1, 2, 0 }, { 2, 0, 1 } };
	struct dp_reasm *r = mk(8, 1 << 20, 16);
	uint32_t d, b;

	(void)state;
	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(v4_frags((uint16_t)(100 + k), 3000, 1500), 3);
		held(add(r, frag[order[k][0]], 1));
		held(add(r, frag[order[k][1]], 2));
		done_is_big(add(r, frag[order[k][2]], 3), 3);
		dp_reasm_usage(r, &d, &b);
		assert_int_equal(d, 0);
		assert_int_equal(b, 0);
	}
	dp_reasm_destroy(r);
}

/* Two datagrams interleaved: told apart by identification (and protocol, addresses). */
static void test_reasm4_interleaved(void **state)
{
	static uint8_t a[3][4096];
	struct dp_reasm *r = mk(8, 1 << 20, 16);

	(void)state;
	v4_frags(1, 3000, 1500);
	memcpy(a, frag, sizeof(a));
	v4_frags(2, 3000, 1500);
	held(add(r, a[0], 1));
	held(add(r, frag[2], 1));
	held(add(r, a[2], 1));
	held(add(r, frag[0], 1));
	/* same id, other protocol: a third datagram */
	a[1][9] = 51;
	set_csum(a[1], 20);
	held(add(r, a[1], 1));
	a[1][9] = 50;
	set_csum(a[1], 20);
	done_is_big(add(r, frag[1], 1), 3);
	v4_frags(1, 3000, 1500);
	done_is_big(add(r, a[1], 1), 3);
	dp_reasm_destroy(r);
}

/* RFC 8200 4.5: an exact duplicate may be dropped alone; the datagram still completes. */
static void test_reasm_duplicate(void **state)
{
	struct dp_reasm *r = mk(8, 1 << 20, 16);

	(void)state;
	v4_frags(7, 3000, 1500);
	held(add(r, frag[1], 1));
	dropped(add(r, frag[1], 2), SADB_DROP_FRAG_DUP, 0);
	held(add(r, frag[0], 3));
	dropped(add(r, frag[0], 3), SADB_DROP_FRAG_DUP, 0);
	done_is_big(add(r, frag[2], 4), 3);
	dp_reasm_destroy(r);
}

/* RFC 5722 (and xipsecd for IPv4): any overlap abandons the datagram with every fragment held. */
static void test_reasm_overlap(void **state)
{
	struct dp_reasm *r = mk(8, 1 << 20, 16);
	uint32_t d, b;

	(void)state;
	/* fragments of 1480 bytes; then one at offset 1000 bytes (125 units) overlapping both */
	v4_frags(9, 3000, 1500);
	held(add(r, frag[0], 1));
	held(add(r, frag[2], 1));
	wr16(frag[1] + 6, 0x2000 | 125);
	set_csum(frag[1], 20);
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_OVERLAP, 2);
	dp_reasm_usage(r, &d, &b);
	assert_int_equal(d, 0);
	assert_int_equal(b, 0);
	/* same offset and length, other bytes: not a duplicate but an overlap */
	v4_frags(10, 3000, 1500);
	held(add(r, frag[1], 1));
	frag[1][100] ^= 0xff;
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_OVERLAP, 1);
	/* a later fragment of the abandoned datagram starts a new one, which never completes */
	held(add(r, frag[0], 2));
	assert_int_equal(dp_reasm_expire(r, 2 + 5 * SEC), 1);
	dp_reasm_destroy(r);
}

static void test_reasm_timeout(void **state)
{
	struct dp_reasm *r = mk(8, 1 << 20, 16);
	struct dp_reasm_res x;
	uint32_t d, b;

	(void)state;
	v4_frags(11, 3000, 1500);
	held(add(r, frag[0], 1 * SEC));
	held(add(r, frag[1], 5 * SEC));           /* the clock runs from the first fragment */
	assert_int_equal(dp_reasm_expire(r, 6 * SEC - 1), 0);
	assert_int_equal(dp_reasm_expire(r, 6 * SEC), 2);
	dp_reasm_usage(r, &d, &b);
	assert_int_equal(d + b, 0);
	/* expiry also happens on the way in; the late fragment starts a datagram of its own */
	held(add(r, frag[0], 10 * SEC));
	x = add(r, frag[2], 16 * SEC);
	assert_int_equal(x.verdict, DP_REASM_HELD);
	assert_int_equal(x.n_expired, 1);
	dp_reasm_destroy(r);
}

static void test_reasm_limits(void **state)
{
	struct dp_reasm *r = mk(2, 1 << 20, 3);
	static uint8_t keep[4096];

	(void)state;
	/* datagrams in progress */
	v4_frags(1, 3000, 1500);
	held(add(r, frag[0], 1));
	v4_frags(2, 3000, 1500);
	held(add(r, frag[0], 1));
	v4_frags(3, 3000, 1500);
	dropped(add(r, frag[0], 1), SADB_DROP_FRAG_LIMIT, 0);
	assert_int_equal(dp_reasm_expire(r, 1 + 5 * SEC), 2);
	/* fragments per datagram: the fourth abandons the datagram */
	assert_int_equal(v4_frags(4, 3000, 600), 6);
	held(add(r, frag[0], 1));
	held(add(r, frag[1], 1));
	held(add(r, frag[2], 1));
	dropped(add(r, frag[3], 1), SADB_DROP_FRAG_LIMIT, 3);
	dp_reasm_destroy(r);

	/* bytes held: 1480 + 1480 > 2000, the second fragment alone is dropped */
	r = mk(4, 2000, 16);
	v4_frags(5, 3000, 1500);
	memcpy(keep, frag[2], sizeof(keep));
	held(add(r, frag[0], 1));
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_LIMIT, 0);
	held(add(r, keep, 1));
	dp_reasm_destroy(r);
}

/* A datagram complete but too large for the caller's room: the fragment that completed it is
 * already one of the datagram's, and n_dropped counts only the others (the caller counts this one
 * itself with its frame), so every fragment is counted once. */
static void test_reasm_no_room(void **state)
{
	struct dp_reasm *r = mk(8, 1 << 20, 16);
	uint32_t d, b;

	(void)state;
	assert_int_equal(v4_frags(7, 3000, 1500), 3);
	held(dp_reasm_add(r, frag[0], rd16(frag[0] + 2), 1, out, 100));
	held(dp_reasm_add(r, frag[1], rd16(frag[1] + 2), 1, out, 100));
	dropped(dp_reasm_add(r, frag[2], rd16(frag[2] + 2), 1, out, 100), SADB_DROP_NOMEM, 2);
	dp_reasm_usage(r, &d, &b);
	assert_int_equal(d, 0);
	assert_int_equal(b, 0);
	dp_reasm_destroy(r);
}

/* RFC 791 / 8200: nothing larger than 65535 bytes (IPv4 total length, IPv6 payload length). */
static void test_reasm_max(void **state)
{
	struct dp_reasm *r = mk(4, 1 << 20, 64);
	struct dp_reasm_res x = { 0 };
	unsigned n;

	(void)state;
	n = v4_frags(20, 65515, 1500);            /* 20 + 65515 = 65535: the largest there is */
	assert_int_equal(n, 45);
	for (unsigned i = 0; i < n; i++) {
		x = add(r, frag[n - 1 - i], 1);
		if (i + 1 < n)
			held(x);
	}
	done_is_big(x, n);
	/* a last fragment ending one byte further */
	v4_frags(21, 1480, 1500);
	wr16(frag[0] + 6, 8189);                  /* 20 + 65512 + 4 bytes of data > 65535 */
	wr16(frag[0] + 2, 20 + 4);
	set_csum(frag[0], 20);
	dropped(add(r, frag[0], 1), SADB_DROP_FRAG_TOO_BIG, 0);
	wr16(frag[0] + 2, 20 + 3);                /* exactly 65535: accepted */
	set_csum(frag[0], 20);
	held(add(r, frag[0], 1));
	dp_reasm_destroy(r);
}

static void test_reasm_bad(void **state)
{
	struct dp_reasm *r = mk(4, 1 << 20, 16);

	(void)state;
	v4_frags(30, 3000, 1500);
	/* MF with a length that is not a multiple of 8 */
	wr16(frag[0] + 2, 1499);
	set_csum(frag[0], 20);
	dropped(add(r, frag[0], 1), SADB_DROP_FRAG_BAD, 0);
	/* a header checksum that does not add up */
	v4_frags(33, 3000, 1500);
	frag[1][10] ^= 1;
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_BAD, 0);
	/* an empty fragment */
	wr16(frag[1] + 2, 20);
	set_csum(frag[1], 20);
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_BAD, 0);
	/* a last fragment that ends before data already held */
	v4_frags(31, 3000, 1500);
	held(add(r, frag[1], 1));
	wr16(frag[2] + 6, 100);                   /* last, at 800 bytes: ends at 840 < 2960 */
	set_csum(frag[2], 20);
	dropped(add(r, frag[2], 1), SADB_DROP_FRAG_BAD, 1);
	/* two different ends */
	v4_frags(32, 3000, 1500);
	held(add(r, frag[2], 1));
	wr16(frag[1] + 6, 185);                   /* MF cleared on the middle fragment */
	set_csum(frag[1], 20);
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_BAD, 1);
	dp_reasm_destroy(r);
}

/* ---- IPv6 ---- */

/* An IPv6 packet whose payload is `ext` (extension headers before the Fragment header, elen
 * bytes) then ESP: fragments of it into frag[], cut at `step` data bytes (a multiple of 8). The
 * reference whole packet goes to big. Returns the number of fragments. */
static unsigned v6_frags(uint32_t id, const uint8_t *ext, unsigned elen, uint8_t first_nh,
			 unsigned plen, unsigned step)
{
	unsigned n = 0, hdr = 40 + elen;

	memset(big, 0, 40);
	big[0] = 0x60;
	wr16(big + 4, elen + plen);
	big[6] = elen ? first_nh : 50;
	big[7] = 64;
	big[8] = 0x20; big[9] = 0x01; big[23] = 1;
	big[24] = 0x20; big[25] = 0x01; big[39] = 2;
	if (elen)
		memcpy(big + 40, ext, elen);
	for (unsigned i = 0; i < plen; i++)
		big[hdr + i] = (uint8_t)(i * 13 + 5);
	for (unsigned off = 0; off < plen; off += step, n++) {
		unsigned d = plen - off < step ? plen - off : step;
		uint8_t *o = frag[n];
		bool more = off + d < plen;
		/* the header before the Fragment header names it (ext: one extension header) */
		uint8_t *nhp = elen ? o + 40 : o + 6;

		memcpy(o, big, hdr);
		*nhp = 44;
		wr16(o + 4, elen + 8 + d);
		o[hdr] = 50;
		o[hdr + 1] = 0;
		wr16(o + hdr + 2, off | more);
		o[hdr + 4] = (uint8_t)(id >> 24); o[hdr + 5] = (uint8_t)(id >> 16);
		o[hdr + 6] = (uint8_t)(id >> 8); o[hdr + 7] = (uint8_t)id;
		memcpy(o + hdr + 8, big + hdr + off, d);
	}
	return n;
}

static void done_is_big6(struct dp_reasm_res x, unsigned nfrags)
{
	unsigned len = 40u + rd16(big + 4);

	assert_int_equal(x.verdict, DP_REASM_DONE);
	assert_int_equal(x.n_frags, nfrags);
	assert_int_equal(x.len, len);
	assert_memory_equal(out, big, len);     /* Fragment header gone, next header restored */
}

static void test_reasm6(void **state)
{
	/* a destination options header (8 bytes, PadN) before the Fragment header */
	static const uint8_t dopt[8] = { 50, 0, 1, 4, 0, 0, 0, 0 };
	struct dp_reasm *r = mk(8, 1 << 20, 16);
	struct dp_reasm_res x;
	unsigned n;
	uint8_t proto;

	(void)state;
	n = v6_frags(0xdeadbeef, NULL, 0, 0, 3000, 1448);
	assert_int_equal(n, 3);
	assert_true(dp_frag_is_fragment(frag[1], 40u + rd16(frag[1] + 4), &proto));
	assert_int_equal(proto, 50);
	held(add(r, frag[2], 1));
	held(add(r, frag[0], 1));
	done_is_big6(add(r, frag[1], 1), 3);

	n = v6_frags(5, dopt, 8, 60, 2000, 1000);
	assert_int_equal(n, 2);
	held(add(r, frag[1], 1));
	x = add(r, frag[0], 1);
	done_is_big6(x, 2);
	assert_int_equal(out[6], 60);
	assert_int_equal(out[40], 50);

	/* RFC 5722: an overlap abandons it */
	n = v6_frags(6, NULL, 0, 0, 3000, 1000);
	held(add(r, frag[0], 1));
	held(add(r, frag[2], 1));
	wr16(frag[1] + 42, 992 | 1);
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_OVERLAP, 2);

	/* RFC 8200: M set and a length that is not a multiple of 8 */
	n = v6_frags(7, NULL, 0, 0, 3000, 1004);
	dropped(add(r, frag[0], 1), SADB_DROP_FRAG_BAD, 0);

	/* beyond 65535 bytes of payload: 65528 + 8 */
	n = v6_frags(8, NULL, 0, 0, 16, 8);
	wr16(frag[1] + 42, 65528 | 1);
	dropped(add(r, frag[1], 1), SADB_DROP_FRAG_TOO_BIG, 0);

	/* RFC 6946: an atomic fragment is a whole packet, returned at once */
	n = v6_frags(9, NULL, 0, 0, 500, 1000);
	assert_int_equal(n, 1);
	done_is_big6(add(r, frag[0], 1), 1);
	dp_reasm_destroy(r);
}

static void test_is_fragment(void **state)
{
	uint8_t proto = 0;
	unsigned len;

	(void)state;
	len = ip4_pkt(big, NULL, 0, 100, 0x4000);
	assert_false(dp_frag_is_fragment(big, len, &proto));
	len = ip4_pkt(big, NULL, 0, 100, 0x2000);
	assert_true(dp_frag_is_fragment(big, len, &proto));
	assert_int_equal(proto, 50);
	len = ip4_pkt(big, NULL, 0, 100, 1);
	assert_true(dp_frag_is_fragment(big, len, &proto));
	v6_frags(1, NULL, 0, 0, 100, 1000);
	assert_false(dp_frag_is_fragment(big, 140, &proto));
	assert_true(dp_frag_is_fragment(frag[0], 148, &proto));
	/* a truncated extension header chain is not taken for a fragment */
	big[6] = 60;
	assert_false(dp_frag_is_fragment(big, 44, &proto));
}

/* Round trip through both: what the fragmenter cuts, the reassembler restores, in any order. */
static void test_round_trip(void **state)
{
	struct dp_reasm *r = mk(8, 1 << 20, 64);
	static const unsigned mtus[] = { 68, 576, 1280, 1500 };

	(void)state;
	for (unsigned m = 0; m < 4; m++) {
		unsigned n = v4_frags((uint16_t)m, 2900, mtus[m]);
		struct dp_reasm_res x = { 0 };

		for (unsigned i = 0; i < n; i++) {
			unsigned k = (i * 7 + 3) % n;   /* a permutation when 7 and n are coprime */

			if (n % 7 == 0)
				k = n - 1 - i;
			x = add(r, frag[k], 1);
			if (i + 1 < n)
				held(x);
		}
		done_is_big(x, n);
	}
	dp_reasm_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frag_plain),
		cmocka_unit_test(test_frag_options),
		cmocka_unit_test(test_frag_refuse),
		cmocka_unit_test(test_frag_fragment),
		cmocka_unit_test(test_frag_in_place),
		cmocka_unit_test(test_reasm4_orders),
		cmocka_unit_test(test_reasm4_interleaved),
		cmocka_unit_test(test_reasm_duplicate),
		cmocka_unit_test(test_reasm_overlap),
		cmocka_unit_test(test_reasm_timeout),
		cmocka_unit_test(test_reasm_limits),
		cmocka_unit_test(test_reasm_no_room),
		cmocka_unit_test(test_reasm_max),
		cmocka_unit_test(test_reasm_bad),
		cmocka_unit_test(test_reasm6),
		cmocka_unit_test(test_is_fragment),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
