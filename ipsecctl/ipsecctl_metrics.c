/* ipsecctl/ipsecctl_metrics.c: `ipsecctl metrics`, the Prometheus exporter: one snapshot of the
 * metrics collection layer (metrics/metrics.h) in the text exposition format, printed, written
 * atomically as a node_exporter textfile (temporary file in the same directory, then rename), or
 * served over HTTP by a small long-running exporter (--listen). The exporter is its own process so
 * that the dataplane never parses HTTP; its server, and the limits that keep any local user from
 * stalling it, are metrics/metrics_http.c's (xm_http_serve). A scrape reads the counters view
 * (sadb/sadb_stats.h) and xipsec-iked afresh unless the last reading is younger than
 * --min-interval: the exporter runs as an unprivileged member of the monitoring group and maps no
 * key. The one-shot forms read the SADB itself (root) unless --stats says otherwise. The HTTP exporter
 * keeps the tunnels' memory (metrics/metrics_tunnel.c) so that xipsec_tunnel_* go on across rekeys;
 * a single print or textfile run has none and counts a tunnel's SAs of the moment. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"
#include "ipsecctl/ipsecctl_cmd.h"
#include "metrics/metrics.h"
#include "sadb/sadb_stats.h"

#define METRICS_DEFAULT_LISTEN "127.0.0.1:9786"

static void usage(FILE *f)
{
	fprintf(f, "usage: ipsecctl [--sadb PATH] metrics [--textfile FILE | --listen [ADDR:PORT]\n"
		   "                [--min-interval MS]] [--source sadb|stats] [--stats PATH] [--no-sa]\n"
		   "                [--no-ike] [--ike-run-dir DIR] [--vici URI]\n"
		   "  (no option)        print the metrics (Prometheus text format 0.0.4)\n"
		   "  --textfile FILE    write them to FILE atomically (node_exporter textfile collector)\n"
		   "  --listen ADDR:PORT serve GET /metrics over HTTP (default " METRICS_DEFAULT_LISTEN ")\n"
		   "  --min-interval MS  serve one reading to every scrape within MS ms of it (default %d)\n"
		   "  --source S         the SADB (default without --listen) or xipsecd's counters view\n"
		   "                     (stats, default with --listen: no access to the SADB needed)\n"
		   "  --stats PATH       the counters view (default $" SADB_STATS_ENV_PATH " or\n"
		   "                     " SADB_STATS_DEFAULT_PATH "); implies --source stats\n",
		XM_HTTP_MIN_INTERVAL_MS);
}

/* The exposition of one fresh snapshot in a malloc'ed buffer. */
static int render(const struct xm_opts *xo, char **out, size_t *len)
{
	struct xm_snapshot snap;
	FILE *f;
	int rc;

	*out = NULL;
	*len = 0;
	if ((rc = xm_collect(&snap, xo)) < 0)
		return rc;
	if (!(f = open_memstream(out, len))) {
		xm_snapshot_free(&snap);
		return -errno;
	}
	rc = xm_prom_write(f, &snap);
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	xm_snapshot_free(&snap);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* FILE is replaced in one rename(2): a collector reading it sees the old or the new text, never
 * part of one. The temporary name does not end in .prom, so the collector never reads it. */
static int write_textfile(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp)) {
		ctl_err("metrics: %s: path too long", path);
		return CTL_EXIT_ERR;
	}
	if ((fd = mkstemp(tmp)) < 0) {
		ctl_err("metrics: cannot create a temporary file next to %s (%s): %s", path, tmp,
			strerror(errno));
		return CTL_EXIT_ERR;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	/* mkstemp made it 0600; the collector may run as another user */
	if (fchmod(fd, 0644) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		ctl_err("metrics: cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
fail:
	ctl_err("metrics: cannot write %s: %s", tmp, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return CTL_EXIT_ERR;
}

/* ---- the HTTP exporter ---- */

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

static bool stopping(void)
{
	return stop_sig != 0;
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT" -> a listening socket; -1 (said) on failure. */
static int listen_on(const char *spec)
{
	char host[256], port[16];
	const char *colon = strrchr(spec, ':');
	struct addrinfo hints = { 0 }, *ai, *a;
	int fd = -1, rc, one = 1;

	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		snprintf(port, sizeof(port), "%s", spec);
	} else {
		size_t hl = (size_t)(colon - spec);
		const char *h = spec;

		if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (hl >= sizeof(host) || strlen(colon + 1) >= sizeof(port)) {
			ctl_err("metrics: --listen %s: expected ADDR:PORT", spec);
			return -1;
		}
		memcpy(host, h, hl);
		host[hl] = '\0';
		snprintf(port, sizeof(port), "%s", colon + 1);
		if (!hl)
			snprintf(host, sizeof(host), "127.0.0.1");
	}
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0) {
		ctl_err("metrics: --listen %s: %s", spec, gai_strerror(rc));
		return -1;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* a long queue: while every slot is taken, scrapes wait in it for their turn behind
		 * other users' connects rather than have their SYNs dropped */
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
			break;
		rc = errno;
		close(fd);
		fd = -1;
		errno = rc;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		ctl_err("metrics: cannot listen on %s: %s", spec, strerror(errno));
	return fd;
}

static int serve(const char *spec, const struct xm_opts *xo, unsigned min_interval_ms)
{
	struct xm_http_server_cfg cfg = { .render = render, .xo = xo, .min_interval_ms = min_interval_ms,
					  .stop = stopping };
	struct sigaction sa = { 0 };
	int lfd = listen_on(spec), rc;

	if (lfd < 0)
		return CTL_EXIT_ERR;
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "ipsecctl: metrics: serving http://%s/metrics\n", spec);
	rc = xm_http_serve(lfd, &cfg);
	close(lfd);
	if (rc < 0) {
		ctl_err("metrics: %s", strerror(-rc));
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
}

int ctl_cmd_metrics(int argc, char **argv)
{
	struct xm_opts xo = { 0 };
	const char *textfile = NULL, *listen_spec = NULL, *source = NULL;
	unsigned min_interval_ms = XM_HTTP_MIN_INTERVAL_MS;
	char *text = NULL;
	size_t len = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_next = i + 1 < argc;

		if (!strcmp(a, "--textfile") && has_next)
			textfile = argv[++i];
		else if (!strcmp(a, "--listen"))
			listen_spec = has_next && argv[i + 1][0] != '-' ? argv[++i] : METRICS_DEFAULT_LISTEN;
		else if (!strcmp(a, "--min-interval") && has_next) {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(argv[++i], &end, 10);
			if (errno || end == argv[i] || *end || argv[i][0] == '-' || v > 3600000) {
				ctl_err("metrics: --min-interval %s: expected milliseconds, 0 to 3600000",
					argv[i]);
				return CTL_EXIT_USAGE;
			}
			min_interval_ms = (unsigned)v;
		} else if (!strcmp(a, "--sadb") && has_next)
			xo.sadb_path = argv[++i];
		else if (!strcmp(a, "--source") && has_next)
			source = argv[++i];
		else if (!strcmp(a, "--stats") && has_next)
			xo.stats_path = argv[++i];
		else if (!strcmp(a, "--no-sa"))
			xo.no_sa = true;
		else if (!strcmp(a, "--no-ike"))
			xo.no_ike = true;
		else if (!strcmp(a, "--ike-run-dir") && has_next)
			xo.ike_run_dir = argv[++i];
		else if (!strcmp(a, "--vici") && has_next)
			xo.vici_uri = argv[++i];
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return CTL_EXIT_OK;
		} else {
			ctl_err("metrics: unknown or incomplete argument '%s'", a);
			usage(stderr);
			return CTL_EXIT_USAGE;
		}
	}
	if (min_interval_ms != XM_HTTP_MIN_INTERVAL_MS && !listen_spec) {
		ctl_err("metrics: --min-interval goes with --listen");
		return CTL_EXIT_USAGE;
	}
	if (textfile && listen_spec) {
		ctl_err("metrics: --textfile and --listen exclude each other");
		return CTL_EXIT_USAGE;
	}
	if (source && strcmp(source, "sadb") && strcmp(source, "stats")) {
		ctl_err("metrics: --source %s: expected sadb or stats", source);
		return CTL_EXIT_USAGE;
	}
	if (source && !strcmp(source, "sadb") && xo.stats_path) {
		ctl_err("metrics: --stats goes with --source stats");
		return CTL_EXIT_USAGE;
	}
	/* The long-running exporter parses HTTP from any local user: it reads the key-less view. */
	xo.stats = source ? !strcmp(source, "stats") : xo.stats_path || listen_spec;
	xm_global_init();
	if (listen_spec) {
		/* the tunnels' gone SAs, remembered for as long as this exporter serves */
		if (!(xo.tunnels = xm_tunnel_memory_new())) {
			ctl_err("metrics: %s", strerror(ENOMEM));
			xm_global_deinit();
			return CTL_EXIT_ERR;
		}
		rc = serve(listen_spec, &xo, min_interval_ms);
		xm_tunnel_memory_free(xo.tunnels);
		xm_global_deinit();
		return rc;
	}
	if ((rc = render(&xo, &text, &len)) < 0) {
		ctl_err("metrics: %s", strerror(-rc));
		xm_global_deinit();
		return CTL_EXIT_ERR;
	}
	if (textfile)
		rc = write_textfile(textfile, text, len);
	else
		rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? CTL_EXIT_OK : CTL_EXIT_ERR;
	free(text);
	xm_global_deinit();
	return rc;
}
