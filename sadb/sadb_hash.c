/* sadb/sadb_hash.c: the SPI hash (two-choice buckets of eight hints, layout in sadb_int.h): the key of
 * an SA identity, and the writer's side: insertion, removal and the moves that make room. Readers only
 * ever probe the two buckets (sadb_read.c), so every change here keeps an SA findable at each instant:
 * an entry moves by being inserted in its other bucket before it is cleared from this one. */
#include "config.h"

#include <errno.h>

#include "sadb/sadb_int.h"

uint64_t sadb__sa_key_hash(const struct sadb_hdr *h, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	uint64_t w01 = 0, w23 = 0, x;

	if (dst->family == AF_INET) {
		w01 = dst->a.w[0];
	} else if (dst->family == AF_INET6) {
		memcpy(&w01, dst->a.b, 8);
		memcpy(&w23, dst->a.b + 8, 8);
	}
	/* Two rounds for IPv4 (SPI and address in one word, then protocol and family), three for IPv6. */
	x = sadb__mix64(h->hash_seed ^ ((uint64_t)spi << 32 | (w01 & 0xffffffffu)));
	x = sadb__mix64(x ^ (w01 & 0xffffffff00000000ULL) ^ ((uint64_t)proto << 8 | dst->family));
	if (w23)
		x = sadb__mix64(x ^ w23);
	return x | 1;
}

void sadb__sa_buckets(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		      uint32_t *b1, uint32_t *b2)
{
	sadb__hash_buckets(db->h, sadb__sa_key_hash(db->h, spi, proto, dst), b1, b2);
}

/* Find the entries of (hv, slot) in hv's two buckets: with remove, clear them all and say whether
 * there was one; without, say whether there is one. */
static bool hash_scan(struct sadb *db, uint64_t hv, uint32_t slot, bool remove)
{
	uint64_t e = sadb__hash_entry(hv, slot);
	uint32_t b[2];
	bool found = false;

	sadb__hash_buckets(db->h, hv, &b[0], &b[1]);
	for (int k = 0; k < 2; k++) {
		for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
			if (atomic_load_explicit(&sadb__bucket(db, b[k])[w], memory_order_relaxed) != e)
				continue;
			if (!remove)
				return true;
			atomic_store_explicit(&sadb__bucket(db, b[k])[w], 0, memory_order_release);
			found = true;
		}
	}
	return found;
}

void sadb__hash_remove(struct sadb *db, uint64_t hv, uint32_t slot)
{
	hash_scan(db, hv, slot, true);
}

static int free_way(struct sadb *db, uint32_t b)
{
	for (unsigned w = 0; w < SADB_HASH_WAYS; w++)
		if (atomic_load_explicit(&sadb__bucket(db, b)[w], memory_order_relaxed) == 0)
			return (int)w;
	return -1;
}

/* Move one entry out of bucket b to its other bucket: insert there first, then clear here, so a
 * reader looking for that SA always finds at least one entry. */
static bool hash_kick(struct sadb *db, uint32_t b)
{
	for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
		uint64_t e = atomic_load_explicit(&sadb__bucket(db, b)[w], memory_order_relaxed);
		uint32_t s = (uint32_t)e;
		if (!s || s > db->h->max_sa)
			continue;
		for (int k = 0; k < 2; k++) {
			uint64_t hv = db->sa_meta[s - 1].h[k];
			uint32_t b1, b2, alt;
			int fw;
			if (!hv || sadb__hash_entry(hv, s - 1) != e)
				continue;
			sadb__hash_buckets(db->h, hv, &b1, &b2);
			alt = b1 == b ? b2 : b1;
			fw = free_way(db, alt);
			if (fw < 0)
				continue;
			atomic_fetch_add_explicit(&db->h->hash_moves, 1, memory_order_relaxed);
			atomic_thread_fence(memory_order_release);
			atomic_store_explicit(&sadb__bucket(db, alt)[fw], e, memory_order_release);
			atomic_store_explicit(&sadb__bucket(db, b)[w], 0, memory_order_release);
			return true;
		}
	}
	return false;
}

/* Make sure one of hv's buckets has a free way; -ENOSPC if not even a kick frees one. */
int sadb__hash_room(struct sadb *db, uint64_t hv)
{
	uint32_t b[2];

	sadb__hash_buckets(db->h, hv, &b[0], &b[1]);
	if (free_way(db, b[0]) >= 0 || free_way(db, b[1]) >= 0)
		return 0;
	if (hash_kick(db, b[0]) || hash_kick(db, b[1]))
		return 0;
	return -ENOSPC;
}

void sadb__hash_insert(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint32_t b[2];
	int k, w;

	if (hash_scan(db, hv, slot, false))
		return;
	sadb__hash_buckets(db->h, hv, &b[0], &b[1]);
	/* The first bucket while it has room: a lookup then usually reads one bucket line. With room
	 * for four entries per SA, the first bucket is full for about one key in a thousand. */
	k = free_way(db, b[0]) >= 0 ? 0 : 1;
	w = free_way(db, b[k]);
	if (w < 0) /* sadb__hash_room() ran before: cannot happen; leave the SA unreachable by SPI if it does */
		return;
	atomic_store_explicit(&sadb__bucket(db, b[k])[w], sadb__hash_entry(hv, slot), memory_order_release);
}

/* Record the intent in the slot's meta first, then insert: recovery can then find and undo it. */
void sadb__hash_attach(struct sadb *db, uint32_t slot, uint64_t hv)
{
	struct sadb_sa_meta *m = &db->sa_meta[slot];

	if (m->h[0] != hv && m->h[1] != hv) {
		int k = m->h[0] == 0 ? 0 : (m->h[1] == 0 ? 1 : -1);
		if (k < 0) {
			/* Both used: one is the committed identity, the other a pending one this
			 * transaction has since replaced. */
			const struct sadb_sa *cur = NULL;
			struct sadb_tbl t = sadb__sa_tbl(db);
			_Atomic uint64_t *tag = sadb__slot_tags(&t, slot);
			int c = sadb__newest(atomic_load_explicit(&tag[0], memory_order_relaxed),
					     atomic_load_explicit(&tag[1], memory_order_relaxed), sadb__cur_gen(db));
			if (c >= 0 && sadb__slot_copy(&t, slot, c)->used)
				cur = sadb__copy_rec(sadb__slot_copy(&t, slot, c));
			k = cur && sadb__sa_key_hash(db->h, cur->spi, cur->proto, &cur->dst) == m->h[0] ? 1 : 0;
			sadb__hash_remove(db, m->h[k], slot);
		}
		m->h[k] = hv;
	}
	sadb__hash_insert(db, hv, slot);
}
