/* dataplane/xipsecd/dp_l3.c: the shared IP rules of the packet path (dp_l3.h): TTL / hop limit, the
 * too-big decision and the IPv4 cut into frames. Worker threads; no call back into any stage. */
#include "config.h"

#include <string.h>
#include <arpa/inet.h>

#include "dataplane/xipsecd/dp_frag.h"
#include "dataplane/xipsecd/dp_l3.h"
#include "dataplane/xipsecd/dp_path.h"

bool dp_l3_dec_ttl(uint8_t *l3)
{
	uint16_t check;
	uint32_t c;

	if ((l3[0] >> 4) != 4) {
		if (l3[7] <= 1)
			return false;
		l3[7]--;
		return true;
	}
	/* byte access: the IP header sits 2 bytes past a 4-byte boundary behind Ethernet */
	if (l3[8] <= 1)
		return false;
	l3[8]--;
	memcpy(&check, l3 + 10, 2);
	c = (uint32_t)check + htons(0x0100);
	check = (uint16_t)(c + (c >= 0xffff));
	memcpy(l3 + 10, &check, 2);
	return true;
}

bool dp_l3_too_big(const uint8_t *l3, uint32_t len, uint32_t mtu, bool dec_ttl)
{
	return len > mtu && ((l3[0] >> 4) == 6 || (l3[6] & 0x40)) && !(dec_ttl && dp_ttl_expiring(l3));
}

int dp_l3_cut(struct dp_worker *w, const uint8_t *src, bool in_place, uint64_t src_addr, uint32_t len,
	      uint32_t mtu, struct dp_frags *out)
{
	struct dp_frag4 f;
	int r = dp_frag4_plan(&f, src, len, mtu);
	unsigned first = in_place ? 1 : 0;

	if (r < 0)
		return r;
	if (mtu > FRAME_L3_MAX)
		return -SADB_DROP_MTU;
	if (w->n_free < f.n - first + DP_FRAME_RESERVE)
		return -SADB_DROP_FRAG_NOBUF;
	for (unsigned i = first; i < f.n; i++) {
		out->addr[i] = dp_frame_take(w) + FRESH_L3;
		out->len[i] = dp_frag4_write(&f, i, dp_mem(w, out->addr[i]));
	}
	if (in_place) {
		out->addr[0] = src_addr;
		out->len[0] = dp_frag4_write(&f, 0, dp_mem(w, src_addr));
	}
	DP_STAT(w, frag_packets, 1);
	DP_STAT(w, frag_made, f.n);
	return (int)f.n;
}
