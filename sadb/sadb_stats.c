/* sadb/sadb_stats.c: the counters view (sadb/sadb_stats.h): the producer's files (the directory and
 * the file it trusts, a new file per start renamed into place), a reading of the SADB copied into
 * the buffer that is not current and published with the gone records the producer keeps, and the
 * readers' whole copy of the current one.
 * The publication argument is written at the declarations in sadb_stats.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sadb/sadb_stats.h"

#define FERR(...) do { if (errmsg && errlen) snprintf(errmsg, errlen, __VA_ARGS__); } while (0)
#define LOAD_RETRIES 1000u

_Static_assert(sizeof(struct sadb_stats_sa) % 8 == 0, "an SA record is copied word by word");
_Static_assert(sizeof(struct sadb_stats_node) % 8 == 0, "a node record is copied word by word");
_Static_assert(offsetof(struct sadb_stats_reading, sa) % 8 == 0 &&
	       sizeof(struct sadb_stats_reading) % 8 == 0, "a reading is copied word by word");

/* At offset 0 of the file; written once before the file gets its name, except current. */
struct stats_head {
	uint64_t magic;
	uint32_t version, head_size;
	uint32_t sa_size, reading_size;    /* sizeof the records: a reader of another build refuses */
	uint32_t cap_sa;                   /* SA records each buffer holds (live and gone) */
	uint32_t cap_node, node_size;      /* mobile node records each buffer holds, and their size */
	uint32_t pad;
	uint64_t buf_off[2], buf_size;
	uint64_t current;                  /* the buffer of the last whole reading (release store) */
};

/* A deleted SA's record, shown until CLOCK_MONOTONIC ns `until`. */
struct gone {
	struct sadb_stats_sa rec;
	uint64_t until;
};

struct sadb_stats_writer {
	uint8_t *map;
	size_t size;
	uint32_t max_sa;                   /* live records: the SADB's capacity */
	uint64_t *scratch;                 /* one reading, built here, then stored word by word */
	struct gone gone[SADB_STATS_GONE_MAX]; /* a ring, oldest at gone_head */
	uint32_t gone_head, n_gone;
	struct sadb_stats_ha ha;           /* sadb_stats_set_ha's, copied into each reading */
	struct sadb_stats_node *nodes;     /* sadb_stats_set_nodes's, likewise */
	uint32_t n_node, cap_node;
	struct sadb_stats_cluster cluster; /* sadb_stats_set_cluster's, likewise */
};

const char *sadb_stats_ha_kind_name(unsigned kind)
{
	static const char *const n[SADB_HA_KINDS] = {
		"bu_received", "bu_accepted", "bu_rejected", "bu_dropped", "ba_sent", "be_sent", "pp_sent",
		"errors_limited", "brr_sent", "moves", "proxy_na_sent", "dad_ok", "dad_failed", "expired",
	};
	return kind < SADB_HA_KINDS ? n[kind] : "?";
}

const char *sadb_stats_cl_counter_name(unsigned counter)
{
	static const char *const n[SADB_CL_COUNTERS] = {
		"sent", "received", "send_errors", "leases_asked", "leases_acked", "leases_refused",
		"resyncs_asked", "resyncs_served", "takeovers", "solo_soft_expired", "solo_hard_expired",
	};
	return counter < SADB_CL_COUNTERS ? n[counter] : "?";
}

const char *sadb_stats_cl_drop_name(unsigned reason)
{
	static const char *const n[SADB_CL_DROPS] = {
		"short", "auth", "replay", "stale", "reflected", "foreign", "malformed",
	};
	return reason < SADB_CL_DROPS ? n[reason] : "?";
}

void sadb_stats_set_cluster(struct sadb_stats_writer *w, const struct sadb_stats_cluster *cl)
{
	w->cluster = *cl;
}

void sadb_stats_set_ha(struct sadb_stats_writer *w, const struct sadb_stats_ha *ha)
{
	w->ha = *ha;
}

int sadb_stats_set_nodes(struct sadb_stats_writer *w, const struct sadb_stats_node *nodes, uint32_t n)
{
	if (n > w->cap_node)
		return -ENOSPC;
	if (n > w->n_node) {
		struct sadb_stats_node *nn = realloc(w->nodes, (size_t)n * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		w->nodes = nn;
	}
	if (n)
		memcpy(w->nodes, nodes, (size_t)n * sizeof(*nodes));
	w->n_node = n;
	return 0;
}

/* The bytes of a reading with n_sa SA records and n_node node records. */
static size_t reading_len(uint32_t n_sa, uint32_t n_node)
{
	return offsetof(struct sadb_stats_reading, sa) + (size_t)n_sa * sizeof(struct sadb_stats_sa) +
	       (size_t)n_node * sizeof(struct sadb_stats_node);
}

const struct sadb_stats_node *sadb_stats_nodes(const struct sadb_stats_reading *r)
{
	return (const struct sadb_stats_node *)(const void *)&r->sa[r->n_rec + r->n_gone];
}

static size_t buf_size(uint32_t cap_sa, uint32_t cap_node)
{
	return (reading_len(cap_sa, cap_node) + 4095) & ~(size_t)4095;
}

const char *sadb_stats_default_path(void)
{
	const char *p = getenv(SADB_STATS_ENV_PATH);

	return p ? p : SADB_STATS_DEFAULT_PATH;
}

int sadb_stats_group(const char *s, gid_t *gid)
{
	struct group *g;
	char *end;
	unsigned long v;

	if (!s)
		s = SADB_STATS_DEFAULT_GROUP;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s && !*end && !errno && v < (gid_t)-1) {
		*gid = (gid_t)v;
		return 0;
	}
	if (!(g = getgrnam(s)))
		return -ENOENT;
	*gid = g->gr_gid;
	return 0;
}

/* What lstat found at a name that is not ours: the errno that says it. */
static int refuse(const char *path, const struct stat *st, bool dir, char *errmsg, size_t errlen)
{
	const char *what = S_ISLNK(st->st_mode) ? "a symbolic link" : S_ISDIR(st->st_mode) ? "a directory" :
			   S_ISREG(st->st_mode) ? "a regular file" : "a special file";

	FERR("%s: %s owned by uid %u with mode %04o; expected %s owned by uid %u%s (remove it if you "
	     "did not make it)", path, what, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
	     dir ? "a directory" : "a regular file", (unsigned)geteuid(),
	     dir ? " that no one else may write" : "");
	if (S_ISLNK(st->st_mode))
		return -ELOOP;
	if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return dir ? -ENOTDIR : -EINVAL;
	return -EPERM;
}

/* The view's directory (the name's parent): made when missing, with group gid and mode 2750
 * (set-group-ID: a file made in it takes the group, so a producer without CAP_CHOWN can make the
 * view in a directory made for it, as the package's tmpfiles.d line does). One that exists is used
 * as it is when it is ours and nobody else may write it — never changed: a --stats of /tmp/view must
 * not make /tmp 2750 — and refused otherwise. */
static int prepare_dir(const char *path, gid_t gid, char *errmsg, size_t errlen)
{
	char dir[4096];
	char *slash;
	struct stat st;
	bool made;
	int fd, r = 0;

	if (path[0] != '/' || snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
		FERR("%s: expected an absolute path", path);
		return -EINVAL;
	}
	slash = strrchr(dir, '/');
	slash[slash == dir ? 1 : 0] = '\0';
	made = mkdir(dir, 02750) == 0;
	if (!made && errno != EEXIST) {
		r = -errno;
		FERR("cannot create %s: %s", dir, strerror(errno));
		return r;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		r = fd < 0 ? -errno : -EPERM;
		if (lstat(dir, &st) == 0)
			r = refuse(dir, &st, true, errmsg, errlen);
		else
			FERR("cannot open %s: %s", dir, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	/* mkdir's mode went through the umask, and the group is the creator's */
	if (made && ((st.st_gid != gid && fchown(fd, (uid_t)-1, gid) < 0) || fchmod(fd, 02750) < 0)) {
		r = -errno;
		FERR("cannot give %s group %u and mode 2750: %s (make it so, e.g. with systemd-tmpfiles)",
		     dir, (unsigned)gid, strerror(errno));
	}
	close(fd);
	return r;
}

int sadb_stats_create(const char *path, gid_t gid, uint32_t max_sa, struct sadb_stats_writer **out,
		      char *errmsg, size_t errlen)
{
	struct sadb_stats_writer *w;
	struct stats_head *h;
	char tmp[4200];
	struct stat st;
	size_t bs;
	int fd, r;

	*out = NULL;
	if (!path || !*path || max_sa == 0 || max_sa > UINT32_MAX - SADB_STATS_GONE_MAX) {
		FERR("counters view: no path or no SA capacity");
		return -EINVAL;
	}
	if ((r = prepare_dir(path, gid, errmsg, errlen)) < 0)
		return r;
	/* The directory is ours and closed to others, but what is already at the name must be what we
	 * would have made: a link or a file of another owner is refused, not replaced. */
	if (lstat(path, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid()))
		return refuse(path, &st, false, errmsg, errlen);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		FERR("cannot create %s: %s", tmp, strerror(errno));
		return r;
	}
	bs = buf_size(max_sa + SADB_STATS_GONE_MAX, SADB_STATS_NODE_CAP(max_sa));
	w = calloc(1, sizeof(*w));
	if (w)
		w->scratch = malloc(bs);
	if (!w || !w->scratch) {
		r = -ENOMEM;
		FERR("counters view: no memory for %zu bytes", bs);
		goto fail;
	}
	w->max_sa = max_sa;
	w->cap_node = SADB_STATS_NODE_CAP(max_sa);
	w->size = 4096 + 2 * bs;
	/* the group before the mode: the file is never readable by a group it is not meant for */
	if (fstat(fd, &st) < 0 || (st.st_gid != gid && fchown(fd, (uid_t)-1, gid) < 0) ||
	    fchmod(fd, 0640) < 0 || ftruncate(fd, (off_t)w->size) < 0) {
		r = -errno;
		FERR("cannot set up %s: %s", tmp, strerror(errno));
		goto fail;
	}
	w->map = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (w->map == MAP_FAILED) {
		w->map = NULL;
		r = -errno;
		FERR("cannot map %s: %s", tmp, strerror(errno));
		goto fail;
	}
	h = (struct stats_head *)w->map;
	*h = (struct stats_head){ SADB_STATS_MAGIC, SADB_STATS_VERSION, sizeof(*h),
				  sizeof(struct sadb_stats_sa), sizeof(struct sadb_stats_reading),
				  max_sa + SADB_STATS_GONE_MAX, w->cap_node, sizeof(struct sadb_stats_node), 0,
				  { 4096, 4096 + bs }, bs, 0 };
	if (rename(tmp, path) < 0) {
		r = -errno;
		FERR("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	close(fd);
	*out = w;
	return 0;
fail:
	unlink(tmp);
	close(fd);
	sadb_stats_close(w);
	return r;
}

void sadb_stats_close(struct sadb_stats_writer *w)
{
	if (!w)
		return;
	if (w->map)
		munmap(w->map, w->size);
	free(w->scratch);
	free(w->nodes);
	free(w);
}

static void sa_fill(struct sadb_stats_sa *o, const struct sadb_sa *sa, uint32_t slot,
			const struct sadb_runtime_view *rv)
{
	memset(o, 0, sizeof(*o));
	o->slot = slot;
	o->spi = sa->spi;
	o->proto = sa->proto;
	o->dir = sa->dir;
	o->mode = sa->mode;
	o->state = sa->state;
	o->reqid = sa->reqid;
	o->ike_id = sa->ike_id;
	o->expired = (uint16_t)rv->expired;
	o->instance = sa->instance;
	o->created = sa->created;
	o->src = sa->src;
	o->dst = sa->dst;
	o->soft = sa->soft;
	o->hard = sa->hard;
	o->packets = rv->packets;
	o->bytes = rv->bytes;
	o->first_used = rv->first_used;
	o->last_used = rv->last_used;
	memcpy(o->drops, rv->drops, sizeof(o->drops));
}

/* The reading of db into r, up to cap SA records. */
static int read_sadb(struct sadb_stats_reading *r, uint32_t cap, const struct sadb *db)
{
	const struct sadb_dp_stats *ds = sadb_dp_stats(db);
	struct sadb_info info;
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	int rc;

	if ((rc = sadb_info(db, &info)) < 0)
		return rc;
	r->sadb_generation = info.generation;
	r->max_sa = info.max_sa;
	r->n_policy = info.n_policy;
	r->max_policy = info.max_policy;
	r->n_sa = info.n_sa;
	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		struct sadb_runtime_view rv;

		/* an SA replaced while it was read is left out: the next reading has its successor */
		if (sadb_runtime_read(db, slot, sa.instance, 0, &rv) < 0)
			continue;
		for (unsigned i = 1; i < SADB_DROP_MAX; i++)
			r->sa_drops[i] += rv.drops[i];
		if (r->n_rec < cap)
			sa_fill(&r->sa[r->n_rec++], &sa, slot, &rv);
	}
	explicit_bzero(&sa, sizeof(sa));
	if (ds) {
		uint32_t nw = __atomic_load_n(&ds->n_workers, __ATOMIC_RELAXED);

		r->dp_pid = __atomic_load_n(&ds->pid, __ATOMIC_ACQUIRE);
		r->dp_started = __atomic_load_n(&ds->started, __ATOMIC_RELAXED);
		r->n_workers = nw > SADB_MAX_WORKERS ? SADB_MAX_WORKERS : nw;
		for (uint32_t i = 0; i < r->n_workers; i++) {
			const uint64_t *src = (const uint64_t *)sadb_worker_stats(db, i);
			uint64_t *dst = (uint64_t *)&r->w[i];

			for (size_t k = 0; k < sizeof(r->w[i]) / 8; k++)
				dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		}
	}
	return 0;
}

int sadb_stats_read(const struct sadb *db, bool with_sa, struct sadb_stats_reading **out)
{
	struct sadb_info info;
	struct sadb_stats_reading *r;
	uint32_t cap = 0;
	int rc;

	*out = NULL;
	if (with_sa) {
		if ((rc = sadb_info(db, &info)) < 0)
			return rc;
		cap = info.max_sa;
	}
	/* pages of records never written are never touched: the capacity costs address space only */
	if (!(r = calloc(1, reading_len(cap, 0))))
		return -ENOMEM;
	if ((rc = read_sadb(r, cap, db)) < 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int sadb_stats_gone(struct sadb_stats_writer *w, const struct sadb *db, const struct sadb_sa *sa,
		    uint32_t slot)
{
	struct sadb_runtime_view rv;
	struct gone *g;

	if (sadb_runtime_read(db, slot, sa->instance, 0, &rv) < 0)
		return -ESTALE;
	if (w->n_gone == SADB_STATS_GONE_MAX) {         /* full: the oldest leaves */
		w->gone_head = (w->gone_head + 1) % SADB_STATS_GONE_MAX;
		w->n_gone--;
	}
	g = &w->gone[(w->gone_head + w->n_gone++) % SADB_STATS_GONE_MAX];
	sa_fill(&g->rec, sa, slot, &rv);
	g->rec.state = SADB_STATE_DEAD;
	g->rec.flags = SADB_STATS_GONE;
	g->until = mono_ns() + SADB_STATS_GONE_SECONDS * 1000000000ull;
	return 0;
}

/* The gone records still shown, after r's n_rec live ones; those whose time is over are dropped. */
static void add_gone(struct sadb_stats_writer *w, struct sadb_stats_reading *r)
{
	uint64_t now = mono_ns();

	while (w->n_gone && w->gone[w->gone_head].until <= now) {
		w->gone_head = (w->gone_head + 1) % SADB_STATS_GONE_MAX;
		w->n_gone--;
	}
	for (uint32_t i = 0; i < w->n_gone; i++)
		r->sa[r->n_rec + i] = w->gone[(w->gone_head + i) % SADB_STATS_GONE_MAX].rec;
	r->n_gone = w->n_gone;
}

int sadb_stats_publish(struct sadb_stats_writer *w, const struct sadb *db)
{
	struct stats_head *h = (struct stats_head *)w->map;
	struct sadb_stats_reading *r = (struct sadb_stats_reading *)w->scratch;
	uint64_t cur = __atomic_load_n(&h->current, __ATOMIC_RELAXED), next = cur ^ 1, seq;
	uint64_t *dst = (uint64_t *)(w->map + h->buf_off[next]);
	struct timespec ts;
	size_t words;
	int rc;

	memset(r, 0, offsetof(struct sadb_stats_reading, sa));
	rc = read_sadb(r, w->max_sa, db);
	if (rc < 0)
		return rc;
	add_gone(w, r);
	r->ha = w->ha;
	r->n_node = w->n_node;
	if (w->n_node)
		memcpy(&r->sa[r->n_rec + r->n_gone], w->nodes, (size_t)w->n_node * sizeof(*w->nodes));
	r->cluster = w->cluster;
	clock_gettime(CLOCK_REALTIME, &ts);
	r->published = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	words = reading_len(r->n_rec + r->n_gone, r->n_node) / 8;
	/* seq odd before any other word of the buffer changes (the fence orders the stores after it) */
	seq = __atomic_load_n(&dst[0], __ATOMIC_RELAXED) | 1;
	__atomic_store_n(&dst[0], seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t k = 1; k < words; k++)
		__atomic_store_n(&dst[k], w->scratch[k], __ATOMIC_RELAXED);
	__atomic_store_n(&dst[0], seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h->current, next, __ATOMIC_RELEASE);
	return 0;
}

/* The current buffer copied whole into a new allocation, or -EAGAIN. h: the head as validated. */
static int copy_current(const uint8_t *map, const struct stats_head *h, struct sadb_stats_reading **out)
{
	const uint64_t *current = &((const struct stats_head *)map)->current;
	struct sadb_stats_reading *r = malloc(h->buf_size);

	if (!r)
		return -ENOMEM;
	for (unsigned tries = 0; tries < LOAD_RETRIES; tries++) {
		uint64_t cur = __atomic_load_n(current, __ATOMIC_ACQUIRE) & 1;
		const uint64_t *src = (const uint64_t *)(map + h->buf_off[cur]);
		uint64_t *dst = (uint64_t *)r;
		uint64_t seq = __atomic_load_n(&src[0], __ATOMIC_ACQUIRE);
		size_t words = offsetof(struct sadb_stats_reading, sa) / 8;

		if (seq & 1)
			continue;
		for (size_t k = 1; k < words; k++)
			dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		/* n_rec, n_gone and n_node as copied bound the rest; a torn value is caught by seq below */
		bool fits = (uint64_t)r->n_rec + r->n_gone <= h->cap_sa && r->n_node <= h->cap_node;

		if (fits)
			for (size_t k = words; k < reading_len(r->n_rec + r->n_gone, r->n_node) / 8; k++)
				dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&src[0], __ATOMIC_RELAXED) == seq && fits) {
			r->seq = seq;
			*out = r;
			return 0;
		}
	}
	free(r);
	return -EAGAIN;
}

int sadb_stats_load(const char *path, struct sadb_stats_reading **out, char *errmsg, size_t errlen)
{
	struct stats_head h;
	struct stat st;
	uint8_t *map;
	int fd, r;

	*out = NULL;
	if (!path)
		path = sadb_stats_default_path();
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		FERR("cannot open the counters view %s: %s%s", path, strerror(errno),
		     errno == ENOENT ? " (xipsecd writes it while it runs)" : "");
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(h) ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		FERR("%s: not a counters view (a regular file with a head)", path);
		close(fd);
		return -EPROTO;
	}
	if (h.magic != SADB_STATS_MAGIC || h.version != SADB_STATS_VERSION || h.head_size != sizeof(h) ||
	    h.sa_size != sizeof(struct sadb_stats_sa) || h.reading_size != sizeof(struct sadb_stats_reading) ||
	    h.node_size != sizeof(struct sadb_stats_node) || h.buf_size < reading_len(h.cap_sa, h.cap_node) ||
	    h.buf_off[0] < sizeof(h) || h.buf_off[1] < h.buf_off[0] + h.buf_size ||
	    h.buf_off[1] + h.buf_size > (uint64_t)st.st_size) {
		FERR("%s: not a counters view of version %u written by this build (found magic %#llx version "
		     "%u)", path, SADB_STATS_VERSION, (unsigned long long)h.magic, h.version);
		close(fd);
		return -EPROTO;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		r = -errno;
		FERR("cannot map %s: %s", path, strerror(errno));
		return r;
	}
	r = copy_current(map, &h, out);
	munmap(map, (size_t)st.st_size);
	if (r == -EAGAIN)
		FERR("%s: the producer kept rewriting the reading", path);
	else if (r < 0)
		FERR("counters view: %s", strerror(-r));
	return r;
}
