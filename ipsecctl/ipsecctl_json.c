/* ipsecctl/ipsecctl_json.c: the JSON writer behind every `--json` listing. Hand-written so the output
 * is byte-stable (keys in the order the caller emits them, two-space indentation, integers never
 * as floats) and golden files can diff it; strings are escaped per RFC 8259 (control characters as
 * \u00XX, bytes >= 0x80 passed through because SADB strings are ASCII or UTF-8 names). */
#include "config.h"

#include <inttypes.h>

#include "ipsecctl/ipsecctl.h"

void ctl_json_escape(FILE *f, const char *s)
{
	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				putc(*p, f);
		}
	}
	putc('"', f);
}

void ctl_json_init(struct ctl_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->compact = false;
	j->first[0] = true;
}

static void sep(struct ctl_json *j, const char *key)
{
	if (j->depth > 0) {
		if (!j->first[j->depth])
			putc(',', j->f);
		if (j->compact) {
			if (!j->first[j->depth])
				putc(' ', j->f);
			goto key;
		}
		putc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
key:
	j->first[j->depth] = false;
	if (key) {
		ctl_json_escape(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_(struct ctl_json *j, const char *key, char c)
{
	bool document = j->depth == 0;

	sep(j, key);
	putc(c, j->f);
	if (j->depth < (int)(sizeof(j->first) / sizeof(j->first[0])) - 1)
		j->depth++;
	j->first[j->depth] = true;
	/* Every document says which schema it follows, first, so a script can refuse one it was
	 * not written for before it reads a field. */
	if (document && c == '{')
		ctl_json_u64(j, "schema", CTL_JSON_SCHEMA);
}

static void close_(struct ctl_json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (!empty && !j->compact) {
		putc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	putc(c, j->f);
}

void ctl_json_obj(struct ctl_json *j, const char *key) { open_(j, key, '{'); }
void ctl_json_arr(struct ctl_json *j, const char *key) { open_(j, key, '['); }
void ctl_json_end_obj(struct ctl_json *j) { close_(j, '}'); }
void ctl_json_end_arr(struct ctl_json *j) { close_(j, ']'); }

void ctl_json_str(struct ctl_json *j, const char *key, const char *v)
{
	sep(j, key);
	ctl_json_escape(j->f, v);
}

void ctl_json_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	sep(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void ctl_json_u64s(struct ctl_json *j, const struct ctl_json_num *n, size_t count)
{
	for (size_t i = 0; i < count; i++)
		ctl_json_u64(j, n[i].key, n[i].v);
}

void ctl_json_bool(struct ctl_json *j, const char *key, bool v)
{
	sep(j, key);
	fputs(v ? "true" : "false", j->f);
}

void ctl_json_null(struct ctl_json *j, const char *key)
{
	sep(j, key);
	fputs("null", j->f);
}

void ctl_json_hex(struct ctl_json *j, const char *key, const uint8_t *b, size_t n)
{
	sep(j, key);
	putc('"', j->f);
	ctl_hex_print(j->f, b, n);
	putc('"', j->f);
}

void ctl_json_done(struct ctl_json *j)
{
	putc('\n', j->f);
	fflush(j->f);
}
