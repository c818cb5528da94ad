/* ipsecctl/ipsecctl_dpctl.c: what ipsecctl asks of the running xipsecd over its control socket (the
 * dataplane's own state, not the SADB's): the request and answer exchange `show bindings` shares,
 * and the cluster commands: `cluster active|standby` (the node's role, called by keepalived's notify
 * scripts) and `show cluster [--json]` (role, peer, eligibility, sync lag, last message, lease
 * headroom per SA; xipsecd writes both forms, dataplane/xipsecd/dp_cluster.c). */
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
	size_t cap = 65536, len = 0, rl = strlen(req);
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
	if (write(fd, req, rl) != (ssize_t)rl || (buf = malloc(cap + 1)) == NULL) {
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
		ctl_err("%s: no answer from xipsecd (is it stopping?)", path);
		free(buf);
		return CTL_EXIT_ERR;
	}
	*out = buf;
	return CTL_EXIT_OK;
}

int ctl_show_cluster(const struct ctl_opts *o)
{
	const char *path = o->ctl_path ? o->ctl_path : CTL_DEFAULT_XIPSECD;
	char *ans;
	int rc = ctl_xipsecd_ask(path, o->json ? "cluster\n" : "cluster text\n", &ans);

	if (rc != CTL_EXIT_OK)
		return rc;
	if (!strncmp(ans, "error:", 6)) {
		ctl_err("%s: %s", path, ans + 7);
		rc = CTL_EXIT_ERR;
	} else {
		fputs(ans, stdout);
	}
	free(ans);
	return rc;
}

int ctl_cmd_cluster(const struct ctl_opts *o, int argc, char **argv)
{
	const char *path = o->ctl_path ? o->ctl_path : CTL_DEFAULT_XIPSECD;
	char req[32], *ans;
	int rc;

	if (argc != 1 || (strcmp(argv[0], "active") && strcmp(argv[0], "standby"))) {
		ctl_err("cluster: expected 'cluster active' or 'cluster standby'");
		return CTL_EXIT_USAGE;
	}
	snprintf(req, sizeof(req), "cluster %s\n", argv[0]);
	rc = ctl_xipsecd_ask(path, req, &ans);
	if (rc != CTL_EXIT_OK)
		return rc;
	ans[strcspn(ans, "\n")] = 0;
	if (!strncmp(ans, "ok: ", 4)) {
		if (o->verbose)
			printf("%s\n", ans + 4);
	} else {
		/* refused (a reachable active peer and this node not caught up), or not clustered */
		ctl_err("cluster %s: %s", argv[0], !strncmp(ans, "error: ", 7) ? ans + 7 : ans);
		rc = CTL_EXIT_ERR;
	}
	free(ans);
	return rc;
}
