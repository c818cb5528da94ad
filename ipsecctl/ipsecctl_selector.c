/* ipsecctl/ipsecctl_selector.c: the parts of a statement that `policy`, `sa` and the SA pairs
 * share: traffic selectors (from, to, ports, protocol, ICMP type and code, MH type; RFC 4301
 * 4.4.1.1), their consistency checks, and the policy options with the action words. Reads through
 * the cursor (ipsecctl_cursor.c); the statement parsers call it, it calls none of them. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipsecctl/ipsecctl_conf.h"

#define PORTS "a port or port range"

/* The action words, OpenBSD's and ours. */
static const struct { const char *word; uint8_t action; } pol_actions[] = {
	{ "bypass", SADB_ACT_BYPASS }, { "pass", SADB_ACT_BYPASS },
	{ "discard", SADB_ACT_DISCARD }, { "drop", SADB_ACT_DISCARD }, { "block", SADB_ACT_DISCARD },
	{ "protect", SADB_ACT_PROTECT }, { "ipsec", SADB_ACT_PROTECT },
};

static int parse_range(struct ps *p, const char *what, unsigned max, uint16_t *lo, uint16_t *hi)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, what);
	char buf[32];
	char *dash;
	uint64_t a, b;

	if (!s)
		return -1;
	if (!strcasecmp(s, "any")) {
		*lo = 0;
		*hi = (uint16_t)max;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	dash = strchr(buf, '-');
	if (dash)
		*dash = 0;
	if (ctl_u64_parse(buf, max, &a) || (dash && ctl_u64_parse(dash + 1, max, &b)))
		return ps_err(p, pos, "expected %s (N or N-M, at most %u), got '%s'", what, max, s);
	if (!dash)
		b = a;
	if (b < a)
		return ps_err(p, pos, "bad range '%s': %" PRIu64 " is below %" PRIu64, s, b, a);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

static int parse_prefix(struct ps *p, struct sadb_addr *a, uint8_t *plen)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, "a prefix (address/length or 'any')");
	char msg[200];

	if (!s)
		return -1;
	if (ctl_prefix_parse(s, a, plen, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
	return 0;
}

void conf_sel_init(struct sadb_selector *s)
{
	memset(s, 0, sizeof(*s));
	s->sport_hi = 0xffff;
	s->dport_hi = 0xffff;
}

void conf_selopt_init(struct selopt *so)
{
	memset(so, 0, sizeof(*so));
	conf_sel_init(&so->sel);
}

/* A port, ICMP type/code or MH type range of a selector: records that it was given (set) and where
 * (*posp: the messages of conf_sel_finish point at the keyword). 1 or -1, as conf_sel_option. */
static int sel_range(struct ps *p, bool *set, struct ctl_pos *posp, struct ctl_pos pos,
		     const char *what, unsigned max, uint16_t *lo, uint16_t *hi)
{
	*set = true;
	*posp = pos;
	return parse_range(p, what, max, lo, hi) ? -1 : 1;
}

int conf_sel_option(struct ps *p, struct selopt *so)
{
	struct ctl_pos pos = ps_here(p);
	struct sadb_selector *s = &so->sel;

	if (ps_acc(p, "from")) {
		so->from_pos = pos;
		if (so->from)
			return ps_err(p, pos, "'from' given twice");
		so->from = true;
		if (parse_prefix(p, &s->src, &s->src_plen))
			return -1;
		if (ps_peek(p) && ps_acc(p, "port"))
			return sel_range(p, &so->sport, &so->port_pos, pos, PORTS, 65535,
					 &s->sport_lo, &s->sport_hi);
		return 1;
	}
	if (ps_acc(p, "to")) {
		if (so->to)
			return ps_err(p, pos, "'to' given twice");
		so->to = true;
		if (parse_prefix(p, &s->dst, &s->dst_plen))
			return -1;
		if (ps_acc(p, "port"))
			return sel_range(p, &so->dport, &so->port_pos, pos, PORTS, 65535,
					 &s->dport_lo, &s->dport_hi);
		return 1;
	}
	/* A bare "port" is the destination port, as in "to 10.0.0.1 proto tcp port 443". */
	if (ps_acc(p, "dport") || ps_acc(p, "port"))
		return sel_range(p, &so->dport, &so->port_pos, pos, PORTS, 65535, &s->dport_lo,
				 &s->dport_hi);
	if (ps_acc(p, "sport"))
		return sel_range(p, &so->sport, &so->port_pos, pos, PORTS, 65535, &s->sport_lo,
				 &s->sport_hi);
	if (ps_acc(p, "proto")) {
		const char *name;

		so->proto_pos = pos;
		if (!(name = ps_next(p, "a protocol (tcp, udp, icmp, icmp6, mh, sctp, gre or a number)")))
			return -1;
		if (ctl_ipproto_parse(name, &s->proto))
			return ps_err(p, ps_here(p), "unknown protocol '%s' (expected tcp, udp, icmp, "
				      "icmp6, mh, sctp, gre or a number 1-255)", name);
		so->proto = true;
		return 1;
	}
	/* ICMP type and code, and the MH type, travel where the ports would (RFC 4301 4.4.1.1). */
	if (ps_acc(p, "type"))
		return sel_range(p, &so->type, &so->type_pos, pos, "an ICMP type or range", 255,
				 &s->sport_lo, &s->sport_hi);
	if (ps_acc(p, "code"))
		return sel_range(p, &so->code, &so->type_pos, pos, "an ICMP code or range", 255,
				 &s->dport_lo, &s->dport_hi);
	if (ps_acc(p, "mhtype"))
		return sel_range(p, &so->mhtype, &so->type_pos, pos, "a Mobility Header type or range",
				 255, &s->sport_lo, &s->sport_hi);
	return 0;
}

bool conf_proto_has_ports(uint8_t proto)
{
	return proto == 6 || proto == 17 || proto == 132 || proto == 136;
}

int conf_sel_finish(struct ps *p, struct selopt *so)
{
	struct sadb_selector *s = &so->sel;

	if ((so->sport || so->dport) && !conf_proto_has_ports(s->proto))
		return ps_err(p, so->port_pos, "'port' needs 'proto tcp', 'proto udp' or 'proto sctp'");
	if ((so->type || so->code) && s->proto != 1 && s->proto != 58)
		return ps_err(p, so->type_pos, "ICMP 'type'/'code' need 'proto icmp' or 'proto icmp6'");
	if (so->mhtype && s->proto != 135)
		return ps_err(p, so->type_pos, "'mhtype' needs 'proto mh'");
	if (s->src.family && s->dst.family && s->src.family != s->dst.family)
		return ps_err(p, so->from_pos, "'from' and 'to' are of different address families");
	return 0;
}

bool ctl_action_word(const char *s, uint8_t *action)
{
	for (size_t i = 0; i < sizeof(pol_actions) / sizeof(pol_actions[0]); i++) {
		if (!strcasecmp(s, pol_actions[i].word)) {
			if (action)
				*action = pol_actions[i].action;
			return true;
		}
	}
	return false;
}

int conf_pol_option(struct ps *p, struct polopt *po, bool pair)
{
	struct ctl_pos pos = ps_here(p);
	struct sadb_policy *pol = &po->pol;
	struct tok *t;
	uint8_t action;

	if (ps_acc(p, "priority"))
		return ps_u32(p, "a priority (lower wins)", UINT32_MAX, &pol->priority) ? -1 : 1;
	if (pair)
		return 0;
	if (ps_acc(p, "reqid")) {
		po->reqid_set = true;
		po->reqid_pos = ps_here(p);
		return ps_u32(p, "a reqid (1-4294967295)", UINT32_MAX, &pol->reqid) ? -1 : 1;
	}
	if ((t = ps_peek(p)) && !t->quoted && ctl_action_word(t->s, &action)) {
		p->i++;
		if (po->action_set)
			return ps_err(p, pos, "action given twice");
		po->action_set = true;
		po->action_pos = pos;
		pol->action = action;
		return 1;
	}
	if (ps_acc(p, "esp") || ps_acc(p, "ah")) {
		pol->proto = !strcasecmp(p->t[p->i - 1].s, "esp") ? SADB_PROTO_ESP : SADB_PROTO_AH;
		po->proto_set = true;
		return 1;
	}
	if (ps_acc(p, "tunnel")) {
		pol->mode = SADB_MODE_TUNNEL;
		po->mode_set = true;
		return 1;
	}
	if (ps_acc(p, "transport")) {
		pol->mode = SADB_MODE_TRANSPORT;
		po->mode_set = true;
		return 1;
	}
	if (ps_acc(p, "local")) {
		po->local_set = true;
		return ps_addr(p, "the local tunnel endpoint", &pol->tun_src, &po->local_pos)
			? -1 : 1;
	}
	if (ps_acc(p, "peer")) {
		po->peer_set = true;
		return ps_addr(p, "the peer tunnel endpoint", &pol->tun_dst, NULL) ? -1 : 1;
	}
	return 0;
}

void conf_sel_reverse(struct sadb_selector *s)
{
	struct sadb_addr a = s->src;
	uint8_t l = s->src_plen;
	uint16_t lo = s->sport_lo, hi = s->sport_hi;

	s->src = s->dst;
	s->src_plen = s->dst_plen;
	s->dst = a;
	s->dst_plen = l;
	/* ICMP type/code and the MH type are not source/destination pairs: keep them. */
	if (conf_proto_has_ports(s->proto)) {
		s->sport_lo = s->dport_lo;
		s->sport_hi = s->dport_hi;
		s->dport_lo = lo;
		s->dport_hi = hi;
	}
}
