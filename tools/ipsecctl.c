/* tools/ipsecctl.c: ipsecctl's command line: global options, the command table, opening the SADB
 * with the access each command needs, and the write commands (init, sa/policy add/update/delete/
 * flush, allocspi, load). Writes go through libsadb's writer API only; `load` applies a whole file
 * in one transaction after validating all of it, so a bad file changes nothing. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/ike_cmd.h"
#include "tools/ipsecctl.h"

static void usage(FILE *f)
{
	fputs("usage: ipsecctl [--sadb PATH] [--json] [-n] [-v] [--show-keys] [--no-times] COMMAND ...\n"
	      "       ipsecctl [--sadb PATH] [-nv] [-F] -f FILE    (OpenBSD style: -F flushes first)\n"
	      "\n"
	      "  init [max-sa N] [max-policy N]     create the SADB\n"
	      "  destroy                            remove the SADB file\n"
	      "  load FILE                          apply a configuration file (all or nothing; -n: print it)\n"
	      "  show [sa [SPI...]|policy|stats|info|all]\n"
	      "  monitor [--interval S] [--count N] [SPI...]\n"
	      "  flush [sa|policy|all]\n"
	      "  sa add|update SA-STATEMENT         e.g. sa add esp tunnel from A to B spi 0x1000 out ...\n"
	      "  sa delete|get [esp|ah] [spi] SPI [dst ADDR]\n"
	      "  sa list [SPI...] | sa flush [esp|ah]\n"
	      "  sa allocspi esp|ah from SRC to DST [range MIN-MAX]\n"
	      "  sa migrate [esp|ah] [spi] SPI [dst ADDR] to SRC DST [encap udp SPORT DPORT]\n"
	      "  policy add POLICY-STATEMENT        e.g. policy add out from NET to NET protect ... reqid N\n"
	      "  policy delete|get ID | policy delete DIR SELECTOR | policy list | policy flush\n"
	      "  export wireshark [--tshark] [SPI...]\n"
	      "  ike ...                            IKE daemon commands\n"
	      "\n"
	      "SADB: --sadb PATH, else $XIPSEC_SADB, else " SADB_DEFAULT_PATH ". See ipsecctl(8).\n",
	      f);
}

static int open_db(const struct ctl_opts *o, int flags, struct sadb **db)
{
	char msg[256] = "";
	int rc = sadb_open(o->sadb_path, flags, NULL, db, msg, sizeof(msg));

	if (rc) {
		ctl_err("cannot open SADB %s: %s", o->sadb_path, msg[0] ? msg : strerror(-rc));
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
}

/* Writers create the segment on first use, as xipsecd and xipsec-iked would. */
static int open_rw(const struct ctl_opts *o, struct sadb **db)
{
	return open_db(o, SADB_RDWR | SADB_CREATE, db);
}

static int cmd_init(const struct ctl_opts *o, int argc, char **argv)
{
	struct sadb_params prm = { 0, 0 };
	struct sadb *db;
	struct stat st;
	char msg[256] = "";
	int rc;

	for (int i = 0; i < argc; i += 2) {
		uint64_t v;

		if (i + 1 >= argc || ctl_u64_parse(argv[i + 1], SADB_MAX_SA_LIMIT, &v) || !v) {
			ctl_err("init: expected 'max-sa N' or 'max-policy N' (N 1-%u)", SADB_MAX_SA_LIMIT);
			return CTL_EXIT_USAGE;
		}
		if (!strcmp(argv[i], "max-sa")) {
			prm.max_sa = (uint32_t)v;
		} else if (!strcmp(argv[i], "max-policy")) {
			prm.max_policy = (uint32_t)v;
		} else {
			ctl_err("init: unknown parameter '%s' (expected max-sa or max-policy)", argv[i]);
			return CTL_EXIT_USAGE;
		}
	}
	if (stat(o->sadb_path, &st) == 0) {
		ctl_err("init: %s already exists (remove it with 'ipsecctl destroy')", o->sadb_path);
		return CTL_EXIT_ERR;
	}
	rc = sadb_open(o->sadb_path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg));
	if (rc) {
		ctl_err("init: cannot create SADB %s: %s", o->sadb_path, msg[0] ? msg : strerror(-rc));
		return CTL_EXIT_ERR;
	}
	if (o->verbose)
		fprintf(stderr, "ipsecctl: created %s\n", o->sadb_path);
	sadb_close(db);
	return CTL_EXIT_OK;
}

static int cmd_destroy(const struct ctl_opts *o, int argc)
{
	int rc;

	if (argc) {
		ctl_err("destroy takes no arguments");
		return CTL_EXIT_USAGE;
	}
	rc = sadb_unlink(o->sadb_path);
	if (rc) {
		ctl_err("destroy: cannot remove %s: %s", o->sadb_path, strerror(-rc));
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
}

/* Read a whole file ("-" = stdin). */
static int read_all(const char *path, char **out, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	size_t cap = 4096, n = 0;
	char *buf;
	ssize_t r;

	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		if (fd != STDIN_FILENO)
			close(fd);
		return -ENOMEM;
	}
	while ((r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(buf);
			if (fd != STDIN_FILENO)
				close(fd);
			return (int)r;
		}
		n += (size_t)r;
		if (n == cap) {
			char *nb;

			if (cap >= (64u << 20)) {
				free(buf);
				if (fd != STDIN_FILENO)
					close(fd);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				explicit_bzero(buf, n);
				free(buf);
				if (fd != STDIN_FILENO)
					close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (fd != STDIN_FILENO)
		close(fd);
	*out = buf;
	*len = n;
	return 0;
}

/* Counter-mode ciphers take their nonce from the sequence number. */
static bool counter_mode(const struct sadb_sa *sa)
{
	return sa->enc_alg == SADB_ENC_AES_GCM16 || sa->enc_alg == SADB_ENC_AES_GMAC ||
	       sa->enc_alg == SADB_ENC_AES_CTR || sa->enc_alg == SADB_ENC_CHACHA20_POLY1305 ||
	       sa->auth_alg == SADB_AUTH_AES_128_GMAC || sa->auth_alg == SADB_AUTH_AES_256_GMAC;
}

/* A manual key outlives the SADB: flushed and loaded again, or after a reboot, an outbound SA with
 * a counter-mode cipher would start at sequence 1 and send its nonces again. xipsecd leases such
 * SAs' numbers from a mark in the state directory (SADB_SAF_SEQ_PERSIST); without a usable state
 * directory they are refused here, before anything changes. */
static int seq_persist(struct ctl_conf *c)
{
	char msg[300];
	bool checked = false;

	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];

		if (it->kind != CTL_IT_SA || it->sa.dir != SADB_DIR_OUT || it->sa.ike_id ||
		    !counter_mode(&it->sa))
			continue;
		it->sa.flags |= SADB_SAF_SEQ_PERSIST;
		if (checked)
			continue;
		int fd = sadb_state_dir_open(NULL, true, msg, sizeof(msg));
		if (fd < 0) {
			ctl_conf_error(c, it->pos, "SA spi 0x%08x uses %s with a manual key: its sequence "
				       "numbers are its nonces, and without a record of them outside /dev/shm "
				       "a reload or a reboot would send the same nonces again under the same "
				       "key. %s. Make the state directory usable (or point $%s at one), or "
				       "key this SA with IKE", it->sa.spi,
				       it->sa.enc_alg ? sadb_enc_name(it->sa.enc_alg) :
				       sadb_auth_name(it->sa.auth_alg), msg, SADB_ENV_STATE_DIR);
			fprintf(stderr, "ipsecctl: nothing was changed\n");
			return CTL_EXIT_ERR;
		}
		close(fd);
		checked = true;
	}
	return CTL_EXIT_OK;
}

/* Apply the parsed and validated items in one transaction. */
static int apply(struct ctl_conf *c, struct sadb *db, const struct ctl_opts *o, bool update)
{
	char buf[INET6_ADDRSTRLEN];
	unsigned nsa = 0, npol = 0;
	int rc;

	if ((rc = seq_persist(c)) != CTL_EXIT_OK)
		return rc;
	if ((rc = sadb_txn_begin(db))) {
		ctl_err("cannot start a transaction: %s", sadb_errmsg(db));
		return CTL_EXIT_ERR;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];
		uint32_t id = 0;

		switch (it->kind) {
		case CTL_IT_FLUSH:
			if (it->flush & CTL_FLUSH_POL)
				rc = sadb_policy_flush(db);
			if (rc >= 0 && (it->flush & CTL_FLUSH_SA))
				rc = sadb_sa_flush(db, SADB_PROTO_ANY);
			if (rc < 0) {
				ctl_conf_error(c, it->pos, "cannot flush: %s", sadb_errmsg(db));
				goto fail;
			}
			rc = 0;
			break;
		case CTL_IT_SA:
			rc = update ? sadb_sa_update(db, &it->sa) : sadb_sa_add(db, &it->sa, NULL);
			if (rc) {
				ctl_conf_error(c, it->pos, "cannot %s SA spi 0x%08x %s to %s: %s",
					       update ? "update" : "add", it->sa.spi,
					       ctl_proto_name(it->sa.proto),
					       ctl_addr_str(&it->sa.dst, buf, sizeof(buf)),
					       sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
				goto fail;
			}
			nsa++;
			break;
		case CTL_IT_POLICY:
			rc = sadb_policy_add(db, &it->pol, &id);
			if (rc) {
				ctl_conf_error(c, it->pos, "cannot add policy: %s",
					       sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
				goto fail;
			}
			if (o->verbose)
				fprintf(stderr, "ipsecctl: policy id %u\n", id);
			npol++;
			break;
		}
	}
	if ((rc = sadb_txn_commit(db))) {
		ctl_err("cannot commit: %s", sadb_errmsg(db));
		sadb_txn_abort(db);
		return CTL_EXIT_ERR;
	}
	if (o->verbose)
		fprintf(stderr, "ipsecctl: applied %u SA(s) and %u policy(ies), generation %" PRIu64
			"\n", nsa, npol, sadb_generation(db));
	return CTL_EXIT_OK;
fail:
	sadb_txn_abort(db);
	fprintf(stderr, "ipsecctl: nothing was changed\n");
	return CTL_EXIT_ERR;
}

/* -n --json: what would be applied, as `show --json` would list it (no counters yet; keys only
 * with --show-keys). */
static void conf_json(const struct ctl_conf *c, const struct ctl_opts *o)
{
	struct ctl_opts jo = *o;
	struct ctl_json j;
	unsigned flush = 0;

	jo.no_times = true; /* nothing was created yet */
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_FLUSH)
			flush |= c->items[i].flush;
	ctl_json_init(&j, stdout);
	ctl_json_obj(&j, NULL);
	ctl_json_obj(&j, "flush");
	ctl_json_bool(&j, "sa", flush & CTL_FLUSH_SA);
	ctl_json_bool(&j, "policy", flush & CTL_FLUSH_POL);
	ctl_json_end_obj(&j);
	ctl_json_arr(&j, "sas");
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_SA)
			ctl_sa_json(&j, NULL, &c->items[i].sa, 0, &jo, 0);
	ctl_json_end_arr(&j);
	ctl_json_arr(&j, "policies");
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_POLICY)
			ctl_policy_json(&j, &c->items[i].pol);
	ctl_json_end_arr(&j);
	ctl_json_end_obj(&j);
	ctl_json_done(&j);
}

/* Open for a -n check: read-only if the SADB exists, else no SADB checks at all. */
static struct sadb *open_for_check(const struct ctl_opts *o)
{
	struct sadb *db = NULL;
	char msg[8];

	if (access(o->sadb_path, F_OK) == 0)
		sadb_open(o->sadb_path, SADB_RDONLY, NULL, &db, msg, sizeof(msg));
	return db;
}

static int run_conf(struct ctl_conf *c, const struct ctl_opts *o, bool update)
{
	struct sadb *db = NULL;
	int rc;

	c->replace = update;
	if (o->dry_run) {
		db = open_for_check(o);
		rc = ctl_conf_validate(c, db);
		if (db)
			sadb_close(db);
		if (rc)
			return CTL_EXIT_ERR;
		if (o->json)
			conf_json(c, o);
		else
			ctl_conf_print(c, stdout);
		fflush(stdout);
		return ferror(stdout) ? CTL_EXIT_ERR : CTL_EXIT_OK;
	}
	if ((rc = open_rw(o, &db)))
		return rc;
	if (ctl_conf_validate(c, db)) {
		fprintf(stderr, "ipsecctl: nothing was changed\n");
		sadb_close(db);
		return CTL_EXIT_ERR;
	}
	rc = apply(c, db, o, update);
	sadb_close(db);
	return rc;
}

static int cmd_load(const struct ctl_opts *o, int argc, char **argv)
{
	struct ctl_conf c;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (argc != 1) {
		ctl_err("load: expected one configuration file name ('-' for standard input)");
		return CTL_EXIT_USAGE;
	}
	if ((rc = read_all(argv[0], &text, &len))) {
		ctl_err("load: cannot read %s: %s", argv[0], strerror(-rc));
		return CTL_EXIT_ERR;
	}
	ctl_conf_init(&c, strcmp(argv[0], "-") ? argv[0] : "<stdin>", stderr);
	/* -F -f FILE (OpenBSD): replace everything, in the same transaction as the file. */
	rc = o->flush ? ctl_conf_parse(&c, "flush\n", 6) : 0;
	if (rc == 0)
		rc = ctl_conf_parse(&c, text, len);
	explicit_bzero(text, len);
	free(text);
	if (rc) {
		if (!o->dry_run)
			fprintf(stderr, "ipsecctl: nothing was changed\n");
		ctl_conf_free(&c);
		return CTL_EXIT_ERR;
	}
	rc = run_conf(&c, o, false);
	ctl_conf_free(&c);
	return rc;
}

/* `sa add ...` / `policy add ...`: one statement from the command line. */
static int cmd_stmt(const struct ctl_opts *o, const char *kw, const char *ctx, bool update,
		    int argc, char **argv)
{
	struct ctl_conf c;
	char **v = calloc((size_t)argc + 1, sizeof(char *));
	int rc;

	if (!v)
		return CTL_EXIT_ERR;
	v[0] = (char *)kw;
	for (int i = 0; i < argc; i++)
		v[i + 1] = argv[i];
	ctl_conf_init(&c, ctx, stderr);
	rc = ctl_conf_parse_argv(&c, argc + 1, v);
	free(v);
	if (rc) {
		ctl_conf_free(&c);
		return CTL_EXIT_USAGE;
	}
	rc = run_conf(&c, o, update);
	ctl_conf_free(&c);
	return rc;
}

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
	if ((rc = open_db(o, SADB_RDWR, &db)))
		return rc;
	rc = find_sa(db, "sa migrate", i, argv, &sa, &slot);
	if (rc) {
		sadb_close(db);
		return rc == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_ERR;
	}
	rc = sadb_sa_migrate(db, sa.spi, sa.proto, &sa.dst, &src, &dst, (uint16_t)sp, (uint16_t)dp);
	explicit_bzero(&sa, sizeof(sa));
	if (rc)
		ctl_err("sa migrate: %s", sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
	sadb_close(db);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
usage:
	ctl_err("sa migrate: expected [esp|ah] [spi] SPI [dst ADDR] to SRC DST "
		"[encap udp SPORT DPORT]");
	return CTL_EXIT_USAGE;
}

static int cmd_sa(const struct ctl_opts *o, int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";
	struct sadb *db = NULL;
	struct sadb_sa sa;
	uint32_t slot;
	int rc;

	argc -= argc ? 1 : 0;
	argv += 1;
	if (!strcmp(sub, "add"))
		return cmd_stmt(o, "sa", "sa add", false, argc, argv);
	if (!strcmp(sub, "update"))
		return cmd_stmt(o, "sa", "sa update", true, argc, argv);
	if (!strcmp(sub, "list") || !strcmp(sub, "show")) {
		if ((rc = open_db(o, SADB_RDONLY, &db)))
			return rc;
		rc = ctl_show(db, o, "sa", argc, argv);
		sadb_close(db);
		return rc;
	}
	if (!strcmp(sub, "get") || !strcmp(sub, "delete") || !strcmp(sub, "del")) {
		bool del = strcmp(sub, "get") != 0;

		if ((rc = open_db(o, del ? SADB_RDWR : SADB_RDONLY, &db)))
			return rc;
		rc = find_sa(db, del ? "sa delete" : "sa get", argc, argv, &sa, &slot);
		if (rc) {
			sadb_close(db);
			return rc == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_ERR;
		}
		if (del) {
			rc = sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst);
			if (rc)
				ctl_err("sa delete: %s", sadb_errmsg(db)[0] ? sadb_errmsg(db) :
					strerror(-rc));
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
	if (!strcmp(sub, "migrate"))
		return sa_migrate(o, argc, argv);
	if (!strcmp(sub, "flush")) {
		uint8_t proto = SADB_PROTO_ANY;

		if (argc > 1 || (argc == 1 && strcmp(argv[0], "esp") && strcmp(argv[0], "ah"))) {
			ctl_err("sa flush: expected nothing, 'esp' or 'ah'");
			return CTL_EXIT_USAGE;
		}
		if (argc == 1)
			proto = !strcmp(argv[0], "esp") ? SADB_PROTO_ESP : SADB_PROTO_AH;
		if ((rc = open_db(o, SADB_RDWR, &db)))
			return rc;
		rc = sadb_sa_flush(db, proto);
		if (rc < 0)
			ctl_err("sa flush: %s", sadb_errmsg(db));
		else if (o->verbose)
			fprintf(stderr, "ipsecctl: %d SA(s) flushed\n", rc);
		sadb_close(db);
		return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
	}
	if (!strcmp(sub, "allocspi")) {
		uint8_t proto = 0;
		struct sadb_addr src, dst;
		bool hs = false, hd = false;
		uint64_t lo = 0, hi = 0;
		uint32_t spi;
		char msg[160];

		for (int i = 0; i < argc; i++) {
			if (!strcmp(argv[i], "esp")) {
				proto = SADB_PROTO_ESP;
			} else if (!strcmp(argv[i], "ah")) {
				proto = SADB_PROTO_AH;
			} else if (!strcmp(argv[i], "from") && i + 1 < argc) {
				if (ctl_addr_parse(argv[++i], &src, msg, sizeof(msg)))
					goto alloc_bad_addr;
				hs = true;
			} else if (!strcmp(argv[i], "to") && i + 1 < argc) {
				if (ctl_addr_parse(argv[++i], &dst, msg, sizeof(msg)))
					goto alloc_bad_addr;
				hd = true;
			} else if (!strcmp(argv[i], "range") && i + 1 < argc) {
				char *dash = strchr(argv[++i], '-');

				if (!dash)
					goto alloc_usage;
				*dash = 0;
				if (ctl_u64_parse(argv[i], UINT32_MAX, &lo) ||
				    ctl_u64_parse(dash + 1, UINT32_MAX, &hi) || lo < 256 || hi < lo) {
					ctl_err("sa allocspi: bad range (need 0x100 <= MIN <= MAX <= "
						"0xffffffff)");
					return CTL_EXIT_USAGE;
				}
			} else {
				goto alloc_usage;
			}
		}
		if (!proto || !hs || !hd)
			goto alloc_usage;
		if ((rc = open_rw(o, &db)))
			return rc;
		rc = sadb_spi_alloc(db, proto, &src, &dst, (uint32_t)lo, (uint32_t)hi, &spi);
		if (rc) {
			ctl_err("sa allocspi: %s", sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
			sadb_close(db);
			return CTL_EXIT_ERR;
		}
		if (o->json)
			printf("{\n  \"spi\": %u,\n  \"spi_hex\": \"0x%08x\"\n}\n", spi, spi);
		else
			printf("0x%08x\n", spi);
		sadb_close(db);
		return CTL_EXIT_OK;
alloc_bad_addr:
		ctl_err("sa allocspi: %s", msg);
		return CTL_EXIT_USAGE;
alloc_usage:
		ctl_err("sa allocspi: expected esp|ah from SRC to DST [range MIN-MAX]");
		return CTL_EXIT_USAGE;
	}
	ctl_err("sa: unknown subcommand '%s' (expected add, update, delete, get, list, flush, "
		"allocspi, migrate)", sub);
	return CTL_EXIT_USAGE;
}

/* policy delete DIR SELECTOR [...]: the policy with that direction and selector (as IKE deletes
 * them), written as in `policy add`; an action, if given, is ignored. */
static int policy_delete_sel(const struct ctl_opts *o, int argc, char **argv)
{
	static const char *const actions[] = { "bypass", "pass", "discard", "drop", "block",
					       "protect", "ipsec" };
	char **v = calloc((size_t)argc + 2, sizeof(char *));
	bool has_action = false;
	struct ctl_conf c;
	struct sadb *db;
	int rc, n = 0;

	if (!v)
		return CTL_EXIT_ERR;
	v[n++] = (char *)"policy";
	for (int i = 0; i < argc; i++) {
		for (size_t a = 0; a < sizeof(actions) / sizeof(actions[0]); a++)
			has_action |= !strcasecmp(argv[i], actions[a]);
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
	if ((rc = open_db(o, SADB_RDWR, &db))) {
		ctl_conf_free(&c);
		return rc;
	}
	rc = sadb_policy_delete_sel(db, c.items[0].pol.dir, &c.items[0].pol.sel);
	if (rc)
		ctl_err("policy delete: %s", sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
	sadb_close(db);
	ctl_conf_free(&c);
	return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

static int cmd_policy(const struct ctl_opts *o, int argc, char **argv)
{
	const char *sub = argc ? argv[0] : "list";
	struct sadb *db = NULL;
	int rc;

	argc -= argc ? 1 : 0;
	argv += 1;
	if (!strcmp(sub, "add"))
		return cmd_stmt(o, "policy", "policy add", false, argc, argv);
	if (!strcmp(sub, "list") || !strcmp(sub, "show")) {
		if (argc) {
			ctl_err("policy list takes no arguments");
			return CTL_EXIT_USAGE;
		}
		if ((rc = open_db(o, SADB_RDONLY, &db)))
			return rc;
		rc = ctl_show(db, o, "policy", 0, NULL);
		sadb_close(db);
		return rc;
	}
	if (!strcmp(sub, "flush")) {
		if (argc) {
			ctl_err("policy flush takes no arguments");
			return CTL_EXIT_USAGE;
		}
		if ((rc = open_db(o, SADB_RDWR, &db)))
			return rc;
		rc = sadb_policy_flush(db);
		if (rc < 0)
			ctl_err("policy flush: %s", sadb_errmsg(db));
		sadb_close(db);
		return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
	}
	if ((!strcmp(sub, "delete") || !strcmp(sub, "del")) && argc > 1 &&
	    (!strcmp(argv[0], "in") || !strcmp(argv[0], "out") || !strcmp(argv[0], "fwd")))
		return policy_delete_sel(o, argc, argv);
	if (!strcmp(sub, "delete") || !strcmp(sub, "del") || !strcmp(sub, "get")) {
		bool del = strcmp(sub, "get") != 0;
		uint64_t id;
		struct sadb_policy p;

		if (argc != 1 || ctl_u64_parse(argv[0], UINT32_MAX, &id)) {
			ctl_err("policy %s: expected a policy id (see 'ipsecctl policy list')", sub);
			return CTL_EXIT_USAGE;
		}
		if ((rc = open_db(o, del ? SADB_RDWR : SADB_RDONLY, &db)))
			return rc;
		rc = del ? sadb_policy_delete(db, (uint32_t)id) : sadb_policy_get(db, (uint32_t)id, &p);
		if (rc) {
			ctl_err("policy %s: %s", sub, rc == -ENOENT ? "no policy with that id" :
				sadb_errmsg(db)[0] ? sadb_errmsg(db) : strerror(-rc));
		} else if (!del) {
			if (o->json) {
				struct ctl_json j;

				ctl_json_init(&j, stdout);
				ctl_policy_json(&j, &p);
				ctl_json_done(&j);
			} else {
				ctl_policy_print(&p, stdout);
			}
		}
		sadb_close(db);
		return rc ? CTL_EXIT_ERR : CTL_EXIT_OK;
	}
	ctl_err("policy: unknown subcommand '%s' (expected add, delete, get, list, flush)", sub);
	return CTL_EXIT_USAGE;
}

static int cmd_flush(const struct ctl_opts *o, int argc, char **argv)
{
	struct sadb *db;
	bool sa = true, pol = true;
	int rc;

	if (argc > 1) {
		ctl_err("flush: expected sa, policy or all");
		return CTL_EXIT_USAGE;
	}
	if (argc == 1) {
		if (!strcmp(argv[0], "sa"))
			pol = false;
		else if (!strcmp(argv[0], "policy"))
			sa = false;
		else if (strcmp(argv[0], "all")) {
			ctl_err("flush: expected sa, policy or all, got '%s'", argv[0]);
			return CTL_EXIT_USAGE;
		}
	}
	if ((rc = open_db(o, SADB_RDWR, &db)))
		return rc;
	/* One transaction: readers never see policies without their SAs or the reverse. */
	rc = sadb_txn_begin(db);
	if (!rc && pol)
		rc = sadb_policy_flush(db);
	if (rc >= 0 && sa)
		rc = sadb_sa_flush(db, SADB_PROTO_ANY);
	if (rc >= 0)
		rc = sadb_txn_commit(db);
	else
		sadb_txn_abort(db);
	if (rc < 0)
		ctl_err("flush: %s", sadb_errmsg(db));
	sadb_close(db);
	return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

enum { OPT_SADB = 256, OPT_JSON, OPT_SHOW_KEYS, OPT_NO_TIMES, OPT_INTERVAL, OPT_COUNT, OPT_TSHARK,
       OPT_HELP, OPT_VERSION };

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "sadb", required_argument, NULL, OPT_SADB },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "show-keys", no_argument, NULL, OPT_SHOW_KEYS },
		{ "no-times", no_argument, NULL, OPT_NO_TIMES },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "tshark", no_argument, NULL, OPT_TSHARK },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_opts o = { .interval = 1.0 };
	const char *cmd, *load_file = NULL;
	struct sadb *db;
	int c, rc;

	/* `ipsecctl ike ...` hands everything after "ike" to the IKE part untouched. */
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-') {
			if (!strcmp(argv[i], "ike"))
				return ipsecctl_ike_main(argc - i, argv + i);
			break;
		}
		if (!strcmp(argv[i], "--sadb"))
			i++;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "nvhjf:F", lopts, NULL)) != -1) {
		switch (c) {
		case 'f': load_file = optarg; break;
		case 'F': o.flush = true; break;
		case OPT_SADB: o.sadb_path = optarg; break;
		case OPT_JSON: case 'j': o.json = true; break;
		case OPT_SHOW_KEYS: o.show_keys = true; break;
		case OPT_NO_TIMES: o.no_times = true; break;
		case OPT_TSHARK: o.tshark = true; break;
		case 'n': o.dry_run = true; break;
		case 'v': o.verbose = true; break;
		case OPT_INTERVAL: {
			char *end;

			o.interval = strtod(optarg, &end);
			if (*end || !(o.interval >= 0.01 && o.interval <= 3600)) {
				ctl_err("--interval: expected seconds between 0.01 and 3600, got '%s'",
					optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		}
		case OPT_COUNT: {
			uint64_t v;

			if (ctl_u64_parse(optarg, LONG_MAX, &v)) {
				ctl_err("--count: expected a number of intervals, got '%s'", optarg);
				return CTL_EXIT_USAGE;
			}
			o.count = (long)v;
			break;
		}
		case 'h': case OPT_HELP: usage(stdout); return CTL_EXIT_OK;
		case OPT_VERSION: printf("ipsecctl %s\n", PACKAGE_VERSION); return CTL_EXIT_OK;
		default:
			if (optopt && optopt < 256)
				ctl_err("unknown option '-%c' (see ipsecctl --help)", optopt);
			else
				ctl_err("unknown or incomplete option '%s' (see ipsecctl --help)",
					argv[optind - 1]);
			return CTL_EXIT_USAGE;
		}
	}
	if (!o.sadb_path)
		o.sadb_path = sadb_default_path();
	/* OpenBSD's spelling: ipsecctl [-nv] [-F] -f FILE, and -F alone flushes everything. */
	if (load_file || o.flush) {
		if (optind < argc) {
			ctl_err("-f/-F take no command (got '%s')", argv[optind]);
			return CTL_EXIT_USAGE;
		}
		if (load_file)
			return cmd_load(&o, 1, (char **)&load_file);
		if (o.dry_run)
			return CTL_EXIT_OK;
		return cmd_flush(&o, 0, NULL);
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;

	if (!strcmp(cmd, "init"))
		return cmd_init(&o, argc, argv);
	if (!strcmp(cmd, "destroy"))
		return cmd_destroy(&o, argc);
	if (!strcmp(cmd, "load"))
		return cmd_load(&o, argc, argv);
	if (!strcmp(cmd, "sa"))
		return cmd_sa(&o, argc, argv);
	if (!strcmp(cmd, "policy") || !strcmp(cmd, "flow"))
		return cmd_policy(&o, argc, argv);
	if (!strcmp(cmd, "flush"))
		return cmd_flush(&o, argc, argv);
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (!strcmp(cmd, "show") || !strcmp(cmd, "monitor") || !strcmp(cmd, "export")) {
		if (!strcmp(cmd, "export") && (argc < 1 || strcmp(argv[0], "wireshark"))) {
			ctl_err("export: expected 'export wireshark [--tshark] [SPI...]'");
			return CTL_EXIT_USAGE;
		}
		if ((rc = open_db(&o, SADB_RDONLY, &db)))
			return rc;
		if (!strcmp(cmd, "show"))
			rc = ctl_show(db, &o, argc ? argv[0] : NULL, argc ? argc - 1 : 0, argv + 1);
		else if (!strcmp(cmd, "monitor"))
			rc = ctl_monitor(db, &o, argc, argv);
		else
			rc = ctl_export_wireshark(db, &o, argc - 1, argv + 1);
		sadb_close(db);
		return rc;
	}
	ctl_err("unknown command '%s' (see ipsecctl --help)", cmd);
	return CTL_EXIT_USAGE;
}
