/* dataplane/engine/esp_out.c: outbound ESP (RFC 4303 §3.3), tunnel and transport, with UDP encapsulation
 * (RFC 3948), padding and TFC padding, outer header construction (TTL, DSCP/ECN per RFC 6040, DF)
 * and the MTU check. Headers are laid out per packet, then the whole burst is encrypted in one
 * backend call. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/engine/esp_internal.h"

/* What prepare() needs from the SA, read once per burst: the packet bytes are written through
 * uint8_t pointers, which may alias anything, so fields read from the SA itself would be reloaded
 * after every store. */
struct out_plan {
	uint32_t ins;        /* tunnel: bytes added in front of the payload (outer IP, UDP, ESP, IV) */
	uint32_t add;        /* UDP + ESP header + IV (transport: after the headers kept in front) */
	uint32_t ohl;        /* tunnel: outer IP header bytes */
	uint32_t align_m1;   /* ESP alignment - 1 */
	uint32_t icv_len;
	uint32_t tfc_pad;
	uint32_t mtu;
	uint32_t spi_be;
	uint32_t salt;
	uint64_t addrs4;     /* outer IPv4: source and destination, as the template holds them */
	uint32_t ttl_proto4; /* outer IPv4: bytes 8-11 of the template (checksum 0) */
	uint32_t sum4;       /* outer IPv4: one's complement sum of the template's constant words */
	uint8_t tos_keep, tos_set, df_keep, df_set; /* the SA's outer TOS/DF policy (esp_sa.h) */
	uint8_t tunnel, ofam, l4proto, kind, cipher, iv_len, esn, ctr_iv;
	/* The common case, laid out by a copy of prepare() with these fixed: tunnel mode, an AEAD or
	 * GMAC transform (8-byte IV = sequence number, 16-byte ICV, 4-byte alignment), no ESN, no UDP
	 * encapsulation, no TFC padding. */
	bool fast;
};

static void plan_init(const struct esp_sa *sa, struct out_plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->tunnel = sa->mode == SADB_MODE_TUNNEL;
	pl->ofam = sa->dst.family;
	pl->ohl = pl->tunnel ? (pl->ofam == AF_INET6 ? 40u : 20u) : 0u;
	pl->add = (sa->encap_dport ? 8u : 0u) + 8u + sa->iv_len;
	pl->ins = pl->ohl + pl->add;
	pl->align_m1 = sa->align - 1u;
	pl->icv_len = sa->icv_len;
	pl->tfc_pad = sa->tfc_pad;
	pl->mtu = sa->mtu;
	pl->spi_be = sa->spi_be;
	memcpy(&pl->salt, sa->salt, 4);
	memcpy(&pl->addrs4, sa->hdr4 + 12, 8);
	memcpy(&pl->ttl_proto4, sa->hdr4 + 8, 2); /* TTL, protocol; the checksum goes in per packet */
	pl->sum4 = sa->hdr4_sum;
	pl->tos_keep = sa->tos_keep; /* esp_outer_tos/esp_outer_df, on the plan's copies */
	pl->tos_set = sa->tos_set;
	pl->df_keep = sa->df_keep;
	pl->df_set = sa->df_set;
	pl->l4proto = sa->encap_dport ? IPPROTO_UDP : IPPROTO_ESP;
	pl->kind = sa->kind;
	pl->cipher = sa->cipher;
	pl->iv_len = sa->iv_len;
	pl->esn = (sa->flags & SADB_SAF_ESN) != 0;
	pl->ctr_iv = sa->iv_len == 8 && !sa->iv_fn; /* the IV is the sequence number */
	pl->fast = pl->tunnel && (pl->kind == ESP_KIND_AEAD || pl->kind == ESP_KIND_GMAC) && pl->ctr_iv &&
		   sa->icv_len == 16 && sa->align == 4 && !pl->tfc_pad && !pl->esn && pl->l4proto == IPPROTO_ESP;
}

/* Write the outer IPv4/IPv6 header of a tunnel packet of total length tot, in whole-word stores. */
static inline void write_outer(struct esp_sa *sa, const struct out_plan *pl, uint8_t *o, const uint8_t *inner,
			       uint32_t tot, uint8_t l4proto)
{
	uint8_t tos = (uint8_t)((esp_ip_tos(inner) & pl->tos_keep) | pl->tos_set);
	if (pl->ofam == AF_INET) {
		/* IPv6 inner packets are never fragmented on path: DF unless told otherwise. */
		uint32_t df = (((inner[0] >> 4) == 6 ? 0x40u : inner[6]) & pl->df_keep) | pl->df_set;
		uint32_t id = esp_next_ip_id(sa);
		uint32_t frag = df << 8;
		uint32_t sum = pl->sum4 + tos + tot + id + frag;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		/* Bytes 0-7 (version/IHL, TOS, length, id, flags/offset) as one big-endian word. */
		uint64_t w0 = __builtin_bswap64(0x4500000000000000ULL | (uint64_t)tos << 48 | (uint64_t)(uint16_t)tot << 32 |
						(uint64_t)id << 16 | frag);
		uint32_t w2 = pl->ttl_proto4 | (uint32_t)__builtin_bswap16((uint16_t)~sum) << 16;
		memcpy(o, &w0, 8);
		memcpy(o + 8, &w2, 4);
		memcpy(o + 12, &pl->addrs4, 8);
	} else {
		esp_outer6(sa, o, tos, tot, l4proto);
	}
}

/* RFC 4303 §2.4 default padding 1, 2, 3, ... (at most 15 bytes with the largest block, 16). */
static const uint8_t pad_bytes[16] __attribute__((aligned(16))) = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
};

/* The crypto operation of a packet laid out by prepare(): ESP header at esp, payload at pld padded
 * to padded bytes, the ICV after it; iv_raw the IV as 8 bytes in wire order (counter-based IVs).
 * kind, esn and iv_len are prepare()'s, constants on its fast path. */
static inline __attribute__((always_inline)) void fill_cop(const struct esp_sa *sa, const struct out_plan *pl,
							   struct esp_cop *c, uint8_t *esp, uint8_t *pld,
							   uint32_t padded, uint64_t seq, uint64_t iv_raw,
							   const uint8_t kind, const bool esn, const uint32_t iv_len)
{
	uint8_t *ivp = esp + 8;
	uint8_t *icv = pld + padded;
	memset(c, 0, offsetof(struct esp_cop, aadbuf));
	c->fix = NULL;
	c->tag = icv;
	switch (kind) {
	case ESP_KIND_AEAD:
		/* RFC 4106 §3.1 / RFC 7634 §2: 8-byte IV, nonce = salt || IV; AAD = SPI || [seq hi ||] seq. */
		esp_st16(c->iv, (uint64_t)pl->salt | iv_raw << 32, iv_raw >> 32);
		c->data = pld;
		c->data_len = padded;
		esp_cop_aad(c, esp, pl->spi_be, seq, esn);
		break;
	case ESP_KIND_GMAC:
		/* RFC 4543 §3: everything from the SPI to the next header is AAD; no ciphertext. With ESN
		 * the AAD is SPI || seq hi || seq lo || IV ...: laid out in place by moving the SPI 4 bytes
		 * back over the end of the header before it, put back afterwards. */
		esp_st16(c->iv, (uint64_t)pl->salt | iv_raw << 32, iv_raw >> 32);
		esp_cop_gmac(c, esp, pld, padded, seq, esn);
		break;
	default: /* ESP_KIND_CIPHER_HMAC */
		c->auth = esp;
		c->auth_len = 8u + iv_len + padded;
		c->data = pld;
		c->data_len = padded;
		if (pl->cipher == ESP_C_AES_CBC || pl->cipher == ESP_C_3DES_CBC) {
			if (sa->iv_fn) {
				sa->iv_fn(sa->iv_arg, seq, ivp, iv_len);
				memcpy(c->iv, ivp, iv_len);
			} else {
				/* IV = E_K(nonce) (NIST SP 800-38A App. C), computed by CBC-encrypting the
				 * nonce block in the IV's place with a zero IV: its ciphertext is the IV and
				 * chains into the payload exactly as CBC with that IV would. */
				if (iv_len == 16)
					/* seq, SPI, "ESPV" (domain separation) */
					esp_st16(ivp, iv_raw, (uint64_t)pl->spi_be | (uint64_t)__builtin_bswap32(0x45535056u) << 32);
				else
					esp_wr64(ivp, seq);
				c->data = ivp;
				c->data_len = padded + iv_len;
			}
		} else if (pl->cipher == ESP_C_AES_CTR) {
			/* RFC 3686 §4: counter block = nonce || IV || 1. */
			esp_st16(c->iv, (uint64_t)pl->salt | iv_raw << 32, iv_raw >> 32 | (uint64_t)__builtin_bswap32(1) << 32);
		} else { /* NULL */
			c->data_len = 0;
		}
		if (esn) {
			/* RFC 4303 §2.2.1: the high bits are hashed after the payload, not sent: they sit in
			 * the ICV's place, which the tag then overwrites. */
			esp_wr32(icv, (uint32_t)(seq >> 32));
			c->auth_len += 4;
		}
		break;
	}
}

/* Lay out one packet and fill its crypto operation; false (with p->drop) if it cannot be sent. */
static inline __attribute__((always_inline)) bool prepare(struct esp_sa *sa, const struct out_plan *pl,
							  struct esp_pkt *p, struct esp_cop *c, const bool fast)
{
	/* fast is a constant at each call site: the compiler folds what the fast case fixes (see
	 * out_plan.fast) and drops the code for the rest. */
	const bool tunnel = fast || pl->tunnel;
	const uint32_t align_m1 = fast ? 3u : pl->align_m1;
	const uint32_t icv_len = fast ? 16u : pl->icv_len;
	const uint32_t tfc_pad = fast ? 0u : pl->tfc_pad;
	const uint8_t l4proto = fast ? IPPROTO_ESP : pl->l4proto;
	const uint8_t kind = pl->kind; /* AEAD or GMAC when fast */
	const bool esn = !fast && pl->esn;
	const bool ctr_iv = fast || pl->ctr_iv;
	const uint32_t iv_len = fast ? 8u : pl->iv_len;

	uint8_t *ip = p->buf + p->off;
	uint32_t len;
	uint8_t fam;

	if (!esp_pkt_ip_len(p, ip, &len, &fam))
		return false;
	uint32_t prefix, nh_off = 0; /* bytes kept before ESP (transport), offset of the next-header byte */
	uint8_t ofam;
	if (tunnel) {
		ofam = pl->ofam;
		prefix = 0;
	} else {
		ofam = fam;
		if (!esp_transport_split(ip, len, &prefix, &nh_off)) {
			p->drop = SADB_DROP_TRUNCATED;
			return false;
		}
	}
	const uint32_t ins = tunnel ? pl->ins : pl->add;    /* bytes added in front of the payload */
	const uint32_t payload = len - prefix;
	uint32_t tfc = tfc_pad > payload ? tfc_pad - payload : 0;
	uint32_t padded, out_len;
	for (;;) {
		padded = (payload + tfc + 2 + align_m1) & ~align_m1;
		out_len = prefix + ins + padded + icv_len;
		uint32_t tail_need = padded - payload + icv_len;
		bool mtu_bad = pl->mtu && out_len > pl->mtu;
		bool tail_bad = p->off + len + tail_need > p->buf_len;
		if (ESP_LIKELY(!mtu_bad && !tail_bad))
			break;
		if (tfc) {
			tfc = 0; /* TFC padding is best effort: never the reason to drop */
			continue;
		}
		if (mtu_bad) {
			p->drop = SADB_DROP_MTU;
			p->mtu = esp_inner_mtu_hdr(sa, pl->mtu, fam, prefix);
		} else {
			p->drop = SADB_DROP_NOMEM;
		}
		return false;
	}
	if (ESP_UNLIKELY(p->off < ins)) {
		p->drop = SADB_DROP_NOMEM;
		return false;
	}
	uint64_t seq;
	if (!esp_seq_take_pkt(sa, p, &seq))
		return false;

	/* Trailer first (RFC 4303 §2.4-2.6): TFC zeros, padding 1, 2, 3..., pad length, next header. */
	uint8_t *pld = ip + prefix;             /* payload, not moved */
	uint8_t *t = pld + payload;
	uint8_t next;
	if (tunnel)
		next = fam == AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
	else
		next = ip[nh_off];
	if (ESP_UNLIKELY(tfc)) {
		memset(t, 0, tfc);
		t += tfc;
	}
	uint32_t npad = padded - payload - tfc - 2;
	/* The padding in one store when the buffer has room past it (the rest is overwritten by the
	 * pad length, next header and ICV, or lies in the tailroom). */
	if (ESP_LIKELY(npad < 8 && p->buf + p->buf_len - t >= 8)) {
		memcpy(t, pad_bytes, 8);
	} else if (npad < 16 && p->buf + p->buf_len - t >= 16) {
		memcpy(t, pad_bytes, 16);
	} else {
		for (uint32_t i = 0; i < npad; i++)
			t[i] = (uint8_t)(i + 1);
	}
	uint16_t pn = (uint16_t)(npad | (uint32_t)next << 8);
	memcpy(t + npad, &pn, 2);

	/* Headers. */
	uint8_t *o = ip - ins;                  /* new start of the packet */
	uint8_t *esp;
	if (tunnel) {
		write_outer(sa, pl, o, ip, out_len, l4proto);
		esp = o + pl->ohl;
	} else {
		esp_transport_move(o, ip, prefix, nh_off, l4proto, out_len);
		esp = o + prefix;
	}
	if (l4proto == IPPROTO_UDP) {
		esp_wr16(esp, sa->encap_sport);
		esp_wr16(esp + 2, sa->encap_dport);
		esp_wr16(esp + 4, (uint16_t)(out_len - (uint32_t)(esp - o)));
		esp_wr16(esp + 6, 0); /* IPv4: zero (RFC 3948 §2.1); IPv6: filled after encryption */
		esp += 8;
	}
	uint8_t *ivp = esp + 8;
	/* ESP header and the counter-based IV (the sequence number) in one store. */
	uint64_t hdr = (uint64_t)pl->spi_be | (uint64_t)__builtin_bswap32((uint32_t)seq) << 32;
	uint64_t iv_raw = __builtin_bswap64(seq);
	if (ctr_iv)
		esp_st16(esp, hdr, iv_raw);
	else
		memcpy(esp, &hdr, 8);
	if (iv_len == 8 && !ctr_iv) {
		sa->iv_fn(sa->iv_arg, seq, ivp, 8);
		memcpy(&iv_raw, ivp, 8);
	}

	fill_cop(sa, pl, c, esp, pld, padded, seq, iv_raw, kind, esn, iv_len);
	p->off -= ins;
	p->len = out_len;
	p->seq = seq;
	p->family = ofam;
	return true;
}

/* The lines prepare() writes of a packet: where the new headers go in front of it (pl->ins bytes:
 * the outer header in tunnel mode, UDP/ESP/IV), its first line and the line where the trailer ends
 * at the most (padding to the SA's alignment, pad length, next header, the ICV). Frames
 * come from the NIC through memory or another CPU's cache; fetched for writing, eight packets ahead,
 * their trips overlap the work on the packets before. With only the header line fetched two ahead,
 * the trips were exposed once both CPUs walked their own frames (bench/scale, outbound 64 bytes: one
 * thread +2 %, two threads +3-6 % with these); the in-cache cost (bench/esp-micro) is unchanged. */
static inline void prefetch_laid(const struct esp_pkt *p, const struct out_plan *pl)
{
	/* Addresses as integers: a malformed packet's may lie outside its buffer (a prefetch never
	 * faults; prepare() checks the lengths before it writes). */
	uintptr_t ip = (uintptr_t)p->buf + p->off;
	__builtin_prefetch((const void *)(ip - pl->ins), 1);
	__builtin_prefetch((const void *)ip, 1);
	__builtin_prefetch((const void *)(ip + p->len + pl->align_m1 + 1 + pl->icv_len), 1);
}

/* prepare() over the burst: the packets that go on in live[], their operations in cops[]. */
static inline __attribute__((always_inline)) unsigned prepare_all(struct esp_sa *sa, const struct out_plan *pl,
								   struct esp_pkt **pkts, unsigned n,
								   struct esp_cop *cops, struct esp_pkt **live,
								   const bool fast)
{
	unsigned nl = 0;
	for (unsigned i = 0; i < n && i < 8; i++)
		prefetch_laid(pkts[i], pl);
	for (unsigned i = 0; i < n; i++) {
		if (i + 8 < n)
			prefetch_laid(pkts[i + 8], pl);
		if (prepare(sa, pl, pkts[i], &cops[nl], fast))
			live[nl++] = pkts[i];
	}
	return nl;
}

void esp_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	struct out_plan pl;
	unsigned nl;

	plan_init(sa, &pl);
	esp_seq_burst(sa, n);
	if (pl.fast) {
		nl = prepare_all(sa, &pl, pkts, n, cops, live, true);
		if (!nl)
			return;
		sa->ops->encrypt(&sa->cs, cops, nl);
		/* No ESN shift to undo (GMAC), no UDP checksum to fill. */
		for (unsigned i = 0; i < nl; i++)
			if (ESP_UNLIKELY(!cops[i].ok))
				live[i]->drop = SADB_DROP_CRYPTO;
		return;
	}
	nl = prepare_all(sa, &pl, pkts, n, cops, live, false);
	if (!nl)
		return;
	sa->ops->encrypt(&sa->cs, cops, nl);
	for (unsigned i = 0; i < nl; i++) {
		struct esp_pkt *p = live[i];
		struct esp_cop *c = &cops[i];
		esp_cop_unfix(c);
		if (!c->ok) {
			p->drop = SADB_DROP_CRYPTO;
			continue;
		}
		if (sa->encap_dport && p->family == AF_INET6) {
			/* RFC 8200 §8.1: UDP over IPv6 needs a checksum. */
			uint8_t *o = p->buf + p->off;
			uint32_t l4;
			if (sa->mode == SADB_MODE_TUNNEL) {
				l4 = 40;
			} else {
				uint32_t nho;
				uint8_t proto;
				bool frag;
				if (!esp_find_l4(o, p->len, &l4, &nho, &proto, &frag)) {
					p->drop = SADB_DROP_TRUNCATED;
					continue;
				}
			}
			uint8_t *u = o + l4;
			esp_wr16(u + 6, esp_udp6_csum(o, u, p->len - l4));
		}
	}
}
