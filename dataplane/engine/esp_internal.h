/* dataplane/engine/esp_internal.h: what the engine's files share and nobody else sees: the SA object, the
 * per-packet crypto operation handed to a backend in batches, the backend vtable and the small IP
 * helpers. Not part of the API (esp.h is). */
#ifndef XIPSEC_ESP_INTERNAL_H
#define XIPSEC_ESP_INTERNAL_H

#include <stdatomic.h>
#include <string.h>
#include <arpa/inet.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dataplane/engine/esp.h"

#define ESP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define ESP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* How a transform protects a packet; picks the code path in the backends. */
enum esp_kind {
	ESP_KIND_AEAD = 1,   /* GCM, ChaCha20-Poly1305: cipher + tag over aad */
	ESP_KIND_GMAC,       /* GMAC (ESP ENCR_NULL_AUTH_AES_GMAC or AH): tag over auth region only */
	ESP_KIND_CIPHER_HMAC,/* CBC, CTR, 3DES, NULL cipher, each with HMAC (ESP) */
	ESP_KIND_HMAC        /* AH with HMAC */
};

/* Cipher of an ESP_KIND_CIPHER_HMAC / AEAD transform. */
enum esp_cipher {
	ESP_C_NONE = 0, ESP_C_AES_CBC, ESP_C_AES_CTR, ESP_C_3DES_CBC, ESP_C_NULL,
	ESP_C_AES_GCM, ESP_C_CHACHA_POLY, ESP_C_AES_GMAC
};
enum esp_hmac { ESP_H_NONE = 0, ESP_H_MD5, ESP_H_SHA1, ESP_H_SHA256, ESP_H_SHA384, ESP_H_SHA512 };

/* One crypto operation on one packet, in place. Built by the protocol code, run by a backend in a
 * batch, so that multi-buffer backends can overlap packets. */
struct esp_cop {
	uint8_t *data;          /* cipher region (CBC: whole blocks), in place */
	uint32_t data_len;
	uint32_t auth_len;      /* HMAC: bytes hashed from auth; GMAC: bytes of AAD from auth */
	uint8_t *auth;          /* HMAC/GMAC region (ESN high bits already appended) */
	const uint8_t *aad;     /* AEAD: additional data (SPI, [seq hi,] seq) */
	uint32_t aad_len;
	uint32_t ok;            /* set by the backend: 1 = encrypted / ICV verified, 0 = failed */
	uint8_t *tag;           /* encrypt: tag written here (icv_len bytes) */
	const uint8_t *icv_in;  /* decrypt: the received ICV */
	uint8_t iv[16];         /* CBC IV, CTR counter block (16) or AEAD/GMAC nonce (12) */
	uint8_t aadbuf[16];     /* AEAD with ESN: SPI, seq hi, seq lo (RFC 4106 §5), 4 spare */
	uint8_t fix_save[4];    /* bytes to put back at fix after the operation (ESN shifts) */
	uint8_t *fix;
	uint8_t icv_save[32];   /* decrypt: the received ICV when its place holds ESN high bits */
	uint8_t calc[64];       /* decrypt: scratch for the computed tag */
};

struct esp_crypto_ops;

struct esp_sa {
	/* Hot fields first: read for every packet. */
	struct sadb_runtime *rt;
	const struct esp_crypto_ops *ops;
	void *cctx;              /* backend context (keys), owned by the backend */
	uint64_t seq_next;       /* outbound: next number to use */
	uint64_t seq_limit;      /* outbound: last number reserved in rt */
	uint64_t seq_max;        /* 2^32 - 1 or 2^64 - 1 */
	uint32_t spi;            /* host order */
	uint32_t spi_be;
	uint32_t window;         /* replay window, 0 = off */
	uint32_t mtu;            /* outer MTU, 0 = no check */
	uint32_t flags;          /* SADB_SAF_* */
	uint8_t  proto, mode, dir, kind;
	uint8_t  cipher, hmac;   /* enum esp_cipher / esp_hmac */
	uint8_t  icv_len;        /* bytes on the wire */
	uint8_t  iv_len;         /* explicit IV on the wire */
	uint8_t  align;          /* ESP payload+trailer alignment (cipher block or 4) */
	uint8_t  blk;            /* cipher block for CBC (16 AES, 8 3DES), else 1 */
	uint8_t  ttl, dscp;
	uint16_t tfc_pad;
	uint16_t encap_sport, encap_dport;
	uint32_t ip_id;          /* outbound tunnel IPv4: next identification, in [id_lo, id_end) */
	uint32_t id_lo, id_end;  /* this object's share of the 16-bit ID space (esp_sa_opts.id_part) */
	uint64_t instance;       /* sadb_sa.instance: the runtime area belongs to it while rt->instance
	                          * says so; esp_seq_refill and each burst check */
	uint8_t  seq_why;        /* outbound: why esp_seq_take failed (SEQ_OVERFLOW, STALE_SA, SEQ_LEASE) */
	uint8_t  ah_hdr_len;     /* AH: header bytes incl. IV and ICV, padded for IPv4 (4) */
	uint8_t  ah_hdr_len6;    /* AH: same, padded for IPv6 (8) */
	uint8_t  salt[4];
	bool     seq_done;       /* outbound: the sequence space is used up */
	uint32_t seq_block;
	enum esp_backend backend;
	esp_iv_fn iv_fn;
	void *iv_arg;
	struct sadb_addr src, dst;
	uint8_t  hdr4[20];       /* outbound tunnel: outer IPv4 header template (TOS, length, id, DF,
	                          * checksum filled per packet) */
	uint32_t hdr4_sum;       /* one's complement sum of the template's constant words */
	/* Outbound tunnel, fixed at setup (esp_outer_tos/esp_outer_df): outer TOS = (inner TOS &
	 * tos_keep) | tos_set; outer DF (0x40 of byte 6) = (inner DF & df_keep) | df_set. */
	uint8_t  tos_keep, tos_set, df_keep, df_set;
	uint16_t enc_alg, auth_alg;
	uint8_t enc_key_len, auth_key_len;
	uint8_t enc_key[SADB_ENC_KEY_MAX];
	uint8_t auth_key[SADB_AUTH_KEY_MAX];
};

/* A backend: sets up keys once per SA, then runs batches of operations. */
struct esp_crypto_ops {
	enum esp_backend id;
	const char *name;
	bool (*supports)(uint8_t kind, uint8_t cipher, uint8_t hmac, unsigned key_len);
	int (*init)(struct esp_sa *sa);          /* 0 or -errno; fills sa->cctx */
	void (*fini)(struct esp_sa *sa);         /* wipes and frees sa->cctx */
	/* n <= ESP_BURST_MAX. Encrypt writes tags; decrypt sets ok, and may decrypt data even when the
	 * ICV fails (the packet is dropped then). */
	void (*encrypt)(struct esp_sa *sa, struct esp_cop *ops, unsigned n);
	void (*decrypt)(struct esp_sa *sa, struct esp_cop *ops, unsigned n);
};

extern const struct esp_crypto_ops esp_crypto_openssl;
extern const struct esp_crypto_ops esp_crypto_sodium;
extern const struct esp_crypto_ops esp_crypto_native;
#ifdef HAVE_IPSEC_MB
extern const struct esp_crypto_ops esp_crypto_ipsecmb;
#endif

/* Digest size of an HMAC hash (the full one) and its block size. */
unsigned esp_hmac_digest_len(uint8_t hmac);
unsigned esp_hmac_block_len(uint8_t hmac);

/* Protocol halves (esp_out.c, esp_in.c, ah.c): process up to ESP_BURST_MAX packets; set drop. */
void esp_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void esp_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void ah_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void ah_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
/* Tunnel-mode inner packet checks, ECN/DSCP, replay update and unwrap, after a verified ICV. */
void esp_decap_tunnel(struct esp_sa *sa, struct esp_pkt *p, const uint8_t *ip, uint8_t *pl,
		      uint32_t plen, uint8_t next);

/* esp_sa_inner_mtu for a packet whose transport-mode headers kept in front are prefix bytes. */
uint32_t esp_inner_mtu_hdr(const struct esp_sa *sa, uint32_t outer_mtu, uint8_t inner_family,
			   uint32_t prefix);
/* Reserve the next block of outbound numbers in the runtime; false when none can be had now:
 * sa->seq_why says why (the space is used up, the runtime area belongs to another SA instance, or
 * the numbers above rt->seq_lease are not yet recorded on disk). */
bool esp_seq_refill(struct esp_sa *sa);
/* Take one outbound sequence number; false (drop with sa->seq_why) when none can be had. */
static inline bool esp_seq_take(struct esp_sa *sa, uint64_t *seq)
{
	if (ESP_UNLIKELY(sa->seq_next > sa->seq_limit || sa->seq_done) && !esp_seq_refill(sa))
		return false;
	*seq = sa->seq_next;
	if (ESP_UNLIKELY(sa->seq_next == sa->seq_max))
		sa->seq_done = true; /* the last number of the space: no wrap to 0 afterwards */
	else
		sa->seq_next++;
	return true;
}

/* Replay window over rt->replay_top/replay_bitmap (replay.c explains the ring). The check and the
 * inference run for every received packet before any crypto, so they are inline here. */
#define ESP_REPLAY_RING ((uint64_t)SADB_REPLAY_MAX)

static inline uint64_t esp_replay_top(const struct sadb_runtime *rt)
{
	return atomic_load_explicit((_Atomic uint64_t *)&rt->replay_top, memory_order_relaxed);
}

/* Full 64-bit number of a received low half (RFC 4303 Appendix A.2 with ESN; else the low half). */
static inline uint64_t esp_replay_infer(const struct esp_sa *sa, uint32_t seq_lo)
{
	if (!(sa->flags & SADB_SAF_ESN))
		return seq_lo;
	uint64_t top = esp_replay_top(sa->rt);
	uint32_t tl = (uint32_t)top, th = (uint32_t)(top >> 32);
	/* Without a window (manual keying, SADB_SAF_NO_REPLAY), infer around the top by half the space. */
	uint32_t w = sa->window ? sa->window : 0x80000000u;
	uint32_t bottom = tl - w + 1; /* modulo 2^32 */
	if (tl >= w - 1) {
		/* Case A: the window lies in one 2^32 subspace. */
		if (seq_lo >= bottom)
			return (uint64_t)th << 32 | seq_lo;
		return (uint64_t)(th + 1) << 32 | seq_lo; /* wrapped into the next subspace */
	}
	/* Case B: the window straddles a subspace boundary. */
	if (seq_lo >= bottom && th > 0)
		return (uint64_t)(th - 1) << 32 | seq_lo;
	return (uint64_t)th << 32 | seq_lo;
}

/* SADB_DROP_NONE if seq may be accepted, else REPLAY / REPLAY_OLD. Reads only. */
static inline enum sadb_drop esp_replay_check(const struct esp_sa *sa, uint64_t seq)
{
	if (seq == 0)
		return SADB_DROP_REPLAY_OLD; /* never sent: counters start at 1 (RFC 4303 §3.3.3) */
	if (!sa->window)
		return SADB_DROP_NONE;
	const struct sadb_runtime *rt = sa->rt;
	uint64_t top = esp_replay_top(rt);
	if (seq > top)
		return SADB_DROP_NONE;
	if (top - seq >= sa->window)
		return SADB_DROP_REPLAY_OLD;
	uint64_t bit = seq % ESP_REPLAY_RING;
	if (rt->replay_bitmap[bit / 64] & (1ULL << (bit % 64)))
		return SADB_DROP_REPLAY;
	return SADB_DROP_NONE;
}

/* Check again and mark seq as received (after the ICV verified). */
enum sadb_drop esp_replay_update_slow(struct esp_sa *sa, uint64_t seq);
static inline enum sadb_drop esp_replay_update(struct esp_sa *sa, uint64_t seq)
{
	struct sadb_runtime *rt = sa->rt;
	uint64_t top = esp_replay_top(rt);
	if (ESP_LIKELY(seq == top + 1 && seq != 0)) {
		/* In order, the common case: it passes the check (above the top), and the only number
		 * the window newly covers is seq itself, whose bit is set here: nothing to clear. */
		uint64_t bit = seq % ESP_REPLAY_RING;
		atomic_store_explicit((_Atomic uint64_t *)&rt->replay_top, seq, memory_order_relaxed);
		rt->replay_bitmap[bit / 64] |= 1ULL << (bit % 64);
		return SADB_DROP_NONE;
	}
	return esp_replay_update_slow(sa, seq);
}

/* ---- IP helpers (esp_ip.c) ---- */
/* Big-endian loads and stores as single unaligned accesses (the compiler emits movbe/bswap). */
static inline uint16_t esp_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return __builtin_bswap16(v);
}
static inline uint32_t esp_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}
static inline void esp_wr16(uint8_t *p, uint16_t v)
{
	v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
}
static inline void esp_wr32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}
/* One 8-byte store: an IV written in halves and read back whole stalls store forwarding. */
static inline void esp_wr64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* One 16-byte store of bytes lo (0-7, little-endian) and hi (8-15): headers, IVs and nonces read
 * back by the crypto code in 12/16-byte loads must not be written in pieces (store forwarding). */
static inline void esp_st16(void *p, uint64_t lo, uint64_t hi)
{
#ifdef __SSE2__
	_mm_storeu_si128((__m128i *)p, _mm_set_epi64x((long long)hi, (long long)lo));
#else
	memcpy(p, &lo, 8);
	memcpy((uint8_t *)p + 8, &hi, 8);
#endif
}

/* Nonce salt || IV || counter (RFC 4106/4543/7634 use the first 12 bytes, RFC 3686 all 16), from
 * the IV as 8 bytes in wire order loaded into iv_raw. */
static inline void esp_nonce(uint8_t *dst, const uint8_t salt[4], uint64_t iv_raw, uint32_t ctr)
{
	uint32_t s;
	memcpy(&s, salt, 4);
	esp_st16(dst, (uint64_t)s | iv_raw << 32, iv_raw >> 32 | (uint64_t)__builtin_bswap32(ctr) << 32);
}

/* Internet checksum of an IPv4 header (checksum field included as it is). */
uint16_t esp_ip4_csum(const uint8_t *hdr, unsigned len);
/* Recompute the IPv4 header checksum in place. */
void esp_ip4_set_csum(uint8_t *hdr);
/* UDP checksum over an IPv6 pseudo header + UDP header + payload (udp points to the UDP header). */
uint16_t esp_udp6_csum(const uint8_t *ip6, const uint8_t *udp, unsigned udp_len);

/* Recompute the TCP/UDP checksum of the segment at ip + l4 (packet length len). */
void esp_l4_set_csum(uint8_t *ip, uint32_t l4, uint32_t len, uint8_t proto);
/* Length of an IP header chain before the point where ESP/AH goes in transport mode, and the offset
 * of the next-header byte to rewrite. Returns false if malformed. */
bool esp_transport_split(const uint8_t *pkt, uint32_t len, uint32_t *hdr_len, uint32_t *nh_off);
/* Walk the received IP packet to the ESP/AH/UDP header: offset of that header, offset of the byte
 * that names it, protocol. False if malformed. An IPv6 non-first fragment ends the walk at its
 * Fragment header: protocol is that header's next header, *frag is set. */
bool esp_find_l4(const uint8_t *pkt, uint32_t len, uint32_t *l4_off, uint32_t *nh_off, uint8_t *proto,
		 bool *frag);

/* RFC 6040 decapsulation: new inner ECN from outer and inner ECN; -1 = drop. */
int esp_ecn_decap(unsigned outer, unsigned inner);

/* Traffic class byte (DSCP+ECN) of an IP header, and set it (fixing the IPv4 checksum). */
static inline uint8_t esp_ip_tos(const uint8_t *ip)
{
	if ((ip[0] >> 4) == 4)
		return ip[1];
	return (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
}

/* Outer traffic class of a tunnel packet around inner (RFC 6040 §4.1 normal mode copies the inner
 * ECN field, compatibility mode sends Not-ECT; DSCP copied or set by the SA). */
static inline uint8_t esp_outer_tos(const struct esp_sa *sa, const uint8_t *inner)
{
	return (uint8_t)((esp_ip_tos(inner) & sa->tos_keep) | sa->tos_set);
}

/* Outer IPv4 DF bit (0x40 or 0) around inner: copied from an IPv4 inner header (an IPv6 one is
 * never fragmented on path: DF), unless the SA clears or sets it. */
static inline uint8_t esp_outer_df(const struct esp_sa *sa, const uint8_t *inner)
{
	uint8_t in = (inner[0] >> 4) == 6 ? 0x40 : (uint8_t)(inner[6] & 0x40);
	return (uint8_t)((in & sa->df_keep) | sa->df_set);
}

static inline void esp_ip_set_tos(uint8_t *ip, uint8_t tos)
{
	if ((ip[0] >> 4) == 4) {
		if (ip[1] == tos)
			return;
		/* RFC 1624 incremental update of the header checksum (word 0 holds the TOS byte). */
		uint32_t sum = (uint16_t)~esp_rd16(ip + 10);
		sum += (uint16_t)~esp_rd16(ip);
		ip[1] = tos;
		sum += esp_rd16(ip);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		esp_wr16(ip + 10, (uint16_t)~sum);
		return;
	}
	ip[0] = (uint8_t)((ip[0] & 0xf0) | tos >> 4);
	ip[1] = (uint8_t)((ip[1] & 0x0f) | (tos & 0x0f) << 4);
}

/* The next outer IPv4 identification. Every engine object of one outbound SA (one per worker) cycles
 * through its own part of the 16-bit space, so the workers' ID streams never meet (RFC 6864 §4.1:
 * unique per source, destination and protocol while fragments may be in flight). */
static inline uint16_t esp_next_ip_id(struct esp_sa *sa)
{
	uint32_t id = sa->ip_id;
	sa->ip_id = ESP_UNLIKELY(id + 1 >= sa->id_end) ? sa->id_lo : id + 1;
	return (uint16_t)id;
}

/* Write the outer IPv4 header of a tunnel packet from the SA's template. */
static inline void esp_outer4(struct esp_sa *sa, uint8_t *o, uint8_t tos, uint32_t tot, bool df)
{
	uint16_t id = esp_next_ip_id(sa);
	uint16_t frag = df ? 0x4000 : 0;
	memcpy(o, sa->hdr4, 20);
	o[1] = tos;
	esp_wr16(o + 2, (uint16_t)tot);
	esp_wr16(o + 4, id);
	esp_wr16(o + 6, frag);
	uint32_t sum = sa->hdr4_sum + tos + tot + id + frag;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	esp_wr16(o + 10, (uint16_t)~sum);
}

/* Whether two ICVs of n bytes are equal, in constant time like CRYPTO_memcmp: every byte is read
 * and no branch depends on their values (n, public, only sets the number of steps). Inline: for
 * 12-32 bytes the library call costs more than the comparison (~90 instructions for 12 bytes). */
static inline bool esp_icv_equal(const uint8_t *a, const uint8_t *b, unsigned n)
{
	uint64_t d = 0;
	unsigned i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		d |= x ^ y;
	}
	if (i + 4 <= n) {
		uint32_t x, y;
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		d |= x ^ y;
		i += 4;
	}
	for (; i < n; i++)
		d |= (uint64_t)(a[i] ^ b[i]);
	/* d is opaque from here: the compiler must compute all of it, so it cannot stop at the first
	 * difference. */
	__asm__("" : "+r"(d));
	return d == 0;
}

/* The one tunnel-mode decapsulation of ESP and AH (esp_in.c's esp_decap_tunnel wraps it for the
 * general paths; the fast paths inline it where a call per packet would show). After a verified
 * ICV: check the inner IP header at pl (plen bytes), apply RFC 6040 ECN and the optional DSCP copy
 * from the outer traffic class byte otos, update the replay window (only now), and make the inner
 * packet the packet; a packet it drops is left unchanged. hdr8 is pl's first 8 bytes as loaded
 * (little-endian), read by the caller while the line was in cache (any value when plen < 8): only
 * a changed traffic class is written to the packet here. */
static inline __attribute__((always_inline)) void esp_decap_tunnel_inline(struct esp_sa *sa, struct esp_pkt *p,
									  uint8_t otos, uint8_t *pl,
									  uint32_t plen, uint8_t next,
									  uint64_t hdr8)
{
	const uint8_t b0 = (uint8_t)hdr8, b1 = (uint8_t)(hdr8 >> 8);
	uint32_t ilen;
	uint8_t itos;
	if (ESP_LIKELY(next == IPPROTO_IPIP)) {
		if (plen < 20 || (b0 >> 4) != 4) {
			p->drop = SADB_DROP_BAD_NEXT_HDR;
			return;
		}
		ilen = __builtin_bswap16((uint16_t)(hdr8 >> 16));
		if (ilen < 20 || ilen > plen || (b0 & 0x0f) < 5) {
			p->drop = SADB_DROP_TRUNCATED;
			return;
		}
		itos = b1;
	} else if (next == IPPROTO_IPV6) {
		if (plen < 40 || (b0 >> 4) != 6) {
			p->drop = SADB_DROP_BAD_NEXT_HDR;
			return;
		}
		ilen = 40u + __builtin_bswap16((uint16_t)(hdr8 >> 32));
		if (ilen > plen) {
			p->drop = SADB_DROP_TRUNCATED;
			return;
		}
		itos = (uint8_t)((b0 & 0x0f) << 4 | b1 >> 4);
	} else {
		p->drop = SADB_DROP_BAD_NEXT_HDR;
		return;
	}
	uint8_t ntos = itos;
	if (!(sa->flags & SADB_SAF_NO_ECN) && (otos & 3)) {
		int ecn = esp_ecn_decap(otos & 3, itos & 3);
		if (ecn < 0) {
			p->drop = SADB_DROP_UNSUPPORTED; /* RFC 6040 §4.2: CE on a Not-ECT inner packet */
			return;
		}
		ntos = (uint8_t)((ntos & 0xfc) | ecn);
	}
	if (sa->flags & SADB_SAF_DECAP_DSCP)
		ntos = (uint8_t)((otos & 0xfc) | (ntos & 3));
	enum sadb_drop r = esp_replay_update(sa, p->seq);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return;
	}
	if (ntos != itos)
		esp_ip_set_tos(pl, ntos);
	p->off = (uint32_t)(pl - p->buf);
	p->len = ilen;
	p->family = next == IPPROTO_IPIP ? AF_INET : AF_INET6;
}

/* Length of the IP packet at ip from its own header (IPv4 total length, IPv6 40 + payload length)
 * and its family; false if the len bytes there do not start with a well-formed IPv4/IPv6 header.
 * The bare IPv4 header, by far the most common, is tested first. */
static inline __attribute__((always_inline)) bool esp_ip_len(const uint8_t *ip, uint32_t len, uint32_t *out,
							     uint8_t *fam)
{
	if (len < 20)
		return false;
	if (ESP_LIKELY(ip[0] == 0x45)) {
		uint32_t tl = esp_rd16(ip + 2);
		if (tl < 20 || tl > len)
			return false;
		*out = tl;
		*fam = AF_INET;
		return true;
	}
	if ((ip[0] >> 4) == 4) {
		uint32_t tl = esp_rd16(ip + 2);
		if ((ip[0] & 0x0f) < 5 || tl < (ip[0] & 0x0fu) * 4u || tl > len)
			return false;
		*out = tl;
		*fam = AF_INET;
		return true;
	}
	if ((ip[0] >> 4) == 6 && len >= 40) {
		uint32_t tl = 40u + esp_rd16(ip + 4);
		if (tl > len)
			return false;
		*out = tl;
		*fam = AF_INET6;
		return true;
	}
	return false;
}

/* Counters: relaxed atomics, the owner is the only writer (doc/architecture.md rule 5). */
static inline void esp_count_drop(struct sadb_runtime *rt, unsigned reason)
{
	if (reason < SADB_DROP_MAX)
		atomic_fetch_add_explicit((_Atomic uint64_t *)&rt->drops[reason], 1, memory_order_relaxed);
}

#endif
