/* dataplane/xipsecd/dp_ctl.c: xipsecd's control socket (a unix stream socket, mode 0600). One request per
 * connection, a line: "status" (JSON: interfaces, workers, per-worker counters and drops by reason,
 * XDP program counters, SADB generation, expiries of manual SAs it raised), "bindings" (tab-separated
 * lines, dp_mip6.c: the home agent, its binding cache with each binding's tunnel traffic, counters),
 * "cluster" (JSON; "cluster text" for people), "cluster active" / "cluster standby" (the node's role,
 * dp_cluster.c; answered "ok: ..." or "error: ...") or "ping". Answered by
 * the control thread; reading the workers' relaxed counters never disturbs the packet path. Per-SA
 * counters live in the SADB runtime area and are shown by ipsecctl. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/if_xdp.h>
#include <syslog.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_sa.h"

int dp_ctl_open(struct dp_ctx *ctx)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;
	mode_t old;

	ctx->ctl_fd = -1;
	if (!ctx->cfg.ctl_path || !*ctx->cfg.ctl_path)
		return 0;
	if (strlen(ctx->cfg.ctl_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, ctx->cfg.ctl_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path); /* a stale socket of a killed instance */
	old = umask(0077);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (err < 0 || listen(fd, 8) < 0) {
		err = -errno;
		dp_log(LOG_ERR, "control socket %s: %s", sa.sun_path, strerror(-err));
		close(fd);
		return err;
	}
	ctx->ctl_fd = fd;
	return 0;
}

static size_t status(struct dp_ctx *ctx, char *buf, size_t len)
{
	char *p = buf;
	size_t left = len;
	uint64_t pass = 0, redir = 0, acq, acq_lost, acq_limited;

	dp_xdp_stats(ctx, &pass, &redir);
	dp_acquire_stats(ctx, &acq, &acq_lost, &acq_limited);
	dp_put(&p, &left, "{\"pid\":%d,\"inside\":\"%s\",\"outside\":\"%s\",\"workers\":%u,\"batch\":%u,"
	    "\"sadb_generation\":%llu,\"sas\":%u,\"sa_soft_expired\":%llu,"
	    "\"sa_hard_expired\":%llu,\"uptime_ms\":%llu,\"handoff\":%s,"
	    "\"xdp\":{\"pass\":%llu,\"redirect\":%llu,\"bad_spi\":%llu},\"tun\":\"%s\","
	    "\"acquires\":{\"raised\":%llu,\"lost\":%llu,\"limited\":%llu},\"worker\":[",
	    (int)getpid(), ctx->ifc[DP_IN].name, ctx->ifc[DP_OUT].name, ctx->n_workers, ctx->batch,
	    (unsigned long long)ctx->sadb_gen, dp_sa_count(ctx),
	    (unsigned long long)ctx->sa_soft_expired, (unsigned long long)ctx->sa_hard_expired,
	    (unsigned long long)((dp_now_ns() - ctx->start_ns) / 1000000),
	    ctx->handoff ? "true" : "false",
	    (unsigned long long)pass, (unsigned long long)redir,
	    (unsigned long long)dp_xdp_spi_drops(ctx),
	    ctx->tun_fd >= 0 ? (ctx->cfg.tun_name ? ctx->cfg.tun_name : "xipsec0") : "",
	    (unsigned long long)acq, (unsigned long long)acq_lost, (unsigned long long)acq_limited);
	for (unsigned i = 0; i < ctx->n_workers; i++) {
		const struct sadb_worker_stats *s = ctx->w[i].sst;
		bool first = true;

#define L(x) (unsigned long long)__atomic_load_n(&(x), __ATOMIC_RELAXED)
		dp_put(&p, &left, "%s{\"id\":%u,\"queue\":%u,\"cpu\":%d,\"rx_inside\":%llu,"
		    "\"rx_outside\":%llu,\"tx_inside\":%llu,\"tx_outside\":%llu,\"bypass\":%llu,"
		    "\"protect\":%llu,\"unprotect\":%llu,\"to_tun\":%llu,\"from_tun\":%llu,"
		    "\"held\":%llu,\"icmp_sent\":%llu,\"spd_out\":%llu,\"frame_anomalies\":%llu,"
		    "\"frag_packets\":%llu,\"frag_made\":%llu,\"reasm_packets\":%llu,"
		    "\"reasm_frags\":%llu,\"handoff_done\":%llu,\"handoff_jobs\":%llu,"
		    "\"handoff_pkts\":%llu,\"handoff_back\":%llu,\"drops\":{",
		    i ? "," : "", i, ctx->w[i].queue, ctx->w[i].cpu, L(s->rx[DP_IN]),
		    L(s->rx[DP_OUT]), L(s->tx[DP_IN]), L(s->tx[DP_OUT]), L(s->bypass),
		    L(s->protect), L(s->unprotect), L(s->to_tun), L(s->from_tun), L(s->held),
		    L(s->icmp_sent), L(s->spd_out), (unsigned long long)ctx->w[i].frame_anomalies,
		    L(s->frag_packets), L(s->frag_made), L(s->reasm_packets), L(s->reasm_frags),
		    L(s->handoff_done), L(s->handoff_jobs), L(s->handoff_pkts), L(s->handoff_back));
		for (unsigned r = 1; r < SADB_DROP_MAX; r++) {
			/* the worker's view: the drops it charged to an SA as well as those of no SA */
			unsigned long long v = L(s->drops[r]) + L(s->sa_drops[r]);

			if (!v)
				continue;
			dp_put(&p, &left, "%s\"%s\":%llu", first ? "" : ",", sadb_drop_name(r), v);
			first = false;
		}
#undef L
		dp_put(&p, &left, "}");
		/* what the kernel dropped before the worker saw it (ring full, no fill buffer) */
		for (unsigned q = 0; q < DP_NPORTS; q++) {
			struct xdp_statistics xs = { 0 };
			socklen_t xl = sizeof(xs);

			if (ctx->w[i].port[q].xsk &&
			    getsockopt(ctx->w[i].port[q].fd, SOL_XDP, XDP_STATISTICS, &xs, &xl) == 0)
				dp_put(&p, &left, ",\"xsk_%s\":{\"rx_dropped\":%llu,\"rx_ring_full\":%llu,"
				    "\"fill_ring_empty\":%llu,\"tx_invalid\":%llu}",
				    q == DP_IN ? "inside" : "outside", (unsigned long long)xs.rx_dropped,
				    (unsigned long long)xs.rx_ring_full,
				    (unsigned long long)xs.rx_fill_ring_empty_descs,
				    (unsigned long long)xs.tx_invalid_descs);
		}
		dp_put(&p, &left, "}");
	}
	dp_put(&p, &left, "]}\n");
	return (size_t)(p - buf);
}

void dp_ctl_handle(struct dp_ctx *ctx)
{
	static char buf[65536];
	char req[128], *out = buf;
	int c = accept4(ctx->ctl_fd, NULL, NULL, SOCK_CLOEXEC);
	struct pollfd pf;
	ssize_t n;
	size_t len;

	if (c < 0)
		return;
	pf.fd = c;
	pf.events = POLLIN;
	/* a client that sends nothing must not hold the control thread */
	if (poll(&pf, 1, 1000) <= 0 || (n = read(c, req, sizeof(req) - 1)) <= 0) {
		close(c);
		return;
	}
	req[n] = 0;
	{
		/* a client that stops reading must not hold the control thread either */
		struct timeval tv = { .tv_sec = 2 };

		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (!strncmp(req, "bindings", 8)) {
		/* one line per binding: as large as the binding cache */
		size_t cap = dp_mip6_ctl_cap(ctx);

		out = cap > sizeof(buf) ? malloc(cap) : buf;
		if (!out) {
			out = buf;
			len = (size_t)snprintf(out, sizeof(buf), "error: out of memory\n");
		} else {
			len = dp_mip6_ctl(ctx, out, cap > sizeof(buf) ? cap : sizeof(buf));
		}
	} else if (!strncmp(req, "cluster active", 14) || !strncmp(req, "cluster standby", 15)) {
		char msg[256];
		int r = dp_cluster_set_role(ctx, req[8] == 'a', msg, sizeof(msg));

		len = (size_t)snprintf(out, sizeof(buf), "%s%s\n", r ? "error: " : "ok: ", msg);
	} else if (!strncmp(req, "cluster text", 12)) {
		len = dp_cluster_status(ctx, false, out, sizeof(buf));
	} else if (!strncmp(req, "cluster", 7)) {
		len = dp_cluster_status(ctx, true, out, sizeof(buf));
	} else if (!strncmp(req, "status", 6))
		len = status(ctx, out, sizeof(buf));
	else if (!strncmp(req, "ping", 4))
		len = (size_t)snprintf(out, sizeof(buf), "pong\n");
	else
		len = (size_t)snprintf(out, sizeof(buf), "error: unknown request (status, bindings, cluster [text|active|standby], ping)\n");
	for (size_t off = 0; off < len;) {
		ssize_t w = write(c, out + off, len - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (out != buf)
		free(out);
	close(c);
}

void dp_ctl_close(struct dp_ctx *ctx)
{
	if (ctx->ctl_fd >= 0) {
		close(ctx->ctl_fd);
		unlink(ctx->cfg.ctl_path);
	}
	ctx->ctl_fd = -1;
}
