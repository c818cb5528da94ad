/* dataplane/xipsecd/dp_spd.c: the SPD decisions of the packet path (dp_spd.h): outbound, inbound and
 * after decapsulation, each a selector from the packet (the engine's esp_pkt_sel, home addresses from
 * libmip6 for a mobile node's packets), a lock-free SADB lookup and a verdict. Any thread. */
#include "config.h"

#include <sys/socket.h>

#include "dataplane/engine/esp.h"
#include "dataplane/xipsecd/dp_spd.h"
#include "mobility/mip6.h"

/* The selector fields of the packet; a mobile node's packet by its home addresses. */
static unsigned pkt_sel(const uint8_t *l3, uint32_t len, bool mobile, struct sadb_pkt_sel *sel)
{
	unsigned r = esp_pkt_sel(l3, len, sel);

	if (r == SADB_DROP_NONE && mobile && sel->src.family == AF_INET6)
		mip6_sel_addrs(l3, len, sel->src.a.b, sel->dst.a.b);
	return r;
}

unsigned dp_spd_sel(const uint8_t *l3, uint32_t len, bool mobile, struct sadb_pkt_sel *sel)
{
	return pkt_sel(l3, len, mobile, sel) == SADB_DROP_NONE ? SADB_DROP_NONE : SADB_DROP_TRUNCATED;
}

unsigned dp_spd_out(const struct sadb *db, const uint8_t *l3, uint32_t len, bool mobile,
		    struct sadb_policy *pol)
{
	struct sadb_pkt_sel sel;

	if (pkt_sel(l3, len, mobile, &sel) != SADB_DROP_NONE)
		return SADB_DROP_TRUNCATED;
	if (sadb_policy_lookup(db, SADB_DIR_OUT, &sel, pol))
		return SADB_DROP_NO_POLICY;
	if (pol->action != SADB_ACT_BYPASS && pol->action != SADB_ACT_PROTECT)
		return SADB_DROP_POLICY_DISCARD;
	return SADB_DROP_NONE;
}

/* The inbound policy of a decapsulated packet: the dataplane does not tell forwarded packets from
 * the gateway's own here, so a packet both a FWD and an IN policy match takes the one of higher
 * priority (lower value), FWD on a tie. A mobile node's Binding Update to the home agent thus takes
 * its transport policy, not the forward policy IKE installs for its tunnel (home address to any). */
static int lookup_in(const struct sadb *db, const struct sadb_pkt_sel *sel, struct sadb_policy *pol)
{
	struct sadb_policy in;

	if (sadb_policy_lookup(db, SADB_DIR_FWD, sel, pol) == 0) {
		if (sadb_policy_lookup(db, SADB_DIR_IN, sel, &in) == 0 && in.priority < pol->priority)
			*pol = in;
		return 0;
	}
	return sadb_policy_lookup(db, SADB_DIR_IN, sel, pol);
}

unsigned dp_spd_in(const struct sadb *db, const uint8_t *l3, uint32_t len)
{
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;

	if (pkt_sel(l3, len, false, &sel) != SADB_DROP_NONE)
		return SADB_DROP_TRUNCATED;
	if (lookup_in(db, &sel, &pol))
		return SADB_DROP_NO_POLICY;
	if (pol.action == SADB_ACT_BYPASS)
		return SADB_DROP_NONE;
	return pol.action == SADB_ACT_PROTECT ? SADB_DROP_POLICY_MISMATCH : SADB_DROP_POLICY_DISCARD;
}

unsigned dp_spd_in_check(const struct sadb *db, const struct sadb_sa *sa, const uint8_t *l3,
			 uint32_t len)
{
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;
	bool mobile = sa->mode == SADB_MODE_TRANSPORT && (sa->flags & SADB_SAF_MOBILE);

	if (pkt_sel(l3, len, mobile, &sel) != SADB_DROP_NONE)
		return SADB_DROP_TRUNCATED;
	if (lookup_in(db, &sel, &pol) || pol.action != SADB_ACT_PROTECT || pol.proto != sa->proto ||
	    (pol.reqid && sa->reqid && pol.reqid != sa->reqid))
		return SADB_DROP_POLICY_MISMATCH;
	/* Beyond its selector (its home address), a mobile router's tunnel carries what a host of a
	 * network it registered sends: the policy for that source is the home agent's route, which
	 * names this SA's own reqid (dp_mip6_nemo.c); a network of another node names another. */
	if (!sadb_selector_match(&sa->sel, &sel) &&
	    !((sa->flags & SADB_SAF_MOBILE) && sa->mode == SADB_MODE_TUNNEL && sa->reqid &&
	      pol.reqid == sa->reqid))
		return SADB_DROP_POLICY_MISMATCH;
	return SADB_DROP_NONE;
}

unsigned dp_spd_icmp_via(const struct sadb *db, const struct sadb_sa *out, const uint8_t *l3,
			 uint32_t len)
{
	struct sadb_pkt_sel sel;
	struct sadb_policy pol;

	if (pkt_sel(l3, len, false, &sel) != SADB_DROP_NONE)
		return SADB_DROP_TRUNCATED;
	if (!sadb_selector_match(&out->sel, &sel) || sadb_policy_lookup(db, SADB_DIR_OUT, &sel, &pol) ||
	    pol.action != SADB_ACT_PROTECT || pol.proto != out->proto || pol.reqid != out->reqid)
		return SADB_DROP_ICMP_DECAP;
	return SADB_DROP_NONE;
}
