/* tests/fuzz/fuzz_ref.h: the fuzzers' own reference for protecting an ESP packet (RFC 4303 with
 * RFC 4106/4543/7634/3686/3602 and HMAC), written here on OpenSSL's primitives rather than taken from
 * the engine, and the helper that makes an input's IP/UDP lengths consistent. Used by fuzz_esp_plain
 * and fuzz_burst to hand the engine packets that pass the ICV. */
#ifndef XIPSEC_FUZZ_REF_H
#define XIPSEC_FUZZ_REF_H

#include "tests/fuzz/fuzz_common.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

static inline void must(int ok)
{
	if (!ok) {
		fprintf(stderr, "fuzz: OpenSSL reference failed\n");
		abort();
	}
}

/* AEAD (GCM, ChaCha20-Poly1305, GMAC with no data) in place; 16-byte tag to tag. */
static inline void ref_aead(const EVP_CIPHER *c, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
		     size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	uint8_t none[16];
	int n;
	if (!data)
		data = none; /* GMAC: no ciphertext, but Final wants a place to write nothing to */
	must(x && EVP_EncryptInit_ex(x, c, NULL, NULL, NULL));
	must(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL));
	must(EVP_EncryptInit_ex(x, NULL, NULL, key, nonce));
	if (aad_len)
		must(EVP_EncryptUpdate(x, NULL, &n, aad, (int)aad_len));
	if (len)
		must(EVP_EncryptUpdate(x, data, &n, data, (int)len));
	must(EVP_EncryptFinal_ex(x, data + len, &n));
	must(EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, tag));
	EVP_CIPHER_CTX_free(x);
}

static inline void ref_cipher(const EVP_CIPHER *c, const uint8_t *key, const uint8_t *iv, uint8_t *data, size_t len)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int n;
	must(x && EVP_EncryptInit_ex(x, c, NULL, key, iv));
	EVP_CIPHER_CTX_set_padding(x, 0);
	if (len)
		must(EVP_EncryptUpdate(x, data, &n, data, (int)len));
	EVP_CIPHER_CTX_free(x);
}

static inline const EVP_MD *ref_md(uint16_t auth)
{
	switch (auth) {
	case SADB_AUTH_HMAC_MD5_96: return EVP_md5();
	case SADB_AUTH_HMAC_SHA1_96: return EVP_sha1();
	case SADB_AUTH_HMAC_SHA256_128: return EVP_sha256();
	case SADB_AUTH_HMAC_SHA384_192: return EVP_sha384();
	default: return EVP_sha512();
	}
}

/* Protect the ESP packet esp[0..elen) in place (RFC 4303/4106/4543/7634/3686), ESN high half 0.
 * Returns 1 if the result is a correctly protected packet. */
static inline int protect(const struct sadb_sa *s, const struct fz_xf *x, uint8_t *esp, size_t elen)
{
	if (elen < 8u + x->iv_len + x->icv_len + 2u)
		return 0;
	const int esn = !!(s->flags & SADB_SAF_ESN);
	uint8_t *iv = esp + 8, *pl = iv + x->iv_len;
	size_t clen = elen - 8 - x->iv_len - x->icv_len;
	uint8_t *icv = pl + clen;
	uint8_t nonce[16], aad[12];
	size_t aad_len = 0;
	memcpy(nonce, s->salt, 4);
	memcpy(nonce + 4, iv, 8);
	memcpy(aad, esp, 4);
	if (esn) {
		memset(aad + 4, 0, 4);
		memcpy(aad + 8, esp + 4, 4);
		aad_len = 12;
	} else {
		memcpy(aad + 4, esp + 4, 4);
		aad_len = 8;
	}
	switch (x->enc) {
	case SADB_ENC_AES_GCM16:
		ref_aead(x->klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), s->enc_key, nonce, aad, aad_len,
			 pl, clen, icv);
		return 1;
	case SADB_ENC_CHACHA20_POLY1305:
		ref_aead(EVP_chacha20_poly1305(), s->enc_key, nonce, aad, aad_len, pl, clen, icv);
		return 1;
	case SADB_ENC_AES_GMAC: {
		/* AAD = SPI || [seq hi ||] seq || IV || payload || trailer (RFC 4543 §3.3). */
		size_t n = 8u + (esn ? 4u : 0u) + x->iv_len + clen;
		uint8_t *a = malloc(n);
		memcpy(a, aad, aad_len);
		memcpy(a + aad_len, iv, x->iv_len + clen);
		ref_aead(x->klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), s->enc_key, nonce, a, n, NULL, 0, icv);
		free(a);
		return 1;
	}
	default:
		break;
	}
	int whole = 1;
	if (x->enc == SADB_ENC_AES_CBC || x->enc == SADB_ENC_3DES_CBC) {
		size_t blocks = clen - clen % x->blk; /* the engine drops a ragged payload before the ICV */
		whole = blocks == clen;
		ref_cipher(x->enc == SADB_ENC_3DES_CBC ? EVP_des_ede3_cbc() :
			   x->klen == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc(), s->enc_key, iv, pl, blocks);
	} else if (x->enc == SADB_ENC_AES_CTR) {
		uint8_t ctr[16];
		memcpy(ctr, s->salt, 4);
		memcpy(ctr + 4, iv, 8);
		ctr[12] = ctr[13] = ctr[14] = 0;
		ctr[15] = 1;
		ref_cipher(x->klen == 16 ? EVP_aes_128_ctr() : EVP_aes_256_ctr(), s->enc_key, ctr, pl, clen);
	}
	/* HMAC over SPI .. next header [|| seq hi] (RFC 4303 §2.2.1), truncated. */
	size_t n = elen - x->icv_len;
	uint8_t *m = malloc(n + 4);
	memcpy(m, esp, n);
	memset(m + n, 0, 4);
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	must(HMAC(ref_md(x->auth), s->auth_key, s->auth_key_len, m, n + (esn ? 4 : 0), md, &mdlen) != NULL);
	memcpy(icv, md, x->icv_len);
	free(m);
	return whole;
}

static inline uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Set the IPv4 total length (and header checksum) or IPv6 payload length, and a NAT-T UDP length,
 * to the packet's size. */
static inline void fz_fix_lengths(uint8_t *pkt, size_t len)
{
	struct esp_outer o;
	if (len < 20)
		return;
	if ((pkt[0] >> 4) == 4) {
		pkt[2] = (uint8_t)(len >> 8);
		pkt[3] = (uint8_t)len;
		pkt[10] = pkt[11] = 0;
		unsigned ihl = (pkt[0] & 15u) * 4u;
		if (ihl >= 20 && ihl <= len) {
			uint16_t c = csum(pkt, ihl);
			pkt[10] = (uint8_t)(c >> 8);
			pkt[11] = (uint8_t)c;
		}
	} else if ((pkt[0] >> 4) == 6 && len >= 40) {
		pkt[4] = (uint8_t)((len - 40) >> 8);
		pkt[5] = (uint8_t)(len - 40);
	}
	if (esp_parse_outer(pkt, (uint32_t)len, 4500, &o) == SADB_DROP_NONE && o.udp_encap) {
		uint32_t u = o.l4_off - 8;
		pkt[u + 4] = (uint8_t)((len - u) >> 8);
		pkt[u + 5] = (uint8_t)(len - u);
	}
}

/* Protect the ESP packet found in pkt (as the engine will find it) with the reference; 1 if the
 * result is a correctly protected packet of SA s. */
static inline int fz_protect_pkt(const struct sadb_sa *s, const struct fz_xf *x, int natt, uint8_t *pkt, size_t len)
{
	struct esp_outer o;
	if (esp_parse_outer(pkt, (uint32_t)len, 4500, &o) != SADB_DROP_NONE || o.proto != SADB_PROTO_ESP ||
	    (int)o.udp_encap != natt)
		return 0;
	uint32_t end = (pkt[0] >> 4) == 4 ? (uint32_t)(pkt[2] << 8 | pkt[3]) : 40u + (uint32_t)(pkt[4] << 8 | pkt[5]);
	/* ESP in UDP ends where the datagram does (its UDP length, which esp_parse_outer checked) */
	if (natt)
		end = o.l4_off - 8 + (uint32_t)(pkt[o.l4_off - 4] << 8 | pkt[o.l4_off - 3]);
	if (end > len || end <= o.l4_off)
		return 0;
	return protect(s, x, pkt + o.l4_off, end - o.l4_off);
}

#endif
