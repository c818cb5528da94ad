/* tests/unit/test_ike_kernel_sadb.c: unit tests of xipsec-iked's translation from strongSwan's
 * algorithm identifiers, key material layouts, hosts and traffic selectors to SADB records
 * (ike/kernel_sadb.c). Key layouts follow RFC 4106/4543/3686/7634 (key || 4-byte salt/nonce), as
 * charon derives them; transforms the dataplane has no engine for must be refused, not mangled.
 * Also the backend's own SADB housekeeping on a real segment: what a killed daemon left (its SAs,
 * policies and reserved SPIs) is removed at start, manual entries stay; and an outbound SA whose
 * reserved sequence numbers reach the soft threshold makes the backend raise one soft expiry to
 * charon (caught here by a stand-in for charon's kernel interface: charon is not running, so its own
 * kernel handler must not get it). */
#include "ike/swan.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <library.h>
#include <daemon.h>
#include <selectors/traffic_selector.h>
#include <threading/mutex.h>

#include "ike/kernel_sadb.h"

static uint8_t km[64];

static chunk_t key(size_t len)
{
	return chunk_create(km, len);
}

static void test_enc_aead_salt(void **state)
{
	static const struct { uint16_t alg, sadb; size_t len; unsigned klen; } v[] = {
		{ ENCR_AES_GCM_ICV16, SADB_ENC_AES_GCM16, 20, 16 },
		{ ENCR_AES_GCM_ICV16, SADB_ENC_AES_GCM16, 36, 32 },
		{ ENCR_CHACHA20_POLY1305, SADB_ENC_CHACHA20_POLY1305, 36, 32 },
		{ ENCR_AES_CTR, SADB_ENC_AES_CTR, 20, 16 },
		{ ENCR_NULL_AUTH_AES_GMAC, SADB_ENC_AES_GMAC, 20, 16 },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct sadb_sa sa;

		memset(&sa, 0, sizeof(sa));
		assert_int_equal(kernel_sadb_map_enc(v[i].alg, key(v[i].len), &sa), 0);
		assert_int_equal(sa.enc_alg, v[i].sadb);
		assert_int_equal(sa.enc_key_len, v[i].klen);
		assert_int_equal(sa.salt_len, 4);
		assert_memory_equal(sa.enc_key, km, v[i].klen);
		/* the salt is the tail of charon's key material */
		assert_memory_equal(sa.salt, km + v[i].klen, 4);
	}
}

static void test_enc_plain(void **state)
{
	struct sadb_sa sa;

	memset(&sa, 0, sizeof(sa));
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_CBC, key(32), &sa), 0);
	assert_int_equal(sa.enc_alg, SADB_ENC_AES_CBC);
	assert_int_equal(sa.enc_key_len, 32);
	assert_int_equal(sa.salt_len, 0);
	memset(&sa, 0, sizeof(sa));
	assert_int_equal(kernel_sadb_map_enc(ENCR_3DES, key(24), &sa), 0);
	assert_int_equal(sa.enc_alg, SADB_ENC_3DES_CBC);
	assert_true(sa.flags & SADB_SAF_LEGACY_OK);
	memset(&sa, 0, sizeof(sa));
	assert_int_equal(kernel_sadb_map_enc(ENCR_UNDEFINED, key(0), &sa), 0);
	assert_int_equal(sa.enc_alg, SADB_ENC_NONE);
	assert_int_equal(kernel_sadb_map_enc(ENCR_NULL, key(0), &sa), 0);
	assert_int_equal(sa.enc_alg, SADB_ENC_NULL);
}

static void test_enc_refused(void **state)
{
	struct sadb_sa sa;

	memset(&sa, 0, sizeof(sa));
	/* ICV lengths and modes the dataplane does not implement */
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_GCM_ICV8, key(20), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_GCM_ICV12, key(20), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_CCM_ICV16, key(19), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_CAMELLIA_CBC, key(16), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_DES, key(8), &sa), -EINVAL);
	/* wrong key sizes */
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_CBC, key(15), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_GCM_ICV16, key(3), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_AES_GCM_ICV16, key(64), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_enc(ENCR_NULL, key(4), &sa), -EINVAL);
}

static void test_auth(void **state)
{
	static const struct { uint16_t alg, sadb; size_t len; } ok[] = {
		{ AUTH_HMAC_SHA1_96, SADB_AUTH_HMAC_SHA1_96, 20 },
		{ AUTH_HMAC_SHA2_256_128, SADB_AUTH_HMAC_SHA256_128, 32 },
		{ AUTH_HMAC_SHA2_384_192, SADB_AUTH_HMAC_SHA384_192, 48 },
		{ AUTH_HMAC_SHA2_512_256, SADB_AUTH_HMAC_SHA512_256, 64 },
		{ AUTH_HMAC_MD5_96, SADB_AUTH_HMAC_MD5_96, 16 },
	};
	struct sadb_sa sa;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		memset(&sa, 0, sizeof(sa));
		assert_int_equal(kernel_sadb_map_auth(ok[i].alg, key(ok[i].len), &sa), 0);
		assert_int_equal(sa.auth_alg, ok[i].sadb);
		assert_int_equal(sa.auth_key_len, ok[i].len);
		assert_memory_equal(sa.auth_key, km, ok[i].len);
	}
	memset(&sa, 0, sizeof(sa));
	assert_int_equal(kernel_sadb_map_auth(AUTH_HMAC_SHA2_256_128, key(20), &sa), -EINVAL);
	/* the truncated-to-96 SHA-256 of old Linux kernels is not an ESP transform we offer */
	assert_int_equal(kernel_sadb_map_auth(AUTH_HMAC_SHA2_256_96, key(32), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_auth(AUTH_AES_XCBC_96, key(16), &sa), -EINVAL);
	assert_int_equal(kernel_sadb_map_auth(AUTH_UNDEFINED, key(0), &sa), 0);
	assert_int_equal(sa.auth_alg, SADB_AUTH_NONE);
}

static void test_host(void **state)
{
	struct sadb_addr a;
	host_t *h;

	h = host_create_from_string("2001:db8::7", 500);
	assert_non_null(h);
	assert_int_equal(kernel_sadb_host2addr(h, &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(a.a.b[0], 0x20);
	assert_int_equal(a.a.b[15], 7);
	h->destroy(h);
	h = host_create_from_string("192.0.2.9", 4500);
	assert_int_equal(kernel_sadb_host2addr(h, &a), 0);
	assert_int_equal(a.family, AF_INET);
	assert_memory_equal(a.a.b, "\xc0\x00\x02\x09", 4);
	h->destroy(h);
}

static void test_selectors(void **state)
{
	traffic_selector_t *src, *dst;
	struct sadb_selector sel;

	src = traffic_selector_create_from_cidr("10.1.0.0/24", IPPROTO_TCP, 0, 65535);
	dst = traffic_selector_create_from_cidr("10.2.3.4/32", IPPROTO_TCP, 443, 443);
	assert_int_equal(kernel_sadb_ts2sel(src, dst, &sel), 0);
	assert_int_equal(sel.src.family, AF_INET);
	assert_int_equal(sel.src_plen, 24);
	assert_int_equal(sel.dst_plen, 32);
	assert_memory_equal(sel.dst.a.b, "\x0a\x02\x03\x04", 4);
	assert_int_equal(sel.proto, IPPROTO_TCP);
	assert_int_equal(sel.sport_lo, 0);
	assert_int_equal(sel.sport_hi, 65535);
	assert_int_equal(sel.dport_lo, 443);
	assert_int_equal(sel.dport_hi, 443);
	src->destroy(src);
	dst->destroy(dst);

	/* ICMP echo request: type 8 code 0, carried by strongSwan as (type << 8 | code) */
	src = traffic_selector_create_from_cidr("fd01::/64", IPPROTO_ICMPV6, 128 << 8, 128 << 8);
	dst = traffic_selector_create_from_cidr("fd02::/64", IPPROTO_ICMPV6, 0, 65535);
	assert_int_equal(kernel_sadb_ts2sel(src, dst, &sel), 0);
	assert_int_equal(sel.src.family, AF_INET6);
	assert_int_equal(sel.sport_lo, 128);
	assert_int_equal(sel.sport_hi, 128);
	assert_int_equal(sel.dport_lo, 0);
	assert_int_equal(sel.dport_hi, 0);
	src->destroy(src);
	dst->destroy(dst);

	/* a range that is no subnet cannot be held as a prefix: refused, not widened */
	src = traffic_selector_create_from_string(0, TS_IPV4_ADDR_RANGE, "10.0.0.1", 0, "10.0.0.5", 65535);
	dst = traffic_selector_create_from_cidr("10.2.0.0/16", 0, 0, 65535);
	assert_int_equal(kernel_sadb_ts2sel(src, dst, &sel), -EINVAL);
	src->destroy(src);
	dst->destroy(dst);
}
/* ---- SADB housekeeping on a real segment ---- */

static char sadb_path[64];

static struct sadb *open_db(void)
{
	struct sadb *db = NULL;
	char err[256] = "";

	snprintf(sadb_path, sizeof(sadb_path), "/dev/shm/test_ike_ks.%d.sadb", (int)getpid());
	sadb_unlink(sadb_path);
	if (sadb_open(sadb_path, SADB_RDWR | SADB_CREATE, NULL, &db, err, sizeof(err)) < 0)
		fail_msg("sadb_open %s: %s", sadb_path, err);
	return db;
}

static void fill_sa(struct sadb_sa *sa, uint32_t spi, uint8_t dir, uint32_t ike_id)
{
	memset(sa, 0, sizeof(*sa));
	sa->spi = spi;
	sa->proto = SADB_PROTO_ESP;
	sa->mode = SADB_MODE_TUNNEL;
	sa->dir = dir;
	sa->state = SADB_STATE_MATURE;
	sa->src.family = sa->dst.family = AF_INET;
	sa->src.a.b[0] = 192; sa->src.a.b[3] = 1;
	sa->dst.a.b[0] = 192; sa->dst.a.b[3] = 2;
	sa->enc_alg = SADB_ENC_AES_GCM16;
	sa->enc_key_len = 16;
	sa->salt_len = 4;
	memcpy(sa->enc_key, km, 16);
	memcpy(sa->salt, km + 16, 4);
	sa->enc_key[0] = (uint8_t)spi;   /* the two directions must not share a key */
	sa->replay_window = 64;
	sa->sel.sport_hi = sa->sel.dport_hi = 0xffff;
	sa->ike_id = ike_id;
}

static unsigned count_state(struct sadb *db, uint8_t state)
{
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	unsigned n = 0;

	while (sadb_sa_next(db, &cur, &sa, &slot) == 0)
		n += sa.state == state;
	return n;
}

static void test_orphans(void **state)
{
	struct sadb *db = open_db();
	struct sadb_sa sa, out;
	struct sadb_policy p;
	struct sadb_addr src, dst;
	unsigned nsa = 9, npol = 9, nlarval = 9;
	uint32_t spi[3], id;
	int i;

	fill_sa(&sa, 0x1001, SADB_DIR_OUT, 0);          /* manual (ipsecctl) */
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	fill_sa(&sa, 0x1002, SADB_DIR_IN, 7);           /* negotiated by a dead daemon */
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	src = sa.src;
	dst = sa.dst;
	/* SPIs reserved for exchanges that never completed */
	for (i = 0; i < 3; i++)
		assert_int_equal(sadb_spi_alloc(db, SADB_PROTO_ESP, &dst, &src, 0xc0000000, 0xcfffffff,
						&spi[i]), 0);
	assert_int_equal(count_state(db, SADB_STATE_LARVAL), 3);
	memset(&p, 0, sizeof(p));
	p.dir = SADB_DIR_OUT;
	p.action = SADB_ACT_BYPASS;
	p.priority = 100;
	p.sel.sport_hi = p.sel.dport_hi = 0xffff;
	assert_int_equal(sadb_policy_add(db, &p, &id), 0);   /* manual */
	p.priority = 200;
	p.ike_id = 7;
	assert_int_equal(sadb_policy_add(db, &p, &id), 0);   /* negotiated */

	kernel_sadb_remove_orphans(db, &nsa, &npol, &nlarval);
	assert_int_equal(nsa, 1);
	assert_int_equal(npol, 1);
	assert_int_equal(nlarval, 3);
	assert_int_equal(count_state(db, SADB_STATE_LARVAL), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(sadb_sa_lookup(db, spi[i], SADB_PROTO_ESP, &src, &out, NULL), -ENOENT);
	assert_int_equal(sadb_sa_lookup(db, 0x1001, SADB_PROTO_ESP, &dst, &out, NULL), 0);
	assert_int_equal(sadb_sa_lookup(db, 0x1002, SADB_PROTO_ESP, &dst, &out, NULL), -ENOENT);
	id = 0;
	assert_int_equal(sadb_policy_next(db, &id, &p), 0);
	assert_int_equal(p.ike_id, 0);
	assert_int_equal(sadb_policy_next(db, &id, &p), -ENOENT);

	/* nothing left to do the second time */
	kernel_sadb_remove_orphans(db, &nsa, &npol, &nlarval);
	assert_int_equal(nsa + npol + nlarval, 0);
	sadb_close(db);
	sadb_unlink(sadb_path);
}

static void test_seq_soft_limit(void **state)
{
	uint64_t v = 0;

	assert_true(kernel_sadb_seq_soft_limit(false, 0) == 4294967296ull - 16777216ull);
	assert_true(kernel_sadb_seq_soft_limit(true, 0) == 0xff00000000000000ull);
	assert_true(kernel_sadb_seq_soft_limit(false, 300) == 300);
	assert_true(kernel_sadb_seq_soft_limit(true, 300) == 300);
	assert_int_equal(kernel_sadb_parse_seq_soft("300", &v), 0);
	assert_true(v == 300);
	assert_int_equal(kernel_sadb_parse_seq_soft("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(kernel_sadb_parse_seq_soft("18446744073709551616", &v), -EINVAL);
	assert_int_equal(kernel_sadb_parse_seq_soft("0", &v), -EINVAL);
	assert_int_equal(kernel_sadb_parse_seq_soft("-1", &v), -EINVAL);
	assert_int_equal(kernel_sadb_parse_seq_soft("12k", &v), -EINVAL);
	assert_int_equal(kernel_sadb_parse_seq_soft("", &v), -EINVAL);
}

/* An SA installed after the expiry check read the clock is 0 ms old, not 2^64 - 1 ms (past every
 * lifetime: it would be hard-expired at once). */
static void test_age(void **state)
{
	timeval_t now = { .tv_sec = 100, .tv_usec = 500000 };
	timeval_t t1 = { .tv_sec = 99, .tv_usec = 900000 };
	timeval_t t2 = { .tv_sec = 100, .tv_usec = 600000 };
	timeval_t t3 = { .tv_sec = 101, .tv_usec = 0 };

	assert_int_equal(kernel_sadb_age_ms(&now, &now), 0);
	assert_int_equal(kernel_sadb_age_ms(&now, &t1), 600);
	assert_int_equal(kernel_sadb_age_ms(&t3, &t1), 1100);
	assert_int_equal(kernel_sadb_age_ms(&now, &t2), 0);
	assert_int_equal(kernel_sadb_age_ms(&now, &t3), 0);
}

/* In place of charon's kernel interface (the backend's only use of it is expire): counts expiries. */
struct expiry_catcher {
	kernel_interface_t kernel;    /* first member */
	mutex_t *mutex;
	unsigned soft, hard;
	uint32_t last_spi;            /* host order */
};

static void catch_expire(kernel_interface_t *k, uint8_t protocol, uint32_t spi, host_t *dst, bool hard)
{
	struct expiry_catcher *c = (struct expiry_catcher *)k;

	c->mutex->lock(c->mutex);
	if (hard)
		c->hard++;
	else
		c->soft++;
	c->last_spi = ntohl(spi);
	c->mutex->unlock(c->mutex);
}

static unsigned soft_count(struct expiry_catcher *c)
{
	unsigned n;

	c->mutex->lock(c->mutex);
	n = c->soft;
	c->mutex->unlock(c->mutex);
	return n;
}

/* Within ~1.5 s (the backend checks every 250 ms), the soft count reaches want; then it must stay. */
static bool soft_reaches(struct expiry_catcher *c, unsigned want)
{
	int i;

	for (i = 0; i < 150 && soft_count(c) < want; i++)
		usleep(10000);
	return soft_count(c) == want;
}

static void add_out_sa(kernel_ipsec_t *ks, uint32_t spi, bool esn, bool inbound, host_t *src, host_t *dst)
{
	lifetime_cfg_t lt;
	kernel_ipsec_sa_id_t id = {
		.src = src, .dst = dst, .spi = htonl(spi), .proto = IPPROTO_ESP,
	};
	kernel_ipsec_add_sa_t data = {
		.reqid = 1, .mode = MODE_TUNNEL, .lifetime = &lt, .enc_alg = ENCR_AES_GCM_ICV16,
		.enc_key = key(20), .int_alg = AUTH_UNDEFINED, .replay_window = 64, .esn = esn,
		.copy_df = TRUE, .copy_ecn = TRUE, .copy_dscp = DSCP_COPY_OUT_ONLY, .inbound = inbound,
	};

	memset(&lt, 0, sizeof(lt));   /* no time, byte or packet limit: only the sequence space */
	km[0] = (uint8_t)spi;
	assert_int_equal(ks->add_sa(ks, &id, &data), SUCCESS);
}

static struct sadb_runtime *rt_of(struct sadb *db, uint32_t spi, host_t *dst)
{
	struct sadb_addr d;
	struct sadb_sa sa;
	uint32_t slot;

	assert_int_equal(kernel_sadb_host2addr(dst, &d), 0);
	assert_int_equal(sadb_sa_lookup(db, spi, SADB_PROTO_ESP, &d, &sa, &slot), 0);
	return sadb_runtime(db, slot);
}

/* One backend for both cases: its expiry job runs on charon's worker threads until teardown stops
 * them, as charon stops them before it destroys its kernel-ipsec backend. */
static kernel_ipsec_t *ks_backend;
static struct sadb *ks_view;          /* the dataplane's handle: writes the runtime area */
static struct expiry_catcher catcher = { .kernel = { .expire = catch_expire } };
static kernel_interface_t *real_kernel;

static void backend_up(void)
{
	struct sadb *db;
	char err[256];

	if (ks_backend)
		return;
	db = open_db();
	assert_int_equal(sadb_open(sadb_path, SADB_RUNTIME, NULL, &ks_view, err, sizeof(err)), 0);
	catcher.mutex = mutex_create(MUTEX_TYPE_DEFAULT);
	real_kernel = charon->kernel;
	charon->kernel = &catcher.kernel;
	kernel_sadb_set_db(db);
	ks_backend = kernel_sadb_create();
	assert_non_null(ks_backend);
}

static void backend_down(void)
{
	if (!ks_backend)
		return;
	lib->processor->cancel(lib->processor);
	lib->scheduler->flush(lib->scheduler);
	ks_backend->destroy(ks_backend);   /* deletes its SAs and closes its handle */
	ks_backend = NULL;
	charon->kernel = real_kernel;
	sadb_close(ks_view);
	sadb_unlink(sadb_path);
	catcher.mutex->destroy(catcher.mutex);
}

/* SAs spi, spi+1 (ESN) outbound and spi+2 inbound, added with threshold override in force. */
static void seq_soft_case(uint32_t spi, uint64_t override, uint64_t limit32, uint64_t limit64)
{
	host_t *a = host_create_from_string("192.0.2.1", 0), *b = host_create_from_string("192.0.2.2", 0);
	struct expiry_catcher *c = &catcher;
	struct sadb_runtime *r32, *r64, *rin;
	unsigned base;

	backend_up();
	kernel_sadb_set_seq_soft(override);
	add_out_sa(ks_backend, spi, false, false, a, b);
	add_out_sa(ks_backend, spi + 1, true, false, a, b);
	add_out_sa(ks_backend, spi + 2, false, true, b, a);   /* inbound: the sequence numbers are the peer's */
	kernel_sadb_set_seq_soft(0);
	r32 = rt_of(ks_view, spi, b);
	r64 = rt_of(ks_view, spi + 1, b);
	rin = rt_of(ks_view, spi + 2, a);
	base = soft_count(c);

	/* one below each threshold: nothing */
	__atomic_store_n(&r32->seq_reserved, limit32 - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r64->seq_reserved, limit64 - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&rin->seq_reserved, UINT64_MAX, __ATOMIC_RELEASE);
	usleep(600000);
	assert_int_equal(soft_count(c), base);
	/* the 32-bit SA reaches its threshold: one soft expiry for it */
	__atomic_store_n(&r32->seq_reserved, limit32, __ATOMIC_RELEASE);
	assert_true(soft_reaches(c, base + 1));
	assert_int_equal(c->last_spi, spi);
	/* more reservations do not raise it again */
	__atomic_store_n(&r32->seq_reserved, limit32 + 5000, __ATOMIC_RELEASE);
	usleep(600000);
	assert_int_equal(soft_count(c), base + 1);
	/* the ESN SA reaches its own threshold */
	__atomic_store_n(&r64->seq_reserved, limit64, __ATOMIC_RELEASE);
	assert_true(soft_reaches(c, base + 2));
	assert_int_equal(c->last_spi, spi + 1);
	usleep(600000);
	assert_int_equal(soft_count(c), base + 2);
	assert_int_equal(c->hard, 0);
	a->destroy(a);
	b->destroy(b);
}

static void test_seq_soft_default(void **state)
{
	seq_soft_case(0xc0000101, 0, 0xff000000ull, 0xff00000000000000ull);
}

/* XIPSEC_SEQ_SOFT: one threshold for every SA, 32-bit or ESN */
static void test_seq_soft_override(void **state)
{
	seq_soft_case(0xc0000201, 300, 300, 300);
}

static int setup(void **state)
{
	char conf[] = "/tmp/test_ike_ks.XXXXXX";
	int fd = mkstemp(conf);
	size_t i;

	/* libstrongswan wants a readable strongswan.conf: an empty one, never the system's */
	if (fd < 0 || write(fd, "\n", 1) != 1)
		return -1;
	close(fd);
	if (!library_init(conf, "test-ike")) {
		unlink(conf);
		return -1;
	}
	unlink(conf);
	/* ike/ logs through charon's bus (libcharon's DBG macros): charon must exist, not run */
	if (!libcharon_init())
		return -1;
	for (i = 0; i < sizeof(km); i++)
		km[i] = (uint8_t)(0xa0 + i);
	/* the backend's expiry check is a scheduled job: it needs worker threads (not charon->start) */
	lib->processor->set_threads(lib->processor, 2);
	return 0;
}

static int teardown(void **state)
{
	backend_down();
	libcharon_deinit();
	library_deinit();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enc_aead_salt),
		cmocka_unit_test(test_enc_plain),
		cmocka_unit_test(test_enc_refused),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_selectors),
		cmocka_unit_test(test_orphans),
		cmocka_unit_test(test_seq_soft_limit),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_seq_soft_default),
		cmocka_unit_test(test_seq_soft_override),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
