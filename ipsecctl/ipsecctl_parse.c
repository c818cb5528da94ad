/* ipsecctl/ipsecctl_parse.c: the statement layer of ipsecctl's configuration language: the `policy`
 * and `flush` statements, and the driver that cuts the token stream into statements, expands
 * macros in each and hands it to its parser (the SA statements are in ipsecctl_parse_sa.c, the
 * Mobile IPv6 ones in ipsecctl_parse_mip6.c). Every parser reads through the cursor
 * (ipsecctl_cursor.c) and shares selectors and policy options (ipsecctl_selector.c); none calls
 * back up here. The same driver reads `sa add ...`/`policy add ...` from the command line, so a
 * statement means the same thing wherever it is written.
 *
 * Errors carry the position of the token they are about; parsing goes on at the next statement so
 * one run reports every mistake. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl_conf.h"

/* policy in|out|fwd [selector] bypass|discard|protect [esp|ah] [transport|tunnel local A peer B]
 * reqid N [priority N]; discard may name a reqid too (a mobile router's network) */
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
		/* a discard policy with a reqid records a mobile router's network (NEMO: the
		 * mobile-node statement's router-prefix, ipsecctl_parse_nemo.c) */
		if ((po.reqid_set && pol->action != SADB_ACT_DISCARD) || po.proto_set || po.mode_set ||
		    po.local_set || po.peer_set)
			return ps_err(p, po.action_pos, "'%s' takes no %sprotocol, mode or tunnel "
				      "endpoints", ctl_action_name(pol->action),
				      pol->action == SADB_ACT_DISCARD ? "" : "reqid, ");
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

static int parse_file(struct ctl_conf *c, const char *path, struct ctl_pos from);

/* include "FILE": FILE's statements here, FILE named relative to the directory of the file that
 * includes it (so a configuration directory can be moved whole). */
static int parse_include(struct ps *p)
{
	const char *name, *cur = p->t[0].pos.file ? p->t[0].pos.file : p->c->src, *slash;
	struct ctl_pos pos = ps_here(p);
	char path[PATH_MAX];

	if (!p->c->files)
		return ps_err(p, p->t[0].pos, "'include' is read only in a configuration file");
	if (!(name = ps_next(p, "a file name")))
		return -1;
	if (ps_peek(p))
		return ps_unknown(p, "include", "the end of the line");
	slash = strrchr(cur, '/');
	if (name[0] == '/' || !slash || !strcmp(cur, "<stdin>"))
		snprintf(path, sizeof(path), "%s", name);
	else if (snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - cur), cur, name) >=
		 (int)sizeof(path))
		return ps_err(p, pos, "include: file name too long");
	return parse_file(p->c, path, pos);
}

static int parse_stmt(struct ps *p)
{
	struct tok *t = ps_peek(p);

	if (!strcasecmp(t->s, "include") && !t->quoted) {
		p->i++;
		return parse_include(p);
	}

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
	c->n_ha = 0;
	for (size_t i = 0; i < c->nmsg; i++)
		free(c->msgs[i].text);
	free(c->msgs);
	c->msgs = NULL;
	c->nmsg = c->capmsg = 0;
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	c->files = NULL;
	c->nfiles = 0;
	free(c->chain);
	c->chain = NULL;
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

/* Reads, checks and parses path; from: the include statement naming it (line 0 for the file
 * the command names: its errors are then said without a position). */
static int parse_file(struct ctl_conf *c, const char *path, struct ctl_pos from)
{
	char msg[PATH_MAX + 128];
	struct ctl_file_id id = { 0, 0 };
	const char *saved = c->cur_file;
	struct stat st;
	char *text = NULL, *name, **files;
	size_t len;
	int rc, fd;

	if (c->depth >= CTL_MAX_INCLUDE_DEPTH) {
		ctl_conf_error(c, from, "include: more than %d levels of include", CTL_MAX_INCLUDE_DEPTH);
		return -EINVAL;
	}
	if (strcmp(path, "-")) {
		fd = ctl_file_open(path, false, msg, sizeof(msg));
		if (fd >= 0 && fstat(fd, &st) == 0) {
			id = (struct ctl_file_id){ st.st_dev, st.st_ino };
			for (unsigned i = 0; i < c->depth; i++)
				if (c->chain[i].dev == id.dev && c->chain[i].ino == id.ino) {
					close(fd);
					ctl_conf_error(c, from, "include: %s is already being read (an include "
						       "cycle)", path);
					return -EINVAL;
				}
		}
		rc = fd < 0 ? fd : ctl_fd_read(fd, path, CTL_CONF_MAX, &text, &len, msg, sizeof(msg));
	} else {
		rc = ctl_file_read(path, false, CTL_CONF_MAX, &text, &len, msg, sizeof(msg));
	}
	if (rc) {
		if (from.line)
			ctl_conf_error(c, from, "include: %s", msg);
		else
			ctl_err("%s", msg);
		return rc;
	}
	name = strdup(strcmp(path, "-") ? path : "<stdin>");
	files = name ? realloc(c->files, (c->nfiles + 1) * sizeof(*files)) : NULL;
	if (!files) {
		free(name);
		explicit_bzero(text, len);
		free(text);
		return -ENOMEM;
	}
	c->files = files;
	c->files[c->nfiles++] = name;
	c->chain[c->depth++] = id;
	c->cur_file = from.line ? name : NULL;
	{
		struct toks ts = { 0 };

		rc = conf_lex(c, text, len, &ts);
		c->cur_file = saved;
		if (rc == 0)
			rc = parse_toks(c, &ts);
		conf_toks_free(&ts);
	}
	c->depth--;
	explicit_bzero(text, len);
	free(text);
	return rc;
}

int ctl_conf_parse_file(struct ctl_conf *c, const char *path)
{
	int rc;

	if (!c->chain && !(c->chain = calloc(CTL_MAX_INCLUDE_DEPTH, sizeof(*c->chain))))
		return -ENOMEM;
	rc = parse_file(c, path, (struct ctl_pos){ 0, 0, NULL });
	return rc ? rc : c->nerr ? -EINVAL : 0;
}

int ctl_conf_parse_argv(struct ctl_conf *c, int argc, char **argv)
{
	struct toks ts = { 0 };
	int rc = 0;

	for (int i = 0; i < argc && !rc; i++)
		rc = conf_toks_push(&ts, T_WORD, argv[i], strlen(argv[i]), false,
				    (struct ctl_pos){ 0, (unsigned)i + 1, NULL });
	if (!rc)
		rc = conf_toks_push(&ts, T_EOL, NULL, 0, false, (struct ctl_pos){ 0, (unsigned)argc + 1, NULL });
	if (!rc)
		rc = parse_toks(c, &ts);
	conf_toks_free(&ts);
	return rc;
}

