/* dataplane/engine/esp_replay_ring.h: the inbound anti-replay window's layout in the SADB runtime area
 * (rt->replay_top, the ring rt->replay_bitmap) and the operations on it that need nothing but the
 * SA: the atomic reads and stores, marking one number, the check before any crypto. Both layers of
 * the window sit on it: replay.c (the general update, declared here) and esp_replay.h (what runs for
 * every packet, inline, falling back to replay.c). Nothing here calls up into either, so a packet's
 * path through the window reads top down. Internal to the engine. */
#ifndef XIPSEC_ESP_REPLAY_RING_H
#define XIPSEC_ESP_REPLAY_RING_H

#include "dataplane/engine/esp_sa.h"

#define ESP_REPLAY_RING ((uint64_t)SADB_REPLAY_MAX)

/* The top is published after the bits below it (release), so that a check running beside an update
 * (objects of one SA on several workers, esp_sa_opts.replay_lock) never finds a number under the top
 * whose bit is not yet its own. The check is advisory there: the update re-checks under the lock. */
static inline uint64_t esp_replay_top(const struct sadb_runtime *rt)
{
	return atomic_load_explicit((_Atomic uint64_t *)&rt->replay_top, memory_order_acquire);
}

/* Move the top to seq, after the bits of the numbers it now covers are stored (esp_replay_top). */
static inline void esp_replay_publish_top(struct sadb_runtime *rt, uint64_t seq)
{
	atomic_store_explicit((_Atomic uint64_t *)&rt->replay_top, seq, memory_order_release);
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

/* Mark seq as received in the ring (the writer only). */
static inline void esp_replay_mark(struct sadb_runtime *rt, uint64_t seq)
{
	uint64_t bit = seq % ESP_REPLAY_RING;
	esp_replay_set_word(rt, bit / 64, esp_replay_word(rt, bit / 64) | 1ULL << (bit % 64));
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

/* replay.c: check seq again against the current top and mark it as received, advancing the window
 * over any gap (after the ICV verified; the writer only). esp_replay_update is the caller. */
enum sadb_drop esp_replay_update_slow(struct esp_sa *sa, uint64_t seq);

#endif
