/* dataplane/xipsecd/dp_sa.c: the dataplane's private view of the SAD. The control thread follows the SADB
 * (generation + sadb_changes journal, full resynchronisation when the journal has moved on), turns
 * each SA record into pre-keyed engine objects (crypto contexts cannot live in shared memory) and
 * publishes an immutable lookup table to the workers with RCU (liburcu-qsbr: workers announce a
 * quiescent state after every burst, so reading costs nothing on the packet path).
 *
 * SA ownership (doc/architecture.md rule 5), chosen and measured (bench/fwd.sh, xipsecd(8)):
 *  - outbound: one engine object per worker, all sharing the SA's runtime area; sequence numbers
 *    are reserved from it with one atomic compare-and-swap (rule 1 holds across restarts because
 *    the reservation is recorded in the SADB before use). No hand-off, no lock: workers protect
 *    the same SA in parallel. With one worker the engine reserves blocks of 1024; with several,
 *    each burst reserves what it needs, in steps of at most 32 / workers, and abandons the rest
 *    (esp_sa_opts.seq_share): a block a worker holds while another worker sends faster falls
 *    behind the receiver's replay window (measured: REPLAY_OLD drops at the peer with two workers
 *    and 1024-blocks), whereas numbers sent with the burst that reserved them only reorder packets
 *    in flight, about a burst. bench/scale prints the gain over one reservation per packet.
 *  - inbound: one engine object per worker too, all sharing the SA's runtime area (the replay
 *    window). Each checks its burst against the window unlocked (read only), decrypts and verifies
 *    it on its own crypto context in parallel with the others, and only then takes its slot's lock
 *    (one of DP_IN_LOCKS stripes, a cache line each) for the window updates of the whole burst,
 *    re-checking every number (the engine's esp_sa_opts.replay_lock). The lock lives outside the
 *    table, so the old and the new version of an updated SA (both visible during an RCU grace
 *    period) still exclude each other; it is held for the bookkeeping of one burst, never for its
 *    crypto, so one SA's packets arriving on several workers are decrypted in parallel
 *    (bench/scale measures it). We chose it over steering every packet to one owner because that
 *    costs a ring round-trip and a cache miss per packet on every inbound packet that lands on a
 *    foreign worker, whereas the lock is uncontended whenever a peer keeps an SA's packets on one
 *    queue. In that case the worker of the queue hands part of its bursts' crypto to idle workers
 *    (dp_handoff.c), which decrypt on their own objects of the SA under the same rule. With one
 *    worker there is no lock. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_seqmark.h"

struct dp_satab {
	uint32_t max_sa;
	struct dp_sa **slot;         /* by SADB slot */
	uint32_t in_mask, out_mask;
	struct dp_sa **in_hash;      /* (spi, proto, dst) -> inbound SA */
	struct dp_sa **out_hash;     /* reqid -> best outbound SA */
	struct dp_sa **persist;      /* outbound SAs whose numbers are leased from disk */
	struct dp_sa **persist_due;  /* room for dp_sa_tick's batch of them */
	uint32_t n_persist;
	struct dp_sa **expiring;     /* SAs whose lifetimes xipsecd enforces (dp_expire.c) */
	uint32_t n_expiring;
	struct dp_sa **clustered;    /* SAs whose numbers or window the cluster holds (dp_cluster.c) */
	uint32_t n_clustered;
};

/* The inbound replay locks, striped: slot s takes lock s % n_lock. Each lock has a cache line of its
 * own, so the workers of two SAs in neighbouring slots (the usual case: slots are handed out in
 * order) never bounce a line between them on every burst, and the array stays small at millions of
 * SAs. Two SAs on one stripe only serialise their window updates, a few hundred nanoseconds per
 * burst, never their crypto. Both versions of an updated SA (one slot) share one lock, as rule 5
 * needs. */
#define DP_IN_LOCKS 4096u
struct dp_in_lock {
	_Alignas(64) pthread_spinlock_t l;
};

struct dp_sa_state {
	uint64_t since;              /* journal position */
	bool need_full;
	struct dp_in_lock *in_lock;  /* n_lock stripes */
	uint32_t n_lock;
	uint32_t max_sa;
	unsigned warned_unsupported;
	int state_fd;                /* the state directory (dp_seqmark.c), -1 = not opened yet */
	uint64_t state_retry_ns;     /* when to try opening it again after a failure */
	struct dp_expire_round expire; /* dp_expire.c's position in t->expiring */
	/* Set by a worker's engine object when a persisted SA's lease runs low (esp_sa_opts.lease_hint):
	 * dp_sa_tick then looks at every persisted SA, else only once a second (a home agent's 20,000
	 * such SAs looked at every tick cost a tenth of a CPU on an idle gateway). Written once per
	 * lease half by a worker, read every tick: no line of its own needed. */
	_Atomic uint32_t lease_hint;
	uint64_t lease_scan_ns;      /* dp_now_ns() of the next look without a hint */
	/* A test's hook ($XIPSEC_TEST_SYNC_PAUSE_MS, 0 = off): every sync reads every slot and
	 * pauses this long after each inbound SA it read, so that writers change the SADB in the
	 * middle of the read, as they do by chance in a full resynchronisation (drop_replaced). */
	uint64_t test_pause_ms;
};
#define DP_LEASE_SCAN_NS 1000000000ull

/* Lease the next sequence numbers of persisted outbound SAs (dp_seqmark.c), all n in one batch: one
 * lock, one syncfs, one directory fsync. A failure is logged once per SA (the first few of a batch
 * by name, the rest counted) and tried again after DP_LEASE_RETRY_NS. */
#define DP_LEASE_RETRY_NS 1000000000ull
#define DP_LEASE_LOG_MAX  8u
static void seq_lease(struct dp_sa_state *st, struct dp_sa **v, unsigned n)
{
	struct dp_seqmark_req *rq;
	char msg[256], a[64];
	unsigned quiet = 0;

	if (n == 0)
		return;
	if (st->state_fd < 0 && dp_now_ns() >= st->state_retry_ns) {
		st->state_fd = sadb_state_dir_open(NULL, true, msg, sizeof(msg));
		if (st->state_fd < 0) {
			dp_log(LOG_ERR, "state directory: %s", msg);
			st->state_retry_ns = dp_now_ns() + DP_LEASE_RETRY_NS;
		}
	}
	rq = calloc(n, sizeof(*rq));
	if (!rq) {
		dp_log(LOG_ERR, "sequence-number leases of %u SAs: out of memory; tried again later", n);
		for (unsigned i = 0; i < n; i++) {
			v[i]->lease_failed = true;
			v[i]->lease_retry_ns = dp_now_ns() + DP_LEASE_RETRY_NS;
		}
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		rq[i].sa = &v[i]->sa;
		rq[i].rt = v[i]->rt;
		rq[i].want = atomic_load_explicit(&v[i]->window_want, memory_order_relaxed);
	}
	dp_seqmark_lease_batch(st->state_fd, rq, n);
	for (unsigned i = 0; i < n; i++) {
		struct dp_sa *s = v[i];

		if (rq[i].err && !s->lease_failed) {
			if (quiet < DP_LEASE_LOG_MAX)
				dp_log(LOG_ERR, "SA spi 0x%08x dst %s (manual key, %s): %s: %s", s->sa.spi,
				       sadb_addr_str(&s->sa.dst, a, sizeof(a)), sadb_enc_name(s->sa.enc_alg),
				       s->sa.dir == SADB_DIR_IN ?
				       "its replay window's ceiling cannot be recorded on disk, so it accepts "
				       "nothing" : "its sequence numbers (nonces) cannot be recorded on disk, "
				       "so it sends nothing", rq[i].msg);
			quiet++;
		}
		s->lease_failed = rq[i].err != 0;
		s->lease_retry_ns = s->lease_failed ? dp_now_ns() + DP_LEASE_RETRY_NS : 0;
	}
	if (quiet > DP_LEASE_LOG_MAX)
		dp_log(LOG_ERR, "%u more SAs with manual keys send or accept nothing for the same reason",
		       quiet - DP_LEASE_LOG_MAX);
	free(rq);
}

static bool window_held(const struct dp_sa *s)
{
	return s && !s->unusable && s->sa.dir == SADB_DIR_IN && dp_seqmark_needed(&s->sa);
}

/* Bring the marks of the n inbound SAs in v down to their final windows' tops (their objects are
 * gone: dp_seqmark_release_batch). */
static void window_release(struct dp_sa_state *st, struct dp_sa **v, unsigned n)
{
	struct dp_seqmark_req *rq = calloc(n ? n : 1, sizeof(*rq));
	unsigned k = 0;

	if (!rq)
		return; /* the ceilings stay the marks: safe */
	for (unsigned i = 0; i < n; i++)
		if (window_held(v[i])) {
			rq[k].sa = &v[i]->sa;
			rq[k++].rt = v[i]->rt;
		}
	dp_seqmark_release_batch(st->state_fd, rq, k);
	free(rq);
}

/* After the grace period that retired the replaced SAs: their windows are final, so their marks
 * come down to their tops, and only then are the new inbound SAs of manual keys (published with
 * no ceiling: they accept nothing yet) leased, each reading the mark its predecessor left. */
static void window_handover(struct dp_sa_state *st, struct dp_satab *t, const struct dp_satab *old,
			    struct dp_sa **dead, unsigned n_dead)
{
	struct dp_sa **lease = calloc(t->max_sa > n_dead ? t->max_sa : n_dead, sizeof(*lease));
	unsigned n_lease = 0;

	if (!lease)
		return; /* the ceilings stay the marks (safe); dp_sa_tick's look once a second leases */
	/* a dead object whose runtime area lives on in its slot (its record was updated) is not final */
	for (unsigned i = 0; i < n_dead; i++) {
		const struct dp_sa *now = t->slot[dead[i]->slot];

		lease[n_lease] = dead[i];
		n_lease += !(now && now->sa.instance == dead[i]->sa.instance);
	}
	window_release(st, lease, n_lease);
	n_lease = 0;
	for (uint32_t i = 0; i < t->max_sa; i++) {
		struct dp_sa *s = t->slot[i];

		if (window_held(s) && (!old || old->slot[i] != s))
			lease[n_lease++] = s;
	}
	seq_lease(st, lease, n_lease);
	free(lease);
}

static uint32_t mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352d;
	h ^= h >> 15;
	h *= 0x846ca68b;
	h ^= h >> 16;
	return h;
}

static uint32_t in_key(uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	uint32_t h = mix(spi ^ ((uint32_t)proto << 24));

	for (unsigned i = 0; i < 4; i++)
		h = mix(h ^ dst->a.w[i]);
	return h;
}

static void sa_free(struct dp_sa *s, unsigned n_workers)
{
	if (!s)
		return;
	for (unsigned i = 0; i < n_workers; i++)
		esp_sa_destroy(s->e[i]);
	explicit_bzero(&s->sa, sizeof(s->sa));
	free(s);
}

static struct dp_sa *sa_make(struct dp_ctx *ctx, struct dp_sa_state *st, const struct sadb_sa *rec,
			     uint32_t slot)
{
	struct dp_sa *s = calloc(1, sizeof(*s) + ctx->n_workers * sizeof(struct esp_sa *));
	struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO };
	const char *why;
	int err = 0;

	if (!s)
		return NULL;
	s->sa = *rec;
	s->slot = slot;
	s->rt = sadb_runtime(ctx->db, slot);
	s->in_lock = &st->in_lock[slot % st->n_lock].l;
	if (!s->rt) {
		free(s);
		return NULL;
	}
	if (rec->state == SADB_STATE_LARVAL) {
		/* An SPI the IKE daemon reserved (get_spi) for a CHILD_SA it is negotiating: no
		 * algorithm and no key until the exchange completes, which makes it a new instance with
		 * a fresh runtime area (sadb_sa_update). Known, so that its packets count UNSUPPORTED
		 * rather than BAD_SPI, but no engine to refuse it, no cluster state and no counters. */
		s->unusable = true;
		return s;
	}
	if ((why = dp_cluster_refuses(ctx, rec))) {
		char a[64];

		/* known but unusable, as an SA the engine refuses: its packets are counted UNSUPPORTED */
		dp_log(LOG_ERR, "SA spi 0x%08x dst %s (%s): refused on a cluster node: %s; key this tunnel "
		       "with IKE%s", rec->spi, sadb_addr_str(&rec->dst, a, sizeof(a)),
		       rec->dir == SADB_DIR_OUT ? "out" : "in", why,
		       rec->dir == SADB_DIR_IN ? " or load it with replay off" : "");
		s->unusable = true;
		return s;
	}
	o.mtu = atomic_load(&ctx->ifc[DP_OUT].mtu);
	o.seq_share = (uint16_t)ctx->n_workers; /* per-burst reservation with several (esp.h) */
	if (dp_seqmark_needed(rec)) {
		o.lease_hint = &st->lease_hint;
		/* dp_seqmark_due's threshold */
		o.lease_low = (rec->dir == SADB_DIR_IN ? dp_seqmark_window_block() : dp_seqmark_lease_size()) / 2;
		o.window_want = rec->dir == SADB_DIR_IN ? &s->window_want : NULL;
	}
	dp_cluster_sa_new(ctx, s);
	/* A persisted SA's numbers are leased by dp_sa_sync, in one batch with the others, before
	 * the table that holds it is published: until then no worker sees it, and the engine never
	 * reserves (outbound) or accepts (inbound) above rt->seq_lease. */
	if (rec->dir == SADB_DIR_OUT) {
		/* A manual counter-mode key is held to its lease whatever wrote it (dp_seqmark.c): the
		 * engine obeys rt->seq_lease only for SADB_SAF_SEQ_PERSIST, so it gets the flag here.
		 * s->sa stays the record as written (dp_sa_sync compares them). */
		struct sadb_sa leased = *rec;

		/* ... and so is an SA whose numbers the cluster leases (dp_cluster.c): the same limit,
		 * raised by the control thread once the peer recorded it */
		if (dp_seqmark_needed(rec) || dp_cluster_covers(ctx, rec))
			leased.flags |= SADB_SAF_SEQ_PERSIST;
		o.id_parts = (uint16_t)ctx->n_workers;
		for (unsigned i = 0; i < ctx->n_workers && !err; i++) {
			o.id_part = (uint16_t)i;
			err = esp_sa_create(&leased, s->rt, &o, &s->e[i]);
		}
		explicit_bzero(&leased, sizeof(leased));
	} else {
		/* one per worker: each decrypts on its own crypto context, the window update is
		 * serialised by the slot's lock (rule 5). A manual key's window is held under its
		 * ceiling on disk (dp_seqmark.c), by the same flag as outbound. */
		struct sadb_sa leased = *rec;

		if (dp_seqmark_needed(rec))
			leased.flags |= SADB_SAF_SEQ_PERSIST;
		o.replay_lock = ctx->n_workers > 1 ? s->in_lock : NULL;
		for (unsigned i = 0; i < ctx->n_workers && !err; i++)
			err = esp_sa_create(&leased, s->rt, &o, &s->e[i]);
		explicit_bzero(&leased, sizeof(leased));
	}
	if (err) {
		char a[64];

		/* the SA stays known (its packets are counted UNSUPPORTED, not BAD_SPI) */
		dp_log(LOG_WARNING, "SA spi 0x%08x dst %s (%s/%s): engine refuses it: %s", rec->spi,
		       sadb_addr_str(&rec->dst, a, sizeof(a)), sadb_enc_name(rec->enc_alg),
		       sadb_auth_name(rec->auth_alg), strerror(-err));
		for (unsigned i = 0; i < ctx->n_workers; i++) {
			esp_sa_destroy(s->e[i]);
			s->e[i] = NULL;
		}
		s->unusable = true;
	} else {
		char a[64];

		/* which implementation runs it: chosen by measurement (esp_sa.c), so worth saying */
		dp_log(LOG_INFO, "SA spi 0x%08x dst %s (%s, %s/%s): crypto backend %s", rec->spi,
		       sadb_addr_str(&rec->dst, a, sizeof(a)), rec->dir == SADB_DIR_OUT ? "out" : "in",
		       sadb_enc_name(rec->enc_alg), sadb_auth_name(rec->auth_alg),
		       esp_backend_name(esp_sa_backend(s->e[0])));
	}
	return s;
}

static uint32_t pow2_above(uint32_t n)
{
	uint32_t p = 16;

	while (p < n * 2)
		p <<= 1;
	return p;
}

/* Outbound choice among SAs of one reqid: a MATURE one over a DYING one, then the newest, so an SA
 * pair replacement switches traffic to the new SA the moment it is installed. */
static bool out_better(const struct dp_sa *a, const struct dp_sa *b)
{
	if (!b)
		return true;
	if ((a->sa.state == SADB_STATE_MATURE) != (b->sa.state == SADB_STATE_MATURE))
		return a->sa.state == SADB_STATE_MATURE;
	return a->sa.instance > b->sa.instance;
}

static int build_hashes(struct dp_ctx *ctx, struct dp_satab *t)
{
	uint32_t n = 0, sz;

	for (uint32_t i = 0; i < t->max_sa; i++)
		n += t->slot[i] != NULL;
	sz = pow2_above(n);
	t->in_hash = calloc(sz, sizeof(*t->in_hash));
	t->out_hash = calloc(sz, sizeof(*t->out_hash));
	if (!t->in_hash || !t->out_hash)
		return -ENOMEM;
	t->in_mask = t->out_mask = sz - 1;
	t->persist = calloc(n ? n : 1, sizeof(*t->persist));
	t->persist_due = calloc(n ? n : 1, sizeof(*t->persist_due));
	t->expiring = calloc(n ? n : 1, sizeof(*t->expiring));
	t->clustered = calloc(n ? n : 1, sizeof(*t->clustered));
	if (!t->persist || !t->persist_due || !t->expiring || !t->clustered)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->max_sa; i++) {
		struct dp_sa *s = t->slot[i];
		uint32_t h;

		if (s && !s->unusable && dp_seqmark_needed(&s->sa))
			t->persist[t->n_persist++] = s;
		if (s && dp_expire_owned(&s->sa))
			t->expiring[t->n_expiring++] = s;
		if (s && !s->unusable && dp_cluster_covers(ctx, &s->sa))
			t->clustered[t->n_clustered++] = s;

		if (!s || (s->sa.state != SADB_STATE_MATURE && s->sa.state != SADB_STATE_DYING))
			continue;
		if (s->sa.dir == SADB_DIR_IN) {
			h = in_key(s->sa.spi, s->sa.proto, &s->sa.dst) & t->in_mask;
			while (t->in_hash[h])
				h = (h + 1) & t->in_mask;
			t->in_hash[h] = s;
		} else if (s->sa.dir == SADB_DIR_OUT) {
			h = mix(s->sa.reqid) & t->out_mask;
			while (t->out_hash[h] && t->out_hash[h]->sa.reqid != s->sa.reqid)
				h = (h + 1) & t->out_mask;
			if (out_better(s, t->out_hash[h]))
				t->out_hash[h] = s;
		}
	}
	return 0;
}

static void tab_free(struct dp_satab *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t->in_hash);
	free(t->out_hash);
	free(t->persist);
	free(t->persist_due);
	free(t->expiring);
	free(t->clustered);
	free(t);
}

static struct dp_sa *tab_find_in(const struct dp_satab *t, uint32_t spi, uint8_t proto,
				 const struct sadb_addr *dst)
{
	uint32_t h;

	if (!t || !t->in_hash)
		return NULL;
	h = in_key(spi, proto, dst) & t->in_mask;
	for (struct dp_sa *s; (s = t->in_hash[h]); h = (h + 1) & t->in_mask)
		if (s->sa.spi == spi && s->sa.proto == proto && sadb_addr_eq(&s->sa.dst, dst))
			return s;
	return NULL;
}

struct dp_sa *dp_sa_find_in(struct dp_ctx *ctx, uint32_t spi, uint8_t proto,
			    const struct sadb_addr *dst)
{
	return tab_find_in(rcu_dereference(ctx->satab), spi, proto, dst);
}

/* The XDP program's SPI filter follows the inbound hash (xdp_shared.h): the keys of `to` that
 * `from` lacks are added before `to` is published, the keys of `from` that `to` lacks removed
 * after the grace period that retires `from`. So the filter always holds a superset of what any
 * worker can look up, and a packet the program drops is one every worker would drop too. */
/* Whether s is one of the SAs whose keys t's inbound hash holds (build_hashes inserts every one). */
static bool in_hashed(const struct dp_sa *s)
{
	return s && s->sa.dir == SADB_DIR_IN &&
	       (s->sa.state == SADB_STATE_MATURE || s->sa.state == SADB_STATE_DYING);
}

/* Add to the XDP program's SPI filter (add) the keys of `to`'s inbound SAs that `from` does not hold,
 * or delete them (!add: called with the tables the other way round). Only the slots whose object
 * differs between the two tables are looked at: an object is rebuilt whenever its record changes
 * (dp_sa_sync keeps the pointer of an unchanged one), so the same pointer in a slot of both means
 * the same key in both. A changed slot's key may still be held by another slot (two SAs of one key),
 * hence the lookup in `from`. With 20,000 SAs a sync of one change costs a few lookups instead of
 * 40,000. */
static void spi_filter_diff(struct dp_ctx *ctx, const struct dp_satab *from,
			    const struct dp_satab *to, bool add)
{
	if (!to || !to->in_hash)
		return;
	for (uint32_t i = 0; i < to->max_sa; i++) {
		const struct dp_sa *s = to->slot[i];

		/* the pointers first: they are read in order, the objects are not */
		if (!s || (from && from->slot[i] == s) || !in_hashed(s) ||
		    tab_find_in(from, s->sa.spi, s->sa.proto, &s->sa.dst))
			continue;
		if (add)
			dp_xdp_spi_add(ctx, s->sa.spi, s->sa.proto, &s->sa.dst);
		else
			dp_xdp_spi_del(ctx, s->sa.spi, s->sa.proto, &s->sa.dst);
	}
}

void dp_sa_spi_filter_start(struct dp_ctx *ctx)
{
	spi_filter_diff(ctx, NULL, ctx->satab, true);
	dp_xdp_spi_filter(ctx, true);
}

struct dp_sa *dp_sa_find_out(struct dp_ctx *ctx, uint32_t reqid)
{
	struct dp_satab *t = rcu_dereference(ctx->satab);
	uint32_t h;

	if (!t)
		return NULL;
	h = mix(reqid) & t->out_mask;
	for (struct dp_sa *s; (s = t->out_hash[h]); h = (h + 1) & t->out_mask)
		if (s->sa.reqid == reqid)
			return s;
	return NULL;
}

static bool same_record(const struct sadb_sa *a, const struct sadb_sa *b)
{
	return a->instance == b->instance && a->checksum == b->checksum &&
	       memcmp(a, b, sizeof(*a)) == 0;
}

int dp_sa_init(struct dp_ctx *ctx)
{
	struct dp_sa_state *st = calloc(1, sizeof(*st));
	struct sadb_info info;
	int err;

	if (!st)
		return -ENOMEM;
	err = sadb_info(ctx->db, &info);
	if (err) {
		free(st);
		return err;
	}
	st->max_sa = info.max_sa;
	st->n_lock = info.max_sa < DP_IN_LOCKS ? info.max_sa : DP_IN_LOCKS;
	st->in_lock = aligned_alloc(64, (size_t)st->n_lock * sizeof(*st->in_lock));
	if (!st->in_lock) {
		free(st);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < st->n_lock; i++)
		pthread_spin_init(&st->in_lock[i].l, PTHREAD_PROCESS_PRIVATE);
	st->need_full = true;
	st->state_fd = -1;
	st->test_pause_ms = dp_env_u64("XIPSEC_TEST_SYNC_PAUSE_MS", 0, 0, 1000);
	ctx->sa_state = st;
	return dp_sa_sync(ctx);
}

void dp_sa_resync(struct dp_ctx *ctx)
{
	struct dp_sa_state *st = ctx->sa_state;

	if (st)
		st->need_full = true;
}

/* The slots of a table are read one after another while writers go on: a slot read early may still
 * hold an SA that a flush and reload deleted a moment later, and a slot read after that its
 * successor with the same SPI, protocol and destination (a full resynchronisation reads every
 * slot, and measured at 1,000 reloads in 4 s it mixed two reloads in one table about once a run).
 * The SADB never holds two such SAs at once, and instances only grow, so of two in one table the
 * older is already gone: it leaves the table here as if its deletion had been read. Kept, it
 * would be looked up in place of its successor and, inbound with a manual key, be leased a
 * replay-window ceiling in the same batch, so that its successor's window started at that
 * ceiling instead of at its predecessor's exact top (dp_seqmark.c): the peer's next 4,096 packets
 * refused after a reload that should lose none. An object of the old table goes with the dead,
 * released after the grace period like any deleted SA; one made in this round was never
 * published and is freed. Returns the new count of dead. */
static uint32_t drop_replaced(struct dp_ctx *ctx, struct dp_satab *t, const struct dp_satab *old,
			      struct dp_sa **dead, uint32_t n_dead)
{
	uint32_t n = 0, mask;
	struct dp_sa **seen;

	for (uint32_t i = 0; i < t->max_sa; i++)
		n += t->slot[i] != NULL;
	mask = pow2_above(n) * 2 - 1;
	seen = calloc((size_t)mask + 1, sizeof(*seen));
	if (!seen)
		return n_dead; /* kept: safe, only the successor's first packets are at stake */
	for (uint32_t i = 0; i < t->max_sa; i++) {
		struct dp_sa *s = t->slot[i], *gone, **p;
		uint32_t h;

		if (!s)
			continue;
		h = in_key(s->sa.spi, s->sa.proto, &s->sa.dst) & mask;
		for (p = &seen[h]; *p; p = &seen[h = (h + 1) & mask])
			if ((*p)->sa.spi == s->sa.spi && (*p)->sa.proto == s->sa.proto &&
			    sadb_addr_eq(&(*p)->sa.dst, &s->sa.dst))
				break;
		if (!*p) {
			*p = s;
			continue;
		}
		gone = (*p)->sa.instance < s->sa.instance ? *p : s;
		*p = gone == s ? *p : s;
		t->slot[gone->slot] = NULL;
		gone->deleted = true;
		if (old && old->slot[gone->slot] == gone)
			dead[n_dead++] = gone;
		else
			sa_free(gone, ctx->n_workers);
	}
	free(seen);
	return n_dead;
}

/* The test hook of dp_sa_state.test_pause_ms. */
static void test_pause(const struct dp_sa_state *st, const struct sadb_sa *rec)
{
	if (st->test_pause_ms && rec->dir == SADB_DIR_IN)
		usleep((useconds_t)(st->test_pause_ms * 1000));
}

int dp_sa_sync(struct dp_ctx *ctx)
{
	struct dp_sa_state *st = ctx->sa_state;
	struct dp_satab *old = ctx->satab, *t;
	struct dp_sa **dead = NULL;
	uint32_t n_dead = 0;
	uint8_t *dirty = NULL;
	bool full = st->need_full || ctx->local_spd_stale || !old || st->test_pause_ms;
	bool pol = full;             /* the XDP program's local SPD is built again */
	uint64_t gen = sadb_generation(ctx->db);
	int err = -ENOMEM;

	if (!full && gen == ctx->sadb_gen)
		return 0;
	dirty = calloc(st->max_sa, 1);
	if (!dirty)
		return -ENOMEM;
	if (full) {
		/* resynchronise from a full iteration, then follow the journal from the generation
		 * read before iterating (sadb_changes contract) */
		st->since = gen;
		memset(dirty, 1, st->max_sa);
	} else {
		struct sadb_change ch[256];
		int n;

		while ((n = sadb_changes(ctx->db, &st->since, ch, 256)) > 0) {
			for (int i = 0; i < n; i++) {
				switch (ch[i].op) {
				case SADB_CHG_SA_ADD: case SADB_CHG_SA_UPDATE: case SADB_CHG_SA_DEL:
					if (ch[i].index < st->max_sa)
						dirty[ch[i].index] = 1;
					break;
				case SADB_CHG_FLUSH_SA: /* the SAs held; one added since has its own entry */
					for (uint32_t k = 0; k < st->max_sa; k++)
						dirty[k] |= old->slot[k] != NULL;
					break;
				case SADB_CHG_POL_ADD: case SADB_CHG_POL_DEL: case SADB_CHG_FLUSH_POL:
					pol = true;
					break;
				default:
					break;
				}
			}
		}
		if (n == -ESTALE) {
			st->need_full = true;
			free(dirty);
			return dp_sa_sync(ctx);
		}
		if (n < 0) {
			free(dirty);
			return n;
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->max_sa = st->max_sa;
	t->slot = calloc(st->max_sa, sizeof(*t->slot));
	dead = calloc(st->max_sa, sizeof(*dead));
	if (!t->slot || !dead)
		goto fail;
	if (old)
		memcpy(t->slot, old->slot, st->max_sa * sizeof(*t->slot));
	for (uint32_t i = 0; i < st->max_sa; i++) {
		struct sadb_sa rec;
		struct dp_sa *cur = t->slot[i];

		if (!dirty[i])
			continue;
		if (sadb_sa_get(ctx->db, i, &rec) == 0) {
			test_pause(st, &rec);
			if (cur && same_record(&cur->sa, &rec))
				continue;
			if (cur)
				cur->deleted = cur->sa.instance != rec.instance;
			t->slot[i] = sa_make(ctx, st, &rec, i);
			explicit_bzero(&rec, sizeof(rec));
			if (t->slot[i] && cur && cur->sa.instance == t->slot[i]->sa.instance) {
				/* an update of the same SA: its lifetimes still count from when it came */
				t->slot[i]->seen_ns = cur->seen_ns;
				t->slot[i]->use_seen_ns = cur->use_seen_ns;
			} else if (t->slot[i]) {
				t->slot[i]->seen_ns = dp_realtime_ns();
			}
		} else {
			t->slot[i] = NULL;
			if (cur)
				cur->deleted = true;
		}
		if (cur)
			dead[n_dead++] = cur;
	}
	n_dead = drop_replaced(ctx, t, old, dead, n_dead);
	{
		/* the new persisted SAs' leases, before the table is visible (sa_make) */
		struct dp_sa **lease = calloc(st->max_sa, sizeof(*lease));
		unsigned n_lease = 0;

		if (!lease)
			goto fail;
		for (uint32_t i = 0; i < st->max_sa; i++) {
			struct dp_sa *s = t->slot[i];

			if (s && (!old || old->slot[i] != s) && !s->unusable && dp_seqmark_needed(&s->sa) &&
			    s->sa.dir == SADB_DIR_OUT)
				lease[n_lease++] = s;
		}
		seq_lease(st, lease, n_lease);
		free(lease);
	}
	err = build_hashes(ctx, t);
	if (err)
		goto fail;
	spi_filter_diff(ctx, old, t, true);
	rcu_assign_pointer(ctx->satab, t);
	ctx->sadb_gen = gen;
	st->need_full = false;
	if (pol && dp_xdp_local_spd(ctx))
		st->need_full = true;    /* the local SPD is built again next round */
	/* After the grace period no worker holds the old table or the replaced SAs. */
	synchronize_rcu();
	window_handover(st, t, old, dead, n_dead);
	spi_filter_diff(ctx, t, old, false);
	tab_free(old);
	for (uint32_t i = 0; i < n_dead; i++) {
		/* no worker adds to its counters any more, and its slot is not released yet: they
		 * are final (dp_stats.c) */
		if (dead[i]->deleted && dead[i]->sa.state != SADB_STATE_LARVAL)
			dp_stats_gone(ctx, &dead[i]->sa, dead[i]->slot);
		sa_free(dead[i], ctx->n_workers);
	}
	/* Every SA deleted up to here is gone from this process: its slot may take a new SA. */
	sadb_dp_release(ctx->db, st->since);
	free(dead);
	free(dirty);
	return 0;
fail:
	/* undo: objects made for this table are not referenced by the old one */
	for (uint32_t i = 0; t->slot && i < st->max_sa; i++)
		if (t->slot[i] && (!old || old->slot[i] != t->slot[i]))
			sa_free(t->slot[i], ctx->n_workers);
	tab_free(t);
	free(dead);
out:
	free(dirty);
	st->need_full = true;
	return err;
}

void dp_sa_fini(struct dp_ctx *ctx)
{
	struct dp_sa_state *st = ctx->sa_state;
	struct dp_satab *t = ctx->satab;

	if (t) {
		rcu_assign_pointer(ctx->satab, NULL);
		synchronize_rcu();
		/* the workers have stopped: every window is final */
		window_release(st, t->slot, t->max_sa);
		for (uint32_t i = 0; i < t->max_sa; i++)
			sa_free(t->slot[i], ctx->n_workers);
		tab_free(t);
	}
	if (st) {
		if (st->state_fd >= 0)
			close(st->state_fd);
		free((void *)st->in_lock);
		free(st);
	}
	ctx->sa_state = NULL;
}

void dp_sa_tick(struct dp_ctx *ctx)
{
	struct dp_satab *t = ctx->satab;

	if (!t)
		return;
	struct dp_sa_state *st = ctx->sa_state;
	uint64_t now = dp_now_ns();
	unsigned n_due = 0;

	/* Every persisted SA when an engine object said a lease runs low, else once a second: the
	 * hint is set as a reservation comes within half a lease of the end (a lease of 2^20 lasts a
	 * busy SA at least 50 ms from there), and the look once a second retries failed leases and
	 * covers an SA that no packet has asked for numbers since its lease was taken. */
	if (!atomic_exchange_explicit(&st->lease_hint, 0, memory_order_acq_rel) && now < st->lease_scan_ns)
		goto expire;
	st->lease_scan_ns = now + DP_LEASE_SCAN_NS;
	for (uint32_t i = 0; i < t->n_persist; i++) {
		struct dp_sa *s = t->persist[i];
		if (dp_seqmark_due(&s->sa, s->rt, atomic_load_explicit(&s->window_want, memory_order_relaxed)) &&
		    now >= s->lease_retry_ns)
			t->persist_due[n_due++] = s;
	}
	seq_lease(st, t->persist_due, n_due);
expire:
	dp_expire_tick(ctx, &((struct dp_sa_state *)ctx->sa_state)->expire, t->expiring,
		       t->n_expiring);
	dp_cluster_tick(ctx, t->clustered, t->n_clustered);
}

uint32_t dp_sa_cluster_list(struct dp_ctx *ctx, struct dp_sa *const **v)
{
	struct dp_satab *t = ctx->satab;

	*v = t ? t->clustered : NULL;
	return t ? t->n_clustered : 0;
}

unsigned dp_sa_count(struct dp_ctx *ctx)
{
	struct dp_satab *t = ctx->satab;
	unsigned n = 0;

	if (t)
		for (uint32_t i = 0; i < t->max_sa; i++)
			n += t->slot[i] != NULL;
	return n;
}
