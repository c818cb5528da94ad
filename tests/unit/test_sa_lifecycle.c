/* tests/unit/test_sa_lifecycle.c: what happens to an SA's engine objects and runtime area when the
 * SA is deleted and its slot given to another SA, with the real SADB and the real engine:
 *  - an engine object of a deleted SA X whose slot now holds Y takes no sequence number from Y's
 *    counter, accepts no packet against Y's replay window and writes nothing into Y's runtime area,
 *    and Y's first packets (sequence 1, 2, ...) are accepted (the instance checks of the engine);
 *  - the same under a race: a thread sending through X's object while the slot is reset many times
 *    never gets a sequence number twice;
 *  - with a dataplane attached, a freed slot is not reused until the dataplane releases the
 *    generation of the deletion; a dead dataplane pins nothing; a second live one is refused;
 *  - the outer IPv4 ID streams of one outbound SA's per-worker objects never meet (RFC 6864). */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/test_esp_util.h"
#include "tests/unit/sadb_testlib.h"

static const struct xf *gcm(void)
{
	return &xforms[0]; /* esp aes-gcm-16-128 */
}

/* An SA record for the SADB: transform GCM-128, tunnel IPv4, keys from seed, any selector. */
static struct sadb_sa rec(uint32_t spi, uint8_t dir, uint8_t seed)
{
	struct sadb_sa s;

	mk_sa(&s, gcm(), SADB_MODE_TUNNEL, dir, AF_INET, 0, false, seed);
	s.spi = spi;
	s.flags &= ~SADB_SAF_LEGACY_OK;
	t_sel_any(&s.sel);
	s.instance = 0;
	return s;
}

static struct esp_sa *obj(struct sadb *db, uint32_t slot, uint32_t seq_block)
{
	struct sadb_sa s;
	struct esp_sa *e = NULL;
	struct esp_sa_opts o = { .backend = ESP_BACKEND_OPENSSL, .seq_block = seq_block };

	assert_int_equal(sadb_sa_get(db, slot, &s), 0);
	assert_int_equal(esp_sa_create(&s, sadb_runtime(db, slot), &o, &e), 0);
	explicit_bzero(&s, sizeof(s));
	return e;
}

/* Protect one 64-byte UDP packet into f; the drop reason (NONE when sent). */
static unsigned send1(struct esp_sa *e, struct frame *f, uint32_t seed)
{
	uint8_t pkt[256];
	struct esp_pkt *pp = &f->p;

	frame_set(f, pkt, mk_udp(pkt, AF_INET, 36, 0, seed));
	return esp_outbound_burst(e, &pp, 1) == 1 ? SADB_DROP_NONE : f->p.drop;
}

static unsigned recv1(struct esp_sa *e, const struct frame *in)
{
	struct frame f = *in;
	struct esp_pkt *pp = &f.p;

	f.p.buf = f.mem;
	return esp_inbound_burst(e, &pp, 1) == 1 ? SADB_DROP_NONE : f.p.drop;
}

static bool rt_pristine(const struct sadb_runtime *rt)
{
	if (rt->packets || rt->bytes || rt->seq_reserved || rt->replay_top || rt->first_used || rt->expired)
		return false;
	for (unsigned i = 0; i < SADB_REPLAY_MAX / 64; i++)
		if (rt->replay_bitmap[i])
			return false;
	for (unsigned i = 0; i < SADB_DROP_MAX; i++)
		if (rt->drops[i])
			return false;
	return true;
}

/* Outbound: X's object keeps its pointer to the slot's runtime across delete X + add Y. */
static void test_stale_outbound(void **state)
{
	(void)state;
	struct sadb *db = t_open(t_path("lc-out"), 8, 8);
	struct sadb_sa x = rec(0x1000, SADB_DIR_OUT, 1), y = rec(0x2000, SADB_DIR_OUT, 2);
	uint32_t sx, sy;
	struct frame f;

	assert_int_equal(sadb_sa_add(db, &x, &sx), 0);
	/* A block of 1024 reserved at the first packet: the object holds 2..1024 unused. */
	struct esp_sa *ex = obj(db, sx, 0);
	for (uint32_t i = 1; i <= 3; i++) {
		assert_int_equal(send1(ex, &f, i), SADB_DROP_NONE);
		assert_int_equal(f.p.seq, i);
	}
	assert_int_equal(sadb_sa_delete(db, x.spi, x.proto, &x.dst), 0);
	assert_int_equal(sadb_sa_add(db, &y, &sy), 0);
	assert_int_equal(sy, sx); /* no dataplane attached: the slot is reused at once */
	struct sadb_runtime *rt = sadb_runtime(db, sy);
	assert_true(rt_pristine(rt));

	/* X's object sends nothing more, not even from the block it still holds. */
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(send1(ex, &f, 10 + i), SADB_DROP_STALE_SA);
	assert_true(rt_pristine(rt)); /* nothing reserved, counted or dropped in Y's area */

	/* Y starts at 1. */
	struct esp_sa *ey = obj(db, sy, 0);
	assert_int_equal(send1(ey, &f, 20), SADB_DROP_NONE);
	assert_int_equal(f.p.seq, 1);
	assert_int_equal(rt->packets, 1);
	/* and X's object still refuses */
	assert_int_equal(send1(ex, &f, 21), SADB_DROP_STALE_SA);
	assert_int_equal(rt->packets, 1);
	esp_sa_destroy(ex);
	esp_sa_destroy(ey);
	sadb_close(db);
}

/* Inbound: X's object neither accepts X's old packets against Y's fresh window nor writes it. */
static void test_stale_inbound(void **state)
{
	(void)state;
	struct sadb *db = t_open(t_path("lc-in"), 8, 8);
	struct sadb_sa x = rec(0x1000, SADB_DIR_IN, 1), y = rec(0x2000, SADB_DIR_IN, 2);
	struct sadb_sa xo = x, yo = y;
	struct esp_sa_opts o = { .backend = ESP_BACKEND_OPENSSL };
	struct esp_sa *px = NULL, *py = NULL;
	struct sadb_runtime *rpx = rt_new(), *rpy = rt_new();
	struct frame fx[6], fy[3];
	uint32_t sx, sy;

	/* The peer's outbound objects, on private runtime areas. */
	xo.dir = yo.dir = SADB_DIR_OUT;
	xo.instance = yo.instance = 1;
	assert_int_equal(esp_sa_create(&xo, rpx, &o, &px), 0);
	assert_int_equal(esp_sa_create(&yo, rpy, &o, &py), 0);
	for (uint32_t i = 1; i <= 5; i++)
		assert_int_equal(send1(px, &fx[i], i), SADB_DROP_NONE);
	for (uint32_t i = 1; i <= 2; i++)
		assert_int_equal(send1(py, &fy[i], 100 + i), SADB_DROP_NONE);

	assert_int_equal(sadb_sa_add(db, &x, &sx), 0);
	struct esp_sa *ex = obj(db, sx, 0);
	for (uint32_t i = 1; i <= 5; i++)
		assert_int_equal(recv1(ex, &fx[i]), SADB_DROP_NONE);
	assert_int_equal(recv1(ex, &fx[3]), SADB_DROP_REPLAY);

	assert_int_equal(sadb_sa_delete(db, x.spi, x.proto, &x.dst), 0);
	assert_int_equal(sadb_sa_add(db, &y, &sy), 0);
	assert_int_equal(sy, sx);
	struct sadb_runtime *rt = sadb_runtime(db, sy);

	/* X's old packets are not accepted again, and Y's window stays untouched. */
	for (uint32_t i = 1; i <= 5; i++)
		assert_int_equal(recv1(ex, &fx[i]), SADB_DROP_STALE_SA);
	assert_true(rt_pristine(rt));

	/* Y's first packets are accepted. */
	struct esp_sa *ey = obj(db, sy, 0);
	for (uint32_t i = 1; i <= 2; i++)
		assert_int_equal(recv1(ey, &fy[i]), SADB_DROP_NONE);
	assert_int_equal(rt->replay_top, 2);
	assert_int_equal(rt->packets, 2);
	esp_sa_destroy(ex);
	esp_sa_destroy(ey);
	esp_sa_destroy(px);
	esp_sa_destroy(py);
	free(rpx);
	free(rpy);
	sadb_close(db);
}

/* X's object sends from a thread while the main thread gives the slot to new SAs over and over:
 * every number X's object got is above the one before (never one twice under X's key). */
struct racer {
	struct esp_sa *e;
	uint64_t n, last;
	bool repeat;
	_Atomic bool stop;
};

static void *race_send(void *arg)
{
	struct racer *r = arg;
	struct frame f;

	while (!atomic_load(&r->stop)) {
		if (send1(r->e, &f, (uint32_t)r->n) != SADB_DROP_NONE)
			continue;
		if (f.p.seq <= r->last)
			r->repeat = true;
		r->last = f.p.seq;
		__atomic_fetch_add(&r->n, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_stale_race(void **state)
{
	(void)state;
	struct sadb *db = t_open(t_path("lc-race"), 4, 4);
	for (int round = 0; round < 20; round++) {
		struct sadb_sa x = rec(0x1000, SADB_DIR_OUT, 1);
		struct racer r = { 0 };
		pthread_t th;
		uint32_t s;

		assert_int_equal(sadb_sa_add(db, &x, &s), 0);
		r.e = obj(db, s, 1); /* one number per reservation: a CAS per packet */
		assert_int_equal(pthread_create(&th, NULL, race_send, &r), 0);
		while (__atomic_load_n(&r.n, __ATOMIC_RELAXED) < 50)
			usleep(100);
		uint32_t spi = x.spi;
		for (int k = 0; k < 10; k++) {
			struct sadb_sa y = rec(spi + 1, SADB_DIR_OUT, (uint8_t)(3 + k));
			assert_int_equal(sadb_sa_delete(db, spi, SADB_PROTO_ESP, &x.dst), 0);
			assert_int_equal(sadb_sa_add(db, &y, &s), 0);
			/* the new SA's own object takes numbers from the same counter meanwhile */
			struct esp_sa *ey = obj(db, s, 1);
			struct frame f;
			for (int j = 0; j < 20; j++)
				(void)send1(ey, &f, (uint32_t)j);
			esp_sa_destroy(ey);
			spi = y.spi;
		}
		atomic_store(&r.stop, true);
		pthread_join(th, NULL);
		assert_false(r.repeat);
		esp_sa_destroy(r.e);
		assert_int_equal(sadb_sa_delete(db, spi, SADB_PROTO_ESP, &x.dst), 0);
	}
	sadb_close(db);
}

/* The quarantine: a freed slot waits for the attached dataplane's release. */
static void test_quarantine(void **state)
{
	(void)state;
	const char *path = t_path("lc-q");
	struct sadb *db = t_open(path, 4, 4), *dp = NULL;
	struct sadb_sa a = rec(0x1000, SADB_DIR_OUT, 1), b = rec(0x2000, SADB_DIR_OUT, 2);
	struct sadb_sa c = rec(0x3000, SADB_DIR_OUT, 3);
	char msg[256];
	uint32_t sa_, sb, sc;

	assert_int_equal(sadb_open(path, SADB_RUNTIME, NULL, &dp, msg, sizeof(msg)), 0);
	/* what a writer waits for (sadb_dp_applied): nothing without a dataplane, then its release */
	assert_true(sadb_dp_applied(db) == UINT64_MAX);
	assert_int_equal(sadb_dp_attach(dp), 0);
	assert_int_equal(sadb_dp_applied(db), 0);
	assert_int_equal(sadb_sa_add(db, &a, &sa_), 0);
	assert_int_equal(sadb_sa_delete(db, a.spi, a.proto, &a.dst), 0);
	uint64_t gdel = sadb_generation(db);
	assert_int_equal(sadb_sa_quarantined(db), 1);
	assert_int_equal(sadb_sa_add(db, &b, &sb), 0);
	assert_int_not_equal(sb, sa_); /* a never-used slot instead */
	/* released below the deletion: still held */
	sadb_dp_release(dp, gdel - 1);
	assert_int_equal(sadb_dp_applied(db), gdel - 1);
	sadb_dp_release(dp, gdel - 2); /* never backwards */
	assert_int_equal(sadb_dp_applied(db), gdel - 1);
	assert_int_equal(sadb_sa_add(db, &c, &sc), 0);
	assert_int_not_equal(sc, sa_);
	assert_int_equal(sadb_sa_delete(db, c.spi, c.proto, &c.dst), 0);
	assert_int_equal(sadb_sa_quarantined(db), 2);
	/* the table is full but for held slots: refused, the message says why */
	struct sadb_sa d = rec(0x4000, SADB_DIR_OUT, 4), e = rec(0x5000, SADB_DIR_OUT, 5);
	uint32_t sd, se;
	assert_int_equal(sadb_sa_add(db, &d, &sd), 0); /* the 4th and last never-used slot */
	assert_int_equal(sadb_sa_add(db, &e, &se), -ENOSPC);
	assert_non_null(strstr(sadb_errmsg(db), "wait until the dataplane"));
	/* released: the oldest freed slot comes back first */
	sadb_dp_release(dp, sadb_generation(db));
	assert_int_equal(sadb_sa_quarantined(db), 0);
	assert_int_equal(sadb_sa_add(db, &e, &se), 0);
	assert_int_equal(se, sa_);

	/* A second live dataplane is refused and named. */
	struct sadb *dp2 = NULL;
	assert_int_equal(sadb_open(path, SADB_RUNTIME, NULL, &dp2, msg, sizeof(msg)), 0);
	pid_t pid = t_fork();
	if (pid == 0)
		_exit(sadb_dp_attach(dp2) == -EBUSY && strstr(sadb_errmsg(dp2), "another dataplane") ? 0 : 1);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* A dataplane that died pins nothing: a child attaches and exits without releasing. */
	sadb_dp_detach(dp);
	assert_true(sadb_dp_applied(db) == UINT64_MAX);
	pid = t_fork();
	if (pid == 0)
		_exit(sadb_dp_attach(dp2) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(sadb_sa_delete(db, e.spi, e.proto, &e.dst), 0);
	assert_int_equal(sadb_sa_quarantined(db), 0);
	/* two slots free, both reusable: the table fills up again */
	assert_int_equal(sadb_sa_add(db, &a, &sa_), 0);
	assert_int_equal(sadb_sa_add(db, &c, &sc), 0);
	sadb_close(dp2);
	sadb_close(dp);
	sadb_close(db);
}

/* Two dataplanes starting at the same moment on one SADB: the first stops (XIPSEC_SADB_TEST_STOP)
 * just after it found the hold free and before it writes its name there; the second attaches
 * meanwhile, then the first goes on. Exactly one of them may hold the SADB, and the holder the
 * writers see must be that one, alive: two holders would both write the runtime areas, and a
 * loser's name left behind would let writers reuse slots the winner still holds. */
static void test_attach_race(void **state)
{
	(void)state;
	const char *path = t_path("lc-race");
	struct sadb *db = t_open(path, 4, 4);
	int done[2], st;

	assert_int_equal(pipe(done), 0);
	/* each child opens the SADB itself, as a process does; one that attached stays until the
	 * parent has looked (its end of the pipe closes) */
	pid_t kid[2];
	for (int k = 0; k < 2; k++) {
		kid[k] = t_fork();
		assert_true(kid[k] >= 0);
		if (kid[k] == 0) {
			struct sadb *dp = NULL;
			char msg[256], c;
			close(done[1]);
			if (k == 0)
				setenv("XIPSEC_SADB_TEST_STOP", "attach", 1);
			if (sadb_open(path, SADB_RUNTIME, NULL, &dp, msg, sizeof(msg)))
				_exit(3);
			int r = sadb_dp_attach(dp);
			if (r == 0) {
				(void)!read(done[0], &c, 1);
				_exit(0);
			}
			_exit(r == -EBUSY && strstr(sadb_errmsg(dp), "another dataplane") ? 1 : 2);
		}
		if (k == 0) {
			assert_int_equal(waitpid(kid[0], &st, WUNTRACED), kid[0]);
			assert_true(WIFSTOPPED(st)); /* found it free, has not said so yet */
		}
	}
	close(done[0]);
	usleep(300000); /* the second is in its attach meanwhile (or through it) */
	assert_int_equal(kill(kid[0], SIGCONT), 0);
	/* one of them is refused (after its wait for a holder to go, 10 s), one holds; two that both
	 * attached would both wait on the pipe: look for 15 s, then they are stopped and it fails */
	pid_t p = 0;
	for (int i = 0; i < 150 && p == 0; i++) {
		p = waitpid(-1, &st, WNOHANG);
		if (p == 0)
			usleep(100000);
	}
	if (p == 0) {
		kill(kid[0], SIGKILL);
		kill(kid[1], SIGKILL);
		waitpid(kid[0], NULL, 0);
		waitpid(kid[1], NULL, 0);
		fail_msg("both dataplanes attached");
	}
	assert_true(p == kid[0] || p == kid[1]);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	pid_t winner = p == kid[0] ? kid[1] : kid[0];
	assert_int_equal(kill(winner, 0), 0);
	assert_int_equal((pid_t)sadb_dp_stats(db)->hold_pid, winner);
	assert_int_equal(sadb_dp_applied(db), 0); /* held by a live dataplane that released nothing */
	close(done[1]);
	assert_int_equal(waitpid(winner, &st, 0), winner);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sadb_close(db);
}

/* Two per-worker objects of one outbound SA: disjoint IPv4 ID streams, each cycling in its part. */
static void test_ip_id_parts(void **state)
{
	(void)state;
	struct sadb_sa s = rec(0x1000, SADB_DIR_OUT, 1);
	struct sadb_runtime *rt = rt_new();
	struct esp_sa *e[2] = { NULL, NULL };
	static uint8_t seen[2][65536];
	struct frame f;

	s.instance = 1;
	for (int w = 0; w < 2; w++) {
		struct esp_sa_opts o = { .backend = ESP_BACKEND_OPENSSL, .seq_block = 1,
					 .id_part = (uint16_t)w, .id_parts = 2 };
		assert_int_equal(esp_sa_create(&s, rt, &o, &e[w]), 0);
	}
	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < 32768 + 100; i++) {
		for (int w = 0; w < 2; w++) {
			assert_int_equal(send1(e[w], &f, i), SADB_DROP_NONE);
			const uint8_t *ip = frame_data(&f);
			uint16_t id = (uint16_t)(ip[4] << 8 | ip[5]);
			assert_int_equal(ip[9], IPPROTO_ESP);
			assert_int_equal(seen[!w][id], 0); /* never an ID of the other worker */
			if (i < 32768)
				assert_int_equal(seen[w][id], 0); /* and none twice within a period */
			seen[w][id] = 1;
		}
	}
	esp_sa_destroy(e[0]);
	esp_sa_destroy(e[1]);
	free(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_outbound),
		cmocka_unit_test(test_stale_inbound),
		cmocka_unit_test(test_stale_race),
		cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_attach_race),
		cmocka_unit_test(test_ip_id_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
