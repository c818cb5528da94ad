/* sadb/sadb_txn.c: libsadb's writer side of the multi-version slots (sadb_int.h) and the transaction
 * around them: the robust writer lock, the txn log, the commit point, the normalisation after it
 * (the record slots' and the home agent record's) and the crash recovery that replays it (or undoes
 * a transaction that never reached it), and the SPD index brought up to date in the inactive buffer
 * before each commit (sadb_spd_build.c). The writers (sadb_sa.c, sadb_policy.c, sadb_home.c) only
 * ever change records through the primitives here, and nothing here calls back into them: what a
 * commit or an abort means for a writer's own state (the policy writer's selector map) is left as
 * a flag it reads on its next use. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

/* Log slot i as touched by this transaction, before anything about it changes. */
void sadb__touch(struct sadb *db, bool pol, uint32_t i)
{
	struct sadb_hdr *h = db->h;
	uint64_t *lgen = pol ? &db->pol_meta[i].lgen : &db->sa_meta[i].lgen;
	uint32_t n;

	if (*lgen == h->txn.gen)
		return;
	n = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);
	db->log[n] = i | (pol ? SADB_LOG_POLICY : 0);
	atomic_store_explicit(&h->txn.nlog, n + 1, memory_order_release);
	*lgen = h->txn.gen;
}

/* Every tag change bumps the slot's seq first, so a reader comparing seq before and after sees
 * that the pair of tags it loaded may not describe one instant. seq is never left "odd": a writer
 * stopped half-way makes nobody wait. */
static void set_tag(const struct sadb_tbl *t, uint32_t i, int ci, uint64_t v)
{
	atomic_fetch_add_explicit(sadb__slot_seq(t, i), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&sadb__slot_tags(t, i)[ci], v, memory_order_relaxed);
	/* Readers that see any byte written after this store must see the new tag. */
	atomic_thread_fence(memory_order_release);
}

/* Write this transaction's version of slot i into the copy readers are not using. */
void sadb__write_copy(struct sadb *db, const struct sadb_tbl *t, uint32_t i, bool used, const void *rec)
{
	_Atomic uint64_t *tag = sadb__slot_tags(t, i);
	uint64_t n = db->h->txn.gen;
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_relaxed);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_relaxed);
	struct sadb_copy_hdr *c;
	size_t half = t->rec_size / 2;
	int ci;

	sadb__touch(db, t->pol, i);
	if (t0 == n)
		ci = 0;
	else if (t1 == n)
		ci = 1;
	else
		ci = t0 ? 1 : 0; /* outside a transaction at most one copy is tagged: the committed one */
	set_tag(t, i, ci, SADB_TAG_WRITING);
	c = sadb__slot_copy(t, i, ci);
	c->used = used;
	if (used) {
		memcpy(sadb__copy_rec(c), rec, half);
		sadb__test_stop(db, SADB_STOP_COPY);
		memcpy((uint8_t *)sadb__copy_rec(c) + half, (const uint8_t *)rec + half, t->rec_size - half);
	} else {
		explicit_bzero(sadb__copy_rec(c), t->rec_size);
	}
	atomic_thread_fence(memory_order_release);
	set_tag(t, i, ci, n);
}

static void wipe_copy(const struct sadb_tbl *t, uint32_t i, int ci)
{
	_Atomic uint64_t *tag = sadb__slot_tags(t, i);
	struct sadb_copy_hdr *c = sadb__slot_copy(t, i, ci);

	if (atomic_load_explicit(&tag[ci], memory_order_relaxed) == 0 && !c->used)
		return;
	set_tag(t, i, ci, SADB_TAG_WRITING);
	atomic_thread_fence(memory_order_release);
	c->used = 0;
	explicit_bzero(sadb__copy_rec(c), t->rec_size);
	atomic_thread_fence(memory_order_release);
	set_tag(t, i, ci, 0);
}

/* ---- normalisation: after commit (redo) or instead of it (undo) ---- */

static void normalize(struct sadb *db, uint32_t entry, bool release_freed)
{
	bool pol = entry & SADB_LOG_POLICY;
	uint32_t i = entry & ~SADB_LOG_POLICY;
	struct sadb_tbl t = pol ? sadb__pol_tbl(db) : sadb__sa_tbl(db);
	_Atomic uint64_t *tag;
	uint64_t g = sadb__cur_gen(db), tc[2];
	uint32_t used;
	int cur;

	if (i >= t.cap)
		return;
	tag = sadb__slot_tags(&t, i);
	/* Copies of a transaction that never committed are garbage. */
	for (int c = 0; c < 2; c++) {
		tc[c] = atomic_load_explicit(&tag[c], memory_order_relaxed);
		if (tc[c] == SADB_TAG_WRITING || tc[c] > g) {
			wipe_copy(&t, i, c);
			tc[c] = 0;
		}
	}
	cur = sadb__newest(tc[0], tc[1], g);
	/* The superseded copy goes (its keys with it); a deleted record leaves no copy at all. */
	for (int c = 0; c < 2; c++)
		if (c != cur && tc[c])
			wipe_copy(&t, i, c);
	if (cur >= 0 && !sadb__slot_copy(&t, i, cur)->used) {
		wipe_copy(&t, i, cur);
		cur = -1;
	}
	used = cur >= 0;
	if (!pol) {
		struct sadb_sa_meta *m = &db->sa_meta[i];
		uint64_t want = 0;
		if (used) {
			const struct sadb_sa *sa = sadb__copy_rec(sadb__slot_copy(&t, i, cur));
			want = sadb__sa_key_hash(db->h, sa->spi, sa->proto, &sa->dst);
		}
		for (int k = 0; k < 2; k++) {
			if (m->h[k] && m->h[k] != want) {
				sadb__hash_remove(db, m->h[k], i);
				m->h[k] = 0;
			}
		}
		if (want && m->h[0] != want && m->h[1] != want)
			m->h[m->h[0] ? 1 : 0] = want;
		if (want)
			sadb__hash_insert(db, want, i);
		if (!used && m->used)
			m->freed_gen = g; /* the generation that published the deletion */
		m->used = used;
		m->lgen = 0;
	} else {
		db->pol_meta[i].used = used;
		db->pol_meta[i].lgen = 0;
	}
	/* A slot free now was either freed by this transaction or taken from the ring by it. */
	if (release_freed && !used)
		sadb__slot_release(db, pol, i);
}

/* ---- lock and transactions ---- */

static void recover(struct sadb *db);

static int wlock(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	struct timespec ts;
	int r;

	if (!(db->flags & SADB_RDWR)) {
		sadb__set_err(db, "SADB opened read-only: writer calls need SADB_RDWR");
		return -EPERM;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += db->lock_timeout_ms / 1000;
	ts.tv_nsec += (long)(db->lock_timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	r = pthread_mutex_timedlock(&h->lock, &ts);
	if (r == EOWNERDEAD) {
		/* The previous writer died holding the lock: finish or undo its transaction
		 * before anybody writes again. */
		recover(db);
		r = pthread_mutex_consistent(&h->lock);
		if (r) {
			pthread_mutex_unlock(&h->lock);
			sadb__set_err(db, "cannot make the SADB lock consistent: %s", strerror(r));
			return -r;
		}
	} else if (r == ETIMEDOUT) {
		sadb__set_err(db, "SADB writer lock held by pid %d for more than %u ms (stopped or stuck writer?)",
			      (int)atomic_load(&h->owner_pid), db->lock_timeout_ms);
		return -ETIMEDOUT;
	} else if (r == EDEADLK) {
		sadb__set_err(db, "this thread already holds the SADB writer lock (a transaction open on "
			      "another handle?)");
		return -EDEADLK;
	} else if (r) {
		sadb__set_err(db, "cannot take the SADB writer lock: %s", strerror(r));
		return -r;
	} else if (atomic_load_explicit(&h->txn.state, memory_order_relaxed) != SADB_TXN_IDLE) {
		recover(db);
	}
	atomic_store(&h->owner_pid, (int32_t)getpid());
	sadb__test_stop(db, SADB_STOP_LOCKED);
	return 0;
}

static void wunlock(struct sadb *db)
{
	atomic_store(&db->h->owner_pid, 0);
	pthread_mutex_unlock(&db->h->lock);
}

static void txn_start(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	struct sadb_txn_state *x = &h->txn;

	x->gen = sadb__cur_gen(db) + 1;
	atomic_store_explicit(&x->nlog, 0, memory_order_relaxed);
	x->jcount0 = atomic_load_explicit(&h->jcount, memory_order_relaxed);
	x->jn = 0;
	x->sa_free_head0 = h->sa_free_head;
	x->pol_free_head0 = h->pol_free_head;
	x->sa_hwm0 = atomic_load_explicit(&h->sa_hwm, memory_order_relaxed);
	x->pol_hwm0 = atomic_load_explicit(&h->pol_hwm, memory_order_relaxed);
	x->n_sa = atomic_load_explicit(&h->n_sa, memory_order_relaxed);
	x->n_policy = atomic_load_explicit(&h->n_policy, memory_order_relaxed);
	x->pol_changed = 0;
	/* Everything recovery needs is in place before the transaction is marked active. */
	atomic_store_explicit(&x->state, SADB_TXN_ACTIVE, memory_order_release);
	db->txn_open = true;
}

/* Entries in the txn log, never more than it can hold (the count is in the segment). */
static uint32_t log_len(const struct sadb_hdr *h)
{
	uint32_t n = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);

	return n > h->log_cap ? h->log_cap : n;
}

/* The home agent records' copies (sadb_home.c) after commit or instead of it (idempotent): a copy
 * tagged WRITING or above the committed generation is cleared. */
static void ha_normalize(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	uint64_t g = sadb__cur_gen(db);

	for (unsigned r = 0; r < SADB_HA_MAX; r++)
		for (int c = 0; c < 2; c++) {
			uint64_t t = atomic_load_explicit(&h->ha_tag[r][c], memory_order_relaxed);
			if (t == SADB_TAG_WRITING || t > g) {
				atomic_store_explicit(&h->ha_tag[r][c], 0, memory_order_release);
				memset(&h->ha[r][c], 0, sizeof(h->ha[r][c]));
				h->ha_used[r][c] = 0;
			}
		}
}

/* Undo a transaction that did not reach its commit point. */
static void txn_undo(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	uint32_t n = log_len(h);
	uint64_t g = sadb__cur_gen(db);

	for (uint32_t k = 0; k < n; k++)
		normalize(db, db->log[k], false);
	ha_normalize(db);
	atomic_store_explicit(&h->sa_hwm, h->txn.sa_hwm0, memory_order_release);
	atomic_store_explicit(&h->pol_hwm, h->txn.pol_hwm0, memory_order_release);
	h->sa_free_head = h->txn.sa_free_head0;
	h->pol_free_head = h->txn.pol_free_head0;
	for (int b = 0; b < 2; b++) {
		uint64_t ig = atomic_load_explicit(&h->idx_gen[b], memory_order_relaxed);
		if (ig > g)
			atomic_store_explicit(&h->idx_gen[b], 0, memory_order_release);
	}
}

/* Everything after the commit point; idempotent, so recovery can run it again. */
static void txn_finish(struct sadb *db, bool release_freed)
{
	struct sadb_hdr *h = db->h;
	uint32_t n = log_len(h);

	/* The journal after the generation: a reader told of a change finds it published. */
	atomic_store_explicit(&h->jcount, h->txn.jcount0 + h->txn.jn, memory_order_release);
	atomic_store_explicit(&h->n_sa, h->txn.n_sa, memory_order_relaxed);
	atomic_store_explicit(&h->n_policy, h->txn.n_policy, memory_order_relaxed);
	for (uint32_t k = 0; k < n; k++)
		normalize(db, db->log[k], release_freed);
	ha_normalize(db);
}

static void recover(struct sadb *db)
{
	struct sadb_hdr *h = db->h;

	if (atomic_load_explicit(&h->txn.state, memory_order_acquire) == SADB_TXN_ACTIVE) {
		if (sadb__cur_gen(db) >= h->txn.gen)
			txn_finish(db, false);
		else
			txn_undo(db);
	}
	sadb__rebuild_free(db, false);
	sadb__rebuild_free(db, true);
	atomic_store_explicit(&h->txn.state, SADB_TXN_IDLE, memory_order_release);
}

/* The transaction is over (committed or thrown away): recovery has nothing left to do. */
static void txn_end(struct sadb *db)
{
	atomic_store_explicit(&db->h->txn.state, SADB_TXN_IDLE, memory_order_release);
	db->txn_open = false;
	/* the writer's selector map may hold policies the transaction undid: rebuilt on next use
	 * (sadb_policy.c) */
	db->selmap_valid = false;
}

static void txn_abort_locked(struct sadb *db)
{
	txn_undo(db);
	txn_end(db);
}

static int txn_commit_locked(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	uint64_t n = h->txn.gen;

	if (h->txn.jn == 0) {
		txn_abort_locked(db); /* nothing changed: no generation is spent on it */
		return 0;
	}
	if (h->txn.pol_changed) {
		uint64_t i0 = atomic_load_explicit(&h->idx_gen[0], memory_order_relaxed);
		uint64_t i1 = atomic_load_explicit(&h->idx_gen[1], memory_order_relaxed);
		int b = (i0 != SADB_TAG_WRITING && i0 > (i1 == SADB_TAG_WRITING ? 0 : i1)) ? 1 : 0;
		int r;

		/* Readers still on buffer b see its tag move before any of its bytes change. */
		atomic_store_explicit(&h->idx_gen[b], SADB_TAG_WRITING, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		r = sadb__idx_build(db, b, n, b ? i1 : i0);
		if (r) {
			atomic_store_explicit(&h->idx_gen[b], 0, memory_order_release);
			txn_abort_locked(db);
			sadb__set_err(db, "cannot build the SPD index: %s", strerror(-r));
			return r;
		}
		atomic_store_explicit(&h->idx_gen[b], n, memory_order_release);
	}
	sadb__test_stop(db, SADB_STOP_PRECOMMIT);
	/* The commit point: from this store on, readers see the whole transaction. */
	atomic_store_explicit(&h->gen, n, memory_order_release);
	sadb__test_stop(db, SADB_STOP_POSTCOMMIT);
	txn_finish(db, true);
	txn_end(db);
	return 0;
}

/* Every writer call runs inside a transaction: the caller's, or one of its own. */
int sadb__op_begin(struct sadb *db)
{
	int r;

	if (db->txn_open)
		return 0;
	r = wlock(db);
	if (r)
		return r;
	txn_start(db);
	return 0;
}

int sadb_txn_begin(struct sadb *db)
{
	int r;

	if (!db)
		return -EINVAL;
	if (db->txn_open) {
		sadb__set_err(db, "a transaction is already open on this handle");
		return -EBUSY;
	}
	r = sadb__op_begin(db);
	if (r)
		return r;
	db->txn_explicit = true;
	sadb__clear_err(db);
	return 0;
}

int sadb_txn_commit(struct sadb *db)
{
	int r;

	if (!db)
		return -EINVAL;
	if (!db->txn_open || !db->txn_explicit) {
		sadb__set_err(db, "no transaction open on this handle");
		return -EINVAL;
	}
	r = txn_commit_locked(db);
	db->txn_explicit = false;
	wunlock(db);
	return r;
}

void sadb_txn_abort(struct sadb *db)
{
	if (!db || !db->txn_open || !db->txn_explicit)
		return;
	txn_abort_locked(db);
	db->txn_explicit = false;
	wunlock(db);
}

/* The end of a writer call: its own transaction commits (or, on an error, is thrown away); the
 * caller's stays open. */
int sadb__op_end(struct sadb *db, int r)
{
	if (db->txn_explicit)
		return r;
	if (r < 0) {
		txn_abort_locked(db);
	} else {
		int c = txn_commit_locked(db);
		if (c)
			r = c;
	}
	wunlock(db);
	return r;
}

/* sadb_close with a transaction still open: it is thrown away, as by sadb_txn_abort. */
void sadb__txn_close(struct sadb *db)
{
	if (db->txn_open) {
		txn_abort_locked(db);
		wunlock(db);
	}
}
