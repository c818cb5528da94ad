/* tests/unit/test_sadb_concurrency.c: readers never see a torn record. One writer process adds, updates and
 * deletes SAs and policies (single calls and transactions) as fast as it can while two reader
 * threads in another process look them up for >= 5 s. Every record carries a test checksum over
 * fields derived from its version (sadb_testlib.h), so each read must be one whole version; a
 * transaction updates a pair of SAs to the same version, so a reader that sees both must never see
 * them at different versions of one transaction. Reads, retries and the slowest read are reported. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <cmocka.h>

#include "sadb/sadb.h"
#include "tests/unit/sadb_testlib.h"

#define N_SA      512   /* SPIs 1000 .. 1511 */
#define N_POL     128
#define PAIR_BASE 5000  /* SAs 5000+2k and 5001+2k are always updated together in one transaction */
#define N_PAIRS   16
#define RUN_SECONDS 5.5

struct shared {
	_Atomic int stop;
	_Atomic uint64_t writes, txns;
	_Atomic int writer_err;
	char writer_msg[256];
};

struct reader_stats {
	uint64_t reads, found, pol_reads, pol_found, pair_checks, retries, iter;
	uint64_t max_ns;
	uint64_t bad, errors;
	char first_bad[256], first_err[256];
};

static const char *db_path;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t pol_sum(const struct sadb_policy *p)
{
	uint32_t h = 2166136261u;
	h = t_fnv(&p->priority, 4, h);
	h = t_fnv(&p->reqid, 4, h);
	h = t_fnv(p->tun_src.a.b, 4, h);
	h = t_fnv(p->tun_dst.a.b, 4, h);
	h = t_fnv(p->sel.src.a.b, 4, h);
	return h;
}

static struct sadb_policy pol_version(uint32_t i, uint32_t version)
{
	char src[32];
	struct sadb_policy p;

	snprintf(src, sizeof(src), "10.%u.%u.0", 100 + i / 256, i % 256);
	p = t_pol(SADB_DIR_OUT, src, 24, "172.16.0.0", 16, 100 + i);
	p.reqid = version;
	p.tun_src.a.w[0] = (uint32_t)t_mix(version);
	p.tun_dst.a.w[0] = (uint32_t)t_mix(version + 1);
	p.ike_id = pol_sum(&p);
	return p;
}

static struct sadb_pkt_sel pol_packet(uint32_t i)
{
	char src[32];

	snprintf(src, sizeof(src), "10.%u.%u.7", 100 + i / 256, i % 256);
	return t_pkt(src, "172.16.3.4", 6, 1234, 80);
}

/* ---- writer process ---- */

static void writer(struct shared *sh)
{
	struct sadb *db = NULL;
	char msg[256];
	uint32_t sa_ver[N_SA] = { 0 }, pol_id[N_POL], pol_ver[N_POL] = { 0 }, pair_ver = 0;
	bool sa_live[N_SA];
	uint64_t x = 12345;
	int r;

	alarm(60);
	r = sadb_open(db_path, SADB_RDWR, NULL, &db, msg, sizeof(msg));
	if (r)
		goto fail;
	for (uint32_t i = 0; i < N_SA; i++)
		sa_live[i] = true;
	memset(pol_id, 0, sizeof(pol_id));
	/* Learn the policy ids the parent created (they are in creation order). */
	{
		uint32_t cur = 0, k = 0;
		struct sadb_policy p;
		while (k < N_POL && sadb_policy_next(db, &cur, &p) == 0)
			pol_id[p.priority - 100] = p.id, k++;
	}
	while (!atomic_load(&sh->stop)) {
		uint32_t op, i;

		x = t_mix(x);
		op = (uint32_t)(x % 100);
		i = (uint32_t)(x >> 32) % N_SA;
		if (op < 45) {
			if (!sa_live[i])
				continue;
			struct sadb_sa sa = t_sa_version(1000 + i, ++sa_ver[i]);
			r = sadb_sa_update(db, &sa);
		} else if (op < 60) {
			struct sadb_sa sa = t_sa_version(1000 + i, ++sa_ver[i]);
			if (sa_live[i])
				r = sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst);
			else
				r = sadb_sa_add(db, &sa, NULL);
			if (!r)
				sa_live[i] = !sa_live[i];
		} else if (op < 75) {
			/* Policy replaced: delete and add again with a new version, in one transaction. */
			uint32_t k = i % N_POL;
			struct sadb_policy p = pol_version(k, ++pol_ver[k]);
			r = sadb_txn_begin(db);
			if (!r)
				r = sadb_policy_delete(db, pol_id[k]);
			if (!r)
				r = sadb_policy_add(db, &p, &pol_id[k]);
			if (r)
				sadb_txn_abort(db);
			else
				r = sadb_txn_commit(db);
			atomic_fetch_add(&sh->txns, 1);
		} else {
			/* Pairs: both SAs of a pair move to one new version atomically. */
			uint32_t k = i % N_PAIRS;
			struct sadb_sa a = t_sa_version(PAIR_BASE + 2 * k, ++pair_ver);
			struct sadb_sa b = t_sa_version(PAIR_BASE + 2 * k + 1, pair_ver);
			r = sadb_txn_begin(db);
			if (!r)
				r = sadb_sa_update(db, &a);
			if (!r)
				r = sadb_sa_update(db, &b);
			if (r)
				sadb_txn_abort(db);
			else
				r = sadb_txn_commit(db);
			atomic_fetch_add(&sh->txns, 1);
		}
		if (r)
			goto fail;
		atomic_fetch_add(&sh->writes, 1);
	}
	sadb_close(db);
	_exit(0);
fail:
	snprintf(sh->writer_msg, sizeof(sh->writer_msg), "%s", db ? sadb_errmsg(db) : msg);
	atomic_store(&sh->writer_err, r);
	_exit(1);
}

/* ---- reader threads ---- */

struct reader_arg {
	struct sadb *db;
	struct reader_stats st;
	unsigned seed;
	double until;
};

#define err(st, ...) do { \
		if ((st)->errors++ == 0) \
			snprintf((st)->first_err, sizeof((st)->first_err), __VA_ARGS__); \
	} while (0)
#define bad(st, ...) do { \
		if ((st)->bad++ == 0) \
			snprintf((st)->first_bad, sizeof((st)->first_bad), __VA_ARGS__); \
	} while (0)

static void *reader(void *argp)
{
	struct reader_arg *ra = argp;
	struct reader_stats *st = &ra->st;
	struct sadb_addr dst = t_addr("10.0.0.2");
	uint64_t x = ra->seed, r0 = sadb_read_retries();
	unsigned n = 0;

	while ((n & 255) || now_s() < ra->until) {
		struct sadb_sa sa, sb;
		struct sadb_policy p;
		uint64_t t0 = now_ns(), dt;
		uint32_t i, op;
		int r;

		x = t_mix(x + 1);
		op = (uint32_t)(x % 10);
		i = (uint32_t)(x >> 32);
		n++;
		if (op < 5) {
			r = sadb_sa_lookup(ra->db, 1000 + i % N_SA, SADB_PROTO_ESP, &dst, &sa, NULL);
			st->reads++;
			if (r == 0) {
				st->found++;
				if (t_sa_check(&sa) < 0 || sa.spi != 1000 + i % N_SA)
					bad(st, "SA %u torn (reqid %ld, sum %ld)", sa.spi, (long)sa.reqid, (long)sa.ike_id);
			} else if (r != -ENOENT) {
				err(st, "SA lookup: %d %s", r, sadb_errmsg(ra->db));
			}
		} else if (op < 8) {
			struct sadb_pkt_sel k = pol_packet(i % N_POL);
			r = sadb_policy_lookup(ra->db, SADB_DIR_OUT, &k, &p);
			st->pol_reads++;
			if (r == 0) {
				st->pol_found++;
				if (p.ike_id != pol_sum(&p) || p.priority != 100 + i % N_POL ||
				    p.tun_src.a.w[0] != (uint32_t)t_mix(p.reqid))
					bad(st, "policy %u torn (reqid %ld, prio %ld)", i % N_POL, (long)p.reqid, (long)p.priority);
			} else if (r == -ENOENT) {
				/* Policies are only ever replaced inside one transaction: never missing. */
				bad(st, "policy %u missing during its replacement", i % N_POL);
			} else {
				err(st, "policy lookup: %d %s", r, sadb_errmsg(ra->db));
			}
		} else if (op < 9) {
			/* A pair: read one, then the other. Versions only grow and a transaction moves
			 * both, so the second read is never older than the first. */
			uint32_t k = i % N_PAIRS;
			int ra1 = sadb_sa_lookup(ra->db, PAIR_BASE + 2 * k, SADB_PROTO_ESP, &dst, &sa, NULL);
			int rb1 = sadb_sa_lookup(ra->db, PAIR_BASE + 2 * k + 1, SADB_PROTO_ESP, &dst, &sb, NULL);
			st->reads += 2;
			st->pair_checks++;
			if (ra1 || rb1) {
				err(st, "pair %u lookup: %d %d %s", k, ra1, rb1, sadb_errmsg(ra->db));
			} else {
				long va = t_sa_check(&sa), vb = t_sa_check(&sb);
				if (va < 0 || vb < 0 || vb < va)
					bad(st, "pair %u: versions %ld then %ld", k, va, vb);
			}
		} else {
			/* A short iteration, as ipsecctl and a resynchronising dataplane do. */
			uint32_t cur = (uint32_t)(x % N_SA), slot;
			for (int k = 0; k < 8 && sadb_sa_next(ra->db, &cur, &sa, &slot) == 0; k++) {
				st->reads++;
				if (t_sa_check(&sa) < 0)
					bad(st, "iterated SA %u torn (reqid %ld)", sa.spi, (long)sa.reqid);
			}
			st->iter++;
		}
		dt = now_ns() - t0;
		if (dt > st->max_ns)
			st->max_ns = dt;
	}
	st->retries = sadb_read_retries() - r0;
	return NULL;
}

static void test_concurrent_readers_and_writer(void **state)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sadb *db = t_open(db_path = t_path("conc"), 4096, 1024), *rdb = NULL;
	struct reader_arg ra[2];
	pthread_t th[2];
	char msg[256];
	int status;
	pid_t pid;

	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	for (uint32_t i = 0; i < N_SA; i++) {
		struct sadb_sa sa = t_sa_version(1000 + i, 0);
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	}
	for (uint32_t i = 0; i < 2 * N_PAIRS; i++) {
		struct sadb_sa sa = t_sa_version(PAIR_BASE + i, 0);
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	}
	for (uint32_t i = 0; i < N_POL; i++) {
		struct sadb_policy p = pol_version(i, 0);
		assert_int_equal(sadb_policy_add(db, &p, NULL), 0);
	}
	sadb_close(db);

	pid = t_fork();
	assert_true(pid >= 0);
	if (pid == 0)
		writer(sh);
	alarm(60);
	/* The readers' process maps the segment read-only: it could not write even by mistake. */
	assert_int_equal(sadb_open(db_path, SADB_RDONLY, NULL, &rdb, msg, sizeof(msg)), 0);
	for (int k = 0; k < 2; k++) {
		memset(&ra[k], 0, sizeof(ra[k]));
		ra[k].db = rdb;
		ra[k].seed = 7u + (unsigned)k;
		ra[k].until = now_s() + RUN_SECONDS;
		assert_int_equal(pthread_create(&th[k], NULL, reader, &ra[k]), 0);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	atomic_store(&sh->stop, 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	alarm(0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("writer failed: status 0x%x, err %d: %s", status, atomic_load(&sh->writer_err), sh->writer_msg);

	for (int k = 0; k < 2; k++) {
		struct reader_stats *s = &ra[k].st;
		print_message("reader %d: %llu SA reads (%llu found), %llu policy lookups (%llu found), %llu pair checks, "
			      "%llu iterations, %llu retries, slowest call %.1f us, %llu bad, %llu errors\n", k,
			      (unsigned long long)s->reads, (unsigned long long)s->found,
			      (unsigned long long)s->pol_reads, (unsigned long long)s->pol_found,
			      (unsigned long long)s->pair_checks, (unsigned long long)s->iter,
			      (unsigned long long)s->retries, s->max_ns / 1e3, (unsigned long long)s->bad,
			      (unsigned long long)s->errors);
		if (s->bad)
			fail_msg("reader %d saw a torn or mixed record: %s", k, s->first_bad);
		if (s->errors)
			fail_msg("reader %d: %s", k, s->first_err);
		/* Both outcomes happened: the test really raced with the writer. */
		assert_true(s->found > 0 && s->found < s->reads && s->pol_found == s->pol_reads);
	}
	print_message("writer: %llu writes (%llu transactions) in %.1f s\n", (unsigned long long)atomic_load(&sh->writes),
		      (unsigned long long)atomic_load(&sh->txns), RUN_SECONDS);
	assert_true(atomic_load(&sh->writes) > 1000);
	/* The database is still consistent: every live SA reads whole, counts agree. */
	{
		uint32_t cur = 0, n = 0;
		struct sadb_sa sa;
		struct sadb_info info;
		while (sadb_sa_next(rdb, &cur, &sa, NULL) == 0) {
			assert_true(t_sa_check(&sa) >= 0);
			n++;
		}
		assert_int_equal(sadb_info(rdb, &info), 0);
		assert_int_equal(info.n_sa, n);
		assert_int_equal(info.n_policy, N_POL);
	}
	sadb_close(rdb);
	munmap(sh, sizeof(*sh));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_readers_and_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
