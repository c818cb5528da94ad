/* sadb/sadb_read.c: libsadb's lock-free readers: one record by slot or id, iteration, the SPI lookup
 * the dataplane makes per packet and the SPD lookup through the published index. They never take the
 * writer lock and never write to the segment, so a stopped or dead writer cannot stall them; every
 * index read from the segment is bounded, because a reader may look at a copy a writer is replacing
 * (sadb_int.h explains how it notices and retries). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sadb/sadb_int.h"

enum { SNAP_FREE = 0, SNAP_USED = 1, SNAP_RETRY = -1 };

/* Copy slot i as of generation g. A copy tagged above g but already committed means g is stale: the
 * caller retries with a fresh generation. Copies tagged WRITING or above the committed generation
 * belong to a transaction in progress (or a dead one) and are ignored, so a stopped writer never
 * makes readers spin. */
static int snap_read(const struct sadb *db, const struct sadb_tbl *t, uint32_t i, uint64_t g, void *out)
{
	_Atomic uint64_t *seq = sadb__slot_seq(t, i), *tag = sadb__slot_tags(t, i);
	uint64_t s0 = atomic_load_explicit(seq, memory_order_acquire);
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_acquire);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_acquire);
	int ci = sadb__newest(t0, t1, g);
	struct sadb_copy_hdr *c;
	uint64_t tc;
	uint32_t used;

	if (ci < 0) {
		uint64_t now = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		if ((t0 > g && t0 <= now) || (t1 > g && t1 <= now))
			return SNAP_RETRY;
		/* The two tags were loaded one after the other: only if nothing changed in between
		 * do they describe one instant, at which a record in use always has a committed copy. */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(seq, memory_order_relaxed) != s0)
			return SNAP_RETRY;
		return SNAP_FREE;
	}
	tc = ci ? t1 : t0;
	c = sadb__slot_copy(t, i, ci);
	used = c->used;
	if (used)
		memcpy(out, sadb__copy_rec(c), t->rec_size);
	/* Pairs with the writer's release fence after it marks the copy WRITING: if any byte we
	 * copied is new, the tag we re-read is no longer tc. */
	atomic_thread_fence(memory_order_acquire);
	/* seq unchanged: neither copy moved while we chose and copied, so the copy was whole and was
	 * the newest one as of g. */
	if (atomic_load_explicit(seq, memory_order_relaxed) != s0 ||
	    atomic_load_explicit(&tag[ci], memory_order_relaxed) != tc)
		return SNAP_RETRY;
	return used ? SNAP_USED : SNAP_FREE;
}

static bool sa_sum_ok(const struct sadb_sa *sa)
{
	return sadb__sa_checksum(sa) == sa->checksum;
}

static bool pol_sum_ok(const struct sadb_policy *p)
{
	return sadb__policy_checksum(p) == p->checksum;
}

int sadb_sa_lookup(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		   struct sadb_sa *out, uint32_t *slot)
{
	uint64_t hv, fp;
	uint32_t b[2];
	unsigned bad_sum = 0;

	if (!db || !dst || !out)
		return sadb__bad_arg(db, "sadb_sa_lookup: NULL argument");
	hv = sadb__sa_key_hash(db->h, spi, proto, dst);
	fp = hv >> 32;
	sadb__hash_buckets(db->h, hv, &b[0], &b[1]);
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t moves = atomic_load_explicit(&db->h->hash_moves, memory_order_acquire);
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		struct sadb_tbl t = sadb__sa_tbl(db);
		bool retry = false;

		for (int k = 0; k < 2 && !retry; k++) {
			_Atomic uint64_t *bk = sadb__bucket(db, b[k]);
			for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
				uint64_t e = atomic_load_explicit(&bk[w], memory_order_acquire);
				uint32_t s = (uint32_t)e;
				int r;

				if ((e >> 32) != fp || s == 0 || s > t.cap)
					continue;
				/* Copied straight into out: a torn or foreign copy is overwritten by the
				 * next attempt, and wiped if the lookup fails. */
				r = snap_read(db, &t, s - 1, g, out);
				if (r == SNAP_USED && !sa_sum_ok(out) && ++bad_sum > 16) {
					/* A stable copy with a bad checksum is corruption, not a race
					 * (as in read_slot): fail now rather than spin. */
					explicit_bzero(out, sizeof(*out));
					sadb__set_err(db, "SA record in slot %u fails its checksum", s - 1);
					return -EIO;
				}
				if (r == SNAP_RETRY || (r == SNAP_USED && !sa_sum_ok(out))) {
					retry = true;
					break;
				}
				if (r == SNAP_USED && sadb__sa_ident_eq(out, spi, proto, dst)) {
					if (slot)
						*slot = s - 1;
					return 0;
				}
			}
		}
		atomic_thread_fence(memory_order_acquire);
		if (!retry && atomic_load_explicit(&db->h->hash_moves, memory_order_relaxed) == moves) {
			explicit_bzero(out, sizeof(*out));
			sadb__set_errc(db, "no SA with that SPI, protocol and destination");
			return -ENOENT;
		}
		sadb__read_retry();
	}
	explicit_bzero(out, sizeof(*out));
	sadb__set_err(db, "SA lookup kept racing with writers; gave up");
	return -EAGAIN;
}

/* Read one record of table t at slot i into out (rec_size bytes); 0, -ENOENT, -EAGAIN, -EIO. */
static int read_slot(const struct sadb *db, const struct sadb_tbl *t, uint32_t i, void *out)
{
	unsigned bad_sum = 0;

	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		int r = snap_read(db, t, i, g, out);

		if (r == SNAP_FREE)
			return -ENOENT;
		if (r == SNAP_USED) {
			if (t->pol ? pol_sum_ok(out) : sa_sum_ok(out))
				return 0;
			/* A stable copy with a bad checksum is corruption, not a race. */
			if (++bad_sum > 16) {
				sadb__set_err(db, "record in slot %u fails its checksum", i);
				return -EIO;
			}
		}
		sadb__read_retry();
	}
	sadb__set_err(db, "read of slot %u kept racing with writers; gave up", i);
	return -EAGAIN;
}

int sadb_sa_get(const struct sadb *db, uint32_t slot, struct sadb_sa *out)
{
	struct sadb_tbl t;
	int r;

	if (!db || !out)
		return sadb__bad_arg(db, "sadb_sa_get: NULL argument");
	t = sadb__sa_tbl(db);
	if (slot >= t.cap) {
		sadb__set_err(db, "slot %u out of range (capacity %u)", slot, t.cap);
		return -EINVAL;
	}
	/* Slots never used are free: do not fault in pages of a sparse segment for them. */
	if (slot >= atomic_load_explicit(&db->h->sa_hwm, memory_order_acquire)) {
		sadb__set_err(db, "slot %u is free", slot);
		return -ENOENT;
	}
	r = read_slot(db, &t, slot, out);
	if (r == -ENOENT)
		sadb__set_err(db, "slot %u is free", slot);
	return r;
}

/* The next record in use at or after *cursor below the table's high-water mark: 0 and *cursor past
 * it, -ENOENT at the end, or the read error. */
static int next_used(const struct sadb *db, const struct sadb_tbl *t, const _Atomic uint32_t *hwm_p,
		     uint32_t *cursor, void *out, uint32_t *slot)
{
	uint32_t hwm = atomic_load_explicit(hwm_p, memory_order_acquire);

	if (hwm > t->cap)
		hwm = t->cap; /* never trust the segment with a slot index */
	for (uint32_t i = *cursor; i < hwm; i++) {
		int r = read_slot(db, t, i, out);
		if (r == -ENOENT)
			continue;
		if (r)
			return r;
		*cursor = i + 1;
		if (slot)
			*slot = i;
		return 0;
	}
	*cursor = hwm;
	return -ENOENT;
}

int sadb_sa_next(const struct sadb *db, uint32_t *cursor, struct sadb_sa *out, uint32_t *slot)
{
	struct sadb_tbl t;

	if (!db || !cursor || !out)
		return sadb__bad_arg(db, "sadb_sa_next: NULL argument");
	t = sadb__sa_tbl(db);
	return next_used(db, &t, &db->h->sa_hwm, cursor, out, slot);
}

int sadb_policy_get(const struct sadb *db, uint32_t id, struct sadb_policy *out)
{
	struct sadb_tbl t;
	uint32_t i;
	int r;

	if (!db || !out)
		return sadb__bad_arg(db, "sadb_policy_get: NULL argument");
	t = sadb__pol_tbl(db);
	if (id == 0) {
		sadb__set_err(db, "policy id 0 is never assigned");
		return -ENOENT;
	}
	i = (id - 1) % t.cap;
	if (i >= atomic_load_explicit(&db->h->pol_hwm, memory_order_acquire)) {
		sadb__set_err(db, "no policy with id %u", id);
		return -ENOENT;
	}
	r = read_slot(db, &t, i, out);
	if (r == 0 && out->id != id)
		r = -ENOENT;
	if (r == -ENOENT)
		sadb__set_err(db, "no policy with id %u", id);
	return r;
}

int sadb_policy_next(const struct sadb *db, uint32_t *cursor, struct sadb_policy *out)
{
	struct sadb_tbl t;

	if (!db || !cursor || !out)
		return sadb__bad_arg(db, "sadb_policy_next: NULL argument");
	t = sadb__pol_tbl(db);
	return next_used(db, &t, &db->h->pol_hwm, cursor, out, NULL);
}

int sadb_policy_lookup(const struct sadb *db, uint8_t dir, const struct sadb_pkt_sel *pkt,
		       struct sadb_policy *out)
{
	unsigned bad = 0;

	if (!db || !pkt || !out)
		return sadb__bad_arg(db, "sadb_policy_lookup: NULL argument");
	if (dir < SADB_DIR_IN || dir > SADB_DIR_FWD)
		return sadb__bad_arg(db, "sadb_policy_lookup: dir is not in, out or fwd");
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		uint64_t i0 = atomic_load_explicit(&db->h->idx_gen[0], memory_order_acquire);
		uint64_t i1 = atomic_load_explicit(&db->h->idx_gen[1], memory_order_acquire);
		int b = sadb__newest(i0, i1, g), r;
		uint64_t ib;

		if (b < 0) {
			/* The two tags were loaded one after the other: if the generation moved meanwhile
			 * they may come from different commits (one buffer WRITING for one commit, the
			 * other for the next), and g is stale anyway. Only at an unchanged generation do
			 * they say that no index was published (no policy ever committed); a tag above g
			 * is then a commit that has not reached its commit point. */
			if (atomic_load_explicit(&db->h->gen, memory_order_acquire) != g) {
				sadb__read_retry();
				continue;
			}
			sadb__set_errc(db, "no matching policy");
			return -ENOENT;
		}
		ib = b ? i1 : i0;
		r = sadb__idx_lookup(db, db->idx[b], dir, pkt, out);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&db->h->idx_gen[b], memory_order_relaxed) != ib) {
			sadb__read_retry();
			continue;
		}
		if ((r == 0 && !pol_sum_ok(out)) || r == -EAGAIN) {
			/* The buffer did not change under us, yet it is inconsistent: after a few
			 * tries that is corruption, not a writer racing with us. */
			if (++bad > 16) {
				sadb__set_err(db, "SPD index %d is corrupt (generation %llu)", b,
					      (unsigned long long)ib);
				return -EIO;
			}
			sadb__read_retry();
			continue;
		}
		if (r == -ENOENT)
			sadb__set_errc(db, "no matching policy");
		return r;
	}
	sadb__set_err(db, "policy lookup kept racing with writers; gave up");
	return -EAGAIN;
}
