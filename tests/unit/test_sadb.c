/* tests/unit/test_sadb.c: libsadb's API specification, one table row per case: segment creation,
 * layout checks, every SA and policy call with its errors (bad arguments, duplicate SPI, table
 * full), SPI allocation, transactions, the change journal, key wiping, the runtime area and the
 * shared helpers (addresses, prefixes, transforms, names, drop reasons, selector matching). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sadb/sadb.h"
#include "tests/unit/sadb_testlib.h"

/* ---------------- segment ---------------- */

static void test_create_mode_and_info(void **state)
{
	const char *path = t_path("create");
	struct sadb_info info;
	struct sadb *db;
	struct stat st;
	mode_t old = umask(0);

	db = t_open(path, 100, 50);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(sadb_info(db, &info), 0);
	assert_true(info.magic == SADB_MAGIC);
	assert_int_equal(info.layout_version, SADB_LAYOUT_VERSION);
	assert_int_equal(info.max_sa, 100);
	assert_int_equal(info.max_policy, 50);
	assert_int_equal(info.n_sa, 0);
	assert_int_equal(info.size, (size_t)st.st_size);
	assert_int_equal(sadb_generation(db), info.generation);
	sadb_close(db);
	/* Reopening with other params keeps the existing capacities. */
	db = t_open(path, 9999, 9999);
	assert_int_equal(sadb_info(db, &info), 0);
	assert_int_equal(info.max_sa, 100);
	sadb_close(db);
	assert_int_equal(sadb_unlink(path), 0);
	assert_int_equal(sadb_unlink(path), -ENOENT);
}

static void test_default_capacity_and_path(void **state)
{
	const char *path = t_path("defaults");
	struct sadb_info info;
	struct sadb *db = NULL;
	char msg[256];

	setenv(SADB_ENV_PATH, path, 1);
	assert_string_equal(sadb_default_path(), path);
	assert_int_equal(sadb_open(NULL, SADB_RDWR | SADB_CREATE, NULL, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_info(db, &info), 0);
	assert_true(info.max_sa >= 65536 && info.max_policy >= 65536);
	sadb_close(db);
	setenv(SADB_ENV_PATH, "", 1);
	assert_string_equal(sadb_default_path(), SADB_DEFAULT_PATH);
	unsetenv(SADB_ENV_PATH);
	assert_string_equal(sadb_default_path(), SADB_DEFAULT_PATH);
}

/* 1M SAs fit; the segment is sparse, so only what is used costs memory. */
static void test_capacity_1m(void **state)
{
	const char *path = t_path("big");
	struct sadb *db = t_open(path, 1u << 20, 1u << 16);
	struct sadb_info info;
	struct stat st;
	uint32_t slot = 0;

	assert_int_equal(sadb_info(db, &info), 0);
	assert_int_equal(info.max_sa, 1u << 20);
	assert_true(info.size > (size_t)(1u << 20) * (sizeof(struct sadb_sa) * 2 + sizeof(struct sadb_runtime)));
	for (uint32_t i = 0; i < 2000; i++) {
		struct sadb_sa sa = t_sa(100000 + i, "10.0.0.1", "10.0.0.2");
		assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	}
	assert_int_equal(slot, 1999);
	struct sadb_sa out;
	struct sadb_addr dst = t_addr("10.0.0.2");
	assert_int_equal(sadb_sa_lookup(db, 101234, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_get(db, (1u << 20) - 1, &out), -ENOENT);
	assert_int_equal(stat(path, &st), 0);
	print_message("1M-SA segment: %.0f MB apparent, %.1f MB resident with 2000 SAs\n", st.st_size / 1e6,
		      st.st_blocks * 512 / 1e6);
	assert_true((uint64_t)st.st_blocks * 512 < 64ull << 20);
	sadb_close(db);
	assert_int_equal(sadb_unlink(path), 0);
}

static void test_open_errors(void **state)
{
	struct {
		const char *name;
		int flags;
		struct sadb_params prm;
		int want;
		const char *msg;
	} rows[] = {
		{ "missing without create", SADB_RDWR, { 0, 0 }, -ENOENT, "no SADB here" },
		{ "too many SAs", SADB_RDWR | SADB_CREATE, { SADB_MAX_SA_LIMIT + 1, 0 }, -EINVAL, "limit" },
		{ "too many policies", SADB_RDWR | SADB_CREATE, { 0, SADB_MAX_SA_LIMIT + 1 }, -EINVAL, "limit" },
		{ "unknown flag", 0x100, { 0, 0 }, -EINVAL, "unknown flags" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *path = t_path("openerr");
		struct sadb *db = (struct sadb *)1;
		char msg[256] = "";
		int r = sadb_open(path, rows[i].flags, &rows[i].prm, &db, msg, sizeof(msg));
		if (r != rows[i].want || !strstr(msg, rows[i].msg) || db != NULL)
			fail_msg("%s: got %d '%s', want %d '%s'", rows[i].name, r, msg, rows[i].want, rows[i].msg);
	}
	assert_int_equal(sadb_open("/dev/shm", SADB_RDONLY, NULL, NULL, NULL, 0), -EINVAL);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return 0;
}

static void patch(const char *path, off_t off, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, len, off), (ssize_t)len);
	close(fd);
}

/* A reader built for another layout must fail with a clear message, never misread. */
static void test_layout_mismatch(void **state)
{
	const char *path = t_path("layout");
	char copy[160], msg[256];
	struct sadb *db = t_open(path, 16, 16);
	uint64_t magic = 0x4141414141414141ULL;
	uint32_t version = SADB_LAYOUT_VERSION + 1, sa_size = 1;
	struct sadb_sa sa = t_sa(1000, "10.0.0.1", "10.0.0.2");

	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	sadb_close(db);
	snprintf(copy, sizeof(copy), "%s.copy", path);
	char want_version[128];
	snprintf(want_version, sizeof(want_version),
		 "layout version %u but this program was built for layout version %u",
		 SADB_LAYOUT_VERSION + 1, SADB_LAYOUT_VERSION);

	struct {
		const char *name;
		off_t off;
		const void *val;
		size_t len;
		const char *msg;
	} rows[] = {
		{ "bad magic", 0, &magic, 8, "is not an xipsec SADB" },
		{ "other layout version", 8, &version, 4, want_version },
		{ "other record size", 16, &sa_size, 4, "layout mismatch" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(copy_file(path, copy), 0);
		patch(copy, rows[i].off, rows[i].val, rows[i].len);
		db = (struct sadb *)1;
		int r = sadb_open(copy, SADB_RDONLY, NULL, &db, msg, sizeof(msg));
		if (r != -EPROTO || !strstr(msg, rows[i].msg) || db)
			fail_msg("%s: got %d '%s'", rows[i].name, r, msg);
	}
	/* Truncated file. */
	struct stat st;
	assert_int_equal(copy_file(path, copy), 0);
	assert_int_equal(stat(copy, &st), 0);
	assert_int_equal(truncate(copy, st.st_size - 4096), 0);
	assert_int_equal(sadb_open(copy, SADB_RDONLY, NULL, &db, msg, sizeof(msg)), -EPROTO);
	assert_non_null(strstr(msg, "truncated"));
	assert_int_equal(truncate(copy, 10), 0);
	assert_int_equal(sadb_open(copy, SADB_RDONLY, NULL, &db, msg, sizeof(msg)), -EPROTO);
	assert_non_null(strstr(msg, "not an xipsec SADB"));
	/* The original still opens and holds its SA. */
	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_lookup(db, 1000, SADB_PROTO_ESP, &sa.dst, &sa, NULL), 0);
	sadb_close(db);
}

static void test_readonly_handle(void **state)
{
	const char *path = t_path("ro");
	struct sadb *w = t_open(path, 16, 16), *r = NULL;
	struct sadb_sa sa = t_sa(4242, "10.0.0.1", "10.0.0.2"), out;
	uint32_t slot;
	char msg[256];

	assert_int_equal(sadb_sa_add(w, &sa, &slot), 0);
	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &r, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_lookup(r, 4242, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_add(r, &sa, NULL), -EPERM);
	assert_non_null(strstr(sadb_errmsg(r), "read-only"));
	assert_int_equal(sadb_txn_begin(r), -EPERM);
	/* The runtime area is readable through a read-only mapping. */
	assert_non_null(sadb_runtime(r, slot));
	assert_true(sadb_runtime(r, slot)->instance == out.instance);
	sadb_close(r);
	/* SADB_RUNTIME: runtime writable, records not. */
	assert_int_equal(sadb_open(path, SADB_RUNTIME, NULL, &r, msg, sizeof(msg)), 0);
	sadb_runtime(r, slot)->packets = 5;
	assert_true(sadb_runtime(w, slot)->packets == 5);
	assert_int_equal(sadb_sa_delete(r, 4242, SADB_PROTO_ESP, &sa.dst), -EPERM);
	sadb_close(r);
	sadb_close(w);
}

/* ---------------- SA API ---------------- */

static void test_sa_roundtrip(void **state)
{
	const char *path = t_path("sa");
	struct sadb *db = t_open(path, 64, 16);
	struct sadb_sa sa = t_sa(0x1234, "192.0.2.1", "192.0.2.2"), out, v6 = t_sa(0x1234, "2001:db8::1", "2001:db8::2");
	struct sadb_addr other = t_addr("192.0.2.3");
	uint32_t slot, slot6, cur, n;
	uint64_t g0 = sadb_generation(db);

	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_true(sadb_generation(db) == g0 + 1);
	/* Same SPI to another destination or in IPv6 is another SA. */
	assert_int_equal(sadb_sa_add(db, &v6, &slot6), 0);
	assert_int_not_equal(slot, slot6);
	assert_int_equal(sadb_sa_lookup(db, 0x1234, SADB_PROTO_ESP, &sa.dst, &out, &cur), 0);
	assert_int_equal(cur, slot);
	assert_memory_equal(out.enc_key, sa.enc_key, 32);
	assert_true(out.created > 0 && out.instance > 0);
	assert_int_equal(out.checksum != 0, 1);
	assert_int_equal(sadb_sa_lookup(db, 0x1234, SADB_PROTO_ESP, &other, &out, NULL), -ENOENT);
	assert_non_null(strstr(sadb_errmsg(db), "no SA"));
	assert_int_equal(sadb_sa_lookup(db, 0x1234, SADB_PROTO_AH, &sa.dst, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_lookup(db, 0x1234, SADB_PROTO_ESP, &v6.dst, &out, NULL), 0);
	assert_int_equal(out.dst.family, AF_INET6);
	assert_int_equal(sadb_sa_get(db, slot6, &out), 0);
	assert_int_equal(out.dst.family, AF_INET6);
	assert_int_equal(sadb_sa_get(db, 63, &out), -ENOENT);
	assert_int_equal(sadb_sa_get(db, 64, &out), -EINVAL);
	/* Iteration sees both. */
	n = 0;
	cur = 0;
	while (sadb_sa_next(db, &cur, &out, &slot6) == 0)
		n++;
	assert_int_equal(n, 2);
	/* Update keeps slot and instance, changes content. */
	struct sadb_sa before;
	assert_int_equal(sadb_sa_get(db, slot, &before), 0);
	sa.enc_key[0] ^= 0xff;
	sa.soft.bytes = 1000;
	sa.hard.bytes = 2000;
	assert_int_equal(sadb_sa_update(db, &sa), 0);
	assert_int_equal(sadb_sa_get(db, slot, &out), 0);
	assert_int_equal(out.enc_key[0], sa.enc_key[0]);
	assert_true(out.instance == before.instance && out.created == before.created);
	assert_true(out.hard.bytes == 2000);
	/* Delete. */
	assert_int_equal(sadb_sa_delete(db, 0x1234, SADB_PROTO_ESP, &sa.dst), 0);
	assert_int_equal(sadb_sa_lookup(db, 0x1234, SADB_PROTO_ESP, &sa.dst, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_get(db, slot, &out), -ENOENT);
	assert_int_equal(sadb_sa_delete(db, 0x1234, SADB_PROTO_ESP, &sa.dst), -ENOENT);
	assert_int_equal(sadb_sa_update(db, &sa), -ENOENT);
	struct sadb_info info;
	sadb_info(db, &info);
	assert_int_equal(info.n_sa, 1);
	sadb_close(db);
}

static void test_sa_duplicate_and_full(void **state)
{
	const char *path = t_path("full");
	struct sadb *db = t_open(path, 8, 4);
	struct sadb_sa sa = t_sa(300, "10.0.0.1", "10.0.0.2");

	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), -EEXIST);
	assert_non_null(strstr(sadb_errmsg(db), "exists"));
	for (uint32_t i = 1; i < 8; i++) {
		sa.spi = 300 + i;
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	}
	sa.spi = 999;
	assert_int_equal(sadb_sa_add(db, &sa, NULL), -ENOSPC);
	assert_non_null(strstr(sadb_errmsg(db), "full"));
	/* A freed slot is usable again. */
	assert_int_equal(sadb_sa_delete(db, 303, SADB_PROTO_ESP, &sa.dst), 0);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_int_equal(sadb_sa_flush(db, SADB_PROTO_AH), 0);
	assert_int_equal(sadb_sa_flush(db, SADB_PROTO_ESP), 8);
	assert_int_equal(sadb_sa_flush(db, SADB_PROTO_ANY), 0);
	assert_int_equal(sadb_sa_flush(db, 17), -EINVAL);
	for (uint32_t i = 0; i < 8; i++) {
		sa.spi = 5000 + i;
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	}
	sadb_close(db);
}

typedef void (*sa_mut)(struct sadb_sa *);
#define MUT(name, body) static void name(struct sadb_sa *s) { body; }
MUT(m_spi0, s->spi = 0)
MUT(m_spi255, s->spi = 255)
MUT(m_proto, s->proto = 17)
MUT(m_mode, s->mode = 9)
MUT(m_dir, s->dir = SADB_DIR_FWD)
MUT(m_state, s->state = 9)
MUT(m_dstfam, s->dst.family = 0)
MUT(m_srcfam, s->src = t_addr("2001:db8::1"))
MUT(m_nosrc, memset(&s->src, 0, sizeof(s->src)))
MUT(m_enc, s->enc_alg = 99)
MUT(m_des, s->enc_alg = SADB_ENC_DES_CBC; s->enc_key_len = 8; s->salt_len = 0)
MUT(m_keylen, s->enc_key_len = 20)
MUT(m_salt, s->salt_len = 0)
MUT(m_aead_auth, s->auth_alg = SADB_AUTH_HMAC_SHA256_128; s->auth_key_len = 32)
MUT(m_cbc_noauth, s->enc_alg = SADB_ENC_AES_CBC; s->salt_len = 0)
MUT(m_authlen, s->enc_alg = SADB_ENC_AES_CBC; s->salt_len = 0; s->auth_alg = SADB_AUTH_HMAC_SHA1_96; s->auth_key_len = 32)
MUT(m_3des, s->enc_alg = SADB_ENC_3DES_CBC; s->enc_key_len = 24; s->salt_len = 0; s->auth_alg = SADB_AUTH_HMAC_SHA1_96; s->auth_key_len = 20)
MUT(m_md5, s->enc_alg = SADB_ENC_AES_CBC; s->salt_len = 0; s->auth_alg = SADB_AUTH_HMAC_MD5_96; s->auth_key_len = 16)
MUT(m_ah_enc, s->proto = SADB_PROTO_AH)
MUT(m_icv, s->icv_len = 12)
MUT(m_window, s->replay_window = SADB_REPLAY_MAX + 1)
MUT(m_noreplay, s->flags |= SADB_SAF_NO_REPLAY)
MUT(m_df, s->flags |= SADB_SAF_DF_CLEAR | SADB_SAF_DF_SET)
MUT(m_flags, s->flags |= 0x8000)
MUT(m_natt, s->encap_sport = 4500)
MUT(m_dscp, s->dscp = 64)
MUT(m_soft, s->soft.bytes = 10; s->hard.bytes = 5)
MUT(m_selfam, s->sel.src = t_addr("10.0.0.0"); s->sel.src_plen = 8; s->sel.dst = t_addr("2001:db8::"); s->sel.dst_plen = 32)
MUT(m_selplen, s->sel.src = t_addr("10.0.0.0"); s->sel.src_plen = 33)
MUT(m_selports, s->sel.sport_lo = 10; s->sel.sport_hi = 5; s->sel.proto = 6)
MUT(m_selnoproto, s->sel.dport_lo = 80; s->sel.dport_hi = 80)

static void test_sa_validation(void **state)
{
	struct {
		const char *name;
		sa_mut mut;
		const char *field;
	} rows[] = {
		{ "SPI 0 reserved", m_spi0, "spi" },
		{ "SPI 255 reserved", m_spi255, "spi" },
		{ "protocol", m_proto, "proto" },
		{ "mode", m_mode, "mode" },
		{ "direction fwd", m_dir, "dir" },
		{ "state", m_state, "state" },
		{ "dst family", m_dstfam, "dst" },
		{ "src family differs", m_srcfam, "src" },
		{ "src missing", m_nosrc, "src" },
		{ "unknown transform", m_enc, "enc_alg" },
		{ "DES refused", m_des, "des-cbc" },
		{ "AES key length", m_keylen, "enc_key_len" },
		{ "GCM salt", m_salt, "salt_len" },
		{ "AEAD with integrity", m_aead_auth, "auth_alg" },
		{ "CBC without integrity", m_cbc_noauth, "auth_alg" },
		{ "HMAC key length", m_authlen, "auth_key_len" },
		{ "3DES needs legacy flag", m_3des, "legacy" },
		{ "MD5 needs legacy flag", m_md5, "legacy" },
		{ "AH with encryption", m_ah_enc, "AH" },
		{ "ICV length", m_icv, "icv_len" },
		{ "replay window too big", m_window, "replay_window" },
		{ "window with no-replay", m_noreplay, "replay_window" },
		{ "DF clear and set", m_df, "DF" },
		{ "unknown flags", m_flags, "flags" },
		{ "NAT-T half set", m_natt, "encap" },
		{ "DSCP", m_dscp, "dscp" },
		{ "soft above hard", m_soft, "soft" },
		{ "selector families", m_selfam, "families" },
		{ "selector prefix length", m_selplen, "prefix length" },
		{ "selector port range", m_selports, "port range" },
		{ "ports without protocol", m_selnoproto, "protocol" },
	};
	const char *path = t_path("validate");
	struct sadb *db = t_open(path, 8, 4);
	char msg[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sadb_sa sa = t_sa(1000, "10.0.0.1", "10.0.0.2");
		assert_int_equal(sadb_sa_validate(&sa, msg, sizeof(msg)), 0);
		rows[i].mut(&sa);
		int r = sadb_sa_validate(&sa, msg, sizeof(msg));
		if (r != -EINVAL || !strstr(msg, rows[i].field))
			fail_msg("%s: validate gave %d '%s', want -EINVAL naming '%s'", rows[i].name, r, msg,
				 rows[i].field);
		r = sadb_sa_add(db, &sa, NULL);
		if (r != -EINVAL || !strstr(sadb_errmsg(db), rows[i].field))
			fail_msg("%s: add gave %d '%s'", rows[i].name, r, sadb_errmsg(db));
	}
	/* Every transform of the engine in a valid combination. */
	struct {
		uint8_t proto;
		uint16_t enc, auth;
		uint8_t ek, salt, ak;
		uint32_t flags;
	} ok[] = {
		{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, SADB_AUTH_HMAC_SHA1_96, 16, 0, 20, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, SADB_AUTH_HMAC_SHA256_128, 32, 0, 32, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_AES_CTR, SADB_AUTH_HMAC_SHA384_192, 24, 4, 48, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_NULL, SADB_AUTH_HMAC_SHA512_256, 0, 0, 64, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_AES_GCM16, SADB_AUTH_NONE, 16, 4, 0, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_AES_GMAC, SADB_AUTH_NONE, 32, 4, 0, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_CHACHA20_POLY1305, SADB_AUTH_NONE, 32, 4, 0, 0 },
		{ SADB_PROTO_ESP, SADB_ENC_3DES_CBC, SADB_AUTH_HMAC_MD5_96, 24, 0, 16, SADB_SAF_LEGACY_OK },
		{ SADB_PROTO_AH, SADB_ENC_NONE, SADB_AUTH_HMAC_SHA256_128, 0, 0, 32, 0 },
		{ SADB_PROTO_AH, SADB_ENC_NONE, SADB_AUTH_AES_128_GMAC, 0, 4, 16, 0 },
		{ SADB_PROTO_AH, SADB_ENC_NONE, SADB_AUTH_AES_256_GMAC, 0, 4, 32, 0 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct sadb_sa sa = t_sa(2000 + (uint32_t)i, "10.0.0.1", "10.0.0.2");
		sa.proto = ok[i].proto;
		sa.enc_alg = ok[i].enc;
		sa.auth_alg = ok[i].auth;
		sa.enc_key_len = ok[i].ek;
		sa.salt_len = ok[i].salt;
		sa.auth_key_len = ok[i].ak;
		sa.flags = ok[i].flags;
		if (sadb_sa_validate(&sa, msg, sizeof(msg)))
			fail_msg("row %zu (%s/%s): %s", i, sadb_enc_name(ok[i].enc), sadb_auth_name(ok[i].auth), msg);
	}
	/* NULL arguments. */
	assert_int_equal(sadb_sa_add(db, NULL, NULL), -EINVAL);
	assert_int_equal(sadb_sa_update(db, NULL), -EINVAL);
	assert_int_equal(sadb_sa_delete(db, 1000, SADB_PROTO_ESP, NULL), -EINVAL);
	assert_int_equal(sadb_sa_lookup(db, 1000, SADB_PROTO_ESP, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(sadb_sa_get(db, 0, NULL), -EINVAL);
	assert_int_equal(sadb_sa_next(db, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(sadb_sa_validate(NULL, msg, sizeof(msg)), -EINVAL);
	assert_int_equal(sadb_policy_validate(NULL, msg, sizeof(msg)), -EINVAL);
	sadb_close(db);
}

static void test_spi_alloc(void **state)
{
	const char *path = t_path("spi");
	struct sadb *db = t_open(path, 64, 4);
	struct sadb_addr src = t_addr("10.0.0.1"), dst = t_addr("10.0.0.2");
	struct sadb_sa out, sa;
	uint32_t spi, seen[20];

	for (int i = 0; i < 20; i++) {
		assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_ESP, &src, &dst, 0, 0, &spi), 0);
		assert_true(spi >= 256);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(seen[j], spi);
		seen[i] = spi;
		assert_int_equal(sadb_sa_lookup(db, spi, SADB_PROTO_ESP, &dst, &out, NULL), 0);
		assert_int_equal(out.state, SADB_STATE_LARVAL);
	}
	/* Range with reserved values clamps to 256; a tiny range fills up. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_AH, &src, &dst, 0, 258, &spi), 0);
		assert_true(spi >= 256 && spi <= 258);
	}
	assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_AH, &src, &dst, 0, 258, &spi), -ENOSPC);
	assert_non_null(strstr(sadb_errmsg(db), "no free SPI"));
	assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_AH, &src, &dst, 500, 400, &spi), -EINVAL);
	assert_int_equal(sadb_spi_alloc(db, 17, &src, &dst, 0, 0, &spi), -EINVAL);
	assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_ESP, &src, NULL, 0, 0, &spi), -EINVAL);
	/* Completing a larval SA: update, new instance; adding it again is a duplicate. */
	sa = t_sa(seen[0], "10.0.0.1", "10.0.0.2");
	sa.dir = SADB_DIR_IN;
	assert_int_equal(sadb_sa_lookup(db, seen[0], SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), -EEXIST);
	assert_int_equal(sadb_sa_update(db, &sa), 0);
	struct sadb_sa done;
	assert_int_equal(sadb_sa_lookup(db, seen[0], SADB_PROTO_ESP, &dst, &done, NULL), 0);
	assert_int_equal(done.state, SADB_STATE_MATURE);
	assert_true(done.instance != out.instance);
	sadb_close(db);
}

static void test_sa_migrate(void **state)
{
	const char *path = t_path("migrate");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_sa sa = t_sa(777, "10.0.0.1", "10.0.0.2"), out, before;
	struct sadb_addr nsrc = t_addr("10.0.1.1"), ndst = t_addr("10.0.1.2");
	uint32_t slot, slot2;

	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_int_equal(sadb_sa_get(db, slot, &before), 0);
	sadb_runtime(db, slot)->packets = 42;
	assert_int_equal(sadb_sa_migrate(db, 777, SADB_PROTO_ESP, &sa.dst, &nsrc, &ndst, 4500, 4500), 0);
	assert_int_equal(sadb_sa_lookup(db, 777, SADB_PROTO_ESP, &sa.dst, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_lookup(db, 777, SADB_PROTO_ESP, &ndst, &out, &slot2), 0);
	assert_int_equal(slot2, slot);
	assert_true(out.instance == before.instance);
	assert_true(sadb_addr_eq(&out.src, &nsrc));
	assert_int_equal(out.encap_dport, 4500);
	assert_true(sadb_runtime(db, slot)->packets == 42);
	/* Migrating onto an existing identity or with bad ports fails and changes nothing. */
	sa.spi = 778;
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_int_equal(sadb_sa_migrate(db, 778, SADB_PROTO_ESP, &sa.dst, NULL, &ndst, 0, 0), 0);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_int_equal(sadb_sa_migrate(db, 778, SADB_PROTO_ESP, &sa.dst, NULL, &ndst, 0, 0), -EEXIST);
	assert_int_equal(sadb_sa_migrate(db, 778, SADB_PROTO_ESP, &sa.dst, NULL, NULL, 4500, 0), -EINVAL);
	assert_int_equal(sadb_sa_migrate(db, 779, SADB_PROTO_ESP, &sa.dst, NULL, NULL, 0, 0), -ENOENT);
	assert_int_equal(sadb_sa_lookup(db, 778, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	sadb_close(db);
}

/* ---------------- the home agent record ---------------- */

static struct sadb_home_agent t_ha(void)
{
	struct sadb_home_agent ha;

	memset(&ha, 0, sizeof(ha));
	ha.addr = t_addr("2001:db8:1::1");
	ha.prefix[0] = t_addr("2001:db8:1::");
	ha.plen[0] = 64;
	ha.prefix[1] = t_addr("2001:db8:7::");
	ha.plen[1] = 48;
	ha.n_prefix = 2;
	ha.max_lifetime = 3600;
	strcpy(ha.link, "home0");
	return ha;
}

static void test_home_agent(void **state)
{
	const char *path = t_path("homeagent");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_home_agent ha = t_ha(), out;
	struct sadb_change ch[4];
	uint64_t g0 = sadb_generation(db), since = g0;
	char msg[200];

	assert_int_equal(sadb_home_agent_get(db, 0, &out), -ENOENT);
	assert_int_equal(sadb_home_agent_set(db, 0, &ha), 0);
	assert_true(sadb_generation(db) == g0 + 1);
	assert_int_equal(sadb_changes(db, &since, ch, 4), 1);
	assert_int_equal(ch[0].op, SADB_CHG_HOME_AGENT);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_true(sadb_addr_eq(&out.addr, &ha.addr));
	assert_int_equal(out.n_prefix, 2);
	assert_int_equal(out.plen[1], 48);
	assert_int_equal(out.max_lifetime, 3600);
	assert_string_equal(out.link, "home0");
	assert_true(out.set_time > 0);

	/* Every field is checked; a refused record changes nothing. */
	static const struct {
		const char *what, *addr, *prefix;
		unsigned plen, lifetime, n_prefix;
		const char *msg;
	} bad[] = {
		{ "IPv4 address", "192.0.2.1", "2001:db8:1::", 64, 3600, 1, "must be an IPv6 unicast" },
		{ "multicast", "ff02::1", "2001:db8:1::", 64, 3600, 1, "must be an IPv6 unicast" },
		{ "outside the prefixes", "2001:db8:2::1", "2001:db8:1::", 64, 3600, 1, "not in any home prefix" },
		{ "host bits", "2001:db8:1::1", "2001:db8:1::5", 64, 3600, 1, "host bits set" },
		{ "prefix length", "2001:db8:1::1", "2001:db8:1::", 128, 3600, 1, "prefix length must be" },
		{ "no prefix", "2001:db8:1::1", "2001:db8:1::", 64, 3600, 0, "home prefixes (1 to 8)" },
		{ "lifetime 0", "2001:db8:1::1", "2001:db8:1::", 64, 0, 1, "must be 4 to 262140" },
		{ "lifetime too long", "2001:db8:1::1", "2001:db8:1::", 64, 262144, 1, "must be 4 to 262140" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sadb_home_agent b = t_ha();
		b.addr = t_addr(bad[i].addr);
		b.prefix[0] = t_addr(bad[i].prefix);
		b.plen[0] = (uint8_t)bad[i].plen;
		b.max_lifetime = bad[i].lifetime;
		b.n_prefix = bad[i].n_prefix;
		uint64_t g = sadb_generation(db);
		assert_int_equal(sadb_home_agent_set(db, 0, &b), -EINVAL);
		if (!strstr(sadb_errmsg(db), bad[i].msg))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].what, sadb_errmsg(db), bad[i].msg);
		assert_true(sadb_generation(db) == g);
	}
	struct sadb_home_agent b = t_ha();
	b.prefix[1] = b.prefix[0];
	b.plen[1] = b.plen[0];
	assert_int_equal(sadb_home_agent_validate(&b, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "given twice"));
	b = t_ha();
	strcpy(b.link, "a b");
	assert_int_equal(sadb_home_agent_validate(&b, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "not an interface name"));
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_int_equal(out.max_lifetime, 3600);

	/* In a transaction: readers see the old record until the commit; an abort leaves it. */
	ha.max_lifetime = 600;
	assert_int_equal(sadb_txn_begin(db), 0);
	assert_int_equal(sadb_home_agent_set(db, 0, &ha), 0);
	ha.max_lifetime = 700;
	assert_int_equal(sadb_home_agent_set(db, 0, &ha), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_int_equal(out.max_lifetime, 3600);
	sadb_txn_abort(db);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_int_equal(out.max_lifetime, 3600);
	for (unsigned k = 0; k < 5; k++) { /* both copies take turns */
		ha.max_lifetime = 100 + k;
		assert_int_equal(sadb_txn_begin(db), 0);
		assert_int_equal(sadb_home_agent_set(db, 0, &ha), 0);
		assert_int_equal(sadb_txn_commit(db), 0);
		assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
		assert_int_equal(out.max_lifetime, 100 + k);
	}
	/* Cleared: no home agent; a second handle agrees. */
	assert_int_equal(sadb_home_agent_set(db, 0, NULL), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), -ENOENT);
	struct sadb *db2 = t_open(path, 16, 4);
	assert_int_equal(sadb_home_agent_get(db2, 0, &out), -ENOENT);
	assert_int_equal(sadb_home_agent_set(db2, 0, &ha), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_int_equal(out.max_lifetime, 104);
	sadb_close(db2);
	assert_int_equal(sadb_home_agent_get(NULL, 0, &out), -EINVAL);
	assert_int_equal(sadb_home_agent_set(NULL, 0, &ha), -EINVAL);
	sadb_close(db);
}

/* Several home agent addresses: one record each, none sharing an address or an overlapping prefix
 * with another (a home address belongs to one record), even inside one transaction. */
static void test_home_agents(void **state)
{
	const char *path = t_path("homeagents");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_home_agent a = t_ha(), b = t_ha(), out;
	struct sadb_change ch[4];
	uint64_t since = sadb_generation(db);

	b.addr = t_addr("2001:db8:2::1");
	b.prefix[0] = t_addr("2001:db8:2::");
	b.n_prefix = 1;
	b.max_lifetime = 600;
	assert_int_equal(sadb_home_agent_set(db, 0, &a), 0);
	assert_int_equal(sadb_home_agent_set(db, 5, &b), 0);
	assert_int_equal(sadb_changes(db, &since, ch, 4), 2);
	assert_int_equal(ch[1].op, SADB_CHG_HOME_AGENT);
	assert_int_equal(ch[1].index, 5);
	assert_int_equal(sadb_home_agent_get(db, 5, &out), 0);
	assert_int_equal(out.max_lifetime, 600);
	assert_int_equal(sadb_home_agent_get(db, 1, &out), -ENOENT);
	assert_int_equal(sadb_home_agent_get(db, SADB_HA_MAX, &out), -EINVAL);
	assert_int_equal(sadb_home_agent_set(db, SADB_HA_MAX, &b), -EINVAL);

	static const struct { const char *what, *addr, *prefix; unsigned plen; const char *msg; } clash[] = {
		{ "same address", "2001:db8:2::1", "2001:db8:2::", 64, "already record 5's" },
		{ "same prefix", "2001:db8:2::2", "2001:db8:2::", 64, "overlaps record 5's" },
		{ "inside a prefix", "2001:db8:7:1::1", "2001:db8:7:1::", 64, "overlaps record 0's" },
		{ "around a prefix", "2001:db8::1", "2001:db8::", 32, "overlaps record 0's" },
	};
	for (size_t i = 0; i < sizeof(clash) / sizeof(clash[0]); i++) {
		struct sadb_home_agent c = b;
		uint64_t g = sadb_generation(db);

		c.addr = t_addr(clash[i].addr);
		c.prefix[0] = t_addr(clash[i].prefix);
		c.plen[0] = (uint8_t)clash[i].plen;
		assert_int_equal(sadb_home_agent_set(db, 2, &c), -EEXIST);
		if (!strstr(sadb_errmsg(db), clash[i].msg))
			fail_msg("%s: message \"%s\" lacks \"%s\"", clash[i].what, sadb_errmsg(db), clash[i].msg);
		assert_true(sadb_generation(db) == g);
		assert_int_equal(sadb_home_agent_get(db, 2, &out), -ENOENT);
	}
	/* a record may be rewritten in place, and a prefix moves between records in one transaction:
	 * cleared from one before it is set in the other */
	b.max_lifetime = 700;
	assert_int_equal(sadb_home_agent_set(db, 5, &b), 0);
	assert_int_equal(sadb_txn_begin(db), 0);
	assert_int_equal(sadb_home_agent_set(db, 5, NULL), 0);
	assert_int_equal(sadb_home_agent_set(db, 1, &b), 0);
	assert_int_equal(sadb_home_agent_get(db, 5, &out), 0);  /* readers: the old records */
	assert_int_equal(sadb_home_agent_get(db, 1, &out), -ENOENT);
	assert_int_equal(sadb_txn_commit(db), 0);
	assert_int_equal(sadb_home_agent_get(db, 5, &out), -ENOENT);
	assert_int_equal(sadb_home_agent_get(db, 1, &out), 0);
	assert_int_equal(out.max_lifetime, 700);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_true(sadb_addr_eq(&out.addr, &a.addr));
	sadb_close(db);
}

/* A record's IPv4 address (DSMIPv6, RFC 5555): stored with the record and published with it in a
 * transaction, unicast only, and another record's refused (it tells which record a Binding Update in
 * IPv4 is for). */
static void test_home_agent_ipv4(void **state)
{
	const char *path = t_path("homeagent4");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_home_agent a = t_ha(), b = t_ha(), out;
	static const uint8_t v4[4] = { 192, 0, 2, 1 }, other[4] = { 192, 0, 2, 2 };

	(void)state;
	assert_int_equal(sadb_home_agent_set(db, 0, &a), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_memory_equal(out.addr4, (uint8_t[4]){ 0 }, 4);  /* none unless given */
	memcpy(a.addr4, v4, 4);
	assert_int_equal(sadb_txn_begin(db), 0);
	assert_int_equal(sadb_home_agent_set(db, 0, &a), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_memory_equal(out.addr4, (uint8_t[4]){ 0 }, 4);  /* readers: the committed record */
	assert_int_equal(sadb_txn_commit(db), 0);
	assert_int_equal(sadb_home_agent_get(db, 0, &out), 0);
	assert_memory_equal(out.addr4, v4, 4);

	static const struct { uint8_t a[4]; int r; const char *msg; } rows[] = {
		{ { 224, 0, 0, 1 }, -EINVAL, "not a unicast address" },
		{ { 127, 0, 0, 1 }, -EINVAL, "not a unicast address" },
		{ { 0, 1, 2, 3 }, -EINVAL, "not a unicast address" },
		{ { 192, 0, 2, 1 }, -EEXIST, "already record 0's" },
	};
	b.addr = t_addr("2001:db8:2::1");
	b.prefix[0] = t_addr("2001:db8:2::");
	b.n_prefix = 1;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t g = sadb_generation(db);

		memcpy(b.addr4, rows[i].a, 4);
		assert_int_equal(sadb_home_agent_set(db, 1, &b), rows[i].r);
		if (!strstr(sadb_errmsg(db), rows[i].msg))
			fail_msg("row %zu: message \"%s\" lacks \"%s\"", i, sadb_errmsg(db), rows[i].msg);
		assert_true(sadb_generation(db) == g);
	}
	memcpy(b.addr4, other, 4);
	assert_int_equal(sadb_home_agent_set(db, 1, &b), 0);
	sadb_close(db);
}

/* ---------------- keys wiped ---------------- */

static bool file_contains(const char *path, const uint8_t *needle, size_t n)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t got, keep = 0;
	bool found = false;

	assert_non_null(f);
	while (!found && (got = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		size_t len = keep + got;
		found = memmem(buf, len, needle, n) != NULL;
		keep = n - 1 < len ? n - 1 : len;
		memmove(buf, buf + len - keep, keep);
	}
	fclose(f);
	return found;
}

static void test_keys_wiped(void **state)
{
	const char *path = t_path("wipe");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_sa sa = t_sa(900, "10.0.0.1", "10.0.0.2");
	uint8_t k1[32], k2[32];

	memset(k1, 0xA5, sizeof(k1));
	memcpy(k1, "first-key-material", 18);
	memset(k2, 0x5A, sizeof(k2));
	memcpy(k2, "second-key-material", 19);
	memcpy(sa.enc_key, k1, 32);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_true(file_contains(path, k1, 32));
	/* A rekeyed update leaves no copy of the old key. */
	memcpy(sa.enc_key, k2, 32);
	assert_int_equal(sadb_sa_update(db, &sa), 0);
	assert_false(file_contains(path, k1, 32));
	assert_true(file_contains(path, k2, 32));
	assert_int_equal(sadb_sa_delete(db, 900, SADB_PROTO_ESP, &sa.dst), 0);
	assert_false(file_contains(path, k2, 32));
	/* Flush wipes too. */
	memcpy(sa.enc_key, k1, 32);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	sa.spi = 901;
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_true(file_contains(path, k1, 32));
	assert_int_equal(sadb_sa_flush(db, SADB_PROTO_ANY), 2);
	assert_false(file_contains(path, k1, 32));
	/* An aborted transaction leaves no key behind either. */
	assert_int_equal(sadb_txn_begin(db), 0);
	memcpy(sa.enc_key, k2, 32);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	sadb_txn_abort(db);
	assert_false(file_contains(path, k2, 32));
	sadb_close(db);
}

/* ---------------- runtime ---------------- */

static void test_runtime(void **state)
{
	const char *path = t_path("rt");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_sa sa = t_sa(555, "10.0.0.1", "10.0.0.2"), out;
	struct sadb_runtime *rt;
	uint32_t slot;

	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_int_equal(sadb_sa_get(db, slot, &out), 0);
	rt = sadb_runtime(db, slot);
	assert_non_null(rt);
	assert_true(rt->instance == out.instance);
	assert_true(rt->packets == 0 && rt->seq_reserved == 0);
	rt->seq_reserved = 1 << 20;
	rt->drops[SADB_DROP_REPLAY] = 3;
	/* An update keeps runtime state, so sequence numbers never restart under one key. */
	assert_int_equal(sadb_sa_update(db, &sa), 0);
	assert_true(rt->seq_reserved == 1 << 20 && rt->drops[SADB_DROP_REPLAY] == 3);
	/* A new SA in the slot gets fresh state and a new instance. */
	assert_int_equal(sadb_sa_delete(db, 555, SADB_PROTO_ESP, &sa.dst), 0);
	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_int_equal(sadb_sa_get(db, slot, &out), 0);
	assert_true(sadb_runtime(db, slot)->instance == out.instance);
	assert_null(sadb_runtime(db, 16));
	assert_null(sadb_runtime(NULL, 0));
	/* Runtime slots are cache-line aligned: workers on different SAs never share a line. */
	assert_int_equal(((uintptr_t)sadb_runtime(db, 1)) % 64, 0);
	sadb_close(db);
}

/* sadb_runtime_read: the one reader of the runtime area (its memory-order rule is in sadb.h). */
static void test_runtime_read(void **state)
{
	const char *path = t_path("rtread");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_sa sa = t_sa(556, "10.0.0.1", "10.0.0.2"), out;
	struct sadb_runtime_view v;
	struct sadb_runtime *rt;
	uint64_t old;
	uint32_t slot, slot2;

	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_int_equal(sadb_sa_get(db, slot, &out), 0);
	rt = sadb_runtime(db, slot);
	rt->packets = 7; rt->bytes = 700; rt->first_used = 1; rt->last_used = 2;
	rt->seq_reserved = 64; rt->seq_lease = 128; rt->replay_top = 63; rt->replay_bitmap[0] = 0xff;
	rt->drops[SADB_DROP_REPLAY] = 3; rt->drops[SADB_DROP_ICV] = 4; rt->expired = 1;
	/* The area's instance: a copy, the bitmap only when asked for. */
	assert_int_equal(sadb_runtime_read(db, slot, out.instance, 0, &v), 0);
	assert_true(v.packets == 7 && v.bytes == 700 && v.first_used == 1 && v.last_used == 2);
	assert_true(v.seq_reserved == 64 && v.seq_lease == 128 && v.replay_top == 63);
	assert_true(v.replay_bitmap[0] == 0 && v.drops[SADB_DROP_REPLAY] == 3 && v.drops_total == 7);
	assert_int_equal(v.expired, 1);
	assert_int_equal(sadb_runtime_read(db, slot, out.instance, SADB_RTV_REPLAY, &v), 0);
	assert_true(v.replay_bitmap[0] == 0xff);
	/* Another instance, none, or a bad slot: an error and nothing else. */
	static const struct { uint64_t instance; uint32_t slot; bool db; int rc; } rows[] = {
		{ 0, 0, true, -ESTALE },               /* instance 0 is never an SA's */
		{ 12345, 0, true, -ESTALE },           /* not the slot's instance */
		{ 1, 16, true, -EINVAL },              /* beyond the capacity */
		{ 1, 0, false, -EINVAL },              /* no SADB */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&v, 0xa5, sizeof(v));
		assert_int_equal(sadb_runtime_read(rows[i].db ? db : NULL,
						   rows[i].slot == 0 ? slot : rows[i].slot,
						   rows[i].instance, SADB_RTV_REPLAY, &v), rows[i].rc);
		assert_true(v.packets == 0 && v.replay_bitmap[0] == 0 && v.drops_total == 0 && !v.expired);
	}
	assert_int_equal(sadb_runtime_read(db, slot, out.instance, 0, NULL), -EINVAL);
	/* The slot reused by a new SA: the old instance reads as stale, the new one as fresh state. */
	old = out.instance;
	assert_int_equal(sadb_sa_delete(db, 556, SADB_PROTO_ESP, &sa.dst), 0);
	assert_int_equal(sadb_sa_add(db, &sa, &slot2), 0);
	assert_int_equal(slot2, slot);
	assert_int_equal(sadb_sa_get(db, slot, &out), 0);
	assert_true(out.instance != old);
	assert_int_equal(sadb_runtime_read(db, slot, old, 0, &v), -ESTALE);
	assert_true(v.packets == 0 && v.drops_total == 0);
	assert_int_equal(sadb_runtime_read(db, slot, out.instance, 0, &v), 0);
	assert_true(v.packets == 0 && v.seq_reserved == 0 && v.drops_total == 0);
	sadb_close(db);
}

/* A slot reused under the reader, again and again: a writer gives the one slot to new SA instances
 * and fills each instance's words with its instance number; a reader copies whatever instance it
 * finds. Every copy it gets is of one instance (each word that instance's number, or the reset's 0),
 * never a mix of two; the others come back -ESTALE and all zero. */
struct reuse_run {
	struct sadb *db;
	uint32_t slot;
	_Atomic bool done;
};

static void *reuse_writer(void *arg)
{
	struct reuse_run *r = arg;
	struct sadb_sa sa = t_sa(557, "10.0.0.1", "10.0.0.2"), out;

	for (unsigned i = 0; i < 3000; i++) {
		struct sadb_runtime *rt;
		uint64_t *w;
		uint32_t slot;

		sadb_sa_delete(r->db, 557, SADB_PROTO_ESP, &sa.dst);
		if (sadb_sa_add(r->db, &sa, &slot) != 0 || slot != r->slot ||
		    sadb_sa_get(r->db, slot, &out) != 0)
			break;
		rt = sadb_runtime(r->db, slot);
		w = (uint64_t *)rt;
		/* every word after the instance word (expired and its pad as one word) */
		for (size_t k = 1; k < sizeof(*rt) / sizeof(uint64_t); k++)
			__atomic_store_n(&w[k], out.instance, __ATOMIC_RELAXED);
	}
	atomic_store(&r->done, true);
	return NULL;
}

static void test_runtime_read_reused(void **state)
{
	const char *path = t_path("rtreuse");
	struct sadb *db = t_open(path, 1, 4);
	struct sadb_sa sa = t_sa(557, "10.0.0.1", "10.0.0.2");
	struct reuse_run r = { .db = db };
	unsigned long copies = 0, stale = 0;
	pthread_t th;

	assert_int_equal(sadb_sa_add(db, &sa, &r.slot), 0);
	assert_int_equal(pthread_create(&th, NULL, reuse_writer, &r), 0);
	while (!atomic_load(&r.done)) {
		uint64_t inst = __atomic_load_n(&sadb_runtime(db, r.slot)->instance, __ATOMIC_RELAXED);
		struct sadb_runtime_view v;
		int rc = sadb_runtime_read(db, r.slot, inst, SADB_RTV_REPLAY, &v);
		const uint64_t words[] = { v.packets, v.bytes, v.first_used, v.last_used, v.seq_reserved,
					   v.seq_lease, v.replay_top, v.replay_bitmap[0],
					   v.replay_bitmap[SADB_REPLAY_MAX / 64 - 1], v.drops[0],
					   v.drops[SADB_DROP_MAX - 1] };

		if (rc == -ESTALE) {
			stale++;
			for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
				assert_true(words[k] == 0);
			assert_true(v.drops_total == 0 && v.expired == 0);
			continue;
		}
		assert_int_equal(rc, 0);
		copies++;
		for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
			assert_true(words[k] == 0 || words[k] == inst);
		assert_true(v.expired == 0 || v.expired == (uint32_t)inst);
	}
	pthread_join(th, NULL);
	print_message("runtime read under reuse: %lu copies, %lu stale\n", copies, stale);
	sadb_close(db);
}

/* ---------------- dataplane stats area ---------------- */

static void test_worker_stats(void **state)
{
	const char *path = t_path("wst");
	struct sadb *w = t_open(path, 16, 4), *r = NULL;
	struct sadb_worker_stats tot, *a, *b;
	struct sadb_sa sa = t_sa(777, "10.0.0.1", "10.0.0.2");
	uint32_t slot;
	char msg[256];

	assert_int_equal(sadb_sa_add(w, &sa, &slot), 0);
	/* A new segment has no dataplane and zero counters. */
	assert_non_null(sadb_dp_stats(w));
	assert_true(sadb_dp_stats(w)->pid == 0 && sadb_dp_stats(w)->n_workers == 0);
	assert_int_equal(sadb_worker_stats_sum(w, &tot), 0);
	assert_true(sadb_worker_rx_packets(&tot) == 0 && tot.drops[SADB_DROP_BAD_SPI] == 0);
	assert_null(sadb_worker_stats(w, SADB_MAX_WORKERS));
	assert_null(sadb_worker_stats(NULL, 0));
	assert_null(sadb_dp_stats(NULL));
	assert_int_equal(sadb_worker_stats_sum(NULL, &tot), -EINVAL);
	assert_int_equal(sadb_worker_stats_sum(w, NULL), -EINVAL);

	/* The dataplane's mapping (SADB_RUNTIME) can write the records; a writer's handle sees them. */
	assert_int_equal(sadb_open(path, SADB_RUNTIME, NULL, &r, msg, sizeof(msg)), 0);
	sadb_dp_stats(r)->n_workers = 2;
	sadb_dp_stats(r)->pid = 1234;
	a = sadb_worker_stats(r, 0);
	b = sadb_worker_stats(r, SADB_MAX_WORKERS - 1);
	assert_non_null(a);
	assert_non_null(b);
	/* One record per worker on its own cache lines. */
	assert_int_equal(((uintptr_t)a) % 64, 0);
	assert_int_equal(((uintptr_t)sadb_worker_stats(r, 1)) % 64, 0);
	assert_true((uint8_t *)sadb_worker_stats(r, 1) - (uint8_t *)a >= (ptrdiff_t)sizeof(*a));
	__atomic_fetch_add(&a->rx[SADB_PORT_OUTSIDE], 10, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->rx_bytes, 1000, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->rx[SADB_PORT_INSIDE], 5, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->tx[SADB_PORT_OUTSIDE], 4, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->tx_bytes, 400, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->drops[SADB_DROP_BAD_SPI], 3, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->drops[SADB_DROP_BAD_SPI], 2, __ATOMIC_RELAXED);
	__atomic_fetch_add(&b->drops[SADB_DROP_NO_POLICY], 7, __ATOMIC_RELAXED);
	/* Writing the stats area does not spill into the runtime area or the records. */
	assert_true(sadb_runtime(w, slot)->packets == 0);
	{
		struct sadb_sa out;

		assert_int_equal(sadb_sa_lookup(w, 777, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
		assert_int_equal(out.spi, 777);
	}
	assert_int_equal(sadb_worker_stats_sum(w, &tot), 2);
	assert_true(sadb_dp_stats(w)->pid == 1234);
	assert_true(sadb_worker_rx_packets(&tot) == 15 && tot.rx[SADB_PORT_OUTSIDE] == 10 && tot.rx_bytes == 1000);
	assert_true(sadb_worker_tx_packets(&tot) == 4 && tot.tx_bytes == 400);
	assert_true(tot.drops[SADB_DROP_BAD_SPI] == 5 && tot.drops[SADB_DROP_NO_POLICY] == 7);
	assert_true(tot.drops[SADB_DROP_REPLAY] == 0);
	assert_true(sadb_worker_stats(w, 0)->drops[SADB_DROP_BAD_SPI] == 3);
	assert_int_equal(sadb_sa_delete(r, 777, SADB_PROTO_ESP, &sa.dst), -EPERM);
	sadb_close(r);
	/* The area lives in the file: a later reader sees the same counters. */
	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &r, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_worker_stats_sum(r, &tot), 2);
	assert_true(tot.drops[SADB_DROP_BAD_SPI] == 5);
	sadb_close(r);
	sadb_close(w);
}

/* ---------------- policies ---------------- */

static void test_policy_api(void **state)
{
	const char *path = t_path("pol");
	struct sadb *db = t_open(path, 16, 4);
	struct sadb_policy p = t_pol(SADB_DIR_OUT, "10.1.0.0", 16, "10.2.0.0", 16, 100), out;
	struct sadb_pkt_sel k = t_pkt("10.1.2.3", "10.2.3.4", 6, 1000, 80);
	uint32_t id1, id2, id3, cur, n;

	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), -ENOENT);
	assert_int_equal(sadb_policy_add(db, &p, &id1), 0);
	assert_int_equal(sadb_policy_add(db, &p, NULL), -EEXIST);
	assert_non_null(strstr(sadb_errmsg(db), "identical"));
	assert_int_equal(sadb_policy_get(db, id1, &out), 0);
	assert_int_equal(out.id, id1);
	assert_int_equal(out.priority, 100);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), 0);
	assert_int_equal(out.id, id1);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_IN, &k, &out), -ENOENT);
	/* A more specific policy with a better priority wins; ties go to the lower id. */
	struct sadb_policy q = t_pol(SADB_DIR_OUT, "10.1.2.0", 24, "10.2.0.0", 16, 50);
	q.sel.proto = 6;
	q.sel.dport_lo = q.sel.dport_hi = 80;
	assert_int_equal(sadb_policy_add(db, &q, &id2), 0);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), 0);
	assert_int_equal(out.id, id2);
	k.dport = 443;
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), 0);
	assert_int_equal(out.id, id1);
	struct sadb_policy tie = t_pol(SADB_DIR_OUT, NULL, 0, NULL, 0, 100);
	tie.action = SADB_ACT_DISCARD;
	assert_int_equal(sadb_policy_add(db, &tie, &id3), 0);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), 0);
	assert_int_equal(out.id, id1); /* same priority, lower id */
	k = t_pkt("2001:db8::1", "2001:db8::2", 17, 1, 2);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), 0);
	assert_int_equal(out.id, id3); /* family-any selector */
	/* Table full (4). */
	struct sadb_policy r4 = t_pol(SADB_DIR_IN, "10.9.0.0", 16, NULL, 0, 1);
	assert_int_equal(sadb_policy_add(db, &r4, NULL), 0);
	r4.priority = 2;
	assert_int_equal(sadb_policy_add(db, &r4, NULL), -ENOSPC);
	assert_non_null(strstr(sadb_errmsg(db), "full"));
	/* Iterate. */
	n = 0;
	cur = 0;
	while (sadb_policy_next(db, &cur, &out) == 0)
		n++;
	assert_int_equal(n, 4);
	/* Delete by id and by selector; stale ids never find a newer policy. */
	assert_int_equal(sadb_policy_delete(db, id2), 0);
	assert_int_equal(sadb_policy_delete(db, id2), -ENOENT);
	assert_int_equal(sadb_policy_get(db, id2, &out), -ENOENT);
	assert_int_equal(sadb_policy_add(db, &q, &id2), 0);
	assert_int_equal(sadb_policy_get(db, id2, &out), 0);
	assert_int_equal(sadb_policy_delete_sel(db, SADB_DIR_OUT, &q.sel), 0);
	assert_int_equal(sadb_policy_delete_sel(db, SADB_DIR_OUT, &q.sel), -ENOENT);
	assert_int_equal(sadb_policy_delete(db, 0), -ENOENT);
	assert_int_equal(sadb_policy_delete(db, 123456), -ENOENT);
	assert_int_equal(sadb_policy_get(db, 0, &out), -ENOENT);
	assert_int_equal(sadb_policy_flush(db), 3);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, &k, &out), -ENOENT);
	assert_int_equal(sadb_policy_flush(db), 0);
	/* Bad arguments. */
	assert_int_equal(sadb_policy_lookup(db, 9, &k, &out), -EINVAL);
	assert_int_equal(sadb_policy_lookup(db, SADB_DIR_OUT, NULL, &out), -EINVAL);
	assert_int_equal(sadb_policy_add(db, NULL, NULL), -EINVAL);
	assert_int_equal(sadb_policy_delete_sel(db, SADB_DIR_OUT, NULL), -EINVAL);
	sadb_close(db);
}

typedef void (*pol_mut)(struct sadb_policy *);
#define PMUT(name, body) static void name(struct sadb_policy *p) { body; }
PMUT(pm_dir, p->dir = 0)
PMUT(pm_action, p->action = 7)
PMUT(pm_proto, p->proto = 6)
PMUT(pm_mode, p->mode = 0)
PMUT(pm_tun, memset(&p->tun_src, 0, sizeof(p->tun_src)))
PMUT(pm_tunfam, p->tun_dst = t_addr("2001:db8::9"))
PMUT(pm_plen, p->sel.dst_plen = 40)
PMUT(pm_any_plen, memset(&p->sel.src, 0, sizeof(p->sel.src)); p->sel.src_plen = 8)
PMUT(pm_ports, p->sel.proto = 17; p->sel.dport_lo = 9; p->sel.dport_hi = 8)

static void test_policy_validation(void **state)
{
	struct {
		const char *name;
		pol_mut mut;
		const char *field;
	} rows[] = {
		{ "direction", pm_dir, "dir" },
		{ "action", pm_action, "action" },
		{ "protect proto", pm_proto, "proto" },
		{ "protect mode", pm_mode, "mode" },
		{ "tunnel endpoints", pm_tun, "tun_src" },
		{ "tunnel families", pm_tunfam, "tun_dst" },
		{ "prefix length", pm_plen, "prefix length" },
		{ "any with length", pm_any_plen, "without an address" },
		{ "port range", pm_ports, "port range" },
	};
	const char *path = t_path("polval");
	struct sadb *db = t_open(path, 4, 4);
	char msg[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sadb_policy p = t_pol(SADB_DIR_OUT, "10.0.0.0", 8, "10.1.0.0", 16, 1);
		assert_int_equal(sadb_policy_validate(&p, msg, sizeof(msg)), 0);
		rows[i].mut(&p);
		int r = sadb_policy_validate(&p, msg, sizeof(msg));
		if (r != -EINVAL || !strstr(msg, rows[i].field))
			fail_msg("%s: validate gave %d '%s'", rows[i].name, r, msg);
		r = sadb_policy_add(db, &p, NULL);
		if (r != -EINVAL || !strstr(sadb_errmsg(db), rows[i].field))
			fail_msg("%s: add gave %d '%s'", rows[i].name, r, sadb_errmsg(db));
	}
	sadb_close(db);
}

/* ---------------- transactions ---------------- */

static void test_transactions(void **state)
{
	const char *path = t_path("txn");
	struct sadb *w = t_open(path, 64, 64), *r = NULL;
	struct sadb_sa sa = t_sa(1000, "10.0.0.1", "10.0.0.2"), out;
	struct sadb_policy p = t_pol(SADB_DIR_OUT, "10.1.0.0", 16, "10.2.0.0", 16, 1), pout;
	struct sadb_pkt_sel k = t_pkt("10.1.0.1", "10.2.0.1", 6, 1, 2);
	uint64_t g0, since;
	struct sadb_change ch[16];
	char msg[256];

	assert_int_equal(sadb_open(path, SADB_RDONLY, NULL, &r, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	g0 = sadb_generation(r);
	since = g0;
	assert_int_equal(sadb_txn_begin(w), 0);
	assert_int_equal(sadb_txn_begin(w), -EBUSY);
	for (uint32_t i = 1; i <= 5; i++) {
		sa.spi = 1000 + i;
		assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	}
	sa.spi = 1000;
	sa.reqid = 99;
	assert_int_equal(sadb_sa_update(w, &sa), 0);
	assert_int_equal(sadb_policy_add(w, &p, NULL), 0);
	/* A failing call inside a transaction fails alone. */
	assert_int_equal(sadb_sa_add(w, &sa, NULL), -EEXIST);
	/* Nothing is visible before commit. */
	assert_true(sadb_generation(r) == g0);
	assert_int_equal(sadb_sa_lookup(r, 1003, SADB_PROTO_ESP, &sa.dst, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_lookup(r, 1000, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(out.reqid, 7);
	assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), -ENOENT);
	assert_int_equal(sadb_changes(r, &since, ch, 16), 0);
	assert_int_equal(sadb_txn_commit(w), 0);
	/* All of it at once, as one generation. */
	assert_true(sadb_generation(r) == g0 + 1);
	assert_int_equal(sadb_sa_lookup(r, 1003, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_lookup(r, 1000, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(out.reqid, 99);
	assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), 0);
	assert_int_equal(sadb_changes(r, &since, ch, 16), 7);
	for (int i = 0; i < 7; i++)
		assert_true(ch[i].gen == g0 + 1);
	assert_int_equal(ch[5].op, SADB_CHG_SA_UPDATE);
	assert_int_equal(ch[6].op, SADB_CHG_POL_ADD);
	/* Abort undoes adds, updates, deletes and policy changes. */
	assert_int_equal(sadb_txn_begin(w), 0);
	sa.spi = 2000;
	assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	assert_int_equal(sadb_sa_delete(w, 1001, SADB_PROTO_ESP, &sa.dst), 0);
	sa.spi = 1000;
	sa.reqid = 5;
	assert_int_equal(sadb_sa_update(w, &sa), 0);
	assert_int_equal(sadb_policy_flush(w), 1);
	assert_int_equal(sadb_sa_flush(w, SADB_PROTO_ANY), 6);
	sadb_txn_abort(w);
	assert_true(sadb_generation(r) == g0 + 1);
	assert_int_equal(sadb_sa_lookup(r, 2000, SADB_PROTO_ESP, &sa.dst, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_lookup(r, 1001, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_lookup(r, 1000, SADB_PROTO_ESP, &sa.dst, &out, NULL), 0);
	assert_int_equal(out.reqid, 99);
	assert_int_equal(sadb_policy_lookup(r, SADB_DIR_OUT, &k, &pout), 0);
	struct sadb_info info;
	sadb_info(r, &info);
	assert_int_equal(info.n_sa, 6);
	assert_int_equal(info.n_policy, 1);
	/* The writer lock is free again and the slots aborted are reusable. */
	sa.spi = 2000;
	assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	assert_int_equal(sadb_txn_commit(w), -EINVAL);
	sadb_txn_abort(w); /* no-op */
	/* An empty transaction publishes nothing. */
	uint64_t g1 = sadb_generation(r);
	assert_int_equal(sadb_txn_begin(w), 0);
	assert_int_equal(sadb_txn_commit(w), 0);
	assert_true(sadb_generation(r) == g1);
	/* Duplicate policies are found inside a transaction too: committed ones, ones added earlier
	 * in it; one deleted in it may be added again. */
	struct sadb_policy p2 = t_pol(SADB_DIR_IN, "10.7.0.0", 16, NULL, 0, 5);
	uint32_t pid1, pid2;
	assert_int_equal(sadb_txn_begin(w), 0);
	assert_int_equal(sadb_policy_add(w, &p, NULL), -EEXIST);
	assert_int_equal(sadb_policy_add(w, &p2, &pid1), 0);
	assert_int_equal(sadb_policy_add(w, &p2, NULL), -EEXIST);
	assert_int_equal(sadb_policy_delete(w, pid1), 0);
	assert_int_equal(sadb_policy_add(w, &p2, &pid2), 0);
	assert_int_not_equal(pid1, pid2);
	assert_int_equal(sadb_policy_delete_sel(w, SADB_DIR_OUT, &p.sel), 0);
	assert_int_equal(sadb_policy_add(w, &p, NULL), 0);
	assert_int_equal(sadb_txn_commit(w), 0);
	assert_int_equal(sadb_policy_get(r, pid2, &pout), 0);
	assert_int_equal(sadb_policy_get(r, pid1, &pout), -ENOENT);
	/* A second handle in the same thread cannot write while the first holds the lock. */
	struct sadb *w2 = t_open(path, 0, 0);
	assert_int_equal(sadb_txn_begin(w), 0);
	sa.spi = 4000;
	assert_int_equal(sadb_sa_add(w2, &sa, NULL), -EDEADLK);
	assert_non_null(strstr(sadb_errmsg(w2), "already holds"));
	sadb_txn_abort(w);
	assert_int_equal(sadb_sa_add(w2, &sa, NULL), 0);
	assert_string_equal(sadb_errmsg(w2), "");
	sadb_close(w2);
	/* Closing a handle with an open transaction aborts it and frees the lock. */
	assert_int_equal(sadb_txn_begin(w), 0);
	sa.spi = 3000;
	assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	sadb_close(w);
	assert_int_equal(sadb_sa_lookup(r, 3000, SADB_PROTO_ESP, &sa.dst, &out, NULL), -ENOENT);
	w = t_open(path, 0, 0);
	assert_int_equal(sadb_sa_add(w, &sa, NULL), 0);
	sadb_close(w);
	sadb_close(r);
}

/* ---------------- change journal ---------------- */

static void test_journal(void **state)
{
	const char *path = t_path("journal");
	struct sadb *db = t_open(path, 64, 8);
	struct sadb_sa sa = t_sa(1000, "10.0.0.1", "10.0.0.2");
	struct sadb_change ch[8];
	uint64_t since = sadb_generation(db), g;
	uint32_t slot;

	assert_int_equal(sadb_changes(db, &since, ch, 8), 0);
	assert_int_equal(sadb_sa_add(db, &sa, &slot), 0);
	assert_int_equal(sadb_sa_update(db, &sa), 0);
	assert_int_equal(sadb_sa_delete(db, 1000, SADB_PROTO_ESP, &sa.dst), 0);
	assert_int_equal(sadb_changes(db, &since, ch, 2), 2);
	assert_int_equal(ch[0].op, SADB_CHG_SA_ADD);
	assert_int_equal(ch[0].index, slot);
	assert_int_equal(ch[1].op, SADB_CHG_SA_UPDATE);
	assert_int_equal(sadb_changes(db, &since, ch, 8), 1);
	assert_int_equal(ch[0].op, SADB_CHG_SA_DEL);
	assert_true(since == sadb_generation(db));
	assert_int_equal(sadb_changes(db, &since, ch, 8), 0);
	/* A transaction is never split: with max smaller than it, -ESTALE. */
	assert_int_equal(sadb_txn_begin(db), 0);
	for (uint32_t i = 0; i < 4; i++) {
		sa.spi = 2000 + i;
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	}
	assert_int_equal(sadb_txn_commit(db), 0);
	g = since;
	assert_int_equal(sadb_changes(db, &g, ch, 3), -ESTALE);
	assert_int_equal(sadb_changes(db, &since, ch, 8), 4);
	assert_int_equal(sadb_sa_flush(db, SADB_PROTO_ANY), 4);
	assert_int_equal(sadb_changes(db, &since, ch, 8), 1);
	assert_int_equal(ch[0].op, SADB_CHG_FLUSH_SA);
	/* Overrun: more changes than the ring holds. */
	g = since;
	for (uint32_t i = 0; i < 35000; i++) {
		sa.spi = 3000;
		assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
		assert_int_equal(sadb_sa_delete(db, 3000, SADB_PROTO_ESP, &sa.dst), 0);
	}
	assert_int_equal(sadb_changes(db, &g, ch, 8), -ESTALE);
	assert_non_null(strstr(sadb_errmsg(db), "resynchronise"));
	/* Resynchronise from the current generation and continue. */
	since = sadb_generation(db);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	assert_int_equal(sadb_changes(db, &since, ch, 8), 1);
	assert_int_equal(sadb_changes(db, NULL, ch, 8), -EINVAL);
	sadb_close(db);
}

/* ---------------- helpers ---------------- */

static void test_addr_helpers(void **state)
{
	struct {
		const char *in;
		int ret;
		uint8_t fam;
		const char *out;
	} rows[] = {
		{ "192.0.2.1", 0, AF_INET, "192.0.2.1" },
		{ "2001:db8::1", 0, AF_INET6, "2001:db8::1" },
		{ "::ffff:1.2.3.4", 0, AF_INET6, "::ffff:1.2.3.4" },
		{ "192.0.2.256", -EINVAL, 0, NULL },
		{ "10.0.0.0/8", -EINVAL, 0, NULL },
		{ "", -EINVAL, 0, NULL },
		{ "host.example", -EINVAL, 0, NULL },
	};
	char buf[INET6_ADDRSTRLEN];
	struct sadb_addr a, b;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int r = sadb_addr_parse(rows[i].in, &a);
		if (r != rows[i].ret)
			fail_msg("parse '%s': %d", rows[i].in, r);
		if (r == 0) {
			assert_int_equal(a.family, rows[i].fam);
			assert_string_equal(sadb_addr_str(&a, buf, sizeof(buf)), rows[i].out);
		}
	}
	assert_int_equal(sadb_addr_parse(NULL, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	assert_string_equal(sadb_addr_str(&a, buf, sizeof(buf)), "any");
	a = t_addr("10.0.0.1");
	b = t_addr("10.0.0.1");
	b.a.b[5] = 9; /* bytes beyond an IPv4 address do not count */
	assert_true(sadb_addr_eq(&a, &b));
	b = t_addr("10.0.0.2");
	assert_false(sadb_addr_eq(&a, &b));
	b = t_addr("::a00:1");
	assert_false(sadb_addr_eq(&a, &b));

	struct {
		const char *in;
		int ret;
		uint8_t fam, plen;
		const char *addr;
	} prows[] = {
		{ "10.1.2.3/8", 0, AF_INET, 8, "10.0.0.0" },
		{ "10.1.2.3", 0, AF_INET, 32, "10.1.2.3" },
		{ "0.0.0.0/0", 0, AF_INET, 0, "0.0.0.0" },
		{ "2001:db8:1::/48", 0, AF_INET6, 48, "2001:db8:1::" },
		{ "2001:db8::1", 0, AF_INET6, 128, "2001:db8::1" },
		{ "2001:db8::ff/121", 0, AF_INET6, 121, "2001:db8::80" },
		{ "any", 0, 0, 0, "any" },
		{ "10.0.0.0/33", -EINVAL, 0, 0, NULL },
		{ "2001:db8::/129", -EINVAL, 0, 0, NULL },
		{ "10.0.0.0/", -EINVAL, 0, 0, NULL },
		{ "10.0.0.0/-1", -EINVAL, 0, 0, NULL },
		{ "10.0.0.0/8x", -EINVAL, 0, 0, NULL },
		{ "/8", -EINVAL, 0, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(prows) / sizeof(prows[0]); i++) {
		uint8_t plen = 99;
		int r = sadb_prefix_parse(prows[i].in, &a, &plen);
		if (r != prows[i].ret)
			fail_msg("prefix '%s': %d", prows[i].in, r);
		if (r == 0) {
			assert_int_equal(a.family, prows[i].fam);
			assert_int_equal(plen, prows[i].plen);
			assert_string_equal(sadb_addr_str(&a, buf, sizeof(buf)), prows[i].addr);
		}
	}
}

static void test_transform_tables(void **state)
{
	struct {
		uint16_t alg;
		unsigned key;
		int ret;
		unsigned salt, icv;
		const char *name;
	} erows[] = {
		{ SADB_ENC_AES_GCM16, 0, 16, 4, 16, "aes-gcm-16" },     /* RFC 4106 */
		{ SADB_ENC_AES_GCM16, 32, 32, 4, 16, "aes-gcm-16" },
		{ SADB_ENC_AES_GCM16, 20, -EINVAL, 0, 0, "aes-gcm-16" },
		{ SADB_ENC_AES_GMAC, 24, 24, 4, 16, "aes-gmac" },       /* RFC 4543 */
		{ SADB_ENC_CHACHA20_POLY1305, 0, 32, 4, 16, "chacha20-poly1305" }, /* RFC 7634 */
		{ SADB_ENC_CHACHA20_POLY1305, 16, -EINVAL, 0, 0, "chacha20-poly1305" },
		{ SADB_ENC_AES_CBC, 24, 24, 0, 0, "aes-cbc" },
		{ SADB_ENC_AES_CTR, 16, 16, 4, 0, "aes-ctr" },          /* RFC 3686 */
		{ SADB_ENC_3DES_CBC, 0, 24, 0, 0, "3des-cbc" },
		{ SADB_ENC_NULL, 0, 0, 0, 0, "null" },                  /* RFC 2410 */
		{ SADB_ENC_NULL, 8, -EINVAL, 0, 0, "null" },
		{ 77, 0, -EINVAL, 0, 0, "unknown" },
	};
	for (size_t i = 0; i < sizeof(erows) / sizeof(erows[0]); i++) {
		unsigned salt = 99, icv = 99;
		int r = sadb_enc_lengths(erows[i].alg, erows[i].key, &salt, &icv);
		if (r != erows[i].ret)
			fail_msg("enc row %zu: %d", i, r);
		if (r >= 0) {
			assert_int_equal(salt, erows[i].salt);
			assert_int_equal(icv, erows[i].icv);
		}
		assert_string_equal(sadb_enc_name(erows[i].alg), erows[i].name);
	}
	struct {
		uint16_t alg;
		int ret;
		unsigned key, icv;
		const char *name;
	} arows[] = {
		{ SADB_AUTH_HMAC_SHA1_96, 0, 20, 12, "hmac-sha1-96" },  /* RFC 2404 */
		{ SADB_AUTH_HMAC_MD5_96, 0, 16, 12, "hmac-md5-96" },
		{ SADB_AUTH_HMAC_SHA256_128, 0, 32, 16, "hmac-sha256-128" }, /* RFC 4868 */
		{ SADB_AUTH_HMAC_SHA384_192, 0, 48, 24, "hmac-sha384-192" },
		{ SADB_AUTH_HMAC_SHA512_256, 0, 64, 32, "hmac-sha512-256" },
		{ SADB_AUTH_AES_128_GMAC, 0, 16, 16, "aes-128-gmac" },
		{ SADB_AUTH_AES_256_GMAC, 0, 32, 16, "aes-256-gmac" },
		{ SADB_AUTH_NONE, 0, 0, 0, "none" },
		{ 3, -EINVAL, 0, 0, "unknown" },
	};
	for (size_t i = 0; i < sizeof(arows) / sizeof(arows[0]); i++) {
		unsigned key = 99, icv = 99;
		int r = sadb_auth_lengths(arows[i].alg, &key, &icv);
		if (r != arows[i].ret)
			fail_msg("auth row %zu: %d", i, r);
		if (r == 0) {
			assert_int_equal(key, arows[i].key);
			assert_int_equal(icv, arows[i].icv);
		}
		assert_string_equal(sadb_auth_name(arows[i].alg), arows[i].name);
	}
}

static void test_drop_names(void **state)
{
	assert_string_equal(sadb_drop_str(SADB_DROP_BAD_SPI), "no SA for SPI");
	assert_string_equal(sadb_drop_name(SADB_DROP_BAD_SPI), "bad_spi");
	assert_string_equal(sadb_drop_name(SADB_DROP_POLICY_MISMATCH), "policy_mismatch");
	assert_string_equal(sadb_drop_str(SADB_DROP_MAX), "unknown");
	assert_string_equal(sadb_drop_name(SADB_DROP_MAX + 5), "unknown");
	for (unsigned r = 0; r < SADB_DROP_MAX; r++) {
		const char *n = sadb_drop_name(r);
		assert_true(strlen(n) > 0 && strlen(sadb_drop_str(r)) > 0);
		for (const char *c = n; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
		for (unsigned q = 0; q < r; q++)
			assert_string_not_equal(n, sadb_drop_name(q));
	}
}

static void test_selector_match(void **state)
{
	struct {
		const char *name;
		const char *src;
		uint8_t splen;
		const char *dst;
		uint8_t dplen;
		uint8_t proto;
		uint16_t slo, shi, dlo, dhi;
		struct sadb_pkt_sel pkt;
		bool match;
	} rows[] = {
		{ "prefixes", "10.0.0.0", 8, "10.1.0.0", 16, 0, 0, 65535, 0, 65535, t_pkt("10.9.9.9", "10.1.2.3", 6, 1, 2), true },
		{ "dst outside", "10.0.0.0", 8, "10.1.0.0", 16, 0, 0, 65535, 0, 65535, t_pkt("10.9.9.9", "10.2.2.3", 6, 1, 2), false },
		{ "family", "10.0.0.0", 8, NULL, 0, 0, 0, 65535, 0, 65535, t_pkt("2001:db8::1", "2001:db8::2", 6, 1, 2), false },
		{ "any family", NULL, 0, NULL, 0, 0, 0, 65535, 0, 65535, t_pkt("2001:db8::1", "2001:db8::2", 6, 1, 2), true },
		{ "v6 /65", "2001:db8:0:0:8000::", 65, NULL, 0, 0, 0, 65535, 0, 65535, t_pkt("2001:db8::8000:0:0:1", "2001:db8::2", 6, 1, 2), true },
		{ "v6 /65 miss", "2001:db8:0:0:8000::", 65, NULL, 0, 0, 0, 65535, 0, 65535, t_pkt("2001:db8::7000:0:0:1", "2001:db8::2", 6, 1, 2), false },
		{ "tcp port", NULL, 0, NULL, 0, 6, 0, 65535, 80, 80, t_pkt("1.1.1.1", "2.2.2.2", 6, 1234, 80), true },
		{ "tcp other port", NULL, 0, NULL, 0, 6, 0, 65535, 80, 80, t_pkt("1.1.1.1", "2.2.2.2", 6, 1234, 81), false },
		{ "udp vs tcp", NULL, 0, NULL, 0, 6, 0, 65535, 80, 80, t_pkt("1.1.1.1", "2.2.2.2", 17, 1234, 80), false },
		{ "icmp echo type 8", NULL, 0, NULL, 0, 1, 8, 8, 0, 65535, t_pkt("1.1.1.1", "2.2.2.2", 1, 8, 0), true },
		{ "icmp reply type 0", NULL, 0, NULL, 0, 1, 8, 8, 0, 65535, t_pkt("1.1.1.1", "2.2.2.2", 1, 0, 0), false },
		{ "MH type 5 (BU)", NULL, 0, NULL, 0, 135, 5, 5, 0, 65535, t_pkt("2001:db8::1", "2001:db8::2", 135, 5, 0), true },
		{ "MH type 6 (BA)", NULL, 0, NULL, 0, 135, 5, 5, 0, 65535, t_pkt("2001:db8::1", "2001:db8::2", 135, 6, 0), false },
		{ "sport range", NULL, 0, NULL, 0, 17, 1000, 2000, 0, 65535, t_pkt("1.1.1.1", "2.2.2.2", 17, 2000, 53), true },
		{ "host /32", "10.0.0.1", 32, NULL, 0, 0, 0, 65535, 0, 65535, t_pkt("10.0.0.2", "2.2.2.2", 17, 2000, 53), false },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sadb_selector sel;
		t_sel_any(&sel);
		if (rows[i].src) {
			sel.src = t_addr(rows[i].src);
			sel.src_plen = rows[i].splen;
		}
		if (rows[i].dst) {
			sel.dst = t_addr(rows[i].dst);
			sel.dst_plen = rows[i].dplen;
		}
		sel.proto = rows[i].proto;
		sel.sport_lo = rows[i].slo;
		sel.sport_hi = rows[i].shi;
		sel.dport_lo = rows[i].dlo;
		sel.dport_hi = rows[i].dhi;
		if (sadb_selector_match(&sel, &rows[i].pkt) != rows[i].match)
			fail_msg("%s: expected %s", rows[i].name, rows[i].match ? "match" : "no match");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_mode_and_info),
		cmocka_unit_test(test_default_capacity_and_path),
		cmocka_unit_test(test_capacity_1m),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_layout_mismatch),
		cmocka_unit_test(test_readonly_handle),
		cmocka_unit_test(test_sa_roundtrip),
		cmocka_unit_test(test_sa_duplicate_and_full),
		cmocka_unit_test(test_sa_validation),
		cmocka_unit_test(test_spi_alloc),
		cmocka_unit_test(test_sa_migrate),
		cmocka_unit_test(test_keys_wiped),
		cmocka_unit_test(test_runtime),
		cmocka_unit_test(test_runtime_read),
		cmocka_unit_test(test_runtime_read_reused),
		cmocka_unit_test(test_worker_stats),
		cmocka_unit_test(test_policy_api),
		cmocka_unit_test(test_policy_validation),
		cmocka_unit_test(test_transactions),
		cmocka_unit_test(test_journal),
		cmocka_unit_test(test_home_agent),
		cmocka_unit_test(test_home_agents),
		cmocka_unit_test(test_home_agent_ipv4),
		cmocka_unit_test(test_addr_helpers),
		cmocka_unit_test(test_transform_tables),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_selector_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
