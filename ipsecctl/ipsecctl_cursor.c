/* ipsecctl/ipsecctl_cursor.c: the cursor over one statement's tokens that every statement parser
 * of ipsecctl's configuration language reads with (ipsecctl_parse*.c, ipsecctl_selector.c): the
 * next word or keyword, numbers and addresses, and the "expected X after Y, got Z" messages that
 * carry the position of the token they are about; and the item list a statement adds to. It calls
 * only the lexer's types and libipsecctl's value parsers, never a statement parser. */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipsecctl/ipsecctl_conf.h"

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
