/* sadb/sadb_runtime.c: the areas the dataplane writes and everyone else reads: an SA slot's runtime
 * area (sadb_runtime for its writers, sadb_runtime_read, the one reader, whose memory-order rule is
 * written at its declaration in sadb.h) and the workers' counter records. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sadb/sadb_int.h"

struct sadb_runtime *sadb_runtime(const struct sadb *db, uint32_t slot)
{
	if (!db || slot >= db->h->max_sa)
		return NULL;
	return (struct sadb_runtime *)(db->rt + (size_t)slot * db->h->rt_size);
}

static inline uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

int sadb_runtime_read(const struct sadb *db, uint32_t slot, uint64_t instance, unsigned flags,
		      struct sadb_runtime_view *out)
{
	const struct sadb_runtime *rt;
	struct sadb_runtime_view v;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!db || !(rt = sadb_runtime(db, slot)))
		return -EINVAL;
	if (instance == 0 || __atomic_load_n(&rt->instance, __ATOMIC_ACQUIRE) != instance)
		return -ESTALE;
	memset(&v, 0, sizeof(v));
	v.packets = ld(&rt->packets);
	v.bytes = ld(&rt->bytes);
	v.first_used = ld(&rt->first_used);
	v.last_used = ld(&rt->last_used);
	v.seq_reserved = ld(&rt->seq_reserved);
	v.seq_lease = ld(&rt->seq_lease);
	v.replay_top = ld(&rt->replay_top);
	if (flags & SADB_RTV_REPLAY)
		for (unsigned i = 0; i < SADB_REPLAY_MAX / 64; i++)
			v.replay_bitmap[i] = ld(&rt->replay_bitmap[i]);
	for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
		v.drops[i] = ld(&rt->drops[i]);
		v.drops_total += v.drops[i];
	}
	v.expired = __atomic_load_n(&rt->expired, __ATOMIC_RELAXED);
	/* Pairs with the release fence after the reset's store of 0 (sadb_sa.c, rt_reset): a copy that
	 * took a word of a later instance sees that instance word changed. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&rt->instance, __ATOMIC_RELAXED) != instance)
		return -ESTALE;
	*out = v;
	return 0;
}

struct sadb_worker_stats *sadb_worker_stats(const struct sadb *db, unsigned worker)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);

	if (!d || worker >= SADB_MAX_WORKERS)
		return NULL;
	return &d->w[worker];
}

_Static_assert(sizeof(struct sadb_worker_stats) % sizeof(uint64_t) == 0,
	       "a worker record is counters only: summed word by word");
int sadb_worker_stats_sum(const struct sadb *db, struct sadb_worker_stats *total)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);
	uint64_t *t = (uint64_t *)total;

	if (!d || !total)
		return -EINVAL;
	memset(total, 0, sizeof(*total));
	/* Every record, not only n_workers: a starting dataplane zeroes them all, so unused ones are 0.
	 * The record's padding up to its alignment is zero as well. */
	for (unsigned i = 0; i < SADB_MAX_WORKERS; i++) {
		const uint64_t *w = (const uint64_t *)&d->w[i];

		for (size_t k = 0; k < sizeof(*total) / sizeof(uint64_t); k++)
			t[k] += ld(&w[k]);
	}
	return (int)__atomic_load_n(&d->n_workers, __ATOMIC_RELAXED);
}
