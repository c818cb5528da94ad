/* tests/unit/test_sadb_internal.c: white-box tests of libsadb's private mechanisms that the public
 * API reaches only by chance: the SPI hash making room by moving an entry to its other bucket when
 * both buckets of a new SA are full, and the header's layout revision check. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sadb/sadb_int.h"
#include "tests/unit/sadb_testlib.h"

static unsigned bucket_fill(struct sadb *db, uint32_t b)
{
	unsigned n = 0;

	for (unsigned w = 0; w < SADB_HASH_WAYS; w++)
		n += atomic_load(&db->hash[(size_t)b * SADB_HASH_WAYS + w]) != 0;
	return n;
}

/* Fill bucket X (eight SAs whose first bucket is X), fill bucket Z the same way, then add an SA whose
 * two buckets are X and Z: an entry must move out of X (or Z) to its other bucket, and every SA must
 * still be found afterwards, as well as after deleting them all. */
static void test_hash_kick(void **state)
{
	const char *path = t_path("kick");
	struct sadb *db = t_open(path, 64, 4);
	struct sadb_addr dst = t_addr("10.0.0.2");
	uint32_t nb = db->h->hash_nbuckets, x, z, b1, b2, spis[32], n = 0, y = 0;
	struct sadb_sa out;

	assert_true(nb >= 4);
	sadb__sa_buckets(db, 1000, SADB_PROTO_ESP, &dst, &x, &b2);
	/* Bucket Z: the first bucket of some SPI, different from X. */
	z = x;
	for (uint32_t spi = 1001; z == x; spi++)
		sadb__sa_buckets(db, spi, SADB_PROTO_ESP, &dst, &z, &b2);
	for (uint32_t spi = 256; n < 16 && spi < 10000000; spi++) {
		sadb__sa_buckets(db, spi, SADB_PROTO_ESP, &dst, &b1, &b2);
		if ((b1 == x && bucket_fill(db, x) < SADB_HASH_WAYS) || (b1 == z && bucket_fill(db, z) < SADB_HASH_WAYS)) {
			struct sadb_sa sa = t_sa(spi, "10.0.0.1", "10.0.0.2");
			if (b2 == x || b2 == z)
				continue; /* keep each one's other bucket free so it can move there */
			assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
			spis[n++] = spi;
		}
	}
	assert_int_equal(n, 16);
	assert_int_equal(bucket_fill(db, x), SADB_HASH_WAYS);
	assert_int_equal(bucket_fill(db, z), SADB_HASH_WAYS);
	for (uint32_t spi = 256; !y && spi < 100000000; spi++) {
		sadb__sa_buckets(db, spi, SADB_PROTO_ESP, &dst, &b1, &b2);
		if ((b1 == x && b2 == z) || (b1 == z && b2 == x))
			y = spi;
	}
	assert_int_not_equal(y, 0);
	uint64_t moves = atomic_load(&db->h->hash_moves);
	struct sadb_sa sy = t_sa(y, "10.0.0.1", "10.0.0.2");
	assert_int_equal(sadb_sa_add(db, &sy, NULL), 0);
	assert_true(atomic_load(&db->h->hash_moves) == moves + 1);
	spis[n++] = y;
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(sadb_sa_lookup(db, spis[i], SADB_PROTO_ESP, &dst, &out, NULL), 0);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(sadb_sa_delete(db, spis[i], SADB_PROTO_ESP, &dst), 0);
	assert_int_equal(bucket_fill(db, x), 0);
	assert_int_equal(bucket_fill(db, z), 0);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(sadb_sa_lookup(db, spis[i], SADB_PROTO_ESP, &dst, &out, NULL), -ENOENT);
	sadb_close(db);
}

static void test_internal_revision(void **state)
{
	const char *path = t_path("rev");
	struct sadb *db = t_open(path, 4, 4);
	uint32_t rev = SADB_INTERNAL_REV + 1;
	char msg[256];
	int fd;

	sadb_close(db);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &rev, 4, offsetof(struct sadb_hdr, internal_rev)), 4);
	close(fd);
	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &db, msg, sizeof(msg)), -EPROTO);
	assert_non_null(strstr(msg, "internal revision"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_kick),
		cmocka_unit_test(test_internal_revision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
