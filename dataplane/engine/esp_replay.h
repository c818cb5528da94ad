/* dataplane/engine/esp_replay.h: the inbound anti-replay window over rt->replay_top/replay_bitmap
 * (replay.c explains the ring): ESN inference, the check before any crypto and the in-order update
 * after a verified ICV. They run for every received packet, so they are inline here; the general
 * update is replay.c's. Internal to the engine. */
#ifndef XIPSEC_ESP_REPLAY_H
#define XIPSEC_ESP_REPLAY_H

#include "dataplane/engine/esp_sa.h"

#define ESP_REPLAY_RING ((uint64_t)SADB_REPLAY_MAX)

/* The top is published after the bits below it (release), so that a check running beside an update
 * (objects of one SA on several workers, esp_sa_opts.replay_lock) never finds a number under the top
 * whose bit is not yet its own. The check is advisory there: the update re-checks under the lock. */
static inline uint64_t esp_replay_top(const struct sadb_runtime *rt)
{
	return atomic_load_explicit((_Atomic uint64_t *)&rt->replay_top, memory_order_acquire);
}

/* One word of the bitmap, read and written as relaxed atomics: the writer (one at a time) stores
 * whole words, checks on other workers may read them meanwhile. */
static inline uint64_t esp_replay_word(const struct sadb_runtime *rt, uint64_t w)
{
	return atomic_load_explicit((_Atomic uint64_t *)&rt->replay_bitmap[w], memory_order_relaxed);
}

static inline void esp_replay_set_word(struct sadb_runtime *rt, uint64_t w, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)&rt->replay_bitmap[w], v, memory_order_relaxed);
}

/* Around the window updates of one burst (after its crypto, which runs unlocked). */
static inline void esp_replay_lock(struct esp_sa *sa)
{
	if (sa->replay_lock)
		pthread_spin_lock(sa->replay_lock);
}

static inline void esp_replay_unlock(struct esp_sa *sa)
{
	if (sa->replay_lock)
		pthread_spin_unlock(sa->replay_lock);
}

/* Full 64-bit number of a received low half (RFC 4303 Appendix A.2 with ESN; else the low half),
 * inferred around top (a value of esp_replay_top read by the caller: see esp_replay_check_at). */
static inline uint64_t esp_replay_infer_at(const struct esp_sa *sa, uint32_t seq_lo, uint64_t top)
{
	if (!(sa->flags & SADB_SAF_ESN))
		return seq_lo;
	uint32_t tl = (uint32_t)top, th = (uint32_t)(top >> 32);
	/* Without a window (manual keying, SADB_SAF_NO_REPLAY), infer around the top by half the space. */
	uint32_t w = sa->window ? sa->window : 0x80000000u;
	uint32_t bottom = tl - w + 1; /* modulo 2^32 */
	if (tl >= w - 1) {
		/* Case A: the window lies in one 2^32 subspace. */
		if (seq_lo >= bottom)
			return (uint64_t)th << 32 | seq_lo;
		return (uint64_t)(th + 1) << 32 | seq_lo; /* wrapped into the next subspace */
	}
	/* Case B: the window straddles a subspace boundary. */
	if (seq_lo >= bottom && th > 0)
		return (uint64_t)(th - 1) << 32 | seq_lo;
	return (uint64_t)th << 32 | seq_lo;
}

static inline uint64_t esp_replay_infer(const struct esp_sa *sa, uint32_t seq_lo)
{
	return esp_replay_infer_at(sa, seq_lo, esp_replay_top(sa->rt));
}

/* A window held under a ceiling recorded on disk (inbound SADB_SAF_SEQ_PERSIST: rt->seq_lease,
 * which xipsecd's dp_seqmark.c explains), and seq above the window's top. Before the ICV: the owner
 * of the ceiling is told when fewer than lease_low numbers are left under it; a number above it
 * still goes on to be verified. After the ICV (final): a number above the ceiling is not accepted
 * (SEQ_LEASE) but, authenticated now, recorded in *window_want, so the owner can move the ceiling
 * past a peer that jumped ahead (its own lease after a reload); never on an unauthenticated number,
 * which would let anyone push the ceiling, and with it the numbers refused after a crash, away. */
static inline bool esp_replay_over_ceiling(const struct esp_sa *sa, uint64_t seq, bool verified)
{
	if (!(sa->flags & SADB_SAF_SEQ_PERSIST))
		return false;
	uint64_t ceil = atomic_load_explicit((_Atomic uint64_t *)&sa->rt->seq_lease, memory_order_acquire);
	if (ESP_LIKELY(seq <= ceil && ceil - seq > sa->lease_low))
		return false;
	esp_lease_tell(sa);
	if (seq <= ceil || !verified)
		return false;
	if (sa->window_want) {
		uint64_t w = atomic_load_explicit(sa->window_want, memory_order_relaxed);
		while (w < seq && !atomic_compare_exchange_weak_explicit(sa->window_want, &w, seq,
									 memory_order_relaxed,
									 memory_order_relaxed))
			;
	}
	return true;
}

/* SADB_DROP_NONE if seq may be accepted, else REPLAY / REPLAY_OLD, against top, a value of
 * esp_replay_top the caller read. Reads only.
 * A burst's checks run against one top read before the first of them, not one read per packet:
 * where several workers share the SA, the others' updates store the top once per packet, and a read
 * per packet here would pull the line back and forth for every packet of both bursts. A top read
 * earlier is never above the current one (it only grows), and against a lower top a check never
 * refuses a number the current top would accept: a number above it passes; one at or below it is
 * within the window of the current top too, its ring bit (published before that top, release and
 * acquire) still its own. What an older top lets pass, the update under the lock refuses (it checks
 * again against the current top). With one worker on the SA, nothing moves the top during the
 * checks, and the value is exactly the current one. */
static inline enum sadb_drop esp_replay_check_at(const struct esp_sa *sa, uint64_t seq, uint64_t top)
{
	if (seq == 0)
		return SADB_DROP_REPLAY_OLD; /* never sent: counters start at 1 (RFC 4303 §3.3.3) */
	if (!sa->window)
		return SADB_DROP_NONE;
	const struct sadb_runtime *rt = sa->rt;
	if (seq > top) {
		esp_replay_over_ceiling(sa, seq, false); /* only tells */
		return SADB_DROP_NONE;
	}
	if (top - seq >= sa->window)
		return SADB_DROP_REPLAY_OLD;
	uint64_t bit = seq % ESP_REPLAY_RING;
	if (esp_replay_word(rt, bit / 64) & (1ULL << (bit % 64)))
		return SADB_DROP_REPLAY;
	return SADB_DROP_NONE;
}

static inline enum sadb_drop esp_replay_check(const struct esp_sa *sa, uint64_t seq)
{
	return esp_replay_check_at(sa, seq, esp_replay_top(sa->rt));
}

/* Check again and mark seq as received (after the ICV verified); SEQ_LEASE above a ceiling
 * (esp_replay_over_ceiling). */
enum sadb_drop esp_replay_update_slow(struct esp_sa *sa, uint64_t seq);
static inline enum sadb_drop esp_replay_update(struct esp_sa *sa, uint64_t seq)
{
	struct sadb_runtime *rt = sa->rt;
	uint64_t top = esp_replay_top(rt);
	if (ESP_UNLIKELY(seq > top && esp_replay_over_ceiling(sa, seq, true)))
		return SADB_DROP_SEQ_LEASE;
	if (ESP_LIKELY(seq == top + 1 && seq != 0)) {
		/* In order, the common case: it passes the check (above the top), and the only number
		 * the window newly covers is seq itself, whose bit is set here: nothing to clear. */
		uint64_t bit = seq % ESP_REPLAY_RING;
		esp_replay_set_word(rt, bit / 64, esp_replay_word(rt, bit / 64) | 1ULL << (bit % 64));
		atomic_store_explicit((_Atomic uint64_t *)&rt->replay_top, seq, memory_order_release);
		return SADB_DROP_NONE;
	}
	return esp_replay_update_slow(sa, seq);
}

#endif
