/* tests/unit/test_ike_kernel_sadb.c: unit tests of xipsec-iked's translation from strongSwan's
 * algorithm identifiers, key material layouts, hosts and traffic selectors to SADB records
 * (ike/kernel_sadb.c). Key layouts follow RFC 4106/4543/3686/7634 (key || 4-byte salt/nonce), as
 * charon derives them; transforms the dataplane has no engine for must be refused, not mangled. */
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
	return 0;
}

static int teardown(void **state)
{
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
