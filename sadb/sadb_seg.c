/* sadb/sadb_seg.c: libsadb's segment: its layout, its creation (built privately, then linked into
 * place), the checks every opener makes before trusting it, open and close, and the areas that hold
 * no records (the SA runtime areas and the dataplane's statistics), whose places follow from the
 * layout (sadb_runtime.c reads them). The multi-version scheme that makes every change atomic for readers is explained at the
 * top of sadb_int.h. */
#include "config.h"

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

#define PAGE 4096u

/* ---- layout ---- */

static inline size_t slot_size_for(size_t rec)
{
	return SADB_ALIGN_UP(SADB_SLOT_HDR + 2 * sadb__copy_size(rec), 64);
}

struct layout {
	uint64_t off_sa, off_sa_meta, off_rt, off_dp, off_hash, off_sa_free;
	uint64_t off_pol, off_pol_meta, off_pol_free, off_idx[2], off_log, size, idx_size;
	uint32_t sa_slot, pol_slot, rt, nbuckets, log_cap;
};

/* The header fields that record the layout (header field, layout field): written at creation, and
 * checked at open against the layout this program computes from the capacities. */
#define HDR_LAYOUT(X) \
	X(size, size) X(off_sa, off_sa) X(off_sa_meta, off_sa_meta) X(off_rt, off_rt) \
	X(off_hash, off_hash) X(off_sa_free, off_sa_free) X(off_pol, off_pol) \
	X(off_pol_meta, off_pol_meta) X(off_pol_free, off_pol_free) X(off_idx[0], off_idx[0]) \
	X(off_idx[1], off_idx[1]) X(off_log, off_log) X(sa_slot_size, sa_slot) X(pol_slot_size, pol_slot) \
	X(rt_size, rt) X(hash_nbuckets, nbuckets) X(idx_size, idx_size) X(log_cap, log_cap)

static void compute_layout(uint32_t max_sa, uint32_t max_pol, struct layout *l)
{
	uint64_t o = SADB_ALIGN_UP(sizeof(struct sadb_hdr), PAGE);
	uint32_t nb = 2;

	/* Eight entries per bucket and at least four entries per SA keep two-choice buckets from
	 * overflowing (the expected fullest bucket stays well below eight). */
	while ((uint64_t)nb * SADB_HASH_WAYS < 4ull * max_sa)
		nb <<= 1;
	l->sa_slot = (uint32_t)slot_size_for(sizeof(struct sadb_sa));
	l->pol_slot = (uint32_t)slot_size_for(sizeof(struct sadb_policy));
	l->rt = (uint32_t)SADB_ALIGN_UP(sizeof(struct sadb_runtime), 64);
	l->nbuckets = nb;
	l->log_cap = max_sa + max_pol;
	l->idx_size = SADB_ALIGN_UP(sadb__idx_size(max_pol), PAGE);

	l->off_sa = o;        o = SADB_ALIGN_UP(o + (uint64_t)max_sa * l->sa_slot, PAGE);
	l->off_sa_meta = o;   o = SADB_ALIGN_UP(o + (uint64_t)max_sa * sizeof(struct sadb_sa_meta), PAGE);
	/* The runtime area is page-aligned so a SADB_RUNTIME handle can map only it writable. */
	l->off_rt = o;        o = SADB_ALIGN_UP(o + (uint64_t)max_sa * l->rt, PAGE);
	/* The dataplane stats area follows it directly, so the same writable window covers both. */
	l->off_dp = o;        o = SADB_ALIGN_UP(o + sizeof(struct sadb_dp_stats), PAGE);
	l->off_hash = o;      o = SADB_ALIGN_UP(o + (uint64_t)nb * SADB_HASH_WAYS * 8, PAGE);
	l->off_sa_free = o;   o = SADB_ALIGN_UP(o + (uint64_t)max_sa * 4, PAGE);
	l->off_pol = o;       o = SADB_ALIGN_UP(o + (uint64_t)max_pol * l->pol_slot, PAGE);
	l->off_pol_meta = o;  o = SADB_ALIGN_UP(o + (uint64_t)max_pol * sizeof(struct sadb_pol_meta), PAGE);
	l->off_pol_free = o;  o = SADB_ALIGN_UP(o + (uint64_t)max_pol * 4, PAGE);
	l->off_idx[0] = o;    o += l->idx_size;
	l->off_idx[1] = o;    o += l->idx_size;
	l->off_log = o;       o = SADB_ALIGN_UP(o + (uint64_t)l->log_cap * 4, PAGE);
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
	base = mmap(NULL, SADB_ALIGN_UP(sizeof(struct sadb_hdr), PAGE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
#define HDR_PUT(hf, lf) h->hf = l.lf;
	HDR_LAYOUT(HDR_PUT)
#undef HDR_PUT
	h->journal_len = SADB_JOURNAL_LEN;
	h->hash_seed = seed | 1;
	h->created = sadb__now();
	h->internal_rev = SADB_INTERNAL_REV;
	h->next_instance = 1;
	/* Generation 1 is the empty database; tags 0 mean "no copy". */
	atomic_store(&h->gen, 1);
	r = init_mutex(&h->lock);
	munmap(base, SADB_ALIGN_UP(sizeof(struct sadb_hdr), PAGE));
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
#define HDR_DIFFERS(hf, lf) || h->hf != l.lf
	if (0 HDR_LAYOUT(HDR_DIFFERS)) {
#undef HDR_DIFFERS
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
	static const char *const names[] = { "", "locked", "copy", "precommit", "postcommit", "index", "attach" };
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


void sadb_close(struct sadb *db)
{
	if (!db)
		return;
	sadb__txn_close(db);
	munmap(db->base, db->size);
	close(db->fd);
	free(db->bld_items);
	free(db->bld_tmp);
	free(db->bld_tail);
	sadb__selmap_drop(db);
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

struct sadb_dp_stats *sadb_dp_stats(const struct sadb *db)
{
	struct layout l;

	if (!db)
		return NULL;
	/* Not in the header: its place is implied by the layout version and the capacities. */
	compute_layout(db->h->max_sa, db->h->max_policy, &l);
	return (struct sadb_dp_stats *)(db->base + l.off_dp);
}
