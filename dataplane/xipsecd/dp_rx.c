/* dataplane/xipsecd/dp_rx.c: a worker and its loop. One worker per queue, pinned to a CPU, owns a UMEM
 * and the inside and outside AF_XDP sockets of its queue. Per round: completions back to the pool,
 * fill rings topped up, then RX in bursts, where every frame starts its way: a frame too short or
 * not IPv4/IPv6 is dropped TRUNCATED, the rest is classified by the port it came in on,
 *   inside  -> dp_out (dp_out.c: outbound SPD, protect)
 *   outside -> dp_in  (dp_in.c: reassembly, SA by SPI, inbound policy)
 *   the gateway's own (worker 0, dp_local.c: the TUN device, the home agent's queue)
 *           -> dp_out, never decrementing TTL (locally originated)
 * and the SA bursts those collected go through the engine (dp_burst.c) at the end of the RX burst.
 * After its own RX it runs the inbound crypto other workers handed it (dp_handoff.c).
 * Then TX wake-ups, the hold queue's retries (dp_fwd.c) and the reassembly table's timeouts. A bad
 * packet never stops the burst; every drop is counted with its reason (doc/architecture.md rule 4).
 * Idle, the worker sleeps in poll() outside its RCU read-side section; busy at a high packet rate
 * with only a few packets a round, it waits a few microseconds for a burst to gather (coalescing). */
#define _GNU_SOURCE
#include "config.h"

#include <poll.h>
#include <time.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "dataplane/xipsecd/dp_path.h"

#define RX_AHEAD 8u /* frames whose headers are fetched ahead of the one worked on */

static inline void rx_prefetch(struct dp_worker *w, struct dp_port *pt, uint32_t at)
{
	__builtin_prefetch(dp_mem(w, xsk_ring_cons__rx_desc(&pt->rx, at)->addr));
}

static unsigned rx_burst(struct dp_worker *w, struct dp_group *g, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n;

	n = xsk_ring_cons__peek(&pt->rx, w->ctx->batch, &idx);
	if (!n)
		return 0;
	dp_count_rx(w, p, n);
	/* The kernel copied the frames on another CPU: their headers are asked for eight frames
	 * ahead (the first eight at once), so that each trip overlaps the work on the frames before.
	 * Two ahead left part of it exposed: bench/peers, single worker, 1-4 % more packets in every
	 * test at eight (TCP through ESP-GCM +3.8 %), less CPU per packet. */
	for (uint32_t i = 0; i < n && i < RX_AHEAD; i++)
		rx_prefetch(w, pt, idx + i);
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&pt->rx, idx + i);
		uint64_t addr = d->addr;
		uint8_t *eth = dp_mem(w, addr);
		struct dp_next nx;
		uint32_t len;

		if (i + RX_AHEAD < n)
			rx_prefetch(w, pt, idx + i + RX_AHEAD);
		DP_STAT(w, rx_bytes, d->len);

		if (d->len < L2 + 20 || !dp_l3_len(eth + L2, d->len - L2, &len) ||
		    (eth[12] != 0x08 && eth[12] != 0x86)) {
			dp_drop(w, addr, SADB_DROP_TRUNCATED);
			continue;
		}
		if (p == DP_IN && dp_out(w, g, addr + L2, len, FWD_DEC_TTL, &nx))
			dp_fwd(w, nx.addr, nx.len, nx.flags); /* bypassed, or an ICMP error about it */
		else if (p != DP_IN)
			dp_in(w, g, addr + L2, len, false);
	}
	xsk_ring_cons__release(&pt->rx, n);
	dp_group_flush(w, g);
	dp_group_flush(w, w->regroup);
	return n;
}

static void complete(struct dp_worker *w, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n;

	if (!pt->tx_pending)
		return;
	n = xsk_ring_cons__peek(&pt->comp, DP_RING_SIZE, &idx);
	for (uint32_t i = 0; i < n; i++)
		dp_frame_free(w, *xsk_ring_cons__comp_addr(&pt->comp, idx + i));
	xsk_ring_cons__release(&pt->comp, n);
	pt->tx_pending -= n;
}

/* The fill level. The kernel receives only into frames on the fill ring: when it finds the ring
 * empty it drops the packet, so the ring must hold what arrives while the worker is away (busy with
 * the other port, or descheduled: on a CPU shared with other work, milliseconds). But every frame
 * on it is one more in circulation, and a received frame was last used as many frames ago as the
 * ring holds: with 4096 on each of two rings, 32 MiB of frames turn over, each one cold in the cache
 * and in the TLB when the kernel's copy writes it and when the worker reads it. So the level adapts,
 * between DP_FILL_MIN and the ring's size: it doubles when the kernel came within an eighth of
 * emptying the ring between two top-ups, and halves when for DP_FILL_SHRINK_NS the kernel never took
 * a quarter of it. A flood drives it up within a few gaps (the packets of the first gaps that
 * outlast the level are lost, shown by --status as fill_ring_empty); steady traffic of a
 * few hundred thousand packets a second keeps it at 512-1024, where one TCP flow through two
 * gateways on 2 CPUs ran 8-14 % faster than with the rings kept full (doc/platform.md). */
#define DP_FILL_SHRINK_NS 100000000ull

static void refill(struct dp_worker *w, unsigned p)
{
	struct dp_port *pt = &w->port[p];
	uint32_t idx, n = xsk_prod_nb_free(&pt->fill, DP_RING_SIZE);
	uint32_t on = DP_RING_SIZE - n; /* frames the kernel has not taken yet */
	uint32_t took = pt->fill_after > on ? pt->fill_after - on : 0;

	if (took > pt->fill_peak)
		pt->fill_peak = took;
	if (on < pt->fill_level / 8 && pt->fill_level < DP_RING_SIZE) {
		pt->fill_level *= 2;
		pt->fill_peak = 0;
		pt->fill_since = dp_now_ns();
	} else if (took) {
		uint64_t now = dp_now_ns();

		if (now - pt->fill_since >= DP_FILL_SHRINK_NS) {
			if (pt->fill_peak < pt->fill_level / 4 && pt->fill_level > DP_FILL_MIN)
				pt->fill_level /= 2;
			pt->fill_peak = 0;
			pt->fill_since = now;
		}
	}
	pt->fill_after = on;
	n = on < pt->fill_level ? pt->fill_level - on : 0;
	if (w->n_free <= DP_FRAME_RESERVE)
		return;
	if (n > w->n_free - DP_FRAME_RESERVE)
		n = w->n_free - DP_FRAME_RESERVE;
	if (!n || xsk_ring_prod__reserve(&pt->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&pt->fill, idx + i) = dp_frame_take(w);
	xsk_ring_prod__submit(&pt->fill, n);
	pt->fill_after = on + n;
}

static void kick(struct dp_worker *w)
{
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		struct dp_port *pt = &w->port[p];

		if (pt->tx_pending && xsk_ring_prod__needs_wakeup(&pt->tx))
			dp_tx_kick(pt);
		/* with --busy-poll every round's recvfrom(2) runs the interface's NAPI poll */
		if (xsk_ring_prod__needs_wakeup(&pt->fill) || w->ctx->cfg.busy_poll)
			recvfrom(pt->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	}
}

/* Worker i on the i-th CPU of the list (dp_cpus.h), round robin past its end. */
static void pin(struct dp_worker *w)
{
	const struct dp_config *cfg = &w->ctx->cfg;
	cpu_set_t set;

	if (cfg->no_pin || !cfg->n_cpus)
		return;
	int cpu = cfg->cpu_list[w->id % cfg->n_cpus];
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		dp_log(LOG_WARNING, "worker %u: cannot pin to CPU %d", w->id, cpu);
	else
		w->cpu = cpu;
}

/* Datagrams whose fragments stopped coming: looked for every 100 ms by whichever worker gets the
 * lock (a busy worker does not wait for it). */
static void reasm_expire(struct dp_worker *w, uint64_t now)
{
	struct dp_ctx *ctx = w->ctx;
	uint32_t n;

	if (now < w->reasm_expire_ns)
		return;
	w->reasm_expire_ns = now + 100000000ull;
	if (pthread_spin_trylock(&ctx->reasm_lock))
		return;
	n = dp_reasm_expire(ctx->reasm, now);
	pthread_spin_unlock(&ctx->reasm_lock);
	dp_drop_count(w, SADB_DROP_FRAG_TIMEOUT, n);
}

/* The packet rate of the last millisecond, for interrupt coalescing: zero below DP_COALESCE_RATE
 * packets per millisecond, else how long a burst (below packets) takes to arrive at that rate
 * (within DP_COALESCE_MIN_NS and DP_COALESCE_MAX_NS): the wait of a round that found fewer. */
struct rate_window {
	uint64_t start;
	unsigned pkts;
	unsigned wait_ns;
};

static unsigned rate_wait(struct rate_window *r, unsigned rx, uint64_t now, unsigned below)
{
	r->pkts += rx;
	if (now - r->start >= 1000000) {
		unsigned ns = 0;

		if (r->pkts >= DP_COALESCE_RATE) {
			ns = (unsigned)((uint64_t)below * (now - r->start) / r->pkts);
			ns = ns < DP_COALESCE_MIN_NS ? DP_COALESCE_MIN_NS :
			     ns > DP_COALESCE_MAX_NS ? DP_COALESCE_MAX_NS : ns;
		}
		r->wait_ns = ns;
		r->pkts = 0;
		r->start = now;
	}
	return r->wait_ns;
}

void *dp_worker_main(void *arg)
{
	struct dp_worker *w = arg;
	struct dp_ctx *ctx = w->ctx;
	static __thread struct dp_group g, rg;
	bool tun = w->id == 0 && ctx->tun_fd >= 0, tun_ready = true;
	unsigned tun_wait = 0;
	struct rate_window rate = { 0 };
	/* a round cannot bring more than a burst per port: with a small --batch, a smaller one counts as full */
	unsigned below = ctx->batch < DP_COALESCE_BELOW ? ctx->batch : DP_COALESCE_BELOW;

	w->regroup = &rg;
	pin(w);
	/* the coalescing wait is microseconds: the default timer slack (50 us) would stretch it */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	rcu_register_thread();
	while (!atomic_load_explicit(&ctx->stop, memory_order_relaxed)) {
		unsigned work, rx = 0;
		bool busy = false;
		unsigned wait_ns;
		uint64_t now;

		for (unsigned p = 0; p < DP_NPORTS; p++) {
			complete(w, p);
			refill(w, p);
		}
		for (unsigned p = 0; p < DP_NPORTS; p++)
			rx += rx_burst(w, &g, p);
		/* its own queue's packets first, then what other workers handed it (dp_handoff.c) */
		dp_handoff_load(w, rx);
		work = rx + dp_handoff_serve(w);
		/* The TUN device costs a read(2) per look: a busy worker looks again only after
		 * DP_TUN_SKIP rounds that found it empty, or when poll(2) said it is readable. */
		if (w->id == 0)
			work += dp_local_ha_burst(w, &g);
		if (tun && (tun_ready || tun_wait == 0)) {
			unsigned n = dp_local_tun_burst(w, &g);

			work += n;
			tun_wait = n ? 0 : DP_TUN_SKIP;
			tun_ready = false;
		} else if (tun) {
			tun_wait--;
		}
		kick(w);
		dp_hold_retry(w, false);
		now = dp_now_ns();
		reasm_expire(w, now);
		rcu_quiescent_state();
		wait_ns = rate_wait(&rate, rx, now, below);
		if (work || wait_ns) {
			/* Interrupt coalescing, as NICs do it (adaptive interrupt moderation): at a high
			 * packet rate a round that found only a few packets would be followed by a sleep
			 * in poll(2) and a wake-up per packet or two, and a context switch costs the worker
			 * more than the packets (doc/platform.md). Waiting for about a burst's worth of
			 * packets at the measured rate makes every switch carry a burst; at least
			 * DP_COALESCE_MIN_NS, at most DP_COALESCE_MAX_NS, which the RX rings hold with room
			 * to spare at any rate the link brings. Only above DP_COALESCE_RATE packets per
			 * millisecond, so a quiet link's latency is not touched; never while a full burst
			 * is waiting. A round that found nothing waits the same way rather than in poll(2),
			 * whose wake-up would come with the next packet alone. */
			if (wait_ns && rx < below) {
				struct timespec ts = { 0, (long)wait_ns };
				int efd = dp_handoff_fd(w);

				rcu_thread_offline();
				if (efd < 0) {
					nanosleep(&ts, NULL);
				} else if (dp_handoff_sleep(w)) {
					/* a job posted to it ends the wait */
					struct pollfd pf = { .fd = efd, .events = POLLIN };

					ppoll(&pf, 1, &ts, NULL);
					dp_handoff_woke(w, pf.revents & POLLIN);
				}
				rcu_thread_online();
			}
			continue;
		}
		for (unsigned p = 0; p < DP_NPORTS; p++)
			busy |= w->port[p].tx_pending != 0;
		{
			struct pollfd pf[5] = {
				{ .fd = w->port[DP_IN].fd, .events = POLLIN },
				{ .fd = w->port[DP_OUT].fd, .events = POLLIN },
				{ .fd = tun ? ctx->tun_fd : -1, .events = POLLIN },
				{ .fd = w->id == 0 ? dp_mip6_wake_fd(ctx) : -1, .events = POLLIN },
				{ .fd = dp_handoff_fd(w), .events = POLLIN },
			};

			/* a job posted after this look writes the eventfd */
			if (!dp_handoff_sleep(w))
				continue;
			rcu_thread_offline();
			poll(pf, 5, (busy || w->n_hold) ? 1 : 100);
			rcu_thread_online();
			dp_handoff_woke(w, pf[4].revents & POLLIN);
			tun_ready = tun && (pf[2].revents & POLLIN);
		}
	}
	rcu_unregister_thread();
	return NULL;
}
