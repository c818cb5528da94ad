/* ipsecctl/ipsecctl_lex.c: the lexical layer of ipsecctl's configuration language: words, quoted
 * strings, comments, '\' continuations and end-of-statement marks, each token with its
 * line:column, and the OpenBSD-style macros (`name = value`, `$name`) expanded statement by
 * statement before parsing. It also owns the one error printer of the language, so every message,
 * the lexer's or the parser's, is "file:line:column: message" and counts against the same limit.
 * Tokens and macro values may be keys: they are wiped before they are freed. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <syslog.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl_conf.h"

void conf_wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void conf_toks_free(struct toks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		conf_wipe_free(ts->v[i].s);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

int conf_toks_push(struct toks *ts, enum tok_type t, const char *s, size_t len, bool quoted,
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

static void error_print(struct ctl_conf *c, struct ctl_pos pos, const char *text)
{
	const char *file = pos.file ? pos.file : c->src;

	if (c->err == stderr)
		fputs(ctl_pri(LOG_ERR), c->err);
	if (pos.line)
		fprintf(c->err, "%s:%u:%u: %s\n", file, pos.line, pos.col, text);
	else
		fprintf(c->err, "%s: argument %u: %s\n", file, pos.col, text);
}

/* Keeps an error for ctl_conf_report; one already kept at the same place is not kept again. */
static void error_keep(struct ctl_conf *c, struct ctl_pos pos, const char *text)
{
	struct ctl_msg *m;
	size_t rank = 0;

	for (size_t i = 0; i < c->nmsg; i++)
		if (c->msgs[i].pos.line == pos.line && c->msgs[i].pos.col == pos.col &&
		    c->msgs[i].pos.file == pos.file && !strcmp(c->msgs[i].text, text)) {
			c->nerr--;
			return;
		}
	for (size_t i = 0; i < c->nfiles; i++)
		if (c->files[i] == pos.file)
			rank = i;
	if (c->nmsg == c->capmsg) {
		size_t cap = c->capmsg ? 2 * c->capmsg : 16;

		if (!(m = realloc(c->msgs, cap * sizeof(*m))))
			goto print;
		c->msgs = m;
		c->capmsg = cap;
	}
	m = &c->msgs[c->nmsg];
	if (!(m->text = strdup(text)))
		goto print;
	m->pos = pos;
	m->file_rank = rank;
	m->seq = c->nmsg++;
	return;
print:
	error_print(c, pos, text);
}

void ctl_conf_error(struct ctl_conf *c, struct ctl_pos pos, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	c->nerr++;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (c->defer) {
		error_keep(c, pos, text);
		return;
	}
	if (c->nerr > CTL_MAX_ERRORS)
		return;
	error_print(c, pos, text);
	if (c->nerr == CTL_MAX_ERRORS)
		fprintf(c->err, "%s: too many errors, giving up\n", c->src);
}

static int msg_cmp(const void *a, const void *b)
{
	const struct ctl_msg *x = a, *y = b;

	if (x->file_rank != y->file_rank)
		return x->file_rank < y->file_rank ? -1 : 1;
	if (x->pos.line != y->pos.line)
		return x->pos.line < y->pos.line ? -1 : 1;
	if (x->pos.col != y->pos.col)
		return x->pos.col < y->pos.col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ctl_conf_report(struct ctl_conf *c)
{
	if (c->nmsg)
		qsort(c->msgs, c->nmsg, sizeof(*c->msgs), msg_cmp);
	for (size_t i = 0; i < c->nmsg; i++) {
		if (i < CTL_MAX_ERRORS)
			error_print(c, c->msgs[i].pos, c->msgs[i].text);
		free(c->msgs[i].text);
	}
	if (c->nmsg >= CTL_MAX_ERRORS)
		fprintf(c->err, "%s: too many errors, giving up\n", c->src);
	free(c->msgs);
	c->msgs = NULL;
	c->nmsg = c->capmsg = 0;
}

/* Where the lexer is in the text; line and col are those of text[i]. */
struct lexer {
	const char *text;
	size_t len, i;
	unsigned line, col;
};

static void lx_adv(struct lexer *lx)
{
	if (lx->text[lx->i] == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->i++;
}

static bool lx_at(const struct lexer *lx, size_t off, char ch)
{
	return lx->i + off < lx->len && lx->text[lx->i + off] == ch;
}

/* '\' at the end of a line (before "\n" or "\r\n") joins the next line to the statement. */
static bool lx_continuation(const struct lexer *lx)
{
	return lx_at(lx, 0, '\\') && (lx_at(lx, 1, '\n') || (lx_at(lx, 1, '\r') && lx_at(lx, 2, '\n')));
}

static int lex_continuation(struct ctl_conf *c, struct lexer *lx, struct toks *ts, struct ctl_pos pos)
{
	lx_adv(lx);
	while (lx->text[lx->i] != '\n')
		lx_adv(lx);
	lx_adv(lx);
	if (lx->i < lx->len)
		return 0;
	ctl_conf_error(c, pos, "the file ends after '\\' although the statement continues "
		       "(truncated file?)");
	return conf_toks_push(ts, T_BAD, NULL, 0, false, pos);
}

/* A "quoted string" on one line; \" and \\ stand for " and \. */
static int lex_string(struct ctl_conf *c, struct lexer *lx, struct toks *ts, struct ctl_pos pos)
{
	size_t bl = 0;
	char *buf;
	int rc;

	lx_adv(lx);
	buf = malloc(lx->len - lx->i + 1);
	if (!buf)
		return -ENOMEM;
	while (lx->i < lx->len && lx->text[lx->i] != '"' && lx->text[lx->i] != '\n') {
		if (lx->text[lx->i] == '\\' && (lx_at(lx, 1, '"') || lx_at(lx, 1, '\\')))
			lx_adv(lx);
		buf[bl++] = lx->text[lx->i];
		lx_adv(lx);
	}
	if (!lx_at(lx, 0, '"')) {
		free(buf);
		ctl_conf_error(c, pos, "unterminated string (missing closing '\"')");
		return conf_toks_push(ts, T_BAD, NULL, 0, false, pos);
	}
	lx_adv(lx);
	rc = conf_toks_push(ts, T_WORD, buf, bl, true, pos);
	explicit_bzero(buf, bl);
	free(buf);
	return rc;
}

static bool word_byte(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f && ch != '#' && ch != '"';
}

int conf_lex(struct ctl_conf *c, const char *text, size_t len, struct toks *ts)
{
	struct lexer lx = { text, len, 0, 1, 1 };
	int rc = 0;

	while (lx.i < lx.len && rc == 0) {
		unsigned char ch = (unsigned char)text[lx.i];
		struct ctl_pos pos = { lx.line, lx.col, c->cur_file };

		if (ch == ' ' || ch == '\t' || ch == '\r') {
			lx_adv(&lx);
		} else if (ch == '\n') {
			rc = conf_toks_push(ts, T_EOL, NULL, 0, false, pos);
			lx_adv(&lx);
		} else if (ch == '#') {
			while (lx.i < lx.len && text[lx.i] != '\n')
				lx_adv(&lx);
		} else if (lx_continuation(&lx)) {
			rc = lex_continuation(c, &lx, ts, pos);
		} else if (ch == '"') {
			rc = lex_string(c, &lx, ts, pos);
		} else if (word_byte(ch)) {
			size_t start = lx.i;

			while (lx.i < lx.len && word_byte((unsigned char)text[lx.i]))
				lx_adv(&lx);
			rc = conf_toks_push(ts, T_WORD, text + start, lx.i - start, false, pos);
		} else {
			/* One message is enough: a binary file would otherwise yield one per line. */
			ctl_conf_error(c, pos, "invalid byte 0x%02x: not a text configuration file",
				       ch);
			if ((rc = conf_toks_push(ts, T_BAD, NULL, 0, false, pos)))
				return rc;
			return conf_toks_push(ts, T_EOF, NULL, 0, false, pos);
		}
	}
	if (rc)
		return rc;
	return conf_toks_push(ts, T_EOF, NULL, 0, false, (struct ctl_pos){ lx.line, lx.col, c->cur_file });
}

/* ---- macros ---- */

/* The value is one word (quoted if it has blanks); it may be a key. */
struct conf_macro {
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

int conf_macro_define(struct ctl_conf *c, struct tok *t, size_t n, struct conf_macros *m)
{
	struct conf_macro *v;

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
	for (size_t i = 0; i < m->n; i++) {
		if (!strcmp(m->v[i].name, t[0].s)) {
			conf_wipe_free(m->v[i].value);
			m->v[i].value = strdup(t[2].s);
			return 1;
		}
	}
	v = realloc(m->v, (m->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	m->v = v;
	v[m->n].name = strdup(t[0].s);
	v[m->n].value = strdup(t[2].s);
	m->n++;
	return 1;
}

int conf_macro_expand(struct ctl_conf *c, struct tok *t, size_t n, const struct conf_macros *m)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		bool found = false;

		if (t[i].quoted || t[i].s[0] != '$')
			continue;
		for (size_t k = 0; k < m->n && !found; k++) {
			if (strcmp(m->v[k].name, t[i].s + 1))
				continue;
			found = true;
			conf_wipe_free(t[i].s);
			t[i].s = strdup(m->v[k].value);
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

void conf_macros_free(struct conf_macros *m)
{
	for (size_t k = 0; k < m->n; k++) {
		free(m->v[k].name);
		conf_wipe_free(m->v[k].value);
	}
	free(m->v);
	m->v = NULL;
	m->n = 0;
}
