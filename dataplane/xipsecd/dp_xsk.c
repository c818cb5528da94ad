/* dataplane/xipsecd/dp_xsk.c: a worker's AF_XDP plumbing: one UMEM per worker shared by its inside and
 * outside sockets (XDP_SHARED_UMEM), so a frame received on one interface is transmitted on the
 * other without a copy; the worker-private frame pool; zero-copy when the driver offers it, copy
 * mode otherwise (veth: XDP_ZEROCOPY fails with EOPNOTSUPP, doc/platform.md). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>

#include "dataplane/xipsecd/dp.h"

#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* Linux 6.17's uapi; older headers lack it */
#endif

/* The socket options of --tx-budget and --busy-poll. A kernel that refuses one is logged and the
 * socket kept: both only change how much work one system call does. */
static void sock_tuning(struct dp_ctx *ctx, int fd, const char *ifname, unsigned queue)
{
	if (ctx->cfg.tx_budget) {
		unsigned b = ctx->cfg.tx_budget;

		/* copy mode sends at most this many frames per sendto(2) (the kernel's default 32) */
		if (setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &b, sizeof(b)))
			dp_log(LOG_NOTICE, "%s queue %u: transmit budget %u refused (XDP_MAX_TX_SKB_BUDGET is "
			       "Linux 6.17's): %s; 32 frames per call", ifname, queue, b, strerror(errno));
	}
	if (ctx->cfg.busy_poll) {
		/* the workers' calls are non-blocking: each runs the NAPI poll once, whatever the
		 * time given, which only has to be non-zero; one poll takes up to a burst */
		int one = 1, us = 20, budget = (int)ctx->batch;

		if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
		    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) ||
		    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)))
			dp_log(LOG_WARNING, "%s queue %u: busy polling refused: %s", ifname, queue, strerror(errno));
	}
}

static int make_socket(struct dp_ctx *ctx, struct dp_worker *w, unsigned p, bool first)
{
	struct dp_port *pt = &w->port[p];
	struct xsk_socket_config cfg = {
		.rx_size = DP_RING_SIZE,
		.tx_size = DP_RING_SIZE,
		/* our own program is attached; libxdp must not load its default one */
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	int err = -EOPNOTSUPP;
	char what[IFNAMSIZ + 24];

	/* EBUSY: the queue still has a killed predecessor's socket (dp_busy_wait) */
	snprintf(what, sizeof(what), "%s queue %u", ctx->ifc[p].name, w->queue);
	for (unsigned ms = 0;; err = -EOPNOTSUPP) {
		if (!ctx->cfg.copy_mode) {
			cfg.bind_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY;
			err = xsk_socket__create_shared(&pt->xsk, ctx->ifc[p].name, w->queue, w->umem,
							&pt->rx, &pt->tx, &pt->fill, &pt->comp, &cfg);
		}
		if (err) {
			cfg.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
			err = xsk_socket__create_shared(&pt->xsk, ctx->ifc[p].name, w->queue, w->umem,
							&pt->rx, &pt->tx, &pt->fill, &pt->comp, &cfg);
		}
		if (!dp_busy_wait(err, &ms, what))
			break;
	}
	if (err) {
		dp_log(LOG_ERR, "%s queue %u: cannot create AF_XDP socket%s: %s", ctx->ifc[p].name,
		       w->queue, first ? "" : " sharing the UMEM", strerror(-err));
		return err;
	}
	pt->fd = xsk_socket__fd(pt->xsk);
	{
		/* a socket sharing the UMEM inherits its mode: ask the kernel what we got */
		struct xdp_options xo = { 0 };
		socklen_t olen = sizeof(xo);

		getsockopt(pt->fd, SOL_XDP, XDP_OPTIONS, &xo, &olen);
		dp_log(LOG_INFO, "%s queue %u: AF_XDP socket (%s%s)", ctx->ifc[p].name, w->queue,
		       (xo.flags & XDP_OPTIONS_ZEROCOPY) ? "zero-copy" : "copy",
		       first ? "" : ", shared UMEM");
	}
	sock_tuning(ctx, pt->fd, ctx->ifc[p].name, w->queue);
	return dp_xdp_add_xsk(ctx, p, w->queue, pt->xsk);
}

/* Give the kernel frames to receive into. */
static int prime_fill(struct dp_worker *w, unsigned p, uint32_t n)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx;

	if (xsk_ring_prod__reserve(&pt->fill, n, &idx) != n)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&pt->fill, idx + i) = dp_frame_take(w);
	xsk_ring_prod__submit(&pt->fill, n);
	return 0;
}

int dp_xsk_setup(struct dp_ctx *ctx, struct dp_worker *w)
{
	struct xsk_umem_config ucfg = {
		.fill_size = DP_RING_SIZE,
		.comp_size = DP_RING_SIZE,
		.frame_size = DP_FRAME_SIZE,
		.frame_headroom = 0,
		.flags = 0,
	};
	size_t size = (size_t)DP_NUM_FRAMES * DP_FRAME_SIZE;
	int err;

	w->umem_area = dp_map_huge(size); /* the UMEM */
	if (!w->umem_area)
		return -errno;
	w->free_frames = calloc(DP_NUM_FRAMES, sizeof(uint64_t));
	w->frame_out = calloc(DP_NUM_FRAMES, 1);
	if (!w->free_frames || !w->frame_out)
		return -ENOMEM;
	for (uint32_t i = 0; i < DP_NUM_FRAMES; i++)
		w->free_frames[i] = (uint64_t)(DP_NUM_FRAMES - 1 - i) * DP_FRAME_SIZE;
	w->n_free = DP_NUM_FRAMES;
	/* The UMEM's own fill/completion rings become the inside socket's. */
	err = xsk_umem__create(&w->umem, w->umem_area, size, &w->port[DP_IN].fill,
			       &w->port[DP_IN].comp, &ucfg);
	if (err) {
		dp_log(LOG_ERR, "worker %u: cannot create UMEM: %s", w->id, strerror(-err));
		return err;
	}
	err = make_socket(ctx, w, DP_IN, true);
	if (err)
		return err;
	err = make_socket(ctx, w, DP_OUT, false);
	if (err)
		return err;
	/* The fill rings start at their least level (dp_rx.c: refill); at most half the pool goes to
	 * them, the rest covers TX in flight and held packets. */
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		err = prime_fill(w, p, DP_FILL_MIN);
		if (err)
			return err;
		w->port[p].fill_level = w->port[p].fill_after = DP_FILL_MIN;
		w->port[p].fill_peak = 0;
		w->port[p].fill_since = dp_now_ns();
	}
	return 0;
}

void dp_xsk_teardown(struct dp_worker *w)
{
	for (unsigned p = 0; p < DP_NPORTS; p++)
		if (w->port[p].xsk) {
			xsk_socket__delete(w->port[p].xsk);
			w->port[p].xsk = NULL;
		}
	if (w->umem) {
		xsk_umem__delete(w->umem);
		w->umem = NULL;
	}
	if (w->umem_area) {
		munmap(w->umem_area, (size_t)DP_NUM_FRAMES * DP_FRAME_SIZE);
		w->umem_area = NULL;
	}
	free(w->free_frames);
	w->free_frames = NULL;
	free(w->frame_out);
	w->frame_out = NULL;
}

/* Number of RX queues of an interface (ethtool channels; sysfs may belong to another namespace
 * when we run under nsenter). */
unsigned dp_if_queues(const char *name)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned n = 1;

	if (fd < 0)
		return 1;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, name, sizeof(ifr.ifr_name) - 1);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
		n = ch.rx_count + ch.combined_count;
		if (n == 0)
			n = 1;
	}
	close(fd);
	return n;
}
