/* ipsecctl/ipsecctl_parse_key.c: the keys of SA statements: inline hex or `file PATH` (with `part
 * out|in` for one half of a pair's "OUT:IN" file), split per direction for a pair, and turned into
 * an SA's key, salt and lengths once the transform is known, so a key of the wrong length is
 * refused with the lengths the transform needs. Key text and bytes are wiped once used. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl_conf.h"

/* Read a key file: the same text as an inline key ("0x..." or "0x...:0x..."), whitespace ignored.
 * The file must be one only root or we could have written or read (ctl_file_open). */
static char *read_key_file(struct ps *p, struct ctl_pos pos, const char *path)
{
	char msg[PATH_MAX + 128];
	char *buf, *out;
	size_t n, o = 0;

	if (!strcmp(path, "-") ||
	    ctl_file_read(path, true, CTL_KEY_FILE_MAX, &buf, &n, msg, sizeof(msg))) {
		ps_err(p, pos, "key file refused: %s", strcmp(path, "-") ? msg : "'-' is no file");
		return NULL;
	}
	out = malloc(n + 1);
	if (!out) {
		explicit_bzero(buf, n);
		free(buf);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)buf[i]))
			out[o++] = buf[i];
	out[o] = 0;
	explicit_bzero(buf, n);
	free(buf);
	if (o == 0) {
		free(out);
		ps_err(p, pos, "key file '%s' is empty", path);
		return NULL;
	}
	return out;
}

int conf_parse_key(struct ps *p, char **key, char **file, unsigned *part, struct ctl_pos *pos,
		   struct ctl_pos *in_pos)
{
	const char *s, *half2;

	*pos = *in_pos = ps_here(p);
	if (*key)
		return ps_err(p, *pos, "key given twice");
	if (ps_acc(p, "file")) {
		struct ctl_pos fpos = ps_here(p);

		if (!(s = ps_next(p, "a key file name")))
			return -1;
		*file = strdup(s);
		*key = read_key_file(p, fpos, s);
		if (!*key)
			return -1;
		/* "part out|in": one SA keyed from a file that holds a pair's "OUT:IN" (what -n
		 * prints for the halves of an expanded pair). */
		if (ps_acc(p, "part")) {
			char *colon = strchr(*key, ':'), *half;

			if (ps_acc(p, "out"))
				*part = 1;
			else if (ps_acc(p, "in"))
				*part = 2;
			else
				return ps_err(p, ps_here(p), "expected 'out' or 'in' after 'part', got %s",
					      ps_got(p));
			if (!colon)
				return ps_err(p, fpos, "key file '%s' holds one key, not 'OUT:IN'", s);
			half = *part == 1 ? strndup(*key, (size_t)(colon - *key)) : strdup(colon + 1);
			conf_wipe_free(*key);
			*key = half;
			return half ? 0 : -1;
		}
		return 0;
	}
	if (!(s = ps_next(p, "a hex key (0x...) or 'file PATH'")))
		return -1;
	/* Messages about the IN key of a pair point at it when it is written out in the line. */
	if (pos->line && !p->t[p->i - 1].quoted && !p->t[p->i - 1].macro && (half2 = strchr(s, ':')))
		in_pos->col += (unsigned)(half2 - s) + 1;
	*key = strdup(s);
	return *key ? 0 : -1;
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
		return ps_err(p, pos, "%s needs a key: add '%s 0x...' (%u bytes)", alg, kw,
			      key_len + salt_len);
	}
	if (key_len + salt_len == 0)
		return ps_err(p, pos, "%s takes no key: remove '%s'", alg, kw);
	if (ctl_hex_parse(text, buf, sizeof(buf), &n, msg, sizeof(msg)))
		return ps_err(p, pos, "%s", msg);
	if (n != key_len + salt_len) {
		explicit_bzero(buf, sizeof(buf));
		if (salt_len)
			return ps_err(p, pos, "wrong key length for %s: need %u bytes (%u-byte key + "
				      "%u-byte salt), got %zu", alg, key_len + salt_len, key_len,
				      salt_len, n);
		return ps_err(p, pos, "wrong key length for %s: need %u bytes, got %zu", alg, key_len,
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
int conf_split_pair(struct ps *p, const char *text, struct ctl_pos pos, bool pair, char **a,
		    char **b, const char *kw)
{
	const char *colon;

	*a = *b = NULL;
	if (!text)
		return 0;
	colon = strchr(text, ':');
	if (!pair) {
		if (colon)
			return ps_err(p, pos, "one SA takes one %s; 'A:B' pairs are for 'esp|ah ... spi "
				      "OUT:IN'", kw);
		*a = strdup(text);
		return 0;
	}
	if (!colon || strchr(colon + 1, ':'))
		return ps_err(p, pos, "an SA pair takes two keys: '%s OUT:IN' (one per direction)", kw);
	/* Whether the two directions share a key is a question about bytes, not text ("0xAB" is
	 * "ab"): ctl_conf_validate answers it, for every SA of the file and the SADB. */
	*a = strndup(text, (size_t)(colon - text));
	*b = strdup(colon + 1);
	return 0;
}

/* Turn the transform and key text of o into SA k's fields. */
int conf_sa_crypto(struct ps *p, struct saopt *o, struct sadb_sa *sa, const char *key,
		   const char *akey)
{
	const char *ename = o->enc ? o->enc->name : "";

	if (sa->proto == SADB_PROTO_AH) {
		if (o->enc)
			return ps_err(p, o->enc_pos, "AH has no encryption: use 'auth' only");
		if (!o->auth)
			return ps_err(p, p->t[0].pos, "AH SA needs an integrity algorithm: add 'auth "
				      "sha256' (or another of: %s)", ctl_auth_names());
		if (key)
			return ps_err(p, o->key_pos, "AH has no encryption key: use 'authkey'");
	} else {
		if (!o->enc)
			return ps_err(p, p->t[0].pos, "ESP SA needs an encryption algorithm: add 'enc "
				      "aes128gcm16' (or another of: %s)", ctl_enc_names());
		if (o->auth && o->auth->ah_only)
			return ps_err(p, o->auth_pos, "'auth %s' is for AH; for ESP write 'enc %s'",
				      o->auth->name, o->auth->name);
		if (o->enc->aead && o->auth)
			return ps_err(p, o->auth_pos, "%s already includes integrity: remove 'auth'",
				      ename);
		if (!o->enc->aead && !o->auth)
			return ps_err(p, o->enc_pos, "%s needs an integrity algorithm: add 'auth sha256' "
				      "or use an AEAD such as aes128gcm16", ename);
		sa->enc_alg = o->enc->enc;
		if (key_material(p, key, o->key_pos.line || o->key_pos.col ? o->key_pos : o->enc_pos,
				 ename, o->enc->key_len, o->enc->salt_len, sa->enc_key, sa->salt,
				 &sa->enc_key_len, &sa->salt_len, "key"))
			return -1;
		if (o->enc->legacy && !(sa->flags & SADB_SAF_LEGACY_OK))
			return ps_err(p, o->enc_pos, "%s is a legacy transform (RFC 8221): add 'legacy' "
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
			return ps_err(p, o->auth_pos, "%s is a legacy transform (RFC 8221): add 'legacy' "
				      "to use it", o->auth->name);
	} else if (akey) {
		return ps_err(p, o->akey_pos, "'authkey' without an integrity algorithm");
	}
	return 0;
}

