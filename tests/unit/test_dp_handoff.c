/* tests/unit/test_dp_handoff.c: the hand-off of inbound crypto between workers
 * (dataplane/xipsecd/dp_handoff.c) on an in-memory SA shared by two fake workers, as dp_sa.c builds it
 * (one engine object per worker, one runtime area, the SA's replay lock). With a helper thread
 * running its rings: every packet of every burst decrypts to what was sent, the burst comes back in
 * its order (bad packets after the good, each side in order), the helper did part of the work, and a
 * sequence number twice in one burst, once in the owner's share and once in a helper's job, is
 * accepted once. Without one (a stopped worker): the owner takes every job back, never waits, holds
 * back from it after a burst it did not help with, and stops posting once the ring towards it is
 * full. Three workers: the jobs go to both others. A window
 * smaller than the burst, one worker or --no-handoff: no job at all. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/engine/esp_ip.h"

#define FRAME  2048u
#define OFF    256u
#define INNER  300u
#define BURSTS 256u

static struct dp_ctx ctx;
static struct dp_sa *sa;
static struct sadb_runtime rt;
static pthread_spinlock_t lock;
static struct esp_sa *gen;           /* outbound twin of the SA: makes the stream */
static struct sadb_runtime gen_rt;
static _Atomic bool stop_helper;
static uint8_t frames[DP_BATCH][FRAME];
static struct esp_pkt pk[DP_BATCH];
static struct esp_pkt *pp[DP_BATCH];

static struct sadb_sa mk_sa(uint8_t dir, uint32_t window)
{
	struct sadb_sa s;

	memset(&s, 0, sizeof(s));
	s.spi = 0x7001;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TUNNEL;
	s.dir = dir;
	assert_int_equal(sadb_addr_parse("192.0.2.1", &s.src), 0);
	assert_int_equal(sadb_addr_parse("192.0.2.2", &s.dst), 0);
	s.enc_alg = SADB_ENC_AES_GCM16;
	s.enc_key_len = 16;
	s.salt_len = 4;
	for (int i = 0; i < 20; i++)
		s.enc_key[i] = (uint8_t)(i * 7 + 1);
	s.replay_window = window;
	s.dscp = 0xff;
	s.instance = 1;
	return s;
}

/* An inner IPv4/UDP packet whose payload carries its number. */
static void mk_inner(uint8_t *o, uint32_t tag)
{
	memset(o, 0, 28);
	o[0] = 0x45;
	o[2] = (uint8_t)(INNER >> 8);
	o[3] = (uint8_t)INNER;
	o[6] = 0x40;
	o[8] = 64;
	o[9] = 17;
	o[12] = 10; o[13] = 1; o[14] = 0; o[15] = 2;
	o[16] = 10; o[17] = 2; o[18] = 0; o[19] = 2;
	esp_ip4_set_csum(o);
	for (uint32_t i = 28; i < INNER; i++)
		o[i] = (uint8_t)(tag + i);
	memcpy(o + 28, &tag, sizeof(tag));
}

static uint32_t tag_of(const struct esp_pkt *p)
{
	uint32_t t;

	memcpy(&t, p->buf + p->off + 28, sizeof(t));
	return t;
}

/* Two workers (or n), the SA and its twin; handoff: whether hand-off is set up. */
static struct sadb_worker_stats sst[8]; /* the workers' records in the SADB stats area */

static void setup(unsigned n, uint32_t window, bool no_handoff)
{
	struct sadb_sa rec = mk_sa(SADB_DIR_OUT, window);
	struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO };

	memset(&ctx, 0, sizeof(ctx));
	ctx.n_workers = n;
	ctx.batch = DP_BATCH;
	ctx.cfg.no_handoff = no_handoff;
	ctx.w = calloc(n, sizeof(*ctx.w));
	assert_non_null(ctx.w);
	memset(sst, 0, sizeof(sst));
	assert_true(n <= 8);
	for (unsigned i = 0; i < n; i++) {
		ctx.w[i].ctx = &ctx;
		ctx.w[i].id = i;
		ctx.w[i].sst = &sst[i];
	}
	assert_int_equal(dp_handoff_init(&ctx), 0);
	memset(&gen_rt, 0, sizeof(gen_rt));
	gen_rt.instance = 1;
	assert_int_equal(esp_sa_create(&rec, &gen_rt, &o, &gen), 0);
	rec = mk_sa(SADB_DIR_IN, window);
	sa = calloc(1, sizeof(*sa) + n * sizeof(struct esp_sa *));
	assert_non_null(sa);
	sa->sa = rec;
	memset(&rt, 0, sizeof(rt));
	rt.instance = 1;
	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	o.replay_lock = n > 1 ? &lock : NULL;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(esp_sa_create(&rec, &rt, &o, &sa->e[i]), 0);
}

static void teardown_all(void)
{
	for (unsigned i = 0; i < ctx.n_workers; i++)
		esp_sa_destroy(sa->e[i]);
	free(sa);
	esp_sa_destroy(gen);
	dp_handoff_fini(&ctx);
	assert_null(ctx.handoff);
	free(ctx.w);
	pthread_spin_destroy(&lock);
}

/* The next n packets of the stream, encrypted, in the burst's frames (tags first..). */
static void fill(unsigned n, uint32_t first)
{
	for (unsigned i = 0; i < n; i++) {
		struct esp_pkt *p = &pk[i];

		mk_inner(frames[i] + OFF, first + i);
		*p = (struct esp_pkt){ .buf = frames[i], .buf_len = FRAME, .off = OFF, .len = INNER };
		pp[i] = p;
		assert_int_equal(esp_outbound_burst(gen, &pp[i], 1), 1);
	}
	for (unsigned i = 0; i < n; i++)
		pp[i] = &pk[i];
}

/* As xipsecd pins its workers: the owner on CPU 0, the helper on CPU 1 (when there are two). */
static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *helper(void *arg)
{
	struct dp_worker *w = arg;
	unsigned idle = 0;

	pin(1);
	while (!atomic_load_explicit(&stop_helper, memory_order_relaxed)) {
		if (dp_handoff_serve(w))
			continue;
		__builtin_ia32_pause();
		if (++idle % 4096 == 0)
			sched_yield();
	}
	return NULL;
}

static uint64_t st(unsigned w, uint64_t *f)
{
	(void)w;
	return __atomic_load_n(f, __ATOMIC_RELAXED);
}

/* A running helper: everything decrypts, in order, and the helper did some of it. */
static void test_helper_shares(void **state)
{
	pthread_t th;
	uint32_t tag = 0;
	unsigned bursts = 0;
	struct timespec t0, t;

	(void)state;
	setup(2, 1024, false);
	assert_non_null(ctx.handoff);
	atomic_store(&stop_helper, false);
	pin(0);
	assert_int_equal(pthread_create(&th, NULL, helper, &ctx.w[1]), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* until the helper has run jobs (a loaded machine may keep it off the CPU for a while) */
	for (;;) {
		unsigned k;

		fill(DP_BATCH, tag);
		k = dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH);
		assert_int_equal(k, DP_BATCH);
		for (unsigned i = 0; i < DP_BATCH; i++) {
			uint8_t want[INNER];

			assert_ptr_equal(pp[i], &pk[i]);           /* the burst's order */
			assert_int_equal(pp[i]->drop, SADB_DROP_NONE);
			assert_int_equal(pp[i]->len, INNER);
			mk_inner(want, tag + i);
			assert_memory_equal(pp[i]->buf + pp[i]->off, want, INNER);
		}
		tag += DP_BATCH;
		bursts++;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((bursts >= BURSTS && st(0, &ctx.w[0].sst->handoff_pkts) > 0) || t.tv_sec - t0.tv_sec > 20)
			break;
	}
	atomic_store(&stop_helper, true);
	pthread_join(th, NULL);
	print_message("%u bursts: %llu jobs, %llu packets decrypted by the helper, %llu jobs taken back\n",
		      bursts, (unsigned long long)st(0, &ctx.w[0].sst->handoff_jobs),
		      (unsigned long long)st(0, &ctx.w[0].sst->handoff_pkts),
		      (unsigned long long)st(0, &ctx.w[0].sst->handoff_back));
	assert_true(st(0, &ctx.w[0].sst->handoff_jobs) > 0);
	assert_true(st(0, &ctx.w[0].sst->handoff_pkts) > 0);
	/* each side counts the same packets; every job was run by one of them */
	assert_int_equal(st(1, &ctx.w[1].sst->handoff_done), st(0, &ctx.w[0].sst->handoff_pkts));
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_pkts) / 8 + st(0, &ctx.w[0].sst->handoff_back),
			 st(0, &ctx.w[0].sst->handoff_jobs));
	assert_int_equal(rt.replay_top, tag);
	teardown_all();
}

/* Bad packets in the owner's share and in the jobs: good ones first, bad ones after, both in order;
 * a number twice in the burst (owner's share and a job) is accepted once; the burst again: replays. */
static void test_verdicts_in_order(void **state)
{
	pthread_t th;
	struct esp_pkt copy;
	uint8_t copy_frame[FRAME];

	(void)state;
	setup(2, 1024, false);
	atomic_store(&stop_helper, false);
	assert_int_equal(pthread_create(&th, NULL, helper, &ctx.w[1]), 0);
	for (unsigned round = 0; round < 50; round++) {
		unsigned k, seen_dup = 0;
		uint32_t tag = round * DP_BATCH * 2;

		fill(DP_BATCH, tag);
		/* ICV broken in the owner's share (5) and in two jobs (37, 60) */
		for (unsigned i = 5; i < DP_BATCH; i += (i == 5 ? 32 : 23))
			pk[i].buf[pk[i].off + pk[i].len - 1] ^= 1;
		/* packet 45 (a job) is packet 2 again (the owner's share) */
		memcpy(frames[45], frames[2], FRAME);
		pk[45].off = pk[2].off;
		pk[45].len = pk[2].len;
		memcpy(copy_frame, frames[10], FRAME);
		copy = pk[10];
		k = dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH);
		assert_int_equal(k, DP_BATCH - 4);
		for (unsigned i = 1; i < k; i++)
			assert_true(pp[i - 1] < pp[i]);
		for (unsigned i = k + 1; i < DP_BATCH; i++)
			assert_true(pp[i - 1] < pp[i]);
		for (unsigned i = k; i < DP_BATCH; i++) {
			unsigned idx = (unsigned)(pp[i] - pk);

			if (idx == 2 || idx == 45) {
				assert_int_equal(pp[i]->drop, SADB_DROP_REPLAY);
				seen_dup++;
			} else {
				assert_true(idx == 5 || idx == 37 || idx == 60);
				assert_int_equal(pp[i]->drop, SADB_DROP_ICV);
			}
		}
		assert_int_equal(seen_dup, 1);
		for (unsigned i = 0; i < k; i++) {
			unsigned idx = (unsigned)(pp[i] - pk);

			assert_int_equal(tag_of(pp[i]), tag + (idx == 45 ? 2 : idx));
		}
		/* an old packet again (the window holds it): refused whoever decrypts it */
		memcpy(frames[0], copy_frame, FRAME);
		pk[0] = copy;
		pp[0] = &pk[0];
		assert_int_equal(esp_inbound_burst(sa->e[1], pp, 1), 0);
		assert_int_equal(pk[0].drop, SADB_DROP_REPLAY);
		/* keep the stream's numbers and the tags apart: the generator moved on by DP_BATCH */
		fill(DP_BATCH, tag + DP_BATCH);
		assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
	}
	atomic_store(&stop_helper, true);
	pthread_join(th, NULL);
	teardown_all();
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

/* Bursts of 64 from worker 0 with nobody running worker 1: every one complete and in order. */
static void bursts_alone(unsigned from, unsigned nb)
{
	for (unsigned b = from; b < from + nb; b++) {
		fill(DP_BATCH, b * DP_BATCH);
		assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
		for (unsigned i = 0; i < DP_BATCH; i++) {
			assert_ptr_equal(pp[i], &pk[i]);
			assert_int_equal(tag_of(pp[i]), b * DP_BATCH + i);
		}
	}
}

/* A helper that is awake but does not run (its CPU taken by other work, or stuck): the owner takes
 * every job back at once, then posts nothing to it for a millisecond, and never more than its ring
 * holds. */
static void test_stopped_helper(void **state)
{
	struct timespec t0, t1;
	uint64_t first;

	(void)state;
	setup(2, 1024, false);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bursts_alone(0, 1);
	first = st(0, &ctx.w[0].sst->handoff_jobs);
	assert_int_equal(first, 4);                 /* half of 64 in jobs of 8 */
	bursts_alone(1, 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (secs(&t0, &t1) < 0.001)                 /* (a slow machine may take longer) */
		assert_int_equal(st(0, &ctx.w[0].sst->handoff_jobs), first);
	bursts_alone(2, 62);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(st(0, &ctx.w[0].sst->handoff_jobs) <= 16);
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_back), st(0, &ctx.w[0].sst->handoff_jobs));
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_pkts), 0);
	/* 64 bursts of a few hundred bytes: far below a second unless something waited */
	assert_true(secs(&t0, &t1) < 5);
	/* the stale entries are skipped when the worker runs its rings again */
	assert_int_equal(dp_handoff_serve(&ctx.w[1]), 0);
	assert_int_equal(st(1, &ctx.w[1].sst->handoff_done), 0);
	teardown_all();
}

/* A helper asleep that never wakes (stuck in its poll): woken every burst, never judged (a wake-up
 * takes time), it gets jobs until its ring is full of stale entries, then none. */
static void test_asleep_helper(void **state)
{
	struct pollfd pf;

	(void)state;
	setup(2, 1024, false);
	assert_true(dp_handoff_sleep(&ctx.w[1]));
	bursts_alone(0, 16);
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_jobs), 16);  /* 4 bursts fill the ring */
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_back), 16);
	pf = (struct pollfd){ .fd = dp_handoff_fd(&ctx.w[1]), .events = POLLIN };
	assert_int_equal(poll(&pf, 1, 0), 1);
	teardown_all();
}

/* Three workers: a burst is shared among both others (one ring each), and everything decrypts in
 * order while both help; with neither running, the jobs stop when both rings are full (twice what
 * one ring holds: the jobs went to both). */
static void test_three_workers(void **state)
{
	pthread_t th[2];
	uint64_t jobs;

	(void)state;
	setup(3, 1024, false);
	/* asleep (never judged): the jobs stop only when both rings are full */
	assert_true(dp_handoff_sleep(&ctx.w[1]));
	assert_true(dp_handoff_sleep(&ctx.w[2]));
	for (unsigned b = 0; b < 16; b++) {
		fill(DP_BATCH, b * DP_BATCH);
		assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
		if (b == 0)
			/* an equal share for each of the three: the others get 64 - 64 / 3 = 43, so 5 jobs of 8 */
			assert_int_equal(st(0, &ctx.w[0].sst->handoff_jobs), 5);
	}
	jobs = st(0, &ctx.w[0].sst->handoff_jobs);
	assert_int_equal(jobs, 2 * 16);    /* two rings of DP_HANDOFF_RING, all stale now */
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_back), jobs);
	assert_int_equal(dp_handoff_serve(&ctx.w[1]) + dp_handoff_serve(&ctx.w[2]), 0);
	dp_handoff_woke(&ctx.w[1], true);
	dp_handoff_woke(&ctx.w[2], true);
	atomic_store(&stop_helper, false);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, helper, &ctx.w[1 + i]), 0);
	for (unsigned b = 16; b < 16 + BURSTS; b++) {
		fill(DP_BATCH, b * DP_BATCH);
		assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
		for (unsigned i = 0; i < DP_BATCH; i++) {
			assert_ptr_equal(pp[i], &pk[i]);
			assert_int_equal(tag_of(pp[i]), b * DP_BATCH + i);
		}
	}
	atomic_store(&stop_helper, true);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(st(1, &ctx.w[1].sst->handoff_done) + st(2, &ctx.w[2].sst->handoff_done),
			 st(0, &ctx.w[0].sst->handoff_pkts));
	assert_int_equal(rt.replay_top, (16 + BURSTS) * DP_BATCH);
	teardown_all();
}

/* A window smaller than the burst: parts could push each other out of it, so no split. */
static void test_small_window(void **state)
{
	(void)state;
	setup(2, 32, false);
	fill(DP_BATCH, 0);
	/* a burst of 64 with a window of 32: the engine alone, as without hand-off */
	dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH);
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_jobs), 0);
	fill(16, DP_BATCH);
	assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, 16), 16);
	assert_true(st(0, &ctx.w[0].sst->handoff_jobs) > 0);
	teardown_all();
}

/* One worker, or --no-handoff: nothing is set up, bursts go to the engine whole. */
static void test_off(void **state)
{
	(void)state;
	setup(1, 1024, false);
	assert_null(ctx.handoff);
	assert_int_equal(dp_handoff_fd(&ctx.w[0]), -1);
	fill(DP_BATCH, 0);
	assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
	assert_int_equal(dp_handoff_serve(&ctx.w[0]), 0);
	assert_true(dp_handoff_sleep(&ctx.w[0]));
	teardown_all();
	setup(2, 1024, true);
	assert_null(ctx.handoff);
	fill(DP_BATCH, 0);
	assert_int_equal(dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH), DP_BATCH);
	assert_int_equal(st(0, &ctx.w[0].sst->handoff_jobs), 0);
	teardown_all();
}

/* A helper about to sleep is told when a job is waiting, and its eventfd is written when one is
 * posted after it said it sleeps. */
static void test_wakeup(void **state)
{
	struct pollfd pf;

	(void)state;
	setup(2, 1024, false);
	pf = (struct pollfd){ .fd = dp_handoff_fd(&ctx.w[1]), .events = POLLIN };
	assert_true(pf.fd >= 0);
	assert_true(dp_handoff_sleep(&ctx.w[1]));   /* nothing waits: it may sleep */
	fill(DP_BATCH, 0);
	dp_handoff_inbound(&ctx.w[0], sa, pp, DP_BATCH);   /* posts, wakes, takes back */
	assert_int_equal(poll(&pf, 1, 0), 1);
	dp_handoff_woke(&ctx.w[1], true);
	assert_int_equal(poll(&pf, 1, 0), 0);
	teardown_all();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helper_shares),
		cmocka_unit_test(test_verdicts_in_order),
		cmocka_unit_test(test_stopped_helper),
		cmocka_unit_test(test_asleep_helper),
		cmocka_unit_test(test_three_workers),
		cmocka_unit_test(test_small_window),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
