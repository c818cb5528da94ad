/* sadb/sadb.c: libsadb's segment (create, open, layout check), the robust writer lock and crash
 * recovery, transactions, the SA and policy writer API, the lock-free record readers, the SPI hash
 * and the change journal. The multi-version scheme that makes every change atomic for readers is
 * explained at the top of sadb_int.h; the SPD index lives in sadb_spd.c. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define PAGE 4096u

struct tbl {
	uint8_t *slots;
	uint32_t slot_size, rec_size, cap;
	bool pol;
};

static inline struct tbl sa_tbl(const struct sadb *db)
{
	return (struct tbl){ db->sa_slots, db->h->sa_slot_size, sizeof(struct sadb_sa), db->h->max_sa, false };
}

static inline struct tbl pol_tbl(const struct sadb *db)
{
	return (struct tbl){ db->pol_slots, db->h->pol_slot_size, sizeof(struct sadb_policy),
			     db->h->max_policy, true };
}

/* Slot header: tag[0], tag[1], then seq, which a writer bumps before every tag change. */
#define SLOT_HDR 24

static inline size_t copy_size(size_t rec)
{
	return ALIGN_UP(sizeof(struct sadb_copy_hdr) + rec, 8);
}

static inline size_t slot_size_for(size_t rec)
{
	return ALIGN_UP(SLOT_HDR + 2 * copy_size(rec), 64);
}


static inline _Atomic uint64_t *slot_seq(const struct tbl *t, uint32_t i)
{
	return (_Atomic uint64_t *)(t->slots + (size_t)i * t->slot_size + 16);
}

static inline _Atomic uint64_t *slot_tags(const struct tbl *t, uint32_t i)
{
	return (_Atomic uint64_t *)(t->slots + (size_t)i * t->slot_size);
}

static inline struct sadb_copy_hdr *slot_copy(const struct tbl *t, uint32_t i, int c)
{
	return (struct sadb_copy_hdr *)(t->slots + (size_t)i * t->slot_size + SLOT_HDR +
					(size_t)c * copy_size(t->rec_size));
}

static inline void *copy_rec(struct sadb_copy_hdr *c)
{
	return c + 1;
}

static uint64_t now_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

void sadb__test_stop(struct sadb *db, int point)
{
	if (db->stop_point == point && --db->stop_count == 0)
		raise(SIGSTOP);
}

/* ---- layout ---- */

struct layout {
	uint64_t off_sa, off_sa_meta, off_rt, off_dp, off_hash, off_sa_free;
	uint64_t off_pol, off_pol_meta, off_pol_free, off_idx[2], off_log, size, idx_size;
	uint32_t sa_slot, pol_slot, rt, nbuckets, log_cap;
};

static void compute_layout(uint32_t max_sa, uint32_t max_pol, struct layout *l)
{
	uint64_t o = ALIGN_UP(sizeof(struct sadb_hdr), PAGE);
	uint32_t nb = 2;

	/* Eight entries per bucket and at least four entries per SA keep two-choice buckets from
	 * overflowing (the expected fullest bucket stays well below eight). */
	while ((uint64_t)nb * SADB_HASH_WAYS < 4ull * max_sa)
		nb <<= 1;
	l->sa_slot = (uint32_t)slot_size_for(sizeof(struct sadb_sa));
	l->pol_slot = (uint32_t)slot_size_for(sizeof(struct sadb_policy));
	l->rt = (uint32_t)ALIGN_UP(sizeof(struct sadb_runtime), 64);
	l->nbuckets = nb;
	l->log_cap = max_sa + max_pol;
	l->idx_size = ALIGN_UP(sadb__idx_size(max_pol), PAGE);

	l->off_sa = o;        o = ALIGN_UP(o + (uint64_t)max_sa * l->sa_slot, PAGE);
	l->off_sa_meta = o;   o = ALIGN_UP(o + (uint64_t)max_sa * sizeof(struct sadb_sa_meta), PAGE);
	/* The runtime area is page-aligned so a SADB_RUNTIME handle can map only it writable. */
	l->off_rt = o;        o = ALIGN_UP(o + (uint64_t)max_sa * l->rt, PAGE);
	/* The dataplane stats area follows it directly, so the same writable window covers both. */
	l->off_dp = o;        o = ALIGN_UP(o + sizeof(struct sadb_dp_stats), PAGE);
	l->off_hash = o;      o = ALIGN_UP(o + (uint64_t)nb * SADB_HASH_WAYS * 8, PAGE);
	l->off_sa_free = o;   o = ALIGN_UP(o + (uint64_t)max_sa * 4, PAGE);
	l->off_pol = o;       o = ALIGN_UP(o + (uint64_t)max_pol * l->pol_slot, PAGE);
	l->off_pol_meta = o;  o = ALIGN_UP(o + (uint64_t)max_pol * sizeof(struct sadb_pol_meta), PAGE);
	l->off_pol_free = o;  o = ALIGN_UP(o + (uint64_t)max_pol * 4, PAGE);
	l->off_idx[0] = o;    o += l->idx_size;
	l->off_idx[1] = o;    o += l->idx_size;
	l->off_log = o;       o = ALIGN_UP(o + (uint64_t)l->log_cap * 4, PAGE);
	l->size = o;
}

static void map_regions(struct sadb *db)
{
	struct sadb_hdr *h = (struct sadb_hdr *)db->base;

	db->h = h;
	db->sa_slots = db->base + h->off_sa;
	db->sa_meta = (struct sadb_sa_meta *)(db->base + h->off_sa_meta);
	db->rt = db->base + h->off_rt;
	db->hash = (_Atomic uint64_t *)(db->base + h->off_hash);
	db->sa_free = (uint32_t *)(db->base + h->off_sa_free);
	db->pol_slots = db->base + h->off_pol;
	db->pol_meta = (struct sadb_pol_meta *)(db->base + h->off_pol_meta);
	db->pol_free = (uint32_t *)(db->base + h->off_pol_free);
	db->idx[0] = db->base + h->off_idx[0];
	db->idx[1] = db->base + h->off_idx[1];
	db->log = (uint32_t *)(db->base + h->off_log);
}

static int init_mutex(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int r;

	if ((r = pthread_mutexattr_init(&a)))
		return -r;
	r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!r)
		r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!r)
		r = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (!r)
		r = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -r;
}

#define OPEN_ERR(...) do { if (errmsg && errlen) snprintf(errmsg, errlen, __VA_ARGS__); } while (0)

/* Build the whole segment in a private temporary file and link it into place, so nobody ever opens
 * a half-initialised segment and two creators racing end up sharing one. Returns the fd of the
 * segment now at path (O_RDWR), or -EEXIST when something else took the name first: that is not
 * ours, so the caller opens it through the same checks as any existing file. */
static int create_segment(const char *path, const struct sadb_params *p, char *errmsg, size_t errlen)
{
	uint32_t max_sa = p && p->max_sa ? p->max_sa : SADB_DEFAULT_MAX_SA;
	uint32_t max_pol = p && p->max_policy ? p->max_policy : SADB_DEFAULT_MAX_POLICY;
	char tmp[300];
	struct layout l;
	struct sadb_hdr *h;
	uint64_t seed;
	void *base;
	int fd, r;

	if (max_sa > SADB_MAX_SA_LIMIT) {
		OPEN_ERR("max_sa %u exceeds the limit of %u SAs", max_sa, SADB_MAX_SA_LIMIT);
		return -EINVAL;
	}
	if (max_pol > SADB_MAX_SA_LIMIT) {
		OPEN_ERR("max_policy %u exceeds the limit of %u policies", max_pol, SADB_MAX_SA_LIMIT);
		return -EINVAL;
	}
	compute_layout(max_sa, max_pol, &l);
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	/* O_EXCL: a name somebody else made (a file, a symbolic link) is never reused; try another. */
	for (int k = 0; k < 16; k++) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%llx", path, (int)getpid(),
			 (unsigned long long)((seed >> (k * 4)) & 0xffffff) ^ (unsigned)k);
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		r = -errno;
		OPEN_ERR("cannot create %s: %s", tmp, strerror(errno));
		return r;
	}
	/* 0600 whatever the umask or an inherited ACL says: the segment holds keys. */
	if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)l.size) < 0) {
		r = -errno;
		OPEN_ERR("cannot size %s to %llu bytes: %s", tmp, (unsigned long long)l.size, strerror(errno));
		goto fail;
	}
	base = mmap(NULL, ALIGN_UP(sizeof(struct sadb_hdr), PAGE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		r = -errno;
		OPEN_ERR("cannot map %s: %s", tmp, strerror(errno));
		goto fail;
	}
	h = base;
	h->magic = SADB_MAGIC;
	h->layout_version = SADB_LAYOUT_VERSION;
	h->hdr_size = sizeof(struct sadb_hdr);
	h->sizeof_sa = sizeof(struct sadb_sa);
	h->sizeof_policy = sizeof(struct sadb_policy);
	h->sizeof_runtime = sizeof(struct sadb_runtime);
	h->sizeof_mutex = sizeof(pthread_mutex_t);
	h->max_sa = max_sa;
	h->max_policy = max_pol;
	h->size = l.size;
	h->off_sa = l.off_sa;
	h->off_sa_meta = l.off_sa_meta;
	h->off_rt = l.off_rt;
	h->off_hash = l.off_hash;
	h->off_sa_free = l.off_sa_free;
	h->off_pol = l.off_pol;
	h->off_pol_meta = l.off_pol_meta;
	h->off_pol_free = l.off_pol_free;
	h->off_idx[0] = l.off_idx[0];
	h->off_idx[1] = l.off_idx[1];
	h->off_log = l.off_log;
	h->sa_slot_size = l.sa_slot;
	h->pol_slot_size = l.pol_slot;
	h->rt_size = l.rt;
	h->hash_nbuckets = l.nbuckets;
	h->idx_size = l.idx_size;
	h->log_cap = l.log_cap;
	h->journal_len = SADB_JOURNAL_LEN;
	h->hash_seed = seed | 1;
	h->created = now_realtime();
	h->internal_rev = SADB_INTERNAL_REV;
	h->next_instance = 1;
	/* Generation 1 is the empty database; tags 0 mean "no copy". */
	atomic_store(&h->gen, 1);
	r = init_mutex(&h->lock);
	munmap(base, ALIGN_UP(sizeof(struct sadb_hdr), PAGE));
	if (r) {
		OPEN_ERR("cannot initialise the robust writer lock: %s", strerror(-r));
		goto fail;
	}
	/* link() never replaces an existing name and never follows a symbolic link at path. */
	if (link(tmp, path) < 0) {
		r = -errno;
		if (r != -EEXIST)
			OPEN_ERR("cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	unlink(tmp);
	return fd;
fail:
	unlink(tmp);
	close(fd);
	return r;
}

static int check_header(const struct sadb_hdr *h, uint64_t fsize, const char *path, char *errmsg, size_t errlen)
{
	struct layout l;

	if (h->magic != SADB_MAGIC) {
		OPEN_ERR("%s is not an xipsec SADB (magic 0x%016llx, expected 0x%016llx)", path,
			 (unsigned long long)h->magic, (unsigned long long)SADB_MAGIC);
		return -EPROTO;
	}
	if (h->layout_version != SADB_LAYOUT_VERSION) {
		OPEN_ERR("%s has SADB layout version %u but this program was built for layout version %u: "
			 "stop every xipsec process and recreate the SADB", path, h->layout_version,
			 SADB_LAYOUT_VERSION);
		return -EPROTO;
	}
	if (h->internal_rev != SADB_INTERNAL_REV) {
		OPEN_ERR("%s: SADB layout mismatch (internal revision %u, this program has %u): built from "
			 "different sources; stop every xipsec process and recreate the SADB", path, h->internal_rev,
			 SADB_INTERNAL_REV);
		return -EPROTO;
	}
	if (h->hdr_size != sizeof(struct sadb_hdr) || h->sizeof_sa != sizeof(struct sadb_sa) ||
	    h->sizeof_policy != sizeof(struct sadb_policy) || h->sizeof_runtime != sizeof(struct sadb_runtime) ||
	    h->sizeof_mutex != sizeof(pthread_mutex_t) || h->journal_len != SADB_JOURNAL_LEN) {
		OPEN_ERR("%s: SADB layout mismatch (segment/program: header %u/%zu, sa %u/%zu, policy %u/%zu, "
			 "runtime %u/%zu bytes): built from different sources", path, h->hdr_size,
			 sizeof(struct sadb_hdr), h->sizeof_sa, sizeof(struct sadb_sa), h->sizeof_policy,
			 sizeof(struct sadb_policy), h->sizeof_runtime, sizeof(struct sadb_runtime));
		return -EPROTO;
	}
	if (h->max_sa == 0 || h->max_sa > SADB_MAX_SA_LIMIT || h->max_policy == 0 ||
	    h->max_policy > SADB_MAX_SA_LIMIT) {
		OPEN_ERR("%s: SADB header corrupt (capacities %u SAs, %u policies)", path, h->max_sa, h->max_policy);
		return -EPROTO;
	}
	compute_layout(h->max_sa, h->max_policy, &l);
	if (h->size != l.size || h->off_sa != l.off_sa || h->off_rt != l.off_rt || h->off_hash != l.off_hash ||
	    h->off_pol != l.off_pol || h->off_idx[0] != l.off_idx[0] || h->off_idx[1] != l.off_idx[1] ||
	    h->off_log != l.off_log || h->sa_slot_size != l.sa_slot || h->pol_slot_size != l.pol_slot ||
	    h->rt_size != l.rt || h->hash_nbuckets != l.nbuckets || h->idx_size != l.idx_size ||
	    h->log_cap != l.log_cap || h->off_sa_meta != l.off_sa_meta || h->off_sa_free != l.off_sa_free ||
	    h->off_pol_meta != l.off_pol_meta || h->off_pol_free != l.off_pol_free) {
		OPEN_ERR("%s: SADB layout mismatch (region offsets differ from this program's layout "
			 "version %u)", path, SADB_LAYOUT_VERSION);
		return -EPROTO;
	}
	if (fsize != h->size) {
		OPEN_ERR("%s: SADB truncated or padded (%llu bytes, header says %llu)", path,
			 (unsigned long long)fsize, (unsigned long long)h->size);
		return -EPROTO;
	}
	/* Counts that never exceed the capacities in a SADB libsadb wrote (readers bound their loops
	 * by the capacities as well: these can change after open). */
	if (h->sa_hwm > h->max_sa || h->pol_hwm > h->max_policy || h->n_sa > h->max_sa ||
	    h->n_policy > h->max_policy || h->txn.nlog > h->log_cap) {
		OPEN_ERR("%s: SADB corrupt (slots in use %u/%u SAs, %u/%u policies, counts %u SAs, %u policies, "
			 "txn log %u/%u)", path, (unsigned)h->sa_hwm, h->max_sa, (unsigned)h->pol_hwm, h->max_policy,
			 (unsigned)h->n_sa, (unsigned)h->n_policy, (unsigned)h->txn.nlog, h->log_cap);
		return -EPROTO;
	}
	return 0;
}

static void parse_stop_env(struct sadb *db)
{
	const char *e = getenv("XIPSEC_SADB_TEST_STOP");
	static const char *const names[] = { "", "locked", "copy", "precommit", "postcommit" };
	const char *colon;
	size_t n;

	db->stop_point = SADB_STOP_NONE;
	if (!e || !*e)
		return;
	colon = strchr(e, ':');
	n = colon ? (size_t)(colon - e) : strlen(e);
	for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (strlen(names[i]) == n && strncmp(e, names[i], n) == 0)
			db->stop_point = i;
	db->stop_count = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 1;
	if (db->stop_count == 0)
		db->stop_count = 1;
}

/* XIPSEC_SADB_LOCK_TIMEOUT_MS shortens (or lengthens) how long a writer waits for the lock. */
static unsigned lock_timeout_env(void)
{
	const char *e = getenv("XIPSEC_SADB_LOCK_TIMEOUT_MS");
	unsigned long v;
	char *end;

	if (!e || !*e)
		return SADB_LOCK_TIMEOUT_S * 1000u;
	v = strtoul(e, &end, 10);
	return *end || v == 0 || v > 3600000ul ? SADB_LOCK_TIMEOUT_S * 1000u : (unsigned)v;
}

int sadb_open(const char *path, int flags, const struct sadb_params *params, struct sadb **out,
	      char *errmsg, size_t errlen)
{
	bool rw = flags & (SADB_RDWR | SADB_RUNTIME);
	struct sadb_hdr hdr;
	struct sadb *db;
	struct stat st;
	int fd = -1, r, prot;
	void *base;

	if (errmsg && errlen)
		errmsg[0] = '\0';
	if (!out) {
		OPEN_ERR("sadb_open: out is NULL");
		return -EINVAL;
	}
	*out = NULL;
	if (flags & ~(SADB_RDWR | SADB_CREATE | SADB_RUNTIME)) {
		OPEN_ERR("sadb_open: unknown flags 0x%x", flags);
		return -EINVAL;
	}
	if (params && (params->max_sa > SADB_MAX_SA_LIMIT || params->max_policy > SADB_MAX_SA_LIMIT)) {
		OPEN_ERR("capacity above the limit of %u (asked %u SAs, %u policies)", SADB_MAX_SA_LIMIT,
			 params->max_sa, params->max_policy);
		return -EINVAL;
	}
	if (!path)
		path = sadb_default_path();
	if (strlen(path) >= sizeof(db->path) - 32) {
		OPEN_ERR("SADB path too long");
		return -ENAMETOOLONG;
	}
	/* Only a file we made is trusted (sadb_file.c). A creator that loses the race to link its new
	 * segment opens whatever won through the same checks, never assuming it is a SADB of ours. */
	for (int tries = 0; tries < 4; tries++) {
		fd = sadb__open_file(path, rw, errmsg, errlen);
		if (fd != -ENOENT || !(flags & SADB_CREATE))
			break;
		fd = create_segment(path, params, errmsg, errlen);
		if (fd != -EEXIST)
			break;
	}
	if (fd < 0) {
		if (fd == -ENOENT)
			OPEN_ERR("%s: no SADB here (is xipsecd or xipsec-iked running? SADB path from --sadb or $%s)",
				 path, SADB_ENV_PATH);
		else if (fd == -EEXIST)
			OPEN_ERR("%s: cannot create the SADB: its name keeps appearing and disappearing", path);
		return fd;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		OPEN_ERR("cannot stat %s: %s", path, strerror(errno));
		goto fail;
	}
	if ((uint64_t)st.st_size < sizeof(hdr)) {
		OPEN_ERR("%s is not an xipsec SADB (only %lld bytes)", path, (long long)st.st_size);
		r = -EPROTO;
		goto fail;
	}
	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		r = -EIO;
		OPEN_ERR("cannot read the header of %s", path);
		goto fail;
	}
	r = check_header(&hdr, (uint64_t)st.st_size, path, errmsg, errlen);
	if (r)
		goto fail;
	prot = (flags & SADB_RDWR) ? PROT_READ | PROT_WRITE : PROT_READ;
	base = mmap(NULL, hdr.size, prot, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		r = -errno;
		OPEN_ERR("cannot map %s (%llu bytes): %s", path, (unsigned long long)hdr.size, strerror(errno));
		goto fail;
	}
	/* Where the tmpfs allows it (mounted huge=advise or within_size), 2 MB pages keep a table of a
	 * million SAs within the TLB's reach; elsewhere this is a no-op. */
	(void)madvise(base, hdr.size, MADV_HUGEPAGE);
	if ((flags & SADB_RUNTIME) && !(flags & SADB_RDWR) &&
	    mprotect((uint8_t *)base + hdr.off_rt, hdr.off_hash - hdr.off_rt, PROT_READ | PROT_WRITE) < 0) {
		r = -errno;
		OPEN_ERR("cannot make the runtime area of %s writable: %s", path, strerror(errno));
		munmap(base, hdr.size);
		goto fail;
	}
	db = calloc(1, sizeof(*db));
	if (!db) {
		munmap(base, hdr.size);
		r = -ENOMEM;
		OPEN_ERR("out of memory");
		goto fail;
	}
	db->fd = fd;
	db->flags = flags;
	db->base = base;
	db->size = hdr.size;
	snprintf(db->path, sizeof(db->path), "%s", path);
	map_regions(db);
	parse_stop_env(db);
	db->lock_timeout_ms = lock_timeout_env();
	*out = db;
	return 0;
fail:
	close(fd);
	return r;
}

static void txn_abort_locked(struct sadb *db);
static void selmap_drop(struct sadb *db);
static void wunlock(struct sadb *db);

void sadb_close(struct sadb *db)
{
	if (!db)
		return;
	if (db->txn_open) {
		txn_abort_locked(db);
		wunlock(db);
	}
	munmap(db->base, db->size);
	close(db->fd);
	free(db->bld_items);
	free(db->bld_tmp);
	free(db->bld_tail);
	selmap_drop(db);
	free(db);
}

int sadb_info(const struct sadb *db, struct sadb_info *info)
{
	if (!db || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->magic = db->h->magic;
	info->layout_version = db->h->layout_version;
	info->max_sa = db->h->max_sa;
	info->max_policy = db->h->max_policy;
	info->n_sa = atomic_load_explicit(&db->h->n_sa, memory_order_relaxed);
	info->n_policy = atomic_load_explicit(&db->h->n_policy, memory_order_relaxed);
	info->generation = atomic_load_explicit(&db->h->gen, memory_order_acquire);
	info->size = db->size;
	return 0;
}

uint64_t sadb_generation(const struct sadb *db)
{
	return atomic_load_explicit(&db->h->gen, memory_order_acquire);
}

/* ---- lock-free record reads ---- */

enum { SNAP_FREE = 0, SNAP_USED = 1, SNAP_RETRY = -1 };

/* Copy slot i as of generation g. A copy tagged above g but already committed means g is stale: the
 * caller retries with a fresh generation. Copies tagged WRITING or above the committed generation
 * belong to a transaction in progress (or a dead one) and are ignored, so a stopped writer never
 * makes readers spin. */
static int snap_read(const struct sadb *db, const struct tbl *t, uint32_t i, uint64_t g, void *out)
{
	_Atomic uint64_t *seq = slot_seq(t, i), *tag = slot_tags(t, i);
	uint64_t s0 = atomic_load_explicit(seq, memory_order_acquire);
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_acquire);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_acquire);
	bool v0 = t0 && t0 <= g, v1 = t1 && t1 <= g;
	struct sadb_copy_hdr *c;
	uint64_t tc;
	uint32_t used;
	int ci;

	if (!v0 && !v1) {
		uint64_t now = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		if ((t0 > g && t0 <= now) || (t1 > g && t1 <= now))
			return SNAP_RETRY;
		/* The two tags were loaded one after the other: only if nothing changed in between
		 * do they describe one instant, at which a record in use always has a committed copy. */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(seq, memory_order_relaxed) != s0)
			return SNAP_RETRY;
		return SNAP_FREE;
	}
	ci = v0 && (!v1 || t0 > t1) ? 0 : 1;
	tc = ci ? t1 : t0;
	c = slot_copy(t, i, ci);
	used = c->used;
	if (used)
		memcpy(out, copy_rec(c), t->rec_size);
	/* Pairs with the writer's release fence after it marks the copy WRITING: if any byte we
	 * copied is new, the tag we re-read is no longer tc. */
	atomic_thread_fence(memory_order_acquire);
	/* seq unchanged: neither copy moved while we chose and copied, so the copy was whole and was
	 * the newest one as of g. */
	if (atomic_load_explicit(seq, memory_order_relaxed) != s0 ||
	    atomic_load_explicit(&tag[ci], memory_order_relaxed) != tc)
		return SNAP_RETRY;
	return used ? SNAP_USED : SNAP_FREE;
}

static bool sa_sum_ok(const struct sadb_sa *sa)
{
	return sadb__sa_checksum(sa) == sa->checksum;
}

static bool pol_sum_ok(const struct sadb_policy *p)
{
	return sadb__policy_checksum(p) == p->checksum;
}

/* ---- SPI hash: two-choice buckets of eight (fingerprint << 32 | slot + 1) hints ---- */

static uint64_t sa_key_hash(const struct sadb_hdr *h, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	uint64_t w01 = 0, w23 = 0, x;

	if (dst->family == AF_INET) {
		w01 = dst->a.w[0];
	} else if (dst->family == AF_INET6) {
		memcpy(&w01, dst->a.b, 8);
		memcpy(&w23, dst->a.b + 8, 8);
	}
	/* Two rounds for IPv4 (SPI and address in one word, then protocol and family), three for IPv6. */
	x = sadb__mix64(h->hash_seed ^ ((uint64_t)spi << 32 | (w01 & 0xffffffffu)));
	x = sadb__mix64(x ^ (w01 & 0xffffffff00000000ULL) ^ ((uint64_t)proto << 8 | dst->family));
	if (w23)
		x = sadb__mix64(x ^ w23);
	return x | 1;
}

static inline void hash_buckets(const struct sadb_hdr *h, uint64_t hv, uint32_t *b1, uint32_t *b2)
{
	uint32_t mask = h->hash_nbuckets - 1;

	*b1 = (uint32_t)hv & mask;
	*b2 = (uint32_t)(sadb__mix64(hv >> 32) & mask);
	if (*b2 == *b1)
		*b2 = *b1 ^ 1;
}

void sadb__sa_buckets(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		      uint32_t *b1, uint32_t *b2)
{
	hash_buckets(db->h, sa_key_hash(db->h, spi, proto, dst), b1, b2);
}

static inline _Atomic uint64_t *bucket(const struct sadb *db, uint32_t b)
{
	return db->hash + (size_t)b * SADB_HASH_WAYS;
}

static inline uint64_t hash_entry(uint64_t hv, uint32_t slot)
{
	return (hv >> 32) << 32 | (uint64_t)(slot + 1);
}

static bool sa_ident_eq(const struct sadb_sa *sa, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	return sa->spi == spi && sa->proto == proto && sadb_addr_eq(&sa->dst, dst);
}

static int bad_arg(const struct sadb *db, const char *what)
{
	sadb__set_err(db, "%s", what);
	return -EINVAL;
}

int sadb_sa_lookup(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		   struct sadb_sa *out, uint32_t *slot)
{
	uint64_t hv, fp;
	uint32_t b[2];
	unsigned bad_sum = 0;

	if (!db || !dst || !out)
		return bad_arg(db, "sadb_sa_lookup: NULL argument");
	hv = sa_key_hash(db->h, spi, proto, dst);
	fp = hv >> 32;
	hash_buckets(db->h, hv, &b[0], &b[1]);
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t moves = atomic_load_explicit(&db->h->hash_moves, memory_order_acquire);
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		struct tbl t = sa_tbl(db);
		bool retry = false;

		for (int k = 0; k < 2 && !retry; k++) {
			_Atomic uint64_t *bk = bucket(db, b[k]);
			for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
				uint64_t e = atomic_load_explicit(&bk[w], memory_order_acquire);
				uint32_t s = (uint32_t)e;
				int r;

				if ((e >> 32) != fp || s == 0 || s > t.cap)
					continue;
				/* Copied straight into out: a torn or foreign copy is overwritten by the
				 * next attempt, and wiped if the lookup fails. */
				r = snap_read(db, &t, s - 1, g, out);
				if (r == SNAP_USED && !sa_sum_ok(out) && ++bad_sum > 16) {
					/* A stable copy with a bad checksum is corruption, not a race
					 * (as in read_slot): fail now rather than spin. */
					explicit_bzero(out, sizeof(*out));
					sadb__set_err(db, "SA record in slot %u fails its checksum", s - 1);
					return -EIO;
				}
				if (r == SNAP_RETRY || (r == SNAP_USED && !sa_sum_ok(out))) {
					retry = true;
					break;
				}
				if (r == SNAP_USED && sa_ident_eq(out, spi, proto, dst)) {
					if (slot)
						*slot = s - 1;
					return 0;
				}
			}
		}
		atomic_thread_fence(memory_order_acquire);
		if (!retry && atomic_load_explicit(&db->h->hash_moves, memory_order_relaxed) == moves) {
			explicit_bzero(out, sizeof(*out));
			sadb__set_errc(db, "no SA with that SPI, protocol and destination");
			return -ENOENT;
		}
		sadb__read_retry();
	}
	explicit_bzero(out, sizeof(*out));
	sadb__set_err(db, "SA lookup kept racing with writers; gave up");
	return -EAGAIN;
}

/* Read one record of table t at slot i into out (rec_size bytes); 0, -ENOENT, -EAGAIN, -EIO. */
static int read_slot(const struct sadb *db, const struct tbl *t, uint32_t i, void *out)
{
	unsigned bad_sum = 0;

	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		int r = snap_read(db, t, i, g, out);

		if (r == SNAP_FREE)
			return -ENOENT;
		if (r == SNAP_USED) {
			if (t->pol ? pol_sum_ok(out) : sa_sum_ok(out))
				return 0;
			/* A stable copy with a bad checksum is corruption, not a race. */
			if (++bad_sum > 16) {
				sadb__set_err(db, "record in slot %u fails its checksum", i);
				return -EIO;
			}
		}
		sadb__read_retry();
	}
	sadb__set_err(db, "read of slot %u kept racing with writers; gave up", i);
	return -EAGAIN;
}

int sadb_sa_get(const struct sadb *db, uint32_t slot, struct sadb_sa *out)
{
	struct tbl t;
	int r;

	if (!db || !out)
		return bad_arg(db, "sadb_sa_get: NULL argument");
	t = sa_tbl(db);
	if (slot >= t.cap) {
		sadb__set_err(db, "slot %u out of range (capacity %u)", slot, t.cap);
		return -EINVAL;
	}
	/* Slots never used are free: do not fault in pages of a sparse segment for them. */
	if (slot >= atomic_load_explicit(&db->h->sa_hwm, memory_order_acquire)) {
		sadb__set_err(db, "slot %u is free", slot);
		return -ENOENT;
	}
	r = read_slot(db, &t, slot, out);
	if (r == -ENOENT)
		sadb__set_err(db, "slot %u is free", slot);
	return r;
}

int sadb_sa_next(const struct sadb *db, uint32_t *cursor, struct sadb_sa *out, uint32_t *slot)
{
	struct tbl t;
	uint32_t hwm;

	if (!db || !cursor || !out)
		return bad_arg(db, "sadb_sa_next: NULL argument");
	t = sa_tbl(db);
	hwm = atomic_load_explicit(&db->h->sa_hwm, memory_order_acquire);
	if (hwm > t.cap)
		hwm = t.cap; /* never trust the segment with a slot index */
	for (uint32_t i = *cursor; i < hwm; i++) {
		int r = read_slot(db, &t, i, out);
		if (r == -ENOENT)
			continue;
		if (r)
			return r;
		*cursor = i + 1;
		if (slot)
			*slot = i;
		return 0;
	}
	*cursor = hwm;
	return -ENOENT;
}

int sadb_policy_get(const struct sadb *db, uint32_t id, struct sadb_policy *out)
{
	struct tbl t;
	uint32_t i;
	int r;

	if (!db || !out)
		return bad_arg(db, "sadb_policy_get: NULL argument");
	t = pol_tbl(db);
	if (id == 0) {
		sadb__set_err(db, "policy id 0 is never assigned");
		return -ENOENT;
	}
	i = (id - 1) % t.cap;
	if (i >= atomic_load_explicit(&db->h->pol_hwm, memory_order_acquire)) {
		sadb__set_err(db, "no policy with id %u", id);
		return -ENOENT;
	}
	r = read_slot(db, &t, i, out);
	if (r == 0 && out->id != id)
		r = -ENOENT;
	if (r == -ENOENT)
		sadb__set_err(db, "no policy with id %u", id);
	return r;
}

int sadb_policy_next(const struct sadb *db, uint32_t *cursor, struct sadb_policy *out)
{
	struct tbl t;
	uint32_t hwm;

	if (!db || !cursor || !out)
		return bad_arg(db, "sadb_policy_next: NULL argument");
	t = pol_tbl(db);
	hwm = atomic_load_explicit(&db->h->pol_hwm, memory_order_acquire);
	if (hwm > t.cap)
		hwm = t.cap; /* never trust the segment with a slot index */
	for (uint32_t i = *cursor; i < hwm; i++) {
		int r = read_slot(db, &t, i, out);
		if (r == -ENOENT)
			continue;
		if (r)
			return r;
		*cursor = i + 1;
		return 0;
	}
	*cursor = hwm;
	return -ENOENT;
}

int sadb_policy_lookup(const struct sadb *db, uint8_t dir, const struct sadb_pkt_sel *pkt,
		       struct sadb_policy *out)
{
	unsigned bad = 0;

	if (!db || !pkt || !out)
		return bad_arg(db, "sadb_policy_lookup: NULL argument");
	if (dir < SADB_DIR_IN || dir > SADB_DIR_FWD)
		return bad_arg(db, "sadb_policy_lookup: dir is not in, out or fwd");
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&db->h->gen, memory_order_acquire);
		uint64_t i0 = atomic_load_explicit(&db->h->idx_gen[0], memory_order_acquire);
		uint64_t i1 = atomic_load_explicit(&db->h->idx_gen[1], memory_order_acquire);
		bool v0 = i0 && i0 <= g, v1 = i1 && i1 <= g;
		int b, r;
		uint64_t ib;

		if (!v0 && !v1) {
			/* No index yet, or both buffers moved on since g was read. */
			if (atomic_load_explicit(&db->h->gen, memory_order_acquire) != g ||
			    (i0 > g && i0 != SADB_TAG_WRITING) || (i1 > g && i1 != SADB_TAG_WRITING)) {
				if ((i0 > g && i0 <= atomic_load_explicit(&db->h->gen, memory_order_acquire)) ||
				    (i1 > g && i1 <= atomic_load_explicit(&db->h->gen, memory_order_acquire))) {
					sadb__read_retry();
					continue;
				}
			}
			sadb__set_errc(db, "no matching policy");
			return -ENOENT;
		}
		b = v0 && (!v1 || i0 > i1) ? 0 : 1;
		ib = b ? i1 : i0;
		r = sadb__idx_lookup(db, db->idx[b], dir, pkt, out);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&db->h->idx_gen[b], memory_order_relaxed) != ib) {
			sadb__read_retry();
			continue;
		}
		if ((r == 0 && !pol_sum_ok(out)) || r == -EAGAIN) {
			/* The buffer did not change under us, yet it is inconsistent: after a few
			 * tries that is corruption, not a writer racing with us. */
			if (++bad > 16) {
				sadb__set_err(db, "SPD index %d is corrupt (generation %llu)", b,
					      (unsigned long long)ib);
				return -EIO;
			}
			sadb__read_retry();
			continue;
		}
		if (r == -ENOENT)
			sadb__set_errc(db, "no matching policy");
		return r;
	}
	sadb__set_err(db, "policy lookup kept racing with writers; gave up");
	return -EAGAIN;
}

/* ---- change journal ---- */

int sadb_changes(const struct sadb *db, uint64_t *since, struct sadb_change *out, unsigned max)
{
	const struct sadb_hdr *h;
	uint64_t s;

	if (!db || !since || (!out && max))
		return bad_arg(db, "sadb_changes: NULL argument");
	h = db->h;
	s = *since;
	/* A writer overwriting the oldest entries while we search can make us copy a mix; jmin then
	 * tells whether what we need was lost (-ESTALE) or we merely raced (try again). */
	for (unsigned attempt = 0; attempt < 64; attempt++) {
		uint64_t cnt = atomic_load_explicit(&h->jcount, memory_order_acquire), lo, hi, pos, n;
		bool ok = true;

		if (s + 1 < atomic_load_explicit(&h->jmin, memory_order_acquire))
			goto stale;
		lo = cnt > SADB_JOURNAL_LEN ? cnt - SADB_JOURNAL_LEN : 0;
		hi = cnt;
		/* First position whose generation is after s (generations never decrease along the ring). */
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (h->journal[mid % SADB_JOURNAL_LEN].gen > s)
				hi = mid;
			else
				lo = mid + 1;
		}
		pos = lo;
		n = cnt - pos;
		if (n == 0 || max == 0)
			return 0;
		if (n > max) {
			/* Hand out whole generations only, so *since never splits a transaction. */
			uint64_t cut = max;
			uint64_t next_gen = h->journal[(pos + max) % SADB_JOURNAL_LEN].gen;
			while (cut > 0 && h->journal[(pos + cut - 1) % SADB_JOURNAL_LEN].gen == next_gen)
				cut--;
			if (cut == 0) {
				sadb__set_err(db, "one transaction has more than %u changes: resynchronise", max);
				return -ESTALE;
			}
			n = cut;
		}
		for (uint64_t k = 0; k < n; k++)
			out[k] = h->journal[(pos + k) % SADB_JOURNAL_LEN];
		/* Pairs with the writer raising jmin before it overwrites an entry. */
		atomic_thread_fence(memory_order_acquire);
		if (s + 1 < atomic_load_explicit(&h->jmin, memory_order_relaxed))
			goto stale;
		for (uint64_t k = 0; k < n && ok; k++)
			ok = out[k].gen > s && (!k || out[k].gen >= out[k - 1].gen);
		if (pos > 0 && pos + SADB_JOURNAL_LEN > cnt &&
		    h->journal[(pos - 1) % SADB_JOURNAL_LEN].gen > s)
			ok = false;
		if (!ok) {
			sadb__read_retry();
			continue;
		}
		*since = out[n - 1].gen;
		return (int)n;
	}
stale:
	sadb__set_err(db, "the change journal has moved past generation %llu: resynchronise",
		      (unsigned long long)s);
	return -ESTALE;
}

struct sadb_dp_stats *sadb_dp_stats(const struct sadb *db)
{
	struct layout l;

	if (!db)
		return NULL;
	/* Not in the header: its place is implied by the layout version and the capacities. */
	compute_layout(db->h->max_sa, db->h->max_policy, &l);
	return (struct sadb_dp_stats *)(db->base + l.off_dp);
}

struct sadb_worker_stats *sadb_worker_stats(const struct sadb *db, unsigned worker)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);

	if (!d || worker >= SADB_MAX_WORKERS)
		return NULL;
	return &d->w[worker];
}

static inline uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

int sadb_worker_stats_sum(const struct sadb *db, struct sadb_worker_stats *total)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);

	if (!d || !total)
		return -EINVAL;
	memset(total, 0, sizeof(*total));
	/* Every record, not only n_workers: a starting dataplane zeroes them all, so unused ones are 0. */
	for (unsigned i = 0; i < SADB_MAX_WORKERS; i++) {
		const struct sadb_worker_stats *w = &d->w[i];

		total->rx_packets += ld(&w->rx_packets);
		total->rx_bytes += ld(&w->rx_bytes);
		total->tx_packets += ld(&w->tx_packets);
		total->tx_bytes += ld(&w->tx_bytes);
		total->frag_packets += ld(&w->frag_packets);
		total->frag_made += ld(&w->frag_made);
		total->reasm_packets += ld(&w->reasm_packets);
		total->reasm_frags += ld(&w->reasm_frags);
		for (unsigned r = 0; r < SADB_DROP_MAX; r++)
			total->drops[r] += ld(&w->drops[r]);
	}
	return (int)__atomic_load_n(&d->n_workers, __ATOMIC_RELAXED);
}

struct sadb_runtime *sadb_runtime(const struct sadb *db, uint32_t slot)
{
	if (!db || slot >= db->h->max_sa)
		return NULL;
	return (struct sadb_runtime *)(db->rt + (size_t)slot * db->h->rt_size);
}

/* ================= writers ================= */

static inline uint64_t cur_gen(const struct sadb *db)
{
	return atomic_load_explicit(&db->h->gen, memory_order_relaxed);
}

/* The writer's view of slot i: this transaction's copy if any, else the committed one. */
static struct sadb_copy_hdr *wview(const struct sadb *db, const struct tbl *t, uint32_t i)
{
	_Atomic uint64_t *tag = slot_tags(t, i);
	uint64_t n = db->h->txn.gen, g = cur_gen(db);
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_relaxed);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_relaxed);
	bool v0, v1;

	if (t0 == n)
		return slot_copy(t, i, 0);
	if (t1 == n)
		return slot_copy(t, i, 1);
	v0 = t0 && t0 <= g;
	v1 = t1 && t1 <= g;
	if (!v0 && !v1)
		return NULL;
	return slot_copy(t, i, v0 && (!v1 || t0 > t1) ? 0 : 1);
}

static const struct sadb_sa *wsa(const struct sadb *db, uint32_t i)
{
	struct tbl t = sa_tbl(db);
	struct sadb_copy_hdr *c = wview(db, &t, i);

	return c && c->used ? copy_rec(c) : NULL;
}

const struct sadb_policy *sadb__pol_wview(const struct sadb *db, uint32_t i)
{
	struct tbl t = pol_tbl(db);
	struct sadb_copy_hdr *c = wview(db, &t, i);

	return c && c->used ? copy_rec(c) : NULL;
}

/* Log slot i as touched by this transaction, before anything about it changes. */
static void touch(struct sadb *db, bool pol, uint32_t i)
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
static void set_tag(const struct tbl *t, uint32_t i, int ci, uint64_t v)
{
	atomic_fetch_add_explicit(slot_seq(t, i), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot_tags(t, i)[ci], v, memory_order_relaxed);
	/* Readers that see any byte written after this store must see the new tag. */
	atomic_thread_fence(memory_order_release);
}

/* Write this transaction's version of slot i into the copy readers are not using. */
static void write_copy(struct sadb *db, const struct tbl *t, uint32_t i, bool used, const void *rec)
{
	_Atomic uint64_t *tag = slot_tags(t, i);
	uint64_t n = db->h->txn.gen;
	uint64_t t0 = atomic_load_explicit(&tag[0], memory_order_relaxed);
	uint64_t t1 = atomic_load_explicit(&tag[1], memory_order_relaxed);
	struct sadb_copy_hdr *c;
	size_t half = t->rec_size / 2;
	int ci;

	touch(db, t->pol, i);
	if (t0 == n)
		ci = 0;
	else if (t1 == n)
		ci = 1;
	else
		ci = t0 ? 1 : 0; /* outside a transaction at most one copy is tagged: the committed one */
	set_tag(t, i, ci, SADB_TAG_WRITING);
	c = slot_copy(t, i, ci);
	c->used = used;
	if (used) {
		memcpy(copy_rec(c), rec, half);
		sadb__test_stop(db, SADB_STOP_COPY);
		memcpy((uint8_t *)copy_rec(c) + half, (const uint8_t *)rec + half, t->rec_size - half);
	} else {
		explicit_bzero(copy_rec(c), t->rec_size);
	}
	atomic_thread_fence(memory_order_release);
	set_tag(t, i, ci, n);
}

static void wipe_copy(const struct tbl *t, uint32_t i, int ci)
{
	_Atomic uint64_t *tag = slot_tags(t, i);
	struct sadb_copy_hdr *c = slot_copy(t, i, ci);

	if (atomic_load_explicit(&tag[ci], memory_order_relaxed) == 0 && !c->used)
		return;
	set_tag(t, i, ci, SADB_TAG_WRITING);
	atomic_thread_fence(memory_order_release);
	c->used = 0;
	explicit_bzero(copy_rec(c), t->rec_size);
	atomic_thread_fence(memory_order_release);
	set_tag(t, i, ci, 0);
}

static bool hash_has(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint64_t e = hash_entry(hv, slot);
	uint32_t b[2];

	hash_buckets(db->h, hv, &b[0], &b[1]);
	for (int k = 0; k < 2; k++)
		for (unsigned w = 0; w < SADB_HASH_WAYS; w++)
			if (atomic_load_explicit(&bucket(db, b[k])[w], memory_order_relaxed) == e)
				return true;
	return false;
}

static void hash_remove(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint64_t e = hash_entry(hv, slot);
	uint32_t b[2];

	hash_buckets(db->h, hv, &b[0], &b[1]);
	for (int k = 0; k < 2; k++)
		for (unsigned w = 0; w < SADB_HASH_WAYS; w++)
			if (atomic_load_explicit(&bucket(db, b[k])[w], memory_order_relaxed) == e)
				atomic_store_explicit(&bucket(db, b[k])[w], 0, memory_order_release);
}

static int free_way(struct sadb *db, uint32_t b)
{
	for (unsigned w = 0; w < SADB_HASH_WAYS; w++)
		if (atomic_load_explicit(&bucket(db, b)[w], memory_order_relaxed) == 0)
			return (int)w;
	return -1;
}

/* Move one entry out of bucket b to its other bucket: insert there first, then clear here, so a
 * reader looking for that SA always finds at least one entry. */
static bool hash_kick(struct sadb *db, uint32_t b)
{
	for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
		uint64_t e = atomic_load_explicit(&bucket(db, b)[w], memory_order_relaxed);
		uint32_t s = (uint32_t)e;
		if (!s || s > db->h->max_sa)
			continue;
		for (int k = 0; k < 2; k++) {
			uint64_t hv = db->sa_meta[s - 1].h[k];
			uint32_t b1, b2, alt;
			int fw;
			if (!hv || hash_entry(hv, s - 1) != e)
				continue;
			hash_buckets(db->h, hv, &b1, &b2);
			alt = b1 == b ? b2 : b1;
			fw = free_way(db, alt);
			if (fw < 0)
				continue;
			atomic_fetch_add_explicit(&db->h->hash_moves, 1, memory_order_relaxed);
			atomic_thread_fence(memory_order_release);
			atomic_store_explicit(&bucket(db, alt)[fw], e, memory_order_release);
			atomic_store_explicit(&bucket(db, b)[w], 0, memory_order_release);
			return true;
		}
	}
	return false;
}

/* Make sure one of hv's buckets has a free way; -ENOSPC if not even a kick frees one. */
static int hash_room(struct sadb *db, uint64_t hv)
{
	uint32_t b[2];

	hash_buckets(db->h, hv, &b[0], &b[1]);
	if (free_way(db, b[0]) >= 0 || free_way(db, b[1]) >= 0)
		return 0;
	if (hash_kick(db, b[0]) || hash_kick(db, b[1]))
		return 0;
	return -ENOSPC;
}

static void hash_insert(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint32_t b[2];
	int k, w;

	if (hash_has(db, hv, slot))
		return;
	hash_buckets(db->h, hv, &b[0], &b[1]);
	/* The first bucket while it has room: a lookup then usually reads one bucket line. With room
	 * for four entries per SA, the first bucket is full for about one key in a thousand. */
	k = free_way(db, b[0]) >= 0 ? 0 : 1;
	w = free_way(db, b[k]);
	if (w < 0) /* hash_room() ran before: cannot happen; leave the SA unreachable by SPI if it does */
		return;
	atomic_store_explicit(&bucket(db, b[k])[w], hash_entry(hv, slot), memory_order_release);
}

/* Record the intent in the slot's meta first, then insert: recovery can then find and undo it. */
static void hash_attach(struct sadb *db, uint32_t slot, uint64_t hv)
{
	struct sadb_sa_meta *m = &db->sa_meta[slot];

	if (m->h[0] != hv && m->h[1] != hv) {
		int k = m->h[0] == 0 ? 0 : (m->h[1] == 0 ? 1 : -1);
		if (k < 0) {
			/* Both used: one is the committed identity, the other a pending one this
			 * transaction has since replaced. */
			const struct sadb_sa *cur = NULL;
			struct tbl t = sa_tbl(db);
			_Atomic uint64_t *tag = slot_tags(&t, slot);
			uint64_t g = cur_gen(db);
			for (int c = 0; c < 2; c++) {
				uint64_t tc = atomic_load_explicit(&tag[c], memory_order_relaxed);
				if (tc && tc <= g && slot_copy(&t, slot, c)->used)
					cur = copy_rec(slot_copy(&t, slot, c));
			}
			k = cur && sa_key_hash(db->h, cur->spi, cur->proto, &cur->dst) == m->h[0] ? 1 : 0;
			hash_remove(db, m->h[k], slot);
		}
		m->h[k] = hv;
	}
	hash_insert(db, hv, slot);
}

static void jappend(struct sadb *db, uint32_t op, uint32_t index)
{
	struct sadb_hdr *h = db->h;
	uint64_t pos = h->txn.jcount0 + h->txn.jn;
	struct sadb_change *e = &h->journal[pos % SADB_JOURNAL_LEN];

	if (pos >= SADB_JOURNAL_LEN && e->gen + 1 > atomic_load_explicit(&h->jmin, memory_order_relaxed)) {
		atomic_store_explicit(&h->jmin, e->gen + 1, memory_order_relaxed);
		/* Readers re-check jmin after copying: they must see it raised before the entry changes. */
		atomic_thread_fence(memory_order_release);
	}
	e->gen = h->txn.gen;
	e->op = op;
	e->index = index;
	h->txn.jn++;
}

/* ---- the dataplane's hold on SA slots (sadb.h explains the scheme) ---- */

#define PF_EXITING_FLAG 0x4u /* the kernel's PF_EXITING: the task never runs user code again */

/* Read a /proc/.../stat file: whether the task can still run user code (not a zombie, not exiting:
 * such a task never touches the SADB again) and its start time in clock ticks after boot. False if
 * the file cannot be read or parsed. */
static bool stat_read(const char *path, bool *live, uint64_t *start)
{
	char buf[1024], *p, *end;
	unsigned long long flags = 0, v = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* pid (comm) state ppid ...: flags is field 9, starttime 22; comm may hold spaces or ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return false;
	*live = p[2] != 'Z' && p[2] != 'X';
	p += 3;
	for (int field = 4; field <= 22; field++, p = end) {
		v = strtoull(p, &end, 10);
		if (end == p)
			return false;
		if (field == 9)
			flags = v;
	}
	*live = *live && !(flags & PF_EXITING_FLAG);
	*start = v ? v : 1;
	return true;
}

/* Start time of a process that may still run user code, 0 if there is none (gone, a zombie, or every
 * thread exiting: kill -9 of a dataplane with a large mapping takes a while to finish, and none of
 * its threads executes another instruction of ours meanwhile). The leader may be exiting while other
 * threads still run, so each thread is looked at. */
static uint64_t proc_start(uint64_t pid)
{
	char path[96];
	uint64_t start, t;
	bool live, tlive = false;
	struct dirent *de;
	DIR *d;

	if (!pid || pid > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)pid);
	if (!stat_read(path, &live, &start))
		return 0;
	if (live)
		return start;
	snprintf(path, sizeof(path), "/proc/%llu/task", (unsigned long long)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!tlive && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%llu/task/%.20s/stat", (unsigned long long)pid, de->d_name);
		if (!stat_read(path, &tlive, &t))
			tlive = false;
	}
	closedir(d);
	return tlive ? start : 0;
}

/* The generation up to which freed slots may be reused, UINT64_MAX when no dataplane holds any. */
static uint64_t released_gen(const struct sadb *db)
{
	struct sadb_dp_stats *d = sadb_dp_stats(db);
	uint64_t pid, start;

	/* Pairs with the fence in sadb_dp_attach: either the attaching dataplane's pid is seen here,
	 * or it reads the SADB after this writer's earlier changes (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	pid = __atomic_load_n(&d->hold_pid, __ATOMIC_SEQ_CST);
	if (!pid)
		return UINT64_MAX;
	start = __atomic_load_n(&d->hold_start, __ATOMIC_ACQUIRE);
	if (proc_start(pid) != start)
		return UINT64_MAX; /* the holder died: its objects went with it */
	return __atomic_load_n(&d->released_gen, __ATOMIC_ACQUIRE);
}

int sadb_dp_attach(struct sadb *db)
{
	struct sadb_dp_stats *d;
	uint64_t me = (uint64_t)getpid(), start = proc_start(me), pid;

	if (!db)
		return -EINVAL;
	if (!(db->flags & (SADB_RDWR | SADB_RUNTIME))) {
		sadb__set_err(db, "sadb_dp_attach needs a SADB_RUNTIME or SADB_RDWR handle");
		return -EPERM;
	}
	if (!start) {
		sadb__set_err(db, "cannot read this process's start time from /proc");
		return -EIO;
	}
	d = sadb_dp_stats(db);
	/* A predecessor that was just killed may take a moment to go: wait for it, a little. */
	for (int tries = 0;; tries++) {
		pid = __atomic_load_n(&d->hold_pid, __ATOMIC_ACQUIRE);
		if (!pid || pid == me || proc_start(pid) != __atomic_load_n(&d->hold_start, __ATOMIC_ACQUIRE))
			break;
		if (tries == 100) {
			sadb__set_err(db, "%s is in use by another dataplane (pid %llu)", db->path,
				      (unsigned long long)pid);
			return -EBUSY;
		}
		usleep(50000);
	}
	/* Nothing is released until this process says so; then it becomes the holder. */
	__atomic_store_n(&d->released_gen, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->hold_start, start, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->hold_pid, me, __ATOMIC_SEQ_CST);
	atomic_thread_fence(memory_order_seq_cst);
	sadb__clear_err(db);
	return 0;
}

void sadb_dp_release(struct sadb *db, uint64_t gen)
{
	struct sadb_dp_stats *d = db ? sadb_dp_stats(db) : NULL;

	if (d && __atomic_load_n(&d->released_gen, __ATOMIC_RELAXED) < gen)
		__atomic_store_n(&d->released_gen, gen, __ATOMIC_RELEASE);
}

void sadb_dp_detach(struct sadb *db)
{
	struct sadb_dp_stats *d = db ? sadb_dp_stats(db) : NULL;

	if (d && __atomic_load_n(&d->hold_pid, __ATOMIC_RELAXED) == (uint64_t)getpid())
		__atomic_store_n(&d->hold_pid, 0, __ATOMIC_RELEASE);
}

uint32_t sadb_sa_quarantined(const struct sadb *db)
{
	uint64_t rel, head, tail;
	uint32_t n = 0;

	if (!db)
		return 0;
	rel = released_gen(db);
	head = db->h->sa_free_head;
	tail = db->h->sa_free_tail;
	for (uint64_t k = head; k < tail; k++) {
		uint32_t s = db->sa_free[k % db->h->max_sa];
		if (s < db->h->max_sa && db->sa_meta[s].freed_gen > rel)
			n++;
	}
	return n;
}

/* ---- free slot rings (FIFO: a freed slot is reused as late as possible) ---- */

static int slot_alloc(struct sadb *db, bool pol)
{
	struct sadb_hdr *h = db->h;
	uint64_t *head = pol ? &h->pol_free_head : &h->sa_free_head;
	uint64_t tail = pol ? h->pol_free_tail : h->sa_free_tail;
	uint32_t *ring = pol ? db->pol_free : db->sa_free;
	_Atomic uint32_t *hwm = pol ? &h->pol_hwm : &h->sa_hwm;
	uint32_t cap = pol ? h->max_policy : h->max_sa;
	uint32_t hw;

	/* An SA slot is taken from the ring only once the dataplane has let go of its last SA; the
	 * ring is in freeing order, so if its head is still held, a never-used slot is taken. */
	if (*head < tail &&
	    (pol || db->sa_meta[ring[*head % cap] % cap].freed_gen <= released_gen(db))) {
		uint32_t s = ring[*head % cap];
		(*head)++;
		return (int)s;
	}
	hw = atomic_load_explicit(hwm, memory_order_relaxed);
	if (hw < cap) {
		atomic_store_explicit(hwm, hw + 1, memory_order_release);
		return (int)hw;
	}
	return *head < tail ? -EBUSY : -ENOSPC;
}

static void slot_release(struct sadb *db, bool pol, uint32_t s)
{
	struct sadb_hdr *h = db->h;
	uint64_t *tail = pol ? &h->pol_free_tail : &h->sa_free_tail;
	uint32_t *ring = pol ? db->pol_free : db->sa_free;
	uint32_t cap = pol ? h->max_policy : h->max_sa;

	ring[*tail % cap] = s;
	(*tail)++;
}

static void rebuild_free(struct sadb *db, bool pol)
{
	struct sadb_hdr *h = db->h;
	uint32_t hw = atomic_load_explicit(pol ? &h->pol_hwm : &h->sa_hwm, memory_order_relaxed);

	if (pol)
		h->pol_free_head = h->pol_free_tail = 0;
	else
		h->sa_free_head = h->sa_free_tail = 0;
	for (uint32_t i = 0; i < hw; i++)
		if (!(pol ? db->pol_meta[i].used : db->sa_meta[i].used))
			slot_release(db, pol, i);
}

/* ---- normalisation: after commit (redo) or instead of it (undo) ---- */

static void normalize(struct sadb *db, uint32_t entry, bool release_freed)
{
	bool pol = entry & SADB_LOG_POLICY;
	uint32_t i = entry & ~SADB_LOG_POLICY;
	struct tbl t = pol ? pol_tbl(db) : sa_tbl(db);
	_Atomic uint64_t *tag;
	uint64_t g = cur_gen(db), tc[2];
	uint32_t used;
	int cur = -1;

	if (i >= t.cap)
		return;
	tag = slot_tags(&t, i);
	/* Copies of a transaction that never committed are garbage. */
	for (int c = 0; c < 2; c++) {
		tc[c] = atomic_load_explicit(&tag[c], memory_order_relaxed);
		if (tc[c] == SADB_TAG_WRITING || tc[c] > g) {
			wipe_copy(&t, i, c);
			tc[c] = 0;
		}
	}
	if (tc[0] && (!tc[1] || tc[0] > tc[1]))
		cur = 0;
	else if (tc[1])
		cur = 1;
	/* The superseded copy goes (its keys with it); a deleted record leaves no copy at all. */
	for (int c = 0; c < 2; c++)
		if (c != cur && tc[c])
			wipe_copy(&t, i, c);
	if (cur >= 0 && !slot_copy(&t, i, cur)->used) {
		wipe_copy(&t, i, cur);
		cur = -1;
	}
	used = cur >= 0;
	if (!pol) {
		struct sadb_sa_meta *m = &db->sa_meta[i];
		uint64_t want = 0;
		if (used) {
			const struct sadb_sa *sa = copy_rec(slot_copy(&t, i, cur));
			want = sa_key_hash(db->h, sa->spi, sa->proto, &sa->dst);
		}
		for (int k = 0; k < 2; k++) {
			if (m->h[k] && m->h[k] != want) {
				hash_remove(db, m->h[k], i);
				m->h[k] = 0;
			}
		}
		if (want && m->h[0] != want && m->h[1] != want)
			m->h[m->h[0] ? 1 : 0] = want;
		if (want)
			hash_insert(db, want, i);
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
		slot_release(db, pol, i);
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

	x->gen = cur_gen(db) + 1;
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

/* Undo a transaction that did not reach its commit point. */
static void txn_undo(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	uint32_t n = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);
	uint64_t g = cur_gen(db);

	if (n > h->log_cap)
		n = h->log_cap;
	for (uint32_t k = 0; k < n; k++)
		normalize(db, db->log[k], false);
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
	uint32_t n = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);

	if (n > h->log_cap)
		n = h->log_cap;
	/* The journal after the generation: a reader told of a change finds it published. */
	atomic_store_explicit(&h->jcount, h->txn.jcount0 + h->txn.jn, memory_order_release);
	atomic_store_explicit(&h->n_sa, h->txn.n_sa, memory_order_relaxed);
	atomic_store_explicit(&h->n_policy, h->txn.n_policy, memory_order_relaxed);
	for (uint32_t k = 0; k < n; k++)
		normalize(db, db->log[k], release_freed);
}

static void recover(struct sadb *db)
{
	struct sadb_hdr *h = db->h;

	if (atomic_load_explicit(&h->txn.state, memory_order_acquire) == SADB_TXN_ACTIVE) {
		if (cur_gen(db) >= h->txn.gen)
			txn_finish(db, false);
		else
			txn_undo(db);
	}
	rebuild_free(db, false);
	rebuild_free(db, true);
	atomic_store_explicit(&h->txn.state, SADB_TXN_IDLE, memory_order_release);
}

/* Rebuild the SPD index into buffer b for generation n. A transaction that changed a few policies
 * is merged into the published index (no scan of the policy table, no sort); a large one (a load,
 * a flush) or the first one rebuilds from the table. */
static int build_index(struct sadb *db, int b, uint64_t n)
{
	struct sadb_hdr *h = db->h;
	uint64_t g = cur_gen(db), og = atomic_load_explicit(&h->idx_gen[1 - b], memory_order_relaxed);
	uint32_t nlog = atomic_load_explicit(&h->txn.nlog, memory_order_relaxed);
	const struct sadb_policy **added = NULL;
	uint32_t *removed = NULL, nrem = 0, nadd = 0, npol = atomic_load_explicit(&h->n_policy, memory_order_relaxed);
	struct tbl t = pol_tbl(db);
	int r;

	if (!og || og == SADB_TAG_WRITING || og > g || nlog > npol / 8 + 8)
		return sadb__idx_build(db, db->idx[b], h->hash_seed ^ n, NULL, NULL, 0, NULL, 0);
	removed = malloc(((size_t)nlog + 1) * sizeof(*removed));
	added = malloc(((size_t)nlog + 1) * sizeof(*added));
	if (!removed || !added) {
		free(removed);
		free(added);
		return sadb__idx_build(db, db->idx[b], h->hash_seed ^ n, NULL, NULL, 0, NULL, 0);
	}
	for (uint32_t k = 0; k < nlog && k < h->log_cap; k++) {
		uint32_t e = db->log[k], i = e & ~SADB_LOG_POLICY;
		_Atomic uint64_t *tag;
		if (!(e & SADB_LOG_POLICY) || i >= t.cap)
			continue;
		tag = slot_tags(&t, i);
		for (int c = 0; c < 2; c++) {
			uint64_t tc = atomic_load_explicit(&tag[c], memory_order_relaxed);
			struct sadb_copy_hdr *ch = slot_copy(&t, i, c);
			if (tc == n && ch->used)
				added[nadd++] = copy_rec(ch);
		}
		/* Whatever was committed in a slot this transaction rewrote is gone from the index. */
		if (atomic_load_explicit(&tag[0], memory_order_relaxed) == n ||
		    atomic_load_explicit(&tag[1], memory_order_relaxed) == n) {
			for (int c = 0; c < 2; c++) {
				uint64_t tc = atomic_load_explicit(&tag[c], memory_order_relaxed);
				struct sadb_copy_hdr *ch = slot_copy(&t, i, c);
				if (tc && tc <= g && ch->used)
					removed[nrem++] = ((const struct sadb_policy *)copy_rec(ch))->id;
			}
		}
	}
	r = sadb__idx_build(db, db->idx[b], h->hash_seed ^ n, db->idx[1 - b], removed, nrem, added, nadd);
	free(removed);
	free(added);
	return r;
}

static int txn_commit_locked(struct sadb *db)
{
	struct sadb_hdr *h = db->h;
	uint64_t n = h->txn.gen;

	if (h->txn.jn == 0) {
		txn_undo(db);
		goto done;
	}
	if (h->txn.pol_changed) {
		uint64_t i0 = atomic_load_explicit(&h->idx_gen[0], memory_order_relaxed);
		uint64_t i1 = atomic_load_explicit(&h->idx_gen[1], memory_order_relaxed);
		int b = (i0 != SADB_TAG_WRITING && i0 > (i1 == SADB_TAG_WRITING ? 0 : i1)) ? 1 : 0;
		int r;

		atomic_store_explicit(&h->idx_gen[b], SADB_TAG_WRITING, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		r = build_index(db, b, n);
		if (r) {
			atomic_store_explicit(&h->idx_gen[b], 0, memory_order_release);
			txn_undo(db);
			atomic_store_explicit(&h->txn.state, SADB_TXN_IDLE, memory_order_release);
			db->txn_open = false;
			selmap_drop(db);
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
done:
	atomic_store_explicit(&h->txn.state, SADB_TXN_IDLE, memory_order_release);
	db->txn_open = false;
	selmap_drop(db);
	return 0;
}

static void txn_abort_locked(struct sadb *db)
{
	selmap_drop(db);
	txn_undo(db);
	atomic_store_explicit(&db->h->txn.state, SADB_TXN_IDLE, memory_order_release);
	db->txn_open = false;
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
	r = wlock(db);
	if (r)
		return r;
	txn_start(db);
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

/* Every writer call runs inside a transaction: the caller's, or one of its own. */
static int op_begin(struct sadb *db)
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

static int op_end(struct sadb *db, int r)
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

/* ---- SA writers ---- */

static int find_sa(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	uint64_t hv = sa_key_hash(db->h, spi, proto, dst), fp = hv >> 32;
	uint32_t b[2];

	hash_buckets(db->h, hv, &b[0], &b[1]);
	for (int k = 0; k < 2; k++) {
		for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
			uint64_t e = atomic_load_explicit(&bucket(db, b[k])[w], memory_order_relaxed);
			uint32_t s = (uint32_t)e;
			const struct sadb_sa *sa;
			if ((e >> 32) != fp || !s || s > db->h->max_sa)
				continue;
			sa = wsa(db, s - 1);
			if (sa && sa_ident_eq(sa, spi, proto, dst))
				return (int)(s - 1);
		}
	}
	return -ENOENT;
}

/* Give a slot's runtime area to a new SA instance. The instance word is cleared first and set last,
 * with fences between: an engine object of an older instance that reads any zeroed word after its own
 * atomic operation then sees an instance that is not its own (esp_seq_refill re-checks after its
 * compare-and-swap), so it can never take sequence numbers from the reset counter. The quarantine of
 * freed slots (sadb_dp_attach) keeps such objects from existing in the first place. */
_Static_assert(offsetof(struct sadb_runtime, instance) == 0 && sizeof(struct sadb_runtime) % 8 == 0,
	       "rt_reset clears the instance word first and the rest word by word");
static void rt_reset(struct sadb *db, uint32_t slot, uint64_t instance)
{
	struct sadb_runtime *rt = sadb_runtime(db, slot);
	uint64_t *w = (uint64_t *)rt;

	__atomic_store_n(&rt->instance, 0, __ATOMIC_SEQ_CST);
	atomic_thread_fence(memory_order_release);
	for (size_t k = 1; k < sizeof(*rt) / sizeof(uint64_t); k++)
		__atomic_store_n(&w[k], 0, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&rt->instance, instance, __ATOMIC_RELEASE);
}

static void sa_seal(struct sadb_sa *sa)
{
	/* Padding and unused key bytes are zeroed so a record has one checksum and no stale bytes. */
	struct sadb_sa z;

	memset(&z, 0, sizeof(z));
	z.spi = sa->spi; z.proto = sa->proto; z.mode = sa->mode; z.dir = sa->dir; z.state = sa->state;
	z.reqid = sa->reqid; z.flags = sa->flags;
	z.src.family = sa->src.family; memcpy(z.src.a.b, sa->src.a.b, 16);
	z.dst.family = sa->dst.family; memcpy(z.dst.a.b, sa->dst.a.b, 16);
	if (z.src.family == AF_INET)
		memset(z.src.a.b + 4, 0, 12);
	if (z.dst.family == AF_INET)
		memset(z.dst.a.b + 4, 0, 12);
	z.encap_sport = sa->encap_sport; z.encap_dport = sa->encap_dport;
	z.enc_alg = sa->enc_alg; z.auth_alg = sa->auth_alg;
	z.enc_key_len = sa->enc_key_len; z.salt_len = sa->salt_len; z.auth_key_len = sa->auth_key_len;
	z.icv_len = sa->icv_len;
	memcpy(z.enc_key, sa->enc_key, sa->enc_key_len <= SADB_ENC_KEY_MAX ? sa->enc_key_len : 0);
	memcpy(z.salt, sa->salt, sa->salt_len <= SADB_SALT_MAX ? sa->salt_len : 0);
	memcpy(z.auth_key, sa->auth_key, sa->auth_key_len <= SADB_AUTH_KEY_MAX ? sa->auth_key_len : 0);
	z.replay_window = sa->replay_window; z.tfc_pad = sa->tfc_pad; z.ttl = sa->ttl; z.dscp = sa->dscp;
	z.mtu = sa->mtu;
	z.soft = sa->soft; z.hard = sa->hard;
	memcpy(&z.sel, &sa->sel, sizeof(z.sel));
	sadb__selector_normalize(&z.sel);
	z.created = sa->created; z.instance = sa->instance; z.ike_id = sa->ike_id;
	z.checksum = sadb__sa_checksum(&z);
	memcpy(sa, &z, sizeof(z));
	explicit_bzero(&z, sizeof(z));
}

static int check_writable(struct sadb *db, const void *p, const char *fn)
{
	if (!db)
		return -EINVAL;
	if (!p) {
		sadb__set_err(db, "%s: NULL argument", fn);
		return -EINVAL;
	}
	return 0;
}

static int sa_add_locked(struct sadb *db, const struct sadb_sa *in, uint32_t *slot)
{
	struct sadb_hdr *h = db->h;
	struct tbl t = sa_tbl(db);
	char msg[200];
	struct sadb_sa sa;
	uint64_t hv;
	int s, r;

	if (sadb_sa_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid SA: %s", msg);
		return -EINVAL;
	}
	if (find_sa(db, in->spi, in->proto, &in->dst) >= 0) {
		char a[INET6_ADDRSTRLEN];
		sadb__set_err(db, "an SA with SPI 0x%08x proto %u dst %s exists", in->spi, in->proto,
			      sadb_addr_str(&in->dst, a, sizeof(a)));
		return -EEXIST;
	}
	hv = sa_key_hash(h, in->spi, in->proto, &in->dst);
	if (hash_room(db, hv)) {
		sadb__set_err(db, "SPI hash buckets full (capacity %u SAs)", h->max_sa);
		return -ENOSPC;
	}
	s = slot_alloc(db, false);
	if (s < 0) {
		if (s == -EBUSY)
			sadb__set_err(db, "SA table full (%u SAs; %u freed slots wait until the dataplane has "
				      "let go of their old SAs)", h->max_sa, sadb_sa_quarantined(db));
		else
			sadb__set_err(db, "SA table full (%u SAs)", h->max_sa);
		return -ENOSPC;
	}
	memcpy(&sa, in, sizeof(sa));
	sa.created = now_realtime();
	sa.instance = h->next_instance++;
	sa_seal(&sa);
	touch(db, false, (uint32_t)s);
	hash_attach(db, (uint32_t)s, hv);
	/* The runtime area is reset before the SA can be seen; the dataplane checks instance. */
	rt_reset(db, (uint32_t)s, sa.instance);
	write_copy(db, &t, (uint32_t)s, true, &sa);
	explicit_bzero(&sa, sizeof(sa));
	jappend(db, SADB_CHG_SA_ADD, (uint32_t)s);
	h->txn.n_sa++;
	if (slot)
		*slot = (uint32_t)s;
	r = 0;
	return r;
}

int sadb_sa_add(struct sadb *db, const struct sadb_sa *sa, uint32_t *slot)
{
	int r = check_writable(db, sa, "sadb_sa_add");

	if (r)
		return r;
	r = op_begin(db);
	if (r)
		return r;
	r = sa_add_locked(db, sa, slot);
	if (!r)
		sadb__clear_err(db);
	return op_end(db, r);
}

int sadb_sa_update(struct sadb *db, const struct sadb_sa *in)
{
	struct tbl t;
	struct sadb_sa sa;
	const struct sadb_sa *old;
	char msg[200];
	int s, r;

	r = check_writable(db, in, "sadb_sa_update");
	if (r)
		return r;
	if (sadb_sa_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid SA: %s", msg);
		return -EINVAL;
	}
	r = op_begin(db);
	if (r)
		return r;
	t = sa_tbl(db);
	s = find_sa(db, in->spi, in->proto, &in->dst);
	if (s < 0) {
		sadb__set_err(db, "no SA with SPI 0x%08x proto %u to update", in->spi, in->proto);
		return op_end(db, -ENOENT);
	}
	old = wsa(db, (uint32_t)s);
	memcpy(&sa, in, sizeof(sa));
	if (old->state == SADB_STATE_LARVAL) {
		/* A reserved SPI becomes a real SA: new instance, fresh runtime state. */
		sa.created = now_realtime();
		sa.instance = db->h->next_instance++;
		rt_reset(db, (uint32_t)s, sa.instance);
	} else {
		sa.created = old->created;
		sa.instance = old->instance;
	}
	sa_seal(&sa);
	write_copy(db, &t, (uint32_t)s, true, &sa);
	explicit_bzero(&sa, sizeof(sa));
	jappend(db, SADB_CHG_SA_UPDATE, (uint32_t)s);
	sadb__clear_err(db);
	return op_end(db, 0);
}

int sadb_sa_migrate(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		    const struct sadb_addr *new_src, const struct sadb_addr *new_dst,
		    uint16_t encap_sport, uint16_t encap_dport)
{
	struct tbl t;
	struct sadb_sa sa;
	char msg[200];
	uint64_t hv;
	int s, r;

	r = check_writable(db, dst, "sadb_sa_migrate");
	if (r)
		return r;
	r = op_begin(db);
	if (r)
		return r;
	t = sa_tbl(db);
	s = find_sa(db, spi, proto, dst);
	if (s < 0) {
		sadb__set_err(db, "no SA with SPI 0x%08x proto %u to migrate", spi, proto);
		return op_end(db, -ENOENT);
	}
	memcpy(&sa, wsa(db, (uint32_t)s), sizeof(sa));
	if (new_src)
		sa.src = *new_src;
	if (new_dst)
		sa.dst = *new_dst;
	sa.encap_sport = encap_sport;
	sa.encap_dport = encap_dport;
	if (sadb_sa_validate(&sa, msg, sizeof(msg))) {
		explicit_bzero(&sa, sizeof(sa));
		sadb__set_err(db, "invalid migration: %s", msg);
		return op_end(db, -EINVAL);
	}
	if (!sadb_addr_eq(&sa.dst, dst)) {
		if (find_sa(db, spi, proto, &sa.dst) >= 0) {
			explicit_bzero(&sa, sizeof(sa));
			sadb__set_err(db, "an SA with SPI 0x%08x proto %u exists at the new destination", spi, proto);
			return op_end(db, -EEXIST);
		}
		hv = sa_key_hash(db->h, spi, proto, &sa.dst);
		if (hash_room(db, hv)) {
			explicit_bzero(&sa, sizeof(sa));
			sadb__set_err(db, "SPI hash buckets full");
			return op_end(db, -ENOSPC);
		}
		touch(db, false, (uint32_t)s);
		hash_attach(db, (uint32_t)s, hv);
	}
	sa_seal(&sa);
	write_copy(db, &t, (uint32_t)s, true, &sa);
	explicit_bzero(&sa, sizeof(sa));
	jappend(db, SADB_CHG_SA_UPDATE, (uint32_t)s);
	sadb__clear_err(db);
	return op_end(db, 0);
}

static void sa_del_slot(struct sadb *db, uint32_t s)
{
	struct tbl t = sa_tbl(db);

	write_copy(db, &t, s, false, NULL);
	db->h->txn.n_sa--;
}

int sadb_sa_delete(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	int s, r;

	r = check_writable(db, dst, "sadb_sa_delete");
	if (r)
		return r;
	r = op_begin(db);
	if (r)
		return r;
	s = find_sa(db, spi, proto, dst);
	if (s < 0) {
		sadb__set_err(db, "no SA with SPI 0x%08x proto %u to delete", spi, proto);
		return op_end(db, -ENOENT);
	}
	sa_del_slot(db, (uint32_t)s);
	jappend(db, SADB_CHG_SA_DEL, (uint32_t)s);
	sadb__clear_err(db);
	return op_end(db, 0);
}

int sadb_sa_flush(struct sadb *db, uint8_t proto)
{
	uint32_t hw;
	int r, n = 0;

	if (!db)
		return -EINVAL;
	if (proto != SADB_PROTO_ANY && proto != SADB_PROTO_ESP && proto != SADB_PROTO_AH) {
		sadb__set_err(db, "sadb_sa_flush: proto %u is not any, ESP or AH", proto);
		return -EINVAL;
	}
	r = op_begin(db);
	if (r)
		return r;
	hw = atomic_load_explicit(&db->h->sa_hwm, memory_order_relaxed);
	for (uint32_t i = 0; i < hw; i++) {
		const struct sadb_sa *sa = wsa(db, i);
		if (sa && (proto == SADB_PROTO_ANY || sa->proto == proto)) {
			sa_del_slot(db, i);
			n++;
		}
	}
	if (n)
		jappend(db, SADB_CHG_FLUSH_SA, proto);
	sadb__clear_err(db);
	return op_end(db, n);
}

int sadb_spi_alloc(struct sadb *db, uint8_t proto, const struct sadb_addr *src, const struct sadb_addr *dst,
		   uint32_t min, uint32_t max, uint32_t *spi)
{
	struct sadb_sa sa;
	uint64_t range, start;
	uint32_t cand = 0;
	bool found = false;
	int r;

	if (!db)
		return -EINVAL;
	if (!dst || !spi) {
		sadb__set_err(db, "sadb_spi_alloc: NULL argument");
		return -EINVAL;
	}
	if (proto != SADB_PROTO_ESP && proto != SADB_PROTO_AH) {
		sadb__set_err(db, "sadb_spi_alloc: proto %u is neither ESP nor AH", proto);
		return -EINVAL;
	}
	if (min == 0 && max == 0)
		max = UINT32_MAX;
	if (min < 256)
		min = 256;
	if (max < min) {
		sadb__set_err(db, "sadb_spi_alloc: empty SPI range [%u, %u] (0-255 are reserved)", min, max);
		return -EINVAL;
	}
	range = (uint64_t)max - min + 1;
	r = op_begin(db);
	if (r)
		return r;
	for (int k = 0; k < 32 && !found; k++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			break;
		cand = (uint32_t)(min + rnd % range);
		found = find_sa(db, cand, proto, dst) < 0;
	}
	if (!found) {
		/* Dense range: walk it from a random point. Among max_sa + 1 consecutive SPIs one is free. */
		uint64_t steps = range < (uint64_t)db->h->max_sa + 1 ? range : (uint64_t)db->h->max_sa + 1;
		uint64_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint64_t)time(NULL);
		start = rnd % range;
		for (uint64_t k = 0; k < steps && !found; k++) {
			cand = (uint32_t)(min + (start + k) % range);
			found = find_sa(db, cand, proto, dst) < 0;
		}
	}
	if (!found) {
		sadb__set_err(db, "no free SPI in [%u, %u]", min, max);
		return op_end(db, -ENOSPC);
	}
	memset(&sa, 0, sizeof(sa));
	sa.spi = cand;
	sa.proto = proto;
	sa.mode = SADB_MODE_TUNNEL;
	sa.dir = SADB_DIR_IN;
	sa.state = SADB_STATE_LARVAL;
	sa.dst = *dst;
	if (src)
		sa.src = *src;
	sa.sel.sport_hi = sa.sel.dport_hi = 65535;
	r = sa_add_locked(db, &sa, NULL);
	if (!r) {
		*spi = cand;
		sadb__clear_err(db);
	}
	return op_end(db, r);
}

/* ---- policy writers ---- */

static void pol_seal(struct sadb_policy *p)
{
	struct sadb_policy z;

	memset(&z, 0, sizeof(z));
	z.id = p->id; z.dir = p->dir; z.action = p->action; z.proto = p->proto; z.mode = p->mode;
	z.priority = p->priority; z.reqid = p->reqid;
	memcpy(&z.sel, &p->sel, sizeof(z.sel));
	sadb__selector_normalize(&z.sel);
	z.tun_src.family = p->tun_src.family; memcpy(z.tun_src.a.b, p->tun_src.a.b, 16);
	z.tun_dst.family = p->tun_dst.family; memcpy(z.tun_dst.a.b, p->tun_dst.a.b, 16);
	if (z.tun_src.family == AF_INET)
		memset(z.tun_src.a.b + 4, 0, 12);
	if (z.tun_dst.family == AF_INET)
		memset(z.tun_dst.a.b + 4, 0, 12);
	z.ike_id = p->ike_id;
	z.checksum = sadb__policy_checksum(&z);
	memcpy(p, &z, sizeof(z));
}

static uint64_t sel_hash(uint8_t dir, const struct sadb_selector *normalized)
{
	uint8_t buf[1 + sizeof(*normalized)];

	buf[0] = dir;
	memcpy(buf + 1, normalized, sizeof(*normalized));
	return (uint64_t)sadb__checksum(buf, sizeof(buf)) | 1;
}

static void selmap_put(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint32_t mask = db->selmap_cap - 1, pos = (uint32_t)sadb__mix64(hv) & mask;

	while (db->selmap_key[pos])
		pos = (pos + 1) & mask;
	db->selmap_key[pos] = hv;
	db->selmap_slot[pos] = slot;
	db->selmap_n++;
}

static void selmap_drop(struct sadb *db)
{
	free(db->selmap_key);
	free(db->selmap_slot);
	db->selmap_key = NULL;
	db->selmap_slot = NULL;
	db->selmap_cap = db->selmap_n = 0;
	db->selmap_valid = false;
}

/* Room for every policy the table can hold at half load, built from the writer's view. */
static bool selmap_build(struct sadb *db)
{
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed), cap = 16;

	selmap_drop(db);
	while (cap < 2 * db->h->max_policy)
		cap <<= 1;
	db->selmap_key = calloc(cap, sizeof(*db->selmap_key));
	db->selmap_slot = calloc(cap, sizeof(*db->selmap_slot));
	if (!db->selmap_key || !db->selmap_slot) {
		selmap_drop(db);
		return false;
	}
	db->selmap_cap = cap;
	for (uint32_t i = 0; i < hw; i++)
		if (sadb__pol_wview(db, i))
			selmap_put(db, db->pol_meta[i].selhash, i);
	db->selmap_valid = true;
	return true;
}

static int find_policy_sel(struct sadb *db, uint8_t dir, const struct sadb_selector *sel, bool match_prio,
			   uint32_t prio)
{
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	struct sadb_selector n;
	uint64_t hv;

	memcpy(&n, sel, sizeof(n));
	sadb__selector_normalize(&n);
	hv = sel_hash(dir, &n);
	if (db->txn_explicit && (db->selmap_valid || selmap_build(db))) {
		uint32_t mask = db->selmap_cap - 1, pos = (uint32_t)sadb__mix64(hv) & mask;
		for (; db->selmap_key[pos]; pos = (pos + 1) & mask) {
			uint32_t i = db->selmap_slot[pos];
			const struct sadb_policy *p;
			if (db->selmap_key[pos] != hv || i >= hw)
				continue;
			p = sadb__pol_wview(db, i);
			if (p && p->dir == dir && (!match_prio || p->priority == prio) &&
			    sadb__selector_eq(&p->sel, &n))
				return (int)i;
		}
		return -ENOENT;
	}
	/* A scan of the compact meta array; only hash matches look at a record. */
	for (uint32_t i = 0; i < hw; i++) {
		const struct sadb_policy *p;
		if (db->pol_meta[i].selhash != hv)
			continue;
		p = sadb__pol_wview(db, i);
		if (p && p->dir == dir && (!match_prio || p->priority == prio) && sadb__selector_eq(&p->sel, &n))
			return (int)i;
	}
	return -ENOENT;
}

int sadb_policy_add(struct sadb *db, const struct sadb_policy *in, uint32_t *id)
{
	struct sadb_hdr *h;
	struct tbl t;
	struct sadb_policy p;
	char msg[200];
	uint32_t reuse;
	int s, r;

	r = check_writable(db, in, "sadb_policy_add");
	if (r)
		return r;
	if (sadb_policy_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid policy: %s", msg);
		return -EINVAL;
	}
	r = op_begin(db);
	if (r)
		return r;
	h = db->h;
	t = pol_tbl(db);
	if (find_policy_sel(db, in->dir, &in->sel, true, in->priority) >= 0) {
		sadb__set_err(db, "an identical policy (direction, selector, priority) exists");
		return op_end(db, -EEXIST);
	}
	s = slot_alloc(db, true);
	if (s < 0) {
		sadb__set_err(db, "policy table full (%u policies)", h->max_policy);
		return op_end(db, -ENOSPC);
	}
	/* Ids name a slot and how often it was reused, so a stale id never finds a newer policy. */
	reuse = db->pol_meta[s].reuse++;
	if ((uint64_t)reuse * h->max_policy + (uint64_t)s + 1 > UINT32_MAX) {
		reuse = 0;
		db->pol_meta[s].reuse = 1;
	}
	memcpy(&p, in, sizeof(p));
	p.id = reuse * h->max_policy + (uint32_t)s + 1;
	pol_seal(&p);
	db->pol_meta[s].selhash = sel_hash(p.dir, &p.sel);
	if (db->selmap_valid) {
		if (db->selmap_n + 1 > db->selmap_cap / 2)
			selmap_drop(db); /* rebuilt on next use */
		else
			selmap_put(db, db->pol_meta[s].selhash, (uint32_t)s);
	}
	write_copy(db, &t, (uint32_t)s, true, &p);
	jappend(db, SADB_CHG_POL_ADD, p.id);
	h->txn.n_policy++;
	h->txn.pol_changed = 1;
	if (id)
		*id = p.id;
	sadb__clear_err(db);
	return op_end(db, 0);
}

static void pol_del_slot(struct sadb *db, uint32_t s, uint32_t id)
{
	struct tbl t = pol_tbl(db);

	write_copy(db, &t, s, false, NULL);
	db->h->txn.n_policy--;
	db->h->txn.pol_changed = 1;
	if (id)
		jappend(db, SADB_CHG_POL_DEL, id);
}

int sadb_policy_delete(struct sadb *db, uint32_t id)
{
	const struct sadb_policy *p;
	uint32_t s;
	int r;

	if (!db)
		return -EINVAL;
	r = op_begin(db);
	if (r)
		return r;
	s = id ? (id - 1) % db->h->max_policy : 0;
	p = id && s < atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed) ? sadb__pol_wview(db, s) : NULL;
	if (!p || p->id != id) {
		sadb__set_err(db, "no policy with id %u", id);
		return op_end(db, -ENOENT);
	}
	pol_del_slot(db, s, id);
	sadb__clear_err(db);
	return op_end(db, 0);
}

int sadb_policy_delete_sel(struct sadb *db, uint8_t dir, const struct sadb_selector *sel)
{
	int s, r;

	r = check_writable(db, sel, "sadb_policy_delete_sel");
	if (r)
		return r;
	r = op_begin(db);
	if (r)
		return r;
	s = find_policy_sel(db, dir, sel, false, 0);
	if (s < 0) {
		sadb__set_err(db, "no policy with that direction and selector");
		return op_end(db, -ENOENT);
	}
	pol_del_slot(db, (uint32_t)s, sadb__pol_wview(db, (uint32_t)s)->id);
	sadb__clear_err(db);
	return op_end(db, 0);
}

int sadb_policy_flush(struct sadb *db)
{
	uint32_t hw;
	int r, n = 0;

	if (!db)
		return -EINVAL;
	r = op_begin(db);
	if (r)
		return r;
	hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	for (uint32_t i = 0; i < hw; i++) {
		if (sadb__pol_wview(db, i)) {
			pol_del_slot(db, i, 0);
			n++;
		}
	}
	if (n)
		jappend(db, SADB_CHG_FLUSH_POL, 0);
	sadb__clear_err(db);
	return op_end(db, n);
}
