/* tests/unit/test_esp.c: the ESP/AH engine's known-answer tests (published vectors run through every
 * backend's pre-keyed contexts) and round trips of every transform x mode x outer/inner family x ESN x
 * NAT-T, encrypted by each backend and decrypted by each other one, with the ciphertexts of all
 * backends compared byte for byte (same SA, same sequence numbers, same IVs). */
#include "config.h"

#include <openssl/evp.h>

#include "tests/unit/test_esp_util.h"
#include "dataplane/engine/esp_internal.h"

static const enum esp_backend backends[] = { ESP_BACKEND_IPSECMB, ESP_BACKEND_OPENSSL, ESP_BACKEND_SODIUM,
					      ESP_BACKEND_NATIVE };
#define N_BACKENDS 4

static void hex(const char *s, uint8_t *out, size_t *len)
{
	size_t n = strlen(s) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	*len = n;
}

/* An SA with exactly these keys on backend b, or NULL if b lacks the transform. */
static struct esp_sa *kat_sa(enum esp_backend b, uint8_t proto, uint8_t dir, uint16_t enc,
			     const uint8_t *key, unsigned klen, uint16_t auth, const uint8_t *akey,
			     unsigned aklen, struct sadb_runtime *rt)
{
	struct sadb_sa s;
	memset(&s, 0, sizeof(s));
	s.spi = 0x100;
	s.proto = proto;
	s.mode = SADB_MODE_TRANSPORT;
	s.dir = dir;
	s.flags = SADB_SAF_LEGACY_OK;
	s.enc_alg = enc;
	s.auth_alg = auth;
	s.enc_key_len = (uint8_t)klen;
	if (klen)
		memcpy(s.enc_key, key, klen);
	if (enc == SADB_ENC_AES_GCM16 || enc == SADB_ENC_AES_GMAC || enc == SADB_ENC_CHACHA20_POLY1305 ||
	    enc == SADB_ENC_AES_CTR)
		s.salt_len = 4;
	s.auth_key_len = (uint8_t)aklen;
	if (aklen)
		memcpy(s.auth_key, akey, aklen);
	s.instance = 1;
	rt->instance = 1;
	struct esp_sa *sa = NULL;
	struct esp_sa_opts o = { .backend = b };
	int r = esp_sa_create(&s, rt, &o, &sa);
	if (r == -ENOTSUP)
		return NULL;
	assert_int_equal(r, 0);
	return sa;
}

/* RFC 2202 (MD5, SHA-1) and RFC 4231 (SHA-2) test cases 1 and 2, truncated as IPsec uses them. */
static void test_kat_hmac(void **state)
{
	(void)state;
	static const struct {
		uint16_t auth;
		unsigned case_no;
		const char *mac;
	} v[] = {
		{ SADB_AUTH_HMAC_MD5_96, 1, "9294727a3638bb1c13f48ef8158bfc9d" },
		{ SADB_AUTH_HMAC_MD5_96, 2, "750c783e6ab0b503eaa86e310a5db738" },
		{ SADB_AUTH_HMAC_SHA1_96, 1, "b617318655057264e28bc0b6fb378c8ef146be00" },
		{ SADB_AUTH_HMAC_SHA1_96, 2, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79" },
		{ SADB_AUTH_HMAC_SHA256_128, 1, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ SADB_AUTH_HMAC_SHA256_128, 2, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ SADB_AUTH_HMAC_SHA384_192, 1, "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c"
						"faea9ea9076ede7f4af152e8b2fa9cb6" },
		{ SADB_AUTH_HMAC_SHA384_192, 2, "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
						"8e2240ca5e69e2c78b3239ecfab21649" },
		{ SADB_AUTH_HMAC_SHA512_256, 1, "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
						"daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854" },
		{ SADB_AUTH_HMAC_SHA512_256, 2, "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
						"9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t key[20], data[64], want[64];
		unsigned klen, dlen;
		size_t wl;
		if (v[i].case_no == 1) {
			klen = v[i].auth == SADB_AUTH_HMAC_MD5_96 ? 16 : 20;
			memset(key, 0x0b, klen);
			dlen = 8;
			memcpy(data, "Hi There", 8);
		} else {
			klen = 4;
			memcpy(key, "Jefe", 4);
			dlen = 28;
			memcpy(data, "what do ya want for nothing?", 28);
		}
		hex(v[i].mac, want, &wl);
		for (int b = 0; b < N_BACKENDS; b++) {
			struct sadb_runtime *rt = rt_new();
			struct esp_sa *sa = kat_sa(backends[b], SADB_PROTO_AH, SADB_DIR_OUT, SADB_ENC_NONE, NULL, 0,
						   v[i].auth, key, klen, rt);
			if (sa) {
				struct esp_cop c;
				uint8_t tag[64], buf[64];
				memset(&c, 0, sizeof(c));
				memcpy(buf, data, dlen);
				c.auth = buf;
				c.auth_len = dlen;
				c.tag = tag;
				sa->ops->encrypt(&sa->cs, &c, 1);
				assert_true(c.ok);
				if (memcmp(tag, want, sa->icv_len)) {
					print_error("hmac %u case %u backend %s\n", v[i].auth, v[i].case_no,
						    esp_backend_name(backends[b]));
					fail();
				}
				esp_sa_destroy(sa);
			}
			free(rt);
		}
	}
}

/* One AEAD/GMAC/cipher operation through every backend: encrypt must give want_ct||want_tag, and
 * decrypt must give back the plaintext and refuse a flipped tag. */
static void aead_kat(uint16_t enc, const char *key_h, const char *nonce_h, const char *aad_h,
		     const char *pt_h, const char *ct_h, const char *tag_h)
{
	uint8_t key[32], nonce[16], aad[64], pt[128], ct[128], tag[16];
	size_t kl, nl, al, pl, cl, tl;
	hex(key_h, key, &kl);
	hex(nonce_h, nonce, &nl);
	hex(aad_h, aad, &al);
	hex(pt_h, pt, &pl);
	hex(ct_h, ct, &cl);
	hex(tag_h, tag, &tl);
	int tried = 0;
	for (int b = 0; b < N_BACKENDS; b++) {
		struct sadb_runtime *rt = rt_new(), *rt2 = rt_new();
		struct esp_sa *o = kat_sa(backends[b], SADB_PROTO_ESP, SADB_DIR_OUT, enc, key, (unsigned)kl,
					  SADB_AUTH_NONE, NULL, 0, rt);
		struct esp_sa *in = kat_sa(backends[b], SADB_PROTO_ESP, SADB_DIR_IN, enc, key, (unsigned)kl,
					   SADB_AUTH_NONE, NULL, 0, rt2);
		if (o) {
			tried++;
			uint8_t buf[128], out_tag[16];
			struct esp_cop c;
			memset(&c, 0, sizeof(c));
			memcpy(buf, pt, pl);
			memcpy(c.iv, nonce, nl);
			if (enc == SADB_ENC_AES_GMAC) {
				c.auth = aad;
				c.auth_len = (uint32_t)al;
			} else {
				c.aad = aad;
				c.aad_len = (uint32_t)al;
				c.data = buf;
				c.data_len = (uint32_t)pl;
			}
			c.tag = out_tag;
			o->ops->encrypt(&o->cs, &c, 1);
			assert_true(c.ok);
			if (cl)
				assert_memory_equal(buf, ct, cl);
			if (memcmp(out_tag, tag, 16)) {
				print_error("enc %u backend %s: tag differs\n", enc, esp_backend_name(backends[b]));
				fail();
			}
			/* Decrypt: back to the plaintext; a flipped tag bit fails. */
			for (int flip = 0; flip < 2; flip++) {
				uint8_t t2[16];
				memcpy(t2, tag, 16);
				t2[5] ^= (uint8_t)flip;
				memcpy(buf, ct, cl);
				memset(&c, 0, sizeof(c));
				memcpy(c.iv, nonce, nl);
				if (enc == SADB_ENC_AES_GMAC) {
					c.auth = aad;
					c.auth_len = (uint32_t)al;
				} else {
					c.aad = aad;
					c.aad_len = (uint32_t)al;
					c.data = buf;
					c.data_len = (uint32_t)cl;
				}
				c.tag = c.calc;
				c.icv_in = t2;
				in->ops->decrypt(&in->cs, &c, 1);
				assert_int_equal(c.ok, !flip);
				if (!flip && cl)
					assert_memory_equal(buf, pt, pl);
			}
		}
		esp_sa_destroy(o);
		esp_sa_destroy(in);
		free(rt);
		free(rt2);
	}
	assert_true(tried >= 1);
}

/* GCM: McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 3, 4, 15, 16 (the nonce
 * is the RFC 4106 salt || IV). GMAC: test case 1 (empty), and the AAD of test case 4 alone, whose
 * tags were computed with python3-cryptography since RFC 4543 publishes no vectors. ChaCha20-
 * Poly1305: RFC 7539 §2.8.2, whose nonce is exactly RFC 7634's salt (07000000) || IV. */
static void test_kat_aead(void **state)
{
	(void)state;
	const char *p = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
	const char *c128 = "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985";
	const char *c256 = "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad";
	const char *k = "feffe9928665731c6d6a8f9467308308", *k2 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";
	const char *iv = "cafebabefacedbaddecaf888", *a = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
	char p60[121], c60[121], c60b[121];
	snprintf(p60, sizeof(p60), "%.120s", p);
	snprintf(c60, sizeof(c60), "%.120s", c128);
	snprintf(c60b, sizeof(c60b), "%.120s", c256);
	aead_kat(SADB_ENC_AES_GCM16, k, iv, "", p, c128, "4d5c2af327cd64a62cf35abd2ba6fab4");
	aead_kat(SADB_ENC_AES_GCM16, k, iv, a, p60, c60, "5bc94fbc3221a5db94fae95ae7121a47");
	aead_kat(SADB_ENC_AES_GCM16, k2, iv, "", p, c256, "b094dac5d93471bdec1a502270e3cc6c");
	aead_kat(SADB_ENC_AES_GCM16, k2, iv, a, p60, c60b, "76fc6ece0f4e1768cddf8853bb2d551b");
	aead_kat(SADB_ENC_AES_GMAC, "00000000000000000000000000000000", "000000000000000000000000", "", "", "",
		 "58e2fccefa7e3061367f1d57a4e7455a");
	aead_kat(SADB_ENC_AES_GMAC, k, iv, a, "", "", "346434fd51d5cd0c5887ec63e39b907a");
	aead_kat(SADB_ENC_AES_GMAC, k2, iv, a, "", "", "9f6be07603c0b0bd1272854063e9c9ba");
	aead_kat(SADB_ENC_CHACHA20_POLY1305, "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		 "070000004041424344454647", "50515253c0c1c2c3c4c5c6c7",
		 "4c616469657320616e642047656e746c656d656e206f662074686520636c617373206f66202739393a204966204920636f756c64206f6666657220796f75206f6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73637265656e20776f756c642062652069742e",
		 "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116",
		 "1ae10b594f09e26a7e902ecbd0600691");
}

/* OpenSSL's AES-GCM as the reference for one operation: ct and tag of pt under key/nonce/aad. */
static void ref_gcm(const uint8_t *key, unsigned kl, const uint8_t *nonce, const uint8_t *aad, int al,
		    const uint8_t *pt, int len, uint8_t *ct, uint8_t *tag)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int n;
	assert_non_null(x);
	assert_int_equal(EVP_EncryptInit_ex(x, kl == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), NULL, key,
					    nonce), 1);
	if (al)
		assert_int_equal(EVP_EncryptUpdate(x, NULL, &n, aad, al), 1);
	if (len)
		assert_int_equal(EVP_EncryptUpdate(x, ct, &n, pt, len), 1);
	assert_int_equal(EVP_EncryptFinal_ex(x, ct + len, &n), 1);
	assert_int_equal(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, tag), 1);
	EVP_CIPHER_CTX_free(x);
}

/* The native backend's own GCM (crypto_native.c: a short-packet path for up to 6 blocks, a general
 * one above, partial blocks read and written as shuffled windows) against OpenSSL for every length
 * from 0 to 300 bytes and random ones up to 9000, AADs of 0-40 bytes (GMAC: up to 600), both key
 * sizes, random keys and nonces; in place, with guard bytes around the buffer that must not change;
 * decrypt gives back the plaintext and refuses any single flipped bit of ciphertext, AAD or tag. */
extern bool esp_native_bulk_ipsecmb, esp_native_vaes;

/* A GCM (or GMAC: the AAD alone) operation on len bytes at data in place. */
static void gcm_cop(struct esp_cop *c, int gmac, const uint8_t *nonce, uint8_t *aad, int al, uint8_t *data,
		    int len)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->iv, nonce, 16);
	if (gmac) {
		c->auth = aad;
		c->auth_len = (uint32_t)al;
	} else {
		c->aad = aad;
		c->aad_len = (uint32_t)al;
		c->data = data;
		c->data_len = (uint32_t)len;
	}
}

static void native_vs_openssl(void)
{
	if (!esp_crypto_native.supports(ESP_KIND_AEAD, ESP_C_AES_GCM, 0, 16)) {
		print_message("native GCM unavailable on this CPU\n");
		return;
	}
	/* Two packets per call (lane 1 often of the same block count, which crypto_native.c then
	 * runs through AES together). */
	static uint8_t pt[2][9100], ref[2][9100 + 16], buf[2][9100 + 64], aad[2][640];
	unsigned checked = 0, seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
	for (unsigned kl = 16; kl <= 32; kl += 16) {
		for (int gmac = 0; gmac < 2; gmac++) {
			struct sadb_runtime *rt = rt_new(), *rt2 = rt_new();
			uint8_t key[32];
			for (unsigned i = 0; i < kl; i++)
				key[i] = (uint8_t)RND();
			uint16_t enc = gmac ? SADB_ENC_AES_GMAC : SADB_ENC_AES_GCM16;
			struct esp_sa *o = kat_sa(ESP_BACKEND_NATIVE, SADB_PROTO_ESP, SADB_DIR_OUT, enc, key, kl,
						  SADB_AUTH_NONE, NULL, 0, rt);
			struct esp_sa *in = kat_sa(ESP_BACKEND_NATIVE, SADB_PROTO_ESP, SADB_DIR_IN, enc, key, kl,
						   SADB_AUTH_NONE, NULL, 0, rt2);
			assert_non_null(o);
			assert_non_null(in);
			for (int it = 0; it < 420; it++) {
				int len[2], al[2];
				uint8_t nonce[2][16], tag[2][16], out_tag[2][16];
				struct esp_cop c[2];
				for (int q = 0; q < 2; q++) {
					if (gmac)
						len[q] = 0;
					else if (q == 0)
						len[q] = it <= 300 ? it : (int)(RND() % 9000u);
					else if (RND() % 2 && len[0] > 16 && len[0] <= 96)
						len[q] = 16 * ((len[0] - 1) / 16) + 1 + (int)(RND() % 16u);
					else
						len[q] = (int)(RND() % 301u);
					al[q] = gmac ? (int)(RND() % 600u) : (int)(RND() % 41u);
					if (!gmac && (it + q) % 3 == 0)
						al[q] = (it + q) % 2 ? 8 : 12; /* ESP's own AADs */
					memset(nonce[q], 0, 16);
					for (int i = 0; i < 12; i++)
						nonce[q][i] = (uint8_t)RND();
					for (int i = 0; i < len[q]; i++)
						pt[q][i] = (uint8_t)RND();
					for (int i = 0; i < al[q]; i++)
						aad[q][i] = (uint8_t)RND();
					ref_gcm(key, kl, nonce[q], aad[q], al[q], pt[q], len[q], ref[q], tag[q]);
					/* In place between guard bytes. */
					memset(buf[q], 0xa5, sizeof(buf[q]));
					memcpy(buf[q] + 32, pt[q], (size_t)len[q]);
					gcm_cop(&c[q], gmac, nonce[q], aad[q], al[q], buf[q] + 32, len[q]);
					c[q].tag = out_tag[q];
				}
				o->ops->encrypt(&o->cs, c, 2);
				for (int q = 0; q < 2; q++) {
					assert_true(c[q].ok);
					if (memcmp(buf[q] + 32, ref[q], (size_t)len[q]) || memcmp(out_tag[q], tag[q], 16)) {
						print_error("native GCM key %u len %d aad %d (with %d) differs from OpenSSL\n",
							    kl, len[q], al[q], len[!q]);
						fail();
					}
					for (int i = 0; i < 32; i++)
						assert_true(buf[q][i] == 0xa5 && buf[q][32 + len[q] + i] == 0xa5);
				}
				/* Decrypt both; then again with one bit flipped in one of them (ciphertext, AAD
				 * or tag): that one is refused, the other still verifies. */
				for (int flip = 0; flip < 2; flip++) {
					uint8_t t2[2][16];
					int fq = (int)(RND() % 2u);
					int where = (int)(RND() % (unsigned)(len[fq] + al[fq] + 16));
					uint8_t bit = (uint8_t)(1u << (RND() % 8u));
					for (int q = 0; q < 2; q++) {
						memcpy(t2[q], tag[q], 16);
						memcpy(buf[q] + 32, ref[q], (size_t)len[q]);
					}
					if (flip) {
						if (where < len[fq])
							buf[fq][32 + where] ^= bit;
						else if (where < len[fq] + al[fq])
							aad[fq][where - len[fq]] ^= bit;
						else
							t2[fq][where - len[fq] - al[fq]] ^= bit;
					}
					for (int q = 0; q < 2; q++) {
						gcm_cop(&c[q], gmac, nonce[q], aad[q], al[q], buf[q] + 32, len[q]);
						c[q].tag = c[q].calc;
						c[q].icv_in = t2[q];
					}
					in->ops->decrypt(&in->cs, c, 2);
					for (int q = 0; q < 2; q++) {
						bool bad = flip && q == fq;
						assert_int_equal(c[q].ok, !bad);
						if (!bad)
							assert_memory_equal(buf[q] + 32, pt[q], (size_t)len[q]);
						for (int i = 0; i < 32; i++)
							assert_true(buf[q][i] == 0xa5 && buf[q][32 + len[q] + i] == 0xa5);
					}
					if (flip && where >= len[fq] && where < len[fq] + al[fq])
						aad[fq][where - len[fq]] ^= bit;
				}
				checked += 2;
			}
			esp_sa_destroy(o);
			esp_sa_destroy(in);
			free(rt);
			free(rt2);
		}
	}
#undef RND
	print_message("native GCM/GMAC (%s, %s): %u operations equal to OpenSSL's, every flipped bit "
		      "refused\n", esp_native_vaes ? "VAES where the CPU has it" : "128-bit AES-NI only",
		      esp_native_bulk_ipsecmb ? "ipsec-mb's where it is faster" : "own code at every size", checked);
}

static void test_native_vs_openssl(void **state)
{
	(void)state;
	native_vs_openssl();
	esp_native_bulk_ipsecmb = false; /* the long paths of crypto_native.c itself */
	native_vs_openssl();
	esp_native_vaes = false;
	native_vs_openssl();
	esp_native_bulk_ipsecmb = true; /* as on a CPU without VAES: long ones to ipsec-mb */
	native_vs_openssl();
	esp_native_vaes = true;
}

/* RFC 3686 §6 test vectors #1 and #2 (AES-CTR) and RFC 3602 §4 case #1 (AES-CBC): the cipher part of
 * a cipher+HMAC SA, through every backend. */
static void cipher_kat(uint16_t enc, const char *key_h, const char *iv_h, const char *pt_h, const char *ct_h)
{
	uint8_t key[32], iv[16], pt[64], ct[64], akey[20];
	size_t kl, il, pl, cl;
	hex(key_h, key, &kl);
	hex(iv_h, iv, &il);
	hex(pt_h, pt, &pl);
	hex(ct_h, ct, &cl);
	memset(akey, 1, sizeof(akey));
	int tried = 0;
	for (int b = 0; b < N_BACKENDS; b++) {
		struct sadb_runtime *rt = rt_new();
		struct esp_sa *sa = kat_sa(backends[b], SADB_PROTO_ESP, SADB_DIR_OUT, enc, key, (unsigned)kl,
					   SADB_AUTH_HMAC_SHA1_96, akey, 20, rt);
		if (sa) {
			tried++;
			uint8_t buf[64], tag[64];
			struct esp_cop c;
			memset(&c, 0, sizeof(c));
			memcpy(buf, pt, pl);
			memcpy(c.iv, iv, il);
			c.auth = buf;
			c.auth_len = (uint32_t)pl;
			c.data = buf;
			c.data_len = (uint32_t)pl;
			c.tag = tag;
			sa->ops->encrypt(&sa->cs, &c, 1);
			assert_true(c.ok);
			if (memcmp(buf, ct, cl)) {
				print_error("cipher %u backend %s differs\n", enc, esp_backend_name(backends[b]));
				fail();
			}
			esp_sa_destroy(sa);
		}
		free(rt);
	}
	assert_true(tried >= 1);
}

static void test_kat_cipher(void **state)
{
	(void)state;
	cipher_kat(SADB_ENC_AES_CTR, "ae6852f8121067cc4bf7a5765577f39e", "00000030000000000000000000000001",
		   "53696e676c6520626c6f636b206d7367", "e4095d4fb7a7b3792d6175a3261311b8");
	cipher_kat(SADB_ENC_AES_CTR, "7e24067817fae0d743d6ce1f32539163", "006cb6dbc0543b59da48d90b00000001",
		   "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		   "5104a106168a72d9790d41ee8edad388eb2e1efc46da57c8fce630df9141be28");
	cipher_kat(SADB_ENC_AES_CBC, "06a9214036b8a15b512e03d534120006", "3dafba429d9eb430b422da802c9fac41",
		   "53696e676c6520626c6f636b206d7367", "e353779c1079aeb82708942dbe77181a");
}

/* ---- round trips and cross-checks ---- */

static const uint32_t sizes[] = { 0, 1, 14, 15, 16, 17, 63, 100, 1000, 1400 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Encapsulate N_SIZES packets of inner family ifam with backend b into out[] (fresh runtime with
 * the given starting mark); false if b lacks the transform. */
static bool encap(const struct xf *x, uint8_t mode, int ofam, int ifam, uint32_t flags, bool natt,
		  enum esp_backend b, uint64_t seq_start, struct frame *out, uint8_t orig[][1600],
		  uint32_t *olen)
{
	if (!backend_ok(b, x))
		return false;
	struct sadb_sa s;
	mk_sa(&s, x, mode, SADB_DIR_OUT, ofam, flags, natt, 7);
	struct sadb_runtime *rt = rt_new();
	rt->seq_reserved = seq_start;
	struct esp_sa *sa;
	struct esp_sa_opts o = { .backend = b, .seq_block = 3 };
	assert_int_equal(esp_sa_create(&s, rt, &o, &sa), 0);
	assert_int_equal(esp_sa_backend(sa), b);
	struct esp_pkt *pk[N_SIZES];
	for (unsigned i = 0; i < N_SIZES; i++) {
		olen[i] = mk_udp(orig[i], ifam, sizes[i], (uint8_t)(i & 3) | 0xb8, i);
		frame_set(&out[i], orig[i], olen[i]);
		pk[i] = &out[i].p;
	}
	unsigned good = esp_outbound_burst(sa, pk, N_SIZES);
	for (unsigned i = good; i < N_SIZES; i++)
		print_error("%s: outbound drop %s\n", x->name, dropname(pk[i]->drop));
	assert_int_equal(good, N_SIZES);
	assert_int_equal(rt->packets, N_SIZES);
	/* Sequence numbers were reserved ahead in the runtime before use (blocks of 3). */
	assert_true(rt->seq_reserved >= seq_start + N_SIZES);
	for (unsigned i = 0; i < N_SIZES; i++)
		assert_int_equal(out[i].p.seq, seq_start + 1 + i);
	esp_sa_destroy(sa);
	free(rt);
	return true;
}

/* An unshared outbound object spends its reserved block unless its next number is at or below the
 * floor a takeover gives it (esp_sa_seq_floor): a cluster node taking over raises the runtime area's
 * reservation above every number the other node may have sent (dp_cluster.c, take_over), and the
 * next burst must start there, not in the rest of an old block (below the peer's replay window).
 * One row per case; the first burst takes 101 and 102 from the block (100, 1124]. */
static void test_seq_block_floor(void **state)
{
	(void)state;
	static const struct {
		uint64_t raise_to;     /* 0: the reservation stays where the object left it */
		uint64_t floor;        /* 0: no takeover */
		uint64_t want_first;   /* the second burst's first number */
	} rows[] = {
		{ 0, 0, 103 },         /* the block goes on */
		{ 5000, 0, 103 },      /* raised, no floor: the engine does not look (two workers may) */
		{ 5000, 5000, 5001 },  /* a takeover: the rest of the block is left */
		{ 5000, 50, 103 },     /* a floor under the next number: nothing to leave */
		{ 0, 200, 1125 },      /* a floor without a raise: the next block */
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		static struct frame f[2];
		static uint8_t orig[2][1600];
		struct esp_pkt *pk[2];
		struct sadb_sa s;
		struct esp_sa *sa;
		struct esp_sa_opts o = { .backend = ESP_BACKEND_OPENSSL, .seq_block = 1024 };
		struct sadb_runtime *rt = rt_new();

		mk_sa(&s, &xforms[0], SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 7);
		rt->seq_reserved = 100;
		assert_int_equal(esp_sa_create(&s, rt, &o, &sa), 0);
		for (int burst = 0; burst < 2; burst++) {
			for (unsigned i = 0; i < 2; i++) {
				uint32_t len = mk_udp(orig[i], AF_INET, 100, 0, i);
				frame_set(&f[i], orig[i], len);
				pk[i] = &f[i].p;
			}
			assert_int_equal(esp_outbound_burst(sa, pk, 2), 2);
			if (burst == 0) {
				assert_int_equal(f[0].p.seq, 101);
				if (rows[r].raise_to)
					rt->seq_reserved = rows[r].raise_to;
				if (rows[r].floor)
					esp_sa_seq_floor(sa, rows[r].floor);
			}
		}
		assert_int_equal(f[0].p.seq, rows[r].want_first);
		assert_int_equal(f[1].p.seq, rows[r].want_first + 1);
		esp_sa_destroy(sa);
		free(rt);
	}
}

static void roundtrip_one(const struct xf *x, uint8_t mode, int ofam, int ifam, uint32_t flags, bool natt)
{
	static struct frame ref[N_SIZES], got[N_SIZES];
	static uint8_t orig[N_SIZES][1600];
	uint32_t olen[N_SIZES];
	bool have_ref = false;
	/* With ESN, start just below 2^32 so that the burst crosses into the next subspace. */
	uint64_t start = (flags & SADB_SAF_ESN) ? 0xfffffffaULL : 100;
	int n_out = 0;

	for (int bo = 0; bo < N_BACKENDS; bo++) {
		if (!encap(x, mode, ofam, ifam, flags, natt, backends[bo], start, got, orig, olen))
			continue;
		n_out++;
		if (!have_ref) {
			memcpy(ref, got, sizeof(ref));
			for (unsigned i = 0; i < N_SIZES; i++)
				ref[i].p.buf = ref[i].mem;
			have_ref = true;
		} else {
			/* Cross-check: every backend produces the same bytes. */
			for (unsigned i = 0; i < N_SIZES; i++) {
				assert_int_equal(got[i].p.len, ref[i].p.len);
				if (memcmp(frame_data(&got[i]), frame_data(&ref[i]), got[i].p.len)) {
					print_error("%s mode %u ofam %d ifam %d flags %x natt %d: %s differs from "
						    "the first backend (size %u)\n", x->name, mode, ofam, ifam, flags,
						    natt, esp_backend_name(backends[bo]), sizes[i]);
					fail();
				}
			}
		}
		/* Decrypt with every backend (including this one). */
		for (int bi = 0; bi < N_BACKENDS; bi++) {
			if (!backend_ok(backends[bi], x))
				continue;
			struct sadb_sa s;
			mk_sa(&s, x, mode, SADB_DIR_IN, ofam, flags, natt, 7);
			struct sadb_runtime *rt = rt_new();
			rt->replay_top = start; /* as if everything up to start had arrived */
			struct esp_sa *sa;
			struct esp_sa_opts o = { .backend = backends[bi] };
			assert_int_equal(esp_sa_create(&s, rt, &o, &sa), 0);
			static struct frame in[N_SIZES];
			struct esp_pkt *pk[N_SIZES];
			for (unsigned i = 0; i < N_SIZES; i++) {
				frame_set(&in[i], frame_data(&got[i]), got[i].p.len);
				pk[i] = &in[i].p;
			}
			unsigned good = esp_inbound_burst(sa, pk, N_SIZES);
			for (unsigned i = good; i < N_SIZES; i++)
				print_error("%s mode %u ofam %d ifam %d flags %x natt %d out %s in %s: drop %s\n",
					    x->name, mode, ofam, ifam, flags, natt, esp_backend_name(backends[bo]),
					    esp_backend_name(backends[bi]), dropname(pk[i]->drop));
			assert_int_equal(good, N_SIZES);
			for (unsigned i = 0; i < N_SIZES; i++) {
				assert_int_equal(in[i].p.len, olen[i]);
				assert_int_equal(in[i].p.family, ifam);
				assert_int_equal(in[i].p.seq, start + 1 + i);
				assert_memory_equal(frame_data(&in[i]), orig[i], olen[i]);
			}
			assert_int_equal(rt->replay_top, start + N_SIZES);
			assert_int_equal(rt->packets, N_SIZES);
			esp_sa_destroy(sa);
			free(rt);
		}
	}
	assert_true(n_out >= 1);
}

static void test_roundtrip(void **state)
{
	(void)state;
	unsigned combos = 0;
	for (size_t t = 0; t < N_XFORMS; t++) {
		const struct xf *x = &xforms[t];
		for (int mode = SADB_MODE_TRANSPORT; mode <= SADB_MODE_TUNNEL; mode++)
			for (int of = 0; of < 2; of++)
				for (int inf = 0; inf < 2; inf++)
					for (int esn = 0; esn < 2; esn++)
						for (int natt = 0; natt < 2; natt++) {
							int ofam = of ? AF_INET6 : AF_INET;
							int ifam = inf ? AF_INET6 : AF_INET;
							if (mode == SADB_MODE_TRANSPORT && ofam != ifam)
								continue;
							if (natt && x->proto == SADB_PROTO_AH)
								continue;
							roundtrip_one(x, (uint8_t)mode, ofam, ifam,
								      esn ? SADB_SAF_ESN : 0, natt);
							combos++;
						}
	}
	print_message("round trips: %u combinations x %zu sizes, all backend pairs\n", combos, N_SIZES);
}

/* Which backend AUTO picks, and forcing through XIPSEC_CRYPTO. */
static void test_backend_choice(void **state)
{
	(void)state;
	for (size_t t = 0; t < N_XFORMS; t++) {
		struct sadb_sa s;
		mk_sa(&s, &xforms[t], SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
		struct sadb_runtime *rt = rt_new();
		struct esp_sa *sa;
		unsetenv(ESP_ENV_CRYPTO);
		assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
		/* AUTO measures the backends once per transform and keeps its choice. */
		enum esp_backend first = esp_sa_backend(sa);
		assert_true(backend_ok(first, &xforms[t]));
		esp_sa_destroy(sa);
		assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
		assert_int_equal(esp_sa_backend(sa), first);
		print_message("%-28s auto: %s\n", xforms[t].name, esp_backend_name(first));
		esp_sa_destroy(sa);
		setenv(ESP_ENV_CRYPTO, "openssl", 1);
		assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
		assert_int_equal(esp_sa_backend(sa), ESP_BACKEND_OPENSSL);
		esp_sa_destroy(sa);
		setenv(ESP_ENV_CRYPTO, "sodium", 1);
		int r = esp_sa_create(&s, rt, NULL, &sa);
		if (backend_ok(ESP_BACKEND_SODIUM, &xforms[t])) {
			assert_int_equal(r, 0);
			assert_int_equal(esp_sa_backend(sa), ESP_BACKEND_SODIUM);
			esp_sa_destroy(sa);
		} else {
			assert_int_equal(r, -ENOTSUP);
			assert_null(sa);
		}
		setenv(ESP_ENV_CRYPTO, "rot13", 1);
		assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL);
		unsetenv(ESP_ENV_CRYPTO);
		free(rt);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_hmac),
		cmocka_unit_test(test_kat_aead),
		cmocka_unit_test(test_native_vs_openssl),
		cmocka_unit_test(test_kat_cipher),
		cmocka_unit_test(test_backend_choice),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_seq_block_floor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
