/* mobility/mip6_v4.c: Dual Stack Mobile IPv6 (RFC 5555) in libmip6: the IPv4 options of a Binding
 * Update read, the home agent's decision on one that arrived over IPv4 (the care-of address it
 * binds, NAT detection), and the options appended to its Binding Acknowledgement. mip6_v4.h says
 * the contract. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mobility/mip6_v4.h"

#define BU_FIXED 12u   /* MH header and the Binding Update's sequence, flags, lifetime (RFC 6275 6.1.7) */
#define OPT_LEN  6u    /* the data length of each RFC 5555 option */

enum mip6_drop mip6_v4_bu_opts(const uint8_t *mh, uint32_t mh_len, struct mip6_v4_bu *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = BU_FIXED; i < mh_len;) {
		uint8_t t = mh[i];

		if (t == MIP6_OPT_PAD1) {
			i++;
			continue;
		}
		if (i + 2 > mh_len || i + 2u + mh[i + 1] > mh_len)
			return MIP6_DROP_BAD_OPTION;
		const uint8_t *d = mh + i + 2;
		if (t == MIP6_OPT_V4COA || t == MIP6_OPT_V4HOA) {
			bool *seen = t == MIP6_OPT_V4COA ? &out->has_coa : &out->has_hoa;

			if (mh[i + 1] != OPT_LEN || *seen)
				return MIP6_DROP_BAD_OPTION;
			if (i % 4 != 0)
				return MIP6_DROP_BAD_OPTION_ALIGN;
			*seen = true;
			if (t == MIP6_OPT_V4COA) {
				memcpy(out->coa, d + 2, 4);
			} else {
				out->hoa_plen = d[0] >> 2;
				out->hoa_p = (d[0] & 0x02) != 0;
				memcpy(out->hoa, d + 2, 4);
			}
		}
		i += 2u + mh[i + 1];
	}
	return MIP6_DROP_NONE;
}

const char *mip6_v4_refusal_name(unsigned r)
{
	static const char *const names[MIP6_V4_REFUSAL_MAX] = {
		[MIP6_V4_OK] = "ok",
		[MIP6_V4_NO_COA_OPTION] = "no-ipv4-coa-option",
		[MIP6_V4_COA_NOT_UNICAST] = "ipv4-coa-not-unicast",
		[MIP6_V4_MALFORMED] = "malformed",
	};
	return r < MIP6_V4_REFUSAL_MAX ? names[r] : "?";
}

/* Not 0/8, loopback, multicast, class E or broadcast: an address a tunnel can be sent to. */
static bool v4_unicast(const uint8_t a[4])
{
	return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

enum mip6_v4_refusal mip6_v4_register(const struct mip6_v4_bu *bu, const struct mip6_v4_outer *o,
				      struct mip6_v4_reg *r)
{
	memset(r, 0, sizeof(*r));
	if (!bu->has_coa)
		return MIP6_V4_NO_COA_OPTION;
	if (!v4_unicast(bu->coa) || !v4_unicast(o->src))
		return MIP6_V4_COA_NOT_UNICAST;
	mip6_v4_mapped(o->src, r->coa);
	r->udp = o->udp;
	r->port = o->udp ? o->sport : 0;
	r->nat = memcmp(bu->coa, o->src, 4) != 0;
	r->natd_option = o->udp || r->nat;
	r->nat_refresh_s = r->nat ? MIP6_V4_NAT_REFRESH_S : 0;
	if (bu->has_hoa) {
		static const uint8_t any[4];

		r->ack_option = true;
		r->ack_status = memcmp(bu->hoa, any, 4) ? MIP6_V4ACK_PROHIBITED : MIP6_V4ACK_NO_DYNAMIC;
		r->ack_plen = bu->hoa_plen;
		memcpy(r->ack_hoa, bu->hoa, 4);
	}
	return MIP6_V4_OK;
}

static void put_opt(uint8_t *o, uint8_t type, uint8_t b2, uint8_t b3, const uint8_t v[4])
{
	o[0] = type;
	o[1] = OPT_LEN;
	o[2] = b2;
	o[3] = b3;
	memcpy(o + 4, v, 4);
}

int mip6_v4_ba_append(uint8_t *ba, size_t len, size_t cap, const struct mip6_v4_reg *r)
{
	if (len < 40 || ba[0] >> 4 != 6)
		return -EINVAL;
	uint32_t mh_off = ba[6] == MIP6_PROTO_MH ? 40u : 64u;
	if (len < mh_off + 16u || (mh_off == 64u && (ba[6] != 43 || ba[40] != MIP6_PROTO_MH)))
		return -EINVAL;
	uint8_t *mh = ba + mh_off;
	uint32_t mh_len = (mh[1] + 1u) * 8u;
	if (mh[2] != MIP6_MH_BA || mh_off + mh_len != len)
		return -EINVAL;
	uint32_t add = (r->natd_option ? 8u : 0u) + (r->ack_option ? 8u : 0u);
	if (len + add > cap)
		return -ENOSPC;
	uint8_t *o = ba + len;  /* mh_len is a multiple of 8: each option starts at a 4n offset */
	if (r->natd_option) {
		uint8_t t[4] = { (uint8_t)(r->nat_refresh_s >> 24), (uint8_t)(r->nat_refresh_s >> 16),
				 (uint8_t)(r->nat_refresh_s >> 8), (uint8_t)r->nat_refresh_s };

		put_opt(o, MIP6_OPT_NATD, r->nat ? 0x80 : 0, 0, t);
		o += 8;
	}
	if (r->ack_option)
		put_opt(o, MIP6_OPT_V4ACK, r->ack_status, (uint8_t)(r->ack_plen << 2), r->ack_hoa);
	mh_len += add;
	mh[1] = (uint8_t)(mh_len / 8 - 1);
	uint32_t plen = (uint32_t)len + add - 40u;
	ba[4] = (uint8_t)(plen >> 8);
	ba[5] = (uint8_t)plen;
	/* the pseudo-header's destination is the final one: a type 2 routing header's home address */
	const uint8_t *dst = mh_off == 64u ? ba + 48 : ba + 24;
	mh[4] = mh[5] = 0;
	uint16_t c = mip6_mh_checksum(ba + 8, dst, mh, mh_len);
	mh[4] = (uint8_t)(c >> 8);
	mh[5] = (uint8_t)c;
	return (int)(len + add);
}

enum mip6_v4_refusal mip6_v4_ha_bu(struct mip6_ha *ha, const struct mip6_pkt *p, const uint8_t *pkt,
				   const struct mip6_v4_outer *o, uint32_t sa_id, uint64_t now_ms,
				   struct mip6_ha_result *res, struct mip6_v4_reg *r)
{
	struct mip6_v4_bu bu;
	struct mip6_pkt q = *p;

	memset(res, 0, sizeof(*res));
	memset(r, 0, sizeof(*r));
	if (p->mh_type != MIP6_MH_BU)
		res->drop = MIP6_DROP_NOT_BU;
	else if (p->has_hao)
		res->drop = MIP6_DROP_BAD_HAO;  /* RFC 5555 sends none: the home address is the source */
	else
		res->drop = mip6_v4_bu_opts(pkt + p->mh_off, p->mh_len, &bu);
	if (res->drop != MIP6_DROP_NONE)
		return MIP6_V4_MALFORMED;
	enum mip6_v4_refusal f = mip6_v4_register(&bu, o, r);
	if (f != MIP6_V4_OK) {
		res->drop = f == MIP6_V4_COA_NOT_UNICAST ? MIP6_DROP_COA_NOT_UNICAST : MIP6_DROP_BAD_OPTION;
		return f;
	}
	q.has_hao = true;
	memcpy(q.hoa, p->src, 16);
	memcpy(q.src, r->coa, 16);
	q.m.bu.has_alt_coa = true;
	memcpy(q.m.bu.alt_coa, r->coa, 16);
	mip6_ha_bu(ha, &q, sa_id, now_ms, res);
	return MIP6_V4_OK;
}

int mip6_v4_build_ba(struct mip6_ha *ha, const struct mip6_ha_result *res, const struct mip6_v4_reg *r,
		     uint8_t *buf, size_t cap)
{
	struct mip6_ha_result v4 = *res;

	memcpy(v4.ba.dst, res->hoa, 16);
	v4.ba.rh2 = false;
	int n = mip6_ha_build_ba(ha, &v4, buf, cap > MIP6_V4_BA_EXTRA ? cap - MIP6_V4_BA_EXTRA : 0);
	if (n < 0)
		return n;
	return mip6_v4_ba_append(buf, (size_t)n, cap, r);
}

void mip6_v4_mapped(const uint8_t v4[4], uint8_t a[16])
{
	memset(a, 0, 10);
	a[10] = a[11] = 0xff;
	memcpy(a + 12, v4, 4);
}

bool mip6_v4_is_mapped(const uint8_t a[16], uint8_t v4[4])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(a, pfx, 12))
		return false;
	if (v4)
		memcpy(v4, a + 12, 4);
	return true;
}
