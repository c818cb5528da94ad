/* dataplane/engine/replay.c: the inbound anti-replay window (RFC 4303 §3.4.3 and Appendix A) kept in the
 * SADB runtime area (replay_top, replay_bitmap), with ESN high-bit inference (Appendix A.2).
 *
 * The bitmap is a ring of SADB_REPLAY_MAX bits indexed by sequence number modulo its size, as in
 * RFC 6479: advancing the window clears only the bits of the numbers it newly covers, never shifts.
 * Because the acceptance test uses the configured window W (<= ring size) rather than the ring, a bit
 * still set from a number >= ring size older is never consulted, so W may equal the ring size.
 *
 * The ring's layout, its atomic accessors and the check are in esp_replay_ring.h, below this file;
 * the ESN inference and the in-order update, run for every packet, are inline in esp_replay.h, above
 * it (the in-order update falls back to the general one here, which calls nothing above it).
 *
 * One writer at a time (doc/architecture.md rule 5): the one object of an inbound SA, or, when one
 * object per worker shares the runtime area, whichever holds the SA's replay lock (esp_replay_lock);
 * their checks before decryption run unlocked beside it, which the order of the stores makes safe
 * (esp_replay_top) and the re-check under the lock makes final. Readers elsewhere (ipsecctl) may see
 * a bitmap being updated, which is harmless for statistics. */
#include "config.h"

#include "dataplane/engine/esp_replay_ring.h"

#define RING_BITS ESP_REPLAY_RING

/* Clear the ring bits of numbers from..to (to - from < RING_BITS). */
static void clear_range(struct sadb_runtime *rt, uint64_t from, uint64_t to)
{
	uint64_t s = from;
	while (s <= to) {
		uint64_t idx = s % RING_BITS;
		unsigned b = (unsigned)(idx % 64);
		uint64_t n = 64 - b;
		if (n > to - s + 1)
			n = to - s + 1;
		uint64_t mask = n == 64 ? ~0ULL : ((1ULL << n) - 1) << b;
		esp_replay_set_word(rt, idx / 64, esp_replay_word(rt, idx / 64) & ~mask);
		s += n;
		if (s == 0)
			break; /* to == UINT64_MAX */
	}
}

/* esp_replay_update (esp_replay.h) past its in-order fast path. */
enum sadb_drop esp_replay_update_slow(struct esp_sa *sa, uint64_t seq)
{
	/* Checked again: two copies of one number may both pass the check of the same burst. */
	enum sadb_drop r = esp_replay_check(sa, seq);
	if (r != SADB_DROP_NONE)
		return r;
	struct sadb_runtime *rt = sa->rt;
	uint64_t top = esp_replay_top(rt);
	if (seq > top) {
		if (seq - top >= RING_BITS)
			for (uint64_t w = 0; w < RING_BITS / 64; w++)
				esp_replay_set_word(rt, w, 0);
		else
			clear_range(rt, top + 1, seq);
		esp_replay_mark(rt, seq);
		esp_replay_publish_top(rt, seq); /* after the bits (esp_replay_top) */
		return SADB_DROP_NONE;
	}
	esp_replay_mark(rt, seq);
	return SADB_DROP_NONE;
}

void esp_replay_seed(struct sadb_runtime *rt, uint64_t top)
{
	if (top <= esp_replay_top(rt))
		return;
	/* every ring bit set: a number under the new top is in the window only as "received" */
	for (uint64_t w = 0; w < RING_BITS / 64; w++)
		esp_replay_set_word(rt, w, ~0ULL);
	atomic_store_explicit((_Atomic uint64_t *)&rt->replay_top, top, memory_order_release);
}
