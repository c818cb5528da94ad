/* sadb/sadb_int.h: libsadb's private layout of the shared segment and the helpers its files share.
 * Nothing outside sadb/ (and its tests) may include this: the layout is versioned by
 * SADB_LAYOUT_VERSION and only libsadb interprets it.
 *
 * Segment layout (offsets in the header, every region 64-byte aligned):
 *   header | SA slots | SA writer meta | SA runtime | SPI hash | SA free ring
 *          | policy slots | policy writer meta | policy free ring | SPD index 0 | SPD index 1 | txn log
 *
 * How a reader never sees a torn or uncommitted record (multi-version slots):
 *  - The header holds the committed generation G (one 64-bit atomic). A transaction in progress
 *    works at N = G + 1 and becomes visible by the single release store G = N (the commit point).
 *  - Every record slot has two copies, each tagged with the generation at which it was written
 *    (0 = empty, TAG_WRITING while a writer fills it). A reader loads G, takes the copy with the
 *    largest tag <= G, copies it, and re-reads that tag: unchanged means the copy is whole (a
 *    seqlock per copy). A writer only ever writes the copy that is not the committed one, so the
 *    committed version stays intact while the new one is prepared, and a writer that dies half-way
 *    leaves a copy that no reader will ever choose (tag WRITING or > G). A slot in use has a
 *    committed copy at every instant; a reader concludes "free" only when both tags say so and the
 *    slot's change counter (bumped before every tag store, never left half-way, so nobody waits on
 *    it) shows that the two tags it loaded one after the other were there at the same time.
 *  - After the commit point the writer "normalises" every slot it touched: the superseded copy is
 *    wiped (explicit_bzero: old keys do not linger) and tagged 0, deleted records lose both copies,
 *    SPI hash entries are reconciled with the committed identity, freed slots go to the free ring.
 *  - Which slots a transaction touched is logged in the txn log before they are touched. A writer
 *    that finds the lock's previous owner dead (EOWNERDEAD) or a transaction still marked active
 *    replays the log: if G already equals the dead transaction's N it finishes the normalisation
 *    (redo), else it throws away every copy tagged N or WRITING (undo). Either way readers saw the
 *    whole transaction or none of it.
 *  - The SPI hash holds hints (fingerprint + slot) that a reader always validates against the
 *    record it copies, so an entry may appear early (before commit) or disappear late (after it)
 *    without harm. An entry moving between its two buckets (to make room) is inserted first and
 *    removed second, and the writer bumps hash_moves before; a reader that found nothing re-checks
 *    hash_moves, so a move racing with its scan of the two buckets never makes it miss an SA.
 *  - The SPD index has two buffers. The writer brings the inactive one up to date (in place, from
 *    the previous commit's policy changes and its own, or rebuilt from the table: sadb_spd_build.c) and
 *    tags it with the generation it describes before that generation is published; it tags the
 *    buffer WRITING before changing a byte of it. Readers use the newest buffer whose tag is <= G
 *    and re-check the tag after the lookup; recovery tags 0 a buffer a dead writer left WRITING.
 */
#ifndef XIPSEC_SADB_INT_H
#define XIPSEC_SADB_INT_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "sadb/sadb.h"

#define SADB_JOURNAL_LEN  65536u           /* change journal ring entries (power of two) */
#define SADB_HASH_WAYS    8u               /* entries per SPI hash bucket: one cache line */
#define SADB_TAG_WRITING  UINT64_MAX
#define SADB_READ_RETRIES 100000u          /* a reader gives up (-EAGAIN) after this many */
#define SADB_LOCK_TIMEOUT_S 10             /* a writer waits at most this long for the lock */
/* Bumped whenever the private layout changes (slot header, index format, checksum) without the
 * public records changing; checked at open like SADB_LAYOUT_VERSION. */
#define SADB_INTERNAL_REV 6

enum { SADB_TXN_IDLE = 0, SADB_TXN_ACTIVE = 1 };

struct sadb_txn_state {
	_Atomic uint32_t state;     /* SADB_TXN_* */
	_Atomic uint32_t nlog;      /* entries in the txn log */
	uint64_t gen;               /* N: generation this transaction publishes */
	uint64_t jcount0;           /* journal count at begin */
	uint64_t sa_free_head0, pol_free_head0;
	uint32_t sa_hwm0, pol_hwm0;
	uint32_t jn;                /* journal entries staged */
	uint32_t n_sa, n_policy;    /* counts as of this transaction */
	uint32_t pol_changed;       /* the SPD index must be rebuilt */
	uint32_t pad;
};

struct sadb_hdr {
	/* Identity and layout: checked by every opener before anything else is read. */
	uint64_t magic;
	uint32_t layout_version;
	uint32_t hdr_size;
	uint32_t sizeof_sa, sizeof_policy, sizeof_runtime, sizeof_mutex;
	uint32_t max_sa, max_policy;
	uint64_t size;
	uint64_t off_sa, off_sa_meta, off_rt, off_hash, off_sa_free;
	uint64_t off_pol, off_pol_meta, off_pol_free, off_idx[2], off_log;
	uint32_t sa_slot_size, pol_slot_size, rt_size, hash_nbuckets;
	uint64_t idx_size;
	uint32_t log_cap, journal_len;
	uint64_t hash_seed;
	uint64_t created;
	uint32_t internal_rev;  /* SADB_INTERNAL_REV: private layout details behind the same version */
	uint32_t pad_id;

	/* Writers only (under the lock). */
	pthread_mutex_t lock __attribute__((aligned(64)));
	_Atomic int32_t owner_pid;
	uint32_t pad0;
	uint64_t next_instance;
	_Atomic uint32_t sa_hwm, pol_hwm;     /* slots [0, hwm) have ever been used */
	uint64_t sa_free_head, sa_free_tail;  /* FIFO of free slots below hwm */
	uint64_t pol_free_head, pol_free_tail;
	struct sadb_txn_state txn;

	/* Published state: readers load these. */
	_Atomic uint64_t gen __attribute__((aligned(64)));
	_Atomic uint32_t n_sa, n_policy;
	_Atomic uint64_t idx_gen[2];
	_Atomic uint64_t hash_moves; /* bumped before every move of an SPI hash entry between buckets */
	_Atomic uint64_t jcount;   /* journal entries ever published */
	_Atomic uint64_t jmin;     /* every change with gen >= jmin is still in the ring */
	struct sadb_change journal[SADB_JOURNAL_LEN] __attribute__((aligned(64)));

	/* The home agent records: each two copies under the same multi-version rule as a record
	 * slot (sadb_home.c). used[r][c]: copy c says "home agent record r is configured". */
	_Atomic uint64_t ha_tag[SADB_HA_MAX][2] __attribute__((aligned(64)));
	uint32_t ha_used[SADB_HA_MAX][2];
	struct sadb_home_agent ha[SADB_HA_MAX][2];
};

/* A record copy: a used flag then the record. */
struct sadb_copy_hdr {
	uint32_t used;
	uint32_t pad;
};

struct sadb_sa_meta {
	uint64_t lgen;     /* txn that logged this slot */
	uint64_t h[2];     /* SPI hash keys with entries pointing here (0 = none) */
	uint64_t freed_gen; /* generation at which the slot last became free: it is not reused before
	                     * the dataplane has released that generation (sadb_dp_release) */
	uint32_t used;     /* committed state */
	uint32_t pad;
};

struct sadb_pol_meta {
	uint64_t lgen;
	uint64_t selhash;  /* hash of (dir, selector) of the policy last added here: a filter for
	                    * duplicate searches, always confirmed against the record */
	uint32_t used;
	uint32_t reuse;    /* how many times the slot was reused: part of the policy id */
};

/* Compiled SPD index (see sadb_spd.h). */
struct sadb_idx_tuple {
	uint32_t k1;       /* dir << 24 | family << 16 | source prefix length << 8 | destination's */
	uint32_t min_prio, min_id; /* the best (priority, id) of the tuple's policies */
	uint32_t n;        /* policies in the tuple */
	uint64_t seed;     /* the tuple's hash seed: a function of the buffer's seed and k1 */
};
struct sadb_idx_entry {
	uint32_t k1;       /* the policy's tuple; 0 in a free entry */
	uint32_t next;     /* next entry (+1) with the same tuple and masked addresses, in (priority, id)
	                    * order; in a free entry the next free one (+1) */
	struct sadb_policy p;
} __attribute__((aligned(64))); /* two whole cache lines: a hit costs one miss, not three */
struct sadb_idx_hdr {
	/* What readers follow. */
	uint32_t dir_start[4], dir_n[4];
	uint32_t ntuples, nentries; /* entries [0, nentries) have been used; free ones have k1 0 */
	uint32_t hs_mask;  /* hash slots in use - 1 (a power of two, grown and shrunk with the policies) */
	uint32_t ngroups;  /* hash slots holding a chain */
	uint64_t seed;
	/* What only the writer uses to change the buffer in place. */
	uint64_t gen;      /* the generation this buffer describes */
	uint64_t base_gen; /* the other buffer's generation when this one was written */
	uint32_t ndelta;   /* policy slots that changed from base_gen to gen, listed in the delta
	                    * area; above its capacity: too many to list */
	uint32_t free_head; /* first free entry below nentries (+1) */
	uint32_t root;     /* root (+1) of the treap of entries in (k1, priority, id) order */
	uint32_t nused;
};

#define SADB_LOG_POLICY 0x80000000u

struct sadb {
	int fd;
	int flags;
	uint8_t *base;
	size_t size;
	struct sadb_hdr *h;
	uint8_t *sa_slots, *pol_slots, *rt, *idx[2];
	struct sadb_sa_meta *sa_meta;
	struct sadb_pol_meta *pol_meta;
	_Atomic uint64_t *hash;
	uint32_t *sa_free, *pol_free, *log;
	bool txn_open;      /* this handle holds the lock inside a transaction */
	bool txn_explicit;  /* opened by sadb_txn_begin */
	void *bld_items, *bld_tmp, *bld_tail; /* SPD index build scratch (sadb_spd_build.c) */
	/* Inside an explicit transaction: (dir, selector) hash -> policy slot, so a bulk load does not
	 * scan the whole table for duplicates once per policy. Private to this handle and this
	 * transaction; hits are always confirmed against the record. */
	uint64_t *selmap_key;
	uint32_t *selmap_slot;
	uint32_t selmap_cap, selmap_n;
	bool selmap_valid;
	size_t bld_cap;
	unsigned lock_timeout_ms;
	int stop_point;     /* test hook: XIPSEC_SADB_TEST_STOP */
	unsigned stop_count;
	char path[256];
};

/* Test hook points (XIPSEC_SADB_TEST_STOP=point[:n] raises SIGSTOP at the n-th passage). */
enum { SADB_STOP_NONE = 0, SADB_STOP_LOCKED, SADB_STOP_COPY, SADB_STOP_PRECOMMIT, SADB_STOP_POSTCOMMIT,
       SADB_STOP_INDEX /* half-way through changing the inactive SPD index in place */,
       SADB_STOP_ATTACH /* a dataplane that found the hold free, before it writes its name there */ };

/* sadb_util.c */
void sadb__set_err(const struct sadb *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sadb__clear_err(const struct sadb *db);
void sadb__set_errc(const struct sadb *db, const char *msg);
uint32_t sadb__checksum(const void *p, size_t len);
void sadb__read_retry(void);
uint32_t sadb__sa_checksum(const struct sadb_sa *sa);
uint32_t sadb__policy_checksum(const struct sadb_policy *p);
int sadb__selector_validate(const struct sadb_selector *sel, char *msg, size_t len);
void sadb__selector_normalize(struct sadb_selector *sel);
uint8_t sadb__sel_family(const struct sadb_selector *sel);
bool sadb__selector_eq(const struct sadb_selector *a, const struct sadb_selector *b);
void sadb__addr_mask(struct sadb_addr *a, unsigned plen);
/* Copy an address into a record being sealed (z zeroed beforehand): family and address, and for
 * IPv4 nothing in the twelve bytes it does not use, so equal records have equal checksums. */
void sadb__addr_seal(struct sadb_addr *z, const struct sadb_addr *a);
/* A reader's or writer's argument error: the message says which call and what. -EINVAL. */
int sadb__bad_arg(const struct sadb *db, const char *what);
/* A writer's record argument: -EINVAL without a handle or without the record. */
int sadb__check_writable(struct sadb *db, const void *p, const char *fn);
static inline uint32_t sadb__plen_mask(unsigned plen, unsigned word)
{
	int bits = (int)plen - 32 * (int)word;
	if (bits <= 0)
		return 0;
	if (bits >= 32)
		return UINT32_MAX;
	return __builtin_bswap32(UINT32_MAX << (32 - bits));
}
static inline uint64_t sadb__mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#define SADB_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* ---- record slots (the multi-version scheme above) ---- */

/* One record table as its slots are laid out: the SA table or the policy table. */
struct sadb_tbl {
	uint8_t *slots;
	uint32_t slot_size, rec_size, cap;
	bool pol;
};

static inline struct sadb_tbl sadb__sa_tbl(const struct sadb *db)
{
	return (struct sadb_tbl){ db->sa_slots, db->h->sa_slot_size, sizeof(struct sadb_sa), db->h->max_sa, false };
}

static inline struct sadb_tbl sadb__pol_tbl(const struct sadb *db)
{
	return (struct sadb_tbl){ db->pol_slots, db->h->pol_slot_size, sizeof(struct sadb_policy),
				  db->h->max_policy, true };
}

/* Slot header: tag[0], tag[1], then seq, which a writer bumps before every tag change. */
#define SADB_SLOT_HDR 24

static inline size_t sadb__copy_size(size_t rec)
{
	return SADB_ALIGN_UP(sizeof(struct sadb_copy_hdr) + rec, 8);
}

static inline _Atomic uint64_t *sadb__slot_seq(const struct sadb_tbl *t, uint32_t i)
{
	return (_Atomic uint64_t *)(t->slots + (size_t)i * t->slot_size + 16);
}

static inline _Atomic uint64_t *sadb__slot_tags(const struct sadb_tbl *t, uint32_t i)
{
	return (_Atomic uint64_t *)(t->slots + (size_t)i * t->slot_size);
}

static inline struct sadb_copy_hdr *sadb__slot_copy(const struct sadb_tbl *t, uint32_t i, int c)
{
	return (struct sadb_copy_hdr *)(t->slots + (size_t)i * t->slot_size + SADB_SLOT_HDR +
					(size_t)c * sadb__copy_size(t->rec_size));
}

static inline void *sadb__copy_rec(struct sadb_copy_hdr *c)
{
	return c + 1;
}

/* Which of two copies (or SPD index buffers) tagged t0 and t1 is the newest one committed as of
 * generation g: 0 or 1, or -1 when neither is (tag 0: empty; tags above g: not yet published). */
static inline int sadb__newest(uint64_t t0, uint64_t t1, uint64_t g)
{
	bool v0 = t0 && t0 <= g, v1 = t1 && t1 <= g;

	if (!v0 && !v1)
		return -1;
	return v0 && (!v1 || t0 > t1) ? 0 : 1;
}

/* The committed generation as the writer (who alone moves it) sees it. */
static inline uint64_t sadb__cur_gen(const struct sadb *db)
{
	return atomic_load_explicit(&db->h->gen, memory_order_relaxed);
}

/* A writer passing a test hook point: stops itself when the crash tests asked for this passage
 * (stop_point and stop_count, set by sadb_open from XIPSEC_SADB_TEST_STOP). Inline, so that every
 * layer can hold a stop point without calling into another file. */
static inline void sadb__test_stop(struct sadb *db, int point)
{
	if (db->stop_point == point && --db->stop_count == 0)
		raise(SIGSTOP);
}

/* The writer's view of slot i: this transaction's copy if any, else the committed one. */
static inline struct sadb_copy_hdr *sadb__wview(const struct sadb *db, const struct sadb_tbl *t, uint32_t i)
{
	_Atomic uint64_t *tag = sadb__slot_tags(t, i);
	uint64_t n = db->h->txn.gen, g = sadb__cur_gen(db);
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_relaxed);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_relaxed);
	int c;

	if (t0 == n)
		return sadb__slot_copy(t, i, 0);
	if (t1 == n)
		return sadb__slot_copy(t, i, 1);
	c = sadb__newest(t0, t1, g);
	return c < 0 ? NULL : sadb__slot_copy(t, i, c);
}

static inline const struct sadb_sa *sadb__sa_wview(const struct sadb *db, uint32_t i)
{
	struct sadb_tbl t = sadb__sa_tbl(db);
	struct sadb_copy_hdr *c = sadb__wview(db, &t, i);

	return c && c->used ? sadb__copy_rec(c) : NULL;
}

static inline const struct sadb_policy *sadb__pol_wview(const struct sadb *db, uint32_t i)
{
	struct sadb_tbl t = sadb__pol_tbl(db);
	struct sadb_copy_hdr *c = sadb__wview(db, &t, i);

	return c && c->used ? sadb__copy_rec(c) : NULL;
}

static inline uint64_t sadb__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

/* ---- SPI hash: two-choice buckets of eight (fingerprint << 32 | slot + 1) hints ---- */

static inline void sadb__hash_buckets(const struct sadb_hdr *h, uint64_t hv, uint32_t *b1, uint32_t *b2)
{
	uint32_t mask = h->hash_nbuckets - 1;

	*b1 = (uint32_t)hv & mask;
	*b2 = (uint32_t)(sadb__mix64(hv >> 32) & mask);
	if (*b2 == *b1)
		*b2 = *b1 ^ 1;
}

static inline _Atomic uint64_t *sadb__bucket(const struct sadb *db, uint32_t b)
{
	return db->hash + (size_t)b * SADB_HASH_WAYS;
}

static inline uint64_t sadb__hash_entry(uint64_t hv, uint32_t slot)
{
	return (hv >> 32) << 32 | (uint64_t)(slot + 1);
}

static inline bool sadb__sa_ident_eq(const struct sadb_sa *sa, uint32_t spi, uint8_t proto,
				     const struct sadb_addr *dst)
{
	return sa->spi == spi && sa->proto == proto && sadb_addr_eq(&sa->dst, dst);
}

/* sadb_hash.c: the key of an identity, and the writer's side of the SPI hash. */
/* Out of line on purpose: inlined into sadb_sa_lookup it made the dataplane's per-packet lookup
 * about 10% slower (bench/sadb-bench, hot set). */
uint64_t sadb__sa_key_hash(const struct sadb_hdr *h, uint32_t spi, uint8_t proto, const struct sadb_addr *dst);
void sadb__sa_buckets(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		      uint32_t *b1, uint32_t *b2); /* the two buckets of an identity (white-box tests) */
void sadb__hash_insert(struct sadb *db, uint64_t hv, uint32_t slot);
void sadb__hash_remove(struct sadb *db, uint64_t hv, uint32_t slot);
int sadb__hash_room(struct sadb *db, uint64_t hv);
void sadb__hash_attach(struct sadb *db, uint32_t slot, uint64_t hv);

/* sadb_txn.c: the writer's slot primitives and the transaction around every writer call. */
void sadb__touch(struct sadb *db, bool pol, uint32_t i);
void sadb__write_copy(struct sadb *db, const struct sadb_tbl *t, uint32_t i, bool used, const void *rec);
int sadb__op_begin(struct sadb *db);
int sadb__op_end(struct sadb *db, int r);
void sadb__txn_close(struct sadb *db);

/* sadb_journal.c */
void sadb__jappend(struct sadb *db, uint32_t op, uint32_t index);

/* sadb_hold.c: free slot rings and the dataplane's hold on freed SA slots. */
int sadb__slot_alloc(struct sadb *db, bool pol);
void sadb__slot_release(struct sadb *db, bool pol, uint32_t s);
void sadb__rebuild_free(struct sadb *db, bool pol);

/* sadb_policy.c */
void sadb__selmap_drop(struct sadb *db);

/* sadb_file.c: open path without following a symbolic link or blocking on a FIFO, and accept only
 * a regular file owned by the effective uid with mode 0600: the fd, or -ENOENT (no message), or
 * -errno with a message naming what was found and what is expected. */
int sadb__open_file(const char *path, bool rw, char *errmsg, size_t errlen);
/* The same judgement on an open fd (dir: a directory with mode 0700 instead). */
int sadb__check_fd(int fd, const char *path, bool dir, char *errmsg, size_t errlen);

/* sadb_spd.c (size, lookups) and sadb_spd_build.c (the commit's build) */
size_t sadb__idx_size(uint32_t max_policy);
/* Write the index of the writer's view of the policy table into buffer b for generation n, in
 * place from its previous contents when the other buffer's delta and this transaction's policy
 * slots say how, else from the whole table. prev_tag: b's tag before the writer claimed it. */
int sadb__idx_build(struct sadb *db, int b, uint64_t n, uint64_t prev_tag);
int sadb__idx_lookup(const struct sadb *db, const uint8_t *buf, uint8_t dir,
		     const struct sadb_pkt_sel *pkt, struct sadb_policy *out);
/* The writer's duplicate search in the published index (the committed policies): the lowest slot
 * holding a policy with this direction and normalised selector (and priority if match_prio) that
 * the writer's view still has, -ENOENT, or -EAGAIN when there is no usable index. */
int sadb__idx_find_sel(const struct sadb *db, uint8_t dir, const struct sadb_selector *normalized,
		       bool match_prio, uint32_t prio);

#endif
