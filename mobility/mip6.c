/* mobility/mip6.c: the Mobile IPv6 wire formats (mip6.h): parsing an IPv6 packet that carries a
 * Mobility Header (the extension-header walk that finds the Home Address option and a type 2
 * routing header, the MH checks of RFC 6275 §9.2, the Binding Update, Acknowledgement and Error
 * bodies with their mobility options), the MH checksum, and building the BA, BE and BU packets and
 * the Binding Refresh Request, the ICMPv6 Parameter Problem the home agent answers a malformed
 * Mobility Header with, and the Neighbor Solicitation of its Duplicate Address Detection.
 * No state, no allocation. */
#include <errno.h>
#include <string.h>

#include "mobility/mip6.h"

#define NH_HOPOPTS  0
#define NH_ROUTING  43
#define NH_FRAGMENT 44
#define NH_DSTOPTS  60
#define NH_ICMPV6   58
#define ICMPV6_PARAM_PROBLEM 4
#define ICMPV6_NEIGHBOR_SOLICIT 135

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static const char *const drop_names[MIP6_DROP_MAX] = {
	[MIP6_DROP_NONE] = "none",
	[MIP6_DROP_TRUNCATED] = "truncated",
	[MIP6_DROP_NOT_IPV6] = "not-ipv6",
	[MIP6_DROP_BAD_EXT_HDR] = "bad-extension-header",
	[MIP6_DROP_FRAGMENT] = "fragment",
	[MIP6_DROP_BAD_IPV6_OPT] = "bad-ipv6-option",
	[MIP6_DROP_BAD_HAO] = "bad-home-address-option",
	[MIP6_DROP_HAO_NOT_UNICAST] = "home-address-not-unicast",
	[MIP6_DROP_BAD_RH2] = "bad-type2-routing-header",
	[MIP6_DROP_BAD_ROUTING_HDR] = "bad-routing-header",
	[MIP6_DROP_NOT_MH] = "not-mobility-header",
	[MIP6_DROP_BAD_HDR_LEN] = "bad-header-length",
	[MIP6_DROP_BAD_CHECKSUM] = "bad-checksum",
	[MIP6_DROP_BAD_PAYLOAD_PROTO] = "bad-payload-proto",
	[MIP6_DROP_UNKNOWN_MH_TYPE] = "unknown-mh-type",
	[MIP6_DROP_BAD_OPTION] = "bad-mobility-option",
	[MIP6_DROP_BAD_OPTION_ALIGN] = "bad-mobility-option-alignment",
	[MIP6_DROP_NOT_BU] = "not-binding-update",
	[MIP6_DROP_UNPROTECTED] = "unprotected",
	[MIP6_DROP_UNKNOWN_HOA] = "unknown-home-address",
	[MIP6_DROP_WRONG_SA] = "wrong-sa",
	[MIP6_DROP_NOT_FOR_US] = "not-for-home-agent",
	[MIP6_DROP_COA_NOT_UNICAST] = "care-of-not-unicast",
};

const char *mip6_drop_name(unsigned drop)
{
	return drop < MIP6_DROP_MAX && drop_names[drop] ? drop_names[drop] : "?";
}

const char *mip6_status_name(unsigned status)
{
	switch (status) {
	case MIP6_ST_ACCEPTED: return "accepted";
	case MIP6_ST_UNSPECIFIED: return "reason-unspecified";
	case MIP6_ST_PROHIBITED: return "administratively-prohibited";
	case MIP6_ST_INSUFFICIENT: return "insufficient-resources";
	case MIP6_ST_HR_NOT_SUPPORTED: return "home-registration-not-supported";
	case MIP6_ST_NOT_HOME_SUBNET: return "not-home-subnet";
	case MIP6_ST_NOT_HA_FOR_MN: return "not-home-agent-for-this-mobile-node";
	case MIP6_ST_DAD_FAILED: return "duplicate-address-detection-failed";
	case MIP6_ST_SEQ_OUT_OF_WINDOW: return "sequence-number-out-of-window";
	case MIP6_ST_REG_TYPE_CHANGE: return "registration-type-change-disallowed";
	case MIP6_ST_MR_NOT_PERMITTED: return "mobile-router-operation-not-permitted";
	case MIP6_ST_INVALID_PREFIX: return "invalid-prefix";
	case MIP6_ST_PREFIX_NOT_AUTH: return "not-authorized-for-prefix";
	case MIP6_ST_FWD_SETUP_FAILED: return "forwarding-setup-failed";
	case MIP6_ST_INVALID_COA: return "invalid-care-of-address";
	default: return "unknown";
	}
}

const char *mip6_mh_type_name(unsigned type)
{
	static const char *const n[MIP6_MH_KNOWN] = {
		"binding-refresh-request", "home-test-init", "care-of-test-init", "home-test",
		"care-of-test", "binding-update", "binding-acknowledgement", "binding-error",
	};
	return type < MIP6_MH_KNOWN ? n[type] : "unknown";
}

bool mip6_addr_unicast_routable(const uint8_t a[16])
{
	static const uint8_t zero[15];
	if (a[0] == 0xff)
		return false;                               /* multicast */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return false;                               /* link-local */
	if (!memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1))
		return false;                               /* unspecified, loopback */
	return true;
}

/* Ones' complement sum of n bytes as big-endian 16-bit words, added to acc (not folded). */
static uint64_t sum_bytes(const uint8_t *p, uint32_t n, uint64_t acc)
{
	uint32_t i = 0;
	for (; i + 1 < n; i += 2)
		acc += rd16(p + i);
	if (i < n)
		acc += (uint64_t)p[i] << 8;
	return acc;
}

static uint16_t fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static uint64_t pseudo_sum(const uint8_t src[16], const uint8_t dst[16], uint32_t len, uint8_t nh)
{
	uint64_t s = sum_bytes(src, 16, 0);
	s = sum_bytes(dst, 16, s);
	s += len >> 16;
	s += len & 0xffff;
	s += nh;
	return s;
}

uint16_t mip6_l4_checksum(uint8_t nh, const uint8_t src[16], const uint8_t dst[16], const uint8_t *msg,
			  uint32_t len)
{
	return (uint16_t)~fold(sum_bytes(msg, len, pseudo_sum(src, dst, len, nh)));
}

uint16_t mip6_mh_checksum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *mh,
			  uint32_t mh_len)
{
	uint64_t s = pseudo_sum(src, dst, mh_len, MIP6_PROTO_MH);
	s = sum_bytes(mh, mh_len < 4 ? mh_len : 4, s);
	if (mh_len > 6)
		s = sum_bytes(mh + 6, mh_len - 6, s);
	return (uint16_t)~fold(s);
}

/* Walk the options of a hop-by-hop or destination options header at h (hl bytes). A Home Address
 * option is taken only where hao_ok (a destination options header). */
static enum mip6_drop walk_ipv6_opts(const uint8_t *h, uint32_t hl, bool hao_ok, struct mip6_pkt *out)
{
	uint32_t i = 2;
	while (i < hl) {
		uint8_t t = h[i];
		if (t == 0) {                                   /* Pad1 */
			i++;
			continue;
		}
		if (i + 2 > hl || i + 2u + h[i + 1] > hl)
			return MIP6_DROP_BAD_EXT_HDR;
		uint8_t ol = h[i + 1];
		if (t == MIP6_OPT_HAO && hao_ok) {
			/* §6.3: 16 bytes, alignment 8n+6, at most one per packet. */
			if (ol != 16 || i % 8 != 6 || out->has_hao)
				return MIP6_DROP_BAD_HAO;
			memcpy(out->hoa, h + i + 2, 16);
			out->has_hao = true;
		} else if (t != 1 && (t >> 6) != 0) {
			/* RFC 8200 §4.2: an unrecognised option whose two high-order bits are not 00
			 * means "discard the packet". */
			return MIP6_DROP_BAD_IPV6_OPT;
		}
		i += 2u + ol;
	}
	return MIP6_DROP_NONE;
}

/* A mobility option of fixed length want at offset i, aligned at align*n + rem (§6.2). */
static enum mip6_drop opt_shape(uint8_t ol, uint8_t want, uint32_t i, uint32_t align, uint32_t rem)
{
	if (ol != want)
		return MIP6_DROP_BAD_OPTION;
	return i % align == rem ? MIP6_DROP_NONE : MIP6_DROP_BAD_OPTION_ALIGN;
}

/* Mobility options of a BU/BA/BE body: mh[start..mh_len), offsets (for alignment) from the MH's start. */
static enum mip6_drop walk_mobility_opts(const uint8_t *mh, uint32_t start, uint32_t mh_len,
					 struct mip6_pkt *out)
{
	enum mip6_drop bad;
	uint32_t i = start;
	while (i < mh_len) {
		uint8_t t = mh[i];
		if (t == MIP6_OPT_PAD1) {
			i++;
			continue;
		}
		if (i + 2 > mh_len || i + 2u + mh[i + 1] > mh_len)
			return MIP6_DROP_BAD_OPTION;
		uint8_t ol = mh[i + 1];
		const uint8_t *d = mh + i + 2;
		switch (t) {
		case MIP6_OPT_PADN:
			break;
		case MIP6_OPT_BRA:
			if ((bad = opt_shape(ol, 2, i, 2, 0)) != MIP6_DROP_NONE)
				return bad;
			if (out->mh_type == MIP6_MH_BA) {
				if (out->m.ba.has_refresh)
					return MIP6_DROP_BAD_OPTION;
				out->m.ba.has_refresh = true;
				out->m.ba.refresh = rd16(d);
			}
			break;
		case MIP6_OPT_ALTCOA:
			if ((bad = opt_shape(ol, 16, i, 8, 6)) != MIP6_DROP_NONE)
				return bad;
			if (out->mh_type == MIP6_MH_BU) {
				if (out->m.bu.has_alt_coa)
					return MIP6_DROP_BAD_OPTION;
				out->m.bu.has_alt_coa = true;
				memcpy(out->m.bu.alt_coa, d, 16);
			}
			break;
		case MIP6_OPT_MNP:
			/* Reserved, Prefix Length, Mobile Network Prefix (RFC 3963 4.3) */
			if ((bad = opt_shape(ol, 18, i, 8, 4)) != MIP6_DROP_NONE)
				return bad;
			if (out->mh_type == MIP6_MH_BU) {
				struct mip6_bu *bu = &out->m.bu;

				if (bu->n_mnp < MIP6_MAX_MNP) {
					bu->mnp[bu->n_mnp].len = d[1];
					memcpy(bu->mnp[bu->n_mnp++].addr, d + 2, 16);
				}
				if (bu->n_mnp_seen < UINT8_MAX)
					bu->n_mnp_seen++;
			}
			break;
		case MIP6_OPT_NONCE:
			if ((bad = opt_shape(ol, 4, i, 2, 0)) != MIP6_DROP_NONE)
				return bad;
			break;
		case MIP6_OPT_AUTH:
			if (i % 8 != 2)
				return MIP6_DROP_BAD_OPTION_ALIGN;
			break;
		default:
			break;  /* §6.2.1: options not understood are skipped */
		}
		i += 2u + ol;
	}
	return MIP6_DROP_NONE;
}

void mip6_sel_addrs(const uint8_t *pkt, uint32_t len, uint8_t src[16], uint8_t dst[16])
{
	struct mip6_pkt opts;        /* walk_ipv6_opts's findings: the Home Address option */
	const uint8_t *rh2 = NULL;
	unsigned n_rh2 = 0;
	bool bad_opts = false;
	uint32_t end, off = 40;
	uint8_t nh;

	if (len < 40 || pkt[0] >> 4 != 6 || (end = 40u + rd16(pkt + 4)) > len)
		return;
	memset(&opts, 0, sizeof(opts));
	nh = pkt[6];
	while ((nh == NH_HOPOPTS || nh == NH_ROUTING || nh == NH_DSTOPTS) && off + 8 <= end) {
		const uint8_t *h = pkt + off;
		uint32_t hl = (h[1] + 1u) * 8u;

		if (off + hl > end)
			break;
		if (nh == NH_ROUTING && h[2] == MIP6_RH_TYPE2) {
			n_rh2++;
			if (h[1] == 2 && h[3] == 1)
				rh2 = h + 8;
		} else if (nh == NH_DSTOPTS && walk_ipv6_opts(h, hl, true, &opts) != MIP6_DROP_NONE) {
			bad_opts = true; /* a second or malformed Home Address option among them */
		}
		nh = h[0];
		off += hl;
	}
	if (opts.has_hao && !bad_opts)
		memcpy(src, opts.hoa, 16);
	if (rh2 && n_rh2 == 1)
		memcpy(dst, rh2, 16);
}

/* The smallest message of each type, MH header included (§6.1.2-6.1.9). */
static const uint8_t mh_min_len[MIP6_MH_KNOWN] = { 8, 16, 16, 24, 24, 12, 12, 24 };

enum mip6_drop mip6_parse(const uint8_t *pkt, uint32_t len, struct mip6_pkt *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 40)
		return MIP6_DROP_TRUNCATED;
	if (pkt[0] >> 4 != 6)
		return MIP6_DROP_NOT_IPV6;
	uint32_t end = 40u + rd16(pkt + 4);
	if (end > len)
		return MIP6_DROP_TRUNCATED;
	memcpy(out->src, pkt + 8, 16);
	memcpy(out->dst, pkt + 24, 16);
	const uint8_t *final_dst = out->dst;

	uint8_t nh = pkt[6];
	uint32_t off = 40;
	bool seen_rh = false;
	for (;;) {
		if (nh == MIP6_PROTO_MH)
			break;
		if (nh == NH_FRAGMENT)
			return MIP6_DROP_FRAGMENT;
		if (nh != NH_HOPOPTS && nh != NH_DSTOPTS && nh != NH_ROUTING)
			return MIP6_DROP_NOT_MH;
		if (off + 8 > end)
			return MIP6_DROP_TRUNCATED;
		const uint8_t *h = pkt + off;
		uint32_t hl = (h[1] + 1u) * 8u;
		if (off + hl > end)
			return MIP6_DROP_TRUNCATED;
		enum mip6_drop d;
		if (nh == NH_HOPOPTS) {
			if (off != 40)
				return MIP6_DROP_BAD_EXT_HDR;  /* RFC 8200 §4.1: only right after IPv6 */
			if ((d = walk_ipv6_opts(h, hl, false, out)) != MIP6_DROP_NONE)
				return d;
		} else if (nh == NH_DSTOPTS) {
			bool had = out->has_hao;
			if ((d = walk_ipv6_opts(h, hl, true, out)) != MIP6_DROP_NONE)
				return d;
			/* §6.3: the Home Address option goes after the routing header, never in the
			 * destination options that intermediate nodes read before one. */
			if (!had && out->has_hao && h[0] == NH_ROUTING)
				return MIP6_DROP_BAD_HAO;
		} else {
			if (seen_rh)
				return MIP6_DROP_BAD_EXT_HDR;
			seen_rh = true;
			uint8_t segleft = h[3];
			if (h[2] == MIP6_RH_TYPE2) {
				/* §6.4: exactly one address, segments left 1 (0 once processed). */
				if (h[1] != 2 || segleft > 1 || !mip6_addr_unicast_routable(h + 8))
					return MIP6_DROP_BAD_RH2;
				out->has_rh2 = true;
				out->rh2_segleft = segleft;
				memcpy(out->rh2_addr, h + 8, 16);
				if (segleft)
					final_dst = out->rh2_addr;
			} else if (segleft) {
				return MIP6_DROP_BAD_ROUTING_HDR;
			}
		}
		nh = h[0];
		off += hl;
	}
	if (out->has_hao && !mip6_addr_unicast_routable(out->hoa))
		return MIP6_DROP_HAO_NOT_UNICAST;

	/* The Mobility Header (§6.1.1), checked in the order of §9.2. */
	if (off + 6 > end)
		return MIP6_DROP_TRUNCATED;
	const uint8_t *mh = pkt + off;
	uint32_t mh_len = (mh[1] + 1u) * 8u;
	if (mh_len > end - off)
		return MIP6_DROP_BAD_HDR_LEN;
	out->mh_off = off;
	out->mh_len = mh_len;
	out->mh_type = mh[2];
	uint64_t s = pseudo_sum(out->has_hao ? out->hoa : out->src, final_dst, mh_len, MIP6_PROTO_MH);
	if (fold(sum_bytes(mh, mh_len, s)) != 0xffff)
		return MIP6_DROP_BAD_CHECKSUM;
	if (mh[0] != MIP6_PROTO_NONE)
		return MIP6_DROP_BAD_PAYLOAD_PROTO;
	if (mh[2] >= MIP6_MH_KNOWN)
		return MIP6_DROP_UNKNOWN_MH_TYPE;
	if (mh_len < mh_min_len[mh[2]])
		return MIP6_DROP_BAD_HDR_LEN;
	switch (mh[2]) {
	case MIP6_MH_BU:
		out->m.bu.seq = rd16(mh + 6);
		out->m.bu.flags = rd16(mh + 8);
		out->m.bu.lifetime = rd16(mh + 10);
		return walk_mobility_opts(mh, 12, mh_len, out);
	case MIP6_MH_BA:
		out->m.ba.status = mh[6];
		out->m.ba.flags = mh[7];
		out->m.ba.seq = rd16(mh + 8);
		out->m.ba.lifetime = rd16(mh + 10);
		return walk_mobility_opts(mh, 12, mh_len, out);
	case MIP6_MH_BE:
		out->m.be.status = mh[6];
		memcpy(out->m.be.hoa, mh + 8, 16);
		return walk_mobility_opts(mh, 24, mh_len, out);
	default:
		return MIP6_DROP_NONE;
	}
}

static void put_ipv6(uint8_t *b, uint16_t plen, uint8_t nh, uint8_t hlim, const uint8_t src[16],
		     const uint8_t dst[16])
{
	b[0] = 0x60;
	b[1] = b[2] = b[3] = 0;
	wr16(b + 4, plen);
	b[6] = nh;
	b[7] = hlim ? hlim : 64;
	memcpy(b + 8, src, 16);
	memcpy(b + 24, dst, 16);
}

/* A type 2 routing header in front of a Mobility Header: one address, segments left 1 (§6.4). */
static void put_rh2(uint8_t *r, const uint8_t hoa[16])
{
	r[0] = MIP6_PROTO_MH;
	r[1] = 2;
	r[2] = MIP6_RH_TYPE2;
	r[3] = 1;
	memset(r + 4, 0, 4);
	memcpy(r + 8, hoa, 16);
}

static void put_mh(uint8_t *mh, uint32_t mh_len, uint8_t type)
{
	mh[0] = MIP6_PROTO_NONE;
	mh[1] = (uint8_t)(mh_len / 8 - 1);
	mh[2] = type;
	mh[3] = 0;
	mh[4] = mh[5] = 0;
}

int mip6_build_ba(uint8_t *buf, size_t cap, const struct mip6_ba_params *p)
{
	uint32_t rh = p->rh2 ? 24 : 0, mh_len = 16, total = 40 + rh + mh_len;
	if (cap < total)
		return -ENOSPC;
	put_ipv6(buf, (uint16_t)(rh + mh_len), p->rh2 ? NH_ROUTING : MIP6_PROTO_MH, p->hop_limit,
		 p->src, p->dst);
	if (rh)
		put_rh2(buf + 40, p->hoa);
	uint8_t *mh = buf + 40 + rh;
	put_mh(mh, mh_len, MIP6_MH_BA);
	mh[6] = p->status;
	mh[7] = (uint8_t)((p->k ? MIP6_BA_K : 0) | (p->r ? MIP6_BA_R : 0));
	wr16(mh + 8, p->seq);
	wr16(mh + 10, p->lifetime);
	if (p->refresh) {
		/* Binding Refresh Advice at offset 12 (alignment 2n): the message ends at 16. */
		mh[12] = MIP6_OPT_BRA;
		mh[13] = 2;
		wr16(mh + 14, p->refresh);
	} else {
		mh[12] = MIP6_OPT_PADN;  /* 4 bytes of padding to the 8-byte multiple */
		mh[13] = 2;
		mh[14] = mh[15] = 0;
	}
	/* §6.1.1: the pseudo-header's destination is the final one, the home address. */
	wr16(mh + 4, mip6_mh_checksum(p->src, p->rh2 ? p->hoa : p->dst, mh, mh_len));
	return (int)total;
}

int mip6_build_be(uint8_t *buf, size_t cap, const struct mip6_be_params *p)
{
	uint32_t rh = p->rh2 ? 24 : 0, mh_len = 24, total = 40 + rh + mh_len;
	if (cap < total)
		return -ENOSPC;
	put_ipv6(buf, (uint16_t)(rh + mh_len), p->rh2 ? NH_ROUTING : MIP6_PROTO_MH, p->hop_limit,
		 p->src, p->dst);
	if (rh)
		put_rh2(buf + 40, p->hoa);
	uint8_t *mh = buf + 40 + rh;
	put_mh(mh, mh_len, MIP6_MH_BE);
	mh[6] = p->status;
	mh[7] = 0;
	memcpy(mh + 8, p->hoa, 16);
	wr16(mh + 4, mip6_mh_checksum(p->src, p->rh2 ? p->hoa : p->dst, mh, mh_len));
	return (int)total;
}

int mip6_build_param_problem(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
			     uint32_t pointer, const uint8_t *inv, uint32_t inv_len)
{
	/* RFC 4443 §2.4 (c): as much of the invoking packet as fits in the minimum MTU */
	uint32_t quote = inv_len < MIP6_PP_MAX_LEN - 48 ? inv_len : MIP6_PP_MAX_LEN - 48;
	uint32_t total = 48 + quote;
	if (cap < total)
		return -ENOSPC;
	put_ipv6(buf, (uint16_t)(8 + quote), NH_ICMPV6, 0, src, dst);
	uint8_t *ic = buf + 40;
	ic[0] = ICMPV6_PARAM_PROBLEM;
	ic[1] = 0;  /* erroneous header field encountered */
	wr16(ic + 2, 0);
	wr16(ic + 4, (uint16_t)(pointer >> 16));
	wr16(ic + 6, (uint16_t)pointer);
	memcpy(ic + 8, inv, quote);
	wr16(ic + 2, (uint16_t)~fold(sum_bytes(ic, 8 + quote, pseudo_sum(src, dst, 8 + quote, NH_ICMPV6))));
	return (int)total;
}

int mip6_build_brr(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
		   const uint8_t hoa[16])
{
	if (cap < MIP6_BRR_LEN)
		return -ENOSPC;
	put_ipv6(buf, 24 + 8, NH_ROUTING, 0, src, dst);
	put_rh2(buf + 40, hoa);
	uint8_t *mh = buf + 64;
	put_mh(mh, 8, MIP6_MH_BRR);
	mh[6] = mh[7] = 0;
	wr16(mh + 4, mip6_mh_checksum(src, hoa, mh, 8));
	return MIP6_BRR_LEN;
}

int mip6_build_dad_ns(uint8_t *buf, size_t cap, const uint8_t target[16])
{
	static const uint8_t any[16];
	uint8_t snm[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	if (cap < MIP6_DAD_NS_LEN)
		return -ENOSPC;
	memcpy(snm + 13, target + 13, 3);
	put_ipv6(buf, 24, NH_ICMPV6, 255, any, snm);
	uint8_t *ic = buf + 40;
	memset(ic, 0, 8);
	ic[0] = ICMPV6_NEIGHBOR_SOLICIT;
	memcpy(ic + 8, target, 16);
	wr16(ic + 2, (uint16_t)~fold(sum_bytes(ic, 24, pseudo_sum(any, snm, 24, NH_ICMPV6))));
	return MIP6_DAD_NS_LEN;
}

int mip6_build_bu(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
		  const uint8_t *hoa, const struct mip6_bu *bu)
{
	uint32_t dopt = hoa ? 24 : 0, mh_len = bu->has_alt_coa ? 32 : 16, total = 40 + dopt + mh_len;
	if (cap < total)
		return -ENOSPC;
	put_ipv6(buf, (uint16_t)(dopt + mh_len), hoa ? NH_DSTOPTS : MIP6_PROTO_MH, 0, src, dst);
	if (hoa) {
		/* PadN (4 bytes) puts the Home Address option at 8n+6. */
		uint8_t *d = buf + 40;
		d[0] = MIP6_PROTO_MH;
		d[1] = 2;
		d[2] = MIP6_OPT_PADN;
		d[3] = 2;
		d[4] = d[5] = 0;
		d[6] = MIP6_OPT_HAO;
		d[7] = 16;
		memcpy(d + 8, hoa, 16);
	}
	uint8_t *mh = buf + 40 + dopt;
	put_mh(mh, mh_len, MIP6_MH_BU);
	wr16(mh + 6, bu->seq);
	wr16(mh + 8, bu->flags);
	wr16(mh + 10, bu->lifetime);
	if (bu->has_alt_coa) {
		mh[12] = MIP6_OPT_PADN;  /* 2 bytes: the option lands at 14 = 8n+6 */
		mh[13] = 0;
		mh[14] = MIP6_OPT_ALTCOA;
		mh[15] = 16;
		memcpy(mh + 16, bu->alt_coa, 16);
	} else {
		mh[12] = MIP6_OPT_PADN;
		mh[13] = 2;
		mh[14] = mh[15] = 0;
	}
	wr16(mh + 4, mip6_mh_checksum(hoa ? hoa : src, dst, mh, mh_len));
	return (int)total;
}
