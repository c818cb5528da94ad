/* tests/unit/test_dp_cluster.c: the cluster's replicated sequence leases (dataplane/xipsecd/
 * dp_cluster_lease.c) and its sync channel's messages (dp_cluster_msg.c). Leases: with the peer in
 * contact every number used is one the standby recorded; a lost acknowledgement, a takeover, both
 * nodes active after a cut (from an active and a standby, or from two standbys) and a heal, a
 * segment moving between two active nodes (active/active), each checked against a naive record of every number either node used, over thousands of random
 * histories; the solo budget's expiries. Messages: a round trip; forged (any byte of the header,
 * the ciphertext or the tag flipped, another key), replayed, reflected, truncated, stale and
 * malformed messages refused with their reason; the cluster key file's checks. */
#include "config.h"

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

#include "dataplane/xipsecd/dp_cluster.h"

#define L 1024u        /* lease */
#define B 8192u        /* budget */
#define NOW 1700000000000000000ull

/* ---- leases: two nodes, modelled as dp_cluster.c drives the arithmetic ---- */

struct node {
	struct dpc_lease l;
	uint64_t reserved, limit, grant_base;
	bool active, alone;
	unsigned rank;
};

/* Every number either node used, as a plain bitmap: the naive reference. */
#define SPACE (1u << 22)
static uint8_t *used;

static void use(struct node *n, unsigned count)
{
	for (unsigned i = 0; i < count && n->reserved < n->limit; i++) {
		uint64_t s = ++n->reserved;

		assert_true(s < SPACE);
		if (used[s])
			fail_msg("number %llu used twice (node rank %u)", (unsigned long long)s, n->rank);
		used[s] = 1;
	}
}

static void take_over(struct node *n);

/* The active's tick: solo cap when alone (an SA never leased starting as a takeover does), the
 * limit raised after the reservation. */
static void tick(struct node *n)
{
	if (!n->active)
		return;
	if (n->alone) {
		uint64_t cap;

		if (!n->l.acked && !n->l.granted)
			take_over(n);
		cap = dpc_lease_solo_cap(&n->l, B);

		if (cap > n->l.granted)
			n->l.granted = cap;
	}
	if (n->limit < n->l.granted) {
		if (n->reserved < n->grant_base)
			n->reserved = n->grant_base;
		n->limit = n->l.granted;
	}
}

/* The standby's answer to a lease ask (dp_cluster.c on_entry): the end acknowledged or 0. */
static uint64_t answer(struct node *sb, uint64_t base, uint64_t end)
{
	if (!sb->active && base >= sb->l.recorded && base >= sb->l.granted)
		return dpc_lease_record(&sb->l, end);
	dpc_lease_record(&sb->l, end);
	return 0;
}

static void ask_and_ack(struct node *a, struct node *b, bool lose_ack)
{
	uint64_t ack;

	if (!dpc_lease_want(&a->l, a->reserved, L))
		return;
	ack = answer(b, a->l.asked_base, a->l.asked);
	if (lose_ack)
		return;
	if (ack && ack >= a->l.asked) {
		a->grant_base = a->l.asked_base;
		dpc_lease_ack(&a->l, ack);
	} else {
		dpc_lease_record(&a->l, b->l.recorded);
		a->l.asked = 0;
	}
}

static void take_over(struct node *n)
{
	uint64_t start;

	dpc_lease_record(&n->l, n->limit);
	start = dpc_lease_takeover(&n->l, n->reserved, B, n->rank);
	if (n->reserved < start)
		n->reserved = start;
	n->l.acked = n->l.granted = n->grant_base = start;
	n->l.asked = 0;
	n->l.solo = false;
	n->active = true;
}

static void make_standby(struct node *n)
{
	dpc_lease_record(&n->l, n->limit > n->reserved ? n->limit : n->reserved);
	n->limit = n->reserved;
	n->active = false;
}

static int setup(void **state)
{
	(void)state;
	used = calloc(SPACE, 1);
	return used ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(used);
	return 0;
}

static void nodes(struct node *a, struct node *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->rank = 0;
	b->rank = 1;
	memset(used, 0, SPACE);
}

/* In contact, every number the active uses is at most what the standby recorded. */
static void test_contact(void **state)
{
	struct node a, b;

	(void)state;
	nodes(&a, &b);
	take_over(&a);
	for (int i = 0; i < 200; i++) {
		ask_and_ack(&a, &b, false);
		tick(&a);
		use(&a, 700);
		assert_true(a.reserved <= b.l.recorded);
	}
	assert_true(a.reserved > 100000);
}

/* Rows: what happens between the last good exchange and the takeover. */
static void test_failover_rows(void **state)
{
	static const struct {
		const char *what;
		bool lose_ack;     /* the standby recorded the last lease, the active never heard */
		bool a_alone;      /* the active carries on alone (the link cut, A alive) */
		bool b_over;       /* B takes over */
		bool b_alone;
	} rows[] = {
		{ "active dies, standby takes over", false, false, true, true },
		{ "acknowledgement lost, then the active dies", true, false, true, true },
		{ "link cut: both active, both alone", false, true, true, true },
		{ "link cut after a lost acknowledgement", true, true, true, true },
		{ "link cut, the standby stays standby", false, true, false, false },
	};

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct node a, b;

		nodes(&a, &b);
		take_over(&a);
		for (int i = 0; i < 30; i++) {
			ask_and_ack(&a, &b, false);
			tick(&a);
			use(&a, 600);
		}
		ask_and_ack(&a, &b, rows[r].lose_ack);
		tick(&a);
		a.alone = rows[r].a_alone;
		if (rows[r].b_over) {
			take_over(&b);
			b.alone = rows[r].b_alone;
		}
		for (int i = 0; i < 40; i++) {
			tick(&a);
			tick(&b);
			use(&a, 500);  /* fail_msg on any number used twice */
			use(&b, 500);
		}
		/* alone, each stops at its budget */
		if (rows[r].a_alone)
			assert_true(a.reserved <= a.l.solo_base + B);
		if (rows[r].b_over)
			assert_true(b.reserved <= b.l.solo_base + B);
		print_message("row %zu (%s): A at %llu, B at %llu\n", r, rows[r].what,
			      (unsigned long long)a.reserved, (unsigned long long)b.reserved);
	}
}

/* Both standby with different records, the link cut, both promoted: their blocks differ. */
static void test_two_standbys_promoted(void **state)
{
	(void)state;
	srandom(7);
	for (int it = 0; it < 2000; it++) {
		struct node a, b;

		nodes(&a, &b);
		a.l.recorded = (uint64_t)(random() % (8 * B));
		b.l.recorded = (uint64_t)(random() % (8 * B));
		a.reserved = a.limit = (uint64_t)(random() % (a.l.recorded + 1));
		b.reserved = b.limit = (uint64_t)(random() % (b.l.recorded + 1));
		take_over(&a);
		take_over(&b);
		a.alone = b.alone = true;
		tick(&a);
		tick(&b);
		/* the solo ranges (start, start + B] */
		if (!(a.limit <= b.grant_base || b.limit <= a.grant_base))
			fail_msg("iteration %d: A (%llu, %llu] and B (%llu, %llu] meet", it,
				 (unsigned long long)a.grant_base, (unsigned long long)a.limit,
				 (unsigned long long)b.grant_base, (unsigned long long)b.limit);
	}
}

/* An SA installed on both nodes while both are active (in contact or not): neither has a lease
 * for it, both start it alone, never on the same numbers. */
static void test_new_sa_both_active(void **state)
{
	struct node a, b;

	(void)state;
	nodes(&a, &b);
	a.active = b.active = true;
	a.alone = b.alone = true;
	for (int i = 0; i < 20; i++) {
		tick(&a);
		tick(&b);
		use(&a, 300);
		use(&b, 300);
	}
	assert_true(a.reserved > 0 && b.reserved > 0);
}

/* Active/active: both nodes active, in contact, each SA used only by the owner of its peer's
 * segment, and the segment moving between them at random (the plugin's heartbeat, autobalance or
 * FIFO) with no step of the dataplane's own. Half the histories start the SA on both active nodes,
 * half under one active node leasing from a standby that is then made active (it caught up). */
static void test_segment_moves(void **state)
{
	(void)state;
	srandom(7);
	for (int it = 0; it < 200; it++) {
		struct node n[2];
		int owner = (int)(random() % 2);

		nodes(&n[0], &n[1]);
		if (it % 2) {
			take_over(&n[0]);
			for (int step = 0; step < 5; step++) {
				ask_and_ack(&n[0], &n[1], false);
				tick(&n[0]);
				use(&n[0], (unsigned)(random() % 900));
			}
			take_over(&n[1]);
		} else {
			n[0].active = n[1].active = true;
		}
		for (int step = 0; step < 80; step++) {
			if (random() % 4 == 0)
				owner = !owner;   /* the segment moves */
			for (int k = 0; k < 2; k++) {
				n[k].alone = true; /* an active peer acknowledges nothing */
				if (random() % 3 == 0)
					ask_and_ack(&n[k], &n[!k], false);
				tick(&n[k]);
			}
			use(&n[owner], (unsigned)(random() % 900));
		}
	}
}

/* Random histories against the naive record: asks, lost acks, cuts, takeovers, heals. */
static void test_random_histories(void **state)
{
	(void)state;
	srandom(42);
	for (int it = 0; it < 300; it++) {
		struct node n[2];
		bool cut = false;

		nodes(&n[0], &n[1]);
		take_over(&n[0]);
		for (int step = 0; step < 60; step++) {
			int ev = (int)(random() % 10), who = (int)(random() % 2);
			struct node *x = &n[who], *y = &n[!who];

			if (ev < 4 && !cut && x->active)
				ask_and_ack(x, y, random() % 4 == 0);
			else if (ev == 4)
				cut = !cut;       /* cut, or heal */
			else if (ev == 5 && !x->active && (cut || !y->active))
				take_over(x);     /* keepalived promotes: only when alone or the peer is standby */
			else if (ev == 6 && x->active && y->active && !cut)
				make_standby(x);  /* after a heal, one steps down */
			if (!cut && ev == 7) {
				/* the heal's merge, both ways */
				dpc_lease_record(&x->l, y->limit > y->reserved ? y->limit : y->reserved);
				dpc_lease_record(&y->l, x->limit > x->reserved ? x->limit : x->reserved);
			}
			for (int k = 0; k < 2; k++) {
				n[k].alone = cut || n[!k].active;
				tick(&n[k]);
				if (n[k].active)
					use(&n[k], (unsigned)(random() % 900));
			}
		}
	}
}

static void test_solo_expiry(void **state)
{
	struct dpc_lease l = { .acked = 5000 };

	(void)state;
	assert_int_equal(dpc_lease_solo_cap(&l, B), 5000 + B);
	assert_int_equal(dpc_lease_solo_expiry(&l, 5000 + B / 2 - 1, B), 0);
	assert_int_equal(dpc_lease_solo_expiry(&l, 5000 + B / 2, B), 1);
	assert_int_equal(dpc_lease_solo_expiry(&l, 5000 + B, B), 3);
	/* the cap is fixed until an acknowledgement, however long alone */
	l.acked = 9000;
	assert_int_equal(dpc_lease_solo_cap(&l, B), 5000 + B);
	dpc_lease_ack(&l, 20000);
	assert_false(l.solo);
	assert_int_equal(dpc_lease_solo_expiry(&l, 100000, B), 0);
	/* a takeover's block: aligned, of the rank's parity, at least a budget above what it knew */
	struct dpc_lease t = { .recorded = 3 * B + 5 };
	assert_int_equal(dpc_lease_takeover(&t, 0, B, 0), 6ull * B);
	assert_int_equal(dpc_lease_takeover(&t, 0, B, 1), 5ull * B);
	assert_int_equal(dpc_lease_takeover(&t, 7 * B, B, 1), 9ull * B);
}

/* ---- messages ---- */

static const uint8_t key1[DPC_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
static const uint8_t key2[DPC_KEY_LEN] = { 9 };

static size_t sample(struct dpc_chan *tx, uint8_t *buf, uint64_t now, uint8_t type, unsigned n)
{
	struct dpc_msg m = { .type = type, .role = 1, .eligible = 1, .n = (uint8_t)n };

	for (unsigned i = 0; i < n; i++) {
		m.e[i].key.spi = 0x1000 + i;
		m.e[i].key.proto = 50;
		m.e[i].key.dir = 2;
		m.e[i].key.family = 2;
		m.e[i].key.dst[0] = 10;
		m.e[i].key.fp[7] = (uint8_t)i;
		m.e[i].base = 1000 * i;
		m.e[i].end = 1000 * i + 999;
	}
	return dpc_seal(tx, &m, buf, now);
}

static void test_roundtrip(void **state)
{
	struct dpc_chan a, b;
	struct dpc_msg m;
	uint8_t buf[DPC_MSG_MAX];
	enum dpc_drop why;
	size_t len;

	(void)state;
	assert_int_equal(dpc_chan_init(&a, key1, 0, NOW), 0);
	assert_int_equal(dpc_chan_init(&b, key1, 1, NOW), 0);
	len = sample(&a, buf, NOW, DPC_LEASE, DPC_MAX_ENTRIES);
	assert_true(len <= 1400);
	assert_int_equal(dpc_open(&b, buf, len, NOW, &m, &why), 0);
	assert_int_equal(m.type, DPC_LEASE);
	assert_int_equal(m.n, DPC_MAX_ENTRIES);
	assert_int_equal(m.e[5].key.spi, 0x1005);
	assert_int_equal(m.e[5].base, 5000);
	assert_int_equal(m.e[5].end, 5999);
	assert_int_equal(m.e[5].key.fp[7], 5);
	/* the other way, and a message without entries */
	len = sample(&b, buf, NOW + 1, DPC_HELLO, 0);
	assert_int_equal(dpc_open(&a, buf, len, NOW + 1, &m, &why), 0);
	assert_int_equal(m.type, DPC_HELLO);
	assert_int_equal(m.n, 0);
}

static void test_refused(void **state)
{
	struct dpc_chan a, b, other;
	struct dpc_msg m;
	uint8_t buf[DPC_MSG_MAX], copy[DPC_MSG_MAX];
	enum dpc_drop why;
	size_t len;

	(void)state;
	assert_int_equal(dpc_chan_init(&a, key1, 0, NOW), 0);
	assert_int_equal(dpc_chan_init(&b, key1, 1, NOW), 0);
	assert_int_equal(dpc_chan_init(&other, key2, 1, NOW), 0);
	len = sample(&a, buf, NOW, DPC_WINDOW, 3);
	/* forged: every single byte flipped, header (associated data), ciphertext, tag */
	for (size_t i = 0; i < len; i++) {
		memcpy(copy, buf, len);
		copy[i] ^= 0x20;
		if (dpc_open(&b, copy, len, NOW, &m, &why) == 0)
			fail_msg("byte %zu flipped: accepted", i);
		assert_true(why == DPC_DROP_AUTH || why == DPC_DROP_SHORT || why == DPC_DROP_REFLECTED);
	}
	/* another key */
	assert_int_equal(dpc_open(&other, buf, len, NOW, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_AUTH);
	/* truncated: every shorter length */
	for (size_t l = 0; l < len; l++) {
		assert_int_equal(dpc_open(&b, buf, l, NOW, &m, &why), -1);
		assert_true(why == DPC_DROP_SHORT || why == DPC_DROP_AUTH);
	}
	/* reflected: our own message sent back to us */
	assert_int_equal(dpc_open(&a, buf, len, NOW, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_REFLECTED);
	/* stale: from 31 s ago or ahead, nothing accepted before */
	assert_int_equal(dpc_open(&b, buf, len, NOW + DPC_SKEW_NS + 1, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_STALE);
	assert_int_equal(dpc_open(&b, buf, len, NOW - DPC_SKEW_NS - 1, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_STALE);
	/* accepted once, then replayed */
	assert_int_equal(dpc_open(&b, buf, len, NOW, &m, &why), 0);
	assert_int_equal(dpc_open(&b, buf, len, NOW, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_REPLAY);
	/* an older message arriving after a newer one is a replay too */
	{
		uint8_t old[DPC_MSG_MAX], nw[DPC_MSG_MAX];
		size_t ol = sample(&a, old, NOW + 10, DPC_LEASE, 1), nl = sample(&a, nw, NOW + 20, DPC_LEASE, 1);

		assert_int_equal(dpc_open(&b, nw, nl, NOW + 20, &m, &why), 0);
		assert_int_equal(dpc_open(&b, old, ol, NOW + 20, &m, &why), -1);
		assert_int_equal(why, DPC_DROP_REPLAY);
	}
	/* authentic but malformed: no such type */
	len = sample(&a, buf, NOW + 30, DPC_TYPE_MAX, 1);
	assert_int_equal(dpc_open(&b, buf, len, NOW + 30, &m, &why), -1);
	assert_int_equal(why, DPC_DROP_BAD);
}

/* Two starts of one node at the same clock reading never share a nonce (the salt). */
static void test_restart_nonce(void **state)
{
	struct dpc_chan a1, a2;
	uint8_t b1[DPC_MSG_MAX], b2[DPC_MSG_MAX];

	(void)state;
	assert_int_equal(dpc_chan_init(&a1, key1, 0, NOW), 0);
	assert_int_equal(dpc_chan_init(&a2, key1, 0, NOW), 0);
	sample(&a1, b1, NOW, DPC_HELLO, 0);
	sample(&a2, b2, NOW, DPC_HELLO, 0);
	assert_memory_equal(b1 + 4, b2 + 4, 9);         /* same counter and direction */
	assert_memory_not_equal(b1 + 13, b2 + 13, 15);  /* different salt */
}

/* test_key_file's directory, removed by its teardown whether the test passed or failed */
static char key_dir[] = "/tmp/test_dp_cluster.XXXXXX", key_path[96], key_lnk[96];

static int key_file_teardown(void **state)
{
	(void)state;
	unlink(key_path);
	unlink(key_lnk);
	rmdir(key_dir);
	return 0;
}

static void test_key_file(void **state)
{
	static const struct {
		const char *content;
		mode_t mode;
		bool link;
		int err;
	} rows[] = {
		{ "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF\n", 0600, false, 0 },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0400, false, 0 },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0640, false, -EINVAL },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0604, false, -EINVAL },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefg\n", 0600, false, -EINVAL },
		{ "00112233445566778899aabbccddeeff\n", 0600, false, -EINVAL },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00\n", 0600, false, -EINVAL },
		{ "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0600, true, -ELOOP },
	};
	char *path = key_path, *lnk = key_lnk, msg[256];
	uint8_t key[DPC_KEY_LEN];

	(void)state;
	assert_non_null(mkdtemp(key_dir));
	snprintf(key_path, sizeof(key_path), "%s/key", key_dir);
	snprintf(key_lnk, sizeof(key_lnk), "%s/link", key_dir);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		int fd;

		unlink(path);
		unlink(lnk);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, rows[r].content, strlen(rows[r].content)), (ssize_t)strlen(rows[r].content));
		close(fd);
		assert_int_equal(chmod(path, rows[r].mode), 0);
		if (rows[r].link)
			assert_int_equal(symlink(path, lnk), 0);
		msg[0] = 0;
		if (dpc_key_load(rows[r].link ? lnk : path, key, msg, sizeof(msg)) != rows[r].err)
			fail_msg("row %zu: %s", r, msg);
		if (!rows[r].err) {
			assert_int_equal(key[0], 0x00);
			assert_int_equal(key[31], 0xff);
		} else {
			assert_non_null(strstr(msg, "cluster key"));
		}
	}
}

static void test_sa_key(void **state)
{
	struct sadb_sa s;
	struct dpc_sa_key k1, k2;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.spi = 0x1234;
	s.proto = SADB_PROTO_ESP;
	s.dir = SADB_DIR_OUT;
	s.dst.family = 2;
	s.enc_alg = SADB_ENC_AES_GCM16;
	s.enc_key_len = 16;
	memset(s.enc_key, 0xab, 16);
	dpc_sa_key(&s, &k1);
	dpc_sa_key(&s, &k2);
	assert_memory_equal(&k1, &k2, sizeof(k1));
	/* the fingerprint, never the key */
	assert_null(memmem(&k1, sizeof(k1), s.enc_key, 4));
	s.enc_key[3] ^= 1;
	dpc_sa_key(&s, &k2);
	assert_memory_not_equal(k1.fp, k2.fp, sizeof(k1.fp));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_contact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failover_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_standbys_promoted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_sa_both_active, setup, teardown),
		cmocka_unit_test_setup_teardown(test_segment_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_histories, setup, teardown),
		cmocka_unit_test(test_solo_expiry),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_restart_nonce),
		cmocka_unit_test_teardown(test_key_file, key_file_teardown),
		cmocka_unit_test(test_sa_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
