/* ike/kernel_sadb_acquire.c: acquires from the dataplane into charon, the part of on-demand tunnels
 * that kernel_netlink_ipsec.c does for XFRM_MSG_ACQUIRE. xipsecd sends one datagram per PROTECT
 * policy without an SA, rate limited on its side (dataplane/xipsecd/dp_acquire.c), on the socket
 * named after the SADB (sadb/sadb_acquire.c); this file binds it, is woken by charon's watcher,
 * and hands each acquire to charon->kernel->acquire with the policy's reqid and the packet's
 * selector as host-sized traffic selectors, as the kernel does. The reqid is the one this backend
 * installed with the policy: charon's trap manager installs a trap's policies through add_policy
 * with the CHILD_SA config's reqid and no SA yet, so start_action, dpd_action and close_action
 * "trap" find their trap again. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ike/kernel_sadb_int.h"
#include "sadb/sadb_acquire.h"

#define KS_ACQ_BURST 64 /* acquires taken per wake-up: the watcher's other sockets get their turn */

static char *ks_acquire_pending;

void kernel_sadb_set_acquire(const char *sadb_path)
{
	free(ks_acquire_pending);
	ks_acquire_pending = sadb_path ? strdup(sadb_path) : NULL;
}

/* One side of the packet's selector: the address alone, the port (ICMP: type << 8 | code, charon's
 * encoding) or any. */
static traffic_selector_t *side_ts(const struct sadb_pkt_sel *sel, bool src)
{
	const struct sadb_addr *a = src ? &sel->src : &sel->dst;
	uint16_t port = src ? sel->sport : sel->dport;
	int family = a->family;
	host_t *host;

	if (family != AF_INET && family != AF_INET6)
		return NULL;
	host = host_create_from_chunk(family, chunk_create((u_char *)a->a.b, family == AF_INET ? 4 : 16),
				      0);
	if (!host)
		return NULL;
	if (sel->proto == IPPROTO_ICMP || sel->proto == IPPROTO_ICMPV6)
		port = (uint16_t)(sel->sport << 8 | (sel->dport & 0xff));
	return traffic_selector_create_from_subnet(host, family == AF_INET ? 32 : 128, sel->proto, port,
						   port ? port : 65535);
}

static void raise_acquire(const struct sadb_acquire *m)
{
	kernel_acquire_data_t data = {
		.src = side_ts(&m->sel, TRUE),
		.dst = side_ts(&m->sel, FALSE),
	};

	if (!m->reqid || !data.src || !data.dst) {
		DBG1(DBG_KNL, "xipsec: acquire for policy %u (reqid %u) without a usable selector ignored",
		     m->policy_id, m->reqid);
	} else {
		DBG2(DBG_KNL, "xipsec: acquire for reqid %u (policy %u): %R === %R", m->reqid, m->policy_id,
		     data.src, data.dst);
		KS_STAT_INC(acquires);
		charon->kernel->acquire(charon->kernel, m->reqid, &data);
	}
	DESTROY_IF(data.src);
	DESTROY_IF(data.dst);
}

/* watcher_cb_t: the socket is readable. */
static bool acquire_readable(void *data, int fd, watcher_event_t event)
{
	struct sadb_acquire m;
	int rc, n;

	for (n = 0; n < KS_ACQ_BURST; n++) {
		rc = sadb_acquire_recv(fd, &m);
		if (rc == -EAGAIN)
			break;
		if (rc == -EPERM || rc == -EBADMSG) {
			DBG1(DBG_KNL, "xipsec: acquire datagram ignored: %s",
			     rc == -EPERM ? "not sent by root" : "malformed");
			continue;
		}
		if (rc < 0) {
			DBG1(DBG_KNL, "xipsec: reading acquires: %s", strerror(-rc));
			break;
		}
		raise_acquire(&m);
	}
	return TRUE;
}

void ks_acquire_start(private_kernel_sadb_t *this)
{
	char *path = ks_acquire_pending;
	int fd, rc;

	this->acq_fd = -1;
	if (!path)
		return;
	ks_acquire_pending = NULL;
	rc = sadb_acquire_addr(path, &this->acq_addr);
	if (rc < 0)
		DBG1(DBG_KNL, "xipsec: SADB path %s too long for the acquire socket: no trap policies "
		     "will start a tunnel", path);
	free(path);
	if (rc < 0)
		return;
	fd = sadb_acquire_listen(&this->acq_addr);
	if (fd < 0) {
		DBG1(DBG_KNL, "xipsec: cannot listen for acquires on %s: %s (no trap policies will start "
		     "a tunnel)", this->acq_addr.sun_path, strerror(-fd));
		return;
	}
	this->acq_fd = fd;
	lib->watcher->add(lib->watcher, fd, WATCHER_READ, acquire_readable, this);
	DBG2(DBG_KNL, "xipsec: acquires from the dataplane on %s", this->acq_addr.sun_path);
}

void ks_acquire_stop(private_kernel_sadb_t *this)
{
	if (this->acq_fd < 0)
		return;
	/* waits for a callback under way: none runs after this */
	lib->watcher->remove(lib->watcher, this->acq_fd);
	close(this->acq_fd);
	unlink(this->acq_addr.sun_path);
	this->acq_fd = -1;
}
