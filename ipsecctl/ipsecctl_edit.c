/* ipsecctl/ipsecctl_edit.c: the `sa` and `policy` subcommands of ipsecctl that name objects already in
 * the SADB: get, delete, flush and migrate SAs, reserve an SPI, get, delete and flush policies (and
 * delete one by its direction and selector, as IKE does). The statements that add objects go
 * through the configuration language (ipsecctl_load.c). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ipsecctl/ipsecctl_cmd.h"

/* [esp|ah] [spi] SPI [dst ADDR]: find exactly one SA. */
static int find_sa(struct sadb *db, const char *ctx, int argc, char **argv, struct sadb_sa *out,
		   uint32_t *slot_out)
{
	uint8_t proto = SADB_PROTO_ANY;
	struct sadb_addr dst;
	bool have_dst = false, have_spi = false;
	uint64_t spi = 0;
	uint32_t cur = 0, slot;
	struct sadb_sa sa;
	int found = 0;
	char msg[160];

	memset(&dst, 0, sizeof(dst));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "esp")) {
			proto = SADB_PROTO_ESP;
		} else if (!strcmp(argv[i], "ah")) {
			proto = SADB_PROTO_AH;
		} else if (!strcmp(argv[i], "spi") && i + 1 < argc && !have_spi) {
			if (ctl_u64_parse(argv[++i], UINT32_MAX, &spi))
				goto bad;
			have_spi = true;
		} else if (!strcmp(argv[i], "dst") && i + 1 < argc) {
			if (ctl_addr_parse(argv[++i], &dst, msg, sizeof(msg))) {
				ctl_err("%s: %s", ctx, msg);
				return -EINVAL;
			}
			have_dst = true;
		} else if (!have_spi && ctl_u64_parse(argv[i], UINT32_MAX, &spi) == 0) {
			have_spi = true;
		} else {
			goto bad;
		}
	}
	if (!have_spi)
		goto bad;
	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		if (sa.spi != spi || (proto && sa.proto != proto) ||
		    (have_dst && !sadb_addr_eq(&sa.dst, &dst)))
			continue;
		if (found++ == 0) {
			*out = sa;
			*slot_out = slot;
		}
	}
	explicit_bzero(&sa, sizeof(sa));
	if (found == 0) {
		ctl_err("%s: no SA with SPI 0x%08" PRIx64 "%s", ctx, spi,
			proto || have_dst ? " matching the protocol/destination given" : "");
		return -ENOENT;
	}
	if (found > 1) {
		ctl_err("%s: %d SAs have SPI 0x%08" PRIx64 "; name one with 'esp|ah' and 'dst ADDR'",
			ctx, found, spi);
		return -EEXIST;
	}
	return 0;
bad:
	ctl_err("%s: expected [esp|ah] [spi] SPI [dst ADDR]", ctx);
	return -EINVAL;
}

/* sa migrate [esp|ah] [spi] SPI [dst ADDR] to SRC DST [encap udp SPORT DPORT]: move an SA's outer
 * endpoints (a Mobile IPv6 care-of address change, MOBIKE) keeping its keys, sequence numbers and
 * replay window. Without "encap" NAT-T is turned off, as sadb_sa_migrate sets the ports given. */
static int sa_migrate(const struct ctl_opts *o, int argc, char **argv)
{
	struct sadb *db;
	struct sadb_sa sa;
	struct sadb_addr src, dst;
	uint64_t sp = 0, dp = 0;
	uint32_t slot;
	char msg[160];
	int i, rc;

	for (i = 0; i < argc && strcmp(argv[i], "to"); i++)
		;
	if (i + 2 >= argc)
		goto usage;
	if (ctl_addr_parse(argv[i + 1], &src, msg, sizeof(msg)) ||
	    ctl_addr_parse(argv[i + 2], &dst, msg, sizeof(msg))) {
		ctl_err("sa migrate: %s", msg);
		return CTL_EXIT_USAGE;
	}
	if (argc > i + 3) {
		if (argc != i + 7 || strcmp(argv[i + 3], "encap") || strcmp(argv[i + 4], "udp") ||
		    ctl_u64_parse(argv[i + 5], 65535, &sp) || ctl_u64_parse(argv[i + 6], 65535, &dp) ||
		    !sp || !dp)
			goto usage;
	}
	if ((rc = ctl_open_db(o, SADB_RDWR, &db)))
		return rc;
	rc = find_sa(db, "sa migrate", i, argv, &sa, &slot);
	if (rc) {
		sadb_close(db);
		return rc == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_ERR;
	}
	rc = sadb_sa_migrate(db, sa.spi, sa.proto, &sa.dst, &src, &dst, (uint16_t)sp, (uint16_t)dp);
	explicit_bzero(&sa, sizeof(sa));
	if (rc)
		ctl_err("sa migrate: %s", ctl_db_err(db, rc));
	sadb_close(db);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
usage:
	ctl_err("sa migrate: expected [esp|ah] [spi] SPI [dst ADDR] to SRC DST "
		"[encap udp SPORT DPORT]");
	return CTL_EXIT_USAGE;
}

/* sa get|delete [esp|ah] [spi] SPI [dst ADDR] */
static int sa_get_delete(const struct ctl_opts *o, bool del, int argc, char **argv)
{
	struct sadb *db;
	struct sadb_sa sa;
	uint32_t slot;
	int rc;

	if ((rc = ctl_open_db(o, del ? SADB_RDWR : SADB_RDONLY, &db)))
		return rc;
	rc = find_sa(db, del ? "sa delete" : "sa get", argc, argv, &sa, &slot);
	if (rc) {
		sadb_close(db);
		return rc == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_ERR;
	}
	if (del) {
		rc = sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst);
		if (rc)
			ctl_err("sa delete: %s", ctl_db_err(db, rc));
	} else if (o->json) {
		struct ctl_json j;

		ctl_json_init(&j, stdout);
		ctl_sa_json(&j, db, &sa, slot, o, (uint64_t)time(NULL));
		ctl_json_done(&j);
	} else {
		ctl_sa_text(stdout, db, &sa, slot, o, (uint64_t)time(NULL));
	}
	explicit_bzero(&sa, sizeof(sa));
	sadb_close(db);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

/* sa flush [esp|ah] */
static int sa_flush(const struct ctl_opts *o, int argc, char **argv)
{
	uint8_t proto = SADB_PROTO_ANY;
	struct sadb *db;
	int rc;

	if (argc > 1 || (argc == 1 && strcmp(argv[0], "esp") && strcmp(argv[0], "ah"))) {
		ctl_err("sa flush: expected nothing, 'esp' or 'ah'");
		return CTL_EXIT_USAGE;
	}
	if (argc == 1)
		proto = !strcmp(argv[0], "esp") ? SADB_PROTO_ESP : SADB_PROTO_AH;
	if ((rc = ctl_open_db(o, SADB_RDWR, &db)))
		return rc;
	rc = sadb_sa_flush(db, proto);
	if (rc < 0)
		ctl_err("sa flush: %s", sadb_errmsg(db));
	else if (o->verbose)
		fprintf(stderr, "ipsecctl: %d SA(s) flushed\n", rc);
	sadb_close(db);
	return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

/* What `sa allocspi` asks for: an SPI in [lo, hi] (0, 0: libsadb's default range). */
struct spi_req {
	uint8_t proto;
	struct sadb_addr src, dst;
	uint64_t lo, hi;
};

/* esp|ah from SRC to DST [range MIN-MAX]; 0 or an exit code (the error said). */
static int allocspi_args(int argc, char **argv, struct spi_req *q)
{
	bool hs = false, hd = false;
	char msg[160];

	memset(q, 0, sizeof(*q));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "esp")) {
			q->proto = SADB_PROTO_ESP;
		} else if (!strcmp(argv[i], "ah")) {
			q->proto = SADB_PROTO_AH;
		} else if ((!strcmp(argv[i], "from") || !strcmp(argv[i], "to")) && i + 1 < argc) {
			bool from = argv[i][0] == 'f';

			if (ctl_addr_parse(argv[++i], from ? &q->src : &q->dst, msg, sizeof(msg))) {
				ctl_err("sa allocspi: %s", msg);
				return CTL_EXIT_USAGE;
			}
			*(from ? &hs : &hd) = true;
		} else if (!strcmp(argv[i], "range") && i + 1 < argc) {
			char *dash = strchr(argv[++i], '-');

			if (!dash)
				goto usage;
			*dash = 0;
			if (ctl_u64_parse(argv[i], UINT32_MAX, &q->lo) ||
			    ctl_u64_parse(dash + 1, UINT32_MAX, &q->hi) || q->lo < 256 || q->hi < q->lo) {
				ctl_err("sa allocspi: bad range (need 0x100 <= MIN <= MAX <= 0xffffffff)");
				return CTL_EXIT_USAGE;
			}
		} else {
			goto usage;
		}
	}
	if (q->proto && hs && hd)
		return 0;
usage:
	ctl_err("sa allocspi: expected esp|ah from SRC to DST [range MIN-MAX]");
	return CTL_EXIT_USAGE;
}

/* sa allocspi esp|ah from SRC to DST [range MIN-MAX]: reserve an unused SPI (as IKE's GETSPI). */
static int sa_allocspi(const struct ctl_opts *o, int argc, char **argv)
{
	struct spi_req q;
	struct sadb *db;
	uint32_t spi;
	int rc;

	if ((rc = allocspi_args(argc, argv, &q)))
		return rc;
	if ((rc = ctl_open_rw(o, &db)))
		return rc;
	rc = sadb_spi_alloc(db, q.proto, &q.src, &q.dst, (uint32_t)q.lo, (uint32_t)q.hi, &spi);
	if (rc) {
		ctl_err("sa allocspi: %s", ctl_db_err(db, rc));
		sadb_close(db);
		return CTL_EXIT_ERR;
	}
	if (o->json)
		printf("{\n  \"spi\": %u,\n  \"spi_hex\": \"0x%08x\"\n}\n", spi, spi);
	else
		printf("0x%08x\n", spi);
	sadb_close(db);
	return CTL_EXIT_OK;
}

int ctl_cmd_sa(const struct ctl_opts *o, int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";

	argc -= argc ? 1 : 0;
	argv += 1;
	if (!strcmp(sub, "add"))
		return ctl_cmd_stmt(o, "sa", "sa add", false, argc, argv);
	if (!strcmp(sub, "update"))
		return ctl_cmd_stmt(o, "sa", "sa update", true, argc, argv);
	if (!strcmp(sub, "list") || !strcmp(sub, "show"))
		return ctl_show_cmd(o, "sa", argc, argv);
	if (!strcmp(sub, "get") || !strcmp(sub, "delete") || !strcmp(sub, "del"))
		return sa_get_delete(o, strcmp(sub, "get") != 0, argc, argv);
	if (!strcmp(sub, "migrate"))
		return sa_migrate(o, argc, argv);
	if (!strcmp(sub, "flush"))
		return sa_flush(o, argc, argv);
	if (!strcmp(sub, "allocspi"))
		return sa_allocspi(o, argc, argv);
	ctl_err("sa: unknown subcommand '%s' (expected add, update, delete, get, list, flush, "
		"allocspi, migrate)", sub);
	return CTL_EXIT_USAGE;
}


/* policy delete DIR SELECTOR [...]: the policy with that direction and selector (as IKE deletes
 * them), written as in `policy add`; an action, if given, is ignored. */
static int policy_delete_sel(const struct ctl_opts *o, int argc, char **argv)
{
	char **v = calloc((size_t)argc + 2, sizeof(char *));
	bool has_action = false;
	struct ctl_conf c;
	struct sadb *db;
	int rc, n = 0;

	if (!v)
		return CTL_EXIT_ERR;
	v[n++] = (char *)"policy";
	for (int i = 0; i < argc; i++) {
		has_action |= ctl_action_word(argv[i], NULL);
		v[n++] = argv[i];
	}
	if (!has_action)
		v[n++] = (char *)"bypass";
	ctl_conf_init(&c, "policy delete", stderr);
	rc = ctl_conf_parse_argv(&c, n, v);
	free(v);
	if (rc || c.n != 1) {
		ctl_conf_free(&c);
		return CTL_EXIT_USAGE;
	}
	if ((rc = ctl_open_db(o, SADB_RDWR, &db))) {
		ctl_conf_free(&c);
		return rc;
	}
	rc = sadb_policy_delete_sel(db, c.items[0].pol.dir, &c.items[0].pol.sel);
	if (rc)
		ctl_err("policy delete: %s", ctl_db_err(db, rc));
	sadb_close(db);
	ctl_conf_free(&c);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

/* policy get|delete ID */
static int policy_get_delete(const struct ctl_opts *o, const char *sub, int argc, char **argv)
{
	bool del = strcmp(sub, "get") != 0;
	struct sadb_policy p;
	struct sadb *db;
	uint64_t id;
	int rc;

	if (argc != 1 || ctl_u64_parse(argv[0], UINT32_MAX, &id)) {
		ctl_err("policy %s: expected a policy id (see 'ipsecctl policy list')", sub);
		return CTL_EXIT_USAGE;
	}
	if ((rc = ctl_open_db(o, del ? SADB_RDWR : SADB_RDONLY, &db)))
		return rc;
	rc = del ? sadb_policy_delete(db, (uint32_t)id) : sadb_policy_get(db, (uint32_t)id, &p);
	if (rc) {
		ctl_err("policy %s: %s", sub, rc == -ENOENT ? "no policy with that id" :
			ctl_db_err(db, rc));
	} else if (!del && o->json) {
		struct ctl_json j;

		ctl_json_init(&j, stdout);
		ctl_policy_json(&j, &p);
		ctl_json_done(&j);
	} else if (!del) {
		ctl_policy_print(&p, stdout);
	}
	sadb_close(db);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

static int policy_flush(const struct ctl_opts *o, int argc)
{
	struct sadb *db;
	int rc;

	if (argc) {
		ctl_err("policy flush takes no arguments");
		return CTL_EXIT_USAGE;
	}
	if ((rc = ctl_open_db(o, SADB_RDWR, &db)))
		return rc;
	rc = sadb_policy_flush(db);
	if (rc < 0)
		ctl_err("policy flush: %s", sadb_errmsg(db));
	sadb_close(db);
	return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

static bool is_dir(const char *s)
{
	return !strcmp(s, "in") || !strcmp(s, "out") || !strcmp(s, "fwd");
}

int ctl_cmd_policy(const struct ctl_opts *o, int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";
	bool del;

	argc -= argc ? 1 : 0;
	argv += 1;
	del = !strcmp(sub, "delete") || !strcmp(sub, "del");
	if (!strcmp(sub, "add"))
		return ctl_cmd_stmt(o, "policy", "policy add", false, argc, argv);
	if (!strcmp(sub, "list") || !strcmp(sub, "show")) {
		if (argc) {
			ctl_err("policy list takes no arguments");
			return CTL_EXIT_USAGE;
		}
		return ctl_show_cmd(o, "policy", 0, NULL);
	}
	if (!strcmp(sub, "flush"))
		return policy_flush(o, argc);
	if (del && argc > 1 && is_dir(argv[0]))
		return policy_delete_sel(o, argc, argv);
	if (del || !strcmp(sub, "get"))
		return policy_get_delete(o, sub, argc, argv);
	ctl_err("policy: unknown subcommand '%s' (expected add, delete, get, list, flush)", sub);
	return CTL_EXIT_USAGE;
}
