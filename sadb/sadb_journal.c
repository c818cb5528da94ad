/* sadb/sadb_journal.c: the change journal, a ring of (generation, operation, index) entries that
 * lets a reader (xipsecd, ipsecctl monitor) follow changes without rescanning the tables: the writer
 * stages a transaction's entries and publishes them with it; a reader that fell behind the ring is
 * told so (-ESTALE) and resynchronises from the tables. */
#include "config.h"

#include <errno.h>

#include "sadb/sadb_int.h"

int sadb_changes(const struct sadb *db, uint64_t *since, struct sadb_change *out, unsigned max)
{
	const struct sadb_hdr *h;
	uint64_t s;

	if (!db || !since || (!out && max))
		return sadb__bad_arg(db, "sadb_changes: NULL argument");
	h = db->h;
	s = *since;
	/* A writer overwriting the oldest entries while we search can make us copy a mix; jmin then
	 * tells whether what we need was lost (-ESTALE) or we merely raced (try again). */
	for (unsigned attempt = 0; attempt < 64; attempt++) {
		uint64_t cnt = atomic_load_explicit(&h->jcount, memory_order_acquire), lo, hi, pos, n;
		bool ok = true;

		if (s + 1 < atomic_load_explicit(&h->jmin, memory_order_acquire))
			goto stale;
		lo = cnt > SADB_JOURNAL_LEN ? cnt - SADB_JOURNAL_LEN : 0;
		hi = cnt;
		/* First position whose generation is after s (generations never decrease along the ring). */
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (h->journal[mid % SADB_JOURNAL_LEN].gen > s)
				hi = mid;
			else
				lo = mid + 1;
		}
		pos = lo;
		n = cnt - pos;
		if (n == 0 || max == 0)
			return 0;
		if (n > max) {
			/* Hand out whole generations only, so *since never splits a transaction. */
			uint64_t cut = max;
			uint64_t next_gen = h->journal[(pos + max) % SADB_JOURNAL_LEN].gen;
			while (cut > 0 && h->journal[(pos + cut - 1) % SADB_JOURNAL_LEN].gen == next_gen)
				cut--;
			if (cut == 0) {
				sadb__set_err(db, "one transaction has more than %u changes: resynchronise", max);
				return -ESTALE;
			}
			n = cut;
		}
		for (uint64_t k = 0; k < n; k++)
			out[k] = h->journal[(pos + k) % SADB_JOURNAL_LEN];
		/* Pairs with the writer raising jmin before it overwrites an entry. */
		atomic_thread_fence(memory_order_acquire);
		if (s + 1 < atomic_load_explicit(&h->jmin, memory_order_relaxed))
			goto stale;
		for (uint64_t k = 0; k < n && ok; k++)
			ok = out[k].gen > s && (!k || out[k].gen >= out[k - 1].gen);
		if (pos > 0 && pos + SADB_JOURNAL_LEN > cnt &&
		    h->journal[(pos - 1) % SADB_JOURNAL_LEN].gen > s)
			ok = false;
		if (!ok) {
			sadb__read_retry();
			continue;
		}
		*since = out[n - 1].gen;
		return (int)n;
	}
stale:
	sadb__set_err(db, "the change journal has moved past generation %llu: resynchronise",
		      (unsigned long long)s);
	return -ESTALE;
}

/* Stage one change of this transaction; it is published with the transaction (txn_finish). */
void sadb__jappend(struct sadb *db, uint32_t op, uint32_t index)
{
	struct sadb_hdr *h = db->h;
	uint64_t pos = h->txn.jcount0 + h->txn.jn;
	struct sadb_change *e = &h->journal[pos % SADB_JOURNAL_LEN];

	if (pos >= SADB_JOURNAL_LEN && e->gen + 1 > atomic_load_explicit(&h->jmin, memory_order_relaxed)) {
		atomic_store_explicit(&h->jmin, e->gen + 1, memory_order_relaxed);
		/* Readers re-check jmin after copying: they must see it raised before the entry changes. */
		atomic_thread_fence(memory_order_release);
	}
	e->gen = h->txn.gen;
	e->op = op;
	e->index = index;
	h->txn.jn++;
}
