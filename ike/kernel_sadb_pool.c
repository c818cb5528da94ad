/* ike/kernel_sadb_pool.c: home addresses handed out through the IKEv2 configuration payload (RFC
 * 4877 4.3: a mobile node's CFG_REQUEST with INTERNAL_IP6_ADDRESS). swanctl.conf's pools hold the
 * range and the leases (strongSwan's own mechanism, in the vici plugin: one address per identity at a
 * time, back to the pool when the IKE SA goes). This attribute provider sits in front of them for a
 * mobile node's connection (one with a mip6- child) and lets through only an address the home agent
 * may give away:
 *  - in a home prefix of a home agent record of the SADB, neither the home agent's own address nor a
 *    subnet anycast address (RFC 4291 2.6.1; RFC 2526's, which DHAAD answers on);
 *  - not the home address of a mobile node's SA in the SADB (a manually keyed node's, or another IKE
 *    SA's): xipsecd proxies those on the home link once they are bound, and its proxy answers are
 *    not heard by this host's kernel;
 *  - not in use on the home link: a Neighbor Solicitation for it (RFC 4861 7.2.2, carrying our
 *    link-layer address) and home_address_dad_ms (default 1000 ms, RFC 4861's RetransTimer) of
 *    listening for a Neighbor Advertisement of it, or for another node's Duplicate Address Detection
 *    of it (RFC 4862 5.4.3). One probe at a time: the answers come on one socket.
 * A refused address is held while the next one is asked for (the pool would hand out the same lease
 * again), then released. The addresses that pass are recorded with the identity they were leased to
 * and the number of its leases charon holds (kept at 0 after the last release: the identity that
 * held it last may have it again while its old SAs are still being deleted). The narrow hook
 * (kernel_sadb_mip6.c) gives a mobile child whose remote_ts is dynamic only a virtual IP of its IKE
 * SA leased to its identity in this record. That record is also the veto: when no address of the
 * pools passes, this provider answers nothing and the vici plugin's own provider, next in line, may
 * still hand one out, but no CHILD_SA will cover it.
 *
 * The record is process-wide (the provider exists before the backend, which charon creates while it
 * loads its plugins, and both read it). */
#include "ike/swan.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ike/kernel_sadb_int.h"
/* after strongSwan's headers: it defines rr_type, a name resolver.h uses */
#include <netinet/icmp6.h>

#define POOL_TRIES 64     /* addresses looked at for one request before giving up */
#define DAD_MS_MAX 10000

typedef struct {
	kernel_sadb_pool_t public;
	struct sadb *db;
	int fd;                 /* raw ICMPv6: our solicitations out, NS/NA in; -1 = none */
	unsigned dad_ms;        /* 0: no probe on the home link */
	mutex_t *probe_lock;    /* one probe at a time on fd */
} private_kernel_sadb_pool_t;

/* An address that passed, the identity it went to, how many leases of it charon holds (0: none
 * now, the identity is the last one that held it). */
struct cleared {
	uint8_t a[16];
	identification_t *id;
	unsigned n;
};

static mutex_t *cleared_lock;
static linked_list_t *cleared;  /* struct cleared */

/* The calls this provider makes into the attribute manager come back to it first: it stands aside. */
static __thread bool inner;

/* The record of a, NULL if none (cleared_lock held). */
static struct cleared *cleared_find(const uint8_t a[16])
{
	enumerator_t *e = cleared->create_enumerator(cleared);
	struct cleared *c, *found = NULL;

	while (!found && e->enumerate(e, &c))
		if (!memcmp(c->a, a, 16))
			found = c;
	e->destroy(e);
	return found;
}

bool ks_pool_cleared(const uint8_t a[16], identification_t *id)
{
	struct cleared *c;
	bool ok;

	if (!cleared_lock)
		return false;
	cleared_lock->lock(cleared_lock);
	c = cleared_find(a);
	ok = c && c->n && c->id->equals(c->id, id);
	cleared_lock->unlock(cleared_lock);
	return ok;
}

/* What the record says of a for id: 1 leased to id now, 0 last held by id, -1 leased to another
 * identity now, -2 anything else. */
static int cleared_state(const uint8_t a[16], identification_t *id)
{
	struct cleared *c;
	int st = -2;

	cleared_lock->lock(cleared_lock);
	c = cleared_find(a);
	if (c && c->id->equals(c->id, id))
		st = c->n ? 1 : 0;
	else if (c && c->n)
		st = -1;
	cleared_lock->unlock(cleared_lock);
	return st;
}

static void cleared_take(const uint8_t a[16], identification_t *id)
{
	struct cleared *c;

	cleared_lock->lock(cleared_lock);
	c = cleared_find(a);
	if (!c) {
		INIT(c, .id = id->clone(id));
		memcpy(c->a, a, 16);
		cleared->insert_last(cleared, c);
	} else if (!c->id->equals(c->id, id)) { /* refused() let it through only with n == 0 */
		c->id->destroy(c->id);
		c->id = id->clone(id);
		c->n = 0;
	}
	c->n++;
	cleared_lock->unlock(cleared_lock);
}

static void cleared_give_back(const uint8_t a[16], identification_t *id)
{
	struct cleared *c;

	cleared_lock->lock(cleared_lock);
	c = cleared_find(a);
	if (c && c->n && c->id->equals(c->id, id))
		c->n--;
	cleared_lock->unlock(cleared_lock);
}

/* A connection with a mobile node's child: its virtual IPs are home addresses. */
static bool mobile_peer(peer_cfg_t *peer)
{
	enumerator_t *e = peer->create_child_cfg_enumerator(peer);
	child_cfg_t *cfg;
	bool mobile = false;

	while (!mobile && e->enumerate(e, &cfg))
		mobile = !strncmp(cfg->get_name(cfg), KS_MIP6_CHILD_PREFIX, strlen(KS_MIP6_CHILD_PREFIX));
	e->destroy(e);
	return mobile;
}

/* RFC 4291 2.6.1's subnet-router anycast (the interface identifier all zero) and, on a /64, RFC
 * 2526's reserved subnet anycast addresses (fdff:ffff:ffff:ff80 to ffff). */
static bool anycast(const uint8_t a[16], unsigned plen)
{
	static const uint8_t rsv[7] = { 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	bool zero = true;

	for (unsigned bit = plen; zero && bit < 128; bit++)
		zero = !(a[bit / 8] & (0x80 >> (bit % 8)));
	return (plen < 128 && zero) || (plen == 64 && !memcmp(a + 8, rsv, 7) && (a[15] & 0x80));
}

/* Why a may not be a home address for anyone new (NULL if it may), from the SADB; *ha gets the home
 * agent record that serves it. With own (a was the same identity's lease), IKE-keyed SAs of a do not
 * count: they are that identity's, from an IKE SA that went (charon keeps a deleted inbound SA a
 * moment: inbound_delete_delay_ms), and a node that comes back at once gets its address again. */
static const char *sadb_taken(struct sadb *db, const uint8_t a[16], struct sadb_home_agent *ha,
			      bool own)
{
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	unsigned plen = 0;
	const char *why = NULL;
	bool in = false;

	for (unsigned idx = 0; !in && idx < SADB_HA_MAX; idx++) {
		if (sadb_home_agent_get(db, idx, ha) < 0)
			continue;
		for (unsigned i = 0; !in && i < ha->n_prefix; i++)
			if (ks_in_prefix(a, &ha->prefix[i], ha->plen[i])) {
				in = true;
				plen = ha->plen[i];
			}
	}
	if (!in)
		return "not in a home prefix of the SADB's home agent records";
	if (!memcmp(a, ha->addr.a.b, 16))
		return "the home agent's own address";
	if (anycast(a, plen))
		return "a subnet anycast address (RFC 4291 2.6.1, RFC 2526)";
	while (!why && sadb_sa_next(db, &cur, &sa, &slot) == 0)
		if ((sa.flags & SADB_SAF_MOBILE) && !(own && sa.ike_id) &&
		    !memcmp(sa.dir == SADB_DIR_IN ? sa.sel.src.a.b : sa.sel.dst.a.b, a, 16))
			why = "the home address of a mobile node's SAs in the SADB";
	memwipe(&sa, sizeof(sa));
	return why;
}

/* The home link's interface (the record's, else the one holding the home agent's address): its
 * index and link-layer address. 0 or -ENOENT. */
static int home_link(const struct sadb_home_agent *ha, unsigned *ifindex, uint8_t mac[6])
{
	struct ifaddrs *ifs, *i;
	char name[IF_NAMESIZE] = "";
	bool have_mac = false;

	if (getifaddrs(&ifs) < 0)
		return -errno;
	if (ha->link[0])
		snprintf(name, sizeof(name), "%.*s", (int)sizeof(ha->link), ha->link);
	for (i = ifs; !name[0] && i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 &&
		    !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, ha->addr.a.b, 16))
			snprintf(name, sizeof(name), "%s", i->ifa_name);
	for (i = ifs; name[0] && !have_mac && i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET && !strcmp(i->ifa_name, name) &&
		    ((struct sockaddr_ll *)i->ifa_addr)->sll_halen == 6) {
			memcpy(mac, ((struct sockaddr_ll *)i->ifa_addr)->sll_addr, 6);
			have_mac = true;
		}
	freeifaddrs(ifs);
	*ifindex = have_mac ? if_nametoindex(name) : 0;
	return *ifindex ? 0 : -ENOENT;
}

/* A Neighbor Solicitation or Advertisement heard on ifindex (hop limit 255: from the link, RFC 4861
 * 7.1) that says a is in use: an advertisement of it, or a solicitation for it from the unspecified
 * address (another node's Duplicate Address Detection). */
static bool says_in_use(int fd, unsigned ifindex, const uint8_t a[16])
{
	uint8_t buf[256], ctl[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct in6_pktinfo))];
	struct sockaddr_in6 from;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
			      .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
	int hops = -1;
	unsigned in_if = 0;

	if (n < (ssize_t)sizeof(struct nd_neighbor_solicit)) /* NS and NA bodies have the same size */
		return false;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_HOPLIMIT)
			memcpy(&hops, CMSG_DATA(cm), sizeof(hops));
		else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO)
			in_if = ((struct in6_pktinfo *)CMSG_DATA(cm))->ipi6_ifindex;
	if (hops != 255 || in_if != ifindex || buf[1] != 0 || memcmp(buf + 8, a, 16))
		return false;
	return buf[0] == ND_NEIGHBOR_ADVERT ||
	       (buf[0] == ND_NEIGHBOR_SOLICIT && IN6_IS_ADDR_UNSPECIFIED(&from.sin6_addr));
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Why a is in use on the home link (NULL if nothing answered within dad_ms). */
static const char *link_taken(private_kernel_sadb_pool_t *this, const struct sadb_home_agent *ha,
			      const uint8_t a[16])
{
	struct {
		struct nd_neighbor_solicit ns;
		struct nd_opt_hdr opt;
		uint8_t mac[6];
	} __attribute__((packed)) pkt = { .ns.nd_ns_type = ND_NEIGHBOR_SOLICIT,
					  .opt = { .nd_opt_type = ND_OPT_SOURCE_LINKADDR, .nd_opt_len = 1 } };
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	struct ipv6_mreq mr;
	struct pollfd p = { .fd = this->fd, .events = POLLIN };
	struct timespec t0;
	uint8_t stale[64];
	const char *why = NULL;
	unsigned ifindex;
	long left;

	if (this->fd < 0)
		return "the home link cannot be probed (no ICMPv6 socket)";
	if (home_link(ha, &ifindex, pkt.mac) < 0)
		return "the home link's interface cannot be found to probe it";
	memcpy(&pkt.ns.nd_ns_target, a, 16);
	/* the solicited-node multicast address (RFC 4291 2.7.1): where the holder listens */
	to.sin6_addr.s6_addr[0] = 0xff;
	to.sin6_addr.s6_addr[1] = 0x02;
	to.sin6_addr.s6_addr[11] = 0x01;
	to.sin6_addr.s6_addr[12] = 0xff;
	memcpy(&to.sin6_addr.s6_addr[13], a + 13, 3);
	to.sin6_scope_id = ifindex;
	mr.ipv6mr_multiaddr = to.sin6_addr;
	mr.ipv6mr_interface = ifindex;

	this->probe_lock->lock(this->probe_lock);
	while (recv(this->fd, stale, sizeof(stale), MSG_DONTWAIT) >= 0)
		; /* what came between probes answers none of ours */
	/* joined to hear another node's Duplicate Address Detection of a (its solicitation goes there) */
	if (setsockopt(this->fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr)) < 0 ||
	    setsockopt(this->fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex)) < 0 ||
	    sendto(this->fd, &pkt, sizeof(pkt), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		why = "the home link cannot be probed (sending the solicitation failed)";
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!why && (left = this->dad_ms - ms_since(&t0)) > 0)
		if (poll(&p, 1, (int)left) > 0 && says_in_use(this->fd, ifindex, a))
			why = "in use on the home link (a neighbour answered for it)";
	setsockopt(this->fd, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &mr, sizeof(mr));
	this->probe_lock->unlock(this->probe_lock);
	return why;
}

/* Why the pool's address h may not go to id (NULL if it may). */
static const char *refused(private_kernel_sadb_pool_t *this, host_t *h, identification_t *id)
{
	chunk_t a = h->get_address(h);
	struct sadb_home_agent ha;
	const char *why;
	int st;

	if (a.len != 16)
		return "not IPv6";
	/* charon's pools give an identity an address it holds again (a second IKE SA from the same
	 * peer): it passed, and its SAs in the SADB are this identity's */
	st = cleared_state(a.ptr, id);
	if (st == 1)
		return NULL;
	if (st == -1)
		return "leased to another identity";
	why = sadb_taken(this->db, a.ptr, &ha, st == 0);
	if (!why && this->dad_ms)
		why = link_taken(this, &ha, a.ptr);
	return why;
}

METHOD(attribute_provider_t, acquire_address, host_t *, private_kernel_sadb_pool_t *this,
       linked_list_t *pools, ike_sa_t *ike_sa, host_t *requested)
{
	peer_cfg_t *peer = ike_sa->get_peer_cfg(ike_sa);
	identification_t *id = ike_sa->get_other_eap_id(ike_sa);
	host_t *again, *ask = requested, *h, *found = NULL;
	linked_list_t *held;
	const char *why;
	unsigned tries = 0;

	if (inner || requested->get_family(requested) != AF_INET6 || !peer || !mobile_peer(peer))
		return NULL;
	/* After a refusal: a specific address no pool holds, so that the pool does not hand the same
	 * peer its online lease again (what it does for "::") but a new one. */
	again = host_create_from_string("::1", 0);
	held = linked_list_create();
	while (!found && again && tries++ < POOL_TRIES) {
		inner = true;
		h = charon->attributes->acquire_address(charon->attributes, pools, ike_sa, ask);
		inner = false;
		if (!h)
			break;
		why = refused(this, h, id);
		if (why) {
			DBG1(DBG_CFG, "xipsec: home address %H not handed out to '%Y': %s", h, id, why);
			held->insert_last(held, h);
			ask = again;
		} else {
			found = h;
		}
	}
	while (held->remove_first(held, (void **)&h) == SUCCESS) {
		inner = true;
		charon->attributes->release_address(charon->attributes, pools, h, ike_sa);
		inner = false;
		h->destroy(h);
	}
	held->destroy(held);
	DESTROY_IF(again);
	if (found) {
		cleared_take(found->get_address(found).ptr, id);
		DBG1(DBG_CFG, "xipsec: home address %H cleared for mobile node '%Y'", found, id);
	} else if (tries > 1) {
		DBG1(DBG_CFG, "xipsec: no address of the pools may be a home address for '%Y'", id);
	}
	return found;
}

METHOD(attribute_provider_t, release_address, bool, private_kernel_sadb_pool_t *this,
       linked_list_t *pools, host_t *address, ike_sa_t *ike_sa)
{
	chunk_t a = address->get_address(address);

	if (!inner && a.len == 16)
		cleared_give_back(a.ptr, ike_sa->get_other_eap_id(ike_sa));
	return FALSE; /* the pool that leased it releases it */
}

METHOD(attribute_provider_t, create_attribute_enumerator, enumerator_t *,
       private_kernel_sadb_pool_t *this, linked_list_t *pools, ike_sa_t *ike_sa, linked_list_t *vips)
{
	return enumerator_create_empty();
}

METHOD(kernel_sadb_pool_t, destroy, void, private_kernel_sadb_pool_t *this)
{
	struct cleared *c;

	charon->attributes->remove_provider(charon->attributes, &this->public.provider);
	while (cleared->remove_last(cleared, (void **)&c) == SUCCESS) {
		c->id->destroy(c->id);
		free(c);
	}
	cleared->destroy(cleared);
	cleared = NULL;
	cleared_lock->destroy(cleared_lock);
	cleared_lock = NULL;
	if (this->fd >= 0)
		close(this->fd);
	this->probe_lock->destroy(this->probe_lock);
	free(this);
}

/* The raw ICMPv6 socket of the probes: only NS and NA in, with hop limit and arrival interface;
 * solicitations out with hop limit 255 (RFC 4861 7.1), not looped back. -1 (logged) on failure. */
static int probe_socket(void)
{
	struct icmp6_filter f;
	int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6), on = 1, hops = 255, off = 0;

	if (fd < 0) {
		DBG1(DBG_CFG, "xipsec: no ICMPv6 socket to probe the home link (%s): no pool address "
		     "will be a home address", strerror(errno));
		return -1;
	}
	ICMP6_FILTER_SETBLOCKALL(&f);
	ICMP6_FILTER_SETPASS(ND_NEIGHBOR_SOLICIT, &f);
	ICMP6_FILTER_SETPASS(ND_NEIGHBOR_ADVERT, &f);
	if (setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f)) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops)) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &off, sizeof(off)) < 0) {
		DBG1(DBG_CFG, "xipsec: the home link's probe socket: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

kernel_sadb_pool_t *kernel_sadb_pool_create(struct sadb *db)
{
	private_kernel_sadb_pool_t *this;
	int dad_ms = lib->settings->get_int(lib->settings, "%s.home_address_dad_ms", 1000, lib->ns);

	if (dad_ms < 0 || dad_ms > DAD_MS_MAX) {
		DBG1(DBG_CFG, "xipsec: home_address_dad_ms %d out of range 0-%d, using 1000", dad_ms,
		     DAD_MS_MAX);
		dad_ms = 1000;
	}
	INIT(this,
		.public = {
			.provider = {
				.acquire_address = _acquire_address,
				.release_address = _release_address,
				.create_attribute_enumerator = _create_attribute_enumerator,
			},
			.destroy = _destroy,
		},
		.db = db,
		.fd = dad_ms ? probe_socket() : -1,
		.dad_ms = (unsigned)dad_ms,
		.probe_lock = mutex_create(MUTEX_TYPE_DEFAULT),
	);
	cleared_lock = mutex_create(MUTEX_TYPE_DEFAULT);
	cleared = linked_list_create();
	charon->attributes->add_provider(charon->attributes, &this->public.provider);
	return &this->public;
}
