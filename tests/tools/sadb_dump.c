/* tests/tools/sadb_dump.c: sadb-dump, a test tool of the IKE part. It prints the SAs (and policies) of an
 * SADB through libsadb's reader API, one line each, in a form two gateways' dumps can be compared with:
 * the inbound SAs of one side must be, field for field, the outbound SAs of the other. Keys are shown
 * as a SHA-256 fingerprint unless --show-keys asks for them (doc/architecture.md rule 3).
 *
 * --count SPI:BYTES[:PACKETS] adds to the runtime counters of the SA with that SPI, standing in for
 * the dataplane in tests of byte/packet lifetimes that run without xipsecd (the one writer of those
 * counters otherwise). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/crypto.h>

#include "sadb/sadb.h"

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

/* Fingerprint of everything keyed: enc key, salt, auth key (with their lengths). */
static void key_fp(const struct sadb_sa *sa, char out[17])
{
	uint8_t buf[3 + SADB_ENC_KEY_MAX + SADB_SALT_MAX + SADB_AUTH_KEY_MAX], md[32];
	unsigned int mdlen = 0, i;
	size_t n = 0;

	buf[n++] = sa->enc_key_len;
	buf[n++] = sa->salt_len;
	buf[n++] = sa->auth_key_len;
	memcpy(buf + n, sa->enc_key, sa->enc_key_len);
	n += sa->enc_key_len;
	memcpy(buf + n, sa->salt, sa->salt_len);
	n += sa->salt_len;
	memcpy(buf + n, sa->auth_key, sa->auth_key_len);
	n += sa->auth_key_len;
	if (!EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL))
		mdlen = 0;
	OPENSSL_cleanse(buf, sizeof(buf));
	for (i = 0; i < 8 && i < mdlen; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[16] = '\0';
}

static const char *dir_name(uint8_t d)
{
	return d == SADB_DIR_IN ? "in" : d == SADB_DIR_OUT ? "out" : d == SADB_DIR_FWD ? "fwd" : "?";
}

static const char *state_name(uint8_t s)
{
	static const char *n[] = { "larval", "mature", "dying", "dead" };

	return s < 4 ? n[s] : "?";
}

static void print_sel(const struct sadb_selector *s)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	printf(" sel=%s/%u->%s/%u proto=%u", sadb_addr_str(&s->src, a, sizeof(a)), s->src_plen,
	       sadb_addr_str(&s->dst, b, sizeof(b)), s->dst_plen, s->proto);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sadb", required_argument, NULL, 's' },
		{ "show-keys", no_argument, NULL, 'k' },
		{ "policies", no_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *count = NULL;
	bool keys = false, pols = false, all = false;
	char err[256] = "", a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN], fp[17];
	struct sadb *db;
	struct sadb_sa sa;
	struct sadb_policy p;
	uint32_t cur = 0, slot;
	int c, rc;

	while ((c = getopt_long(argc, argv, "s:kpahc:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': count = optarg; break;
		case 's': path = optarg; break;
		case 'k': keys = true; break;
		case 'p': pols = true; break;
		case 'a': all = true; break;
		case 'h':
			printf("usage: %s [--sadb PATH] [--show-keys] [--policies] [--all]\n"
			       "  one line per mature SA (--all: larval/dying too); --policies: the SPD\n", argv[0]);
			return 0;
		default:
			return 2;
		}
	}
	rc = sadb_open(path, count ? SADB_RDWR : SADB_RDONLY, NULL, &db, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "sadb-dump: %s: %s\n", path ? path : sadb_default_path(),
			err[0] ? err : strerror(-rc));
		return 1;
	}
	if (count) {
		unsigned long long bytes = 0, packets = 0;
		unsigned spi = 0;
		struct sadb_runtime *rt;
		bool found = false;

		if (sscanf(count, "%x:%llu:%llu", &spi, &bytes, &packets) < 2) {
			fprintf(stderr, "sadb-dump: --count wants SPI:BYTES[:PACKETS] (SPI in hex)\n");
			sadb_close(db);
			return 2;
		}
		while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
			if (sa.spi != spi || !(rt = sadb_runtime(db, slot)) ||
			    __atomic_load_n(&rt->instance, __ATOMIC_ACQUIRE) != sa.instance)
				continue;
			__atomic_fetch_add(&rt->bytes, bytes, __ATOMIC_RELAXED);
			__atomic_fetch_add(&rt->packets, packets, __ATOMIC_RELAXED);
			__atomic_store_n(&rt->last_used, (uint64_t)time(NULL), __ATOMIC_RELAXED);
			if (!rt->first_used)
				__atomic_store_n(&rt->first_used, (uint64_t)time(NULL), __ATOMIC_RELAXED);
			found = true;
		}
		OPENSSL_cleanse(&sa, sizeof(sa));
		sadb_close(db);
		if (!found)
			fprintf(stderr, "sadb-dump: no SA with SPI %08x\n", spi);
		return found ? 0 : 1;
	}
	if (pols) {
		while (sadb_policy_next(db, &cur, &p) == 0) {
			printf("policy dir=%s action=%u proto=%u mode=%u reqid=%u prio=%u tun=%s->%s", dir_name(p.dir),
			       p.action, p.proto, p.mode, p.reqid, p.priority,
			       sadb_addr_str(&p.tun_src, a, sizeof(a)), sadb_addr_str(&p.tun_dst, b, sizeof(b)));
			print_sel(&p.sel);
			printf(" ike=%u\n", p.ike_id);
		}
		sadb_close(db);
		return 0;
	}
	while ((rc = sadb_sa_next(db, &cur, &sa, &slot)) == 0) {
		if (!all && sa.state != SADB_STATE_MATURE)
			continue;
		key_fp(&sa, fp);
		printf("spi=%08x proto=%u mode=%u src=%s dst=%s enc=%s auth=%s key=%s esn=%u encap=%u/%u",
		       sa.spi, sa.proto, sa.mode, sadb_addr_str(&sa.src, a, sizeof(a)),
		       sadb_addr_str(&sa.dst, b, sizeof(b)), sadb_enc_name(sa.enc_alg),
		       sadb_auth_name(sa.auth_alg), fp, !!(sa.flags & SADB_SAF_ESN), sa.encap_sport,
		       sa.encap_dport);
		if (keys) {
			printf(" enc_key=");
			hex(stdout, sa.enc_key, sa.enc_key_len);
			hex(stdout, sa.salt, sa.salt_len);
			printf(" auth_key=");
			hex(stdout, sa.auth_key, sa.auth_key_len);
		}
		/* the fields after '|' differ legitimately between the two ends */
		printf(" | dir=%s state=%s reqid=%u window=%u soft=%llus/%lluB hard=%llus/%lluB ike=%u",
		       dir_name(sa.dir), state_name(sa.state), sa.reqid, sa.replay_window,
		       (unsigned long long)sa.soft.add_seconds, (unsigned long long)sa.soft.bytes,
		       (unsigned long long)sa.hard.add_seconds, (unsigned long long)sa.hard.bytes, sa.ike_id);
		print_sel(&sa.sel);
		printf("\n");
		OPENSSL_cleanse(&sa, sizeof(sa));
	}
	sadb_close(db);
	return rc == -ENOENT ? 0 : 1;
}
