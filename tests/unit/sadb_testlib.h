/* tests/unit/sadb_testlib.h: helpers shared by the libsadb unit tests: unique segment paths under
 * /dev/shm removed at exit (even when an assertion fails), and builders for valid SAs, policies and
 * packets that a test then breaks one field at a time. */
#ifndef XIPSEC_TEST_SADB_TESTLIB_H
#define XIPSEC_TEST_SADB_TESTLIB_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sadb/sadb.h"

#define T_MAX_PATHS 64
static char t_paths[T_MAX_PATHS][128];
static int t_npaths;
static pid_t t_owner;

static void t_cleanup(void)
{
	if (getpid() != t_owner)
		return;
	for (int i = 0; i < t_npaths; i++) {
		char tmp[160];
		unlink(t_paths[i]);
		snprintf(tmp, sizeof(tmp), "%.127s.copy", t_paths[i]);
		unlink(tmp);
	}
}

static void t_on_signal(int sig)
{
	t_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* A reaper process removes this process's segments when it dies, however it dies (sanitizers
 * leave through _exit, SIGKILL runs no handler): it waits for EOF on a pipe only we hold open. */
static void t_start_reaper(void)
{
	int fds[2];
	pid_t owner = getpid();

	if (pipe(fds) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		char c, pat[96];
		glob_t g;
		close(fds[1]);
		while (read(fds[0], &c, 1) != 0)
			;
		snprintf(pat, sizeof(pat), "/dev/shm/xipsec-test-*-%d-*", (int)owner);
		if (glob(pat, 0, NULL, &g) == 0) {
			for (size_t i = 0; i < g.gl_pathc; i++)
				unlink(g.gl_pathv[i]);
			globfree(&g);
		}
		_exit(0);
	}
	close(fds[0]);
	/* Children the tests fork must not keep the reaper waiting. */
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

/* A fresh unique path; the file (and its ".copy") is removed at exit or on a fatal signal. */
static const char *t_path(const char *tag)
{
	if (t_npaths == 0) {
		t_owner = getpid();
		atexit(t_cleanup);
		signal(SIGINT, t_on_signal);
		signal(SIGTERM, t_on_signal);
		signal(SIGABRT, t_on_signal);
		signal(SIGSEGV, t_on_signal);
		t_start_reaper();
	}
	if (t_npaths >= T_MAX_PATHS)
		abort();
	snprintf(t_paths[t_npaths], sizeof(t_paths[0]), "/dev/shm/xipsec-test-%s-%d-%d", tag, (int)getpid(),
		 t_npaths);
	unlink(t_paths[t_npaths]);
	return t_paths[t_npaths++];
}

/* fork() for test children: they die with the test, so nothing outlives a failed or killed run. */
static inline pid_t t_fork(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	}
	return pid;
}

static inline struct sadb_addr t_addr(const char *s)
{
	struct sadb_addr a;
	if (sadb_addr_parse(s, &a))
		abort();
	return a;
}

static inline void t_sel_any(struct sadb_selector *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->sport_hi = sel->dport_hi = 65535;
}

/* A valid AES-GCM-16 tunnel SA; key bytes derive from spi so records differ. */
static inline struct sadb_sa t_sa(uint32_t spi, const char *src, const char *dst)
{
	struct sadb_sa sa;

	memset(&sa, 0, sizeof(sa));
	sa.spi = spi;
	sa.proto = SADB_PROTO_ESP;
	sa.mode = SADB_MODE_TUNNEL;
	sa.dir = SADB_DIR_OUT;
	sa.state = SADB_STATE_MATURE;
	sa.reqid = 7;
	sa.src = t_addr(src);
	sa.dst = t_addr(dst);
	sa.enc_alg = SADB_ENC_AES_GCM16;
	sa.enc_key_len = 32;
	sa.salt_len = 4;
	for (int i = 0; i < 32; i++)
		sa.enc_key[i] = (uint8_t)(spi * 31 + i);
	memcpy(sa.salt, "salt", 4);
	sa.replay_window = 1024;
	t_sel_any(&sa.sel);
	return sa;
}

static inline struct sadb_policy t_pol(uint8_t dir, const char *src, uint8_t splen, const char *dst,
				       uint8_t dplen, uint32_t prio)
{
	struct sadb_policy p;

	memset(&p, 0, sizeof(p));
	p.dir = dir;
	p.action = SADB_ACT_PROTECT;
	p.proto = SADB_PROTO_ESP;
	p.mode = SADB_MODE_TUNNEL;
	p.priority = prio;
	p.reqid = 7;
	t_sel_any(&p.sel);
	if (src) {
		p.sel.src = t_addr(src);
		p.sel.src_plen = splen;
	}
	if (dst) {
		p.sel.dst = t_addr(dst);
		p.sel.dst_plen = dplen;
	}
	p.tun_src = t_addr(p.sel.src.family == AF_INET6 || p.sel.dst.family == AF_INET6 ? "2001:db8::1" : "192.0.2.1");
	p.tun_dst = t_addr(p.tun_src.family == AF_INET6 ? "2001:db8::2" : "192.0.2.2");
	return p;
}

static inline struct sadb_pkt_sel t_pkt(const char *src, const char *dst, uint8_t proto, uint16_t sport,
					uint16_t dport)
{
	struct sadb_pkt_sel k;

	memset(&k, 0, sizeof(k));
	k.src = t_addr(src);
	k.dst = t_addr(dst);
	k.proto = proto;
	k.sport = sport;
	k.dport = dport;
	return k;
}

/* Versioned records for the concurrency and crash tests: every byte a writer sets derives from
 * (identity, version), and a test checksum over them sits in ike_id, so a reader can tell a whole
 * version from a mix of two without trusting libsadb. */
static inline uint64_t t_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

static inline uint32_t t_fnv(const void *p, size_t n, uint32_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static inline uint32_t t_sa_sum(const struct sadb_sa *sa)
{
	uint32_t h = 2166136261u;
	h = t_fnv(&sa->spi, 4, h);
	h = t_fnv(&sa->reqid, 4, h);
	h = t_fnv(sa->enc_key, sizeof(sa->enc_key), h);
	h = t_fnv(sa->salt, sizeof(sa->salt), h);
	h = t_fnv(&sa->soft, sizeof(sa->soft), h);
	h = t_fnv(&sa->hard, sizeof(sa->hard), h);
	h = t_fnv(&sa->mtu, 4, h);
	h = t_fnv(&sa->tfc_pad, 2, h);
	return h;
}

static inline struct sadb_sa t_sa_version(uint32_t spi, uint32_t version)
{
	struct sadb_sa sa = t_sa(spi, "10.0.0.1", "10.0.0.2");
	uint64_t x = t_mix((uint64_t)spi << 32 | version);

	sa.reqid = version;
	for (int i = 0; i < 32; i++) {
		x = t_mix(x + (uint64_t)i);
		sa.enc_key[i] = (uint8_t)x;
	}
	memcpy(sa.salt, &x, 4);
	sa.soft.bytes = t_mix(x + 1) >> 2;
	sa.hard.bytes = sa.soft.bytes + 1000;
	sa.soft.packets = t_mix(x + 2) >> 2;
	sa.hard.packets = sa.soft.packets + 1;
	sa.soft.add_seconds = 100 + version;
	sa.hard.add_seconds = 200 + version;
	sa.mtu = (uint32_t)t_mix(x + 3);
	sa.tfc_pad = (uint16_t)version;
	sa.ike_id = t_sa_sum(&sa);
	return sa;
}

/* The version of a whole record, or -1 for a torn or foreign one. */
static inline long t_sa_check(const struct sadb_sa *sa)
{
	struct sadb_sa want;

	if (sa->ike_id != t_sa_sum(sa))
		return -1;
	want = t_sa_version(sa->spi, sa->reqid);
	if (memcmp(want.enc_key, sa->enc_key, 32) || memcmp(want.salt, sa->salt, 4) ||
	    want.hard.bytes != sa->hard.bytes || want.mtu != sa->mtu)
		return -1;
	return (long)sa->reqid;
}

static inline struct sadb *t_open(const char *path, uint32_t max_sa, uint32_t max_pol)
{
	struct sadb_params prm = { max_sa, max_pol };
	struct sadb *db = NULL;
	char msg[256];
	int r = sadb_open(path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg));

	if (r) {
		fprintf(stderr, "sadb_open(%s): %d %s\n", path, r, msg);
		abort();
	}
	return db;
}

#endif
