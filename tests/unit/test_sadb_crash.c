/* tests/unit/test_sadb_crash.c: a writer that dies holding the lock loses nothing. A writer process is stopped (SIGSTOP from
 * libsadb's XIPSEC_SADB_TEST_STOP hook) while it holds the write lock at a chosen point of a
 * transaction, then killed with SIGKILL. Meanwhile a reader thread keeps reading; another writer is
 * already waiting for the lock. The waiting writer must proceed, the dead transaction must be wholly
 * absent (stopped before its commit point) or wholly present (after it), readers must have kept
 * working while the lock was held, and never seen part of the transaction. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "sadb/sadb.h"
#include "tests/unit/sadb_testlib.h"

#define SPI_X 5000 /* updated by the dead transaction (v1 -> v2), later by the survivor (v3) */
#define SPI_Y 5001 /* added by the dead transaction */
#define SPI_Z 5002 /* deleted by the dead transaction */

static const char *db_path;

struct rstate {
	struct sadb *db;
	_Atomic int stop;
	_Atomic uint64_t reads;
	uint64_t consistent_snapshots;
	uint64_t bad;
	char first_bad[256];
	bool saw_new;
};

static struct sadb_pkt_sel pkt(void)
{
	return t_pkt("10.1.0.5", "10.2.0.5", 6, 1, 2);
}

static void *reader(void *argp)
{
	struct rstate *rs = argp;
	struct sadb_addr dst = t_addr("10.0.0.2");
	struct sadb_pkt_sel k = pkt();

	while (!atomic_load(&rs->stop)) {
		struct sadb_sa x, y, z;
		struct sadb_policy p;
		uint64_t g0 = sadb_generation(rs->db);
		int rx = sadb_sa_lookup(rs->db, SPI_X, SADB_PROTO_ESP, &dst, &x, NULL);
		int ry = sadb_sa_lookup(rs->db, SPI_Y, SADB_PROTO_ESP, &dst, &y, NULL);
		int rz = sadb_sa_lookup(rs->db, SPI_Z, SADB_PROTO_ESP, &dst, &z, NULL);
		int rp = sadb_policy_lookup(rs->db, SADB_DIR_OUT, &k, &p);
		uint64_t g1 = sadb_generation(rs->db);
		long vx = rx ? -1 : t_sa_check(&x);
		char why[200] = "";

		atomic_fetch_add(&rs->reads, 4);
		if (rx || rp)
			snprintf(why, sizeof(why), "X or the policy missing (%d %d)", rx, rp);
		else if (vx < 1 || vx > 3)
			snprintf(why, sizeof(why), "X torn or of unknown version %ld", vx);
		else if (!ry && t_sa_check(&y) != 2)
			snprintf(why, sizeof(why), "Y torn");
		else if (!rz && t_sa_check(&z) != 1)
			snprintf(why, sizeof(why), "Z torn");
		else if (p.reqid != 1 && p.reqid != 2)
			snprintf(why, sizeof(why), "policy reqid %u", p.reqid);
		else if (g0 == g1) {
			/* All four reads saw one generation: the transaction is all there or not at all. */
			bool new_y = ry == 0, new_z = rz != 0, new_p = p.reqid == 2;
			rs->consistent_snapshots++;
			if (new_y != new_z || new_y != new_p || (vx == 2 && !new_y))
				snprintf(why, sizeof(why), "part of the transaction: X v%ld, Y %s, Z %s, policy reqid %u", vx,
					 new_y ? "present" : "absent", new_z ? "absent" : "present", p.reqid);
			if (new_y)
				rs->saw_new = true;
		}
		if (why[0] && rs->bad++ == 0)
			snprintf(rs->first_bad, sizeof(rs->first_bad), "%s", why);
	}
	return NULL;
}

/* The dying writer: one transaction touching three SAs and the SPD. */
static void child(const char *stop)
{
	struct sadb_addr dst = t_addr("10.0.0.2");
	struct sadb_sa x = t_sa_version(SPI_X, 2), y = t_sa_version(SPI_Y, 2);
	struct sadb_policy q = t_pol(SADB_DIR_OUT, "10.1.0.0", 16, "10.2.0.0", 16, 10);
	struct sadb *db = NULL;
	char msg[256];

	alarm(30);
	setenv("XIPSEC_SADB_TEST_STOP", stop, 1);
	q.reqid = 2;
	if (sadb_open(db_path, SADB_RDWR, NULL, &db, msg, sizeof(msg)) || sadb_txn_begin(db) ||
	    sadb_sa_update(db, &x) || sadb_sa_add(db, &y, NULL) || sadb_sa_delete(db, SPI_Z, SADB_PROTO_ESP, &dst) ||
	    sadb_policy_add(db, &q, NULL) || sadb_txn_commit(db))
		_exit(2);
	/* Not stopped at all: the hook point was never reached. */
	_exit(3);
}

struct waiter {
	struct sadb *db;
	_Atomic int done;
	int ret;
	char msg[256];
};

static void *survivor(void *argp)
{
	struct waiter *w = argp;
	struct sadb_sa x3 = t_sa_version(SPI_X, 3);

	w->ret = sadb_sa_update(w->db, &x3);
	snprintf(w->msg, sizeof(w->msg), "%s", sadb_errmsg(w->db));
	atomic_store(&w->done, 1);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static bool file_has(const char *path, const uint8_t *needle, size_t n)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t got, keep = 0;
	bool found = false;

	assert_non_null(f);
	while (!found && (got = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		size_t len = keep + got;
		found = memmem(buf, len, needle, n) != NULL;
		keep = n - 1 < len ? n - 1 : len;
		memmove(buf, buf + len - keep, keep);
	}
	fclose(f);
	return found;
}

static void crash_at(const char *stop, bool committed)
{
	struct sadb_addr dst = t_addr("10.0.0.2");
	struct sadb *w, *r = NULL;
	struct rstate rs;
	struct waiter wt;
	pthread_t rth, wth;
	char msg[256];
	int status;
	pid_t pid;

	db_path = t_path("crash");
	w = t_open(db_path, 64, 16);
	struct sadb_sa x1 = t_sa_version(SPI_X, 1), z1 = t_sa_version(SPI_Z, 1);
	struct sadb_policy p1 = t_pol(SADB_DIR_OUT, "10.1.0.0", 16, "10.2.0.0", 16, 100);
	p1.reqid = 1;
	assert_int_equal(sadb_sa_add(w, &x1, NULL), 0);
	assert_int_equal(sadb_sa_add(w, &z1, NULL), 0);
	assert_int_equal(sadb_policy_add(w, &p1, NULL), 0);
	/* Two more policy commits, so that both index buffers are written and the dead transaction's
	 * commit changes its buffer in place (the "index" stop point is on that path only). */
	struct sadb_policy p0 = t_pol(SADB_DIR_IN, "10.9.0.0", 16, NULL, 0, 100);
	uint32_t id0;
	assert_int_equal(sadb_policy_add(w, &p0, &id0), 0);
	assert_int_equal(sadb_policy_delete(w, id0), 0);
	for (uint32_t i = 0; i < 10; i++) {
		struct sadb_sa o = t_sa_version(7000 + i, 1);
		assert_int_equal(sadb_sa_add(w, &o, NULL), 0);
	}

	memset(&rs, 0, sizeof(rs));
	assert_int_equal(sadb_open(db_path, SADB_RDONLY, NULL, &r, msg, sizeof(msg)), 0);
	rs.db = r;
	assert_int_equal(pthread_create(&rth, NULL, reader, &rs), 0);

	pid = t_fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(stop);
	alarm(60);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	if (!WIFSTOPPED(status))
		fail_msg("%s: writer not stopped (status 0x%x)", stop, status);

	/* The lock is held by a stopped process: a writer waits, readers go on. */
	memset(&wt, 0, sizeof(wt));
	wt.db = w;
	assert_int_equal(pthread_create(&wth, NULL, survivor, &wt), 0);
	uint64_t before = atomic_load(&rs.reads);
	sleep_ms(300);
	uint64_t during = atomic_load(&rs.reads) - before;
	assert_int_equal(atomic_load(&wt.done), 0);

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	for (int i = 0; i < 500 && !atomic_load(&wt.done); i++)
		sleep_ms(10);
	assert_int_equal(atomic_load(&wt.done), 1);
	pthread_join(wth, NULL);
	if (wt.ret)
		fail_msg("%s: the next writer failed: %d %s", stop, wt.ret, wt.msg);
	sleep_ms(100);
	atomic_store(&rs.stop, 1);
	pthread_join(rth, NULL);
	alarm(0);
	print_message("%-12s reads while the dead writer held the lock: %llu; consistent snapshots checked: %llu\n",
		      stop, (unsigned long long)during, (unsigned long long)rs.consistent_snapshots);
	if (rs.bad)
		fail_msg("%s: a reader saw %s", stop, rs.first_bad);
	assert_true(during > 0);

	/* The dead transaction is all there (after its commit point) or not at all. */
	struct sadb_sa out;
	struct sadb_policy pout;
	struct sadb_pkt_sel k = pkt();
	assert_int_equal(sadb_sa_lookup(r, SPI_X, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(t_sa_check(&out), 3);
	assert_int_equal(sadb_sa_lookup(r, SPI_Y, SADB_PROTO_ESP, &dst, &out, NULL), committed ? 0 : -ENOENT);
	assert_int_equal(sadb_sa_lookup(r, SPI_Z, SADB_PROTO_ESP, &dst, &out, NULL), committed ? -ENOENT : 0);
	/* The SPD index the dead writer may have built must not resurface with the next generation. */
	assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), 0);
	assert_int_equal(pout.reqid, committed ? 2 : 1);
	struct sadb_info info;
	assert_int_equal(sadb_info(r, &info), 0);
	assert_int_equal(info.n_sa, 12);
	assert_int_equal(info.n_policy, committed ? 2 : 1);
	if (committed)
		assert_true(rs.saw_new || info.generation > 0);

	/* Neither the dead transaction's half-written key nor superseded keys linger. */
	struct sadb_sa x2 = t_sa_version(SPI_X, 2);
	assert_false(file_has(db_path, x1.enc_key, 32));
	assert_false(file_has(db_path, x2.enc_key, 32));

	/* Free slots are exactly right after recovery: fill the table to its capacity, no more. */
	uint32_t slots[64], n = 0, have = info.n_sa;
	for (uint32_t i = 0; have + n < 64; i++, n++) {
		struct sadb_sa f = t_sa_version(9000 + i, 1);
		if (sadb_sa_add(w, &f, &slots[n]))
			fail_msg("%s: add %u of %u failed: %s", stop, n, 64 - have, sadb_errmsg(w));
		for (uint32_t j = 0; j < n; j++)
			assert_int_not_equal(slots[j], slots[n]);
	}
	struct sadb_sa f = t_sa_version(9999, 1);
	assert_int_equal(sadb_sa_add(w, &f, NULL), -ENOSPC);
	assert_int_equal(sadb_sa_flush(w, SADB_PROTO_ANY), 64);
	/* The journal tells a follower what happened, without gaps. */
	uint64_t since = 0;
	struct sadb_change ch[64];
	int nc, total = 0;
	while ((nc = sadb_changes(r, &since, ch, 64)) > 0)
		total += nc;
	assert_int_equal(nc, 0);
	assert_true(since == sadb_generation(r));
	assert_true(total > 0);
	/* The SPD index goes on from what recovery left: the buffer the dead writer may have been
	 * writing is rebuilt, then both buffers are changed in place again; every commit shows. */
	struct sadb_policy p3 = t_pol(SADB_DIR_OUT, "10.1.0.0", 24, "10.2.0.0", 16, 5);
	p3.reqid = 3;
	for (int round = 0; round < 4; round++) {
		uint32_t id3;
		assert_int_equal(sadb_policy_add(w, &p3, &id3), 0);
		assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), 0);
		assert_int_equal(pout.reqid, 3);
		assert_int_equal(sadb_policy_delete(w, id3), 0);
		assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), 0);
		assert_int_equal(pout.reqid, committed ? 2 : 1);
	}
	sadb_close(r);
	sadb_close(w);
}

static void test_crash_holding_lock(void **state)    { crash_at("locked", false); }
static void test_crash_mid_copy(void **state)        { crash_at("copy", false); }
static void test_crash_mid_policy_copy(void **state) { crash_at("copy:3", false); }
static void test_crash_before_commit(void **state)   { crash_at("precommit", false); }
static void test_crash_after_commit(void **state)    { crash_at("postcommit", true); }
static void test_crash_mid_index(void **state)       { crash_at("index", false); }

/* A writer that is stopped (not dead) holding the lock: other writers give up after their timeout
 * with a message naming it, readers carry on, and once it continues everybody proceeds. */
static void test_stopped_writer_times_out(void **state)
{
	struct sadb_addr dst = t_addr("10.0.0.2");
	struct sadb *w, *r = NULL;
	struct sadb_sa out;
	char msg[256], pidstr[32];
	int status;
	pid_t pid;

	db_path = t_path("stopped");
	w = t_open(db_path, 16, 4);
	struct sadb_sa x1 = t_sa_version(SPI_X, 1), z1 = t_sa_version(SPI_Z, 1);
	assert_int_equal(sadb_sa_add(w, &x1, NULL), 0);
	assert_int_equal(sadb_sa_add(w, &z1, NULL), 0);
	sadb_close(w);
	assert_int_equal(sadb_open(db_path, SADB_RDONLY, NULL, &r, msg, sizeof(msg)), 0);

	pid = t_fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child("copy");
	alarm(30);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));

	setenv("XIPSEC_SADB_LOCK_TIMEOUT_MS", "300", 1);
	w = t_open(db_path, 0, 0);
	unsetenv("XIPSEC_SADB_LOCK_TIMEOUT_MS");
	struct sadb_sa x3 = t_sa_version(SPI_X, 3);
	assert_int_equal(sadb_sa_update(w, &x3), -ETIMEDOUT);
	snprintf(pidstr, sizeof(pidstr), "pid %d", (int)pid);
	assert_non_null(strstr(sadb_errmsg(w), pidstr));
	/* Readers are not held up by it. */
	assert_int_equal(sadb_sa_lookup(r, SPI_X, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(t_sa_check(&out), 1);

	/* Let it finish: its whole transaction appears (the hook point is passed once). */
	kill(pid, SIGCONT);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	alarm(0);
	assert_int_equal(sadb_sa_lookup(r, SPI_X, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(t_sa_check(&out), 2);
	assert_int_equal(sadb_sa_lookup(r, SPI_Y, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_update(w, &x3), 0);
	sadb_close(w);
	sadb_close(r);
}

/* Writers in several processes at once are serialised: every change of each lands exactly once. */
static void test_writer_processes(void **state)
{
	enum { NPROC = 3, PER = 300 };
	struct sadb_addr dst = t_addr("10.0.0.2");
	struct sadb *db;
	pid_t pids[NPROC];
	int status;

	db_path = t_path("writers");
	db = t_open(db_path, NPROC * PER + 64, NPROC * PER + 16);
	sadb_close(db);
	for (int k = 0; k < NPROC; k++) {
		pids[k] = t_fork();
		assert_true(pids[k] >= 0);
		if (pids[k] == 0) {
			struct sadb *w = NULL;
			char msg[256];
			alarm(60);
			if (sadb_open(db_path, SADB_RDWR, NULL, &w, msg, sizeof(msg)))
				_exit(2);
			for (uint32_t i = 0; i < PER; i++) {
				uint32_t spi = 10000 + (uint32_t)k * PER + i;
				struct sadb_sa sa = t_sa_version(spi, 1);
				struct sadb_policy p = t_pol(SADB_DIR_IN, "10.0.0.0", 8, NULL, 0, spi);
				bool txn = i % 3 == 0;
				if ((txn && sadb_txn_begin(w)) || sadb_sa_add(w, &sa, NULL) || sadb_policy_add(w, &p, NULL))
					_exit(3);
				sa = t_sa_version(spi, 2);
				if (sadb_sa_update(w, &sa) || (txn && sadb_txn_commit(w)))
					_exit(4);
				/* A few SPIs allocated concurrently must still be unique. */
				uint32_t got;
				if (i % 50 == 0 && sadb_spi_alloc(w, SADB_PROTO_AH, NULL, &dst, 256, 4096, &got))
					_exit(5);
			}
			sadb_close(w);
			_exit(0);
		}
	}
	alarm(120);
	for (int k = 0; k < NPROC; k++) {
		assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("writer %d failed: status 0x%x", k, status);
	}
	alarm(0);
	db = t_open(db_path, 0, 0);
	struct sadb_info info;
	assert_int_equal(sadb_info(db, &info), 0);
	assert_int_equal(info.n_sa, NPROC * PER + NPROC * (PER / 50));
	assert_int_equal(info.n_policy, NPROC * PER);
	for (uint32_t spi = 10000; spi < 10000 + NPROC * PER; spi++) {
		struct sadb_sa out;
		assert_int_equal(sadb_sa_lookup(db, spi, SADB_PROTO_ESP, &dst, &out, NULL), 0);
		assert_int_equal(t_sa_check(&out), 2);
	}
	/* The journal has every change once, in generation order. */
	uint64_t since = 0, last = 0;
	struct sadb_change ch[256];
	int n, adds = 0;
	while ((n = sadb_changes(db, &since, ch, 256)) > 0)
		for (int i = 0; i < n; i++) {
			assert_true(ch[i].gen >= last);
			last = ch[i].gen;
			adds += ch[i].op == SADB_CHG_SA_ADD;
		}
	assert_int_equal(n, 0);
	assert_int_equal(adds, NPROC * PER + NPROC * (PER / 50));
	sadb_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_holding_lock),
		cmocka_unit_test(test_crash_mid_copy),
		cmocka_unit_test(test_crash_mid_policy_copy),
		cmocka_unit_test(test_crash_mid_index),
		cmocka_unit_test(test_crash_before_commit),
		cmocka_unit_test(test_crash_after_commit),
		cmocka_unit_test(test_stopped_writer_times_out),
		cmocka_unit_test(test_writer_processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
