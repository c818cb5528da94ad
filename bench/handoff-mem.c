/* bench/handoff-mem.c: one inbound SA's decryption rate, in memory, by one worker alone and by one
 * worker handing part of every burst to a second (dataplane/xipsecd/dp_handoff.c, the code xipsecd
 * runs: its rings, jobs and take-back, called as dp_burst.c calls it). The owner thread (CPU 0) takes
 * the SA's stream in bursts of 64, as one RX queue brings it, from a pool of frames larger than the
 * caches (refilled from a pristine copy between rounds, untimed: frames arrive in memory, written by
 * the kernel or the NIC, not in either worker's cache); the helper thread (CPU 1) does nothing but run
 * the jobs posted to it, as an idle worker of xipsecd would. AES-GCM-128 and
 * AES-CBC-128 + HMAC-SHA256-128, 1400-byte inner packets, a 1024-packet replay window. Medians of
 * REPS interleaved rounds of POOL packets; the helper's share of the packets and the jobs the owner
 * took back are printed, and every packet must decrypt (a replay drop would mean the split broke
 * the window).
 * Usage: handoff-mem [-r REPS] */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/engine/esp_ip.h"
#include "bench/bench_pkt.h"

#define POOL  32768u
#define FRAME 2048u
#define OFF   256u
#define SIZE  1400u

static struct dp_ctx ctx;
static struct dp_sa *sa;
static uint8_t *src, *frames;       /* the encrypted stream (pristine); the frames it is decrypted in */
static uint32_t src_len[POOL], src_off[POOL]; /* the ESP packets' places in their frames */
static _Atomic bool stop_helper;
static struct sadb_worker_stats sst[2]; /* the workers' records in the SADB stats area, as xipsecd's */

static void die(const char *what, int err)
{
	fprintf(stderr, "handoff-mem: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static struct sadb_sa mk_sa(uint8_t dir, bool cbc)
{
	struct sadb_sa s;

	memset(&s, 0, sizeof(s));
	s.spi = 0x7001;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TUNNEL;
	s.dir = dir;
	sadb_addr_parse("192.0.2.1", &s.src);
	sadb_addr_parse("192.0.2.2", &s.dst);
	if (cbc) {
		s.enc_alg = SADB_ENC_AES_CBC;
		s.enc_key_len = 16;
		s.auth_alg = SADB_AUTH_HMAC_SHA256_128;
		s.auth_key_len = 32;
		for (int i = 0; i < 32; i++)
			s.auth_key[i] = (uint8_t)(i * 3 + 1);
	} else {
		s.enc_alg = SADB_ENC_AES_GCM16;
		s.enc_key_len = 16;
		s.salt_len = 4;
	}
	for (int i = 0; i < 16; i++)
		s.enc_key[i] = (uint8_t)(i * 7 + 1);
	s.replay_window = 1024;
	s.dscp = 0xff;
	s.instance = 1;
	return s;
}

static void mk_inner(uint8_t *o, uint32_t len)
{
	bench_ipv4_udp(o, len, (const uint8_t[]){ 10, 1, 0, 2 }, (const uint8_t[]){ 10, 2, 0, 2 }, 0, 0);
}

/* The SA as dp_sa.c builds it for two workers, and its stream encrypted by an outbound twin. */
static void setup_sa(bool cbc, struct sadb_runtime *rt, pthread_spinlock_t *lock)
{
	struct sadb_sa rec = mk_sa(SADB_DIR_OUT, cbc);
	struct sadb_runtime grt = { .instance = 1 };
	struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO };
	struct esp_sa *gen;
	uint8_t inner[SIZE];
	int r;

	mk_inner(inner, SIZE);
	r = esp_sa_create(&rec, &grt, &o, &gen);
	if (r)
		die("esp_sa_create (generator)", r);
	for (uint32_t i = 0; i < POOL; i++) {
		struct esp_pkt p = { .buf = src + (size_t)i * FRAME, .buf_len = FRAME, .off = OFF, .len = SIZE };
		struct esp_pkt *pp = &p;

		memcpy(p.buf + OFF, inner, SIZE);
		if (esp_outbound_burst(gen, &pp, 1) != 1)
			die("encrypting the stream", EIO);
		src_len[i] = p.len;
		src_off[i] = p.off;
	}
	esp_sa_destroy(gen);
	rec = mk_sa(SADB_DIR_IN, cbc);
	sa = calloc(1, sizeof(*sa) + 2 * sizeof(struct esp_sa *));
	if (!sa)
		die("calloc", ENOMEM);
	sa->sa = rec;
	memset(rt, 0, sizeof(*rt));
	rt->instance = 1;
	o.replay_lock = lock;
	for (unsigned i = 0; i < 2; i++)
		if ((r = esp_sa_create(&rec, rt, &o, &sa->e[i])))
			die("esp_sa_create", r);
}

static void *helper(void *arg)
{
	(void)arg;
	pin(1);
	while (!atomic_load_explicit(&stop_helper, memory_order_relaxed))
		if (!dp_handoff_serve(&ctx.w[1]))
			__builtin_ia32_pause();
	return NULL;
}

/* One pass over the stream by the owner: packets per second; *good the packets that decrypted. */
static double pass(bool handoff, struct sadb_runtime *rt, uint64_t *good)
{
	static struct esp_pkt pk[DP_BATCH];
	struct esp_pkt *pp[DP_BATCH];
	struct dp_handoff *h = ctx.handoff;
	struct timespec t0, t1;

	/* a new stream each pass: the window starts empty; the frames as received */
	memcpy(frames, src, (size_t)POOL * FRAME);
	rt->replay_top = 0;
	memset(rt->replay_bitmap, 0, sizeof(rt->replay_bitmap));
	if (!handoff)
		ctx.handoff = NULL;
	*good = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t b = 0; b < POOL; b += DP_BATCH) {
		for (uint32_t i = 0; i < DP_BATCH; i++) {
			uint8_t *f = frames + (size_t)(b + i) * FRAME;

			pk[i] = (struct esp_pkt){ .buf = f, .buf_len = FRAME, .off = src_off[b + i],
						  .len = src_len[b + i] };
			pp[i] = &pk[i];
		}
		*good += dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ctx.handoff = h;
	return POOL / ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned reps = 5;
	int c;

	while ((c = getopt(argc, argv, "r:")) != -1)
		if (c == 'r')
			reps = (unsigned)atoi(optarg);
	if (!reps || reps > 100) {
		fprintf(stderr, "usage: handoff-mem [-r REPS]\n");
		return 2;
	}
	src = malloc((size_t)POOL * FRAME);
	frames = malloc((size_t)POOL * FRAME);
	ctx.n_workers = 2;
	ctx.batch = DP_BATCH;
	ctx.w = calloc(2, sizeof(*ctx.w));
	if (!src || !frames || !ctx.w)
		die("malloc", ENOMEM);
	for (unsigned i = 0; i < 2; i++) {
		ctx.w[i].ctx = &ctx;
		ctx.w[i].id = i;
		ctx.w[i].sst = &sst[i];
	}
	if ((c = dp_handoff_init(&ctx)))
		die("dp_handoff_init", c);
	printf("one inbound SA, %u-byte inner packets, bursts of %u, %u packets a round, medians of %u rounds\n",
	       SIZE, DP_BATCH, POOL, reps);
	{
		/* the helper's CPU must be free for it to help: say how busy the machine was */
		FILE *f = fopen("/proc/loadavg", "r");
		double l1 = 0;

		if (f && fscanf(f, "%lf", &l1) == 1)
			printf("load average at start: %.2f (on %ld CPUs)\n", l1, sysconf(_SC_NPROCESSORS_ONLN));
		if (f)
			fclose(f);
	}
	printf("%-12s %14s %14s %8s %14s %12s\n", "transform", "1 worker pps", "hand-off pps", "ratio",
	       "helper share", "taken back");
	for (int cbc = 0; cbc < 2; cbc++) {
		struct sadb_runtime *rt = calloc(1, sizeof(*rt));
		pthread_spinlock_t lock;
		pthread_t th;
		double one[100], two[100], ratio[100];
		uint64_t good, bad = 0, done0, jobs0, back0;

		if (!rt)
			die("calloc", ENOMEM);
		pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
		setup_sa(cbc, rt, &lock);
		atomic_store(&stop_helper, false);
		if (pthread_create(&th, NULL, helper, NULL))
			die("pthread_create", errno);
		pin(0);
		done0 = __atomic_load_n(&ctx.w[1].sst->handoff_done, __ATOMIC_RELAXED);
		jobs0 = __atomic_load_n(&ctx.w[0].sst->handoff_jobs, __ATOMIC_RELAXED);
		back0 = __atomic_load_n(&ctx.w[0].sst->handoff_back, __ATOMIC_RELAXED);
		for (unsigned r = 0; r < reps; r++) {
			one[r] = pass(false, rt, &good);
			bad += POOL - good;
			two[r] = pass(true, rt, &good);
			bad += POOL - good;
			ratio[r] = two[r] / one[r];
		}
		atomic_store(&stop_helper, true);
		pthread_join(th, NULL);
		qsort(one, reps, sizeof(double), cmp);
		qsort(two, reps, sizeof(double), cmp);
		qsort(ratio, reps, sizeof(double), cmp);
		printf("%-12s %14.0f %14.0f %8.2f %13.1f%% %6llu/%llu\n", cbc ? "cbc-sha256" : "aes-gcm-128",
		       one[reps / 2], two[reps / 2], ratio[reps / 2],
		       100.0 * (double)(__atomic_load_n(&ctx.w[1].sst->handoff_done, __ATOMIC_RELAXED) - done0) / ((double)POOL * reps),
		       (unsigned long long)(__atomic_load_n(&ctx.w[0].sst->handoff_back, __ATOMIC_RELAXED) - back0),
		       (unsigned long long)(__atomic_load_n(&ctx.w[0].sst->handoff_jobs, __ATOMIC_RELAXED) - jobs0));
		if (bad) {
			fprintf(stderr, "handoff-mem: %llu packets did not decrypt\n", (unsigned long long)bad);
			return 1;
		}
		for (unsigned i = 0; i < 2; i++)
			esp_sa_destroy(sa->e[i]);
		free(sa);
		free(rt);
		pthread_spin_destroy(&lock);
	}
	dp_handoff_fini(&ctx);
	free(ctx.w);
	free(src);
	free(frames);
	return 0;
}
