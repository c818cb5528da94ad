/* ike/kernel_sadb.c: xipsec-iked's kernel-ipsec backend, which writes every SA and policy charon
 * negotiates into the xipsec SADB (struct sadb_sa / sadb_policy through libsadb); ike/kernel_sadb*.c
 * hold every translation between charon's view of IPsec state and the SADB, as OpenBSD iked's pfkey.c
 * holds all of iked's SADB I/O. This file owns the backend object (construction, teardown, the methods
 * that need no SADB state), the settings and counters the daemon sets and reads, the translations of
 * strongSwan algorithm identifiers, key layouts, addresses and traffic selectors to SADB fields, and
 * the removal of what an earlier daemon left behind. The SAs and their expiry are in kernel_sadb_sa.c,
 * the policies in kernel_sadb_policy.c; kernel_sadb_int.h is what the three share. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ike/kernel_sadb_int.h"

static struct sadb *ks_pending_db;
uint64_t ks_seq_soft_override;
struct kernel_sadb_stats ks_stats;
mutex_t *ks_stats_mutex;

void kernel_sadb_set_db(struct sadb *db)
{
	ks_pending_db = db;
}

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

/* ---- translation helpers ---- */

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

/* ---- kernel_ipsec_t: the object ---- */

METHOD(kernel_ipsec_t, get_features, kernel_feature_t, private_kernel_sadb_t *this)
{
	/* TFC padding is implemented by the ESP engine (sadb_sa.tfc_pad). ESN and anti-replay windows up
	 * to SADB_REPLAY_MAX packets are taken as charon configures them and checked in add_sa
	 * (kernel_sadb_sa.c). The
	 * kernel_feature_t set has no bit for either. */
	return KERNEL_ESP_V3_TFC;
}

METHOD(kernel_ipsec_t, get_cpi, status_t, private_kernel_sadb_t *this, host_t *src, host_t *dst,
       uint16_t *cpi)
{
	DBG1(DBG_KNL, "xipsec: IPComp is not supported by the xipsec dataplane (no CPI allocated)");
	return NOT_SUPPORTED;
}

METHOD(kernel_ipsec_t, bypass_socket, bool, private_kernel_sadb_t *this, int fd, int family)
{
	/* IKE never meets our ESP path: the dataplane's XDP program hands UDP 500 and non-ESP 4500 to
	 * the kernel (doc/architecture.md rule 8), so no per-socket bypass policy is needed. */
	return TRUE;
}

METHOD(kernel_ipsec_t, enable_udp_decap, bool, private_kernel_sadb_t *this, int fd, int family,
       uint16_t port)
{
	/* ESP-in-UDP (non-zero marker) on this port is taken by the dataplane before the kernel sees it;
	 * IKE on it keeps its zero marker, which charon's socket strips. Nothing to set on the socket. */
	DBG2(DBG_KNL, "xipsec: ESP-in-UDP on port %u is decapsulated by the dataplane", port);
	return TRUE;
}

METHOD(kernel_ipsec_t, destroy, void, private_kernel_sadb_t *this)
{
	ks_jobs_gate_lock(); /* a deferred job running now finishes first; later ones find no backend */
	this->mutex->lock(this->mutex);
	this->stopping = TRUE;
	ks_promotes_finish(this);
	ks_lingers_finish(this);
	this->mutex->unlock(this->mutex);
	ks_jobs_gate_unlock();
	/* SAs and policies stay in the SADB only as long as charon keeps them: charon deletes them
	 * before it destroys the backend; anything left is ours and is removed. */
	this->public.flush_sas(&this->public);
	this->public.flush_policies(&this->public);
	ks_sa_tables_destroy(this);
	this->pols->destroy(this->pols);
	this->promotes->destroy(this->promotes);
	this->lingers->destroy(this->lingers);
	sadb_close(this->db);
	this->mutex->destroy(this->mutex);
	free(this);
}

/* SAs and policies a previous xipsec-iked on this SADB negotiated and could not remove (it was killed):
 * no charon knows them any more, so nobody would rekey, expire or delete them. SPIs it reserved for
 * exchanges that never completed (LARVAL SAs) would stay reserved forever the same way. One IKE daemon
 * owns the IKE part of an SADB (iked.c locks the SADB file); manual entries (ike_id 0) are never
 * touched. */
void kernel_sadb_remove_orphans(struct sadb *db, unsigned *n_sa, unsigned *n_pol, unsigned *n_larval)
{
	struct sadb_policy p;
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	unsigned nsa = 0, npol = 0, nlarval = 0;

	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		if (sa.state == SADB_STATE_LARVAL) {
			if (sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst) == 0)
				nlarval++;
		} else if (sa.ike_id && sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst) == 0) {
			nsa++;
		}
	}
	memwipe(&sa, sizeof(sa));
	cur = 0;
	while (sadb_policy_next(db, &cur, &p) == 0) {
		if (p.ike_id && sadb_policy_delete(db, p.id) == 0)
			npol++;
	}
	if (nsa || npol)
		DBG1(DBG_KNL, "xipsec: removed %u SAs and %u policies left in the SADB by an earlier IKE daemon",
		     nsa, npol);
	if (nlarval)
		DBG1(DBG_KNL, "xipsec: released %u SPIs reserved (larval SAs) by an earlier IKE daemon",
		     nlarval);
	if (n_sa)
		*n_sa = nsa;
	if (n_pol)
		*n_pol = npol;
	if (n_larval)
		*n_larval = nlarval;
}

kernel_ipsec_t *kernel_sadb_create(void)
{
	private_kernel_sadb_t *this;

	if (!ks_pending_db) {
		DBG1(DBG_KNL, "xipsec: no SADB opened for the kernel-ipsec backend");
		return NULL;
	}
	if (!ks_stats_mutex)
		ks_stats_mutex = mutex_create(MUTEX_TYPE_DEFAULT);
	INIT(this,
		.public = {
			.get_features = _get_features,
			.get_cpi = _get_cpi,
			.bypass_socket = _bypass_socket,
			.enable_udp_decap = _enable_udp_decap,
			.destroy = _destroy,
		},
		.db = ks_pending_db,
		.mutex = mutex_create(MUTEX_TYPE_RECURSIVE),
		.pols = ks_pol_table_create(),
		.promotes = linked_list_create(),
		.lingers = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 1024),
		.spi_min = lib->settings->get_int(lib->settings, "%s.spi_min", KERNEL_SPI_MIN, lib->ns),
		.spi_max = lib->settings->get_int(lib->settings, "%s.spi_max", KERNEL_SPI_MAX, lib->ns),
		.sync_ms = lib->settings->get_int(lib->settings, "%s.dataplane_sync_ms", 30, lib->ns),
		.linger_ms = lib->settings->get_int(lib->settings, "%s.inbound_delete_delay_ms", 1000,
						    lib->ns),
	);
	ks_sa_tables_create(this);
	ks_sa_methods(&this->public);
	ks_policy_methods(&this->public);
	ks_pending_db = NULL;
	if ((int)this->linger_ms < 0 || this->linger_ms > 60000) {
		DBG1(DBG_KNL, "xipsec: inbound_delete_delay_ms %d out of range 0-60000, using 1000",
		     (int)this->linger_ms);
		this->linger_ms = 1000;
	}
	if (this->spi_min > this->spi_max) {
		uint32_t tmp = this->spi_min;

		this->spi_min = this->spi_max;
		this->spi_max = tmp;
	}
	if (this->spi_min < 256)
		this->spi_min = 256;
	kernel_sadb_remove_orphans(this->db, NULL, NULL, NULL);
	ks_expiry_start(this);
	DBG1(DBG_KNL, "xipsec: kernel-ipsec backend writes the SADB (SPIs %.8x-%.8x)", this->spi_min,
	     this->spi_max);
	if (ks_seq_soft_override)
		DBG1(DBG_KNL, "xipsec: XIPSEC_SEQ_SOFT: outbound SAs are rekeyed at sequence number %llu",
		     (unsigned long long)ks_seq_soft_override);
	return &this->public;
}
