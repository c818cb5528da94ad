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
 * of a segment loses its packets only until the plugin (heartbeat loss, autobalance) hands it over. */
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
	return 0;
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
	uint32_t st = atomic_load_explicit(&ctx->seg_state, memory_order_relaxed);

	for (unsigned s = 1, first = 1; s <= ctx->cfg.cluster_segments; s++)
		if (st & (1u << (s - 1))) {
			dp_put(p, left, "%s%u", first ? "" : ",", s);
			first = 0;
		}
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
		bool changed = mask != (atomic_load_explicit(&ctx->seg_state, memory_order_relaxed) &
					DP_SEG_OWNED_MASK);

		/* the SAs of a segment gained start above every number the other node may have used
		 * before a worker may send for them (dp_cluster.c) */
		dp_cluster_segments_gained(ctx, mask & ~(atomic_load_explicit(&ctx->seg_state,
									       memory_order_relaxed) &
							   DP_SEG_OWNED_MASK));
		err = map_write(ctx, mask);
		if (err)
			return (size_t)snprintf(buf, len, "error: the XDP program's cluster map: %s\n",
						strerror(-err));
		if (changed)
			dp_log(LOG_NOTICE, "active/active: now owning segments %s", list);
	} else if (strcmp(req, "segments") && strcmp(req, "segments\n")) {
		return (size_t)snprintf(buf, len, "error: segments [set LIST]\n");
	}
	return show(ctx, buf, len);
}
