/* tests/unit/test_ipsecctl.c: unit tests of ipsecctl's parsers (ipsecctl/libipsecctl.a): hex keys,
 * prefixes, numbers and durations, the algorithm table checked against libsadb's own transform
 * table, JSON escaping (RFC 8259 §7), statement parsing into SADB records, keys shared between
 * many SAs, the Mobile IPv6 statements' expansion, a randomised parse -> print -> parse round
 * trip, and random mutations of a valid file (no crash, and an error is reported exactly when
 * parsing fails). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ipsecctl/ipsecctl.h"

/* ---- hex keys ---- */

static void test_hex(void **state)
{
	static const struct {
		const char *in;
		int ok;
		size_t len;
		const char *bytes;   /* expected, as raw */
		const char *msg;     /* substring of the error */
	} rows[] = {
		{ "0x0102", 1, 2, "\x01\x02", NULL },
		{ "0X0aFf", 1, 2, "\x0a\xff", NULL },
		{ "abcd", 1, 2, "\xab\xcd", NULL },
		{ "0x", 0, 0, NULL, "no hex digits" },
		{ "", 0, 0, NULL, "no hex digits" },
		{ "0x012", 0, 0, NULL, "odd number of hex digits (3)" },
		{ "0x01g2", 0, 0, NULL, "'g' (hex digit 3) is not a hex digit" },
		{ "0x01:02", 0, 0, NULL, "':' (hex digit 3)" },
		{ "0x00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00",
		  0, 0, NULL, "longer than any key" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t out[64];
		size_t len = 0;
		char msg[200] = "";
		int rc = ctl_hex_parse(rows[i].in, out, sizeof(out), &len, msg, sizeof(msg));

		if (rows[i].ok) {
			assert_int_equal(rc, 0);
			assert_int_equal(len, rows[i].len);
			assert_memory_equal(out, rows[i].bytes, len);
		} else {
			assert_int_not_equal(rc, 0);
			if (!strstr(msg, rows[i].msg))
				fail_msg("row %zu: message '%s' lacks '%s'", i, msg, rows[i].msg);
			/* Key text is never echoed in messages. */
			if (strlen(rows[i].in) > 4 && strstr(msg, rows[i].in))
				fail_msg("row %zu: message quotes the key", i);
		}
	}
}

/* ---- prefixes, addresses ---- */

static void test_prefix(void **state)
{
	static const struct {
		const char *in;
		int ok;
		int family;
		unsigned plen;
		const char *msg;
	} rows[] = {
		{ "10.0.0.0/8", 1, AF_INET, 8, NULL },
		{ "192.0.2.1", 1, AF_INET, 32, NULL },
		{ "0.0.0.0/0", 1, AF_INET, 0, NULL },
		{ "2001:db8::/32", 1, AF_INET6, 32, NULL },
		{ "2001:db8::1", 1, AF_INET6, 128, NULL },
		{ "any", 1, 0, 0, NULL },
		{ "ANY", 1, 0, 0, NULL },
		{ "10.0.0.0/33", 0, 0, 0, "prefix length must be 0-32 for IPv4" },
		{ "2001:db8::/129", 0, 0, 0, "prefix length must be 0-128 for IPv6" },
		{ "10.0.0.1/24", 0, 0, 0, "host bits set after /24" },
		{ "10.0.0.0/", 0, 0, 0, "prefix length" },
		{ "10.0.0.0/08", 0, 0, 0, "prefix length" },   /* no octal surprises */
		{ "10.0.0.256", 0, 0, 0, "is not an IPv4 or IPv6 address" },
		{ "host.example", 0, 0, 0, "is not an IPv4 or IPv6 address" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sadb_addr a;
		uint8_t plen = 99;
		char msg[200] = "";
		int rc = ctl_prefix_parse(rows[i].in, &a, &plen, msg, sizeof(msg));

		if (rows[i].ok) {
			if (rc)
				fail_msg("row %zu (%s): %s", i, rows[i].in, msg);
			assert_int_equal(a.family, rows[i].family);
			assert_int_equal(plen, rows[i].plen);
		} else {
			assert_int_not_equal(rc, 0);
			if (!strstr(msg, rows[i].msg))
				fail_msg("row %zu: message '%s' lacks '%s'", i, msg, rows[i].msg);
		}
	}
}

static void test_numbers(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(ctl_u64_parse("4096", UINT32_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ctl_u64_parse("0x1000", UINT32_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ctl_u64_parse("0", UINT32_MAX, &v), 0);
	assert_int_equal(v, 0);
	assert_int_not_equal(ctl_u64_parse("010", UINT32_MAX, &v), 0);
	assert_int_not_equal(ctl_u64_parse("0x100000000", UINT32_MAX, &v), 0);
	assert_int_not_equal(ctl_u64_parse("-1", UINT32_MAX, &v), 0);
	assert_int_not_equal(ctl_u64_parse("12a", UINT32_MAX, &v), 0);
	assert_int_not_equal(ctl_u64_parse("", UINT32_MAX, &v), 0);
	assert_int_equal(ctl_duration_parse("90", &v), 0);
	assert_int_equal(v, 90);
	assert_int_equal(ctl_duration_parse("15m", &v), 0);
	assert_int_equal(v, 900);
	assert_int_equal(ctl_duration_parse("2h", &v), 0);
	assert_int_equal(v, 7200);
	assert_int_equal(ctl_duration_parse("1d", &v), 0);
	assert_int_equal(v, 86400);
	assert_int_not_equal(ctl_duration_parse("h", &v), 0);
	assert_int_not_equal(ctl_duration_parse("1w", &v), 0);
}

/* ---- the algorithm table agrees with libsadb's ---- */

static void test_alg_table(void **state)
{
	char names[512], *save = NULL;

	(void)state;
	snprintf(names, sizeof(names), "%s", ctl_enc_names());
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save)) {
		const struct ctl_enc_alg *e = ctl_enc_find(n);
		unsigned salt = 99, icv = 99;
		int klen;

		if (!e)
			fail_msg("listed encryption name '%s' is not found", n);
		klen = sadb_enc_lengths(e->enc, e->key_len, &salt, &icv);
		if (klen != (int)e->key_len || salt != e->salt_len)
			fail_msg("%s: libsadb says key %d salt %u, ipsecctl %u/%u", n, klen, salt,
				 e->key_len, e->salt_len);
		assert_true(e->aead == (icv != 0));
		if (e->aead)
			assert_int_equal(icv, e->icv_len);
		assert_ptr_equal(ctl_enc_by_id(e->enc, e->key_len), e);
	}
	snprintf(names, sizeof(names), "%s", ctl_auth_names());
	save = NULL;
	for (char *n = strtok_r(names, ", ", &save); n; n = strtok_r(NULL, ", ", &save)) {
		const struct ctl_auth_alg *a;
		unsigned klen = 0, icv = 0;

		if (n[0] == '(')
			continue; /* "(AH)" annotations */
		a = ctl_auth_find(n);
		if (!a)
			fail_msg("listed integrity name '%s' is not found", n);
		assert_int_equal(sadb_auth_lengths(a->auth, &klen, &icv), 0);
		assert_int_equal(klen, a->key_len);
		assert_int_equal(icv, a->icv_len);
		assert_ptr_equal(ctl_auth_by_id(a->auth), a);
	}
	/* Aliases people paste. */
	assert_string_equal(ctl_enc_find("AES128GCM128")->name, "aes128gcm16");
	assert_string_equal(ctl_enc_find("aes-256-gcm")->name, "aes256gcm16");
	assert_string_equal(ctl_auth_find("hmac-sha2-256")->name, "sha256");
	assert_null(ctl_enc_find("des"));
	assert_null(ctl_enc_find("aes129gcm16"));
}

/* ---- JSON (RFC 8259 §7) ---- */

static void test_json_escape(void **state)
{
	static const struct { const char *in, *out; } rows[] = {
		{ "plain", "\"plain\"" },
		{ "a\"b", "\"a\\\"b\"" },
		{ "back\\slash", "\"back\\\\slash\"" },
		{ "nl\ntab\tcr\r", "\"nl\\ntab\\tcr\\r\"" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		ctl_json_escape(f, rows[i].in);
		fclose(f);
		assert_string_equal(buf, rows[i].out);
		free(buf);
	}
}

static void test_json_shape(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ctl_json j;

	(void)state;
	ctl_json_init(&j, f);
	ctl_json_obj(&j, NULL);
	ctl_json_u64(&j, "n", UINT64_MAX);
	ctl_json_arr(&j, "empty");
	ctl_json_end_arr(&j);
	ctl_json_arr(&j, "l");
	ctl_json_str(&j, NULL, "x");
	ctl_json_bool(&j, NULL, true);
	ctl_json_null(&j, NULL);
	ctl_json_end_arr(&j);
	ctl_json_obj(&j, "o");
	ctl_json_end_obj(&j);
	ctl_json_end_obj(&j);
	ctl_json_done(&j);
	fclose(f);
	/* a document's first field is its schema version */
	assert_string_equal(buf, "{\n  \"schema\": 1,\n  \"n\": 18446744073709551615,\n  \"empty\": [],\n  \"l\": [\n"
			    "    \"x\",\n    true,\n    null\n  ],\n  \"o\": {}\n}\n");
	free(buf);
}

/* ---- statements ---- */

static int parse(struct ctl_conf *c, const char *text, char **errs)
{
	size_t len = 0;
	FILE *ef = open_memstream(errs, &len);
	int rc;

	ctl_conf_init(c, "t", ef);
	rc = ctl_conf_parse(c, text, strlen(text));
	if (rc == 0)
		rc = ctl_conf_validate(c, NULL);
	fclose(ef);
	return rc;
}

static void test_parse_sa_fields(void **state)
{
	struct ctl_conf c;
	char *errs = NULL;
	const struct sadb_sa *sa;

	(void)state;
	assert_int_equal(parse(&c, "sa esp tunnel from 192.0.2.1 to 192.0.2.2 spi 0x1000 out reqid 9 "
			       "enc aes128gcm16 key 0x000102030405060708090a0b0c0d0e0fa0a1a2a3 esn "
			       "replay 2048 encap udp 4500 4501 soft bytes 10 time 1m hard packets 5 use 1h "
			       "selector from 10.0.0.0/8 to any proto icmp type 8 code 0\n", &errs), 0);
	assert_string_equal(errs, "");
	assert_int_equal(c.n, 1);
	sa = &c.items[0].sa;
	assert_int_equal(sa->spi, 0x1000);
	assert_int_equal(sa->proto, SADB_PROTO_ESP);
	assert_int_equal(sa->mode, SADB_MODE_TUNNEL);
	assert_int_equal(sa->dir, SADB_DIR_OUT);
	assert_int_equal(sa->reqid, 9);
	assert_int_equal(sa->enc_alg, SADB_ENC_AES_GCM16);
	assert_int_equal(sa->enc_key_len, 16);
	assert_int_equal(sa->salt_len, 4);
	assert_memory_equal(sa->enc_key, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f", 16);
	assert_memory_equal(sa->salt, "\xa0\xa1\xa2\xa3", 4);
	assert_int_equal(sa->flags, SADB_SAF_ESN);
	assert_int_equal(sa->replay_window, 2048);
	assert_int_equal(sa->encap_sport, 4500);
	assert_int_equal(sa->encap_dport, 4501);
	assert_int_equal(sa->soft.bytes, 10);
	assert_int_equal(sa->soft.add_seconds, 60);
	assert_int_equal(sa->hard.packets, 5);
	assert_int_equal(sa->hard.use_seconds, 3600);
	assert_int_equal(sa->sel.src.family, AF_INET);
	assert_int_equal(sa->sel.src_plen, 8);
	assert_int_equal(sa->sel.dst.family, 0);
	assert_int_equal(sa->sel.proto, 1);
	assert_int_equal(sa->sel.sport_lo, 8);
	assert_int_equal(sa->sel.sport_hi, 8);
	assert_int_equal(sa->sel.dport_lo, 0);
	assert_int_equal(sa->sel.dport_hi, 0);
	assert_int_equal(sa->dscp, 0xff);
	assert_int_equal(sa->state, SADB_STATE_MATURE);
	ctl_conf_free(&c);
	free(errs);
}

/* Every kind of SA option (its own function, a flag, a number into a field of its width) lands in
 * its own field; the 16- and 32-bit fields at their maximum, so a write of the wrong width shows. */
static void test_parse_sa_options(void **state)
{
	struct ctl_conf c;
	char *errs = NULL;
	const struct sadb_sa *sa;
	uint8_t action = 0;

	(void)state;
	assert_int_equal(parse(&c, "sa esp transport from 192.0.2.1 to 192.0.2.2 spi 0x1000 in "
			       "enc aes128 key 0x000102030405060708090a0b0c0d0e0f auth sha256 "
			       "authkey 0x101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f "
			       "icv 16 tfc 65535 ikeid 4294967295 ttl 255 dscp 63 mtu 65535 df clear "
			       "noecn decap-dscp legacy state dying replay off\n", &errs), 0);
	assert_string_equal(errs, "");
	assert_int_equal(c.n, 1);
	sa = &c.items[0].sa;
	assert_int_equal(sa->icv_len, 16);
	assert_int_equal(sa->tfc_pad, 65535);
	assert_int_equal(sa->ike_id, 4294967295u);
	assert_int_equal(sa->ttl, 255);
	assert_int_equal(sa->dscp, 63);
	assert_int_equal(sa->mtu, 65535);
	assert_int_equal(sa->state, SADB_STATE_DYING);
	assert_int_equal(sa->replay_window, 0);
	assert_int_equal(sa->flags, SADB_SAF_DF_CLEAR | SADB_SAF_NO_ECN | SADB_SAF_DECAP_DSCP |
			 SADB_SAF_LEGACY_OK | SADB_SAF_NO_REPLAY);
	assert_int_equal(sa->reqid, 0);
	assert_int_equal(sa->encap_sport, 0);
	assert_int_equal(sa->encap_dport, 0);
	ctl_conf_free(&c);
	free(errs);
	/* A number past its field's maximum is refused, not truncated. */
	assert_int_not_equal(parse(&c, "sa esp transport from 192.0.2.1 to 192.0.2.2 spi 0x1000 in "
				   "enc aes128gcm16 key 0x000102030405060708090a0b0c0d0e0fa0a1a2a3 "
				   "tfc 65536\n", &errs), 0);
	assert_non_null(strstr(errs, "t:1:"));
	assert_non_null(strstr(errs, "expected a TFC padding length in bytes, got '65536'"));
	ctl_conf_free(&c);
	free(errs);
	assert_true(ctl_action_word("IPsec", &action));
	assert_int_equal(action, SADB_ACT_PROTECT);
	assert_true(ctl_action_word("block", &action));
	assert_int_equal(action, SADB_ACT_DISCARD);
	assert_true(ctl_action_word("pass", NULL));
	assert_false(ctl_action_word("esp", &action));
}

static void test_parse_pair(void **state)
{
	struct ctl_conf c;
	char *errs = NULL;

	(void)state;
	assert_int_equal(parse(&c, "esp tunnel from 10.1.0.0/24 port 1000-2000 to 10.2.0.0/24 proto udp "
			       "local 192.0.2.1 peer 192.0.2.2 spi 0x1000:0x1001 enc aes256-sha256 "
			       "key 0x" "1111111111111111111111111111111111111111111111111111111111111111"
			       ":0x" "2222222222222222222222222222222222222222222222222222222222222222 "
			       "authkey 0x" "3333333333333333333333333333333333333333333333333333333333333333"
			       ":0x" "4444444444444444444444444444444444444444444444444444444444444444\n",
			       &errs), 0);
	assert_int_equal(c.n, 4);
	/* outbound SA: local -> peer, first SPI and keys; inbound the reverse. */
	assert_int_equal(c.items[0].sa.dir, SADB_DIR_OUT);
	assert_int_equal(c.items[0].sa.spi, 0x1000);
	assert_int_equal(c.items[0].sa.enc_key[0], 0x11);
	assert_int_equal(c.items[0].sa.auth_key[0], 0x33);
	assert_int_equal(c.items[1].sa.dir, SADB_DIR_IN);
	assert_int_equal(c.items[1].sa.spi, 0x1001);
	assert_int_equal(c.items[1].sa.enc_key[0], 0x22);
	assert_int_equal(c.items[1].sa.auth_key[0], 0x44);
	assert_true(sadb_addr_eq(&c.items[0].sa.src, &c.items[1].sa.dst));
	/* Reverse selector: ports swap with the addresses. */
	assert_int_equal(c.items[0].sa.sel.sport_lo, 1000);
	assert_int_equal(c.items[1].sa.sel.dport_lo, 1000);
	assert_int_equal(c.items[1].sa.sel.dport_hi, 2000);
	assert_int_equal(c.items[1].sa.sel.src_plen, 24);
	assert_int_equal(c.items[1].sa.sel.src.a.b[1], 2);
	/* Policies: out/in, bound by the default reqid (the outbound SPI), tunnel endpoints per
	 * direction. */
	assert_int_equal(c.items[2].pol.dir, SADB_DIR_OUT);
	assert_int_equal(c.items[3].pol.dir, SADB_DIR_IN);
	assert_int_equal(c.items[2].pol.reqid, 0x1000);
	assert_int_equal(c.items[0].sa.reqid, 0x1000);
	assert_true(sadb_addr_eq(&c.items[2].pol.tun_src, &c.items[0].sa.src));
	assert_true(sadb_addr_eq(&c.items[3].pol.tun_src, &c.items[1].sa.src));
	ctl_conf_free(&c);
	free(errs);
}

/* Shared keys are found among many SAs (sorted, not pairwise): 20000 SAs with keys that differ
 * only in their last key byte pass; making one SA's key another's gives exactly one error, naming
 * both SAs. */
static void test_shared_key_many(void **state)
{
	enum { NSA = 20000 };
	char *text = malloc((size_t)NSA * 200), *p;
	struct ctl_conf c;
	char *errs = NULL;

	(void)state;
	assert_non_null(text);
	for (int round = 0; round < 2; round++) {
		p = text;
		for (unsigned i = 0; i < NSA; i++) {
			/* key bytes 13..15 carry i, the salt is the same everywhere */
			unsigned k = round == 1 && i == NSA - 1 ? 7 : i;

			p += sprintf(p, "sa esp tunnel from 192.0.2.1 to 198.51.100.%u spi %u out "
				     "enc aes128gcm16 key 0x0102030405060708090a0b0c0d%06x11121314\n",
				     i % 250 + 1, 0x1000 + i, k);
		}
		if (round == 0) {
			assert_int_equal(parse(&c, text, &errs), 0);
			assert_string_equal(errs, "");
		} else {
			assert_int_equal(parse(&c, text, &errs), -EINVAL);
			assert_string_equal(errs, "t:20000:82: key of SA spi 0x00005e1f is the key (and "
					    "salt) of SA spi 0x00001007 (t:8:79): two SAs must never "
					    "share a key: with a counter-mode cipher both would send "
					    "the same nonces\n");
		}
		ctl_conf_free(&c);
		free(errs);
		errs = NULL;
	}
	free(text);
}

/* ---- random round trip ---- */

static unsigned rnd(unsigned *s, unsigned n)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) % n;
}

static void hexkey(char *out, unsigned bytes, unsigned *s)
{
	out += sprintf(out, "0x");
	for (unsigned i = 0; i < bytes; i++)
		out += sprintf(out, "%02x", rnd(s, 256));
}

/* A random valid statement. */
static void gen(char *buf, unsigned *s, unsigned i)
{
	static const char *encs[] = { "aes128gcm16", "aes256gcm16", "chacha20poly1305", "aes128",
				      "aes256ctr", "null", "aes192gmac" };
	static const char *auths[] = { "sha1", "sha256", "sha384", "sha512" };
	static const unsigned akl[] = { 20, 32, 48, 64 };
	const struct ctl_enc_alg *e = ctl_enc_find(encs[rnd(s, 7)]);
	char k[200], a[200];
	unsigned ai = rnd(s, 4);
	char *p = buf;

	hexkey(k, e->key_len + e->salt_len, s);
	hexkey(a, akl[ai], s);
	if (rnd(s, 5) == 0) {
		p += sprintf(p, "policy %s from 10.%u.0.0/16 port %u to %s proto %s %s priority %u\n",
			     rnd(s, 2) ? "in" : "fwd", i % 256, rnd(s, 65536),
			     rnd(s, 2) ? "any" : "10.200.0.0/16", rnd(s, 2) ? "tcp" : "udp",
			     rnd(s, 2) ? "bypass" : "discard", rnd(s, 1000));
		return;
	}
	p += sprintf(p, "sa esp %s from 192.0.2.%u to 198.51.100.%u spi %u %s enc %s",
		     rnd(s, 2) ? "tunnel" : "transport", rnd(s, 255), rnd(s, 255), 256 + i,
		     rnd(s, 2) ? "in" : "out", e->name);
	if (e->key_len + e->salt_len)
		p += sprintf(p, " key %s", k);
	if (!e->aead)
		p += sprintf(p, " auth %s authkey %s", auths[ai], a);
	if (rnd(s, 2))
		p += sprintf(p, " reqid %u esn replay %u", rnd(s, 100) + 1, rnd(s, 4096) + 1);
	if (rnd(s, 2))
		p += sprintf(p, " soft bytes %u hard bytes %u time %u", rnd(s, 1000) + 1,
			     rnd(s, 1000) + 1000, rnd(s, 100000) + 1);
	if (rnd(s, 3) == 0)
		p += sprintf(p, " encap udp 4500 %u ttl %u dscp %u mtu %u tfc %u", rnd(s, 65535) + 1,
			     rnd(s, 255) + 1, rnd(s, 64), 576 + rnd(s, 8000), rnd(s, 1500));
	if (rnd(s, 3) == 0)
		p += sprintf(p, " selector from 10.0.%u.0/24 to any proto %u", rnd(s, 256),
			     rnd(s, 255) + 1);
	sprintf(p, "\n");
}

static char *print_conf(const struct ctl_conf *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ctl_conf_print(c, f);
	fclose(f);
	return buf;
}

/* Mobile IPv6: the home-agent record, and a mobile-node's expansion into a signalling transport
 * pair (the stronger priority; its policies: the Mobility Header both ways, the Mobile Prefix
 * Solicitation in and Advertisement out, RFC 3776 4.2) and a tunnel pair whose peer is the home
 * address, every SA flagged mobile; its -n text parses back to the same records. */
#define MN_KEY(b) "0x" b b b b b b b b b b b b b b b b b b b b
static const char mn_text[] =
	"home-agent 2001:db8:1::1 prefix 2001:db8:1::/64 prefix 2001:db8:2::/48 lifetime 10m\n"
	"mobile-node 2001:db8:2::9 signalling spi 0x6000:0x6001 enc aes128gcm16 key "
	MN_KEY("11") ":" MN_KEY("22") " tunnel spi 0x6100:0x6101 enc aes128gcm16 key "
	MN_KEY("33") ":" MN_KEY("44") " replay 32 priority 7\n";

static void test_parse_mobile_node(void **state)
{
	struct ctl_conf c, c2;
	char *errs = NULL, *p1, *p2;
	const struct sadb_addr *ha, *hoa;

	(void)state;
	assert_int_equal(parse(&c, mn_text, &errs), 0);
	assert_string_equal(errs, "");
	assert_int_equal(c.n_ha, 1);
	assert_int_equal(c.ha[0].n_prefix, 2);
	assert_int_equal(c.ha[0].plen[1], 48);
	assert_int_equal(c.ha[0].max_lifetime, 600);
	assert_int_equal(c.n, 10);
	ha = &c.ha[0].addr;
	hoa = &c.items[0].sa.dst;
	assert_int_equal(hoa->a.b[15], 9);
	for (size_t i = 0; i < 10; i++) {
		/* the policies' protocol and ICMPv6 type (the selector's source "port") */
		static const struct { uint8_t proto, type; } pols[10] = {
			[2] = { 135, 0 }, [3] = { 135, 0 }, [4] = { 58, 147 }, [5] = { 58, 146 },
		};
		const struct ctl_item *it = &c.items[i];
		bool sig = i < 6;

		assert_int_equal(it->kind, i < 2 || i == 6 || i == 7 ? CTL_IT_SA : CTL_IT_POLICY);
		if (it->kind == CTL_IT_SA) {
			bool out = it->sa.dir == SADB_DIR_OUT;

			assert_true(it->sa.flags & SADB_SAF_MOBILE);
			assert_int_equal(it->sa.mode, sig ? SADB_MODE_TRANSPORT : SADB_MODE_TUNNEL);
			assert_int_equal(it->sa.sel.proto, 0);
			assert_int_equal(it->sa.replay_window, sig ? SADB_REPLAY_DEFAULT : 32);
			/* outer endpoints: the home agent and, at home, the home address */
			assert_true(sadb_addr_eq(out ? &it->sa.src : &it->sa.dst, ha));
			assert_true(sadb_addr_eq(out ? &it->sa.dst : &it->sa.src, hoa));
			/* the home address is the selector's /128 on the mobile node's side */
			assert_true(sadb_addr_eq(out ? &it->sa.sel.dst : &it->sa.sel.src, hoa));
			assert_int_equal(out ? it->sa.sel.dst_plen : it->sa.sel.src_plen, 128);
			/* the tunnel carries anything to and from the home address; IPv6 only */
			assert_int_equal(out ? it->sa.sel.src_plen : it->sa.sel.dst_plen, sig ? 128 : 0);
			assert_int_equal(out ? it->sa.sel.src.family : it->sa.sel.dst.family, AF_INET6);
			assert_int_equal(it->sa.reqid, sig ? 0x6000 : 0x6100);
		} else {
			assert_int_equal(it->pol.action, SADB_ACT_PROTECT);
			assert_int_equal(it->pol.priority, sig ? 7 : 8);
			assert_int_equal(it->pol.reqid, sig ? 0x6000 : 0x6100);
			assert_int_equal(it->pol.mode, sig ? SADB_MODE_TRANSPORT : SADB_MODE_TUNNEL);
			assert_int_equal(it->pol.dir, i % 2 ? SADB_DIR_IN : SADB_DIR_OUT);
			assert_int_equal(it->pol.sel.proto, pols[i].proto);
			if (pols[i].type) {
				assert_int_equal(it->pol.sel.sport_lo, pols[i].type);
				assert_int_equal(it->pol.sel.sport_hi, pols[i].type);
			}
		}
	}
	assert_int_equal(c.items[6].sa.enc_key[0], 0x33);
	assert_int_equal(c.items[7].sa.enc_key[0], 0x44);
	/* the -n text parses back to the same records */
	p1 = print_conf(&c);
	free(errs);
	assert_int_equal(parse(&c2, p1, &errs), 0);
	assert_int_equal(c2.n, c.n);
	assert_int_equal(c2.n_ha, 1);
	assert_true(ctl_home_agent_same(&c.ha[0], &c2.ha[0]));
	for (size_t i = 0; i < c.n; i++) {
		assert_int_equal(c2.items[i].kind, c.items[i].kind);
		if (c.items[i].kind == CTL_IT_SA)
			assert_memory_equal(&c2.items[i].sa, &c.items[i].sa, sizeof(c.items[i].sa));
		else
			assert_memory_equal(&c2.items[i].pol, &c.items[i].pol, sizeof(c.items[i].pol));
	}
	p2 = print_conf(&c2);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	free(errs);
	ctl_conf_free(&c);
	ctl_conf_free(&c2);

	/* the home agent must come first; a home address outside the prefixes is refused */
	assert_int_not_equal(parse(&c, strchr(mn_text, '\n') + 1, &errs), 0);
	assert_non_null(strstr(errs, "t:1:1: mobile-node needs a 'home-agent' statement before it"));
	ctl_conf_free(&c);
	free(errs);
	assert_int_not_equal(parse(&c, "home-agent 2001:db8:1::1 prefix 2001:db8:1::/64\n"
				   "mobile-node 2001:db8:2::9 signalling spi 0x6000:0x6001 enc "
				   "aes128gcm16 key " MN_KEY("11") ":" MN_KEY("22") " tunnel spi "
				   "0x6100:0x6101 enc aes128gcm16 key " MN_KEY("33") ":" MN_KEY("44")
				   "\n", &errs), 0);
	assert_non_null(strstr(errs, "t:2:13: home address 2001:db8:2::9 is in none of the home "
			       "agent's prefixes"));
	assert_int_equal(c.n, 0);
	ctl_conf_free(&c);
	free(errs);
}

/* Several home agent addresses: a mobile node's SAs end at the one whose prefix holds its home
 * address; a second statement on the same address or an overlapping prefix is refused. */
static void test_parse_home_agents(void **state)
{
	static const struct { const char *text, *err; } bad[] = {
		{ "home-agent 2001:db8:1::1 prefix 2001:db8:1::/64\n"
		  "home-agent 2001:db8:1::1 prefix 2001:db8:1::/48\n",
		  "t:2:12: home agent address 2001:db8:1::1 is already defined at line 1" },
		{ "home-agent 2001:db8:1::1 prefix 2001:db8:1::/64\n"
		  "home-agent 2001:db8::1 prefix 2001:db8::/32\n",
		  "t:2:12: home prefix 2001:db8::/32 overlaps a prefix of the home agent at line 1" },
	};
	struct ctl_conf c;
	char *errs = NULL, text[2048];

	(void)state;
	snprintf(text, sizeof(text), "home-agent 2001:db8:1::1 prefix 2001:db8:1::/64\n"
		 "home-agent 2001:db8:5::1 prefix 2001:db8:5::/64 lifetime 60\n"
		 "mobile-node 2001:db8:5::9 signalling spi 0x6000:0x6001 enc aes128gcm16 key "
		 MN_KEY("11") ":" MN_KEY("22") " tunnel spi 0x6100:0x6101 enc aes128gcm16 key "
		 MN_KEY("33") ":" MN_KEY("44") "\n");
	assert_int_equal(parse(&c, text, &errs), 0);
	assert_string_equal(errs, "");
	assert_int_equal(c.n_ha, 2);
	assert_int_equal(c.ha[1].max_lifetime, 60);
	for (size_t i = 0; i < c.n; i++) {
		const struct sadb_sa *sa = &c.items[i].sa;

		if (c.items[i].kind == CTL_IT_SA)
			assert_true(sadb_addr_eq(sa->dir == SADB_DIR_OUT ? &sa->src : &sa->dst, &c.ha[1].addr));
	}
	ctl_conf_free(&c);
	free(errs);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_not_equal(parse(&c, bad[i].text, &errs), 0);
		if (!strstr(errs, bad[i].err))
			fail_msg("\"%s\" lacks \"%s\"", errs, bad[i].err);
		ctl_conf_free(&c);
		free(errs);
	}
}

static void test_roundtrip_random(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (int round = 0; round < 200; round++) {
		char text[16384] = "", line[2048];
		struct ctl_conf c1, c2;
		char *e1 = NULL, *e2 = NULL, *p1, *p2;

		for (unsigned i = 0; i < 1 + rnd(&seed, 8); i++) {
			gen(line, &seed, i);
			strcat(text, line);
		}
		if (parse(&c1, text, &e1)) {
			print_error("%s\n%s\n", text, e1);
			fail_msg("generated text does not parse");
		}
		p1 = print_conf(&c1);
		if (parse(&c2, p1, &e2)) {
			print_error("%s\n%s\n", p1, e2);
			fail_msg("printed text does not parse");
		}
		p2 = print_conf(&c2);
		assert_string_equal(p1, p2);
		assert_int_equal(c1.n, c2.n);
		for (size_t i = 0; i < c1.n; i++) {
			const struct sadb_sa *a = &c1.items[i].sa, *b = &c2.items[i].sa;

			assert_int_equal(c1.items[i].kind, c2.items[i].kind);
			assert_memory_equal(a->enc_key, b->enc_key, sizeof(a->enc_key));
			assert_memory_equal(a->auth_key, b->auth_key, sizeof(a->auth_key));
			assert_memory_equal(a->salt, b->salt, sizeof(a->salt));
			assert_memory_equal(&a->sel, &b->sel, sizeof(a->sel));
			assert_memory_equal(&a->soft, &b->soft, sizeof(a->soft));
			assert_memory_equal(&a->hard, &b->hard, sizeof(a->hard));
			assert_int_equal(a->flags, b->flags);
			assert_int_equal(a->spi, b->spi);
			assert_memory_equal(&c1.items[i].pol.sel, &c2.items[i].pol.sel,
					    sizeof(c1.items[i].pol.sel));
		}
		free(p1);
		free(p2);
		free(e1);
		free(e2);
		ctl_conf_free(&c1);
		ctl_conf_free(&c2);
	}
}

/* ---- mutations never crash, and failure always comes with a message ---- */

static void test_mutations(void **state)
{
	static const char base[] =
		"flush\n"
		"esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\\n"
		"\tspi 0x1000:0x1001 enc aes128gcm16 key 0x0102030405060708090a0b0c0d0e0f1011121314:"
		"0x2122232425262728292a2b2c2d2e2f3031323334\n"
		"sa ah transport from 2001:db8::1 to 2001:db8::2 spi 300 in auth sha1 "
		"authkey \"0x0102030405060708090a0b0c0d0e0f1011121314\" soft bytes 10 hard bytes 20\n"
		"policy in from any to any proto icmp6 type 133-137 bypass priority 1 # comment\n";
	unsigned seed = 777;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		char text[sizeof(base)];
		struct ctl_conf c;
		char *errs = NULL;
		int rc;
		size_t len = sizeof(base) - 1;

		memcpy(text, base, sizeof(base));
		for (unsigned m = 0; m < 1 + rnd(&seed, 4) && len > 0; m++) {
			size_t at = rnd(&seed, (unsigned)len);

			switch (rnd(&seed, 3)) {
			case 0: text[at] = (char)(1 + rnd(&seed, 255)); break;
			case 1: text[at] = " \n\\\":#0x"[rnd(&seed, 8)]; break;
			default: text[at] = 0; len = at; break; /* truncated file */
			}
		}
		rc = parse(&c, text, &errs);
		if (rc != 0 && errs[0] == 0)
			fail_msg("failed without a message on:\n%s", text);
		if (rc == 0 && errs[0] != 0)
			fail_msg("succeeded with messages:\n%s", errs);
		free(errs);
		ctl_conf_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_alg_table),
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_parse_sa_fields),
		cmocka_unit_test(test_parse_sa_options),
		cmocka_unit_test(test_parse_pair),
		cmocka_unit_test(test_parse_mobile_node),
		cmocka_unit_test(test_parse_home_agents),
		cmocka_unit_test(test_shared_key_many),
		cmocka_unit_test(test_roundtrip_random),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
