/* tests/unit/test_sadb_spd.c: differential test of libsadb's compiled SPD index against a deliberately
 * naive linear scan written here (its own prefix and port matching, no libsadb code), on random
 * policies (IPv4, IPv6 and family-any selectors, overlapping prefixes of every length, protocols,
 * port/ICMP/MH ranges, priority ties) and >= 100k random packets, before and after deletions; and
 * after every commit of thousands of random transactions of adds, deletes and flushes, which the
 * index follows in place; and with a reader racing such commits. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>
#include <cmocka.h>

#include "sadb/sadb.h"
#include "tests/unit/sadb_testlib.h"

static uint64_t rng = 0x243F6A8885A308D3ULL;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

struct ref_pol {
	struct sadb_policy p; /* as added, before libsadb normalises anything */
	uint32_t id;
	bool live;
};

/* The reference: bit by bit, byte by byte. */
static bool ref_prefix(const struct sadb_addr *pfx, unsigned plen, const struct sadb_addr *a)
{
	for (unsigned bit = 0; bit < plen; bit++) {
		unsigned byte = bit / 8, sh = 7 - bit % 8;
		if (((pfx->a.b[byte] >> sh) & 1) != ((a->a.b[byte] >> sh) & 1))
			return false;
	}
	return true;
}

static bool ref_match(const struct sadb_policy *p, uint8_t dir, const struct sadb_pkt_sel *k)
{
	const struct sadb_selector *s = &p->sel;
	uint8_t fam = s->src.family ? s->src.family : s->dst.family;

	if (p->dir != dir)
		return false;
	if (fam && (k->src.family != fam || k->dst.family != fam))
		return false;
	if (s->src.family && !ref_prefix(&s->src, s->src_plen, &k->src))
		return false;
	if (s->dst.family && !ref_prefix(&s->dst, s->dst_plen, &k->dst))
		return false;
	if (s->proto && s->proto != k->proto)
		return false;
	return k->sport >= s->sport_lo && k->sport <= s->sport_hi && k->dport >= s->dport_lo &&
	       k->dport <= s->dport_hi;
}

static int ref_lookup(const struct ref_pol *v, size_t n, uint8_t dir, const struct sadb_pkt_sel *k)
{
	int best = -1;

	for (size_t i = 0; i < n; i++) {
		if (!v[i].live || !ref_match(&v[i].p, dir, k))
			continue;
		if (best < 0 || v[i].p.priority < v[best].p.priority ||
		    (v[i].p.priority == v[best].p.priority && v[i].id < v[best].id))
			best = (int)i;
	}
	return best;
}

/* Addresses from a small space so prefixes overlap a lot. */
static struct sadb_addr rnd_addr(uint8_t fam)
{
	struct sadb_addr a;

	memset(&a, 0, sizeof(a));
	a.family = fam;
	if (fam == AF_INET) {
		a.a.b[0] = 10;
		a.a.b[1] = (uint8_t)rnd_below(4);
		a.a.b[2] = (uint8_t)rnd_below(8);
		a.a.b[3] = (uint8_t)rnd_below(256);
	} else {
		a.a.b[0] = 0x20;
		a.a.b[1] = 0x01;
		a.a.b[2] = 0x0d;
		a.a.b[3] = 0xb8;
		a.a.b[7] = (uint8_t)rnd_below(4);
		a.a.b[8] = (uint8_t)(rnd_below(2) << 7);
		a.a.b[15] = (uint8_t)rnd_below(16);
	}
	return a;
}

static uint8_t rnd_plen(uint8_t fam)
{
	static const uint8_t v4[] = { 8, 14, 16, 24, 27, 32 };
	static const uint8_t v6[] = { 32, 48, 64, 65, 120, 128 };

	if (rnd_below(4) == 0)
		return (uint8_t)(1 + rnd_below(fam == AF_INET ? 32 : 128));
	return fam == AF_INET ? v4[rnd_below(sizeof(v4))] : v6[rnd_below(sizeof(v6))];
}

static void rnd_range(uint16_t *lo, uint16_t *hi, bool small)
{
	switch (rnd_below(3)) {
	case 0:
		*lo = 0;
		*hi = 65535;
		break;
	case 1:
		*lo = *hi = (uint16_t)rnd_below(small ? 16 : 8);
		break;
	default:
		*lo = (uint16_t)rnd_below(8);
		*hi = (uint16_t)(*lo + rnd_below(8));
		break;
	}
}

static struct sadb_policy rnd_policy(void)
{
	struct sadb_policy p;
	uint32_t f = rnd_below(10);
	uint8_t fam = f < 6 ? AF_INET : f < 9 ? AF_INET6 : 0;
	static const uint8_t protos[] = { 0, 0, 6, 17, 1, 58, 135 };

	memset(&p, 0, sizeof(p));
	p.dir = (uint8_t)(1 + rnd_below(3));
	p.action = (uint8_t)(1 + rnd_below(3));
	p.proto = SADB_PROTO_ESP;
	p.mode = SADB_MODE_TRANSPORT;
	p.priority = rnd_below(20) * 100 + rnd_below(3); /* many ties */
	p.reqid = rnd();
	t_sel_any(&p.sel);
	if (fam) {
		/* One side may be "any" inside a family. */
		if (rnd_below(5)) {
			p.sel.src = rnd_addr(fam);
			p.sel.src_plen = rnd_plen(fam);
		}
		if (rnd_below(5)) {
			p.sel.dst = rnd_addr(fam);
			p.sel.dst_plen = rnd_plen(fam);
		}
		if (!p.sel.src.family && !p.sel.dst.family) {
			p.sel.dst = rnd_addr(fam);
			p.sel.dst_plen = (uint8_t)(fam == AF_INET ? 16 : 64);
		}
		/* Host bits left set on purpose: libsadb must mask them, the reference ignores them. */
	}
	p.sel.proto = protos[rnd_below(sizeof(protos))];
	if (!fam && !p.sel.proto)
		p.sel.proto = 17; /* a catch-all would match every packet and hide mistakes */
	if (p.sel.proto) {
		rnd_range(&p.sel.sport_lo, &p.sel.sport_hi, p.sel.proto == 1 || p.sel.proto == 135);
		rnd_range(&p.sel.dport_lo, &p.sel.dport_hi, false);
	}
	return p;
}

static struct sadb_pkt_sel rnd_packet(const struct ref_pol *v, size_t n)
{
	struct sadb_pkt_sel k;
	static const uint8_t protos[] = { 6, 17, 1, 58, 135, 47 };
	uint8_t fam = rnd_below(3) ? AF_INET : AF_INET6;

	memset(&k, 0, sizeof(k));
	if (n && rnd_below(2)) {
		/* Aim at some policy: take its family and addresses, randomise the host bits. */
		const struct sadb_policy *p = &v[rnd_below((uint32_t)n)].p;
		uint8_t pf = p->sel.src.family ? p->sel.src.family : p->sel.dst.family;
		if (pf)
			fam = pf;
		k.src = rnd_addr(fam);
		k.dst = rnd_addr(fam);
		if (p->sel.src.family == fam)
			for (unsigned bit = 0; bit < p->sel.src_plen; bit++) {
				unsigned byte = bit / 8, sh = 7 - bit % 8;
				k.src.a.b[byte] = (uint8_t)((k.src.a.b[byte] & ~(1u << sh)) | (p->sel.src.a.b[byte] & (1u << sh)));
			}
		if (p->sel.dst.family == fam)
			for (unsigned bit = 0; bit < p->sel.dst_plen; bit++) {
				unsigned byte = bit / 8, sh = 7 - bit % 8;
				k.dst.a.b[byte] = (uint8_t)((k.dst.a.b[byte] & ~(1u << sh)) | (p->sel.dst.a.b[byte] & (1u << sh)));
			}
		k.proto = p->sel.proto ? p->sel.proto : protos[rnd_below(sizeof(protos))];
		k.sport = (uint16_t)(p->sel.sport_lo + rnd_below((uint32_t)(p->sel.sport_hi - p->sel.sport_lo) + 1));
		k.dport = (uint16_t)(p->sel.dport_lo + rnd_below((uint32_t)(p->sel.dport_hi - p->sel.dport_lo) + 1));
	} else {
		k.src = rnd_addr(fam);
		k.dst = rnd_addr(fam);
		/* Sometimes outside the policies' address space altogether. */
		if (rnd_below(2))
			k.src.a.b[0] ^= 1;
		if (rnd_below(2))
			k.dst.a.b[0] ^= 1;
		k.proto = protos[rnd_below(sizeof(protos))];
		k.sport = (uint16_t)rnd_below(20);
		k.dport = (uint16_t)rnd_below(20);
	}
	return k;
}

static void check_lookups(struct sadb *db, const struct ref_pol *v, size_t n, unsigned count, unsigned *hits)
{
	for (unsigned i = 0; i < count; i++) {
		struct sadb_pkt_sel k = rnd_packet(v, n);
		uint8_t dir = (uint8_t)(1 + rnd_below(3));
		struct sadb_policy out, lin;
		int want = ref_lookup(v, n, dir, &k);
		int r = sadb_policy_lookup(db, dir, &k, &out);
		int rl = i % 8 ? r : sadb_policy_lookup_linear(db, dir, &k, &lin);

		if (i % 8)
			lin = out;

		if (want < 0) {
			if (r != -ENOENT || rl != -ENOENT)
				fail_msg("lookup %u: index gave %d (id %u), linear %d, reference none", i, r,
					 r ? 0 : out.id, rl);
			continue;
		}
		if (r != 0 || out.id != v[want].id)
			fail_msg("lookup %u dir %u: index gave %d id %u, reference id %u (priority %u)", i, dir, r,
				 r ? 0 : out.id, v[want].id, v[want].p.priority);
		if (rl != 0 || lin.id != out.id)
			fail_msg("lookup %u: linear reference in libsadb disagrees", i);
		if (out.reqid != v[want].p.reqid || out.priority != v[want].p.priority)
			fail_msg("lookup %u: returned record differs from what was added", i);
		(*hits)++;
	}
}

static void run_differential(size_t npol, unsigned nlookups, bool bulk)
{
	const char *path = t_path("spd");
	struct sadb *db = t_open(path, 16, (uint32_t)npol + 16);
	struct ref_pol *v = calloc(npol, sizeof(*v));
	unsigned hits = 0;
	size_t n = 0;

	assert_non_null(v);
	if (bulk)
		assert_int_equal(sadb_txn_begin(db), 0);
	while (n < npol) {
		struct sadb_policy p = rnd_policy();
		int r = sadb_policy_add(db, &p, &v[n].id);
		if (r == -EEXIST)
			continue;
		if (r)
			fail_msg("add: %d %s", r, sadb_errmsg(db));
		v[n].p = p;
		v[n].live = true;
		n++;
	}
	if (bulk)
		assert_int_equal(sadb_txn_commit(db), 0);
	check_lookups(db, v, n, nlookups, &hits);
	/* Delete a third (one at a time: each publishes a rebuilt index) and check again. */
	for (size_t i = 0; i < n; i += 3) {
		assert_int_equal(sadb_policy_delete(db, v[i].id), 0);
		v[i].live = false;
	}
	check_lookups(db, v, n, nlookups / 4, &hits);
	print_message("%zu policies, %u lookups, %u matched a policy\n", npol, nlookups + nlookups / 4, hits);
	/* The test must exercise both outcomes to mean anything. */
	assert_true(hits > nlookups / 10);
	assert_true(hits < nlookups + nlookups / 4);
	sadb_close(db);
	free(v);
}


static void test_spd_differential_small(void **state)
{
	run_differential(300, 40000, false);
}

static void test_spd_differential_large(void **state)
{
	run_differential(2000, 100000, true);
}

/* Random changes in random transactions, checked after every commit: the index is changed in place
 * commit by commit (the inactive buffer brought up by the previous commit's changes and this one's),
 * and rebuilt whole after large transactions and flushes; whichever happened, every lookup must give
 * what the reference gives. Deletes aim at the best match of a packet (a tuple's best, whose
 * successor the index must find), priorities tie, prefix lengths make many tuples, and now and then
 * a transaction is aborted (the index must not move) or the handle reopened (the next writer
 * continues from what the segment says). */
#define INC_CAP 400

struct inc_state {
	struct ref_pol v[INC_CAP];   /* the live policies */
	size_t n;
	unsigned lookups, hits;
};

static void inc_del_at(struct inc_state *st, size_t i)
{
	st->v[i] = st->v[--st->n];
}

static void inc_check(struct sadb *db, struct inc_state *st, unsigned count, unsigned round)
{
	for (unsigned i = 0; i < count; i++) {
		struct sadb_pkt_sel k = rnd_packet(st->v, st->n);
		uint8_t dir = (uint8_t)(1 + rnd_below(3));
		struct sadb_policy out, lin;
		int want = ref_lookup(st->v, st->n, dir, &k);
		int r = sadb_policy_lookup(db, dir, &k, &out);
		int rl = sadb_policy_lookup_linear(db, dir, &k, &lin);

		st->lookups++;
		if (want < 0) {
			if (r != -ENOENT || rl != -ENOENT)
				fail_msg("round %u lookup %u: index gave %d (id %u), linear %d (id %u), reference none",
					 round, i, r, r ? 0 : out.id, rl, rl ? 0 : lin.id);
			continue;
		}
		if (r != 0 || out.id != st->v[want].id || rl != 0 || lin.id != out.id)
			fail_msg("round %u lookup %u dir %u: index gave %d id %u, linear %d id %u, reference id %u "
				 "(priority %u, %zu policies)", round, i, dir, r, r ? 0 : out.id, rl, rl ? 0 : lin.id,
				 st->v[want].id, st->v[want].p.priority, st->n);
		if (out.reqid != st->v[want].p.reqid)
			fail_msg("round %u lookup %u: returned record differs from what was added", round, i);
		st->hits++;
	}
}

/* One change: an add, a delete (of a packet's best match, of a random policy, by id or by
 * selector) or, rarely, a flush. */
static void inc_change(struct sadb *db, struct inc_state *st, bool big, bool in_txn)
{
	uint32_t c = rnd_below(100);

	if (st->n > 0 && c < 2 && !big) {
		assert_true(sadb_policy_flush(db) >= 1);
		st->n = 0;
		return;
	}
	if (st->n > 0 && (c < 45 || st->n >= INC_CAP - 8)) {
		size_t i = rnd_below((uint32_t)st->n);
		if (c < 25) {
			/* The best match of a packet aimed at the policies. */
			for (unsigned tries = 0; tries < 8; tries++) {
				struct sadb_pkt_sel k = rnd_packet(st->v, st->n);
				int w = ref_lookup(st->v, st->n, (uint8_t)(1 + rnd_below(3)), &k);
				if (w >= 0) {
					i = (size_t)w;
					break;
				}
			}
		}
		if (c % 5 == 0 && !in_txn) {
			struct sadb_policy p = st->v[i].p;
			struct sadb_policy got;
			/* By selector: one policy with that selector goes (not necessarily st->v[i], the
			 * priority is not part of the key); find which it was. */
			assert_int_equal(sadb_policy_delete_sel(db, p.dir, &p.sel), 0);
			for (size_t j = 0; j < st->n; j++) {
				if (sadb_policy_get(db, st->v[j].id, &got) == -ENOENT) {
					inc_del_at(st, j);
					return;
				}
			}
			fail_msg("delete by selector removed nothing the reference knows");
		}
		assert_int_equal(sadb_policy_delete(db, st->v[i].id), 0);
		inc_del_at(st, i);
		return;
	}
	for (;;) {
		struct sadb_policy p = rnd_policy();
		uint32_t id;
		int r;
		if (rnd_below(4) == 0 && st->n) {
			/* The same selector as a live policy with another priority: one chain, two entries. */
			p.sel = st->v[rnd_below((uint32_t)st->n)].p.sel;
			p.dir = st->v[rnd_below((uint32_t)st->n)].p.dir;
		}
		r = sadb_policy_add(db, &p, &id);
		if (r == -EEXIST)
			continue;
		if (r)
			fail_msg("add: %d %s", r, sadb_errmsg(db));
		st->v[st->n].p = p;
		st->v[st->n].id = id;
		st->v[st->n].live = true;
		st->n++;
		return;
	}
}

static void test_spd_incremental_random(void **state)
{
	const char *path = t_path("spdinc");
	struct sadb *db = t_open(path, 4, INC_CAP + 16);
	static struct inc_state st, saved;
	unsigned rounds = 3000, aborts = 0, big = 0;

	(void)state;
	for (unsigned round = 0; round < rounds; round++) {
		uint32_t kind = rnd_below(100);
		if (kind < 60) {
			inc_change(db, &st, false, false); /* a transaction of its own */
		} else {
			/* Explicit: mostly a few changes, sometimes a large one (rebuilt whole). */
			unsigned len = kind < 95 ? 1 + rnd_below(6) : 60 + rnd_below(120);
			bool abort_it = rnd_below(12) == 0;
			saved = st;
			assert_int_equal(sadb_txn_begin(db), 0);
			for (unsigned k = 0; k < len; k++)
				inc_change(db, &st, len > 8, true);
			if (abort_it) {
				sadb_txn_abort(db);
				st = saved;
				aborts++;
			} else {
				assert_int_equal(sadb_txn_commit(db), 0);
				big += len > 8;
			}
		}
		if (rnd_below(200) == 0) {
			sadb_close(db);
			db = t_open(path, 4, INC_CAP + 16);
		}
		inc_check(db, &st, 24, round);
	}
	print_message("%u transactions (%u aborted, %u large), %u lookups, %u matched a policy\n", rounds, aborts,
		      big, st.lookups, st.hits);
	assert_true(st.hits > st.lookups / 10);
	assert_true(st.hits < st.lookups);
	assert_true(aborts > 0 && big > 0);
	sadb_close(db);
}

/* Readers racing the writer while it changes the inactive buffer in place: a reader may still be in
 * that buffer (it started before the previous commit) and must notice and retry, never answer from
 * a half-changed index; and one that loads the two buffers' tags across two commits (one WRITING
 * for each) must try again, not conclude that there is no index. A stable set of policies gives the
 * probe packets fixed answers; the writer churns policies in the same tuples that never match the
 * probes but have better priorities (so tuples move in the order, their best changes, chains and
 * hash slots come and go, the hash table grows and shrinks), one commit each and in small
 * transactions. Every answer must be the fixed one. */
#define RACE_STABLE 6
#define RACE_SECONDS 2

struct race {
	struct sadb *db;
	struct sadb_pkt_sel k[RACE_STABLE];
	uint32_t want[RACE_STABLE];
	_Atomic int stop;
	_Atomic unsigned long lookups, wrong;
	char first[200];
};

static const uint8_t race_plen[RACE_STABLE][2] = { { 8, 16 }, { 16, 16 }, { 24, 16 }, { 24, 24 }, { 32, 32 }, { 0, 24 } };

static void *race_reader(void *arg)
{
	struct race *ra = arg;

	for (unsigned i = 0; !atomic_load(&ra->stop); i++) {
		struct sadb_policy out;
		unsigned j = i % RACE_STABLE;
		int r = sadb_policy_lookup(ra->db, SADB_DIR_OUT, &ra->k[j], &out);

		atomic_fetch_add(&ra->lookups, 1);
		if (r != 0 || out.id != ra->want[j]) {
			if (atomic_fetch_add(&ra->wrong, 1) == 0)
				snprintf(ra->first, sizeof(ra->first), "probe %u: %d id %u, expected id %u", j, r,
					 r ? 0 : out.id, ra->want[j]);
		}
	}
	return NULL;
}

static void test_spd_incremental_race(void **state)
{
	const char *path = t_path("spdrace");
	struct sadb *w = t_open(path, 4, 1024), *rd = NULL;
	static struct race ra;
	uint32_t live[512], nlive = 0;
	pthread_t th;
	struct timespec t0, now;
	char msg[256];
	unsigned long commits = 0;

	(void)state;
	for (unsigned j = 0; j < RACE_STABLE; j++) {
		struct sadb_policy p = t_pol(SADB_DIR_OUT, "10.1.2.3", race_plen[j][0], "10.7.8.9", race_plen[j][1],
					     5000 + j);
		if (race_plen[j][0] == 0)
			memset(&p.sel.src, 0, sizeof(p.sel.src));
		p.sel.proto = 17;
		p.sel.dport_lo = p.sel.dport_hi = (uint16_t)(100 + j);
		assert_int_equal(sadb_policy_add(w, &p, &ra.want[j]), 0);
		ra.k[j] = t_pkt("10.1.2.3", "10.7.8.9", 17, 1, (uint16_t)(100 + j));
	}
	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &rd, msg, sizeof(msg)), 0);
	ra.db = rd;
	assert_int_equal(pthread_create(&th, NULL, race_reader, &ra), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bool txn = rnd_below(4) == 0;
		unsigned len = txn ? 1 + rnd_below(5) : 1;

		if (txn)
			assert_int_equal(sadb_txn_begin(w), 0);
		for (unsigned k = 0; k < len; k++) {
			/* Up to 500 policies, then down to none again: the hash table doubles and halves. */
			bool grow = (commits / 2000) % 2 == 0;
			if (nlive && (rnd_below(100) < (grow ? 30u : 70u) || nlive == 512)) {
				uint32_t i = rnd_below(nlive);
				assert_int_equal(sadb_policy_delete(w, live[i]), 0);
				live[i] = live[--nlive];
			} else {
				unsigned j = rnd_below(RACE_STABLE);
				char src[32], dst[32];
				struct sadb_policy p;
				int r;
				/* Same prefix lengths as a stable policy, never the probes' addresses. */
				snprintf(src, sizeof(src), "10.%u.%u.%u", 100 + rnd_below(100), rnd_below(256), rnd_below(256));
				snprintf(dst, sizeof(dst), "10.%u.%u.%u", 100 + rnd_below(100), rnd_below(256), rnd_below(256));
				p = t_pol(SADB_DIR_OUT, src, race_plen[j][0], dst, race_plen[j][1], rnd_below(6000));
				if (race_plen[j][0] == 0)
					memset(&p.sel.src, 0, sizeof(p.sel.src));
				r = sadb_policy_add(w, &p, &live[nlive]);
				if (r == -EEXIST)
					continue;
				assert_int_equal(r, 0);
				nlive++;
			}
		}
		if (txn)
			assert_int_equal(sadb_txn_commit(w), 0);
		commits++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < RACE_SECONDS && !atomic_load(&ra.wrong));
	atomic_store(&ra.stop, 1);
	pthread_join(th, NULL);
	print_message("%lu commits, %lu lookups racing them, %lu wrong\n", commits, atomic_load(&ra.lookups),
		      atomic_load(&ra.wrong));
	if (atomic_load(&ra.wrong))
		fail_msg("a reader racing the commits got a wrong answer: %s", ra.first);
	assert_true(commits > 1000 && atomic_load(&ra.lookups) > 1000);
	sadb_close(rd);
	sadb_close(w);
}

/* Hand-picked cases a random test could miss. */
static void test_spd_edges(void **state)
{
	const char *path = t_path("spdedge");
	struct sadb *db = t_open(path, 4, 64);
	struct sadb_policy out;
	uint32_t a, b, c;

	/* Same selector, different priorities: both kept, better one wins, then the other. */
	struct sadb_policy p = t_pol(SADB_DIR_IN, "10.0.0.0", 8, NULL, 0, 10);
	assert_int_equal(sadb_policy_add(db, &p, &a), 0);
	p.priority = 5;
	assert_int_equal(sadb_policy_add(db, &p, &b), 0);
	struct sadb_pkt_sel k = t_pkt("10.1.1.1", "192.0.2.1", 6, 1, 1);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), 0);
	assert_int_equal(out.id, b);
	assert_int_equal(sadb_policy_delete(db, b), 0);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), 0);
	assert_int_equal(out.id, a);
	/* A /0 policy and an exact /32 host policy in the same direction. */
	struct sadb_policy host = t_pol(SADB_DIR_IN, "10.1.1.1", 32, "192.0.2.1", 32, 10);
	assert_int_equal(sadb_policy_add(db, &host, &c), 0);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), 0);
	assert_int_equal(out.id, a); /* equal priority: the lower id */
	k = t_pkt("10.1.1.2", "192.0.2.1", 6, 1, 1);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), 0);
	assert_int_equal(out.id, a);
	/* Mixed families never cross. */
	k = t_pkt("::ffff:10.1.1.1", "::ffff:192.0.2.1", 6, 1, 1);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), -ENOENT);
	sadb_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spd_edges),
		cmocka_unit_test(test_spd_differential_small),
		cmocka_unit_test(test_spd_differential_large),
		cmocka_unit_test(test_spd_incremental_random),
		cmocka_unit_test(test_spd_incremental_race),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
