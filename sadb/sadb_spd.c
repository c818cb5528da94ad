/* sadb/sadb_spd.c: the compiled SPD index, how the writer keeps it up to date, and policy lookup.
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
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static size_t off_tuples(void)
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

static uint32_t delta_cap(uint32_t cap)
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

size_t sadb__idx_size(uint32_t max_policy)
{
	size_t off[6];

	return idx_layout(max_policy, off);
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

/* ---- the writer's structures: tuples, hash slots, chains, treap ---- */

/* dir_start[d] is the number of tuples of the directions before d, for every d. */
static void dir_starts(struct sadb_idx_hdr *ih)
{
	uint32_t sum = 0;

	for (unsigned d = 0; d < 4; d++) {
		ih->dir_start[d] = sum;
		sum += ih->dir_n[d];
	}
	ih->ntuples = sum;
}

static int tuple_find(const struct idx_view *v, uint32_t k1)
{
	uint8_t d = k1_dir(k1) & 3;
	uint32_t st = v->ih->dir_start[d], n = v->ih->dir_n[d];

	if (st > v->cap || n > v->cap - st || st + n > v->ih->ntuples || v->ih->ntuples > v->cap)
		return -EIO;
	for (uint32_t i = st; i < st + n; i++)
		if (v->tup[i].k1 == k1)
			return (int)i;
	return -ENOENT;
}

/* Put tuple t into its direction's sorted place (it is not in the array). */
static int tuple_put(struct idx_view *v, const struct sadb_idx_tuple *t)
{
	struct sadb_idx_hdr *ih = v->ih;
	uint8_t d = k1_dir(t->k1) & 3;
	uint32_t st = ih->dir_start[d], n = ih->dir_n[d], pos = st + n;

	if (ih->ntuples >= v->cap || ih->ntuples < st + n)
		return -EIO;
	for (uint32_t i = st; i < st + n; i++)
		if (better(t->min_prio, t->min_id, v->tup[i].min_prio, v->tup[i].min_id)) {
			pos = i;
			break;
		}
	memmove(&v->tup[pos + 1], &v->tup[pos], (size_t)(ih->ntuples - pos) * sizeof(*t));
	v->tup[pos] = *t;
	ih->dir_n[d]++;
	dir_starts(ih);
	return 0;
}

/* Take tuple i (found by tuple_find) out of the array. */
static void tuple_take(struct idx_view *v, uint32_t i)
{
	struct sadb_idx_hdr *ih = v->ih;

	ih->dir_n[k1_dir(v->tup[i].k1) & 3]--;
	memmove(&v->tup[i], &v->tup[i + 1], (size_t)(ih->ntuples - i - 1) * sizeof(v->tup[0]));
	dir_starts(ih);
}

static inline int node_cmp(const struct idx_node *a, uint32_t k1, uint32_t prio, uint32_t id)
{
	if (a->k1 != k1)
		return a->k1 < k1 ? -1 : 1;
	if (a->prio != prio)
		return a->prio < prio ? -1 : 1;
	return a->id < id ? -1 : a->id > id;
}

#define TREAP_DEPTH 256 /* far beyond a random treap's depth at any capacity; deeper is corruption */

/* Insert entry e (its node filled in) under *link; 0 or -EIO. */
static int treap_insert(struct idx_view *v, uint32_t *link, uint32_t e, unsigned depth)
{
	struct idx_node *x = &v->node[e];
	uint32_t t = *link;
	struct idx_node *n;
	int r;

	if (depth > TREAP_DEPTH || t > v->cap)
		return -EIO;
	if (t == 0) {
		x->l = x->r = 0;
		*link = e + 1;
		return 0;
	}
	n = &v->node[t - 1];
	if (node_cmp(n, x->k1, x->prio, x->id) > 0) {
		r = treap_insert(v, &n->l, e, depth + 1);
		if (!r && n->l && v->node[n->l - 1].pri > n->pri) {
			uint32_t c = n->l; /* rotate right */
			n->l = v->node[c - 1].r;
			v->node[c - 1].r = t;
			*link = c;
		}
	} else {
		r = treap_insert(v, &n->r, e, depth + 1);
		if (!r && n->r && v->node[n->r - 1].pri > n->pri) {
			uint32_t c = n->r; /* rotate left */
			n->r = v->node[c - 1].l;
			v->node[c - 1].l = t;
			*link = c;
		}
	}
	return r;
}

/* Remove entry e from under *link; 0, or -EIO if it is not there. */
static int treap_remove(struct idx_view *v, uint32_t *link, uint32_t e, unsigned depth)
{
	const struct idx_node *x = &v->node[e];

	for (; depth <= TREAP_DEPTH; depth++) {
		uint32_t t = *link;
		struct idx_node *n;
		int c;

		if (t == 0 || t > v->cap)
			return -EIO;
		n = &v->node[t - 1];
		c = t - 1 == e ? 0 : node_cmp(n, x->k1, x->prio, x->id);
		if (c > 0) {
			link = &n->l;
		} else if (c < 0) {
			link = &n->r;
		} else if (t - 1 != e) {
			return -EIO;
		} else if (!n->l || !n->r) {
			*link = n->l ? n->l : n->r;
			return 0;
		} else {
			/* Rotate the child with the higher priority up, then go on below it. */
			uint32_t cl = n->l, cr = n->r;
			if (cl > v->cap || cr > v->cap)
				return -EIO;
			if (v->node[cl - 1].pri > v->node[cr - 1].pri) {
				n->l = v->node[cl - 1].r;
				v->node[cl - 1].r = t;
				*link = cl;
				link = &v->node[cl - 1].r;
			} else {
				n->r = v->node[cr - 1].l;
				v->node[cr - 1].l = t;
				*link = cr;
				link = &v->node[cr - 1].l;
			}
		}
	}
	return -EIO;
}

/* The entry with the best (priority, id) in tuple k1, or -ENOENT. */
static int treap_first(const struct idx_view *v, uint32_t k1)
{
	uint32_t t = v->ih->root, cand = 0;

	for (unsigned depth = 0; t && depth <= TREAP_DEPTH; depth++) {
		const struct idx_node *n;
		if (t > v->cap)
			return -EIO;
		n = &v->node[t - 1];
		if (n->k1 >= k1) {
			cand = t;
			t = n->l;
		} else {
			t = n->r;
		}
	}
	if (t)
		return -EIO;
	return cand && v->node[cand - 1].k1 == k1 ? (int)cand - 1 : -ENOENT;
}

/* The hash slot of the chain with entry p's tuple and key: its position, or -(first empty slot)-1. */
static int64_t hs_find(const struct idx_view *v, uint64_t hv, uint32_t k1, const struct sadb_policy *p)
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

/* Empty hash slot pos, shifting later entries of its probe run back (linear probing without
 * tombstones). */
static int hs_clear(struct idx_view *v, uint32_t pos)
{
	uint32_t mask = hs_mask(v), i = pos, j = pos;

	for (uint32_t step = 0; step <= mask; step++) {
		uint64_t hsv;
		uint32_t e, home;

		j = (j + 1) & mask;
		hsv = v->hs[j];
		if (hsv == 0) {
			v->hs[i] = 0;
			v->ih->ngroups--;
			return 0;
		}
		e = (uint32_t)hsv;
		if (e == 0 || e > v->cap)
			return -EIO;
		home = (uint32_t)pol_hash(v->ih->seed, v->ent[e - 1].k1, &v->ent[e - 1].p) & mask;
		/* The entry at j may fill i unless its home lies cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			v->hs[i] = hsv;
			i = j;
		}
	}
	return -EIO;
}

/* Rehash the chain heads into a table of size slots (a power of two within the room). */
static int hs_resize(struct idx_view *v, uint32_t size)
{
	uint32_t old = hs_mask(v) + 1, n = 0, mask = size - 1;
	uint64_t *heads;

	if (size > v->hs_max + 1 || size < HS_MIN || size < 2ull * v->ih->ngroups)
		return -EIO;
	heads = malloc((size_t)v->ih->ngroups * sizeof(*heads) + 1);
	if (!heads)
		return -ENOMEM;
	for (uint32_t i = 0; i < old; i++) {
		if (!v->hs[i])
			continue;
		if (n == v->ih->ngroups) {
			free(heads);
			return -EIO; /* more chains than counted: rebuilt whole */
		}
		heads[n++] = v->hs[i];
	}
	memset(v->hs, 0, (size_t)(old > size ? old : size) * sizeof(uint64_t));
	v->ih->hs_mask = mask;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t e = (uint32_t)heads[k], pos;
		if (e == 0 || e > v->cap) {
			free(heads);
			return -EIO;
		}
		pos = (uint32_t)pol_hash(v->ih->seed, v->ent[e - 1].k1, &v->ent[e - 1].p) & mask;
		while (v->hs[pos])
			pos = (pos + 1) & mask; /* ends: at most half the slots are taken */
		v->hs[pos] = heads[k];
	}
	v->ih->ngroups = n;
	free(heads);
	return 0;
}

static int entry_insert(struct idx_view *v, const struct sadb_policy *p, uint32_t slot)
{
	struct sadb_idx_hdr *ih = v->ih;
	uint32_t k1 = pol_k1(p), e;
	uint64_t hv = pol_hash(ih->seed, k1, p);
	struct idx_node *x;
	int64_t hp;
	int ti, r;

	if (ih->free_head) {
		e = ih->free_head - 1;
		if (e >= ih->nentries || e >= v->cap || v->ent[e].k1)
			return -EIO;
		ih->free_head = v->ent[e].next;
	} else if (ih->nentries < v->cap) {
		e = ih->nentries++;
	} else {
		return -EIO;
	}
	memcpy(&v->ent[e].p, p, sizeof(*p));
	v->ent[e].k1 = k1;
	v->ent[e].next = 0;
	v->slot_ent[slot] = e + 1;
	ih->nused++;
	x = &v->node[e];
	x->k1 = k1;
	x->prio = p->priority;
	x->id = p->id;
	x->pri = (uint32_t)sadb__mix64(ih->seed ^ p->id ^ (uint64_t)e << 32);
	r = treap_insert(v, &ih->root, e, 0);
	if (r)
		return r;
	/* The tuple: new, or counted and maybe with a new best (then moved to its place). */
	ti = tuple_find(v, k1);
	if (ti == -EIO)
		return -EIO;
	if (ti < 0) {
		struct sadb_idx_tuple t = { k1, p->priority, p->id, 1, tuple_seed(ih->seed, k1) };
		r = tuple_put(v, &t);
		if (r)
			return r;
	} else if (better(p->priority, p->id, v->tup[ti].min_prio, v->tup[ti].min_id)) {
		struct sadb_idx_tuple t = v->tup[ti];
		t.min_prio = p->priority;
		t.min_id = p->id;
		t.n++;
		tuple_take(v, (uint32_t)ti);
		r = tuple_put(v, &t);
		if (r)
			return r;
	} else {
		v->tup[ti].n++;
	}
	/* The chain: a new hash slot, or a place in (priority, id) order. */
	hp = hs_find(v, hv, k1, p);
	if (hp == INT64_MIN)
		return -EIO;
	if (hp < 0 && 2ull * (v->ih->ngroups + 1) > (uint64_t)hs_mask(v) + 1) {
		/* One more chain would load the table above 1/2: double it. */
		r = hs_resize(v, 2 * (hs_mask(v) + 1));
		if (r)
			return r;
		hp = hs_find(v, hv, k1, p);
		if (hp >= 0 || hp == INT64_MIN)
			return -EIO;
	}
	if (hp < 0) {
		v->hs[-hp - 1] = (hv >> 32) << 32 | (e + 1);
		v->ih->ngroups++;
	} else {
		uint64_t *hsl = &v->hs[hp];
		uint32_t cur = (uint32_t)*hsl, prev = 0;
		for (uint32_t steps = 0; cur; steps++) {
			if (cur > v->cap || steps > v->cap)
				return -EIO;
			if (better(p->priority, p->id, v->ent[cur - 1].p.priority, v->ent[cur - 1].p.id))
				break;
			prev = cur;
			cur = v->ent[cur - 1].next;
		}
		v->ent[e].next = cur;
		if (prev)
			v->ent[prev - 1].next = e + 1;
		else
			*hsl = (hv >> 32) << 32 | (e + 1);
	}
	return 0;
}

static int entry_remove(struct idx_view *v, uint32_t e, uint32_t slot)
{
	struct sadb_idx_hdr *ih = v->ih;
	struct sadb_idx_entry *en = &v->ent[e];
	const struct sadb_policy *p = &en->p;
	uint32_t k1 = en->k1;
	uint64_t hv = pol_hash(ih->seed, k1, p);
	uint32_t cur, prev = 0;
	int64_t hp;
	int ti, r;

	/* Out of its chain, and the hash slot with it if the chain is now empty. */
	hp = hs_find(v, hv, k1, p);
	if (hp < 0)
		return -EIO;
	cur = (uint32_t)v->hs[hp];
	for (uint32_t steps = 0; cur != e + 1; steps++) {
		if (cur == 0 || cur > v->cap || steps > v->cap)
			return -EIO;
		prev = cur;
		cur = v->ent[cur - 1].next;
	}
	if (prev) {
		v->ent[prev - 1].next = en->next;
	} else if (en->next) {
		v->hs[hp] = (hv >> 32) << 32 | en->next;
	} else {
		r = hs_clear(v, (uint32_t)hp);
		if (r)
			return r;
		/* Below 1/8: halve the table, so lookups keep touching a dense one. */
		if (hs_mask(v) + 1 > HS_MIN && 8ull * ih->ngroups < (uint64_t)hs_mask(v) + 1) {
			r = hs_resize(v, (hs_mask(v) + 1) / 2);
			if (r)
				return r;
		}
	}
	r = treap_remove(v, &ih->root, e, 0);
	if (r)
		return r;
	ti = tuple_find(v, k1);
	if (ti < 0)
		return -EIO;
	if (v->tup[ti].n <= 1) {
		tuple_take(v, (uint32_t)ti);
	} else if (v->tup[ti].min_prio == p->priority && v->tup[ti].min_id == p->id) {
		/* The tuple's best went: the next one from the treap, and the tuple to its new place. */
		struct sadb_idx_tuple t = v->tup[ti];
		int b = treap_first(v, k1);
		if (b < 0)
			return -EIO;
		t.n--;
		t.min_prio = v->node[b].prio;
		t.min_id = v->node[b].id;
		tuple_take(v, (uint32_t)ti);
		r = tuple_put(v, &t);
		if (r)
			return r;
	} else {
		v->tup[ti].n--;
	}
	en->k1 = 0;
	en->p.dir = 0;
	en->next = ih->free_head;
	ih->free_head = e + 1;
	ih->nused--;
	if (v->slot_ent[slot] == e + 1)
		v->slot_ent[slot] = 0;
	return 0;
}

static inline bool pol_indexed(const struct sadb_policy *p)
{
	return p && p->dir >= SADB_DIR_IN && p->dir <= SADB_DIR_FWD;
}

/* Make the buffer's entry for policy slot s agree with the writer's view of the slot. */
static int sync_slot(struct sadb *db, struct idx_view *v, uint32_t s)
{
	const struct sadb_policy *want;
	uint32_t cur;
	int r;

	if (s >= v->cap)
		return -EIO;
	want = s < atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed) ? sadb__pol_wview(db, s) : NULL;
	if (!pol_indexed(want))
		want = NULL;
	cur = v->slot_ent[s];
	if (cur > v->cap || cur > v->ih->nentries || (cur && !v->ent[cur - 1].k1))
		return -EIO;
	if (cur && want && memcmp(&v->ent[cur - 1].p, want, sizeof(*want)) == 0)
		return 0;
	if (cur) {
		r = entry_remove(v, cur - 1, s);
		if (r)
			return r;
	}
	return want ? entry_insert(v, want, s) : 0;
}

/* ---- whole rebuild from the table ---- */

struct build_item {
	uint32_t k1;       /* dir, family, source and destination prefix lengths */
	uint32_t prio, id;
	uint32_t slot;
	const struct sadb_policy *p;
};

static inline unsigned item_byte(const struct build_item *it, unsigned b)
{
	uint32_t w = b < 4 ? it->id : b < 8 ? it->prio : it->k1;

	return (w >> (8 * (b & 3))) & 0xff;
}

/* LSD radix sort on (k1, priority, id), least significant byte first; a byte on which all items
 * agree (most of them: few prefix-length pairs, few priorities) costs one counting pass. Stable and
 * O(n), where qsort made the rebuild of a 10k-policy index several times slower. */
static void sort_items(struct build_item *a, struct build_item *tmp, uint32_t n)
{
	static __thread uint32_t cnt[12][256];

	/* All twelve histograms in one pass; then one scatter pass per byte that varies. */
	memset(cnt, 0, sizeof(cnt));
	for (uint32_t i = 0; i < n; i++) {
		const struct build_item *it = &a[i];
		for (unsigned b = 0; b < 4; b++) {
			cnt[b][(it->id >> (8 * b)) & 0xff]++;
			cnt[4 + b][(it->prio >> (8 * b)) & 0xff]++;
			cnt[8 + b][(it->k1 >> (8 * b)) & 0xff]++;
		}
	}
	for (unsigned b = 0; b < 12; b++) {
		uint32_t sum = 0;
		bool one = false;

		for (unsigned d = 0; d < 256; d++) {
			uint32_t c = cnt[b][d];
			if (c == n)
				one = true;
			cnt[b][d] = sum;
			sum += c;
		}
		if (one)
			continue;
		for (uint32_t i = 0; i < n; i++)
			tmp[cnt[b][item_byte(&a[i], b)]++] = a[i];
		memcpy(a, tmp, (size_t)n * sizeof(*a));
	}
}

static int tuple_cmp(const void *a, const void *b)
{
	const struct sadb_idx_tuple *x = a, *y = b;

	if (x->min_prio != y->min_prio)
		return x->min_prio < y->min_prio ? -1 : 1;
	return x->min_id < y->min_id ? -1 : x->min_id > y->min_id;
}

static int scratch(struct sadb *db, size_t need)
{
	/* Kept on the handle: a fresh multi-megabyte allocation per rebuild costs page faults
	 * comparable to the build itself. */
	if (db->bld_cap < need) {
		size_t ncap = need + need / 4;
		void *a = realloc(db->bld_items, ncap * sizeof(struct build_item));
		if (a)
			db->bld_items = a;
		void *b = realloc(db->bld_tmp, ncap * sizeof(struct build_item));
		if (b)
			db->bld_tmp = b;
		void *c = realloc(db->bld_tail, ncap * sizeof(uint32_t));
		if (c)
			db->bld_tail = c;
		if (!a || !b || !c)
			return -ENOMEM;
		db->bld_cap = ncap;
	}
	return 0;
}

static int full_build(struct sadb *db, struct idx_view *v, uint64_t seed)
{
	uint32_t cap = v->cap;
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	struct build_item *items, *tmp;
	uint32_t *tail, n = 0, nt = 0, sp = 0;
	struct sadb_idx_hdr *ih = v->ih;
	int r;

	if (hw > cap)
		hw = cap;
	r = scratch(db, (size_t)hw + 1);
	if (r)
		return r;
	items = db->bld_items;
	tmp = db->bld_tmp;
	tail = db->bld_tail;
	for (uint32_t i = 0; i < hw; i++) {
		const struct sadb_policy *p = sadb__pol_wview(db, i);
		if (pol_indexed(p))
			items[n++] = (struct build_item){ pol_k1(p), p->priority, p->id, i, p };
	}
	sort_items(items, tmp, n);
	memset(ih, 0, sizeof(*ih));
	ih->seed = seed;
	ih->hs_mask = hs_slots(n) - 1;
	memset(v->hs, 0, ((size_t)ih->hs_mask + 1) * sizeof(uint64_t));
	memset(v->slot_ent, 0, (size_t)cap * sizeof(uint32_t));
	for (uint32_t i = 0; i < n;) {
		uint32_t k1 = items[i].k1, j = i;
		struct sadb_idx_tuple *t = &v->tup[nt++];

		while (j < n && items[j].k1 == k1)
			j++;
		/* Sorted: the tuple's first item is its best. */
		*t = (struct sadb_idx_tuple){ k1, items[i].prio, items[i].id, j - i, tuple_seed(seed, k1) };
		for (uint32_t e = i; e < j; e++) {
			const struct sadb_policy *p = items[e].p;
			uint64_t hv = pol_hash(seed, k1, p);
			int64_t hp = hs_find(v, hv, k1, p);

			memcpy(&v->ent[e].p, p, sizeof(*p));
			v->ent[e].k1 = k1;
			v->ent[e].next = 0;
			v->slot_ent[items[e].slot] = e + 1;
			if (hp == INT64_MIN)
				return -EIO;
			if (hp < 0) {
				v->hs[-hp - 1] = (hv >> 32) << 32 | (e + 1);
				ih->ngroups++;
				tail[e] = e;
			} else {
				/* Same tuple and addresses: append, keeping (priority, id) order. */
				uint32_t head = (uint32_t)v->hs[hp] - 1;
				v->ent[tail[head]].next = e + 1;
				tail[head] = e;
			}
		}
		i = j;
	}
	/* The treap from the sorted entries in one pass (a Cartesian tree: a stack of the right spine). */
	for (uint32_t e = 0; e < n; e++) {
		struct idx_node *x = &v->node[e];
		uint32_t last = 0;

		x->k1 = items[e].k1;
		x->prio = items[e].prio;
		x->id = items[e].id;
		x->pri = (uint32_t)sadb__mix64(seed ^ x->id ^ (uint64_t)e << 32);
		x->r = 0;
		while (sp && v->node[tail[sp - 1]].pri < x->pri)
			last = tail[--sp] + 1;
		x->l = last;
		if (sp)
			v->node[tail[sp - 1]].r = e + 1;
		tail[sp++] = e;
	}
	ih->root = sp ? tail[0] + 1 : 0;
	ih->nentries = ih->nused = n;
	/* Tuples were produced grouped by direction; order each direction's by best (priority, id). */
	for (uint32_t i = 0; i < nt;) {
		uint32_t j = i;
		uint8_t d = k1_dir(v->tup[i].k1);
		while (j < nt && k1_dir(v->tup[j].k1) == d)
			j++;
		qsort(&v->tup[i], j - i, sizeof(v->tup[0]), tuple_cmp);
		ih->dir_n[d & 3] = j - i;
		i = j;
	}
	dir_starts(ih);
	return 0;
}

/* ---- the commit's entry point ---- */

static inline bool tag_valid(uint64_t t, uint64_t g)
{
	return t && t != SADB_TAG_WRITING && t <= g;
}

int sadb__idx_build(struct sadb *db, int b, uint64_t n, uint64_t prev_tag)
{
	struct sadb_hdr *h = db->h;
	uint32_t cap = h->max_policy, nlog = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);
	uint32_t npol = atomic_load_explicit(&h->n_policy, memory_order_relaxed), nd = 0, mine = 0;
	uint64_t g = sadb__cur_gen(db), og = atomic_load_explicit(&h->idx_gen[1 - b], memory_order_relaxed);
	struct idx_view v, ov;
	bool incr;
	int r = 0;

	idx_view(db->idx[b], cap, &v);
	idx_view(db->idx[1 - b], cap, &ov);
	if (nlog > h->log_cap)
		nlog = h->log_cap;
	for (uint32_t k = 0; k < nlog; k++)
		mine += (db->log[k] & SADB_LOG_POLICY) != 0;
	/* In place only if this buffer is exactly one commit behind the published one, whose delta
	 * is listed, and the work is small against a rebuild. */
	incr = tag_valid(prev_tag, g) && tag_valid(og, g) && og > prev_tag && ov.ih->gen == og &&
	       ov.ih->base_gen == prev_tag && v.ih->gen == prev_tag && ov.ih->ndelta <= ov.delta_cap &&
	       (uint64_t)ov.ih->ndelta + mine <= 64 + npol / 8;
	if (incr) {
		nd = ov.ih->ndelta;
		for (uint32_t k = 0; k < nd && !r; k++)
			r = sync_slot(db, &v, ov.delta[k]);
		sadb__test_stop(db, SADB_STOP_INDEX);
		for (uint32_t k = 0; k < nlog && !r; k++)
			if (db->log[k] & SADB_LOG_POLICY)
				r = sync_slot(db, &v, db->log[k] & ~SADB_LOG_POLICY);
	}
	if (!incr || r) {
		/* Each buffer keeps its seed until it is rebuilt. */
		r = full_build(db, &v, h->hash_seed ^ n);
		if (r)
			return r;
	}
	/* What the next commit needs to bring the other buffer up to this one. */
	nd = 0;
	for (uint32_t k = 0; k < nlog && nd <= v.delta_cap; k++) {
		if (!(db->log[k] & SADB_LOG_POLICY))
			continue;
		if (nd < v.delta_cap)
			v.delta[nd] = db->log[k] & ~SADB_LOG_POLICY;
		nd++;
	}
	v.ih->ndelta = nd;
	v.ih->base_gen = tag_valid(og, g) ? og : 0;
	v.ih->gen = n;
	return 0;
}

static inline bool key_eq(const struct sadb_policy *q, const uint32_t *s, const uint32_t *d, unsigned nw)
{
	uint32_t x = 0;

	if (nw == 1)
		return q->sel.src.a.w[0] == s[0] && q->sel.dst.a.w[0] == d[0];

	for (unsigned w = 0; w < nw; w++)
		x |= (q->sel.src.a.w[w] ^ s[w]) | (q->sel.dst.a.w[w] ^ d[w]);
	return x == 0;
}

#define PREFETCH_TUPLES 8

struct tuple_key {
	uint32_t s[4], d[4];
	uint64_t hv;
};

static inline void tuple_key(const struct sadb_idx_tuple *t, const struct sadb_pkt_sel *pkt, struct tuple_key *k)
{
	uint8_t fam = k1_fam(t->k1), splen = k1_splen(t->k1), dplen = k1_dplen(t->k1);

	if (fam == AF_INET) {
		/* The common case, without loops. */
		k->s[0] = pkt->src.a.w[0] & sadb__plen_mask(splen, 0);
		k->d[0] = pkt->dst.a.w[0] & sadb__plen_mask(dplen, 0);
		k->hv = sadb__mix64(t->seed ^ ((uint64_t)k->s[0] << 32 | k->d[0]));
		return;
	}
	unsigned nw = fam_words(fam);
	for (unsigned w = 0; w < 4; w++) {
		k->s[w] = w < nw ? pkt->src.a.w[w] & sadb__plen_mask(splen, w) : 0;
		k->d[w] = w < nw ? pkt->dst.a.w[w] & sadb__plen_mask(dplen, w) : 0;
	}
	k->hv = key_hash(t->seed, k->s, k->d, nw);
}

int sadb__idx_lookup(const struct sadb *db, const uint8_t *buf, uint8_t dir, const struct sadb_pkt_sel *pkt,
		     struct sadb_policy *out)
{
	struct idx_view v;
	struct tuple_key keys[PREFETCH_TUPLES];
	uint32_t start, nt, best = UINT32_MAX, bprio = UINT32_MAX, bid = UINT32_MAX, mask;

	idx_view(buf, db->h->max_policy, &v);
	mask = hs_mask(&v);
	start = v.ih->dir_start[dir & 3];
	nt = v.ih->dir_n[dir & 3];
	if (start > v.cap || nt > v.cap - start)
		return -EAGAIN; /* torn: the caller re-checks the buffer's generation */
	/* Hash the packet for the first tuples and prefetch their hash slots, so the cache misses of
	 * the probes overlap instead of queueing one after the other. */
	for (uint32_t k = 0; k < nt && k < PREFETCH_TUPLES; k++) {
		tuple_key(&v.tup[start + k], pkt, &keys[k]);
		__builtin_prefetch(&v.hs[(uint32_t)keys[k].hv & mask]);
	}
	for (uint32_t ti = start; ti < start + nt; ti++) {
		const struct sadb_idx_tuple *t = &v.tup[ti];
		struct tuple_key kk;
		const struct tuple_key *k;
		uint32_t k1 = t->k1, fam = k1_fam(k1);
		unsigned nw = fam_words((uint8_t)fam);
		uint32_t pos, fp;

		if (best != UINT32_MAX && !better(t->min_prio, t->min_id, bprio, bid))
			break;
		if (fam && (pkt->src.family != fam || pkt->dst.family != fam))
			continue;
		if (ti - start < PREFETCH_TUPLES) {
			k = &keys[ti - start];
		} else {
			tuple_key(t, pkt, &kk);
			k = &kk;
		}
		fp = (uint32_t)(k->hv >> 32);
		pos = (uint32_t)k->hv & mask;
		for (uint32_t probe = 0; probe <= mask; probe++, pos = (pos + 1) & mask) {
			uint64_t hsv = v.hs[pos];
			uint32_t e = (uint32_t)hsv;
			const struct sadb_idx_entry *en;

			if (hsv == 0)
				break;
			/* The fingerprint spares a look at the entry for most other keys. */
			if ((uint32_t)(hsv >> 32) != fp)
				continue;
			if (e == 0 || e > v.cap)
				return -EAGAIN;
			en = &v.ent[e - 1];
			/* One table serves every tuple: the entry must be of this one. */
			if (en->k1 != k1 || !key_eq(&en->p, k->s, k->d, nw))
				continue;
			/* The chain is in (priority, id) order: the first full match is this key's best. */
			for (uint32_t steps = 0; e && steps < v.cap; steps++) {
				const struct sadb_policy *q;
				if (e > v.cap)
					return -EAGAIN;
				q = &v.ent[e - 1].p;
				if (best != UINT32_MAX && !better(q->priority, q->id, bprio, bid))
					break;
				if ((q->sel.proto == 0 || q->sel.proto == pkt->proto) &&
				    pkt->sport >= q->sel.sport_lo && pkt->sport <= q->sel.sport_hi &&
				    pkt->dport >= q->sel.dport_lo && pkt->dport <= q->sel.dport_hi) {
					best = e - 1;
					bprio = q->priority;
					bid = q->id;
					break;
				}
				e = v.ent[e - 1].next;
			}
			break;
		}
	}
	if (best == UINT32_MAX)
		return -ENOENT;
	memcpy(out, &v.ent[best].p, sizeof(*out));
	return 0;
}

int sadb__idx_find_sel(const struct sadb *db, uint8_t dir, const struct sadb_selector *normalized,
		       bool match_prio, uint32_t prio)
{
	struct sadb_hdr *h = db->h;
	uint64_t g = sadb__cur_gen(db);
	uint64_t i0 = atomic_load_explicit(&h->idx_gen[0], memory_order_relaxed);
	uint64_t i1 = atomic_load_explicit(&h->idx_gen[1], memory_order_relaxed);
	uint32_t hw = atomic_load_explicit(&h->pol_hwm, memory_order_relaxed), best = UINT32_MAX, e;
	int b = sadb__newest(tag_valid(i0, g) ? i0 : 0, tag_valid(i1, g) ? i1 : 0, g);
	struct sadb_policy key;
	struct idx_view v;
	uint32_t k1;
	int64_t hp;

	if (b < 0)
		return -EAGAIN;
	/* Under the writer lock the published buffer holds still and describes the committed policies. */
	idx_view(db->idx[b], h->max_policy, &v);
	if (v.ih->gen != (b ? i1 : i0))
		return -EAGAIN;
	memset(&key, 0, sizeof(key));
	key.dir = dir;
	key.sel = *normalized;
	k1 = pol_k1(&key);
	hp = hs_find(&v, pol_hash(v.ih->seed, k1, &key), k1, &key);
	if (hp == INT64_MIN)
		return -EAGAIN;
	if (hp < 0)
		return -ENOENT;
	e = (uint32_t)v.hs[hp];
	for (uint32_t steps = 0; e && steps < v.cap; steps++) {
		const struct sadb_policy *q, *w;
		uint32_t s;

		if (e > v.cap)
			return -EAGAIN;
		q = &v.ent[e - 1].p;
		e = v.ent[e - 1].next;
		if ((match_prio && q->priority != prio) || !sadb__selector_eq(&q->sel, normalized))
			continue;
		/* Still there in this transaction? */
		s = (q->id - 1) % v.cap;
		w = s < hw ? sadb__pol_wview(db, s) : NULL;
		if (w && w->id == q->id && s < best)
			best = s;
	}
	return best == UINT32_MAX ? -ENOENT : (int)best;
}

/* Reference lookup: every policy of the index, one by one. Kept for the benchmark's side-by-side
 * figures; the unit tests compare against their own independent scan. */
int sadb_policy_lookup_linear(const struct sadb *db, uint8_t dir, const struct sadb_pkt_sel *pkt,
			      struct sadb_policy *out)
{
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		uint64_t i0 = atomic_load_explicit(&db->h->idx_gen[0], memory_order_acquire);
		uint64_t i1 = atomic_load_explicit(&db->h->idx_gen[1], memory_order_acquire);
		bool v0 = i0 && i0 <= g, v1 = i1 && i1 <= g;
		int b;
		uint64_t ib;
		struct idx_view v;
		uint32_t best = UINT32_MAX, n;

		if (!v0 && !v1) {
			/* As in sadb_policy_lookup: tags of different commits if the generation moved. */
			if (atomic_load_explicit(&db->h->gen, memory_order_acquire) != g)
				continue;
			return -ENOENT;
		}
		b = v0 && (!v1 || i0 > i1) ? 0 : 1;
		ib = b ? i1 : i0;
		idx_view(db->idx[b], db->h->max_policy, &v);
		n = v.ih->nentries;
		if (n > v.cap)
			n = v.cap;
		for (uint32_t e = 0; e < n; e++) {
			const struct sadb_policy *q = &v.ent[e].p;
			/* Free entries have k1 0 and direction 0: never a match. */
			if (!v.ent[e].k1 || q->dir != dir || !sadb_selector_match(&q->sel, pkt))
				continue;
			if (best == UINT32_MAX || better(q->priority, q->id, v.ent[best].p.priority, v.ent[best].p.id))
				best = e;
		}
		if (best != UINT32_MAX)
			memcpy(out, &v.ent[best].p, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&db->h->idx_gen[b], memory_order_relaxed) != ib)
			continue;
		return best == UINT32_MAX ? -ENOENT : 0;
	}
	return -EAGAIN;
}
