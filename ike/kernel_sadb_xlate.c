/* ike/kernel_sadb_xlate.c: the lowest layer of xipsec-iked's kernel-ipsec backend: the translations
 * between charon's view of IPsec state and the SADB's (strongSwan algorithm identifiers and key
 * layouts, hosts, traffic selectors, charon's times, the sequence-number soft limit) and the
 * process-wide settings and counters the daemon sets and reads, whether an address is in a prefix.
 * The backend's other files call it; it calls none of them. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ike/kernel_sadb_int.h"

uint64_t ks_seq_soft_override;
struct kernel_sadb_stats ks_stats;
mutex_t *ks_stats_mutex;

void kernel_sadb_set_seq_soft(uint64_t seq)
{
	ks_seq_soft_override = seq;
}

uint64_t kernel_sadb_seq_soft_limit(bool esn, uint64_t override)
{
	if (override)
		return override;
	/* 2^24 numbers before the end of a 32-bit space, and the same proportion (2^56) of a 64-bit one:
	 * far more than a rekey needs at any packet rate the dataplane reaches */
	return esn ? UINT64_MAX - ((UINT64_C(1) << 56) - 1) : UINT32_MAX - ((UINT32_C(1) << 24) - 1);
}

uint64_t kernel_sadb_age_ms(const timeval_t *now, const timeval_t *added)
{
	int64_t ms = ((int64_t)now->tv_sec - added->tv_sec) * 1000 +
		     ((int64_t)now->tv_usec - added->tv_usec) / 1000;

	/* a negative age read as unsigned would be past every lifetime: the SA would die at birth */
	return ms < 0 ? 0 : (uint64_t)ms;
}

int kernel_sadb_parse_seq_soft(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

void kernel_sadb_get_stats(struct kernel_sadb_stats *out)
{
	if (ks_stats_mutex)
		ks_stats_mutex->lock(ks_stats_mutex);
	*out = ks_stats;
	if (ks_stats_mutex)
		ks_stats_mutex->unlock(ks_stats_mutex);
}

bool ks_in_prefix(const uint8_t a[16], const struct sadb_addr *p, unsigned plen)
{
	for (unsigned bit = 0; bit < plen && bit < 128; bit++) {
		uint8_t m = (uint8_t)(0x80 >> (bit % 8));

		if ((a[bit / 8] & m) != (p->a.b[bit / 8] & m))
			return false;
	}
	return true;
}

int kernel_sadb_host2addr(host_t *host, struct sadb_addr *out)
{
	chunk_t a;

	memset(out, 0, sizeof(*out));
	if (!host)
		return 0;
	a = host->get_address(host);
	switch (host->get_family(host)) {
	case AF_INET:
		if (a.len != 4)
			return -EINVAL;
		break;
	case AF_INET6:
		if (a.len != 16)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	out->family = host->get_family(host);
	memcpy(out->a.b, a.ptr, a.len);
	return 0;
}

/* One side of a traffic selector as a prefix. strongSwan selectors are address ranges; the SADB holds
 * prefixes, so a range that is not exactly one subnet is refused rather than silently widened. */
static int ts_side(traffic_selector_t *ts, struct sadb_addr *addr, uint8_t *plen)
{
	host_t *net = NULL;
	uint8_t mask = 0;
	int rc;

	if (!ts->to_subnet(ts, &net, &mask)) {
		DESTROY_IF(net);
		DBG1(DBG_KNL, "xipsec: traffic selector %R is not a subnet; the SADB holds prefixes only", ts);
		return -EINVAL;
	}
	rc = kernel_sadb_host2addr(net, addr);
	net->destroy(net);
	*plen = mask;
	return rc;
}

int kernel_sadb_ts2sel(traffic_selector_t *src, traffic_selector_t *dst, struct sadb_selector *sel)
{
	uint8_t proto;
	int rc;

	memset(sel, 0, sizeof(*sel));
	sel->sport_lo = sel->dport_lo = 0;
	sel->sport_hi = sel->dport_hi = 0xffff;
	if ((rc = ts_side(src, &sel->src, &sel->src_plen)) < 0 ||
	    (rc = ts_side(dst, &sel->dst, &sel->dst_plen)) < 0)
		return rc;
	proto = src->get_protocol(src);
	if (!proto)
		proto = dst->get_protocol(dst);
	sel->proto = proto;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		/* strongSwan carries ICMP type in the high byte and code in the low byte of the from/to
		 * port of the source selector; the SADB wants type in sport and code in dport. */
		uint16_t from = src->get_from_port(src), to = src->get_to_port(src);

		if (from == 0 && to == 0xffff) {
			sel->sport_lo = 0; sel->sport_hi = 0xffff;
			sel->dport_lo = 0; sel->dport_hi = 0xffff;
		} else {
			sel->sport_lo = from >> 8;
			sel->sport_hi = to >> 8;
			sel->dport_lo = from & 0xff;
			sel->dport_hi = to & 0xff;
		}
	} else {
		sel->sport_lo = src->get_from_port(src);
		sel->sport_hi = src->get_to_port(src);
		sel->dport_lo = dst->get_from_port(dst);
		sel->dport_hi = dst->get_to_port(dst);
	}
	return 0;
}

/* Split strongSwan's key material: AEAD and counter-mode keys carry their 4-byte salt/nonce at the
 * end (RFC 4106 / 4543 / 3686 / 7634), exactly as charon derives them. */
static int set_enc_key(struct sadb_sa *sa, uint16_t alg, chunk_t key, unsigned salt_len)
{
	unsigned klen, salt_chk = 0, icv = 0;

	if (key.len < salt_len || key.len - salt_len > SADB_ENC_KEY_MAX)
		return -EINVAL;
	klen = key.len - salt_len;
	sa->enc_alg = alg;
	if (sadb_enc_lengths(alg, klen, &salt_chk, &icv) < 0 || salt_chk != salt_len)
		return -EINVAL;
	sa->enc_key_len = klen;
	sa->salt_len = salt_len;
	memcpy(sa->enc_key, key.ptr, klen);
	memcpy(sa->salt, key.ptr + klen, salt_len);
	return 0;
}

int kernel_sadb_map_enc(uint16_t swan_alg, chunk_t key, struct sadb_sa *sa)
{
	switch (swan_alg) {
	case ENCR_UNDEFINED:
		sa->enc_alg = SADB_ENC_NONE;
		return key.len ? -EINVAL : 0;
	case ENCR_NULL:
		sa->enc_alg = SADB_ENC_NULL;
		return key.len ? -EINVAL : 0;
	case ENCR_AES_CBC:
		return set_enc_key(sa, SADB_ENC_AES_CBC, key, 0);
	case ENCR_AES_CTR:
		return set_enc_key(sa, SADB_ENC_AES_CTR, key, 4);
	case ENCR_AES_GCM_ICV16:
		return set_enc_key(sa, SADB_ENC_AES_GCM16, key, 4);
	case ENCR_NULL_AUTH_AES_GMAC:
		return set_enc_key(sa, SADB_ENC_AES_GMAC, key, 4);
	case ENCR_CHACHA20_POLY1305:
		return set_enc_key(sa, SADB_ENC_CHACHA20_POLY1305, key, 4);
	case ENCR_3DES:
		/* charon only gets here when the configuration proposes 3DES: that is the explicit
		 * opt-in the SADB asks for. */
		sa->flags |= SADB_SAF_LEGACY_OK;
		return set_enc_key(sa, SADB_ENC_3DES_CBC, key, 0);
	default:
		/* GCM with 8/12-octet ICVs, CCM, Camellia, DES...: the dataplane has no engine for them. */
		return -EINVAL;
	}
}

int kernel_sadb_map_auth(uint16_t swan_alg, chunk_t key, struct sadb_sa *sa)
{
	unsigned want = 0, icv = 0;
	uint16_t alg;
	unsigned salt = 0;

	switch (swan_alg) {
	case AUTH_UNDEFINED:
		sa->auth_alg = SADB_AUTH_NONE;
		return key.len ? -EINVAL : 0;
	case AUTH_HMAC_MD5_96:       alg = SADB_AUTH_HMAC_MD5_96; sa->flags |= SADB_SAF_LEGACY_OK; break;
	case AUTH_HMAC_SHA1_96:      alg = SADB_AUTH_HMAC_SHA1_96; break;
	case AUTH_HMAC_SHA2_256_128: alg = SADB_AUTH_HMAC_SHA256_128; break;
	case AUTH_HMAC_SHA2_384_192: alg = SADB_AUTH_HMAC_SHA384_192; break;
	case AUTH_HMAC_SHA2_512_256: alg = SADB_AUTH_HMAC_SHA512_256; break;
	case AUTH_AES_128_GMAC:      alg = SADB_AUTH_AES_128_GMAC; salt = 4; break;
	case AUTH_AES_256_GMAC:      alg = SADB_AUTH_AES_256_GMAC; salt = 4; break;
	default:
		return -EINVAL;
	}
	if (sadb_auth_lengths(alg, &want, &icv) < 0 || key.len != want + salt ||
	    want > SADB_AUTH_KEY_MAX)
		return -EINVAL;
	sa->auth_alg = alg;
	sa->auth_key_len = want;
	memcpy(sa->auth_key, key.ptr, want);
	if (salt) {
		/* AH with GMAC: key || salt, the salt goes where the ESP AEAD salt goes. */
		sa->salt_len = salt;
		memcpy(sa->salt, key.ptr + want, salt);
	}
	return 0;
}
