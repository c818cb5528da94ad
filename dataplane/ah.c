/* dataplane/ah.c: the Authentication Header (RFC 4302), outbound and inbound, tunnel and transport,
 * IPv4 and IPv6, with HMAC or AES-GMAC (RFC 4543: the 8-byte IV follows the sequence number and
 * precedes the 16-byte ICV; it is authenticated, the ICV field counts as zeros). The ICV covers the IP header(s) with their mutable fields
 * zeroed (RFC 4302 §3.3.3.1 and Appendix A): those are zeroed in place on a saved copy of the
 * headers, the burst is authenticated in one backend call, then the headers are put back. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/esp_internal.h"

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

void ah_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl = 0;

	for (unsigned i = 0; i < n; i++) {
		struct esp_pkt *p = pkts[i];
		uint8_t *ip = p->buf + p->off;
		uint32_t len = p->len, prefix = 0, nh_off = 0;
		uint8_t fam;
		if (len >= 20 && (ip[0] >> 4) == 4 && (ip[0] & 0x0f) >= 5 && esp_rd16(ip + 2) <= len &&
		    esp_rd16(ip + 2) >= (ip[0] & 0x0fu) * 4u) {
			len = esp_rd16(ip + 2);
			fam = AF_INET;
		} else if (len >= 40 && (ip[0] >> 4) == 6 && 40u + esp_rd16(ip + 4) <= len) {
			len = 40u + esp_rd16(ip + 4);
			fam = AF_INET6;
		} else {
			p->drop = SADB_DROP_TRUNCATED;
			continue;
		}
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
		if (!esp_seq_take(sa, &seq)) {
			p->drop = SADB_DROP_SEQ_OVERFLOW;
			continue;
		}
		uint8_t *o = ip - ins, *ah;
		uint8_t next;
		if (tunnel) {
			/* Outer header as esp_out.c builds it (TTL, DSCP/ECN, DF), then AH. */
			uint8_t itos = esp_ip_tos(ip);
			uint8_t dscp = sa->dscp == 0xff ? (uint8_t)(itos & 0xfc) : (uint8_t)(sa->dscp << 2);
			uint8_t tos = (uint8_t)(dscp | ((sa->flags & SADB_SAF_NO_ECN) ? 0 : (itos & 3)));
			if (ofam == AF_INET) {
				bool df = (sa->flags & SADB_SAF_DF_CLEAR) ? false :
					  (sa->flags & SADB_SAF_DF_SET) ? true :
					  (fam == AF_INET6 || (ip[6] & 0x40));
				esp_outer4(sa, o, tos, out_len, df);
			} else {
				esp_wr32(o, 0x60000000u | (uint32_t)tos << 20);
				esp_wr16(o + 4, (uint16_t)(out_len - 40));
				o[6] = IPPROTO_AH;
				o[7] = sa->ttl;
				memcpy(o + 8, sa->src.a.b, 16);
				memcpy(o + 24, sa->dst.a.b, 16);
			}
			ah = o + ohl;
			next = fam == AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
			prefix = ohl;
			nh_off = ofam == AF_INET ? 9 : 6;
		} else {
			next = ip[nh_off];
			memmove(o, ip, prefix);
			o[nh_off] = IPPROTO_AH;
			if (fam == AF_INET) {
				esp_wr16(o + 2, (uint16_t)out_len);
				esp_ip4_set_csum(o);
			} else {
				esp_wr16(o + 4, (uint16_t)(out_len - 40));
			}
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
		s->ip = o;
		s->ah = ah;
		s->len = out_len;
		s->prefix = prefix;
		save_hdr(s, o, prefix);
		if (!zero_mutable_fast(o, prefix)) {
			restore_hdr(s, o);
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
	sa->ops->encrypt(sa, cops, nl);
	for (unsigned i = 0; i < nl; i++) {
		restore_hdr(&st[i], st[i].ip);
		if (!cops[i].ok)
			live[i]->drop = SADB_DROP_CRYPTO;
	}
}

static bool in_check(struct esp_sa *sa, struct esp_pkt *p, struct esp_cop *c, struct ah_state *s)
{
	uint8_t *ip = p->buf + p->off;
	uint32_t len = p->len, l4, nho;
	uint8_t proto, fam;
	bool frag;

	if (len >= 20 && (ip[0] >> 4) == 4 && esp_rd16(ip + 2) <= len && esp_rd16(ip + 2) >= 20) {
		len = esp_rd16(ip + 2);
		fam = AF_INET;
	} else if (len >= 40 && (ip[0] >> 4) == 6 && 40u + esp_rd16(ip + 4) <= len) {
		len = 40u + esp_rd16(ip + 4);
		fam = AF_INET6;
	} else {
		goto truncated;
	}
	if (ESP_LIKELY(ip[0] == 0x45)) {
		/* IPv4 without options, the common case, without the call (as esp_find_l4 would). */
		l4 = 20;
		nho = 9;
		proto = ip[9];
		frag = (esp_rd16(ip + 6) & 0x3fff) != 0;
	} else if (!esp_find_l4(ip, len, &l4, &nho, &proto, &frag)) {
		goto truncated;
	}
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
	uint64_t seq = esp_replay_infer(sa, esp_rd32(ah + 8));
	enum sadb_drop r = esp_replay_check(sa, seq);
	if (r != SADB_DROP_NONE) {
		p->drop = r;
		return false;
	}
	if ((sa->flags & SADB_SAF_ESN) && p->off + len + 4 > p->buf_len) {
		p->drop = SADB_DROP_NOMEM;
		return false;
	}
	p->seq = seq;
	s->ip = ip;
	s->ah = ah;
	s->len = len;
	s->prefix = l4;
	s->nh_off = nho;
	save_hdr(s, ip, l4);
	if (!zero_mutable_fast(ip, l4)) {
		restore_hdr(s, ip);
		goto truncated;
	}
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
	ip[s->nh_off] = next;
	uint8_t *nip = pl - s->prefix;
	memmove(nip, ip, s->prefix);
	uint32_t nlen = s->len - ahl;
	if ((nip[0] >> 4) == 4) {
		esp_wr16(nip + 2, (uint16_t)nlen);
		esp_ip4_set_csum(nip);
		p->family = AF_INET;
	} else {
		esp_wr16(nip + 4, (uint16_t)(nlen - 40));
		p->family = AF_INET6;
	}
	p->off = (uint32_t)(nip - p->buf);
	p->len = nlen;
}

void ah_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct ah_state st[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl = 0;

	for (unsigned i = 0; i < n; i++)
		if (in_check(sa, pkts[i], &cops[nl], &st[nl]))
			live[nl++] = pkts[i];
	if (!nl)
		return;
	sa->ops->decrypt(sa, cops, nl);
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
}
