/* ipsecctl/ipsecctl_export.c: `ipsecctl export wireshark`: the keys of chosen ESP SAs as rows of
 * Wireshark's esp_sa user access table (the file ~/.config/wireshark/esp_sa, or tshark's
 * `-o uat:esp_sa:ROW`), so an administrator can decrypt a capture. Exporting keys is the point of
 * this command, so it needs no --show-keys; it refuses SAs Wireshark 4.0 cannot decrypt rather than
 * writing rows that would silently show garbage. With --json the rows come as one document (each
 * column by name, and the row itself), for scripts that write the table file. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl.h"

static size_t hex_into(char *p, size_t room, const uint8_t *a, size_t an, const uint8_t *b,
		       size_t bn)
{
	size_t o = 0;

	if (!an && !bn)
		return 0;
	o += (size_t)snprintf(p, room, "0x");
	for (size_t i = 0; i < an && o < room; i++)
		o += (size_t)snprintf(p + o, room - o, "%02x", a[i]);
	for (size_t i = 0; i < bn && o < room; i++)
		o += (size_t)snprintf(p + o, room - o, "%02x", b[i]);
	return o;
}

/* One row of the table, column by column (Wireshark 4.0 packet-ipsec.c UAT): protocol, src IP, dst
 * IP, SPI, encryption algorithm, encryption key, authentication algorithm, authentication key. Keys
 * in the "0x" hex form, salt/nonce appended to the AES-GCM and AES-CTR keys as RFC 4106/3686 keying
 * material. Holds keys: wiped by its user. */
struct ws_row {
	const char *family, *enc, *auth;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	char ek[2 * (SADB_ENC_KEY_MAX + SADB_SALT_MAX) + 3], ak[2 * SADB_AUTH_KEY_MAX + 3];
};

static int ws_row_fill(const struct sadb_sa *sa, struct ws_row *r)
{
	const struct ctl_enc_alg *enc = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *auth = ctl_auth_by_id(sa->auth_alg);

	if (sa->proto != SADB_PROTO_ESP || !enc || !enc->ws_name)
		return -ENOTSUP;
	if (sa->auth_alg && (!auth || !auth->ws_name))
		return -ENOTSUP;
	memset(r, 0, sizeof(*r));
	r->family = sa->dst.family == AF_INET6 ? "IPv6" : "IPv4";
	ctl_addr_str(&sa->src, r->src, sizeof(r->src));
	ctl_addr_str(&sa->dst, r->dst, sizeof(r->dst));
	r->enc = enc->ws_name;
	r->auth = auth ? auth->ws_name : "NULL";
	hex_into(r->ek, sizeof(r->ek), sa->enc_key, sa->enc_key_len, sa->salt, enc->salt_len);
	if (auth)
		hex_into(r->ak, sizeof(r->ak), sa->auth_key, sa->auth_key_len, NULL, 0);
	return 0;
}

static int ws_row_format(const struct ws_row *r, uint32_t spi, char *buf, size_t len)
{
	int n = snprintf(buf, len, "\"%s\",\"%s\",\"%s\",\"0x%08x\",\"%s\",\"%s\",\"%s\",\"%s\"",
			 r->family, r->src, r->dst, spi, r->enc, r->ek, r->auth, r->ak);

	return n > 0 && (size_t)n < len ? 0 : -ENOSPC;
}

/* The row as a JSON object: the columns by name, and "uat", the row as Wireshark's table and
 * tshark's `-o uat:esp_sa:` take it. */
static void ws_row_json(struct ctl_json *j, const struct ws_row *r, uint32_t spi, const char *uat)
{
	char hex[16];

	snprintf(hex, sizeof(hex), "0x%08x", spi);
	ctl_json_obj(j, NULL);
	ctl_json_u64(j, "spi", spi);
	ctl_json_str(j, "spi_hex", hex);
	ctl_json_str(j, "family", r->family);
	ctl_json_str(j, "src", r->src);
	ctl_json_str(j, "dst", r->dst);
	ctl_json_str(j, "encryption", r->enc);
	ctl_json_str(j, "encryption_key", r->ek);
	ctl_json_str(j, "authentication", r->auth);
	ctl_json_str(j, "authentication_key", r->ak);
	ctl_json_str(j, "uat", uat);
	ctl_json_end_obj(j);
}

int ctl_export_wireshark(struct sadb *db, const struct ctl_opts *o, int argc, char **argv)
{
	uint32_t *want = NULL, cur = 0, slot;
	bool *found = NULL;
	struct sadb_sa sa;
	struct ws_row r;
	struct ctl_json j;
	char row[512];
	int rc = CTL_EXIT_OK, rows = 0;

	if (argc > 0) {
		want = calloc((size_t)argc, sizeof(*want));
		found = calloc((size_t)argc, sizeof(*found));
		if (!want || !found) {
			ctl_err("export: out of memory");
			rc = CTL_EXIT_ERR;
			goto out;
		}
	}
	for (int i = 0; i < argc; i++) {
		uint64_t v;

		if (ctl_u64_parse(argv[i], UINT32_MAX, &v)) {
			ctl_err("export wireshark: bad SPI '%s': expected a number such as 0x1000",
				argv[i]);
			rc = CTL_EXIT_USAGE;
			goto out;
		}
		want[i] = (uint32_t)v;
	}
	if (o->json) {
		ctl_json_init(&j, stdout);
		ctl_json_obj(&j, NULL);
		ctl_json_arr(&j, "esp_sa");
	} else if (o->tshark)
		printf("-o 'esp.enable_encryption_decode:TRUE'\n"
		       "-o 'esp.enable_authentication_check:TRUE'\n");
	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		bool sel = argc == 0;

		for (int i = 0; i < argc; i++) {
			if (want[i] == sa.spi) {
				sel = true;
				found[i] = true;
			}
		}
		if (!sel || (argc == 0 && sa.proto != SADB_PROTO_ESP))
			continue;
		if (ws_row_fill(&sa, &r) || ws_row_format(&r, sa.spi, row, sizeof(row))) {
			const struct ctl_enc_alg *e = ctl_enc_by_id(sa.enc_alg, sa.enc_key_len);

			ctl_err("export wireshark: SA spi 0x%08x (%s%s%s) cannot be decrypted by "
				"Wireshark 4.0's esp_sa table; skipped", sa.spi,
				ctl_proto_name(sa.proto), sa.proto == SADB_PROTO_ESP ? " " : "",
				sa.proto == SADB_PROTO_ESP ? (e ? e->name : "unknown") : "");
			if (argc > 0)
				rc = CTL_EXIT_ERR;
			continue;
		}
		if (o->json)
			ws_row_json(&j, &r, sa.spi, row);
		else if (o->tshark)
			printf("-o 'uat:esp_sa:%s'\n", row);
		else
			printf("%s\n", row);
		explicit_bzero(row, sizeof(row));
		explicit_bzero(&r, sizeof(r));
		rows++;
	}
	explicit_bzero(&sa, sizeof(sa));
	explicit_bzero(&r, sizeof(r));
	if (o->json) {
		ctl_json_end_arr(&j);
		ctl_json_end_obj(&j);
		ctl_json_done(&j);
	}
	for (int i = 0; i < argc; i++) {
		if (!found[i]) {
			ctl_err("export wireshark: no SA with SPI 0x%08x", want[i]);
			rc = CTL_EXIT_ERR;
		}
	}
	if (o->verbose)
		fprintf(stderr, "ipsecctl: exported %d SA(s)\n", rows);
out:
	free(want);
	free(found);
	fflush(stdout);
	return rc;
}
