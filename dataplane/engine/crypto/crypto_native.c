/* dataplane/engine/crypto/crypto_native.c: the engine's own AES-GCM and AES-GMAC (RFC 4106, RFC 4543; NIST SP
 * 800-38D) with AES-NI and PCLMULQDQ, for 128- and 256-bit keys: the "native" backend.
 *
 * Why our own: at the packet sizes a gateway sees most (64-512 B) the libraries' fixed cost per call
 * dominates. ipsec-mb 1.3 on a CPU without AVX-512 runs its AVX2 "gen4" GCM, ~120 cycles for a
 * 64-byte packet, most of it set-up of a general streaming context (with AVX-512 and VAES it has a
 * VAES path of its own, which the machines here may or may not offer: it picks at run time); OpenSSL 3.0's EVP
 * GCM costs ~550 cycles per call (doc/platform.md). One ESP packet needs much less: for 64 B of inner
 * packet, 6 AES blocks (the 5 of the payload and E_K(J0) for the tag) run interleaved in the two AES
 * units, and 7 GHASH blocks (AAD, payload, lengths) multiplied by precomputed powers of H and reduced
 * once. VPP's crypto_native plugin made the same choice for the same reason.
 *
 * Nothing here depends on secret data for branches or memory addresses: AES-NI and carry-less
 * multiplication are constant time, lengths are public. Tags are compared in constant time
 * (esp_icv_equal). Round keys and powers of H are computed once per SA and wiped at its end.
 *
 * GHASH representation (Gueron & Kounavis, "Intel Carry-Less Multiplication Instruction and its Usage
 * for Computing the GCM Mode"): blocks are byte-reversed so that one 128-bit lane holds the field
 * element with its bits reflected; the hash key is stored as H * x^-1 (a one-bit left shift in this
 * representation, folding the carry with the constant 0xC2..01), which absorbs the one-bit shift the
 * reflected product would need, and a product is reduced with two carry-less multiplications by the
 * reflected polynomial's top half. Products of up to 8 blocks with H^8..H^1 are summed before one
 * reduction (aggregated reduction); Karatsuba halves are precomputed with the powers.
 *
 * Tested bit for bit against OpenSSL and ipsec-mb on random lengths and against the GCM and RFC 4543
 * vectors (tests/unit/test_esp.c). Only built for x86-64; elsewhere supports() says no. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "dataplane/engine/crypto/esp_crypto.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>
#ifdef HAVE_IPSEC_MB
#include "dataplane/engine/crypto/crypto_ipsecmb.h"
#endif

#define NT __attribute__((target("aes,pclmul,ssse3,sse4.1")))
#define NTI NT __attribute__((always_inline)) static inline

struct ngcm {
	__m128i rk[15];   /* AES round keys, rounds + 1 of them */
	__m128i h[16];    /* H^1..H^16, each times x^-1, in the byte-reversed representation */
	__m128i hk[16];   /* h[i].hi ^ h[i].lo in both halves (Karatsuba middle term) */
	unsigned rounds;  /* 10 or 14 */
	bool vaes;        /* the 256-bit copies below are set: the CPU has VAES and VPCLMULQDQ */
	__m256i rk2[15];  /* round keys in both lanes */
	__m256i h2[8];    /* (H^(16-2j), H^(15-2j)) in (low, high) lane: 16 blocks, 2 per register */
	__m256i hk2[8];
#ifdef HAVE_IPSEC_MB
	bool imb;         /* ipsec-mb's key below is set up: used above NATIVE_SHORT_MAX bytes */
	struct gcm_key_data imb_key __attribute__((aligned(64)));
#endif
};

/* Up to this many bytes of GCM payload (or GMAC AAD) run here; longer ones go to ipsec-mb's direct
 * GCM when the library is there. Measured side by side on one core (bench/esp-micro's ESP sizes,
 * AES-128, medians): this code takes 0.70x ipsec-mb's cycles for a 64-byte packet (68 B of
 * payload), but 1.05-1.25x from ~500 B up, where ipsec-mb's 8-block pipelined AVX2 loop wins. */
#define NATIVE_SHORT_MAX 96

/* Tests only (tests/unit/test_esp.c): false sends every length through this file's own code, so
 * that its long path is checked too; esp_native_vaes false makes SAs set up afterwards use the
 * 128-bit code as on a CPU without VAES. */
bool esp_native_bulk_ipsecmb = true;
bool esp_native_vaes = true;


NTI __m128i bswap(__m128i x)
{
	return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

NTI __m128i ld(const void *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

NTI void st(void *p, __m128i v)
{
	_mm_storeu_si128((__m128i *)p, v);
}

/* ---- AES key schedule (FIPS-197 5.2) with AESKEYGENASSIST ---- */

NTI __m128i kx_step(__m128i key, __m128i t)
{
	key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
	key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
	key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
	return _mm_xor_si128(key, t);
}

#define KX128(i, rcon) \
	k[i] = kx_step(k[(i) - 1], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[(i) - 1], rcon), 0xff))
#define KX256(i, rcon)                                                                                \
	do {                                                                                          \
		k[i] = kx_step(k[(i) - 2],                                                            \
			       _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[(i) - 1], rcon), 0xff)); \
		k[(i) + 1] = kx_step(k[(i) - 1],                                                      \
				     _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[i], 0), 0xaa));    \
	} while (0)

NT static void key_expand(struct ngcm *g, const uint8_t *key, unsigned len)
{
	__m128i *k = g->rk;
	k[0] = ld(key);
	if (len == 16) {
		g->rounds = 10;
		KX128(1, 0x01); KX128(2, 0x02); KX128(3, 0x04); KX128(4, 0x08); KX128(5, 0x10);
		KX128(6, 0x20); KX128(7, 0x40); KX128(8, 0x80); KX128(9, 0x1b); KX128(10, 0x36);
	} else {
		g->rounds = 14;
		k[1] = ld(key + 16);
		KX256(2, 0x01); KX256(4, 0x02); KX256(6, 0x04); KX256(8, 0x08); KX256(10, 0x10);
		KX256(12, 0x20);
		k[14] = kx_step(k[12], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(k[13], 0x40), 0xff));
	}
}

/* AES-encrypt n blocks in place, interleaved round by round so both AES units stay busy. n is a
 * constant wherever this is inlined. */
NTI void aes_n(const struct ngcm *g, __m128i *b, const unsigned n)
{
#pragma GCC unroll 16
	for (unsigned j = 0; j < n; j++)
		b[j] = _mm_xor_si128(b[j], g->rk[0]);
	for (unsigned r = 1; r < g->rounds; r++) {
		const __m128i k = g->rk[r];
#pragma GCC unroll 16
		for (unsigned j = 0; j < n; j++)
			b[j] = _mm_aesenc_si128(b[j], k);
	}
	const __m128i k = g->rk[g->rounds];
#pragma GCC unroll 16
	for (unsigned j = 0; j < n; j++)
		b[j] = _mm_aesenclast_si128(b[j], k);
}

/* n in 1..8, known only at run time: one specialised copy per count. */
NT static void aes_blocks(const struct ngcm *g, __m128i *b, unsigned n)
{
	switch (n) {
	case 1: aes_n(g, b, 1); break;
	case 2: aes_n(g, b, 2); break;
	case 3: aes_n(g, b, 3); break;
	case 4: aes_n(g, b, 4); break;
	case 5: aes_n(g, b, 5); break;
	case 6: aes_n(g, b, 6); break;
	case 7: aes_n(g, b, 7); break;
	default: aes_n(g, b, 8); break;
	}
}

/* ---- GHASH ---- */

/* Accumulate the unreduced Karatsuba product of a and h (with hk = h.hi ^ h.lo). */
NTI void clmul_acc(__m128i a, __m128i h, __m128i hk, __m128i *lo, __m128i *hi, __m128i *mid)
{
	*lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, h, 0x00));
	*hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, h, 0x11));
	__m128i ak = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4e));
	*mid = _mm_xor_si128(*mid, _mm_clmulepi64_si128(ak, hk, 0x00));
}

/* Reduce a 256-bit product (lo, hi, Karatsuba mid) modulo the GCM polynomial, reflected. */
NTI __m128i ghash_reduce(__m128i lo, __m128i hi, __m128i mid)
{
	const __m128i poly = _mm_set_epi64x((long long)0xc200000000000000ull, 1);
	mid = _mm_xor_si128(mid, _mm_xor_si128(lo, hi));
	lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
	hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
	__m128i t = _mm_clmulepi64_si128(poly, lo, 0x01);
	lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4e), t);
	t = _mm_clmulepi64_si128(poly, lo, 0x01);
	lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4e), t);
	return _mm_xor_si128(lo, hi);
}

NTI __m128i gf_mul(__m128i a, __m128i h, __m128i hk)
{
	__m128i lo = _mm_setzero_si128(), hi = lo, mid = lo;
	clmul_acc(a, h, hk, &lo, &hi, &mid);
	return ghash_reduce(lo, hi, mid);
}

NTI __m128i kara(__m128i h)
{
	return _mm_xor_si128(h, _mm_shuffle_epi32(h, 0x4e));
}

/* GHASH state: blocks are multiplied as they come by the power of H that their place in the current
 * group of (up to) 8 calls for, the products summed unreduced, and reduced once per group. The first
 * group holds total % 8 blocks (or 8), so every later group is full and ends the hash exactly. */
struct ghash {
	__m128i acc, lo, hi, mid;
	unsigned left;   /* blocks still to come in the current group */
};

NTI void gh_init(struct ghash *s, size_t total_blocks)
{
	s->acc = s->lo = s->hi = s->mid = _mm_setzero_si128();
	s->left = (unsigned)(total_blocks % 8) ? (unsigned)(total_blocks % 8) : 8;
}

/* x is already in the reversed representation. */
NTI void gh_push_rev(const struct ngcm *g, struct ghash *s, __m128i x)
{
	x = _mm_xor_si128(x, s->acc); /* acc is zero except at the start of a group */
	s->acc = _mm_setzero_si128();
	clmul_acc(x, g->h[s->left - 1], g->hk[s->left - 1], &s->lo, &s->hi, &s->mid);
	if (--s->left == 0) {
		s->acc = ghash_reduce(s->lo, s->hi, s->mid);
		s->lo = s->hi = s->mid = _mm_setzero_si128();
		s->left = 8;
	}
}

/* Start a new grouping of total_blocks blocks, keeping the hash so far (at a group boundary). */
NTI void gh_init_acc(struct ghash *s, size_t total_blocks)
{
	s->left = (unsigned)(total_blocks % 8) ? (unsigned)(total_blocks % 8) : 8;
}

/* GHASH of the 8 blocks at p into acc with H^8..H^1 and one reduction. */
NTI __m128i ghash8(const struct ngcm *g, __m128i acc, const uint8_t *p)
{
	__m128i lo = _mm_setzero_si128(), hi = lo, mid = lo;
#pragma GCC unroll 16
	for (unsigned j = 0; j < 8; j++) {
		__m128i x = bswap(ld(p + 16 * j));
		if (j == 0)
			x = _mm_xor_si128(x, acc);
		clmul_acc(x, g->h[7 - j], g->hk[7 - j], &lo, &hi, &mid);
	}
	return ghash_reduce(lo, hi, mid);
}

NTI void gh_push(const struct ngcm *g, struct ghash *s, __m128i block)
{
	gh_push_rev(g, s, bswap(block));
}

/* A final partial block (len 1..15), zero-padded as GCM pads. */
NTI __m128i ld_part(const uint8_t *p, size_t len)
{
	uint8_t t[16] __attribute__((aligned(16))) = { 0 };
	memcpy(t, p, len);
	return _mm_load_si128((const __m128i *)t);
}

NTI void gh_bytes(const struct ngcm *g, struct ghash *s, const uint8_t *p, size_t len)
{
	size_t i = 0;
	for (; i + 16 <= len; i += 16)
		gh_push(g, s, ld(p + i));
	if (i < len)
		gh_push(g, s, ld_part(p + i, len - i));
}

NT static void setup_h(struct ngcm *g)
{
	__m128i h = _mm_setzero_si128();
	aes_n(g, &h, 1);
	h = bswap(h);
	/* H * x^-1: shift the reflected value left by one bit, folding a carry out of bit 127 back in
	 * with the polynomial (x^128 = x^7 + x^2 + x + 1, reflected: 0xC2..01). */
	__m128i carry = _mm_srai_epi32(_mm_shuffle_epi32(h, 0xff), 31);
	__m128i poly = _mm_set_epi64x((long long)0xc200000000000000ull, 1);
	__m128i c1 = _mm_slli_si128(_mm_srli_epi32(h, 31), 4);
	h = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(h, 1), c1), _mm_and_si128(carry, poly));
	g->h[0] = h;
	g->hk[0] = kara(h);
	for (int i = 1; i < 16; i++) {
		g->h[i] = gf_mul(g->h[i - 1], g->h[0], g->hk[0]);
		g->hk[i] = kara(g->h[i]);
	}
}

/* ---- 256-bit VAES + VPCLMULQDQ bulk (AVX2 registers: two blocks per instruction) ---- */

#define NV __attribute__((target("avx2,vaes,vpclmulqdq,aes,pclmul,ssse3,sse4.1")))
#define NVI NV __attribute__((always_inline)) static inline

static bool cpu_vaes(void)
{
	static int ok = -1;
	if (ok < 0) {
		/* avx2 from the compiler (it checks the OS saves YMM state); VAES and VPCLMULQDQ from
		 * CPUID leaf 7 (ECX bits 9 and 10), which clang 14's __builtin_cpu_supports lacks. */
		unsigned a, b, c, d;
		__builtin_cpu_init();
		ok = __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
		     (c & (1u << 9)) && (c & (1u << 10));
	}
	return ok;
}

NV static void setup_vaes(struct ngcm *g)
{
	for (unsigned r = 0; r <= g->rounds; r++)
		g->rk2[r] = _mm256_broadcastsi128_si256(g->rk[r]);
	for (int j = 0; j < 8; j++) {
		g->h2[j] = _mm256_set_m128i(g->h[14 - 2 * j], g->h[15 - 2 * j]);
		g->hk2[j] = _mm256_set_m128i(g->hk[14 - 2 * j], g->hk[15 - 2 * j]);
	}
	g->vaes = true;
}

/* GHASH of the 16 blocks at p into acc: products with H^16..H^1 summed unreduced in both lanes,
 * the lanes folded, one reduction. */
NVI __m128i ghash16(const struct ngcm *g, __m128i acc, const uint8_t *p)
{
	const __m256i bs = _mm256_broadcastsi128_si256(
		_mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
	__m256i lo = _mm256_setzero_si256(), hi = lo, mid = lo;
#pragma GCC unroll 16
	for (unsigned j = 0; j < 8; j++) {
		__m256i x = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p + 32 * j)), bs);
		if (j == 0)
			x = _mm256_xor_si256(x, _mm256_zextsi128_si256(acc));
		lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(x, g->h2[j], 0x00));
		hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(x, g->h2[j], 0x11));
		__m256i xk = _mm256_xor_si256(x, _mm256_shuffle_epi32(x, 0x4e));
		mid = _mm256_xor_si256(mid, _mm256_clmulepi64_epi128(xk, g->hk2[j], 0x00));
	}
	__m128i l = _mm_xor_si128(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
	__m128i h = _mm_xor_si128(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
	__m128i m = _mm_xor_si128(_mm256_castsi256_si128(mid), _mm256_extracti128_si256(mid, 1));
	return ghash_reduce(l, h, m);
}

/* ghash16 for callers compiled without VAES (only called when the CPU has it). */
NV static __m128i ghash16_nv(const struct ngcm *g, __m128i acc, const uint8_t *p)
{
	return ghash16(g, acc, p);
}

/* 16 blocks (256 bytes) per round from *off while at least that much is left: counters from *ctr,
 * GHASH folded into *acc (which must sit at a group boundary). Encryption hashes the previous
 * round's ciphertext while this round's AES runs, as the 128-bit loop does. */
NV static void bulk_vaes(const struct ngcm *g, __m128i base, __m128i *acc, const uint8_t *src,
			 uint8_t *dst, size_t len, size_t *off_p, uint32_t *ctr_p, bool enc)
{
	size_t off = *off_p;
	uint32_t ctr = *ctr_p;
	/* Counter blocks kept with their last word little-endian, so that one add steps both lanes. */
	const __m256i cm = _mm256_broadcastsi128_si256(
		_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 14, 13, 12));
	__m256i c = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(base), cm);
	c = _mm256_add_epi32(c, _mm256_set_epi32((int)(ctr + 1), 0, 0, 0, (int)ctr, 0, 0, 0));
	const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
	__m128i a = *acc;
	while (len - off >= 256) {
		__m256i b[8];
#pragma GCC unroll 16
		for (unsigned j = 0; j < 8; j++) {
			b[j] = _mm256_xor_si256(_mm256_shuffle_epi8(c, cm), g->rk2[0]);
			c = _mm256_add_epi32(c, two);
		}
		for (unsigned r = 1; r < g->rounds; r++) {
			const __m256i k = g->rk2[r];
#pragma GCC unroll 16
			for (unsigned j = 0; j < 8; j++)
				b[j] = _mm256_aesenc_epi128(b[j], k);
		}
		const __m256i kl = g->rk2[g->rounds];
#pragma GCC unroll 16
		for (unsigned j = 0; j < 8; j++)
			b[j] = _mm256_aesenclast_epi128(b[j], kl);
		if (!enc)
			a = ghash16(g, a, src + off);
		else if (off != *off_p)
			a = ghash16(g, a, dst + off - 256);
#pragma GCC unroll 16
		for (unsigned j = 0; j < 8; j++)
			_mm256_storeu_si256((__m256i *)(dst + off + 32 * j),
					    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(src + off + 32 * j)),
							     b[j]));
		off += 256;
		ctr += 16;
	}
	if (enc && off != *off_p)
		a = ghash16(g, a, dst + off - 256);
	*acc = a;
	*off_p = off;
	*ctr_p = ctr;
}

/* ---- GCM ---- */

/* Counter block i for the 12-byte nonce in iv (whose last 4 bytes are zero). */
NTI __m128i ctr_blk(__m128i base, uint32_t i)
{
	return _mm_insert_epi32(base, (int)__builtin_bswap32(i), 3);
}

/* pshufb masks: at sh_tab + 16 + k, "shift right by k bytes" (byte i takes byte i + k, zero past
 * the end); at sh_tab + 16 - k, "shift left by k bytes". */
static const uint8_t sh_tab[48] __attribute__((aligned(16))) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* The AAD of an ESP packet (8 or 12 bytes: SPI, [seq hi,] seq) as a zero-padded block. */
NTI __m128i ld_aad(const uint8_t *aad, size_t len)
{
	if (len == 8)
		return _mm_loadl_epi64((const __m128i *)aad);
	if (len == 12) {
		uint32_t w;
		memcpy(&w, aad + 8, 4);
		return _mm_insert_epi32(_mm_loadl_epi64((const __m128i *)aad), (int)w, 2);
	}
	if (len == 16)
		return ld(aad);
	return ld_part(aad, len);
}

/* One short packet for gcm_short: nonce, AAD, in-place buffer and where its tag goes. */
struct gcm_pkt {
	const uint8_t *iv;
	const uint8_t *aad;
	size_t aad_len;
	uint8_t *buf;
	size_t len;
	uint8_t *tag;
};

/* np (1 or 2) packets of 16 < len <= 16 * nb bytes each with an AAD of at most one block, in
 * place: every AES block of both (J0 and the nb of each payload) in one interleaved batch, so that
 * the AES units run at their throughput instead of one packet's round latency, and per packet every
 * GHASH product summed before one reduction. A last partial block is read and written as the 16
 * bytes that end the buffer, shuffled, so nothing outside [buf, buf + len) is touched and no
 * byte-wise copy is made. */
NTI void gcm_short(const struct ngcm *g, const struct gcm_pkt *p, bool enc, const unsigned nb,
		   const unsigned np)
{
	__m128i b[2 * 7], in[2][6], win[2];
	unsigned rem[2];
#pragma GCC unroll 2
	for (unsigned q = 0; q < np; q++) {
		const __m128i base = ld(p[q].iv);
		rem[q] = (unsigned)(p[q].len & 15);
#pragma GCC unroll 16
		for (unsigned j = 0; j <= nb; j++)
			b[q * (nb + 1) + j] = ctr_blk(base, j + 1);
		/* Read all input before anything is written (in place). */
#pragma GCC unroll 16
		for (unsigned j = 0; j < nb - 1; j++)
			in[q][j] = ld(p[q].buf + 16 * j);
		win[q] = ld(p[q].buf + p[q].len - 16);
		if (rem[q])
			in[q][nb - 1] = _mm_shuffle_epi8(win[q], ld(sh_tab + 16 + (16 - rem[q])));
		else
			in[q][nb - 1] = win[q];
	}
	aes_n(g, b, np * (nb + 1));

#pragma GCC unroll 2
	for (unsigned q = 0; q < np; q++) {
		const __m128i *ks = b + q * (nb + 1);
		__m128i lo = _mm_setzero_si128(), hi = lo, mid = lo, out[6];
		unsigned hp = (p[q].aad_len ? 1 : 0) + nb; /* H^(blocks left): AAD, payload, lengths */
		if (p[q].aad_len) {
			clmul_acc(bswap(ld_aad(p[q].aad, p[q].aad_len)), g->h[hp], g->hk[hp], &lo, &hi, &mid);
			hp--;
		}
#pragma GCC unroll 16
		for (unsigned j = 0; j < nb; j++)
			out[j] = _mm_xor_si128(in[q][j], ks[j + 1]);
#pragma GCC unroll 16
		for (unsigned j = 0; j < nb - 1; j++)
			st(p[q].buf + 16 * j, out[j]);
		if (rem[q]) {
			/* Keep the first rem bytes of the last block; write the window ending the buffer. */
			unsigned r = rem[q];
			__m128i keep = _mm_shuffle_epi8(_mm_set1_epi8(-1), ld(sh_tab + 16 + (16 - r)));
			out[nb - 1] = _mm_and_si128(out[nb - 1], keep);
			__m128i w = _mm_or_si128(_mm_shuffle_epi8(out[nb - 2], ld(sh_tab + 16 + r)),
						 _mm_shuffle_epi8(out[nb - 1], ld(sh_tab + 16 - (16 - r))));
			st(p[q].buf + p[q].len - 16, w);
		} else {
			st(p[q].buf + 16 * (nb - 1), out[nb - 1]);
		}
#pragma GCC unroll 16
		for (unsigned j = 0; j < nb; j++) {
			clmul_acc(bswap(enc ? out[j] : in[q][j]), g->h[hp], g->hk[hp], &lo, &hi, &mid);
			hp--;
		}
		clmul_acc(_mm_set_epi64x((long long)((uint64_t)p[q].aad_len * 8), (long long)((uint64_t)p[q].len * 8)),
			  g->h[0], g->hk[0], &lo, &hi, &mid);
		st(p[q].tag, _mm_xor_si128(bswap(ghash_reduce(lo, hi, mid)), ks[0]));
	}
}

/* Blocks of a payload that gcm_short takes (2..6), or 0. */
static inline unsigned short_blocks(size_t aad_len, size_t len)
{
	return aad_len <= 16 && len > 16 && len <= 96 ? (unsigned)((len + 15) / 16) : 0;
}

/* gcm_short for np packets of nb blocks each. */
NT static void gcm_short_dispatch(const struct ngcm *g, const struct gcm_pkt *p, bool enc, unsigned nb,
				  unsigned np)
{
	if (np == 2) {
		switch (nb) {
		case 2: gcm_short(g, p, enc, 2, 2); return;
		case 3: gcm_short(g, p, enc, 3, 2); return;
		case 4: gcm_short(g, p, enc, 4, 2); return;
		case 5: gcm_short(g, p, enc, 5, 2); return;
		default: gcm_short(g, p, enc, 6, 2); return;
		}
	}
	switch (nb) {
	case 2: gcm_short(g, p, enc, 2, 1); return;
	case 3: gcm_short(g, p, enc, 3, 1); return;
	case 4: gcm_short(g, p, enc, 4, 1); return;
	case 5: gcm_short(g, p, enc, 5, 1); return;
	default: gcm_short(g, p, enc, 6, 1); return;
	}
}

/* GMAC (no payload) over 16 <= aad_len <= 240 bytes: with the length block at most 16 GHASH blocks,
 * each multiplied by its own power of H and all reduced once, while E_K(J0) runs alongside. The
 * last partial block is read as the shuffled 16 bytes that end the AAD. */
NT static void gmac_short(const struct ngcm *g, const uint8_t iv[16], const uint8_t *aad, size_t aad_len,
			  uint8_t *tag)
{
	__m128i ej0 = ctr_blk(ld(iv), 1);
	aes_n(g, &ej0, 1);
	const unsigned full = (unsigned)(aad_len / 16), rem = (unsigned)(aad_len & 15);
	unsigned hp = full + (rem ? 1 : 0); /* H^(blocks left): AAD blocks, then the lengths */
	__m128i lo = _mm_setzero_si128(), hi = lo, mid = lo;
	for (unsigned j = 0; j < full; j++, hp--)
		clmul_acc(bswap(ld(aad + 16 * j)), g->h[hp], g->hk[hp], &lo, &hi, &mid);
	if (rem) {
		__m128i last = _mm_shuffle_epi8(ld(aad + aad_len - 16), ld(sh_tab + 16 + (16 - rem)));
		clmul_acc(bswap(last), g->h[hp], g->hk[hp], &lo, &hi, &mid);
	}
	clmul_acc(_mm_set_epi64x((long long)((uint64_t)aad_len * 8), 0), g->h[0], g->hk[0], &lo, &hi, &mid);
	st(tag, _mm_xor_si128(bswap(ghash_reduce(lo, hi, mid)), ej0));
}

/* Encrypt or decrypt len bytes from src to dst (may be the same) with the nonce in iv, and write
 * the 16-byte tag over aad and the ciphertext. */
NT static void gcm(const struct ngcm *g, const uint8_t iv[16], const uint8_t *aad, size_t aad_len,
		   uint8_t *dst, const uint8_t *src, size_t len, uint8_t *tag, bool enc)
{
	unsigned nb = short_blocks(aad_len, len);
	if (nb && dst == src) {
		const struct gcm_pkt p = { iv, aad, aad_len, dst, len, tag };
		gcm_short_dispatch(g, &p, enc, nb, 1);
		return;
	}
	if (len == 0 && aad_len >= 16 && aad_len <= 240) {
		gmac_short(g, iv, aad, aad_len, tag);
		return;
	}
	const __m128i base = ld(iv);
	__m128i ej0 = ctr_blk(base, 1); /* E_K(J0) masks the tag */
	aes_n(g, &ej0, 1);
	struct ghash s;
	/* AAD (GMAC's is the whole packet): whole 16- and 8-block groups first, then the rest as one
	 * group; it ends a group, so s.acc then holds its hash and s.left is 8. */
	size_t ad = 0;
	gh_init(&s, 0);
	if (g->vaes)
		for (; aad_len - ad >= 256; ad += 256)
			s.acc = ghash16_nv(g, s.acc, aad + ad);
	for (; aad_len - ad >= 128; ad += 128)
		s.acc = ghash8(g, s.acc, aad + ad);
	gh_init_acc(&s, (aad_len - ad + 15) / 16);
	gh_bytes(g, &s, aad + ad, aad_len - ad);

	/* Bulk: 8 blocks per round, one GHASH group each (H^8..H^1, one reduction). Encryption hashes
	 * the previous round's ciphertext, read back from dst, while this round's AES runs: the two
	 * are independent, so the core overlaps them. Decryption hashes its input as it reads it. */
	size_t off = 0;
	uint32_t ctr = 2;
	if (g->vaes && len >= 256)
		bulk_vaes(g, base, &s.acc, src, dst, len, &off, &ctr, enc);
	const size_t off0 = off; /* the 128-bit rounds start here: nothing of theirs hashed yet */
	while (len - off >= 128) {
		__m128i b[8];
#pragma GCC unroll 16
		for (unsigned j = 0; j < 8; j++)
			b[j] = ctr_blk(base, ctr + j);
		aes_n(g, b, 8);
		const uint8_t *h8 = enc ? (off != off0 ? dst + off - 128 : NULL) : src + off;
		if (h8)
			s.acc = ghash8(g, s.acc, h8);
#pragma GCC unroll 16
		for (unsigned j = 0; j < 8; j++)
			st(dst + off + 16 * j, _mm_xor_si128(ld(src + off + 16 * j), b[j]));
		ctr += 8;
		off += 128;
	}
	if (enc && off != off0) /* the last round's ciphertext */
		s.acc = ghash8(g, s.acc, dst + off - 128);

	/* Tail: up to 8 blocks, the last maybe partial, then the length block. */
	unsigned nt = (unsigned)((len - off + 15) / 16);
	s.left = (nt + 1) % 8 ? (nt + 1) % 8 : 8;
	if (nt) {
		__m128i b[8];
		for (unsigned j = 0; j < nt; j++)
			b[j] = ctr_blk(base, ctr + j);
		aes_blocks(g, b, nt);
		for (unsigned j = 0; j < nt; j++, off += 16) {
			size_t left = len - off;
			if (left >= 16) {
				__m128i in = ld(src + off);
				__m128i out = _mm_xor_si128(in, b[j]);
				st(dst + off, out);
				gh_push(g, &s, enc ? out : in);
			} else {
				uint8_t t16[16] __attribute__((aligned(16))) = { 0 };
				memcpy(t16, src + off, left);
				__m128i in = _mm_load_si128((const __m128i *)t16);
				_mm_store_si128((__m128i *)t16, _mm_xor_si128(in, b[j]));
				memcpy(dst + off, t16, left);
				memset(t16 + left, 0, 16 - left);
				gh_push(g, &s, enc ? _mm_load_si128((const __m128i *)t16) : in);
			}
		}
	}
	/* Lengths in bits, AAD then ciphertext, already in the reversed representation. */
	gh_push_rev(g, &s, _mm_set_epi64x((long long)((uint64_t)aad_len * 8), (long long)((uint64_t)len * 8)));
	st(tag, _mm_xor_si128(bswap(s.acc), ej0));
}

static bool cpu_ok(void)
{
	static int ok = -1;
	if (ok < 0) {
		__builtin_cpu_init();
		ok = __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul") &&
		     __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1");
	}
	return ok;
}

static bool nat_supports(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len)
{
	(void)hmac;
	if (!cpu_ok() || (key_len != 16 && key_len != 32))
		return false;
	return (kind == ESP_KIND_AEAD && cipher == ESP_C_AES_GCM) ||
	       (kind == ESP_KIND_GMAC && cipher == ESP_C_AES_GMAC);
}

static int nat_init(struct esp_crypto_sa *cs)
{
	if (!nat_supports(cs->kind, cs->cipher, cs->hmac, cs->enc_key_len))
		return -ENOTSUP;
	struct ngcm *g = aligned_alloc(64, (sizeof(*g) + 63) & ~(size_t)63);
	if (!g)
		return -ENOMEM;
	key_expand(g, cs->enc_key, cs->enc_key_len);
	setup_h(g);
	g->vaes = false;
	if (cpu_vaes() && esp_native_vaes)
		setup_vaes(g);
#ifdef HAVE_IPSEC_MB
	/* With VAES our bulk loop is faster than ipsec-mb 1.3's AVX2 GCM (no VAES path below AVX-512):
	 * the hand-off is only for CPUs without it. */
	IMB_MGR *m = g->vaes ? NULL : esp_imb_direct_mgr();
	g->imb = m != NULL;
	if (m && cs->enc_key_len == 16)
		IMB_AES128_GCM_PRE(m, cs->enc_key, &g->imb_key);
	else if (m)
		IMB_AES256_GCM_PRE(m, cs->enc_key, &g->imb_key);
#endif
	cs->ctx = g;
	return 0;
}

static void nat_fini(struct esp_crypto_sa *cs)
{
	if (!cs->ctx)
		return;
	OPENSSL_cleanse(cs->ctx, sizeof(struct ngcm));
	free(cs->ctx);
	cs->ctx = NULL;
}

#ifdef HAVE_IPSEC_MB
/* A long packet through ipsec-mb; false if no manager can be had in this thread. */
static bool imb_run(const struct ngcm *g, unsigned key_len, struct esp_cop *c, bool gmac, bool enc,
		    struct gcm_context_data *ctx)
{
	IMB_MGR *m = esp_imb_direct_mgr();
	if (!m)
		return false;
	esp_imb_gcm_op(m, &g->imb_key, key_len, c, gmac, enc, ctx);
	return true;
}
#endif

static void nat_run(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n, bool enc)
{
	const struct ngcm *g = cs->ctx;
	const bool gmac = cs->kind == ESP_KIND_GMAC;
#ifdef HAVE_IPSEC_MB
	struct gcm_context_data ctx;
	bool used_imb = false;
#endif
	/* Every GCM/GMAC transform here has a 16-byte ICV (RFC 4106's -16, RFC 4543). */
	for (unsigned i = 0; i < n; i++) {
		struct esp_cop *c = &ops[i];
		uint8_t *tag = enc ? c->tag : c->calc;
#ifdef HAVE_IPSEC_MB
		if ((gmac ? c->auth_len : c->data_len) > NATIVE_SHORT_MAX && g->imb && esp_native_bulk_ipsecmb &&
		    imb_run(g, cs->enc_key_len, c, gmac, enc, &ctx)) {
			used_imb = true;
		} else
#endif
		if (gmac) {
			gcm(g, c->iv, c->auth, c->auth_len, NULL, NULL, 0, tag, true);
		} else {
			/* Two short packets of the same block count go through AES together. */
			unsigned nb = short_blocks(c->aad_len, c->data_len);
			struct esp_cop *c2 = i + 1 < n ? &ops[i + 1] : NULL;
			if (nb && c2 && short_blocks(c2->aad_len, c2->data_len) == nb) {
				const struct gcm_pkt p[2] = {
					{ c->iv, c->aad, c->aad_len, c->data, c->data_len, tag },
					{ c2->iv, c2->aad, c2->aad_len, c2->data, c2->data_len, enc ? c2->tag : c2->calc },
				};
				gcm_short_dispatch(g, p, enc, nb, 2);
				c2->ok = enc ? 1 : esp_icv_equal(c2->calc, c2->icv_in, 16);
				c->ok = enc ? 1 : esp_icv_equal(c->calc, c->icv_in, 16);
				i++;
				continue;
			}
			gcm(g, c->iv, c->aad, c->aad_len, c->data, c->data, c->data_len, tag, enc);
		}
		c->ok = enc ? 1 : esp_icv_equal(c->calc, c->icv_in, 16);
	}
#ifdef HAVE_IPSEC_MB
	if (used_imb)
		OPENSSL_cleanse(&ctx, sizeof(ctx)); /* holds the hash subkey state */
#endif
}

static void nat_encrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	nat_run(cs, ops, n, true);
}

static void nat_decrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	nat_run(cs, ops, n, false);
}

#else /* not x86-64 */

bool esp_native_bulk_ipsecmb = true;
bool esp_native_vaes = true;

static bool nat_supports(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len)
{
	(void)kind, (void)cipher, (void)hmac, (void)key_len;
	return false;
}

static int nat_init(struct esp_crypto_sa *cs)
{
	(void)cs;
	return -ENOTSUP;
}

static void nat_fini(struct esp_crypto_sa *cs)
{
	(void)cs;
}

static void nat_encrypt(const struct esp_crypto_sa *cs, struct esp_cop *ops, unsigned n)
{
	(void)cs;
	for (unsigned i = 0; i < n; i++)
		ops[i].ok = 0;
}

#define nat_decrypt nat_encrypt

#endif

const struct esp_crypto_ops esp_crypto_native = {
	.name = "native",
	.supports = nat_supports,
	.init = nat_init,
	.fini = nat_fini,
	.encrypt = nat_encrypt,
	.decrypt = nat_decrypt,
};
