/* tests/unit/test_sadb_stats.c: the counters view (sadb/sadb_stats.c). A reading shows every SA's
 * identity, lifetimes and runtime counters and the workers' records as the SADB holds them, and the
 * same as sadb_stats_read makes from the SADB directly; no 8 bytes of any key or salt are anywhere
 * in the file; the file is 0640 with the given group in a 2750 directory; a name that is a
 * symbolic link or a directory, and a directory others may write, are refused and left as they were; a reader that copies while the
 * producer publishes as fast as it can never gets a torn reading (every SA record of one reading
 * carries the same counter value); a deleted SA's gone record follows the live ones with the
 * counters its runtime area held when it was kept, state dead, and at most SADB_STATS_GONE_MAX of
 * them are shown, the oldest leaving first; the home agent's node records follow them, bounded. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sadb/sadb_stats.h"
#include "tests/unit/sadb_testlib.h"

#define N_SA 40

/* One directory for the whole run (each test works in a subdirectory of its own), removed at the
 * end. */
static char tdir[64];

/* A SADB with N_SA SAs whose runtime counters are all `value`. */
static struct sadb *make_db(uint32_t *slots)
{
	struct sadb_params p = { .max_sa = 256, .max_policy = 64 };
	struct sadb *db;

	assert_int_equal(sadb_open(t_path("stats"), SADB_RDWR | SADB_CREATE, &p, &db, NULL, 0), 0);
	for (uint32_t i = 0; i < N_SA; i++) {
		struct sadb_sa sa = t_sa(0x1000 + i, "192.0.2.1", "192.0.2.2");

		sa.soft.packets = 1000 + i;
		assert_int_equal(sadb_sa_add(db, &sa, &slots[i]), 0);
	}
	return db;
}

static void set_counters(struct sadb *db, const uint32_t *slots, uint64_t value)
{
	for (uint32_t i = 0; i < N_SA; i++) {
		struct sadb_runtime *rt = sadb_runtime(db, slots[i]);

		__atomic_store_n(&rt->packets, value, __ATOMIC_RELAXED);
		__atomic_store_n(&rt->bytes, value * 100, __ATOMIC_RELAXED);
		__atomic_store_n(&rt->drops[SADB_DROP_REPLAY], value + i, __ATOMIC_RELAXED);
	}
}

/* The view's name in the test's subdirectory `sub` (which xipsecd's part makes, or the test). */
static const char *view_path(const char *sub)
{
	static char p[128];

	snprintf(p, sizeof(p), "%s/%s/view", tdir, sub);
	return p;
}

static void test_reading(void **state)
{
	uint32_t slots[N_SA];
	struct sadb *db = make_db(slots);
	struct sadb_stats_writer *w;
	struct sadb_stats_reading *r, *direct;
	char msg[512];
	struct stat st;

	(void)state;
	set_counters(db, slots, 7);
	__atomic_store_n(&sadb_worker_stats(db, 0)->rx_bytes, 4242, __ATOMIC_RELAXED);
	__atomic_store_n(&sadb_dp_stats(db)->n_workers, 1, __ATOMIC_RELAXED);
	assert_int_equal(sadb_stats_create(view_path("a"), getegid(), 256, &w, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_load(view_path("a"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(r->published, 0);            /* nothing published yet: an empty reading */
	free(r);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(sadb_stats_load(view_path("a"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_read(db, true, &direct), 0);
	assert_true(r->published > 0);
	assert_int_equal(r->n_sa, N_SA);
	assert_int_equal(r->n_rec, N_SA);
	assert_int_equal(r->max_sa, 256);
	assert_int_equal(r->n_workers, 1);
	assert_int_equal(r->w[0].rx_bytes, 4242);
	assert_int_equal(r->sa_drops[SADB_DROP_REPLAY], N_SA * 7 + N_SA * (N_SA - 1) / 2);
	for (uint32_t i = 0; i < N_SA; i++) {
		const struct sadb_stats_sa *a = &r->sa[i];
		struct sadb_sa sa;

		assert_int_equal(sadb_sa_get(db, a->slot, &sa), 0);
		assert_int_equal(a->spi, sa.spi);
		assert_int_equal(a->instance, sa.instance);
		assert_int_equal(a->soft.packets, sa.soft.packets);
		assert_true(sadb_addr_eq(&a->dst, &sa.dst));
		assert_int_equal(a->packets, 7);
		assert_int_equal(a->bytes, 700);
		assert_int_equal(a->drops[SADB_DROP_REPLAY], 7 + (a->spi - 0x1000));
		/* the SADB's own reading is the same, record for record */
		assert_memory_equal(a, &direct->sa[i], sizeof(*a));
	}
	free(direct);
	free(r);

	/* no key bytes in the file, whatever the offset */
	{
		FILE *f = fopen(view_path("a"), "rb");
		size_t len;
		uint8_t *buf;

		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		len = (size_t)ftell(f);
		rewind(f);
		buf = malloc(len);
		assert_int_equal(fread(buf, 1, len, f), len);
		fclose(f);
		for (uint32_t i = 0; i < N_SA; i++) {
			struct sadb_sa sa = t_sa(0x1000 + i, "192.0.2.1", "192.0.2.2");

			for (unsigned k = 0; k + 8 <= sa.enc_key_len; k++)
				assert_null(memmem(buf, len, sa.enc_key + k, 8));
		}
		free(buf);
	}
	assert_int_equal(stat(view_path("a"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_gid, getegid());
	{
		char dir[128];

		snprintf(dir, sizeof(dir), "%s/a", tdir);
		assert_int_equal(stat(dir, &st), 0);
		assert_int_equal(st.st_mode & 07777, 02750);
	}
	sadb_stats_close(w);
	sadb_close(db);
}

static void test_refused_names(void **state)
{
	struct sadb_stats_writer *w;
	char msg[512], target[128], link[128];
	struct stat st;

	(void)state;
	/* a symbolic link at the view's name: refused, the link and its target left alone */
	snprintf(target, sizeof(target), "%s/b", tdir);
	assert_int_equal(mkdir(target, 02750), 0);
	snprintf(target, sizeof(target), "%s/target", tdir);
	assert_int_equal(close(open(target, O_CREAT | O_WRONLY, 0600)), 0);
	assert_int_equal(symlink(target, view_path("b")), 0);
	assert_int_equal(sadb_stats_create(view_path("b"), getegid(), 16, &w, msg, sizeof(msg)), -ELOOP);
	assert_null(w);
	assert_non_null(strstr(msg, "symbolic link"));
	assert_int_equal(lstat(view_path("b"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(unlink(view_path("b")), 0);
	/* a directory in its place */
	assert_int_equal(mkdir(view_path("b"), 0700), 0);
	assert_int_equal(sadb_stats_create(view_path("b"), getegid(), 16, &w, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(rmdir(view_path("b")), 0);
	/* the directory itself a symbolic link */
	snprintf(link, sizeof(link), "%s/ldir", tdir);
	snprintf(target, sizeof(target), "%s/b", tdir);
	assert_int_equal(symlink(target, link), 0);
	strcat(link, "/view");
	assert_int_equal(sadb_stats_create(link, getegid(), 16, &w, msg, sizeof(msg)), -ELOOP);
	/* a directory others may write (a --stats of /tmp/view): refused, and never changed */
	snprintf(target, sizeof(target), "%s/open", tdir);
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(chmod(target, 01777), 0);
	strcat(target, "/view");
	assert_int_equal(sadb_stats_create(target, getegid(), 16, &w, msg, sizeof(msg)), -EPERM);
	assert_non_null(strstr(msg, "no one else may write"));
	*strrchr(target, '/') = '\0';
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_mode & 07777, 01777);
	/* readers refuse a link too, and say a missing view is xipsecd's to write */
	{
		struct sadb_stats_reading *r;

		assert_int_equal(sadb_stats_load(link, &r, msg, sizeof(msg)), -ENOENT);
		assert_non_null(strstr(msg, "xipsecd"));
	}
}

struct race {
	struct sadb *db;
	const uint32_t *slots;
	struct sadb_stats_writer *w;
	volatile int stop;
};

static void *publisher(void *arg)
{
	struct race *rc = arg;

	for (uint64_t v = 1; !rc->stop; v++) {
		set_counters(rc->db, rc->slots, v);
		sadb_stats_publish(rc->w, rc->db);
	}
	return NULL;
}

static void test_never_torn(void **state)
{
	uint32_t slots[N_SA];
	struct race rc = { .db = make_db(slots), .slots = slots };
	pthread_t th;
	char msg[512];
	unsigned whole = 0;

	(void)state;
	assert_int_equal(sadb_stats_create(view_path("c"), getegid(), 256, &rc.w, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_publish(rc.w, rc.db), 0);
	assert_int_equal(pthread_create(&th, NULL, publisher, &rc), 0);
	for (unsigned i = 0; i < 3000; i++) {
		struct sadb_stats_reading *r;
		int err = sadb_stats_load(view_path("c"), &r, msg, sizeof(msg));

		if (err == -EAGAIN)
			continue;
		assert_int_equal(err, 0);
		assert_int_equal(r->n_rec, N_SA);
		for (uint32_t k = 1; k < N_SA; k++)
			if (r->sa[k].packets != r->sa[0].packets || r->sa[k].bytes != r->sa[0].packets * 100)
				fail_msg("torn reading: SA %u has %llu packets, SA 0 %llu", k,
					 (unsigned long long)r->sa[k].packets, (unsigned long long)r->sa[0].packets);
		whole++;
		free(r);
	}
	rc.stop = 1;
	pthread_join(th, NULL);
	assert_true(whole > 0);
	sadb_stats_close(rc.w);
	sadb_close(rc.db);
}

static void test_gone(void **state)
{
	uint32_t slots[N_SA];
	struct sadb *db = make_db(slots);
	struct sadb_stats_writer *w;
	struct sadb_stats_reading *r;
	struct sadb_runtime *rt = sadb_runtime(db, slots[3]);
	struct sadb_sa sa, other;
	char msg[512];

	(void)state;
	set_counters(db, slots, 7);
	assert_int_equal(sadb_stats_create(view_path("d"), getegid(), 256, &w, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_get(db, slots[3], &sa), 0);
	assert_int_equal(sadb_sa_get(db, slots[4], &other), 0);
	assert_int_equal(sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst), 0);
	/* counted after the deletion, before the dataplane let go of it: part of the final counters */
	__atomic_store_n(&rt->packets, 99, __ATOMIC_RELAXED);
	assert_int_equal(sadb_stats_gone(w, db, &sa, slots[3]), 0);
	/* a slot that holds another SA's area keeps nothing */
	assert_int_equal(sadb_stats_gone(w, db, &sa, slots[4]), -ESTALE);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(sadb_stats_load(view_path("d"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(r->n_sa, N_SA - 1);
	assert_int_equal(r->n_rec, N_SA - 1);
	assert_int_equal(r->n_gone, 1);
	for (uint32_t i = 0; i < r->n_rec; i++)
		assert_true(r->sa[i].instance != sa.instance && !(r->sa[i].flags & SADB_STATS_GONE));
	assert_int_equal(r->sa[r->n_rec].flags, SADB_STATS_GONE);
	assert_int_equal(r->sa[r->n_rec].state, SADB_STATE_DEAD);
	assert_int_equal(r->sa[r->n_rec].instance, sa.instance);
	assert_int_equal(r->sa[r->n_rec].slot, slots[3]);
	assert_int_equal(r->sa[r->n_rec].spi, sa.spi);
	assert_int_equal(r->sa[r->n_rec].reqid, sa.reqid);
	assert_int_equal(r->sa[r->n_rec].packets, 99);
	assert_int_equal(r->sa[r->n_rec].bytes, 700);
	free(r);
	/* bounded: the newest SADB_STATS_GONE_MAX stay, oldest first */
	for (uint64_t v = 100; v < 100 + SADB_STATS_GONE_MAX; v++) {
		__atomic_store_n(&rt->packets, v, __ATOMIC_RELAXED);
		assert_int_equal(sadb_stats_gone(w, db, &sa, slots[3]), 0);
	}
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(sadb_stats_load(view_path("d"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(r->n_gone, SADB_STATS_GONE_MAX);
	assert_int_equal(r->sa[r->n_rec].packets, 100);
	assert_int_equal(r->sa[r->n_rec + SADB_STATS_GONE_MAX - 1].packets, 100 + SADB_STATS_GONE_MAX - 1);
	free(r);
	sadb_stats_close(w);
	sadb_close(db);
}

/* The home agent's node records follow the gone records, as set (a copy: the caller's array may
 * change), at most SADB_STATS_NODE_CAP of the SA capacity, and a smaller set replaces a larger; the
 * cluster's section of the same reading is kept beside them. */
static void test_nodes(void **state)
{
	uint32_t slots[N_SA];
	struct sadb *db = make_db(slots);
	struct sadb_stats_writer *w;
	struct sadb_stats_reading *r;
	struct sadb_sa sa;
	char msg[512];
	static struct sadb_stats_node n[SADB_STATS_NODE_CAP(256) + 1];
	struct sadb_stats_cluster cl = { .present = 1, .covered_sas = 5, .sync_lag_ms = SADB_STATS_NONE };

	(void)state;
	assert_int_equal(sadb_stats_create(view_path("e"), getegid(), 256, &w, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_get(db, slots[0], &sa), 0);
	assert_int_equal(sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst), 0);
	assert_int_equal(sadb_stats_gone(w, db, &sa, slots[0]), 0);
	for (uint32_t i = 0; i < SADB_STATS_NODE_CAP(256) + 1; i++) {
		n[i].hoa[0] = 0x20;
		n[i].hoa[15] = (uint8_t)i;
		n[i].bu_accepted = i;
		n[i].last_bu_age_ms = i ? 1000 * i : UINT64_MAX;
		n[i].n_ba = 1;
		n[i].ba[0].status = 135;
		n[i].ba[0].count = i + 1;
	}
	assert_int_equal(sadb_stats_set_nodes(w, n, SADB_STATS_NODE_CAP(256) + 1), -ENOSPC);
	assert_int_equal(sadb_stats_set_nodes(w, n, SADB_STATS_NODE_CAP(256)), 0);
	memset(n, 0, sizeof(n));
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(sadb_stats_load(view_path("e"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(r->cluster.present, 1);
	assert_int_equal(r->cluster.covered_sas, 5);
	assert_true(r->cluster.sync_lag_ms == SADB_STATS_NONE);
	assert_int_equal(r->n_gone, 1);
	assert_int_equal(r->n_node, SADB_STATS_NODE_CAP(256));
	const struct sadb_stats_node *v = sadb_stats_nodes(r);
	assert_ptr_equal(v, (const void *)&r->sa[r->n_rec + 1]);
	for (uint32_t i = 0; i < r->n_node; i++) {
		assert_int_equal(v[i].hoa[15], i);
		assert_int_equal(v[i].bu_accepted, i);
		assert_int_equal(v[i].ba[0].count, i + 1);
	}
	assert_true(v[0].last_bu_age_ms == UINT64_MAX);
	free(r);
	n[0].hoa[15] = 77;
	assert_int_equal(sadb_stats_set_nodes(w, n, 1), 0);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(sadb_stats_load(view_path("e"), &r, msg, sizeof(msg)), 0);
	assert_int_equal(r->n_node, 1);
	assert_int_equal(sadb_stats_nodes(r)[0].hoa[15], 77);
	free(r);
	/* the SADB's own reading has no home agent, so no node */
	assert_int_equal(sadb_stats_read(db, true, &r), 0);
	assert_int_equal(r->n_node, 0);
	free(r);
	sadb_stats_close(w);
	sadb_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reading),
		cmocka_unit_test(test_refused_names),
		cmocka_unit_test(test_never_torn),
		cmocka_unit_test(test_gone),
		cmocka_unit_test(test_nodes),
	};
	char cmd[128];
	int failed;

	snprintf(tdir, sizeof(tdir), "/tmp/xipsec-test-stats.XXXXXX");
	if (!mkdtemp(tdir))
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
	return system(cmd) == 0 ? failed : 1;
}
