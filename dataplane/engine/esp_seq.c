/* dataplane/engine/esp_seq.c: outbound sequence number reservation (doc/architecture.md rule 1): blocks
 * reserved in the SA's runtime area before any number of them is used, within the lease recorded on
 * disk for SAs with SADB_SAF_SEQ_PERSIST. Called by the outbound stages (esp_out.c, ah.c) through
 * esp_seq_take (esp_seq.h). */
#include "config.h"

#include "dataplane/engine/esp_internal.h"

bool esp_seq_refill(struct esp_sa *sa)
{
	struct sadb_runtime *rt = sa->rt;

	if (sa->seq_done)
		return false;
	/* Reserve a block in the shared runtime before using any number of it: a crash loses at most
	 * the rest of the block, never reuses one. A CAS rather than a fetch-add so that the recorded
	 * mark never wraps past the end of the space, nor passes the lease recorded on disk. */
	_Atomic uint64_t *res = (_Atomic uint64_t *)&rt->seq_reserved;
	uint64_t cap = sa->seq_max;
	bool leased = false;
	if (sa->flags & SADB_SAF_SEQ_PERSIST) {
		uint64_t lease = atomic_load_explicit((_Atomic uint64_t *)&rt->seq_lease, memory_order_acquire);
		if (lease < cap) {
			cap = lease;
			leased = true;
		}
	}
	uint64_t blk = sa->seq_block;
	if (sa->seq_shared && sa->seq_want < blk)
		blk = sa->seq_want ? sa->seq_want : 1; /* only what the burst still needs */
	uint64_t old = atomic_load_explicit(res, memory_order_acquire), want;
	do {
		if (old >= sa->seq_max) {
			sa->seq_done = true; /* used up: the SA must be rekeyed */
			sa->seq_why = SADB_DROP_SEQ_OVERFLOW;
			return false;
		}
		if (old >= cap) {
			sa->seq_why = SADB_DROP_SEQ_LEASE; /* the control thread extends the lease */
			esp_lease_tell(sa);
			return false;
		}
		want = cap - old < blk ? cap : old + blk;
	} while (!atomic_compare_exchange_weak_explicit(res, &old, want, memory_order_acq_rel,
						       memory_order_acquire));
	if (leased && cap - want <= sa->lease_low)
		esp_lease_tell(sa);
	/* Checked after the CAS, not before: if the counter we just advanced was reset for another SA
	 * instance (its zero, or a value its own objects reserved), the reset's instance store is
	 * ordered before what the CAS read (rt_reset in libsadb), so this load sees it. The numbers
	 * taken are then abandoned: they may be the new SA's, never reused under this object's key. */
	if (ESP_UNLIKELY(!esp_rt_ours(sa))) {
		sa->seq_done = true;
		sa->seq_why = SADB_DROP_STALE_SA;
		return false;
	}
	sa->seq_next = old + 1;
	sa->seq_limit = want;
	if (sa->seq_shared)
		sa->seq_want -= (uint32_t)(want - old) < sa->seq_want ? (uint32_t)(want - old) : sa->seq_want;
	return true;
}

void esp_sa_seq_abandon(struct esp_sa *sa)
{
	/* release: the raised reservation is seen by the refill that follows the exchange */
	atomic_store_explicit(&sa->seq_abandon, true, memory_order_release);
}
