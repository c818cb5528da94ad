/* dataplane/engine/esp_ip.c: IP header handling for the ESP/AH engine: checksums, walking IPv6 extension
 * headers (where ESP/AH goes in transport mode, where it is on receipt), RFC 6040 ECN, and the two
 * parse helpers of esp.h (outer headers for the SA lookup, selector fields for policy checks). */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "dataplane/engine/esp_internal.h"

uint16_t esp_udp6_csum(const uint8_t *ip6, const uint8_t *udp, unsigned udp_len)
{
	uint32_t sum = esp_csum_add(0, ip6 + 8, 32);
	sum += udp_len >> 16;
	sum += udp_len & 0xffff;
	sum += IPPROTO_UDP;
	sum = esp_csum_add(sum, udp, udp_len);
	uint16_t c = esp_csum_fold(sum);
	return c ? c : 0xffff; /* RFC 8200 §8.1: a computed zero is sent as 0xffff */
}

void esp_l4_set_csum(uint8_t *ip, uint32_t l4, uint32_t len, uint8_t proto)
{
	uint32_t seg = len - l4, at = proto == IPPROTO_TCP ? 16 : 6;
	if (seg < (proto == IPPROTO_TCP ? 20u : 8u))
		return;
	bool v4 = (ip[0] >> 4) == 4;
	uint8_t *c = ip + l4 + at;
	if (v4 && proto == IPPROTO_UDP && c[0] == 0 && c[1] == 0)
		return; /* no checksum sent: none to fix */
	c[0] = c[1] = 0;
	uint32_t sum = v4 ? esp_csum_add(0, ip + 12, 8) : esp_csum_add(0, ip + 8, 32);
	sum += seg >> 16;
	sum += seg & 0xffff;
	sum += proto;
	sum = esp_csum_add(sum, ip + l4, seg);
	uint16_t v = esp_csum_fold(sum);
	if (v == 0 && proto == IPPROTO_UDP)
		v = 0xffff;
	esp_wr16(c, v);
}

/* Where the walk of an IP header chain starts: after the IPv4 header (whose length must fit in
 * len; its protocol byte names what follows) or the fixed IPv6 header. Returns 4 or 6, 0 for
 * anything else. */
static unsigned ip_walk_start(const uint8_t *pkt, uint32_t len, uint32_t *off, uint32_t *nho, uint8_t *nh)
{
	if (len < 20)
		return 0;
	if ((pkt[0] >> 4) == 4) {
		*off = (pkt[0] & 0x0fu) * 4u;
		*nho = 9;
		*nh = pkt[9];
		return *off < 20 || *off > len ? 0 : 4;
	}
	*off = 40;
	*nho = 6;
	*nh = pkt[6];
	return (pkt[0] >> 4) == 6 && len >= 40 ? 6 : 0;
}

static bool is_v6_ext(uint8_t nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_ROUTING || nh == IPPROTO_DSTOPTS ||
	       nh == IPPROTO_FRAGMENT;
}

bool esp_find_l4(const uint8_t *pkt, uint32_t len, uint32_t *l4_off, uint32_t *nh_off, uint8_t *proto,
		 bool *frag)
{
	uint32_t off, nho;
	uint8_t nh;
	unsigned v = ip_walk_start(pkt, len, &off, &nho, &nh);
	*frag = false;
	if (v == 4)
		*frag = (esp_rd16(pkt + 6) & 0x3fff) != 0;
	else if (v != 6)
		return false;
	while (v == 6 && is_v6_ext(nh)) {
		if (off + 8 > len)
			return false;
		uint32_t hl;
		if (nh == IPPROTO_FRAGMENT) {
			hl = 8;
			uint16_t fo = esp_rd16(pkt + off + 2);
			if (fo & 0xfff9)
				*frag = true; /* offset or M flag: a fragment */
			if (fo & 0xfff8) {
				/* Not the first fragment: what follows is the middle of the original
				 * payload, not headers. The walk ends here, at the Fragment header's next
				 * header (RFC 4301 §7.1: a non-initial fragment's selector), whatever
				 * that payload looks like. */
				nho = off;
				nh = pkt[off];
				off += hl;
				break;
			}
		} else {
			hl = (pkt[off + 1] + 1u) * 8u;
		}
		nho = off;
		nh = pkt[off];
		off += hl;
		if (off > len)
			return false;
	}
	*l4_off = off;
	*nh_off = nho;
	*proto = nh;
	return true;
}

bool esp_transport_split(const uint8_t *pkt, uint32_t len, uint32_t *hdr_len, uint32_t *nh_off)
{
	uint32_t off, nho;
	uint8_t nh;
	unsigned v = ip_walk_start(pkt, len, &off, &nho, &nh);
	if (!v)
		return false;
	/* RFC 4303 §3.1.1: ESP goes after hop-by-hop, routing and fragment headers; destination options
	 * may be either side: those that precede a routing header must stay in clear (intermediate
	 * nodes read them), the others are protected. */
	while (v == 6 && is_v6_ext(nh)) {
		if (off + 8 > len)
			return false;
		uint32_t hl = nh == IPPROTO_FRAGMENT ? 8 : (pkt[off + 1] + 1u) * 8u;
		if (off + hl > len)
			return false;
		if (nh == IPPROTO_DSTOPTS && pkt[off] != IPPROTO_ROUTING)
			break;
		nho = off;
		nh = pkt[off];
		off += hl;
	}
	*hdr_len = off;
	*nh_off = nho;
	return true;
}

int esp_ecn_decap(unsigned outer, unsigned inner)
{
	/* RFC 6040 §4.2, Figure 4. ECT(0) = 2, ECT(1) = 1, CE = 3. */
	if (outer == 3)
		return inner == 0 ? -1 : 3;
	if (inner == 0)
		return 0;
	if (outer == 1 && inner == 2)
		return 1;
	return (int)inner;
}

static void addr_set(struct sadb_addr *a, int family, const uint8_t *p)
{
	memset(a, 0, sizeof(*a));
	a->family = (uint8_t)family;
	memcpy(a->a.b, p, family == AF_INET ? 4 : 16);
}

/* Source and destination addresses of the IP header at pkt, of family fam. */
static void addrs_set(struct sadb_addr *src, struct sadb_addr *dst, int fam, const uint8_t *pkt)
{
	addr_set(src, fam, fam == AF_INET ? pkt + 12 : pkt + 8);
	addr_set(dst, fam, fam == AF_INET ? pkt + 16 : pkt + 24);
}

/* What the two parse helpers' walk finds: the length trimmed to the IP header's own (Ethernet
 * padding, TFC padding), the upper-layer header's offset and protocol (esp_find_l4 within that
 * length), whether it is a fragment, the family. */
struct ip_hdrs {
	uint32_t len, l4;
	uint8_t proto, fam;
	bool frag;
};

/* The walk, with the header's addresses in *src and *dst. False if malformed. */
static bool ip_walk(const uint8_t *pkt, uint32_t len, struct ip_hdrs *h, struct sadb_addr *src,
		    struct sadb_addr *dst)
{
	uint32_t nho;

	if (!esp_ip_len(pkt, len, &h->len, &h->fam) ||
	    !esp_find_l4(pkt, h->len, &h->l4, &nho, &h->proto, &h->frag))
		return false;
	addrs_set(src, dst, h->fam, pkt);
	return true;
}

enum sadb_drop esp_parse_outer(const uint8_t *pkt, uint32_t len, uint16_t encap_port,
			       struct esp_outer *out)
{
	struct ip_hdrs h;

	memset(out, 0, sizeof(*out));
	if (!ip_walk(pkt, len, &h, &out->src, &out->dst))
		return SADB_DROP_TRUNCATED;
	if (h.frag)
		return SADB_DROP_UNSUPPORTED;
	out->family = h.fam;
	if (!encap_port)
		encap_port = 4500;
	if (h.proto == IPPROTO_UDP) {
		if (h.l4 + 8 > h.len)
			return SADB_DROP_TRUNCATED;
		out->sport = esp_rd16(pkt + h.l4);
		out->dport = esp_rd16(pkt + h.l4 + 2);
		if (out->dport != encap_port)
			return SADB_DROP_UNSUPPORTED;
		/* the datagram is as long as its UDP header says (RFC 768), as the kernel reads it: one
		 * whose length field is under 8 or beyond the IP payload is malformed, bytes past it are
		 * not ESP */
		uint32_t ulen = esp_rd16(pkt + h.l4 + 4);

		if (ulen < 8 || ulen > h.len - h.l4)
			return SADB_DROP_TRUNCATED;
		h.len = h.l4 + ulen;
		/* RFC 3948 §2.2/§4: a one-byte 0xff is a NAT keepalive, a zero marker IKE. */
		if (h.len - h.l4 - 8 < 8 || esp_rd32(pkt + h.l4 + 8) == 0)
			return SADB_DROP_BAD_ENCAP;
		out->udp_encap = true;
		h.l4 += 8;
		h.proto = IPPROTO_ESP;
	}
	if (h.proto == IPPROTO_ESP) {
		if (h.l4 + 8 > h.len)
			return SADB_DROP_TRUNCATED;
		out->proto = SADB_PROTO_ESP;
		out->spi = esp_rd32(pkt + h.l4);
		out->seq = esp_rd32(pkt + h.l4 + 4);
	} else if (h.proto == IPPROTO_AH) {
		if (h.l4 + 12 > h.len)
			return SADB_DROP_TRUNCATED;
		out->proto = SADB_PROTO_AH;
		out->spi = esp_rd32(pkt + h.l4 + 4);
		out->seq = esp_rd32(pkt + h.l4 + 8);
	} else {
		return SADB_DROP_UNSUPPORTED;
	}
	out->l4_off = h.l4;
	return SADB_DROP_NONE;
}

/* Whether an IPv6 packet (headers already walked once by esp_find_l4) carries a Fragment header with
 * a non-zero offset before its upper-layer header. */
static bool v6_nonfirst(const uint8_t *pkt, uint32_t len)
{
	uint32_t off = 40;
	uint8_t nh = pkt[6];

	while (is_v6_ext(nh) && off + 8 <= len) {
		if (nh == IPPROTO_FRAGMENT)
			return (esp_rd16(pkt + off + 2) & 0xfff8) != 0;
		nh = pkt[off];
		off += (pkt[off + 1] + 1u) * 8u;
	}
	return false;
}

enum sadb_drop esp_pkt_sel(const uint8_t *pkt, uint32_t len, struct sadb_pkt_sel *out)
{
	struct ip_hdrs h;

	memset(out, 0, sizeof(*out));
	if (!ip_walk(pkt, len, &h, &out->src, &out->dst))
		return SADB_DROP_TRUNCATED;
	out->proto = h.proto;
	/* Ports only from a first (or no) fragment. */
	bool first = true;
	if (h.fam == AF_INET)
		first = (esp_rd16(pkt + 6) & 0x1fff) == 0;
	else if (h.frag)
		first = !v6_nonfirst(pkt, h.len);
	if (!first)
		return SADB_DROP_NONE;
	switch (h.proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
	case IPPROTO_UDPLITE:
		if (h.l4 + 4 <= h.len) {
			out->sport = esp_rd16(pkt + h.l4);
			out->dport = esp_rd16(pkt + h.l4 + 2);
		}
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (h.l4 + 2 <= h.len) {
			out->sport = pkt[h.l4];
			out->dport = pkt[h.l4 + 1];
		}
		break;
	case IPPROTO_MH:
		if (h.l4 + 3 <= h.len)
			out->sport = pkt[h.l4 + 2];
		break;
	default:
		break;
	}
	return SADB_DROP_NONE;
}
