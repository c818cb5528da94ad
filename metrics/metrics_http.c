/* metrics/metrics_http.c: the little HTTP/1.x a metrics exporter needs: parse a request line and
 * header block from untrusted bytes (bounded, never past the buffer, no allocation) and route it:
 * only GET (and HEAD) of /metrics is served. Everything else gets a status code, never a crash: the
 * parser is a unit test and a fuzz target. */
#include "config.h"

#include <string.h>
#include <strings.h>

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
