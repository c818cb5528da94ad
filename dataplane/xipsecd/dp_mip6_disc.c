/* dataplane/xipsecd/dp_mip6_disc.c: Dynamic Home Agent Address Discovery on the control thread (RFC
 * 6275 section 10.5): the home agents list of the home link, learnt from the Router Advertisements
 * heard there (the home agents' own radvd, ours included: the kernel loops our RAs back to this
 * socket), and the DHAAD Reply to a request sent to a home prefix's Home-Agents anycast address.
 * libmip6 (mip6_disc.h) holds the list and writes the reply; this file owns the socket.
 *
 * Both messages are control plane and stay with the kernel (doc/architecture.md rule 8): RAs are
 * link-local multicast, which the XDP program passes; a DHAAD Request comes from a mobile node away
 * from home, in clear (RFC 3776 protects no DHAAD message), to the anycast address, which this file
 * joins on the home link (IPV6_JOIN_ANYCAST: the kernel then delivers it locally) and which the
 * gateway's address set then holds (dp_nl_addrs lists the joined anycast addresses), so the XDP
 * program passes it to the kernel, through the gateway's inbound SPD (local_spd), rather than to
 * the workers' forwarding. The reply leaves through the kernel's routing, as IKE does, from the
 * home agent's address.
 *
 * What a malformed or unexpected message costs: one read and a counter (an RA whose hop limit is
 * not 255 came from off the link, RFC 4861 section 6.1.2, and one from another interface is not the
 * home link's); the list has a fixed size, so a flood of RAs cannot grow it. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <netinet/icmp6.h>
#include <sys/socket.h>

#include "dataplane/xipsecd/dp_mip6.h"

#define DISC_BURST 64u   /* messages taken per round: the rest wait in the socket for the next */

void dp_mip6_disc_open(struct dp_mip6 *m)
{
	struct icmp6_filter f;
	int on = 1;

	m->disc_fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6);
	if (m->disc_fd < 0) {
		dp_log(LOG_WARNING, "home agent: no ICMPv6 socket, no home agent discovery: %s",
		       strerror(errno));
		return;
	}
	ICMP6_FILTER_SETBLOCKALL(&f);
	ICMP6_FILTER_SETPASS(MIP6_ICMP_RA, &f);
	ICMP6_FILTER_SETPASS(MIP6_ICMP_DHAAD_REQ, &f);
	if (setsockopt(m->disc_fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f)) ||
	    setsockopt(m->disc_fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) ||
	    setsockopt(m->disc_fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof(on))) {
		dp_log(LOG_WARNING, "home agent: ICMPv6 socket options refused, no home agent "
		       "discovery: %s", strerror(errno));
		close(m->disc_fd);
		m->disc_fd = -1;
	}
}

/* The anycast addresses follow the home prefixes of the running home agent (none when it is off).
 * The gateway's address set is read again after a change, so the XDP program sends what is
 * addressed to them to the kernel. One that cannot be joined is logged once, when the prefixes
 * change, not at every round. */
static void anycast_follow(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	uint8_t want[SADB_HA_MAX * SADB_HA_MAX_PREFIX][16];
	uint16_t of[SADB_HA_MAX * SADB_HA_MAX_PREFIX];
	unsigned n = 0;
	int err;

	for (unsigned r = 0; m->ha && r < m->n_rec; r++)
		for (unsigned i = 0; i < m->rec[r].n_prefix && i < SADB_HA_MAX_PREFIX; i++) {
			of[n] = (uint16_t)(r << 8 | i);
			mip6_ha_anycast(m->rec[r].prefix[i].a.b, m->rec[r].plen[i], want[n++]);
		}
	if (n == m->n_anycast && !memcmp(want, m->anycast, n * 16u))
		return;
	for (unsigned i = 0; i < m->n_anycast; i++) {
		struct ipv6_mreq mr = { .ipv6mr_interface = (unsigned)ctx->ifc[DP_IN].ifindex };

		memcpy(&mr.ipv6mr_multiaddr, m->anycast[i], 16);
		if (m->anycast_joined[i])
			setsockopt(m->disc_fd, IPPROTO_IPV6, IPV6_LEAVE_ANYCAST, &mr, sizeof(mr));
	}
	for (unsigned i = 0; i < n; i++) {
		struct ipv6_mreq mr = { .ipv6mr_interface = (unsigned)ctx->ifc[DP_IN].ifindex };
		char b[INET6_ADDRSTRLEN];

		memcpy(&mr.ipv6mr_multiaddr, want[i], 16);
		memcpy(m->anycast[i], want[i], 16);
		m->anycast_of[i] = of[i];
		m->anycast_joined[i] = !setsockopt(m->disc_fd, IPPROTO_IPV6, IPV6_JOIN_ANYCAST, &mr,
						   sizeof(mr));
		if (!m->anycast_joined[i])
			dp_log(LOG_WARNING, "home agent: cannot join the Home-Agents anycast address %s "
			       "on %s, no DHAAD there: %s", a6(want[i], b), ctx->ifc[DP_IN].name,
			       strerror(errno));
	}
	m->n_anycast = n;
	err = dp_xdp_sync_addrs(ctx);
	if (err)
		dp_log(LOG_WARNING, "home agent: cannot update local addresses: %s", strerror(-err));
}

/* The home prefix whose anycast address dst is: record << 8 | its index there, or -1. */
static int anycast_prefix(const struct dp_mip6 *m, const uint8_t dst[16])
{
	for (unsigned i = 0; i < m->n_anycast; i++)
		if (m->anycast_joined[i] && !memcmp(m->anycast[i], dst, 16))
			return m->anycast_of[i];
	return -1;
}

static void dhaad_answer(struct dp_mip6 *m, const struct sockaddr_in6 *from, const uint8_t dst[16],
			 const uint8_t *req, size_t len)
{
	uint8_t rep[MIP6_DHAAD_HDR + 16 * MIP6_DHAAD_MAX_ADDRS];
	char cb[CMSG_SPACE(sizeof(struct in6_pktinfo))] = { 0 };
	struct iovec iov;
	struct msghdr mh = { .msg_name = (void *)from, .msg_namelen = sizeof(*from), .msg_iov = &iov,
			     .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	struct in6_pktinfo pi = { .ipi6_ifindex = 0 };
	char b[INET6_ADDRSTRLEN];
	const struct sadb_home_agent *rec;
	int p = anycast_prefix(m, dst), n;

	if (p < 0 || !m->ha) {
		m->dhaad_dropped++;
		return;
	}
	rec = &m->rec[p >> 8];
	p &= 0xff;
	n = mip6_dhaad_reply(&m->halist, rec->addr.a.b, rec->prefix[p].a.b, rec->plen[p], req, len, rep,
			     sizeof(rep));
	if (n < 0) {
		m->dhaad_dropped++;
		return;
	}
	/* from the home agent's address (section 10.5), whichever address the request reached */
	memcpy(&pi.ipi6_addr, rec->addr.a.b, 16);
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	iov.iov_base = rep;
	iov.iov_len = (size_t)n;
	if (sendmsg(m->disc_fd, &mh, 0) < 0) {
		dp_log(LOG_INFO, "home agent: DHAAD Reply to %s not sent: %s",
		       a6(from->sin6_addr.s6_addr, b), strerror(errno));
		m->dhaad_dropped++;
		return;
	}
	m->dhaad_replies++;
	dp_log(LOG_DEBUG, "home agent: DHAAD Reply to %s: %d home agent(s)",
	       a6(from->sin6_addr.s6_addr, b), (n - (int)MIP6_DHAAD_HDR) / 16);
}

void dp_mip6_disc_run(struct dp_ctx *ctx, uint64_t now)
{
	struct dp_mip6 *m = M(ctx);

	if (m->disc_fd < 0)
		return;
	anycast_follow(ctx, m);
	for (unsigned k = 0; k < DISC_BURST; k++) {
		uint8_t buf[1500];
		char cb[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(int))];
		struct sockaddr_in6 from;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				     .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct in6_pktinfo pi = { .ipi6_ifindex = 0 };
		int hops = -1;
		ssize_t n = recvmsg(m->disc_fd, &mh, 0);

		if (n < 0)
			break;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != IPPROTO_IPV6)
				continue;
			if (c->cmsg_type == IPV6_PKTINFO && c->cmsg_len >= CMSG_LEN(sizeof(pi)))
				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			else if (c->cmsg_type == IPV6_HOPLIMIT && c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&hops, CMSG_DATA(c), sizeof(int));
		}
		if (n < 1 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
			continue;
		if (buf[0] == MIP6_ICMP_RA) {
			if (hops != 255 || (int)pi.ipi6_ifindex != ctx->ifc[DP_IN].ifindex)
				m->halist.ra_bad++;
			else
				mip6_halist_ra(&m->halist, from.sin6_addr.s6_addr, buf, (size_t)n, now);
		} else if (buf[0] == MIP6_ICMP_DHAAD_REQ) {
			m->dhaad_requests++;
			dhaad_answer(m, &from, pi.ipi6_addr.s6_addr, buf, (size_t)n);
		}
	}
	mip6_halist_expire(&m->halist, now);
}

/* ---- Mobile Prefix Discovery (RFC 6275 section 10.6) ---- */

/* The home prefixes' lifetimes in an advertisement: the home agent does not advertise them on the
 * home link itself (radvd does), so it gives RFC 4861 section 6.2.1's defaults for a prefix, which
 * a mobile node only uses to know when to ask again. */
#define MPA_VALID_S     2592000u
#define MPA_PREFERRED_S 604800u

bool dp_mip6_mps(struct dp_ctx *ctx, const struct mq_msg *q)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_mpa_params p = { .valid_s = MPA_VALID_S, .preferred_s = MPA_PREFERRED_S };
	struct mip6_mps s;
	const struct sadb_home_agent *rec;
	const struct mn_cfg *mn;
	const struct mip6_binding *b;
	uint8_t pkt[MIP6_MPA_MAX_LEN];
	char h[INET6_ADDRSTRLEN];
	int r = mip6_mps_parse(q->pkt, q->len, &s), n;

	if (r == -ENOMSG)
		return false;
	m->mps_received++;
	/* the solicitation's SA must be its home address's own signalling SA (the SA's selector has
	 * already bound the Home Address option to its keys), and the node registered: the answer goes
	 * to its binding's care-of address (section 10.6), never to an address only this packet named */
	if (r || !(mn = dp_mip6_mn_find(m->mns, m->n_mns, s.hoa)) || mn->id[ROLE_BU] != q->sa_id ||
	    !(b = mip6_ha_lookup(m->ha, s.hoa))) {
		m->mps_dropped++;
		dp_log(LOG_INFO, "home agent: Mobile Prefix Solicitation%s%s dropped: %s", r ? "" : " of ",
		       r ? "" : a6(s.hoa, h), r ? "malformed" : "not from a registered mobile node's SA");
		return true;
	}
	/* the home agent address and prefixes of the node's own record (RFC 6275 11.4.3: its home
	 * link's prefixes) */
	rec = dp_mip6_rec_of(m, s.hoa);
	memcpy(p.src, rec->addr.a.b, 16);
	memcpy(p.dst, b->coa, 16);
	memcpy(p.hoa, s.hoa, 16);
	p.id = s.id;
	for (unsigned i = 0; i < rec->n_prefix && i < MIP6_MPA_MAX_PREFIXES; i++) {
		memcpy(p.prefix[i].addr, rec->prefix[i].a.b, 16);
		p.prefix[i].len = rec->plen[i];
		p.n_prefix++;
	}
	n = mip6_build_mpa(pkt, sizeof(pkt), &p);
	if (n < 0) {
		m->mps_dropped++;
		return true;
	}
	/* worker 0 protects it with the node's outbound signalling SA (the policy of ICMPv6 147 to
	 * the home address, the type 2 routing header's), as it does a Binding Acknowledgement */
	dp_mip6_out_push(ctx, pkt, (uint32_t)n);
	m->mpa_sent++;
	return true;
}
