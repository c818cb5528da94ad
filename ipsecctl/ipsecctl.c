/* ipsecctl/ipsecctl.c: ipsecctl's command line: the global options, the command table (each command's
 * name, handler and lines of the usage text, printed from the table) and the commands on the SADB
 * as a whole (init, destroy, flush, show, monitor, export). The sa and policy subcommands are in
 * ipsecctl_edit.c, load and the statement writes in ipsecctl_load.c; all of them open the SADB
 * through ipsecctl_db.c; writes go through libsadb's writer API only. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ipsecctl/ike_cmd.h"
#include "ipsecctl/ipsecctl_cmd.h"

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

static int cmd_destroy(const struct ctl_opts *o, int argc, char **argv)
{
	int rc;

	(void)argv;
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
	if ((rc = ctl_open_db(o, SADB_RDWR, &db)))
		return rc;
	/* One transaction: readers never see policies without their SAs or the reverse. */
	rc = sadb_txn_begin(db);
	if (!rc && pol)
		rc = sadb_policy_flush(db);
	if (rc >= 0 && sa)
		rc = sadb_sa_flush(db, SADB_PROTO_ANY);
	/* everything: the home agent record too (it is part of the configuration) */
	for (unsigned idx = 0; rc >= 0 && sa && pol && idx < SADB_HA_MAX; idx++) {
		struct sadb_home_agent ha;

		if (sadb_home_agent_get(db, idx, &ha) == 0)
			rc = sadb_home_agent_set(db, idx, NULL);
	}
	if (rc >= 0)
		rc = sadb_txn_commit(db);
	else
		sadb_txn_abort(db);
	if (rc < 0)
		ctl_err("flush: %s", sadb_errmsg(db));
	sadb_close(db);
	return rc < 0 ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

static int cmd_show(const struct ctl_opts *o, int argc, char **argv)
{
	return ctl_show_cmd(o, argc ? argv[0] : NULL, argc ? argc - 1 : 0, argv + 1);
}

static int cmd_monitor(const struct ctl_opts *o, int argc, char **argv)
{
	struct sadb *db;
	int rc;

	if ((rc = ctl_open_db(o, SADB_RDONLY, &db)))
		return rc;
	rc = ctl_monitor(db, o, argc, argv);
	sadb_close(db);
	return rc;
}

/* `cluster active|standby` (the node's role, ipsecctl_dpctl.c) or `cluster segments` (active/active,
 * ipsecctl_cluster.c). */
static int cmd_cluster(const struct ctl_opts *o, int argc, char **argv)
{
	if (argc >= 1 && !strcmp(argv[0], "segments"))
		return ctl_cluster_segments(o, argc - 1, argv + 1);
	return ctl_cmd_cluster(o, argc, argv);
}

static int cmd_export(const struct ctl_opts *o, int argc, char **argv)
{
	struct sadb *db;
	int rc;

	if (argc < 1 || strcmp(argv[0], "wireshark")) {
		ctl_err("export: expected 'export wireshark [--tshark] [SPI...]'");
		return CTL_EXIT_USAGE;
	}
	if ((rc = ctl_open_db(o, SADB_RDONLY, &db)))
		return rc;
	rc = ctl_export_wireshark(db, o, argc - 1, argv + 1);
	sadb_close(db);
	return rc;
}

static int cmd_help(const struct ctl_opts *o, int argc, char **argv);

/* The commands, in the order the usage text lists them. */
static const struct ctl_cmd {
	const char *name;
	int (*fn)(const struct ctl_opts *o, int argc, char **argv);
	/* Takes the command line from its own name on, before ipsecctl's options are read. */
	int (*raw)(int argc, char **argv);
	/* Its lines of the usage text (each printed after two blanks); NULL: not listed. */
	const char *usage;
} cmds[] = {
	{ "init", cmd_init, NULL,
	  "init [max-sa N] [max-policy N]     create the SADB" },
	{ "destroy", cmd_destroy, NULL,
	  "destroy                            remove the SADB file" },
	{ "load", ctl_cmd_load, NULL,
	  "load FILE                          apply a configuration file (all or nothing; -n: print it)\n"
	  "load --new-keys FILE               ... whose manual keys were never used" },
	{ "reload", ctl_cmd_reload, NULL,
	  "reload FILE                        make the manual SAs and policies the file's (all or nothing)" },
	{ "show", cmd_show, NULL,
	  "show [sa [SPI...]|policy|home-agent|stats|info|all]\n"
	  "show bindings [--ctl PATH]         the home agent's bindings, from the running xipsecd\n"
	  "show cluster [--ctl PATH]          the cluster: role, peer, eligibility, leases (xipsecd)" },
	{ "monitor", cmd_monitor, NULL,
	  "monitor [--interval S] [--count N] [SPI...]" },
	{ "flush", cmd_flush, NULL,
	  "flush [sa|policy|all]" },
	{ "sa", ctl_cmd_sa, NULL,
	  "sa add|update SA-STATEMENT         e.g. sa add esp tunnel from A to B spi 0x1000 out ...\n"
	  "sa delete|get [esp|ah] [spi] SPI [dst ADDR]\n"
	  "sa list [SPI...] | sa flush [esp|ah]\n"
	  "sa allocspi esp|ah from SRC to DST [range MIN-MAX]\n"
	  "sa migrate [esp|ah] [spi] SPI [dst ADDR] to SRC DST [encap udp SPORT DPORT]" },
	{ "policy", ctl_cmd_policy, NULL,
	  "policy add POLICY-STATEMENT        e.g. policy add out from NET to NET protect ... reqid N\n"
	  "policy delete|get ID | policy delete DIR SELECTOR | policy list | policy flush" },
	{ "flow", ctl_cmd_policy, NULL, NULL },     /* OpenBSD's word for a policy */
	{ "export", cmd_export, NULL,
	  "export wireshark [--tshark] [SPI...]" },
	{ "cluster", cmd_cluster, NULL,
	  "cluster active|standby [--ctl PATH] this xipsecd's role in a two-node cluster\n"
	  "cluster segments [LIST|none|all]   the active/active segments the running xipsecd owns" },
	{ "metrics", NULL, ctl_cmd_metrics,
	  "metrics [--textfile FILE | --listen [ADDR:PORT]] [--no-sa] [--no-ike]  Prometheus metrics" },
	{ "ike", NULL, ipsecctl_ike_main,
	  "ike ...                            IKE daemon commands" },
	{ "help", cmd_help, NULL, NULL },
};

static const struct ctl_cmd *cmd_find(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: ipsecctl [--sadb PATH] [--json] [-n] [-v] [--show-keys] [--no-times] COMMAND ...\n"
	      "       ipsecctl [--sadb PATH] [-nv] [-F] -f FILE    (OpenBSD style: -F flushes first)\n"
	      "       ipsecctl [--sadb PATH] [--json] [-v] -s all|sa|flow   (OpenBSD style: show)\n"
	      "       ipsecctl --version | --help\n"
	      "\n", f);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		for (const char *l = cmds[i].usage; l && *l;) {
			size_t n = strcspn(l, "\n");

			fprintf(f, "  %.*s\n", (int)n, l);
			l += n + (l[n] == '\n');
		}
	}
	fputs("\nSADB: --sadb PATH, else $XIPSEC_SADB, else " SADB_DEFAULT_PATH ". See ipsecctl(8).\n",
	      f);
}

static int cmd_help(const struct ctl_opts *o, int argc, char **argv)
{
	(void)o;
	(void)argc;
	(void)argv;
	usage(stdout);
	return CTL_EXIT_OK;
}

/* A command that takes the command line as it is (`ipsecctl [--sadb P] [--json] ike ...`), found
 * before the options are read: everything after its name is its own. NULL if the first word is not
 * one. *json: --json (or -j) came before it. */
static const struct ctl_cmd *raw_cmd(int argc, char **argv, int *at, bool *json)
{
	*json = false;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-') {
			const struct ctl_cmd *c = cmd_find(argv[i]);

			*at = i;
			return c && c->raw ? c : NULL;
		}
		if (!strcmp(argv[i], "--sadb"))
			i++;
		else if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			*json = true;
	}
	return NULL;
}

/* Runs the raw command c on argv[at..]: --sadb reaches it as $XIPSEC_SADB, --json as its own
 * option (ike answers in JSON; the metrics are Prometheus text, which has no JSON form). */
static int run_raw(const struct ctl_cmd *c, int argc, char **argv, int at, bool json)
{
	char **v;
	int rc;

	for (int i = 1; i + 1 < at; i++)
		if (!strcmp(argv[i], "--sadb") && setenv(SADB_ENV_PATH, argv[i + 1], 1) != 0)
			return CTL_EXIT_ERR;
	if (!json)
		return c->raw(argc - at, argv + at);
	if (c->raw != ipsecctl_ike_main) {
		ctl_err("%s: no JSON form (the metrics are Prometheus text; 'ipsecctl --json show stats' "
			"lists the counters as JSON)", c->name);
		return CTL_EXIT_USAGE;
	}
	v = calloc((size_t)(argc - at) + 2, sizeof(*v));
	if (!v)
		return CTL_EXIT_ERR;
	v[0] = argv[at];
	v[1] = (char *)"--json";
	for (int i = at + 1; i < argc; i++)
		v[i - at + 1] = argv[i];
	rc = c->raw(argc - at + 1, v);
	free(v);
	return rc;
}

/* OpenBSD's -s all|sa|flow: the listing of `show all`, `show sa` or `show policy`. */
static int show_modifier(const struct ctl_opts *o, const char *what)
{
	static const char *const map[][2] = { { "all", "all" }, { "sa", "sa" }, { "flow", "policy" } };

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(what, map[i][0]))
			return ctl_show_cmd(o, map[i][1], 0, NULL);
	ctl_err("-s: expected all, sa or flow, got '%s'", what);
	return CTL_EXIT_USAGE;
}

enum { OPT_SADB = 256, OPT_JSON, OPT_SHOW_KEYS, OPT_NO_TIMES, OPT_INTERVAL, OPT_COUNT, OPT_TSHARK,
       OPT_HELP, OPT_VERSION, OPT_CTL, OPT_NEW_KEYS };

static const struct option lopts[] = {
	{ "sadb", required_argument, NULL, OPT_SADB },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "show-keys", no_argument, NULL, OPT_SHOW_KEYS },
	{ "no-times", no_argument, NULL, OPT_NO_TIMES },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "tshark", no_argument, NULL, OPT_TSHARK },
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "new-keys", no_argument, NULL, OPT_NEW_KEYS },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* The options that take a value that must be checked. -1 when valid, else the exit code. */
static int opt_value(int c, struct ctl_opts *o)
{
	char *end;
	uint64_t v;

	if (c == OPT_INTERVAL) {
		o->interval = strtod(optarg, &end);
		if (*end || !(o->interval >= 0.01 && o->interval <= 3600)) {
			ctl_err("--interval: expected seconds between 0.01 and 3600, got '%s'", optarg);
			return CTL_EXIT_USAGE;
		}
		return -1;
	}
	if (ctl_u64_parse(optarg, LONG_MAX, &v)) {
		ctl_err("--count: expected a number of intervals, got '%s'", optarg);
		return CTL_EXIT_USAGE;
	}
	o->count = (long)v;
	return -1;
}

/* Reads ipsecctl's options into o (and -f's file into *load_file). -1 to go on, else the exit
 * code (--help, --version, a bad option). */
static int parse_options(int argc, char **argv, struct ctl_opts *o, const char **load_file,
			 const char **show)
{
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "nvhjf:Fs:", lopts, NULL)) != -1) {
		switch (c) {
		case 'f': *load_file = optarg; break;
		case 's': *show = optarg; break;
		case 'F': o->flush = true; break;
		case OPT_SADB: o->sadb_path = optarg; break;
		case OPT_JSON: case 'j': o->json = true; break;
		case OPT_SHOW_KEYS: o->show_keys = true; break;
		case OPT_NO_TIMES: o->no_times = true; break;
		case OPT_TSHARK: o->tshark = true; break;
		case OPT_CTL: o->ctl_path = optarg; break;
		case OPT_NEW_KEYS: o->new_keys = true; break;
		case 'n': o->dry_run = true; break;
		case 'v': o->verbose = true; break;
		case OPT_INTERVAL: case OPT_COUNT:
			if ((rc = opt_value(c, o)) >= 0)
				return rc;
			break;
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
	return -1;
}

int main(int argc, char **argv)
{
	struct ctl_opts o = { .interval = 1.0 };
	const char *load_file = NULL, *show = NULL;
	const struct ctl_cmd *cmd;
	bool json;
	int at, rc;

	if ((cmd = raw_cmd(argc, argv, &at, &json)))
		return run_raw(cmd, argc, argv, at, json);
	if ((rc = parse_options(argc, argv, &o, &load_file, &show)) >= 0)
		return rc;
	if (!o.sadb_path)
		o.sadb_path = sadb_default_path();
	if (show) {
		if (optind < argc || load_file || o.flush) {
			ctl_err("-s takes no command, -f or -F");
			return CTL_EXIT_USAGE;
		}
		return show_modifier(&o, show);
	}
	/* OpenBSD's spelling: ipsecctl [-nv] [-F] -f FILE, and -F alone flushes everything. */
	if (load_file || o.flush) {
		if (optind < argc) {
			ctl_err("-f/-F take no command (got '%s')", argv[optind]);
			return CTL_EXIT_USAGE;
		}
		if (load_file)
			return ctl_cmd_load(&o, 1, (char **)&load_file);
		if (o.dry_run)
			return CTL_EXIT_OK;
		return cmd_flush(&o, 0, NULL);
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	/* A raw command reached only here (after an option raw_cmd cannot skip) is not one. */
	cmd = cmd_find(argv[optind]);
	if (!cmd || !cmd->fn) {
		ctl_err("unknown command '%s' (see ipsecctl --help)", argv[optind]);
		return CTL_EXIT_USAGE;
	}
	return cmd->fn(&o, argc - optind - 1, argv + optind + 1);
}
