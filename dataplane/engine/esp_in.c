/* dataplane/engine/esp_in.c: inbound ESP (RFC 4303 §3.4): header and length checks, the replay check
 * before decryption, batch decryption with ICV verification, trailer checks (padding, pad length,
 * next header), decapsulation (tunnel: RFC 6040 ECN, optional DSCP copy; transport: the headers
 * put back together) and the replay window update only for packets that passed everything. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/engine/esp_internal.h"

/* Per-packet facts carried from the checks to the completion. */
struct in_state {
	uint8_t *ip;        /* packet start */
	uint8_t *esp;       /* ESP header */
	uint32_t len;       /* IP packet length (trimmed to its header's length) */
	uint32_t prefix;    /* bytes before ESP (or before the UDP header) */
	uint32_t nh_off;    /* byte naming ESP/UDP */
	uint32_t clen;      /* payload + padding + pad length + next header */
};

/* Whether an SA takes the fast path of check() and finish(): tunnel mode, an AEAD or GMAC transform
 * (8-byte IV, 16-byte ICV, no block alignment), no ESN, no UDP encapsulation. */
static bool in_fast(const struct esp_sa *sa)
{
	return sa->mode == SADB_MODE_TUNNEL && (sa->kind == ESP_KIND_AEAD || sa->kind == ESP_KIND_GMAC) &&
	       sa->iv_len == 8 && sa->icv_len == 16 &&
	       sa->blk == 1 && !(sa->flags & SADB_SAF_ESN) && !sa->encap_dport;
}

/* fast is a constant at each call site: the compiler folds what in_fast() fixes. */
static inline __attribute__((always_inline)) bool check(struct esp_sa *sa, struct esp_pkt *p, struct esp_cop *c,
							struct in_state *st, uint64_t top, const bool fast)
{
	const uint32_t iv_len = fast ? 8u : sa->iv_len;
	const uint32_t icv_len = fast ? 16u : sa->icv_len;
	const uint32_t blk = fast ? 1u : sa->blk;
	const uint8_t kind = sa->kind; /* AEAD or GMAC when fast */
	const bool esn = !fast && (sa->flags & SADB_SAF_ESN);
	const bool encap = !fast && sa->encap_dport;
	uint8_t *ip = p->buf + p->off;
	uint32_t len = p->len, l4, nho;
	uint8_t proto;
	bool frag;

	uint8_t fam;
	/* Trimmed to the IP header's own length; an IPv4 header length that does not fit fails here
	 * rather than in the walk below, as truncated all the same. */
	if (!esp_ip_len(ip, len, &len, &fam))
		goto truncated;
	if (!esp_find_l4_fast(ip, len, &l4, &nho, &proto, &frag))
		goto truncated;
	if (frag) {
		p->drop = SADB_DROP_UNSUPPORTED; /* reassembly happens before the engine */
		return false;
	}
	st->prefix = l4;
	st->nh_off = nho;
	if (encap) {
		if (proto != IPPROTO_UDP) {
			p->drop = SADB_DROP_BAD_ENCAP;
			return false;
		}
		if (l4 + 8 > len || esp_rd16(ip + l4 + 4) < 8 || esp_rd16(ip + l4 + 4) > len - l4)
			goto truncated;
		len = l4 + esp_rd16(ip + l4 + 4); /* the datagram's own length (esp_parse_outer) */
		if (len - l4 - 8 < 4 || esp_rd32(ip + l4 + 8) == 0) {
			p->drop = SADB_DROP_BAD_ENCAP; /* keepalive or IKE (non-ESP marker) */
			return false;
		}
		l4 += 8;
	} else if (proto != IPPROTO_ESP) {
		p->drop = proto == IPPROTO_UDP ? SADB_DROP_BAD_ENCAP : SADB_DROP_UNSUPPORTED;
		return false;
	}
	uint8_t *esp = ip + l4;
	uint32_t elen = len - l4;
	if (elen < 8u + iv_len + icv_len + 2u)
		goto truncated;
	if (memcmp(esp, &sa->spi_be, 4) != 0) {
		p->drop = SADB_DROP_BAD_SPI;
		return false;
	}
	uint32_t clen = elen - 8u - iv_len - icv_len;
	if (blk > 1 && clen % blk)
		goto truncated;

	/* RFC 4303 §3.4.3: the replay check comes before any cryptographic work. */
	uint64_t seq = fast ? esp_rd32(esp + 4) : esp_replay_infer_at(sa, esp_rd32(esp + 4), top);
	enum sadb_drop r = esp_replay_check_at(sa, seq, top);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return false;
	}
	p->seq = seq;

	uint8_t *ivp = esp + 8;
	uint8_t *pl = ivp + iv_len;
	uint8_t *icv = pl + clen;
	memset(c, 0, offsetof(struct esp_cop, aadbuf));
	c->fix = NULL;
	uint64_t iv_raw = 0;
	if (iv_len == 8)
		memcpy(&iv_raw, ivp, 8);
	/* The received ICV is compared from a copy taken here, not read from the packet right after
	 * its decryption: there the read waited for the decryption's last (partial, masked) stores
	 * into the same lines, and with workers sharing one SA's stream that wait took a third of
	 * the decryption's time at 64 bytes (bench/scale, two threads on one SA against one: 1.54x
	 * before, 1.83x after; one thread unchanged). check_all has the line prefetched. */
	_Static_assert(sizeof(c->icv_save) >= 32, "the copy holds the largest ICV (HMAC-SHA-512-256)");
	memcpy(c->icv_save, icv, icv_len);
	c->icv_in = c->icv_save;
	c->tag = c->calc;
	switch (kind) {
	case ESP_KIND_AEAD:
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
		c->data = pl;
		c->data_len = clen;
		esp_cop_aad(c, esp, sa->spi_be, seq, esn);
		break;
	case ESP_KIND_GMAC:
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
		esp_cop_gmac(c, esp, pl, clen, seq, esn);
		break;
	default:
		c->auth = esp;
		c->auth_len = 8u + iv_len + clen;
		c->data = pl;
		c->data_len = sa->cipher == ESP_C_NULL ? 0 : clen;
		if (sa->cipher == ESP_C_AES_CBC || sa->cipher == ESP_C_3DES_CBC) {
			memcpy(c->iv, ivp, iv_len);
		} else if (sa->cipher == ESP_C_AES_CTR) {
			esp_nonce(c->iv, sa->salt, iv_raw, 1);
		}
		if (esn) {
			/* The high bits are hashed where the ICV is (the received ICV is aside, above). */
			esp_wr32(icv, (uint32_t)(seq >> 32));
			c->auth_len += 4;
		}
		break;
	}
	st->ip = ip;
	st->esp = esp;
	st->len = len;
	st->clen = clen;
	return true;
truncated:
	p->drop = SADB_DROP_TRUNCATED;
	return false;
}

/* Tunnel-mode decapsulation shared by ESP and AH (RFC 4303 §3.1.2, RFC 4302 §3.1.2), run once the ICV
 * has verified: esp_decap_tunnel_inline (esp_internal.h: inner header checks, RFC 6040 ECN, the
 * optional DSCP copy, the replay update only now, rule 2) given the outer traffic class of ip and
 * the first bytes of the inner header pl. */
static inline __attribute__((always_inline)) void decap_tunnel(struct esp_sa *sa, struct esp_pkt *p,
								const uint8_t *ip, uint8_t *pl, uint32_t plen,
								uint8_t next)
{
	uint64_t hdr8 = 0;
	if (ESP_LIKELY(plen >= 8))
		memcpy(&hdr8, pl, 8);
	else
		memcpy(&hdr8, pl, plen);
	esp_decap_tunnel_inline(sa, p, esp_ip_tos(ip), pl, plen, next, hdr8);
}

void esp_decap_tunnel(struct esp_sa *sa, struct esp_pkt *p, const uint8_t *ip, uint8_t *pl,
		      uint32_t plen, uint8_t next)
{
	decap_tunnel(sa, p, ip, pl, plen, next);
}

/* After a verified ICV: trailer checks and decapsulation. */
static inline __attribute__((always_inline)) void finish(struct esp_sa *sa, struct esp_pkt *p,
							  const struct in_state *st, const bool fast)
{
	const uint32_t icv_len = fast ? 16u : sa->icv_len;
	uint8_t *pl = st->esp + 8 + (fast ? 8u : sa->iv_len);
	uint32_t clen = st->clen;
	uint8_t padlen = pl[clen - 2], next = pl[clen - 1];
	if (padlen + 2u > clen) {
		p->drop = SADB_DROP_BAD_PAD;
		return;
	}
	/* RFC 4303 §2.4: default padding is 1, 2, 3, ...; the receiver checks it. Up to 8 bytes (all
	 * that 4-byte alignment needs) in one load: the ICV follows, so 8 bytes from pad are there. */
	const uint8_t *pad = pl + clen - 2 - padlen;
	uint64_t bad = 0;
	if (ESP_LIKELY(padlen <= 8 && icv_len >= 8)) {
		uint64_t v, want = 0x0807060504030201ULL;
		memcpy(&v, pad, 8);
		if (padlen < 8)
			bad = (v ^ want) & ((1ULL << (padlen * 8)) - 1);
		else
			bad = v ^ want;
	} else {
		for (unsigned i = 0; i < padlen; i++)
			bad |= (uint8_t)(pad[i] ^ (uint8_t)(i + 1));
	}
	if (bad) {
		p->drop = SADB_DROP_BAD_PAD;
		return;
	}
	uint32_t plen = clen - 2u - padlen;
	uint8_t *ip = st->ip;
	if (next == IPPROTO_NONE) {
		/* A dummy packet (RFC 4303 §2.6): authentic, discarded. */
		p->drop = SADB_DROP_BAD_NEXT_HDR;
		return;
	}
	if (fast || sa->mode == SADB_MODE_TUNNEL) {
		decap_tunnel(sa, p, ip, pl, plen, next); /* inline here, the hot path */
		return;
	}
	/* Transport: the headers before ESP move up to the payload, naming its protocol. */
	enum sadb_drop r = esp_replay_update(sa, p->seq);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return;
	}
	uint32_t prefix = st->prefix;
	uint8_t *n = pl - prefix;
	uint32_t nlen = prefix + plen;
	p->family = esp_transport_move(n, ip, prefix, st->nh_off, next, nlen);
	/* RFC 3948 §3.1.2: behind a NAT the TCP/UDP checksum covers addresses the packet no longer
	 * carries; it is recomputed over the packet as delivered (ESP vouched for its contents). */
	if (sa->encap_dport && (next == IPPROTO_TCP || next == IPPROTO_UDP))
		esp_l4_set_csum(n, prefix, nlen, next);
	p->off = (uint32_t)(n - p->buf);
	p->len = nlen;
}

/* The lines check() reads of a packet: its header's and its last one (the ICV, which it copies).
 * Addresses as integers: a malformed packet's may lie outside its buffer (a prefetch never faults;
 * check() bounds every length before it reads). */
static inline void prefetch_checked(const struct esp_pkt *p)
{
	uintptr_t ip = (uintptr_t)p->buf + p->off;
	__builtin_prefetch((const void *)ip);
	__builtin_prefetch((const void *)(ip + p->len - 1));
}

/* check() over the burst: the packets that go on in live[], their operations and states alongside. */
static inline __attribute__((always_inline)) unsigned check_all(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n,
								 struct esp_cop *cops, struct in_state *st,
								 struct esp_pkt **live, const bool fast)
{
	unsigned nl = 0;
	const uint64_t top = esp_replay_top(sa->rt); /* one read for the burst (esp_replay_check_at) */
	/* The packet eight ahead, the first eight at once: a check takes less than a miss to memory. */
	for (unsigned i = 0; i < n && i < 8; i++)
		prefetch_checked(pkts[i]);
	for (unsigned i = 0; i < n; i++) {
		if (i + 8 < n)
			prefetch_checked(pkts[i + 8]);
		if (check(sa, pkts[i], &cops[nl], &st[nl], top, fast))
			live[nl++] = pkts[i];
	}
	return nl;
}

void esp_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct in_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl;

	if (in_fast(sa)) {
		nl = check_all(sa, pkts, n, cops, st, live, true);
		if (!nl)
			return;
		sa->ops->decrypt(&sa->cs, cops, nl);
		esp_replay_lock(sa);
		for (unsigned i = 0; i < nl; i++) {
			if (!cops[i].ok) /* no ESN shift (GMAC) to undo on this path */
				live[i]->drop = SADB_DROP_ICV;
			else
				finish(sa, live[i], &st[i], true);
		}
		esp_replay_unlock(sa);
		return;
	}
	nl = check_all(sa, pkts, n, cops, st, live, false);
	if (!nl)
		return;
	sa->ops->decrypt(&sa->cs, cops, nl);
	esp_replay_lock(sa);
	for (unsigned i = 0; i < nl; i++) {
		struct esp_cop *c = &cops[i];
		esp_cop_unfix(c);
		if (!c->ok) {
			live[i]->drop = SADB_DROP_ICV;
			continue;
		}
		finish(sa, live[i], &st[i], false);
	}
	esp_replay_unlock(sa);
}
