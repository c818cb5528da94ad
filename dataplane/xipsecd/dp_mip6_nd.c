/* dataplane/xipsecd/dp_mip6_nd.c: proxy Neighbor Discovery for the Mobile IPv6 home agent (RFC 6275
 * section 10.4.1), on the control thread: while a mobile node is away, the kernel answers Neighbor
 * Solicitations for its home address on the home link (a proxy neighbour entry over rtnetlink, the
 * sysctls that make the kernel do so), and the home agent announces itself for that address with a
 * few unsolicited Neighbor Advertisements so that the link's caches move over at once. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <netinet/icmp6.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dataplane/xipsecd/dp_mip6.h"

static void sysctl_set(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, v, strlen(v)) < 0)
		dp_log(LOG_WARNING, "home agent: cannot set %s to %s: %s", path, v, strerror(errno));
	if (fd >= 0)
		close(fd);
}

void dp_mip6_nd_open(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	m->nd_fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
	m->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (m->nd_fd >= 0) {
		int hops = 255, ifi = ctx->ifc[DP_IN].ifindex, off = 0;
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof(hops));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifi, sizeof(ifi));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &off, sizeof(off));
	}
	if (m->nl_fd >= 0) {
		struct timeval tv = { .tv_sec = 1 };
		setsockopt(m->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
}

/* The home link's sysctls proxy ND needs and the values they take. The kernel answers for proxied
 * addresses only on a router's interface; the gateway's forwarding stays xipsecd's (all.forwarding
 * is untouched). */
static const struct {
	const char *dir, *name, *v;
} nd_sysctl[ND_SYSCTLS] = {
	{ "conf", "proxy_ndp", "1" },
	{ "neigh", "proxy_delay", "0" },
	{ "conf", "forwarding", "1" },
};

static void nd_path(char *p, size_t len, const struct dp_ctx *ctx, unsigned i)
{
	snprintf(p, len, "/proc/sys/net/ipv6/%s/%s/%s", nd_sysctl[i].dir, ctx->ifc[DP_IN].name,
		 nd_sysctl[i].name);
}

void dp_mip6_nd_link(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	char p[128];

	m->home_ifindex = ctx->ifc[DP_IN].ifindex;
	for (unsigned i = 0; i < ND_SYSCTLS; i++) {
		nd_path(p, sizeof(p), ctx, i);
		/* what was there before, put back when the home agent goes (dp_mip6_nd_unlink) */
		if (!m->nd_linked) {
			int fd = open(p, O_RDONLY | O_CLOEXEC);
			ssize_t r = fd >= 0 ? read(fd, m->nd_saved[i], sizeof(m->nd_saved[i]) - 1) : -1;

			m->nd_saved[i][r > 0 ? r : 0] = 0;
			if (fd >= 0)
				close(fd);
		}
		sysctl_set(p, nd_sysctl[i].v);
	}
	m->nd_linked = true;
}

void dp_mip6_nd_unlink(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	char p[128];

	if (!m->nd_linked)
		return;
	for (unsigned i = 0; i < ND_SYSCTLS; i++) {
		m->nd_saved[i][strcspn(m->nd_saved[i], "\n")] = 0;
		if (!m->nd_saved[i][0])
			continue;  /* unreadable: left as it is */
		nd_path(p, sizeof(p), ctx, i);
		sysctl_set(p, m->nd_saved[i]);
	}
	m->nd_linked = false;
}

void dp_mip6_ll_of(const uint8_t hoa[16], uint8_t ll[16])
{
	memset(ll, 0, 8);
	ll[0] = 0xfe;
	ll[1] = 0x80;
	memcpy(ll + 8, hoa + 8, 8);
}

/* The kernel answers Neighbor Solicitations for a proxied address on the home link (a proxy
 * neighbour entry, as XFRM-based home agents use), with our link-layer address. */
int dp_mip6_proxy_neigh(struct dp_mip6 *m, const uint8_t hoa[16], bool add)
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
		struct rtattr ra;
		uint8_t addr[16];
	} req;
	char ans[256];

	if (m->nl_fd < 0 || m->home_ifindex <= 0)
		return -ENODEV;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = add ? RTM_NEWNEIGH : RTM_DELNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	req.nh.nlmsg_seq = ++m->nl_seq;
	req.nd.ndm_family = AF_INET6;
	req.nd.ndm_ifindex = m->home_ifindex;
	req.nd.ndm_state = NUD_PERMANENT;
	req.nd.ndm_flags = NTF_PROXY;
	req.ra.rta_type = NDA_DST;
	req.ra.rta_len = RTA_LENGTH(16);
	memcpy(req.addr, hoa, 16);
	if (send(m->nl_fd, &req, sizeof(req), 0) < 0)
		return -errno;
	for (int tries = 0; tries < 4; tries++) {
		ssize_t n = recv(m->nl_fd, ans, sizeof(ans), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)ans;

		if (n < (ssize_t)sizeof(*h))
			return n < 0 ? -errno : -EIO;
		if (h->nlmsg_seq != m->nl_seq || h->nlmsg_type != NLMSG_ERROR)
			continue;
		int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		return e == -ENOENT && !add ? 0 : e;
	}
	return -EIO;
}

/* An unsolicited Neighbor Advertisement for the home address to all nodes on the home link: target
 * the home address, Override set, Router and Solicited clear, our link-layer address; hop limit 255
 * (RFC 4861 section 7.1.2); the kernel fills in the source and the checksum. */
static int send_na(struct dp_ctx *ctx, const uint8_t hoa[16])
{
	struct dp_mip6 *m = M(ctx);
	uint8_t b[32];
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_scope_id = (uint32_t)m->home_ifindex };

	if (m->nd_fd < 0)
		return -ENODEV;
	memset(b, 0, sizeof(b));
	b[0] = ND_NEIGHBOR_ADVERT;
	b[4] = 0x20; /* Override */
	memcpy(b + 8, hoa, 16);
	b[24] = ND_OPT_TARGET_LINKADDR;
	b[25] = 1;
	memcpy(b + 26, ctx->ifc[DP_IN].mac, 6);
	inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
	if (sendto(m->nd_fd, b, sizeof(b), 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)sizeof(b))
		return -errno;
	m->na_sent++;
	return 0;
}

void dp_mip6_na_schedule(struct dp_mip6 *m, const uint8_t hoa[16], bool on)
{
	for (size_t i = 0; i < m->n_na; i++)
		if (!memcmp(m->na[i].hoa, hoa, 16)) {
			m->na[i] = m->na[--m->n_na];
			break;
		}
	if (!on)
		return;
	if (m->n_na == m->cap_na) {
		size_t cap = m->cap_na ? 2 * m->cap_na : 16;
		struct na_due *v = realloc(m->na, cap * sizeof(*v));
		if (!v)
			return;
		m->na = v;
		m->cap_na = cap;
	}
	memcpy(m->na[m->n_na].hoa, hoa, 16);
	m->na[m->n_na].left = NA_REPEAT;
	m->na[m->n_na].due_ms = 0;
	m->n_na++;
}

void dp_mip6_na_run(struct dp_ctx *ctx, uint64_t now)
{
	struct dp_mip6 *m = M(ctx);

	for (size_t i = 0; i < m->n_na;) {
		struct na_due *d = &m->na[i];
		if (d->due_ms > now) {
			i++;
			continue;
		}
		if (send_na(ctx, d->hoa))
			m->nd_errors++;
		if (--d->left == 0) {
			*d = m->na[--m->n_na];
			continue;
		}
		d->due_ms = now + NA_GAP_MS;
		i++;
	}
}
