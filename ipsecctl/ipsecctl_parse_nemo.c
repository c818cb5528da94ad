/* ipsecctl/ipsecctl_parse_nemo.c: a mobile router's networks in ipsecctl's `mobile-node` statement
 * (NEMO, RFC 3963): `router-prefix P/LEN`, up to CTL_MNP_MAX times, makes the mobile node a
 * mobile router that owns those prefixes. Each becomes an outbound discard policy from anywhere to
 * the prefix carrying the reqid of the router's tunnel: the SADB's record of who owns the network.
 * While the router is away with no registration of that prefix, the home agent discards what is
 * sent to it (counted, never leaked onto the home link); xipsecd's home agent reads these policies
 * as the router's prefixes and, for an accepted registration, puts protect policies of the same
 * reqid above them (dataplane/xipsecd/dp_mip6_nemo.c). A prefix belongs to one router and to no
 * home link, so a router can register only its own networks. */
#include "config.h"

#include <string.h>

#include "ipsecctl/ipsecctl_conf.h"

static bool overlaps(const struct sadb_addr *a, unsigned alen, const struct sadb_addr *b, unsigned blen)
{
	unsigned len = alen < blen ? alen : blen;

	for (unsigned bit = 0; bit < len; bit++) {
		uint8_t m = (uint8_t)(0x80 >> (bit % 8));

		if ((a->a.b[bit / 8] & m) != (b->a.b[bit / 8] & m))
			return false;
	}
	return true;
}

int conf_mn_router_prefix(struct ps *p, struct ctl_mn_router *mr, struct ctl_pos kpos)
{
	const struct ctl_conf *c = p->c;
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, "a mobile network prefix (IPv6 ADDRESS/LENGTH)");
	struct sadb_addr a;
	uint8_t plen;
	char msg[200], b[INET6_ADDRSTRLEN];

	if (!s)
		return -1;
	if (mr->n == CTL_MNP_MAX)
		return ps_err(p, kpos, "more than %u router-prefix (a mobile router registers at most %u "
			      "networks)", CTL_MNP_MAX, CTL_MNP_MAX);
	if (ctl_prefix_parse(s, &a, &plen, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
	if (a.family != AF_INET6 || !strchr(s, '/') || plen < 1 || a.a.b[0] == 0xff)
		return ps_err(p, pos, "router-prefix '%s': expected an IPv6 unicast ADDRESS/LENGTH with a "
			      "length of 1 to 128", s);
	for (unsigned h = 0; h < c->n_ha; h++)
		for (unsigned i = 0; i < c->ha[h].n_prefix; i++)
			if (overlaps(&a, plen, &c->ha[h].prefix[i], c->ha[h].plen[i]))
				return ps_err(p, pos, "router-prefix '%s' overlaps the home prefix %s/%u of "
					      "line %u (a mobile network is not on the home link)", s,
					      ctl_addr_str(&c->ha[h].prefix[i], b, sizeof(b)),
					      c->ha[h].plen[i], c->ha_pos[h].line);
	for (unsigned i = 0; i < mr->n; i++)
		if (overlaps(&a, plen, &mr->prefix[i], mr->plen[i]))
			return ps_err(p, pos, "router-prefix '%s' overlaps the router's %s/%u", s,
				      ctl_addr_str(&mr->prefix[i], b, sizeof(b)), mr->plen[i]);
	for (size_t m = 0; m < c->nmn; m++)
		for (unsigned i = 0; i < c->mn[m].router.n; i++)
			if (overlaps(&a, plen, &c->mn[m].router.prefix[i], c->mn[m].router.plen[i]))
				return ps_err(p, pos, "router-prefix '%s' overlaps %s/%u, the network of the "
					      "mobile router at line %u (a network has one router)", s,
					      ctl_addr_str(&c->mn[m].router.prefix[i], b, sizeof(b)),
					      c->mn[m].router.plen[i], c->mn[m].stmt.line);
	mr->prefix[mr->n] = a;
	mr->plen[mr->n++] = plen;
	return 0;
}

int conf_mn_router_policies(struct ps *p, const struct ctl_mn_router *mr, const struct sadb_policy *tun_policy)
{
	/* a copy: tun_policy is an item of the list that conf_item_new below may move */
	const struct sadb_policy t = *tun_policy, *tun_out = &t;

	if (mr->n && tun_out->priority == UINT32_MAX)
		return ps_err(p, p->t[0].pos, "a mobile router's priority must be below 4294967294 (its "
			      "networks' policies come after its tunnel's)");
	for (unsigned i = 0; i < mr->n; i++) {
		struct ctl_item *it = conf_item_new(p->c, CTL_IT_POLICY, p->t[0].pos);

		if (!it)
			return -1;
		memset(&it->pol, 0, sizeof(it->pol));
		it->pol.dir = SADB_DIR_OUT;
		it->pol.action = SADB_ACT_DISCARD;
		it->pol.reqid = tun_out->reqid;
		/* below the tunnel's own policies, so the home agent's protect policies for a
		 * registration (one priority value less than this) win over it */
		it->pol.priority = tun_out->priority + 1;
		it->pol.sel = tun_out->sel;
		it->pol.sel.dst = mr->prefix[i];
		it->pol.sel.dst_plen = mr->plen[i];
		it->reqid_pos = p->t[0].pos;
	}
	return 0;
}
