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
 * not using, and published with the generation (sadb.c). Rebuilding is O(policies) per committing
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

const struct sadb_policy *sadb__pol_wview(const struct sadb *db, uint32_t i);

struct idx_view {
	struct sadb_idx_hdr *ih;
	struct sadb_idx_tuple *tup;
	uint32_t *hs;
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
	v->hs = (uint32_t *)(buf + o);
	o += (size_t)v->hs_cap * sizeof(uint32_t);
	o = (o + 63) & ~(size_t)63;
	v->ent = (struct sadb_idx_entry *)(buf + o);
}

size_t sadb__idx_size(uint32_t max_policy)
{
	size_t o = off_tuples();

	o += (size_t)max_policy * sizeof(struct sadb_idx_tuple);
	o += (size_t)4 * max_policy * sizeof(uint32_t);
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
	const struct sadb_policy *p;
	uint8_t fam;
};

static int item_cmp(const void *a, const void *b)
{
	const struct build_item *x = a, *y = b;
	const struct sadb_policy *p = x->p, *q = y->p;

	if (p->dir != q->dir)
		return p->dir < q->dir ? -1 : 1;
	if (x->fam != y->fam)
		return x->fam < y->fam ? -1 : 1;
	if (p->sel.src_plen != q->sel.src_plen)
		return p->sel.src_plen < q->sel.src_plen ? -1 : 1;
	if (p->sel.dst_plen != q->sel.dst_plen)
		return p->sel.dst_plen < q->sel.dst_plen ? -1 : 1;
	if (p->priority != q->priority)
		return p->priority < q->priority ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

static int tuple_cmp(const void *a, const void *b)
{
	const struct sadb_idx_tuple *x = a, *y = b;

	if (x->min_prio != y->min_prio)
		return x->min_prio < y->min_prio ? -1 : 1;
	return x->min_id < y->min_id ? -1 : x->min_id > y->min_id;
}

int sadb__idx_build(struct sadb *db, uint8_t *buf, uint64_t seed)
{
	uint32_t cap = db->h->max_policy;
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	struct build_item *items;
	uint32_t *tail, n = 0, nt = 0, hs_used = 0;
	struct idx_view v;

	idx_view(buf, cap, &v);
	items = malloc(((size_t)hw + 1) * sizeof(*items));
	tail = malloc(((size_t)hw + 1) * sizeof(*tail));
	if (!items || !tail) {
		free(items);
		free(tail);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < hw; i++) {
		const struct sadb_policy *p = sadb__pol_wview(db, i);
		if (p && p->dir >= SADB_DIR_IN && p->dir <= SADB_DIR_FWD) {
			items[n].p = p;
			items[n].fam = sadb__sel_family(&p->sel);
			n++;
		}
	}
	qsort(items, n, sizeof(*items), item_cmp);
	memset(v.ih, 0, sizeof(*v.ih));
	v.ih->seed = seed;
	for (uint32_t i = 0; i < n;) {
		const struct sadb_policy *p0 = items[i].p;
		uint8_t fam = items[i].fam;
		uint32_t j = i, size = 1;
		struct sadb_idx_tuple *t = &v.tup[nt++];
		unsigned nw = fam_words(fam);

		while (j < n && items[j].p->dir == p0->dir && items[j].fam == fam &&
		       items[j].p->sel.src_plen == p0->sel.src_plen && items[j].p->sel.dst_plen == p0->sel.dst_plen)
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
		memset(&v.hs[hs_used], 0, size * sizeof(uint32_t));
		hs_used += size;
		for (uint32_t k = i; k < j; k++) {
			const struct sadb_policy *p = items[k].p;
			uint32_t e = v.ih->nentries++;
			uint64_t hv = key_hash(seed, p->sel.src.a.w, p->sel.dst.a.w, nw);
			uint32_t pos = (uint32_t)hv & t->ht_mask;

			memcpy(&v.ent[e].p, p, sizeof(*p));
			v.ent[e].next = 0;
			for (;;) {
				uint32_t *hsl = &v.hs[t->ht_off + pos];
				if (*hsl == 0) {
					*hsl = e + 1;
					tail[e] = e;
					break;
				}
				const struct sadb_policy *h0 = &v.ent[*hsl - 1].p;
				if (memcmp(h0->sel.src.a.w, p->sel.src.a.w, nw * 4) == 0 &&
				    memcmp(h0->sel.dst.a.w, p->sel.dst.a.w, nw * 4) == 0) {
					/* Same masked addresses: append, keeping (priority, id) order. */
					uint32_t head = *hsl - 1;
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
	free(items);
	free(tail);
	return 0;
}

static inline bool better(uint32_t prio, uint32_t id, uint32_t bprio, uint32_t bid)
{
	return prio < bprio || (prio == bprio && id < bid);
}

int sadb__idx_lookup(const struct sadb *db, const uint8_t *buf, uint8_t dir, const struct sadb_pkt_sel *pkt,
		     struct sadb_policy *out)
{
	struct idx_view v;
	uint32_t start, nt, best = UINT32_MAX, bprio = UINT32_MAX, bid = UINT32_MAX;
	uint64_t seed;

	idx_view(buf, db->h->max_policy, &v);
	start = v.ih->dir_start[dir & 3];
	nt = v.ih->dir_n[dir & 3];
	seed = v.ih->seed;
	if (start > v.cap || nt > v.cap - start)
		return -EAGAIN; /* torn: the caller re-checks the buffer's generation */
	for (uint32_t ti = start; ti < start + nt; ti++) {
		const struct sadb_idx_tuple *t = &v.tup[ti];
		uint32_t s[4] = { 0, 0, 0, 0 }, d[4] = { 0, 0, 0, 0 };
		unsigned nw = fam_words(t->fam);
		uint32_t pos, mask = t->ht_mask;
		uint64_t hv;

		if (best != UINT32_MAX && !better(t->min_prio, t->min_id, bprio, bid))
			break;
		if (t->fam && (pkt->src.family != t->fam || pkt->dst.family != t->fam))
			continue;
		if (t->ht_off > v.hs_cap || mask >= v.hs_cap - t->ht_off)
			return -EAGAIN;
		for (unsigned w = 0; w < nw; w++) {
			s[w] = pkt->src.a.w[w] & sadb__plen_mask(t->splen, w);
			d[w] = pkt->dst.a.w[w] & sadb__plen_mask(t->dplen, w);
		}
		hv = key_hash(seed, s, d, nw);
		pos = (uint32_t)hv & mask;
		for (uint32_t probe = 0; probe <= mask; probe++, pos = (pos + 1) & mask) {
			uint32_t e = v.hs[t->ht_off + pos];
			const struct sadb_policy *q;

			if (e == 0)
				break;
			if (e > v.cap)
				return -EAGAIN;
			q = &v.ent[e - 1].p;
			if (memcmp(q->sel.src.a.w, s, nw * 4) || memcmp(q->sel.dst.a.w, d, nw * 4))
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
