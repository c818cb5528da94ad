/* sadb/sadb_file.c: which files and directories libsadb trusts. The SADB holds keys, and a name in
 * a directory others can write proves nothing: anyone could have made it first, as a file they can
 * read, a symbolic link to a file of ours, a FIFO that blocks the opener or a directory (or merely
 * to keep the gateway from starting). So the default SADB lives in a directory of its own,
 * SADB_RUN_DIR, which the programs create (0700, ours) and refuse when anything else is there; a SADB
 * elsewhere (an old /dev/shm path given with --sadb) is still accepted, on the file checks alone.
 * This file owns the one check every opener goes through (opened without following a symbolic link
 * and without blocking, then fstat: the expected type, owned by the effective uid, mode exactly 0600
 * for a file and 0700 for a directory), the messages that say what was found and what is expected,
 * the removal of a SADB name (sadb_unlink), the runtime directory (sadb_run_dir_open), and the
 * project's state directory (sadb_state_dir, sadb_state_dir_open) where state that must outlive a
 * reboot is kept, refused on a filesystem held in memory. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

#define FERR(...) do { if (errmsg && errlen) snprintf(errmsg, errlen, __VA_ARGS__); } while (0)

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:  return "a regular file";
	case S_IFDIR:  return "a directory";
	case S_IFLNK:  return "a symbolic link";
	case S_IFIFO:  return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR:  return "a character device";
	case S_IFBLK:  return "a block device";
	default:       return "a file of unknown type";
	}
}

/* "expected a regular file owned by uid 0 with mode 0600" */
static void expected(bool dir, char *buf, size_t len)
{
	snprintf(buf, len, "expected %s owned by uid %u with mode %s", dir ? "a directory" : "a regular file",
		 (unsigned)geteuid(), dir ? "0700" : "0600");
}

/* Describe st against what is expected; 0 when it is what we want. */
static int judge(const struct stat *st, const char *path, bool dir, char *errmsg, size_t errlen)
{
	bool type_ok = dir ? S_ISDIR(st->st_mode) : S_ISREG(st->st_mode);
	mode_t want = dir ? 0700 : 0600;
	char exp[96];

	if (type_ok && st->st_uid == geteuid() && (st->st_mode & 07777) == want)
		return 0;
	expected(dir, exp, sizeof(exp));
	if (S_ISLNK(st->st_mode)) {
		char target[256];
		ssize_t n = readlink(path, target, sizeof(target) - 1);

		target[n > 0 ? n : 0] = '\0';
		FERR("%s: a symbolic link (to %s, owned by uid %u); %s (%s is never opened through a symbolic "
		     "link: remove it if you did not make it)", path, n > 0 ? target : "?", (unsigned)st->st_uid,
		     exp, dir ? "a directory of ours" : "a SADB");
		return -ELOOP;
	}
	if (!type_ok) {
		FERR("%s: %s owned by uid %u with mode %04o; %s (remove it if you did not make it)", path,
		     type_name(st->st_mode), (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777), exp);
		return dir ? -ENOTDIR : -EINVAL;
	}
	FERR("%s: owned by uid %u with mode %04o; %s (remove it if you did not make it)", path,
	     (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777), exp);
	return -EPERM;
}

int sadb__check_fd(int fd, const char *path, bool dir, char *errmsg, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int r = -errno;
		FERR("cannot stat %s: %s", path, strerror(errno));
		return r;
	}
	return judge(&st, path, dir, errmsg, errlen);
}

/* open() failed with err: say what is at path when that explains it better than strerror. */
static int open_failed(const char *path, int err, bool dir, char *errmsg, size_t errlen)
{
	struct stat st;

	if (err != ENOENT && lstat(path, &st) == 0) {
		int r = judge(&st, path, dir, errmsg, errlen);
		if (r)
			return r;
	}
	FERR("cannot open %s: %s", path, strerror(err));
	return -err;
}

/* Whether path names a file directly in SADB_RUN_DIR. */
static bool in_run_dir(const char *path)
{
	size_t n = strlen(SADB_RUN_DIR);

	return !strncmp(path, SADB_RUN_DIR "/", n + 1) && !strchr(path + n + 1, '/');
}

int sadb__open_file(const char *path, bool rw, char *errmsg, size_t errlen)
{
	if (in_run_dir(path)) {
		/* Made here when missing, by whoever opens first; a reader that cannot make it fails
		 * below on the missing SADB, as it would anyway. */
		int dfd = sadb_run_dir_open(NULL, true, errmsg, errlen);

		if (dfd < 0 && dfd != -EACCES)
			return dfd;
		if (dfd >= 0)
			close(dfd);
	}
	/* O_NONBLOCK: a FIFO planted under our name must not hang the opener until it is refused. */
	int fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r, fl;

	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT; /* the caller knows what a missing SADB means */
		return open_failed(path, errno, false, errmsg, errlen);
	}
	r = sadb__check_fd(fd, path, false, errmsg, errlen);
	if (!r && ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		r = -errno;
		FERR("cannot clear O_NONBLOCK on %s: %s", path, strerror(errno));
	}
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int sadb_unlink(const char *path)
{
	struct stat st;

	if (!path)
		path = sadb_default_path();
	/* unlink() removes a symbolic link itself, never its target; a directory is never ours. */
	if (lstat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	return unlink(path) < 0 ? -errno : 0;
}

const char *sadb_state_dir(void)
{
	const char *p = getenv(SADB_ENV_STATE_DIR);

	return p && *p ? p : SADB_STATE_DIR_DEFAULT;
}

/* Open the directory path, made (0700) when missing with create, and judge it; what names it in
 * messages, env the variable that can move it (NULL: none). */
static int dir_open(const char *path, bool create, const char *what, const char *env, char *errmsg,
		    size_t errlen)
{
	int fd, r;

	if (errmsg && errlen)
		errmsg[0] = '\0';
	if (!*path) {
		FERR("%s: empty path", what);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		bool made = mkdir(path, 0700) == 0;

		if (!made && errno != EEXIST) {
			r = -errno;
			FERR("cannot create the %s %s: %s%s", what, path, strerror(errno),
			     errno == ENOENT ? " (its parent must exist)" : "");
			return r;
		}
		/* Not made by us (EEXIST: somebody was first): the check below judges it like any other. */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* mkdir's mode went through the umask; ours is 0700 whatever the umask says. */
		if (fd >= 0 && made)
			(void)fchmod(fd, 0700);
	}
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT) {
			FERR("%s: no %s here (expected a directory owned by uid %u with mode 0700%s%s)", path,
			     what, (unsigned)geteuid(), env ? "; path from $" : "", env ? env : "");
			return -ENOENT;
		}
		/* ENOTDIR for a file, ELOOP for a symbolic link: open_failed says which. */
		return open_failed(path, e, true, errmsg, errlen);
	}
	r = sadb__check_fd(fd, path, true, errmsg, errlen);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int sadb_run_dir_open(const char *path, bool create, char *errmsg, size_t errlen)
{
	return dir_open(path ? path : SADB_RUN_DIR, create, "SADB directory", NULL, errmsg, errlen);
}

int sadb_state_dir_open(const char *path, bool create, char *errmsg, size_t errlen)
{
	struct statfs sf;
	int fd;

	if (!path)
		path = sadb_state_dir();
	fd = dir_open(path, create, "state directory", SADB_ENV_STATE_DIR, errmsg, errlen);
	if (fd < 0)
		return fd;
	/* What is kept here must outlive a reboot: a sequence mark on a filesystem held in memory is
	 * gone at the next boot, and the manual keys it guarded would send their nonces again. */
	if (fstatfs(fd, &sf) < 0) {
		int r = -errno;
		FERR("cannot statfs the state directory %s: %s", path, strerror(errno));
		close(fd);
		return r;
	}
	if (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC) {
		FERR("%s: the state directory is on %s, which forgets it at reboot; the sequence marks kept "
		     "there would be lost and manual keys would send the same nonces again. Point $%s at a "
		     "directory on a disk", path, sf.f_type == TMPFS_MAGIC ? "tmpfs" : "ramfs",
		     SADB_ENV_STATE_DIR);
		close(fd);
		return -EXDEV;
	}
	return fd;
}
