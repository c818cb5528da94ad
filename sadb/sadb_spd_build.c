/* sadb/sadb_spd_build.c: the SPD index's writer: the tuples, hash slots, chains and treap it keeps
 * (sadb_spd.h explains them), the in-place update of the inactive buffer from the two commits'
 * deltas, the whole rebuild from the policy table, and the commit's entry point (sadb__idx_build,
 * called by sadb_txn.c before the commit point). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sadb/sadb_spd.h"

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
