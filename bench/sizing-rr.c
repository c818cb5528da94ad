/* bench/sizing-rr.c: the request/response measurement of bench/sizing (what netperf's TCP_RR does,
 * which iperf3 lacks): one TCP connection, one transaction outstanding at a time; the client sends a
 * request of REQ bytes, the server answers with RESP bytes, and the client times every transaction.
 *
 *   sizing-rr server PORT                      serve connections one after another until killed
 *   sizing-rr client HOST PORT REQ RESP SECS   one line of JSON: transactions, secs, rate (per s),
 *                                              latency mean/p50/p90/p99/max in microseconds
 * The client opens with an 8-byte header (REQ and RESP, network order) so the server needs no options.
 * TCP_NODELAY on both ends: a transaction is one segment each way, as an interactive protocol sends. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG (1u << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int full(int fd, void *buf, size_t n, int rd)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = rd ? read(fd, (char *)buf + done, n - done) : write(fd, (char *)buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int server(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(port)) };
	int one = 1, zero = 0, ls = socket(AF_INET6, SOCK_STREAM, 0);
	char *buf = malloc(MAX_MSG);

	if (ls < 0 || !buf)
		return perror("sizing-rr: socket"), 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 4) < 0)
		return perror("sizing-rr: bind/listen"), 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		uint32_t h[2];
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			continue;
		nodelay(c);
		if (full(c, h, sizeof(h), 1) == 0) {
			uint32_t req = ntohl(h[0]), resp = ntohl(h[1]);

			if (req >= 1 && resp >= 1 && req <= MAX_MSG && resp <= MAX_MSG) {
				memset(buf, 'r', resp);
				while (full(c, buf, req, 1) == 0 && full(c, buf, resp, 0) == 0)
					;
			}
		}
		close(c);
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int client(const char *host, const char *port, unsigned req, unsigned resp, double secs)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	size_t cap = 1 << 16, n = 0;
	double *lat = malloc(cap * sizeof(double)), t0, t1, end, sum = 0;
	char *buf = malloc(req > resp ? req : resp);
	uint32_t h[2] = { htonl(req), htonl(resp) };
	int fd, err;

	if (!lat || !buf)
		return 1;
	if ((err = getaddrinfo(host, port, &hints, &ai)))
		return fprintf(stderr, "sizing-rr: %s: %s\n", host, gai_strerror(err)), 1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		return fprintf(stderr, "sizing-rr: connect %s:%s: %s\n", host, port, strerror(errno)), 1;
	freeaddrinfo(ai);
	nodelay(fd);
	memset(buf, 'q', req);
	if (full(fd, h, sizeof(h), 0))
		return fprintf(stderr, "sizing-rr: header: %s\n", strerror(errno)), 1;
	t0 = now_s();
	end = t0 + secs;
	for (t1 = t0; t1 < end;) {
		double s = t1;

		if (full(fd, buf, req, 0) || full(fd, buf, resp, 1))
			return fprintf(stderr, "sizing-rr: transaction %zu: %s\n", n, errno ? strerror(errno) :
				       "connection closed"), 1;
		t1 = now_s();
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(double));
			if (!lat)
				return 1;
		}
		lat[n++] = (t1 - s) * 1e6;
		sum += (t1 - s) * 1e6;
	}
	close(fd);
	qsort(lat, n, sizeof(double), cmp_d);
#define PCT(p) (n ? lat[(size_t)((double)(n - 1) * (p))] : 0)
	printf("{\"transactions\":%zu,\"secs\":%.6f,\"rate\":%.3f,\"mean_us\":%.3f,\"p50_us\":%.3f,"
	       "\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f}\n", n, t1 - t0, (double)n / (t1 - t0),
	       n ? sum / (double)n : 0, PCT(0.5), PCT(0.9), PCT(0.99), n ? lat[n - 1] : 0);
	free(lat);
	free(buf);
	return n ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 7 && !strcmp(argv[1], "client")) {
		long req = atol(argv[4]), resp = atol(argv[5]);
		double secs = atof(argv[6]);

		if (req < 1 || resp < 1 || req > (long)MAX_MSG || resp > (long)MAX_MSG || secs <= 0) {
			fprintf(stderr, "sizing-rr: REQ and RESP take 1..%u bytes, SECS > 0\n", MAX_MSG);
			return 2;
		}
		return client(argv[2], argv[3], (unsigned)req, (unsigned)resp, secs);
	}
	fprintf(stderr, "usage: sizing-rr server PORT\n       sizing-rr client HOST PORT REQ RESP SECS\n");
	return 2;
}
