/* ipsecctl/ipsecctl_xipsecd.c: one request to the running xipsecd over its control socket (a unix stream
 * socket; one request line per connection, the answer until xipsecd closes it), for the commands
 * that show or set the dataplane's own state: `show bindings`, `cluster segments`. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"

int ctl_xipsecd_ask(const char *path, const char *req, char **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t cap = 65536, len = 0;
	char *buf;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		ctl_err("control socket path too long: %s", path);
		return CTL_EXIT_USAGE;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ctl_err("cannot reach xipsecd at %s: %s (is it running? --ctl PATH names its socket)", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return CTL_EXIT_ERR;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) || (buf = malloc(cap + 1)) == NULL) {
		ctl_err("%s: %s", path, strerror(errno));
		close(fd);
		return CTL_EXIT_ERR;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		/* a wedged daemon must not wedge the command */
		if (poll(&pf, 1, 5000) <= 0) {
			ctl_err("%s: no answer from xipsecd within 5 s", path);
			break;
		}
		n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = 0;
	if (!len) {
		ctl_err("%s: no answer from xipsecd", path);
		free(buf);
		return CTL_EXIT_ERR;
	}
	*out = buf;
	return CTL_EXIT_OK;
}
