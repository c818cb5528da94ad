/* tests/unit/test_esp_util.h: helpers shared by the ESP/AH engine's unit tests: the table of
 * transforms, SA records with deterministic keys, packet builders and buffers laid out like AF_XDP
 * frames (4096 bytes, packet at an offset). Test code only. */
#ifndef XIPSEC_TEST_ESP_UTIL_H
#define XIPSEC_TEST_ESP_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "dataplane/engine/esp.h"

#define FRAME 4096
#define PKT_OFF 256

struct xf {
	const char *name;
	uint8_t proto;
	uint16_t enc;
	uint8_t enc_key_len;
	uint16_t auth;
};

/* Every transform the engine offers. */
static const struct xf xforms[] = {
	{ "esp aes-gcm-16-128", SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 16, SADB_AUTH_NONE },
	{ "esp aes-gcm-16-256", SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 32, SADB_AUTH_NONE },
	{ "esp aes-gmac-128", SADB_PROTO_ESP, SADB_ENC_AES_GMAC, 16, SADB_AUTH_NONE },
	{ "esp aes-gmac-256", SADB_PROTO_ESP, SADB_ENC_AES_GMAC, 32, SADB_AUTH_NONE },
	{ "esp chacha20-poly1305", SADB_PROTO_ESP, SADB_ENC_CHACHA20_POLY1305, 32, SADB_AUTH_NONE },
	{ "esp aes-cbc-128/sha1-96", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp aes-cbc-128/sha256-128", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA256_128 },
	{ "esp aes-cbc-256/sha384-192", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA384_192 },
	{ "esp aes-cbc-256/sha512-256", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA512_256 },
	{ "esp aes-cbc-256/sha1-96", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp aes-ctr-128/sha1-96", SADB_PROTO_ESP, SADB_ENC_AES_CTR, 16, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp aes-ctr-256/sha256-128", SADB_PROTO_ESP, SADB_ENC_AES_CTR, 32, SADB_AUTH_HMAC_SHA256_128 },
	{ "esp 3des-cbc/sha1-96", SADB_PROTO_ESP, SADB_ENC_3DES_CBC, 24, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp 3des-cbc/md5-96", SADB_PROTO_ESP, SADB_ENC_3DES_CBC, 24, SADB_AUTH_HMAC_MD5_96 },
	{ "esp null/sha256-128", SADB_PROTO_ESP, SADB_ENC_NULL, 0, SADB_AUTH_HMAC_SHA256_128 },
	{ "esp null/sha1-96", SADB_PROTO_ESP, SADB_ENC_NULL, 0, SADB_AUTH_HMAC_SHA1_96 },
	{ "ah hmac-md5-96", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_MD5_96 },
	{ "ah hmac-sha1-96", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA1_96 },
	{ "ah hmac-sha256-128", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA256_128 },
	{ "ah hmac-sha384-192", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA384_192 },
	{ "ah hmac-sha512-256", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA512_256 },
	{ "ah aes-128-gmac", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_AES_128_GMAC },
	{ "ah aes-256-gmac", SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_AES_256_GMAC },
};
#define N_XFORMS (sizeof(xforms) / sizeof(xforms[0]))

static inline unsigned auth_key_len_of(uint16_t auth)
{
	switch (auth) {
	case SADB_AUTH_HMAC_MD5_96: return 16;
	case SADB_AUTH_HMAC_SHA1_96: return 20;
	case SADB_AUTH_HMAC_SHA256_128: return 32;
	case SADB_AUTH_HMAC_SHA384_192: return 48;
	case SADB_AUTH_HMAC_SHA512_256: return 64;
	case SADB_AUTH_AES_128_GMAC: return 20; /* key + salt */
	case SADB_AUTH_AES_256_GMAC: return 36;
	default: return 0;
	}
}

static inline void addr4(struct sadb_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, s, a->a.b), 1);
}

static inline void addr6(struct sadb_addr *a, const char *s)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, s, a->a.b), 1);
}

/* An SA record of transform x with keys derived from key_seed. */
static inline void mk_sa(struct sadb_sa *s, const struct xf *x, uint8_t mode, uint8_t dir, int ofam,
			 uint32_t flags, bool natt, uint8_t key_seed)
{
	memset(s, 0, sizeof(*s));
	s->spi = 0x1000 + key_seed;
	s->proto = x->proto;
	s->mode = mode;
	s->dir = dir;
	s->state = SADB_STATE_MATURE;
	s->flags = flags | SADB_SAF_LEGACY_OK;
	if (ofam == AF_INET) {
		addr4(&s->src, "192.0.2.1");
		addr4(&s->dst, "198.51.100.2");
	} else {
		addr6(&s->src, "2001:db8::1");
		addr6(&s->dst, "2001:db8:ffff::2");
	}
	if (natt) {
		s->encap_sport = 4500;
		s->encap_dport = 4500;
	}
	s->enc_alg = x->enc;
	s->auth_alg = x->auth;
	s->enc_key_len = x->enc_key_len;
	for (unsigned i = 0; i < sizeof(s->enc_key); i++)
		s->enc_key[i] = (uint8_t)(key_seed * 31 + i * 7 + 1);
	if (x->enc == SADB_ENC_AES_GCM16 || x->enc == SADB_ENC_AES_GMAC ||
	    x->enc == SADB_ENC_CHACHA20_POLY1305 || x->enc == SADB_ENC_AES_CTR) {
		s->salt_len = 4;
		s->salt[0] = 0xca; s->salt[1] = 0xfe; s->salt[2] = key_seed; s->salt[3] = 0x01;
	}
	s->auth_key_len = (uint8_t)auth_key_len_of(x->auth);
	for (unsigned i = 0; i < s->auth_key_len; i++)
		s->auth_key[i] = (uint8_t)(key_seed * 17 + i * 3 + 5);
	s->replay_window = 1024;
	s->ttl = 64;
	s->dscp = 0xff;
	s->instance = 1;
}

/* A frame holding one packet at PKT_OFF. */
struct frame {
	uint8_t mem[FRAME];
	struct esp_pkt p;
};

static inline void frame_set(struct frame *f, const uint8_t *pkt, uint32_t len)
{
	memset(f->mem, 0xee, sizeof(f->mem));
	memcpy(f->mem + PKT_OFF, pkt, len);
	memset(&f->p, 0, sizeof(f->p));
	f->p.buf = f->mem;
	f->p.buf_len = FRAME;
	f->p.off = PKT_OFF;
	f->p.len = len;
}

static inline uint8_t *frame_data(struct frame *f)
{
	return f->p.buf + f->p.off;
}

static inline uint16_t t_csum(const uint8_t *p, unsigned len)
{
	uint32_t s = 0;
	for (unsigned i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (uint32_t)(p[len - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* A UDP packet of family fam with `payload` bytes of data, tos byte, written to out; its length. */
static inline uint32_t mk_udp(uint8_t *out, int fam, uint32_t payload, uint8_t tos, uint32_t seed)
{
	uint32_t hl = fam == AF_INET ? 20 : 40, len = hl + 8 + payload;
	memset(out, 0, hl);
	if (fam == AF_INET) {
		out[0] = 0x45;
		out[1] = tos;
		out[2] = (uint8_t)(len >> 8); out[3] = (uint8_t)len;
		out[4] = 0x12; out[5] = 0x34;
		out[6] = 0x40;
		out[8] = 63;
		out[9] = IPPROTO_UDP;
		out[12] = 10; out[13] = 1; out[14] = 0; out[15] = 1;
		out[16] = 10; out[17] = 2; out[18] = 0; out[19] = (uint8_t)(seed & 0xff);
		uint16_t c = t_csum(out, 20);
		out[10] = (uint8_t)(c >> 8); out[11] = (uint8_t)c;
	} else {
		out[0] = (uint8_t)(0x60 | tos >> 4);
		out[1] = (uint8_t)(tos << 4);
		out[4] = (uint8_t)((len - 40) >> 8); out[5] = (uint8_t)(len - 40);
		out[6] = IPPROTO_UDP;
		out[7] = 63;
		out[8] = 0xfd; out[23] = 1;
		out[24] = 0xfd; out[38] = (uint8_t)(seed >> 8); out[39] = (uint8_t)seed;
	}
	uint8_t *u = out + hl;
	u[0] = 0x30; u[1] = 0x39; u[2] = 0x00; u[3] = 0x35;
	u[4] = (uint8_t)((8 + payload) >> 8); u[5] = (uint8_t)(8 + payload);
	u[6] = u[7] = 0;
	for (uint32_t i = 0; i < payload; i++)
		u[8 + i] = (uint8_t)(seed * 13 + i * 5);
	/* A valid UDP checksum (IPv6 requires one). */
	uint32_t sum = 0, ul = 8 + payload;
	const uint8_t *a = fam == AF_INET ? out + 12 : out + 8;
	for (unsigned i = 0; i < (fam == AF_INET ? 8u : 32u); i += 2)
		sum += (uint32_t)(a[i] << 8 | a[i + 1]);
	sum += ul + IPPROTO_UDP;
	for (uint32_t i = 0; i + 1 < ul; i += 2)
		sum += (uint32_t)(u[i] << 8 | u[i + 1]);
	if (ul & 1)
		sum += (uint32_t)(u[ul - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	uint16_t c = (uint16_t)~sum;
	if (!c)
		c = 0xffff;
	u[6] = (uint8_t)(c >> 8);
	u[7] = (uint8_t)c;
	return len;
}

/* A zeroed runtime area for SA instance 1. */
static inline struct sadb_runtime *rt_new(void)
{
	struct sadb_runtime *rt = calloc(1, sizeof(*rt));
	assert_non_null(rt);
	rt->instance = 1;
	return rt;
}

static inline const char *dropname(unsigned d)
{
	static const char *names[] = {
#define X(n, t) #n,
		SADB_DROP_LIST(X)
#undef X
	};
	return d < SADB_DROP_MAX ? names[d] : "?";
}

static inline bool backend_ok(enum esp_backend b, const struct xf *x)
{
	return esp_backend_supports(b, x->enc, x->auth, x->enc_key_len);
}

#endif
