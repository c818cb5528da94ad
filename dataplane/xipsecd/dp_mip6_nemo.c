/* dataplane/xipsecd/dp_mip6_nemo.c: mobile routers (NEMO, RFC 3963) on the control thread: the
 * networks each router owns, read from the SADB, and the routes of those it registered.
 *
 * Ownership is configuration: ipsecctl's `router-prefix` writes one outbound discard policy per
 * network, from anywhere to the prefix, carrying the reqid of the router's tunnel SAs
 * (ipsecctl/ipsecctl_parse_nemo.c). libmip6 gets them as the router's prefixes (mip6_mn.mnp) and
 * accepts a registration only of those (142 for another, 143 with none: mnp_check in mip6_ha.c).
 *
 * A route is a pair of protect policies of that reqid, one priority value above the discard
 * policy: outbound from anywhere to the prefix (what the correspondents send goes into the router's
 * tunnel, to its care-of address) and forward from the prefix to anywhere (what comes out of the
 * router's tunnel from a host of its network is accepted: dp_spd_in_check lets a mobile node's tunnel
 * SA carry an inner source outside its selector only where the policy for it names the SA's own
 * reqid). They are written with the tunnel's move, in the same SADB transaction
 * (dp_mip6_tunnel_move), or alone for a refresh that changed the registered set, and removed with
 * the binding (deregistration, expiry, a Binding Update without the prefix, the node's SAs changed,
 * xipsecd stopping). A reader thus sees a router's tunnel and its networks' routes change together.
 *
 * Why a router cannot take what is not its own: it authenticates its Binding Update with its own
 * signalling SA (libmip6 drops any other), its prefixes are those the administrator gave its reqid,
 * ipsecctl refuses a network given to two routers or overlapping a home prefix, and the routes carry
 * its tunnel's reqid alone. Why a host cannot inject from a mobile network through another node's
 * tunnel: the forward policy for a source in the network names the owner's reqid, the other node's
 * SA has another one, so dp_spd_in_check drops the packet (POLICY_MISMATCH); and from the outside
 * in clear the same policy demands protection.
 *
 * Cost: a change of a router's routes reads the SPD once (the policies are not indexed by reqid);
 * a host's binding changes cost nothing here, a refresh that keeps the set writes nothing. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

static void sel_prefix(struct sadb_selector *s, const struct mip6_prefix *p, bool to)
{
	memset(s, 0, sizeof(*s));
	s->sport_hi = s->dport_hi = 0xffff;
	s->src.family = s->dst.family = AF_INET6;
	memcpy(to ? s->dst.a.b : s->src.a.b, p->addr, 16);
	if (to)
		s->dst_plen = p->len;
	else
		s->src_plen = p->len;
}

/* Which of c's networks the policy pol is the route of (outbound to it, forward from it), or -1. */
static int route_of(const struct mn_cfg *c, const struct sadb_policy *pol)
{
	struct sadb_selector want;

	if (pol->action != SADB_ACT_PROTECT || pol->reqid != c->mnp_reqid ||
	    (pol->dir != SADB_DIR_OUT && pol->dir != SADB_DIR_FWD))
		return -1;
	for (unsigned i = 0; i < c->n_mnp; i++) {
		sel_prefix(&want, &c->mnp[i], pol->dir == SADB_DIR_OUT);
		if (!memcmp(&want, &pol->sel, sizeof(want)))
			return (int)i;
	}
	return -1;
}

struct reqid_ix {
	uint32_t reqid;
	size_t mn;
};

static int cmp_reqid(const void *a, const void *b)
{
	uint32_t x = ((const struct reqid_ix *)a)->reqid, y = ((const struct reqid_ix *)b)->reqid;

	return x < y ? -1 : x > y;
}

int dp_mip6_nemo_read(struct dp_ctx *ctx, struct mn_cfg *mns, size_t n)
{
	struct dp_mip6 *m = M(ctx);
	struct reqid_ix *ix = calloc(n ? n : 1, sizeof(*ix));
	uint32_t cur = 0;
	size_t n_ix = 0, n_nets = 0;
	struct sadb_policy pol;
	struct sadb_sa sa;

	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (sadb_sa_get(ctx->db, mns[i].id[ROLE_TUN_OUT] - 1, &sa) == 0 && sa.reqid) {
			mns[i].mnp_reqid = sa.reqid;
			mns[i].mnp_proto = sa.proto;
			mns[i].mnp_tun_src = sa.src;
			ix[n_ix++] = (struct reqid_ix){ sa.reqid, i };
		}
	explicit_bzero(&sa, sizeof(sa));
	qsort(ix, n_ix, sizeof(*ix), cmp_reqid);
	while (sadb_policy_next(ctx->db, &cur, &pol) == 0) {
		struct reqid_ix key = { pol.reqid, 0 }, *hit;

		if (pol.dir != SADB_DIR_OUT || pol.action != SADB_ACT_DISCARD || !pol.reqid ||
		    pol.sel.dst.family != AF_INET6 || !pol.sel.dst_plen ||
		    !(hit = bsearch(&key, ix, n_ix, sizeof(*ix), cmp_reqid)))
			continue;
		/* two nodes' tunnels of one reqid: whose network it is cannot be told (nor whose
		 * tunnel an outbound packet of that reqid takes): neither gets it */
		if ((hit > ix && hit[-1].reqid == pol.reqid) ||
		    (hit + 1 < ix + n_ix && hit[1].reqid == pol.reqid)) {
			dp_log(LOG_WARNING, "home agent: policy %u: reqid %u is the tunnel of several mobile "
			       "nodes: the network is nobody's", pol.id, pol.reqid);
			continue;
		}
		struct mn_cfg *c = &mns[hit->mn];
		if (c->n_mnp == MIP6_MAX_MNP) {
			dp_log(LOG_WARNING, "home agent: mobile router of reqid %u: more than %u networks, "
			       "policy %u left out", pol.reqid, MIP6_MAX_MNP, pol.id);
			continue;
		}
		memcpy(c->mnp[c->n_mnp].addr, pol.sel.dst.a.b, 16);
		c->mnp[c->n_mnp].len = pol.sel.dst_plen;
		c->mnp_prio = pol.priority ? pol.priority - 1 : 0;
		c->n_mnp++;
		n_nets++;
	}
	free(ix);
	m->n_mnp_pol = n_nets;
	return 0;
}

bool dp_mip6_nemo_same(const struct mn_cfg *a, const struct mn_cfg *b)
{
	return a->n_mnp == b->n_mnp && a->mnp_reqid == b->mnp_reqid && a->mnp_prio == b->mnp_prio &&
	       !memcmp(a->mnp, b->mnp, a->n_mnp * sizeof(a->mnp[0]));
}

bool dp_mip6_nemo_pol_change(const struct dp_mip6 *m, const struct sadb *db, const struct sadb_change *ch)
{
	struct sadb_policy pol;

	switch (ch->op) {
	case SADB_CHG_POL_ADD:
		/* gone again: its deletion follows in the journal */
		return sadb_policy_get(db, ch->index, &pol) == 0 && pol.dir == SADB_DIR_OUT &&
		       pol.action == SADB_ACT_DISCARD && pol.reqid;
	default:
		/* a deletion or a flush by another writer (a reload's) may have taken a network or a
		 * route of a registered one: with routers configured, sync_config reads them again
		 * and puts the routes back */
		return m->n_mnp_pol != 0;
	}
}

int dp_mip6_nemo_routes(struct dp_ctx *ctx, const struct mn_cfg *c, bool home)
{
	struct dp_mip6 *m = M(ctx);
	const struct mip6_binding *b = home ? NULL : mip6_ha_lookup(m->ha, c->hoa);
	bool want[MIP6_MAX_MNP] = { false }, have[MIP6_MAX_MNP][2] = { { false } };
	struct sadb_policy pol;
	uint32_t cur = 0;
	int writes = 0, r;

	if (!c->n_mnp)
		return 0;
	for (unsigned k = 0; b && k < b->n_mnp; k++)
		for (unsigned i = 0; i < c->n_mnp; i++)
			want[i] |= b->mnp[k].len == c->mnp[i].len && !memcmp(b->mnp[k].addr, c->mnp[i].addr, 16);
	while (sadb_policy_next(m->wdb, &cur, &pol) == 0) {
		int i = route_of(c, &pol);

		if (i < 0)
			continue;
		if (want[i] && !have[i][pol.dir == SADB_DIR_FWD]) {
			have[i][pol.dir == SADB_DIR_FWD] = true;
			continue;
		}
		if ((r = sadb_policy_delete(m->wdb, pol.id)) != 0)
			return r;
		writes++;
	}
	for (unsigned i = 0; i < c->n_mnp; i++)
		for (unsigned fwd = 0; want[i] && fwd < 2; fwd++) {
			if (have[i][fwd])
				continue;
			memset(&pol, 0, sizeof(pol));
			pol.dir = fwd ? SADB_DIR_FWD : SADB_DIR_OUT;
			pol.action = SADB_ACT_PROTECT;
			pol.proto = c->mnp_proto;
			pol.mode = SADB_MODE_TUNNEL;
			pol.priority = c->mnp_prio;
			pol.reqid = c->mnp_reqid;
			sel_prefix(&pol.sel, &c->mnp[i], !fwd);
			/* the endpoints the mobile-node statement's tunnel policies name (the SA's
			 * own, which moves, is what the packet path uses) */
			pol.tun_src = c->mnp_tun_src;
			pol.tun_dst.family = AF_INET6;
			memcpy(pol.tun_dst.a.b, c->hoa, 16);
			if (fwd) {
				pol.tun_dst = pol.tun_src;
				pol.tun_src.family = AF_INET6;
				memcpy(pol.tun_src.a.b, c->hoa, 16);
			}
			if ((r = sadb_policy_add(m->wdb, &pol, NULL)) != 0)
				return r;
			writes++;
		}
	return writes;
}

void dp_mip6_nemo_refresh(struct dp_ctx *ctx, const struct mn_cfg *c)
{
	struct dp_mip6 *m = M(ctx);
	char b[INET6_ADDRSTRLEN];
	int r;

	if (!c || !c->n_mnp || !m->wdb)
		return;
	if ((r = sadb_txn_begin(m->wdb)) == 0) {
		r = dp_mip6_nemo_routes(ctx, c, false);
		if (r <= 0)  /* an error, or the set is as registered: nothing to publish */
			sadb_txn_abort(m->wdb);
		else if ((r = sadb_txn_commit(m->wdb)) == 0 && sadb_generation(m->wdb) == m->seen_gen + 1)
			m->seen_gen = sadb_generation(m->wdb);  /* nobody else wrote meanwhile */
	}
	if (r < 0) {
		m->migrate_errors++;
		dp_log(LOG_ERR, "home agent: cannot set the routes of the networks of %s: %s", a6(c->hoa, b),
		       sadb_errmsg(m->wdb));
	}
}

void dp_mip6_nemo_stop(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	int r = 0;

	if (!m || !m->ha || !m->wdb || !m->n_mnp_pol || sadb_txn_begin(m->wdb))
		return;
	for (size_t i = 0; i < m->n_mns && r >= 0; i++)
		r = dp_mip6_nemo_routes(ctx, &m->mns[i], true);
	if (r < 0 || sadb_txn_commit(m->wdb)) {
		if (r < 0)
			sadb_txn_abort(m->wdb);
		dp_log(LOG_ERR, "home agent: the mobile networks' routes stay: %s", sadb_errmsg(m->wdb));
	}
}
