/* tests/tools/dp_testctl.c: a small SADB writer for xipsecd's netns tests, benchmarks and demo when
 * ipsecctl is not at hand: it adds policies and SAs through libsadb's writer API and prints an SA's
 * runtime counters. Not installed; ipsecctl is the administration tool.
 *
 *   dp_testctl SADB policy DIR ACTION SRC DST [proto N] [reqid N] [esp|ah] [tunnel TSRC TDST |
 *              transport] [prio N] [ike ID]
 *   dp_testctl SADB sa DIR SPI esp|ah tunnel|transport SRC DST [reqid N] [enc ALG HEXKEY]
 *              [auth ALG HEXKEY] [encap SPORT DPORT] [window N] [ike ID] [flags N]
 * (ike ID: the entry is owned by IKE SA ID, as xipsec-iked's would be. An outbound manual key of a
 * counter-mode cipher is written as `ipsecctl load --new-keys` writes it, SADB_SAF_SEQ_PERSIST and
 * SADB_SAF_SEQ_NEW, and an inbound manual key with SADB_SAF_SEQ_NEW, since every test starts with
 * a state directory of its own; flags N writes
 * exactly the SADB_SAF_* bits N instead, as another writer might.)
 *   dp_testctl SADB del SPI esp|ah DST
 *   dp_testctl SADB rt SPI esp|ah DST        (runtime counters as key=value lines)
 *   dp_testctl SADB flush                    (every SA and policy)
 * ALG: aes-gcm-16 (key includes the 4-byte salt), aes-cbc, hmac-sha256-128, hmac-sha1-96, null; the
 * legacy 3des-cbc and hmac-md5-96 also mark the SA as explicitly allowing legacy transforms. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sadb/sadb.h"

static int die(const char *msg, const char *arg)
{
	fprintf(stderr, "dp_testctl: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end)
		die("bad number", s);
	return v;
}

static unsigned hex(const char *s, uint8_t *out, unsigned max)
{
	size_t n = strlen(s);

	if (!strncmp(s, "0x", 2)) {
		s += 2;
		n -= 2;
	}
	if (n % 2 || n / 2 > max)
		die("bad hex key", s);
	for (size_t i = 0; i < n / 2; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			die("bad hex key", s);
		out[i] = (uint8_t)b;
	}
	return (unsigned)(n / 2);
}

static uint8_t dir(const char *s)
{
	return !strcmp(s, "in") ? SADB_DIR_IN : !strcmp(s, "out") ? SADB_DIR_OUT :
	       !strcmp(s, "fwd") ? SADB_DIR_FWD : (uint8_t)die("bad direction", s);
}

static uint8_t proto(const char *s)
{
	return !strcmp(s, "esp") ? SADB_PROTO_ESP : !strcmp(s, "ah") ? SADB_PROTO_AH :
	       (uint8_t)die("bad protocol (esp|ah)", s);
}

static void prefix(const char *s, struct sadb_addr *a, uint8_t *plen)
{
	if (sadb_prefix_parse(s, a, plen))
		die("bad prefix", s);
}

static void addr(const char *s, struct sadb_addr *a)
{
	if (sadb_addr_parse(s, a))
		die("bad address", s);
}

static struct sadb *open_db(const char *path)
{
	struct sadb *db;
	char msg[256];

	if (sadb_open(path, SADB_RDWR | SADB_CREATE, NULL, &db, msg, sizeof(msg)))
		die("cannot open SADB", msg);
	return db;
}

static int policy(struct sadb *db, int argc, char **argv)
{
	struct sadb_policy p;
	uint32_t id;
	int i = 4, err;

	if (argc < 4)
		die("policy DIR ACTION SRC DST ...", NULL);
	memset(&p, 0, sizeof(p));
	p.dir = dir(argv[0]);
	p.action = !strcmp(argv[1], "protect") ? SADB_ACT_PROTECT :
		   !strcmp(argv[1], "bypass") ? SADB_ACT_BYPASS :
		   !strcmp(argv[1], "discard") ? SADB_ACT_DISCARD : (uint8_t)die("bad action", argv[1]);
	prefix(argv[2], &p.sel.src, &p.sel.src_plen);
	prefix(argv[3], &p.sel.dst, &p.sel.dst_plen);
	p.sel.sport_hi = p.sel.dport_hi = 65535;
	p.priority = 100;
	if (p.action == SADB_ACT_PROTECT) {
		p.proto = SADB_PROTO_ESP;
		p.mode = SADB_MODE_TUNNEL;
	}
	while (i < argc) {
		const char *k = argv[i++];

		if (!strcmp(k, "proto") && i < argc)
			p.sel.proto = (uint8_t)num(argv[i++]);
		else if (!strcmp(k, "reqid") && i < argc)
			p.reqid = (uint32_t)num(argv[i++]);
		else if (!strcmp(k, "prio") && i < argc)
			p.priority = (uint32_t)num(argv[i++]);
		else if (!strcmp(k, "ike") && i < argc)
			p.ike_id = (uint32_t)num(argv[i++]);
		else if (!strcmp(k, "esp") || !strcmp(k, "ah"))
			p.proto = proto(k);
		else if (!strcmp(k, "transport"))
			p.mode = SADB_MODE_TRANSPORT;
		else if (!strcmp(k, "tunnel") && i + 1 < argc) {
			p.mode = SADB_MODE_TUNNEL;
			addr(argv[i++], &p.tun_src);
			addr(argv[i++], &p.tun_dst);
		} else
			die("bad policy argument", k);
	}
	err = sadb_policy_add(db, &p, &id);
	if (err)
		die("policy add failed", sadb_errmsg(db));
	printf("%u\n", id);
	return 0;
}

static uint16_t enc_alg(const char *s)
{
	return !strcmp(s, "aes-gcm-16") ? SADB_ENC_AES_GCM16 : !strcmp(s, "aes-cbc") ? SADB_ENC_AES_CBC :
	       !strcmp(s, "null") ? SADB_ENC_NULL : !strcmp(s, "aes-ctr") ? SADB_ENC_AES_CTR :
	       !strcmp(s, "chacha20-poly1305") ? SADB_ENC_CHACHA20_POLY1305 :
	       !strcmp(s, "3des-cbc") ? SADB_ENC_3DES_CBC :
	       (uint16_t)die("bad encryption algorithm", s);
}

static uint16_t auth_alg(const char *s)
{
	return !strcmp(s, "hmac-sha256-128") ? SADB_AUTH_HMAC_SHA256_128 :
	       !strcmp(s, "hmac-sha1-96") ? SADB_AUTH_HMAC_SHA1_96 :
	       !strcmp(s, "hmac-md5-96") ? SADB_AUTH_HMAC_MD5_96 :
	       !strcmp(s, "hmac-sha512-256") ? SADB_AUTH_HMAC_SHA512_256 :
	       !strcmp(s, "none") ? SADB_AUTH_NONE : (uint16_t)die("bad auth algorithm", s);
}

static int sa(struct sadb *db, int argc, char **argv)
{
	struct sadb_sa s;
	uint8_t key[SADB_ENC_KEY_MAX + SADB_SALT_MAX];
	char msg[256];
	int i = 6, err;
	bool raw_flags = false;

	if (argc < 6)
		die("sa DIR SPI esp|ah tunnel|transport SRC DST ...", NULL);
	memset(&s, 0, sizeof(s));
	s.dir = dir(argv[0]);
	s.spi = (uint32_t)num(argv[1]);
	s.proto = proto(argv[2]);
	s.mode = !strcmp(argv[3], "tunnel") ? SADB_MODE_TUNNEL : !strcmp(argv[3], "transport") ?
		 SADB_MODE_TRANSPORT : (uint8_t)die("bad mode", argv[3]);
	addr(argv[4], &s.src);
	addr(argv[5], &s.dst);
	s.state = SADB_STATE_MATURE;
	s.replay_window = SADB_REPLAY_DEFAULT;
	s.dscp = 0xff;
	s.sel.sport_hi = s.sel.dport_hi = 65535;
	while (i < argc) {
		const char *k = argv[i++];

		if (!strcmp(k, "reqid") && i < argc) {
			s.reqid = (uint32_t)num(argv[i++]);
		} else if (!strcmp(k, "enc") && i + 1 < argc) {
			unsigned n, salt = 0, icv = 0;

			s.enc_alg = enc_alg(argv[i++]);
			n = hex(argv[i++], key, sizeof(key));
			if (s.enc_alg == SADB_ENC_AES_GCM16 || s.enc_alg == SADB_ENC_AES_CTR ||
			    s.enc_alg == SADB_ENC_CHACHA20_POLY1305)
				salt = 4;
			if (n < salt)
				die("key too short", argv[i - 1]);
			s.enc_key_len = (uint8_t)(n - salt);
			s.salt_len = (uint8_t)salt;
			memcpy(s.enc_key, key, n - salt);
			memcpy(s.salt, key + n - salt, salt);
			if (sadb_enc_lengths(s.enc_alg, s.enc_key_len, &salt, &icv) == 0 && icv)
				s.icv_len = (uint8_t)icv;
		} else if (!strcmp(k, "auth") && i + 1 < argc) {
			unsigned kl, icv;

			s.auth_alg = auth_alg(argv[i++]);
			s.auth_key_len = (uint8_t)hex(argv[i++], s.auth_key, sizeof(s.auth_key));
			if (sadb_auth_lengths(s.auth_alg, &kl, &icv) == 0)
				s.icv_len = (uint8_t)icv;
		} else if (!strcmp(k, "encap") && i + 1 < argc) {
			s.encap_sport = (uint16_t)num(argv[i++]);
			s.encap_dport = (uint16_t)num(argv[i++]);
		} else if (!strcmp(k, "window") && i < argc) {
			s.replay_window = (uint32_t)num(argv[i++]);
		} else if (!strcmp(k, "ike") && i < argc) {
			s.ike_id = (uint32_t)num(argv[i++]);
		} else if (!strcmp(k, "flags") && i < argc) {
			s.flags = (uint32_t)num(argv[i++]);
			raw_flags = true;
		} else {
			die("bad sa argument", k);
		}
	}
	if (!raw_flags && (s.enc_alg == SADB_ENC_3DES_CBC || s.auth_alg == SADB_AUTH_HMAC_MD5_96))
		s.flags |= SADB_SAF_LEGACY_OK;
	if (!raw_flags && s.dir == SADB_DIR_OUT && !s.ike_id && sadb_sa_counter_mode(&s))
		s.flags |= SADB_SAF_SEQ_PERSIST | SADB_SAF_SEQ_NEW;
	if (!raw_flags && s.dir == SADB_DIR_IN && !s.ike_id)
		s.flags |= SADB_SAF_SEQ_NEW;
	if (sadb_sa_validate(&s, msg, sizeof(msg)))
		die("invalid SA", msg);
	err = sadb_sa_add(db, &s, NULL);
	explicit_bzero(&s, sizeof(s));
	explicit_bzero(key, sizeof(key));
	if (err)
		die("sa add failed", sadb_errmsg(db));
	return 0;
}

int main(int argc, char **argv)
{
	struct sadb *db;
	struct sadb_addr dst;
	int rc = 0;

	if (argc < 3)
		die("usage: dp_testctl SADB policy|sa|del|rt ...", NULL);
	db = open_db(argv[1]);
	if (!strcmp(argv[2], "policy")) {
		rc = policy(db, argc - 3, argv + 3);
	} else if (!strcmp(argv[2], "sa")) {
		rc = sa(db, argc - 3, argv + 3);
	} else if (!strcmp(argv[2], "del") && argc == 6) {
		addr(argv[5], &dst);
		if (sadb_sa_delete(db, (uint32_t)num(argv[3]), proto(argv[4]), &dst))
			die("delete failed", sadb_errmsg(db));
	} else if (!strcmp(argv[2], "flush") && argc == 3) {
		if (sadb_sa_flush(db, SADB_PROTO_ANY) < 0 || sadb_policy_flush(db) < 0)
			die("flush failed", sadb_errmsg(db));
	} else if (!strcmp(argv[2], "rt") && argc == 6) {
		struct sadb_sa s;
		struct sadb_runtime *rt;
		uint32_t slot;

		addr(argv[5], &dst);
		if (sadb_sa_lookup(db, (uint32_t)num(argv[3]), proto(argv[4]), &dst, &s, &slot))
			die("no such SA", argv[3]);
		rt = sadb_runtime(db, slot);
		printf("packets=%llu\nbytes=%llu\nseq_reserved=%llu\nreplay_top=%llu\n",
		       (unsigned long long)rt->packets, (unsigned long long)rt->bytes,
		       (unsigned long long)rt->seq_reserved, (unsigned long long)rt->replay_top);
		for (unsigned r = 1; r < SADB_DROP_MAX; r++)
			printf("drop_%s=%llu\n", sadb_drop_name(r), (unsigned long long)rt->drops[r]);
		explicit_bzero(&s, sizeof(s));
	} else {
		die("unknown command", argv[2]);
	}
	sadb_close(db);
	return rc;
}
