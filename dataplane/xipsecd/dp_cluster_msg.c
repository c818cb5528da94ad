/* dataplane/xipsecd/dp_cluster_msg.c: the messages of the cluster's sync channel (UDP between the two
 * xipsecds, dp_cluster.c): their wire form, their AEAD, their replay check, the SAs' cross-node key
 * and the cluster key file.
 *
 * Wire form: a 28-byte header in clear, authenticated as associated data: "XCL1", the sender's
 * 64-bit counter (big-endian), its direction byte (its rank) and its 15-byte salt; then, encrypted
 * with XChaCha20-Poly1305 (libsodium) under the cluster key with the nonce counter | direction |
 * salt: type, role, eligible, entry count, and that many entries of 48 bytes (SPI, protocol,
 * direction, family, destination, key fingerprint, two 64-bit values); then the 16-byte tag.
 *
 * Why the nonce is never used twice under the key, without state on disk: both nodes share the key,
 * so the direction byte (the rank, 0 or 1, from the nodes' addresses) separates their nonces; within
 * one direction the counter is strictly increasing within a process, and the salt is 15 random
 * bytes drawn at each start (getrandom), so two starts of one node collide only if their salts do
 * (2^-120), whatever the clock did in between. XChaCha20's 24-byte nonce leaves room for the salt;
 * a 12-byte nonce would have needed a counter persisted across restarts.
 *
 * Why replays are refused: the counter is also the message's time (it starts at CLOCK_REALTIME in
 * ns and each message takes the greater of the next number and the clock), so a receiver accepts a
 * counter only above the highest it accepted and within DPC_SKEW_NS of its own clock. After a
 * restart of the receiver (the highest forgotten) a message recorded in the last 30 s could be
 * accepted once: every value a message carries is merged by max (a lease end recorded, a window top,
 * an acknowledgement), so a replayed one only makes the receiver more careful, never reuse a number;
 * the resync's completion echoes the receiver's fresh token (dp_cluster.c), so it cannot be replayed
 * into eligibility. A message with the receiver's own direction byte (one of its own, reflected
 * back) is refused too. The nodes' clocks must agree within 30 s (NTP). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "dataplane/xipsecd/dp_cluster.h"

#define DPC_MAGIC "XCL1"
#define DPC_HDR 28u
#define DPC_ENTRY 48u
#define DPC_TAG crypto_aead_xchacha20poly1305_ietf_ABYTES

_Static_assert(DPC_HDR + 4 + DPC_MAX_ENTRIES * DPC_ENTRY + DPC_TAG <= DPC_MSG_MAX, "message size");
_Static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == 24, "nonce layout");

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

int dpc_chan_init(struct dpc_chan *c, const uint8_t key[DPC_KEY_LEN], unsigned rank, uint64_t now_ns)
{
	if (sodium_init() < 0)
		return -EIO;
	memset(c, 0, sizeof(*c));
	memcpy(c->key, key, DPC_KEY_LEN);
	c->dir = (uint8_t)rank;
	c->next = now_ns;
	if (getrandom(c->salt, sizeof(c->salt), 0) != (ssize_t)sizeof(c->salt))
		return -EIO;
	return 0;
}

size_t dpc_seal(struct dpc_chan *c, struct dpc_msg *m, uint8_t *buf, uint64_t now_ns)
{
	uint8_t pt[4 + DPC_MAX_ENTRIES * DPC_ENTRY], *p = pt;
	unsigned long long clen = 0;
	unsigned n = m->n > DPC_MAX_ENTRIES ? DPC_MAX_ENTRIES : m->n;

	m->counter = c->next > now_ns ? c->next : now_ns;
	c->next = m->counter + 1;
	memcpy(buf, DPC_MAGIC, 4);
	put64(buf + 4, m->counter);
	buf[12] = c->dir;
	memcpy(buf + 13, c->salt, sizeof(c->salt));
	*p++ = m->type;
	*p++ = m->role;
	*p++ = m->eligible;
	*p++ = (uint8_t)n;
	for (unsigned i = 0; i < n; i++, p += DPC_ENTRY) {
		const struct dpc_entry *e = &m->e[i];

		put64(p, (uint64_t)e->key.spi << 32 | (uint32_t)e->key.proto << 24 |
			 (uint32_t)e->key.dir << 16 | (uint32_t)e->key.family << 8);
		memcpy(p + 8, e->key.dst, 16);
		memcpy(p + 24, e->key.fp, 8);
		put64(p + 32, e->base);
		put64(p + 40, e->end);
	}
	crypto_aead_xchacha20poly1305_ietf_encrypt(buf + DPC_HDR, &clen, pt, (size_t)(p - pt), buf,
						   DPC_HDR, NULL, buf + 4, c->key);
	sodium_memzero(pt, sizeof(pt));
	return DPC_HDR + (size_t)clen;
}

int dpc_open(struct dpc_chan *c, const uint8_t *buf, size_t len, uint64_t now_ns, struct dpc_msg *m,
	     enum dpc_drop *why)
{
	uint8_t pt[4 + DPC_MAX_ENTRIES * DPC_ENTRY];
	unsigned long long plen = 0;
	uint64_t ctr;
	const uint8_t *p = pt;

	if (len < DPC_HDR + DPC_TAG + 4 || len > DPC_HDR + DPC_TAG + sizeof(pt) || memcmp(buf, DPC_MAGIC, 4)) {
		*why = DPC_DROP_SHORT;
		return -1;
	}
	if (buf[12] == c->dir) {
		*why = DPC_DROP_REFLECTED;
		return -1;
	}
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, &plen, NULL, buf + DPC_HDR, len - DPC_HDR, buf,
						       DPC_HDR, buf + 4, c->key) != 0) {
		*why = DPC_DROP_AUTH;
		return -1;
	}
	/* checked after the tag: an unauthenticated counter must not move anything */
	ctr = get64(buf + 4);
	if (ctr <= c->peer_top) {
		*why = DPC_DROP_REPLAY;
		return -1;
	}
	if (ctr + DPC_SKEW_NS < now_ns || ctr > now_ns + DPC_SKEW_NS) {
		*why = DPC_DROP_STALE;
		return -1;
	}
	memset(m, 0, sizeof(*m));
	m->type = *p++;
	m->role = *p++;
	m->eligible = *p++;
	m->n = *p++;
	if (m->type == 0 || m->type >= DPC_TYPE_MAX || m->n > DPC_MAX_ENTRIES || plen != 4 + (size_t)m->n * DPC_ENTRY) {
		*why = DPC_DROP_BAD;
		return -1;
	}
	for (unsigned i = 0; i < m->n; i++, p += DPC_ENTRY) {
		struct dpc_entry *e = &m->e[i];
		uint64_t w = get64(p);

		e->key.spi = (uint32_t)(w >> 32);
		e->key.proto = (uint8_t)(w >> 24);
		e->key.dir = (uint8_t)(w >> 16);
		e->key.family = (uint8_t)(w >> 8);
		memcpy(e->key.dst, p + 8, 16);
		memcpy(e->key.fp, p + 24, 8);
		e->base = get64(p + 32);
		e->end = get64(p + 40);
	}
	c->peer_top = ctr;
	m->counter = ctr;
	sodium_memzero(pt, sizeof(pt));
	return 0;
}

void dpc_sa_key(const struct sadb_sa *sa, struct dpc_sa_key *k)
{
	static const char label[] = "xipsec cluster sa v1";
	uint8_t buf[sizeof(label) + 8 + SADB_ENC_KEY_MAX + SADB_SALT_MAX + SADB_AUTH_KEY_MAX], md[32];
	unsigned n = sizeof(label), mdlen = 0;

	memset(k, 0, sizeof(*k));
	k->spi = sa->spi;
	k->proto = sa->proto;
	k->dir = sa->dir;
	k->family = sa->dst.family;
	memcpy(k->dst, sa->dst.a.b, 16);
	memcpy(buf, label, sizeof(label));
	buf[n++] = (uint8_t)(sa->enc_alg >> 8);
	buf[n++] = (uint8_t)sa->enc_alg;
	buf[n++] = (uint8_t)(sa->auth_alg >> 8);
	buf[n++] = (uint8_t)sa->auth_alg;
	memcpy(buf + n, sa->enc_key, sa->enc_key_len);
	n += sa->enc_key_len;
	memcpy(buf + n, sa->salt, sa->salt_len);
	n += sa->salt_len;
	memcpy(buf + n, sa->auth_key, sa->auth_key_len);
	n += sa->auth_key_len;
	if (EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL) && mdlen == 32)
		memcpy(k->fp, md, sizeof(k->fp));
	explicit_bzero(buf, sizeof(buf));
	explicit_bzero(md, sizeof(md));
}

int dpc_key_load(const char *path, uint8_t key[DPC_KEY_LEN], char *msg, size_t len)
{
	char txt[2 * DPC_KEY_LEN + 2];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), err = -EINVAL;

	if (fd < 0) {
		err = -errno;
		snprintf(msg, len, "cluster key %s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(msg, len, "cluster key %s: must be a regular file of ours, mode 0600 (no group or "
			 "other access)", path);
		goto out;
	}
	n = read(fd, txt, sizeof(txt));
	if (n == 2 * DPC_KEY_LEN + 1 && txt[2 * DPC_KEY_LEN] == '\n')
		n--;
	if (n != 2 * DPC_KEY_LEN) {
		snprintf(msg, len, "cluster key %s: must hold 64 hex digits (and a newline)", path);
		goto out;
	}
	{
		size_t bin = 0;
		const char *end = NULL;

		if (sodium_hex2bin(key, DPC_KEY_LEN, txt, 2 * DPC_KEY_LEN, NULL, &bin, &end) || bin != DPC_KEY_LEN ||
		    end != txt + 2 * DPC_KEY_LEN) {
			snprintf(msg, len, "cluster key %s: must hold 64 hex digits (and a newline)", path);
			goto out;
		}
	}
	err = 0;
out:
	explicit_bzero(txt, sizeof(txt));
	close(fd);
	return err;
}
