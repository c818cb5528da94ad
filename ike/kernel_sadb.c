/* ike/kernel_sadb.c: xipsec-iked's kernel-ipsec backend. This one file owns every translation between
 * charon's view of IPsec state (kernel_ipsec_t calls, strongSwan algorithm identifiers and key layouts,
 * traffic selectors, lifetimes) and the xipsec SADB (struct sadb_sa / sadb_policy through libsadb), as
 * OpenBSD iked's pfkey.c owns all of iked's SADB I/O.
 *
 * No kernel holds our SAs, so nothing would ever tell charon that an SA expired: a periodic job here
 * compares each SA's age and the dataplane's byte/packet counters (sadb_runtime) with its soft and hard
 * limits and raises charon->kernel->expire() itself. The same job asks for a new outbound SA before its
 * sequence space runs out (RFC 4303 section 3.3.3): the ESP engine stops at the wrap, which would
 * otherwise only drop packets until the hard lifetime. Policies are reference counted here because charon
 * installs the same policy once per CHILD_SA (rekeying makes two exist at once, make-before-break) while
 * the SADB holds one entry per direction and selector. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <daemon.h>
#include <collections/linked_list.h>
#include <threading/mutex.h>
#include <processing/jobs/callback_job.h>

#include "ike/kernel_sadb.h"

/* How often lifetimes are checked: the granularity of soft/hard expiry in time. */
#define KS_EXPIRY_INTERVAL_MS 250

/* One SA this backend installed, tracked for expiry, queries and our own flush. */
struct ks_sa {
	uint32_t spi;
	uint8_t proto;
	bool inbound;
	struct sadb_addr dst;
	uint32_t reqid;
	uint32_t slot;
	uint64_t instance;
	struct sadb_lifetime soft, hard;
	uint64_t seq_soft;          /* outbound: soft expiry once seq_reserved reaches it; 0 = none */
	timeval_t added;            /* monotonic */
	bool soft_raised, hard_raised;
};

/* One charon user of a policy (there may be several for one dir+selector). */
struct ks_pol_user {
	uint32_t reqid;
	uint8_t action, proto, mode;
	uint32_t priority;
	struct sadb_addr tun_src, tun_dst;
	uint32_t ike_id;
};

/* Users of one policy: one per CHILD_SA that installed it. IKEv1 keeps a rekeyed CHILD_SA (and its
 * policies) until its hard lifetime, so with a short rekey time and a long lifetime many coexist: the
 * array grows; the bound only stops a runaway. */
#define KS_POL_USERS_MAX 1024
struct ks_pol {
	uint8_t dir;
	struct sadb_selector sel;
	uint32_t sadb_id;           /* the installed SADB policy */
	unsigned n_users, cap_users;
	struct ks_pol_user *users;
	unsigned installed_user;    /* index of the user whose entry is in the SADB */
};

static void pol_free(struct ks_pol *p)
{
	free(p->users);
	free(p);
}

/* Room for one more user; false at the bound or without memory. */
static bool pol_reserve(struct ks_pol *p)
{
	struct ks_pol_user *u;
	unsigned cap;

	if (p->n_users < p->cap_users)
		return TRUE;
	if (p->n_users >= KS_POL_USERS_MAX)
		return FALSE;
	cap = p->cap_users ? 2 * p->cap_users : 4;
	if (cap > KS_POL_USERS_MAX)
		cap = KS_POL_USERS_MAX;
	u = realloc(p->users, cap * sizeof(*u));
	if (!u)
		return FALSE;
	p->users = u;
	p->cap_users = cap;
	return TRUE;
}

typedef struct private_kernel_sadb_t private_kernel_sadb_t;
struct private_kernel_sadb_t {
	kernel_ipsec_t public;
	struct sadb *db;
	mutex_t *mutex;
	linked_list_t *sas;         /* struct ks_sa */
	linked_list_t *pols;        /* struct ks_pol */
	linked_list_t *promotes;    /* struct ks_promote, pending outbound switches */
	uint32_t spi_min, spi_max;
	unsigned sync_ms;           /* how long the dataplane may take to load a new SA */
	bool stopping;
};

static struct sadb *ks_pending_db;
static uint64_t ks_seq_soft_override;
static struct kernel_sadb_stats ks_stats;
static mutex_t *ks_stats_mutex;

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

#define KS_STAT_INC(field) do { \
	if (ks_stats_mutex) ks_stats_mutex->lock(ks_stats_mutex); \
	ks_stats.field++; \
	if (ks_stats_mutex) ks_stats_mutex->unlock(ks_stats_mutex); } while (0)

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

static uint8_t map_proto(uint8_t proto)
{
	return proto == IPPROTO_AH ? SADB_PROTO_AH : SADB_PROTO_ESP;
}

static uint32_t current_ike_id(void)
{
	ike_sa_t *ike_sa = charon->bus->get_sa(charon->bus);

	return ike_sa ? ike_sa->get_unique_id(ike_sa) : 0;
}

static bool ks_sa_matches(struct ks_sa *t, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	return t->spi == spi && t->proto == proto && sadb_addr_eq(&t->dst, dst);
}

static struct ks_sa *find_sa(private_kernel_sadb_t *this, uint32_t spi, uint8_t proto,
			     const struct sadb_addr *dst, bool remove)
{
	enumerator_t *e = this->sas->create_enumerator(this->sas);
	struct ks_sa *t, *found = NULL;

	while (e->enumerate(e, &t)) {
		if (ks_sa_matches(t, spi, proto, dst)) {
			found = t;
			if (remove)
				this->sas->remove_at(this->sas, e);
			break;
		}
	}
	e->destroy(e);
	return found;
}

/* Whether an inbound SA of this reqid is installed already: a new one then replaces it (rekey). */
static bool has_reqid(private_kernel_sadb_t *this, uint32_t reqid, bool inbound)
{
	enumerator_t *e = this->sas->create_enumerator(this->sas);
	struct ks_sa *t;
	bool found = FALSE;

	while (!found && e->enumerate(e, &t))
		found = t->inbound == inbound && reqid && t->reqid == reqid;
	e->destroy(e);
	return found;
}

/* A deferred switch of outbound traffic to a new SA (IKEv1 rekeys, see add_sa), with the deletions of
 * the outbound SAs it replaces, which charon asks for at once and which wait for the switch. */
#define KS_PROMOTE_DEL_MAX 8
struct ks_promote {
	private_kernel_sadb_t *this;    /* NULL once the backend is gone */
	uint32_t spi, reqid;
	uint8_t proto;
	struct sadb_addr dst;
	unsigned n_del;
	struct { uint32_t spi; uint8_t proto; struct sadb_addr dst; } del[KS_PROMOTE_DEL_MAX];
};

static void promote_do(struct ks_promote *p)
{
	private_kernel_sadb_t *this = p->this;
	struct sadb_sa sa;
	unsigned i;

	memset(&sa, 0, sizeof(sa));
	if (this && !this->stopping && sadb_sa_lookup(this->db, p->spi, p->proto, &p->dst, &sa, NULL) == 0 &&
	    sa.state == SADB_STATE_DYING) {
		sa.state = SADB_STATE_MATURE;
		if (sadb_sa_update(this->db, &sa) < 0)
			DBG1(DBG_KNL, "xipsec: switching outbound traffic to SA %.8x failed: %s", p->spi,
			     sadb_errmsg(this->db));
		else
			DBG1(DBG_KNL, "xipsec: outbound traffic switched to SA %.8x", p->spi);
	}
	memwipe(&sa, sizeof(sa));
	for (i = 0; this && i < p->n_del; i++) {
		free(find_sa(this, p->del[i].spi, p->del[i].proto, &p->del[i].dst, TRUE));
		if (sadb_sa_delete(this->db, p->del[i].spi, p->del[i].proto, &p->del[i].dst) == 0) {
			KS_STAT_INC(sa_deleted);
			DBG1(DBG_KNL, "xipsec: deleted SA %.8x", p->del[i].spi);
		}
	}
	p->n_del = 0;
}

static job_requeue_t promote_sa(struct ks_promote *p)
{
	private_kernel_sadb_t *this = p->this;

	if (this) {
		this->mutex->lock(this->mutex);
		promote_do(p);
		this->mutex->unlock(this->mutex);
	}
	return JOB_REQUEUE_NONE;
}

/* Runs when the job is destroyed, whether it ran or not. */
static void promote_free(struct ks_promote *p)
{
	private_kernel_sadb_t *this = p->this;

	if (this) {
		this->mutex->lock(this->mutex);
		this->promotes->remove(this->promotes, p, NULL);
		this->mutex->unlock(this->mutex);
	}
	free(p);
}

/* The pending switch that an outbound SA of reqid (other than spi) must wait for, or NULL. */
static struct ks_promote *pending_promote(private_kernel_sadb_t *this, uint32_t reqid, uint32_t spi)
{
	enumerator_t *e = this->promotes->create_enumerator(this->promotes);
	struct ks_promote *p, *found = NULL;

	while (!found && e->enumerate(e, &p))
		if (p->reqid == reqid && p->spi != spi && p->n_del < KS_PROMOTE_DEL_MAX)
			found = p;
	e->destroy(e);
	return found;
}

/* ---- kernel_ipsec_t ---- */

METHOD(kernel_ipsec_t, get_features, kernel_feature_t, private_kernel_sadb_t *this)
{
	/* TFC padding is implemented by the ESP engine (sadb_sa.tfc_pad). ESN and anti-replay windows up
	 * to SADB_REPLAY_MAX packets are taken as charon configures them and checked in add_sa. The
	 * kernel_feature_t set has no bit for either. */
	return KERNEL_ESP_V3_TFC;
}

METHOD(kernel_ipsec_t, get_spi, status_t, private_kernel_sadb_t *this, host_t *src, host_t *dst,
       uint8_t protocol, uint32_t *spi)
{
	struct sadb_addr s, d;
	uint32_t v = 0;
	int rc;

	if (kernel_sadb_host2addr(src, &s) < 0 || kernel_sadb_host2addr(dst, &d) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	rc = sadb_spi_alloc(this->db, map_proto(protocol), &s, &d, this->spi_min, this->spi_max, &v);
	this->mutex->unlock(this->mutex);
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: allocating SPI for %H failed: %s", dst, sadb_errmsg(this->db));
		return FAILED;
	}
	KS_STAT_INC(spi_allocated);
	/* charon keeps SPIs in network byte order, the SADB in host order */
	*spi = htonl(v);
	DBG2(DBG_KNL, "xipsec: allocated SPI %.8x", v);
	return SUCCESS;
}

METHOD(kernel_ipsec_t, get_cpi, status_t, private_kernel_sadb_t *this, host_t *src, host_t *dst,
       uint16_t *cpi)
{
	DBG1(DBG_KNL, "xipsec: IPComp is not supported by the xipsec dataplane (no CPI allocated)");
	return NOT_SUPPORTED;
}

/* Fill an SADB record from charon's add_sa data. Returns 0 or -EINVAL with a log line. */
static int build_sa(kernel_ipsec_sa_id_t *id, kernel_ipsec_add_sa_t *data, struct sadb_sa *sa)
{
	traffic_selector_t *src_ts = NULL, *dst_ts = NULL;

	memset(sa, 0, sizeof(*sa));
	sa->spi = ntohl(id->spi);
	sa->proto = map_proto(id->proto);
	sa->dir = data->inbound ? SADB_DIR_IN : SADB_DIR_OUT;
	sa->state = SADB_STATE_MATURE;
	sa->reqid = data->reqid;
	switch (data->mode) {
	case MODE_TUNNEL:    sa->mode = SADB_MODE_TUNNEL; break;
	case MODE_TRANSPORT: sa->mode = SADB_MODE_TRANSPORT; break;
	default:
		DBG1(DBG_KNL, "xipsec: IPsec mode %N is not supported", ipsec_mode_names, data->mode);
		return -EINVAL;
	}
	if (data->ipcomp != IPCOMP_NONE) {
		DBG1(DBG_KNL, "xipsec: IPComp is not supported");
		return -EINVAL;
	}
	if (data->label) {
		DBG1(DBG_KNL, "xipsec: security labels are not supported");
		return -EINVAL;
	}
	if (kernel_sadb_host2addr(id->src, &sa->src) < 0 || kernel_sadb_host2addr(id->dst, &sa->dst) < 0)
		return -EINVAL;
	if (data->encap) {
		sa->encap_sport = id->src->get_port(id->src);
		sa->encap_dport = id->dst->get_port(id->dst);
	}
	if (kernel_sadb_map_enc(data->enc_alg, data->enc_key, sa) < 0) {
		DBG1(DBG_KNL, "xipsec: encryption %N with a %zu-byte key is not supported by the dataplane",
		     encryption_algorithm_names, data->enc_alg, data->enc_key.len);
		return -EINVAL;
	}
	if (kernel_sadb_map_auth(data->int_alg, data->int_key, sa) < 0) {
		DBG1(DBG_KNL, "xipsec: integrity %N with a %zu-byte key is not supported by the dataplane",
		     integrity_algorithm_names, data->int_alg, data->int_key.len);
		return -EINVAL;
	}
	if (data->esn)
		sa->flags |= SADB_SAF_ESN;
	if (data->replay_window > SADB_REPLAY_MAX) {
		DBG1(DBG_KNL, "xipsec: replay window %u exceeds the SADB's maximum of %u packets",
		     data->replay_window, SADB_REPLAY_MAX);
		return -EINVAL;
	}
	sa->replay_window = data->replay_window;
	if (!data->replay_window)
		sa->flags |= SADB_SAF_NO_REPLAY;
	sa->tfc_pad = data->tfc > 0xffff ? 0xffff : data->tfc;
	if (!data->copy_ecn)
		sa->flags |= SADB_SAF_NO_ECN;
	if (!data->copy_df)
		sa->flags |= SADB_SAF_DF_CLEAR;
	switch (data->copy_dscp) {
	case DSCP_COPY_YES:      sa->dscp = 0xff; sa->flags |= SADB_SAF_DECAP_DSCP; break;
	case DSCP_COPY_IN_ONLY:  sa->dscp = 0;    sa->flags |= SADB_SAF_DECAP_DSCP; break;
	case DSCP_COPY_OUT_ONLY: sa->dscp = 0xff; break;
	case DSCP_COPY_NO:       sa->dscp = 0;    break;
	}
	if (data->lifetime) {
		sa->soft.add_seconds = data->lifetime->time.rekey;
		sa->soft.bytes = data->lifetime->bytes.rekey;
		sa->soft.packets = data->lifetime->packets.rekey;
		sa->hard.add_seconds = data->lifetime->time.life;
		sa->hard.bytes = data->lifetime->bytes.life;
		sa->hard.packets = data->lifetime->packets.life;
	}
	/* The SA's own selector is what the dataplane checks after decapsulation. With one selector
	 * per side it is exact; with several, the policies carry the detail and the SA accepts any. */
	if (data->src_ts && data->dst_ts && data->src_ts->get_count(data->src_ts) == 1 &&
	    data->dst_ts->get_count(data->dst_ts) == 1) {
		data->src_ts->get_first(data->src_ts, (void **)&src_ts);
		data->dst_ts->get_first(data->dst_ts, (void **)&dst_ts);
		if (kernel_sadb_ts2sel(src_ts, dst_ts, &sa->sel) < 0)
			return -EINVAL;
	} else {
		sa->sel.sport_hi = sa->sel.dport_hi = 0xffff;
	}
	sa->ike_id = current_ike_id();
	return 0;
}

METHOD(kernel_ipsec_t, add_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_add_sa_t *data)
{
	struct sadb_sa sa, chk;
	struct ks_sa *t;
	struct ks_promote *promote = NULL;
	ike_sa_t *ike_sa;
	uint32_t slot = 0, spi, reqid;
	bool rekey, defer;
	int rc;

	if (build_sa(id, data, &sa) < 0) {
		memwipe(&sa, sizeof(sa));
		return FAILED;
	}
	this->mutex->lock(this->mutex);
	/* Rekeying, make-before-break across two dataplanes that follow their SADBs on their own
	 * schedule (xipsecd: every 10 ms). A new inbound SA waits for our dataplane (below) before charon
	 * tells the peer, who may switch to it within a round trip. IKEv1 needs more: its responder
	 * installs its new inbound SA only on the initiator's third Quick Mode message, sent right after
	 * this call, so the initiator's new outbound SA enters the SADB as DYING (the dataplane keeps
	 * sending on the old MATURE one, or on this one if no other is left) and becomes MATURE once the
	 * peer's dataplane has had time to load its side. IKEv2 responders install inbound before they
	 * answer, so IKEv2 needs no deferral. */
	rekey = data->inbound && has_reqid(this, sa.reqid, TRUE);
	ike_sa = charon->bus->get_sa(charon->bus);
	defer = !data->inbound && this->sync_ms && ike_sa && ike_sa->get_version(ike_sa) == IKEV1 &&
		data->initiator && has_reqid(this, sa.reqid, FALSE);
	if (defer)
		sa.state = SADB_STATE_DYING;
	if (data->update)
		rc = sadb_sa_update(this->db, &sa);   /* completes the LARVAL SA get_spi reserved */
	else
		rc = sadb_sa_add(this->db, &sa, &slot);
	if (rc == -ENOENT && data->update)
		rc = sadb_sa_add(this->db, &sa, &slot);
	if (rc == 0)
		rc = sadb_sa_lookup(this->db, sa.spi, sa.proto, &sa.dst, &chk, &slot);
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: adding SAD entry with SPI %.8x failed: %s (%s)", sa.spi,
		     sadb_errmsg(this->db), strerror(-rc));
		this->mutex->unlock(this->mutex);
		memwipe(&sa, sizeof(sa));
		memwipe(&chk, sizeof(chk));
		return FAILED;
	}
	t = find_sa(this, sa.spi, sa.proto, &sa.dst, TRUE);
	free(t);
	INIT(t,
		.spi = sa.spi,
		.proto = sa.proto,
		.inbound = data->inbound,
		.dst = sa.dst,
		.reqid = sa.reqid,
		.slot = slot,
		.instance = chk.instance,
		.soft = sa.soft,
		.hard = sa.hard,
		.seq_soft = data->inbound ? 0 :
			kernel_sadb_seq_soft_limit(sa.flags & SADB_SAF_ESN, ks_seq_soft_override),
	);
	time_monotonic(&t->added);
	this->sas->insert_last(this->sas, t);
	/* t belongs to the list once the lock is released: keep what we still need */
	spi = t->spi;
	reqid = t->reqid;
	if (defer) {
		INIT(promote, .this = this, .spi = t->spi, .reqid = t->reqid, .proto = t->proto, .dst = t->dst);
		this->promotes->insert_last(this->promotes, promote);
	}
	this->mutex->unlock(this->mutex);
	memwipe(&sa, sizeof(sa));
	memwipe(&chk, sizeof(chk));
	KS_STAT_INC(sa_added);
	if (promote)
		lib->scheduler->schedule_job_ms(lib->scheduler,
			(job_t *)callback_job_create((callback_job_cb_t)promote_sa, promote,
						     (callback_job_cleanup_t)promote_free, NULL),
			3 * this->sync_ms);
	if (rekey && this->sync_ms) {
		/* Our dataplane must know the new inbound SPI before the peer hears of it (above). */
		usleep(this->sync_ms * 1000);
	}
	DBG1(DBG_KNL, "xipsec: installed %s SA %.8x reqid %u%s", data->inbound ? "inbound" : "outbound",
	     spi, reqid, promote ? " (used once the peer had time to install its side)" : "");
	return SUCCESS;
}

METHOD(kernel_ipsec_t, update_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_update_sa_t *data)
{
	struct sadb_addr dst, nsrc, ndst;
	uint32_t spi = ntohl(id->spi);
	uint8_t proto = map_proto(id->proto);
	uint16_t sport = 0, dport = 0;
	struct ks_sa *t;
	int rc = 0;

	if (kernel_sadb_host2addr(id->dst, &dst) < 0 || kernel_sadb_host2addr(data->new_src, &nsrc) < 0 ||
	    kernel_sadb_host2addr(data->new_dst, &ndst) < 0)
		return FAILED;
	if (data->new_encap) {
		sport = data->new_src->get_port(data->new_src);
		dport = data->new_dst->get_port(data->new_dst);
	}
	this->mutex->lock(this->mutex);
	rc = sadb_sa_migrate(this->db, spi, proto, &dst, &nsrc, &ndst, sport, dport);
	if (rc == 0 && data->new_reqid) {
		struct sadb_sa sa;

		rc = sadb_sa_lookup(this->db, spi, proto, &ndst, &sa, NULL);
		if (rc == 0) {
			sa.reqid = data->new_reqid;
			rc = sadb_sa_update(this->db, &sa);
		}
		memwipe(&sa, sizeof(sa));
	}
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: updating SA %.8x to %H..%H failed: %s", spi, data->new_src,
		     data->new_dst, sadb_errmsg(this->db));
		this->mutex->unlock(this->mutex);
		return FAILED;
	}
	t = find_sa(this, spi, proto, &dst, FALSE);
	if (t) {
		struct sadb_sa sa;
		uint32_t slot;

		t->dst = ndst;
		if (data->new_reqid)
			t->reqid = data->new_reqid;
		if (sadb_sa_lookup(this->db, spi, proto, &ndst, &sa, &slot) == 0) {
			t->slot = slot;
			t->instance = sa.instance;
		}
		memwipe(&sa, sizeof(sa));
	}
	this->mutex->unlock(this->mutex);
	KS_STAT_INC(sa_updated);
	DBG1(DBG_KNL, "xipsec: SA %.8x now %H..%H%s", spi, data->new_src, data->new_dst,
	     data->new_encap ? " (UDP-encapsulated)" : "");
	return SUCCESS;
}

/* Runtime counters of a tracked SA, or NULL when the dataplane has not (yet) attached state to this
 * instance of the SA. Called with the mutex held. */
static const struct sadb_runtime *sa_runtime(private_kernel_sadb_t *this, struct ks_sa *t)
{
	const struct sadb_runtime *rt = sadb_runtime(this->db, t->slot);

	if (!rt || __atomic_load_n(&rt->instance, __ATOMIC_ACQUIRE) != t->instance)
		return NULL;
	return rt;
}

/* Realtime seconds (SADB) to charon's monotonic clock. */
static time_t real2mono(uint64_t real)
{
	time_t now_real = time(NULL), now_mono = time_monotonic(NULL);

	if (!real)
		return 0;
	if ((uint64_t)now_real < real)
		return now_mono;
	return now_mono - (time_t)((uint64_t)now_real - real);
}

METHOD(kernel_ipsec_t, query_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_query_sa_t *data, uint64_t *bytes, uint64_t *packets, time_t *time_out)
{
	struct sadb_addr dst;
	struct sadb_sa sa;
	const struct sadb_runtime *rt;
	uint32_t slot;
	int rc;

	if (kernel_sadb_host2addr(id->dst, &dst) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	rc = sadb_sa_lookup(this->db, ntohl(id->spi), map_proto(id->proto), &dst, &sa, &slot);
	if (rc < 0) {
		this->mutex->unlock(this->mutex);
		DBG2(DBG_KNL, "xipsec: querying SA %.8x: not found", ntohl(id->spi));
		return NOT_FOUND;
	}
	rt = sadb_runtime(this->db, slot);
	if (rt && __atomic_load_n(&rt->instance, __ATOMIC_ACQUIRE) == sa.instance) {
		if (bytes)
			*bytes = __atomic_load_n(&rt->bytes, __ATOMIC_RELAXED);
		if (packets)
			*packets = __atomic_load_n(&rt->packets, __ATOMIC_RELAXED);
		if (time_out)
			*time_out = real2mono(__atomic_load_n(&rt->last_used, __ATOMIC_RELAXED));
	} else {
		if (bytes)
			*bytes = 0;
		if (packets)
			*packets = 0;
		if (time_out)
			*time_out = 0;
	}
	this->mutex->unlock(this->mutex);
	memwipe(&sa, sizeof(sa));
	return SUCCESS;
}

METHOD(kernel_ipsec_t, del_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_del_sa_t *data)
{
	struct sadb_addr dst;
	struct ks_promote *p;
	struct ks_sa *t;
	uint32_t spi = ntohl(id->spi);
	uint8_t proto = map_proto(id->proto);
	int rc;

	if (kernel_sadb_host2addr(id->dst, &dst) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	t = find_sa(this, spi, proto, &dst, FALSE);
	if (t && !t->inbound && (p = pending_promote(this, t->reqid, spi))) {
		/* IKEv1 rekey: the new outbound SA is not in use yet; this one carries the traffic until
		 * the switch, which deletes it */
		p->del[p->n_del].spi = spi;
		p->del[p->n_del].proto = proto;
		p->del[p->n_del].dst = dst;
		p->n_del++;
		this->mutex->unlock(this->mutex);
		DBG1(DBG_KNL, "xipsec: SA %.8x deleted once traffic switched to SA %.8x", spi, p->spi);
		return SUCCESS;
	}
	rc = sadb_sa_delete(this->db, spi, proto, &dst);
	t = find_sa(this, spi, proto, &dst, TRUE);
	free(t);
	this->mutex->unlock(this->mutex);
	if (rc == -ENOENT) {
		DBG2(DBG_KNL, "xipsec: SA %.8x already gone", spi);
		return NOT_FOUND;
	}
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: deleting SA %.8x failed: %s", spi, sadb_errmsg(this->db));
		return FAILED;
	}
	KS_STAT_INC(sa_deleted);
	DBG1(DBG_KNL, "xipsec: deleted SA %.8x", spi);
	return SUCCESS;
}

/* Only what this daemon installed is flushed: the SADB also holds manual SAs and policies of ipsecctl. */
METHOD(kernel_ipsec_t, flush_sas, status_t, private_kernel_sadb_t *this)
{
	struct ks_sa *t;

	this->mutex->lock(this->mutex);
	while (this->sas->remove_first(this->sas, (void **)&t) == SUCCESS) {
		sadb_sa_delete(this->db, t->spi, t->proto, &t->dst);
		free(t);
	}
	this->mutex->unlock(this->mutex);
	return SUCCESS;
}

/* Lower value wins, as in the SADB. Mirrors the ordering charon expects from XFRM: the class first
 * (pass < IPsec < routed/trap < fallback), then more specific selectors before less specific. */
static uint32_t policy_priority(kernel_ipsec_manage_policy_t *data, const struct sadb_selector *sel)
{
	uint32_t prio;

	if (data->manual_prio)
		return data->manual_prio;
	switch (data->prio) {
	case POLICY_PRIORITY_PASS:     prio = 1u << 18; break;
	case POLICY_PRIORITY_DEFAULT:  prio = 2u << 18; break;
	case POLICY_PRIORITY_ROUTED:   prio = 3u << 18; break;
	case POLICY_PRIORITY_FALLBACK: prio = 4u << 18; break;
	default:                       prio = 2u << 18; break;
	}
	prio -= ((uint32_t)sel->src_plen + sel->dst_plen) << 9;
	if (sel->proto)
		prio -= 1u << 8;
	if (sel->sport_lo == sel->sport_hi)
		prio -= 1u << 7;
	if (sel->dport_lo == sel->dport_hi)
		prio -= 1u << 7;
	return prio;
}

static int build_policy_key(kernel_ipsec_policy_id_t *id, uint8_t *dir, struct sadb_selector *sel)
{
	switch (id->dir) {
	case POLICY_IN:  *dir = SADB_DIR_IN; break;
	case POLICY_OUT: *dir = SADB_DIR_OUT; break;
	case POLICY_FWD: *dir = SADB_DIR_FWD; break;
	default: return -EINVAL;
	}
	return kernel_sadb_ts2sel(id->src_ts, id->dst_ts, sel);
}

static int build_user(kernel_ipsec_manage_policy_t *data, const struct sadb_selector *sel,
		      struct ks_pol_user *u)
{
	memset(u, 0, sizeof(*u));
	switch (data->type) {
	case POLICY_IPSEC: u->action = SADB_ACT_PROTECT; break;
	case POLICY_PASS:  u->action = SADB_ACT_BYPASS; break;
	case POLICY_DROP:  u->action = SADB_ACT_DISCARD; break;
	default: return -EINVAL;
	}
	u->priority = policy_priority(data, sel);
	if (u->action == SADB_ACT_PROTECT && data->sa) {
		u->reqid = data->sa->reqid;
		u->proto = data->sa->esp.use ? SADB_PROTO_ESP : SADB_PROTO_AH;
		if (data->sa->mode == MODE_TUNNEL) {
			u->mode = SADB_MODE_TUNNEL;
			if (kernel_sadb_host2addr(data->src, &u->tun_src) < 0 ||
			    kernel_sadb_host2addr(data->dst, &u->tun_dst) < 0)
				return -EINVAL;
		} else if (data->sa->mode == MODE_TRANSPORT) {
			u->mode = SADB_MODE_TRANSPORT;
		} else {
			return -EINVAL;
		}
	}
	u->ike_id = current_ike_id();
	return 0;
}

static bool user_eq(const struct ks_pol_user *a, const struct ks_pol_user *b)
{
	return a->reqid == b->reqid && a->action == b->action && a->priority == b->priority &&
	       a->mode == b->mode;
}

static struct ks_pol *find_pol(private_kernel_sadb_t *this, uint8_t dir, const struct sadb_selector *sel)
{
	enumerator_t *e = this->pols->create_enumerator(this->pols);
	struct ks_pol *p, *found = NULL;

	while (e->enumerate(e, &p)) {
		if (p->dir == dir && memcmp(&p->sel, sel, sizeof(*sel)) == 0) {
			found = p;
			break;
		}
	}
	e->destroy(e);
	return found;
}

/* The user whose policy should be in the SADB: the best priority, and among equals the latest (a
 * rekeyed CHILD_SA's policy replaces the old one's). */
static unsigned best_user(struct ks_pol *p)
{
	unsigned i, best = 0;

	for (i = 1; i < p->n_users; i++)
		if (p->users[i].priority <= p->users[best].priority)
			best = i;
	return best;
}

static void fill_policy(struct ks_pol *p, const struct ks_pol_user *u, struct sadb_policy *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->dir = p->dir;
	sp->action = u->action;
	sp->proto = u->proto;
	sp->mode = u->mode;
	sp->priority = u->priority;
	sp->reqid = u->reqid;
	sp->sel = p->sel;
	sp->tun_src = u->tun_src;
	sp->tun_dst = u->tun_dst;
	sp->ike_id = u->ike_id;
}

/* Make the SADB hold the best user's version of p (one atomic change for readers). */
static int sync_policy(private_kernel_sadb_t *this, struct ks_pol *p, bool fresh)
{
	struct sadb_policy sp;
	unsigned best = best_user(p);
	uint32_t id = 0;
	int rc;

	if (!fresh && best == p->installed_user)
		return 0;
	fill_policy(p, &p->users[best], &sp);
	if (fresh) {
		rc = sadb_policy_add(this->db, &sp, &id);
	} else {
		if ((rc = sadb_txn_begin(this->db)) < 0)
			return rc;
		rc = sadb_policy_delete(this->db, p->sadb_id);
		if (rc == 0 || rc == -ENOENT)
			rc = sadb_policy_add(this->db, &sp, &id);
		if (rc < 0) {
			sadb_txn_abort(this->db);
			return rc;
		}
		rc = sadb_txn_commit(this->db);
	}
	if (rc == 0) {
		p->sadb_id = id;
		p->installed_user = best;
	}
	return rc;
}

METHOD(kernel_ipsec_t, add_policy, status_t, private_kernel_sadb_t *this, kernel_ipsec_policy_id_t *id,
       kernel_ipsec_manage_policy_t *data)
{
	struct sadb_selector sel;
	struct ks_pol_user u;
	struct ks_pol *p;
	uint8_t dir;
	int rc;

	if (build_policy_key(id, &dir, &sel) < 0 || build_user(data, &sel, &u) < 0) {
		DBG1(DBG_KNL, "xipsec: policy %R === %R %N cannot be expressed in the SADB", id->src_ts,
		     id->dst_ts, policy_dir_names, id->dir);
		return FAILED;
	}
	this->mutex->lock(this->mutex);
	p = find_pol(this, dir, &sel);
	if (p) {
		if (!pol_reserve(p)) {
			this->mutex->unlock(this->mutex);
			DBG1(DBG_KNL, "xipsec: too many users of policy %R === %R", id->src_ts, id->dst_ts);
			return FAILED;
		}
		p->users[p->n_users++] = u;
		rc = sync_policy(this, p, FALSE);
		if (rc < 0)
			p->n_users--;
	} else {
		INIT(p, .dir = dir, .sel = sel);
		if (!pol_reserve(p)) {
			this->mutex->unlock(this->mutex);
			pol_free(p);
			return FAILED;
		}
		p->n_users = 1;
		p->users[0] = u;
		rc = sync_policy(this, p, TRUE);
		if (rc == 0)
			this->pols->insert_last(this->pols, p);
		else
			pol_free(p);
	}
	this->mutex->unlock(this->mutex);
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: adding policy %R === %R %N failed: %s", id->src_ts, id->dst_ts,
		     policy_dir_names, id->dir, sadb_errmsg(this->db));
		return FAILED;
	}
	KS_STAT_INC(pol_added);
	DBG2(DBG_KNL, "xipsec: policy %R === %R %N installed", id->src_ts, id->dst_ts, policy_dir_names, id->dir);
	return SUCCESS;
}

METHOD(kernel_ipsec_t, query_policy, status_t, private_kernel_sadb_t *this, kernel_ipsec_policy_id_t *id,
       kernel_ipsec_query_policy_t *data, time_t *use_time)
{
	struct sadb_selector sel;
	struct ks_pol *p;
	struct ks_sa *t;
	enumerator_t *e;
	uint64_t last = 0;
	uint32_t reqid;
	uint8_t dir;
	bool inbound;

	if (build_policy_key(id, &dir, &sel) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	p = find_pol(this, dir, &sel);
	if (!p) {
		this->mutex->unlock(this->mutex);
		return NOT_FOUND;
	}
	/* A policy's last use is the last use of the SAs it leads to: the dataplane counts per SA. */
	reqid = p->users[p->installed_user].reqid;
	inbound = dir != SADB_DIR_OUT;
	e = this->sas->create_enumerator(this->sas);
	while (e->enumerate(e, &t)) {
		const struct sadb_runtime *rt;
		uint64_t lu;

		if (t->reqid != reqid || t->inbound != inbound || !(rt = sa_runtime(this, t)))
			continue;
		lu = __atomic_load_n(&rt->last_used, __ATOMIC_RELAXED);
		if (lu > last)
			last = lu;
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	*use_time = real2mono(last);
	return SUCCESS;
}

METHOD(kernel_ipsec_t, del_policy, status_t, private_kernel_sadb_t *this, kernel_ipsec_policy_id_t *id,
       kernel_ipsec_manage_policy_t *data)
{
	struct sadb_selector sel;
	struct ks_pol_user u;
	struct ks_pol *p;
	unsigned i;
	uint8_t dir;
	int rc = 0;

	if (build_policy_key(id, &dir, &sel) < 0 || build_user(data, &sel, &u) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	p = find_pol(this, dir, &sel);
	if (!p) {
		this->mutex->unlock(this->mutex);
		return NOT_FOUND;
	}
	for (i = 0; i < p->n_users; i++)
		if (user_eq(&p->users[i], &u))
			break;
	if (i == p->n_users) {
		/* charon may delete with a different SA config (e.g. after a reqid change): drop the
		 * oldest user rather than leak the policy. */
		i = 0;
	}
	memmove(&p->users[i], &p->users[i + 1], (p->n_users - i - 1) * sizeof(p->users[0]));
	p->n_users--;
	if (p->n_users == 0) {
		rc = sadb_policy_delete(this->db, p->sadb_id);
		this->pols->remove(this->pols, p, NULL);
		pol_free(p);
		if (rc == -ENOENT)
			rc = 0;
	} else {
		if (i == p->installed_user)
			p->installed_user = p->n_users;   /* force a re-install */
		else if (i < p->installed_user)
			p->installed_user--;
		rc = sync_policy(this, p, FALSE);
	}
	this->mutex->unlock(this->mutex);
	if (rc < 0) {
		DBG1(DBG_KNL, "xipsec: deleting policy %R === %R %N failed: %s", id->src_ts, id->dst_ts,
		     policy_dir_names, id->dir, sadb_errmsg(this->db));
		return FAILED;
	}
	KS_STAT_INC(pol_deleted);
	return SUCCESS;
}

METHOD(kernel_ipsec_t, flush_policies, status_t, private_kernel_sadb_t *this)
{
	struct ks_pol *p;

	this->mutex->lock(this->mutex);
	while (this->pols->remove_first(this->pols, (void **)&p) == SUCCESS) {
		sadb_policy_delete(this->db, p->sadb_id);
		pol_free(p);
	}
	this->mutex->unlock(this->mutex);
	return SUCCESS;
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

/* ---- expiry ---- */

struct ks_expire {
	uint8_t proto;
	uint32_t spi;
	struct sadb_addr dst;
	bool hard;
	uint64_t seq, seq_soft;     /* set when the sequence space raised it */
};

static bool limit_hit(const struct sadb_lifetime *l, uint64_t age, uint64_t bytes, uint64_t packets)
{
	return (l->add_seconds && age >= l->add_seconds) || (l->bytes && bytes >= l->bytes) ||
	       (l->packets && packets >= l->packets);
}

static job_requeue_t check_expiry(private_kernel_sadb_t *this);

static void schedule_expiry(private_kernel_sadb_t *this)
{
	lib->scheduler->schedule_job_ms(lib->scheduler,
		(job_t *)callback_job_create((callback_job_cb_t)check_expiry, this, NULL, NULL),
		KS_EXPIRY_INTERVAL_MS);
}

static job_requeue_t check_expiry(private_kernel_sadb_t *this)
{
	struct ks_expire ev[64];
	unsigned n = 0, i;
	enumerator_t *e;
	struct ks_sa *t;
	timeval_t now;

	time_monotonic(&now);
	this->mutex->lock(this->mutex);
	if (this->stopping) {
		this->mutex->unlock(this->mutex);
		return JOB_REQUEUE_NONE;
	}
	e = this->sas->create_enumerator(this->sas);
	while (n < countof(ev) && e->enumerate(e, &t)) {
		const struct sadb_runtime *rt = sa_runtime(this, t);
		uint64_t bytes = 0, packets = 0, seq = 0, age_ms;
		bool hard, soft, seq_hit;

		if (rt) {
			bytes = __atomic_load_n(&rt->bytes, __ATOMIC_RELAXED);
			packets = __atomic_load_n(&rt->packets, __ATOMIC_RELAXED);
			/* what the dataplane reserved, not what it sent: a number reserved is spent even if
			 * the packet was dropped or the dataplane restarted (it resumes above the mark) */
			if (t->seq_soft)
				seq = __atomic_load_n(&rt->seq_reserved, __ATOMIC_ACQUIRE);
		}
		age_ms = (uint64_t)(now.tv_sec - t->added.tv_sec) * 1000 +
			 (now.tv_usec - t->added.tv_usec) / 1000;
		/* the limit is reached when the full second has passed, not when it started */
		hard = !t->hard_raised && limit_hit(&t->hard, age_ms / 1000, bytes, packets);
		seq_hit = t->seq_soft && seq >= t->seq_soft;
		soft = !t->soft_raised && !t->hard_raised &&
		       (limit_hit(&t->soft, age_ms / 1000, bytes, packets) || seq_hit);
		if (!hard && !soft)
			continue;
		if (hard)
			t->hard_raised = TRUE;
		t->soft_raised = TRUE;
		if (rt) {
			/* runtime is the dataplane's area; only the expired bits are ours to set */
			__atomic_fetch_or((uint32_t *)&rt->expired, hard ? 3u : 1u, __ATOMIC_RELEASE);
		}
		ev[n++] = (struct ks_expire){ .proto = t->proto, .spi = t->spi, .dst = t->dst, .hard = hard,
					      .seq = !hard && seq_hit ? seq : 0, .seq_soft = t->seq_soft };
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);

	for (i = 0; i < n; i++) {
		host_t *dst;
		chunk_t a = chunk_create(ev[i].dst.a.b, ev[i].dst.family == AF_INET ? 4 : 16);

		dst = host_create_from_chunk(ev[i].dst.family, a, 0);
		if (!dst)
			continue;
		if (ev[i].seq)
			DBG1(DBG_KNL, "xipsec: CHILD_SA spi 0x%.8x reached sequence %llu of the soft "
			     "limit %llu: rekeying", ev[i].spi, (unsigned long long)ev[i].seq,
			     (unsigned long long)ev[i].seq_soft);
		else
			DBG1(DBG_KNL, "xipsec: %s lifetime of SA %.8x reached", ev[i].hard ? "hard" : "soft",
			     ev[i].spi);
		if (ev[i].hard)
			KS_STAT_INC(hard_expired);
		else
			KS_STAT_INC(soft_expired);
		if (ev[i].seq)
			KS_STAT_INC(seq_soft_expired);
		charon->kernel->expire(charon->kernel, ev[i].proto == SADB_PROTO_AH ? IPPROTO_AH : IPPROTO_ESP,
				       htonl(ev[i].spi), dst, ev[i].hard);
		dst->destroy(dst);
	}
	return JOB_RESCHEDULE_MS(KS_EXPIRY_INTERVAL_MS);
}

METHOD(kernel_ipsec_t, destroy, void, private_kernel_sadb_t *this)
{
	struct ks_promote *p;

	this->mutex->lock(this->mutex);
	this->stopping = TRUE;
	/* switches still scheduled: do their deletions now, and detach them from us */
	while (this->promotes->remove_first(this->promotes, (void **)&p) == SUCCESS) {
		promote_do(p);
		p->this = NULL;
	}
	this->mutex->unlock(this->mutex);
	/* SAs and policies stay in the SADB only as long as charon keeps them: charon deletes them
	 * before it destroys the backend; anything left is ours and is removed. */
	flush_sas(this);
	flush_policies(this);
	this->sas->destroy(this->sas);
	this->pols->destroy(this->pols);
	this->promotes->destroy(this->promotes);
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
			.get_spi = _get_spi,
			.get_cpi = _get_cpi,
			.add_sa = _add_sa,
			.update_sa = _update_sa,
			.query_sa = _query_sa,
			.del_sa = _del_sa,
			.flush_sas = _flush_sas,
			.add_policy = _add_policy,
			.query_policy = _query_policy,
			.del_policy = _del_policy,
			.flush_policies = _flush_policies,
			.bypass_socket = _bypass_socket,
			.enable_udp_decap = _enable_udp_decap,
			.destroy = _destroy,
		},
		.db = ks_pending_db,
		.mutex = mutex_create(MUTEX_TYPE_RECURSIVE),
		.sas = linked_list_create(),
		.pols = linked_list_create(),
		.promotes = linked_list_create(),
		.spi_min = lib->settings->get_int(lib->settings, "%s.spi_min", KERNEL_SPI_MIN, lib->ns),
		.spi_max = lib->settings->get_int(lib->settings, "%s.spi_max", KERNEL_SPI_MAX, lib->ns),
		.sync_ms = lib->settings->get_int(lib->settings, "%s.dataplane_sync_ms", 30, lib->ns),
	);
	ks_pending_db = NULL;
	if (this->spi_min > this->spi_max) {
		uint32_t tmp = this->spi_min;

		this->spi_min = this->spi_max;
		this->spi_max = tmp;
	}
	if (this->spi_min < 256)
		this->spi_min = 256;
	kernel_sadb_remove_orphans(this->db, NULL, NULL, NULL);
	schedule_expiry(this);
	DBG1(DBG_KNL, "xipsec: kernel-ipsec backend writes the SADB (SPIs %.8x-%.8x)", this->spi_min,
	     this->spi_max);
	if (ks_seq_soft_override)
		DBG1(DBG_KNL, "xipsec: XIPSEC_SEQ_SOFT: outbound SAs are rekeyed at sequence number %llu",
		     (unsigned long long)ks_seq_soft_override);
	return &this->public;
}
