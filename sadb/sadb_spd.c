/* sadb/sadb_spd.c: the compiled SPD index and policy lookup.
 *
 * Policy lookup is a tuple-space search (as in Open vSwitch's classifier): policies are grouped by
 * (direction, family, source prefix length, destination prefix length); inside a group a hash table
 * keyed by the masked addresses leads to a chain of the policies sharing them, sorted by (priority,
 * id). A lookup masks the packet's addresses once per group and probes one hash table, so its cost
 * grows with the number of distinct prefix-length pairs, not with the number of policies. Groups are
 * visited in order of their best (priority, id) and the search stops as soon as no later group can
 * beat the match in hand, so a typical SPD (a few prefix-length pairs) costs a few probes.
 *
 * The index is rebuilt from the policy table by the writer at commit, into the buffer readers are
 * not using, and published with the generation (sadb_txn.c). Rebuilding is O(policies) per committing
 * transaction: cheap at thousands of policies, and a bulk load inside one transaction pays it once.
 * Readers may be reading a buffer while a later commit overwrites it (they notice afterwards and
 * retry), so every index read here is bounds-checked and every loop bounded: garbage must never make
 * a reader fault or spin.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sadb/sadb_int.h"

struct idx_view {
	struct sadb_idx_hdr *ih;
	struct sadb_idx_tuple *tup;
	uint64_t *hs;      /* key fingerprint << 32 | chain head entry + 1; 0 = empty */
	struct sadb_idx_entry *ent;
	uint32_t cap, hs_cap;
};

static size_t off_tuples(void)
{
	return (sizeof(struct sadb_idx_hdr) + 63) & ~(size_t)63;
}

static void idx_view(const uint8_t *buf, uint32_t cap, struct idx_view *v)
{
	size_t o = off_tuples();

	v->cap = cap;
	v->hs_cap = 4 * cap;
	v->ih = (struct sadb_idx_hdr *)buf;
	v->tup = (struct sadb_idx_tuple *)(buf + o);
	o += (size_t)cap * sizeof(struct sadb_idx_tuple);
	v->hs = (uint64_t *)(buf + o);
	o += (size_t)v->hs_cap * sizeof(uint64_t);
	o = (o + 63) & ~(size_t)63;
	v->ent = (struct sadb_idx_entry *)(buf + o);
}

size_t sadb__idx_size(uint32_t max_policy)
{
	size_t o = off_tuples();

	o += (size_t)max_policy * sizeof(struct sadb_idx_tuple);
	o += (size_t)4 * max_policy * sizeof(uint64_t);
	o = (o + 63) & ~(size_t)63;
	o += (size_t)max_policy * sizeof(struct sadb_idx_entry);
	return o;
}

static inline unsigned fam_words(uint8_t fam)
{
	return fam == AF_INET6 ? 4 : fam == AF_INET ? 1 : 0;
}

static inline uint64_t key_hash(uint64_t seed, const uint32_t *s, const uint32_t *d, unsigned nw)
{
	uint64_t x = seed;

	for (unsigned w = 0; w < nw; w++)
		x = sadb__mix64(x ^ ((uint64_t)s[w] << 32 | d[w]));
	return x;
}

struct build_item {
	uint32_t k1;       /* dir, family, source and destination prefix lengths */
	uint32_t prio, id;
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

static inline void item_set(struct build_item *it, const struct sadb_policy *p)
{
	it->p = p;
	it->k1 = (uint32_t)p->dir << 24 | (uint32_t)sadb__sel_family(&p->sel) << 16 |
		 (uint32_t)p->sel.src_plen << 8 | p->sel.dst_plen;
	it->prio = p->priority;
	it->id = p->id;
}

static inline int item_order(const struct build_item *a, const struct build_item *b)
{
	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	if (a->prio != b->prio)
		return a->prio < b->prio ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static bool id_removed(const uint32_t *removed, uint32_t n, uint32_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (removed[mid] == id)
			return true;
		if (removed[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int sadb__idx_build(struct sadb *db, uint8_t *buf, uint64_t seed, const uint8_t *old, uint32_t *removed,
		    uint32_t nremoved, const struct sadb_policy *const *added, uint32_t nadded)
{
	uint32_t cap = db->h->max_policy;
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	struct build_item *items, *tmp;
	uint32_t *tail, n = 0, nt = 0, hs_used = 0, need = hw;
	struct idx_view v, ov;

	idx_view(buf, cap, &v);
	if (old) {
		idx_view(old, cap, &ov);
		if (ov.ih->nentries > cap)
			old = NULL;
		else if (ov.ih->nentries + nadded > need)
			need = ov.ih->nentries + nadded;
	}
	/* Scratch space is kept on the handle: a fresh multi-megabyte allocation per commit costs page
	 * faults comparable to the build itself. */
	if (db->bld_cap < (size_t)need + 1) {
		size_t ncap = (size_t)need + 1 + need / 4;
		void *a = realloc(db->bld_items, ncap * sizeof(*items));
		if (a)
			db->bld_items = a;
		void *b = realloc(db->bld_tmp, ncap * sizeof(*tmp));
		if (b)
			db->bld_tmp = b;
		void *c = realloc(db->bld_tail, ncap * sizeof(*tail));
		if (c)
			db->bld_tail = c;
		if (!a || !b || !c)
			return -ENOMEM;
		db->bld_cap = ncap;
	}
	items = db->bld_items;
	tmp = db->bld_tmp;
	tail = db->bld_tail;
	if (old) {
		/* Incremental: the published index is already in (k1, priority, id) order; merge the
		 * few policies this transaction added into it and leave out the ones it removed. */
		uint32_t i = 0, j = 0, on = ov.ih->nentries;

		for (uint32_t k = 0; k < nadded; k++)
			item_set(&tmp[k], added[k]);
		/* tmp doubles as the radix scratch: sort the additions at the far end of items. */
		memcpy(items + need + 1 - nadded, tmp, (size_t)nadded * sizeof(*tmp));
		sort_items(items + need + 1 - nadded, tmp, nadded);
		memcpy(tmp, items + need + 1 - nadded, (size_t)nadded * sizeof(*tmp));
		qsort(removed, nremoved, sizeof(*removed), u32_cmp);
		while (i < on || j < nadded) {
			struct build_item oi;
			if (i < on) {
				item_set(&oi, &ov.ent[i].p);
				if (id_removed(removed, nremoved, oi.id)) {
					i++;
					continue;
				}
			}
			if (j < nadded && (i >= on || item_order(&tmp[j], &oi) < 0))
				items[n++] = tmp[j++];
			else
				items[n++] = oi, i++;
		}
	} else {
		for (uint32_t i = 0; i < hw; i++) {
			const struct sadb_policy *p = sadb__pol_wview(db, i);
			if (p && p->dir >= SADB_DIR_IN && p->dir <= SADB_DIR_FWD)
				item_set(&items[n++], p);
		}
		sort_items(items, tmp, n);
	}
	memset(v.ih, 0, sizeof(*v.ih));
	v.ih->seed = seed;
	for (uint32_t i = 0; i < n;) {
		const struct sadb_policy *p0 = items[i].p;
		uint8_t fam = (uint8_t)(items[i].k1 >> 16);
		uint32_t j = i, size = 1;
		struct sadb_idx_tuple *t = &v.tup[nt++];
		unsigned nw = fam_words(fam);

		while (j < n && items[j].k1 == items[i].k1)
			j++;
		while (size < 2 * (j - i))
			size <<= 1;
		t->fam = fam;
		t->splen = p0->sel.src_plen;
		t->dplen = p0->sel.dst_plen;
		t->dir = p0->dir;
		t->min_prio = p0->priority;
		t->min_id = p0->id;
		t->n = j - i;
		t->ht_off = hs_used;
		t->ht_mask = size - 1;
		memset(&v.hs[hs_used], 0, size * sizeof(uint64_t));
		hs_used += size;
		for (uint32_t k = i; k < j; k++) {
			const struct sadb_policy *p = items[k].p;
			uint32_t e = v.ih->nentries++;
			uint64_t hv = key_hash(seed, p->sel.src.a.w, p->sel.dst.a.w, nw);
			uint32_t pos = (uint32_t)hv & t->ht_mask;

			memcpy(&v.ent[e].p, p, sizeof(*p));
			v.ent[e].next = 0;
			for (;;) {
				uint64_t *hsl = &v.hs[t->ht_off + pos];
				if (*hsl == 0) {
					*hsl = (hv >> 32) << 32 | (e + 1);
					tail[e] = e;
					break;
				}
				uint32_t head = (uint32_t)*hsl - 1;
				const struct sadb_policy *h0 = &v.ent[head].p;
				if ((*hsl >> 32) == (hv >> 32) &&
				    memcmp(h0->sel.src.a.w, p->sel.src.a.w, nw * 4) == 0 &&
				    memcmp(h0->sel.dst.a.w, p->sel.dst.a.w, nw * 4) == 0) {
					/* Same masked addresses: append, keeping (priority, id) order. */
					v.ent[tail[head]].next = e + 1;
					tail[head] = e;
					break;
				}
				pos = (pos + 1) & t->ht_mask;
			}
		}
		i = j;
	}
	/* Tuples were produced grouped by direction; order each direction's by best (priority, id). */
	for (uint32_t i = 0; i < nt;) {
		uint32_t j = i;
		uint8_t d = v.tup[i].dir;
		while (j < nt && v.tup[j].dir == d)
			j++;
		qsort(&v.tup[i], j - i, sizeof(v.tup[0]), tuple_cmp);
		v.ih->dir_start[d] = i;
		v.ih->dir_n[d] = j - i;
		i = j;
	}
	v.ih->ntuples = nt;
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

static inline bool better(uint32_t prio, uint32_t id, uint32_t bprio, uint32_t bid)
{
	return prio < bprio || (prio == bprio && id < bid);
}

#define PREFETCH_TUPLES 8

struct tuple_key {
	uint32_t s[4], d[4];
	uint64_t hv;
};

static inline void tuple_key(const struct sadb_idx_tuple *t, uint64_t seed, const struct sadb_pkt_sel *pkt,
			     struct tuple_key *k)
{
	if (t->fam == AF_INET) {
		/* The common case, without loops. */
		k->s[0] = pkt->src.a.w[0] & sadb__plen_mask(t->splen, 0);
		k->d[0] = pkt->dst.a.w[0] & sadb__plen_mask(t->dplen, 0);
		k->hv = sadb__mix64(seed ^ ((uint64_t)k->s[0] << 32 | k->d[0]));
		return;
	}
	unsigned nw = fam_words(t->fam);
	for (unsigned w = 0; w < 4; w++) {
		k->s[w] = w < nw ? pkt->src.a.w[w] & sadb__plen_mask(t->splen, w) : 0;
		k->d[w] = w < nw ? pkt->dst.a.w[w] & sadb__plen_mask(t->dplen, w) : 0;
	}
	k->hv = key_hash(seed, k->s, k->d, nw);
}

int sadb__idx_lookup(const struct sadb *db, const uint8_t *buf, uint8_t dir, const struct sadb_pkt_sel *pkt,
		     struct sadb_policy *out)
{
	struct idx_view v;
	struct tuple_key keys[PREFETCH_TUPLES];
	uint32_t start, nt, best = UINT32_MAX, bprio = UINT32_MAX, bid = UINT32_MAX;
	uint64_t seed;

	idx_view(buf, db->h->max_policy, &v);
	start = v.ih->dir_start[dir & 3];
	nt = v.ih->dir_n[dir & 3];
	seed = v.ih->seed;
	if (start > v.cap || nt > v.cap - start)
		return -EAGAIN; /* torn: the caller re-checks the buffer's generation */
	/* Hash the packet for the first tuples and prefetch their hash slots, so the cache misses of
	 * the probes overlap instead of queueing one after the other. */
	for (uint32_t k = 0; k < nt && k < PREFETCH_TUPLES; k++) {
		const struct sadb_idx_tuple *t = &v.tup[start + k];
		tuple_key(t, seed, pkt, &keys[k]);
		if (t->ht_off < v.hs_cap && t->ht_mask < v.hs_cap - t->ht_off)
			__builtin_prefetch(&v.hs[t->ht_off + ((uint32_t)keys[k].hv & t->ht_mask)]);
	}
	for (uint32_t ti = start; ti < start + nt; ti++) {
		const struct sadb_idx_tuple *t = &v.tup[ti];
		struct tuple_key kk;
		const struct tuple_key *k;
		unsigned nw = fam_words(t->fam);
		uint32_t pos, mask = t->ht_mask, fp;

		if (best != UINT32_MAX && !better(t->min_prio, t->min_id, bprio, bid))
			break;
		if (t->fam && (pkt->src.family != t->fam || pkt->dst.family != t->fam))
			continue;
		if (t->ht_off > v.hs_cap || mask >= v.hs_cap - t->ht_off)
			return -EAGAIN;
		if (ti - start < PREFETCH_TUPLES) {
			k = &keys[ti - start];
		} else {
			tuple_key(t, seed, pkt, &kk);
			k = &kk;
		}
		fp = (uint32_t)(k->hv >> 32);
		pos = (uint32_t)k->hv & mask;
		for (uint32_t probe = 0; probe <= mask; probe++, pos = (pos + 1) & mask) {
			uint64_t hsv = v.hs[t->ht_off + pos];
			uint32_t e = (uint32_t)hsv;
			const struct sadb_policy *q;

			if (hsv == 0)
				break;
			/* The fingerprint spares a look at the entry for most other keys. */
			if ((uint32_t)(hsv >> 32) != fp)
				continue;
			if (e == 0 || e > v.cap)
				return -EAGAIN;
			q = &v.ent[e - 1].p;
			if (!key_eq(q, k->s, k->d, nw))
				continue;
			/* The chain is in (priority, id) order: the first full match is this key's best. */
			for (uint32_t steps = 0; e && steps < v.cap; steps++) {
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

		if (!v0 && !v1)
			return -ENOENT;
		b = v0 && (!v1 || i0 > i1) ? 0 : 1;
		ib = b ? i1 : i0;
		idx_view(db->idx[b], db->h->max_policy, &v);
		n = v.ih->nentries;
		if (n > v.cap)
			n = v.cap;
		for (uint32_t e = 0; e < n; e++) {
			const struct sadb_policy *q = &v.ent[e].p;
			if (q->dir != dir || !sadb_selector_match(&q->sel, pkt))
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
