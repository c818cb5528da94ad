/* dataplane/xipsecd/dp_nl.c: everything xipsecd asks the kernel over rtnetlink (doc/architecture.md rule 8: the
 * kernel keeps the control plane): the route and neighbour for a destination, asking the kernel to
 * resolve a neighbour, the local addresses, and change notifications that invalidate caches. Plain
 * rtnetlink without libmnl: a handful of fixed requests. */
#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_arp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dataplane/xipsecd/dp.h"

#define NL_BUF 16384

int dp_nl_open(int groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = (uint32_t)groups };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int one = 1;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* Answers carry only errors for requests; we check them. */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (groups) {
		int sz = 1 << 20;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	return fd;
}

static void add_attr(struct nlmsghdr *n, unsigned type, const void *data, unsigned len)
{
	struct rtattr *rta = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = (unsigned short)type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static unsigned alen(uint8_t family)
{
	return family == AF_INET ? 4 : 16;
}

/* Send a request and read until its answer: cb for each message of type `want`; returns 0, or the
 * negative errno the kernel answered. */
static int transact(int fd, uint32_t *seq, struct nlmsghdr *req, int want,
		    int (*cb)(struct nlmsghdr *, void *), void *arg)
{
	char buf[NL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	uint32_t s = ++*seq;
	bool dump = req->nlmsg_flags & NLM_F_DUMP;

	req->nlmsg_seq = s;
	if (sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != s)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == want && cb) {
				int r = cb(h, arg);

				if (r < 0)
					return r;
			}
			if (!dump)
				return 0;
		}
	}
}

struct route_ans {
	uint8_t family;
	int oif;
	uint8_t *nh;
	bool have_gw;
	uint8_t type;
};

static int route_cb(struct nlmsghdr *h, void *arg)
{
	struct route_ans *a = arg;
	struct rtmsg *rt = NLMSG_DATA(h);
	int len = (int)RTM_PAYLOAD(h);

	a->type = rt->rtm_type;
	for (struct rtattr *r = RTM_RTA(rt); RTA_OK(r, len); r = RTA_NEXT(r, len)) {
		if (r->rta_type == RTA_OIF && RTA_PAYLOAD(r) >= 4)
			memcpy(&a->oif, RTA_DATA(r), 4);
		else if (r->rta_type == RTA_GATEWAY && RTA_PAYLOAD(r) == alen(a->family)) {
			memcpy(a->nh, RTA_DATA(r), alen(a->family));
			a->have_gw = true;
		}
	}
	return 0;
}

static int route_get(int fd, uint32_t *seq, uint8_t family, const uint8_t *dst, int *oif,
		     uint8_t *nh, uint8_t *type)
{
	/* one buffer for header and attributes: the compiler sees the room the attributes use */
	char buf[NLMSG_SPACE(sizeof(struct rtmsg)) + 64] __attribute__((aligned(NLMSG_ALIGNTO))) = { 0 };
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	struct rtmsg *r = NLMSG_DATA(n);
	struct route_ans a = { .family = family, .nh = nh };
	int err;

	n->nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	n->nlmsg_type = RTM_GETROUTE;
	n->nlmsg_flags = NLM_F_REQUEST;
	r->rtm_family = family;
	r->rtm_dst_len = (unsigned char)(alen(family) * 8);
	add_attr(n, RTA_DST, dst, alen(family));
	if (*oif)
		add_attr(n, RTA_OIF, oif, 4);
	err = transact(fd, seq, n, RTM_NEWROUTE, route_cb, &a);
	if (err)
		return err;
	if (!a.have_gw)
		memcpy(nh, dst, alen(family));
	*oif = a.oif;
	*type = a.type;
	return 0;
}

int dp_nl_route_get(int fd, uint32_t *seq, uint8_t family, const uint8_t *dst, int *oif,
		    uint8_t *nh, uint8_t *type)
{
	*oif = 0;
	return route_get(fd, seq, family, dst, oif, nh, type);
}

int dp_nl_route_get_oif(int fd, uint32_t *seq, uint8_t family, const uint8_t *dst, int *oif,
			uint8_t *nh, uint8_t *type)
{
	return route_get(fd, seq, family, dst, oif, nh, type);
}

struct neigh_ans {
	uint8_t *mac;
	bool ok;
};

static int neigh_cb(struct nlmsghdr *h, void *arg)
{
	struct neigh_ans *a = arg;
	struct ndmsg *nd = NLMSG_DATA(h);
	int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
	const uint16_t usable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
				NUD_NOARP;

	if (!(nd->ndm_state & usable))
		return 0;
	for (struct rtattr *r = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(r, len); r = RTA_NEXT(r, len))
		if (r->rta_type == NDA_LLADDR && RTA_PAYLOAD(r) == 6) {
			memcpy(a->mac, RTA_DATA(r), 6);
			a->ok = true;
		}
	return 0;
}

static struct nlmsghdr *neigh_req(char *buf, uint16_t type, uint16_t flags, uint8_t family,
				  int ifindex, const uint8_t *addr)
{
	struct nlmsghdr *n = (struct nlmsghdr *)buf;
	struct ndmsg *nd = NLMSG_DATA(n);

	n->nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	n->nlmsg_type = type;
	n->nlmsg_flags = flags;
	nd->ndm_family = family;
	nd->ndm_ifindex = ifindex;
	add_attr(n, NDA_DST, addr, alen(family));
	return n;
}

int dp_nl_neigh_get(int fd, uint32_t *seq, uint8_t family, int ifindex, const uint8_t *addr,
		    uint8_t *mac)
{
	char buf[NLMSG_SPACE(sizeof(struct ndmsg)) + 64] __attribute__((aligned(NLMSG_ALIGNTO))) = { 0 };
	struct nlmsghdr *n = neigh_req(buf, RTM_GETNEIGH, NLM_F_REQUEST, family, ifindex, addr);
	struct neigh_ans a = { .mac = mac };
	int err;

	err = transact(fd, seq, n, RTM_NEWNEIGH, neigh_cb, &a);
	if (err)
		return err;
	return a.ok ? 0 : -ENOENT;
}

int dp_nl_neigh_resolve(int fd, uint32_t *seq, uint8_t family, int ifindex, const uint8_t *addr)
{
	char buf[NLMSG_SPACE(sizeof(struct ndmsg)) + 64] __attribute__((aligned(NLMSG_ALIGNTO))) = { 0 };
	struct nlmsghdr *n = neigh_req(buf, RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE,
				       family, ifindex, addr);
	struct ndmsg *nd = NLMSG_DATA(n);

	nd->ndm_state = NUD_NONE;
	/* NTF_USE: the kernel treats it as if a packet were waiting and starts (or refreshes)
	 * resolution, exactly what our traffic, invisible to it, needs. */
	nd->ndm_flags = NTF_USE;
	return transact(fd, seq, n, 0, NULL, NULL);
}

struct addr_walk {
	void (*cb)(uint8_t family, const uint8_t *addr, const struct dp_nl_addr_info *info, void *arg);
	void *arg;
};

static int addr_cb(struct nlmsghdr *h, void *arg)
{
	struct addr_walk *w = arg;
	struct ifaddrmsg *ifa = NLMSG_DATA(h);
	int len = (int)IFA_PAYLOAD(h);

	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return 0;
	for (struct rtattr *r = IFA_RTA(ifa); RTA_OK(r, len); r = RTA_NEXT(r, len))
		if ((r->rta_type == IFA_LOCAL || r->rta_type == IFA_ADDRESS ||
		     r->rta_type == IFA_BROADCAST || r->rta_type == IFA_ANYCAST) &&
		    RTA_PAYLOAD(r) == alen(ifa->ifa_family)) {
			struct dp_nl_addr_info info = {
				.ifindex = (int)ifa->ifa_index, .scope = ifa->ifa_scope,
				/* the interface's own address: IFA_LOCAL for IPv4, IFA_ADDRESS for IPv6 */
				.own = ifa->ifa_family == AF_INET ? r->rta_type == IFA_LOCAL :
				       r->rta_type == IFA_ADDRESS,
			};
			w->cb(ifa->ifa_family, RTA_DATA(r), &info, w->arg);
		}
	return 0;
}

int dp_nl_addrs(int fd, uint32_t *seq,
		void (*cb)(uint8_t family, const uint8_t *addr, const struct dp_nl_addr_info *info, void *arg),
		void *arg)
{
	struct {
		struct nlmsghdr n;
		struct ifaddrmsg a;
	} req = {
		.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
		.n.nlmsg_type = RTM_GETADDR,
		.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		.a.ifa_family = AF_UNSPEC,
	};
	struct addr_walk w = { cb, arg };
	int err;

	/* IFA_ADDRESS of a point-to-point link is the peer: harmless, it only sends that address's
	 * traffic to the kernel, which is where peer-to-peer traffic of such a link belongs. */
	err = transact(fd, seq, &req.n, RTM_NEWADDR, addr_cb, &w);
	if (err)
		return err;
	/* The IPv6 anycast addresses the kernel delivers locally (a router's subnet anycast, the
	 * Mobile IPv6 Home-Agents anycast address the home agent joins): the kernel's, like the
	 * unicast ones. A dump answers with RTM_GETANYCAST messages, IFA_ANYCAST attributes. */
	req.n.nlmsg_type = RTM_GETANYCAST;
	req.a.ifa_family = AF_INET6;
	return transact(fd, seq, &req.n, RTM_GETANYCAST, addr_cb, &w);
}

int dp_nl_monitor_read(int fd)
{
	char buf[NL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	int chg = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == ENOBUFS) /* lost notifications: assume everything changed */
				chg |= DP_NL_CHG_ROUTE | DP_NL_CHG_ADDR | DP_NL_CHG_LINK;
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			break;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n);
		     h = NLMSG_NEXT(h, n)) {
			switch (h->nlmsg_type) {
			case RTM_NEWROUTE: case RTM_DELROUTE:
			case RTM_NEWNEIGH: case RTM_DELNEIGH:
				chg |= DP_NL_CHG_ROUTE;
				break;
			case RTM_NEWADDR: case RTM_DELADDR:
				chg |= DP_NL_CHG_ADDR | DP_NL_CHG_ROUTE;
				break;
			case RTM_NEWLINK: case RTM_DELLINK:
				chg |= DP_NL_CHG_LINK | DP_NL_CHG_ROUTE;
				break;
			default:
				break;
			}
		}
	}
	return chg;
}

int dp_if_info(const char *name, struct dp_iface *ifc)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	ifc->ifindex = (int)if_nametoindex(name);
	if (!ifc->ifindex) {
		err = -ENODEV;
		goto out;
	}
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		err = -EPROTONOSUPPORT;
		goto out;
	}
	memcpy(ifc->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	atomic_store(&ifc->mtu, (uint32_t)ifr.ifr_mtu);
out:
	close(fd);
	return err;
}
