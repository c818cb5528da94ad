/* tools/ipsecctl_parse.c: the statement layer of ipsecctl's configuration language: the cursor
 * over one statement's tokens with its "expected X after Y, got Z" messages, numbers, ranges and
 * addresses, traffic selectors, `policy` and `flush` statements, and the driver that cuts the
 * token stream into statements, expands macros in each and hands it to its parser (the SA
 * statements are in ipsecctl_parse_sa.c, the Mobile IPv6 ones in ipsecctl_parse_mip6.c). The same driver reads `sa add ...`/`policy add ...` from
 * the command line, so a statement means the same thing wherever it is written.
 *
 * Errors carry the position of the token they are about; parsing goes on at the next statement so
 * one run reports every mistake. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/ipsecctl_conf.h"

struct tok *ps_peek(struct ps *p)
{
	return p->i < p->n ? &p->t[p->i] : NULL;
}

struct ctl_pos ps_here(struct ps *p)
{
	return p->t[p->i < p->n ? p->i : p->n].pos;
}

const char *ps_got(struct ps *p)
{
	static char buf[80];
	struct tok *t = ps_peek(p);

	if (!t)
		return p->t[p->n].t == T_EOF ? "end of file" : "end of line";
	snprintf(buf, sizeof(buf), "'%.60s'", t->s);
	return buf;
}

/* Next word, or an error "expected WHAT after 'PREV', got ...". */
const char *ps_next(struct ps *p, const char *what)
{
	struct tok *t = ps_peek(p);

	if (!t) {
		const char *prev = p->i > 0 ? p->t[p->i - 1].s : "";

		ctl_conf_error(p->c, ps_here(p), "expected %s after '%s', got %s", what, prev, ps_got(p));
		return NULL;
	}
	p->i++;
	return t->s;
}

bool ps_acc(struct ps *p, const char *kw)
{
	struct tok *t = ps_peek(p);

	if (t && !t->quoted && !strcasecmp(t->s, kw)) {
		p->i++;
		return true;
	}
	return false;
}

int ps_err(struct ps *p, struct ctl_pos pos, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_conf_error(p->c, pos, "%s", msg);
	return -1;
}

int ps_u64(struct ps *p, const char *what, uint64_t max, uint64_t *out)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, what);

	if (!s)
		return -1;
	if (ctl_u64_parse(s, max, out))
		return ps_err(p, pos, "expected %s, got '%s'", what, s);
	return 0;
}

int ps_u32(struct ps *p, const char *what, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (ps_u64(p, what, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

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

int ps_addr(struct ps *p, const char *what, struct sadb_addr *a, struct ctl_pos *posp)
{
	struct ctl_pos pos = ps_here(p);
	const char *s = ps_next(p, what);
	char msg[160];

	if (posp)
		*posp = pos;
	if (!s)
		return -1;
	if (ctl_addr_parse(s, a, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
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

#define PORTS "a port or port range"

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

struct ctl_item *conf_item_new(struct ctl_conf *c, enum ctl_item_kind kind, struct ctl_pos pos)
{
	struct ctl_item *it;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ctl_item *v = realloc(c->items, cap * sizeof(*v));

		if (!v)
			return NULL;
		c->items = v;
		c->cap = cap;
	}
	it = &c->items[c->n++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->pos = pos;
	return it;
}

int ps_proto_mode(struct ps *p, uint8_t *proto, uint8_t *mode, bool need_proto)
{
	if (ps_acc(p, "esp"))
		*proto = SADB_PROTO_ESP;
	else if (ps_acc(p, "ah"))
		*proto = SADB_PROTO_AH;
	else if (need_proto)
		return ps_err(p, ps_here(p), "expected 'esp' or 'ah', got %s", ps_got(p));
	if (ps_acc(p, "tunnel"))
		*mode = SADB_MODE_TUNNEL;
	else if (ps_acc(p, "transport"))
		*mode = SADB_MODE_TRANSPORT;
	else
		return ps_err(p, ps_here(p), "expected 'tunnel' or 'transport', got %s", ps_got(p));
	return 0;
}

int ps_unknown(struct ps *p, const char *ctx, const char *expected)
{
	return ps_err(p, ps_here(p), "unexpected %s in %s (expected %s)", ps_got(p), ctx, expected);
}

/* The action words, OpenBSD's and ours. */
static const struct { const char *word; uint8_t action; } pol_actions[] = {
	{ "bypass", SADB_ACT_BYPASS }, { "pass", SADB_ACT_BYPASS },
	{ "discard", SADB_ACT_DISCARD }, { "drop", SADB_ACT_DISCARD }, { "block", SADB_ACT_DISCARD },
	{ "protect", SADB_ACT_PROTECT }, { "ipsec", SADB_ACT_PROTECT },
};

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

/* policy in|out|fwd [selector] bypass|discard|protect [esp|ah] [transport|tunnel local A peer B]
 * reqid N [priority N] */
static int parse_policy(struct ps *p)
{
	struct polopt po;
	struct sadb_policy *pol = &po.pol;
	struct ctl_item *it;
	int r;

	memset(&po, 0, sizeof(po));
	conf_selopt_init(&po.sel);
	if (ps_acc(p, "in"))
		pol->dir = SADB_DIR_IN;
	else if (ps_acc(p, "out"))
		pol->dir = SADB_DIR_OUT;
	else if (ps_acc(p, "fwd"))
		pol->dir = SADB_DIR_FWD;
	else
		return ps_err(p, ps_here(p), "expected a direction 'in', 'out' or 'fwd', got %s", ps_got(p));
	while (ps_peek(p)) {
		if ((r = conf_sel_option(p, &po.sel)) < 0 || (r == 0 && (r = conf_pol_option(p, &po, false)) < 0))
			return -1;
		if (r == 0)
			return ps_unknown(p, "policy", "from, to, proto, port, sport, dport, type, code, mhtype, protect, "
					  "bypass, discard, esp, ah, tunnel, transport, local, peer, reqid, "
					  "priority");
	}
	if (conf_sel_finish(p, &po.sel))
		return -1;
	pol->sel = po.sel.sel;
	if (!po.action_set)
		return ps_err(p, ps_here(p), "incomplete policy: missing the action 'protect', 'bypass' "
			      "or 'discard'");
	if (pol->action != SADB_ACT_PROTECT) {
		if (po.reqid_set || po.proto_set || po.mode_set || po.local_set || po.peer_set)
			return ps_err(p, po.action_pos, "'%s' takes no reqid, protocol, mode or tunnel "
				      "endpoints", ctl_action_name(pol->action));
	} else {
		if (!po.proto_set)
			pol->proto = SADB_PROTO_ESP;
		if (!po.mode_set)
			pol->mode = po.local_set || po.peer_set ? SADB_MODE_TUNNEL :
				SADB_MODE_TRANSPORT;
		if (pol->mode == SADB_MODE_TUNNEL && (!po.local_set || !po.peer_set))
			return ps_err(p, ps_here(p), "tunnel policy needs 'local ADDR' and 'peer ADDR'");
		if (pol->mode == SADB_MODE_TRANSPORT && (po.local_set || po.peer_set))
			return ps_err(p, po.local_pos, "'local'/'peer' are tunnel endpoints; a transport "
				      "policy has none");
		if (pol->mode == SADB_MODE_TUNNEL && pol->tun_src.family != pol->tun_dst.family)
			return ps_err(p, po.local_pos, "'local' and 'peer' are of different address "
				      "families");
		if (!po.reqid_set || !pol->reqid)
			return ps_err(p, ps_here(p), "protect policy needs 'reqid N' naming its SAs");
	}
	/* "local" is always this gateway: outbound packets leave from it, inbound ones arrive at it,
	 * so for in/fwd the outer source is the peer. */
	if (pol->mode == SADB_MODE_TUNNEL && pol->dir != SADB_DIR_OUT) {
		struct sadb_addr tmp = pol->tun_src;

		pol->tun_src = pol->tun_dst;
		pol->tun_dst = tmp;
	}
	if (!(it = conf_item_new(p->c, CTL_IT_POLICY, p->t[0].pos)))
		return -1;
	it->pol = *pol;
	it->reqid_pos = po.reqid_set ? po.reqid_pos : p->t[0].pos;
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

/* flush [sa|policy|all]: only before the SAs and policies of the file, which it would remove. */
static int parse_flush(struct ps *p)
{
	struct ctl_item *it;
	unsigned what = CTL_FLUSH_SA | CTL_FLUSH_POL;

	if (p->seen_other)
		return ps_err(p, p->t[0].pos, "'flush' must come before the SAs and policies it would "
			      "remove");
	if (ps_acc(p, "sa"))
		what = CTL_FLUSH_SA;
	else if (ps_acc(p, "policy"))
		what = CTL_FLUSH_POL;
	else
		ps_acc(p, "all");
	if (ps_peek(p))
		return ps_unknown(p, "flush", "'sa', 'policy', 'all' or the end of the line");
	if (!(it = conf_item_new(p->c, CTL_IT_FLUSH, p->t[0].pos)))
		return -1;
	it->flush = what;
	return 0;
}

static int parse_stmt(struct ps *p)
{
	struct tok *t = ps_peek(p);

	if (!strcasecmp(t->s, "flush") && !t->quoted) {
		p->i++;
		return parse_flush(p);
	}
	p->seen_other = true;
	if (!strcasecmp(t->s, "sa") && !t->quoted) {
		p->i++;
		return conf_parse_sa(p);
	}
	if ((!strcasecmp(t->s, "policy") || !strcasecmp(t->s, "flow")) && !t->quoted) {
		p->i++;
		return parse_policy(p);
	}
	if ((!strcasecmp(t->s, "esp") || !strcasecmp(t->s, "ah")) && !t->quoted)
		return conf_parse_pair(p);
	if (!strcasecmp(t->s, "home-agent") && !t->quoted)
		return conf_parse_home_agent(p);
	if (!strcasecmp(t->s, "mobile-node") && !t->quoted)
		return conf_parse_mobile_node(p);
	return ps_err(p, t->pos, "expected a statement ('sa', 'policy', 'esp', 'ah', 'flush', "
		      "'home-agent' or 'mobile-node'), got '%.60s'", t->s);
}

/* Cuts the tokens into statements (a statement ends at a line end that no '\\' continues) and
 * parses each: a macro definition, or a statement once its macros are expanded. A statement with a
 * bad token was already reported by the lexer and is skipped. */
static int parse_toks(struct ctl_conf *c, struct toks *ts)
{
	struct ps p = { .c = c };
	struct conf_macros macros = { NULL, 0 };
	size_t start = 0;

	for (size_t i = 0; i < ts->n; i++) {
		if (ts->v[i].t != T_EOL && ts->v[i].t != T_EOF)
			continue;
		if (i > start) {
			bool bad = false;

			for (size_t j = start; j < i; j++)
				bad |= ts->v[j].t == T_BAD;
			if (!bad && conf_macro_define(c, &ts->v[start], i - start, &macros) == 0 &&
			    conf_macro_expand(c, &ts->v[start], i - start, &macros) == 0) {
				p.t = &ts->v[start];
				p.n = i - start;
				p.i = 0;
				parse_stmt(&p);
			}
		}
		start = i + 1;
		if (c->nerr > CTL_MAX_ERRORS)
			break;
	}
	conf_macros_free(&macros);
	return c->nerr ? -EINVAL : 0;
}

void ctl_conf_init(struct ctl_conf *c, const char *src, FILE *err)
{
	memset(c, 0, sizeof(*c));
	c->src = src;
	c->err = err;
}

void ctl_conf_free(struct ctl_conf *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->items[i].key_file);
		free(c->items[i].authkey_file);
	}
	if (c->items)
		explicit_bzero(c->items, c->cap * sizeof(*c->items));
	free(c->items);
	c->items = NULL;
	c->n = c->cap = 0;
	free(c->mn);
	c->mn = NULL;
	c->nmn = c->capmn = 0;
	c->have_ha = false;
}

int ctl_conf_parse(struct ctl_conf *c, const char *text, size_t len)
{
	struct toks ts = { 0 };
	int rc = conf_lex(c, text, len, &ts);

	if (rc == 0)
		rc = parse_toks(c, &ts);
	conf_toks_free(&ts);
	return rc;
}

int ctl_conf_parse_argv(struct ctl_conf *c, int argc, char **argv)
{
	struct toks ts = { 0 };
	int rc = 0;

	for (int i = 0; i < argc && !rc; i++)
		rc = conf_toks_push(&ts, T_WORD, argv[i], strlen(argv[i]), false,
				    (struct ctl_pos){ 0, (unsigned)i + 1 });
	if (!rc)
		rc = conf_toks_push(&ts, T_EOL, NULL, 0, false, (struct ctl_pos){ 0, (unsigned)argc + 1 });
	if (!rc)
		rc = parse_toks(c, &ts);
	conf_toks_free(&ts);
	return rc;
}

