/* sadb/sadb_acquire.c: the acquire channel (sadb_acquire.h), both ends.
 *
 * Why a Unix datagram socket rather than a ring in the segment: an acquire is an event, not state.
 * Nothing in it must outlive either process (a lost one is raised again by the flow's next packet
 * once the dataplane's rate limit lets it), so it needs no place in the SADB layout, no recovery
 * after a crash and no reader position. The kernel gives what a ring would have to build: a bounded
 * queue (net.unix.max_dgram_qlen datagrams and the receive buffer), a sender that never blocks
 * (MSG_DONTWAIT: a full queue is -EAGAIN, a missing daemon -ECONNREFUSED or -ENOENT, both at once),
 * whole records or none, the sender's credentials (only root, or the daemon's own user, is heard) and
 * a descriptor the IKE daemon's event loop already knows how to wait on. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sadb/sadb_acquire.h"

int sadb_acquire_addr(const char *sadb_path, struct sockaddr_un *out)
{
	const char *p = sadb_path ? sadb_path : sadb_default_path();
	size_t n = strlen(p);

	memset(out, 0, sizeof(*out));
	out->sun_family = AF_UNIX;
	if (n + sizeof(SADB_ACQUIRE_SUFFIX) > sizeof(out->sun_path))
		return -ENAMETOOLONG;
	memcpy(out->sun_path, p, n);
	memcpy(out->sun_path + n, SADB_ACQUIRE_SUFFIX, sizeof(SADB_ACQUIRE_SUFFIX));
	return 0;
}

int sadb_acquire_sender(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

int sadb_acquire_send(int fd, const struct sockaddr_un *to, const struct sadb_acquire *a)
{
	if (sendto(fd, a, sizeof(*a), MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)to,
		   sizeof(*to)) < 0)
		return -errno;
	return 0;
}

int sadb_acquire_listen(const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, one = 1, err;

	if (lstat(addr->sun_path, &st) == 0) {
		/* an earlier daemon's socket (the kernel never removes one); nothing else is ours to
		 * delete */
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(addr->sun_path) < 0 && errno != ENOENT)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* credentials on every datagram: a sender that got in before the chmod below is still told
	 * apart */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    chmod(addr->sun_path, 0600) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int sadb_acquire_recv(int fd, struct sadb_acquire *a)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = a, .iov_len = sizeof(*a) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	const struct ucred *cred = NULL;
	struct cmsghdr *c;
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
			cred = (const struct ucred *)CMSG_DATA(c);
	if (!cred || (cred->uid != 0 && cred->uid != geteuid()))
		return -EPERM;
	if ((size_t)n != sizeof(*a) || (msg.msg_flags & MSG_TRUNC) || a->magic != SADB_ACQUIRE_MAGIC)
		return -EBADMSG;
	return 0;
}
