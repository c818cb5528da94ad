/* dataplane/engine/crypto/crypto_ipsecmb.c: the intel-ipsec-mb backend of the ESP/AH engine, the fast path.
 *  - AES-GCM and GMAC through the direct API (IMB_AES*_GCM_ENC/DEC): GCM is not multi-buffered in
 *    ipsec-mb and the direct call is 40-65 cycles/packet cheaper than a job (doc/platform.md).
 *  - CBC/CTR/3DES/NULL with HMAC, AH's HMAC and ChaCha20-Poly1305 through the classic job API, a
 *    whole burst submitted before it is flushed, so the multi-buffer lanes fill up.
 * Managers: one per thread per API (a direct one and a job one), from init_mb_mgr_auto (runtime CPU
 * dispatch: AVX2, or AVX-512 with VAES where the CPU has it). Debian's ipsec-mb 1.3 corrupts jobs once its ring
 * wraps when the job and burst APIs share a manager or a burst ring wraps with jobs queued (fixed in
 * 1.4): we never use the burst API, submit at most ESP_CRYPTO_BURST_MAX (64) jobs into the 256-entry ring
 * and flush it empty before returning, so no job is ever in flight across a wrap between calls.
 * Keys (gcm_key_data, expanded AES keys, HMAC ipad/opad states) are precomputed at SA setup with a
 * manager of the same auto-detected type as the workers use, as the key layout requires. */
#include "config.h"

#ifdef HAVE_IPSEC_MB

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>

#include "dataplane/engine/crypto/crypto_ipsecmb.h"

struct imb_ctx {
	struct gcm_key_data gkey __attribute__((aligned(64)));
	uint32_t enc_keys[60] __attribute__((aligned(16)));
	uint32_t dec_keys[60] __attribute__((aligned(16)));
	uint64_t des_ks[3][16] __attribute__((aligned(16)));
	const void *des_ptrs[3];
	uint8_t ipad[64] __attribute__((aligned(16)));
	uint8_t opad[64] __attribute__((aligned(16)));
	uint8_t chacha_key[32] __attribute__((aligned(16)));
	IMB_CIPHER_MODE cmode;
	IMB_HASH_ALG hash;
	unsigned key_len;
};

/* Per-thread managers, freed at thread exit. */
static pthread_key_t mgr_key;
static pthread_once_t mgr_once = PTHREAD_ONCE_INIT;
struct mgrs {
	IMB_MGR *direct;
	IMB_MGR *job;
};
static __thread struct mgrs tl_mgrs;

static void mgrs_free(void *p)
{
	struct mgrs *m = p;
	if (m->direct)
		free_mb_mgr(m->direct);
	if (m->job)
		free_mb_mgr(m->job);
	m->direct = m->job = NULL;
}

static void mgr_key_make(void)
{
	(void)pthread_key_create(&mgr_key, mgrs_free);
}

static IMB_MGR *mgr_new(void)
{
	IMB_MGR *m = alloc_mb_mgr(0);
	if (!m)
		return NULL;
	init_mb_mgr_auto(m, NULL);
	if (imb_get_errno(m)) {
		free_mb_mgr(m);
		return NULL;
	}
	return m;
}

static bool mgrs_get(void)
{
	if (ESP_LIKELY(tl_mgrs.job != NULL))
		return true;
	pthread_once(&mgr_once, mgr_key_make);
	if (!tl_mgrs.direct)
		tl_mgrs.direct = mgr_new();
	if (tl_mgrs.direct && !tl_mgrs.job)
		tl_mgrs.job = mgr_new();
	if (!tl_mgrs.direct || !tl_mgrs.job)
		return false;
	pthread_setspecific(mgr_key, &tl_mgrs);
	return true;
}

static bool imb_supports(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len)
{
	(void)kind;
	(void)hmac;
	if (!mgrs_get())
		return false;
	/* Every cipher the engine has, at every key length; NULL whatever key length is asked about. */
	return cipher == ESP_C_NULL || cipher == ESP_C_NONE || esp_cipher_key_ok(cipher, key_len);
}

static void imb_fini(struct esp_crypto_sa *cs)
{
	struct imb_ctx *x = cs->ctx;
	if (!x)
		return;
	OPENSSL_cleanse(x, sizeof(*x));
	free(x);
	cs->ctx = NULL;
}

static int imb_init(struct esp_crypto_sa *cs)
{
	if (!mgrs_get())
		return -ENOMEM;
	IMB_MGR *m = tl_mgrs.direct;
	struct imb_ctx *x = aligned_alloc(64, (sizeof(*x) + 63) & ~(size_t)63);
	if (!x)
		return -ENOMEM;
	memset(x, 0, sizeof(*x));
	cs->ctx = x;
	x->key_len = cs->enc_key_len;
	switch (cs->cipher) {
	case ESP_C_AES_GCM:
	case ESP_C_AES_GMAC:
		if (cs->enc_key_len == 16)
			IMB_AES128_GCM_PRE(m, cs->enc_key, &x->gkey);
		else if (cs->enc_key_len == 24)
			IMB_AES192_GCM_PRE(m, cs->enc_key, &x->gkey);
		else
			IMB_AES256_GCM_PRE(m, cs->enc_key, &x->gkey);
		break;
	case ESP_C_AES_CBC:
	case ESP_C_AES_CTR:
		x->cmode = cs->cipher == ESP_C_AES_CBC ? IMB_CIPHER_CBC : IMB_CIPHER_CNTR;
		if (cs->enc_key_len == 16)
			IMB_AES_KEYEXP_128(m, cs->enc_key, x->enc_keys, x->dec_keys);
		else if (cs->enc_key_len == 24)
			IMB_AES_KEYEXP_192(m, cs->enc_key, x->enc_keys, x->dec_keys);
		else
			IMB_AES_KEYEXP_256(m, cs->enc_key, x->enc_keys, x->dec_keys);
		break;
	case ESP_C_3DES_CBC:
		x->cmode = IMB_CIPHER_DES3;
		for (int i = 0; i < 3; i++) {
			IMB_DES_KEYSCHED(m, x->des_ks[i], cs->enc_key + 8 * i);
			x->des_ptrs[i] = x->des_ks[i];
		}
		break;
	case ESP_C_CHACHA_POLY:
		x->cmode = IMB_CIPHER_CHACHA20_POLY1305;
		x->hash = IMB_AUTH_CHACHA20_POLY1305;
		memcpy(x->chacha_key, cs->enc_key, 32);
		break;
	default:
		x->cmode = IMB_CIPHER_NULL;
		break;
	}
	if (cs->hmac) {
		uint8_t k[128] __attribute__((aligned(16)));
		unsigned bl = esp_hmac_block_len(cs->hmac);
		memset(k, 0, sizeof(k));
		memcpy(k, cs->auth_key, cs->auth_key_len);
		for (int pass = 0; pass < 2; pass++) {
			uint8_t *out = pass ? x->opad : x->ipad;
			for (unsigned i = 0; i < bl; i++)
				k[i] ^= pass ? (0x36 ^ 0x5c) : 0x36;
			switch (cs->hmac) {
			case ESP_H_MD5:    IMB_MD5_ONE_BLOCK(m, k, out); x->hash = IMB_AUTH_MD5; break;
			case ESP_H_SHA1:   IMB_SHA1_ONE_BLOCK(m, k, out); x->hash = IMB_AUTH_HMAC_SHA_1; break;
			case ESP_H_SHA256: IMB_SHA256_ONE_BLOCK(m, k, out); x->hash = IMB_AUTH_HMAC_SHA_256; break;
			case ESP_H_SHA384: IMB_SHA384_ONE_BLOCK(m, k, out); x->hash = IMB_AUTH_HMAC_SHA_384; break;
			case ESP_H_SHA512: IMB_SHA512_ONE_BLOCK(m, k, out); x->hash = IMB_AUTH_HMAC_SHA_512; break;
			}
		}
		OPENSSL_cleanse(k, sizeof(k));
	}
	return 0;
}

/* ---- GCM / GMAC: direct API ---- */

/* The manager's GCM function for this key size and direction, picked once per burst. */
static aes_gcm_enc_dec_t gcm_fn(const IMB_MGR *m, unsigned key_len, bool enc)
{
	if (key_len == 16)
		return enc ? m->gcm128_enc : m->gcm128_dec;
	if (key_len == 24)
		return enc ? m->gcm192_enc : m->gcm192_dec;
	return enc ? m->gcm256_enc : m->gcm256_dec;
}

IMB_MGR *esp_imb_direct_mgr(void)
{
	return mgrs_get() ? tl_mgrs.direct : NULL;
}

void esp_imb_gcm_op(IMB_MGR *m, const struct gcm_key_data *k, unsigned key_len, struct esp_cop *c,
		    bool gmac, bool enc, struct gcm_context_data *g)
{
	uint8_t *tag = enc ? c->tag : c->calc;
	if (gmac)
		gcm_fn(m, key_len, true)(k, g, c->calc + 16, c->calc + 16, 0, c->iv, c->auth, c->auth_len, tag, 16);
	else
		gcm_fn(m, key_len, enc)(k, g, c->data, c->data, c->data_len, c->iv, c->aad, c->aad_len, tag, 16);
}

static void direct_run(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n, bool enc)
{
	const struct imb_ctx *x = cs->ctx;
	struct gcm_context_data g;
	if (cs->kind == ESP_KIND_GMAC) {
		/* GMAC = GCM with everything as AAD and nothing to encrypt (RFC 4543 §3). */
		aes_gcm_enc_dec_t fn = gcm_fn(tl_mgrs.direct, x->key_len, true);
		for (unsigned i = 0; i < n; i++) {
			struct esp_cop *c = &ops[i];
			uint8_t *tag = enc ? c->tag : c->calc;
			fn(&x->gkey, &g, c->calc + 16, c->calc + 16, 0, c->iv, c->auth, c->auth_len, tag, 16);
			c->ok = enc ? 1 : esp_icv_equal(c->calc, c->icv_in, 16);
		}
	} else if (enc) {
		aes_gcm_enc_dec_t fn = gcm_fn(tl_mgrs.direct, x->key_len, true);
		esp_cops_prefetch_first(ops, n, ESP_KIND_AEAD);
		for (unsigned i = 0; i < n; i++) {
			struct esp_cop *c = &ops[i];
			esp_cops_prefetch_next(ops, n, i, ESP_KIND_AEAD);
			fn(&x->gkey, &g, c->data, c->data, c->data_len, c->iv, c->aad, c->aad_len, c->tag, 16);
			c->ok = 1;
		}
	} else {
		aes_gcm_enc_dec_t fn = gcm_fn(tl_mgrs.direct, x->key_len, false);
		esp_cops_prefetch_first(ops, n, ESP_KIND_AEAD);
		for (unsigned i = 0; i < n; i++) {
			struct esp_cop *c = &ops[i];
			esp_cops_prefetch_next(ops, n, i, ESP_KIND_AEAD);
			fn(&x->gkey, &g, c->data, c->data, c->data_len, c->iv, c->aad, c->aad_len, c->calc, 16);
			c->ok = esp_icv_equal(c->calc, c->icv_in, 16);
		}
	}
	/* The context holds keystream-derived state: wiped once per burst, not per packet. */
	OPENSSL_cleanse(&g, sizeof(g));
}

/* ---- everything else: job API ---- */

static void job_done(const struct esp_crypto_sa *cs, IMB_JOB *job, bool enc)
{
	struct esp_cop *c = job->user_data;
	if (job->status != IMB_STATUS_COMPLETED) {
		c->ok = 0;
		return;
	}
	c->ok = enc ? 1 : esp_icv_equal(c->calc, c->icv_in, cs->icv_len);
}

static void jobs_run(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n, bool enc)
{
	const struct imb_ctx *x = cs->ctx;
	IMB_MGR *m = tl_mgrs.job;
	IMB_JOB *job;
	esp_cops_prefetch_first(ops, n, cs->kind);
	for (unsigned i = 0; i < n; i++) {
		struct esp_cop *c = &ops[i];
		esp_cops_prefetch_next(ops, n, i, cs->kind);
		job = IMB_GET_NEXT_JOB(m);
		job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
		job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
		job->cipher_mode = x->cmode;
		job->hash_alg = x->hash;
		job->auth_tag_output = enc ? c->tag : c->calc;
		job->user_data = c;
		if (x->cmode == IMB_CIPHER_CHACHA20_POLY1305) {
			job->enc_keys = job->dec_keys = x->chacha_key;
			job->key_len_in_bytes = 32;
			job->src = c->data;
			job->dst = c->data;
			job->cipher_start_src_offset_in_bytes = 0;
			job->msg_len_to_cipher_in_bytes = c->data_len;
			job->hash_start_src_offset_in_bytes = 0;
			job->msg_len_to_hash_in_bytes = c->data_len;
			job->iv = c->iv;
			job->iv_len_in_bytes = 12;
			job->u.CHACHA20_POLY1305.aad = c->aad;
			job->u.CHACHA20_POLY1305.aad_len_in_bytes = c->aad_len;
			job->auth_tag_output_len_in_bytes = 16;
		} else {
			/* One region: hash from c->auth, cipher the part at c->data, in place. */
			job->src = c->auth;
			job->hash_start_src_offset_in_bytes = 0;
			job->msg_len_to_hash_in_bytes = c->auth_len;
			job->u.HMAC._hashed_auth_key_xor_ipad = x->ipad;
			job->u.HMAC._hashed_auth_key_xor_opad = x->opad;
			job->auth_tag_output_len_in_bytes = cs->icv_len;
			if (x->cmode == IMB_CIPHER_NULL || c->data_len == 0) {
				job->cipher_mode = IMB_CIPHER_NULL;
				job->dst = c->auth;
				job->cipher_start_src_offset_in_bytes = 0;
				job->msg_len_to_cipher_in_bytes = 0;
				job->key_len_in_bytes = 16;
				job->enc_keys = job->dec_keys = x->enc_keys;
				job->iv = c->iv;
				job->iv_len_in_bytes = 0;
			} else {
				job->dst = c->data;
				job->cipher_start_src_offset_in_bytes = (uint64_t)(c->data - c->auth);
				job->msg_len_to_cipher_in_bytes = c->data_len;
				job->iv = c->iv;
				if (x->cmode == IMB_CIPHER_DES3) {
					job->enc_keys = job->dec_keys = x->des_ptrs;
					job->key_len_in_bytes = 24;
					job->iv_len_in_bytes = 8;
				} else {
					job->enc_keys = x->enc_keys;
					job->dec_keys = x->dec_keys;
					job->key_len_in_bytes = x->key_len;
					job->iv_len_in_bytes = 16;
				}
			}
		}
		job = IMB_SUBMIT_JOB(m);
		while (job) {
			job_done(cs, job, enc);
			job = IMB_GET_COMPLETED_JOB(m);
		}
	}
	/* Drain: nothing stays queued between calls (see the 1.3 ring bug above). */
	while ((job = IMB_FLUSH_JOB(m)) != NULL)
		job_done(cs, job, enc);
}

static void run(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n, bool enc)
{
	if (ESP_UNLIKELY(!mgrs_get())) {
		for (unsigned i = 0; i < n; i++)
			ops[i].ok = 0;
		return;
	}
	if (cs->cipher == ESP_C_AES_GCM || cs->cipher == ESP_C_AES_GMAC)
		direct_run(cs, ops, n, enc);
	else
		jobs_run(cs, ops, n, enc);
}

static void imb_encrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	run(cs, ops, n, true);
}

static void imb_decrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	run(cs, ops, n, false);
}

const struct esp_crypto_ops esp_crypto_ipsecmb = {
	.name = "ipsecmb",
	.supports = imb_supports,
	.init = imb_init,
	.fini = imb_fini,
	.encrypt = imb_encrypt,
	.decrypt = imb_decrypt,
};

#endif /* HAVE_IPSEC_MB */
