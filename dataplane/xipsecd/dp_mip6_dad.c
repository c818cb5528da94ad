/* dataplane/xipsecd/dp_mip6_dad.c: Duplicate Address Detection for a home address before the home
 * agent proxies it (RFC 6275 section 10.4.1, RFC 4862 section 5.4), on the control thread. A Binding
 * Update that creates a binding is decided at once (libmip6), but its acknowledgement waits here:
 * the home agent sends a Neighbor Solicitation for the home address (and, with the L bit, for the
 * link-local address of the same interface identifier) from the unspecified address to its
 * solicited-node group on the home link, and listens for RetransTimer (--mip6-dad-ms, 1 s by
 * default). An advertisement for it (a host on the home link uses the address) or another node's
 * solicitation for it from the unspecified address (one doing its own detection) ends the wait:
 * the binding goes again and the mobile node gets status 134, with no proxy entry and no tunnel
 * moved. Silence until the end: the binding is brought up (proxy entries, tunnel, advertisements)
 * and acknowledged as any other. Nothing waits on the thread: each round looks at what arrived
 * and at the deadlines (dp_mip6_dad_run).
 *
 * While a detection runs, a later Binding Update of the same mobile node that the rules accept
 * replaces the one waiting (its answer is the one given when the detection ends, its care-of
 * address the one the tunnel follows); a refused one is answered at once; a deregistration ends
 * the wait and is handled as usual. A registration for a home address already bound skips the
 * detection: it is the home agent that defends the address then.
 *
 * Sockets: the solicitation leaves through a packet socket on the home link (the kernel would not
 * send from the unspecified address); advertisements and solicitations are read from a raw ICMPv6
 * socket bound to the home link that passes only those two types, and only with hop limit 255
 * (RFC 4861 section 7.1). Neither can be had: detection is skipped (logged and counted as
 * dad_skipped), the home agent still serves. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "dataplane/xipsecd/dp_mip6.h"

#define DAD_MS_DEFAULT 1000u /* RFC 4861's RetransTimer */

void dp_mip6_dad_open(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	const char *ifn = ctx->ifc[DP_IN].name;
	struct icmp6_filter f;
	int on = 1;

	m->dad_ms = ctx->cfg.mip6_dad_ms < 0 ? DAD_MS_DEFAULT : (unsigned)ctx->cfg.mip6_dad_ms;
	m->dad_tx = m->dad_rx = -1;
	if (!m->dad_ms)
		return;
	m->dad_tx = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	m->dad_rx = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMPV6);
	ICMP6_FILTER_SETBLOCKALL(&f);
	ICMP6_FILTER_SETPASS(ND_NEIGHBOR_ADVERT, &f);
	ICMP6_FILTER_SETPASS(ND_NEIGHBOR_SOLICIT, &f);
	if (m->dad_tx < 0 || m->dad_rx < 0 ||
	    setsockopt(m->dad_rx, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f)) < 0 ||
	    setsockopt(m->dad_rx, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof(on)) < 0 ||
	    setsockopt(m->dad_rx, SOL_SOCKET, SO_BINDTODEVICE, ifn, (socklen_t)strlen(ifn)) < 0) {
		dp_log(LOG_WARNING, "home agent: no Duplicate Address Detection on %s: %s", ifn, strerror(errno));
		dp_mip6_dad_close(m);
	}
}

void dp_mip6_dad_close(struct dp_mip6 *m)
{
	if (m->dad_tx >= 0)
		close(m->dad_tx);
	if (m->dad_rx >= 0)
		close(m->dad_rx);
	m->dad_tx = m->dad_rx = -1;
	free(m->dad);
	m->dad = NULL;
	m->n_dad = m->cap_dad = 0;
}

static int send_ns(struct dp_ctx *ctx, const uint8_t target[16])
{
	struct dp_mip6 *m = M(ctx);
	uint8_t b[MIP6_DAD_NS_LEN];
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET, .sll_protocol = htons(ETHERTYPE_IPV6),
		.sll_ifindex = ctx->ifc[DP_IN].ifindex, .sll_halen = 6,
		/* the solicited-node group's MAC address (RFC 2464 section 7) */
		.sll_addr = { 0x33, 0x33, 0xff, target[13], target[14], target[15] },
	};
	int n = mip6_build_dad_ns(b, sizeof(b), target);

	if (n < 0)
		return n;
	if (sendto(m->dad_tx, b, (size_t)n, 0, (struct sockaddr *)&to, sizeof(to)) != n)
		return -errno;
	m->dad_ns_sent++;
	return 0;
}

static struct dad_wait *find(struct dp_mip6 *m, const uint8_t hoa[16])
{
	for (size_t i = 0; i < m->n_dad; i++)
		if (!memcmp(m->dad[i].hoa, hoa, 16))
			return &m->dad[i];
	return NULL;
}

bool dp_mip6_dad_hold(struct dp_ctx *ctx, const struct mip6_ha_result *res)
{
	struct dp_mip6 *m = M(ctx);
	struct dad_wait *w = find(m, res->hoa);
	const struct mip6_binding *b;
	char h[INET6_ADDRSTRLEN];

	if (w) {
		if (res->change == MIP6_CHANGE_DELETE) {
			*w = m->dad[--m->n_dad];  /* superseded: the deregistration is answered */
			return false;
		}
		if (res->ba.status >= 128)
			return false;
		w->res = *res;  /* the latest accepted is the one answered */
		w->res.change = MIP6_CHANGE_NEW;
		return true;
	}
	if (res->change != MIP6_CHANGE_NEW || !m->dad_ms)
		return false;
	if (m->dad_tx < 0 || m->dad_rx < 0) {
		m->dad_skipped++;
		return false;
	}
	if (m->n_dad == m->cap_dad) {
		size_t cap = m->cap_dad ? 2 * m->cap_dad : 16;
		struct dad_wait *v = realloc(m->dad, cap * sizeof(*v));
		if (!v) {
			m->dad_skipped++;
			return false;
		}
		m->dad = v;
		m->cap_dad = cap;
	}
	w = &m->dad[m->n_dad];
	memset(w, 0, sizeof(*w));
	memcpy(w->hoa, res->hoa, 16);
	w->res = *res;
	b = mip6_ha_lookup(m->ha, res->hoa);
	w->ll = b && (b->bu_flags & MIP6_BU_L);
	dp_mip6_ll_of(res->hoa, w->ll_addr);
	w->due_ms = now_ms() + m->dad_ms;
	if (send_ns(ctx, w->hoa) || (w->ll && send_ns(ctx, w->ll_addr))) {
		m->nd_errors++;
		dp_log(LOG_WARNING, "home agent: cannot send a Neighbor Solicitation for %s: %s",
		       a6(res->hoa, h), strerror(errno));
	}
	m->n_dad++;
	m->dad_started++;
	return true;
}

/* What arrived on the home link: an advertisement for an address under detection, or another
 * node's solicitation for it from the unspecified address, marks it duplicate. */
static void dad_read(struct dp_mip6 *m)
{
	static const uint8_t any[16];

	for (int i = 0; i < 64; i++) {
		uint8_t b[256], cb[CMSG_SPACE(sizeof(int))];
		struct sockaddr_in6 from;
		struct iovec iov = { b, sizeof(b) };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
		                     .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb) };
		ssize_t n = recvmsg(m->dad_rx, &mh, 0);
		int hops = -1;

		if (n < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)
				memcpy(&hops, CMSG_DATA(c), sizeof(hops));
		if (n < 24 || hops != 255 || b[1] != 0)
			continue;
		if (b[0] == ND_NEIGHBOR_SOLICIT && memcmp(&from.sin6_addr, any, 16))
			continue;  /* an ordinary resolution, not a detection */
		for (size_t k = 0; k < m->n_dad; k++) {
			struct dad_wait *w = &m->dad[k];
			if (!memcmp(b + 8, w->hoa, 16) || (w->ll && !memcmp(b + 8, w->ll_addr, 16)))
				w->dup = true;
		}
	}
}

void dp_mip6_dad_run(struct dp_ctx *ctx, uint64_t now)
{
	struct dp_mip6 *m = M(ctx);
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];

	if (!m->n_dad)
		return;
	if (!m->ha) {
		m->n_dad = 0;
		return;
	}
	dad_read(m);
	for (size_t i = 0; i < m->n_dad;) {
		struct dad_wait w = m->dad[i];

		if (!w.dup && w.due_ms > now) {
			i++;
			continue;
		}
		m->dad[i] = m->dad[--m->n_dad];
		if (w.dup) {
			if (mip6_ha_dad_failed(m->ha, w.hoa, &w.res))
				continue;  /* the binding went meanwhile (expired, node removed) */
			dp_log(LOG_NOTICE, "home agent: %s is in use on the home link: registration refused (134)",
			       a6(w.hoa, h));
		} else {
			if (!mip6_ha_lookup(m->ha, w.hoa))
				continue;
			m->dad_ok++;
			dp_log(LOG_NOTICE, "home agent: %s registered at %s after Duplicate Address Detection",
			       a6(w.hoa, h), a6(w.res.coa, c));
			dp_mip6_binding_up(ctx, w.hoa, w.res.coa, true);
		}
		dp_mip6_brr_track(ctx, w.hoa);
		dp_mip6_queue_ba(ctx, &w.res);
	}
}
