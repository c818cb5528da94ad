/* dataplane/esp_out.c: outbound ESP (RFC 4303 §3.3), tunnel and transport, with UDP encapsulation
 * (RFC 3948), padding and TFC padding, outer header construction (TTL, DSCP/ECN per RFC 6040, DF)
 * and the MTU check. Headers are laid out per packet, then the whole burst is encrypted in one
 * backend call. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/esp_internal.h"

/* Length of the IP packet from its own header; false if it is not a well-formed IP header. */
static bool inner_len(const uint8_t *ip, uint32_t len, uint32_t *out, uint8_t *fam)
{
	if (len < 20)
		return false;
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

/* Write the outer IPv4/IPv6 header of a tunnel packet of total length tot. */
static inline void write_outer(struct esp_sa *sa, uint8_t *o, const uint8_t *inner, uint32_t tot, uint8_t proto)
{
	uint8_t itos = esp_ip_tos(inner);
	uint8_t dscp = sa->dscp == 0xff ? (uint8_t)(itos & 0xfc) : (uint8_t)(sa->dscp << 2);
	/* RFC 6040 §4.1 normal mode copies the inner ECN field; compatibility mode sends Not-ECT. */
	uint8_t tos = (uint8_t)(dscp | ((sa->flags & SADB_SAF_NO_ECN) ? 0 : (itos & 3)));
	if (sa->dst.family == AF_INET) {
		bool df;
		if (sa->flags & SADB_SAF_DF_CLEAR)
			df = false;
		else if (sa->flags & SADB_SAF_DF_SET)
			df = true;
		else /* copy from an IPv4 inner header; IPv6 is never fragmented on path */
			df = (inner[0] >> 4) == 6 || (inner[6] & 0x40);
		esp_outer4(sa, o, tos, tot, df);
	} else {
		esp_wr32(o, 0x60000000u | (uint32_t)tos << 20);
		esp_wr16(o + 4, (uint16_t)(tot - 40));
		o[6] = proto;
		o[7] = sa->ttl;
		memcpy(o + 8, sa->src.a.b, 16);
		memcpy(o + 24, sa->dst.a.b, 16);
	}
}

/* Lay out one packet and fill its crypto operation; false (with p->drop) if it cannot be sent. */
static bool prepare(struct esp_sa *sa, struct esp_pkt *p, struct esp_cop *c)
{
	uint8_t *ip = p->buf + p->off;
	uint32_t len;
	uint8_t fam;

	if (!inner_len(ip, p->len, &len, &fam)) {
		p->drop = SADB_DROP_TRUNCATED;
		return false;
	}
	const bool tunnel = sa->mode == SADB_MODE_TUNNEL;
	const uint32_t udp = sa->encap_dport ? 8 : 0;
	uint32_t prefix, nh_off = 0; /* bytes kept before ESP (transport), offset of the next-header byte */
	uint8_t ofam;
	if (tunnel) {
		ofam = sa->dst.family;
		prefix = 0;
	} else {
		ofam = fam;
		if (!esp_transport_split(ip, len, &prefix, &nh_off)) {
			p->drop = SADB_DROP_TRUNCATED;
			return false;
		}
	}
	const uint32_t ohl = tunnel ? (ofam == AF_INET6 ? 40u : 20u) : 0u;
	const uint32_t ins = ohl + udp + 8u + sa->iv_len;   /* bytes added in front of the payload */
	const uint32_t payload = len - prefix;
	uint32_t tfc = sa->tfc_pad > payload ? sa->tfc_pad - payload : 0;
	uint32_t padded, out_len;
	for (;;) {
		padded = (payload + tfc + 2 + sa->align - 1) & ~(uint32_t)(sa->align - 1);
		out_len = prefix + ins + padded + sa->icv_len;
		uint32_t tail_need = padded - payload + sa->icv_len;
		bool mtu_bad = sa->mtu && out_len > sa->mtu;
		bool tail_bad = p->off + len + tail_need > p->buf_len;
		if (!mtu_bad && !tail_bad)
			break;
		if (tfc) {
			tfc = 0; /* TFC padding is best effort: never the reason to drop */
			continue;
		}
		if (mtu_bad) {
			p->drop = SADB_DROP_MTU;
			p->mtu = esp_inner_mtu_hdr(sa, sa->mtu, fam, prefix);
		} else {
			p->drop = SADB_DROP_NOMEM;
		}
		return false;
	}
	if (p->off < ins) {
		p->drop = SADB_DROP_NOMEM;
		return false;
	}
	uint64_t seq;
	if (!esp_seq_take(sa, &seq)) {
		p->drop = SADB_DROP_SEQ_OVERFLOW;
		return false;
	}

	/* Trailer first (RFC 4303 §2.4-2.6): TFC zeros, padding 1, 2, 3..., pad length, next header. */
	uint8_t *pl = ip + prefix;              /* payload, not moved */
	uint8_t *t = pl + payload;
	uint8_t next;
	if (tunnel)
		next = fam == AF_INET ? IPPROTO_IPIP : IPPROTO_IPV6;
	else
		next = ip[nh_off];
	if (tfc) {
		memset(t, 0, tfc);
		t += tfc;
	}
	uint32_t npad = padded - payload - tfc - 2;
	for (uint32_t i = 0; i < npad; i++)
		t[i] = (uint8_t)(i + 1);
	t[npad] = (uint8_t)npad;
	t[npad + 1] = next;

	/* Headers. */
	uint8_t *o = ip - ins;                  /* new start of the packet */
	uint8_t *esp;
	if (tunnel) {
		write_outer(sa, o, ip, out_len, udp ? IPPROTO_UDP : IPPROTO_ESP);
		esp = o + ohl;
	} else {
		memmove(o, ip, prefix);
		o[nh_off] = udp ? IPPROTO_UDP : IPPROTO_ESP;
		if (fam == AF_INET) {
			esp_wr16(o + 2, (uint16_t)out_len);
			esp_ip4_set_csum(o);
		} else {
			esp_wr16(o + 4, (uint16_t)(out_len - 40));
		}
		esp = o + prefix;
	}
	if (udp) {
		esp_wr16(esp, sa->encap_sport);
		esp_wr16(esp + 2, sa->encap_dport);
		esp_wr16(esp + 4, (uint16_t)(out_len - (uint32_t)(esp - o)));
		esp_wr16(esp + 6, 0); /* IPv4: zero (RFC 3948 §2.1); IPv6: filled after encryption */
		esp += 8;
	}
	uint8_t *ivp = esp + 8;
	uint8_t *icv = pl + padded;
	/* ESP header and the counter-based IV (the sequence number) in one store. */
	uint64_t hdr = (uint64_t)sa->spi_be | (uint64_t)__builtin_bswap32((uint32_t)seq) << 32;
	uint64_t iv_raw = __builtin_bswap64(seq);
	if (sa->iv_len == 8 && !sa->iv_fn)
		esp_st16(esp, hdr, iv_raw);
	else
		memcpy(esp, &hdr, 8);
	if (sa->iv_len == 8 && sa->iv_fn) {
		sa->iv_fn(sa->iv_arg, seq, ivp, 8);
		memcpy(&iv_raw, ivp, 8);
	}

	memset(c, 0, offsetof(struct esp_cop, aadbuf));
	c->fix = NULL;
	c->tag = icv;
	switch (sa->kind) {
	case ESP_KIND_AEAD:
		/* RFC 4106 §3.1 / RFC 7634 §2: 8-byte IV, nonce = salt || IV; AAD = SPI || [seq hi ||] seq. */
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
		c->data = pl;
		c->data_len = padded;
		if (sa->flags & SADB_SAF_ESN) {
			esp_st16(c->aadbuf, (uint64_t)sa->spi_be | (uint64_t)__builtin_bswap32((uint32_t)(seq >> 32)) << 32,
				 __builtin_bswap32((uint32_t)seq));
			c->aad = c->aadbuf;
			c->aad_len = 12;
		} else {
			c->aad = esp;
			c->aad_len = 8;
		}
		break;
	case ESP_KIND_GMAC:
		/* RFC 4543 §3: everything from the SPI to the next header is AAD; no ciphertext. With ESN
		 * the AAD is SPI || seq hi || seq lo || IV ...: laid out in place by moving the SPI 4 bytes
		 * back over the end of the header before it, put back afterwards. */
		esp_nonce(c->iv, sa->salt, iv_raw, 0);
		c->data = pl;
		c->data_len = 0;
		c->auth = esp;
		c->auth_len = 8u + 8u + padded;
		if (sa->flags & SADB_SAF_ESN) {
			c->fix = esp - 4;
			memcpy(c->fix_save, esp - 4, 4);
			memcpy(esp - 4, &sa->spi_be, 4);
			esp_wr32(esp, (uint32_t)(seq >> 32));
			c->auth = esp - 4;
			c->auth_len += 4;
		}
		break;
	default: /* ESP_KIND_CIPHER_HMAC */
		c->auth = esp;
		c->auth_len = 8u + sa->iv_len + padded;
		c->data = pl;
		c->data_len = padded;
		if (sa->cipher == ESP_C_AES_CBC || sa->cipher == ESP_C_3DES_CBC) {
			if (sa->iv_fn) {
				sa->iv_fn(sa->iv_arg, seq, ivp, sa->iv_len);
				memcpy(c->iv, ivp, sa->iv_len);
			} else {
				/* IV = E_K(nonce) (NIST SP 800-38A App. C), computed by CBC-encrypting the
				 * nonce block in the IV's place with a zero IV: its ciphertext is the IV and
				 * chains into the payload exactly as CBC with that IV would. */
				esp_wr64(ivp, seq);
				if (sa->iv_len == 16) {
					memcpy(ivp + 8, &sa->spi_be, 4);
					esp_wr32(ivp + 12, 0x45535056u); /* "ESPV": domain separation */
				}
				c->data = ivp;
				c->data_len = padded + sa->iv_len;
			}
		} else if (sa->cipher == ESP_C_AES_CTR) {
			/* RFC 3686 §4: counter block = nonce || IV || 1. */
			esp_nonce(c->iv, sa->salt, iv_raw, 1);
		} else { /* NULL */
			c->data_len = 0;
		}
		if (sa->flags & SADB_SAF_ESN) {
			/* RFC 4303 §2.2.1: the high bits are hashed after the payload, not sent: they sit in
			 * the ICV's place, which the tag then overwrites. */
			esp_wr32(icv, (uint32_t)(seq >> 32));
			c->auth_len += 4;
		}
		break;
	}
	p->off -= ins;
	p->len = out_len;
	p->seq = seq;
	p->family = ofam;
	return true;
}

void esp_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n)
{
	struct esp_cop cops[ESP_BURST_MAX];
	struct esp_pkt *live[ESP_BURST_MAX];
	unsigned nl = 0;

	for (unsigned i = 0; i < n; i++) {
		if (i + 2 < n) /* the header two packets ahead, while this one is laid out */
			__builtin_prefetch(pkts[i + 2]->buf + pkts[i + 2]->off);
		if (prepare(sa, pkts[i], &cops[nl]))
			live[nl++] = pkts[i];
	}
	if (!nl)
		return;
	sa->ops->encrypt(sa, cops, nl);
	for (unsigned i = 0; i < nl; i++) {
		struct esp_pkt *p = live[i];
		struct esp_cop *c = &cops[i];
		if (c->fix) {
			memcpy(c->fix + 4, c->fix, 4); /* the SPI back in its place */
			memcpy(c->fix, c->fix_save, 4);
		}
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
