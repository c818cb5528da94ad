/* tests/fuzz/fuzz_http.c: libFuzzer target for the metrics exporter's HTTP request parser and router
 * (metrics/metrics_http.c), which `ipsecctl metrics --listen` runs on bytes from any local client.
 * Each input is a request as received, in an exact-size buffer (ASan sees a read past its end).
 * Any answer is fine as long as it is one the exporter knows how to send, and a parsed request
 * never claims more bytes than it was given, or a path that is not "/..." and NUL-terminated. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xm_http_req req;
	char *b = malloc(size ? size : 1);
	int rc, route;

	if (!b)
		return 0;
	memcpy(b, data, size);
	rc = xm_http_parse(b, size, &req);
	if (rc != 0 && rc != 1 && rc != 400 && rc != 414 && rc != 431 && rc != 505)
		abort();
	if (rc == 0) {
		if (req.header_len > size || req.path[0] != '/' ||
		    !memchr(req.path, '\0', sizeof(req.path)) || !memchr(req.method, '\0', sizeof(req.method)))
			abort();
		route = xm_http_route(&req);
		if (route != 200 && route != 400 && route != 404 && route != 405)
			abort();
		/* a request that routes to 200 is exactly GET or HEAD of /metrics without a body */
		if (route == 200 && (strcmp(req.path, "/metrics") || req.has_body ||
				     (strcmp(req.method, "GET") && strcmp(req.method, "HEAD"))))
			abort();
	}
	free(b);
	return 0;
}
