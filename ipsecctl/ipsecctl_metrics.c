/* ipsecctl/ipsecctl_metrics.c: `ipsecctl metrics`, the Prometheus exporter: one snapshot of the
 * metrics collection layer (metrics/metrics.h) in the text exposition format, printed, written
 * atomically as a node_exporter textfile (temporary file in the same directory, then rename), or
 * served over HTTP by a small long-running exporter (--listen). The exporter is its own process so
 * that the dataplane never parses HTTP: it is single-threaded (poll), serves only GET/HEAD of
 * /metrics, reads at most XM_HTTP_MAX_REQUEST bytes a request with a deadline, answers every
 * request with HTTP/1.1 and "Connection: close", and refuses everything else (400, 404, 405, 414,
 * 431, 505). Each scrape reads the SADB and xipsec-iked afresh. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"
#include "ipsecctl/ipsecctl_cmd.h"
#include "metrics/metrics.h"

#define METRICS_DEFAULT_LISTEN "127.0.0.1:9786"
#define MAX_CLIENTS   32
#define READ_TIMEOUT  5.0           /* seconds for a client to send its request */
#define WRITE_TIMEOUT 10.0          /* seconds for it to take the answer */

static void usage(FILE *f)
{
	fprintf(f, "usage: ipsecctl [--sadb PATH] metrics [--textfile FILE | --listen [ADDR:PORT]]\n"
		   "                [--no-sa] [--no-ike] [--ike-run-dir DIR] [--vici URI]\n"
		   "  (no option)        print the metrics (Prometheus text format 0.0.4)\n"
		   "  --textfile FILE    write them to FILE atomically (node_exporter textfile collector)\n"
		   "  --listen ADDR:PORT serve GET /metrics over HTTP (default " METRICS_DEFAULT_LISTEN ")\n");
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

struct client {
	int fd;
	char in[XM_HTTP_MAX_REQUEST];
	size_t in_len;
	char *out;                  /* the whole answer, NULL while reading */
	size_t out_len, out_off;
	bool draining;              /* answer sent, waiting for the client's close */
	double deadline;
};

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
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
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

static const char *status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

/* The whole answer for status code (body NULL: a one-line text of its own). */
static void answer(struct client *c, int code, const char *body, size_t blen, bool head)
{
	char hdr[512], line[128];
	FILE *f;
	int hl;

	if (!body) {
		snprintf(line, sizeof(line), "%d %s\n", code, status_text(code));
		body = line;
		blen = strlen(line);
	}
	hl = snprintf(hdr, sizeof(hdr),
		      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		      "Connection: close\r\n\r\n", code, status_text(code),
		      code == 200 ? XM_PROM_CONTENT_TYPE : "text/plain; charset=utf-8", blen,
		      code == 405 ? "Allow: GET, HEAD\r\n" : "");
	c->out = NULL;
	c->out_len = 0;
	if (!(f = open_memstream(&c->out, &c->out_len)))
		return;
	fwrite(hdr, 1, (size_t)hl, f);
	if (!head)
		fwrite(body, 1, blen, f);
	if (fclose(f) != 0) {
		free(c->out);
		c->out = NULL;
	}
	c->out_off = 0;
	c->deadline = now_mono() + WRITE_TIMEOUT;
}

static void client_close(struct client *c)
{
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void client_request(struct client *c, const struct xm_opts *xo, int code,
			   const struct xm_http_req *req)
{
	char *body = NULL;
	size_t blen = 0;

	if (code == 0)
		code = xm_http_route(req);
	if (code == 200 && render(xo, &body, &blen) < 0)
		code = 500;
	answer(c, code, body, blen, code == 200 && strcmp(req->method, "HEAD") == 0);
	free(body);
	/* one request a connection: whatever the client sends after it is read and dropped
	 * while the answer goes out (draining) */
	if (!c->out)
		client_close(c);
}

static void client_read(struct client *c, const struct xm_opts *xo)
{
	struct xm_http_req req;
	ssize_t n;
	int rc;

	if (c->out)                 /* answering: nothing more is read until it is out */
		return;
	if (c->draining) {
		char junk[512];

		n = recv(c->fd, junk, sizeof(junk), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			client_close(c);
		return;
	}
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->in_len += (size_t)n;
	rc = xm_http_parse(c->in, c->in_len, &req);
	if (rc == 1 && c->in_len == sizeof(c->in))
		rc = 431;
	if (rc != 1)
		client_request(c, xo, rc, &req);
}

static void client_write(struct client *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off < c->out_len)
		return;
	/* The whole answer is out: end our side and wait (briefly) for the client to close, so that
	 * unread request bytes do not turn the close into a reset that could lose the answer. */
	free(c->out);
	c->out = NULL;
	shutdown(c->fd, SHUT_WR);
	c->draining = true;
	c->deadline = now_mono() + 1.0;
}

static int serve(const char *spec, const struct xm_opts *xo)
{
	struct client cl[MAX_CLIENTS];
	struct pollfd pfd[MAX_CLIENTS + 1];
	struct sigaction sa = { 0 };
	int lfd = listen_on(spec);

	if (lfd < 0)
		return CTL_EXIT_ERR;
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < MAX_CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].fd = -1;
	}
	fprintf(stderr, "ipsecctl: metrics: serving http://%s/metrics\n", spec);
	while (!stop_sig) {
		int n = 0, free_slot = -1, timeout = 1000;
		double now = now_mono();

		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (cl[i].fd < 0) {
				if (free_slot < 0)
					free_slot = i;
				continue;
			}
			if (now >= cl[i].deadline) {
				if (!cl[i].out && !cl[i].draining && cl[i].in_len) {
					/* a request that never completed: say so, then close */
					answer(&cl[i], 400, NULL, 0, false);
					if (cl[i].out)
						continue;
				}
				client_close(&cl[i]);
			}
		}
		/* a full table stops accepting until a client goes */
		pfd[n++] = (struct pollfd){ lfd, free_slot >= 0 ? POLLIN : 0, 0 };
		for (int i = 0; i < MAX_CLIENTS; i++)
			if (cl[i].fd >= 0)
				pfd[n++] = (struct pollfd){ cl[i].fd, cl[i].out ? POLLOUT : POLLIN, 0 };
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			ctl_err("metrics: poll: %s", strerror(errno));
			break;
		}
		n = 1;
		for (int i = 0; i < MAX_CLIENTS; i++) {
			if (cl[i].fd < 0)
				continue;
			short re = pfd[n++].revents;

			/* an error or hang-up while answering ends in the write's failure */
			if (cl[i].out && (re & (POLLOUT | POLLERR | POLLHUP)))
				client_write(&cl[i]);
			else if (re & (POLLIN | POLLHUP | POLLERR))
				client_read(&cl[i], xo);
		}
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd >= 0) {
				for (int i = 0; i < MAX_CLIENTS; i++)
					if (cl[i].fd < 0) {
						cl[i].fd = fd;
						cl[i].deadline = now_mono() + READ_TIMEOUT;
						fd = -1;
						break;
					}
				if (fd >= 0)
					close(fd);
			}
		}
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (cl[i].fd >= 0)
			client_close(&cl[i]);
	close(lfd);
	return CTL_EXIT_OK;
}

int ctl_cmd_metrics(int argc, char **argv)
{
	struct xm_opts xo = { 0 };
	const char *textfile = NULL, *listen_spec = NULL;
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
		else if (!strcmp(a, "--sadb") && has_next)
			xo.sadb_path = argv[++i];
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
	if (textfile && listen_spec) {
		ctl_err("metrics: --textfile and --listen exclude each other");
		return CTL_EXIT_USAGE;
	}
	xm_global_init();
	if (listen_spec) {
		rc = serve(listen_spec, &xo);
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
