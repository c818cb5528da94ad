/* ipsecctl/ipsecctl_alg.c: the transform names ipsecctl accepts (strongSwan/IANA spelling, with the
 * OpenBSD and `ip xfrm` aliases people paste from old configurations), their key/salt/ICV sizes and
 * the names Wireshark's esp_sa table uses for them. One table per transform type, canonical name
 * first: the canonical name is what -n and listings print. */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "ipsecctl/ipsecctl.h"

/* Wireshark 4.0 packet-ipsec.c esp_encryption_type_vals / esp_authentication_type_vals. It has no
 * ChaCha20-Poly1305 (added in 4.2) and no ENCR_NULL_AUTH_AES_GMAC: those SAs cannot be exported. */
#define WS_AES_GCM16 "AES-GCM with 16 octet ICV [RFC4106]"

static const struct ctl_enc_alg enc_algs[] = {
	{ "aes128gcm16", SADB_ENC_AES_GCM16, 16, 4, 16, true, false, WS_AES_GCM16 },
	{ "aes192gcm16", SADB_ENC_AES_GCM16, 24, 4, 16, true, false, WS_AES_GCM16 },
	{ "aes256gcm16", SADB_ENC_AES_GCM16, 32, 4, 16, true, false, WS_AES_GCM16 },
	{ "aes128gmac", SADB_ENC_AES_GMAC, 16, 4, 16, true, false, NULL },
	{ "aes192gmac", SADB_ENC_AES_GMAC, 24, 4, 16, true, false, NULL },
	{ "aes256gmac", SADB_ENC_AES_GMAC, 32, 4, 16, true, false, NULL },
	{ "chacha20poly1305", SADB_ENC_CHACHA20_POLY1305, 32, 4, 16, true, false, NULL },
	{ "aes128", SADB_ENC_AES_CBC, 16, 0, 0, false, false, "AES-CBC [RFC3602]" },
	{ "aes192", SADB_ENC_AES_CBC, 24, 0, 0, false, false, "AES-CBC [RFC3602]" },
	{ "aes256", SADB_ENC_AES_CBC, 32, 0, 0, false, false, "AES-CBC [RFC3602]" },
	{ "aes128ctr", SADB_ENC_AES_CTR, 16, 4, 0, false, false, "AES-CTR [RFC3686]" },
	{ "aes192ctr", SADB_ENC_AES_CTR, 24, 4, 0, false, false, "AES-CTR [RFC3686]" },
	{ "aes256ctr", SADB_ENC_AES_CTR, 32, 4, 0, false, false, "AES-CTR [RFC3686]" },
	{ "3des", SADB_ENC_3DES_CBC, 24, 0, 0, false, true, "TripleDES-CBC [RFC2451]" },
	{ "null", SADB_ENC_NULL, 0, 0, 0, false, false, "NULL" },
};

static const struct { const char *alias, *name; } enc_aliases[] = {
	{ "aes128gcm128", "aes128gcm16" }, { "aes192gcm128", "aes192gcm16" },
	{ "aes256gcm128", "aes256gcm16" }, { "aes-128-gcm", "aes128gcm16" },
	{ "aes-256-gcm", "aes256gcm16" }, { "chacha20-poly1305", "chacha20poly1305" },
	{ "aes128cbc", "aes128" }, { "aes192cbc", "aes192" }, { "aes256cbc", "aes256" },
	{ "aes", "aes128" }, { "aes-128-cbc", "aes128" }, { "aes-256-cbc", "aes256" },
	{ "3des-cbc", "3des" }, { "des3_ede", "3des" }, { "aes-ctr", "aes128ctr" },
};

static const struct ctl_auth_alg auth_algs[] = {
	{ "sha1", SADB_AUTH_HMAC_SHA1_96, 20, 0, 12, false, false, "HMAC-SHA-1-96 [RFC2404]" },
	{ "sha256", SADB_AUTH_HMAC_SHA256_128, 32, 0, 16, false, false, "HMAC-SHA-256-128 [RFC4868]" },
	{ "sha384", SADB_AUTH_HMAC_SHA384_192, 48, 0, 24, false, false, "HMAC-SHA-384-192 [RFC4868]" },
	{ "sha512", SADB_AUTH_HMAC_SHA512_256, 64, 0, 32, false, false, "HMAC-SHA-512-256 [RFC4868]" },
	{ "md5", SADB_AUTH_HMAC_MD5_96, 16, 0, 12, true, false, "HMAC-MD5-96 [RFC2403]" },
	{ "aes128gmac", SADB_AUTH_AES_128_GMAC, 16, 4, 16, false, true, NULL },
	{ "aes256gmac", SADB_AUTH_AES_256_GMAC, 32, 4, 16, false, true, NULL },
};

static const struct { const char *alias, *name; } auth_aliases[] = {
	{ "sha", "sha1" }, { "sha1_96", "sha1" }, { "hmac-sha1", "sha1" }, { "hmac-sha1-96", "sha1" },
	{ "sha2_256", "sha256" }, { "sha256_128", "sha256" }, { "hmac-sha2-256", "sha256" },
	{ "hmac-sha256", "sha256" }, { "sha2_384", "sha384" }, { "hmac-sha2-384", "sha384" },
	{ "hmac-sha384", "sha384" }, { "sha2_512", "sha512" }, { "hmac-sha2-512", "sha512" },
	{ "hmac-sha512", "sha512" }, { "md5_96", "md5" }, { "hmac-md5", "md5" },
	{ "hmac-md5-96", "md5" },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const struct ctl_enc_alg *ctl_enc_find(const char *name)
{
	for (size_t i = 0; i < N(enc_aliases); i++)
		if (!strcasecmp(name, enc_aliases[i].alias))
			name = enc_aliases[i].name;
	for (size_t i = 0; i < N(enc_algs); i++)
		if (!strcasecmp(name, enc_algs[i].name))
			return &enc_algs[i];
	return NULL;
}

const struct ctl_auth_alg *ctl_auth_find(const char *name)
{
	for (size_t i = 0; i < N(auth_aliases); i++)
		if (!strcasecmp(name, auth_aliases[i].alias))
			name = auth_aliases[i].name;
	for (size_t i = 0; i < N(auth_algs); i++)
		if (!strcasecmp(name, auth_algs[i].name))
			return &auth_algs[i];
	return NULL;
}

const struct ctl_enc_alg *ctl_enc_by_id(uint16_t enc, unsigned key_len)
{
	for (size_t i = 0; i < N(enc_algs); i++)
		if (enc_algs[i].enc == enc && enc_algs[i].key_len == key_len)
			return &enc_algs[i];
	return NULL;
}

const struct ctl_auth_alg *ctl_auth_by_id(uint16_t auth)
{
	for (size_t i = 0; i < N(auth_algs); i++)
		if (auth_algs[i].auth == auth)
			return &auth_algs[i];
	return NULL;
}

const char *ctl_enc_names(void)
{
	return "aes128gcm16, aes192gcm16, aes256gcm16, aes128gmac, aes192gmac, aes256gmac, "
	       "chacha20poly1305, aes128, aes192, aes256, aes128ctr, aes192ctr, aes256ctr, 3des, null";
}

const char *ctl_auth_names(void)
{
	return "sha1, sha256, sha384, sha512, md5, aes128gmac (AH), aes256gmac (AH)";
}
