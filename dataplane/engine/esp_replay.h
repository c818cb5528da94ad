/* dataplane/engine/esp_replay.h: the inbound anti-replay window as the packet path uses it, above
 * esp_replay_ring.h (the layout, the check) and replay.c (the general update; it explains the ring):
 * ESN inference, the lock around one burst's updates and the in-order update after a verified ICV.
 * They run for every received packet, so they are inline here. Internal to the engine. */
#ifndef XIPSEC_ESP_REPLAY_H
#define XIPSEC_ESP_REPLAY_H

#include "dataplane/engine/esp_replay_ring.h"

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

/* Check again and mark seq as received (after the ICV verified); SEQ_LEASE above a ceiling
 * (esp_replay_over_ceiling). */
static inline enum sadb_drop esp_replay_update(struct esp_sa *sa, uint64_t seq)
{
	struct sadb_runtime *rt = sa->rt;
	uint64_t top = esp_replay_top(rt);
	if (ESP_UNLIKELY(seq > top && esp_replay_over_ceiling(sa, seq, true)))
		return SADB_DROP_SEQ_LEASE;
	if (ESP_LIKELY(seq == top + 1 && seq != 0)) {
		/* In order, the common case: it passes the check (above the top), and the only number
		 * the window newly covers is seq itself, whose bit is set here: nothing to clear. */
		esp_replay_mark(rt, seq);
		esp_replay_publish_top(rt, seq);
		return SADB_DROP_NONE;
	}
	return esp_replay_update_slow(sa, seq);
}

#endif
