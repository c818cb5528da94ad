/* sadb/sadb_spd.h: the compiled SPD index's layout, shared by its writer (sadb_spd_build.c) and its
 * readers (sadb_spd.c). Internal to libsadb.
 *
 * Policy lookup is a tuple-space search (as in Open vSwitch's classifier): policies are grouped in
 * tuples by (direction, family, source prefix length, destination prefix length); one hash table,
 * keyed by (tuple, masked addresses), leads to a chain of the policies sharing them, sorted by
 * (priority, id). A lookup masks the packet's addresses once per tuple and probes the table, so its
 * cost grows with the number of distinct prefix-length pairs, not with the number of policies.
 * Tuples are visited in order of their best (priority, id) and the search stops as soon as no later
 * tuple can beat the match in hand, so a typical SPD (a few prefix-length pairs) costs a few probes.
 *
 * Two buffers, published with the generation (sadb_txn.c): the writer changes only the one readers
 * are not using, tags it with the generation it describes and publishes both together. A commit
 * changes that buffer in place instead of rebuilding it, so adding or deleting one policy costs the
 * same at 1k or 100k policies (left-right): the inactive buffer is exactly one policy-changing commit
 * behind the published one, so the commit applies to it the previous commit's changes plus its own.
 * Each buffer records, as it is written, the policy slots its commit changed (the delta) and the
 * generation of the other buffer it was one commit ahead of (base_gen); applying a delta means
 * making each listed slot's entry agree with the writer's view of the slot (remove the old policy,
 * insert the new one), which is idempotent, so the union of both deltas is applied in any order.
 * The slots' committed copies cannot have changed since the previous commit, because every change
 * of a policy record is a policy-changing commit that writes a buffer. The whole buffer is rebuilt
 * from the table instead when the buffer was not exactly one behind (first use, a writer that died
 * while writing it: recovery tags it 0, a failed build), when the previous delta was too large to
 * list, when the deltas together are large (a load or a flush: one sorted rebuild is cheaper), or
 * when the buffer turns out inconsistent while it is changed.
 *
 * The structures, each sized from max_policy at creation so nothing is ever rehashed or moved:
 * tuples in one array, grouped by direction and in each direction sorted by best (priority, id),
 * moved in place when a tuple appears, goes or changes its best (O(tuples), and tuples are few);
 * one open-addressed hash table with linear probing, deletion by backward shift (no tombstones), whose
 * size follows the number of chains (load between 1/8 and 1/2: doubled or halved by rehashing the
 * chain heads, O(n) once per doubling, as dense as a lookup wants it); entries with a free list; and
 * for the writer
 * alone a treap of all entries in (tuple, priority, id) order, which gives a tuple's new best when
 * its best policy goes (O(log n)), and the entry of each policy slot. A change costs O(log n) plus
 * the length of its chain (policies with the same tuple and addresses) plus O(tuples).
 *
 * Readers never lock: they may read the inactive buffer while a commit changes it, and notice
 * afterwards (its tag moved: the writer marks it WRITING before the first store and fences) and
 * retry. So every index a reader takes from a buffer is bounds-checked against sizes that come from
 * max_policy, never from the buffer, and every loop is bounded (tuples by max_policy, probes by the
 * table size, chains by max_policy): whatever half-changed state a reader sees, it cannot fault or
 * spin, and its result is thrown away. A writer that dies while writing leaves the published buffer
 * untouched and the other tagged WRITING, which no reader uses and recovery tags 0 (rebuilt next).
 */
#ifndef XIPSEC_SADB_SPD_H
#define XIPSEC_SADB_SPD_H

#include "sadb/sadb_int.h"

/* Writer only: one node of the treap per entry, in (k1, priority, id) order; heap order on pri. */
struct idx_node {
	uint32_t k1, prio, id;
	uint32_t l, r;     /* children (+1) */
	uint32_t pri;
};

struct idx_view {
	struct sadb_idx_hdr *ih;
	struct sadb_idx_tuple *tup;
	uint64_t *hs;      /* key fingerprint << 32 | chain head entry + 1; 0 = empty */
	struct sadb_idx_entry *ent;
	struct idx_node *node;
	uint32_t *slot_ent; /* policy slot -> its entry + 1 */
	uint32_t *delta;
	uint32_t cap, hs_max, delta_cap; /* hs_max: the most hash slots the buffer has room for - 1 */
};

/* The hash slots in use - 1, never beyond the room the buffer has. */
static inline uint32_t hs_mask(const struct idx_view *v)
{
	return v->ih->hs_mask & v->hs_max;
}

static inline size_t off_tuples(void)
{
	return (sizeof(struct sadb_idx_hdr) + 63) & ~(size_t)63;
}

#define HS_MIN 16

/* A power of two of at least 2n slots: room for n chains at load 1/2 at most. */
static inline uint32_t hs_slots(uint32_t n)
{
	/* Without a loop: every lookup works out the buffer's layout. */
	if (n <= HS_MIN / 2)
		return HS_MIN;
	if (n > (1u << 30))
		return 1u << 31;
	return 1u << (32 - __builtin_clz(2 * n - 1));
}

static inline uint32_t delta_cap(uint32_t cap)
{
	return cap / 8 + 64;
}

/* Readers use the header, the tuples, the hash slots and the entries; the rest is the writer's. */
static inline size_t idx_layout(uint32_t cap, size_t off[6])
{
	size_t o = off_tuples();

	o += (size_t)cap * sizeof(struct sadb_idx_tuple);
	o = (o + 63) & ~(size_t)63;
	off[0] = o; /* hash slots */
	o += (size_t)hs_slots(cap) * sizeof(uint64_t);
	/* Entries on pairs of cache lines the adjacent-line prefetcher fetches together. */
	o = (o + 127) & ~(size_t)127;
	off[1] = o; /* entries */
	o += (size_t)cap * sizeof(struct sadb_idx_entry);
	off[2] = o; /* treap nodes */
	o += (size_t)cap * sizeof(struct idx_node);
	off[3] = o; /* slot -> entry */
	o += (size_t)cap * sizeof(uint32_t);
	off[4] = o; /* delta */
	o += (size_t)delta_cap(cap) * sizeof(uint32_t);
	return o;
}

static inline void idx_view(const uint8_t *buf, uint32_t cap, struct idx_view *v)
{
	size_t off[6];

	idx_layout(cap, off);
	v->cap = cap;
	v->hs_max = hs_slots(cap) - 1;
	v->delta_cap = delta_cap(cap);
	v->ih = (struct sadb_idx_hdr *)buf;
	v->tup = (struct sadb_idx_tuple *)(buf + off_tuples());
	v->hs = (uint64_t *)(buf + off[0]);
	v->ent = (struct sadb_idx_entry *)(buf + off[1]);
	v->node = (struct idx_node *)(buf + off[2]);
	v->slot_ent = (uint32_t *)(buf + off[3]);
	v->delta = (uint32_t *)(buf + off[4]);
}

static inline unsigned fam_words(uint8_t fam)
{
	return fam == AF_INET6 ? 4 : fam == AF_INET ? 1 : 0;
}

static inline uint8_t k1_dir(uint32_t k1) { return (uint8_t)(k1 >> 24); }
static inline uint8_t k1_fam(uint32_t k1) { return (uint8_t)(k1 >> 16); }
static inline uint8_t k1_splen(uint32_t k1) { return (uint8_t)(k1 >> 8); }
static inline uint8_t k1_dplen(uint32_t k1) { return (uint8_t)k1; }

static inline uint32_t pol_k1(const struct sadb_policy *p)
{
	return (uint32_t)p->dir << 24 | (uint32_t)sadb__sel_family(&p->sel) << 16 |
	       (uint32_t)p->sel.src_plen << 8 | p->sel.dst_plen;
}

static inline uint64_t tuple_seed(uint64_t seed, uint32_t k1)
{
	return sadb__mix64(seed ^ ((uint64_t)k1 << 32 | (k1 ^ 0x5bd1e995u)));
}

static inline uint64_t key_hash(uint64_t seed, const uint32_t *s, const uint32_t *d, unsigned nw)
{
	uint64_t x = seed;

	if (nw == 0)
		return sadb__mix64(x);
	for (unsigned w = 0; w < nw; w++)
		x = sadb__mix64(x ^ ((uint64_t)s[w] << 32 | d[w]));
	return x;
}

/* The hash of a policy's key in its tuple. */
static inline uint64_t pol_hash(uint64_t seed, uint32_t k1, const struct sadb_policy *p)
{
	return key_hash(tuple_seed(seed, k1), p->sel.src.a.w, p->sel.dst.a.w, fam_words(k1_fam(k1)));
}

static inline bool better(uint32_t prio, uint32_t id, uint32_t bprio, uint32_t bid)
{
	return prio < bprio || (prio == bprio && id < bid);
}

static inline bool same_key(const struct sadb_policy *a, const struct sadb_policy *b, unsigned nw)
{
	return memcmp(a->sel.src.a.w, b->sel.src.a.w, nw * 4) == 0 &&
	       memcmp(a->sel.dst.a.w, b->sel.dst.a.w, nw * 4) == 0;
}

static inline bool tag_valid(uint64_t t, uint64_t g)
{
	return t && t != SADB_TAG_WRITING && t <= g;
}

/* The hash slot of the chain with entry p's tuple and key: its position, or -(first empty slot)-1. */
static inline int64_t hs_find(const struct idx_view *v, uint64_t hv, uint32_t k1, const struct sadb_policy *p)
{
	uint32_t mask = hs_mask(v), pos = (uint32_t)hv & mask;
	unsigned nw = fam_words(k1_fam(k1));

	for (uint32_t probe = 0; probe <= mask; probe++, pos = (pos + 1) & mask) {
		uint64_t hsv = v->hs[pos];
		uint32_t e = (uint32_t)hsv;

		if (hsv == 0)
			return -(int64_t)pos - 1;
		if ((hsv >> 32) != (hv >> 32))
			continue;
		if (e == 0 || e > v->cap)
			return INT64_MIN;
		if (v->ent[e - 1].k1 == k1 && same_key(&v->ent[e - 1].p, p, nw))
			return pos;
	}
	return INT64_MIN;
}

#endif
