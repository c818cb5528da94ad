/* dataplane/engine/crypto/crypto_openssl.c: the OpenSSL libcrypto backend of the ESP/AH engine: every transform.
 * Cipher contexts are keyed once per SA (EVP, only the IV is set per packet); HMAC starts from inner
 * and outer hash states precomputed from the key (RFC 2104), copied per packet, which costs far less
 * than EVP_MAC_CTX_dup (doc/platform.md). The low-level hash API is deprecated in OpenSSL 3 but is the
 * only one whose state can be copied as a plain struct. */
#include "config.h"

#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <errno.h>
#include <stdlib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/sha.h>

#include "dataplane/engine/crypto/esp_crypto.h"

union hstate {
	MD5_CTX md5;
	SHA_CTX sha1;
	SHA256_CTX sha256;
	SHA512_CTX sha512;
};

struct ossl_ctx {
	EVP_CIPHER_CTX *ev;     /* keyed cipher (or GCM for GMAC), NULL for NULL encryption */
	union hstate ipad, opad;
	uint8_t hmac;
};

static void h_init(uint8_t hmac, union hstate *h)
{
	switch (hmac) {
	case ESP_H_MD5:    MD5_Init(&h->md5); break;
	case ESP_H_SHA1:   SHA1_Init(&h->sha1); break;
	case ESP_H_SHA256: SHA256_Init(&h->sha256); break;
	case ESP_H_SHA384: SHA384_Init(&h->sha512); break;
	case ESP_H_SHA512: SHA512_Init(&h->sha512); break;
	}
}

static void h_update(uint8_t hmac, union hstate *h, const void *d, size_t n)
{
	switch (hmac) {
	case ESP_H_MD5:    MD5_Update(&h->md5, d, n); break;
	case ESP_H_SHA1:   SHA1_Update(&h->sha1, d, n); break;
	case ESP_H_SHA256: SHA256_Update(&h->sha256, d, n); break;
	case ESP_H_SHA384: SHA384_Update(&h->sha512, d, n); break;
	case ESP_H_SHA512: SHA512_Update(&h->sha512, d, n); break;
	}
}

static void h_final(uint8_t hmac, union hstate *h, uint8_t *out)
{
	switch (hmac) {
	case ESP_H_MD5:    MD5_Final(out, &h->md5); break;
	case ESP_H_SHA1:   SHA1_Final(out, &h->sha1); break;
	case ESP_H_SHA256: SHA256_Final(out, &h->sha256); break;
	case ESP_H_SHA384: SHA384_Final(out, &h->sha512); break;
	case ESP_H_SHA512: SHA512_Final(out, &h->sha512); break;
	}
}

/* Full HMAC digest of d[0..n) into out (64 bytes room). */
static void hmac(const struct ossl_ctx *x, const uint8_t *d, size_t n, uint8_t *out)
{
	union hstate h;
	uint8_t inner[64];
	unsigned dl = esp_hmac_digest_len(x->hmac);

	memcpy(&h, &x->ipad, sizeof(h));
	h_update(x->hmac, &h, d, n);
	h_final(x->hmac, &h, inner);
	memcpy(&h, &x->opad, sizeof(h));
	h_update(x->hmac, &h, inner, dl);
	h_final(x->hmac, &h, out);
	OPENSSL_cleanse(&h, sizeof(h));
}

static const EVP_CIPHER *cipher_of(uint8_t cipher, unsigned key_len)
{
	switch (cipher) {
	case ESP_C_AES_GCM:
	case ESP_C_AES_GMAC:
		return key_len == 16 ? EVP_aes_128_gcm() : key_len == 24 ? EVP_aes_192_gcm() :
		       key_len == 32 ? EVP_aes_256_gcm() : NULL;
	case ESP_C_AES_CBC:
		return key_len == 16 ? EVP_aes_128_cbc() : key_len == 24 ? EVP_aes_192_cbc() :
		       key_len == 32 ? EVP_aes_256_cbc() : NULL;
	case ESP_C_AES_CTR:
		return key_len == 16 ? EVP_aes_128_ctr() : key_len == 24 ? EVP_aes_192_ctr() :
		       key_len == 32 ? EVP_aes_256_ctr() : NULL;
	case ESP_C_3DES_CBC:
		return EVP_des_ede3_cbc();
	case ESP_C_CHACHA_POLY:
		return EVP_chacha20_poly1305();
	default:
		return NULL;
	}
}

static bool ossl_supports(uint8_t kind, uint8_t cipher, uint8_t hmac_alg, unsigned key_len)
{
	(void)kind;
	(void)hmac_alg;
	if (cipher == ESP_C_NULL || cipher == ESP_C_NONE)
		return true;
	return cipher_of(cipher, key_len) != NULL;
}

static void ossl_fini(struct esp_crypto_sa *cs)
{
	struct ossl_ctx *x = cs->ctx;
	if (!x)
		return;
	EVP_CIPHER_CTX_free(x->ev); /* clears the key schedule */
	OPENSSL_cleanse(x, sizeof(*x));
	free(x);
	cs->ctx = NULL;
}

static int ossl_init(struct esp_crypto_sa *cs)
{
	struct ossl_ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	cs->ctx = x;
	x->hmac = cs->hmac;
	if (cs->cipher != ESP_C_NULL && cs->cipher != ESP_C_NONE) {
		const EVP_CIPHER *c = cipher_of(cs->cipher, cs->enc_key_len);
		int enc = cs->out;
		/* GMAC and the AEADs verify by computing the tag as an encryption would, so that the
		 * compare is ours (constant time, CRYPTO_memcmp) and the same for every backend. */
		if (cs->kind == ESP_KIND_AEAD || cs->kind == ESP_KIND_GMAC)
			enc = cs->out || cs->kind == ESP_KIND_GMAC;
		x->ev = EVP_CIPHER_CTX_new();
		if (!c || !x->ev || !EVP_CipherInit_ex(x->ev, c, NULL, NULL, NULL, enc))
			goto fail;
		if ((cs->kind == ESP_KIND_AEAD || cs->kind == ESP_KIND_GMAC) &&
		    !EVP_CIPHER_CTX_ctrl(x->ev, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL))
			goto fail;
		if (!EVP_CipherInit_ex(x->ev, NULL, NULL, cs->enc_key, NULL, enc))
			goto fail;
		if (cs->kind == ESP_KIND_CIPHER_HMAC)
			EVP_CIPHER_CTX_set_padding(x->ev, 0);
	}
	if (cs->hmac) {
		unsigned bl = esp_hmac_block_len(cs->hmac);
		uint8_t k[128];
		memset(k, 0, sizeof(k));
		memcpy(k, cs->auth_key, cs->auth_key_len); /* <= block length, checked by esp_sa_create */
		for (unsigned i = 0; i < bl; i++)
			k[i] ^= 0x36;
		h_init(cs->hmac, &x->ipad);
		h_update(cs->hmac, &x->ipad, k, bl);
		for (unsigned i = 0; i < bl; i++)
			k[i] ^= 0x36 ^ 0x5c;
		h_init(cs->hmac, &x->opad);
		h_update(cs->hmac, &x->opad, k, bl);
		OPENSSL_cleanse(k, sizeof(k));
	}
	return 0;
fail:
	ossl_fini(cs);
	return -EINVAL;
}

/* AEAD/GMAC tag of one operation (encrypting data in place when enc); false on a library error. */
static bool aead(struct ossl_ctx *x, struct esp_cop *c, bool enc, bool gmac, uint8_t *tag)
{
	int l;
	EVP_CIPHER_CTX *ev = x->ev;
	if (!EVP_CipherInit_ex(ev, NULL, NULL, NULL, c->iv, -1))
		return false;
	if (gmac) {
		if (!EVP_CipherUpdate(ev, NULL, &l, c->auth, (int)c->auth_len))
			return false;
	} else {
		if (!EVP_CipherUpdate(ev, NULL, &l, c->aad, (int)c->aad_len))
			return false;
		if (c->data_len && !EVP_CipherUpdate(ev, c->data, &l, c->data, (int)c->data_len))
			return false;
	}
	if (enc || gmac) {
		uint8_t fin[16];
		if (!EVP_CipherFinal_ex(ev, fin, &l))
			return false;
		return EVP_CIPHER_CTX_ctrl(ev, EVP_CTRL_AEAD_GET_TAG, 16, tag) > 0;
	}
	return true;
}

/* One packet's operation: whether it succeeded (the ICV verified, for decryption). */
typedef bool ossl_one_fn(const struct esp_crypto_sa *cs, struct ossl_ctx *x, struct esp_cop *c);

static bool ossl_encrypt_one(const struct esp_crypto_sa *cs, struct ossl_ctx *x, struct esp_cop *c)
{
	uint8_t full[64];
	bool ok = true;
	int l;

	switch (cs->kind) {
	case ESP_KIND_AEAD:
	case ESP_KIND_GMAC:
		return aead(x, c, true, cs->kind == ESP_KIND_GMAC, c->tag);
	case ESP_KIND_CIPHER_HMAC:
		if (c->data_len)
			ok = EVP_EncryptInit_ex(x->ev, NULL, NULL, NULL, c->iv) &&
			     EVP_EncryptUpdate(x->ev, c->data, &l, c->data, (int)c->data_len);
		/* fall through */
	case ESP_KIND_HMAC:
		hmac(x, c->auth, c->auth_len, full);
		memcpy(c->tag, full, cs->icv_len);
		break;
	}
	return ok;
}

static bool ossl_decrypt_one(const struct esp_crypto_sa *cs, struct ossl_ctx *x, struct esp_cop *c)
{
	bool ok = true;
	int l;

	switch (cs->kind) {
	case ESP_KIND_AEAD: {
		/* The ciphertext is authenticated by the tag computed while decrypting. */
		ok = EVP_CipherInit_ex(x->ev, NULL, NULL, NULL, c->iv, -1) &&
		     EVP_CipherUpdate(x->ev, NULL, &l, c->aad, (int)c->aad_len) &&
		     (!c->data_len || EVP_CipherUpdate(x->ev, c->data, &l, c->data, (int)c->data_len)) &&
		     EVP_CIPHER_CTX_ctrl(x->ev, EVP_CTRL_AEAD_SET_TAG, 16, (void *)c->icv_in) > 0;
		uint8_t fin[16];
		ok = ok && EVP_CipherFinal_ex(x->ev, fin, &l) > 0; /* OpenSSL compares with CRYPTO_memcmp */
		break;
	}
	case ESP_KIND_GMAC:
		ok = aead(x, c, true, true, c->calc) && !CRYPTO_memcmp(c->calc, c->icv_in, cs->icv_len);
		break;
	case ESP_KIND_CIPHER_HMAC:
	case ESP_KIND_HMAC:
		/* Verify first (RFC 4303 §3.4.4.1: integrity before decryption). */
		hmac(x, c->auth, c->auth_len, c->calc);
		ok = !CRYPTO_memcmp(c->calc, c->icv_in, cs->icv_len);
		if (ok && cs->kind == ESP_KIND_CIPHER_HMAC && c->data_len)
			ok = EVP_DecryptInit_ex(x->ev, NULL, NULL, NULL, c->iv) &&
			     EVP_DecryptUpdate(x->ev, c->data, &l, c->data, (int)c->data_len);
		break;
	}
	return ok;
}

/* Every operation of the burst, one after another, the next one's data prefetched. */
static void ossl_each(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n, ossl_one_fn *one)
{
	esp_cops_prefetch_first(ops, n, cs->kind);
	for (unsigned i = 0; i < n; i++) {
		esp_cops_prefetch_next(ops, n, i, cs->kind);
		ops[i].ok = one(cs, cs->ctx, &ops[i]);
	}
}

static void ossl_encrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	ossl_each(cs, ops, n, ossl_encrypt_one);
}

static void ossl_decrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	ossl_each(cs, ops, n, ossl_decrypt_one);
}

const struct esp_crypto_ops esp_crypto_openssl = {
	.name = "openssl",
	.supports = ossl_supports,
	.init = ossl_init,
	.fini = ossl_fini,
	.encrypt = ossl_encrypt,
	.decrypt = ossl_decrypt,
};
