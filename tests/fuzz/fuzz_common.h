/* tests/fuzz/fuzz_common.h: what the libFuzzer targets of the ESP/AH engine share: the table of SAs
 * with known keys (tests/fuzz/gen_seeds.py derives the same keys to build seed packets), a cache of
 * esp_sa objects (keys are set up once, not per input), and running one packet through the engine in
 * a buffer of exactly the right size so that AddressSanitizer sees any read or write outside it.
 *
 * Input convention of the targets: byte 0 selects the SA (cfg), the rest is what the target says. */
#ifndef XIPSEC_FUZZ_COMMON_H
#define XIPSEC_FUZZ_COMMON_H

#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dataplane/engine/esp.h"

struct fz_xf {
	uint8_t proto;
	uint16_t enc;
	uint8_t klen;
	uint16_t auth;
	uint8_t aklen;
	uint8_t iv_len, icv_len, blk;
};

/* 0..11 ESP, 12..15 AH. Keep in step with XFORMS in gen_seeds.py. */
static const struct fz_xf fz_xforms[16] = {
	{ SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 16, SADB_AUTH_NONE, 0, 8, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 32, SADB_AUTH_NONE, 0, 8, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_GMAC, 16, SADB_AUTH_NONE, 0, 8, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_CHACHA20_POLY1305, 32, SADB_AUTH_NONE, 0, 8, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA1_96, 20, 16, 12, 16 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA256_128, 32, 16, 16, 16 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_CTR, 16, SADB_AUTH_HMAC_SHA256_128, 32, 8, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_3DES_CBC, 24, SADB_AUTH_HMAC_SHA1_96, 20, 8, 12, 8 },
	{ SADB_PROTO_ESP, SADB_ENC_NULL, 0, SADB_AUTH_HMAC_SHA256_128, 32, 0, 16, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_NULL, 0, SADB_AUTH_HMAC_MD5_96, 16, 0, 12, 1 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA512_256, 64, 16, 32, 16 },
	{ SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA384_192, 48, 16, 24, 16 },
	{ SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA1_96, 20, 0, 12, 1 },
	{ SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_SHA384_192, 48, 0, 24, 1 },
	{ SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_AES_128_GMAC, 20, 8, 16, 1 },
	{ SADB_PROTO_AH, SADB_ENC_NONE, 0, SADB_AUTH_HMAC_MD5_96, 16, 0, 12, 1 },
};
#define FZ_N_ESP 12
#define FZ_N_AH 4

/* cfg bits (all targets): xform in bits 0-3 (reduced to the target's protocol), bit 4 tunnel,
 * bit 5 ESN, bits 6-7 backend (0 native, 1 ipsecmb, 2 openssl, 3 sodium; auto if unsupported, which
 * covers auto too: native has only GCM/GMAC). */
struct fz_cfg {
	unsigned xf;
	int tunnel, esn, natt;
	enum esp_backend backend;
	int tfc, mtu;    /* fuzz_roundtrip only: TFC padding to 200 bytes, path MTU 1280 */
};

static inline struct fz_cfg fz_cfg(uint8_t c, uint8_t proto, int natt)
{
	struct fz_cfg f;
	f.xf = proto == SADB_PROTO_AH ? FZ_N_ESP + (c & 15) % FZ_N_AH : (c & 15) % FZ_N_ESP;
	f.tunnel = !!(c & 16);
	f.esn = !!(c & 32);
	f.natt = natt;
	f.backend = (c >> 6) ? (enum esp_backend)(c >> 6) : ESP_BACKEND_NATIVE;
	f.tfc = f.mtu = 0;
	return f;
}

/* The SA record of a configuration; keys as gen_seeds.py derives them. */
static inline void fz_sa_record(const struct fz_cfg *f, uint8_t dir, struct sadb_sa *s)
{
	const struct fz_xf *x = &fz_xforms[f->xf];
	memset(s, 0, sizeof(*s));
	s->spi = 0x100 + f->xf;
	s->proto = x->proto;
	s->mode = f->tunnel ? SADB_MODE_TUNNEL : SADB_MODE_TRANSPORT;
	s->dir = dir;
	s->state = SADB_STATE_MATURE;
	s->flags = SADB_SAF_LEGACY_OK | (f->esn ? SADB_SAF_ESN : 0);
	s->src.family = s->dst.family = AF_INET;
	s->src.a.b[0] = 192; s->src.a.b[1] = 0; s->src.a.b[2] = 2; s->src.a.b[3] = 1;
	s->dst.a.b[0] = 198; s->dst.a.b[1] = 51; s->dst.a.b[2] = 100; s->dst.a.b[3] = 2;
	if (f->natt)
		s->encap_sport = s->encap_dport = 4500;
	s->enc_alg = x->enc;
	s->auth_alg = x->auth;
	s->enc_key_len = x->klen;
	for (unsigned i = 0; i < x->klen; i++)
		s->enc_key[i] = (uint8_t)(0x11 * (f->xf + 1) + 7 * i);
	if (x->enc == SADB_ENC_AES_GCM16 || x->enc == SADB_ENC_AES_GMAC ||
	    x->enc == SADB_ENC_CHACHA20_POLY1305 || x->enc == SADB_ENC_AES_CTR) {
		s->salt_len = 4;
		s->salt[0] = 0xca; s->salt[1] = 0xfe; s->salt[2] = 0xba; s->salt[3] = 0xbe;
	}
	s->auth_key_len = x->aklen;
	for (unsigned i = 0; i < x->aklen; i++)
		s->auth_key[i] = (uint8_t)(0x33 + 5 * i + f->xf);
	s->replay_window = 1024;
	s->dscp = 0xff;
	s->instance = 1;
	s->tfc_pad = f->tfc ? 200 : 0;
	s->mtu = f->mtu ? 1280 : 0;
}

static uint32_t fz_last_mtu; /* esp_pkt.mtu of the last packet fz_run dropped with SADB_DROP_MTU */

struct fz_slot {
	struct esp_sa *sa;
	struct sadb_runtime *rt;
};

/* The cached SA of (cfg, dir): created on first use, kept for the whole run. */
static inline struct fz_slot *fz_get(const struct fz_cfg *f, uint8_t dir)
{
	static struct fz_slot cache[16][2][2][2][ESP_BACKEND_MAX][2][2][2];
	struct fz_slot *sl = &cache[f->xf][f->tunnel][f->esn][f->natt][f->backend][f->tfc][f->mtu][dir == SADB_DIR_OUT];
	if (sl->sa)
		return sl;
	struct sadb_sa s;
	fz_sa_record(f, dir, &s);
	sl->rt = aligned_alloc(64, (sizeof(*sl->rt) + 63) & ~(size_t)63);
	if (!sl->rt)
		abort();
	memset(sl->rt, 0, sizeof(*sl->rt));
	sl->rt->instance = 1;
	struct esp_sa_opts o = { .backend = f->backend };
	if (esp_sa_create(&s, sl->rt, &o, &sl->sa) < 0) {
		o.backend = ESP_BACKEND_AUTO; /* the transform is not on that backend */
		if (esp_sa_create(&s, sl->rt, &o, &sl->sa) < 0) {
			fprintf(stderr, "fuzz: esp_sa_create failed for xform %u\n", f->xf);
			abort();
		}
	}
	return sl;
}

/* Inbound state for one input: an empty window, or a top chosen by the input (ESN inference). */
static inline void fz_reset_window(struct sadb_runtime *rt, uint8_t topsel)
{
	memset(rt->replay_bitmap, 0, sizeof(rt->replay_bitmap));
	rt->replay_top = topsel ? ((uint64_t)(topsel & 0x0f) << 32) | ((uint64_t)(topsel >> 4) << 28) : 0;
}

/* Read every byte of a good packet (ASan checks it is inside the buffer) and its parse helpers. */
static inline unsigned fz_touch(const struct esp_pkt *p)
{
	if (p->off > p->buf_len || p->len > p->buf_len - p->off) {
		fprintf(stderr, "fuzz: packet off %u len %u outside buffer of %u\n", p->off, p->len, p->buf_len);
		abort();
	}
	unsigned sum = 0;
	for (uint32_t i = 0; i < p->len; i++)
		sum += p->buf[p->off + i];
	struct sadb_pkt_sel sel;
	(void)esp_pkt_sel(p->buf + p->off, p->len, &sel);
	return sum;
}

/* One packet, in a heap buffer of len + tail bytes with the packet at offset head. Returns the
 * drop reason; *out (if not NULL) gets a copy of the result (caller frees). */
static inline unsigned fz_run(struct esp_sa *sa, const uint8_t *pkt, size_t len, size_t head, size_t tail,
			      uint8_t **out, uint32_t *out_len)
{
	uint8_t *buf = malloc(head + len + tail + 1);
	if (!buf)
		abort();
	memset(buf, 0xa5, head + len + tail);
	memcpy(buf + head, pkt, len);
	struct esp_pkt p = { .buf = buf, .buf_len = (uint32_t)(head + len + tail), .off = (uint32_t)head,
			     .len = (uint32_t)len };
	struct esp_pkt *pp = &p;
	unsigned k = esp_burst(sa, &pp, 1);
	fz_last_mtu = p.mtu;
	if (k > 1 || (k == 1) != (p.drop == SADB_DROP_NONE)) {
		fprintf(stderr, "fuzz: burst returned %u with drop %u\n", k, p.drop);
		abort();
	}
	if (out) {
		*out = NULL;
		*out_len = 0;
	}
	static int verbose = -1; /* FZ_VERBOSE=1: print each packet's drop reason (to check seeds) */
	if (verbose < 0)
		verbose = getenv("FZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "fz: %s drop %u (%zu bytes)\n", esp_backend_name(esp_sa_backend(sa)), p.drop, len);
	if (k == 1) {
		volatile unsigned s = fz_touch(&p);
		(void)s;
		if (out) {
			*out = malloc(p.len + 1);
			memcpy(*out, p.buf + p.off, p.len);
			*out_len = p.len;
		}
	}
	free(buf);
	return p.drop;
}

static inline void fz_hexdump(const char *what, const uint8_t *p, size_t n)
{
	fprintf(stderr, "%s (%zu bytes): ", what, n);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%02x", p[i]);
	fputc('\n', stderr);
}

#endif
