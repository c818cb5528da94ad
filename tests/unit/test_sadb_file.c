/* tests/unit/test_sadb_file.c: which files and directories libsadb trusts (sadb/sadb_file.c). The
 * state directory: created 0700 when missing (whatever the umask), refused with a message naming
 * what was found when it has the wrong mode, another owner, is a symbolic link or a file, and refused
 * on tmpfs (its marks would not outlive a reboot). The default SADB's directory: the same checks, and
 * a SADB in it is not opened while the directory is wrong. The SADB:
 * refused when it has the wrong mode or owner, is a symbolic link, a directory or a FIFO (without
 * blocking), even when the opener meant to create it; the refused file is left as it was; a header
 * whose counts exceed its capacities is refused; sadb_unlink removes a link, never its target. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <cmocka.h>

#include "sadb/sadb_int.h"
#include "tests/unit/sadb_testlib.h"

static char tdir[64];

static int setup_dir(void **state)
{
	(void)state;
	/* /var/tmp, not /tmp: a state directory on tmpfs is refused, and /tmp may be one. */
	snprintf(tdir, sizeof(tdir), "/var/tmp/xipsec-test-state.XXXXXX");
	return mkdtemp(tdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *sub(const char *name)
{
	static char p[4][128];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", tdir, name);
	return p[k];
}

static void expect_in(const char *msg, const char *want)
{
	if (!strstr(msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", msg, want);
}

static void test_state_dir_path(void **state)
{
	(void)state;
	unsetenv(SADB_ENV_STATE_DIR);
	assert_string_equal(sadb_state_dir(), SADB_STATE_DIR_DEFAULT);
	setenv(SADB_ENV_STATE_DIR, "", 1);
	assert_string_equal(sadb_state_dir(), SADB_STATE_DIR_DEFAULT);
	setenv(SADB_ENV_STATE_DIR, "/x/y", 1);
	assert_string_equal(sadb_state_dir(), "/x/y");
	unsetenv(SADB_ENV_STATE_DIR);
}

static void test_state_dir_create(void **state)
{
	const char *p = sub("state"), *deep = sub("no/such/state");
	char msg[512];
	struct stat st;
	mode_t old;
	int fd;

	(void)state;
	/* Missing, no create: -ENOENT, nothing made. */
	fd = sadb_state_dir_open(p, false, msg, sizeof(msg));
	assert_int_equal(fd, -ENOENT);
	expect_in(msg, p);
	assert_int_equal(lstat(p, &st), -1);
	/* Missing, create: made 0700 even under a umask that would strip the owner's bits. */
	old = umask(0277);
	fd = sadb_state_dir_open(p, true, msg, sizeof(msg));
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, geteuid());
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* Present and right: opened with or without create. */
	fd = sadb_state_dir_open(p, false, msg, sizeof(msg));
	assert_true(fd >= 0);
	close(fd);
	/* The parent must exist. */
	fd = sadb_state_dir_open(deep, true, msg, sizeof(msg));
	assert_int_equal(fd, -ENOENT);
	expect_in(msg, deep);
	expect_in(msg, "parent must exist");
	/* $XIPSEC_STATE_DIR for a NULL path. */
	setenv(SADB_ENV_STATE_DIR, p, 1);
	fd = sadb_state_dir_open(NULL, false, msg, sizeof(msg));
	unsetenv(SADB_ENV_STATE_DIR);
	assert_true(fd >= 0);
	close(fd);
}

static void test_state_dir_wrong_mode(void **state)
{
	const char *p = sub("mode");
	char msg[512], exp[128];
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, 0755), 0);
	for (int create = 0; create < 2; create++) {
		fd = sadb_state_dir_open(p, create, msg, sizeof(msg));
		assert_int_equal(fd, -EPERM);
		expect_in(msg, p);
		expect_in(msg, "mode 0755");
		snprintf(exp, sizeof(exp), "expected a directory owned by uid %u with mode 0700", (unsigned)geteuid());
		expect_in(msg, exp);
	}
	/* Refused, not repaired: a directory we did not make keeps its mode. */
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
}

static void test_state_dir_other_owner(void **state)
{
	const char *p = sub("owner");
	char msg[512];
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	fd = sadb_state_dir_open(p, true, msg, sizeof(msg));
	assert_int_equal(fd, -EPERM);
	expect_in(msg, p);
	expect_in(msg, "owned by uid 65534 with mode 0700");
}

static void test_state_dir_symlink_and_file(void **state)
{
	const char *good = sub("good"), *link = sub("link"), *file = sub("file");
	char msg[512];
	int fd;

	(void)state;
	assert_int_equal(mkdir(good, 0700), 0);
	assert_int_equal(symlink(good, link), 0);
	for (int create = 0; create < 2; create++) {
		fd = sadb_state_dir_open(link, create, msg, sizeof(msg));
		assert_int_equal(fd, -ELOOP);
		expect_in(msg, link);
		expect_in(msg, "a symbolic link");
		expect_in(msg, good);
	}
	fd = open(file, O_CREAT | O_WRONLY, 0700);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(file, 0700), 0);
	fd = sadb_state_dir_open(file, true, msg, sizeof(msg));
	assert_int_equal(fd, -ENOTDIR);
	expect_in(msg, file);
	expect_in(msg, "a regular file");
	expect_in(msg, "expected a directory");
}

static void test_state_dir_tmpfs(void **state)
{
	char p[64] = "/dev/shm/xipsec-test-state.XXXXXX", msg[512];
	struct statfs sf;
	int fd;

	(void)state;
	if (statfs("/dev/shm", &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		skip();
	assert_non_null(mkdtemp(p));
	assert_int_equal(chmod(p, 0700), 0);
	for (int create = 0; create < 2; create++) {
		fd = sadb_state_dir_open(p, create, msg, sizeof(msg));
		if (fd >= 0)
			close(fd);
		assert_int_equal(fd, -EXDEV);
		expect_in(msg, p);
		expect_in(msg, "tmpfs");
		expect_in(msg, "nonces");
		expect_in(msg, SADB_ENV_STATE_DIR);
	}
	rmdir(p);
}

/* ---- the default SADB's directory ---- */

static void test_run_dir_default(void **state)
{
	(void)state;
	assert_string_equal(SADB_DEFAULT_PATH, "/run/xipsec/xipsec.sadb");
	unsetenv(SADB_ENV_PATH);
	assert_string_equal(sadb_default_path(), SADB_DEFAULT_PATH);
}

static void test_run_dir_checks(void **state)
{
	const char *p = sub("run"), *link = sub("runlink");
	char msg[512];
	struct stat st;
	mode_t old;
	int fd;

	(void)state;
	/* Made 0700 when missing, whatever the umask. */
	old = umask(0);
	fd = sadb_run_dir_open(p, true, msg, sizeof(msg));
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	close(fd);
	/* A symbolic link to it is refused. */
	assert_int_equal(symlink(p, link), 0);
	fd = sadb_run_dir_open(link, true, msg, sizeof(msg));
	assert_int_equal(fd, -ELOOP);
	expect_in(msg, "a symbolic link");
	/* Another mode: refused, not repaired. */
	assert_int_equal(chmod(p, 0755), 0);
	fd = sadb_run_dir_open(p, true, msg, sizeof(msg));
	assert_int_equal(fd, -EPERM);
	expect_in(msg, p);
	expect_in(msg, "mode 0755");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	/* Another owner, as a local user who made /run/xipsec first would be. */
	if (geteuid() != 0)
		return;
	assert_int_equal(chmod(p, 0700), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	fd = sadb_run_dir_open(p, true, msg, sizeof(msg));
	assert_int_equal(fd, -EPERM);
	expect_in(msg, "owned by uid 65534");
}

/* ---- the SADB file ---- */

static void make_good(const char *path)
{
	struct sadb_params prm = { 8, 8 };
	struct sadb_sa sa = t_sa(0x1000, "192.0.2.1", "192.0.2.2");
	struct sadb *db;
	char msg[256];

	assert_int_equal(sadb_open(path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_sa_add(db, &sa, NULL), 0);
	sadb_close(db);
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *b;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size + 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

/* Every kind of open is refused with err and a message naming path and want. */
static void refused(const char *path, int err, const char *want)
{
	static const int modes[] = { SADB_RDONLY, SADB_RUNTIME, SADB_RDWR, SADB_RDWR | SADB_CREATE };
	char msg[512];

	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct sadb *db = (struct sadb *)1;
		int r = sadb_open(path, modes[i], NULL, &db, msg, sizeof(msg));

		if (r != err)
			fail_msg("open flags 0x%x of %s: %d (%s), expected %d", modes[i], path, r, msg, err);
		assert_null(db);
		expect_in(msg, path);
		expect_in(msg, want);
	}
}

static void test_sadb_wrong_mode(void **state)
{
	const char *p = t_path("fmode");
	char exp[128], *before, *after;
	size_t n0, n1;

	(void)state;
	make_good(p);
	assert_int_equal(chmod(p, 0644), 0);
	before = slurp(p, &n0);
	snprintf(exp, sizeof(exp), "owned by uid %u with mode 0644; expected a regular file owned by uid %u "
		 "with mode 0600", (unsigned)geteuid(), (unsigned)geteuid());
	refused(p, -EPERM, exp);
	after = slurp(p, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
}

static void test_sadb_other_owner(void **state)
{
	const char *p = t_path("fowner");
	struct stat st;
	char msg[512];
	struct sadb *db;
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	/* Pre-created empty by somebody else, readable by all: a creator must not fill it. */
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0666);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	assert_int_equal(fchown(fd, 65534, 65534), 0);
	close(fd);
	refused(p, -EPERM, "owned by uid 65534 with mode 0666");
	assert_int_equal(sadb_open(p, SADB_RDWR | SADB_CREATE, NULL, &db, msg, sizeof(msg)), -EPERM);
	expect_in(msg, "remove it if you did not make it");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_uid, 65534);
	/* A good SADB given away keeps being refused although its mode is right. */
	unlink(p);
	make_good(p);
	assert_int_equal(chown(p, 65534, 65534), 0);
	refused(p, -EPERM, "owned by uid 65534 with mode 0600");
}

static void test_sadb_symlink(void **state)
{
	const char *target = t_path("ftarget"), *link = t_path("flink");
	char *before, *after;
	size_t n0, n1;

	(void)state;
	make_good(target);
	before = slurp(target, &n0);
	assert_int_equal(symlink(target, link), 0);
	refused(link, -ELOOP, "a symbolic link");
	after = slurp(target, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	/* sadb_unlink removes the link, not what it points to. */
	assert_int_equal(sadb_unlink(link), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), -1);
	assert_int_equal(stat(target, &st), 0);
	free(before);
	free(after);
}

static void test_sadb_dir_and_fifo(void **state)
{
	const char *d = t_path("fdir"), *f = t_path("ffifo");
	struct stat st;

	(void)state;
	assert_int_equal(mkdir(d, 0600), 0);
	refused(d, -EINVAL, "a directory");
	assert_int_equal(sadb_unlink(d), -EISDIR);
	assert_int_equal(rmdir(d), 0);
	/* A FIFO must be refused at once, not block the opener (alarm kills a hang). */
	assert_int_equal(mkfifo(f, 0600), 0);
	alarm(10);
	refused(f, -EINVAL, "a FIFO");
	alarm(0);
	assert_int_equal(lstat(f, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
}

static void test_sadb_corrupt_counts(void **state)
{
	const char *p = t_path("fcount");
	uint32_t big = 1000;
	char msg[512];
	struct sadb *db;
	int fd;

	(void)state;
	make_good(p);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &big, sizeof(big), offsetof(struct sadb_hdr, sa_hwm)), sizeof(big));
	close(fd);
	assert_int_equal(sadb_open(p, SADB_RDONLY, NULL, &db, msg, sizeof(msg)), -EPROTO);
	expect_in(msg, p);
	expect_in(msg, "corrupt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_dir_path),
		cmocka_unit_test_setup_teardown(test_state_dir_create, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_state_dir_wrong_mode, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_state_dir_other_owner, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_state_dir_symlink_and_file, setup_dir, teardown_dir),
		cmocka_unit_test(test_state_dir_tmpfs),
		cmocka_unit_test(test_run_dir_default),
		cmocka_unit_test_setup_teardown(test_run_dir_checks, setup_dir, teardown_dir),
		cmocka_unit_test(test_sadb_wrong_mode),
		cmocka_unit_test(test_sadb_other_owner),
		cmocka_unit_test(test_sadb_symlink),
		cmocka_unit_test(test_sadb_dir_and_fifo),
		cmocka_unit_test(test_sadb_corrupt_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
