/* dataplane/xipsecd/dp_acquire.c: acquires, the dataplane's half of on-demand tunnels. A packet that
 * meets a PROTECT policy with no SA for its reqid is dropped (SADB_DROP_ACQUIRE, as Linux does with
 * xfrm_larval_drop=1: the SA takes a round trip or two of IKE, far longer than any sane queue would
 * hold a packet, and the sender's own retransmission covers the gap), and the IKE daemon is asked
 * for the SA with the packet's selector, as the kernel's XFRM_MSG_ACQUIRE asks charon
 * (sadb/sadb_acquire.c: the channel, a Unix datagram socket that never blocks a worker).
 *
 * Rate limit: at most one acquire per policy per DP_ACQ_INTERVAL_MS and DP_ACQ_CAP a second in all,
 * so a flood towards a trap policy costs the daemon one message a second, and thousands of traps
 * triggered at once cannot bury it. Per policy, a lock-free table of DP_ACQ_SLOTS words, each
 * (policy id << 32 | millisecond stamp), indexed by the policy id: the worker that swaps a slot's
 * word raises the acquire, every other worker that sees a fresh stamp for the same policy does not.
 * Two policies that share a slot evict each other and may each raise more than one a second; the
 * global cap still bounds the total. An acquire that is lost (no daemon, its queue full) is raised
 * again by the next packet after the interval: charon itself ignores acquires for a reqid it is
 * already negotiating. Any worker; the table and the counters are shared atomics. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_spd.h"
#include "sadb/sadb_acquire.h"

#define DP_ACQ_SLOTS       1024u  /* power of two */
#define DP_ACQ_INTERVAL_MS 1000u  /* per policy */
#define DP_ACQ_CAP         256u   /* a second, all policies */

struct dp_acquire {
	int fd;
	struct sockaddr_un to;
	_Atomic uint64_t slot[DP_ACQ_SLOTS];
	_Atomic uint64_t window;     /* second << 32 | acquires raised in it */
	_Atomic uint64_t raised, lost, limited;
};

int dp_acquire_init(struct dp_ctx *ctx)
{
	struct dp_acquire *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	a->fd = -1;
	err = sadb_acquire_addr(ctx->cfg.sadb_path, &a->to);
	if (err == 0)
		err = a->fd = sadb_acquire_sender();
	if (err < 0) {
		/* the dataplane runs without: traffic of policies without an SA is still dropped */
		dp_log(LOG_WARNING, "acquires off (no on-demand tunnels): %s", strerror(-err));
		a->fd = -1;
	}
	ctx->acq = a;
	return 0;
}

void dp_acquire_fini(struct dp_ctx *ctx)
{
	if (!ctx->acq)
		return;
	if (ctx->acq->fd >= 0)
		close(ctx->acq->fd);
	free(ctx->acq);
	ctx->acq = NULL;
}

/* Whether policy id may raise an acquire at now_ms (and, if so, that it was counted against both
 * limits). */
static bool due(struct dp_acquire *a, uint32_t id, uint64_t now_ms)
{
	_Atomic uint64_t *s = &a->slot[(id * 2654435761u) & (DP_ACQ_SLOTS - 1)];
	uint64_t old = atomic_load_explicit(s, memory_order_relaxed);
	uint64_t sec = now_ms / 1000, w, nw;

	if (old >> 32 == id && (uint32_t)now_ms - (uint32_t)old < DP_ACQ_INTERVAL_MS)
		return false;
	/* one worker wins the slot; the others saw the same packet's flow and stay quiet */
	if (!atomic_compare_exchange_strong_explicit(s, &old, (uint64_t)id << 32 | (uint32_t)now_ms,
						     memory_order_relaxed, memory_order_relaxed))
		return false;
	w = atomic_load_explicit(&a->window, memory_order_relaxed);
	do {
		if (w >> 32 == sec && (uint32_t)w >= DP_ACQ_CAP)
			return false;
		nw = w >> 32 == sec ? w + 1 : sec << 32 | 1;
	} while (!atomic_compare_exchange_weak_explicit(&a->window, &w, nw, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

void dp_acquire_raise(struct dp_worker *w, const struct sadb_policy *pol, const uint8_t *l3,
		      uint32_t len, bool mobile)
{
	struct dp_acquire *a = w->ctx->acq;
	struct sadb_acquire m = {
		.magic = SADB_ACQUIRE_MAGIC, .policy_id = pol->id, .reqid = pol->reqid, .dir = pol->dir,
	};

	if (!a || a->fd < 0 || !pol->reqid)
		return;
	if (!due(a, pol->id, dp_now_ns() / 1000000)) {
		atomic_fetch_add_explicit(&a->limited, 1, memory_order_relaxed);
		return;
	}
	if (dp_spd_sel(l3, len, mobile, &m.sel) != SADB_DROP_NONE ||
	    sadb_acquire_send(a->fd, &a->to, &m) < 0) {
		atomic_fetch_add_explicit(&a->lost, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&a->raised, 1, memory_order_relaxed);
}

void dp_acquire_stats(const struct dp_ctx *ctx, uint64_t *raised, uint64_t *lost, uint64_t *limited)
{
	struct dp_acquire *a = ctx->acq;

	*raised = a ? atomic_load_explicit(&a->raised, memory_order_relaxed) : 0;
	*lost = a ? atomic_load_explicit(&a->lost, memory_order_relaxed) : 0;
	*limited = a ? atomic_load_explicit(&a->limited, memory_order_relaxed) : 0;
}
