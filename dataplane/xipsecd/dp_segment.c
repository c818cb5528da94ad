/* dataplane/xipsecd/dp_segment.c: the segments of an active/active cluster this node owns (the control
 * thread's side of dp_segment.h): the XDP program's cluster map, the owned mask the workers read,
 * and the control socket's "segments" requests through which xipsec-iked (the ha plugin's segment
 * changes) and `ipsecctl cluster segments` set it.
 *
 * Why the dataplane filters and not the kernel: the ha plugin expects the iptables CLUSTERIP target
 * to drop what another node owns, but frames to the cluster address never reach the kernel's
 * netfilter here (ESP and ESP-in-UDP go from the XDP program straight to the workers), and the
 * target is deprecated and gone from current kernels. A node starts owning nothing: two nodes that
 * both processed a segment would decrypt and forward its packets twice, and one that owned none
 * of a segment loses its packets only until the plugin (heartbeat loss, autobalance) hands it over.
 *
 * A segment moved between two live nodes (the plugin's FIFO, autobalance) reaches the two
 * dataplanes by two paths: the releasing node's plugin logs the change and its xipsec-iked tells its
 * xipsecd, and the same plugin tells the other node's plugin, whose xipsec-iked tells the other
 * xipsecd. The gaining one can hear first. Both would then send on the segment's outbound SAs: no
 * number twice (each node's block is its own, dp_cluster_lease.c), but the gainer's numbers are the
 * higher, so the peer refuses the releaser's as replays, and an inside packet both nodes received
 * leaves twice. So a segment given to this node that the other node's dataplane still owns, as its
 * last heartbeat on the authenticated sync channel said (at most DPC_SEG_FRESH_NS old), is held back
 * (ctx->seg_wait) until the other's heartbeat says it let it go (it sends one at once when its
 * ownership changes), or for at most DP_SEG_HANDOVER_NS: a peer whose plugin is dead never lets go,
 * but its dataplane still forwards the segment meanwhile. A peer that is silent (killed, cut off)
 * holds nothing back. The residuals: a heartbeat replayed into a restarted node delays a take by
 * at most DP_SEG_HANDOVER_NS; a node that has not yet heard the other's first heartbeat (within
 * DPC_HELLO_NS of its start) takes what it is given at once, as before this wait existed. Neither
 * can make a sequence number repeat: each node numbers in blocks of its own (dp_cluster_lease.c),
 * and the wait only delays the takeover, which then starts above an even later report. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/utsname.h>

#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_segment.h"

_Static_assert(DP_SEG_MAX == SADB_STATS_SEGMENTS, "the counters view holds every segment");

#define DP_SEG_HANDOVER_NS (1000ull * 1000000ull) /* the longest a take waits for the other node */

enum dp_seg_jhash dp_segment_jhash(const char *release)
{
	int a, b, c;

	switch (release ? sscanf(release, "%d.%d.%d", &a, &b, &c) : 0) {
	case 3:
		if (a == 2 && b == 6)
			return c < 37 ? DP_SEG_LOOKUP2 : DP_SEG_LOOKUP3;
		/* fall through */
	case 2:
		return a < 4 || (a == 4 && b == 0) ? DP_SEG_LOOKUP3 : DP_SEG_LOOKUP3_1;
	default:
		return DP_SEG_LOOKUP3;
	}
}

int dp_segment_parse(const char *list, unsigned count, uint32_t *mask)
{
	const char *p = list;

	*mask = 0;
	if (!strcmp(list, "none"))
		return 0;
	if (!strcmp(list, "all")) {
		*mask = count >= 32 ? ~0u : (1u << count) - 1;
		return 0;
	}
	do {
		char *end;
		unsigned long s;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		s = strtoul(p, &end, 10);
		if (s < 1 || s > count)
			return -EINVAL;
		*mask |= 1u << (s - 1);
		p = end;
	} while (*p == ',' && p++);
	return *p ? -EINVAL : 0;
}

static int map_write(struct dp_ctx *ctx, uint32_t owned)
{
	uint32_t zero = 0, st = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed);
	struct dp_xdp_cluster c = {
		.count = ctx->cfg.cluster_segments,
		.owned = owned,
		.jhash = st >> DP_SEG_JHASH_SHIFT & 3,
		.addr = ctx->cfg.cluster_addr,
	};
	int fd = dp_xdp_map_fd(ctx, "cluster_seg");

	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(fd, &zero, &c, BPF_ANY))
		return -errno;
	st = (st & ~DP_SEG_OWNED_MASK) | owned;
	atomic_store_explicit(&ctx->seg_state, st, memory_order_relaxed);
	dp_cluster_say_segments(ctx, owned);
	return 0;
}

/* The segments of mask as the plugin writes them, "1,3" (nothing for none), at *p (dp_put). */
static void put_mask(uint32_t mask, char **p, size_t *left)
{
	for (unsigned s = 1, first = 1; s <= DP_SEG_MAX; s++)
		if (mask & (1u << (s - 1))) {
			dp_put(p, left, "%s%u", first ? "" : ",", s);
			first = 0;
		}
}

/* The same for a log line, into buf: "none" for none. */
static const char *seg_list(uint32_t mask, char *buf, size_t len)
{
	char *p = buf;
	size_t left = len;

	buf[0] = 0;
	put_mask(mask, &p, &left);
	return mask ? buf : "none";
}

/* Owning owned | gained from now on: the SAs of gained taken over first (dp_cluster_seg.c), then
 * the map the XDP program and the workers read. */
static int own(struct dp_ctx *ctx, uint32_t owned, uint32_t gained)
{
	dp_cluster_segments_gained(ctx, gained & ~owned);
	return map_write(ctx, owned | gained);
}

void dp_segment_tick(struct dp_ctx *ctx, uint64_t now)
{
	uint32_t owned, held, go;
	char l[64];

	if (!ctx->seg_wait)
		return;
	held = dp_cluster_peer_segments(ctx, now);
	go = now >= ctx->seg_wait_until ? ctx->seg_wait : ctx->seg_wait & ~held;
	if (!go)
		return;
	owned = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) & DP_SEG_OWNED_MASK;
	ctx->seg_wait &= ~go;
	if (own(ctx, owned, go)) {
		dp_log(LOG_ERR, "active/active: cannot take segments %s: the XDP program's cluster map",
		       seg_list(go, l, sizeof(l)));
		return;
	}
	dp_log(go & held ? LOG_WARNING : LOG_NOTICE, "active/active: segments %s taken: %s", seg_list(go, l, sizeof(l)),
	       go & held ? "the other node did not let them go within 1 s" : "the other node let them go");
}

/* --cluster-segments and --cluster-address, else their variables (an empty one, as a unit's
 * environment file leaves it, is unset): both or neither. */
static int config(struct dp_config *cfg)
{
	const char *n = cfg->cluster.segments ? cfg->cluster.segments : getenv("XIPSEC_CLUSTER_SEGMENTS");
	const char *a = cfg->cluster.address ? cfg->cluster.address : getenv("XIPSEC_CLUSTER_ADDRESS");
	unsigned long v;
	char *end;

	if ((!n || !*n) && (!a || !*a))
		return 0;
	errno = 0;
	v = n ? strtoul(n, &end, 10) : 0;
	if (!n || errno || *end || v < 1 || v > DP_SEG_MAX) {
		dp_log(LOG_ERR, "--cluster-segments takes 1..%u, not '%s'", DP_SEG_MAX, n ? n : "");
		return -EINVAL;
	}
	if (!a || inet_pton(AF_INET, a, &cfg->cluster_addr) != 1) {
		dp_log(LOG_ERR, "--cluster-segments needs --cluster-address, an IPv4 address (not '%s')",
		       a ? a : "");
		return -EINVAL;
	}
	cfg->cluster_segments = (unsigned)v;
	return 0;
}

int dp_segment_init(struct dp_ctx *ctx)
{
	struct utsname u;
	enum dp_seg_jhash v;
	char a[INET_ADDRSTRLEN];
	int err = config(&ctx->cfg);

	if (err || !ctx->cfg.cluster_segments)
		return err;
	v = dp_segment_jhash(uname(&u) == 0 ? u.release : NULL);
	atomic_store_explicit(&ctx->seg_state, ctx->cfg.cluster_segments << DP_SEG_COUNT_SHIFT |
			      (uint32_t)v << DP_SEG_JHASH_SHIFT, memory_order_relaxed);
	err = map_write(ctx, 0);
	if (err) {
		dp_log(LOG_ERR, "cannot set up the cluster segments in the XDP program: %s", strerror(-err));
		return err;
	}
	dp_log(LOG_INFO, "active/active: %u segments on %s, none owned until set", ctx->cfg.cluster_segments,
	       inet_ntop(AF_INET, &ctx->cfg.cluster_addr, a, sizeof(a)));
	if (!ctx->cluster)
		dp_log(LOG_WARNING, "active/active without the cluster sync (--cluster-peer): a segment "
		       "that moves here resumes its SAs' sequence numbers where this node left them, "
		       "whatever the other node sent since");
	return 0;
}

/* The owned segments, "1,2" (nothing for none). */
static void put_owned(struct dp_ctx *ctx, char **p, size_t *left)
{
	put_mask(atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) & DP_SEG_OWNED_MASK, p, left);
}

void dp_segment_put(struct dp_ctx *ctx, bool json, char **p, size_t *left)
{
	if (json) {
		dp_put(p, left, "\"segments\":{\"count\":%u,\"owned\":[", ctx->cfg.cluster_segments);
		put_owned(ctx, p, left);
		dp_put(p, left, "]}");
	} else if (!ctx->cfg.cluster_segments) {
		dp_put(p, left, "segments: none (no active/active)\n");
	} else {
		dp_put(p, left, "segments: %u, owned: ", ctx->cfg.cluster_segments);
		if (!(atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) & DP_SEG_OWNED_MASK))
			dp_put(p, left, "none");
		put_owned(ctx, p, left);
		dp_put(p, left, "\n");
	}
}

void dp_segment_stats(struct dp_ctx *ctx, struct sadb_stats_cluster *st)
{
	int fd = dp_xdp_map_fd(ctx, "cluster_seg_stats"), ncpu = libbpf_num_possible_cpus();
	struct dp_xdp_seg_stats *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;

	st->segments = ctx->cfg.cluster_segments;
	st->owned = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) & DP_SEG_OWNED_MASK;
	st->cluster_foreign = 0;
	for (unsigned i = 0; i < ctx->n_workers; i++)
		st->cluster_foreign += __atomic_load_n(&ctx->w[i].cluster_foreign, __ATOMIC_RELAXED);
	for (uint32_t s = 1; s <= ctx->cfg.cluster_segments && s <= SADB_STATS_SEGMENTS; s++) {
		st->seg_kept[s - 1] = st->seg_foreign[s - 1] = 0;
		if (v && fd >= 0 && bpf_map_lookup_elem(fd, &s, v) == 0)
			for (int c = 0; c < ncpu; c++) {
				st->seg_kept[s - 1] += v[c].kept;
				st->seg_foreign[s - 1] += v[c].foreign;
			}
	}
	free(v);
}

/* The segments as JSON: count, the cluster address, owned, and per segment the frames the XDP
 * program kept and dropped; the workers' outbound packets left to the other node. */
static size_t show(struct dp_ctx *ctx, char *buf, size_t len)
{
	static const char *const names[] = { "lookup3_1", "lookup3", "lookup2" };
	uint32_t st = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed);
	struct sadb_stats_cluster c;
	char a[INET_ADDRSTRLEN], *p = buf;
	size_t left = len;

	dp_segment_stats(ctx, &c);
	dp_put(&p, &left, "{\"count\":%u,\"address\":\"%s\",\"jhash\":\"%s\",\"owned\":[",
	    ctx->cfg.cluster_segments, ctx->cfg.cluster_segments ?
	    inet_ntop(AF_INET, &ctx->cfg.cluster_addr, a, sizeof(a)) : "",
	    names[(st >> DP_SEG_JHASH_SHIFT & 3) % 3]);
	put_owned(ctx, &p, &left);
	dp_put(&p, &left, "],\"cluster_foreign\":%llu,\"segments\":[", (unsigned long long)c.cluster_foreign);
	for (uint32_t s = 1; s <= ctx->cfg.cluster_segments; s++)
		dp_put(&p, &left, "%s{\"segment\":%u,\"owned\":%s,\"kept\":%llu,\"foreign\":%llu}",
		    s > 1 ? "," : "", s, st & (1u << (s - 1)) ? "true" : "false",
		    (unsigned long long)c.seg_kept[s - 1], (unsigned long long)c.seg_foreign[s - 1]);
	dp_put(&p, &left, "]}\n");
	return (size_t)(p - buf);
}

size_t dp_segment_ctl(struct dp_ctx *ctx, const char *req, char *buf, size_t len)
{
	char list[64];
	uint32_t mask;
	int err;

	if (sscanf(req, "segments set %63s", list) == 1) {
		if (!ctx->cfg.cluster_segments)
			return (size_t)snprintf(buf, len, "error: no active/active cluster "
						"(xipsecd --cluster-segments)\n");
		if (dp_segment_parse(list, ctx->cfg.cluster_segments, &mask))
			return (size_t)snprintf(buf, len, "error: '%s' is not a list of segments "
						"1..%u, none or all\n", list, ctx->cfg.cluster_segments);
		/* xipsec-iked repeats the plugin's list every second: only a change is news */
		uint32_t owned = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) & DP_SEG_OWNED_MASK;
		uint64_t now = dp_now_ns();
		/* what the other node still forwards waits for it to let go (above); the rest, and
		 * every segment given up, takes effect now */
		uint32_t held = mask & ~owned & dp_cluster_peer_segments(ctx, now);
		char l[64];

		uint32_t before = ctx->seg_wait;

		if (held && !before)
			ctx->seg_wait_until = now + DP_SEG_HANDOVER_NS;
		ctx->seg_wait = held;
		err = own(ctx, owned & mask, mask & ~held);
		if (err)
			return (size_t)snprintf(buf, len, "error: the XDP program's cluster map: %s\n",
						strerror(-err));
		if ((mask & ~held) != owned)
			dp_log(LOG_NOTICE, "active/active: now owning segments %s",
			       seg_list(mask & ~held, l, sizeof(l)));
		if (held & ~before)
			dp_log(LOG_NOTICE, "active/active: segments %s given here: waiting for the other node "
			       "to let them go", seg_list(held, l, sizeof(l)));
	} else if (strcmp(req, "segments") && strcmp(req, "segments\n")) {
		return (size_t)snprintf(buf, len, "error: segments [set LIST]\n");
	}
	return show(ctx, buf, len);
}
