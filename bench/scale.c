/* bench/scale.c: how the per-packet path scales with threads, in memory: N threads (one per CPU) on one
 * SA and on one SA each, outbound (SPD lookup, sequence number, encrypt) and inbound (decrypt, replay
 * window, the inner packet's policy lookup), AES-GCM-128 at 64 and 1400 bytes.
 *
 * It runs what xipsecd's workers run, set up as xipsecd sets it up (dataplane/xipsecd/dp_sa.c): one
 * engine object per thread sharing the SA's runtime area; outbound sequence numbers reserved 1024 at
 * a time by a single worker and, by several on one SA, what each burst needs in steps of at most
 * 32 / N (esp.h; for comparison in the same run, one at a time, the contended case of one atomic
 * step per packet); inbound objects on one SA share the replay window and take the SA's replay lock
 * for the window updates of a burst, after its crypto. Outbound, each packet's header is asked for
 * eight packets ahead of its SPD lookup, as xipsecd's receive loop asks for it (dp_rx.c). The SPD
 * is a real SADB segment with 1,000 site-to-site policies each way (five prefix pairs). The pools
 * are larger than the caches, as frames come from a NIC, and mapped as xipsecd maps its UMEM
 * (dp_map_huge: transparent huge pages where the kernel has them);
 * inbound on one SA, the threads take the bursts of the SA's one stream in order, each the next one
 * nobody has taken whenever it is free (xipsecd's hand-off is work stealing: a worker that is slower
 * for a while takes less), so each thread's numbers run ahead of and behind the others'. Packets sit
 * in 512-byte (64-byte packets) or 2 KB frames.
 *
 * Each measurement: every thread works through its pool (131,072 packets, bursts of 64 as xipsecd's)
 * from a common start until the first thread is through (inbound on one SA: until the stream is; no
 * thread starts a burst whose numbers would span more than the replay window less a burst with the
 * oldest burst still in progress, as a bounded queue keeps workers: 14 bursts);
 * packets/s = the sum of the threads' rates while all of them ran: what a gateway whose workers are
 * all busy forwards. (All packets over the slowest thread's time would count the tail in which the
 * slowest runs alone, and put every thread at the pace of the slowest CPU: on a guest whose CPUs
 * are slowed by the host in turn, that measures the host.) One thread is measured on each CPU in
 * turn and its figure is the mean of those: N CPUs against the mean one of them. Inbound on one SA,
 * that one thread takes the very stream the N threads share (N pools' worth, N x 131,072 packets),
 * so that both figures work through the same frames in the same memory: with half of it, the
 * comparison would be the memory's as much as the threads'. (On a guest whose address translations
 * are small pages, a thread's rate falls as the memory it walks grows: a thread alone on 128 MB of
 * frames ran 3-12 % slower than on 64 MB, and one SA's stream dealt round two pools is 128 MB that
 * each of the N threads walks.) Medians of REPS
 * rounds, each of which measures every row (one thread on each CPU, then N, for each), and the
 * ratios N threads / 1 thread measured back to back in the same round. Drops are counted and printed
 * (inbound replay drops would mean the window lost numbers to the interleaving).
 * Usage: scale [-r REPS] [-t THREADS]   (THREADS default: the CPUs, at most 8) */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/engine/esp.h"
#include "dataplane/engine/esp_ip.h"
#include "dataplane/xipsecd/dp.h"
#include "bench/bench_pkt.h"
#include "sadb/sadb.h"

#define POOL     131072u
#define BURST    64u           /* xipsecd's burst (DP_BATCH) */
#define OFF      256u
#define MAXT     8u
#define NPOL     1000u

static struct sadb *db;
static char seg[128];
static unsigned reps = 15;
static bool seq_one_at_a_time;    /* shared outbound SA: one atomic reservation per packet */
static uint32_t frame = 2048;     /* frame stride: 512 for small packets, 2048 for 1400 bytes */
#define WINDOW   1024u
/* Inbound on one SA: a thread starts burst k of the stream only when no burst before k - SPAN is
 * still in progress: the numbers in flight then span at most SPAN + 1 bursts, inside the window with
 * one burst to spare, so an update after the ICV never finds its numbers pushed out of it. */
#define SPAN     (WINDOW / BURST - 2u)
#define IDLE     UINT32_MAX

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, int err);

/* A runtime area as the SADB lays it out: on a line of its own (its lines split what workers write
 * per burst from what they only read). */
static struct sadb_runtime *rt_new(void)
{
	struct sadb_runtime *rt = aligned_alloc(64, (sizeof(*rt) + 63) & ~(size_t)63);
	if (!rt)
		die("allocating a runtime area", ENOMEM);
	memset(rt, 0, sizeof(*rt));
	rt->instance = 1;
	return rt;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "scale: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (seg[0])
		unlink(seg);
	exit(1);
}

/* ---- the SPD ---- */

static void add_policies(uint8_t dir)
{
	for (uint32_t i = 0; i < NPOL; i++) {
		struct sadb_policy p;
		memset(&p, 0, sizeof(p));
		p.dir = dir;
		p.action = SADB_ACT_PROTECT;
		p.proto = SADB_PROTO_ESP;
		p.mode = SADB_MODE_TUNNEL;
		p.priority = 1000;
		p.reqid = i + 1;
		p.sel.sport_hi = p.sel.dport_hi = 65535;
		/* the same traffic both ways of the benchmark: what leaves encrypted on one side
		 * arrives decrypted, with the same inner addresses, on the other */
		sadb_addr_parse("10.0.0.0", &p.sel.src);
		sadb_addr_parse("172.16.0.0", &p.sel.dst);
		p.sel.src.a.b[2] = (uint8_t)i;
		p.sel.dst.a.b[2] = (uint8_t)i;
		p.sel.src.a.b[1] = (uint8_t)(i >> 8);
		p.sel.dst.a.b[1] = (uint8_t)(16 + (i >> 8));
		p.sel.src_plen = p.sel.dst_plen = 24;
		switch (i % 10) {
		case 0: p.sel.src_plen = p.sel.dst_plen = 32; p.sel.src.a.b[3] = 5; p.priority = 500; break;
		case 1: p.sel.proto = 6; p.sel.dport_lo = p.sel.dport_hi = 443; p.priority = 800; break;
		case 2: p.sel.src_plen = 16; p.sel.src.a.b[2] = 0; p.priority = 2000; break;
		default: break;
		}
		sadb_addr_parse("192.0.2.1", &p.tun_src);
		sadb_addr_parse("192.0.2.2", &p.tun_dst);
		int r = sadb_policy_add(db, &p, NULL);
		if (r && r != -EEXIST)
			die("policy add", r);
	}
}

/* ---- SAs and packets ---- */

static struct sadb_sa mk_sa(uint8_t dir, uint32_t spi)
{
	struct sadb_sa s;
	memset(&s, 0, sizeof(s));
	s.spi = spi;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TUNNEL;
	s.dir = dir;
	sadb_addr_parse("192.0.2.1", &s.src);
	sadb_addr_parse("192.0.2.2", &s.dst);
	s.enc_alg = SADB_ENC_AES_GCM16;
	s.enc_key_len = 16;
	for (int i = 0; i < 16; i++)
		s.enc_key[i] = (uint8_t)(i * 7 + spi);
	s.salt_len = 4;
	s.replay_window = WINDOW;
	s.dscp = 0xff;
	s.instance = 1;
	return s;
}

/* An inner IPv4/UDP packet from 10.0.3.7 to 172.16.3.9 (a /24 -> /24 policy), len bytes. */
static void mk_inner(uint8_t *o, uint32_t len)
{
	bench_ipv4_udp(o, len, (const uint8_t[]){ 10, 0, 3, 7 }, (const uint8_t[]){ 172, 16, 3, 9 }, 12345, 443);
}

struct sa_set {                  /* one SA as the dataplane holds it: runtime + per-thread objects */
	struct sadb_runtime *rt;
	pthread_spinlock_t lock;
	struct esp_sa *obj[MAXT];
};

struct job {
	pthread_t th;
	unsigned id, cpu;
	bool out;
	struct esp_sa *sa;           /* this thread's object */
	uint8_t *pool;               /* POOL frames */
	struct esp_pkt pk[POOL];
	uint32_t npk;
	double t0, t1;               /* when it started and when it stopped */
	_Atomic uint32_t cur;        /* inbound on one SA: the stream burst it works on (IDLE: done) */
	struct job **peers;          /* the threads sharing its SA's stream (NULL: its own pool) */
	unsigned npeers;
	uint64_t good, drops;
};

static pthread_barrier_t start;
static _Atomic bool stop;        /* the first thread through its pool ends the measurement */
static _Atomic uint32_t next_burst;  /* inbound on one SA: the stream's first burst not yet taken */
static uint32_t stream_bursts;       /* ... of this many */

/* Packet i of burst k of the one SA's stream: prepare() deals the bursts round the threads' pools. */
static struct esp_pkt *stream_pkt(const struct job *j, uint32_t k, uint32_t i)
{
	return &j->peers[k % j->npeers]->pk[(k / j->npeers) * BURST + i];
}

/* Inbound on one SA: wait until burst k may start (no other thread still on a burst before
 * k - SPAN). A thread's cur is its previous burst until it has stored the one it took, older than
 * any taken after it: the wait errs on the safe side. */
static void keep_span(const struct job *j, uint32_t k)
{
	for (unsigned q = 0; q < j->npeers; q++) {
		const struct job *o = j->peers[q];
		uint32_t c;
		while (o != j && (c = atomic_load_explicit(&o->cur, memory_order_acquire)) != IDLE &&
		       c + SPAN < k && !atomic_load_explicit(&stop, memory_order_relaxed))
			sched_yield();
	}
}

static void *run(void *arg)
{
	struct job *j = arg;
	cpu_set_t set;
	struct esp_pkt *pp[BURST];

	CPU_ZERO(&set);
	CPU_SET((int)j->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(&start);
	j->t0 = now_s();
	for (uint32_t b = 0;; b += BURST) {
		uint32_t n;
		if (atomic_load_explicit(&stop, memory_order_relaxed))
			break;
		if (j->npeers) {
			uint32_t k = atomic_fetch_add_explicit(&next_burst, 1, memory_order_relaxed);
			if (k >= stream_bursts)
				break;
			atomic_store_explicit(&j->cur, k, memory_order_release);
			keep_span(j, k);
			n = BURST;
			for (uint32_t i = 0; i < n; i++)
				pp[i] = stream_pkt(j, k, i);
		} else {
			if (b >= j->npk)
				break;
			n = j->npk - b < BURST ? j->npk - b : BURST;
			for (uint32_t i = 0; i < n; i++)
				pp[i] = &j->pk[b + i];
		}
		if (j->out) {
			/* the SPD lookup the outbound path makes per packet, after the headers were
			 * asked for as xipsecd's receive loop asks for them (dp_rx.c: eight ahead) */
			for (uint32_t i = 0; i < n && i < 8; i++)
				__builtin_prefetch(pp[i]->buf + pp[i]->off);
			for (uint32_t i = 0; i < n; i++) {
				struct sadb_pkt_sel sel;
				struct sadb_policy pol;
				if (i + 8 < n)
					__builtin_prefetch(pp[i + 8]->buf + pp[i + 8]->off);
				if (esp_pkt_sel(pp[i]->buf + pp[i]->off, pp[i]->len, &sel) != SADB_DROP_NONE ||
				    sadb_policy_lookup(db, SADB_DIR_OUT, &sel, &pol) != 0)
					j->drops++;
			}
			j->good += esp_outbound_burst(j->sa, pp, n);
		} else {
			unsigned k = esp_inbound_burst(j->sa, pp, n);
			/* the inner packet against the inbound policies */
			for (unsigned i = 0; i < k; i++) {
				struct sadb_pkt_sel sel;
				struct sadb_policy pol;
				if (esp_pkt_sel(pp[i]->buf + pp[i]->off, pp[i]->len, &sel) != SADB_DROP_NONE ||
				    sadb_policy_lookup(db, SADB_DIR_IN, &sel, &pol) != 0)
					j->drops++;
			}
			j->good += k;
			j->drops += n - k;
		}
	}
	j->t1 = now_s();
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	atomic_store_explicit(&j->cur, IDLE, memory_order_release);
	return NULL;
}

static struct job *jobs[MAXT];

/* Fill the pools for one measurement: nt threads, shared = one SA for all, size bytes. */
static void prepare(unsigned nt, unsigned np, bool shared, bool out, uint32_t size, struct sa_set *sets)
{
	uint8_t inner[1500];
	mk_inner(inner, size);
	frame = size <= 256 ? 512 : 2048;
	for (unsigned t = 0; t < nt; t++) {
		struct job *j = jobs[t];
		struct sa_set *s = &sets[shared ? 0 : t];
		j->out = out;
		j->sa = s->obj[shared ? t : 0];
		j->npk = POOL;
		j->good = j->drops = 0;
		atomic_store(&j->cur, 0);
		/* inbound only: outbound numbers are taken, not received, and cannot fall behind */
		j->peers = shared && np > 1 && !out ? jobs : NULL;
		j->npeers = shared && np > 1 && !out ? np : 0;
		if (out)
			for (uint32_t i = 0; i < POOL; i++) {
				uint8_t *f = j->pool + (size_t)i * frame;
				memcpy(f + OFF, inner, size);
				j->pk[i] = (struct esp_pkt){ .buf = f, .buf_len = frame, .off = OFF, .len = size };
			}
	}
	for (unsigned t = nt; t < np; t++)
		atomic_store(&jobs[t]->cur, IDLE); /* a pool of the stream, no thread of its own */
	if (out)
		return;
	/* Inbound: encrypt the streams the threads will receive with an outbound twin of each SA
	 * (same key): one SA's numbers dealt round np pools a burst at a time. */
	for (unsigned s = 0; s < (shared ? 1u : nt); s++) {
		struct sadb_sa rec = mk_sa(SADB_DIR_OUT, 0x1000 + s);
		struct sadb_runtime *rt = rt_new();
		struct esp_sa *gen;
		struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO };
		struct esp_pkt *gp[BURST];
		int r = esp_sa_create(&rec, rt, &o, &gen);
		if (r)
			die("esp_sa_create (generator)", r);
		unsigned users = shared ? np : 1;
		for (uint32_t b = 0; b < POOL * users; b += BURST) {
			unsigned t = shared ? (b / BURST) % np : s;
			struct job *j = jobs[t];
			uint32_t base = shared ? (b / (BURST * np)) * BURST : b;
			for (uint32_t i = 0; i < BURST; i++) {
				uint8_t *f = j->pool + (size_t)(base + i) * frame;
				memcpy(f + OFF, inner, size);
				j->pk[base + i] = (struct esp_pkt){ .buf = f, .buf_len = frame, .off = OFF, .len = size };
				gp[i] = &j->pk[base + i];
			}
			if (esp_outbound_burst(gen, gp, BURST) != BURST)
				die("encrypting the inbound stream", EIO);
		}
		esp_sa_destroy(gen);
		free(rt);
	}
}

/* One measurement: packets per second of all threads together (nt threads from jobs[0]); inbound on
 * one SA, the stream is np pools' worth (np >= nt), whoever takes it. */
static double measure(unsigned nt, unsigned np, bool shared, bool out, uint32_t size, uint64_t *drops)
{
	struct sa_set sets[MAXT];
	unsigned nsa = shared ? 1 : nt;
	memset(sets, 0, sizeof(sets));
	for (unsigned s = 0; s < nsa; s++) {
		struct sadb_sa rec = mk_sa(out ? SADB_DIR_OUT : SADB_DIR_IN, 0x1000 + s);
		sets[s].rt = rt_new();
		pthread_spin_init(&sets[s].lock, PTHREAD_PROCESS_PRIVATE);
		unsigned objs = shared ? nt : 1;
		for (unsigned t = 0; t < objs; t++) {
			/* as dp_sa.c: several workers on one SA reserve numbers a burst at a time and
			 * share the replay window under the SA's lock */
			struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO,
						 .seq_share = seq_one_at_a_time ? 0 : (uint16_t)objs,
						 .seq_block = seq_one_at_a_time && objs > 1 ? 1 : 0,
						 .id_part = (uint16_t)t, .id_parts = (uint16_t)objs,
						 .replay_lock = objs > 1 && !out ? &sets[s].lock : NULL };
			int r = esp_sa_create(&rec, sets[s].rt, &o, &sets[s].obj[t]);
			if (r)
				die("esp_sa_create", r);
		}
	}
	prepare(nt, np, shared, out, size, sets);
	pthread_barrier_init(&start, NULL, nt);
	atomic_store(&stop, false);
	atomic_store(&next_burst, 0);
	stream_bursts = np * (POOL / BURST);
	for (unsigned t = 0; t < nt; t++)
		if (pthread_create(&jobs[t]->th, NULL, run, jobs[t]))
			die("pthread_create", errno);
	double pps = 0, t0 = 0;
	*drops = 0;
	for (unsigned t = 0; t < nt; t++) {
		pthread_join(jobs[t]->th, NULL);
		if (t == 0 || jobs[t]->t0 < t0)
			t0 = jobs[t]->t0;
		*drops += jobs[t]->drops;
	}
	/* from the common start: a thread the scheduler started late did not run meanwhile */
	for (unsigned t = 0; t < nt; t++)
		pps += jobs[t]->t1 > t0 ? (double)jobs[t]->good / (jobs[t]->t1 - t0) : 0;
	pthread_barrier_destroy(&start);
	for (unsigned s = 0; s < nsa; s++) {
		for (unsigned t = 0; t < MAXT; t++)
			esp_sa_destroy(sets[s].obj[t]);
		pthread_spin_destroy(&sets[s].lock);
		free(sets[s].rt);
	}
	return pps;
}

/* Per CPU, the time the host ran something else while this guest's CPU wanted to run (/proc/stat's
 * steal, ticks) and the whole time: steal spread unevenly over the CPUs is what no code here can
 * scale through, so the run prints it. Returns the CPUs read. */
static unsigned read_steal(unsigned long long *steal, unsigned long long *all, unsigned max)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512];
	unsigned n = 0;
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = { 0 };
		unsigned cpu;
		if (sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 || cpu != n)
			continue;
		steal[n] = v[7];
		all[n] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
		n++;
	}
	fclose(f);
	return n;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nt = ncpu > 1 ? (unsigned)(ncpu > MAXT ? MAXT : ncpu) : 2;
	int c;

	while ((c = getopt(argc, argv, "r:t:")) != -1) {
		switch (c) {
		case 'r': reps = (unsigned)atoi(optarg); break;
		case 't': nt = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: scale [-r REPS] [-t THREADS]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 100 || nt < 2 || nt > MAXT) {
		fprintf(stderr, "scale: -r 1-100, -t 2-%u\n", MAXT);
		return 2;
	}
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(seg, sizeof(seg), "%s/xipsec-scale-%d", dir, (int)getpid());
	struct sadb_params prm = { 64, 4 * NPOL };
	char msg[256];
	if (sadb_open(seg, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg))) {
		fprintf(stderr, "scale: %s\n", msg);
		return 1;
	}
	add_policies(SADB_DIR_OUT);
	add_policies(SADB_DIR_IN);
	for (unsigned t = 0; t < nt; t++) {
		jobs[t] = calloc(1, sizeof(*jobs[t]));
		/* on huge pages where the kernel has them, as xipsecd maps its UMEM */
		if (!jobs[t] || !(jobs[t]->pool = dp_map_huge((size_t)POOL * 2048)))
			die("allocating the packet pools", ENOMEM);
		memset(jobs[t]->pool, 0, (size_t)POOL * 2048);
		jobs[t]->id = t;
		jobs[t]->cpu = t % (unsigned)(ncpu > 0 ? ncpu : 1);
	}
	printf("per-packet path in memory (SPD lookup + engine + replay), AES-GCM-128, %u rounds, %ld CPUs\n",
	       reps, ncpu);
	printf("%-9s %5s %-12s %13s %13s %8s %8s\n", "direction", "bytes", "SAs", "1 thread pps",
	       "N threads pps", "N/1", "drops");
	static const uint32_t sizes[] = { 64, 1400 };
	{
		uint64_t d; /* a round not counted: the first one pays for page faults and cold caches */
		(void)measure(1, 1, true, true, 64, &d);
	}
	/* Every row is measured in every round, one after the other: the machine's own variation
	 * (other guests on the host, frequency) then falls on all rows alike, and the rows compare. */
	struct row { int out; uint32_t size; int shared; double one[100], many[100], ratio[100]; uint64_t drops; };
	static struct row rows[10];
	unsigned nrows = 0;
	for (int out = 1; out >= 0; out--)
		for (unsigned si = 0; si < 2; si++)
			for (int shared = out ? 2 : 1; shared >= 0; shared--)
				rows[nrows++] = (struct row){ .out = out, .size = sizes[si], .shared = shared };
	unsigned long long st0[MAXT], al0[MAXT], st1[MAXT], al1[MAXT];
	unsigned nst = read_steal(st0, al0, MAXT);
	for (unsigned r = 0; r < reps; r++)
		for (unsigned k = 0; k < nrows; k++) {
			struct row *w = &rows[k];
			uint64_t d;
			seq_one_at_a_time = w->shared == 2;
			/* one thread on each CPU in turn, then all, back to back */
			w->one[r] = 0;
			for (unsigned cpu = 0; cpu < nt; cpu++) {
				jobs[0]->cpu = jobs[cpu]->cpu;
				w->one[r] += measure(1, w->shared && !w->out ? nt : 1, true, w->out, w->size, &d) / nt;
				w->drops += d;
			}
			jobs[0]->cpu = 0;
			w->many[r] = measure(nt, nt, w->shared, w->out, w->size, &d);
			w->drops += d;
			w->ratio[r] = w->many[r] / w->one[r];
		}
	for (unsigned k = 0; k < nrows; k++) {
		struct row *w = &rows[k];
		char sas[32];
		snprintf(sas, sizeof(sas), w->shared == 2 ? "1 shared/1" : w->shared ? "1 shared" : "%u (1 each)", nt);
		printf("%-9s %5u %-12s %13.0f %13.0f %7.2fx %8llu\n", w->out ? "outbound" : "inbound", w->size, sas,
		       median(w->one, reps), median(w->many, reps), median(w->ratio, reps),
		       (unsigned long long)w->drops);
	}
	printf("N = %u threads, one per CPU; 1 thread: the mean of one thread on each CPU;\n"
	       "1 thread, inbound on 1 shared SA: the same stream as the N threads take (N pools of frames);\n"
	       "pps: the sum of the threads' rates while all ran;\n"
	       "ratio = median over rounds of (N threads / 1 thread) in the same round\n", nt);
	printf("1 shared/1: outbound numbers reserved one at a time instead of in steps of 32 / N (for comparison)\n");
	if (nst && read_steal(st1, al1, MAXT) == nst) {
		printf("steal (the host running others on this guest's CPUs) during the rounds:");
		for (unsigned cpu = 0; cpu < nst; cpu++)
			printf(" cpu%u %.1f%%", cpu, al1[cpu] > al0[cpu] ?
			       100.0 * (double)(st1[cpu] - st0[cpu]) / (double)(al1[cpu] - al0[cpu]) : 0.0);
		printf("\n");
	}
	sadb_close(db);
	unlink(seg);
	return 0;
}
