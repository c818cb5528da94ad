/* ipsecctl/ipsecctl_parse_mip6.c: the Mobile IPv6 statements of ipsecctl's configuration language
 * (RFC 6275 home agent, manual keying as RFC 3776 describes it): `home-agent`, which becomes the
 * SADB's home agent record, and `mobile-node`, which expands into the two SA pairs a mobile node
 * needs: ESP transport for its signalling (Binding Updates and Acknowledgements, Mobile Prefix
 * Solicitations and Advertisements) and ESP tunnel for its traffic, with the policies that bind
 * them. The tunnel SAs start "at home" (the mobile node's home address as their outer peer);
 * xipsecd's home agent moves them to the care-of address when the mobile node registers one. A
 * gateway may be home agent on several addresses, one home-agent statement each (its own
 * prefixes, none shared); a mobile-node statement needs the home-agent statement whose prefix holds
 * its home address before it: that home agent address is one end of every SA it makes. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipsecctl/ipsecctl_conf.h"

#define MH_PROTO 135        /* the Mobility Header (RFC 6275 6.1) */
#define ICMP6_PROTO 58
#define MPD_SOL 146         /* Mobile Prefix Solicitation (RFC 6275 6.7) */
#define MPD_ADV 147         /* Mobile Prefix Advertisement (RFC 6275 6.8) */
#define HA_LIFETIME_DEFAULT 3600u
#define HA_LIFETIME_MAX (65535u * 4u) /* RFC 6275 6.1.7: 16 bits of 4-second units */

static bool in_prefix(const struct sadb_addr *a, const struct sadb_addr *p, unsigned plen)
{
	for (unsigned bit = 0; bit < plen; bit++) {
		uint8_t m = (uint8_t)(0x80 >> (bit % 8));

		if ((a->a.b[bit / 8] & m) != (p->a.b[bit / 8] & m))
			return false;
	}
	return true;
}

static bool v6_unicast(const struct sadb_addr *a)
{
	static const uint8_t zero[16];

	return a->family == AF_INET6 && memcmp(a->a.b, zero, 16) && a->a.b[0] != 0xff;
}

/* The home prefix of ha that holds a, or -1. */
static int home_prefix_of(const struct sadb_home_agent *ha, const struct sadb_addr *a)
{
	for (unsigned i = 0; i < ha->n_prefix; i++)
		if (in_prefix(a, &ha->prefix[i], ha->plen[i]))
			return (int)i;
	return -1;
}

/* prefix P/LEN: an IPv6 prefix of 1 to 127 bits without host bits, not given before. */
static int ha_prefix(struct ps *p, struct sadb_home_agent *ha, struct ctl_pos kpos)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, "a home prefix (IPv6 ADDRESS/LENGTH)");
	struct sadb_addr a;
	uint8_t plen;
	char msg[200];

	if (!s)
		return -1;
	if (ha->n_prefix == SADB_HA_MAX_PREFIX)
		return ps_err(p, kpos, "more than %u home prefixes", SADB_HA_MAX_PREFIX);
	if (ctl_prefix_parse(s, &a, &plen, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
	if (a.family != AF_INET6)
		return ps_err(p, pos, "home prefix '%s': Mobile IPv6 home prefixes are IPv6", s);
	if (!strchr(s, '/') || plen < 1 || plen > 127)
		return ps_err(p, pos, "home prefix '%s': expected ADDRESS/LENGTH with a length of 1 to "
			      "127", s);
	for (unsigned i = 0; i < ha->n_prefix; i++)
		if (ha->plen[i] == plen && !memcmp(ha->prefix[i].a.b, a.a.b, 16))
			return ps_err(p, pos, "home prefix '%s' given twice", s);
	ha->prefix[ha->n_prefix] = a;
	ha->plen[ha->n_prefix++] = plen;
	return 0;
}

/* lifetime SECONDS (or with s/m/h/d): the longest binding the home agent grants. */
static int ha_lifetime(struct ps *p, struct sadb_home_agent *ha)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, "the longest binding lifetime (seconds)");
	uint64_t v;

	if (!s)
		return -1;
	if (ctl_duration_parse(s, &v))
		return ps_err(p, pos, "expected a lifetime in seconds (e.g. 3600, 60m, 1h), got '%s'", s);
	if (v < 4 || v > HA_LIFETIME_MAX)
		return ps_err(p, pos, "home-agent lifetime '%s': must be 4 to %u seconds (RFC 6275: a "
			      "binding's lifetime is 16 bits of 4-second units)", s, HA_LIFETIME_MAX);
	ha->max_lifetime = (uint32_t)v;
	return 0;
}

/* ipv4 ADDRESS: the home agent's IPv4 address, for mobile nodes on IPv4 networks (DSMIPv6, RFC
 * 5555); sadb_home_agent_validate says which addresses a tunnel can use. */
static int ha_ipv4(struct ps *p, struct sadb_home_agent *ha)
{
	struct sadb_addr a;
	struct ctl_pos pos;
	char b[INET6_ADDRSTRLEN];

	if (ps_addr(p, "the home agent's IPv4 address", &a, &pos))
		return -1;
	if (a.family != AF_INET)
		return ps_err(p, pos, "home agent IPv4 address '%s': not an IPv4 address",
			      ctl_addr_str(&a, b, sizeof(b)));
	memcpy(ha->addr4, a.a.b, 4);
	return 0;
}

/* link IFNAME: the home link's interface. */
static int ha_link(struct ps *p, struct sadb_home_agent *ha)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, "the home link's interface name");

	if (!s)
		return -1;
	if (strlen(s) >= sizeof(ha->link))
		return ps_err(p, pos, "home link '%.40s': an interface name has at most %zu characters", s,
			      sizeof(ha->link) - 1);
	for (const char *c = s; *c; c++)
		if (*c == '/' || *c == ':' || *c <= ' ' || *c > '~')
			return ps_err(p, pos, "home link '%s': not an interface name", s);
	memset(ha->link, 0, sizeof(ha->link));
	memcpy(ha->link, s, strlen(s));
	return 0;
}

/* ha against the home-agent statements before it: a home address belongs to one home agent
 * address, so none is given twice and no prefix overlaps another statement's. */
static int ha_overlap(struct ps *p, const struct sadb_home_agent *ha, struct ctl_pos apos)
{
	const struct ctl_conf *c = p->c;
	char b[INET6_ADDRSTRLEN];

	for (unsigned h = 0; h < c->n_ha; h++) {
		const struct sadb_home_agent *o = &c->ha[h];

		if (sadb_addr_eq(&o->addr, &ha->addr))
			return ps_err(p, apos, "home agent address %s is already defined at line %u",
				      ctl_addr_str(&ha->addr, b, sizeof(b)), c->ha_pos[h].line);
		/* the IPv4 address tells which record a DSMIPv6 Binding Update is for */
		if ((ha->addr4[0] | ha->addr4[1] | ha->addr4[2] | ha->addr4[3]) && !memcmp(o->addr4, ha->addr4, 4))
			return ps_err(p, apos, "home agent IPv4 address %u.%u.%u.%u is already defined at line %u",
				      ha->addr4[0], ha->addr4[1], ha->addr4[2], ha->addr4[3], c->ha_pos[h].line);
		for (unsigned i = 0; i < ha->n_prefix; i++)
			for (unsigned k = 0; k < o->n_prefix; k++) {
				unsigned len = ha->plen[i] < o->plen[k] ? ha->plen[i] : o->plen[k];

				if (in_prefix(&ha->prefix[i], &o->prefix[k], len))
					return ps_err(p, apos, "home prefix %s/%u overlaps a prefix of the "
						      "home agent at line %u (a home address belongs to "
						      "one home agent address)",
						      ctl_addr_str(&ha->prefix[i], b, sizeof(b)), ha->plen[i],
						      c->ha_pos[h].line);
			}
	}
	return 0;
}

int conf_parse_home_agent(struct ps *p)
{
	struct ctl_conf *c = p->c;
	struct sadb_home_agent ha;
	struct ctl_pos pos = p->t[0].pos, apos;
	bool have_life = false, have_link = false, have_v4 = false;
	char msg[200], b[INET6_ADDRSTRLEN];

	p->i = 1;
	if (c->n_ha == SADB_HA_MAX)
		return ps_err(p, pos, "more than %u 'home-agent' statements", SADB_HA_MAX);
	memset(&ha, 0, sizeof(ha));
	ha.max_lifetime = HA_LIFETIME_DEFAULT;
	if (ps_addr(p, "the home agent's address", &ha.addr, &apos))
		return -1;
	if (!v6_unicast(&ha.addr))
		return ps_err(p, apos, "home agent address '%s': Mobile IPv6 needs an IPv6 unicast address",
			      ctl_addr_str(&ha.addr, b, sizeof(b)));
	while (ps_peek(p)) {
		struct ctl_pos kpos = ps_here(p);

		if (ps_acc(p, "prefix")) {
			if (ha_prefix(p, &ha, kpos))
				return -1;
		} else if (ps_acc(p, "lifetime")) {
			if (have_life)
				return ps_err(p, kpos, "'lifetime' given twice");
			have_life = true;
			if (ha_lifetime(p, &ha))
				return -1;
		} else if (ps_acc(p, "link")) {
			if (have_link)
				return ps_err(p, kpos, "'link' given twice");
			have_link = true;
			if (ha_link(p, &ha))
				return -1;
		} else if (ps_acc(p, "ipv4")) {
			if (have_v4)
				return ps_err(p, kpos, "'ipv4' given twice");
			have_v4 = true;
			if (ha_ipv4(p, &ha))
				return -1;
		} else {
			return ps_unknown(p, "home-agent", "prefix, lifetime, link or ipv4");
		}
	}
	if (!ha.n_prefix)
		return ps_err(p, ps_here(p), "incomplete home-agent: missing 'prefix P/LEN' (the home "
			      "prefixes)");
	/* RFC 6275 10.1: the home agent is a router on the home link, addressed in its prefix */
	if (home_prefix_of(&ha, &ha.addr) < 0)
		return ps_err(p, apos, "home agent address %s is in none of its home prefixes",
			      ctl_addr_str(&ha.addr, b, sizeof(b)));
	if (sadb_home_agent_validate(&ha, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
	if (ha_overlap(p, &ha, apos))
		return -1;
	c->ha[c->n_ha] = ha;
	c->ha_pos[c->n_ha++] = pos;
	return 0;
}

/* The SA options of one part of a mobile-node statement: signalling or tunnel. */
enum { MN_SIG, MN_TUN };

static int mn_words(struct ps *p, struct pair *pr, struct ctl_pos *part_pos, uint32_t *prio,
		    struct ctl_mn_router *mr)
{
	struct pair *cur = NULL;
	bool seen[2] = { false, false }, prio_set = false;
	int r;

	while (ps_peek(p)) {
		struct ctl_pos kpos = ps_here(p);
		int part = -1;

		if (ps_acc(p, "signalling") || ps_acc(p, "signaling"))
			part = MN_SIG;
		else if (ps_acc(p, "tunnel"))
			part = MN_TUN;
		if (part >= 0) {
			if (seen[part])
				return ps_err(p, kpos, "'%s' given twice", part == MN_SIG ? "signalling" :
					      "tunnel");
			seen[part] = true;
			part_pos[part] = kpos;
			cur = &pr[part];
			continue;
		}
		if (ps_acc(p, "router-prefix")) {
			if (conf_mn_router_prefix(p, mr, kpos))
				return -1;
			continue;
		}
		if (ps_acc(p, "priority")) {
			if (prio_set)
				return ps_err(p, kpos, "'priority' given twice");
			prio_set = true;
			/* the tunnel's policies take the next one */
			if (ps_u32(p, "a priority up to 4294967294 (lower wins; the tunnel's "
				   "policies get one more)", UINT32_MAX - 1, prio))
				return -1;
			continue;
		}
		if (!cur)
			return ps_err(p, kpos, "expected 'signalling' or 'tunnel' after the home address, "
				      "got %s", ps_got(p));
		if (ps_acc(p, "spi")) {
			if (cur->have_spi)
				return ps_err(p, kpos, "'spi' given twice");
			if (conf_pair_spi(p, cur))
				return -1;
			continue;
		}
		if ((r = conf_sa_option(p, &cur->o, false)) < 0)
			return -1;
		if (r == 0)
			return ps_unknown(p, "mobile-node", "signalling, tunnel, spi, priority, router-prefix, "
					  SA_OPTS);
	}
	for (int part = MN_SIG; part <= MN_TUN; part++) {
		if (!seen[part])
			return ps_err(p, ps_here(p), "incomplete mobile-node: missing the '%s spi OUT:IN "
				      "enc ...' part", part == MN_SIG ? "signalling" : "tunnel");
		if (!pr[part].have_spi)
			return ps_err(p, part_pos[part], "incomplete mobile-node: the %s part needs "
				      "'spi OUT:IN'", part == MN_SIG ? "signalling" : "tunnel");
	}
	return 0;
}

/* from SRC/src_plen to DST/128 */
static void mn_sel(struct selopt *so, const struct sadb_addr *src, uint8_t src_plen,
		   const struct sadb_addr *dst)
{
	so->from = so->to = true;
	so->sel.src = *src;
	so->sel.src_plen = src_plen;
	so->sel.dst = *dst;
	so->sel.dst_plen = 128;
}

/* The home address: IPv6 unicast, in a home prefix, not the home agent's, one statement each.
 * *ha: the home-agent statement whose prefix holds it (its index in c->ha). */
static int mn_hoa(struct ps *p, const struct sadb_addr *hoa, struct ctl_pos hpos, unsigned *ha)
{
	struct ctl_conf *c = p->c;
	char b[INET6_ADDRSTRLEN];

	if (!v6_unicast(hoa))
		return ps_err(p, hpos, "home address '%s': a Mobile IPv6 home address is an IPv6 unicast "
			      "address", ctl_addr_str(hoa, b, sizeof(b)));
	if (!c->n_ha)
		return ps_err(p, p->t[0].pos, "mobile-node needs a 'home-agent' statement before it (the "
			      "home agent's address and home prefixes)");
	for (*ha = 0; *ha < c->n_ha && home_prefix_of(&c->ha[*ha], hoa) < 0; ++*ha)
		;
	if (*ha == c->n_ha)
		return ps_err(p, hpos, "home address %s is in none of the home agent's prefixes (line %u)",
			      ctl_addr_str(hoa, b, sizeof(b)), c->ha_pos[c->n_ha - 1].line);
	if (sadb_addr_eq(hoa, &c->ha[*ha].addr))
		return ps_err(p, hpos, "home address %s is the home agent's own address",
			      ctl_addr_str(hoa, b, sizeof(b)));
	return 0;
}

/* The signalling pair's policies, which conf_pair_items has just made (the last two items: out,
 * in) for the pair's selector: they become the Mobility Header's (RFC 3776 4.1), and a copy of each
 * protects Mobile Prefix Discovery (RFC 3776 4.2: the Solicitation, ICMPv6 146, from the mobile
 * node; the Advertisement, 147, to it) with the same SAs, the type where a port would be. */
static int mn_sig_policies(struct ps *p)
{
	struct ctl_conf *c = p->c;
	struct ctl_item *it;
	size_t out = c->n - 2;

	for (size_t d = 0; d < 2; d++) {
		uint8_t type = d == 0 ? MPD_ADV : MPD_SOL;

		c->items[out + d].pol.sel.proto = MH_PROTO;
		if (!(it = conf_item_new(c, CTL_IT_POLICY, p->t[0].pos)))
			return -1;
		*it = c->items[out + d];     /* conf_item_new may have moved the items */
		it->pol.sel.proto = ICMP6_PROTO;
		it->pol.sel.sport_lo = it->pol.sel.sport_hi = type;
	}
	return 0;
}

int conf_parse_mobile_node(struct ps *p)
{
	struct ctl_conf *c = p->c;
	struct pair pr[2];
	struct ctl_pos hpos, part_pos[2];
	struct sadb_addr hoa, any6;
	struct ctl_mn_router mr = { .n = 0 };
	uint32_t prio = 0;
	unsigned h = 0;
	int rc = -1;

	conf_pair_init(&pr[MN_SIG]);
	conf_pair_init(&pr[MN_TUN]);
	memset(&any6, 0, sizeof(any6));
	any6.family = AF_INET6;
	p->i = 1;
	if (ps_addr(p, "the mobile node's home address", &hoa, &hpos) ||
	    mn_words(p, pr, part_pos, &prio, &mr) || mn_hoa(p, &hoa, hpos, &h))
		goto out;
	/* signalling: ESP transport between the home agent and the home address; its policies win
	 * over the tunnel's, so a Binding Acknowledgement is never tunnelled. The SAs' selector names
	 * no protocol: the policies say what the pair carries (mn_sig_policies) */
	pr[MN_SIG].o.t.proto = SADB_PROTO_ESP;
	pr[MN_SIG].o.t.mode = SADB_MODE_TRANSPORT;
	mn_sel(&pr[MN_SIG].po.sel, &c->ha[h].addr, 128, &hoa);
	pr[MN_SIG].po.pol.priority = prio;
	/* traffic: ESP tunnel from anywhere to the home address, its outer peer the home address
	 * itself until the mobile node registers a care-of address */
	pr[MN_TUN].o.t.proto = SADB_PROTO_ESP;
	pr[MN_TUN].o.t.mode = SADB_MODE_TUNNEL;
	mn_sel(&pr[MN_TUN].po.sel, &any6, 0, &hoa);
	pr[MN_TUN].local = c->ha[h].addr;
	pr[MN_TUN].peer = hoa;
	pr[MN_TUN].have_local = pr[MN_TUN].have_peer = true;
	pr[MN_TUN].peer_pos = hpos;
	pr[MN_TUN].local_pos = c->ha_pos[h];
	pr[MN_TUN].po.pol.priority = prio + 1;
	for (int part = MN_SIG; part <= MN_TUN; part++) {
		pr[part].o.t.flags |= SADB_SAF_MOBILE;
		pr[part].po.sel.from_pos = hpos;
		if (conf_pair_check(p, &pr[part]))
			goto out;
	}
	if (c->nmn == c->capmn) {
		size_t cap = c->capmn ? 2 * c->capmn : 16;
		struct ctl_mobile_node *v = realloc(c->mn, cap * sizeof(*v));

		if (!v)
			goto out;
		c->mn = v;
		c->capmn = cap;
	}
	c->mn[c->nmn++] = (struct ctl_mobile_node){ hoa, hpos, p->t[0].pos, mr };
	/* the tunnel's outbound policy is the one before last conf_pair_items made */
	rc = conf_pair_items(p, &pr[MN_SIG]) || mn_sig_policies(p) || conf_pair_items(p, &pr[MN_TUN]) ||
	     conf_mn_router_policies(p, &mr, &c->items[c->n - 2].pol) ? -1 : 0;
out:
	conf_pair_free(&pr[MN_SIG]);
	conf_pair_free(&pr[MN_TUN]);
	return rc;
}
