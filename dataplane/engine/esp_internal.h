/* dataplane/engine/esp_internal.h: what the engine's files share and nobody else sees: the SA object
 * (esp_sa.h), the replay window (esp_replay.h), the SA-free IP helpers (esp_ip.h) and, here, the
 * protocol halves and the tunnel-mode helpers that need an SA: outer header fields, nonces and the
 * one decapsulation of ESP and AH. Not part of the API (esp.h is); the crypto backends see only
 * crypto/esp_crypto.h. */
#ifndef XIPSEC_ESP_INTERNAL_H
#define XIPSEC_ESP_INTERNAL_H

#include <string.h>
#include <arpa/inet.h>

#include "dataplane/engine/esp_ip.h"
#include "dataplane/engine/esp_replay.h"
#include "dataplane/engine/esp_sa.h"
#include "dataplane/engine/esp_seq.h"

/* Protocol halves (esp_out.c, esp_in.c, ah.c): process up to ESP_BURST_MAX packets; set drop. */
void esp_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void esp_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void ah_proto_out(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
void ah_proto_in(struct esp_sa *sa, struct esp_pkt **pkts, unsigned n);
/* Tunnel-mode inner packet checks, ECN/DSCP, replay update and unwrap, after a verified ICV. */
void esp_decap_tunnel(struct esp_sa *sa, struct esp_pkt *p, const uint8_t *ip, uint8_t *pl,
		      uint32_t plen, uint8_t next);

/* Nonce salt || IV || counter (RFC 4106/4543/7634 use the first 12 bytes, RFC 3686 all 16), from
 * the IV as 8 bytes in wire order loaded into iv_raw. */
static inline void esp_nonce(uint8_t *dst, const uint8_t salt[4], uint64_t iv_raw, uint32_t ctr)
{
	uint32_t s;
	memcpy(&s, salt, 4);
	esp_st16(dst, (uint64_t)s | iv_raw << 32, iv_raw >> 32 | (uint64_t)__builtin_bswap32(ctr) << 32);
}

/* The AAD of an ESP AEAD operation (RFC 4106 §5, RFC 7634 §2.1): the ESP header in place, or with
 * ESN SPI || seq hi || seq lo, built in the operation's aadbuf. */
static inline __attribute__((always_inline)) void esp_cop_aad(struct esp_cop *c, const uint8_t *esp,
							       uint32_t spi_be, uint64_t seq, bool esn)
{
	if (esn) {
		esp_st16(c->aadbuf, (uint64_t)spi_be | (uint64_t)__builtin_bswap32((uint32_t)(seq >> 32)) << 32,
			 __builtin_bswap32((uint32_t)seq));
		c->aad = c->aadbuf;
		c->aad_len = 12;
	} else {
		c->aad = esp;
		c->aad_len = 8;
	}
}

/* ESP-GMAC with ESN (RFC 4543 §3): the AAD is SPI || seq hi || seq lo || IV ..., laid out in place by
 * moving the SPI 4 bytes back over the end of the header before it and writing the high bits in
 * its place; the caller puts both back after the crypto call (c->fix). */
static inline void esp_cop_gmac_esn(struct esp_cop *c, uint8_t *esp, uint64_t seq)
{
	c->fix = esp - 4;
	memcpy(c->fix_save, esp - 4, 4);
	memcpy(esp - 4, esp, 4);
	esp_wr32(esp, (uint32_t)(seq >> 32));
	c->auth = esp - 4;
	c->auth_len += 4;
}

/* ESP-GMAC (RFC 4543 §3): no ciphertext; everything from the SPI to the next header (len bytes after
 * the 16 of header and IV) is AAD, laid out with the high sequence bits when the SA has ESN. */
static inline void esp_cop_gmac(struct esp_cop *c, uint8_t *esp, uint8_t *payload, uint32_t len,
				uint64_t seq, bool esn)
{
	c->data = payload;
	c->data_len = 0;
	c->auth = esp;
	c->auth_len = 8u + 8u + len;
	if (esn)
		esp_cop_gmac_esn(c, esp, seq);
}

/* The IP length and family of the packet at ip (p->buf + p->off): false, with p->drop TRUNCATED, when
 * its header does not give a length within p->len. */
static inline __attribute__((always_inline)) bool esp_pkt_ip_len(struct esp_pkt *p, const uint8_t *ip,
								 uint32_t *len, uint8_t *fam)
{
	if (ESP_LIKELY(esp_ip_len(ip, p->len, len, fam)))
		return true;
	p->drop = SADB_DROP_TRUNCATED;
	return false;
}

/* After the crypto call: the bytes esp_cop_gmac_esn moved, back in their places. */
static inline void esp_cop_unfix(const struct esp_cop *c)
{
	if (c->fix) {
		memcpy(c->fix + 4, c->fix, 4); /* the SPI */
		memcpy(c->fix, c->fix_save, 4);
	}
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

/* Write the outer IPv6 header of a tunnel packet of tot bytes carrying proto. */
static inline void esp_outer6(const struct esp_sa *sa, uint8_t *o, uint8_t tos, uint32_t tot, uint8_t proto)
{
	esp_wr32(o, 0x60000000u | (uint32_t)tos << 20);
	esp_wr16(o + 4, (uint16_t)(tot - 40));
	o[6] = proto;
	o[7] = sa->ttl;
	memcpy(o + 8, sa->src.a.b, 16);
	memcpy(o + 24, sa->dst.a.b, 16);
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

#endif
