/* ike/kernel_sadb_mip6.c: mobile nodes keyed by IKEv2 (RFC 4877) in xipsec-iked's kernel-ipsec
 * backend: which CHILD_SAs are a mobile node's, the check that a mobile node gets only the home
 * address its configuration gives its identity, the SADB_SAF_MOBILE mark on the SAs it gets, so
 * that xipsecd's home agent takes them as it takes ipsecctl's mobile-node SAs (dp_mip6_cfg.c), the
 * SADB's name of an SA the home agent moved, and the K bit.
 *
 * The configuration is swanctl.conf's: a CHILD_SA config whose name starts with "mip6-" is a mobile
 * node's. In transport_proxy mode it is the signalling SA pair (RFC 4877 4.1: local_ts the home
 * agent's address, remote_ts the home address, both Mobility Header, protocol 135); in tunnel mode
 * it is the traffic tunnel (local_ts ::/0, remote_ts the home address). The connection's remote
 * identity says who may use those home addresses, so it must name one identity (no wildcards), and
 * every remote_ts of such a child must be single addresses in the home agent's prefixes (the SADB's
 * home agent record), none the home agent's own. The connection has mobike = no: the home agent
 * moves the node's SAs (and, with the K bit, its IKE SA) as the node's bindings say. charon's
 * narrowing already gives a peer only what its connection's remote_ts allow; the narrow hook here
 * refuses, with a log line naming the
 * connection, a mobile child whose configuration breaks those rules or whose negotiated selectors
 * are not one home address, before any SA or policy is installed (an empty selector list makes
 * charon fail the CHILD_SA with TS_UNACCEPTABLE).
 *
 * A home address may also be assigned (RFC 4877 4.3): the connection names swanctl.conf pools and
 * the child's remote_ts is dynamic (dynamic[135] for the signalling pair). The mobile node asks with
 * a CFG_REQUEST for INTERNAL_IP6_ADDRESS, charon's pools lease it an address that the home agent's
 * checks cleared (kernel_sadb_pool.c), and charon puts that virtual IP in the child's selectors. The
 * rule is then that the negotiated selector is that virtual IP of this IKE SA, cleared for the
 * identity it authenticated; remote.id may be a wildcard, since the lease, not the configuration,
 * ties the address to the identity.
 *
 * The K bit (RFC 4877 7): xipsecd's home agent grants it to a node whose SAs are all IKE-keyed and
 * marks the node's outbound tunnel SA SADB_SAF_KEY_MOBILE when it moves it to a new care-of address;
 * ks_mip6_follow, on the expiry job, follows the SADB's change journal and moves that IKE SA's
 * remote endpoint there, so the next IKE message goes to the care-of address and a move never
 * renegotiates. */
#include "ike/swan.h"

#include <errno.h>
#include <string.h>

#include "ike/kernel_sadb_int.h"

#define MH_PROTO 135 /* the Mobility Header (RFC 6275 6.1) */

/* The CHILD_SA whose SAs the current charon thread installs next is a mobile node's: charon calls
 * the narrow hook, then add_sa for that CHILD_SA's SAs, on one thread (child_create.c); an outbound
 * SA it installs in a later exchange (a rekey's) is known by its reqid (kernel_sadb_sa.c). */
static __thread bool mip6_child;

bool ks_mip6_child(void)
{
	return mip6_child;
}

/* ts is one IPv6 address in a home prefix of ha, not the home agent's own, of protocol proto (0:
 * any): a home address. */
static bool is_hoa(traffic_selector_t *ts, const struct sadb_home_agent *ha, uint8_t proto)
{
	/* the selector's own bytes, not a copy */
	chunk_t a = ts->get_from_address(ts);
	bool ok = ts->get_type(ts) == TS_IPV6_ADDR_RANGE && ts->is_host(ts, NULL) && a.len == 16 &&
		  ts->get_protocol(ts) == proto && memcmp(a.ptr, ha->addr.a.b, 16);
	bool in = false;

	for (unsigned i = 0; ok && !in && i < ha->n_prefix; i++)
		in = ks_in_prefix(a.ptr, &ha->prefix[i], ha->plen[i]);
	return ok && in;
}

/* ts is the home agent's address alone, of the Mobility Header. */
static bool is_ha(traffic_selector_t *ts, const struct sadb_home_agent *ha)
{
	chunk_t a = ts->get_from_address(ts);
	bool ok = ts->get_type(ts) == TS_IPV6_ADDR_RANGE && ts->is_host(ts, NULL) && a.len == 16 &&
		  ts->get_protocol(ts) == MH_PROTO && !memcmp(a.ptr, ha->addr.a.b, 16);

	return ok;
}

/* ts is ::/0, any protocol. */
static bool is_any6(traffic_selector_t *ts)
{
	host_t *net = NULL;
	uint8_t mask = 0xff;
	bool ok = ts->get_type(ts) == TS_IPV6_ADDR_RANGE && ts->get_protocol(ts) == 0 &&
		  ts->to_subnet(ts, &net, &mask) && mask == 0;

	DESTROY_IF(net);
	return ok;
}

/* Every selector of list passes check (and there is one at least). */
typedef bool (*ts_check_t)(traffic_selector_t *ts, const struct sadb_home_agent *ha, uint8_t proto);

static bool all_ts(linked_list_t *list, ts_check_t check, const struct sadb_home_agent *ha,
		   uint8_t proto)
{
	enumerator_t *e = list->create_enumerator(list);
	traffic_selector_t *ts;
	bool ok = list->get_count(list) > 0;

	while (ok && e->enumerate(e, &ts))
		ok = check(ts, ha, proto);
	e->destroy(e);
	return ok;
}

static bool ts_is_ha(traffic_selector_t *ts, const struct sadb_home_agent *ha, uint8_t proto)
{
	return is_ha(ts, ha);
}

static bool ts_is_any6(traffic_selector_t *ts, const struct sadb_home_agent *ha, uint8_t proto)
{
	return is_any6(ts);
}

/* A configured selector "dynamic" of protocol proto: the peer's virtual IP once assigned (of no
 * family until then). */
static bool ts_is_dynamic(traffic_selector_t *ts, const struct sadb_home_agent *ha, uint8_t proto)
{
	return ts->is_dynamic(ts) && ts->get_protocol(ts) == proto;
}

/* The connection hands out addresses from pools. */
static bool has_pools(peer_cfg_t *peer)
{
	enumerator_t *e = peer->create_pool_enumerator(peer);
	char *name;
	bool any = e->enumerate(e, &name);

	e->destroy(e);
	return any;
}

/* The negotiated selector ts is a virtual IP charon assigned this IKE SA's peer from a pool, and the
 * home agent's checks cleared it for the peer's identity (kernel_sadb_pool.c). */
static bool is_assigned(ike_sa_t *ike_sa, traffic_selector_t *ts)
{
	enumerator_t *e = ike_sa->create_virtual_ip_enumerator(ike_sa, FALSE);
	chunk_t a = ts->get_from_address(ts);
	host_t *vip;
	bool found = false;

	while (!found && e->enumerate(e, &vip))
		found = chunk_equals(a, vip->get_address(vip));
	e->destroy(e);
	return found && ks_pool_cleared(a.ptr, ike_sa->get_other_eap_id(ike_sa));
}

/* The peer config's remote identity names one peer: no wildcard, not %any. */
static bool one_identity(peer_cfg_t *peer)
{
	enumerator_t *e = peer->create_auth_cfg_enumerator(peer, FALSE);
	auth_cfg_t *auth;
	bool ok = false;

	while (e->enumerate(e, &auth)) {
		identification_t *id = auth->get(auth, AUTH_RULE_IDENTITY);

		ok = id && id->get_type(id) != ID_ANY && !id->contains_wildcards(id);
		if (!ok)
			break;
	}
	e->destroy(e);
	return ok;
}

/* The home agent record whose prefixes hold the home addresses remote names (records never
 * overlap: libsadb refuses it): 0, or -ENOENT when no record does. */
static int ha_serving(struct sadb *db, linked_list_t *remote, uint8_t proto,
		      struct sadb_home_agent *ha)
{
	for (unsigned idx = 0; idx < SADB_HA_MAX; idx++)
		if (sadb_home_agent_get(db, idx, ha) == 0 && all_ts(remote, is_hoa, ha, proto))
			return 0;
	return -ENOENT;
}

/* The configuration of a mobile child, NULL if sound, else what is wrong with it; *pooled: its home
 * address is assigned from the connection's pools (remote_ts dynamic). */
static const char *cfg_check(peer_cfg_t *peer, child_cfg_t *cfg, const struct sadb_home_agent *ha,
			     bool sig, bool *pooled)
{
	linked_list_t *local, *remote;
	const char *why = NULL;
	uint8_t proto = sig ? MH_PROTO : 0;

	local = cfg->get_traffic_selectors(cfg, TRUE, NULL, NULL, FALSE);
	remote = cfg->get_traffic_selectors(cfg, FALSE, NULL, NULL, FALSE);
	*pooled = all_ts(remote, ts_is_dynamic, ha, proto);
	if (*pooled && !has_pools(peer))
		why = "remote_ts = dynamic needs the connection's pools: the home address is the one a "
		      "pool assigns (RFC 4877 4.3)";
	else if (!*pooled && !one_identity(peer))
		why = "its connection's remote.id must name one mobile node (no %any, no wildcard): "
		      "the identity is what may use the home address";
	else if (peer->use_mobike(peer))
		why = "its connection needs mobike = no: the home agent moves a mobile node's SAs with "
		      "its binding, and its IKE SA with the K bit (RFC 4877 7); MOBIKE would move them "
		      "to any address of either side";
	else if (sig && !(cfg->get_mode(cfg) == MODE_TRANSPORT && cfg->has_option(cfg, OPT_PROXY_MODE)))
		why = "a signalling child needs mode = transport_proxy";
	else if (!sig && cfg->get_mode(cfg) != MODE_TUNNEL)
		why = "needs mode = transport_proxy (signalling) or tunnel (traffic)";
	else if (!*pooled && !all_ts(remote, is_hoa, ha, proto))
		why = sig ? "remote_ts must be home addresses (ADDR/128, in a home prefix, not the home "
			    "agent's) of protocol 135 (ADDR/128[135]), or dynamic[135] with pools" :
			    "remote_ts must be home addresses (ADDR/128, in a home prefix, not the home "
			    "agent's), any protocol, or dynamic with pools";
	else if (sig && !all_ts(local, ts_is_ha, ha, MH_PROTO))
		why = "local_ts must be the home agent's address, protocol 135 (ADDR/128[135])";
	else if (!sig && !all_ts(local, ts_is_any6, ha, 0))
		why = "local_ts must be ::/0";
	local->destroy_offset(local, offsetof(traffic_selector_t, destroy));
	remote->destroy_offset(remote, offsetof(traffic_selector_t, destroy));
	return why;
}

static void ts_clear(linked_list_t *list)
{
	traffic_selector_t *ts;

	while (list->remove_last(list, (void **)&ts) == SUCCESS)
		ts->destroy(ts);
}

/* A mobile node's CHILD_SA about to be installed (or negotiated): refuse it unless its configuration
 * is sound and it covers one home address. */
static bool narrow(listener_t *listener, ike_sa_t *ike_sa, child_sa_t *child_sa, narrow_hook_t type,
		   linked_list_t *local, linked_list_t *remote)
{
	ks_mip6_listener_t *l = (ks_mip6_listener_t *)listener;
	child_cfg_t *cfg = child_sa->get_config(child_sa);
	peer_cfg_t *peer = ike_sa->get_peer_cfg(ike_sa);
	struct sadb_home_agent ha;
	traffic_selector_t *ts;
	const char *why = NULL;
	bool sig, pooled = false;

	mip6_child = false;
	if (strncmp(cfg->get_name(cfg), KS_MIP6_CHILD_PREFIX, strlen(KS_MIP6_CHILD_PREFIX)))
		return TRUE;
	if (type == NARROW_INITIATOR_PRE_NOAUTH || type == NARROW_INITIATOR_PRE_AUTH)
		return TRUE; /* our own proposal: checked when the answer comes */
	sig = cfg->get_mode(cfg) == MODE_TRANSPORT;
	if (!peer)
		why = "no connection";
	else if (ha_serving(l->db, remote, sig ? MH_PROTO : 0, &ha) < 0)
		why = "no home agent record in the SADB (ipsecctl's home-agent statements) has a home "
		      "prefix that holds the mobile node's traffic selectors";
	else
		why = cfg_check(peer, cfg, &ha, sig, &pooled);
	if (!why && !(remote->get_count(remote) == 1 && all_ts(remote, is_hoa, &ha, sig ? MH_PROTO : 0)))
		why = "the mobile node's traffic selectors are not one of its home addresses";
	if (!why && pooled && remote->get_first(remote, (void **)&ts) == SUCCESS && !is_assigned(ike_sa, ts))
		why = "its traffic selector is not the home address the pool assigned its IKE_SA and the "
		      "home agent cleared (a CFG_REQUEST for INTERNAL_IP6_ADDRESS gets one)";
	if (why) {
		DBG1(DBG_KNL, "xipsec: connection '%s' child '%s' (mobile node %Y) refused: %s",
		     peer ? peer->get_name(peer) : "?", cfg->get_name(cfg), ike_sa->get_other_id(ike_sa), why);
		ts_clear(local);
		ts_clear(remote);
		return TRUE;
	}
	mip6_child = true;
	return TRUE;
}

/* The CHILD_SA's SAs are in (or it goes): the mark is not left for this thread's next add_sa, which
 * may come without a narrow hook before it. */
static bool child_state_change(listener_t *listener, ike_sa_t *ike_sa, child_sa_t *child_sa,
			       child_sa_state_t state)
{
	if (state == CHILD_INSTALLED || state == CHILD_DESTROYING)
		mip6_child = false;
	return TRUE;
}

bool ks_mip6_reqid(private_kernel_sadb_t *this, uint32_t reqid)
{
	struct ks_reqid key = { .reqid = reqid }, *r = reqid ? this->reqids->get(this->reqids, &key) : NULL;
	struct sadb_sa sa;
	bool mobile = false;

	for (struct ks_sa *t = r ? r->head : NULL; t && !mobile; t = t->rq_next)
		mobile = sadb_sa_get(this->db, t->slot, &sa) == 0 && sa.instance == t->instance &&
			 (sa.flags & SADB_SAF_MOBILE);
	memwipe(&sa, sizeof(sa));
	return mobile;
}

/* xipsecd's home agent moves a mobile node's outbound tunnel SA to the node's care-of address (or
 * home) as it registers (dp_mip6_move.c), while charon still names it by the address it was
 * installed with. The slot recorded at install is the SA's for its whole life (a migration keeps
 * it). */
void ks_mip6_sadb_dst(private_kernel_sadb_t *this, uint32_t spi, uint8_t proto,
		      struct sadb_addr *dst)
{
	struct ks_sa key = { .spi = spi, .proto = proto, .dst = *dst };
	struct ks_sa *t = this->sas->get(this->sas, &key);
	struct sadb_sa sa;

	if (t && !t->inbound && sadb_sa_get(this->db, t->slot, &sa) == 0 && sa.instance == t->instance &&
	    sa.spi == spi && sa.proto == proto)
		*dst = sa.dst;
	memwipe(&sa, sizeof(sa));
}

void ks_mip6_listener_init(ks_mip6_listener_t *l, struct sadb *db)
{
	memset(l, 0, sizeof(*l));
	l->listener.narrow = narrow;
	l->listener.child_state_change = child_state_change;
	l->db = db;
	l->since = sadb_generation(db);
}

/* The IKE SA of the mobile node whose outbound tunnel SA is in slot follows it, if the home agent
 * marked the SA (SADB_SAF_KEY_MOBILE: K granted) and it was installed by us. Only the IKE SA's
 * endpoint moves (set_other_host, not update_hosts): the tunnel SAs are the home agent's to move and
 * have moved, and update_hosts would also move the signalling SAs off the home address. */
static void follow_slot(private_kernel_sadb_t *this, uint32_t slot)
{
	enumerator_t *e;
	struct ks_sa *t;
	struct sadb_sa sa;
	struct sadb_addr named = { 0 };
	uint32_t spi = 0;
	host_t *dst, *to, *other;
	chunk_t a;
	child_sa_t *child;
	ike_sa_t *ike_sa;

	if (sadb_sa_get(this->db, slot, &sa) < 0 || (sa.flags & (SADB_SAF_MOBILE | SADB_SAF_KEY_MOBILE)) !=
	    (SADB_SAF_MOBILE | SADB_SAF_KEY_MOBILE) || sa.dir != SADB_DIR_OUT || sa.mode != SADB_MODE_TUNNEL) {
		memwipe(&sa, sizeof(sa));
		return;
	}
	/* charon names the SA by the address it installed or last updated it with */
	this->mutex->lock(this->mutex);
	e = this->sas->create_enumerator(this->sas);
	while (!spi && e->enumerate(e, NULL, &t))
		if (t->slot == slot && t->instance == sa.instance && !t->inbound) {
			spi = t->spi;
			named = t->dst;
		}
	e->destroy(e);
	this->mutex->unlock(this->mutex);
	a = chunk_create(sa.dst.a.b, 16);
	to = host_create_from_chunk(AF_INET6, a, 0);
	memwipe(&sa, sizeof(sa));
	if (!spi || !to) {
		DESTROY_IF(to);
		return;
	}
	a = chunk_create(named.a.b, named.family == AF_INET ? 4 : 16);
	dst = host_create_from_chunk(named.family, a, 0);
	ike_sa = dst ? charon->child_sa_manager->checkout(charon->child_sa_manager, PROTO_ESP, htonl(spi),
							  dst, &child) : NULL;
	DESTROY_IF(dst);
	if (!ike_sa) {
		to->destroy(to);
		return;
	}
	other = ike_sa->get_other_host(ike_sa);
	to->set_port(to, other->get_port(other));
	if (to->ip_equals(to, other)) {
		to->destroy(to);
	} else {
		DBG1(DBG_KNL, "xipsec: mobile node %Y moved with the K bit: IKE_SA %s[%u] now with %H "
		     "(was %H)", ike_sa->get_other_id(ike_sa), ike_sa->get_name(ike_sa),
		     ike_sa->get_unique_id(ike_sa), to, other);
		charon->bus->ike_update(charon->bus, ike_sa, ike_sa->get_my_host(ike_sa), to);
		ike_sa->set_other_host(ike_sa, to);
	}
	charon->ike_sa_manager->checkin(charon->ike_sa_manager, ike_sa);
}

void ks_mip6_follow(private_kernel_sadb_t *this)
{
	ks_mip6_listener_t *l = &this->mip6;
	struct sadb_change ch[64];
	int n;

	while ((n = sadb_changes(this->db, &l->since, ch, 64)) > 0)
		for (int i = 0; i < n; i++)
			if (ch[i].op == SADB_CHG_SA_UPDATE || ch[i].op == SADB_CHG_SA_ADD)
				follow_slot(this, ch[i].index);
	if (n == -ESTALE) { /* the journal moved on: look at every SA once */
		struct sadb_sa sa;
		uint32_t cur = 0, slot;

		l->since = sadb_generation(this->db);
		while (sadb_sa_next(this->db, &cur, &sa, &slot) == 0)
			if (sa.flags & SADB_SAF_KEY_MOBILE)
				follow_slot(this, slot);
		memwipe(&sa, sizeof(sa));
	}
}
