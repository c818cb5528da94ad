/* tests/fuzz/fuzz_mip6.c: libFuzzer target for the Mobility Header parser (mip6_parse,
 * mobility/mip6.c), which reads packets a mobile node sends, once ESP is removed. The input's first
 * byte chooses whether the MH checksum is made right before parsing: random bytes almost never carry
 * a valid one, and everything past the checksum (the BU, BA and BE bodies and their options) would
 * go untested. To make it right, the packet is parsed once, and when that stops at the checksum the
 * field is computed over the pseudo-header mip6_parse uses (the home address as source with a Home
 * Address option, the type 2 routing header's address as destination while it has segments left)
 * and the packet parsed again. Checked after every parse that succeeds: the MH lies inside the
 * packet's IPv6 payload, after the IPv6 header, and its length is a multiple of 8. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mobility/mip6.h"

#define FZ_MAX 4096

static void check(const uint8_t *pkt, uint32_t len, const struct mip6_pkt *p)
{
	uint32_t payload = len >= 40 ? 40u + ((uint32_t)pkt[4] << 8 | pkt[5]) : 0;

	if (p->mh_off < 40 || p->mh_len % 8 || p->mh_len < 8 || p->mh_off + p->mh_len > len ||
	    p->mh_off + p->mh_len > payload)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[FZ_MAX];
	struct mip6_pkt p;
	enum mip6_drop r;
	uint32_t len;

	if (size < 1 || size - 1 > FZ_MAX)
		return 0;
	len = (uint32_t)(size - 1);
	memcpy(pkt, data + 1, len);
	memset(&p, 0, sizeof(p));
	r = mip6_parse(pkt, len, &p);
	if (r == MIP6_DROP_NONE)
		check(pkt, len, &p);
	if (!(data[0] & 1) || r != MIP6_DROP_BAD_CHECKSUM)
		return 0;
	/* the checksum made right; the MH's place is what the first parse found */
	uint8_t *mh = pkt + p.mh_off;
	const uint8_t *src = p.has_hao ? p.hoa : p.src;
	const uint8_t *dst = p.has_rh2 && p.rh2_segleft ? p.rh2_addr : p.dst;
	uint16_t c;

	if (p.mh_off + p.mh_len > len || p.mh_len < 6)
		abort(); /* a checksum was judged over bytes outside the packet */
	mh[4] = mh[5] = 0;
	c = mip6_mh_checksum(src, dst, mh, p.mh_len);
	mh[4] = (uint8_t)(c >> 8);
	mh[5] = (uint8_t)c;
	memset(&p, 0, sizeof(p));
	r = mip6_parse(pkt, len, &p);
	if (r == MIP6_DROP_BAD_CHECKSUM)
		abort(); /* the checksum mip6_mh_checksum makes is one mip6_parse refuses */
	if (r == MIP6_DROP_NONE)
		check(pkt, len, &p);
	return 0;
}
