/* tools/ipsecctl_conf.c: ipsecctl's configuration language (ipsecctl(8), CONFIGURATION FILE): the
 * lexer, the statement parser, the normalised printer behind `-n`, and the validation that runs over
 * a whole file before anything is applied. The same parser reads `sa add ...`/`policy add ...` from
 * the command line, so a statement means the same thing wherever it is written.
 *
 * Errors carry the position of the token they are about ("file:line:column: message"); parsing
 * goes on at the next statement so one run reports every mistake, and validation only starts when
 * the file parsed cleanly. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/ipsecctl.h"

#define CTL_MAX_ERRORS 20

enum tok_type { T_WORD, T_EOL, T_EOF, T_BAD };

struct tok {
	enum tok_type t;
	bool quoted;
	bool macro;         /* text from a macro: pos is that of '$name', not of the text */
	char *s;
	struct ctl_pos pos;
};

struct toks {
	struct tok *v;
	size_t n, cap;
};

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void toks_free(struct toks *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		if (ts->v[i].s) {
			/* Tokens hold key material: wipe before freeing. */
			explicit_bzero(ts->v[i].s, strlen(ts->v[i].s));
			free(ts->v[i].s);
		}
	}
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

static int toks_push(struct toks *ts, enum tok_type t, const char *s, size_t len, bool quoted,
		     struct ctl_pos pos)
{
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;
		struct tok *v = realloc(ts->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ts->v = v;
		ts->cap = cap;
	}
	ts->v[ts->n].t = t;
	ts->v[ts->n].quoted = quoted;
	ts->v[ts->n].macro = false;
	ts->v[ts->n].pos = pos;
	ts->v[ts->n].s = NULL;
	if (s) {
		ts->v[ts->n].s = strndup(s, len);
		if (!ts->v[ts->n].s)
			return -ENOMEM;
	}
	ts->n++;
	return 0;
}

void ctl_conf_error(struct ctl_conf *c, struct ctl_pos pos, const char *fmt, ...)
{
	va_list ap;

	c->nerr++;
	if (c->nerr > CTL_MAX_ERRORS)
		return;
	if (pos.line)
		fprintf(c->err, "%s:%u:%u: ", c->src, pos.line, pos.col);
	else
		fprintf(c->err, "%s: argument %u: ", c->src, pos.col);
	va_start(ap, fmt);
	vfprintf(c->err, fmt, ap);
	va_end(ap);
	fputc('\n', c->err);
	if (c->nerr == CTL_MAX_ERRORS)
		fprintf(c->err, "%s: too many errors, giving up\n", c->src);
}

/* Split text into words, quoted strings and end-of-statement marks. A bad byte or an unterminated
 * string becomes a T_BAD token (already reported) so the parser skips that statement. */
static int lex(struct ctl_conf *c, const char *text, size_t len, struct toks *ts)
{
	size_t i = 0;
	unsigned line = 1, col = 1;
	int rc;

#define ADV() do { if (text[i] == '\n') { line++; col = 1; } else col++; i++; } while (0)
	while (i < len) {
		unsigned char ch = (unsigned char)text[i];
		struct ctl_pos pos = { line, col };

		if (ch == ' ' || ch == '\t' || ch == '\r') {
			ADV();
		} else if (ch == '\n') {
			if ((rc = toks_push(ts, T_EOL, NULL, 0, false, pos)))
				return rc;
			ADV();
		} else if (ch == '#') {
			while (i < len && text[i] != '\n')
				ADV();
		} else if (ch == '\\' && (i + 1 < len && (text[i + 1] == '\n' ||
			   (text[i + 1] == '\r' && i + 2 < len && text[i + 2] == '\n')))) {
			ADV();
			while (text[i] != '\n')
				ADV();
			ADV();
			if (i >= len) {
				ctl_conf_error(c, pos, "the file ends after '\\' although the statement "
					       "continues (truncated file?)");
				if ((rc = toks_push(ts, T_BAD, NULL, 0, false, pos)))
					return rc;
			}
		} else if (ch == '"') {
			size_t start;
			char *buf;
			size_t bl = 0;

			ADV();
			start = i;
			buf = malloc(len - start + 1);
			if (!buf)
				return -ENOMEM;
			while (i < len && text[i] != '"' && text[i] != '\n') {
				if (text[i] == '\\' && i + 1 < len &&
				    (text[i + 1] == '"' || text[i + 1] == '\\'))
					ADV();
				buf[bl++] = text[i];
				ADV();
			}
			if (i >= len || text[i] != '"') {
				free(buf);
				ctl_conf_error(c, pos, "unterminated string (missing closing '\"')");
				if ((rc = toks_push(ts, T_BAD, NULL, 0, false, pos)))
					return rc;
				continue;
			}
			ADV();
			rc = toks_push(ts, T_WORD, buf, bl, true, pos);
			free(buf);
			if (rc)
				return rc;
		} else if (ch > 0x20 && ch < 0x7f) {
			size_t start = i;

			while (i < len && (unsigned char)text[i] > 0x20 &&
			       (unsigned char)text[i] < 0x7f && text[i] != '#' && text[i] != '"')
				ADV();
			if ((rc = toks_push(ts, T_WORD, text + start, i - start, false, pos)))
				return rc;
		} else {
			/* One message is enough: a binary file would otherwise yield one per line. */
			ctl_conf_error(c, pos, "invalid byte 0x%02x: not a text configuration file",
				       ch);
			if ((rc = toks_push(ts, T_BAD, NULL, 0, false, pos)))
				return rc;
			return toks_push(ts, T_EOF, NULL, 0, false, pos);
		}
	}
#undef ADV
	return toks_push(ts, T_EOF, NULL, 0, false, (struct ctl_pos){ line, col });
}

/* ---- parser ---- */

struct ps {
	struct ctl_conf *c;
	struct tok *t;      /* statement tokens; t[n] is its terminator (EOL or EOF) */
	size_t i, n;
	bool seen_other;    /* a statement other than flush came before */
};

static struct tok *peek(struct ps *p)
{
	return p->i < p->n ? &p->t[p->i] : NULL;
}

static struct ctl_pos here(struct ps *p)
{
	return p->t[p->i < p->n ? p->i : p->n].pos;
}

static const char *got(struct ps *p)
{
	static char buf[80];
	struct tok *t = peek(p);

	if (!t)
		return p->t[p->n].t == T_EOF ? "end of file" : "end of line";
	snprintf(buf, sizeof(buf), "'%.60s'", t->s);
	return buf;
}

/* Next word, or an error "expected WHAT after 'PREV', got ...". */
static const char *next(struct ps *p, const char *what)
{
	struct tok *t = peek(p);

	if (!t) {
		const char *prev = p->i > 0 ? p->t[p->i - 1].s : "";

		ctl_conf_error(p->c, here(p), "expected %s after '%s', got %s", what, prev, got(p));
		return NULL;
	}
	p->i++;
	return t->s;
}

static bool acc(struct ps *p, const char *kw)
{
	struct tok *t = peek(p);

	if (t && !t->quoted && !strcasecmp(t->s, kw)) {
		p->i++;
		return true;
	}
	return false;
}

static int perr(struct ps *p, struct ctl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct ps *p, struct ctl_pos pos, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_conf_error(p->c, pos, "%s", msg);
	return -1;
}
#define PERR perr

static int parse_u64(struct ps *p, const char *what, uint64_t max, uint64_t *out)
{
	struct ctl_pos pos = here(p);
	const char *s = next(p, what);

	if (!s)
		return -1;
	if (ctl_u64_parse(s, max, out))
		return PERR(p, pos, "expected %s, got '%s'", what, s);
	return 0;
}

static int parse_u32(struct ps *p, const char *what, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(p, what, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_range(struct ps *p, const char *what, unsigned max, uint16_t *lo, uint16_t *hi)
{
	struct ctl_pos pos = here(p);
	const char *s = next(p, what);
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
		return PERR(p, pos, "expected %s (N or N-M, at most %u), got '%s'", what, max, s);
	if (!dash)
		b = a;
	if (b < a)
		return PERR(p, pos, "bad range '%s': %" PRIu64 " is below %" PRIu64, s, b, a);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

static int parse_addr(struct ps *p, const char *what, struct sadb_addr *a, struct ctl_pos *posp)
{
	struct ctl_pos pos = here(p);
	const char *s = next(p, what);
	char msg[160];

	if (posp)
		*posp = pos;
	if (!s)
		return -1;
	if (ctl_addr_parse(s, a, msg, sizeof(msg)))
		return PERR(p, pos, "%s", msg);
	return 0;
}

static int parse_prefix(struct ps *p, struct sadb_addr *a, uint8_t *plen)
{
	struct ctl_pos pos = here(p);
	const char *s = next(p, "a prefix (address/length or 'any')");
	char msg[200];

	if (!s)
		return -1;
	if (ctl_prefix_parse(s, a, plen, msg, sizeof(msg)))
		return PERR(p, pos, "%s", msg);
	return 0;
}

static void sel_init(struct sadb_selector *s)
{
	memset(s, 0, sizeof(*s));
	s->sport_hi = 0xffff;
	s->dport_hi = 0xffff;
}

/* Selector parts; they may come in any order. */
struct selopt {
	struct sadb_selector sel;
	bool from, to, sport, dport, type, code, mhtype, proto;
	struct ctl_pos port_pos, type_pos, proto_pos, from_pos;
};

static void selopt_init(struct selopt *so)
{
	memset(so, 0, sizeof(*so));
	sel_init(&so->sel);
}

/* 1: consumed a selector keyword, 0: not a selector keyword, -1: error. */
static int sel_option(struct ps *p, struct selopt *so)
{
	struct ctl_pos pos = here(p);

	if (acc(p, "from")) {
		so->from_pos = pos;
		if (so->from)
			return PERR(p, pos, "'from' given twice");
		so->from = true;
		if (parse_prefix(p, &so->sel.src, &so->sel.src_plen))
			return -1;
		if (peek(p) && acc(p, "port")) {
			so->sport = true;
			so->port_pos = pos;
			return parse_range(p, "a port or port range", 65535, &so->sel.sport_lo,
					   &so->sel.sport_hi) ? -1 : 1;
		}
		return 1;
	}
	if (acc(p, "to")) {
		if (so->to)
			return PERR(p, pos, "'to' given twice");
		so->to = true;
		if (parse_prefix(p, &so->sel.dst, &so->sel.dst_plen))
			return -1;
		if (acc(p, "port")) {
			so->dport = true;
			so->port_pos = pos;
			return parse_range(p, "a port or port range", 65535, &so->sel.dport_lo,
					   &so->sel.dport_hi) ? -1 : 1;
		}
		return 1;
	}
	/* A bare "port" is the destination port, as in "to 10.0.0.1 proto tcp port 443". */
	if (acc(p, "dport") || acc(p, "port")) {
		so->dport = true;
		so->port_pos = pos;
		return parse_range(p, "a port or port range", 65535, &so->sel.dport_lo,
				   &so->sel.dport_hi) ? -1 : 1;
	}
	if (acc(p, "sport")) {
		so->sport = true;
		so->port_pos = pos;
		return parse_range(p, "a port or port range", 65535, &so->sel.sport_lo,
				   &so->sel.sport_hi) ? -1 : 1;
	}
	if (acc(p, "proto")) {
		const char *s;

		so->proto_pos = pos;
		if (!(s = next(p, "a protocol (tcp, udp, icmp, icmp6, mh, sctp, gre or a number)")))
			return -1;
		if (ctl_ipproto_parse(s, &so->sel.proto))
			return PERR(p, here(p), "unknown protocol '%s' (expected tcp, udp, icmp, "
				    "icmp6, mh, sctp, gre or a number 1-255)", s);
		so->proto = true;
		return 1;
	}
	if (acc(p, "type")) {
		so->type = true;
		so->type_pos = pos;
		return parse_range(p, "an ICMP type or range", 255, &so->sel.sport_lo,
				   &so->sel.sport_hi) ? -1 : 1;
	}
	if (acc(p, "code")) {
		so->code = true;
		so->type_pos = pos;
		return parse_range(p, "an ICMP code or range", 255, &so->sel.dport_lo,
				   &so->sel.dport_hi) ? -1 : 1;
	}
	if (acc(p, "mhtype")) {
		so->mhtype = true;
		so->type_pos = pos;
		return parse_range(p, "a Mobility Header type or range", 255, &so->sel.sport_lo,
				   &so->sel.sport_hi) ? -1 : 1;
	}
	return 0;
}

static bool proto_has_ports(uint8_t proto)
{
	return proto == 6 || proto == 17 || proto == 132 || proto == 136;
}

static int sel_finish(struct ps *p, struct selopt *so)
{
	struct sadb_selector *s = &so->sel;

	if ((so->sport || so->dport) && !proto_has_ports(s->proto))
		return PERR(p, so->port_pos, "'port' needs 'proto tcp', 'proto udp' or 'proto sctp'");
	if ((so->type || so->code) && s->proto != 1 && s->proto != 58)
		return PERR(p, so->type_pos, "ICMP 'type'/'code' need 'proto icmp' or 'proto icmp6'");
	if (so->mhtype && s->proto != 135)
		return PERR(p, so->type_pos, "'mhtype' needs 'proto mh'");
	if (s->src.family && s->dst.family && s->src.family != s->dst.family)
		return PERR(p, so->from_pos, "'from' and 'to' are of different address families");
	return 0;
}

/* SA options shared by `sa` and the pair statements. Keys stay text until the transform is known. */
struct saopt {
	struct sadb_sa t;           /* template: options write straight into it */
	const struct ctl_enc_alg *enc;
	const struct ctl_auth_alg *auth;
	struct ctl_pos enc_pos, auth_pos, key_pos, akey_pos, reqid_pos;
	struct ctl_pos key_in_pos, akey_in_pos; /* the IN half of "OUT:IN" (pairs) */
	char *key, *akey;           /* text as written ("0x..", "0x..:0x.."), owned */
	char *key_file, *akey_file;
	unsigned key_part, akey_part;
	bool reqid_set, replay_set;
	struct selopt sel;          /* `selector ...` (sa) */
	bool sel_set;
};

static void saopt_init(struct saopt *o)
{
	memset(o, 0, sizeof(*o));
	o->t.state = SADB_STATE_MATURE;
	o->t.replay_window = SADB_REPLAY_DEFAULT;
	o->t.dscp = 0xff;
	sel_init(&o->t.sel);
	selopt_init(&o->sel);
}


static void saopt_free(struct saopt *o)
{
	wipe_free(o->key);
	wipe_free(o->akey);
	free(o->key_file);
	free(o->akey_file);
	explicit_bzero(&o->t, sizeof(o->t));
}

/* Read a key file: the same text as an inline key ("0x..." or "0x...:0x..."), whitespace ignored. */
static char *read_key_file(struct ps *p, struct ctl_pos pos, const char *path)
{
	char buf[1024];
	char *out;
	size_t n = 0, o = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		PERR(p, pos, "cannot read key file '%s': %s", path, strerror(errno));
		return NULL;
	}
	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	out = malloc(n + 1);
	if (!out) {
		explicit_bzero(buf, sizeof(buf));
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)buf[i]))
			out[o++] = buf[i];
	out[o] = 0;
	explicit_bzero(buf, sizeof(buf));
	if (o == 0) {
		free(out);
		PERR(p, pos, "key file '%s' is empty", path);
		return NULL;
	}
	return out;
}

static int parse_key(struct ps *p, char **key, char **file, unsigned *part, struct ctl_pos *pos,
		     struct ctl_pos *in_pos)
{
	const char *s, *half2;

	*pos = *in_pos = here(p);
	if (*key)
		return PERR(p, *pos, "key given twice");
	if (acc(p, "file")) {
		struct ctl_pos fpos = here(p);

		if (!(s = next(p, "a key file name")))
			return -1;
		*file = strdup(s);
		*key = read_key_file(p, fpos, s);
		if (!*key)
			return -1;
		/* "part out|in": one SA keyed from a file that holds a pair's "OUT:IN" (what -n
		 * prints for the halves of an expanded pair). */
		if (acc(p, "part")) {
			char *colon = strchr(*key, ':'), *half;

			if (acc(p, "out"))
				*part = 1;
			else if (acc(p, "in"))
				*part = 2;
			else
				return PERR(p, here(p), "expected 'out' or 'in' after 'part', got %s",
					    got(p));
			if (!colon)
				return PERR(p, fpos, "key file '%s' holds one key, not 'OUT:IN'", s);
			half = *part == 1 ? strndup(*key, (size_t)(colon - *key)) : strdup(colon + 1);
			wipe_free(*key);
			*key = half;
			return half ? 0 : -1;
		}
		return 0;
	}
	if (!(s = next(p, "a hex key (0x...) or 'file PATH'")))
		return -1;
	/* Messages about the IN key of a pair point at it when it is written out in the line. */
	if (pos->line && !p->t[p->i - 1].quoted && !p->t[p->i - 1].macro && (half2 = strchr(s, ':')))
		in_pos->col += (unsigned)(half2 - s) + 1;
	*key = strdup(s);
	return *key ? 0 : -1;
}

static int parse_lifetime(struct ps *p, struct sadb_lifetime *lt, const char *which)
{
	int n = 0;

	for (;;) {
		struct ctl_pos pos = here(p);

		if (acc(p, "bytes")) {
			if (parse_u64(p, "a byte count", UINT64_MAX, &lt->bytes))
				return -1;
		} else if (acc(p, "packets")) {
			if (parse_u64(p, "a packet count", UINT64_MAX, &lt->packets))
				return -1;
		} else if (acc(p, "time") || acc(p, "add")) {
			const char *s = next(p, "a duration (seconds, or with s/m/h/d)");

			if (!s)
				return -1;
			if (ctl_duration_parse(s, &lt->add_seconds))
				return PERR(p, pos, "expected a duration (e.g. 3600, 60m, 1h), got '%s'", s);
		} else if (acc(p, "use") || acc(p, "idle")) {
			const char *s = next(p, "a duration (seconds, or with s/m/h/d)");

			if (!s)
				return -1;
			if (ctl_duration_parse(s, &lt->use_seconds))
				return PERR(p, pos, "expected a duration (e.g. 3600, 60m, 1h), got '%s'", s);
		} else {
			break;
		}
		n++;
	}
	if (!n)
		return PERR(p, here(p), "expected 'bytes', 'packets', 'time' or 'use' after '%s', "
			    "got %s", which, got(p));
	return 0;
}

/* 1 consumed, 0 not an SA option, -1 error. */
static int sa_option(struct ps *p, struct saopt *o, bool allow_selector)
{
	struct ctl_pos pos = here(p);
	struct sadb_sa *t = &o->t;
	const char *s;
	uint32_t v;

	if (acc(p, "enc")) {
		char name[64];
		char *dash;

		o->enc_pos = here(p);
		if (o->enc)
			return PERR(p, pos, "'enc' given twice");
		if (!(s = next(p, "an encryption algorithm (e.g. aes128gcm16, aes256-sha256)")))
			return -1;
		snprintf(name, sizeof(name), "%s", s);
		/* strongSwan proposal style "aes256-sha256[-esn]": cipher, then integrity. */
		if ((dash = strchr(name, '-')) && !ctl_enc_find(name)) {
			char *rest = dash + 1, *d2;

			*dash = 0;
			if ((d2 = strrchr(rest, '-')) && (!strcasecmp(d2, "-esn") ||
							   !strcasecmp(d2, "-noesn"))) {
				if (!strcasecmp(d2, "-esn"))
					t->flags |= SADB_SAF_ESN;
				*d2 = 0;
			}
			if (!strcasecmp(rest, "esn") || !strcasecmp(rest, "noesn")) {
				if (!strcasecmp(rest, "esn"))
					t->flags |= SADB_SAF_ESN;
			} else if (*rest) {
				if (o->auth)
					return PERR(p, o->enc_pos, "integrity given twice ('%s' and "
						    "'auth')", s);
				o->auth = ctl_auth_find(rest);
				o->auth_pos = o->enc_pos;
				if (!o->auth)
					return PERR(p, o->enc_pos, "unknown integrity algorithm '%s' in "
						    "'%s' (known: %s)", rest, s, ctl_auth_names());
			}
		}
		o->enc = ctl_enc_find(name);
		if (!o->enc)
			return PERR(p, o->enc_pos, "unknown encryption algorithm '%s' (known: %s)",
				    name, ctl_enc_names());
		return 1;
	}
	if (acc(p, "auth")) {
		o->auth_pos = here(p);
		if (o->auth)
			return PERR(p, pos, "integrity algorithm given twice");
		if (!(s = next(p, "an integrity algorithm (e.g. sha256)")))
			return -1;
		o->auth = ctl_auth_find(s);
		if (!o->auth)
			return PERR(p, o->auth_pos, "unknown integrity algorithm '%s' (known: %s)", s,
				    ctl_auth_names());
		return 1;
	}
	if (acc(p, "key") || acc(p, "enckey"))
		return parse_key(p, &o->key, &o->key_file, &o->key_part, &o->key_pos,
				 &o->key_in_pos) ? -1 : 1;
	if (acc(p, "authkey"))
		return parse_key(p, &o->akey, &o->akey_file, &o->akey_part, &o->akey_pos,
				 &o->akey_in_pos) ? -1 : 1;
	if (acc(p, "reqid")) {
		o->reqid_pos = here(p);
		o->reqid_set = true;
		return parse_u32(p, "a reqid (1-4294967295)", UINT32_MAX, &t->reqid) ? -1 : 1;
	}
	if (acc(p, "replay")) {
		o->replay_set = true;
		if (acc(p, "off")) {
			t->flags |= SADB_SAF_NO_REPLAY;
			t->replay_window = 0;
			return 1;
		}
		if (parse_u32(p, "a replay window size (packets, up to 4096) or 'off'",
			      SADB_REPLAY_MAX, &t->replay_window))
			return -1;
		if (t->replay_window == 0)
			return PERR(p, pos, "replay window 0: write 'replay off' to disable "
				    "anti-replay");
		return 1;
	}
	if (acc(p, "esn")) {
		t->flags |= SADB_SAF_ESN;
		return 1;
	}
	if (acc(p, "legacy")) {
		t->flags |= SADB_SAF_LEGACY_OK;
		return 1;
	}
	if (acc(p, "decap-dscp")) {
		t->flags |= SADB_SAF_DECAP_DSCP;
		return 1;
	}
	if (acc(p, "noecn")) {
		t->flags |= SADB_SAF_NO_ECN;
		return 1;
	}
	if (acc(p, "df")) {
		t->flags &= ~(SADB_SAF_DF_SET | SADB_SAF_DF_CLEAR);
		if (acc(p, "set"))
			t->flags |= SADB_SAF_DF_SET;
		else if (acc(p, "clear"))
			t->flags |= SADB_SAF_DF_CLEAR;
		else if (!acc(p, "copy"))
			return PERR(p, here(p), "expected 'copy', 'set' or 'clear' after 'df', got %s",
				    got(p));
		return 1;
	}
	if (acc(p, "encap")) {
		if (!acc(p, "udp"))
			return PERR(p, here(p), "expected 'udp' after 'encap', got %s", got(p));
		if (parse_u32(p, "a UDP source port", 65535, &v))
			return -1;
		t->encap_sport = (uint16_t)v;
		if (parse_u32(p, "a UDP destination port", 65535, &v))
			return -1;
		t->encap_dport = (uint16_t)v;
		if (!t->encap_sport || !t->encap_dport)
			return PERR(p, pos, "UDP encapsulation ports must not be 0");
		return 1;
	}
	if (acc(p, "state")) {
		if (acc(p, "larval"))
			t->state = SADB_STATE_LARVAL;
		else if (acc(p, "mature"))
			t->state = SADB_STATE_MATURE;
		else if (acc(p, "dying"))
			t->state = SADB_STATE_DYING;
		else if (acc(p, "dead"))
			t->state = SADB_STATE_DEAD;
		else
			return PERR(p, here(p), "expected 'larval', 'mature', 'dying' or 'dead' after "
				    "'state', got %s", got(p));
		return 1;
	}
	if (acc(p, "icv")) {
		if (parse_u32(p, "an ICV length in bytes", 64, &v))
			return -1;
		t->icv_len = (uint8_t)v;
		return 1;
	}
	if (acc(p, "tfc")) {
		if (parse_u32(p, "a TFC padding length in bytes", 65535, &v))
			return -1;
		t->tfc_pad = (uint16_t)v;
		return 1;
	}
	if (acc(p, "ttl") || acc(p, "hoplimit")) {
		if (parse_u32(p, "a TTL (1-255)", 255, &v))
			return -1;
		if (!v)
			return PERR(p, pos, "TTL 0 would drop every packet");
		t->ttl = (uint8_t)v;
		return 1;
	}
	if (acc(p, "dscp")) {
		if (acc(p, "copy")) {
			t->dscp = 0xff;
			return 1;
		}
		if (parse_u32(p, "a DSCP (0-63) or 'copy'", 63, &v))
			return -1;
		t->dscp = (uint8_t)v;
		return 1;
	}
	if (acc(p, "mtu")) {
		if (parse_u32(p, "an MTU in bytes", 65535, &t->mtu))
			return -1;
		if (t->mtu && t->mtu < 576)
			return PERR(p, pos, "MTU %u is below the IPv4 minimum of 576", t->mtu);
		return 1;
	}
	if (acc(p, "ikeid"))
		return parse_u32(p, "an IKE SA id", UINT32_MAX, &t->ike_id) ? -1 : 1;
	if (acc(p, "soft"))
		return parse_lifetime(p, &t->soft, "soft") ? -1 : 1;
	if (acc(p, "hard"))
		return parse_lifetime(p, &t->hard, "hard") ? -1 : 1;
	if (allow_selector && acc(p, "selector")) {
		int n = 0, r;

		if (o->sel_set)
			return PERR(p, pos, "'selector' given twice");
		o->sel_set = true;
		while ((r = sel_option(p, &o->sel)) == 1)
			n++;
		if (r < 0)
			return -1;
		if (!n)
			return PERR(p, here(p), "expected 'from', 'to' or 'proto' after 'selector', got %s",
				    got(p));
		return 1;
	}
	return 0;
}

static int key_material(struct ps *p, const char *text, struct ctl_pos pos, const char *alg,
			unsigned key_len, unsigned salt_len, uint8_t *key, uint8_t *salt,
			uint8_t *klen_out, uint8_t *slen_out, const char *kw)
{
	uint8_t buf[SADB_AUTH_KEY_MAX + SADB_SALT_MAX];
	size_t n;
	char msg[200];

	if (!text) {
		if (key_len + salt_len == 0)
			return 0;
		return PERR(p, pos, "%s needs a key: add '%s 0x...' (%u bytes)", alg, kw,
			    key_len + salt_len);
	}
	if (key_len + salt_len == 0)
		return PERR(p, pos, "%s takes no key: remove '%s'", alg, kw);
	if (ctl_hex_parse(text, buf, sizeof(buf), &n, msg, sizeof(msg)))
		return PERR(p, pos, "%s", msg);
	if (n != key_len + salt_len) {
		explicit_bzero(buf, sizeof(buf));
		if (salt_len)
			return PERR(p, pos, "wrong key length for %s: need %u bytes (%u-byte key + "
				    "%u-byte salt), got %zu", alg, key_len + salt_len, key_len,
				    salt_len, n);
		return PERR(p, pos, "wrong key length for %s: need %u bytes, got %zu", alg, key_len,
			    n);
	}
	memcpy(key, buf, key_len);
	memcpy(salt, buf + key_len, salt_len);
	*klen_out = (uint8_t)key_len;
	if (salt_len)
		*slen_out = (uint8_t)salt_len;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

/* Split "A:B" for a pair; single SAs take one key. Writes into a/b (owned by caller). */
static int split_pair(struct ps *p, const char *text, struct ctl_pos pos, bool pair, char **a,
		      char **b, const char *kw)
{
	const char *colon;

	*a = *b = NULL;
	if (!text)
		return 0;
	colon = strchr(text, ':');
	if (!pair) {
		if (colon)
			return PERR(p, pos, "one SA takes one %s; 'A:B' pairs are for 'esp|ah ... spi "
				    "OUT:IN'", kw);
		*a = strdup(text);
		return 0;
	}
	if (!colon || strchr(colon + 1, ':'))
		return PERR(p, pos, "an SA pair takes two keys: '%s OUT:IN' (one per direction)", kw);
	/* Whether the two directions share a key is a question about bytes, not text ("0xAB" is
	 * "ab"): ctl_conf_validate answers it, for every SA of the file and the SADB. */
	*a = strndup(text, (size_t)(colon - text));
	*b = strdup(colon + 1);
	return 0;
}

/* Turn the transform and key text of o into SA k's fields. */
static int sa_crypto(struct ps *p, struct saopt *o, struct sadb_sa *sa, const char *key,
		     const char *akey)
{
	const char *ename = o->enc ? o->enc->name : "";

	if (sa->proto == SADB_PROTO_AH) {
		if (o->enc)
			return PERR(p, o->enc_pos, "AH has no encryption: use 'auth' only");
		if (!o->auth)
			return PERR(p, p->t[0].pos, "AH SA needs an integrity algorithm: add 'auth "
				    "sha256' (or another of: %s)", ctl_auth_names());
		if (key)
			return PERR(p, o->key_pos, "AH has no encryption key: use 'authkey'");
	} else {
		if (!o->enc)
			return PERR(p, p->t[0].pos, "ESP SA needs an encryption algorithm: add 'enc "
				    "aes128gcm16' (or another of: %s)", ctl_enc_names());
		if (o->auth && o->auth->ah_only)
			return PERR(p, o->auth_pos, "'auth %s' is for AH; for ESP write 'enc %s'",
				    o->auth->name, o->auth->name);
		if (o->enc->aead && o->auth)
			return PERR(p, o->auth_pos, "%s already includes integrity: remove 'auth'",
				    ename);
		if (!o->enc->aead && !o->auth)
			return PERR(p, o->enc_pos, "%s needs an integrity algorithm: add 'auth sha256' "
				    "or use an AEAD such as aes128gcm16", ename);
		sa->enc_alg = o->enc->enc;
		if (key_material(p, key, o->key_pos.line || o->key_pos.col ? o->key_pos : o->enc_pos,
				 ename, o->enc->key_len, o->enc->salt_len, sa->enc_key, sa->salt,
				 &sa->enc_key_len, &sa->salt_len, "key"))
			return -1;
		if (o->enc->legacy && !(sa->flags & SADB_SAF_LEGACY_OK))
			return PERR(p, o->enc_pos, "%s is a legacy transform (RFC 8221): add 'legacy' "
				    "to use it", ename);
	}
	if (o->auth) {
		uint8_t *salt = sa->salt, dummy;

		sa->auth_alg = o->auth->auth;
		if (key_material(p, akey, o->akey_pos.line || o->akey_pos.col ? o->akey_pos :
				 o->auth_pos, o->auth->name, o->auth->key_len, o->auth->salt_len,
				 sa->auth_key, salt, &sa->auth_key_len,
				 o->auth->salt_len ? &sa->salt_len : &dummy, "authkey"))
			return -1;
		if (o->auth->legacy && !(sa->flags & SADB_SAF_LEGACY_OK))
			return PERR(p, o->auth_pos, "%s is a legacy transform (RFC 8221): add 'legacy' "
				    "to use it", o->auth->name);
	} else if (akey) {
		return PERR(p, o->akey_pos, "'authkey' without an integrity algorithm");
	}
	return 0;
}

static int check_spi(struct ps *p, uint64_t spi, struct ctl_pos pos)
{
	if (spi < 256)
		return PERR(p, pos, "SPI %" PRIu64 " is reserved (RFC 4303: 0-255 are not usable); "
			    "use 0x100-0xffffffff", spi);
	return 0;
}

static struct ctl_item *item_new(struct ctl_conf *c, enum ctl_item_kind kind, struct ctl_pos pos)
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

static int parse_proto_mode(struct ps *p, uint8_t *proto, uint8_t *mode, bool need_proto)
{
	if (acc(p, "esp"))
		*proto = SADB_PROTO_ESP;
	else if (acc(p, "ah"))
		*proto = SADB_PROTO_AH;
	else if (need_proto)
		return PERR(p, here(p), "expected 'esp' or 'ah', got %s", got(p));
	if (acc(p, "tunnel"))
		*mode = SADB_MODE_TUNNEL;
	else if (acc(p, "transport"))
		*mode = SADB_MODE_TRANSPORT;
	else
		return PERR(p, here(p), "expected 'tunnel' or 'transport', got %s", got(p));
	return 0;
}

static int unknown(struct ps *p, const char *ctx, const char *expected)
{
	return PERR(p, here(p), "unexpected %s in %s (expected %s)", got(p), ctx, expected);
}

#define SA_OPTS "enc, auth, key, authkey, reqid, replay, esn, legacy, encap, state, icv, tfc, " \
	"ttl, dscp, df, noecn, decap-dscp, mtu, ikeid, soft, hard"

/* sa PROTO MODE from ADDR to ADDR spi SPI in|out [options] */
static int parse_sa(struct ps *p)
{
	struct saopt o;
	struct sadb_sa *t = &o.t;
	bool have_src = false, have_dst = false, have_spi = false;
	struct ctl_pos spi_pos = { 0, 0 }, dst_pos = { 0, 0 }, src_pos;
	struct ctl_item *it;
	uint64_t spi = 0;
	int rc = -1, r;

	saopt_init(&o);
	if (parse_proto_mode(p, &t->proto, &t->mode, true))
		goto out;
	while (peek(p)) {
		struct ctl_pos pos = here(p);

		if (acc(p, "from")) {
			if (parse_addr(p, "the source address", &t->src, &src_pos))
				goto out;
			have_src = true;
		} else if (acc(p, "to")) {
			if (parse_addr(p, "the destination address", &t->dst, &dst_pos))
				goto out;
			have_dst = true;
		} else if (acc(p, "spi")) {
			spi_pos = here(p);
			if (parse_u64(p, "an SPI (0x100-0xffffffff)", UINT32_MAX, &spi))
				goto out;
			have_spi = true;
		} else if (acc(p, "in")) {
			t->dir = SADB_DIR_IN;
		} else if (acc(p, "out")) {
			t->dir = SADB_DIR_OUT;
		} else if ((r = sa_option(p, &o, true)) != 0) {
			if (r < 0)
				goto out;
		} else {
			unknown(p, "SA", "from, to, spi, in, out, selector, " SA_OPTS);
			goto out;
		}
		(void)pos;
	}
	if (!have_src || !have_dst || !have_spi || !t->dir) {
		PERR(p, here(p), "incomplete SA: missing %s", !have_src ? "'from ADDR'" :
		     !have_dst ? "'to ADDR'" : !have_spi ? "'spi SPI'" : "direction 'in' or 'out'");
		goto out;
	}
	if (check_spi(p, spi, spi_pos))
		goto out;
	t->spi = (uint32_t)spi;
	if (t->src.family != t->dst.family) {
		PERR(p, dst_pos, "'from' and 'to' are of different address families");
		goto out;
	}
	if (o.sel_set) {
		if (sel_finish(p, &o.sel))
			goto out;
		t->sel = o.sel.sel;
	}
	{
		char *k = NULL, *k2 = NULL, *a = NULL, *a2 = NULL;

		if (split_pair(p, o.key, o.key_pos, false, &k, &k2, "key") ||
		    split_pair(p, o.akey, o.akey_pos, false, &a, &a2, "authkey") ||
		    sa_crypto(p, &o, t, k, a)) {
			wipe_free(k);
			wipe_free(a);
			goto out;
		}
		wipe_free(k);
		wipe_free(a);
	}
	if (!(it = item_new(p->c, CTL_IT_SA, p->t[0].pos)))
		goto out;
	it->sa = *t;
	it->spi_pos = spi_pos;
	it->dst_pos = dst_pos;
	it->reqid_pos = o.reqid_set ? o.reqid_pos : p->t[0].pos;
	it->key_pos = o.key_pos;
	it->authkey_pos = o.akey_pos;
	it->key_file = o.key_file;
	it->authkey_file = o.akey_file;
	it->key_part = o.key_part;
	it->authkey_part = o.akey_part;
	o.key_file = o.akey_file = NULL;
	rc = 0;
out:
	saopt_free(&o);
	return rc;
}

struct polopt {
	struct selopt sel;
	bool action_set, local_set, peer_set, mode_set, proto_set, reqid_set;
	struct sadb_policy pol;
	struct ctl_pos action_pos, reqid_pos, local_pos;
};

/* Policy keywords other than selector ones: 1 consumed, 0 not one, -1 error. */
static int pol_option(struct ps *p, struct polopt *po, bool pair)
{
	struct ctl_pos pos = here(p);
	struct sadb_policy *pol = &po->pol;

	if (acc(p, "priority"))
		return parse_u32(p, "a priority (lower wins)", UINT32_MAX, &pol->priority) ? -1 : 1;
	if (pair)
		return 0;
	if (acc(p, "reqid")) {
		po->reqid_set = true;
		po->reqid_pos = here(p);
		return parse_u32(p, "a reqid (1-4294967295)", UINT32_MAX, &pol->reqid) ? -1 : 1;
	}
	if (acc(p, "bypass") || acc(p, "pass")) {
		if (po->action_set)
			return PERR(p, pos, "action given twice");
		po->action_set = true;
		po->action_pos = pos;
		pol->action = SADB_ACT_BYPASS;
		return 1;
	}
	if (acc(p, "discard") || acc(p, "drop") || acc(p, "block")) {
		if (po->action_set)
			return PERR(p, pos, "action given twice");
		po->action_set = true;
		po->action_pos = pos;
		pol->action = SADB_ACT_DISCARD;
		return 1;
	}
	if (acc(p, "protect") || acc(p, "ipsec")) {
		if (po->action_set)
			return PERR(p, pos, "action given twice");
		po->action_set = true;
		po->action_pos = pos;
		pol->action = SADB_ACT_PROTECT;
		return 1;
	}
	if (acc(p, "esp") || acc(p, "ah")) {
		pol->proto = !strcasecmp(p->t[p->i - 1].s, "esp") ? SADB_PROTO_ESP : SADB_PROTO_AH;
		po->proto_set = true;
		return 1;
	}
	if (acc(p, "tunnel")) {
		pol->mode = SADB_MODE_TUNNEL;
		po->mode_set = true;
		return 1;
	}
	if (acc(p, "transport")) {
		pol->mode = SADB_MODE_TRANSPORT;
		po->mode_set = true;
		return 1;
	}
	if (acc(p, "local")) {
		po->local_set = true;
		return parse_addr(p, "the local tunnel endpoint", &pol->tun_src, &po->local_pos)
			? -1 : 1;
	}
	if (acc(p, "peer")) {
		po->peer_set = true;
		return parse_addr(p, "the peer tunnel endpoint", &pol->tun_dst, NULL) ? -1 : 1;
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
	selopt_init(&po.sel);
	if (acc(p, "in"))
		pol->dir = SADB_DIR_IN;
	else if (acc(p, "out"))
		pol->dir = SADB_DIR_OUT;
	else if (acc(p, "fwd"))
		pol->dir = SADB_DIR_FWD;
	else
		return PERR(p, here(p), "expected a direction 'in', 'out' or 'fwd', got %s", got(p));
	while (peek(p)) {
		if ((r = sel_option(p, &po.sel)) < 0 || (r == 0 && (r = pol_option(p, &po, false)) < 0))
			return -1;
		if (r == 0)
			return unknown(p, "policy", "from, to, proto, port, sport, dport, type, code, mhtype, protect, "
				       "bypass, discard, esp, ah, tunnel, transport, local, peer, reqid, "
				       "priority");
	}
	if (sel_finish(p, &po.sel))
		return -1;
	pol->sel = po.sel.sel;
	if (!po.action_set)
		return PERR(p, here(p), "incomplete policy: missing the action 'protect', 'bypass' "
			    "or 'discard'");
	if (pol->action != SADB_ACT_PROTECT) {
		if (po.reqid_set || po.proto_set || po.mode_set || po.local_set || po.peer_set)
			return PERR(p, po.action_pos, "'%s' takes no reqid, protocol, mode or tunnel "
				    "endpoints", ctl_action_name(pol->action));
	} else {
		if (!po.proto_set)
			pol->proto = SADB_PROTO_ESP;
		if (!po.mode_set)
			pol->mode = po.local_set || po.peer_set ? SADB_MODE_TUNNEL :
				SADB_MODE_TRANSPORT;
		if (pol->mode == SADB_MODE_TUNNEL && (!po.local_set || !po.peer_set))
			return PERR(p, here(p), "tunnel policy needs 'local ADDR' and 'peer ADDR'");
		if (pol->mode == SADB_MODE_TRANSPORT && (po.local_set || po.peer_set))
			return PERR(p, po.local_pos, "'local'/'peer' are tunnel endpoints; a transport "
				    "policy has none");
		if (pol->mode == SADB_MODE_TUNNEL && pol->tun_src.family != pol->tun_dst.family)
			return PERR(p, po.local_pos, "'local' and 'peer' are of different address "
				    "families");
		if (!po.reqid_set || !pol->reqid)
			return PERR(p, here(p), "protect policy needs 'reqid N' naming its SAs");
	}
	/* "local" is always this gateway: outbound packets leave from it, inbound ones arrive at it,
	 * so for in/fwd the outer source is the peer. */
	if (pol->mode == SADB_MODE_TUNNEL && pol->dir != SADB_DIR_OUT) {
		struct sadb_addr tmp = pol->tun_src;

		pol->tun_src = pol->tun_dst;
		pol->tun_dst = tmp;
	}
	if (!(it = item_new(p->c, CTL_IT_POLICY, p->t[0].pos)))
		return -1;
	it->pol = *pol;
	it->reqid_pos = po.reqid_set ? po.reqid_pos : p->t[0].pos;
	return 0;
}

static void sel_reverse(struct sadb_selector *s)
{
	struct sadb_addr a = s->src;
	uint8_t l = s->src_plen;
	uint16_t lo = s->sport_lo, hi = s->sport_hi;

	s->src = s->dst;
	s->src_plen = s->dst_plen;
	s->dst = a;
	s->dst_plen = l;
	/* ICMP type/code and the MH type are not source/destination pairs: keep them. */
	if (proto_has_ports(s->proto)) {
		s->sport_lo = s->dport_lo;
		s->sport_hi = s->dport_hi;
		s->dport_lo = lo;
		s->dport_hi = hi;
	}
}

/* esp|ah tunnel [selector] local A peer B spi OUT:IN [SA options] [priority N]
 * esp|ah transport from A to B spi OUT:IN [SA options] [priority N]
 * Two SAs (out: local->peer, in: peer->local) and the two policies binding them. */
static int parse_pair(struct ps *p)
{
	struct saopt o;
	struct polopt po;
	struct sadb_sa sa[2];
	struct sadb_addr local, peer;
	struct ctl_pos spi_pos = { 0, 0 }, local_pos = { 0, 0 }, peer_pos = { 0, 0 };
	bool have_local = false, have_peer = false, have_spi = false;
	uint64_t spi[2] = { 0, 0 };
	char *k[2] = { NULL, NULL }, *a[2] = { NULL, NULL };
	int rc = -1, r;

	saopt_init(&o);
	memset(&po, 0, sizeof(po));
	selopt_init(&po.sel);
	memset(&local, 0, sizeof(local));
	memset(&peer, 0, sizeof(peer));
	p->i = 0;
	if (parse_proto_mode(p, &o.t.proto, &o.t.mode, true))
		goto out;
	while (peek(p)) {
		if (acc(p, "local")) {
			if (parse_addr(p, "the local tunnel endpoint", &local, &local_pos))
				goto out;
			have_local = true;
		} else if (acc(p, "peer")) {
			if (parse_addr(p, "the peer address", &peer, &peer_pos))
				goto out;
			have_peer = true;
		} else if (acc(p, "spi")) {
			const char *s;
			char buf[64], *colon;

			spi_pos = here(p);
			if (!(s = next(p, "two SPIs 'OUT:IN'")))
				goto out;
			snprintf(buf, sizeof(buf), "%s", s);
			colon = strchr(buf, ':');
			if (!colon) {
				PERR(p, spi_pos, "an SA pair takes two SPIs 'OUT:IN', got '%s'", s);
				goto out;
			}
			*colon = 0;
			if (ctl_u64_parse(buf, UINT32_MAX, &spi[0]) ||
			    ctl_u64_parse(colon + 1, UINT32_MAX, &spi[1])) {
				PERR(p, spi_pos, "expected two SPIs 'OUT:IN' (0x100-0xffffffff), got '%s'",
				     s);
				goto out;
			}
			have_spi = true;
		} else if ((r = sel_option(p, &po.sel)) != 0 || (r = pol_option(p, &po, true)) != 0 ||
			   (r = sa_option(p, &o, false)) != 0) {
			if (r < 0)
				goto out;
		} else {
			unknown(p, "SA pair", "from, to, proto, local, peer, spi, priority, " SA_OPTS);
			goto out;
		}
	}
	if (o.t.mode == SADB_MODE_TRANSPORT) {
		if (have_local || have_peer) {
			PERR(p, have_local ? local_pos : peer_pos, "a transport pair takes its "
			     "endpoints from 'from' and 'to'; 'local'/'peer' are for tunnels");
			goto out;
		}
		if (!po.sel.from || !po.sel.to) {
			PERR(p, here(p), "incomplete SA pair: missing '%s ADDR'", po.sel.from ? "to" :
			     "from");
			goto out;
		}
		if (po.sel.sel.src_plen != (po.sel.sel.src.family == AF_INET ? 32 : 128) ||
		    po.sel.sel.dst_plen != (po.sel.sel.dst.family == AF_INET ? 32 : 128)) {
			PERR(p, po.sel.from_pos, "transport mode protects traffic between two hosts: "
			     "'from' and 'to' must be single addresses");
			goto out;
		}
		local = po.sel.sel.src;
		peer = po.sel.sel.dst;
	} else if (!have_local || !have_peer) {
		PERR(p, here(p), "incomplete SA pair: missing '%s ADDR'", have_local ? "peer" : "local");
		goto out;
	}
	if (!have_spi) {
		PERR(p, here(p), "incomplete SA pair: missing 'spi OUT:IN'");
		goto out;
	}
	if (check_spi(p, spi[0], spi_pos) || check_spi(p, spi[1], spi_pos))
		goto out;
	if (local.family != peer.family) {
		PERR(p, peer_pos.line || peer_pos.col ? peer_pos : p->t[0].pos,
		     "'local' and 'peer' are of different address families");
		goto out;
	}
	if (sel_finish(p, &po.sel))
		goto out;
	if (o.key_part || o.akey_part) {
		PERR(p, o.key_part ? o.key_pos : o.akey_pos, "'part' selects one SA's half of a key "
		     "file; a pair takes both halves");
		goto out;
	}
	if (!o.reqid_set)
		o.t.reqid = (uint32_t)spi[0];
	if (split_pair(p, o.key, o.key_pos, true, &k[0], &k[1], "key") ||
	    split_pair(p, o.akey, o.akey_pos, true, &a[0], &a[1], "authkey"))
		goto out;
	for (int d = 0; d < 2; d++) {
		sa[d] = o.t;
		sa[d].spi = (uint32_t)spi[d];
		sa[d].dir = d == 0 ? SADB_DIR_OUT : SADB_DIR_IN;
		sa[d].src = d == 0 ? local : peer;
		sa[d].dst = d == 0 ? peer : local;
		sa[d].sel = po.sel.sel;
		if (d == 1)
			sel_reverse(&sa[d].sel);
		if (sa_crypto(p, &o, &sa[d], k[d], a[d]))
			goto out;
	}
	for (int d = 0; d < 2; d++) {
		struct ctl_item *it = item_new(p->c, CTL_IT_SA, p->t[0].pos);

		if (!it)
			goto out;
		it->sa = sa[d];
		it->spi_pos = spi_pos;
		it->dst_pos = d == 0 ? peer_pos : local_pos;
		it->reqid_pos = o.reqid_set ? o.reqid_pos : spi_pos;
		it->key_pos = d == 0 ? o.key_pos : o.key_in_pos;
		it->authkey_pos = d == 0 ? o.akey_pos : o.akey_in_pos;
		if (o.key_file) {
			it->key_file = strdup(o.key_file);
			it->key_part = (unsigned)d + 1;
		}
		if (o.akey_file) {
			it->authkey_file = strdup(o.akey_file);
			it->authkey_part = (unsigned)d + 1;
		}
	}
	for (int d = 0; d < 2; d++) {
		struct ctl_item *it = item_new(p->c, CTL_IT_POLICY, p->t[0].pos);
		struct sadb_policy *pol;

		if (!it)
			goto out;
		pol = &it->pol;
		*pol = po.pol;
		pol->dir = d == 0 ? SADB_DIR_OUT : SADB_DIR_IN;
		pol->action = SADB_ACT_PROTECT;
		pol->proto = o.t.proto;
		pol->mode = o.t.mode;
		pol->reqid = o.t.reqid;
		pol->sel = sa[d].sel;
		if (o.t.mode == SADB_MODE_TUNNEL) {
			pol->tun_src = sa[d].src;
			pol->tun_dst = sa[d].dst;
		}
		it->reqid_pos = it->spi_pos = spi_pos;
	}
	rc = 0;
out:
	for (int d = 0; d < 2; d++) {
		wipe_free(k[d]);
		wipe_free(a[d]);
	}
	explicit_bzero(sa, sizeof(sa));
	saopt_free(&o);
	return rc;
}

static int parse_flush(struct ps *p)
{
	struct ctl_item *it;
	unsigned what = CTL_FLUSH_SA | CTL_FLUSH_POL;

	if (p->seen_other)
		return PERR(p, p->t[0].pos, "'flush' must come before the SAs and policies it would "
			    "remove");
	if (acc(p, "sa"))
		what = CTL_FLUSH_SA;
	else if (acc(p, "policy"))
		what = CTL_FLUSH_POL;
	else
		acc(p, "all");
	if (peek(p))
		return unknown(p, "flush", "'sa', 'policy', 'all' or the end of the line");
	if (!(it = item_new(p->c, CTL_IT_FLUSH, p->t[0].pos)))
		return -1;
	it->flush = what;
	return 0;
}

static int parse_stmt(struct ps *p)
{
	struct tok *t = peek(p);

	if (!strcasecmp(t->s, "flush") && !t->quoted) {
		p->i++;
		return parse_flush(p);
	}
	p->seen_other = true;
	if (!strcasecmp(t->s, "sa") && !t->quoted) {
		p->i++;
		return parse_sa(p);
	}
	if ((!strcasecmp(t->s, "policy") || !strcasecmp(t->s, "flow")) && !t->quoted) {
		p->i++;
		return parse_policy(p);
	}
	if ((!strcasecmp(t->s, "esp") || !strcasecmp(t->s, "ah")) && !t->quoted)
		return parse_pair(p);
	return PERR(p, t->pos, "expected a statement ('sa', 'policy', 'esp', 'ah' or 'flush'), "
		    "got '%.60s'", t->s);
}

/* Macros, as in OpenBSD's ipsec.conf: `name = value` defines, a word `$name` uses. The value is
 * one word (quote it if it has blanks); it may be a key, so the table is wiped afterwards. */
struct macro {
	char *name, *value;
};

static bool macro_name_ok(const char *s)
{
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

/* 1: the statement was a definition, 0: not one, -1: error. */
static int macro_define(struct ctl_conf *c, struct tok *t, size_t n, struct macro **tab, size_t *nm)
{
	struct macro *v;

	if (n < 2 || t[1].quoted || strcmp(t[1].s, "="))
		return 0;
	if (t[0].quoted || !macro_name_ok(t[0].s)) {
		ctl_conf_error(c, t[0].pos, "bad macro name '%.60s' (letters, digits, '_' and '-', not "
			       "starting with a digit)", t[0].s);
		return -1;
	}
	if (n != 3) {
		ctl_conf_error(c, n < 3 ? t[1].pos : t[3].pos, n < 3 ?
			       "expected a value after '=' (quote it if it has blanks)" :
			       "a macro value is one word: quote it if it has blanks");
		return -1;
	}
	for (size_t i = 0; i < *nm; i++) {
		if (!strcmp((*tab)[i].name, t[0].s)) {
			wipe_free((*tab)[i].value);
			(*tab)[i].value = strdup(t[2].s);
			return 1;
		}
	}
	v = realloc(*tab, (*nm + 1) * sizeof(**tab));
	if (!v)
		return -1;
	*tab = v;
	v[*nm].name = strdup(t[0].s);
	v[*nm].value = strdup(t[2].s);
	(*nm)++;
	return 1;
}

static int macro_expand(struct ctl_conf *c, struct tok *t, size_t n, struct macro *tab, size_t nm)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		bool found = false;

		if (t[i].quoted || t[i].s[0] != '$')
			continue;
		for (size_t m = 0; m < nm && !found; m++) {
			if (strcmp(tab[m].name, t[i].s + 1))
				continue;
			found = true;
			wipe_free(t[i].s);
			t[i].s = strdup(tab[m].value);
			t[i].quoted = false;
			t[i].macro = true;
		}
		if (!found) {
			ctl_conf_error(c, t[i].pos, "undefined macro '%.60s' (define it first: "
				       "'%.60s = value')", t[i].s, t[i].s + 1);
			rc = -1;
		}
	}
	return rc;
}

static int parse_toks(struct ctl_conf *c, struct toks *ts)
{
	struct ps p = { .c = c };
	struct macro *tab = NULL;
	size_t start = 0, nm = 0;

	for (size_t i = 0; i < ts->n; i++) {
		if (ts->v[i].t != T_EOL && ts->v[i].t != T_EOF)
			continue;
		if (i > start) {
			bool bad = false;

			for (size_t j = start; j < i; j++)
				bad |= ts->v[j].t == T_BAD;
			if (!bad && macro_define(c, &ts->v[start], i - start, &tab, &nm) == 0 &&
			    macro_expand(c, &ts->v[start], i - start, tab, nm) == 0) {
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
	for (size_t m = 0; m < nm; m++) {
		free(tab[m].name);
		wipe_free(tab[m].value);
	}
	free(tab);
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
}

int ctl_conf_parse(struct ctl_conf *c, const char *text, size_t len)
{
	struct toks ts = { 0 };
	int rc = lex(c, text, len, &ts);

	if (rc == 0)
		rc = parse_toks(c, &ts);
	toks_free(&ts);
	return rc;
}

int ctl_conf_parse_argv(struct ctl_conf *c, int argc, char **argv)
{
	struct toks ts = { 0 };
	int rc = 0;

	for (int i = 0; i < argc && !rc; i++)
		rc = toks_push(&ts, T_WORD, argv[i], strlen(argv[i]), false,
			       (struct ctl_pos){ 0, (unsigned)i + 1 });
	if (!rc)
		rc = toks_push(&ts, T_EOL, NULL, 0, false, (struct ctl_pos){ 0, (unsigned)argc + 1 });
	if (!rc)
		rc = parse_toks(c, &ts);
	toks_free(&ts);
	return rc;
}

/* ---- validation across statements and against the SADB ---- */

/* Equal as libsadb stores them: an "any" side takes the other side's family with a /0 prefix. */
static void side(const struct sadb_selector *s, bool src, uint8_t *fam, const uint8_t **b,
		 uint8_t *plen)
{
	static const uint8_t zero[16];
	const struct sadb_addr *a = src ? &s->src : &s->dst;

	*fam = a->family ? a->family : src ? s->dst.family : s->src.family;
	*b = a->family ? a->a.b : zero;
	*plen = src ? s->src_plen : s->dst_plen;
}

/* Validation keys: sorted arrays instead of pairwise scans, so a file with 100k SAs against an SADB
 * holding a million validates in O(n log n). */
struct sa_key {
	uint32_t spi;
	uint8_t proto, fam;
	uint8_t a[16];
	uint32_t idx;
};

struct pol_key {
	uint32_t prio;
	uint8_t dir, proto, fs, ps, fd, pd;
	uint16_t sp_lo, sp_hi, dp_lo, dp_hi;
	uint8_t as[16], ad[16];
	uint32_t idx, id;           /* item index (file) or policy id (SADB) */
};

struct rq_key {
	uint32_t reqid;
	uint8_t proto, mode;
};

static void sa_key_make(struct sa_key *k, const struct sadb_sa *sa, uint32_t idx)
{
	memset(k, 0, sizeof(*k));
	k->spi = sa->spi;
	k->proto = sa->proto;
	k->fam = sa->dst.family;
	memcpy(k->a, sa->dst.a.b, sa->dst.family == AF_INET ? 4 : 16);
	k->idx = idx;
}

static int sa_key_cmp(const void *x, const void *y)
{
	const struct sa_key *a = x, *b = y;
	int r;

	if (a->spi != b->spi)
		return a->spi < b->spi ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	if (a->fam != b->fam)
		return a->fam < b->fam ? -1 : 1;
	if ((r = memcmp(a->a, b->a, 16)))
		return r;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void pol_key_make(struct pol_key *k, const struct sadb_policy *p, uint32_t idx)
{
	const uint8_t *b;

	memset(k, 0, sizeof(*k));
	k->prio = p->priority;
	k->dir = p->dir;
	k->proto = p->sel.proto;
	k->sp_lo = p->sel.sport_lo;
	k->sp_hi = p->sel.sport_hi;
	k->dp_lo = p->sel.dport_lo;
	k->dp_hi = p->sel.dport_hi;
	side(&p->sel, true, &k->fs, &b, &k->ps);
	memcpy(k->as, b, k->fs == AF_INET ? 4 : 16);
	side(&p->sel, false, &k->fd, &b, &k->pd);
	memcpy(k->ad, b, k->fd == AF_INET ? 4 : 16);
	k->idx = idx;
	k->id = p->id;
}

static int pol_key_cmp_noidx(const void *x, const void *y)
{
	const struct pol_key *a = x, *b = y;

	return memcmp(a, b, offsetof(struct pol_key, idx));
}

static int pol_key_cmp(const void *x, const void *y)
{
	const struct pol_key *a = x, *b = y;
	int r = pol_key_cmp_noidx(x, y);

	return r ? r : a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int rq_cmp(const void *x, const void *y)
{
	const struct rq_key *a = x, *b = y;

	if (a->reqid != b->reqid)
		return a->reqid < b->reqid ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	return a->mode < b->mode ? -1 : a->mode > b->mode;
}

/* Whether any entry has reqid (rq sorted by reqid first). */
static bool rq_has(const struct rq_key *rq, size_t n, uint32_t reqid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rq[mid].reqid < reqid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && rq[lo].reqid == reqid;
}

struct vstate {
	struct sa_key *sk;
	struct pol_key *pk, *dbp;
	struct rq_key *rq;
	uint32_t *dup_of;           /* per item: the first item it duplicates, or itself */
	size_t nsk, npk, ndbp, nrq, caprq, capdbp;
};

static int vstate_build(struct vstate *v, struct ctl_conf *c, const struct sadb *db, unsigned flush)
{
	memset(v, 0, sizeof(*v));
	v->dup_of = calloc(c->n + 1, sizeof(*v->dup_of));
	v->sk = calloc(c->n + 1, sizeof(*v->sk));
	v->pk = calloc(c->n + 1, sizeof(*v->pk));
	v->caprq = c->n + 64;
	v->rq = calloc(v->caprq, sizeof(*v->rq));
	if (!v->dup_of || !v->sk || !v->pk || !v->rq)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		v->dup_of[i] = (uint32_t)i;
		if (c->items[i].kind == CTL_IT_SA) {
			sa_key_make(&v->sk[v->nsk++], &c->items[i].sa, (uint32_t)i);
			v->rq[v->nrq++] = (struct rq_key){ c->items[i].sa.reqid, c->items[i].sa.proto,
							   c->items[i].sa.mode };
		} else if (c->items[i].kind == CTL_IT_POLICY) {
			pol_key_make(&v->pk[v->npk++], &c->items[i].pol, (uint32_t)i);
		}
	}
	qsort(v->sk, v->nsk, sizeof(*v->sk), sa_key_cmp);
	for (size_t i = 1; i < v->nsk; i++) {
		struct sa_key a = v->sk[i - 1], b = v->sk[i];

		a.idx = b.idx = 0;
		if (!sa_key_cmp(&a, &b))
			v->dup_of[v->sk[i].idx] = v->dup_of[v->sk[i - 1].idx];
	}
	qsort(v->pk, v->npk, sizeof(*v->pk), pol_key_cmp);
	for (size_t i = 1; i < v->npk; i++)
		if (!pol_key_cmp_noidx(&v->pk[i - 1], &v->pk[i]))
			v->dup_of[v->pk[i].idx] = v->dup_of[v->pk[i - 1].idx];
	if (db && !(flush & CTL_FLUSH_SA)) {
		uint32_t cur = 0;
		struct sadb_sa sa;

		while (sadb_sa_next(db, &cur, &sa, NULL) == 0) {
			if (v->nrq == v->caprq) {
				struct rq_key *r = realloc(v->rq, 2 * v->caprq * sizeof(*r));

				if (!r) {
					explicit_bzero(&sa, sizeof(sa));
					return -ENOMEM;
				}
				v->rq = r;
				v->caprq *= 2;
			}
			v->rq[v->nrq++] = (struct rq_key){ sa.reqid, sa.proto, sa.mode };
		}
		explicit_bzero(&sa, sizeof(sa));
	}
	qsort(v->rq, v->nrq, sizeof(*v->rq), rq_cmp);
	if (db && !(flush & CTL_FLUSH_POL)) {
		uint32_t cur = 0;
		struct sadb_policy o;

		while (sadb_policy_next(db, &cur, &o) == 0) {
			if (v->ndbp == v->capdbp) {
				size_t cap = v->capdbp ? 2 * v->capdbp : 64;
				struct pol_key *r = realloc(v->dbp, cap * sizeof(*r));

				if (!r)
					return -ENOMEM;
				v->dbp = r;
				v->capdbp = cap;
			}
			pol_key_make(&v->dbp[v->ndbp++], &o, 0);
		}
		if (v->ndbp)
			qsort(v->dbp, v->ndbp, sizeof(*v->dbp), pol_key_cmp_noidx);
	}
	return 0;
}

static void vstate_free(struct vstate *v)
{
	free(v->dup_of);
	free(v->sk);
	free(v->pk);
	free(v->dbp);
	free(v->rq);
}

/* Key reuse. No two SAs may share a key: the rule is about the bytes the SAs would use, whatever
 * the text looked like ("0xAB" and "ab" are one key), and it holds across the two directions of a
 * pair, every SA of the file and the SAs already in the SADB.
 *  - GCM, GMAC (ESP and AH), CTR and ChaCha20-Poly1305 build their nonce from the salt and the
 *    sequence number: two SAs with the same key and salt send the same nonces from packet 1 on,
 *    which gives away the GHASH/Poly1305 key and XORs of plaintexts. A different salt alone keeps
 *    the nonces apart, but nothing derives keys that way (IKE draws key and salt together), so
 *    the cipher key is compared without the salt and a different salt does not make it another key.
 *  - CBC and HMAC are not broken at once by a shared key, but an ICV tells SAs apart only by
 *    the SPI, and SPIs are unique only per destination: two SAs with one integrity key and one SPI
 *    (the directions of "spi 0x1000:0x1000", or one SPI towards two peers) accept each other's
 *    packets, our own reflected back among them, and each replay window knows only its own SA's.
 *    Nothing legitimate shares a key, so it is refused whatever the SPIs.
 * So every encryption key and every integrity key is compared with every other one of the same
 * length, whatever the transforms (an AH GMAC key and salt used as an ESP CTR key and nonce give
 * the same counter blocks), another SA's or the SA's own (keys are independent, as IKE derives
 * them: an SA's encryption key is not its integrity key). The entries point into the items (no
 * copy of the key bytes); sorting keeps it O(n log n), and the SADB is streamed against the
 * sorted file keys, so a large SADB costs no memory. */
enum { KEY_ENC, KEY_AUTH };
enum { KREF_NONE, KREF_FILE, KREF_SADB };

struct key_ent {
	const uint8_t *k, *salt;
	uint8_t len, slen, what;    /* what: KEY_ENC or KEY_AUTH */
	uint32_t item;
};

/* The first SA that had a key, as the message about a later one names it. */
struct key_ref {
	uint8_t from, what;         /* KREF_*, KEY_* */
	uint8_t slen;
	uint8_t salt[SADB_SALT_MAX];
	uint32_t item;              /* KREF_FILE */
	uint32_t spi;               /* KREF_SADB: the SADB's SA */
	uint8_t proto;
	struct sadb_addr dst;
};

/* An SA's key of one kind and the salt that goes with it (ESP: the cipher's; AH: GMAC's). */
static bool key_of(const struct sadb_sa *sa, uint8_t what, struct key_ent *e, uint32_t item)
{
	e->what = what;
	e->item = item;
	e->salt = sa->salt;
	if (what == KEY_ENC) {
		e->k = sa->enc_key;
		e->len = sa->proto == SADB_PROTO_ESP ? sa->enc_key_len : 0;
		e->slen = sa->proto == SADB_PROTO_ESP ? sa->salt_len : 0;
	} else {
		e->k = sa->auth_key;
		e->len = sa->auth_alg ? sa->auth_key_len : 0;
		e->slen = sa->proto == SADB_PROTO_AH ? sa->salt_len : 0;
	}
	if (e->len > (what == KEY_ENC ? SADB_ENC_KEY_MAX : SADB_AUTH_KEY_MAX))
		e->len = 0; /* not a key this check can compare (libsadb refuses it anyway) */
	if (e->slen > SADB_SALT_MAX)
		e->slen = 0;
	return e->len > 0;
}

static int key_ent_cmp_bytes(const struct key_ent *a, const struct key_ent *b)
{
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->k, b->k, a->len);
}

/* Equal keys in file order: the SA written first is the one the others are compared with. */
static int key_ent_cmp(const void *x, const void *y)
{
	const struct key_ent *a = x, *b = y;
	int r = key_ent_cmp_bytes(a, b);

	if (r)
		return r;
	if (a->item != b->item)
		return a->item < b->item ? -1 : 1;
	return a->what < b->what ? -1 : a->what > b->what;
}

/* Whether the SADB's SA is one that this configuration replaces (sa update: same identity). */
static bool key_replaced(const struct ctl_conf *c, const struct sadb_sa *sa)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct sadb_sa *f = &c->items[i].sa;

		if (c->items[i].kind == CTL_IT_SA && f->spi == sa->spi && f->proto == sa->proto &&
		    f->dst.family == sa->dst.family && !memcmp(f->dst.a.b, sa->dst.a.b,
							       sa->dst.family == AF_INET ? 4 : 16))
			return true;
	}
	return false;
}

/* refs[2 * item + what]: the earlier SA with the same key, KREF_NONE if there is none. db may be
 * NULL (no SADB, or one that the configuration flushes first). */
static int key_refs_build(const struct ctl_conf *c, const struct sadb *db, struct key_ref **out)
{
	struct key_ent *e = calloc(2 * c->n + 1, sizeof(*e));
	struct key_ref *refs = calloc(2 * c->n + 1, sizeof(*refs)), *dbref = NULL;
	size_t n = 0;

	*out = refs;
	if (!e || !refs) {
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (c->items[i].kind != CTL_IT_SA)
			continue;
		for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++)
			if (key_of(&c->items[i].sa, w, &e[n], (uint32_t)i))
				n++;
	}
	qsort(e, n, sizeof(*e), key_ent_cmp);
	if (db && n) {
		uint32_t cur = 0;
		struct sadb_sa sa;

		if (!(dbref = calloc(n, sizeof(*dbref)))) {
			free(e);
			return -ENOMEM;
		}
		while (sadb_sa_next(db, &cur, &sa, NULL) == 0) {
			if (c->replace && key_replaced(c, &sa))
				continue;
			for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++) {
				struct key_ent probe;
				size_t lo = 0, hi = n;

				if (!key_of(&sa, w, &probe, 0))
					continue;
				while (lo < hi) {
					size_t mid = lo + (hi - lo) / 2;

					if (key_ent_cmp_bytes(&e[mid], &probe) < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo == n || key_ent_cmp_bytes(&e[lo], &probe) || dbref[lo].from)
					continue;
				dbref[lo] = (struct key_ref){ .from = KREF_SADB, .what = w,
							      .slen = probe.slen, .spi = sa.spi,
							      .proto = sa.proto, .dst = sa.dst };
				memcpy(dbref[lo].salt, probe.salt, probe.slen);
			}
		}
		explicit_bzero(&sa, sizeof(sa));
	}
	for (size_t g = 0, i; g < n; g = i) {
		struct key_ref first;

		if (dbref && dbref[g].from) {
			first = dbref[g];
			i = g;
		} else {
			first = (struct key_ref){ .from = KREF_FILE, .what = e[g].what,
						  .slen = e[g].slen, .item = e[g].item };
			memcpy(first.salt, e[g].salt, e[g].slen);
			i = g + 1;
		}
		for (; i < n && !key_ent_cmp_bytes(&e[g], &e[i]); i++)
			refs[2 * e[i].item + e[i].what] = first;
		explicit_bzero(&first, sizeof(first));
	}
	if (dbref)
		explicit_bzero(dbref, n * sizeof(*dbref));
	free(dbref);
	free(e);
	return 0;
}

/* "key of SA spi 0x00001001 is the key (and salt) of SA spi 0x00001000 (f:1:58): ..." */
static void key_report(struct ctl_conf *c, size_t i, uint8_t what, const struct key_ref *r)
{
	const struct ctl_item *it = &c->items[i];
	const char *name = what == KEY_ENC ? "key" : "authkey";
	const char *rname = r->what == KEY_ENC ? "key" : "authkey";
	struct ctl_pos pos = what == KEY_ENC ? it->key_pos : it->authkey_pos, rpos;
	struct key_ent mine;
	char where[INET6_ADDRSTRLEN + 96], buf[INET6_ADDRSTRLEN];
	bool salted, same_salt;

	key_of(&it->sa, what, &mine, (uint32_t)i);
	salted = mine.slen && r->slen;
	same_salt = salted && mine.slen == r->slen && !memcmp(mine.salt, r->salt, r->slen);
	if (r->from == KREF_FILE && r->item == i) {
		ctl_conf_error(c, pos, "%s of SA spi 0x%08x is its own %s: encryption and integrity "
			       "need keys of their own", name, it->sa.spi, rname);
		return;
	}
	if (r->from == KREF_SADB) {
		snprintf(where, sizeof(where), "%s to %s, already in the SADB",
			 ctl_proto_name(r->proto), ctl_addr_str(&r->dst, buf, sizeof(buf)));
	} else {
		rpos = r->what == KEY_ENC ? c->items[r->item].key_pos :
			c->items[r->item].authkey_pos;
		if (rpos.line)
			snprintf(where, sizeof(where), "(%s:%u:%u)", c->src, rpos.line, rpos.col);
		else
			snprintf(where, sizeof(where), "(argument %u)", rpos.col);
	}
	ctl_conf_error(c, pos, "%s of SA spi 0x%08x is the %s%s of SA spi 0x%08x %s: two SAs must "
		       "never share a key%s", name, it->sa.spi, rname, same_salt ? " (and salt)" : "",
		       r->from == KREF_SADB ? r->spi : c->items[r->item].sa.spi, where,
		       same_salt ? ": with a counter-mode cipher both would send the same nonces" :
		       salted ? ", not even with different salts" : "");
}

int ctl_conf_validate(struct ctl_conf *c, const struct sadb *db)
{
	unsigned flush = 0;
	char msg[256], buf[INET6_ADDRSTRLEN];
	struct vstate v;
	struct key_ref *refs = NULL;
	const struct sadb *keydb = db;
	int rc;

	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_FLUSH)
			flush |= c->items[i].flush;
	/* SAs that replace the SADB's (sa update) are no duplicates of them; their keys still must
	 * not be another SA's. SAs that a flush removes first share nothing with the file. */
	if (c->replace)
		db = NULL;
	if (flush & CTL_FLUSH_SA)
		keydb = NULL;
	rc = vstate_build(&v, c, db, flush);
	if (rc == 0)
		rc = key_refs_build(c, keydb, &refs);
	if (rc) {
		vstate_free(&v);
		free(refs);
		ctl_conf_error(c, (struct ctl_pos){ 0, 0 }, "out of memory while validating");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];

		if (it->kind == CTL_IT_SA) {
			const struct sadb_sa *sa = &it->sa;

			if (v.dup_of[i] != i) {
				ctl_conf_error(c, it->spi_pos, "duplicate SA: spi 0x%08x %s to %s is "
					       "already defined at line %u", sa->spi,
					       ctl_proto_name(sa->proto),
					       ctl_addr_str(&sa->dst, buf, sizeof(buf)),
					       c->items[v.dup_of[i]].pos.line);
			} else if (db && !(flush & CTL_FLUSH_SA)) {
				struct sadb_sa cur;

				if (sadb_sa_lookup(db, sa->spi, sa->proto, &sa->dst, &cur, NULL) == 0)
					ctl_conf_error(c, it->spi_pos, "duplicate SA: spi 0x%08x %s to %s "
						       "already exists in the SADB", sa->spi,
						       ctl_proto_name(sa->proto),
						       ctl_addr_str(&sa->dst, buf, sizeof(buf)));
				explicit_bzero(&cur, sizeof(cur));
			}
			for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++)
				if (refs[2 * i + w].from != KREF_NONE)
					key_report(c, i, w, &refs[2 * i + w]);
			if (sadb_sa_validate(sa, msg, sizeof(msg)))
				ctl_conf_error(c, it->pos, "invalid SA spi 0x%08x: %s", sa->spi, msg);
		} else if (it->kind == CTL_IT_POLICY) {
			const struct sadb_policy *pol = &it->pol;
			struct pol_key k;
			const struct pol_key *hit;

			pol_key_make(&k, pol, (uint32_t)i);
			if (v.dup_of[i] != i) {
				ctl_conf_error(c, it->pos, "duplicate policy: the same direction, "
					       "selector and priority as line %u",
					       c->items[v.dup_of[i]].pos.line);
			} else if (v.ndbp && (hit = bsearch(&k, v.dbp, v.ndbp, sizeof(k),
							   pol_key_cmp_noidx))) {
				ctl_conf_error(c, it->pos, "duplicate policy: the SADB has one with the "
					       "same direction, selector and priority (id %u)", hit->id);
			}
			if (pol->action == SADB_ACT_PROTECT) {
				struct rq_key want = { pol->reqid, pol->proto, pol->mode };
				bool found = rq_has(v.rq, v.nrq, pol->reqid);
				bool fits = v.nrq && bsearch(&want, v.rq, v.nrq, sizeof(want), rq_cmp);

				if (found && !fits)
					ctl_conf_error(c, it->reqid_pos, "policy protects with %s %s, but the "
						       "SAs with reqid %u are not %s %s SAs",
						       ctl_proto_name(pol->proto),
						       ctl_mode_name(pol->mode), pol->reqid,
						       ctl_proto_name(pol->proto),
						       ctl_mode_name(pol->mode));
				if (!found)
					ctl_conf_error(c, it->reqid_pos, "policy names reqid %u, but no SA "
						       "has that reqid (%s)", pol->reqid,
						       it->pos.line == 0 ? "in the SADB" :
						       db ? "in this file or the SADB" : "in this file");
			}
			if (sadb_policy_validate(pol, msg, sizeof(msg)))
				ctl_conf_error(c, it->pos, "invalid policy: %s", msg);
		}
	}
	vstate_free(&v);
	explicit_bzero(refs, (2 * c->n + 1) * sizeof(*refs));
	free(refs);
	return c->nerr ? -EINVAL : 0;
}

/* ---- normalised printing ---- */

static void prefix_print(FILE *f, const struct sadb_addr *a, uint8_t plen)
{
	char buf[INET6_ADDRSTRLEN];

	if (!a->family) {
		fputs("any", f);
		return;
	}
	fputs(ctl_addr_str(a, buf, sizeof(buf)), f);
	if (plen != (a->family == AF_INET ? 32 : 128))
		fprintf(f, "/%u", plen);
}

static void range_print(FILE *f, const char *kw, uint16_t lo, uint16_t hi)
{
	if (lo == hi)
		fprintf(f, " %s %u", kw, lo);
	else
		fprintf(f, " %s %u-%u", kw, lo, hi);
}

void ctl_selector_print(const struct sadb_selector *s, FILE *f)
{
	char buf[8];
	bool ports = proto_has_ports(s->proto);
	unsigned max = ports ? 65535 : 255;

	fputs("from ", f);
	prefix_print(f, &s->src, s->src_plen);
	if (ports && (s->sport_lo != 0 || s->sport_hi != 65535))
		range_print(f, "port", s->sport_lo, s->sport_hi);
	fputs(" to ", f);
	prefix_print(f, &s->dst, s->dst_plen);
	if (ports && (s->dport_lo != 0 || s->dport_hi != 65535))
		range_print(f, "port", s->dport_lo, s->dport_hi);
	if (s->proto)
		fprintf(f, " proto %s", ctl_ipproto_name(s->proto, buf, sizeof(buf)));
	if (s->proto == 1 || s->proto == 58) {
		if (s->sport_lo != 0 || (s->sport_hi != max && s->sport_hi != 65535))
			range_print(f, "type", s->sport_lo, s->sport_hi);
		if (s->dport_lo != 0 || (s->dport_hi != max && s->dport_hi != 65535))
			range_print(f, "code", s->dport_lo, s->dport_hi);
	} else if (s->proto == 135) {
		if (s->sport_lo != 0 || (s->sport_hi != max && s->sport_hi != 65535))
			range_print(f, "mhtype", s->sport_lo, s->sport_hi);
	}
}

static bool sel_is_any(const struct sadb_selector *s)
{
	return !s->src.family && !s->dst.family && !s->proto && !s->sport_lo &&
	       s->sport_hi == 0xffff && !s->dport_lo && s->dport_hi == 0xffff;
}

static void lifetime_print(FILE *f, const char *kw, const struct sadb_lifetime *lt)
{
	if (!lt->bytes && !lt->packets && !lt->add_seconds && !lt->use_seconds)
		return;
	fprintf(f, " \\\n\t%s", kw);
	if (lt->bytes)
		fprintf(f, " bytes %" PRIu64, lt->bytes);
	if (lt->packets)
		fprintf(f, " packets %" PRIu64, lt->packets);
	if (lt->add_seconds)
		fprintf(f, " time %" PRIu64, lt->add_seconds);
	if (lt->use_seconds)
		fprintf(f, " use %" PRIu64, lt->use_seconds);
}

static void key_print(FILE *f, const char *kw, const char *file, unsigned part, const uint8_t *k,
		      size_t kl, const uint8_t *salt, size_t sl, bool keys)
{
	if (file) {
		fprintf(f, " %s file ", kw);
		ctl_json_escape(f, file); /* a quoted string with \" and \\ escapes, as the lexer reads */
		if (part)
			fprintf(f, " part %s", part == 1 ? "out" : "in");
		return;
	}
	if (!kl && !sl)
		return;
	if (!keys)
		return; /* listings without --show-keys: no key, not even its length */
	fprintf(f, " %s ", kw);
	ctl_hex_print(f, k, kl);
	for (size_t i = 0; i < sl; i++)
		fprintf(f, "%02x", salt[i]);
}

void ctl_sa_print(const struct sadb_sa *sa, FILE *f, bool keys, const struct ctl_item *it)
{
	const char *kf = it ? it->key_file : NULL, *akf = it ? it->authkey_file : NULL;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	const struct ctl_enc_alg *enc = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *auth = ctl_auth_by_id(sa->auth_alg);
	bool opts = false;

	fprintf(f, "sa %s %s from %s to %s spi 0x%08x %s", ctl_proto_name(sa->proto),
		ctl_mode_name(sa->mode), ctl_addr_str(&sa->src, b1, sizeof(b1)),
		ctl_addr_str(&sa->dst, b2, sizeof(b2)), sa->spi, ctl_dir_name(sa->dir));
	if (sa->reqid)
		fprintf(f, " reqid %u", sa->reqid);
	if (sa->proto == SADB_PROTO_ESP && sa->enc_alg != SADB_ENC_NONE) {
		fputs(" \\\n\t", f);
		if (enc)
			fprintf(f, "enc %s", enc->name);
		else
			fprintf(f, "enc <unknown %u/%u>", sa->enc_alg, sa->enc_key_len);
		key_print(f, "key", kf, it ? it->key_part : 0, sa->enc_key, sa->enc_key_len, sa->salt,
			  enc ? enc->salt_len : sa->salt_len, keys);
	}
	if (sa->auth_alg) {
		fputs(" \\\n\t", f);
		if (auth)
			fprintf(f, "auth %s", auth->name);
		else
			fprintf(f, "auth <unknown %u>", sa->auth_alg);
		key_print(f, "authkey", akf, it ? it->authkey_part : 0, sa->auth_key, sa->auth_key_len, sa->salt,
			  auth && auth->salt_len ? sa->salt_len : 0, keys);
	}
#define OPT(...) do { if (!opts) { fputs(" \\\n\t", f); opts = true; } else fputc(' ', f); \
	fprintf(f, __VA_ARGS__); } while (0)
	if (sa->flags & SADB_SAF_NO_REPLAY)
		OPT("replay off");
	else if (sa->replay_window)
		OPT("replay %u", sa->replay_window);
	if (sa->flags & SADB_SAF_ESN)
		OPT("esn");
	if (sa->flags & SADB_SAF_LEGACY_OK)
		OPT("legacy");
	if (sa->encap_sport || sa->encap_dport)
		OPT("encap udp %u %u", sa->encap_sport, sa->encap_dport);
	if (sa->state != SADB_STATE_MATURE)
		OPT("state %s", ctl_state_name(sa->state));
	if (sa->icv_len)
		OPT("icv %u", sa->icv_len);
	if (sa->tfc_pad)
		OPT("tfc %u", sa->tfc_pad);
	if (sa->ttl)
		OPT("ttl %u", sa->ttl);
	if (sa->dscp != 0xff)
		OPT("dscp %u", sa->dscp);
	if (sa->flags & SADB_SAF_DF_SET)
		OPT("df set");
	if (sa->flags & SADB_SAF_DF_CLEAR)
		OPT("df clear");
	if (sa->flags & SADB_SAF_NO_ECN)
		OPT("noecn");
	if (sa->flags & SADB_SAF_DECAP_DSCP)
		OPT("decap-dscp");
	if (sa->mtu)
		OPT("mtu %u", sa->mtu);
	if (sa->ike_id)
		OPT("ikeid %u", sa->ike_id);
#undef OPT
	lifetime_print(f, "soft", &sa->soft);
	lifetime_print(f, "hard", &sa->hard);
	if (!sel_is_any(&sa->sel)) {
		fputs(" \\\n\tselector ", f);
		ctl_selector_print(&sa->sel, f);
	}
	fputc('\n', f);
}

void ctl_policy_print(const struct sadb_policy *p, FILE *f)
{
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];

	fprintf(f, "policy %s ", ctl_dir_name(p->dir));
	ctl_selector_print(&p->sel, f);
	fprintf(f, " \\\n\t%s", ctl_action_name(p->action));
	if (p->action == SADB_ACT_PROTECT) {
		fprintf(f, " %s %s", ctl_proto_name(p->proto), ctl_mode_name(p->mode));
		if (p->mode == SADB_MODE_TUNNEL) {
			bool out = p->dir == SADB_DIR_OUT;

			fprintf(f, " local %s peer %s",
				ctl_addr_str(out ? &p->tun_src : &p->tun_dst, b1, sizeof(b1)),
				ctl_addr_str(out ? &p->tun_dst : &p->tun_src, b2, sizeof(b2)));
		}
		fprintf(f, " reqid %u", p->reqid);
	}
	fprintf(f, " priority %u\n", p->priority);
}

void ctl_conf_print(const struct ctl_conf *c, FILE *out)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct ctl_item *it = &c->items[i];

		switch (it->kind) {
		case CTL_IT_FLUSH:
			fprintf(out, "flush %s\n", it->flush == CTL_FLUSH_SA ? "sa" :
				it->flush == CTL_FLUSH_POL ? "policy" : "all");
			break;
		case CTL_IT_SA:
			ctl_sa_print(&it->sa, out, true, it);
			break;
		case CTL_IT_POLICY:
			ctl_policy_print(&it->pol, out);
			break;
		}
	}
}
