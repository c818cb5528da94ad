/* tests/unit/test_dp_segment.c: active/active segments (dataplane/xipsecd/xdp_segment.h, dp_segment.h,
 * dp_segment.c), one row per case. The hash rows were computed by a separate Python program written
 * from the kernel's include/linux/jhash.h (jhash_1word with initval 0, lookup2 and lookup3 before and
 * after Linux 4.1) and reciprocal_scale, the way the iptables CLUSTERIP target (hashmode sourceip)
 * that strongSwan's ha plugin imitates maps a source address to a node; the jhash variant is chosen
 * from the kernel release as the plugin chooses it. Then the segment lists, which outbound SAs a
 * node keeps, and the control requests against a real BPF array map (needs root; skipped
 * otherwise), with the segments gained handed to the cluster before the map shows them, and a
 * segment the other node still says it owns taken only once it lets go, or at the deadline. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_segment.h"

/* address, jhash_1word before 2.6.37, 2.6.37..4.0, since 4.1; the segment (4.1) of 2, 16 and 5 */
static const struct hrow {
	const char *addr;
	uint32_t h_lookup2, h_lookup3, h_lookup3_1;
	uint32_t seg2, seg16, seg5;
} hrows[] = {
	{ "10.0.0.1", 0x61e5290c, 0xcfa466a2, 0x3483bc84, 1, 4, 2 },
	{ "192.168.0.1", 0xa305c41a, 0xc67a68b5, 0x141c753e, 1, 2, 1 },
	{ "172.16.1.1", 0x89a45fe7, 0x9ffbdf40, 0xebf8b4f2, 2, 15, 5 },
	{ "0.0.0.0", 0xbd49d10d, 0xc0b0a2c2, 0x049396b8, 1, 1, 1 },
	{ "255.255.255.255", 0x6477d91b, 0x20a7c7fa, 0x9b11c75b, 2, 10, 4 },
	{ "198.51.100.7", 0xe7741f7a, 0x9f3bbc54, 0x4ea226f1, 1, 5, 2 },
	{ "203.0.113.200", 0x22171837, 0x21707444, 0x26d91827, 1, 3, 1 },
};

static uint32_t v4(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static void test_hash(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hrows) / sizeof(hrows[0]); i++) {
		const struct hrow *r = &hrows[i];
		uint32_t a = v4(r->addr);

		assert_int_equal(dp_seg_jhash(DP_SEG_LOOKUP2, ntohl(a)), r->h_lookup2);
		assert_int_equal(dp_seg_jhash(DP_SEG_LOOKUP3, ntohl(a)), r->h_lookup3);
		assert_int_equal(dp_seg_jhash(DP_SEG_LOOKUP3_1, ntohl(a)), r->h_lookup3_1);
		assert_int_equal(dp_seg_of(DP_SEG_LOOKUP3_1, 2, a), r->seg2);
		assert_int_equal(dp_seg_of(DP_SEG_LOOKUP3_1, 16, a), r->seg16);
		assert_int_equal(dp_seg_of(DP_SEG_LOOKUP3_1, 5, a), r->seg5);
		/* one segment holds everybody */
		assert_int_equal(dp_seg_of(DP_SEG_LOOKUP3_1, 1, a), 1);
	}
}

/* The kernel release strings the plugin's get_jhash_version() tells apart. */
static void test_jhash_of_release(void **state)
{
	static const struct { const char *release; enum dp_seg_jhash want; } rows[] = {
		{ "2.6.36", DP_SEG_LOOKUP2 },
		{ "2.6.37", DP_SEG_LOOKUP3 },
		{ "3.16.0-4-amd64", DP_SEG_LOOKUP3 },
		{ "4.0.9", DP_SEG_LOOKUP3 },
		{ "4.1.0", DP_SEG_LOOKUP3_1 },
		{ "6.1.0-13-amd64", DP_SEG_LOOKUP3_1 },
		{ "6.18", DP_SEG_LOOKUP3_1 },
		{ "garbage", DP_SEG_LOOKUP3 },
		{ NULL, DP_SEG_LOOKUP3 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(dp_segment_jhash(rows[i].release), rows[i].want);
}

static void test_parse(void **state)
{
	static const struct { const char *list; unsigned count; int err; uint32_t mask; } rows[] = {
		{ "1", 2, 0, 0x1 },
		{ "2", 2, 0, 0x2 },
		{ "1,2", 2, 0, 0x3 },
		{ "16,1", 16, 0, 0x8001 },
		{ "none", 2, 0, 0 },
		{ "all", 3, 0, 0x7 },
		{ "all", 16, 0, 0xffff },
		{ "3", 2, -EINVAL, 0 },      /* beyond the cluster's count */
		{ "0", 2, -EINVAL, 0 },
		{ "", 2, -EINVAL, 0 },
		{ "1,", 2, -EINVAL, 0 },
		{ ",1", 2, -EINVAL, 0 },
		{ "1;2", 2, -EINVAL, 0 },
		{ "-1", 2, -EINVAL, 0 },
		{ "1x", 2, -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t m = 0xdead;

		assert_int_equal(dp_segment_parse(rows[i].list, rows[i].count, &m), rows[i].err);
		if (!rows[i].err)
			assert_int_equal(m, rows[i].mask);
	}
}

static struct sadb_addr sa4(const char *s)
{
	struct sadb_addr a = { .family = AF_INET };

	a.a.w[0] = v4(s);
	return a;
}

/* Outbound: only SAs from the cluster address are split, by their peer's segment. */
static void test_keeps(void **state)
{
	static struct dp_ctx ctx;
	struct sadb_addr cl = sa4("192.0.2.1"), other = sa4("192.0.2.9");
	struct sadb_addr p1 = sa4("10.0.0.1"), p2 = sa4("172.16.1.1");    /* segments 1 and 2 of 2 */
	struct sadb_addr p6 = { .family = AF_INET6 };                     /* hashed as 0.0.0.0: 1 */

	(void)state;
	ctx.cfg.cluster_addr = cl.a.w[0];
	atomic_store(&ctx.seg_state, 0);
	assert_true(dp_seg_keeps(&ctx, &cl, &p2));                         /* no cluster */
	atomic_store(&ctx.seg_state, 2u << DP_SEG_COUNT_SHIFT | 0x1);      /* owns 1 of 2 */
	assert_true(dp_seg_keeps(&ctx, &cl, &p1));
	assert_false(dp_seg_keeps(&ctx, &cl, &p2));
	assert_true(dp_seg_keeps(&ctx, &cl, &p6));
	assert_true(dp_seg_keeps(&ctx, &other, &p2));                      /* not clustered */
	atomic_store(&ctx.seg_state, 2u << DP_SEG_COUNT_SHIFT | 0x2);
	assert_false(dp_seg_keeps(&ctx, &cl, &p1));
	assert_true(dp_seg_keeps(&ctx, &cl, &p2));
	atomic_store(&ctx.seg_state, 2u << DP_SEG_COUNT_SHIFT);           /* owns nothing */
	assert_false(dp_seg_keeps(&ctx, &cl, &p1));
	assert_false(dp_seg_keeps(&ctx, &cl, &p2));
}

/* The two maps dp_segment.c writes and reads, as the loaded program would have them. */
static int cluster_fd = -1, stats_fd = -1;

int dp_xdp_map_fd(struct dp_ctx *ctx, const char *name)
{
	(void)ctx;
	if (!strcmp(name, "cluster_seg"))
		return cluster_fd;
	if (!strcmp(name, "cluster_seg_stats"))
		return stats_fd;
	return -ENOENT;
}

/* The cluster's side of a gain, as dp_segment.c calls it: which segments, and what the workers
 * saw owned at that moment (the gain must come before they see the new owner). */
static uint32_t gained, owned_at_gain;

void dp_cluster_segments_gained(struct dp_ctx *ctx, uint32_t mask)
{
	gained |= mask;
	owned_at_gain = atomic_load(&ctx->seg_state) & DP_SEG_OWNED_MASK;
}

/* The other node, as its heartbeats say it (dp_cluster.c): the segments it owns, and what this node
 * last said it owns. */
static uint32_t peer_holds, said = 0xdead;

uint32_t dp_cluster_peer_segments(const struct dp_ctx *ctx, uint64_t now)
{
	(void)ctx;
	(void)now;
	return peer_holds;
}

void dp_cluster_say_segments(struct dp_ctx *ctx, uint32_t owned)
{
	(void)ctx;
	said = owned;
}

static void test_ctl(void **state)
{
	static struct dp_ctx ctx;
	static struct dp_worker w[2];
	struct dp_xdp_cluster c;
	uint32_t zero = 0;
	char buf[4096];

	(void)state;
	cluster_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "cluster_seg", 4, sizeof(c), 1, NULL);
	stats_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "cluster_seg_stats", 4,
				  sizeof(struct dp_xdp_seg_stats), DP_SEG_MAX + 1, NULL);
	if (cluster_fd < 0 || stats_fd < 0)
		skip();
	ctx.w = w;
	ctx.n_workers = 2;
	w[1].cluster_foreign = 5;

	/* no cluster: the request says so, nothing is written */
	dp_segment_ctl(&ctx, "segments set 1", buf, sizeof(buf));
	assert_non_null(strstr(buf, "error: no active/active cluster"));

	/* the settings as the options leave them: both or neither, in range */
	ctx.cfg.cluster.segments = "17";
	ctx.cfg.cluster.address = "192.0.2.1";
	assert_int_equal(dp_segment_init(&ctx), -EINVAL);
	ctx.cfg.cluster.segments = "2";
	ctx.cfg.cluster.address = NULL;
	assert_int_equal(dp_segment_init(&ctx), -EINVAL);
	ctx.cfg.cluster.address = "2001:db8::1";
	assert_int_equal(dp_segment_init(&ctx), -EINVAL);
	ctx.cfg.cluster.address = "192.0.2.1";
	assert_int_equal(dp_segment_init(&ctx), 0);
	assert_int_equal(ctx.cfg.cluster_segments, 2);
	assert_int_equal(bpf_map_lookup_elem(cluster_fd, &zero, &c), 0);
	assert_int_equal(c.count, 2);
	assert_int_equal(c.owned, 0);                                      /* starts owning none */
	assert_int_equal(c.addr, v4("192.0.2.1"));

	dp_segment_ctl(&ctx, "segments set 2\n", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"owned\":[2]"));
	assert_non_null(strstr(buf, "\"cluster_foreign\":5"));
	assert_non_null(strstr(buf, "{\"segment\":2,\"owned\":true,\"kept\":0,\"foreign\":0}"));
	assert_int_equal(bpf_map_lookup_elem(cluster_fd, &zero, &c), 0);
	assert_int_equal(c.owned, 0x2);
	assert_int_equal(atomic_load(&ctx.seg_state) & DP_SEG_OWNED_MASK, 0x2);
	assert_int_equal(gained, 0x2);
	assert_int_equal(owned_at_gain, 0);
	gained = 0;

	/* a bad list changes nothing */
	dp_segment_ctl(&ctx, "segments set 3", buf, sizeof(buf));
	assert_non_null(strstr(buf, "error: '3' is not a list of segments 1..2"));
	assert_int_equal(bpf_map_lookup_elem(cluster_fd, &zero, &c), 0);
	assert_int_equal(c.owned, 0x2);

	assert_int_equal(gained, 0);
	dp_segment_ctl(&ctx, "segments set all", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"owned\":[1,2]"));
	assert_int_equal(gained, 0x1);                                     /* only what is new */
	assert_int_equal(owned_at_gain, 0x2);
	dp_segment_ctl(&ctx, "segments", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"count\":2,\"address\":\"192.0.2.1\",\"jhash\":\"lookup3"));
	dp_segment_ctl(&ctx, "segments what", buf, sizeof(buf));
	assert_non_null(strstr(buf, "error: segments [set LIST]"));
	assert_int_equal(said, 0x3);

	/* a segment the other node still says it owns is taken only once it lets go */
	dp_segment_ctl(&ctx, "segments set 2", buf, sizeof(buf));
	assert_int_equal(said, 0x2);
	gained = 0;
	peer_holds = 0x1;
	dp_segment_ctl(&ctx, "segments set all", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"owned\":[2]"));                     /* not yet */
	assert_int_equal(ctx.seg_wait, 0x1);
	assert_int_equal(gained, 0);
	assert_int_equal(bpf_map_lookup_elem(cluster_fd, &zero, &c), 0);
	assert_int_equal(c.owned, 0x2);
	uint64_t until = ctx.seg_wait_until;
	dp_segment_tick(&ctx, until - 1);                                  /* still held there */
	assert_int_equal(atomic_load(&ctx.seg_state) & DP_SEG_OWNED_MASK, 0x2);
	dp_segment_ctl(&ctx, "segments set all", buf, sizeof(buf));        /* the resend: same deadline */
	assert_int_equal(ctx.seg_wait_until, until);
	peer_holds = 0;                                                    /* its heartbeat: let go */
	dp_segment_tick(&ctx, until - 1);
	assert_int_equal(ctx.seg_wait, 0);
	assert_int_equal(gained, 0x1);
	assert_int_equal(owned_at_gain, 0x2);                              /* taken over before the map */
	assert_int_equal(bpf_map_lookup_elem(cluster_fd, &zero, &c), 0);
	assert_int_equal(c.owned, 0x3);
	assert_int_equal(said, 0x3);

	/* a peer that never lets go: taken at the deadline */
	dp_segment_ctl(&ctx, "segments set 2", buf, sizeof(buf));
	gained = 0;
	peer_holds = 0x1;
	dp_segment_ctl(&ctx, "segments set 1,2", buf, sizeof(buf));
	assert_int_equal(ctx.seg_wait, 0x1);
	dp_segment_tick(&ctx, ctx.seg_wait_until);
	assert_int_equal(ctx.seg_wait, 0);
	assert_int_equal(atomic_load(&ctx.seg_state) & DP_SEG_OWNED_MASK, 0x3);
	assert_int_equal(gained, 0x1);

	/* taken back from this node while it waits: the wait ends, nothing is taken */
	dp_segment_ctl(&ctx, "segments set 2", buf, sizeof(buf));
	gained = 0;
	dp_segment_ctl(&ctx, "segments set all", buf, sizeof(buf));
	assert_int_equal(ctx.seg_wait, 0x1);
	dp_segment_ctl(&ctx, "segments set none", buf, sizeof(buf));
	assert_int_equal(ctx.seg_wait, 0);
	dp_segment_tick(&ctx, ctx.seg_wait_until + 1);
	assert_int_equal(atomic_load(&ctx.seg_state) & DP_SEG_OWNED_MASK, 0);
	assert_int_equal(gained, 0);
	assert_int_equal(said, 0);
	peer_holds = 0;
	close(cluster_fd);
	close(stats_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_jhash_of_release),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_keeps),
		cmocka_unit_test(test_ctl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
