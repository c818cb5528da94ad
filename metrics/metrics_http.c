/* metrics/metrics_http.c: the little HTTP/1.x a metrics exporter needs: parse a request line and
 * header block from untrusted bytes (bounded, never past the buffer, no allocation) and route it:
 * only GET (and HEAD) of /metrics is served. Everything else gets a status code, never a crash: the
 * parser is a unit test and a fuzz target.
 *
 * And the exporter's server (xm_http_serve), which any local user can reach. No user may keep a
 * scrape out or make scrapes expensive:
 *  - one request a connection, its head whole within XM_HTTP_HEAD_TIMEOUT_MS of the accept (a slow
 *    client is answered 408 and closed);
 *  - a newcomer that finds the table full closes the oldest connection that has sent no whole
 *    request in its first XM_HTTP_GRACE_MS (else one whose answer is out), so idle holders make
 *    room for a scrape instead of keeping it out, while a client that sends its request at once
 *    is never closed for another, however fast others connect; with nothing to close, newcomers
 *    wait their turn in the listen queue;
 *  - one source address holds XM_HTTP_MAX_PER_ADDR connections: its next newcomer closes the
 *    address's own oldest such connection first (loopback addresses count one by one: one
 *    Prometheus needs one connection at a time, and every local user can send from 127.0.0.1);
 *  - a scrape within min_interval_ms of a rendering gets that rendering: a flood of scrapes costs
 *    one render per interval.
 * The server needs nothing outside libc: the render is the caller's function. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"

static bool tchar(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The end of the header block (just past the blank line), accepting bare LF line ends as well
 * (RFC 9112 section 2.2); 0 when it is not there yet. */
static size_t header_end(const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i] != '\n')
			continue;
		if (i + 1 < len && b[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && b[i + 1] == '\r' && b[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The line starting at p (inside [p, end)), without its CR LF / LF: its length, and *next. */
static size_t line_len(const char *p, const char *end, const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t l;

	if (!nl) {
		*next = end;
		return (size_t)(end - p);
	}
	*next = nl + 1;
	l = (size_t)(nl - p);
	if (l && p[l - 1] == '\r')
		l--;
	return l;
}

static int parse_request_line(const char *p, size_t l, struct xm_http_req *req)
{
	size_t i = 0, m, t0, t;

	while (i < l && tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i >= sizeof(req->method) || i >= l || p[i] != ' ')
		return 400;
	memcpy(req->method, p, i);
	req->method[i] = '\0';
	t0 = ++i;
	while (i < l && p[i] != ' ') {
		unsigned char c = (unsigned char)p[i];

		if (c <= 0x20 || c >= 0x7f)
			return 400;
		i++;
	}
	if (i == t0 || i >= l)
		return 400;
	t = i - t0;
	if (p[t0] != '/')           /* origin-form only: no proxy URLs, no "*" */
		return 400;
	for (m = 0; m < t && p[t0 + m] != '?' && p[t0 + m] != '#'; m++)
		;
	if (m >= sizeof(req->path))
		return 414;
	memcpy(req->path, p + t0, m);
	req->path[m] = '\0';
	i++;
	if (l - i != 8 || memcmp(p + i, "HTTP/", 5) != 0 || p[i + 6] != '.' ||
	    p[i + 5] < '0' || p[i + 5] > '9' || p[i + 7] < '0' || p[i + 7] > '9')
		return 400;
	if (p[i + 5] != '1')
		return 505;
	req->minor = p[i + 7] - '0';
	return 0;
}

int xm_http_parse(const char *buf, size_t len, struct xm_http_req *req)
{
	const char *p = buf, *end, *next;
	size_t hend, l;
	int rc;

	memset(req, 0, sizeof(*req));
	/* RFC 9112 section 2.2: ignore empty lines before the request line */
	while (len && (*p == '\r' || *p == '\n')) {
		p++;
		len--;
	}
	hend = header_end(p, len);
	if (!hend) {
		if ((size_t)(p - buf) + len >= XM_HTTP_MAX_REQUEST)
			return 431;
		/* a request line already shown to be bad need not wait for the rest */
		if (memchr(p, '\n', len)) {
			l = line_len(p, p + len, &next);
			if ((rc = parse_request_line(p, l, req)) != 0)
				return rc;
		}
		return 1;
	}
	if ((size_t)(p - buf) + hend > XM_HTTP_MAX_REQUEST)
		return 431;
	end = p + hend;
	l = line_len(p, end, &next);
	if ((rc = parse_request_line(p, l, req)) != 0)
		return rc;
	for (p = next; p < end;) {
		const char *colon;
		size_t n;

		l = line_len(p, end, &next);
		if (l == 0)
			break;
		if (*p == ' ' || *p == '\t')    /* obsolete line folding: RFC 9112 says reject */
			return 400;
		colon = memchr(p, ':', l);
		if (!colon || colon == p)
			return 400;
		n = (size_t)(colon - p);
		for (size_t i = 0; i < n; i++)
			if (!tchar((unsigned char)p[i]))
				return 400;
		for (size_t i = n + 1; i < l; i++) {
			unsigned char c = (unsigned char)p[i];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return 400;
		}
		if (n == 17 && strncasecmp(p, "transfer-encoding", n) == 0)
			req->has_body = true;
		if (n == 14 && strncasecmp(p, "content-length", n) == 0) {
			const char *v = colon + 1, *ve = p + l;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			if (v == ve)
				return 400;
			for (const char *q = v; q < ve; q++) {
				if (*q == ' ' || *q == '\t') {
					while (q < ve && (*q == ' ' || *q == '\t'))
						q++;
					if (q != ve)
						return 400;
					break;
				}
				if (*q < '0' || *q > '9')
					return 400;
				if (*q != '0')
					req->has_body = true;
			}
		}
		p = next;
	}
	req->header_len = (size_t)(end - buf);
	return 0;
}

int xm_http_route(const struct xm_http_req *req)
{
	if (req->has_body)
		return 400;
	if (strcmp(req->path, "/metrics") != 0)
		return 404;
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
		return 405;
	return 200;
}

/* One connection. It is idle until a whole request head has come (out == NULL, !draining), then
 * answering (out set) and then draining (the answer is out; its unread bytes are read and dropped
 * until the client closes, so that closing does not reset the answer away). */
struct xm_conn {
	int fd;
	struct sockaddr_storage peer;
	int64_t since;              /* accept time: the oldest idle one makes room first */
	int64_t deadline;
	char *out;
	size_t out_len, out_off;
	bool draining;
	size_t in_len;
	char in[XM_HTTP_MAX_REQUEST];
};

struct xm_server {
	const struct xm_http_server_cfg *cfg;
	char *snap;                 /* the last rendering, answered until it is min_interval_ms old */
	size_t snap_len;
	int snap_rc;                /* its render result: a failure is kept as long, so it costs no more */
	int64_t snap_at;
	bool have_snap;
	struct xm_conn c[XM_HTTP_MAX_CLIENTS];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

static bool conn_idle(const struct xm_conn *c)
{
	return c->fd >= 0 && !c->out && !c->draining;
}

static void conn_close(struct xm_conn *c)
{
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->out_len = c->out_off = c->in_len = 0;
	c->draining = false;
}

/* Send what the socket takes; once the whole answer is out, end our side and drain (briefly). */
static void conn_write(struct xm_conn *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off < c->out_len)
		return;
	free(c->out);
	c->out = NULL;
	shutdown(c->fd, SHUT_WR);
	c->draining = true;
	c->deadline = now_ms() + 1000;
}

/* The whole answer for status code (body NULL: a one-line text of its own), then sent as far as the
 * socket takes it. Closes the connection when there is no memory for the answer. */
static void conn_answer(struct xm_conn *c, int code, const char *body, size_t blen, bool head)
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
	c->out_len = c->out_off = 0;
	if (!(f = open_memstream(&c->out, &c->out_len))) {
		conn_close(c);
		return;
	}
	fwrite(hdr, 1, (size_t)hl, f);
	if (!head)
		fwrite(body, 1, blen, f);
	if (fclose(f) != 0) {
		conn_close(c);
		return;
	}
	c->deadline = now_ms() + XM_HTTP_WRITE_TIMEOUT_MS;
	conn_write(c);
}

/* The rendering to answer with: the last one while it is younger than min_interval_ms, else a
 * new one. 0 (*text, *len set) or the render's -errno. */
static int snapshot(struct xm_server *s, const char **text, size_t *len)
{
	int64_t now = now_ms();

	if (!s->have_snap || now - s->snap_at >= (int64_t)s->cfg->min_interval_ms) {
		free(s->snap);
		s->snap = NULL;
		s->snap_len = 0;
		s->snap_rc = s->cfg->render(s->cfg->xo, &s->snap, &s->snap_len);
		/* the interval counts from the end of the render: a render slower than the interval
		 * (an IKE daemon that does not answer) must not turn into one render per scrape */
		s->snap_at = now_ms();
		s->have_snap = true;
	}
	*text = s->snap;
	*len = s->snap_len;
	return s->snap_rc;
}

static void conn_request(struct xm_server *s, struct xm_conn *c, int code,
			 const struct xm_http_req *req)
{
	const char *body = NULL;
	size_t blen = 0;

	if (code == 0)
		code = xm_http_route(req);
	if (code == 200 && snapshot(s, &body, &blen) < 0)
		code = 500;
	if (code != 200)
		body = NULL;
	conn_answer(c, code, body, blen, code == 200 && strcmp(req->method, "HEAD") == 0);
}

static void conn_read(struct xm_server *s, struct xm_conn *c)
{
	struct xm_http_req req;
	ssize_t n;
	int rc;

	if (c->draining) {
		char junk[512];

		n = recv(c->fd, junk, sizeof(junk), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	c->in_len += (size_t)n;
	rc = xm_http_parse(c->in, c->in_len, &req);
	if (rc == 1 && c->in_len == sizeof(c->in))
		rc = 431;
	if (rc != 1)
		conn_request(s, c, rc, &req);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return true;
}

/* May c be closed to make room at time now? An idle one once its grace is over (a client that
 * connected has had time to send its request: an honest one is never closed for a newcomer
 * however fast others connect); a draining one always (its answer is out). One that is being
 * answered never: that is a scrape in progress. */
static bool conn_evictable(const struct xm_conn *c, int64_t now)
{
	return c->draining || (conn_idle(c) && now - c->since >= XM_HTTP_GRACE_MS);
}

/* The connection to close for a newcomer (one from peer, when peer is given): the oldest idle one
 * past its grace, else the oldest draining one; -1 when none may be closed. */
static int victim(const struct xm_server *s, const struct sockaddr_storage *peer, int64_t now)
{
	int best = -1;

	for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++) {
		const struct xm_conn *c = &s->c[i], *b = best >= 0 ? &s->c[best] : NULL;

		if (c->fd < 0 || !conn_evictable(c, now) || (peer && !same_host(&c->peer, peer)))
			continue;
		if (!b || (conn_idle(c) && !conn_idle(b)) ||
		    (conn_idle(c) == conn_idle(b) && c->since < b->since))
			best = i;
	}
	return best;
}

static int free_slot(const struct xm_server *s)
{
	for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++)
		if (s->c[i].fd < 0)
			return i;
	return -1;
}

/* Is there a slot for a newcomer, free or to be made? When not, newcomers wait in the listen
 * queue, first come first served, and none is accepted only to be closed. */
static bool room(const struct xm_server *s, int64_t now)
{
	return free_slot(s) >= 0 || victim(s, NULL, now) >= 0;
}

/* Accept one pending connection (room() said there is a slot) and give it a slot: a newcomer
 * from an address that holds XM_HTTP_MAX_PER_ADDR already closes that address's own victim, so
 * one address's connects cost the others nothing while it has one; else the oldest victim of any
 * address goes. false when nothing more is pending. */
static bool accept_one(struct xm_server *s, int lfd)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	struct xm_conn *c;
	int64_t now;
	int fd, same = 0, i;

	memset(&peer, 0, sizeof(peer));
	fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return errno == ECONNABORTED || errno == EINTR;
	now = now_ms();
	for (i = 0; i < XM_HTTP_MAX_CLIENTS; i++)
		if (s->c[i].fd >= 0 && same_host(&s->c[i].peer, &peer))
			same++;
	if (same >= XM_HTTP_MAX_PER_ADDR && (i = victim(s, &peer, now)) >= 0)
		conn_close(&s->c[i]);
	if ((i = free_slot(s)) < 0 && (i = victim(s, NULL, now)) >= 0)
		conn_close(&s->c[i]);
	if (i < 0) {                /* room() was asked first: cannot happen */
		close(fd);
		return true;
	}
	c = &s->c[i];
	c->fd = fd;
	c->peer = peer;
	c->since = now;
	c->deadline = now + XM_HTTP_HEAD_TIMEOUT_MS;
	/* a client usually has its request sent before it is accepted: answer it at once */
	conn_read(s, c);
	return true;
}

/* Deadlines: a request head not whole in time is answered 408 (closed outright if nothing came);
 * an answer not taken in time, or a drain not ended, is closed. The next deadline, for poll. */
static int64_t expire(struct xm_server *s, int64_t now)
{
	int64_t next = now + 1000;

	for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++) {
		struct xm_conn *c = &s->c[i];

		if (c->fd >= 0 && now >= c->deadline) {
			if (conn_idle(c) && c->in_len)
				conn_answer(c, 408, NULL, 0, false);
			else
				conn_close(c);
		}
		if (c->fd >= 0 && c->deadline < next)
			next = c->deadline;
		/* the end of its grace may make room for a waiting newcomer */
		if (conn_idle(c) && c->since + XM_HTTP_GRACE_MS > now &&
		    c->since + XM_HTTP_GRACE_MS < next)
			next = c->since + XM_HTTP_GRACE_MS;
	}
	return next;
}

int xm_http_serve(int lfd, const struct xm_http_server_cfg *cfg)
{
	struct pollfd pfd[XM_HTTP_MAX_CLIENTS + 1];
	int idx[XM_HTTP_MAX_CLIENTS + 1];
	struct xm_server *s = calloc(1, sizeof(*s));
	int rc = 0;

	if (!s)
		return -ENOMEM;
	s->cfg = cfg;
	for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++)
		s->c[i].fd = -1;
	while (!cfg->stop()) {
		int64_t now = now_ms(), next = expire(s, now);
		int n = 0;

		pfd[n++] = (struct pollfd){ lfd, room(s, now) ? POLLIN : 0, 0 };
		for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++) {
			if (s->c[i].fd < 0)
				continue;
			idx[n] = i;
			pfd[n++] = (struct pollfd){ s->c[i].fd, s->c[i].out ? POLLOUT : POLLIN, 0 };
		}
		if (poll(pfd, (nfds_t)n, (int)(next > now ? next - now : 0)) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		/* the connections first: a request that came is answered before newcomers take room */
		for (int k = 1; k < n; k++) {
			struct xm_conn *c = &s->c[idx[k]];
			short re = pfd[k].revents;

			/* an error or hang-up while answering ends in the write's failure */
			if (c->out && (re & (POLLOUT | POLLERR | POLLHUP)))
				conn_write(c);
			else if (re & (POLLIN | POLLHUP | POLLERR))
				conn_read(s, c);
		}
		/* bounded, so that the connections are read again soon under a flood of connects */
		for (int k = 0; k < XM_HTTP_MAX_CLIENTS && (pfd[0].revents & POLLIN) &&
				room(s, now_ms()); k++)
			if (!accept_one(s, lfd))
				break;
	}
	for (int i = 0; i < XM_HTTP_MAX_CLIENTS; i++)
		if (s->c[i].fd >= 0)
			conn_close(&s->c[i]);
	free(s->snap);
	free(s);
	return rc;
}
