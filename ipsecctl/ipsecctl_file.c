/* ipsecctl/ipsecctl_file.c: the files ipsecctl trusts: configuration files (main and included) and
 * key files. A configuration file carries the policy (a bypass policy in it opens the gateway) and
 * a key file the key, so either one that someone else could have written, or a key that someone
 * else could have read, is refused before a byte of it is used, as OpenBSD's ipsecctl does. The
 * file is opened without following a symbolic link and without blocking (a FIFO planted under the
 * name would otherwise hang the load), then judged on what fstat says of that very descriptor, so
 * nothing can be swapped between the check and the read. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR:  return "a directory";
	case S_IFIFO:  return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR:  return "a character device";
	case S_IFBLK:  return "a block device";
	default:       return "not a regular file";
	}
}

/* Tests that must use a file of another owner (a checkout they did not make) set this; it relaxes
 * the owner and mode checks only, never the type and link checks. */
static bool trust_any(void)
{
	const char *v = getenv(CTL_ENV_TRUST_ANY_FILE);

	return v && !strcmp(v, "1");
}

/* What is wrong with the file st describes, into msg; 0 when it may be used. */
static int judge(const struct stat *st, const char *path, bool secret, char *msg, size_t mlen)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);

	if (!S_ISREG(st->st_mode)) {
		snprintf(msg, mlen, "%s: %s, not a regular file", path, type_name(st->st_mode));
		return -EINVAL;
	}
	if (trust_any())
		return 0;
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		snprintf(msg, mlen, "%s: owned by uid %u, neither root nor you (uid %u); chown it",
			 path, (unsigned)st->st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (mode & (S_IWGRP | S_IWOTH)) {
		snprintf(msg, mlen, "%s: writable by %s (mode %04o); chmod go-w", path,
			 mode & S_IWOTH ? "others" : "its group", mode);
		return -EPERM;
	}
	if (secret && (mode & (S_IRGRP | S_IROTH | S_IXGRP | S_IXOTH))) {
		snprintf(msg, mlen, "%s: a key file readable by %s (mode %04o); chmod go-rwx", path,
			 mode & (S_IROTH | S_IXOTH) ? "others" : "its group", mode);
		return -EPERM;
	}
	return 0;
}

int ctl_file_open(const char *path, bool secret, char *msg, size_t mlen)
{
	struct stat st;
	int fd, fl, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			snprintf(msg, mlen, "%s: a symbolic link; name the file itself", path);
		else
			snprintf(msg, mlen, "cannot read %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(msg, mlen, "cannot stat %s: %s", path, strerror(errno));
	} else {
		rc = judge(&st, path, secret, msg, mlen);
	}
	if (!rc && ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		rc = -errno;
		snprintf(msg, mlen, "%s: cannot clear O_NONBLOCK: %s", path, strerror(errno));
	}
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int ctl_file_read(const char *path, bool secret, size_t max, char **out, size_t *len, char *msg,
		  size_t mlen)
{
	int fd = strcmp(path, "-") ? ctl_file_open(path, secret, msg, mlen) : STDIN_FILENO;

	if (fd < 0)
		return fd;
	return ctl_fd_read(fd, path, max, out, len, msg, mlen);
}

int ctl_fd_read(int fd, const char *path, size_t max, char **out, size_t *len, char *msg,
		size_t mlen)
{
	size_t cap = 4096, n = 0;
	char *buf;
	ssize_t r;
	int rc = 0;

	buf = malloc(cap + 1);
	if (!buf)
		rc = -ENOMEM;
	while (!rc && (r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno != EINTR)
				rc = -errno;
			continue;
		}
		n += (size_t)r;
		if (n == cap) {
			/* realloc would leave a copy of a key behind: grow by hand, wiping the old */
			char *nb = cap >= max ? NULL : malloc(cap * 2 + 1);

			if (!nb) {
				rc = cap >= max ? -EFBIG : -ENOMEM;
				break;
			}
			memcpy(nb, buf, n);
			explicit_bzero(buf, n);
			free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc) {
		if (buf)
			explicit_bzero(buf, n);
		free(buf);
		snprintf(msg, mlen, "cannot read %s: %s", path,
			 rc == -EFBIG ? "larger than ipsecctl reads" : strerror(-rc));
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
