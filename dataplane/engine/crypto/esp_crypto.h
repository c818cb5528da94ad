/* dataplane/engine/crypto/esp_crypto.h: the interface between the ESP/AH engine and its crypto
 * backends (libespcrypto): the transforms a backend is asked to run, the keyed session it sets up once
 * per SA, the per-packet operation it runs in batches, and the vtable each backend implements. The
 * engine includes this; the backends include nothing of the engine, so libespcrypto depends on no
 * symbol of libesp and a backend can be built and tested alone (as VPP's crypto engines implement
 * vnet/crypto without knowing ipsec). */
#ifndef XIPSEC_ESP_CRYPTO_H
#define XIPSEC_ESP_CRYPTO_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define ESP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define ESP_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define ESP_CRYPTO_BURST_MAX    64 /* most operations one encrypt/decrypt call takes */
#define ESP_CRYPTO_ENC_KEY_MAX  32 /* AES-256, ChaCha20, 3DES (24) */
#define ESP_CRYPTO_AUTH_KEY_MAX 64 /* an HMAC key longer than the hash's block is refused earlier */

/* How a transform protects a packet; picks the code path in the backends. */
enum esp_kind {
	ESP_KIND_AEAD = 1,   /* GCM, ChaCha20-Poly1305: cipher + tag over aad */
	ESP_KIND_GMAC,       /* GMAC (ESP ENCR_NULL_AUTH_AES_GMAC or AH): tag over auth region only */
	ESP_KIND_CIPHER_HMAC,/* CBC, CTR, 3DES, NULL cipher, each with HMAC (ESP) */
	ESP_KIND_HMAC        /* AH with HMAC */
};

/* Cipher of an ESP_KIND_CIPHER_HMAC / AEAD transform. */
enum esp_cipher {
	ESP_C_NONE = 0, ESP_C_AES_CBC, ESP_C_AES_CTR, ESP_C_3DES_CBC, ESP_C_NULL,
	ESP_C_AES_GCM, ESP_C_CHACHA_POLY, ESP_C_AES_GMAC
};
enum esp_hmac { ESP_H_NONE = 0, ESP_H_MD5, ESP_H_SHA1, ESP_H_SHA256, ESP_H_SHA384, ESP_H_SHA512 };

/* Whether key_len bytes is a key length of the cipher (none for NULL or no cipher). */
static inline bool esp_cipher_key_ok(uint8_t cipher, unsigned key_len)
{
	switch (cipher) {
	case ESP_C_AES_GCM:
	case ESP_C_AES_GMAC:
	case ESP_C_AES_CBC:
	case ESP_C_AES_CTR:
		return key_len == 16 || key_len == 24 || key_len == 32;
	case ESP_C_CHACHA_POLY:
		return key_len == 32;
	case ESP_C_3DES_CBC:
		return key_len == 24;
	case ESP_C_NULL:
	case ESP_C_NONE:
		return key_len == 0;
	default:
		return false;
	}
}

/* Digest size of an HMAC hash (the full one, before truncation to the ICV) and its block size. */
static inline unsigned esp_hmac_digest_len(uint8_t hmac)
{
	static const uint8_t len[] = { 0, 16, 20, 32, 48, 64 };
	return hmac < sizeof(len) ? len[hmac] : 0;
}

static inline unsigned esp_hmac_block_len(uint8_t hmac)
{
	return hmac == ESP_H_SHA384 || hmac == ESP_H_SHA512 ? 128 : 64;
}

/* One crypto operation on one packet, in place. Built by the protocol code, run by a backend in a
 * batch, so that multi-buffer backends can overlap packets. */
struct esp_cop {
	uint8_t *data;          /* cipher region (CBC: whole blocks), in place */
	uint32_t data_len;
	uint32_t auth_len;      /* HMAC: bytes hashed from auth; GMAC: bytes of AAD from auth */
	uint8_t *auth;          /* HMAC/GMAC region (ESN high bits already appended) */
	const uint8_t *aad;     /* AEAD: additional data (SPI, [seq hi,] seq) */
	uint32_t aad_len;
	uint32_t ok;            /* set by the backend: 1 = encrypted / ICV verified, 0 = failed */
	uint8_t *tag;           /* encrypt: tag written here (icv_len bytes) */
	const uint8_t *icv_in;  /* decrypt: the received ICV */
	uint8_t iv[16];         /* CBC IV, CTR counter block (16) or AEAD/GMAC nonce (12) */
	uint8_t aadbuf[16];     /* AEAD with ESN: SPI, seq hi, seq lo (RFC 4106 §5), 4 spare */
	uint8_t fix_save[4];    /* bytes to put back at fix after the operation (ESN shifts) */
	uint8_t *fix;
	uint8_t icv_save[32];   /* decrypt: the received ICV, copied before the crypto */
	uint8_t calc[64];       /* decrypt: scratch for the computed tag */
};

/* The frames of a burst were written by the kernel's copy on another CPU (copy-mode AF_XDP, and
 * the NIC's or veth's receive on whichever CPU ran it): a backend's first touch of each line waits
 * for its transfer, about as long again as the AES-GCM of a 1400-byte packet in cache. So a backend
 * asks for the packet ESP_PREFETCH_AHEAD places on, every line of the region it will read and
 * write (for writing: it works in place), while it works on this one. Measured with bench/peers,
 * 1400-byte packets through AES-GCM: the worker's user time per packet 0.55 -> 0.44 us and 1705 ->
 * 1877 Mbit/s; one, two or three places ahead, or a whole burst at its start, alike. */
#define ESP_PREFETCH_AHEAD 2u

static inline void esp_cop_prefetch(const struct esp_cop *c, uint8_t kind)
{
	const uint8_t *p = kind == ESP_KIND_AEAD ? c->data : c->auth;
	uint32_t len = kind == ESP_KIND_AEAD ? c->data_len : c->auth_len;
	for (uint32_t off = 0; off < len; off += 64)
		__builtin_prefetch(p + off, 1, 3);
}

/* Before a backend's loop over ops[0..n): the first ESP_PREFETCH_AHEAD; in it, at i, the one
 * ESP_PREFETCH_AHEAD places on. */
static inline void esp_cops_prefetch_first(const struct esp_cop *ops, unsigned n, uint8_t kind)
{
	for (unsigned k = 0; k < ESP_PREFETCH_AHEAD && k < n; k++)
		esp_cop_prefetch(&ops[k], kind);
}

static inline void esp_cops_prefetch_next(const struct esp_cop *ops, unsigned n, unsigned i, uint8_t kind)
{
	if (i + ESP_PREFETCH_AHEAD < n)
		esp_cop_prefetch(&ops[i + ESP_PREFETCH_AHEAD], kind);
}

/* What a backend keys and runs for one SA direction: the transform, the keys, and the backend's own
 * keyed state (ctx). Filled by the engine before init; init sets ctx, fini wipes and frees it. */
struct esp_crypto_sa {
	void *ctx;
	uint8_t kind, cipher, hmac; /* enum esp_kind / esp_cipher / esp_hmac */
	uint8_t icv_len;            /* bytes of tag on the wire */
	bool out;                   /* outbound (protect) rather than inbound (verify) */
	uint8_t enc_key_len, auth_key_len;
	uint8_t enc_key[ESP_CRYPTO_ENC_KEY_MAX];
	uint8_t auth_key[ESP_CRYPTO_AUTH_KEY_MAX];
};

/* A backend: sets up keys once per SA, then runs batches of operations. */
struct esp_crypto_ops {
	const char *name;
	bool (*supports)(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len);
	int (*init)(struct esp_crypto_sa *cs);   /* 0 or -errno; fills cs->ctx */
	void (*fini)(struct esp_crypto_sa *cs);  /* wipes and frees cs->ctx */
	/* n <= ESP_CRYPTO_BURST_MAX. Encrypt writes tags; decrypt sets ok, and may decrypt data even
	 * when the ICV fails (the packet is dropped then). */
	void (*encrypt)(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n);
	void (*decrypt)(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n);
};

extern const struct esp_crypto_ops esp_crypto_openssl;
extern const struct esp_crypto_ops esp_crypto_sodium;
extern const struct esp_crypto_ops esp_crypto_native;
#ifdef HAVE_IPSEC_MB
extern const struct esp_crypto_ops esp_crypto_ipsecmb;
#endif

/* Whether two ICVs of n bytes are equal, in constant time like CRYPTO_memcmp: every byte is read
 * and no branch depends on their values (n, public, only sets the number of steps). Inline: for
 * 12-32 bytes the library call costs more than the comparison (~90 instructions for 12 bytes). */
static inline bool esp_icv_equal(const uint8_t *a, const uint8_t *b, unsigned n)
{
	uint64_t d = 0;
	unsigned i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		d |= x ^ y;
	}
	if (i + 4 <= n) {
		uint32_t x, y;
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		d |= x ^ y;
		i += 4;
	}
	for (; i < n; i++)
		d |= (uint64_t)(a[i] ^ b[i]);
	/* d is opaque from here: the compiler must compute all of it, so it cannot stop at the first
	 * difference. */
	__asm__("" : "+r"(d));
	return d == 0;
}

#endif
