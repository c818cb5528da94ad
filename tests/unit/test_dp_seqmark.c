/* tests/unit/test_dp_seqmark.c: the on-disk leases of outbound sequence numbers (nonces) of manually
 * keyed SAs (dataplane/xipsecd/dp_seqmark.c), one at a time and in batches: every lease starts above
 * the mark on disk and above what the SA had reserved, the mark on disk covers the lease before the
 * runtime area lets the engine use it, two SAs of one key in one batch get disjoint leases, a bad mark
 * file fails its own SA only (with a message naming the file), and without a state directory
 * nothing is leased. A missing mark is not mark 0: a key is started without one only when the
 * operator said it is new (SADB_SAF_SEQ_NEW); a lost mark refuses the SA, alone and in a batch. Every
 * outbound manual counter-mode SA needs a lease, whether its writer set SADB_SAF_SEQ_PERSIST or not.
 * Inbound, a manual key's window ceiling: on disk before the runtime area has it, a step above the
 * window's top, and after a reboot (a fresh runtime area) the window starts at the mark with every
 * number under it taken; per SPI; an SA whose objects are gone brings its mark down to its top; a
 * lost mark refuses the SA. In a private temporary directory. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_seqmark.h"

#define NSA 12u

static char dir[64];
static int dirfd_ = -1;
static struct sadb_sa sa[NSA];
static struct sadb_runtime rt[NSA];

static void mk_sa(struct sadb_sa *s, uint8_t keybyte)
{
	memset(s, 0, sizeof(*s));
	s->dir = SADB_DIR_OUT;
	s->proto = SADB_PROTO_ESP;
	s->flags = SADB_SAF_SEQ_PERSIST | SADB_SAF_SEQ_NEW; /* as ipsecctl load --new-keys */
	s->enc_alg = SADB_ENC_AES_GCM16;
	s->enc_key_len = 16;
	memset(s->enc_key, keybyte, 16);
	s->salt_len = 4;
	memset(s->salt, 0x5a, 4);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/var/tmp/xipsec-seqmark-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	setenv(DP_ENV_SEQ_LEASE, "1000", 1);
	setenv(DP_ENV_WINDOW_LEASE, "100", 1);
	for (unsigned i = 0; i < NSA; i++)
		mk_sa(&sa[i], (uint8_t)(i + 1));
	memset(rt, 0, sizeof(rt));
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			unlinkat(dirfd_, e->d_name, 0);
	if (d)
		closedir(d);
	close(dirfd_);
	rmdir(dir);
	return 0;
}

/* Files in the directory: marks, and leftovers (temporary files) separately. */
static void count_files(unsigned *marks, unsigned *tmp)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	*marks = *tmp = 0;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		assert_int_equal(fstatat(dirfd_, e->d_name, &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		if (e->d_name[0] == '.')
			(*tmp)++;
		else
			(*marks)++;
	}
	if (d)
		closedir(d);
}

static void batch(struct sadb_sa *s, struct sadb_runtime *r, unsigned n, struct dp_seqmark_req *rq)
{
	for (unsigned i = 0; i < n; i++) {
		rq[i].sa = &s[i];
		rq[i].rt = &r[i];
		rq[i].want = 0;
	}
	dp_seqmark_lease_batch(dirfd_, rq, n);
}

/* A batch of distinct keys: each lease is (reserved, reserved + L], one file each; a second batch
 * (a restart: the runtime areas start again from 0, as after a reboot) leases above the marks. */
static void test_batch_restart(void **state)
{
	(void)state;
	struct dp_seqmark_req rq[NSA];
	unsigned marks, tmp;

	rt[3].seq_reserved = 5000; /* an SA that has already sent above any mark */
	batch(sa, rt, NSA, rq);
	for (unsigned i = 0; i < NSA; i++) {
		uint64_t base = i == 3 ? 5000 : 0;
		assert_int_equal(rq[i].err, 0);
		assert_int_equal(rt[i].seq_reserved, base);
		assert_int_equal(rt[i].seq_lease, base + 1000);
	}
	count_files(&marks, &tmp);
	assert_int_equal(marks, NSA);
	assert_int_equal(tmp, 0);

	memset(rt, 0, sizeof(rt));
	batch(sa, rt, NSA, rq);
	for (unsigned i = 0; i < NSA; i++) {
		uint64_t base = i == 3 ? 6000 : 1000;
		assert_int_equal(rq[i].err, 0);
		assert_int_equal(rt[i].seq_reserved, base);
		assert_int_equal(rt[i].seq_lease, base + 1000);
	}
	/* one at a time, the same rule */
	char msg[256];
	memset(&rt[0], 0, sizeof(rt[0]));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].seq_reserved, 2000);
	assert_int_equal(rt[0].seq_lease, 3000);
	count_files(&marks, &tmp);
	assert_int_equal(marks, NSA);
	assert_int_equal(tmp, 0);
}

/* Three SAs of one key (ipsecctl refuses that; the leases must not rely on it) and two others in one
 * batch: the three leases are disjoint and the mark ends above all of them. */
static void test_same_key(void **state)
{
	(void)state;
	struct sadb_sa s[5];
	struct sadb_runtime r[5];
	struct dp_seqmark_req rq[5];

	memset(r, 0, sizeof(r));
	mk_sa(&s[0], 0x77);
	mk_sa(&s[1], 0x78);
	mk_sa(&s[2], 0x77);
	mk_sa(&s[3], 0x79);
	mk_sa(&s[4], 0x77);
	batch(s, r, 5, rq);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(rq[i].err, 0);
	unsigned same[3] = { 0, 2, 4 };
	for (unsigned a = 0; a < 3; a++)
		for (unsigned b = a + 1; b < 3; b++) {
			const struct sadb_runtime *x = &r[same[a]], *y = &r[same[b]];
			/* (reserved, lease] ranges do not overlap */
			assert_true(x->seq_lease <= y->seq_reserved || y->seq_lease <= x->seq_reserved);
		}
	/* and a later SA of that key starts above all three */
	struct sadb_runtime later = { 0 };
	char msg[256];
	assert_int_equal(dp_seqmark_lease(dirfd_, &s[0], &later, 0, msg, sizeof(msg)), 0);
	for (unsigned a = 0; a < 3; a++)
		assert_true(later.seq_reserved >= r[same[a]].seq_lease);
	assert_int_equal(r[1].seq_lease, 1000);
	assert_int_equal(r[3].seq_lease, 1000);
}

/* A mark file that does not parse fails its own SA (nothing leased, the message names the file)
 * and no other. */
static void test_bad_file(void **state)
{
	(void)state;
	struct sadb_sa s[3];
	struct sadb_runtime r[3];
	struct dp_seqmark_req rq[3];

	memset(r, 0, sizeof(r));
	for (unsigned i = 0; i < 3; i++)
		mk_sa(&s[i], (uint8_t)(0x90 + i));
	batch(s, r, 3, rq);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(rq[i].err, 0);
	/* corrupt the second one's file */
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, rq[1].name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("not a mark\n", f);
	fclose(f);
	memset(r, 0, sizeof(r));
	batch(s, r, 3, rq);
	assert_int_equal(rq[0].err, 0);
	assert_int_equal(rq[2].err, 0);
	assert_int_equal(r[0].seq_lease, 2000);
	assert_int_equal(r[2].seq_lease, 2000);
	assert_int_not_equal(rq[1].err, 0);
	assert_int_equal(r[1].seq_lease, 0);
	assert_int_equal(r[1].seq_reserved, 0);
	assert_non_null(strstr(rq[1].msg, rq[1].name));
	assert_non_null(strstr(rq[1].msg, "does not hold a sequence mark"));
}

/* No state directory: nothing is leased, each request says why. */
static void test_no_dir(void **state)
{
	(void)state;
	struct sadb_sa s[2];
	struct sadb_runtime r[2];
	struct dp_seqmark_req rq[2];

	memset(r, 0, sizeof(r));
	mk_sa(&s[0], 0xa1);
	mk_sa(&s[1], 0xa2);
	for (unsigned i = 0; i < 2; i++) {
		rq[i].sa = &s[i];
		rq[i].rt = &r[i];
	}
	dp_seqmark_lease_batch(-1, rq, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_not_equal(rq[i].err, 0);
		assert_int_equal(r[i].seq_lease, 0);
		assert_non_null(strstr(rq[i].msg, "no usable state directory"));
	}
}

/* The mark of a key removed (a wiped state directory, a reinstall): the key is refused, alone and in
 * a batch, with a message naming the risk and the way out, until the operator says it is new. */
static void test_lost_mark(void **state)
{
	(void)state;
	struct dp_seqmark_req rq[2];
	char msg[256], path[256];

	batch(sa, rt, 2, rq);
	assert_int_equal(rq[0].err, 0);
	assert_int_equal(rt[0].seq_lease, 1000);
	snprintf(path, sizeof(path), "%s/%s", dir, rq[0].name);
	assert_int_equal(unlink(path), 0);
	sa[0].flags &= ~SADB_SAF_SEQ_NEW; /* loaded again without --new-keys */
	sa[1].flags &= ~SADB_SAF_SEQ_NEW;
	memset(rt, 0, sizeof(rt));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), -ENOENT);
	assert_int_equal(rt[0].seq_lease, 0);
	assert_non_null(strstr(msg, "nonces"));
	assert_non_null(strstr(msg, "--new-keys"));
	batch(sa, rt, 2, rq);
	assert_int_equal(rq[0].err, -ENOENT);
	assert_int_equal(rt[0].seq_lease, 0);
	assert_non_null(strstr(rq[0].msg, "--new-keys"));
	assert_int_equal(rq[1].err, 0); /* its mark is still there */
	assert_int_equal(rt[1].seq_lease, 2000);
	/* the operator says the key is new: started again */
	sa[0].flags |= SADB_SAF_SEQ_NEW;
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].seq_lease, 1000);
}

/* The mark in dir/name, or 0. */
static uint64_t mark_of(const char *name)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f && fscanf(f, "xipsec-seqmark 1 %llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

/* Inbound: the ceiling on disk first, a step (100 here) above the window's top, extended when half
 * of it is left; a reboot (runtime areas from 0, loaded without --new-keys) starts the window at
 * the mark with every number under it taken, and a lost mark refuses the SA. */
static void test_inbound(void **state)
{
	(void)state;
	struct dp_seqmark_req rq[2];
	char msg[256];
	unsigned marks, tmp;

	for (unsigned i = 0; i < 2; i++) {
		sa[i].dir = SADB_DIR_IN;
		sa[i].flags = SADB_SAF_SEQ_NEW;
		sa[i].replay_window = 64;
		sa[i].spi = 0x100 + i;
		sa[i].auth_alg = SADB_AUTH_HMAC_SHA256_128;
		sa[i].auth_key_len = 32;
		memset(sa[i].auth_key, 0x77, 32);
		memset(sa[i].enc_key, 0x11, 16); /* one key, two SPIs: a window each */
	}
	assert_true(dp_seqmark_needed(&sa[0]));
	batch(sa, rt, 2, rq);
	assert_int_equal(rq[0].err, 0);
	assert_int_equal(rq[1].err, 0);
	assert_string_not_equal(rq[0].name, rq[1].name);
	assert_non_null(strstr(rq[0].name, ".win"));
	assert_int_equal(rt[0].seq_lease, 100);
	assert_int_equal(mark_of(rq[0].name), 100);
	assert_int_equal(rt[0].replay_top, 0); /* a new key: nothing to refuse */
	assert_false(dp_seqmark_due(&sa[0], &rt[0], 0));
	rt[0].replay_top = 60;               /* traffic: 40 left of 100 */
	assert_true(dp_seqmark_due(&sa[0], &rt[0], 0));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].seq_lease, 160);
	assert_int_equal(mark_of(rq[0].name), 160);
	assert_int_equal(rt[0].replay_top, 60); /* a live window is never moved */
	rt[0].replay_top = 130;              /* accepted up to 130, then the box reboots */

	memset(rt, 0, sizeof(rt));
	sa[0].flags &= ~SADB_SAF_SEQ_NEW;
	sa[1].flags &= ~SADB_SAF_SEQ_NEW;
	batch(sa, rt, 2, rq);
	assert_int_equal(rq[0].err, 0);
	assert_int_equal(rt[0].replay_top, 160); /* everything a lost window may have taken */
	for (unsigned w = 0; w < SADB_REPLAY_MAX / 64; w++)
		assert_true(rt[0].replay_bitmap[w] == ~0ULL);
	assert_int_equal(rt[0].seq_lease, 260);
	assert_int_equal(mark_of(rq[0].name), 260);
	assert_int_equal(rt[1].replay_top, 100);
	/* the same runtime area again (xipsecd restarted, the SADB kept): its window stands */
	rt[0].replay_top = 170;
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].replay_top, 170);
	assert_int_equal(rt[0].seq_lease, 270);
	/* the peer jumped ahead (its own lease after a reload): an authenticated 100000 refused */
	assert_true(dp_seqmark_due(&sa[0], &rt[0], 100000));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 100000, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].seq_lease, 100100);
	assert_int_equal(mark_of(rq[0].name), 100100);
	assert_false(dp_seqmark_due(&sa[0], &rt[0], 100000));
	rt[0].seq_lease = 270; /* as before the jump, for what follows */
	snprintf(msg, sizeof(msg), "%s/%s", dir, rq[0].name);
	{
		FILE *f = fopen(msg, "w");
		assert_non_null(f);
		fprintf(f, "xipsec-seqmark 1 270\n");
		fclose(f);
	}
	/* the SA's objects are gone (deleted, or xipsecd stopping): the mark comes down to its top,
	 * so the next SA of the key starts exactly there; one whose mark another raised keeps it */
	rt[1].seq_lease = 150; /* not the mark (200) any more */
	rq[0].sa = &sa[0];
	rq[0].rt = &rt[0];
	rq[1].sa = &sa[1];
	rq[1].rt = &rt[1];
	dp_seqmark_release_batch(dirfd_, rq, 2);
	assert_int_equal(mark_of(rq[0].name), 170);
	assert_int_equal(rt[0].seq_lease, 170);
	assert_int_equal(mark_of(rq[1].name), 200);
	assert_int_equal(rt[1].seq_lease, 150);
	memset(&rt[0], 0, sizeof(rt[0]));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], 0, msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].replay_top, 170);
	assert_int_equal(rt[0].seq_lease, 270);
	count_files(&marks, &tmp);
	assert_int_equal(marks, 2);
	assert_int_equal(tmp, 0);

	/* a lost mark, no --new-keys: refused, the window gets no ceiling */
	snprintf(msg, sizeof(msg), "%s/%s", dir, rq[1].name);
	assert_int_equal(unlink(msg), 0);
	memset(&rt[1], 0, sizeof(rt[1]));
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[1], &rt[1], 0, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "replay mark"));
	assert_non_null(strstr(msg, "--new-keys"));
	assert_int_equal(rt[1].seq_lease, 0);
}

/* Which SAs are leased: the SA decides, not the writer's flag. */
static void test_needed(void **state)
{
	static const struct {
		uint8_t dir;
		uint16_t enc;
		uint32_t flags, ike_id, window;
		bool needed;
	} rows[] = {
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, SADB_SAF_SEQ_PERSIST, 0, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, 0, 0, 0, true },          /* another writer's */
		{ SADB_DIR_OUT, SADB_ENC_CHACHA20_POLY1305, 0, 0, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_CTR, 0, 0, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, 0, 7, 0, false },         /* IKE's: keys die with it */
		{ SADB_DIR_IN, SADB_ENC_AES_GCM16, 0, 0, 0, false },          /* no window to keep */
		{ SADB_DIR_IN, SADB_ENC_AES_CBC, 0, 0, 64, true },            /* a window of a manual key */
		{ SADB_DIR_IN, SADB_ENC_AES_GCM16, SADB_SAF_NO_REPLAY, 0, 64, false },
		{ SADB_DIR_IN, SADB_ENC_AES_GCM16, 0, 7, 64, false },         /* IKE's */
		{ SADB_DIR_OUT, SADB_ENC_AES_CBC, 0, 0, 0, false },           /* random IVs */
	};
	struct sadb_sa s;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&s, 0, sizeof(s));
		s.dir = rows[i].dir;
		s.enc_alg = rows[i].enc;
		s.flags = rows[i].flags;
		s.ike_id = rows[i].ike_id;
		s.replay_window = rows[i].window;
		if (dp_seqmark_needed(&s) != rows[i].needed)
			fail_msg("row %zu: needed %d", i, !rows[i].needed);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_batch_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inbound, setup, teardown),
		cmocka_unit_test(test_needed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
