/* tools/ipsecctl_load.c: the writes of ipsecctl that go through the configuration language: `load
 * FILE` (and OpenBSD's -f), `sa add|update ...` and `policy add ...`. All of a file is parsed and
 * validated before the SADB is touched, then applied in one transaction through libsadb's writer
 * API, so a bad file changes nothing; -n prints what would be applied instead. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/ipsecctl_cmd.h"

/* Read a whole file ("-" = stdin), at most 64 MiB. */
static int read_all(const char *path, char **out, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	size_t cap = 4096, n = 0;
	char *buf;
	ssize_t r;
	int rc = 0;

	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf)
		rc = -ENOMEM;
	while (!rc && (r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno != EINTR)
				rc = -errno;
			continue;
		}
		n += (size_t)r;
		if (n == cap) {
			char *nb = cap >= (64u << 20) ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				rc = cap >= (64u << 20) ? -EFBIG : -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc) {
		if (buf)
			explicit_bzero(buf, n);
		free(buf);
		return rc;
	}
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
					       ctl_db_err(db, rc));
				goto fail;
			}
			nsa++;
			break;
		case CTL_IT_POLICY:
			rc = sadb_policy_add(db, &it->pol, &id);
			if (rc) {
				ctl_conf_error(c, it->pos, "cannot add policy: %s",
					       ctl_db_err(db, rc));
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
	if ((rc = ctl_open_rw(o, &db)))
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

int ctl_cmd_load(const struct ctl_opts *o, int argc, char **argv)
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
int ctl_cmd_stmt(const struct ctl_opts *o, const char *kw, const char *ctx, bool update, int argc,
		 char **argv)
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
