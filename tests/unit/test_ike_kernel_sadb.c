/* tests/unit/test_ike_kernel_sadb.c: unit tests of xipsec-iked's translation from strongSwan's
 * algorithm identifiers, key material layouts, hosts and traffic selectors to SADB records
 * (ike/kernel_sadb.c). Key layouts follow RFC 4106/4543/3686/7634 (key || 4-byte salt/nonce), as
 * charon derives them; transforms the dataplane has no engine for must be refused, not mangled.
 * Also the backend's own SADB housekeeping on a real segment: what a killed daemon left (its SAs,
 * policies and reserved SPIs) is removed at start, manual entries stay; and an outbound SA whose
 * reserved sequence numbers reach the soft threshold makes the backend raise one soft expiry to
 * charon (caught here by a stand-in for charon's kernel interface: charon is not running, so its own
 * kernel handler must not get it); and the backend's records of a few thousand SAs and policies
 * (found again after a migration, per-reqid last use, shared policies, flushes). */
#include "ike/swan.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* one of the catcher's counts, read under its lock */
static unsigned caught(struct expiry_catcher *c, const unsigned *count)
{
	unsigned n;

	c->mutex->lock(c->mutex);
	n = *count;
	c->mutex->unlock(c->mutex);
	return n;
}

static unsigned soft_count(struct expiry_catcher *c)
{
	return caught(c, &c->soft);
}

static unsigned hard_count(struct expiry_catcher *c)
{
	return caught(c, &c->hard);
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

static void add_sa_reqid(kernel_ipsec_t *ks, uint32_t spi, uint32_t reqid, bool inbound, host_t *src,
			 host_t *dst)
{
	lifetime_cfg_t lt;
	kernel_ipsec_sa_id_t id = {
		.src = src, .dst = dst, .spi = htonl(spi), .proto = IPPROTO_ESP,
	};
	kernel_ipsec_add_sa_t data = {
		.reqid = reqid, .mode = MODE_TUNNEL, .lifetime = &lt, .enc_alg = ENCR_AES_GCM_ICV16,
		.enc_key = key(20), .int_alg = AUTH_UNDEFINED, .replay_window = 64,
		.copy_df = TRUE, .copy_ecn = TRUE, .copy_dscp = DSCP_COPY_OUT_ONLY, .inbound = inbound,
	};

	memset(&lt, 0, sizeof(lt));
	km[0] = (uint8_t)spi;
	assert_int_equal(ks->add_sa(ks, &id, &data), SUCCESS);
}

/* A /32 -> /32 policy of CHILD SA i in direction dir for reqid, through ks; add or delete. */
static status_t pol_op(kernel_ipsec_t *ks, bool add, policy_dir_t dir, unsigned i, uint32_t reqid,
		       host_t *me, host_t *peer)
{
	char l[32], r[32];
	traffic_selector_t *lts, *rts;
	ipsec_sa_cfg_t sa = { .mode = MODE_TUNNEL, .reqid = reqid, .esp = { .use = TRUE } };
	kernel_ipsec_policy_id_t id = { .dir = dir };
	kernel_ipsec_manage_policy_t data = { .type = POLICY_IPSEC, .prio = POLICY_PRIORITY_DEFAULT, .sa = &sa };
	status_t st;

	snprintf(l, sizeof(l), "10.1.%u.%u/32", i >> 8, i & 255);
	snprintf(r, sizeof(r), "10.2.%u.%u/32", i >> 8, i & 255);
	lts = traffic_selector_create_from_cidr(l, 0, 0, 65535);
	rts = traffic_selector_create_from_cidr(r, 0, 0, 65535);
	id.src_ts = dir == POLICY_OUT ? lts : rts;
	id.dst_ts = dir == POLICY_OUT ? rts : lts;
	data.src = dir == POLICY_OUT ? me : peer;
	data.dst = dir == POLICY_OUT ? peer : me;
	st = add ? ks->add_policy(ks, &id, &data) : ks->del_policy(ks, &id, &data);
	lts->destroy(lts);
	rts->destroy(rts);
	return st;
}

static status_t pol_query(kernel_ipsec_t *ks, unsigned i, time_t *use)
{
	char l[32], r[32];
	traffic_selector_t *lts, *rts;
	kernel_ipsec_policy_id_t id = { .dir = POLICY_IN };
	kernel_ipsec_query_policy_t q = {};
	status_t st;

	snprintf(l, sizeof(l), "10.1.%u.%u/32", i >> 8, i & 255);
	snprintf(r, sizeof(r), "10.2.%u.%u/32", i >> 8, i & 255);
	lts = traffic_selector_create_from_cidr(l, 0, 0, 65535);
	rts = traffic_selector_create_from_cidr(r, 0, 0, 65535);
	id.src_ts = rts;
	id.dst_ts = lts;
	st = ks->query_policy(ks, &id, &q, use);
	lts->destroy(lts);
	rts->destroy(rts);
	return st;
}

static unsigned n_policies(struct sadb *db)
{
	struct sadb_info in;

	assert_int_equal(sadb_info(db, &in), 0);
	return in.n_policy;
}

static unsigned n_sas(struct sadb *db)
{
	struct sadb_info in;

	assert_int_equal(sadb_info(db, &in), 0);
	return in.n_sa;
}

/* The backend's records of what it installed, with a few thousand CHILD SAs: each SA is found again
 * by its identity after a migration (deleted there; the flush finds it there), a policy's last use is
 * that of the inbound SAs of its reqid, a policy with two users stays in the SADB until the second
 * goes, and the flushes remove everything the backend installed and nothing else. */
static void test_records(void **state)
{
	host_t *a = host_create_from_string("192.0.2.1", 0), *b = host_create_from_string("192.0.2.2", 0);
	host_t *b2 = host_create_from_string("192.0.2.9", 0);
	kernel_ipsec_sa_id_t id = { .src = a, .dst = b, .proto = IPPROTO_ESP };
	kernel_ipsec_update_sa_t up = { .new_src = a, .new_dst = b2 };
	kernel_ipsec_del_sa_t del = {};
	struct sadb_runtime *rt;
	struct sadb_addr d2;
	struct sadb_sa sa;
	struct sadb_policy p;
	const unsigned n = 2000;
	unsigned i, sa0, pol0, found;
	uint32_t cur;
	time_t use = 0, mono;

	backend_up();
	sa0 = n_sas(ks_view);
	pol0 = n_policies(ks_view);
	for (i = 0; i < n; i++) {
		add_sa_reqid(ks_backend, 0xc1000000 + i, 100 + i, false, a, b);
		add_sa_reqid(ks_backend, 0xc2000000 + i, 100 + i, true, b, a);
		assert_int_equal(pol_op(ks_backend, true, POLICY_OUT, i, 100 + i, a, b), SUCCESS);
		assert_int_equal(pol_op(ks_backend, true, POLICY_IN, i, 100 + i, a, b), SUCCESS);
	}
	assert_int_equal(n_sas(ks_view), sa0 + 2 * n);
	assert_int_equal(n_policies(ks_view), pol0 + 2 * n);

	/* migrated (the peer moved): deleted at its new identity */
	assert_int_equal(kernel_sadb_host2addr(b2, &d2), 0);
	id.spi = htonl(0xc1000005);
	assert_int_equal(ks_backend->update_sa(ks_backend, &id, &up), SUCCESS);
	id.dst = b2;
	assert_int_equal(ks_backend->del_sa(ks_backend, &id, &del), SUCCESS);
	assert_int_equal(sadb_sa_lookup(ks_view, 0xc1000005, SADB_PROTO_ESP, &d2, &sa, NULL), -ENOENT);
	assert_int_equal(ks_backend->del_sa(ks_backend, &id, &del), NOT_FOUND);
	/* migrated and left: the flush below must find it at its new identity */
	id.dst = b;
	id.spi = htonl(0xc1000006);
	assert_int_equal(ks_backend->update_sa(ks_backend, &id, &up), SUCCESS);
	assert_int_equal(sadb_sa_lookup(ks_view, 0xc1000006, SADB_PROTO_ESP, &d2, &sa, NULL), 0);

	/* last use of CHILD SA 7's inbound policy: that of its inbound SA (5 s ago); 9's: never */
	rt = rt_of(ks_view, 0xc2000007, a);
	__atomic_store_n(&rt->last_used, (uint64_t)time(NULL) - 5, __ATOMIC_RELAXED);
	assert_int_equal(pol_query(ks_backend, 7, &use), SUCCESS);
	mono = time_monotonic(NULL);
	assert_true(use >= mono - 6 && use <= mono - 4);
	assert_int_equal(pol_query(ks_backend, 9, &use), SUCCESS);
	assert_int_equal(use, 0);
	assert_int_equal(pol_query(ks_backend, n + 1, &use), NOT_FOUND);

	/* a second user of CHILD SA 8's outbound policy (its rekeyed successor, reqid 9000) */
	assert_int_equal(pol_op(ks_backend, true, POLICY_OUT, 8, 9000, a, b), SUCCESS);
	assert_int_equal(n_policies(ks_view), pol0 + 2 * n);
	assert_int_equal(pol_op(ks_backend, false, POLICY_OUT, 8, 108, a, b), SUCCESS);
	found = 0;
	cur = 0;
	while (sadb_policy_next(ks_view, &cur, &p) == 0)
		if (p.dir == SADB_DIR_OUT && p.sel.src.a.b[2] == 0 && p.sel.src.a.b[3] == 8 &&
		    p.sel.src.a.b[1] == 1)
			found = p.reqid;
	assert_int_equal(found, 9000);
	assert_int_equal(pol_op(ks_backend, false, POLICY_OUT, 8, 9000, a, b), SUCCESS);
	assert_int_equal(n_policies(ks_view), pol0 + 2 * n - 1);
	assert_int_equal(pol_op(ks_backend, false, POLICY_OUT, 8, 9000, a, b), NOT_FOUND);

	assert_int_equal(ks_backend->flush_policies(ks_backend), SUCCESS);
	assert_int_equal(n_policies(ks_view), pol0);
	assert_int_equal(ks_backend->flush_sas(ks_backend), SUCCESS);
	assert_int_equal(n_sas(ks_view), sa0);
	assert_int_equal(sadb_sa_lookup(ks_view, 0xc1000006, SADB_PROTO_ESP, &d2, &sa, NULL), -ENOENT);
	a->destroy(a);
	b->destroy(b);
	b2->destroy(b2);
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

/* Expiry bits xipsecd set (a lone cluster node's sequence budget: soft at half, hard at the end) on
 * SAs with no limit of their own become charon's expire, soft then hard, each once; an SA the
 * dataplane hard-expires at once gets one hard expire and no soft one. */
static void test_dataplane_expiry(void **state)
{
	host_t *a = host_create_from_string("192.0.2.1", 0), *b = host_create_from_string("192.0.2.2", 0);
	struct expiry_catcher *c = &catcher;
	struct sadb_runtime *r1, *r2;
	unsigned soft0, hard0, i;

	backend_up();
	add_out_sa(ks_backend, 0xc0000301, false, false, a, b);
	add_out_sa(ks_backend, 0xc0000302, false, false, a, b);
	r1 = rt_of(ks_view, 0xc0000301, b);
	r2 = rt_of(ks_view, 0xc0000302, b);
	soft0 = soft_count(c);
	hard0 = hard_count(c);
	usleep(600000);
	assert_int_equal(soft_count(c), soft0);
	assert_int_equal(hard_count(c), hard0);

	/* the dataplane's soft bit: one soft expire (a rekey), not repeated */
	__atomic_fetch_or(&r1->expired, 1u, __ATOMIC_RELEASE);
	assert_true(soft_reaches(c, soft0 + 1));
	assert_int_equal(c->last_spi, 0xc0000301);
	usleep(600000);
	assert_int_equal(soft_count(c), soft0 + 1);
	assert_int_equal(hard_count(c), hard0);
	/* then its hard bit (the budget spent before the rekey finished): one hard expire (a delete) */
	__atomic_fetch_or(&r1->expired, 3u, __ATOMIC_RELEASE);
	for (i = 0; i < 150 && hard_count(c) < hard0 + 1; i++)
		usleep(10000);
	assert_int_equal(hard_count(c), hard0 + 1);
	assert_int_equal(c->last_spi, 0xc0000301);
	/* both bits at once: hard only */
	__atomic_fetch_or(&r2->expired, 3u, __ATOMIC_RELEASE);
	for (i = 0; i < 150 && hard_count(c) < hard0 + 2; i++)
		usleep(10000);
	assert_int_equal(hard_count(c), hard0 + 2);
	assert_int_equal(c->last_spi, 0xc0000302);
	usleep(600000);
	assert_int_equal(soft_count(c), soft0 + 1);
	assert_int_equal(hard_count(c), hard0 + 2);
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
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_seq_soft_default),
		cmocka_unit_test(test_seq_soft_override),
		cmocka_unit_test(test_dataplane_expiry),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
