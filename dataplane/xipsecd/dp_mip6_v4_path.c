/* dataplane/xipsecd/dp_mip6_v4_path.c: Dual Stack Mobile IPv6 (RFC 5555 section 4.1) on the packet
 * path: the IPv4 header a mobile node on an IPv4 network puts around its ESP-protected Binding Update
 * taken off (the inbound stage then handles the IPv6 packet inside as any other, and the engine
 * stage hands what the outer header said to the home agent's queue with it), and the same header
 * put around the home agent's acknowledgement once the engine has protected it. Only IPv6 in IPv4
 * (protocol 41), or in UDP to port 4191 (DP_DSMIP_PORT: the mobile node's way through a NAT), to
 * one of the gateway's own addresses is taken here: whether it is a home agent's
 * IPv4 address the control thread checks against its configuration (dp_mip6_v4.c), so the workers
 * need no copy of it. */
#include "config.h"

#include <string.h>

#include "dataplane/engine/ip_bytes.h"
#include "dataplane/xipsecd/dp_path.h"

#define V4_HDR 20u
#define UDP_HDR 8u

bool dp_v4_outer_strip(struct dp_worker *w, const uint8_t *l3, uint32_t len, struct dp_v4_outer *v4,
		       uint32_t *off, uint32_t *inner_len)
{
	uint32_t ihl, hl;
	bool udp;

	if (len < V4_HDR + 40 || l3[0] >> 4 != 4 || (l3[9] != IPPROTO_IPV6 && l3[9] != IPPROTO_UDP))
		return false;
	udp = l3[9] == IPPROTO_UDP;
	ihl = (l3[0] & 0x0fu) * 4u;
	hl = ihl + (udp ? UDP_HDR : 0);
	/* a fragment is not taken: a Binding Update fits the IPv6 minimum MTU, and RFC 5555's
	 * tunnel is no place to reassemble */
	if (ihl < V4_HDR || len < hl + 40 || (l3[6] & 0x3f) || l3[7] || l3[hl] >> 4 != 6)
		return false;
	if (udp && (l3[ihl + 2] << 8 | l3[ihl + 3]) != DP_DSMIP_PORT)
		return false;
	if (!dp_xdp_is_local(w->ctx, AF_INET, l3 + 16))
		return false;
	memset(v4, 0, sizeof(*v4));
	v4->set = true;
	memcpy(v4->src, l3 + 12, 4);
	memcpy(v4->dst, l3 + 16, 4);
	if (udp) {
		v4->sport = (uint16_t)(l3[ihl] << 8 | l3[ihl + 1]);
		v4->dport = DP_DSMIP_PORT;
	}
	*off = hl;
	*inner_len = len - hl;
	return true;
}

bool dp_v4_outer_wrap(struct dp_worker *w, uint64_t base, uint32_t *off, uint32_t *len,
		      const struct dp_v4_outer *v4)
{
	uint32_t udp = v4->dport ? UDP_HDR : 0, tot = *len + V4_HDR + udp;
	uint8_t *h;

	if (*off < V4_HDR + udp + L2 || tot > 0xffff)
		return false;
	h = dp_mem(w, base + *off - V4_HDR - udp);
	h[0] = 0x45;
	h[1] = 0;
	h[2] = (uint8_t)(tot >> 8);
	h[3] = (uint8_t)tot;
	h[4] = (uint8_t)(w->icmp_ipid >> 8);  /* the worker's own IPv4 identification sequence */
	h[5] = (uint8_t)w->icmp_ipid;
	w->icmp_ipid++;
	h[6] = 0x40;  /* DF: the acknowledgement fits the IPv6 minimum MTU, never to be cut on the way */
	h[7] = 0;
	h[8] = 64;
	h[9] = udp ? IPPROTO_UDP : IPPROTO_IPV6;
	h[10] = h[11] = 0;
	memcpy(h + 12, v4->src, 4);
	memcpy(h + 16, v4->dst, 4);
	uint16_t c = esp_csum_fold(esp_csum_add(0, h, V4_HDR));
	h[10] = (uint8_t)(c >> 8);
	h[11] = (uint8_t)c;
	if (udp) {
		uint8_t *u = h + V4_HDR;
		uint32_t ulen = tot - V4_HDR;

		u[0] = (uint8_t)(v4->sport >> 8);
		u[1] = (uint8_t)v4->sport;
		u[2] = (uint8_t)(v4->dport >> 8);
		u[3] = (uint8_t)v4->dport;
		u[4] = (uint8_t)(ulen >> 8);
		u[5] = (uint8_t)ulen;
		/* no checksum, as ESP in UDP sends (RFC 3948 section 2.1): ESP's ICV covers what matters */
		u[6] = u[7] = 0;
	}
	*off -= V4_HDR + udp;
	*len = tot;
	return true;
}
