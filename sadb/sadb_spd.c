/* sadb/sadb_spd.c: the SPD index's readers: its size, policy lookup by packet (the tuple-space
 * search, bounded against a buffer a writer may be changing) and the writer's duplicate search in the
 * published index; the linear reference lookup the tests hold the index against. The index itself
 * and why readers need no lock are explained in sadb_spd.h; the writer's side is sadb_spd_build.c. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "sadb/sadb_spd.h"

size_t sadb__idx_size(uint32_t max_policy)
{
	size_t off[6];

	return idx_layout(max_policy, off);
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
