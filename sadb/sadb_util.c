/* sadb/sadb_util.c: libsadb's helpers shared by every part: address and prefix parsing/formatting,
 * transform tables (key, salt and ICV lengths, names), SA/policy/selector validation, drop reason
 * texts, record checksums and the per-thread error message. Nothing here touches the segment. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

/* ---- per-thread error message: readers share one handle across threads ---- */

static __thread char tls_err[256];
static __thread const char *tls_err_const; /* a constant message instead of tls_err */
static __thread const struct sadb *tls_err_db;
static __thread uint64_t tls_retries;

void sadb__set_err(const struct sadb *db, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tls_err, sizeof(tls_err), fmt, ap);
	va_end(ap);
	tls_err_const = NULL;
	tls_err_db = db;
}

/* For lookups that miss on the packet path: no formatting, just a pointer. */
void sadb__set_errc(const struct sadb *db, const char *msg)
{
	tls_err_const = msg;
	tls_err_db = db;
}

void sadb__clear_err(const struct sadb *db)
{
	if (tls_err_db == db) {
		tls_err[0] = '\0';
		tls_err_const = NULL;
	}
}

int sadb__bad_arg(const struct sadb *db, const char *what)
{
	sadb__set_err(db, "%s", what);
	return -EINVAL;
}

int sadb__check_writable(struct sadb *db, const void *p, const char *fn)
{
	if (!db)
		return -EINVAL;
	if (!p) {
		sadb__set_err(db, "%s: NULL argument", fn);
		return -EINVAL;
	}
	return 0;
}

const char *sadb_errmsg(const struct sadb *db)
{
	if (tls_err_db != db)
		return "";
	return tls_err_const ? tls_err_const : tls_err;
}

void sadb__read_retry(void)
{
	tls_retries++;
}

uint64_t sadb_read_retries(void)
{
	return tls_retries;
}

/* ---- checksums ----
 * Every read verifies one, so it must cost little next to the ~330-byte copy: two interleaved
 * Fletcher-style sums over 64-bit words (adds only, two independent chains) and one final mix.
 * Its job is to catch a torn or corrupt copy (the seqlock already prevents torn reads); it is not
 * a cryptographic integrity check. */

uint32_t sadb__checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t a0 = 0x9E3779B97F4A7C15ULL, b0 = 0, a1 = 0xC2B2AE3D27D4EB4FULL, b1 = 0, w[2], h;
	size_t i = 0;

	for (; i + 16 <= len; i += 16) {
		memcpy(w, b + i, 16);
		a0 += w[0];
		b0 += a0;
		a1 += w[1];
		b1 += a1;
	}
	if (i < len) {
		w[0] = w[1] = 0;
		memcpy(w, b + i, len - i);
		a0 += w[0];
		b0 += a0;
		a1 += w[1];
		b1 += a1;
	}
	h = sadb__mix64(a0 ^ (b0 << 21 | b0 >> 43)) ^ sadb__mix64(a1 + (b1 << 43 | b1 >> 21) + len);
	return (uint32_t)(h ^ (h >> 32));
}

uint32_t sadb__sa_checksum(const struct sadb_sa *sa)
{
	return sadb__checksum(sa, offsetof(struct sadb_sa, checksum));
}

uint32_t sadb__policy_checksum(const struct sadb_policy *p)
{
	return sadb__checksum(p, offsetof(struct sadb_policy, checksum));
}

/* ---- addresses ---- */

const char *sadb_default_path(void)
{
	const char *p = getenv(SADB_ENV_PATH);

	return p && *p ? p : SADB_DEFAULT_PATH;
}

int sadb_addr_parse(const char *s, struct sadb_addr *out)
{
	struct sadb_addr a;

	if (!s || !out)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	if (inet_pton(AF_INET, s, &a.a.v4) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, s, &a.a.v6) == 1)
		a.family = AF_INET6;
	else
		return -EINVAL;
	*out = a;
	return 0;
}

void sadb__addr_mask(struct sadb_addr *a, unsigned plen)
{
	for (unsigned w = 0; w < 4; w++)
		a->a.w[w] &= sadb__plen_mask(plen, w);
}

void sadb__addr_seal(struct sadb_addr *z, const struct sadb_addr *a)
{
	z->family = a->family;
	memcpy(z->a.b, a->a.b, 16);
	if (z->family == AF_INET)
		memset(z->a.b + 4, 0, 12);
}

int sadb_prefix_parse(const char *s, struct sadb_addr *out, uint8_t *plen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	struct sadb_addr a;
	unsigned long n;
	unsigned maxlen;
	char *end;

	if (!s || !out || !plen)
		return -EINVAL;
	if (strcmp(s, "any") == 0) {
		memset(out, 0, sizeof(*out));
		*plen = 0;
		return 0;
	}
	slash = strchr(s, '/');
	if (slash) {
		size_t alen = (size_t)(slash - s);
		if (alen == 0 || alen >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, s, alen);
		buf[alen] = '\0';
	} else {
		if (strlen(s) >= sizeof(buf))
			return -EINVAL;
		strcpy(buf, s);
	}
	if (sadb_addr_parse(buf, &a))
		return -EINVAL;
	maxlen = a.family == AF_INET ? 32 : 128;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		n = strtoul(slash + 1, &end, 10);
		if (errno || *end || n > maxlen)
			return -EINVAL;
	} else {
		n = maxlen;
	}
	/* Host bits are cleared so equal prefixes compare equal whatever the user wrote. */
	sadb__addr_mask(&a, (unsigned)n);
	*out = a;
	*plen = (uint8_t)n;
	return 0;
}

const char *sadb_addr_str(const struct sadb_addr *a, char *buf, size_t len)
{
	if (!buf || len == 0)
		return "";
	if (!a || a->family == 0) {
		snprintf(buf, len, "any");
	} else if (a->family == AF_INET || a->family == AF_INET6) {
		if (!inet_ntop(a->family, a->a.b, buf, (socklen_t)len))
			snprintf(buf, len, "?");
	} else {
		snprintf(buf, len, "?family%u", a->family);
	}
	return buf;
}

bool sadb_addr_eq(const struct sadb_addr *a, const struct sadb_addr *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET)
		return a->a.w[0] == b->a.w[0];
	if (a->family == AF_INET6)
		return memcmp(a->a.b, b->a.b, 16) == 0;
	return true;
}

/* ---- transforms ---- */

int sadb_enc_lengths(uint16_t enc_alg, unsigned key_len, unsigned *salt_len, unsigned *icv_len)
{
	unsigned salt = 0, icv = 0, def;
	bool ok;

	switch (enc_alg) {
	case SADB_ENC_NONE:
	case SADB_ENC_NULL:
		def = 0;
		ok = key_len == 0;
		break;
	case SADB_ENC_3DES_CBC:
		def = 24;
		ok = key_len == 0 || key_len == 24;
		break;
	case SADB_ENC_DES_CBC:
		def = 8;
		ok = key_len == 0 || key_len == 8;
		break;
	case SADB_ENC_AES_CBC:
		def = 16;
		ok = key_len == 0 || key_len == 16 || key_len == 24 || key_len == 32;
		break;
	case SADB_ENC_AES_CTR:
		def = 16;
		salt = 4;
		ok = key_len == 0 || key_len == 16 || key_len == 24 || key_len == 32;
		break;
	case SADB_ENC_AES_GCM16:
	case SADB_ENC_AES_GMAC:
		def = 16;
		salt = 4;
		icv = 16;
		ok = key_len == 0 || key_len == 16 || key_len == 24 || key_len == 32;
		break;
	case SADB_ENC_CHACHA20_POLY1305:
		def = 32;
		salt = 4;
		icv = 16;
		ok = key_len == 0 || key_len == 32;
		break;
	default:
		return -EINVAL;
	}
	if (!ok)
		return -EINVAL;
	if (salt_len)
		*salt_len = salt;
	if (icv_len)
		*icv_len = icv;
	return (int)(key_len ? key_len : def);
}

int sadb_auth_lengths(uint16_t auth_alg, unsigned *key_len, unsigned *icv_len)
{
	unsigned k, icv;

	switch (auth_alg) {
	case SADB_AUTH_NONE:            k = 0;  icv = 0;  break;
	case SADB_AUTH_HMAC_MD5_96:     k = 16; icv = 12; break;
	case SADB_AUTH_HMAC_SHA1_96:    k = 20; icv = 12; break;
	case SADB_AUTH_HMAC_SHA256_128: k = 32; icv = 16; break;
	case SADB_AUTH_HMAC_SHA384_192: k = 48; icv = 24; break;
	case SADB_AUTH_HMAC_SHA512_256: k = 64; icv = 32; break;
	case SADB_AUTH_AES_128_GMAC:    k = 16; icv = 16; break;
	case SADB_AUTH_AES_256_GMAC:    k = 32; icv = 16; break;
	default:
		return -EINVAL;
	}
	if (key_len)
		*key_len = k;
	if (icv_len)
		*icv_len = icv;
	return 0;
}

const char *sadb_enc_name(uint16_t enc_alg)
{
	switch (enc_alg) {
	case SADB_ENC_NONE:              return "none";
	case SADB_ENC_DES_CBC:           return "des-cbc";
	case SADB_ENC_3DES_CBC:          return "3des-cbc";
	case SADB_ENC_NULL:              return "null";
	case SADB_ENC_AES_CBC:           return "aes-cbc";
	case SADB_ENC_AES_CTR:           return "aes-ctr";
	case SADB_ENC_AES_GCM16:         return "aes-gcm-16";
	case SADB_ENC_AES_GMAC:          return "aes-gmac";
	case SADB_ENC_CHACHA20_POLY1305: return "chacha20-poly1305";
	}
	return "unknown";
}

const char *sadb_auth_name(uint16_t auth_alg)
{
	switch (auth_alg) {
	case SADB_AUTH_NONE:            return "none";
	case SADB_AUTH_HMAC_MD5_96:     return "hmac-md5-96";
	case SADB_AUTH_HMAC_SHA1_96:    return "hmac-sha1-96";
	case SADB_AUTH_HMAC_SHA256_128: return "hmac-sha256-128";
	case SADB_AUTH_HMAC_SHA384_192: return "hmac-sha384-192";
	case SADB_AUTH_HMAC_SHA512_256: return "hmac-sha512-256";
	case SADB_AUTH_AES_128_GMAC:    return "aes-128-gmac";
	case SADB_AUTH_AES_256_GMAC:    return "aes-256-gmac";
	}
	return "unknown";
}

/* ---- drop reasons ---- */

/* The numbering of the drop reasons is part of the SADB layout (sadb_drops.h). These checks make a
 * build fail when the list and SADB_LAYOUT_VERSION disagree:
 *  - every reason's number is its position in the list: numbers start at 0, have no gaps and no
 *    repeats, and the positional tables built from SADB_DROP_LIST index by number;
 *  - layout version 10 has 35 reasons, the last one ACQUIRE = 34: a reason added, or one removed,
 *    without a new layout version fails here;
 *  - a fingerprint of which name has which number (the sum of (number + 1) * name length) fails when
 *    reasons trade numbers, unless the two names are equally long.
 * A new layout version records its own count, last reason and fingerprint below. */
enum {
#define SADB_DROP_POS(name, num, text) SADB_DROP_POS_##name,
	SADB_DROP_REASONS(SADB_DROP_POS)
#undef SADB_DROP_POS
};
#define SADB_DROP_AT_POS(name, num, text) \
	_Static_assert(SADB_DROP_POS_##name == (num), "drop reason " #name " is not numbered by its position");
SADB_DROP_REASONS(SADB_DROP_AT_POS)
#undef SADB_DROP_AT_POS
#define SADB_DROP_FP(name, num, text) + ((num) + 1) * (sizeof(#name) - 1)
enum { SADB_DROP_FINGERPRINT = 0 SADB_DROP_REASONS(SADB_DROP_FP) };
#undef SADB_DROP_FP
/* Layout 6 added NO_BINDING (the home agent's tunnels); 7 kept the reasons; 8 added ICMP_DECAP (an
 * ICMP error about a decapsulated packet that no SA of its tunnel may carry); 9 added ACQUIRE
 * (packets of a policy whose SA is being negotiated); 10 kept the reasons (several home agent
 * records). */
_Static_assert(SADB_LAYOUT_VERSION == 10, "new SADB layout version: record its drop reasons here");
_Static_assert(SADB_DROP_MAX == 35 && SADB_DROP_ACQUIRE == SADB_DROP_MAX - 1,
	       "drop reasons added or removed without a new SADB_LAYOUT_VERSION");
_Static_assert(SADB_DROP_FINGERPRINT == 5645,
	       "drop reasons renumbered or renamed without a new SADB_LAYOUT_VERSION");

const char *sadb_drop_str(unsigned reason)
{
	static const char *const text[SADB_DROP_MAX] = {
#define SADB_DROP_TEXT(name, num, t) [num] = t,
		SADB_DROP_REASONS(SADB_DROP_TEXT)
#undef SADB_DROP_TEXT
	};
	return reason < SADB_DROP_MAX ? text[reason] : "unknown";
}

const char *sadb_drop_name(unsigned reason)
{
	static const char *const names[SADB_DROP_MAX] = {
#define SADB_DROP_NAME(name, num, t) [num] = #name,
		SADB_DROP_REASONS(SADB_DROP_NAME)
#undef SADB_DROP_NAME
	};
	/* Lower-cased once into static storage: identifiers are short and fixed. */
	static char lower[SADB_DROP_MAX][32];
	static _Atomic int done;

	if (reason >= SADB_DROP_MAX)
		return "unknown";
	if (!atomic_load_explicit(&done, memory_order_acquire)) {
		static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_lock(&m);
		if (!atomic_load_explicit(&done, memory_order_relaxed)) {
			for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
				size_t j;
				for (j = 0; names[i][j] && j < sizeof(lower[i]) - 1; j++) {
					char c = names[i][j];
					lower[i][j] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
				}
				lower[i][j] = '\0';
			}
			atomic_store_explicit(&done, 1, memory_order_release);
		}
		pthread_mutex_unlock(&m);
	}
	return lower[reason];
}

/* ---- validation ---- */

#define FAIL(...) do { if (msg && len) snprintf(msg, len, __VA_ARGS__); return -EINVAL; } while (0)

uint8_t sadb__sel_family(const struct sadb_selector *sel)
{
	return sel->src.family ? sel->src.family : sel->dst.family;
}

static bool family_ok(uint8_t f)
{
	return f == 0 || f == AF_INET || f == AF_INET6;
}

int sadb__selector_validate(const struct sadb_selector *sel, char *msg, size_t len)
{
	if (!family_ok(sel->src.family))
		FAIL("selector: source family %u is neither IPv4 nor IPv6", sel->src.family);
	if (!family_ok(sel->dst.family))
		FAIL("selector: destination family %u is neither IPv4 nor IPv6", sel->dst.family);
	if (sel->src.family && sel->dst.family && sel->src.family != sel->dst.family)
		FAIL("selector: source and destination prefixes are of different families");
	if (sel->src.family == 0 && sel->src_plen)
		FAIL("selector: source prefix length %u without an address", sel->src_plen);
	if (sel->dst.family == 0 && sel->dst_plen)
		FAIL("selector: destination prefix length %u without an address", sel->dst_plen);
	if (sel->src_plen > (sel->src.family == AF_INET ? 32 : 128))
		FAIL("selector: source prefix length %u too long", sel->src_plen);
	if (sel->dst_plen > (sel->dst.family == AF_INET ? 32 : 128))
		FAIL("selector: destination prefix length %u too long", sel->dst_plen);
	if (sel->sport_lo > sel->sport_hi)
		FAIL("selector: source port range %u-%u is empty", sel->sport_lo, sel->sport_hi);
	if (sel->dport_lo > sel->dport_hi)
		FAIL("selector: destination port range %u-%u is empty", sel->dport_lo, sel->dport_hi);
	if (sel->proto == 0 && (sel->sport_lo || sel->sport_hi != 65535 || sel->dport_lo ||
				sel->dport_hi != 65535))
		FAIL("selector: port ranges need a protocol");
	return 0;
}

void sadb__selector_normalize(struct sadb_selector *sel)
{
	uint8_t f = sadb__sel_family(sel);

	/* An "any" side takes the other side's family with a zero prefix: one family per selector. */
	if (sel->src.family == 0) {
		memset(&sel->src, 0, sizeof(sel->src));
		sel->src.family = f;
	}
	if (sel->dst.family == 0) {
		memset(&sel->dst, 0, sizeof(sel->dst));
		sel->dst.family = f;
	}
	memset(sel->src.pad, 0, sizeof(sel->src.pad));
	memset(sel->dst.pad, 0, sizeof(sel->dst.pad));
	sadb__addr_mask(&sel->src, sel->src_plen);
	sadb__addr_mask(&sel->dst, sel->dst_plen);
	sel->pad = 0;
}

bool sadb__selector_eq(const struct sadb_selector *a, const struct sadb_selector *b)
{
	return sadb__sel_family(a) == sadb__sel_family(b) && a->src_plen == b->src_plen &&
	       a->dst_plen == b->dst_plen && memcmp(a->src.a.b, b->src.a.b, 16) == 0 &&
	       memcmp(a->dst.a.b, b->dst.a.b, 16) == 0 && a->proto == b->proto &&
	       a->sport_lo == b->sport_lo && a->sport_hi == b->sport_hi &&
	       a->dport_lo == b->dport_lo && a->dport_hi == b->dport_hi;
}

static bool prefix_match(const struct sadb_addr *pfx, unsigned plen, const struct sadb_addr *a)
{
	for (unsigned w = 0; w < 4 && plen > 32 * w; w++) {
		uint32_t m = sadb__plen_mask(plen, w);
		if ((pfx->a.w[w] ^ a->a.w[w]) & m)
			return false;
	}
	return true;
}

bool sadb_selector_match(const struct sadb_selector *sel, const struct sadb_pkt_sel *pkt)
{
	uint8_t f = sadb__sel_family(sel);

	if (f && (pkt->src.family != f || pkt->dst.family != f))
		return false;
	if (sel->proto && sel->proto != pkt->proto)
		return false;
	if (pkt->sport < sel->sport_lo || pkt->sport > sel->sport_hi ||
	    pkt->dport < sel->dport_lo || pkt->dport > sel->dport_hi)
		return false;
	if (sel->src.family && !prefix_match(&sel->src, sel->src_plen, &pkt->src))
		return false;
	if (sel->dst.family && !prefix_match(&sel->dst, sel->dst_plen, &pkt->dst))
		return false;
	return true;
}

static int sa_alg_validate(const struct sadb_sa *sa, char *msg, size_t len)
{
	unsigned salt, icv, akey, aicv, want_icv;
	int klen;

	if (sa->enc_alg == SADB_ENC_DES_CBC)
		FAIL("enc_alg: des-cbc is not offered (RFC 8221: MUST NOT)");
	klen = sadb_enc_lengths(sa->enc_alg, sa->enc_key_len, &salt, &icv);
	if (klen < 0) {
		if (sadb_enc_lengths(sa->enc_alg, 0, NULL, NULL) < 0)
			FAIL("enc_alg: unknown transform %u", sa->enc_alg);
		FAIL("enc_key_len: %u bytes is not a key length of %s", sa->enc_key_len,
		     sadb_enc_name(sa->enc_alg));
	}
	if (sa->enc_alg != SADB_ENC_NONE && sa->enc_alg != SADB_ENC_NULL && sa->enc_key_len == 0)
		FAIL("enc_key_len: %s needs a key", sadb_enc_name(sa->enc_alg));
	if (sadb_auth_lengths(sa->auth_alg, &akey, &aicv) < 0)
		FAIL("auth_alg: unknown transform %u", sa->auth_alg);
	if (sa->enc_alg == SADB_ENC_3DES_CBC && !(sa->flags & SADB_SAF_LEGACY_OK))
		FAIL("enc_alg: 3des-cbc is legacy and needs SADB_SAF_LEGACY_OK");
	if (sa->auth_alg == SADB_AUTH_HMAC_MD5_96 && !(sa->flags & SADB_SAF_LEGACY_OK))
		FAIL("auth_alg: hmac-md5-96 is legacy and needs SADB_SAF_LEGACY_OK");

	if (sa->proto == SADB_PROTO_AH) {
		if (sa->enc_alg != SADB_ENC_NONE)
			FAIL("enc_alg: AH takes no encryption transform (got %s)", sadb_enc_name(sa->enc_alg));
		if (sa->auth_alg == SADB_AUTH_NONE)
			FAIL("auth_alg: AH needs an integrity transform");
		salt = (sa->auth_alg == SADB_AUTH_AES_128_GMAC || sa->auth_alg == SADB_AUTH_AES_256_GMAC) ? 4 : 0;
		want_icv = aicv;
	} else {
		bool aead = icv != 0;
		if (sa->auth_alg == SADB_AUTH_AES_128_GMAC || sa->auth_alg == SADB_AUTH_AES_256_GMAC)
			FAIL("auth_alg: %s is for AH; ESP uses enc_alg aes-gmac", sadb_auth_name(sa->auth_alg));
		if (aead && sa->auth_alg != SADB_AUTH_NONE)
			FAIL("auth_alg: %s is combined-mode and takes no integrity transform",
			     sadb_enc_name(sa->enc_alg));
		if (sa->enc_alg == SADB_ENC_NONE)
			FAIL("enc_alg: ESP needs an encryption transform (null for integrity only)");
		if (!aead && sa->auth_alg == SADB_AUTH_NONE)
			FAIL("auth_alg: ESP with %s needs an integrity transform (RFC 8221)",
			     sadb_enc_name(sa->enc_alg));
		want_icv = aead ? icv : aicv;
	}
	if (sa->auth_key_len != akey)
		FAIL("auth_key_len: %s takes %u bytes, got %u", sadb_auth_name(sa->auth_alg), akey,
		     sa->auth_key_len);
	if (sa->salt_len != salt)
		FAIL("salt_len: the transform takes a %u-byte salt, got %u", salt, sa->salt_len);
	if (sa->icv_len && sa->icv_len != want_icv)
		FAIL("icv_len: the transform's ICV is %u bytes, got %u", want_icv, sa->icv_len);
	return 0;
}

int sadb_sa_validate(const struct sadb_sa *sa, char *msg, size_t len)
{
	int r;

	if (!sa)
		FAIL("sa: NULL");
	if (sa->spi < 256)
		FAIL("spi: %u is reserved (0-255)", sa->spi);
	if (sa->proto != SADB_PROTO_ESP && sa->proto != SADB_PROTO_AH)
		FAIL("proto: %u is neither ESP (50) nor AH (51)", sa->proto);
	if (sa->mode != SADB_MODE_TRANSPORT && sa->mode != SADB_MODE_TUNNEL)
		FAIL("mode: %u is neither transport (1) nor tunnel (2)", sa->mode);
	if (sa->dir != SADB_DIR_IN && sa->dir != SADB_DIR_OUT)
		FAIL("dir: %u is neither in (1) nor out (2)", sa->dir);
	if (sa->state > SADB_STATE_DEAD)
		FAIL("state: %u is not a state", sa->state);
	if (sa->dst.family != AF_INET && sa->dst.family != AF_INET6)
		FAIL("dst: family %u is neither IPv4 nor IPv6", sa->dst.family);
	if (sa->src.family != 0 && sa->src.family != sa->dst.family)
		FAIL("src: family differs from dst's");
	if (sa->src.family == 0 && sa->state != SADB_STATE_LARVAL)
		FAIL("src: missing");
	if (sa->flags & ~(uint32_t)0x7ff)
		FAIL("flags: unknown bits 0x%x", sa->flags & ~(uint32_t)0x7ff);
	if ((sa->flags & SADB_SAF_KEY_MOBILE) && (!(sa->flags & SADB_SAF_MOBILE) || !sa->ike_id))
		FAIL("flags: SADB_SAF_KEY_MOBILE is for a mobile node's IKE-keyed SA only");
	if (sa->flags & SADB_SAF_MOBILE) {
		/* the home address is the selector's single address on the mobile node's side */
		const struct sadb_addr *hoa = sa->dir == SADB_DIR_IN ? &sa->sel.src : &sa->sel.dst;
		uint8_t plen = sa->dir == SADB_DIR_IN ? sa->sel.src_plen : sa->sel.dst_plen;
		/* its tunnel's outer header is IPv4 while the node has an IPv4 care-of address (DSMIPv6,
		 * RFC 5555); its signalling is always IPv6 */
		bool outer_ok = sa->dst.family == AF_INET6 || (sa->mode == SADB_MODE_TUNNEL && sa->dst.family == AF_INET);
		if (!outer_ok || hoa->family != AF_INET6 || plen != 128)
			FAIL("flags: a mobile node's SA (SADB_SAF_MOBILE) is IPv6 (a tunnel's endpoints may be "
			     "IPv4) with the home address as the selector's %s (a /128)",
			     sa->dir == SADB_DIR_IN ? "source" : "destination");
	}
	if (sa->state == SADB_STATE_LARVAL && sa->enc_alg == SADB_ENC_NONE && sa->auth_alg == SADB_AUTH_NONE)
		goto skip_alg; /* a reserved SPI has no keys yet */
	r = sa_alg_validate(sa, msg, len);
	if (r)
		return r;
skip_alg:
	if (sa->replay_window > SADB_REPLAY_MAX)
		FAIL("replay_window: %u exceeds %u", sa->replay_window, SADB_REPLAY_MAX);
	if ((sa->flags & SADB_SAF_NO_REPLAY) && sa->replay_window)
		FAIL("replay_window: must be 0 with SADB_SAF_NO_REPLAY");
	if ((sa->flags & SADB_SAF_DF_CLEAR) && (sa->flags & SADB_SAF_DF_SET))
		FAIL("flags: SADB_SAF_DF_CLEAR and SADB_SAF_DF_SET exclude each other");
	if ((sa->encap_sport == 0) != (sa->encap_dport == 0))
		FAIL("encap: NAT-T needs both ports (got %u/%u)", sa->encap_sport, sa->encap_dport);
	if (sa->encap_sport && sa->proto != SADB_PROTO_ESP)
		FAIL("encap: UDP encapsulation is for ESP only");
	if (sa->dscp > 63 && sa->dscp != 0xff)
		FAIL("dscp: %u is not a DSCP (0-63, 0xff = copy)", sa->dscp);
	if (sa->soft.bytes && sa->hard.bytes && sa->soft.bytes > sa->hard.bytes)
		FAIL("soft.bytes: soft limit above hard limit");
	if (sa->soft.packets && sa->hard.packets && sa->soft.packets > sa->hard.packets)
		FAIL("soft.packets: soft limit above hard limit");
	if (sa->soft.add_seconds && sa->hard.add_seconds && sa->soft.add_seconds > sa->hard.add_seconds)
		FAIL("soft.add_seconds: soft limit above hard limit");
	if (sa->soft.use_seconds && sa->hard.use_seconds && sa->soft.use_seconds > sa->hard.use_seconds)
		FAIL("soft.use_seconds: soft limit above hard limit");
	return sadb__selector_validate(&sa->sel, msg, len);
}

int sadb_policy_validate(const struct sadb_policy *p, char *msg, size_t len)
{
	if (!p)
		FAIL("policy: NULL");
	if (p->dir != SADB_DIR_IN && p->dir != SADB_DIR_OUT && p->dir != SADB_DIR_FWD)
		FAIL("dir: %u is not in (1), out (2) or fwd (3)", p->dir);
	if (p->action != SADB_ACT_PROTECT && p->action != SADB_ACT_BYPASS && p->action != SADB_ACT_DISCARD)
		FAIL("action: %u is not protect (1), bypass (2) or discard (3)", p->action);
	if (p->action == SADB_ACT_PROTECT) {
		if (p->proto != SADB_PROTO_ESP && p->proto != SADB_PROTO_AH)
			FAIL("proto: protect needs ESP (50) or AH (51), got %u", p->proto);
		if (p->mode != SADB_MODE_TRANSPORT && p->mode != SADB_MODE_TUNNEL)
			FAIL("mode: protect needs transport (1) or tunnel (2), got %u", p->mode);
		if (p->mode == SADB_MODE_TUNNEL) {
			if (p->tun_src.family != AF_INET && p->tun_src.family != AF_INET6)
				FAIL("tun_src: tunnel mode needs outer endpoints");
			if (p->tun_dst.family != p->tun_src.family)
				FAIL("tun_dst: family differs from tun_src's");
		}
	}
	return sadb__selector_validate(&p->sel, msg, len);
}

bool sadb_stderr_is_journal(void)
{
	static int journal = -1;

	if (journal < 0) {
		const char *e = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;

		journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
			  fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			  (unsigned long long)st.st_ino == ino;
	}
	return journal;
}
