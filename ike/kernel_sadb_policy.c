/* ike/kernel_sadb_policy.c: the policies of xipsec-iked's kernel-ipsec backend: installing, querying
 * and deleting SADB policies for charon. Policies are reference counted here because charon installs
 * the same policy once per CHILD_SA (rekeying makes two exist at once, make-before-break) while the
 * SADB holds one entry per direction and selector: each charon user is kept, and the SADB holds the
 * best one's version. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ike/kernel_sadb_int.h"

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

/* ---- kernel_ipsec_t: policies ---- */

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
	if (!u->ike_id)
		u->ike_id = KS_TRAP_IKE_ID; /* a trap: ours all the same (kernel_sadb_remove_orphans) */
	return 0;
}

static bool user_eq(const struct ks_pol_user *a, const struct ks_pol_user *b)
{
	return a->reqid == b->reqid && a->action == b->action && a->priority == b->priority &&
	       a->mode == b->mode;
}

/* The table of policies: one record per direction and selector (ts2sel zeroes the whole selector,
 * so its bytes are its value). */
static u_int pol_hash(const void *key)
{
	const struct ks_pol *p = key;

	return chunk_hash_inc(chunk_from_thing(p->sel), p->dir);
}

static bool pol_equals(const void *a, const void *b)
{
	const struct ks_pol *x = a, *y = b;

	return x->dir == y->dir && memcmp(&x->sel, &y->sel, sizeof(x->sel)) == 0;
}

hashtable_t *ks_pol_table_create(void)
{
	return hashtable_create(pol_hash, pol_equals, 1024);
}

static struct ks_pol *find_pol(private_kernel_sadb_t *this, uint8_t dir, const struct sadb_selector *sel)
{
	struct ks_pol key = { .dir = dir, .sel = *sel };

	return this->pols->get(this->pols, &key);
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

/* What add_policy and del_policy are given, in SADB terms: the key and the user. FALSE (logged) when
 * the SADB cannot express it. */
static bool policy_args(kernel_ipsec_policy_id_t *id, kernel_ipsec_manage_policy_t *data, uint8_t *dir,
			struct sadb_selector *sel, struct ks_pol_user *u)
{
	if (build_policy_key(id, dir, sel) < 0 || build_user(data, sel, u) < 0) {
		DBG1(DBG_KNL, "xipsec: policy %R === %R %N cannot be expressed in the SADB", id->src_ts,
		     id->dst_ts, policy_dir_names, id->dir);
		return FALSE;
	}
	return TRUE;
}

METHOD(kernel_ipsec_t, add_policy, status_t, private_kernel_sadb_t *this, kernel_ipsec_policy_id_t *id,
       kernel_ipsec_manage_policy_t *data)
{
	struct sadb_selector sel;
	struct ks_pol_user u;
	struct ks_pol *p;
	uint8_t dir;
	int rc;

	if (!policy_args(id, data, &dir, &sel, &u))
		return FAILED;
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
			this->pols->put(this->pols, p, p);
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
	struct ks_reqid *r;
	struct ks_pol *p;
	struct ks_sa *t;
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
	r = ks_reqid_get(this, reqid);
	for (t = r ? r->head : NULL; t; t = t->rq_next) {
		struct sadb_runtime_view rt;

		if (t->inbound == inbound && ks_sa_runtime(this, t, &rt) && rt.last_used > last)
			last = rt.last_used;
	}
	this->mutex->unlock(this->mutex);
	*use_time = ks_real2mono(last);
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

	if (!policy_args(id, data, &dir, &sel, &u))
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
		this->pols->remove(this->pols, p);
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
	enumerator_t *e;

	this->mutex->lock(this->mutex);
	e = this->pols->create_enumerator(this->pols);
	while (e->enumerate(e, NULL, &p)) {
		this->pols->remove_at(this->pols, e);
		sadb_policy_delete(this->db, p->sadb_id);
		pol_free(p);
	}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	return SUCCESS;
}


void ks_policy_methods(kernel_ipsec_t *pub)
{
	pub->add_policy = _add_policy;
	pub->query_policy = _query_policy;
	pub->del_policy = _del_policy;
	pub->flush_policies = _flush_policies;
}
