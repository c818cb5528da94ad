/* sadb/sadb_acquire.h: the acquire channel from the dataplane to the IKE daemon: what xipsecd sends
 * when a packet meets a PROTECT policy that has no SA yet (as the kernel's XFRM_MSG_ACQUIRE), and the
 * Unix datagram socket it travels on, named after the SADB (PATH.acquire, next to the segment).
 * sadb_acquire.c says why a datagram socket and not an area of the segment. */
#ifndef XIPSEC_SADB_ACQUIRE_H
#define XIPSEC_SADB_ACQUIRE_H

#include <stdint.h>
#include <sys/un.h>

#include "sadb/sadb.h"

#define SADB_ACQUIRE_MAGIC 0x58415131u /* "XAQ1": this record's layout, version 1 */
#define SADB_ACQUIRE_SUFFIX ".acquire"

/* One acquire: the policy the packet matched (its id and reqid, as installed) and the packet's
 * selector (protocol, addresses, ports: XFRM's acquire carries the flow, not the policy's ranges). */
struct sadb_acquire {
	uint32_t magic;
	uint32_t policy_id;
	uint32_t reqid;
	uint8_t dir;                /* enum sadb_dir of the policy: SADB_DIR_OUT */
	uint8_t pad[3];
	struct sadb_pkt_sel sel;
};

/* The channel's address for the SADB at sadb_path (NULL: sadb_default_path()). 0, or -ENAMETOOLONG
 * when PATH.acquire does not fit a Unix socket address. */
int sadb_acquire_addr(const char *sadb_path, struct sockaddr_un *out);

/* The sending side: an unbound, non-blocking datagram socket (0 <= fd), or -errno. */
int sadb_acquire_sender(void);
/* Send one acquire without ever blocking: 0, or -errno (-ENOENT or -ECONNREFUSED: no IKE daemon
 * listens; -EAGAIN: its queue is full). A lost acquire is not retried here: the next packet of the
 * flow raises it again. Any thread. */
int sadb_acquire_send(int fd, const struct sockaddr_un *to, const struct sadb_acquire *a);

/* The receiving side: bind a non-blocking datagram socket at addr, mode 0600, replacing a socket
 * left there by an earlier daemon (anything else at that path is refused: -EEXIST). fd or -errno. */
int sadb_acquire_listen(const struct sockaddr_un *addr);
/* Take one datagram: 0 with *a filled; -EAGAIN when none is left; -EPERM (sent by another user than
 * root or ourselves) or -EBADMSG (not one well-formed record): that datagram is consumed and ignored;
 * other -errno from recvmsg. */
int sadb_acquire_recv(int fd, struct sadb_acquire *a);

#endif
