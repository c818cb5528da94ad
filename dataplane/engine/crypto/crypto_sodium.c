/* dataplane/engine/crypto/crypto_sodium.c: the libsodium backend of the ESP/AH engine: ChaCha20-Poly1305 (IETF,
 * RFC 7634) and, where the CPU has AES-NI and PCLMUL, AES-256-GCM and AES-256-GMAC through the
 * precomputed ("afternm") state. libsodium verifies a tag before it decrypts and compares in
 * constant time. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sodium.h>

#include "dataplane/engine/crypto/esp_crypto.h"

struct sod_ctx {
	crypto_aead_aes256gcm_state gcm; /* first: 16-byte aligned by the allocation */
	uint8_t key[32];                 /* ChaCha20-Poly1305 */
};

static bool sodium_ready(void)
{
	static _Atomic int ready; /* 1 ok, -1 failed, 0 unknown; sodium_init itself is thread safe */
	int r = atomic_load_explicit(&ready, memory_order_acquire);
	if (r == 0) {
		r = sodium_init() < 0 ? -1 : 1;
		atomic_store_explicit(&ready, r, memory_order_release);
	}
	return r > 0;
}

static bool sod_supports(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len)
{
	(void)hmac;
	if (!sodium_ready())
		return false;
	if (kind == ESP_KIND_AEAD && cipher == ESP_C_CHACHA_POLY)
		return key_len == 32;
	if ((cipher == ESP_C_AES_GCM || cipher == ESP_C_AES_GMAC) && key_len == 32)
		return crypto_aead_aes256gcm_is_available() != 0;
	return false;
}

static int sod_init(struct esp_crypto_sa *cs)
{
	struct sod_ctx *x = aligned_alloc(64, (sizeof(*x) + 63) & ~(size_t)63);
	if (!x)
		return -ENOMEM;
	memset(x, 0, sizeof(*x));
	if (cs->cipher == ESP_C_CHACHA_POLY)
		memcpy(x->key, cs->enc_key, 32);
	else if (crypto_aead_aes256gcm_beforenm(&x->gcm, cs->enc_key) != 0) {
		sodium_memzero(x, sizeof(*x));
		free(x);
		return -EINVAL;
	}
	cs->ctx = x;
	return 0;
}

static void sod_fini(struct esp_crypto_sa *cs)
{
	struct sod_ctx *x = cs->ctx;
	if (!x)
		return;
	sodium_memzero(x, sizeof(*x));
	free(x);
	cs->ctx = NULL;
}

static void sod_encrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	struct sod_ctx *x = cs->ctx;
	for (unsigned i = 0; i < n; i++) {
		struct esp_cop *c = &ops[i];
		int r;
		if (cs->cipher == ESP_C_CHACHA_POLY)
			r = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
				c->data, c->tag, NULL, c->data, c->data_len, c->aad, c->aad_len, NULL, c->iv, x->key);
		else if (cs->kind == ESP_KIND_GMAC)
			r = crypto_aead_aes256gcm_encrypt_detached_afternm(
				c->calc, c->tag, NULL, c->calc, 0, c->auth, c->auth_len, NULL, c->iv, &x->gcm);
		else
			r = crypto_aead_aes256gcm_encrypt_detached_afternm(
				c->data, c->tag, NULL, c->data, c->data_len, c->aad, c->aad_len, NULL, c->iv, &x->gcm);
		c->ok = r == 0;
	}
}

static void sod_decrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	struct sod_ctx *x = cs->ctx;
	for (unsigned i = 0; i < n; i++) {
		struct esp_cop *c = &ops[i];
		int r;
		if (cs->cipher == ESP_C_CHACHA_POLY)
			r = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
				c->data, NULL, c->data, c->data_len, c->icv_in, c->aad, c->aad_len, c->iv, x->key);
		else if (cs->kind == ESP_KIND_GMAC)
			r = crypto_aead_aes256gcm_decrypt_detached_afternm(
				c->calc, NULL, c->calc, 0, c->icv_in, c->auth, c->auth_len, c->iv, &x->gcm);
		else
			r = crypto_aead_aes256gcm_decrypt_detached_afternm(
				c->data, NULL, c->data, c->data_len, c->icv_in, c->aad, c->aad_len, c->iv, &x->gcm);
		c->ok = r == 0;
	}
}

const struct esp_crypto_ops esp_crypto_sodium = {
	.name = "sodium",
	.supports = sod_supports,
	.init = sod_init,
	.fini = sod_fini,
	.encrypt = sod_encrypt,
	.decrypt = sod_decrypt,
};
