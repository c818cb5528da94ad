/* dataplane/xipsecd/xipsecd.c: the daemon's entry point and control thread: options, start-up order (SADB,
 * SA objects, TUN, XDP program with the gateway's addresses, sockets, workers), the control loop
 * (SADB changes, netlink notifications, control socket, signals), SIGHUP's reload (the SADB, the
 * interfaces and the routes read again) and clean shutdown on SIGTERM (XDP detached first so
 * nothing is redirected to closing sockets; the SADB stays). */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <urcu-qsbr.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "mobility/mip6_err.h"
#include "dataplane/xipsecd/dp_segment.h"

#define DP_DEFAULT_CTL "/run/xipsecd.sock"

/* Copy-mode AF_XDP sends at most 32 frames per sendto(2) unless told more (Linux 6.17): a burst of
 * 64 then takes two calls and the first fails with EAGAIN. 256 covers every round's transmit in one
 * call (measured with bench/peers: no EAGAIN left, a third fewer calls per packet, 0-11 % less CPU
 * per packet for TCP and small datagrams, none for large ones). */
#define DP_TX_BUDGET 256u

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xipsecd --inside IF --outside IF [--workers N] [--sadb PATH] [options]\n"
		"       xipsecd --status [--ctl PATH]\n"
		"  -i, --inside IF     interface towards the protected network\n"
		"  -o, --outside IF    interface towards the peers (ESP/AH)\n"
		"  -w, --workers N     worker threads, one per queue (default: every queue)\n"
		"  -s, --sadb PATH     SADB (default $" SADB_ENV_PATH " or " SADB_DEFAULT_PATH ")\n"
		"  -c, --ctl PATH      control socket (default " DP_DEFAULT_CTL "; \"\" for none)\n"
		"      --stats PATH    the counters view monitoring reads (default $" SADB_STATS_ENV_PATH "\n"
		"                      or " SADB_STATS_DEFAULT_PATH "; \"\" for none)\n"
		"      --stats-group G the group that may read it (default " SADB_STATS_DEFAULT_GROUP ")\n"
		"      --tun NAME      TUN device for the gateway's own traffic (default xipsec0;\n"
		"                      \"none\" for no device)\n"
		"      --xdp-obj PATH  the XDP program (default $XIPSEC_XDP_OBJ or %s)\n"
		"      --skb-mode      attach the XDP program in generic mode\n"
		"      --copy          never try zero-copy AF_XDP\n"
		"      --cpus LIST     pin worker i to the i-th CPU of LIST, e.g. 2-5,8 (default:\n"
		"                      the CPUs this process may run on)\n"
		"      --no-pin        do not pin workers to CPUs\n"
		"      --no-handoff    never hand an inbound burst's crypto to another worker\n"
		"      --batch N       packets per burst, 1..%u (default %u)\n"
		"      --tx-budget N   frames one copy-mode transmit call may send, 32..%u, or 0 for\n"
		"                      the kernel's 32 (default %u)\n"
		"      --busy-poll     run the interfaces' NAPI polls from the workers (busy polling)\n"
		"      --cluster-peer ADDR[:PORT]   the other node's sync address: a two-node cluster,\n"
		"                      starting standby ($XIPSEC_CLUSTER_PEER; port 4510)\n"
		"      --cluster-local ADDR[:PORT]  this node's sync address ($XIPSEC_CLUSTER_LOCAL)\n"
		"      --cluster-key FILE  64 hex digits, mode 0600 ($XIPSEC_CLUSTER_KEY or\n"
		"                      " DP_CLUSTER_KEY_DEFAULT ")\n"
		"      --cluster-lease N   numbers per replicated lease ($XIPSEC_CLUSTER_LEASE, 2^20)\n"
		"      --cluster-budget N  numbers a node may use unacknowledged ($XIPSEC_CLUSTER_BUDGET, 2^24)\n"
		"      --cluster-sync-packets N, --cluster-sync-ms T  inbound window tops sent every N\n"
		"                      numbers or T ms (1024, 100)\n"
		"      --cluster-segments N  active/active: the ha plugin's segment_count, 1..%u (default\n"
		"                      $XIPSEC_CLUSTER_SEGMENTS; none: no segment filter)\n"
		"      --cluster-address ADDR  the IPv4 cluster address the segments split (default\n"
		"                      $XIPSEC_CLUSTER_ADDRESS)\n"
		"      --mip6-error-burst N, --mip6-error-rate N\n"
		"                      the home agent's Binding Errors and Parameter Problems: N back\n"
		"                      to back, then N a second, 1..1000000 (default %u and %u)\n"
		"      --mip6-dad-ms N the home agent's Duplicate Address Detection wait for a new\n"
		"                      binding's home address, 0..10000 (default 1000; 0: none)\n"
		"      --mip6-refresh-advice S  Binding Refresh Advice of S seconds in accepted\n"
		"                      acknowledgements, 0..262140 (default 0: none)\n"
		"      --mip6-brr-at P, --mip6-brr-max N  a Binding Refresh Request when a binding\n"
		"                      has lived P%% of its lifetime, N in all (default 75 and 2; 0: none)\n"
		"      --status        print the status of a running xipsecd (JSON) and exit\n"
		"  -v, --verbose       more log messages\n"
		"  -V, --version       print the version and exit\n", dp_xdp_installed_obj(), DP_BATCH, DP_BATCH, DP_RING_SIZE, DP_TX_BUDGET,
		DP_SEG_MAX, MIP6_ERR_BURST_DEFAULT, MIP6_ERR_RATE_DEFAULT);
}

static int client(const char *path, const char *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	size_t got = 0;
	ssize_t n;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "xipsecd: control socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		/* a wedged daemon must not wedge the caller (scripts, tests) */
		struct timeval tv = { .tv_sec = 5 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "xipsecd: cannot reach %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (write(fd, req, strlen(req)) < 0) {
		fprintf(stderr, "xipsecd: %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	/* A daemon that is exiting (killed, its file descriptors not yet closed) still accepts the
	 * connection and then closes it unanswered: that is no answer, not an empty one. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		got += (size_t)n;
	}
	close(fd);
	if (n < 0 || !got) {
		fprintf(stderr, "xipsecd: %s: %s\n", path,
			n < 0 ? strerror(errno) : "no answer (the daemon is stopping)");
		return 1;
	}
	return 0;
}

enum { O_TUN = 256, O_XDP, O_SKB, O_COPY, O_NOPIN, O_STATUS, O_BATCH, O_TXBUDGET, O_BUSYPOLL, O_NOHANDOFF, O_CPUS,
       O_STATS, O_STATS_GROUP, O_MIP6_ERR_BURST, O_MIP6_ERR_RATE, O_MIP6_DAD,
       O_MIP6_BRA, O_MIP6_BRR_AT, O_MIP6_BRR_MAX, O_CLUSTER };

/* The Mobile IPv6 home agent's options: each a number in its range; 0 or, said on stderr, -1. */
static int mip6_opt(int c, const char *arg, struct dp_config *cfg)
{
	static const struct { int opt; const char *name; unsigned long min, max; } lim[] = {
		{ O_MIP6_DAD, "mip6-dad-ms", 0, 10000 }, { O_MIP6_BRA, "mip6-refresh-advice", 0, 262140 },
		{ O_MIP6_BRR_AT, "mip6-brr-at", 0, 99 }, { O_MIP6_BRR_MAX, "mip6-brr-max", 0, 10 },
		{ O_MIP6_ERR_BURST, "mip6-error-burst", 1, 1000000 },
		{ O_MIP6_ERR_RATE, "mip6-error-rate", 1, 1000000 },
	};
	unsigned k = 0;
	unsigned long v;
	char *end;

	while (lim[k].opt != c)
		k++;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || v < lim[k].min || v > lim[k].max) {
		fprintf(stderr, "xipsecd: --%s takes %lu..%lu, not '%s'\n", lim[k].name, lim[k].min,
			lim[k].max, arg);
		return -1;
	}
	switch (c) {
	case O_MIP6_DAD: cfg->mip6_dad_ms = (int)v; break;
	case O_MIP6_BRA: cfg->mip6_refresh_s = (unsigned)v; break;
	case O_MIP6_BRR_AT: cfg->mip6_brr_at = (int)v; break;
	case O_MIP6_BRR_MAX: cfg->mip6_brr_max = (int)v; break;
	case O_MIP6_ERR_BURST: cfg->mip6_err_burst = (unsigned)v; break;
	default: cfg->mip6_err_rate = (unsigned)v; break;
	}
	return 0;
}

/* xipsecd's long options (usage() says what each does). */
static const struct option opts[] = {
	{ "inside", required_argument, NULL, 'i' },
	{ "outside", required_argument, NULL, 'o' },
	{ "workers", required_argument, NULL, 'w' },
	{ "sadb", required_argument, NULL, 's' },
	{ "ctl", required_argument, NULL, 'c' },
	{ "stats", required_argument, NULL, O_STATS },
	{ "stats-group", required_argument, NULL, O_STATS_GROUP },
	{ "tun", required_argument, NULL, O_TUN },
	{ "xdp-obj", required_argument, NULL, O_XDP },
	{ "skb-mode", no_argument, NULL, O_SKB },
	{ "copy", no_argument, NULL, O_COPY },
	{ "no-pin", no_argument, NULL, O_NOPIN },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "no-handoff", no_argument, NULL, O_NOHANDOFF },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "tx-budget", required_argument, NULL, O_TXBUDGET },
	{ "busy-poll", no_argument, NULL, O_BUSYPOLL },
	{ "cluster-local", required_argument, NULL, O_CLUSTER },
	{ "cluster-peer", required_argument, NULL, O_CLUSTER },
	{ "cluster-key", required_argument, NULL, O_CLUSTER },
	{ "cluster-lease", required_argument, NULL, O_CLUSTER },
	{ "cluster-budget", required_argument, NULL, O_CLUSTER },
	{ "cluster-sync-packets", required_argument, NULL, O_CLUSTER },
	{ "cluster-sync-ms", required_argument, NULL, O_CLUSTER },
	{ "cluster-segments", required_argument, NULL, O_CLUSTER },
	{ "cluster-address", required_argument, NULL, O_CLUSTER },
	{ "mip6-error-burst", required_argument, NULL, O_MIP6_ERR_BURST },
	{ "mip6-error-rate", required_argument, NULL, O_MIP6_ERR_RATE },
	{ "mip6-dad-ms", required_argument, NULL, O_MIP6_DAD },
	{ "mip6-refresh-advice", required_argument, NULL, O_MIP6_BRA },
	{ "mip6-brr-at", required_argument, NULL, O_MIP6_BRR_AT },
	{ "mip6-brr-max", required_argument, NULL, O_MIP6_BRR_MAX },
	{ "status", no_argument, NULL, O_STATUS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static int parse(int argc, char **argv, struct dp_config *cfg, bool *status)
{
	int c, li = 0;
	const char *cpus = NULL;

	cfg->ctl_path = DP_DEFAULT_CTL;
	cfg->tx_budget = DP_TX_BUDGET;
	cfg->mip6_dad_ms = -1;
	cfg->mip6_brr_at = cfg->mip6_brr_max = -1;
	while ((c = getopt_long(argc, argv, "i:o:w:s:c:vhV", opts, &li)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'i': case 'o':
			/* an unset variable of a unit's environment file arrives as "" */
			if (!*optarg) {
				fprintf(stderr, "xipsecd: --%s: no interface name given\n",
					c == 'i' ? "inside" : "outside");
				return 2;
			}
			if (strlen(optarg) >= IF_NAMESIZE) {
				fprintf(stderr, "xipsecd: interface name too long: %s\n", optarg);
				return 2;
			}
			strcpy(c == 'i' ? cfg->inside : cfg->outside, optarg);
			break;
		case 'w':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 1 || v > DP_MAX_WORKERS) {
				fprintf(stderr, "xipsecd: --workers takes 1..%u, not '%s'\n",
					DP_MAX_WORKERS, optarg);
				return 2;
			}
			cfg->workers = (unsigned)v;
			break;
		case 's': cfg->sadb_path = optarg; break;
		case 'c': cfg->ctl_path = optarg; break;
		case O_STATS: cfg->stats_path = optarg; break;
		case O_STATS_GROUP: cfg->stats_group = optarg; break;
		case O_TUN: cfg->tun_name = strcmp(optarg, "none") ? optarg : ""; break;
		case O_XDP: cfg->bpf_obj = optarg; break;
		case O_SKB: cfg->skb_mode = true; break;
		case O_COPY: cfg->copy_mode = true; break;
		case O_NOPIN: cfg->no_pin = true; break;
		case O_CPUS: cpus = optarg; break;
		case O_NOHANDOFF: cfg->no_handoff = true; break;
		case O_MIP6_DAD: case O_MIP6_BRA: case O_MIP6_BRR_AT: case O_MIP6_BRR_MAX:
		case O_MIP6_ERR_BURST: case O_MIP6_ERR_RATE:
			if (mip6_opt(c, optarg, cfg))
				return 2;
			break;
		case O_BATCH:
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || v < 1 || v > DP_BATCH) {
				fprintf(stderr, "xipsecd: --batch takes 1..%u, not '%s'\n", DP_BATCH, optarg);
				return 2;
			}
			cfg->batch = (unsigned)v;
			break;
		case O_TXBUDGET:
			/* the kernel's range: its default TX_BATCH_SIZE up to the TX ring's size */
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || (v != 0 && (v < 32 || v > DP_RING_SIZE))) {
				fprintf(stderr, "xipsecd: --tx-budget takes 0 or 32..%u, not '%s'\n", DP_RING_SIZE, optarg);
				return 2;
			}
			cfg->tx_budget = (unsigned)v;
			break;
		case O_BUSYPOLL: cfg->busy_poll = true; break;
		case O_CLUSTER: {
			char err[160];

			if (dp_cluster_option(&cfg->cluster, opts[li].name, optarg, err, sizeof(err))) {
				fprintf(stderr, "xipsecd: %s\n", err);
				return 2;
			}
			break;
		}
		case O_STATUS: *status = true; break;
		case 'v': cfg->verbose++; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("xipsecd %s\n", PACKAGE_VERSION); exit(0);
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xipsecd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!*status && (!*cfg->inside || !*cfg->outside)) {
		usage(stderr);
		return 2;
	}
	if (!*status && !strcmp(cfg->inside, cfg->outside)) {
		fprintf(stderr, "xipsecd: --inside and --outside must differ\n");
		return 2;
	}
	if (cpus && cfg->no_pin) {
		fprintf(stderr, "xipsecd: --cpus and --no-pin exclude each other\n");
		return 2;
	}
	if (!cfg->no_pin && !*status) {
		/* the CPUs it may run on now: taskset, a cpuset cgroup, systemd's CPUAffinity= */
		cpu_set_t allowed;
		char err[512];

		if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
			fprintf(stderr, "xipsecd: cannot read the CPUs this process may run on: %s\n", strerror(errno));
			return 1;
		}
		cfg->n_cpus = cpus ? dp_cpus_parse(cpus, &allowed, cfg->cpu_list, err, sizeof(err))
				   : dp_cpus_default(&allowed, cfg->cpu_list);
		if (!cfg->n_cpus) {
			fprintf(stderr, "xipsecd: %s\n", cpus ? err : "this process may run on no CPU");
			return 2;
		}
	}
	return 0;
}

/* The dataplane writes only the runtime area: map the rest read-only where libsadb offers it. A
 * missing SADB is created (mode 0600) so xipsecd may start before the first SA is configured. */
static int open_sadb(const char *path, struct sadb **db, char *msg, size_t len)
{
#ifdef SADB_RUNTIME
	int err = sadb_open(path, SADB_RUNTIME, NULL, db, msg, len);

	if (err != -ENOENT)
		return err;
	err = sadb_open(path, SADB_RDWR | SADB_CREATE, NULL, db, msg, len);
	if (err)
		return err;
	sadb_close(*db);
	return sadb_open(path, SADB_RUNTIME, NULL, db, msg, len);
#else
	return sadb_open(path, SADB_RDWR | SADB_CREATE, NULL, db, msg, len);
#endif
}

/* Interface changes netlink reported (DP_NL_CHG_*): MTUs, the gateway's addresses (the XDP
 * program's), and the workers' route caches, which re-resolve on the next packet. */
static void follow_links(struct dp_ctx *ctx, int chg)
{
	if (chg & DP_NL_CHG_LINK)
		for (unsigned p = 0; p < DP_NPORTS; p++) {
			struct dp_iface tmp;

			if (dp_if_info(ctx->ifc[p].name, &tmp) == 0)
				atomic_store(&ctx->ifc[p].mtu, atomic_load(&tmp.mtu));
		}
	if (chg & DP_NL_CHG_ADDR) {
		int err = dp_xdp_sync_addrs(ctx);

		if (err)
			dp_log(LOG_WARNING, "cannot update local addresses: %s", strerror(-err));
	}
	if (chg)
		atomic_fetch_add_explicit(&ctx->route_gen, 1, memory_order_release);
}

static void control_loop(struct dp_ctx *ctx, int sfd, int nlfd)
{
	uint64_t last_sync = 0;

	while (!atomic_load(&ctx->stop)) {
		struct pollfd pf[5] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = nlfd, .events = POLLIN },
			{ .fd = ctx->ctl_fd, .events = POLLIN },
			{ .fd = dp_mip6_event_fd(ctx), .events = POLLIN },
			{ .fd = dp_cluster_fd(ctx), .events = POLLIN },
		};
		uint64_t now;
		int r = poll(pf, 5, 10);

		if (r < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					/* A reload, not a stop: everything is read again from its source,
					 * nothing that works is dropped (records that did not change keep
					 * their engine objects, so no packet is lost to it). */
					dp_log(LOG_NOTICE, "SIGHUP: reading the SADB, the interfaces and the routes again");
					dp_sa_resync(ctx);
					last_sync = 0;
					follow_links(ctx, DP_NL_CHG_LINK | DP_NL_CHG_ADDR);
				} else {
					dp_log(LOG_NOTICE, "signal %u: shutting down", si.ssi_signo);
					atomic_store(&ctx->stop, true);
					break;
				}
			}
		}
		if (pf[1].revents & POLLIN)
			follow_links(ctx, dp_nl_monitor_read(nlfd));
		if (pf[2].revents & POLLIN)
			dp_ctl_handle(ctx);
		if (pf[3].revents & POLLIN)
			dp_mip6_run(ctx);
		if (pf[4].revents & POLLIN)
			dp_cluster_read(ctx);
		/* the generation check is one load: poll the SADB every round */
		now = dp_now_ns();
		dp_segment_tick(ctx, now);
		if (now - last_sync >= 5000000) {
			int err = dp_sa_sync(ctx);

			if (err)
				dp_log(LOG_WARNING, "SADB sync failed: %s", strerror(-err));
			dp_sa_tick(ctx);
			dp_xdp_fold_drops(ctx);
			dp_mip6_run(ctx);
			/* the cluster's SAs for its section of the view, from the table just synced */
			struct dp_sa *const *cv;
			uint32_t ncv = dp_sa_cluster_list(ctx, &cv);

			dp_stats_tick(ctx, now, cv, ncv);
			last_sync = now;
		}
	}
}

/* The signals that stop the daemon, blocked before any thread starts so that only the control
 * thread's signalfd sees them. */
static int block_signals(void)
{
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &sigs, SFD_CLOEXEC);
}

/* The SADB, the two interfaces and the number of workers, then the hold on SA slots. Nonzero (the
 * reason logged, the SADB closed again) when the daemon cannot run. */
static int open_ctx(struct dp_ctx *ctx)
{
	unsigned q_in, q_out;
	char msg[256];
	int err;

	/* The SADB first: a SADB that is not ours (wrong owner, mode or type) stops the daemon before
	 * it looks at, let alone attaches to, any interface. */
	err = open_sadb(ctx->cfg.sadb_path, &ctx->db, msg, sizeof(msg));
	if (err) {
		dp_log(LOG_ERR, "SADB %s: %s", ctx->cfg.sadb_path ? ctx->cfg.sadb_path :
		       sadb_default_path(), msg);
		return 1;
	}
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		const char *name = p == DP_IN ? ctx->cfg.inside : ctx->cfg.outside;

		err = dp_if_info(name, &ctx->ifc[p]);
		if (err) {
			dp_log(LOG_ERR, "interface %s: %s", name,
			       err == -EPROTONOSUPPORT ? "not an Ethernet interface" : strerror(-err));
			goto fail;
		}
	}
	q_in = dp_if_queues(ctx->cfg.inside);
	q_out = dp_if_queues(ctx->cfg.outside);
	ctx->n_workers = ctx->cfg.workers ? ctx->cfg.workers : (q_in < q_out ? q_in : q_out);
	ctx->batch = ctx->cfg.batch ? ctx->cfg.batch : DP_BATCH;
	if (ctx->n_workers > q_in || ctx->n_workers > q_out || ctx->n_workers > DP_MAX_WORKERS) {
		dp_log(LOG_ERR, "%u workers need %u queues; %s has %u, %s has %u", ctx->n_workers,
		       ctx->n_workers, ctx->cfg.inside, q_in, ctx->cfg.outside, q_out);
		goto fail;
	}
	/* Before any SA is read: from here on no writer reuses the slot of an SA this process may
	 * still hold (sadb.h, "the dataplane's hold on SA slots"). */
	err = sadb_dp_attach(ctx->db);
	if (err) {
		dp_log(LOG_ERR, "SADB: %s", sadb_errmsg(ctx->db));
		goto fail;
	}
	return 0;
fail:
	sadb_close(ctx->db);
	return 1;
}

/* Everything the workers need, in the order that lets each part find what it uses: the workers'
 * records, reassembly, SA objects, TUN, control socket, netlink, the XDP program, the sockets.
 * Nonzero on failure (logged); teardown() undoes whatever was done. */
static int setup(struct dp_ctx *ctx, int *nlfd)
{
	struct sadb_dp_stats *ds = sadb_dp_stats(ctx->db);
	int err;

	ctx->w = calloc(ctx->n_workers, sizeof(*ctx->w));
	if (!ctx->w) {
		dp_log(LOG_ERR, "cannot allocate %u workers", ctx->n_workers);
		return -ENOMEM;
	}
	/* A new run's counters start at zero in the SADB stats area, like --status; the workers
	 * have not started, so nobody else writes it now. */
	memset(ds->w, 0, sizeof(ds->w));
	__atomic_store_n(&ds->n_workers, ctx->n_workers, __ATOMIC_RELAXED);
	__atomic_store_n(&ds->started, (uint64_t)time(NULL), __ATOMIC_RELAXED);
	__atomic_store_n(&ds->pid, (uint64_t)getpid(), __ATOMIC_RELEASE);
	for (unsigned i = 0; i < ctx->n_workers; i++) {
		struct dp_worker *w = &ctx->w[i];

		w->ctx = ctx;
		w->sst = sadb_worker_stats(ctx->db, i);
		w->id = w->queue = i;
		w->cpu = -1;
		w->nl_fd = -1;
	}
	err = dp_in_init(ctx);
	if (err) {
		dp_log(LOG_ERR, "cannot allocate the reassembly table: %s", strerror(-err));
		return err;
	}
	err = dp_handoff_init(ctx);
	if (err) {
		dp_log(LOG_ERR, "cannot set up the hand-off rings: %s", strerror(-err));
		return err;
	}
	err = dp_acquire_init(ctx);
	if (err) {
		dp_log(LOG_ERR, "cannot set up acquires: %s", strerror(-err));
		return err;
	}
	/* before the SAs: a clustered node's outbound SAs start standby, sending nothing */
	dp_cluster_cfg_env(&ctx->cfg.cluster);
	err = dp_cluster_open(ctx, &ctx->cfg.cluster);
	if (err)
		return err;
	err = dp_sa_init(ctx);
	if (err) {
		dp_log(LOG_ERR, "cannot read the SADB: %s", strerror(-err));
		return err;
	}
	err = dp_mip6_init(ctx);
	if (err) {
		dp_log(LOG_ERR, "cannot set up the home agent: %s", strerror(-err));
		return err;
	}
	err = dp_tun_open(ctx);
	if (err)
		return err;
	err = dp_ctl_open(ctx);
	if (err)
		return err;
	*nlfd = dp_nl_open(RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
			   RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE);
	if (*nlfd < 0) {
		dp_log(LOG_ERR, "netlink: %s", strerror(-*nlfd));
		return *nlfd;
	}
	err = dp_xdp_load(ctx);
	if (err)
		return err;
	err = dp_segment_init(ctx);
	if (err)
		return err;
	dp_sa_spi_filter_start(ctx);
	for (unsigned i = 0; i < ctx->n_workers; i++) {
		struct dp_worker *w = &ctx->w[i];

		w->nl_fd = dp_nl_open(0);
		if (w->nl_fd < 0) {
			dp_log(LOG_ERR, "worker %u: cannot open its netlink socket", i);
			return w->nl_fd;
		}
		err = dp_xsk_setup(ctx, w);
		if (err)
			return err;
	}
	/* last: the first reading shows every SA and worker the dataplane starts with */
	struct dp_sa *const *cv;
	uint32_t ncv = dp_sa_cluster_list(ctx, &cv);

	dp_stats_open(ctx, cv, ncv);
	return 0;
}

/* Start the workers; returns how many run (all, or the stop flag is set). */
static unsigned start_workers(struct dp_ctx *ctx)
{
	unsigned started = 0;

	for (unsigned i = 0; i < ctx->n_workers; i++) {
		int err = pthread_create(&ctx->w[i].thread, NULL, dp_worker_main, &ctx->w[i]);

		if (err) {
			dp_log(LOG_ERR, "cannot start worker %u: %s", i, strerror(err));
			atomic_store(&ctx->stop, true);
			break;
		}
		started++;
	}
	return started;
}

/* After the workers have stopped: undo setup() and open_ctx(), as far as they went. */
static void teardown(struct dp_ctx *ctx, int nlfd, int sfd)
{
	dp_xdp_unload(ctx);
	for (unsigned i = 0; ctx->w && i < ctx->n_workers; i++) {
		struct dp_worker *w = &ctx->w[i];

		dp_xsk_teardown(w);
		if (w->nl_fd >= 0)
			close(w->nl_fd);
	}
	dp_stats_close(ctx);
	dp_sa_fini(ctx);
	sadb_dp_detach(ctx->db); /* no engine object is left */
	dp_in_fini(ctx);
	dp_handoff_fini(ctx);
	dp_acquire_fini(ctx);
	dp_mip6_fini(ctx);
	dp_tun_close(ctx);
	dp_ctl_close(ctx);
	dp_cluster_close(ctx);
	if (nlfd >= 0)
		close(nlfd);
	if (sfd >= 0)
		close(sfd);
	free(ctx->w);
	sadb_close(ctx->db);
}

int main(int argc, char **argv)
{
	struct dp_ctx ctx;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	bool status = false;
	int rc = 1, err, sfd, nlfd = -1;

	memset(&ctx, 0, sizeof(ctx));
	ctx.tun_fd = ctx.ctl_fd = -1;
	err = parse(argc, argv, &ctx.cfg, &status);
	if (err)
		return err;
	if (status)
		return client(ctx.cfg.ctl_path, "status\n");
	dp_verbose = ctx.cfg.verbose;
	ctx.start_ns = dp_now_ns();

	/* doc/platform.md: EPERM here and not needed (CAP_IPC_LOCK, cgroup-charged BPF memory) */
	setrlimit(RLIMIT_MEMLOCK, &rl);
	sfd = block_signals();
	if (open_ctx(&ctx))
		return 1;
	if (setup(&ctx, &nlfd) == 0) {
		unsigned started = start_workers(&ctx);

		if (started == ctx.n_workers) {
			dp_log(LOG_NOTICE, "running: inside %s, outside %s, %u worker(s), %u SA(s), "
			       "SADB %s", ctx.cfg.inside, ctx.cfg.outside, ctx.n_workers,
			       dp_sa_count(&ctx), ctx.cfg.sadb_path ? ctx.cfg.sadb_path :
			       sadb_default_path());
			control_loop(&ctx, sfd, nlfd);
			rc = 0;
		}
		/* Detach first: from here on nothing new reaches the sockets; traffic falls back to
		 * the kernel, which has no SAs and (on a gateway) should not forward. */
		dp_xdp_unload(&ctx);
		atomic_store(&ctx.stop, true);
		for (unsigned i = 0; i < started; i++)
			pthread_join(ctx.w[i].thread, NULL);
	}
	teardown(&ctx, nlfd, sfd);
	if (rc == 0)
		dp_log(LOG_NOTICE, "stopped");
	return rc;
}
