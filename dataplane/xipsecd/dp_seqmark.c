/* dataplane/xipsecd/dp_seqmark.c: persistent high-water marks of outbound sequence numbers, for SAs whose
 * key outlives the SADB (manual keys, SADB_SAF_SEQ_PERSIST).
 *
 * Why: with AES-GCM, AES-GMAC, AES-CTR and ChaCha20-Poly1305 the sequence number is the nonce. The
 * SADB's runtime area (rt->seq_reserved) survives a restart of xipsecd, but not a flush and reload of
 * the same configuration nor a reboot (/dev/shm is cleared): a static key would start again at 1 and
 * send nonces 1..N a second time. So the numbers such an SA may use are leased from a mark kept on
 * disk, in the state directory (sadb_state_dir_open: ours, mode 0700), one file per key.
 *
 * The scheme: a lease takes the numbers (start, start + L] where start = max(rt->seq_reserved, the
 * mark on disk); the new mark start + L is written to a new file, fsync'ed and renamed over the old
 * one (then the directory is fsync'ed) BEFORE rt->seq_reserved is raised to start and rt->seq_lease
 * set to start + L; the engine never reserves above rt->seq_lease (SADB_DROP_SEQ_LEASE meanwhile).
 * So every number ever used under a key is at most the mark on disk, and every lease starts above
 * the mark and above whatever the SA had reserved: no number is used twice under one key, whatever
 * crashes, reloads or reboots come in between — and even if two SAs with the same key existed at
 * once (ipsecctl refuses that), each lease would still be disjoint from every other. A crash loses
 * at most the unused rest of a lease (L numbers of 2^32). The control thread extends a lease when
 * less than half of it is left; the read-modify-write of a mark holds an flock on the directory, so
 * several xipsecd (one per SADB) may share it.
 *
 * The file is named by a fingerprint of the key, never the key: SHA-256 over a domain label, the
 * transform, the key and the salt, truncated to 128 bits. It holds one line "xipsec-seqmark 1 MARK".
 * A file that is not a regular file of ours with mode 0600, or that does not parse, is refused: the
 * SA then sends nothing (its packets are dropped, counted as seq_lease) and the error is logged. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_seqmark.h"

#define SEQMARK_LEASE_DEFAULT (1u << 20)
#define SEQMARK_MAGIC "xipsec-seqmark 1"

uint64_t dp_seqmark_lease_size(void)
{
	static uint64_t size;
	const char *e;

	if (size)
		return size;
	size = SEQMARK_LEASE_DEFAULT;
	e = getenv(DP_ENV_SEQ_LEASE);
	if (e && *e) {
		char *end;
		unsigned long long v = strtoull(e, &end, 0);
		if (!*end && v >= 1 && v <= (1ull << 31))
			size = v;
		else
			dp_log(LOG_WARNING, "$%s=%s is not a lease size in 1..2^31; using %" PRIu64,
			       DP_ENV_SEQ_LEASE, e, size);
	}
	return size;
}

bool dp_seqmark_needed(const struct sadb_sa *sa)
{
	return sa->dir == SADB_DIR_OUT && (sa->flags & SADB_SAF_SEQ_PERSIST);
}

static int fingerprint(const struct sadb_sa *sa, char name[64])
{
	static const char label[] = "xipsec seqmark v1";
	uint8_t buf[sizeof(label) + 4 + SADB_ENC_KEY_MAX + SADB_SALT_MAX + SADB_AUTH_KEY_MAX], md[32];
	unsigned mdlen = 0, n = 0;
	int ok;

	memcpy(buf, label, sizeof(label));
	n = sizeof(label);
	buf[n++] = (uint8_t)sa->proto;
	buf[n++] = (uint8_t)(sa->enc_alg >> 8);
	buf[n++] = (uint8_t)sa->enc_alg;
	buf[n++] = sa->enc_key_len;
	memcpy(buf + n, sa->enc_key, sa->enc_key_len);
	n += sa->enc_key_len;
	memcpy(buf + n, sa->salt, sa->salt_len);
	n += sa->salt_len;
	if (sa->proto == SADB_PROTO_AH) { /* AH-GMAC keys its nonces with the auth key */
		memcpy(buf + n, sa->auth_key, sa->auth_key_len);
		n += sa->auth_key_len;
	}
	ok = EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL);
	explicit_bzero(buf, sizeof(buf));
	if (!ok || mdlen != 32)
		return -EIO;
	for (unsigned i = 0; i < 16; i++)
		snprintf(name + 2 * i, 3, "%02x", md[i]);
	strcpy(name + 32, ".seq");
	explicit_bzero(md, sizeof(md));
	return 0;
}

/* The mark recorded in dirfd/name: 0 and *mark = 0 when there is none yet. */
static int read_mark(int dirfd, const char *name, uint64_t *mark, char *msg, size_t len)
{
	char buf[128];
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*mark = 0;
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(msg, len, "cannot open %s: %s", name, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0600) {
		snprintf(msg, len, "%s is not a regular file owned by uid %u with mode 0600", name,
			 (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(msg, len, "cannot read %s: %s", name, strerror(errno));
		return -EIO;
	}
	buf[n] = '\0';
	unsigned long long v;
	int used = 0;
	if (strncmp(buf, SEQMARK_MAGIC " ", sizeof(SEQMARK_MAGIC)) ||
	    sscanf(buf + sizeof(SEQMARK_MAGIC), "%llu\n%n", &v, &used) != 1 ||
	    (size_t)used + sizeof(SEQMARK_MAGIC) != (size_t)n) {
		snprintf(msg, len, "%s does not hold a sequence mark; the SA stays unused (remove the file "
			 "only together with a new key)", name);
		return -EPROTO;
	}
	*mark = v;
	return 0;
}

static int write_mark(int dirfd, const char *name, uint64_t mark, char *msg, size_t len)
{
	char tmp[80], buf[64];
	int fd, n, r = 0;

	snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, len, "cannot create %s: %s", tmp, strerror(errno));
		return -errno;
	}
	n = snprintf(buf, sizeof(buf), SEQMARK_MAGIC " %" PRIu64 "\n", mark);
	if (fchmod(fd, 0600) < 0 || write(fd, buf, (size_t)n) != n || fsync(fd) < 0) {
		r = errno ? -errno : -EIO;
		snprintf(msg, len, "cannot write %s: %s", tmp, strerror(errno));
	}
	close(fd);
	if (!r && renameat(dirfd, tmp, dirfd, name) < 0) {
		r = -errno;
		snprintf(msg, len, "cannot rename %s to %s: %s", tmp, name, strerror(errno));
	}
	if (r) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	if (fsync(dirfd) < 0) {
		snprintf(msg, len, "cannot sync the state directory: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* Raise *p to at least v (the engine's workers CAS the same word). */
static void raise_to(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_ACQ_REL,
						       __ATOMIC_ACQUIRE))
		;
}

int dp_seqmark_lease(int dirfd, const struct sadb_sa *sa, struct sadb_runtime *rt, char *msg, size_t len)
{
	char name[64];
	uint64_t mark, start, end, max = (sa->flags & SADB_SAF_ESN) ? UINT64_MAX : UINT32_MAX;
	int r;

	if (dirfd < 0) {
		snprintf(msg, len, "no usable state directory");
		return -ENOENT;
	}
	r = fingerprint(sa, name);
	if (r) {
		snprintf(msg, len, "cannot compute the key fingerprint");
		return r;
	}
	if (flock(dirfd, LOCK_EX) < 0) {
		snprintf(msg, len, "cannot lock the state directory: %s", strerror(errno));
		return -errno;
	}
	r = read_mark(dirfd, name, &mark, msg, len);
	if (r)
		goto out;
	start = __atomic_load_n(&rt->seq_reserved, __ATOMIC_ACQUIRE);
	if (mark > start)
		start = mark;
	end = max - start < dp_seqmark_lease_size() ? max : start + dp_seqmark_lease_size();
	if (end == mark && end == max) {
		r = 0; /* the space is used up: nothing to lease, the engine stops at the wrap */
		goto out;
	}
	r = write_mark(dirfd, name, end, msg, len);
	if (r)
		goto out;
	/* On disk first, then the numbers become usable. */
	raise_to(&rt->seq_reserved, start);
	raise_to(&rt->seq_lease, end);
out:
	flock(dirfd, LOCK_UN);
	return r;
}

bool dp_seqmark_due(const struct sadb_runtime *rt, uint64_t max)
{
	uint64_t res = __atomic_load_n(&rt->seq_reserved, __ATOMIC_RELAXED);
	uint64_t lease = __atomic_load_n(&rt->seq_lease, __ATOMIC_RELAXED);

	if (lease >= max)
		return false; /* leased to the end of the space */
	return res >= lease || lease - res <= dp_seqmark_lease_size() / 2;
}
