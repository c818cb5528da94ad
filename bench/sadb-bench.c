/* bench/sadb-bench.c: libsadb benchmark. Prints, as medians of several runs:
 * SPI lookups (ns/lookup and lookups/s) at 1k, 100k and 1M SAs, both over a hot set of 512 SAs
 * spread across the table (the lookup algorithm's cost) and uniformly over all SAs (adds the cache
 * and TLB misses of a table larger than the caches; keys are precomputed); SPD lookups at 1k, 10k and
 * 100k policies with the compiled index and the linear reference side by side, and the cost of one
 * policy add and one delete (one transaction each) at each of those sizes with their ratio; and writes/s (SA add/update/delete, policy
 * add/delete, bulk policy load in one transaction). Built with -O2 and without sanitizers.
 * Usage: sadb-bench [--quick] [--max-sa N] [--only spi|spd|writes] [--dir DIR]
 * Segments go to DIR (default /dev/shm) and are removed at exit. A tmpfs mounted with huge=always or
 * huge=within_size gives the segment 2 MB pages (see the report printed at the end). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sadb/sadb.h"

#define RUNS 21
#define HOT 512 /* distinct SAs in the hot set */

#define MAX_SEGS 4
static char seg_paths[MAX_SEGS][128];
static const char *seg_dir = "/dev/shm";

static void cleanup(void)
{
	for (int i = 0; i < MAX_SEGS; i++)
		if (seg_paths[i][0])
			unlink(seg_paths[i]);
}

/* A reaper child removes the segments (up to ~1.7 GB in /dev/shm) even if we are killed with -9:
 * it waits for EOF on a pipe only this process holds. */
static void start_reaper(void)
{
	pid_t owner = getpid();
	int fds[2];

	if (pipe(fds) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		char c, path[160];
		close(fds[1]);
		while (read(fds[0], &c, 1) != 0)
			;
		for (int k = 0; k < MAX_SEGS; k++) {
			snprintf(path, sizeof(path), "%s/xipsec-sadb-bench-%d-%d", seg_dir, (int)owner, k);
			unlink(path);
		}
		_exit(0);
	}
	close(fds[0]);
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Thread CPU time: the machine is shared, and time spent preempted is not the lookup's cost. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A fresh segment in slot k (each size measured gets its own, so all can be alive at once). */
static struct sadb *open_fresh(int k, uint32_t max_sa, uint32_t max_pol)
{
	struct sadb_params prm = { max_sa, max_pol };
	struct sadb *db = NULL;
	char msg[256];

	snprintf(seg_paths[k], sizeof(seg_paths[k]), "%s/xipsec-sadb-bench-%d-%d", seg_dir, (int)getpid(), k);
	unlink(seg_paths[k]);
	if (sadb_open(seg_paths[k], SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg))) {
		fprintf(stderr, "sadb-bench: %s\n", msg);
		exit(1);
	}
	return db;
}

static void close_seg(int k, struct sadb *db)
{
	sadb_close(db);
	unlink(seg_paths[k]);
	seg_paths[k][0] = '\0';
}

static struct sadb_sa make_sa(uint32_t i)
{
	struct sadb_sa sa;

	memset(&sa, 0, sizeof(sa));
	sa.spi = 0x10000 + i * 7u;
	sa.proto = SADB_PROTO_ESP;
	sa.mode = SADB_MODE_TUNNEL;
	sa.dir = (i & 1) ? SADB_DIR_IN : SADB_DIR_OUT;
	sa.state = SADB_STATE_MATURE;
	sadb_addr_parse("192.0.2.1", &sa.src);
	sadb_addr_parse("198.51.100.1", &sa.dst);
	sa.dst.a.b[2] = (uint8_t)(i >> 8); /* many peers */
	sa.dst.a.b[3] = (uint8_t)i;
	sa.enc_alg = SADB_ENC_AES_GCM16;
	sa.enc_key_len = 16;
	sa.salt_len = 4;
	memset(sa.enc_key, (int)i, 16);
	sa.replay_window = 1024;
	sa.sel.sport_hi = sa.sel.dport_hi = 65535;
	return sa;
}

struct spi_key {
	uint32_t spi;
	struct sadb_addr dst;
};

/* ns per SPI lookup over keys[]; one run. */
static double spi_run(struct sadb *db, const struct spi_key *keys, uint32_t nkeys, uint32_t iters)
{
	struct sadb_sa out;
	uint64_t t0, sum = 0;

	t0 = now_ns();
	for (uint32_t i = 0; i < iters; i++) {
		const struct spi_key *k = &keys[i % nkeys];
		if (sadb_sa_lookup(db, k->spi, SADB_PROTO_ESP, &k->dst, &out, NULL)) {
			fprintf(stderr, "sadb-bench: lookup of SPI %u failed\n", k->spi);
			exit(1);
		}
		sum += out.spi;
	}
	if (sum == 42)
		puts("");
	return (double)(now_ns() - t0) / iters;
}

struct spi_set {
	struct sadb *db;
	uint32_t n;
	struct spi_key hot[HOT], *all;
	double hot_v[RUNS], all_v[RUNS], add_us;
};

static void spi_prepare(struct spi_set *st, int k, uint32_t n)
{
	uint32_t hot_idx[HOT], nall = 1u << 20;
	uint64_t t0;

	st->n = n;
	st->db = open_fresh(k, n, 16);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct sadb_sa sa = make_sa(i);
		if (sadb_sa_add(st->db, &sa, NULL)) {
			fprintf(stderr, "sadb-bench: add %u: %s\n", i, sadb_errmsg(st->db));
			exit(1);
		}
	}
	st->add_us = (double)(now_ns() - t0) / n / 1000.0;
	/* HOT distinct SAs, so the hot set has the same cache footprint at every table size and the
	 * figure isolates what the table size itself costs. */
	for (int i = 0; i < HOT; i++) {
		struct sadb_sa sa;
		uint32_t pick;
		bool dup;
		do {
			pick = rnd() % n;
			dup = false;
			for (int j = 0; j < i; j++)
				dup |= hot_idx[j] == pick;
		} while (dup);
		hot_idx[i] = pick;
		sa = make_sa(pick);
		st->hot[i].spi = sa.spi;
		st->hot[i].dst = sa.dst;
	}
	st->all = malloc(sizeof(*st->all) * nall);
	for (uint32_t i = 0; i < nall; i++) {
		struct sadb_sa sa = make_sa(rnd() % n);
		st->all[i].spi = sa.spi;
		st->all[i].dst = sa.dst;
	}
}

/* The sizes take turns run by run, so load from other processes on this shared machine falls on
 * all of them alike and their ratio means something. */
static void bench_spi(const uint32_t *sizes, int ns, bool quick, struct spi_set *st)
{
	uint32_t iters = quick ? 20000 : 100000, nall = 1u << 20;

	for (int k = 0; k < ns; k++)
		spi_prepare(&st[k], k, sizes[k]);
	for (int k = 0; k < ns; k++)
		spi_run(st[k].db, st[k].hot, HOT, iters); /* warm up */
	for (int r = 0; r < RUNS; r++) {
		for (int k = 0; k < ns; k++) {
			spi_run(st[k].db, st[k].hot, HOT, 2 * HOT); /* the other sizes' turns evicted it */
			st[k].hot_v[r] = spi_run(st[k].db, st[k].hot, HOT, iters);
		}
		for (int k = 0; k < ns; k++) {
			uint32_t off = (uint32_t)(((size_t)r * iters) % nall);
			st[k].all_v[r] = spi_run(st[k].db, st[k].all + off, nall - off, iters);
		}
	}
	for (int k = 0; k < ns; k++) {
		free(st[k].all);
		close_seg(k, st[k].db);
	}
}

/* SPD: site-to-site policies /24 -> /24 in both directions, a few /32 host exceptions, per-port
 * policies and a low-priority catch-all: five prefix-length pairs, as a real gateway has. Policy i
 * is distinct from every other for i below 2^19. */
static struct sadb_policy make_policy(uint32_t i)
{
	struct sadb_policy p;

	memset(&p, 0, sizeof(p));
	p.dir = SADB_DIR_OUT;
	p.action = SADB_ACT_PROTECT;
	p.proto = SADB_PROTO_ESP;
	p.mode = SADB_MODE_TUNNEL;
	p.priority = 1000;
	p.reqid = i + 1;
	p.sel.sport_hi = p.sel.dport_hi = 65535;
	sadb_addr_parse("10.0.0.0", &p.sel.src);
	sadb_addr_parse("172.16.0.0", &p.sel.dst);
	p.sel.src.a.b[1] = (uint8_t)(i >> 8);
	p.sel.src.a.b[2] = (uint8_t)i;
	p.sel.dst.a.b[1] = (uint8_t)(16 + (i >> 8) % 16 + 32 * (i >> 16));
	p.sel.dst.a.b[2] = (uint8_t)i;
	p.sel.src_plen = 24;
	p.sel.dst_plen = 24;
	switch (i % 10) {
	case 0: /* host exception */
		p.sel.src_plen = p.sel.dst_plen = 32;
		p.sel.src.a.b[3] = 5;
		p.sel.dst.a.b[3] = 9;
		p.priority = 500;
		p.action = SADB_ACT_BYPASS;
		break;
	case 1: /* one service of a site */
		p.sel.proto = 6;
		p.sel.dport_lo = p.sel.dport_hi = 443;
		p.priority = 800;
		break;
	case 2: /* a whole /16 to a /24 */
		p.sel.src_plen = 16;
		p.sel.src.a.b[2] = 0;
		p.priority = 2000;
		break;
	default:
		break;
	}
	sadb_addr_parse("192.0.2.1", &p.tun_src);
	sadb_addr_parse("192.0.2.2", &p.tun_dst);
	return p;
}

static void add_policies(struct sadb *db, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sadb_policy p = make_policy(i);
		int r = sadb_policy_add(db, &p, NULL);
		if (r && r != -EEXIST) {
			fprintf(stderr, "sadb-bench: policy %u: %s\n", i, sadb_errmsg(db));
			exit(1);
		}
	}
	struct sadb_policy any;
	memset(&any, 0, sizeof(any));
	any.dir = SADB_DIR_OUT;
	any.action = SADB_ACT_DISCARD;
	any.priority = 100000;
	any.sel.sport_hi = any.sel.dport_hi = 65535;
	sadb_policy_add(db, &any, NULL);
}

static struct sadb_pkt_sel make_pkt(uint32_t i)
{
	struct sadb_pkt_sel k;

	memset(&k, 0, sizeof(k));
	sadb_addr_parse("10.0.0.0", &k.src);
	sadb_addr_parse("172.16.0.0", &k.dst);
	k.src.a.b[1] = (uint8_t)(i >> 8);
	k.src.a.b[2] = (uint8_t)i;
	k.src.a.b[3] = (uint8_t)(i * 13);
	k.dst.a.b[1] = (uint8_t)(16 + (i >> 8) % 16 + 32 * (i >> 16));
	k.dst.a.b[2] = (uint8_t)i;
	k.dst.a.b[3] = (uint8_t)(i * 7);
	k.proto = (i & 1) ? 6 : 17;
	k.sport = 40000;
	k.dport = (i & 2) ? 443 : 53;
	return k;
}

static double spd_run(struct sadb *db, const struct sadb_pkt_sel *pk, uint32_t npk, uint32_t iters, bool linear)
{
	struct sadb_policy out;
	uint64_t t0 = now_ns(), sum = 0;

	for (uint32_t i = 0; i < iters; i++) {
		int r = linear ? sadb_policy_lookup_linear(db, SADB_DIR_OUT, &pk[i % npk], &out)
			       : sadb_policy_lookup(db, SADB_DIR_OUT, &pk[i % npk], &out);
		if (r) {
			fprintf(stderr, "sadb-bench: policy lookup failed\n");
			exit(1);
		}
		sum += out.id;
	}
	if (sum == 42)
		puts("");
	return (double)(now_ns() - t0) / iters;
}

/* Policies added and deleted per run when the cost of one change at n installed policies is
 * measured: each is its own transaction, as xipsec-iked installs and removes a CHILD SA's. */
#define CHURN 64

struct spd_set {
	struct sadb *db;
	uint32_t n;
	struct sadb_pkt_sel *pk;
	double idx_v[RUNS], lin_v[RUNS], add_v[RUNS * CHURN], del_v[RUNS * CHURN], bulk_ms;
};

/* One run of churn at the installed size: CHURN policies not installed yet are added one by one,
 * then deleted one by one, each call timed on its own (its median is the figure). */
static void spd_churn(struct spd_set *st, int r)
{
	uint32_t ids[CHURN];

	for (uint32_t j = 0; j < CHURN; j++) {
		struct sadb_policy p = make_policy(st->n + (uint32_t)r * CHURN + j);
		uint64_t t0 = now_ns();
		if (sadb_policy_add(st->db, &p, &ids[j])) {
			fprintf(stderr, "sadb-bench: churn add: %s\n", sadb_errmsg(st->db));
			exit(1);
		}
		st->add_v[r * CHURN + j] = (double)(now_ns() - t0) / 1000.0;
	}
	for (uint32_t j = 0; j < CHURN; j++) {
		uint64_t t0 = now_ns();
		if (sadb_policy_delete(st->db, ids[j])) {
			fprintf(stderr, "sadb-bench: churn delete: %s\n", sadb_errmsg(st->db));
			exit(1);
		}
		st->del_v[r * CHURN + j] = (double)(now_ns() - t0) / 1000.0;
	}
}

static void bench_spd(const uint32_t *sizes, int ns, bool quick, struct spd_set *st)
{
	uint32_t iters = quick ? 20000 : 100000, npk = 4096;
	uint64_t t0;

	for (int k = 0; k < ns; k++) {
		uint32_t n = st[k].n = sizes[k];
		st[k].db = open_fresh(k, 16, n + 16 + RUNS * CHURN + 16);
		st[k].pk = malloc(sizeof(*st[k].pk) * npk);
		for (uint32_t i = 0; i < npk; i++)
			st[k].pk[i] = make_pkt(rnd() % n);
		/* The installed set is loaded in one transaction (as ipsecctl load does). */
		t0 = now_ns();
		sadb_txn_begin(st[k].db);
		add_policies(st[k].db, n);
		if (sadb_txn_commit(st[k].db)) {
			fprintf(stderr, "sadb-bench: bulk load: %s\n", sadb_errmsg(st[k].db));
			exit(1);
		}
		st[k].bulk_ms = (double)(now_ns() - t0) / 1e6;
		spd_run(st[k].db, st[k].pk, npk, iters / 4, false);
	}
	for (int r = 0; r < RUNS; r++) {
		for (int k = 0; k < ns; k++) {
			spd_run(st[k].db, st[k].pk, npk, npk, false); /* warm again after the other turns */
			st[k].idx_v[r] = spd_run(st[k].db, st[k].pk, npk, iters, false);
		}
		for (int k = 0; k < ns; k++)
			st[k].lin_v[r] = spd_run(st[k].db, st[k].pk, npk, iters / (st[k].n / 10 + 1) + 1, true);
		for (int k = 0; k < ns; k++)
			spd_churn(&st[k], r);
	}
	for (int k = 0; k < ns; k++) {
		free(st[k].pk);
		close_seg(k, st[k].db);
	}
}

static void bench_writes(bool quick, double *add, double *upd, double *del, double *txn_add)
{
	uint32_t n = quick ? 20000 : 100000;
	struct sadb *db = open_fresh(0, n + 16, 16);
	uint64_t t0;

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct sadb_sa sa = make_sa(i);
		sadb_sa_add(db, &sa, NULL);
	}
	*add = n / ((double)(now_ns() - t0) / 1e9);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct sadb_sa sa = make_sa(i);
		sa.enc_key[0] ^= 1;
		sadb_sa_update(db, &sa);
	}
	*upd = n / ((double)(now_ns() - t0) / 1e9);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct sadb_sa sa = make_sa(i);
		sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst);
	}
	*del = n / ((double)(now_ns() - t0) / 1e9);
	t0 = now_ns();
	for (uint32_t i = 0; i < n; i += 1000) {
		sadb_txn_begin(db);
		for (uint32_t j = i; j < i + 1000 && j < n; j++) {
			struct sadb_sa sa = make_sa(j);
			sadb_sa_add(db, &sa, NULL);
		}
		sadb_txn_commit(db);
	}
	*txn_add = n / ((double)(now_ns() - t0) / 1e9);
	close_seg(0, db);
}

int main(int argc, char **argv)
{
	bool quick = false;
	const char *only = NULL;
	uint32_t max_sa = 1u << 20;
	uint32_t sizes[3] = { 1000, 100000, 1000000 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			seg_dir = argv[++i];
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--max-sa") && i + 1 < argc)
			max_sa = (uint32_t)strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: sadb-bench [--quick] [--max-sa N] [--only spi|spd|writes] [--dir DIR]\n");
			return 2;
		}
	}
	atexit(cleanup);
	start_reaper();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
#ifdef __SANITIZE_ADDRESS__
	printf("WARNING: built with AddressSanitizer: figures are not representative\n");
#endif
	double la[3] = { 0, 0, 0 };
	if (getloadavg(la, 3) < 0)
		la[0] = -1;
	printf("sadb-bench: medians (and best) of %d runs, thread CPU time; load average %.2f on %ld CPUs\n\n", RUNS,
	       la[0], sysconf(_SC_NPROCESSORS_ONLN));
	if (only && strcmp(only, "spi"))
		goto spd;
	printf("SPI lookup (sadb_sa_lookup); the sizes are measured in turns, run by run\n");
	printf("%10s %11s %9s %14s %12s %14s %11s\n", "SAs", "hot512 ns", "(best)", "hot Mlookup/s", "uniform ns",
	       "uniform Ml/s", "add us/SA");
	{
		static struct spi_set st[3];
		double hot[3], all[3];
		for (int i = 0; i < 3; i++)
			if (sizes[i] > max_sa)
				sizes[i] = max_sa;
		bench_spi(sizes, 3, quick, st);
		for (int i = 0; i < 3; i++) {
			hot[i] = median(st[i].hot_v, RUNS);
			all[i] = median(st[i].all_v, RUNS);
			printf("%10u %11.1f %9.1f %14.2f %12.1f %14.2f %11.2f\n", sizes[i], hot[i], st[i].hot_v[0],
			       1e3 / hot[i], all[i], 1e3 / all[i], st[i].add_us);
		}
		printf("ratio %u/%u SAs: hot set %.2fx, uniform %.2fx (target: hot set within 1.5x)\n\n", sizes[2],
		       sizes[0], hot[2] / hot[0], all[2] / all[0]);
		fflush(stdout);
	}

spd:
	if (only && strcmp(only, "spd"))
		goto writes;
	printf("SPD lookup (sadb_policy_lookup, compiled index) vs linear reference, and the cost of one policy\n"
	       "add / delete (each its own transaction) at that many installed policies; sizes in turns\n");
	printf("%10s %10s %8s %10s %12s %8s %11s %11s %13s\n", "policies", "index ns", "(best)", "Mlookup/s",
	       "linear ns", "speedup", "add us/pol", "del us/pol", "bulk load ms");
	{
		static struct spd_set st[3];
		uint32_t pol[3] = { 1000, 10000, 100000 };
		double add[3], del[3];
		bench_spd(pol, 3, quick, st);
		for (int i = 0; i < 3; i++) {
			double idx = median(st[i].idx_v, RUNS), lin = median(st[i].lin_v, RUNS);
			add[i] = median(st[i].add_v, RUNS * CHURN);
			del[i] = median(st[i].del_v, RUNS * CHURN);
			printf("%10u %10.1f %8.1f %10.2f %12.1f %7.0fx %11.2f %11.2f %13.1f\n", pol[i], idx,
			       st[i].idx_v[0], 1e3 / idx, lin, lin / idx, add[i], del[i], st[i].bulk_ms);
		}
		printf("ratio %u/%u policies: add %.2fx, delete %.2fx (target: within 2x)\n", pol[2], pol[0],
		       add[2] / add[0], del[2] / del[0]);
	}
	printf("(target: index < 100 ns at 10k policies)\n\n");
	fflush(stdout);

writes:
	if (only && strcmp(only, "writes"))
		return 0;
	double wadd, wupd, wdel, wtxn;
	bench_writes(quick, &wadd, &wupd, &wdel, &wtxn);
	printf("SA writes per second (one committed change per call): add %.0f, update %.0f, delete %.0f; "
	       "add in transactions of 1000: %.0f\n", wadd, wupd, wdel, wtxn);
	return 0;
}
