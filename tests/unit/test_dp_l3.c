/* tests/unit/test_dp_l3.c: the IP rules the packet path's stages share (dataplane/xipsecd/dp_l3.c),
 * one row per case: the TTL / hop limit a router decrements (RFC 1812 section 5.3.1, RFC 8200
 * section 3) with the IPv4 checksum still right after it (RFC 1624), the too-big decision at the
 * MTU's edges with DF set and clear and for IPv6 (RFC 1191, RFC 8201), and the IPv4 cut into frames
 * of a fake worker (RFC 791): fragment count, the first in place, and the refusal without frames. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_path.h"

/* An IPv4 (ttl, DF) or IPv6 (hop limit) header of a packet of len bytes, checksum right. */
static void mk_hdr(uint8_t *p, int v, uint8_t ttl, bool df, uint32_t len)
{
	memset(p, 0, 40);
	if (v == 6) {
		p[0] = 0x60;
		p[4] = (uint8_t)((len - 40) >> 8);
		p[5] = (uint8_t)(len - 40);
		p[6] = 17;
		p[7] = ttl;
		return;
	}
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[6] = df ? 0x40 : 0;
	p[8] = ttl;
	p[9] = 17;
	p[12] = 192; p[13] = 0; p[14] = 2; p[15] = 1;
	p[16] = 198; p[17] = 51; p[18] = 100; p[19] = 1;
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	p[10] = (uint8_t)(~s >> 8);
	p[11] = (uint8_t)~s;
}

static bool v4_csum_ok(const uint8_t *p)
{
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

static void test_dec_ttl(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int v;
		uint8_t ttl;
		bool ok;          /* decremented (else it expires here, unchanged) */
	} rows[] = {
		{ "IPv4 TTL 64", 4, 64, true },
		{ "IPv4 TTL 2: still forwarded", 4, 2, true },
		{ "IPv4 TTL 255 (checksum carry)", 4, 255, true },
		{ "IPv4 TTL 1 expires", 4, 1, false },
		{ "IPv4 TTL 0 expires", 4, 0, false },
		{ "IPv6 hop limit 64", 6, 64, true },
		{ "IPv6 hop limit 2", 6, 2, true },
		{ "IPv6 hop limit 1 expires", 6, 1, false },
		{ "IPv6 hop limit 0 expires", 6, 0, false },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[40], before[40];

		mk_hdr(p, rows[r].v, rows[r].ttl, false, 100);
		memcpy(before, p, sizeof(p));
		if (dp_l3_dec_ttl(p) != rows[r].ok)
			fail_msg("%s: wrong verdict", rows[r].name);
		if (!rows[r].ok) {
			if (memcmp(p, before, sizeof(p)))
				fail_msg("%s: changed though it expires", rows[r].name);
			continue;
		}
		if (p[rows[r].v == 4 ? 8 : 7] != rows[r].ttl - 1)
			fail_msg("%s: not decremented", rows[r].name);
		if (rows[r].v == 4 && !v4_csum_ok(p))
			fail_msg("%s: IPv4 checksum wrong after it", rows[r].name);
	}
}

static void test_too_big(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int v;
		bool df, dec_ttl;
		uint8_t ttl;
		uint32_t len, mtu;
		bool refused;
	} rows[] = {
		{ "IPv4 DF, len = MTU", 4, true, false, 64, 1400, 1400, false },
		{ "IPv4 DF, len = MTU + 1", 4, true, false, 64, 1401, 1400, true },
		{ "IPv4 DF, len = MTU - 1", 4, true, false, 64, 1399, 1400, false },
		{ "IPv4 no DF, len = MTU + 1: cut, not refused", 4, false, false, 64, 1401, 1400, false },
		{ "IPv4 no DF, far larger", 4, false, false, 64, 9000, 1280, false },
		{ "IPv6, len = MTU", 6, false, false, 64, 1280, 1280, false },
		{ "IPv6, len = MTU + 1", 6, false, false, 64, 1281, 1280, true },
		{ "IPv4 DF, expiring here: time exceeded instead", 4, true, true, 1, 1500, 1400, false },
		{ "IPv4 DF, TTL 2 forwarded: too big", 4, true, true, 2, 1500, 1400, true },
		{ "IPv6 hop limit 1 forwarded: time exceeded instead", 6, false, true, 1, 1500, 1400, false },
		{ "IPv6 hop limit 1 originated: too big", 6, false, false, 1, 1500, 1400, true },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint8_t p[40];

		mk_hdr(p, rows[r].v, rows[r].ttl, rows[r].df, rows[r].len);
		if (dp_l3_too_big(p, rows[r].len, rows[r].mtu, rows[r].dec_ttl) != rows[r].refused)
			fail_msg("%s: wrong verdict", rows[r].name);
	}
}

#define T_FRAMES 256u

static void test_cut(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		uint32_t len, mtu, frames;
		int want;             /* fragments, or -reason */
	} rows[] = {
		{ "3000 bytes at 1400: 3 fragments", 3000, 1400, T_FRAMES, 3 },
		{ "1401 bytes at 1400: 2 fragments", 1401, 1400, T_FRAMES, 2 },
		{ "no frames to spare", 3000, 1400, DP_FRAME_RESERVE, -SADB_DROP_FRAG_NOBUF },
		{ "fragments larger than a frame", 3000, FRAME_L3_MAX + 8, T_FRAMES, -SADB_DROP_MTU },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		static uint64_t free_frames[T_FRAMES];
		static uint8_t frame_out[T_FRAMES];
		struct sadb_worker_stats sst;
		struct dp_worker *w = calloc(1, sizeof(*w));
		uint8_t *umem = aligned_alloc(DP_FRAME_SIZE, T_FRAMES * DP_FRAME_SIZE);
		uint8_t src[3000];
		struct dp_frags f;
		uint32_t sum = 0;

		assert_non_null(w);
		assert_non_null(umem);
		memset(&sst, 0, sizeof(sst));
		memset(frame_out, 0, sizeof(frame_out));
		w->umem_area = umem;
		w->free_frames = free_frames;
		w->frame_out = frame_out;
		w->sst = &sst;
		for (uint32_t i = 0; i < rows[r].frames; i++)
			free_frames[w->n_free++] = (uint64_t)(T_FRAMES - 1 - i) * DP_FRAME_SIZE;
		mk_hdr(src, 4, 64, false, rows[r].len);
		for (uint32_t i = 20; i < rows[r].len; i++)
			src[i] = (uint8_t)i;
		/* fragment 0 in place: the packet sits in frame 0 */
		uint64_t at = FRESH_L3;
		memcpy(umem + at, src, rows[r].len);
		int n = dp_l3_cut(w, umem + at, true, at, rows[r].len, rows[r].mtu, &f);
		if (n != rows[r].want)
			fail_msg("%s: %d fragments or reason, want %d", rows[r].name, n, rows[r].want);
		for (int i = 0; i < n; i++) {
			const uint8_t *fp = umem + f.addr[i];
			if (f.len[i] > rows[r].mtu || !v4_csum_ok(fp))
				fail_msg("%s: fragment %d malformed", rows[r].name, i);
			sum += f.len[i] - 20;
		}
		if (n > 0) {
			assert_int_equal(f.addr[0], at);
			assert_int_equal(sum, rows[r].len - 20);
			assert_int_equal(sst.frag_made, (uint64_t)n);
		}
		free(umem);
		free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dec_ttl),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
