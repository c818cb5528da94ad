/* dataplane/xipsecd/dp_handoff.c: hand-off of an inbound burst's crypto to other workers. ESP carries
 * no ports, so RSS (and veth's hash) puts all of one SA's packets on one RX queue, and one large
 * tunnel would be decrypted by one worker however many the gateway runs. When a worker's inbound
 * burst of one SA is large enough and another worker has spare capacity, this file splits the burst:
 * the owner (the worker that received it) keeps the first part, posts each further part as a job on
 * a bounded single-producer single-consumer ring towards one helper (one ring per ordered pair of
 * workers, cache-line separated indices, no lock), decrypts its own part, then collects the helpers'
 * verdicts and returns the whole burst to dp_burst.c in its original order, so reordering never
 * leaves the burst. The frames stay the owner's: umem frames are process memory, a helper decrypts
 * them in place with its own engine object of the SA (its own crypto context) and only sets each
 * packet's verdict; the owner forwards them from its own TX rings.
 *
 * The owner keeps an equal share (the first packets) and posts the rest as jobs of DP_HANDOFF_PART
 * packets, spread over the helpers. A job is a slot in the owner's memory whose state word carries a
 * ticket (the owner's post count) and POSTED, TAKEN, DONE or BACK. A helper that pops a ring entry
 * claims the job by a compare-and-swap POSTED -> TAKEN of that entry's ticket; the owner, once its own
 * share is decrypted, takes every job still unclaimed back by POSTED -> BACK (from the last, while
 * helpers claim from the first) and decrypts it itself. Exactly one of them wins, so no job is lost
 * nor run twice, an entry left on a ring by a job taken back (a stale ticket) is skipped, and the
 * owner never waits for a job nobody started: the split is work stealing, the helpers take what they
 * get to in time. A claimed job is a bounded computation (one engine call, no waiting but on the SA's
 * replay lock, held for bookkeeping only); the owner waits for DONE and meanwhile runs the jobs others
 * posted to it, so two workers handing off to each other never wait on each other (a helper the
 * kernel preempts in the middle of a job delays that burst until it runs again: workers are pinned
 * to CPUs of their own, and --no-handoff is for CPUs shared with other busy work). A stopped or stuck
 * helper claims nothing: awake, it gets no jobs for a while (judge: from 1 ms, doubling up to 128 ms;
 * the same when the owner had to wait for its jobs longer than its own share took, a helper whose CPU
 * is busy with other work); asleep, it is not judged (it is being woken); either way, once its ring
 * is full of stale entries (DP_HANDOFF_RING), none at all, having cost the owner the posts. A helper
 * asleep in poll(2) or in the coalescing wait is woken through its eventfd, written only when it
 * said it is going to sleep (Dekker-style: flag, fence, ring re-check); one that ran a job stays
 * awake for DP_HANDOFF_SPIN_NS, as more are likely and a wake-up takes longer than the owner's own
 * share. The SA object stays alive for the helper: the owner does not pass a quiescent state
 * (RCU) until every job of its burst is DONE or back. Hand-off starts at bursts of DP_HANDOFF_MIN
 * packets, towards workers whose last round received less than half a burst (spare capacity).
 *
 * Security (doc/architecture.md rule 5): the replay rule is the engine's and is unchanged. Every
 * part goes through esp_inbound_burst on one engine object of the SA, all sharing the SA's window:
 * each number is checked before decryption, the window is updated only after the ICV verifies,
 * under the SA's lock, with every number checked again, so a replayed packet is refused whichever
 * worker decrypts it, and two copies of one number in one burst (split across workers) are accepted
 * once. Parts may update the window in either order, so a burst is handed off only when the SA's
 * window holds the whole burst (or the SA has no replay check): a later part cannot push an earlier
 * one out of it. What an attacker flooding one SA (forged ESP under a known SPI) achieves is what
 * the flood achieves without the hand-off, spread: each forged packet costs one ICV check, on
 * whichever worker runs it, and jobs go only to workers whose own RX is light; a helper serves its
 * own queue's bursts first each round, and the jobs on its rings are at most one burst's share per
 * owner (the owner takes back what is left when its share is done), so the flood can take the other
 * workers' spare cycles, not their own traffic's: their packets wait at most that share behind it.
 * With one worker, or with --no-handoff, nothing here runs. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp_path.h"

#define DP_HANDOFF_RING     16u       /* jobs in flight per ordered pair of workers (power of 2) */
#define DP_HANDOFF_MIN      16u       /* smallest burst that is split ... */
#define DP_HANDOFF_PART     8u        /* ... into jobs of this many packets */
#define DP_HANDOFF_JOBS     (DP_BATCH / DP_HANDOFF_PART)
#define DP_HANDOFF_SPIN_NS  200000u   /* a helper that ran a job stays awake this long */
#define DP_HANDOFF_HOLD_MIN 1000000ull   /* no jobs to a helper that did not help: 1 ms, ... */
#define DP_HANDOFF_HOLD_MAX 128000000ull /* ... doubling up to 128 ms */

enum { JOB_POSTED = 1, JOB_TAKEN, JOB_DONE, JOB_BACK };

struct dp_hjob {
	_Alignas(64) _Atomic uint64_t state; /* ticket << 3 | JOB_*; written by both sides */
	struct dp_sa *sa;
	struct esp_pkt **pp;
	unsigned n;
	unsigned k;                  /* result: good packets (pp[0..k) on DONE) */
	unsigned helper;
};

struct dp_hslot {
	struct dp_hjob *job;
	uint64_t ticket;
};

/* One direction between two workers: the owner produces, the helper consumes. */
struct dp_hring {
	_Alignas(64) _Atomic uint32_t head; /* owner */
	_Alignas(64) _Atomic uint32_t tail; /* helper */
	_Alignas(64) struct dp_hslot slot[DP_HANDOFF_RING];
};

/* Per worker: what others read of it, on its own cache line, and the jobs it posts. */
struct dp_hworker {
	_Alignas(64) _Atomic uint32_t load; /* packets its last round received (0 = spare capacity) */
	_Atomic bool sleeping;               /* about to sleep: a poster writes its eventfd */
	int efd;
	uint64_t served_ns;                  /* helper's side: when it last ran a job */
	_Alignas(64) uint64_t ticket;        /* owner's side only */
	unsigned rr;                         /* helper to try first */
	/* by helper: no jobs to it before hold_ns, after a burst it did not help (backoff_ns) */
	uint64_t hold_ns[DP_MAX_WORKERS], backoff_ns[DP_MAX_WORKERS];
	struct dp_hjob job[DP_HANDOFF_JOBS]; /* this burst's */
};

struct dp_handoff {
	unsigned n;
	struct dp_hworker *hw;       /* [n] */
	struct dp_hring *ring;       /* [owner * n + helper] */
};

int dp_handoff_init(struct dp_ctx *ctx)
{
	struct dp_handoff *h;
	unsigned n = ctx->n_workers;

	ctx->handoff = NULL;
	if (n < 2 || ctx->cfg.no_handoff)
		return 0;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->n = n;
	h->hw = aligned_alloc(64, sizeof(*h->hw) * n);
	h->ring = aligned_alloc(64, sizeof(*h->ring) * n * n);
	if (!h->hw || !h->ring) {
		free(h->hw);
		free(h->ring);
		free(h);
		return -ENOMEM;
	}
	memset(h->hw, 0, sizeof(*h->hw) * n);
	memset(h->ring, 0, sizeof(*h->ring) * n * n);
	for (unsigned i = 0; i < n; i++)
		h->hw[i].efd = -1;
	ctx->handoff = h;
	for (unsigned i = 0; i < n; i++) {
		h->hw[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (h->hw[i].efd < 0) {
			int err = -errno;

			dp_handoff_fini(ctx);
			return err;
		}
	}
	return 0;
}

void dp_handoff_fini(struct dp_ctx *ctx)
{
	struct dp_handoff *h = ctx->handoff;

	if (!h)
		return;
	for (unsigned i = 0; i < h->n; i++)
		if (h->hw[i].efd >= 0)
			close(h->hw[i].efd);
	free(h->hw);
	free(h->ring);
	free(h);
	ctx->handoff = NULL;
}

int dp_handoff_fd(struct dp_worker *w)
{
	struct dp_handoff *h = w->ctx->handoff;

	return h ? h->hw[w->id].efd : -1;
}

void dp_handoff_load(struct dp_worker *w, unsigned rx)
{
	struct dp_handoff *h = w->ctx->handoff;

	/* a store only on a change: the line stays shared while the load is steady */
	if (h && atomic_load_explicit(&h->hw[w->id].load, memory_order_relaxed) != rx)
		atomic_store_explicit(&h->hw[w->id].load, rx, memory_order_relaxed);
}

static bool rings_empty(struct dp_handoff *h, unsigned self)
{
	for (unsigned o = 0; o < h->n; o++) {
		struct dp_hring *r = &h->ring[o * h->n + self];

		if (o != self && atomic_load_explicit(&r->head, memory_order_relaxed) !=
		    atomic_load_explicit(&r->tail, memory_order_relaxed))
			return false;
	}
	return true;
}

bool dp_handoff_sleep(struct dp_worker *w)
{
	struct dp_handoff *h = w->ctx->handoff;

	if (!h)
		return true;
	/* Jobs came in the last DP_HANDOFF_SPIN_NS: more are likely, and a wake-up from poll(2)
	 * takes longer than the owner's own share, after which it takes the jobs back. */
	if (h->hw[w->id].served_ns && dp_now_ns() - h->hw[w->id].served_ns < DP_HANDOFF_SPIN_NS)
		return false;
	atomic_store_explicit(&h->hw[w->id].sleeping, true, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (rings_empty(h, w->id))
		return true;
	atomic_store_explicit(&h->hw[w->id].sleeping, false, memory_order_relaxed);
	return false;
}

void dp_handoff_woke(struct dp_worker *w, bool readable)
{
	struct dp_handoff *h = w->ctx->handoff;
	uint64_t v;

	if (!h)
		return;
	atomic_store_explicit(&h->hw[w->id].sleeping, false, memory_order_relaxed);
	if (readable && read(h->hw[w->id].efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: another read took it */
	}
}

/* Run one job another worker posted: its packets are that worker's frames, decrypted in place with
 * this worker's engine object of the SA. */
static unsigned run_job(struct dp_worker *w, struct dp_hjob *j, uint64_t ticket)
{
	unsigned n = j->n;

	j->k = esp_inbound_burst(j->sa->e[w->id], j->pp, n);
	DP_STAT(w, handoff_done, n);
	/* from here on the job is the owner's again (it may reuse it at once) */
	atomic_store_explicit(&j->state, ticket << 3 | JOB_DONE, memory_order_release);
	return n;
}

unsigned dp_handoff_serve(struct dp_worker *w)
{
	struct dp_handoff *h = w->ctx->handoff;
	unsigned ran = 0;

	if (!h)
		return 0;
	for (unsigned o = 0; o < h->n; o++) {
		struct dp_hring *r = &h->ring[o * h->n + w->id];
		uint32_t t, hd;

		if (o == w->id)
			continue;
		t = atomic_load_explicit(&r->tail, memory_order_relaxed);
		hd = atomic_load_explicit(&r->head, memory_order_acquire);
		while (t != hd) {
			struct dp_hslot s = r->slot[t % DP_HANDOFF_RING];
			uint64_t want = s.ticket << 3 | JOB_POSTED;

			/* the slot is read: the owner may reuse it */
			atomic_store_explicit(&r->tail, ++t, memory_order_release);
			if (atomic_compare_exchange_strong_explicit(&s.job->state, &want,
								    s.ticket << 3 | JOB_TAKEN,
								    memory_order_acquire,
								    memory_order_relaxed)) {
				ran += run_job(w, s.job, s.ticket);
			}
		}
	}
	if (ran)
		h->hw[w->id].served_ns = dp_now_ns();
	return ran;
}

static void post(struct dp_handoff *h, unsigned self, struct dp_hjob *j)
{
	struct dp_hring *r = &h->ring[self * h->n + j->helper];
	uint32_t hd = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t ticket = ++h->hw[self].ticket;

	atomic_store_explicit(&j->state, ticket << 3 | JOB_POSTED, memory_order_relaxed);
	r->slot[hd % DP_HANDOFF_RING] = (struct dp_hslot){ j, ticket };
	atomic_store_explicit(&r->head, hd + 1, memory_order_release);
}

/* After the posts: a helper that said it is going to sleep is woken (pairs with dp_handoff_sleep:
 * either it sees the job on its ring or we see its flag). */
static bool wake(struct dp_handoff *h, unsigned c)
{
	uint64_t one = 1;

	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&h->hw[c].sleeping, memory_order_relaxed))
		return false;
	if (write(h->hw[c].efd, &one, sizeof(one)) < 0) {
		/* the counter is at its maximum: it is being woken anyway */
	}
	return true;
}

/* After a burst: whether helper c helped. It did not when it was awake and claimed nothing before
 * the owner's share was done, or when the owner waited for the jobs it claimed longer than its own
 * share took: its CPU is busy with other work (another process, its own traffic), and jobs posted
 * to it only cost the owner. Then no jobs go to it for a while, doubling up to DP_HANDOFF_HOLD_MAX;
 * a burst it helped with resets that. A helper that was asleep is not judged: it is being woken. */
static void judge(struct dp_hworker *me, unsigned c, bool asleep, unsigned claimed, bool waited,
		  uint64_t now)
{
	if ((!claimed && !asleep) || (claimed && waited)) {
		me->backoff_ns[c] = me->backoff_ns[c] ? me->backoff_ns[c] * 2 : DP_HANDOFF_HOLD_MIN;
		if (me->backoff_ns[c] > DP_HANDOFF_HOLD_MAX)
			me->backoff_ns[c] = DP_HANDOFF_HOLD_MAX;
		me->hold_ns[c] = now + me->backoff_ns[c];
	} else if (claimed) {
		me->backoff_ns[c] = 0;
	}
}

/* Free entries on the ring from self to c, when c has spare capacity (its last round received less
 * than half a burst); 0 otherwise. */
static unsigned room(struct dp_handoff *h, unsigned self, unsigned c, uint32_t batch)
{
	struct dp_hring *r = &h->ring[self * h->n + c];

	if (atomic_load_explicit(&h->hw[c].load, memory_order_relaxed) * 2 >= batch)
		return 0;
	return DP_HANDOFF_RING - (atomic_load_explicit(&r->head, memory_order_relaxed) -
				  atomic_load_explicit(&r->tail, memory_order_acquire));
}

unsigned dp_handoff_inbound(struct dp_worker *w, struct dp_sa *sa, struct esp_pkt **pp, unsigned n)
{
	struct dp_handoff *h = w->ctx->handoff;
	struct dp_hworker *me;
	struct esp_pkt *orig[DP_BATCH];
	unsigned helper[DP_MAX_WORKERS], free_[DP_MAX_WORKERS], claimed[DP_MAX_WORKERS];
	unsigned posted_to[DP_MAX_WORKERS];
	bool asleep[DP_MAX_WORKERS];
	unsigned m = 0, nj, own, k;
	uint64_t t0, t1, t2, t3;

	/* Parts may update the window in either order: only when it holds the whole burst. */
	if (!h || n < DP_HANDOFF_MIN || n > DP_BATCH ||
	    (!(sa->sa.flags & SADB_SAF_NO_REPLAY) && sa->sa.replay_window < n))
		return esp_inbound_burst(sa->e[w->id], pp, n);
	me = &h->hw[w->id];
	t0 = dp_now_ns();
	/* the helpers with spare capacity, round-robin from where the last burst started */
	for (unsigned i = 0; i < h->n; i++) {
		unsigned c = (me->rr + i) % h->n;

		if (c != w->id && me->hold_ns[c] <= t0 && (free_[m] = room(h, w->id, c, w->ctx->batch)) > 0)
			helper[m++] = c;
	}
	/* an equal share for each (the owner's own first), the helpers' in jobs of DP_HANDOFF_PART */
	nj = m ? (n - n / (m + 1)) / DP_HANDOFF_PART : 0;
	{
		unsigned total = 0;

		/* room only grows while we look (helpers consume), so every job below finds a slot */
		for (unsigned i = 0; i < m; i++)
			total += free_[i];
		nj = nj < total ? nj : total;
	}
	if (!nj)
		return esp_inbound_burst(sa->e[w->id], pp, n);
	me->rr = (me->rr + 1) % h->n;
	own = n - nj * DP_HANDOFF_PART;
	memset(posted_to, 0, sizeof(posted_to));
	memcpy(orig, pp, n * sizeof(*pp));
	for (unsigned i = 0, posted = 0; posted < nj; i = (i + 1) % m) {
		struct dp_hjob *j = &me->job[posted];

		if (!free_[i])
			continue;
		free_[i]--;
		posted_to[i]++;
		j->sa = sa;
		j->pp = pp + own + posted * DP_HANDOFF_PART;
		j->n = DP_HANDOFF_PART;
		j->k = 0;
		j->helper = helper[i];
		post(h, w->id, j);
		posted++;
	}
	for (unsigned i = 0; i < m; i++) {
		asleep[i] = posted_to[i] && wake(h, helper[i]);
		claimed[i] = 0;
	}
	DP_STAT(w, handoff_jobs, nj);
	esp_inbound_burst(sa->e[w->id], pp, own);
	t1 = dp_now_ns();
	/* What no helper has claimed by now, the owner runs itself, from the end (helpers claim from
	 * the start): a slow or stopped helper costs nothing but the posts. */
	for (unsigned i = nj; i-- > 0;) {
		struct dp_hjob *j = &me->job[i];
		uint64_t s = atomic_load_explicit(&j->state, memory_order_relaxed);

		if ((s & 7) == JOB_POSTED &&
		    atomic_compare_exchange_strong_explicit(&j->state, &s, (s & ~(uint64_t)7) | JOB_BACK,
							    memory_order_acquire, memory_order_relaxed)) {
			j->k = esp_inbound_burst(sa->e[w->id], j->pp, j->n);
			DP_STAT(w, handoff_back, 1);
		}
	}
	t2 = dp_now_ns();
	/* The claimed ones are bounded work in progress: wait, running what others posted here. */
	for (unsigned i = 0, spins = 0; i < nj; i++) {
		struct dp_hjob *j = &me->job[i];
		uint64_t s;

		while (((s = atomic_load_explicit(&j->state, memory_order_acquire)) & 7) == JOB_TAKEN) {
			if (dp_handoff_serve(w))
				continue;
			__builtin_ia32_pause();
			/* a helper preempted in the middle of its job: give it the CPU */
			if (++spins % 1024 == 0)
				sched_yield();
		}
		if ((s & 7) == JOB_DONE) {
			DP_STAT(w, handoff_pkts, j->n);
			for (unsigned c = 0; c < m; c++)
				claimed[c] += helper[c] == j->helper;
		}
	}
	t3 = dp_now_ns();
	for (unsigned i = 0; i < m; i++)
		if (posted_to[i])
			judge(me, helper[i], asleep[i], claimed[i], t3 - t2 > t1 - t0, t3);
	/* every packet has its verdict: the good ones first, each side in the burst's order */
	k = 0;
	for (unsigned i = 0; i < n; i++)
		if (orig[i]->drop == SADB_DROP_NONE)
			pp[k++] = orig[i];
	for (unsigned i = 0, b = k; i < n; i++)
		if (orig[i]->drop != SADB_DROP_NONE)
			pp[b++] = orig[i];
	return k;
}
