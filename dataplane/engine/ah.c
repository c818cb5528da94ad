/* dataplane/engine/ah.c: the Authentication Header (RFC 4302), outbound and inbound, tunnel and transport,
 * IPv4 and IPv6, with HMAC or AES-GMAC (RFC 4543: the 8-byte IV follows the sequence number and
 * precedes the 16-byte ICV; it is authenticated, the ICV field counts as zeros). The ICV covers the IP header(s) with their mutable fields
 * zeroed (RFC 4302 §3.3.3.1 and Appendix A): those are zeroed in place on a saved copy of the
 * headers, the burst is authenticated in one backend call, then the headers are put back. Tunnel
 * SAs without ESN whose transform is GMAC or HMAC with a 12/16-byte ICV take a fast path (below)
 * for bare outer headers, the general code for the rest. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/engine/esp_internal.h"

#define AH_SAVE_MAX 256 /* IP header plus extension headers that precede AH, at most */

struct ah_state {
	uint8_t *ip;
	uint8_t *ah;
	uint32_t len;       /* IP packet length */
	uint32_t prefix;    /* bytes before AH */
	uint32_t nh_off;
	uint32_t saved;     /* bytes of save[] in use */
	uint8_t save[AH_SAVE_MAX];
};

/* RFC 4302 A.1: IPv4 options that do not change in transit; every other one is zeroed whole. */
static bool ip4_opt_immutable(uint8_t type)
{
	return type == 130 || type == 133 || type == 134 || type == 148 || type == 149;
}

/* Zero the mutable fields of the headers ip[0..hlen) as RFC 4302 §3.3.3.1 says, with routing
 * information replaced by its value at the final destination. False if the headers are malformed. */
static bool zero_mutable(uint8_t *ip, uint32_t hlen)
{
	if ((ip[0] >> 4) == 4) {
		uint32_t ihl = (ip[0] & 0x0fu) * 4u;
		ip[1] = 0;              /* TOS */
		ip[6] = ip[7] = 0;      /* flags, fragment offset */
		ip[8] = 0;              /* TTL */
		ip[10] = ip[11] = 0;    /* checksum */
		for (uint32_t o = 20; o < ihl;) {
			uint8_t type = ip[o];
			if (type == 0)
				break;          /* end of options; what follows is zero by definition */
			if (type == 1) {
				o++;
				continue;
			}
			if (o + 1 >= ihl || ip[o + 1] < 2 || o + ip[o + 1] > ihl)
				return false;
			uint8_t olen = ip[o + 1];
			if ((type == 131 || type == 137) && olen >= 7 && ip[o + 2] <= olen) {
				/* Source route not yet complete: the destination field will end as the last
				 * address of the route (mutable but predictable). */
				memcpy(ip + 16, ip + o + olen - 4, 4);
			}
			if (!ip4_opt_immutable(type))
				memset(ip + o, 0, olen);
			o += olen;
		}
		return true;
	}
	ip[0] = 0x60;                   /* traffic class ... */
	ip[1] = 0;
	ip[2] = ip[3] = 0;              /* flow label */
	ip[7] = 0;                      /* hop limit */
	uint8_t nh = ip[6];
	uint32_t o = 40;
	while (o < hlen) {
		if (o + 8 > hlen)
			return false;
		uint32_t hl = nh == IPPROTO_FRAGMENT ? 8 : (ip[o + 1] + 1u) * 8u;
		if (o + hl > hlen)
			return false;
		if (nh == IPPROTO_HOPOPTS || nh == IPPROTO_DSTOPTS) {
			/* RFC 8200 §4.2: options whose type has the "may change" bit count as zeros. */
			for (uint32_t t = o + 2; t < o + hl;) {
				if (ip[t] == 0) {
					t++;
					continue;
				}
				if (t + 2 > o + hl || t + 2 + ip[t + 1] > o + hl)
					return false;
				if (ip[t] & 0x20)
					memset(ip + t + 2, 0, ip[t + 1]);
				t += 2u + ip[t + 1];
			}
		} else if (nh == IPPROTO_ROUTING && (ip[o + 2] == 0 || ip[o + 2] == 2) && ip[o + 3] > 0) {
			/* Type 0/2 with segments left: as at the destination, the final address is in the
			 * destination field and the list starts with the original destination. */
			uint32_t naddr = ip[o + 1] / 2u;
			if (naddr >= 1 && o + 8 + naddr * 16 <= o + hl) {
				uint8_t last[16];
				uint8_t *list = ip + o + 8;
				memcpy(last, list + (naddr - 1) * 16, 16);
				memmove(list + 16, list, (naddr - 1) * 16);
				memcpy(list, ip + 24, 16);
				memcpy(ip + 24, last, 16);
				ip[o + 3] = 0;
			}
		}
		nh = ip[o];
		o += hl;
	}
	return true;
}

/* zero_mutable for the common bare IPv4 header (no options) without the call: TOS, flags and
 * fragment offset, TTL and checksum, as zero_mutable does. */
static inline __attribute__((always_inline)) bool zero_mutable_fast(uint8_t *ip, uint32_t hlen)
{
	if (ESP_LIKELY(hlen == 20 && ip[0] == 0x45)) {
		ip[1] = 0;
		memset(ip + 6, 0, 3);
		memset(ip + 10, 0, 2);
		return true;
	}
	return zero_mutable(ip, hlen);
}

/* Save what zero_mutable may change in the headers ip[0..prefix): for a bare IPv4 or IPv6 header
 * only its first 12 or 8 bytes (fixed-size copies, no library call), else all of it. */
static inline __attribute__((always_inline)) void save_hdr(struct ah_state *s, const uint8_t *ip,
							     uint32_t prefix)
{
	if (prefix == 20 && (ip[0] >> 4) == 4)
		memcpy(s->save, ip, 12), s->saved = 12;
	else if (prefix == 40 && (ip[0] >> 4) == 6)
		memcpy(s->save, ip, 8), s->saved = 8;
	else
		memcpy(s->save, ip, prefix), s->saved = prefix;
}

static inline __attribute__((always_inline)) void restore_hdr(const struct ah_state *s, uint8_t *ip)
{
	if (s->saved == 12)
		memcpy(ip, s->save, 12);
	else if (s->saved == 8)
		memcpy(ip, s->save, 8);
	else
		memcpy(ip, s->save, s->saved);
}

/* Record the packet in s and zero the mutable fields of its headers ip[0..prefix) for the ICV, on
 * a saved copy; false (headers as they were) if they are malformed. */
static inline __attribute__((always_inline)) bool hdr_zero(struct ah_state *s, uint8_t *ip, uint8_t *ah,
							   uint32_t len, uint32_t prefix)
{
	s->ip = ip;
	s->ah = ah;
	s->len = len;
	s->prefix = prefix;
	save_hdr(s, ip, prefix);
	if (!zero_mutable_fast(ip, prefix)) {
		restore_hdr(s, ip);
		return false;
	}
	return true;
}

/* ICV-sized copies with constant sizes. */
static inline __attribute__((always_inline)) void cpy_icv(uint8_t *d, const uint8_t *src, unsigned n)
{
	switch (n) {
	case 12: memcpy(d, src, 12); break;
	case 16: memcpy(d, src, 16); break;
	case 24: memcpy(d, src, 24); break;
	case 32: memcpy(d, src, 32); break;
	default: memcpy(d, src, n); break;
	}
}

/* Zero n ICV bytes (and padding), constant sizes for the usual lengths. */
static inline __attribute__((always_inline)) void zero_icv(uint8_t *d, unsigned n)
{
	switch (n) {
	case 12: memset(d, 0, 12); break;
	case 16: memset(d, 0, 16); break;
	case 24: memset(d, 0, 24); break;
	case 32: memset(d, 0, 32); break;
	default: memset(d, 0, n); break;
	}
}

static uint32_t ah_len_for(const struct esp_sa *sa, uint8_t fam)
{
	return fam == AF_INET6 ? sa->ah_hdr_len6 : sa->ah_hdr_len;
}

static void fill_cop(struct esp_sa *sa, struct esp_cop *c, struct ah_state *st, uint64_t seq,
		     bool in)
{
	uint8_t *ah = st->ah;
	memset(c, 0, offsetof(struct esp_cop, aadbuf));
	c->fix = NULL;
	c->auth = st->ip;
	c->auth_len = st->len;
	uint8_t *icv = ah + 12 + sa->iv_len;
	c->tag = in ? c->calc : icv;
	c->icv_in = c->icv_save;
	if (sa->kind == ESP_KIND_GMAC) {
		/* RFC 4543 §3.1 nonce salt || IV, in one store (read back whole by the GMAC code). */
		uint64_t iv_raw;
		memcpy(&iv_raw, ah + 12, 8);
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
	}
	if (sa->flags & SADB_SAF_ESN) {
		/* RFC 4302 §2.5.1: the high bits are appended to the packet for the ICV only. */
		esp_wr32(st->ip + st->len, (uint32_t)(seq >> 32));
		c->auth_len += 4;
	}
}

static __attribute__((noinline)) void out_general(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl = 0;

	for (unsigned i = 0; i < n; i++) {
		struct esp_pkt *p = pkts[i];
		uint8_t *ip = p->buf + p->off;
		uint32_t len, prefix = 0, nh_off = 0;
		uint8_t fam;
		if (!esp_pkt_ip_len(p, ip, &len, &fam))
			continue;
		const bool tunnel = sa->mode == SADB_MODE_TUNNEL;
		uint8_t ofam = tunnel ? sa->dst.family : fam;
		if (!tunnel && !esp_transport_split(ip, len, &prefix, &nh_off)) {
			p->drop = SADB_DROP_TRUNCATED;
			continue;
		}
		uint32_t ohl = tunnel ? (ofam == AF_INET6 ? 40u : 20u) : 0u;
		uint32_t ahl = ah_len_for(sa, ofam);
		uint32_t ins = ohl + ahl;
		uint32_t out_len = len + ins;
		if (prefix + ohl > AH_SAVE_MAX) {
			p->drop = SADB_DROP_UNSUPPORTED;
			continue;
		}
		if (sa->mtu && out_len > sa->mtu) {
			p->drop = SADB_DROP_MTU;
			p->mtu = esp_inner_mtu_hdr(sa, sa->mtu, fam, prefix);
			continue;
		}
		if (p->off < ins || p->off + len + ((sa->flags & SADB_SAF_ESN) ? 4u : 0u) > p->buf_len) {
			p->drop = SADB_DROP_NOMEM;
			continue;
		}
		uint64_t seq;
		if (!esp_seq_take_pkt(sa, p, &seq))
			continue;
		uint8_t *o = ip - ins, *ah;
		uint8_t next;
		if (tunnel) {
			/* Outer header as esp_out.c builds it (TTL, DSCP/ECN, DF), then AH. */
			uint8_t tos = esp_outer_tos(sa, ip);
			if (ofam == AF_INET) {
				esp_outer4(sa, o, tos, out_len, esp_outer_df(sa, ip) != 0);
			} else {
				esp_outer6(sa, o, tos, out_len, IPPROTO_AH);
			}
			ah = o + ohl;
			next = fam == AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
			prefix = ohl;
			nh_off = ofam == AF_INET ? 9 : 6;
		} else {
			next = ip[nh_off];
			esp_transport_move(o, ip, prefix, nh_off, IPPROTO_AH, out_len);
			ah = o + prefix;
		}
		ah[0] = next;
		ah[1] = (uint8_t)(ahl / 4 - 2);
		ah[2] = ah[3] = 0;
		memcpy(ah + 4, &sa->spi_be, 4);
		esp_wr32(ah + 8, (uint32_t)seq);
		if (sa->iv_len) {
			if (sa->iv_fn)
				sa->iv_fn(sa->iv_arg, seq, ah + 12, 8);
			else
				esp_wr64(ah + 12, seq);
		}
		zero_icv(ah + 12 + sa->iv_len, ahl - 12u - sa->iv_len); /* ICV (and padding) as zeros */
		struct ah_state *s = &st[nl];
		if (!hdr_zero(s, o, ah, out_len, prefix)) {
			p->drop = SADB_DROP_TRUNCATED;
			continue; /* the reserved number is skipped, never reused */
		}
		fill_cop(sa, &cops[nl], s, seq, false);
		p->off -= ins;
		p->len = out_len;
		p->seq = seq;
		p->family = ofam;
		live[nl++] = p;
	}
	if (!nl)
		return;
	sa->ops->encrypt(&sa->cs, cops, nl);
	for (unsigned i = 0; i < nl; i++) {
		restore_hdr(&st[i], st[i].ip);
		if (!cops[i].ok)
			live[i]->drop = SADB_DROP_CRYPTO;
	}
}

/* top: esp_replay_top read once for the burst (esp_replay_check_at says why that is safe). */
static bool in_check(struct esp_sa *sa, struct esp_pkt *p, struct esp_cop *c, struct ah_state *s,
		     uint64_t top)
{
	uint8_t *ip = p->buf + p->off;
	uint32_t len = p->len, l4, nho;
	uint8_t proto, fam;
	bool frag;

	/* Trimmed to the IP header's own length; an IPv4 header length that does not fit fails here
	 * rather than in the walk, as truncated all the same. */
	if (!esp_ip_len(ip, len, &len, &fam) || !esp_find_l4_fast(ip, len, &l4, &nho, &proto, &frag))
		goto truncated;
	if (frag) {
		p->drop = SADB_DROP_UNSUPPORTED;
		return false;
	}
	if (proto != IPPROTO_AH) {
		p->drop = SADB_DROP_UNSUPPORTED;
		return false;
	}
	uint32_t ahl = ah_len_for(sa, fam);
	if (l4 + 12 > len || l4 > AH_SAVE_MAX)
		goto truncated;
	uint8_t *ah = ip + l4;
	if ((ah[1] + 2u) * 4u != ahl || l4 + ahl > len)
		goto truncated;
	if (memcmp(ah + 4, &sa->spi_be, 4) != 0) {
		p->drop = SADB_DROP_BAD_SPI;
		return false;
	}
	uint64_t seq = esp_replay_infer_at(sa, esp_rd32(ah + 8), top);
	enum sadb_drop r = esp_replay_check_at(sa, seq, top);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return false;
	}
	if ((sa->flags & SADB_SAF_ESN) && p->off + len + 4 > p->buf_len) {
		p->drop = SADB_DROP_NOMEM;
		return false;
	}
	p->seq = seq;
	s->nh_off = nho;
	if (!hdr_zero(s, ip, ah, len, l4))
		goto truncated;
	fill_cop(sa, c, s, seq, true);
	uint8_t *icv = ah + 12 + sa->iv_len;
	cpy_icv(c->icv_save, icv, sa->icv_len);
	/* Only the ICV counts as zeros; the padding after it is hashed as received, whatever the
	 * sender chose (RFC 4302 §3.3.3.2.1). */
	zero_icv(icv, sa->icv_len);
	return true;
truncated:
	p->drop = SADB_DROP_TRUNCATED;
	return false;
}

static void in_finish(struct esp_sa *sa, struct esp_pkt *p, struct ah_state *s)
{
	uint8_t *ip = s->ip, *ah = s->ah;
	uint32_t ahl = (ah[1] + 2u) * 4u;
	uint8_t next = ah[0];
	uint8_t *pl = ah + ahl;
	uint32_t plen = s->len - s->prefix - ahl;
	if (sa->mode == SADB_MODE_TUNNEL) {
		esp_decap_tunnel(sa, p, ip, pl, plen, next);
		return;
	}
	enum sadb_drop r = esp_replay_update(sa, p->seq);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return;
	}
	uint8_t *nip = pl - s->prefix;
	uint32_t nlen = s->len - ahl;
	p->family = esp_transport_move(nip, ip, s->prefix, s->nh_off, next, nlen);
	p->off = (uint32_t)(nip - p->buf);
	p->len = nlen;
}

static __attribute__((noinline)) void in_general(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl = 0;
	const uint64_t top = esp_replay_top(sa->rt); /* one read for the burst */

	for (unsigned i = 0; i < n; i++)
		if (in_check(sa, pkts[i], &cops[nl], &st[nl], top))
			live[nl++] = pkts[i];
	if (!nl)
		return;
	sa->ops->decrypt(&sa->cs, cops, nl);
	esp_replay_lock(sa);
	for (unsigned i = 0; i < nl; i++) {
		struct ah_state *s = &st[i];
		restore_hdr(s, s->ip);
		/* Put the received ICV back so that a dropped packet is left as it came. */
		cpy_icv(s->ah + 12 + sa->iv_len, cops[i].icv_save, sa->icv_len);
		if (!cops[i].ok) {
			live[i]->drop = SADB_DROP_ICV;
			continue;
		}
		in_finish(sa, live[i], s);
	}
	esp_replay_unlock(sa);
}

/* ---- Fast path: tunnel mode, no ESN, GMAC (8-byte IV = sequence number, 16-byte ICV) or HMAC
 * with a 12- or 16-byte ICV. The code below is instantiated with the IV and ICV lengths as
 * constants, so the compiler drops what they fix. The outer header is a bare IPv4 or IPv6 header
 * (ours outbound; checked per packet inbound, anything else goes the general way), whose mutable
 * fields RFC 4302 §3.3.3.1 zeroes all lie in its first 12 (IPv4) or 8 (IPv6) bytes: they are kept
 * in two words per packet instead of a copy of the headers. */

/* Which fast variant an SA takes: 1 GMAC, 2 HMAC-96, 3 HMAC-128, 0 none. The outbound IV must be
 * the sequence number (no test IV source). */
static unsigned fast_variant(const struct esp_sa *sa, bool out)
{
	if (sa->mode != SADB_MODE_TUNNEL || (sa->flags & SADB_SAF_ESN))
		return 0;
	if (sa->kind == ESP_KIND_GMAC && sa->iv_len == 8 && sa->icv_len == 16 && !(out && sa->iv_fn))
		return 1;
	if (sa->kind == ESP_KIND_HMAC && sa->iv_len == 0 && (sa->icv_len == 12 || sa->icv_len == 16))
		return sa->icv_len == 12 ? 2 : 3;
	return 0;
}

/* Bytes 0-7 and 8-11 of an IPv4 header, or 0-7 of an IPv6 header, as loaded little-endian.
 * Inbound also what decapsulation needs, read before the crypto call while in cache (the call
 * streams the whole burst through it): the inner header's first 8 bytes, AH's next header. */
struct ah_fast_state {
	uint8_t *ip;
	uint64_t w0;
	uint32_t w2;
	uint32_t len;
	uint64_t inner8;
	uint16_t hlen;      /* outer header + AH */
	uint8_t next;
};

/* Only the fields the backends read for an AH operation (HMAC or GMAC: no cipher, no AAD, no ESN
 * shift; data_len 0 tells ipsec-mb's HMAC job there is nothing to cipher), not a memset of the
 * whole operation. */
static inline __attribute__((always_inline)) void fast_cop(struct esp_cop *c, uint8_t *ip, uint32_t len,
							   uint8_t *tag)
{
	c->data_len = 0;
	c->auth_len = len;
	c->auth = ip;
	c->tag = tag;
}

/* Per-burst constants of an outbound fast burst. */
struct ah_out_plan {
	uint32_t ahl, ohl, ins, mtu, sum4;
	uint64_t ah_lo;            /* AH bytes 0-7 without the next header */
	uint8_t ofam, tos_keep, tos_set, ttl;
	uint8_t df_keep, df_set;   /* DF bit (0x40 of byte 6) taken from the inner packet / set */
};

static inline __attribute__((always_inline)) bool out_fast_one(struct esp_sa *sa, const struct ah_out_plan *pl,
							       struct esp_pkt *p, struct esp_cop *c,
							       struct ah_fast_state *s, const unsigned ivl,
							       const unsigned icvl, const uint8_t ofam)
{
	uint8_t *ip = p->buf + p->off;
	uint32_t len;
	uint8_t fam;
	if (!esp_pkt_ip_len(p, ip, &len, &fam))
		return false;
	const uint32_t ins = pl->ins, out_len = len + ins;
	if (pl->mtu && out_len > pl->mtu) {
		p->drop = SADB_DROP_MTU;
		p->mtu = esp_inner_mtu_hdr(sa, pl->mtu, fam, 0);
		return false;
	}
	if (p->off < ins || p->off + len > p->buf_len) {
		p->drop = SADB_DROP_NOMEM;
		return false;
	}
	uint64_t seq;
	if (!esp_seq_take_pkt(sa, p, &seq))
		return false;
	const uint32_t ohl = ofam == AF_INET ? 20u : 40u;
	uint8_t *o = ip - ins, *ah = o + ohl;
	uint64_t tos = (esp_ip_tos(ip) & pl->tos_keep) | pl->tos_set;
	/* The outer header goes out with its mutable fields zero, as the ICV sees it; the real
	 * values are stored after the crypto call. */
	if (ofam == AF_INET) {
		/* DF (0x40 of byte 6): the inner packet's (IPv6: set), or as the SA says. */
		uint32_t df = (((fam == AF_INET6 ? 0x40u : ip[6]) & pl->df_keep) | pl->df_set);
		uint32_t id = esp_next_ip_id(sa);
		uint32_t sum = pl->sum4 + (uint32_t)tos + out_len + id + (df << 8);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		/* Bytes 0-7 in wire order: 0x45, TOS, length, id, flags/fragment offset. */
		uint64_t z0 = 0x45u | (uint64_t)__builtin_bswap16((uint16_t)out_len) << 16 |
			      (uint64_t)__builtin_bswap16((uint16_t)id) << 32;
		s->w0 = z0 | tos << 8 | (uint64_t)df << 48;
		s->w2 = pl->ttl | (uint32_t)IPPROTO_AH << 8 | (uint32_t)__builtin_bswap16((uint16_t)~sum) << 16;
		uint32_t z2 = (uint32_t)IPPROTO_AH << 8;
		memcpy(o, &z0, 8);
		memcpy(o + 8, &z2, 4);
		memcpy(o + 12, sa->hdr4 + 12, 8);
	} else {
		uint64_t z0 = 0x6000000000000000ULL | (uint64_t)(uint16_t)(out_len - 40) << 16 |
			      (uint64_t)IPPROTO_AH << 8;
		s->w0 = __builtin_bswap64(z0 | tos << 52 | pl->ttl);
		z0 = __builtin_bswap64(z0);
		memcpy(o, &z0, 8);
		memcpy(o + 8, sa->src.a.b, 16);
		memcpy(o + 24, sa->dst.a.b, 16);
	}
	/* AH: the ICV (and padding) as zeros first, then header and IV over the start of it. */
	uint64_t next = fam == AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
	uint64_t iv_raw = __builtin_bswap64(seq);
	esp_st16(ah + pl->ahl - 16, 0, 0);
	if (ivl) {
		esp_st16(ah + 16, iv_raw >> 32, 0);
		esp_st16(ah, pl->ah_lo | next, __builtin_bswap32((uint32_t)seq) | iv_raw << 32);
	} else {
		esp_st16(ah, pl->ah_lo | next, __builtin_bswap32((uint32_t)seq));
	}
	fast_cop(c, o, out_len, ah + 12 + ivl);
	if (ivl)
		esp_nonce(c->iv, sa->salt, iv_raw, 0); /* RFC 4543 §3.1: salt || IV */
	(void)icvl;
	s->ip = o;
	p->off -= ins;
	p->len = out_len;
	p->seq = seq;
	p->family = ofam;
	return true;
}

static inline __attribute__((always_inline)) void out_fast(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n,
							   const unsigned ivl, const unsigned icvl,
							   const uint8_t ofam)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_fast_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	struct ah_out_plan pl;
	unsigned nl = 0;

	pl.ofam = ofam;
	pl.ohl = ofam == AF_INET6 ? 40u : 20u;
	pl.ahl = ah_len_for(sa, ofam);
	pl.ins = pl.ohl + pl.ahl;
	pl.mtu = sa->mtu;
	pl.sum4 = sa->hdr4_sum;
	pl.ttl = sa->ttl;
	pl.ah_lo = (uint64_t)(pl.ahl / 4 - 2) << 8 | (uint64_t)sa->spi_be << 32;
	pl.tos_keep = sa->tos_keep; /* esp_outer_tos/esp_outer_df, on the plan's copies */
	pl.tos_set = sa->tos_set;
	pl.df_keep = sa->df_keep;
	pl.df_set = sa->df_set;
	for (unsigned i = 0; i < n; i++) {
		if (i + 2 < n)
			__builtin_prefetch(pkts[i + 2]->buf + pkts[i + 2]->off);
		if (out_fast_one(sa, &pl, pkts[i], &cops[nl], &st[nl], ivl, icvl, ofam))
			live[nl++] = pkts[i];
	}
	if (!nl)
		return;
	sa->ops->encrypt(&sa->cs, cops, nl);
	for (unsigned i = 0; i < nl; i++) {
		if (i + 2 < nl) /* the crypto call has streamed the burst through the cache since */
			__builtin_prefetch(st[i + 2].ip, 1);
		memcpy(st[i].ip, &st[i].w0, 8);
		if (ofam == AF_INET)
			memcpy(st[i].ip + 8, &st[i].w2, 4);
		if (ESP_UNLIKELY(!cops[i].ok))
			live[i]->drop = SADB_DROP_CRYPTO;
	}
}

void ah_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	/* The outer family is fixed too: one copy per transform variant and family. */
	const bool v6 = sa->dst.family == AF_INET6;
	esp_seq_burst(sa, n);
	switch (fast_variant(sa, true)) {
	case 1: v6 ? out_fast(sa, pkts, n, 8, 16, AF_INET6) : out_fast(sa, pkts, n, 8, 16, AF_INET); break;
	case 2: v6 ? out_fast(sa, pkts, n, 0, 12, AF_INET6) : out_fast(sa, pkts, n, 0, 12, AF_INET); break;
	case 3: v6 ? out_fast(sa, pkts, n, 0, 16, AF_INET6) : out_fast(sa, pkts, n, 0, 16, AF_INET); break;
	default: out_general(sa, pkts, n); break;
	}
}

/* Inbound: the checks of in_check for a bare outer header (against top, as there); 1 = ready for
 * the crypto call, 0 = dropped (p->drop set, packet untouched), -1 = not a bare header: the general
 * path's. */
static inline __attribute__((always_inline)) int in_fast_one(struct esp_sa *sa, struct esp_pkt *p,
							     struct esp_cop *c, struct ah_fast_state *s,
							     uint32_t ahl4, uint32_t ahl6, uint64_t top,
							     const unsigned ivl, const unsigned icvl)
{
	uint8_t *ip = p->buf + p->off;
	uint32_t len = p->len, l4, tl;
	uint64_t w0;
	if (len >= 20 && ip[0] == 0x45) {
		tl = esp_rd16(ip + 2);
		if (tl > len || tl < 20)
			goto truncated;
		if ((esp_rd16(ip + 6) & 0x3fff) != 0 || ip[9] != IPPROTO_AH) {
			p->drop = SADB_DROP_UNSUPPORTED; /* a fragment, or not AH */
			return 0;
		}
		l4 = 20;
	} else if (len >= 40 && (ip[0] >> 4) == 6 && ip[6] == IPPROTO_AH) {
		tl = 40u + esp_rd16(ip + 4);
		if (tl > len)
			goto truncated;
		l4 = 40;
	} else {
		return -1;
	}
	len = tl;
	const uint32_t ahl = l4 == 20 ? ahl4 : ahl6;
	uint8_t *ah = ip + l4;
	if (l4 + ahl > len || ah[1] != ahl / 4 - 2)
		goto truncated;
	uint32_t spi;
	memcpy(&spi, ah + 4, 4);
	if (spi != sa->spi_be) {
		p->drop = SADB_DROP_BAD_SPI;
		return 0;
	}
	uint64_t seq = esp_rd32(ah + 8);
	enum sadb_drop r = esp_replay_check_at(sa, seq, top); /* before any crypto (RFC 4302 §3.4.3) */
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return 0;
	}
	p->seq = seq;
	memcpy(&w0, ip, 8);
	s->w0 = w0;
	if (l4 == 20) {
		/* Zero TOS, flags/fragment offset, TTL and checksum; keep the protocol. */
		uint32_t w2;
		memcpy(&w2, ip + 8, 4);
		s->w2 = w2;
		w0 &= 0x0000ffffffff00ffULL;
		w2 &= 0x0000ff00u;
		memcpy(ip, &w0, 8);
		memcpy(ip + 8, &w2, 4);
	} else {
		/* Version 6, traffic class, flow label and hop limit zeroed. */
		w0 = (w0 & 0x00ffffff00000000ULL) | 0x60;
		memcpy(ip, &w0, 8);
	}
	s->ip = ip;
	s->len = len;
	s->hlen = (uint16_t)(l4 + ahl);
	s->next = ah[0];
	uint64_t inner8 = 0;
	if (len - l4 - ahl >= 8)
		memcpy(&inner8, ah + ahl, 8);
	s->inner8 = inner8;
	uint8_t *icv = ah + 12 + ivl;
	fast_cop(c, ip, len, c->calc);
	c->icv_in = c->icv_save;
	if (ivl) {
		uint64_t iv_raw;
		memcpy(&iv_raw, ah + 12, 8);
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
	}
	/* The ICV counts as zeros, the padding after it as received (RFC 4302 §3.3.3.2.1). */
	memcpy(c->icv_save, icv, icvl);
	memset(icv, 0, icvl);
	return 1;
truncated:
	p->drop = SADB_DROP_TRUNCATED;
	return 0;
}

static inline __attribute__((always_inline)) void in_fast(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n,
							  const unsigned ivl, const unsigned icvl)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_fast_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	const uint32_t ahl4 = sa->ah_hdr_len, ahl6 = sa->ah_hdr_len6;
	const uint64_t top = esp_replay_top(sa->rt); /* one read for the burst */
	unsigned i = 0;

	while (i < n) {
		unsigned nl = 0;
		int k = 1;
		for (; i < n; i++) {
			if (i + 2 < n)
				__builtin_prefetch(pkts[i + 2]->buf + pkts[i + 2]->off);
			k = in_fast_one(sa, pkts[i], &cops[nl], &st[nl], ahl4, ahl6, top, ivl, icvl);
			if (k > 0)
				live[nl++] = pkts[i];
			else if (k < 0)
				break;
		}
		if (nl) {
			sa->ops->decrypt(&sa->cs, cops, nl);
			esp_replay_lock(sa);
			for (unsigned j = 0; j < nl; j++) {
				struct ah_fast_state *s = &st[j];
				uint8_t *ip = s->ip;
				uint64_t w0 = s->w0;
				bool v4 = (w0 & 0xff) == 0x45;
				if (ESP_LIKELY(cops[j].ok)) {
					/* The outer header and AH are cut off a good packet: only one that
					 * decapsulation drops needs them back. */
					uint8_t otos = v4 ? (uint8_t)(w0 >> 8)
							  : (uint8_t)((w0 & 0x0f) << 4 | ((w0 >> 12) & 0x0f));
					esp_decap_tunnel_inline(sa, live[j], otos, ip + s->hlen, s->len - s->hlen, s->next,
								s->inner8);
					if (ESP_LIKELY(live[j]->drop == SADB_DROP_NONE))
						continue;
				} else {
					live[j]->drop = SADB_DROP_ICV;
				}
				/* A dropped packet is left as it came: header words and the received ICV back. */
				memcpy(ip, &w0, 8);
				if (v4)
					memcpy(ip + 8, &s->w2, 4);
				memcpy(ip + (v4 ? 20 : 40) + 12 + ivl, cops[j].icv_save, icvl);
			}
			esp_replay_unlock(sa);
		}
		if (k < 0) {
			/* IPv4 options or IPv6 extension headers (or malformed): after the packets before
			 * it, so that the replay window sees them in order. */
			in_general(sa, &pkts[i], 1);
			i++;
		}
	}
}

void ah_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	switch (fast_variant(sa, false)) {
	case 1: in_fast(sa, pkts, n, 8, 16); break;
	case 2: in_fast(sa, pkts, n, 0, 12); break;
	case 3: in_fast(sa, pkts, n, 0, 16); break;
	default: in_general(sa, pkts, n); break;
	}
}
