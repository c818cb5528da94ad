/* dataplane/xipsecd/dp_seqmark.c: persistent high-water marks of outbound sequence numbers, for SAs whose
 * key outlives the SADB (manual keys with counter-mode ciphers, whatever wrote them), and ceilings
 * of inbound replay windows of manual keys (below).
 *
 * Why: with AES-GCM, AES-GMAC, AES-CTR and ChaCha20-Poly1305 the sequence number is the nonce. The
 * SADB's runtime area (rt->seq_reserved) survives a restart of xipsecd, but not a flush and reload of
 * the same configuration nor a reboot (the SADB lives in memory, /run/xipsec): a static key would start again at 1 and
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
 * What decides is the SA itself, not a flag a writer may forget: every outbound SA of a manual key
 * (ike_id 0) with a counter-mode cipher is leased, SADB_SAF_SEQ_PERSIST or not (dp_sa.c hands the
 * engine the flag), so an SA from any libsadb writer sends nothing beyond its lease.
 *
 * A missing mark is not "mark 0". The argument above holds only while the mark file lives as long as
 * the key: a wiped or reinstalled state directory, a restored VM snapshot (the mark rolls back with
 * the disk), the same configuration on a clone or a standby (two boxes, one key, two marks) all
 * send nonces a second time, and no box can tell that from the inside. So a key without a mark is
 * leased only when the operator said it is new (SADB_SAF_SEQ_NEW, `ipsecctl load --new-keys`);
 * otherwise it is refused, its packets dropped as seq_lease and the risk logged. What remains — a
 * snapshot or a clone that carries the mark along with the key — is a copy of the whole box, and
 * the answer is IKE, whose keys die with the box (ipsecctl(8)).
 *
 * The file is named by a fingerprint of the key, never the key: SHA-256 over a domain label, the
 * transform, the key and the salt, truncated to 128 bits. It holds one line "xipsec-seqmark 1 MARK".
 * A file that is not a regular file of ours with mode 0600, or that does not parse, is refused: the
 * SA then sends nothing (its packets are dropped, counted as seq_lease) and the error is logged.
 *
 * Many at once (dp_seqmark_lease_batch): a home agent with 10,000 mobile nodes starts with 20,000
 * such SAs, and two fsyncs each (the file, the directory) kept the dataplane from starting for 14 s
 * (ext4; 4 s batched). A batch takes the directory's lock once, writes every new mark to its
 * temporary file, makes them all durable with one syncfs(2) of the state directory's filesystem,
 * renames them, and makes the renames durable with one fsync of the directory; only then are the
 * numbers of any of them usable. The order of "on disk, then usable" is the one above for each SA, so the argument
 * holds unchanged; a failure of either sync fails every lease of the batch (none is raised). Two
 * SAs of one key in one batch would read the same old mark: the second and later of a fingerprint
 * are leased one at a time after the batch, each reading the mark the one before it wrote.
 *
 * Inbound, the same files hold replay-window ceilings. Why: the replay window of an inbound SA lives
 * in the SADB's runtime area, which a reboot or a flush and reload empties; a manual key outlives
 * it, so an empty window would accept again any packet recorded under the key at any earlier time
 * (a Binding Update that moves a home address back to an old care-of address, a stream replayed
 * into the protected network). So the window of every inbound SA of a manual key (ike_id 0) with a
 * window is held under a ceiling recorded on disk, one file per (SPI, keys): ESP and AH
 * authenticate the SPI, so a packet recorded under another SPI does not verify here anyway.
 *
 * The scheme, a lease like the outbound one: the engine accepts no number above rt->seq_lease (the
 * ceiling; SEQ_LEASE drops meanwhile). The ceiling is raised to the window's top + B (B =
 * $XIPSEC_WINDOW_LEASE, default 4096) when less than B/2 is left, or to the highest number the
 * ceiling refused + B once its packet verified (a peer whose own lease jumped ahead after its
 * reload: one packet and the time of a sync lost, never the whole gap, and never moved by a number
 * nobody authenticated): the new mark is written, synced
 * and renamed as above BEFORE rt->seq_lease lets the window cross the old one. So every number the
 * window ever accepted under the key is at most the mark on disk. A runtime area without a
 * ceiling (a reboot, a reload: a new SA instance) has accepted nothing yet (every number is above
 * a ceiling of 0), and its window is first started at the mark with every number under it taken
 * (esp_replay_seed): after any crash, reload or reboot, no number at or below the mark, hence no
 * packet accepted before, is accepted again. A restart of xipsecd alone keeps the runtime area, its
 * ceiling and its window (exact, as before).
 * We chose this over persisting the window's top every N packets or T ms: that lags, and whatever
 * arrived between the last write and a crash could be replayed once; the ceiling never accepts a
 * replay. Its cost, the residual: after a crash or reboot, the peer's genuine numbers between what
 * it last sent and the ceiling are refused as replays, at most B numbers (the ceiling is never
 * more than B above the window's top); the peer's traffic is dropped until its counter passes the
 * ceiling: 4096 packets, 40 ms at 100,000 packets/s, longer for a slow peer (a peer that sends
 * little loses a few packets' worth of its time: its numbers are what it has sent, not seconds).
 * The rate the scheme sustains per SA without SEQ_LEASE drops is about B/2 numbers per extension
 * (the control thread's tick, 5 ms, plus two fsyncs): some 100,000 packets/s per SA with 4096;
 * a faster manual SA needs a larger B (the loss after a crash grows with it) or, better, IKE.
 * A missing mark is refused like an outbound one (SADB_SAF_SEQ_NEW, `ipsecctl load --new-keys`,
 * starts a key without one): a wiped state directory, a restored snapshot or another box with the
 * same key would otherwise accept what was recorded, and no box can tell that from the inside.
 * Windowless SAs (SADB_SAF_NO_REPLAY) have no replay protection to keep and are not held.
 * That loss is a crash's only. When an SA's objects are gone for good (the SA deleted, after the
 * RCU grace period; xipsecd stopping, after its workers) its window is final, and the mark is
 * brought down to the exact top (dp_seqmark_release_batch): a flush and reload, a clean restart or
 * an orderly reboot then starts the window exactly where it was, and the peer loses nothing. An SA
 * of a manual key added is leased only after the grace period that retires the SAs it replaces
 * (dp_sa_sync; it accepts nothing meanwhile), so it reads the mark its predecessor brought down;
 * and a table never holds an SA beside its successor of the same SPI, protocol and destination,
 * which a sync that reads the SADB while a reload changes it could otherwise see (drop_replaced in
 * dp_sa.c): both would be leased in one batch, the successor's window started at the ceiling of
 * an SA already gone. */
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

#include "dataplane/engine/esp.h"
#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_seqmark.h"

#define SEQMARK_LEASE_DEFAULT (1u << 20)
#define SEQMARK_WINDOW_DEFAULT 4096u
#define SEQMARK_WINDOW_MAX (1u << 24)
#define SEQMARK_MAGIC "xipsec-seqmark 1"

uint64_t dp_seqmark_lease_size(void)
{
	static uint64_t size;

	if (!size)
		size = dp_env_u64(DP_ENV_SEQ_LEASE, SEQMARK_LEASE_DEFAULT, 1, 1ull << 31);
	return size;
}

uint64_t dp_seqmark_window_block(void)
{
	static uint64_t size;

	if (!size)
		size = dp_env_u64(DP_ENV_WINDOW_LEASE, SEQMARK_WINDOW_DEFAULT, 64, SEQMARK_WINDOW_MAX);
	return size;
}

bool dp_seqmark_needed(const struct sadb_sa *sa)
{
	if (sa->dir == SADB_DIR_IN)
		return ((sa->flags & SADB_SAF_SEQ_PERSIST) || !sa->ike_id) && sa->replay_window &&
		       !(sa->flags & SADB_SAF_NO_REPLAY);
	return sa->dir == SADB_DIR_OUT &&
	       ((sa->flags & SADB_SAF_SEQ_PERSIST) || (!sa->ike_id && sadb_sa_counter_mode(sa)));
}

/* The mark's file name: a fingerprint of the key, never the key. Outbound: over the cipher key and
 * salt (AH: the auth key), the nonce's key. Inbound: over the SPI and every key, since ESP and AH
 * authenticate the SPI with the sequence number: a packet recorded under another SPI or key does
 * not verify, so each (SPI, keys) has a window of its own. */
static int fingerprint(const struct sadb_sa *sa, char name[64])
{
	const char *label = sa->dir == SADB_DIR_IN ? "xipsec replaymark v1" : "xipsec seqmark v1";
	size_t ll = strlen(label) + 1;
	uint8_t buf[32 + 8 + SADB_ENC_KEY_MAX + SADB_SALT_MAX + SADB_AUTH_KEY_MAX], md[32];
	unsigned mdlen = 0, n = 0;
	bool in = sa->dir == SADB_DIR_IN;
	int ok;

	memcpy(buf, label, ll);
	n = (unsigned)ll;
	if (in) {
		for (int sh = 24; sh >= 0; sh -= 8)
			buf[n++] = (uint8_t)(sa->spi >> sh);
		buf[n++] = (uint8_t)(sa->auth_alg >> 8);
		buf[n++] = (uint8_t)sa->auth_alg;
	}
	buf[n++] = (uint8_t)sa->proto;
	buf[n++] = (uint8_t)(sa->enc_alg >> 8);
	buf[n++] = (uint8_t)sa->enc_alg;
	buf[n++] = sa->enc_key_len;
	memcpy(buf + n, sa->enc_key, sa->enc_key_len);
	n += sa->enc_key_len;
	memcpy(buf + n, sa->salt, sa->salt_len);
	n += sa->salt_len;
	if (in || sa->proto == SADB_PROTO_AH) { /* AH-GMAC keys its nonces with the auth key */
		memcpy(buf + n, sa->auth_key, sa->auth_key_len);
		n += sa->auth_key_len;
	}
	ok = EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL);
	explicit_bzero(buf, sizeof(buf));
	if (!ok || mdlen != 32)
		return -EIO;
	for (unsigned i = 0; i < 16; i++)
		snprintf(name + 2 * i, 3, "%02x", md[i]);
	strcpy(name + 32, in ? ".win" : ".seq");
	explicit_bzero(md, sizeof(md));
	return 0;
}

static int read_file(int dirfd, const char *name, uint64_t *mark, char *msg, size_t len);

/* The mark recorded in dirfd/name for sa. None yet: *mark = 0 for a key the operator said is new
 * (SADB_SAF_SEQ_NEW), else -ENOENT, since a lost mark cannot be told from a new key. */
static int read_mark(int dirfd, const char *name, const struct sadb_sa *sa, uint64_t *mark, char *msg,
		     size_t len)
{
	int r = read_file(dirfd, name, mark, msg, len);

	if (r != -ENOENT)
		return r;
	if (sa->flags & SADB_SAF_SEQ_NEW)
		return 0;
	if (sa->dir == SADB_DIR_IN)
		snprintf(msg, len, "no replay mark %s: a lost, wiped or copied mark would accept "
			 "recorded packets again, so the SA accepts nothing (a key never used before: "
			 "ipsecctl load --new-keys; else a new key, or IKE)", name);
	else
		snprintf(msg, len, "no sequence mark %s: a lost, wiped or copied mark would send "
			 "the key's nonces again, so the SA sends nothing (a key never used before: "
			 "ipsecctl load --new-keys; else a new key, or IKE)", name);
	return -ENOENT;
}

/* The number recorded in dirfd/name: 0, -ENOENT (no file, *v = 0), or another -errno with a
 * message (not ours, mode, contents). */
static int read_file(int dirfd, const char *name, uint64_t *mark, char *msg, size_t len)
{
	char buf[128];
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*mark = 0;
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0) {
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
		snprintf(msg, len, "%s does not hold a sequence mark; what it guards stays unused (remove "
			 "the file only together with a new key)", name);
		return -EPROTO;
	}
	*mark = v;
	return 0;
}

static void tmp_name(const char *name, char tmp[80])
{
	snprintf(tmp, 80, ".%s.%d", name, (int)getpid());
}

/* The new mark in name's temporary file, synced to disk (sync) or left to a later syncfs. */
static int write_tmp(int dirfd, const char *name, uint64_t mark, bool sync, char *msg, size_t len)
{
	char tmp[80], buf[64];
	int fd, n, r = 0;

	tmp_name(name, tmp);
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, len, "cannot create %s: %s", tmp, strerror(errno));
		return -errno;
	}
	n = snprintf(buf, sizeof(buf), SEQMARK_MAGIC " %" PRIu64 "\n", mark);
	errno = 0;
	if (fchmod(fd, 0600) < 0 || write(fd, buf, (size_t)n) != n || (sync && fsync(fd) < 0)) {
		r = errno ? -errno : -EIO;
		snprintf(msg, len, "cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
	}
	close(fd);
	if (r)
		unlinkat(dirfd, tmp, 0);
	return r;
}

static int write_mark(int dirfd, const char *name, uint64_t mark, char *msg, size_t len)
{
	char tmp[80];
	int r = write_tmp(dirfd, name, mark, true, msg, len);

	if (r)
		return r;
	tmp_name(name, tmp);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
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

/* The numbers of a lease recorded on disk become usable. Inbound, a runtime area without a ceiling
 * (whose objects have accepted nothing: every number is above a ceiling of 0) starts its window at
 * start first. */
static void lease_use(const struct sadb_sa *sa, struct sadb_runtime *rt, uint64_t start, uint64_t end)
{
	if (sa->dir == SADB_DIR_IN) {
		if (!__atomic_load_n(&rt->seq_lease, __ATOMIC_ACQUIRE))
			esp_replay_seed(rt, start);
	} else {
		raise_to(&rt->seq_reserved, start);
	}
	raise_to(&rt->seq_lease, end);
}

/* The lease to take for sa over the mark on disk: (start, end], start above both the mark and what
 * the SA had reserved. False when the space is used up (nothing to lease: the engine stops at the
 * wrap). One rule for the single and the batched lease.
 * Inbound: start is where the window must begin (the mark, when the runtime area has no ceiling
 * yet: nothing above the window's top is known to be unseen, see the top), end the new ceiling:
 * dp_seqmark_window_block numbers above the window's top (or want, the highest authenticated
 * number the ceiling refused: esp_sa_opts.window_want), never below the mark
 * nor the ceiling the SA has. */
static bool lease_range(const struct sadb_sa *sa, const struct sadb_runtime *rt, uint64_t mark,
			uint64_t want, uint64_t *start, uint64_t *end)
{
	uint64_t max = (sa->flags & SADB_SAF_ESN) ? UINT64_MAX : UINT32_MAX;

	if (sa->dir == SADB_DIR_IN) {
		uint64_t ceil = __atomic_load_n(&rt->seq_lease, __ATOMIC_ACQUIRE);
		uint64_t top = __atomic_load_n(&rt->replay_top, __ATOMIC_ACQUIRE);
		uint64_t block = dp_seqmark_window_block();

		*start = ceil ? 0 : mark;
		if (*start > top)
			top = *start;
		if (want > top)
			top = want;
		*end = max - top < block ? max : top + block;
		if (*end < mark)
			*end = mark;
		if (*end < ceil)
			*end = ceil;
		return !(*end == mark && *end == ceil);
	}
	*start = __atomic_load_n(&rt->seq_reserved, __ATOMIC_ACQUIRE);
	if (mark > *start)
		*start = mark;
	*end = max - *start < dp_seqmark_lease_size() ? max : *start + dp_seqmark_lease_size();
	return !(*end == mark && *end == max);
}

int dp_seqmark_lease(int dirfd, const struct sadb_sa *sa, struct sadb_runtime *rt, uint64_t want,
		     char *msg, size_t len)
{
	char name[64];
	uint64_t mark, start, end;
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
	r = read_mark(dirfd, name, sa, &mark, msg, len);
	if (r)
		goto out;
	if (!lease_range(sa, rt, mark, want, &start, &end))
		goto out; /* r is 0: nothing to lease */
	r = write_mark(dirfd, name, end, msg, len);
	if (r)
		goto out;
	/* On disk first, then the numbers become usable. */
	lease_use(sa, rt, start, end);
out:
	flock(dirfd, LOCK_UN);
	return r;
}

static int cmp_req(const void *a, const void *b)
{
	const struct dp_seqmark_req *x = *(struct dp_seqmark_req *const *)a;
	const struct dp_seqmark_req *y = *(struct dp_seqmark_req *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x < y ? -1 : x > y);
}

/* q fails with err: "what" alone, or "what: strerror(err)" */
static void req_fail(struct dp_seqmark_req *q, int err, const char *what, bool why)
{
	q->err = err;
	if (why)
		snprintf(q->msg, sizeof(q->msg), "%s: %s", what, strerror(-err));
	else
		snprintf(q->msg, sizeof(q->msg), "%s", what);
}

/* The n_written requests of rq in state WRITTEN: every temporary file's contents on disk (one
 * syncfs), then the renames, then those on disk (one fsync of the directory). Those still WRITTEN
 * afterwards are on disk; a failure puts a request back to PENDING with err and msg (a failed sync
 * fails every one). */
static void commit_batch(int dirfd, struct dp_seqmark_req *rq, unsigned n, unsigned n_written)
{
	int r = 0;

	if (n_written && syncfs(dirfd) < 0)
		r = -errno;
	for (unsigned i = 0; i < n; i++) {
		struct dp_seqmark_req *q = &rq[i];
		char tmp[80];

		if (q->state != DP_SEQMARK_WRITTEN)
			continue;
		tmp_name(q->name, tmp);
		if (r) {
			req_fail(q, r, "cannot sync the state directory's filesystem", true);
		} else if (renameat(dirfd, tmp, dirfd, q->name) < 0) {
			int e = errno;
			q->err = -e;
			snprintf(q->msg, sizeof(q->msg), "cannot rename %s to %s: %s", tmp, q->name, strerror(e));
		}
		if (q->err) {
			unlinkat(dirfd, tmp, 0);
			q->state = DP_SEQMARK_PENDING;
		}
	}
	if (n_written && !r && fsync(dirfd) < 0)
		r = -errno;
	for (unsigned i = 0; r && i < n; i++)
		if (rq[i].state == DP_SEQMARK_WRITTEN) {
			req_fail(&rq[i], r, "cannot sync the state directory", true);
			rq[i].state = DP_SEQMARK_PENDING;
		}
}

void dp_seqmark_lease_batch(int dirfd, struct dp_seqmark_req *rq, unsigned n)
{
	struct dp_seqmark_req **by = NULL;
	unsigned n_written = 0;
	int r;

	for (unsigned i = 0; i < n; i++) {
		rq[i].err = 0;
		rq[i].msg[0] = '\0';
		rq[i].state = DP_SEQMARK_PENDING;
	}
	if (n == 0)
		return;
	if (n == 1 || dirfd < 0) {
		for (unsigned i = 0; i < n; i++)
			rq[i].err = dp_seqmark_lease(dirfd, rq[i].sa, rq[i].rt, rq[i].want, rq[i].msg,
						     sizeof(rq[i].msg));
		return;
	}
	by = malloc(n * sizeof(*by));
	if (!by) {
		for (unsigned i = 0; i < n; i++)
			req_fail(&rq[i], -ENOMEM, "out of memory", false);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		by[i] = &rq[i];
		if (fingerprint(rq[i].sa, rq[i].name))
			req_fail(&rq[i], -EIO, "cannot compute the key fingerprint", false);
	}
	/* a fingerprint's second and later requests wait for the one before them (see the top) */
	qsort(by, n, sizeof(*by), cmp_req);
	for (unsigned i = 1; i < n; i++)
		if (!by[i]->err && !strcmp(by[i]->name, by[i - 1]->name))
			by[i]->state = DP_SEQMARK_AGAIN;
	if (flock(dirfd, LOCK_EX) < 0) {
		r = -errno;
		for (unsigned i = 0; i < n; i++)
			if (!rq[i].err)
				req_fail(&rq[i], r, "cannot lock the state directory", true);
		free(by);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct dp_seqmark_req *q = &rq[i];
		uint64_t mark;

		if (q->err || q->state == DP_SEQMARK_AGAIN)
			continue;
		q->err = read_mark(dirfd, q->name, q->sa, &mark, q->msg, sizeof(q->msg));
		if (q->err)
			continue;
		if (!lease_range(q->sa, q->rt, mark, q->want, &q->start, &q->end)) {
			q->state = DP_SEQMARK_DONE; /* used up: nothing to lease */
			continue;
		}
		q->err = write_tmp(dirfd, q->name, q->end, false, q->msg, sizeof(q->msg));
		if (!q->err) {
			q->state = DP_SEQMARK_WRITTEN;
			n_written++;
		}
	}
	commit_batch(dirfd, rq, n, n_written);
	for (unsigned i = 0; i < n; i++) {
		struct dp_seqmark_req *q = &rq[i];

		if (q->state != DP_SEQMARK_WRITTEN)
			continue;
		/* On disk first, then the numbers become usable. */
		lease_use(q->sa, q->rt, q->start, q->end);
		q->state = DP_SEQMARK_DONE;
	}
	flock(dirfd, LOCK_UN);
	/* the later requests of a fingerprint, in order, each over the mark the one before wrote */
	for (unsigned i = 0; i < n; i++)
		if (by[i]->state == DP_SEQMARK_AGAIN)
			by[i]->err = dp_seqmark_lease(dirfd, by[i]->sa, by[i]->rt, by[i]->want, by[i]->msg,
						      sizeof(by[i]->msg));
	free(by);
}

void dp_seqmark_release_batch(int dirfd, struct dp_seqmark_req *rq, unsigned n)
{
	unsigned n_written = 0;

	if (n == 0 || dirfd < 0 || flock(dirfd, LOCK_EX) < 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		struct dp_seqmark_req *q = &rq[i];
		uint64_t mark;

		q->state = DP_SEQMARK_DONE;
		q->err = 0;
		q->msg[0] = '\0';
		/* the runtime area still its SA's, the mark its own (no other SA of the same SPI and
		 * keys raised it since), and a top below it: else the ceiling stays the mark */
		if (__atomic_load_n(&q->rt->instance, __ATOMIC_ACQUIRE) != q->sa->instance ||
		    fingerprint(q->sa, q->name) || read_file(dirfd, q->name, &mark, q->msg, sizeof(q->msg)))
			continue;
		q->start = __atomic_load_n(&q->rt->replay_top, __ATOMIC_ACQUIRE);
		q->end = __atomic_load_n(&q->rt->seq_lease, __ATOMIC_ACQUIRE);
		if (mark != q->end || q->start >= mark)
			continue;
		q->err = write_tmp(dirfd, q->name, q->start, false, q->msg, sizeof(q->msg));
		if (!q->err) {
			q->state = DP_SEQMARK_WRITTEN;
			n_written++;
		}
	}
	commit_batch(dirfd, rq, n, n_written);
	for (unsigned i = 0; i < n; i++)
		if (rq[i].state == DP_SEQMARK_WRITTEN) /* on disk: the window ends at its top */
			__atomic_store_n(&rq[i].rt->seq_lease, rq[i].start, __ATOMIC_RELEASE);
	flock(dirfd, LOCK_UN);
}

bool dp_seqmark_due(const struct sadb_sa *sa, const struct sadb_runtime *rt, uint64_t want)
{
	uint64_t max = (sa->flags & SADB_SAF_ESN) ? UINT64_MAX : UINT32_MAX;

	if (sa->dir == SADB_DIR_IN) {
		uint64_t top = __atomic_load_n(&rt->replay_top, __ATOMIC_RELAXED);
		uint64_t ceil = __atomic_load_n(&rt->seq_lease, __ATOMIC_RELAXED);

		if (ceil >= max)
			return false;
		return want > ceil || top >= ceil || ceil - top <= dp_seqmark_window_block() / 2;
	}

	uint64_t res = __atomic_load_n(&rt->seq_reserved, __ATOMIC_RELAXED);
	uint64_t lease = __atomic_load_n(&rt->seq_lease, __ATOMIC_RELAXED);

	if (lease >= max)
		return false; /* leased to the end of the space */
	return res >= lease || lease - res <= dp_seqmark_lease_size() / 2;
}

/* "bu-" and the home address in hex: not a secret, and one file per mobile node. */
static void bu_name(const uint8_t hoa[16], char name[64])
{
	strcpy(name, "bu-");
	for (unsigned i = 0; i < 16; i++)
		snprintf(name + 3 + 2 * i, 3, "%02x", hoa[i]);
	strcpy(name + 35, ".seq");
}

int dp_seqmark_bu_store(int dirfd, const uint8_t hoa[16], uint16_t seq, char *msg, size_t len)
{
	char name[64];

	if (dirfd < 0) {
		snprintf(msg, len, "no usable state directory");
		return -ENOENT;
	}
	bu_name(hoa, name);
	return write_mark(dirfd, name, seq, msg, len);
}

int dp_seqmark_bu_load(int dirfd, const uint8_t hoa[16], uint16_t *seq, char *msg, size_t len)
{
	char name[64];
	uint64_t v;
	int r;

	if (dirfd < 0) {
		snprintf(msg, len, "no usable state directory");
		return -EBADF;
	}
	bu_name(hoa, name);
	r = read_file(dirfd, name, &v, msg, len);
	if (!r && v > UINT16_MAX) {
		snprintf(msg, len, "%s holds %" PRIu64 ", not a Binding Update sequence number", name, v);
		r = -EPROTO;
	}
	*seq = (uint16_t)v;
	return r;
}
