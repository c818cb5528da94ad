/* tests/unit/test_dp_seqmark.c: the on-disk leases of outbound sequence numbers (nonces) of manually
 * keyed SAs (dataplane/xipsecd/dp_seqmark.c), one at a time and in batches: every lease starts above
 * the mark on disk and above what the SA had reserved, the mark on disk covers the lease before the
 * runtime area lets the engine use it, two SAs of one key in one batch get disjoint leases, a bad mark
 * file fails its own SA only (with a message naming the file), and without a state directory
 * nothing is leased. A missing mark is not mark 0: a key is started without one only when the
 * operator said it is new (SADB_SAF_SEQ_NEW); a lost mark refuses the SA, alone and in a batch. Every
 * outbound manual counter-mode SA needs a lease, whether its writer set SADB_SAF_SEQ_PERSIST or not.
 * In a private temporary directory. */
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
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], msg, sizeof(msg)), 0);
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
	assert_int_equal(dp_seqmark_lease(dirfd_, &s[0], &later, msg, sizeof(msg)), 0);
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
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], msg, sizeof(msg)), -ENOENT);
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
	assert_int_equal(dp_seqmark_lease(dirfd_, &sa[0], &rt[0], msg, sizeof(msg)), 0);
	assert_int_equal(rt[0].seq_lease, 1000);
}

/* Which SAs are leased: the SA decides, not the writer's flag. */
static void test_needed(void **state)
{
	static const struct {
		uint8_t dir;
		uint16_t enc;
		uint32_t flags, ike_id;
		bool needed;
	} rows[] = {
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, SADB_SAF_SEQ_PERSIST, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, 0, 0, true },             /* another writer's */
		{ SADB_DIR_OUT, SADB_ENC_CHACHA20_POLY1305, 0, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_CTR, 0, 0, true },
		{ SADB_DIR_OUT, SADB_ENC_AES_GCM16, 0, 7, false },            /* IKE's: keys die with it */
		{ SADB_DIR_IN, SADB_ENC_AES_GCM16, 0, 0, false },
		{ SADB_DIR_OUT, SADB_ENC_AES_CBC, 0, 0, false },              /* random IVs */
	};
	struct sadb_sa s;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&s, 0, sizeof(s));
		s.dir = rows[i].dir;
		s.enc_alg = rows[i].enc;
		s.flags = rows[i].flags;
		s.ike_id = rows[i].ike_id;
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
		cmocka_unit_test(test_needed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
