/* bench/esp-micro.c: cost of the ESP/AH engine per packet, in TSC cycles and ns on one core, for every
 * transform and packet sizes 64, 512, 1400 and 8192 bytes, encrypt and decrypt, next to the bare
 * crypto call on the same bytes in the same run (the limit), and the ratio of the two.
 *
 * Method: bursts of BURST packets in 4096-byte frames (larger for 8192), tunnel mode, IPv4 outer and
 * inner, no ESN. Each repetition
 * prepares its burst untimed (plaintext copied in, or freshly encrypted packets with new sequence
 * numbers for decrypt), then times one engine call; the bare call is timed the same way on the same
 * bytes (the ESP payload region, same AAD). Medians over REPS repetitions.
 * The bare call is the library itself: ipsec-mb's direct GCM/GMAC API or a burst of its jobs when
 * the SA runs on ipsec-mb; for another backend (our own GCM, "native", or one forced with
 * XIPSEC_CRYPTO=openssl|sodium) it is that backend's batch operation
 * (dataplane/engine/crypto/crypto_*.c), the thinnest wrapper there is. Run it again with
 * XIPSEC_CRYPTO=ipsecmb to see native's GCM rows next to the library's.
 * Usage: esp-micro [-r REPS] [-t transform-substring] [-s size] */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#ifdef HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

#include "dataplane/engine/esp_internal.h"
#include "bench/bench_pkt.h"

#define BURST 32
#define FRAME_BIG (16384 + 512)
#define OFF 256

struct xf {
	const char *name;
	uint8_t proto;
	uint16_t enc;
	uint8_t klen;
	uint16_t auth;
};

static const struct xf xfs[] = {
	{ "esp aes-gcm-16-128", SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 16, 0 },
	{ "esp aes-gcm-16-256", SADB_PROTO_ESP, SADB_ENC_AES_GCM16, 32, 0 },
	{ "esp aes-gmac-128", SADB_PROTO_ESP, SADB_ENC_AES_GMAC, 16, 0 },
	{ "esp chacha20-poly1305", SADB_PROTO_ESP, SADB_ENC_CHACHA20_POLY1305, 32, 0 },
	{ "esp aes-cbc-128/sha1-96", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp aes-cbc-128/sha256-128", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 16, SADB_AUTH_HMAC_SHA256_128 },
	{ "esp aes-cbc-256/sha384-192", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA384_192 },
	{ "esp aes-cbc-256/sha512-256", SADB_PROTO_ESP, SADB_ENC_AES_CBC, 32, SADB_AUTH_HMAC_SHA512_256 },
	{ "esp aes-ctr-128/sha256-128", SADB_PROTO_ESP, SADB_ENC_AES_CTR, 16, SADB_AUTH_HMAC_SHA256_128 },
	{ "esp 3des-cbc/sha1-96", SADB_PROTO_ESP, SADB_ENC_3DES_CBC, 24, SADB_AUTH_HMAC_SHA1_96 },
	{ "esp 3des-cbc/md5-96", SADB_PROTO_ESP, SADB_ENC_3DES_CBC, 24, SADB_AUTH_HMAC_MD5_96 },
	{ "esp null/sha256-128", SADB_PROTO_ESP, SADB_ENC_NULL, 0, SADB_AUTH_HMAC_SHA256_128 },
	{ "ah hmac-sha1-96", SADB_PROTO_AH, 0, 0, SADB_AUTH_HMAC_SHA1_96 },
	{ "ah hmac-sha256-128", SADB_PROTO_AH, 0, 0, SADB_AUTH_HMAC_SHA256_128 },
	{ "ah hmac-md5-96", SADB_PROTO_AH, 0, 0, SADB_AUTH_HMAC_MD5_96 },
	{ "ah aes-128-gmac", SADB_PROTO_AH, 0, 0, SADB_AUTH_AES_128_GMAC },
};

static unsigned akey_len(uint16_t a)
{
	switch (a) {
	case SADB_AUTH_HMAC_MD5_96: return 16;
	case SADB_AUTH_HMAC_SHA1_96: return 20;
	case SADB_AUTH_HMAC_SHA256_128: return 32;
	case SADB_AUTH_HMAC_SHA384_192: return 48;
	case SADB_AUTH_HMAC_SHA512_256: return 64;
	case SADB_AUTH_AES_128_GMAC: return 20;
	default: return 0;
	}
}

static void mk(struct sadb_sa *s, const struct xf *x, uint8_t dir)
{
	memset(s, 0, sizeof(*s));
	s->spi = 0x4242;
	s->proto = x->proto;
	s->mode = SADB_MODE_TUNNEL;
	s->dir = dir;
	s->flags = SADB_SAF_LEGACY_OK;
	s->src.family = s->dst.family = AF_INET;
	s->src.a.b[0] = 192; s->src.a.b[3] = 1;
	s->dst.a.b[0] = 198; s->dst.a.b[3] = 2;
	s->enc_alg = x->enc;
	s->auth_alg = x->auth;
	s->enc_key_len = x->klen;
	for (int i = 0; i < 32; i++)
		s->enc_key[i] = (uint8_t)(i * 7 + 3);
	if (x->enc == SADB_ENC_AES_GCM16 || x->enc == SADB_ENC_AES_GMAC ||
	    x->enc == SADB_ENC_CHACHA20_POLY1305 || x->enc == SADB_ENC_AES_CTR)
		s->salt_len = 4;
	s->auth_key_len = (uint8_t)akey_len(x->auth);
	for (int i = 0; i < 64; i++)
		s->auth_key[i] = (uint8_t)(i * 5 + 1);
	s->replay_window = 1024;
	s->dscp = 0xff;
	s->instance = 1;
}

static uint32_t mk_pkt(uint8_t *o, uint32_t len)
{
	return bench_ipv4_udp(o, len, (const uint8_t[]){ 10, 0, 0, 1 }, (const uint8_t[]){ 10, 0, 0, 2 }, 0, 0);
}

static inline uint64_t tsc(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_u64);
	return v[n / 2];
}

static double tsc_ghz(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t t0 = tsc();
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 200000000L);
	uint64_t t1 = tsc();
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	return (double)(t1 - t0) / ns;
}

static uint8_t *frames;
static size_t frame_stride = FRAME_BIG; /* 4096 (an AF_XDP frame) when the packets fit */
static struct esp_pkt pkts[BURST];
static struct esp_pkt *pp[BURST];

/* Prepare the burst. The headroom and tailroom lines the engine will write are touched too, as a
 * receive path leaves the frame (and as the bare call finds them, running after the engine). */
static volatile uint8_t sink;
static void fill(const uint8_t *src, uint32_t len)
{
	for (int i = 0; i < BURST; i++) {
		uint8_t *f = frames + (size_t)i * frame_stride;
		memcpy(f + OFF, src, len);
		for (uint32_t o = OFF - ESP_HEADROOM; o < OFF + len + ESP_TAILROOM; o += 64)
			sink = f[o];
		pkts[i] = (struct esp_pkt){ .buf = f, .buf_len = (uint32_t)frame_stride, .off = OFF, .len = len };
		pp[i] = &pkts[i];
	}
}

/* ---- bare crypto ---- */
struct bare {
	struct esp_sa *sa;         /* the engine's SA: its region layout and, if not ipsec-mb, its ops */
#ifdef HAVE_IPSEC_MB
	IMB_MGR *m;
	struct gcm_key_data gk __attribute__((aligned(64)));
	uint32_t ek[60] __attribute__((aligned(16))), dk[60] __attribute__((aligned(16)));
	uint64_t ks[3][16];
	const void *ksp[3];
	uint8_t ipad[64] __attribute__((aligned(16))), opad[64] __attribute__((aligned(16)));
	IMB_HASH_ALG hash;
#endif
};

/* The region the engine hands to the crypto library for each packet of the prepared burst. */
static void regions(struct esp_sa *sa, struct esp_cop *c, bool out)
{
	for (int i = 0; i < BURST; i++) {
		uint8_t *ip = pkts[i].buf + pkts[i].off;
		memset(&c[i], 0, sizeof(c[i]));
		uint32_t len = pkts[i].len;
		if (sa->proto == SADB_PROTO_AH) {
			c[i].auth = ip;
			c[i].auth_len = len;
			c[i].tag = c[i].calc;
			c[i].icv_in = ip + 32;
			memcpy(c[i].iv, sa->salt, 4);
			continue;
		}
		uint8_t *esp = ip + 20;
		uint32_t clen = len - 20 - 8 - sa->iv_len - sa->icv_len;
		c[i].auth = esp;
		c[i].auth_len = 8 + sa->iv_len + clen;
		c[i].aad = esp;
		c[i].aad_len = 8;
		c[i].data = esp + 8 + sa->iv_len;
		c[i].data_len = sa->cipher == ESP_C_NULL ? 0 : clen;
		c[i].tag = out ? esp + 8 + sa->iv_len + clen : c[i].calc;
		c[i].icv_in = esp + 8 + sa->iv_len + clen;
		memcpy(c[i].iv, sa->salt, 4);
		memcpy(c[i].iv + 4, esp + 8, 8);
		if (sa->cipher == ESP_C_AES_CBC || sa->cipher == ESP_C_3DES_CBC)
			memcpy(c[i].iv, esp + 8, sa->iv_len);
	}
}

#ifdef HAVE_IPSEC_MB
static void bare_setup(struct bare *b, const struct sadb_sa *s)
{
	b->m = alloc_mb_mgr(0);
	init_mb_mgr_auto(b->m, NULL);
	const uint8_t *key = s->proto == SADB_PROTO_AH ? s->auth_key : s->enc_key;
	unsigned kl = s->proto == SADB_PROTO_AH ? 16 : s->enc_key_len;
	struct esp_sa *sa = b->sa;
	if (sa->cipher == ESP_C_AES_GCM || sa->cipher == ESP_C_AES_GMAC) {
		if (kl == 16)
			IMB_AES128_GCM_PRE(b->m, key, &b->gk);
		else
			IMB_AES256_GCM_PRE(b->m, key, &b->gk);
	} else if (sa->cipher == ESP_C_AES_CBC || sa->cipher == ESP_C_AES_CTR) {
		if (kl == 16)
			IMB_AES_KEYEXP_128(b->m, key, b->ek, b->dk);
		else
			IMB_AES_KEYEXP_256(b->m, key, b->ek, b->dk);
	} else if (sa->cipher == ESP_C_3DES_CBC) {
		for (int i = 0; i < 3; i++) {
			des_key_schedule(b->ks[i], key + 8 * i);
			b->ksp[i] = b->ks[i];
		}
	}
	if (sa->hmac) {
		uint8_t k[128];
		unsigned bl = esp_hmac_block_len(sa->hmac);
		memset(k, 0, sizeof(k));
		memcpy(k, s->auth_key, s->auth_key_len);
		for (int pass = 0; pass < 2; pass++) {
			uint8_t *o = pass ? b->opad : b->ipad;
			for (unsigned i = 0; i < bl; i++)
				k[i] ^= pass ? 0x6a : 0x36;
			switch (sa->hmac) {
			case ESP_H_MD5: IMB_MD5_ONE_BLOCK(b->m, k, o); b->hash = IMB_AUTH_MD5; break;
			case ESP_H_SHA1: IMB_SHA1_ONE_BLOCK(b->m, k, o); b->hash = IMB_AUTH_HMAC_SHA_1; break;
			case ESP_H_SHA256: IMB_SHA256_ONE_BLOCK(b->m, k, o); b->hash = IMB_AUTH_HMAC_SHA_256; break;
			case ESP_H_SHA384: IMB_SHA384_ONE_BLOCK(b->m, k, o); b->hash = IMB_AUTH_HMAC_SHA_384; break;
			case ESP_H_SHA512: IMB_SHA512_ONE_BLOCK(b->m, k, o); b->hash = IMB_AUTH_HMAC_SHA_512; break;
			}
		}
	}
}

static void bare_imb(struct bare *b, struct esp_cop *c, bool enc)
{
	struct esp_sa *sa = b->sa;
	IMB_MGR *m = b->m;
	struct gcm_context_data g;
	if (sa->cipher == ESP_C_AES_GCM || sa->cipher == ESP_C_AES_GMAC) {
		bool k128 = sa->cs.enc_key_len == 16;
		for (int i = 0; i < BURST; i++) {
			if (sa->kind == ESP_KIND_GMAC) {
				if (k128)
					IMB_AES128_GCM_ENC(m, &b->gk, &g, c[i].calc, c[i].calc, 0, c[i].iv, c[i].auth,
							   c[i].auth_len, c[i].calc + 16, 16);
				else
					IMB_AES256_GCM_ENC(m, &b->gk, &g, c[i].calc, c[i].calc, 0, c[i].iv, c[i].auth,
							   c[i].auth_len, c[i].calc + 16, 16);
			} else if (enc) {
				if (k128)
					IMB_AES128_GCM_ENC(m, &b->gk, &g, c[i].data, c[i].data, c[i].data_len, c[i].iv,
							   c[i].aad, 8, c[i].calc, 16);
				else
					IMB_AES256_GCM_ENC(m, &b->gk, &g, c[i].data, c[i].data, c[i].data_len, c[i].iv,
							   c[i].aad, 8, c[i].calc, 16);
			} else {
				if (k128)
					IMB_AES128_GCM_DEC(m, &b->gk, &g, c[i].data, c[i].data, c[i].data_len, c[i].iv,
							   c[i].aad, 8, c[i].calc, 16);
				else
					IMB_AES256_GCM_DEC(m, &b->gk, &g, c[i].data, c[i].data, c[i].data_len, c[i].iv,
							   c[i].aad, 8, c[i].calc, 16);
			}
		}
		return;
	}
	IMB_JOB *job;
	for (int i = 0; i < BURST; i++) {
		job = IMB_GET_NEXT_JOB(m);
		job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
		job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
		job->auth_tag_output = c[i].calc;
		if (sa->cipher == ESP_C_CHACHA_POLY) {
			job->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
			job->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
			job->enc_keys = job->dec_keys = sa->cs.enc_key;
			job->key_len_in_bytes = 32;
			job->src = job->dst = c[i].data;
			job->cipher_start_src_offset_in_bytes = 0;
			job->msg_len_to_cipher_in_bytes = c[i].data_len;
			job->hash_start_src_offset_in_bytes = 0;
			job->msg_len_to_hash_in_bytes = c[i].data_len;
			job->iv = c[i].iv;
			job->iv_len_in_bytes = 12;
			job->u.CHACHA20_POLY1305.aad = c[i].aad;
			job->u.CHACHA20_POLY1305.aad_len_in_bytes = 8;
			job->auth_tag_output_len_in_bytes = 16;
		} else {
			job->hash_alg = b->hash;
			job->src = c[i].auth;
			job->hash_start_src_offset_in_bytes = 0;
			job->msg_len_to_hash_in_bytes = c[i].auth_len;
			job->u.HMAC._hashed_auth_key_xor_ipad = b->ipad;
			job->u.HMAC._hashed_auth_key_xor_opad = b->opad;
			job->auth_tag_output_len_in_bytes = sa->icv_len;
			job->iv = c[i].iv;
			if (!c[i].data_len) {
				job->cipher_mode = IMB_CIPHER_NULL;
				job->dst = c[i].auth;
				job->cipher_start_src_offset_in_bytes = 0;
				job->msg_len_to_cipher_in_bytes = 0;
				job->key_len_in_bytes = 16;
				job->enc_keys = job->dec_keys = b->ek;
				job->iv_len_in_bytes = 0;
			} else {
				job->dst = c[i].data;
				job->cipher_start_src_offset_in_bytes = (uint64_t)(c[i].data - c[i].auth);
				job->msg_len_to_cipher_in_bytes = c[i].data_len;
				if (sa->cipher == ESP_C_3DES_CBC) {
					job->cipher_mode = IMB_CIPHER_DES3;
					job->enc_keys = job->dec_keys = b->ksp;
					job->key_len_in_bytes = 24;
					job->iv_len_in_bytes = 8;
				} else {
					job->cipher_mode = sa->cipher == ESP_C_AES_CBC ? IMB_CIPHER_CBC : IMB_CIPHER_CNTR;
					job->enc_keys = b->ek;
					job->dec_keys = b->dk;
					job->key_len_in_bytes = sa->cs.enc_key_len;
					job->iv_len_in_bytes = 16;
				}
			}
		}
		job = IMB_SUBMIT_JOB(m);
		while (job)
			job = IMB_GET_COMPLETED_JOB(m);
	}
	while (IMB_FLUSH_JOB(m))
		;
}
#endif

static void bare_run(struct bare *b, struct esp_cop *c, bool enc)
{
#ifdef HAVE_IPSEC_MB
	if (esp_sa_backend(b->sa) == ESP_BACKEND_IPSECMB) {
		bare_imb(b, c, enc);
		return;
	}
#endif
	if (enc)
		b->sa->ops->encrypt(&b->sa->cs, c, BURST);
	else
		b->sa->ops->decrypt(&b->sa->cs, c, BURST);
}

int main(int argc, char **argv)
{
	unsigned reps = 400;
	const char *only = NULL;
	uint32_t only_size = 0;
	int opt;
	while ((opt = getopt(argc, argv, "r:t:s:")) != -1) {
		switch (opt) {
		case 'r': reps = (unsigned)atoi(optarg); break;
		case 't': only = optarg; break;
		case 's': only_size = (uint32_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-r reps] [-t transform] [-s size]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 10)
		reps = 10;
	frames = aligned_alloc(64, (size_t)BURST * FRAME_BIG);
	uint64_t *se = malloc(reps * sizeof(uint64_t)), *sd = malloc(reps * sizeof(uint64_t));
	uint64_t *be = malloc(reps * sizeof(uint64_t)), *bd = malloc(reps * sizeof(uint64_t));
	static struct esp_cop cops[BURST];
	static uint8_t plain[16384], enc_copy[BURST][16384 + 256];
	if (!frames || !se || !sd || !be || !bd)
		return 1;
	double ghz = tsc_ghz();
	static const uint32_t sizes[] = { 64, 512, 1400, 8192 };
	printf("# esp-micro: TSC %.3f GHz, burst %d, tunnel IPv4, median of %u bursts, per packet\n", ghz, BURST, reps);
	printf("# size = inner IP packet bytes; bare = the crypto library call on the same bytes\n");
	printf("%-28s %-15s %5s | %8s %8s %8s %6s | %8s %8s %8s %6s\n", "transform", "backend out/in", "size",
	       "enc cyc", "bare cyc", "enc ns", "ratio", "dec cyc", "bare cyc", "dec ns", "ratio");
	for (size_t t = 0; t < sizeof(xfs) / sizeof(xfs[0]); t++) {
		const struct xf *x = &xfs[t];
		if (only && !strstr(x->name, only))
			continue;
		struct sadb_sa so, si;
		mk(&so, x, SADB_DIR_OUT);
		mk(&si, x, SADB_DIR_IN);
		struct sadb_runtime *rto = calloc(1, sizeof(*rto)), *rti = calloc(1, sizeof(*rti));
		rto->instance = rti->instance = 1;
		struct esp_sa *out, *in;
		if (esp_sa_create(&so, rto, NULL, &out) || esp_sa_create(&si, rti, NULL, &in)) {
			printf("%-28s unavailable\n", x->name);
			continue;
		}
		static struct bare bo, bi;
		bo.sa = out;
		bi.sa = in;
#ifdef HAVE_IPSEC_MB
		/* Each direction picks its own backend (the choice is measured per direction). */
		if (esp_sa_backend(out) == ESP_BACKEND_IPSECMB)
			bare_setup(&bo, &so);
		if (esp_sa_backend(in) == ESP_BACKEND_IPSECMB)
			bare_setup(&bi, &si);
#endif
		char bname[32];
		if (esp_sa_backend(out) == esp_sa_backend(in))
			snprintf(bname, sizeof(bname), "%s", esp_backend_name(esp_sa_backend(out)));
		else
			snprintf(bname, sizeof(bname), "%s/%s", esp_backend_name(esp_sa_backend(out)),
				 esp_backend_name(esp_sa_backend(in)));
		for (size_t z = 0; z < 4; z++) {
			uint32_t size = sizes[z];
			if (only_size && size != only_size)
				continue;
			uint32_t len = mk_pkt(plain, size);
			frame_stride = size + OFF + ESP_TAILROOM <= 4096 ? 4096 : FRAME_BIG;
			for (unsigned r = 0; r < reps; r++) {
				/* Encrypt: the engine, then the bare call over the same (now encrypted) bytes. */
				fill(plain, len);
				uint64_t t0 = tsc();
				unsigned g = esp_outbound_burst(out, pp, BURST);
				uint64_t t1 = tsc();
				if (g != BURST) {
					fprintf(stderr, "%s: outbound dropped (%u)\n", x->name, pkts[g].drop);
					return 1;
				}
				se[r] = t1 - t0;
				for (int i = 0; i < BURST; i++)
					memcpy(enc_copy[i], pkts[i].buf + pkts[i].off, pkts[i].len);
				regions(out, cops, true);
				t0 = tsc();
				bare_run(&bo, cops, true);
				t1 = tsc();
				be[r] = t1 - t0;
				/* Decrypt: fresh packets (new sequence numbers), engine, then the bare call on
				 * the same ciphertexts. */
				uint32_t elen = pkts[0].len;
				fill(enc_copy[0], elen);
				for (int i = 0; i < BURST; i++)
					memcpy(pkts[i].buf + pkts[i].off, enc_copy[i], elen);
				t0 = tsc();
				g = esp_inbound_burst(in, pp, BURST);
				t1 = tsc();
				if (g != BURST) {
					fprintf(stderr, "%s: inbound dropped (%u)\n", x->name, pkts[g].drop);
					return 1;
				}
				sd[r] = t1 - t0;
				fill(enc_copy[0], elen);
				for (int i = 0; i < BURST; i++)
					memcpy(pkts[i].buf + pkts[i].off, enc_copy[i], elen);
				regions(in, cops, false);
				t0 = tsc();
				bare_run(&bi, cops, false);
				t1 = tsc();
				bd[r] = t1 - t0;
			}
			double e = (double)median(se, reps) / BURST, eb = (double)median(be, reps) / BURST;
			double d = (double)median(sd, reps) / BURST, db = (double)median(bd, reps) / BURST;
			printf("%-28s %-15s %5u | %8.0f %8.0f %8.1f %6.2f | %8.0f %8.0f %8.1f %6.2f\n", x->name,
			       bname, size, e, eb, e / ghz, e / eb, d, db, d / ghz,
			       d / db);
			fflush(stdout);
		}
#ifdef HAVE_IPSEC_MB
		if (bo.m)
			free_mb_mgr(bo.m), bo.m = NULL;
		if (bi.m)
			free_mb_mgr(bi.m), bi.m = NULL;
#endif
		esp_sa_destroy(out);
		esp_sa_destroy(in);
		free(rto);
		free(rti);
	}
	free(frames);
	free(se);
	free(sd);
	free(be);
	free(bd);
	return 0;
}
