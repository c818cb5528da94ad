/* ike/iked.c: xipsec-iked, the IKE daemon of xipsec. A small libcharon host (like charon-cmd and
 * charon-systemd) that registers our SADB kernel-ipsec backend before any plugin so that it is the one
 * charon uses (the first registered backend wins), keeps kernel-netlink for addresses and routes, runs
 * its own strongswan.conf, VICI socket and pid file under its own run directory so it never collides
 * with a system charon, loads swanctl.conf from its configuration directory at start, and adds maxqm. */
#include "ike/swan.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <library.h>
#include <daemon.h>
#include <plugins/plugin_feature.h>

#include "ike/kernel_sadb.h"
#include "ike/cluster_mid.h"
#include "ike/cluster_seg.h"
#include "ike/maxqm.h"
#include "sadb/sadb.h"

/* $(sysconfdir)/xipsec/iked: /etc/xipsec/iked when configured with --sysconfdir=/etc. */
#ifndef XIPSEC_SYSCONFDIR
#define XIPSEC_SYSCONFDIR "/etc"
#endif
#define IKED_DEFAULT_CONF_DIR XIPSEC_SYSCONFDIR "/xipsec/iked"
#define IKED_DEFAULT_RUN_DIR  "/run/xipsec-iked"
#define IKED_SWANCTL          "/usr/sbin/swanctl"
#define IKED_XIPSECD_CTL      "/run/xipsecd.sock"   /* xipsecd's control socket: its -c default */

/* Plugins of Debian's strongSwan 5.9.8 (/usr/lib/ipsec/plugins) that an IKE gateway needs; openssl
 * provides the crypto, kernel-netlink only kernel-net (our backend comes first for kernel-ipsec). */
#define IKED_PLUGINS "random nonce openssl x509 revocation constraints pubkey pkcs1 pkcs7 pkcs8 pem " \
		     "hmac kdf xcbc gcm drbg socket-default kernel-netlink vici counters"

static level_t iked_loglevel = 1;

/* The prefix of our own error messages (charon's log lines keep the unit's default priority:
 * its levels are verbosity, not severity). */
static const char *iked_err(void)
{
	return sadb_stderr_is_journal() ? "<3>" : "";
}

/* Logging before charon's loggers exist (library and plugin initialisation). */
static void dbg_stderr(debug_t group, level_t level, char *fmt, ...)
{
	va_list args;

	if (level <= iked_loglevel) {
		va_start(args, fmt);
		fprintf(stderr, "00[%s] ", enum_to_name(debug_names, group));
		vfprintf(stderr, fmt, args);
		fprintf(stderr, "\n");
		va_end(args);
	}
}

static void usage(FILE *out, const char *argv0)
{
	fprintf(out,
		"usage: %s [--conf-dir DIR] [--run-dir DIR] [--sadb PATH] [--debug LEVEL]\n"
		"          [--no-load] [--help] [--version]\n"
		"  --conf-dir DIR  strongswan.conf and swanctl.conf (default " IKED_DEFAULT_CONF_DIR ")\n"
		"  --run-dir DIR   VICI socket charon.vici, pid file, status (default " IKED_DEFAULT_RUN_DIR ")\n"
		"  --sadb PATH     SADB segment (default $" SADB_ENV_PATH " or " SADB_DEFAULT_PATH ")\n"
		"  --debug LEVEL   charon log level -1..4 on stderr (default 1)\n"
		"  --no-load       do not run `swanctl --load-all` on DIR/swanctl.conf at start\n",
		argv0);
}

/* Lock the pid file: a second daemon on the same run directory is refused, whatever a stale file says. */
static int take_pidfile(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stderr, "%sxipsec-iked: cannot open pid file %s: %s\n", iked_err(), path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fprintf(stderr, "%sxipsec-iked: another xipsec-iked (pid %s) uses this run directory (%s)\n", iked_err(),
			buf[0] ? buf : "?", path);
		close(fd);
		return -1;
	}
	if (ftruncate(fd, 0) < 0)
		goto fail;
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, strlen(buf)) != (ssize_t)strlen(buf))
		goto fail;
	return fd;
fail:
	fprintf(stderr, "%sxipsec-iked: cannot write pid file %s: %s\n", iked_err(), path, strerror(errno));
	close(fd);
	return -1;
}

/* The pid of the process holding a lock on the file open at fd, from /proc/locks, or 0. */
static long lock_holder(int fd)
{
	char line[256];
	struct stat st;
	long holder = 0;
	FILE *f;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return 0;
	while (!holder && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long ino;
		long pid;

		/* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters ("-> FLOCK ...") do not match */
		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%lu", &pid, &maj, &min, &ino) == 4 &&
		    ino == (unsigned long)st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev))
			holder = pid;
	}
	fclose(f);
	return holder;
}

/* One xipsec-iked per SADB: at start it removes what an earlier daemon left there (kernel_sadb.c),
 * which would be the SAs and reserved SPIs of a second live daemon. An exclusive lock on the SADB file
 * itself (whatever run directory each daemon has) tells a live daemon from a dead one; the kernel
 * drops it when its holder dies, even by SIGKILL. */
static int lock_sadb(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long pid;

	if (fd < 0) {
		fprintf(stderr, "%sxipsec-iked: cannot open SADB %s to lock it: %s\n", iked_err(), path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK) {
		pid = lock_holder(fd);
		if (pid)
			fprintf(stderr, "%sxipsec-iked: another xipsec-iked (pid %ld) uses the SADB %s; "
				"one IKE daemon per SADB\n", iked_err(), pid, path);
		else
			fprintf(stderr, "%sxipsec-iked: another xipsec-iked uses the SADB %s (it holds its "
				"lock); one IKE daemon per SADB\n", iked_err(), path);
	} else {
		fprintf(stderr, "%sxipsec-iked: cannot lock SADB %s: %s\n", iked_err(), path, strerror(errno));
	}
	close(fd);
	return -1;
}

/* swanctl --load-all on our own VICI socket: the "one command" start with a configuration directory. */
static int load_swanctl(const char *conf_dir, const char *vici_uri)
{
	char file[PATH_MAX + 32];
	pid_t pid;
	int st;

	snprintf(file, sizeof(file), "%s/swanctl.conf", conf_dir);
	if (access(file, R_OK) != 0) {
		DBG1(DBG_DMN, "xipsec: no %s, nothing loaded (use swanctl --uri %s)", file, vici_uri);
		return 0;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* swanctl reads strongswan.conf for its own plugin list: ours, not the system's */
		setenv("STRONGSWAN_CONF", lib->conf, 1);
		/* its progress report is noise in our log unless debugging; errors stay on stderr */
		if (iked_loglevel < 2) {
			int null = open("/dev/null", O_WRONLY);

			if (null >= 0)
				dup2(null, STDOUT_FILENO);
		}
		execl(IKED_SWANCTL, "swanctl", "--load-all", "--noprompt", "--uri", vici_uri, "--file", file,
		      (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		DBG1(DBG_DMN, "xipsec: swanctl --load-all --file %s failed (status %d)", file,
		     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -EINVAL;
	}
	DBG0(DBG_DMN, "xipsec: loaded %s", file);
	return 0;
}

static int write_empty_conf(const char *run_dir, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/strongswan.conf", run_dir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "# written by xipsec-iked: no strongswan.conf in its --conf-dir\n"
			  "xipsec-iked {\n}\n") < 0 || fclose(f) != 0) {
		fprintf(stderr, "%sxipsec-iked: cannot write %s: %s\n", iked_err(), path, strerror(errno));
		return -1;
	}
	return 0;
}

static int run(maxqm_t *maxqm)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);

		if (sig == -1) {
			if (errno == EINTR)
				continue;
			DBG1(DBG_DMN, "waiting for signal failed: %s", strerror(errno));
			return 1;
		}
		if (sig == SIGHUP) {
			DBG1(DBG_DMN, "SIGHUP: reloading %s", lib->conf);
			if (lib->settings->load_files(lib->settings, lib->conf, FALSE)) {
				charon->load_loggers(charon);
				lib->plugins->reload(lib->plugins, NULL);
				maxqm->write_status(maxqm);
			} else {
				DBG1(DBG_DMN, "reloading %s failed, keeping the old settings", lib->conf);
			}
			continue;
		}
		DBG1(DBG_DMN, "signal %d: shutting down", sig);
		return 0;
	}
}

/* The command line: -1 to go on, or the exit code (help, version, a bad option). */
static int parse_args(int argc, char *argv[], const char **conf_dir, const char **run_dir,
		      const char **sadb_path, bool *load)
{
	static const struct option opts[] = {
		{ "conf-dir", required_argument, NULL, 'c' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "sadb", required_argument, NULL, 's' },
		{ "debug", required_argument, NULL, 'd' },
		{ "no-load", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "c:r:s:d:nhv", opts, NULL)) != -1) {
		switch (c) {
		case 'c': *conf_dir = optarg; break;
		case 'r': *run_dir = optarg; break;
		case 's': *sadb_path = optarg; break;
		case 'd':
			errno = 0;
			iked_loglevel = strtol(optarg, &end, 10);
			if (errno || *end || iked_loglevel < -1 || iked_loglevel > 4) {
				fprintf(stderr, "%sxipsec-iked: --debug wants a level from -1 to 4, not '%s'\n", iked_err(), optarg);
				return 1;
			}
			break;
		case 'n': *load = FALSE; break;
		case 'h': usage(stdout, argv[0]); return 0;
		case 'v': printf("xipsec-iked %s (strongSwan %s)\n", XIPSEC_VERSION, VERSION); return 0;
		default: usage(stderr, argv[0]); return 1;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 1;
	}
	return -1;
}

/* Loggers and the settings this daemon needs whatever strongswan.conf says (its own VICI socket,
 * no routes or virtual IPs installed by charon, the replay window of its SAs). */
static void charon_defaults(char *vici)
{
	level_t levels[DBG_MAX];
	char lvl[16];

	for (int group = 0; group < DBG_MAX; group++)
		levels[group] = iked_loglevel;
	charon->set_default_loggers(charon, levels, TRUE);
	/* Log to stderr (not syslog) unless strongswan.conf configures loggers of its own. */
	snprintf(lvl, sizeof(lvl), "%d", iked_loglevel);
	lib->settings->set_default_str(lib->settings, "%s.filelog.stderr.default", lvl, lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.filelog.stderr.flush_line", "yes", lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.filelog.stderr.ike_name", "yes", lib->ns);
	if (!sadb_stderr_is_journal()) /* the journal has its own */
		lib->settings->set_default_str(lib->settings, "%s.filelog.stderr.time_format", "%T",
					       lib->ns);
	charon->load_loggers(charon);

	lib->settings->set_default_str(lib->settings, "%s.plugins.vici.socket", vici, lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.replay_window", "1024", lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.install_routes", "no", lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.install_virtual_ip", "no", lib->ns);
	lib->settings->set_default_str(lib->settings, "%s.plugins.kernel-netlink.fwmark", "", lib->ns);
}

int main(int argc, char *argv[])
{
	const char *conf_dir = IKED_DEFAULT_CONF_DIR, *run_dir = IKED_DEFAULT_RUN_DIR, *sadb_path = NULL;
	char run_abs[PATH_MAX], conf_abs[PATH_MAX], sconf[PATH_MAX + 32], vici[PATH_MAX + 32];
	char pidf[PATH_MAX + 32], err[256];
	static plugin_feature_t features[] = {
		PLUGIN_CALLBACK(kernel_ipsec_register, kernel_sadb_create),
			PLUGIN_PROVIDE(CUSTOM, "kernel-ipsec"),
	};
	bool load = TRUE;
	struct sadb *db = NULL;
	maxqm_t *maxqm;
	cluster_seg_t *segs = NULL;
	kernel_sadb_pool_t *pool;
	cluster_mid_t *mids = NULL;
	sigset_t set;
	uint64_t seq_soft = 0;
	const char *knob;
	int pidfd, sadbfd, rc;

	rc = parse_args(argc, argv, &conf_dir, &run_dir, &sadb_path, &load);
	if (rc >= 0)
		return rc;
	if (!sadb_path)
		sadb_path = sadb_default_path();
	/* test knob: rekey outbound SAs at this sequence number instead of near the end of the space */
	knob = getenv("XIPSEC_SEQ_SOFT");
	if (knob && *knob && kernel_sadb_parse_seq_soft(knob, &seq_soft) < 0) {
		fprintf(stderr, "%sxipsec-iked: XIPSEC_SEQ_SOFT wants a sequence number from 1 to %llu, "
			"not '%s'\n", iked_err(), (unsigned long long)UINT64_MAX, knob);
		return 1;
	}
	/* The VICI URI and the files handed to swanctl must not depend on the working directory. */
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "%sxipsec-iked: cannot create run directory %s: %s\n", iked_err(), run_dir,
			strerror(errno));
		return 1;
	}
	if (!realpath(run_dir, run_abs)) {
		fprintf(stderr, "%sxipsec-iked: run directory %s: %s\n", iked_err(), run_dir, strerror(errno));
		return 1;
	}
	run_dir = run_abs;
	if (realpath(conf_dir, conf_abs))
		conf_dir = conf_abs;

	snprintf(pidf, sizeof(pidf), "%s/xipsec-iked.pid", run_dir);
	snprintf(vici, sizeof(vici), "unix://%s/charon.vici", run_dir);
	snprintf(sconf, sizeof(sconf), "%s/strongswan.conf", conf_dir);
	if ((pidfd = take_pidfile(pidf)) < 0)
		return 1;

	rc = sadb_open(sadb_path, SADB_RDWR | SADB_CREATE, NULL, &db, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%sxipsec-iked: cannot open SADB %s: %s\n", iked_err(), sadb_path,
			err[0] ? err : strerror(-rc));
		return 1;
	}
	if ((sadbfd = lock_sadb(sadb_path)) < 0) {
		sadb_close(db);
		return 1;
	}
	kernel_sadb_set_db(db);
	kernel_sadb_set_acquire(sadb_path);
	kernel_sadb_set_seq_soft(seq_soft);

	/* Never fall back to /etc/strongswan.conf: that one belongs to the system's charon. Without a
	 * strongswan.conf of ours, an empty one in the run directory keeps the built-in defaults. */
	if (access(sconf, R_OK) != 0 && write_empty_conf(run_dir, sconf, sizeof(sconf)) < 0)
		return 1;
	dbg = dbg_stderr;
	if (!library_init(sconf, "xipsec-iked")) {
		library_deinit();
		return SS_RC_LIBSTRONGSWAN_INTEGRITY;
	}
	if (!libcharon_init()) {
		libcharon_deinit();
		library_deinit();
		return SS_RC_INITIALIZATION_FAILED;
	}
	charon_defaults(vici);
	/* before the plugins: in front of the vici plugin's pools, whose addresses it checks */
	pool = kernel_sadb_pool_create(db);

	lib->plugins->add_static_features(lib->plugins, "xipsec-sadb", features, countof(features), TRUE,
					  NULL, NULL);
	if (!charon->initialize(charon, lib->settings->get_str(lib->settings, "%s.load", IKED_PLUGINS,
							       lib->ns))) {
		fprintf(stderr, "%sxipsec-iked: charon failed to initialize (see the log above)\n", iked_err());
		pool->destroy(pool);
		libcharon_deinit();
		library_deinit();
		return SS_RC_INITIALIZATION_FAILED;
	}
	if (!lib->caps->drop(lib->caps)) {
		pool->destroy(pool);
		libcharon_deinit();
		library_deinit();
		return SS_RC_INITIALIZATION_FAILED;
	}

	maxqm = maxqm_create(run_dir);
	charon->bus->add_listener(charon->bus, &maxqm->listener);
	maxqm->write_status(maxqm);
	/* active/active: the ha plugin's segments go to xipsecd, which filters in its place */
	if (lib->plugins->has_feature(lib->plugins, PLUGIN_PROVIDE(CUSTOM, "ha"))) {
		segs = cluster_seg_create(lib->settings->get_str(lib->settings, "%s.xipsecd_ctl",
								 IKED_XIPSECD_CTL, lib->ns));
		/* the peer's requests the other node answered while the two were apart */
		mids = cluster_mid_create();
		charon->bus->add_listener(charon->bus, &mids->listener);
	}

	DBG1(DBG_DMN, "starting xipsec-iked (strongSwan %s), conf %s, VICI %s, SADB %s, maxqm %u", VERSION,
	     lib->conf, vici, sadb_path, maxqm_limit(NULL));
	lib->plugins->status(lib->plugins, LEVEL_CTRL);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	charon->start(charon);
	if (load)
		load_swanctl(conf_dir, vici);

	rc = run(maxqm);

	if (segs)
		segs->destroy(segs);
	pool->destroy(pool);
	if (mids) {
		charon->bus->remove_listener(charon->bus, &mids->listener);
		mids->destroy(mids);
	}
	charon->bus->remove_listener(charon->bus, &maxqm->listener);
	maxqm->destroy(maxqm);
	libcharon_deinit();
	library_deinit();
	unlink(pidf);
	close(pidfd);
	close(sadbfd);
	return rc;
}
