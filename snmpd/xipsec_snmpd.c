/* snmpd/xipsec_snmpd.c: xipsec-snmpd, the SNMP AgentX subagent of an xipsec gateway. It connects to
 * a master agent (Net-SNMP's snmpd with `master agentx`) over the AgentX socket, registers
 * XIPSEC-MIB (snmpd/snmp_mib.c) and answers its GET/GETNEXT/GETBULK requests from the metrics
 * collection layer until SIGTERM or SIGINT, and reads the SADB every notify interval to send
 * XIPSEC-MIB's notifications through the master. The master agent owns every SNMP policy question
 * (versions, users, communities, views); the subagent only ever reads. When the master goes away it
 * keeps running and reconnects every AgentX ping interval. It reads xipsecd's key-less counters view
 * (sadb/sadb_stats.h), never the SADB, so it runs as an unprivileged member of the monitoring group
 * with no key mapped while it parses AgentX. This file owns the command line, the Net-SNMP set-up
 * and the main loop. xipsec-snmpd(8) is its manual. */
#include "snmpd/netsnmp.h"
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "sadb/sadb_stats.h"
#include "snmpd/snmp_mib.h"

#define PROG "xipsec-snmpd"
#define DEFAULT_PING 5
#define DEFAULT_NOTIFY 5

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* A no-op alarm: agent_check_and_process() wakes at least this often, so a signal that arrives
 * between the flag test and its select() is seen within a second. */
static void tick(unsigned int reg, void *arg)
{
}

/* Every notify interval: a reading between requests, so that its changes are notified. */
static void poll_changes(unsigned int reg, void *arg)
{
	xs_mib_poll();
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options]\n"
		"  -x, --agentx-socket ADDR  the master agent's AgentX address (default: Net-SNMP's,\n"
		"                            /var/agentx/master; tcp:HOST:PORT for TCP)\n"
		"  -s, --stats PATH          xipsecd's counters view (default $" SADB_STATS_ENV_PATH ", else\n"
		"                            " SADB_STATS_DEFAULT_PATH ")\n"
		"      --ike-run DIR         xipsec-iked's run directory (default $XIPSEC_IKED_RUN, else\n"
		"                            /run/xipsec-iked)\n"
		"      --vici URI            xipsec-iked's VICI socket (default unix://RUN_DIR/charon.vici)\n"
		"      --no-ike              do not ask xipsec-iked (the IKE objects read zero)\n"
		"      --no-sa               leave the SA table empty (very large SADBs)\n"
		"  -c, --cache SECONDS       how long one reading serves requests (1..300, default 1)\n"
		"  -n, --notify SECONDS      how often the SADB is read for the notifications (SA up,\n"
		"                            down, soft expiry; dataplane down) (1..3600, default %d)\n"
		"  -p, --ping SECONDS        AgentX ping interval: how often the connection to the master\n"
		"                            is checked and, when lost, retried (1..3600, default %d)\n"
		"  -L, --syslog              log to syslog (daemon facility) instead of standard error\n"
		"  -D, --debug TOKENS        Net-SNMP debug output for TOKENS (e.g. agentx)\n"
		"  -h, --help                this text\n"
		"  -V, --version             the version\n",
		DEFAULT_NOTIFY, DEFAULT_PING);
}

static int num_arg(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, PROG ": %s: '%s' is not a number of seconds in %ld..%ld\n", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "agentx-socket", required_argument, NULL, 'x' },
		{ "stats", required_argument, NULL, 's' },
		{ "ike-run", required_argument, NULL, 'I' },
		{ "vici", required_argument, NULL, 'U' },
		{ "no-ike", no_argument, NULL, 'N' },
		{ "no-sa", no_argument, NULL, 'S' },
		{ "cache", required_argument, NULL, 'c' },
		{ "ping", required_argument, NULL, 'p' },
		{ "notify", required_argument, NULL, 'n' },
		{ "syslog", no_argument, NULL, 'L' },
		{ "debug", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct xs_mib_conf conf = { .cache_seconds = 1, .opts.stats = true };
	const char *agentx = NULL, *debug = NULL;
	long ping = DEFAULT_PING, cache = 1, notify = DEFAULT_NOTIFY;
	bool use_syslog = false;
	struct sigaction sa;
	int c, rc;

	while ((c = getopt_long(argc, argv, "x:s:c:p:n:LD:hV", lopts, NULL)) != -1) {
		switch (c) {
		case 'x': agentx = optarg; break;
		case 's': conf.opts.stats_path = optarg; break;
		case 'I': conf.opts.ike_run_dir = optarg; break;
		case 'U': conf.opts.vici_uri = optarg; break;
		case 'N': conf.opts.no_ike = true; break;
		case 'S': conf.opts.no_sa = true; break;
		case 'c': if (num_arg("--cache", optarg, 1, 300, &cache)) return 2; break;
		case 'p': if (num_arg("--ping", optarg, 1, 3600, &ping)) return 2; break;
		case 'n': if (num_arg("--notify", optarg, 1, 3600, &notify)) return 2; break;
		case 'L': use_syslog = true; break;
		case 'D': debug = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " %s (Net-SNMP %s)\n", PACKAGE_VERSION, netsnmp_get_version()); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	conf.cache_seconds = (unsigned)cache;

	if (use_syslog)
		snmp_enable_syslog_ident(PROG, LOG_DAEMON);
	else
		snmp_enable_stderrlog();
	if (debug) {
		debug_register_tokens(debug);
		snmp_set_do_debugging(1);
	}

	/* The subagent needs no MIB files (it serves numeric OIDs), no configuration files (the command
	 * line says everything) and no persistent state: it must neither depend on nor write what the
	 * master agent keeps in /var/lib/snmp. */
	setenv("MIBS", "", 1);
	netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_READ_CONFIGS, 1);
	netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
	netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
	netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
	netsnmp_ds_set_boolean(NETSNMP_DS_APPLICATION_ID, NETSNMP_DS_AGENT_ROLE, 1);

	/* a master that goes away must not kill us on the next write to its socket */
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;      /* no SA_RESTART: the signal ends the wait in select() */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	SOCK_STARTUP;
	if (init_agent(PROG)) {
		snmp_log(LOG_ERR, PROG ": Net-SNMP agent library initialisation failed\n");
		return 1;
	}
	/* after init_agent(): it sets the subagent's defaults (a ping every 15 s) */
	if (agentx)
		netsnmp_ds_set_string(NETSNMP_DS_APPLICATION_ID, NETSNMP_DS_AGENT_X_SOCKET, agentx);
	netsnmp_ds_set_int(NETSNMP_DS_APPLICATION_ID, NETSNMP_DS_AGENT_AGENTX_PING_INTERVAL, (int)ping);
	rc = xm_global_init();
	if (rc) {
		snmp_log(LOG_ERR, PROG ": metrics layer initialisation failed: %s\n", strerror(-rc));
		return 1;
	}
	rc = xs_mib_init(&conf);
	if (rc) {
		snmp_log(LOG_ERR, PROG ": registering XIPSEC-MIB failed: %s\n", strerror(-rc));
		return 1;
	}
	init_snmp(PROG);
	snmp_alarm_register(1, SA_REPEAT, tick, NULL);
	/* the first reading now: what is already there when the agent starts is not an event */
	xs_mib_poll();
	snmp_alarm_register((unsigned)notify, SA_REPEAT, poll_changes, NULL);
	snmp_log(LOG_INFO, PROG ": serving XIPSEC-MIB over AgentX at %s (ping %ld s, cache %ld s, "
		 "notify %ld s)\n",
		 netsnmp_ds_get_string(NETSNMP_DS_APPLICATION_ID, NETSNMP_DS_AGENT_X_SOCKET) ?
		 netsnmp_ds_get_string(NETSNMP_DS_APPLICATION_ID, NETSNMP_DS_AGENT_X_SOCKET) :
		 "/var/agentx/master", ping, cache, notify);

	while (!stop_signal)
		agent_check_and_process(1);

	snmp_log(LOG_INFO, PROG ": stopped by signal %d\n", (int)stop_signal);
	snmp_shutdown(PROG);
	xs_mib_shutdown();
	xm_global_deinit();
	SOCK_CLEANUP;
	return 0;
}
