/* ike/kernel_sadb_sa.c: the SAs of xipsec-iked's kernel-ipsec backend: SPI reservation, installing,
 * migrating, querying and deleting SAs in the SADB, the record of each one installed, the deferred
 * switch of outbound traffic on IKEv1 rekeys, the deferred deletion of inbound SAs, and the expiry job.
 *
 * No kernel holds our SAs, so nothing would ever tell charon that an SA expired: a periodic job here
 * compares each SA's age and the dataplane's byte/packet counters (sadb_runtime) with its soft and hard
 * limits and raises charon->kernel->expire() itself. The same job asks for a new outbound SA before its
 * sequence space runs out (RFC 4303 section 3.3.3): the ESP engine stops at the wrap, which would
 * otherwise only drop packets until the hard lifetime. Expiry xipsecd raised goes to charon too. */
#include "ike/swan.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <processing/jobs/callback_job.h>

#include "ike/kernel_sadb_int.h"

/* How often lifetimes are checked: the granularity of soft/hard expiry in time. */
#define KS_EXPIRY_INTERVAL_MS 250

/* charon names the protocol by its IP protocol number, the SADB by its own constants. */
static uint8_t map_proto(uint8_t proto)
{
	return proto == IPPROTO_AH ? SADB_PROTO_AH : SADB_PROTO_ESP;
}

/* ---- the record of installed SAs: by identity, and by reqid ---- */

static u_int sa_hash(const void *key)
{
	const struct ks_sa *t = key;
	chunk_t a = chunk_create((u_char *)t->dst.a.b, t->dst.family == AF_INET ? 4 : 16);

	return chunk_hash_inc(a, chunk_hash_inc(chunk_from_thing(t->spi), t->proto ^ (t->dst.family << 8)));
}

static bool sa_equals(const void *a, const void *b)
{
	const struct ks_sa *x = a, *y = b;

	return x->spi == y->spi && x->proto == y->proto && sadb_addr_eq(&x->dst, &y->dst);
}

static u_int reqid_hash(const void *key)
{
	return chunk_hash(chunk_from_thing(((const struct ks_reqid *)key)->reqid));
}

static bool reqid_equals(const void *a, const void *b)
{
	return ((const struct ks_reqid *)a)->reqid == ((const struct ks_reqid *)b)->reqid;
}

void ks_sa_tables_create(private_kernel_sadb_t *this)
{
	this->sas = hashtable_create(sa_hash, sa_equals, 1024);
	this->reqids = hashtable_create(reqid_hash, reqid_equals, 1024);
}

/* What flush_sas left: nothing but empty tables. */
void ks_sa_tables_destroy(private_kernel_sadb_t *this)
{
	this->sas->destroy_function(this->sas, (void *)free);
	this->reqids->destroy_function(this->reqids, (void *)free);
}

struct ks_reqid *ks_reqid_get(private_kernel_sadb_t *this, uint32_t reqid)
{
	struct ks_reqid key = { .reqid = reqid };

	return this->reqids->get(this->reqids, &key);
}

/* t goes into the tables (its identity not yet in them). */
static void sa_track(private_kernel_sadb_t *this, struct ks_sa *t)
{
	struct ks_reqid *r = ks_reqid_get(this, t->reqid);

	if (!r) {
		INIT(r, .reqid = t->reqid);
		this->reqids->put(this->reqids, r, r);
	}
	t->rq_next = r->head;
	t->rq_pprev = &r->head;
	if (r->head)
		r->head->rq_pprev = &t->rq_next;
	r->head = t;
	if (t->inbound)
		r->n_in++;
	else
		r->n_out++;
	this->sas->put(this->sas, t, t);
}

/* t leaves the reqid's list (the caller takes it out of this->sas, or has). */
static void sa_unlink_reqid(private_kernel_sadb_t *this, struct ks_sa *t)
{
	struct ks_reqid *r = ks_reqid_get(this, t->reqid);

	*t->rq_pprev = t->rq_next;
	if (t->rq_next)
		t->rq_next->rq_pprev = t->rq_pprev;
	t->rq_next = NULL;
	t->rq_pprev = NULL;
	if (!r)
		return;
	if (t->inbound)
		r->n_in--;
	else
		r->n_out--;
	if (!r->head) {
		this->reqids->remove(this->reqids, r);
		free(r);
	}
}

static void sa_untrack(private_kernel_sadb_t *this, struct ks_sa *t)
{
	this->sas->remove(this->sas, t);
	sa_unlink_reqid(this, t);
}

static struct ks_sa *find_sa(private_kernel_sadb_t *this, uint32_t spi, uint8_t proto,
			     const struct sadb_addr *dst, bool remove)
{
	struct ks_sa key = { .spi = spi, .proto = proto, .dst = *dst }, *found;

	found = this->sas->get(this->sas, &key);
	if (found && remove)
		sa_untrack(this, found);
	return found;
}

/* Whether an SA of this reqid and direction is installed already: a new inbound one then replaces it
 * (rekey). */
static bool has_reqid(private_kernel_sadb_t *this, uint32_t reqid, bool inbound)
{
	struct ks_reqid *r = reqid ? ks_reqid_get(this, reqid) : NULL;

	return r && (inbound ? r->n_in : r->n_out) > 0;
}

/* The backend's deferred jobs (promotions and lingering SAs, below) run on charon's scheduler and
 * worker threads, and one may start while the backend is being destroyed. A job reads its backend
 * pointer and takes the backend's mutex under this process-wide gate, and destroy clears every job's
 * pointer under it too (ks_promotes_finish, ks_lingers_finish), so a job either finishes before the
 * backend goes or finds NULL. Lock order: the gate, then the backend's mutex. */
static pthread_mutex_t job_gate = PTHREAD_MUTEX_INITIALIZER;

void ks_jobs_gate_lock(void)
{
	pthread_mutex_lock(&job_gate);
}

void ks_jobs_gate_unlock(void)
{
	pthread_mutex_unlock(&job_gate);
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
	ks_jobs_gate_lock();
	private_kernel_sadb_t *this = p->this;

	if (this) {
		this->mutex->lock(this->mutex);
		promote_do(p);
		this->mutex->unlock(this->mutex);
	}
	ks_jobs_gate_unlock();
	return JOB_REQUEUE_NONE;
}

/* Runs when the job is destroyed, whether it ran or not. */
static void promote_free(struct ks_promote *p)
{
	ks_jobs_gate_lock();
	private_kernel_sadb_t *this = p->this;

	if (this) {
		this->mutex->lock(this->mutex);
		this->promotes->remove(this->promotes, p, NULL);
		this->mutex->unlock(this->mutex);
	}
	ks_jobs_gate_unlock();
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

/* A deleted inbound SA kept for linger_ms. Whichever side deletes a CHILD SA (or its IKE SA), the
 * peer's outbound SA outlives our inbound one by a round trip at least: a responder removes its SAs
 * when the delete request arrives, the initiator when the answer does, and charon deletes a replaced
 * SA as soon as the replacement is up. Packets the peer sent in that interval were protected by an
 * authenticated peer under a key both sides still hold; dropping them loses traffic for no gain. So
 * the SADB keeps the inbound SA (nothing new goes out on it: it is inbound) and deletes it later.
 * charon no longer knows it: queries find nothing, and a hard expiry never lingers (the SA was
 * never to be used again, and the dataplane stops it at its hard limit in any case). */
struct ks_linger {
	private_kernel_sadb_t *this;    /* NULL once the backend is gone */
	uint32_t spi;
	uint8_t proto;
	struct sadb_addr dst;
};

static void linger_do(struct ks_linger *l)
{
	if (l->this && sadb_sa_delete(l->this->db, l->spi, l->proto, &l->dst) == 0) {
		KS_STAT_INC(sa_deleted);
		DBG1(DBG_KNL, "xipsec: deleted inbound SA %.8x", l->spi);
	}
}

static job_requeue_t linger_end(struct ks_linger *l)
{
	ks_jobs_gate_lock();
	private_kernel_sadb_t *this = l->this;

	if (this) {
		this->mutex->lock(this->mutex);
		linger_do(l);
		l->this = NULL;
		this->lingers->remove(this->lingers, l);
		this->mutex->unlock(this->mutex);
	}
	ks_jobs_gate_unlock();
	return JOB_REQUEUE_NONE;
}

/* Runs when the job is destroyed, whether it ran or not: a job the scheduler drops unrun (charon
 * stopping) still deletes its SA. */
static void linger_free(struct ks_linger *l)
{
	ks_jobs_gate_lock();
	private_kernel_sadb_t *this = l->this;

	if (this) {
		this->mutex->lock(this->mutex);
		linger_do(l);
		this->lingers->remove(this->lingers, l);
		this->mutex->unlock(this->mutex);
	}
	ks_jobs_gate_unlock();
	free(l);
}

/* Deletions still waiting when the backend goes: done now. */
void ks_lingers_finish(private_kernel_sadb_t *this)
{
	enumerator_t *e = this->lingers->create_enumerator(this->lingers);
	struct ks_linger *l;

	while (e->enumerate(e, NULL, &l)) {
		this->lingers->remove_at(this->lingers, e);
		linger_do(l);
		l->this = NULL;
	}
	e->destroy(e);
}

/* An inbound SA charon deletes that another CHILD SA may replace or whose peer may still be sending:
 * taken off charon's record and scheduled for deletion. Called with the mutex held; false when the
 * SA is to go at once. */
static bool linger(private_kernel_sadb_t *this, struct ks_sa *t)
{
	struct ks_linger *l;
	struct sadb_sa sa;
	bool found;

	if (!t->inbound || !this->linger_ms || this->stopping || t->hard_raised)
		return false;
	/* the SA must still be the one recorded (same slot instance), else it is already gone */
	memset(&sa, 0, sizeof(sa));
	found = sadb_sa_lookup(this->db, t->spi, t->proto, &t->dst, &sa, NULL) == 0;
	memwipe(&sa, sizeof(sa));
	if (!found)
		return false;
	INIT(l, .this = this, .spi = t->spi, .proto = t->proto, .dst = t->dst);
	this->lingers->put(this->lingers, l, l);
	sa_untrack(this, t);
	free(t);
	lib->scheduler->schedule_job_ms(lib->scheduler,
		(job_t *)callback_job_create((callback_job_cb_t)linger_end, l,
					     (callback_job_cleanup_t)linger_free, NULL),
		this->linger_ms);
	return true;
}

/* ---- kernel_ipsec_t: SAs ---- */

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

/* Fill an SADB record from charon's add_sa data; mobile: a mobile node's SA. Returns 0 or -EINVAL
 * with a log line. */
static int build_sa(kernel_ipsec_sa_id_t *id, kernel_ipsec_add_sa_t *data, bool mobile,
		    struct sadb_sa *sa)
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
	/* A mobile node's SAs are plain ESP: the home agent reaches the node at the care-of address its
	 * Binding Update names, and that Binding Update carries a Home Address option that ESP-in-UDP
	 * cannot follow (RFC 4877 has no NAT traversal; a peer that asks for it, or fakes a NAT to get
	 * it, still gets plain ESP from us) */
	if (data->encap && !mobile) {
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
	/* a mobile node's (RFC 4877): xipsecd's home agent takes it as one of that node's four SAs */
	if (mobile)
		sa->flags |= SADB_SAF_MOBILE;
	sa->ike_id = current_ike_id();
	return 0;
}

/* Our dataplane must know a new inbound SPI before the peer hears of it (add_sa): wait until it has
 * applied generation gen (sadb_dp_applied: it publishes that after its workers switched to the new
 * table), at most sync_ms. xipsecd looks at the SADB at least every 10 ms, so this is a few
 * milliseconds, not the whole sync_ms; with no dataplane attached there is nothing to wait for. The wait holds this
 * charon thread, not the SADB lock. */
static void wait_dataplane(private_kernel_sadb_t *this, uint64_t gen)
{
	timeval_t start, now;

	time_monotonic(&start);
	while (sadb_dp_applied(this->db) < gen) {
		time_monotonic(&now);
		int64_t us = ((int64_t)now.tv_sec - start.tv_sec) * 1000000 + ((int64_t)now.tv_usec - start.tv_usec);
		if (us >= (int64_t)this->sync_ms * 1000) {
			DBG2(DBG_KNL, "xipsec: the dataplane did not apply generation %llu in %u ms",
			     (unsigned long long)gen, this->sync_ms);
			return;
		}
		usleep(500);
	}
}

METHOD(kernel_ipsec_t, add_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_add_sa_t *data)
{
	struct sadb_sa sa, chk;
	struct ks_sa *t;
	struct ks_promote *promote = NULL;
	ike_sa_t *ike_sa;
	uint32_t slot = 0, spi, reqid;
	uint64_t gen;
	bool rekey, defer, mobile = ks_mip6_child();
	int rc;

	if (!mobile) {
		this->mutex->lock(this->mutex);
		mobile = ks_mip6_reqid(this, data->reqid);
		this->mutex->unlock(this->mutex);
	}
	if (build_sa(id, data, mobile, &sa) < 0) {
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
	gen = sadb_generation(this->db); /* what our dataplane must have applied (below) */
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
	sa_track(this, t);
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
	if (rekey && this->sync_ms)
		wait_dataplane(this, gen);
	DBG1(DBG_KNL, "xipsec: installed %s SA %.8x reqid %u%s", data->inbound ? "inbound" : "outbound",
	     spi, reqid, promote ? " (used once the peer had time to install its side)" : "");
	return SUCCESS;
}

METHOD(kernel_ipsec_t, update_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_update_sa_t *data)
{
	struct sadb_addr dst, cur, at, nsrc, ndst;
	struct sadb_sa chk;
	uint32_t spi = ntohl(id->spi);
	uint8_t proto = map_proto(id->proto);
	uint16_t sport = 0, dport = 0;
	struct ks_sa *t;
	bool mobile;
	int rc = 0;

	if (kernel_sadb_host2addr(id->dst, &dst) < 0 || kernel_sadb_host2addr(data->new_src, &nsrc) < 0 ||
	    kernel_sadb_host2addr(data->new_dst, &ndst) < 0)
		return FAILED;
	if (data->new_encap) {
		sport = data->new_src->get_port(data->new_src);
		dport = data->new_dst->get_port(data->new_dst);
	}
	this->mutex->lock(this->mutex);
	cur = dst;
	ks_mip6_sadb_dst(this, spi, proto, &cur);
	/* A mobile node's SAs keep their endpoints: the signalling SAs are between the home agent and
	 * the home address whatever the IKE SA's are (RFC 4877 4.1; charon's proxy mode would move
	 * them with MOBIKE), and the tunnel follows the node's binding, which xipsecd's home agent
	 * owns (dp_mip6_move.c). charon's name for the SA changes all the same (below). */
	mobile = sadb_sa_lookup(this->db, spi, proto, &cur, &chk, NULL) == 0 && (chk.flags & SADB_SAF_MOBILE);
	memwipe(&chk, sizeof(chk));
	at = mobile ? cur : ndst;
	if (!mobile)
		rc = sadb_sa_migrate(this->db, spi, proto, &cur, &nsrc, &ndst, sport, dport);
	if (rc == 0 && data->new_reqid) {
		struct sadb_sa sa;

		rc = sadb_sa_lookup(this->db, spi, proto, &at, &sa, NULL);
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
	/* the identity (dst) and the reqid are keys of the record: it leaves its tables while they change */
	t = find_sa(this, spi, proto, &dst, TRUE);
	if (t) {
		struct sadb_sa sa;
		uint32_t slot;

		free(find_sa(this, spi, proto, &ndst, TRUE));   /* a stale record at the new identity */
		t->dst = ndst;
		if (data->new_reqid)
			t->reqid = data->new_reqid;
		sa_track(this, t);
		if (sadb_sa_lookup(this->db, spi, proto, &at, &sa, &slot) == 0) {
			t->slot = slot;
			t->instance = sa.instance;
		}
		memwipe(&sa, sizeof(sa));
	}
	this->mutex->unlock(this->mutex);
	KS_STAT_INC(sa_updated);
	DBG1(DBG_KNL, "xipsec: SA %.8x now %H..%H%s%s", spi, data->new_src, data->new_dst,
	     data->new_encap ? " (UDP-encapsulated)" : "",
	     mobile ? " for charon (a mobile node's: its SADB endpoints stay)" : "");
	return SUCCESS;
}

bool ks_sa_runtime(private_kernel_sadb_t *this, struct ks_sa *t, struct sadb_runtime_view *out)
{
	return sadb_runtime_read(this->db, t->slot, t->instance, 0, out) == 0;
}

time_t ks_real2mono(uint64_t real)
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
	struct sadb_runtime_view rt;
	uint32_t slot;
	int rc;

	if (kernel_sadb_host2addr(id->dst, &dst) < 0)
		return FAILED;
	this->mutex->lock(this->mutex);
	ks_mip6_sadb_dst(this, ntohl(id->spi), map_proto(id->proto), &dst);
	rc = sadb_sa_lookup(this->db, ntohl(id->spi), map_proto(id->proto), &dst, &sa, &slot);
	if (rc < 0) {
		this->mutex->unlock(this->mutex);
		DBG2(DBG_KNL, "xipsec: querying SA %.8x: not found", ntohl(id->spi));
		return NOT_FOUND;
	}
	/* an area that is not this instance's reads as zero: nothing counted for it yet */
	sadb_runtime_read(this->db, slot, sa.instance, 0, &rt);
	if (bytes)
		*bytes = rt.bytes;
	if (packets)
		*packets = rt.packets;
	if (time_out)
		*time_out = ks_real2mono(rt.last_used);
	this->mutex->unlock(this->mutex);
	memwipe(&sa, sizeof(sa));
	return SUCCESS;
}

METHOD(kernel_ipsec_t, del_sa, status_t, private_kernel_sadb_t *this, kernel_ipsec_sa_id_t *id,
       kernel_ipsec_del_sa_t *data)
{
	struct sadb_addr dst, cur;
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
	if (t && linger(this, t)) {
		this->mutex->unlock(this->mutex);
		DBG1(DBG_KNL, "xipsec: inbound SA %.8x deleted in %u ms (the peer may still be sending)",
		     spi, this->linger_ms);
		return SUCCESS;
	}
	cur = dst;
	ks_mip6_sadb_dst(this, spi, proto, &cur);
	rc = sadb_sa_delete(this->db, spi, proto, &cur);
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

	enumerator_t *e;
	void *key;

	this->mutex->lock(this->mutex);
	e = this->sas->create_enumerator(this->sas);
	while (e->enumerate(e, &key, &t)) {
		struct sadb_addr cur = t->dst;

		ks_mip6_sadb_dst(this, t->spi, t->proto, &cur);
		this->sas->remove_at(this->sas, e);
		sa_unlink_reqid(this, t);
		sadb_sa_delete(this->db, t->spi, t->proto, &cur);
		free(t);
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	return SUCCESS;
}

/* ---- expiry ---- */

struct ks_expire {
	uint8_t proto;
	uint32_t spi;
	struct sadb_addr dst;
	bool hard, dataplane;       /* dataplane: xipsecd raised it (a lone cluster node's budget) */
	uint64_t seq, seq_soft;     /* set when the sequence space raised it */
};

static bool limit_hit(const struct sadb_lifetime *l, uint64_t age, uint64_t bytes, uint64_t packets)
{
	return (l->add_seconds && age >= l->add_seconds) || (l->bytes && bytes >= l->bytes) ||
	       (l->packets && packets >= l->packets);
}

static job_requeue_t check_expiry(private_kernel_sadb_t *this);

void ks_expiry_start(private_kernel_sadb_t *this)
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

	this->mutex->lock(this->mutex);
	/* the clock is read under the lock: an SA add_sa records while this job waits for the lock is
	 * younger than a time read before it (its age would come out negative) */
	time_monotonic(&now);
	if (this->stopping) {
		this->mutex->unlock(this->mutex);
		return JOB_REQUEUE_NONE;
	}
	e = this->sas->create_enumerator(this->sas);
	while (n < countof(ev) && e->enumerate(e, NULL, &t)) {
		struct sadb_runtime_view rt;
		uint64_t bytes, packets, seq, age_ms;
		bool hard, soft, seq_hit, ours;

		/* all zero when the area is not this instance's */
		ours = ks_sa_runtime(this, t, &rt);
		bytes = rt.bytes;
		packets = rt.packets;
		/* what the dataplane reserved, not what it sent: a number reserved is spent even if the
		 * packet was dropped or the dataplane restarted (it resumes above the mark) */
		seq = t->seq_soft ? rt.seq_reserved : 0;
		age_ms = kernel_sadb_age_ms(&now, &t->added);
		/* the limit is reached when the full second has passed, not when it started; expiry bits we
		 * did not set are xipsecd's (a lone cluster node's sequence budget, dp_cluster.c) */
		hard = !t->hard_raised && (limit_hit(&t->hard, age_ms / 1000, bytes, packets) || (rt.expired & 2u));
		seq_hit = t->seq_soft && seq >= t->seq_soft;
		soft = !t->soft_raised && !t->hard_raised &&
		       (limit_hit(&t->soft, age_ms / 1000, bytes, packets) || seq_hit || (rt.expired & 1u));
		if (!hard && !soft)
			continue;
		if (hard)
			t->hard_raised = TRUE;
		t->soft_raised = TRUE;
		if (ours) {
			/* runtime is the dataplane's area; only the expired bits are ours to set */
			__atomic_fetch_or(&sadb_runtime(this->db, t->slot)->expired, hard ? 3u : 1u,
					  __ATOMIC_RELEASE);
		}
		ev[n++] = (struct ks_expire){ .proto = t->proto, .spi = t->spi, .dst = t->dst, .hard = hard,
					      .dataplane = (rt.expired & (hard ? 2u : 1u)) != 0,
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
			DBG1(DBG_KNL, "xipsec: %s %s of SA %.8x reached", ev[i].hard ? "hard" : "soft",
			     ev[i].dataplane ? "expiry by the dataplane's cluster budget" : "lifetime", ev[i].spi);
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
	ks_mip6_follow(this);
	return JOB_RESCHEDULE_MS(KS_EXPIRY_INTERVAL_MS);
}


/* Switches still scheduled when the backend goes: their deletions are done now, and the jobs, which
 * the scheduler may still run or destroy later, are detached from the backend. */
void ks_promotes_finish(private_kernel_sadb_t *this)
{
	struct ks_promote *p;

	while (this->promotes->remove_first(this->promotes, (void **)&p) == SUCCESS) {
		promote_do(p);
		p->this = NULL;
	}
}

void ks_sa_methods(kernel_ipsec_t *pub)
{
	pub->get_spi = _get_spi;
	pub->add_sa = _add_sa;
	pub->update_sa = _update_sa;
	pub->query_sa = _query_sa;
	pub->del_sa = _del_sa;
	pub->flush_sas = _flush_sas;
}
