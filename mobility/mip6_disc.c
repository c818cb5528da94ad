/* mobility/mip6_disc.c: the home agents list of a home link and the DHAAD Reply (RFC 6275 sections
 * 10.5 and 10.5.1), the Mobile Prefix Solicitation read and the Advertisement built (section 10.6),
 * as mip6_disc.h says. Every Router Advertisement is read whole before the list changes, so a
 * malformed one changes nothing. The list is small (one link's home agents), so it is a flat array
 * scanned in full: a reply sorts at most MIP6_HALIST_MAX + 1 addresses. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "mobility/mip6.h"
#include "mobility/mip6_disc.h"

#define OPT_PREFIX   3u     /* Prefix Information (RFC 4861 section 4.6.2) */
#define OPT_HA_INFO  8u     /* Home Agent Information (RFC 6275 section 7.4) */
#define PREFIX_R     0x20u  /* the prefix field holds the router's whole address (section 7.2) */
#define RA_ADDRS_MAX 8u     /* addresses one RA is read for */

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static bool link_local(const uint8_t a[16])
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* A global unicast address a home agent may be reached at from away (not link-local, multicast,
 * unspecified or loopback). */
static bool global_unicast(const uint8_t a[16])
{
	static const uint8_t zero[15];

	return a[0] != 0xff && !link_local(a) && (memcmp(a, zero, 15) != 0 || a[15] > 1);
}

static bool in_prefix(const uint8_t a[16], const uint8_t p[16], unsigned plen)
{
	unsigned full = plen / 8, rest = plen % 8;

	if (plen > 128 || memcmp(a, p, full))
		return false;
	return !rest || ((a[full] ^ p[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* Remove the entries that match: from router ll (addr NULL), or with address addr (ll NULL). */
static void drop_where(struct mip6_halist *l, const uint8_t *ll, const uint8_t *addr)
{
	for (unsigned i = 0; i < l->n;) {
		if ((ll && !memcmp(l->e[i].ll, ll, 16)) || (addr && !memcmp(l->e[i].addr, addr, 16)))
			l->e[i] = l->e[--l->n];
		else
			i++;
	}
}

int mip6_halist_ra(struct mip6_halist *l, const uint8_t src[16], const uint8_t *ra, size_t len,
		   uint64_t now_ms)
{
	uint8_t addrs[RA_ADDRS_MAX][16];
	unsigned n_addrs = 0;
	bool have_info = false;
	int16_t pref = 0;
	uint32_t life;

	if (len < 16 || ra[0] != MIP6_ICMP_RA || ra[1] != 0 || !link_local(src))
		goto bad;
	life = rd16(ra + 6);                     /* the Router Lifetime: the default (section 7.4) */
	for (size_t off = 16; off < len;) {
		const uint8_t *o = ra + off;
		size_t olen;

		if (len - off < 2 || o[1] == 0 || (olen = (size_t)o[1] * 8) > len - off)
			goto bad;                /* RFC 4861 section 4.6: a zero length is invalid */
		if (o[0] == OPT_HA_INFO && !have_info) {
			if (olen != 8)
				goto bad;
			have_info = true;
			pref = (int16_t)rd16(o + 4);
			life = rd16(o + 6);
		} else if (o[0] == OPT_PREFIX && (o[3] & PREFIX_R)) {
			if (olen != 32)
				goto bad;
			if (global_unicast(o + 16) && n_addrs < RA_ADDRS_MAX)
				memcpy(addrs[n_addrs++], o + 16, 16);
		}
		off += olen;
	}
	l->ra_taken++;
	if (!(ra[5] & MIP6_RA_H) || life == 0) {
		/* section 10.5.1: no longer a home agent (or none announced) */
		drop_where(l, src, NULL);
		return 0;
	}
	if (!n_addrs) {
		/* the RA names no address: the ones known for this router keep theirs */
		for (unsigned i = 0; i < l->n; i++)
			if (!memcmp(l->e[i].ll, src, 16)) {
				l->e[i].pref = pref;
				l->e[i].expires_ms = now_ms + (uint64_t)life * 1000u;
			}
		return 0;
	}
	drop_where(l, src, NULL);
	for (unsigned k = 0; k < n_addrs; k++) {
		struct mip6_ha_entry *e;

		drop_where(l, NULL, addrs[k]);   /* an address moved to another router's RAs */
		if (l->n == MIP6_HALIST_MAX) {
			l->full++;
			break;
		}
		e = &l->e[l->n++];
		memcpy(e->ll, src, 16);
		memcpy(e->addr, addrs[k], 16);
		e->pref = pref;
		e->expires_ms = now_ms + (uint64_t)life * 1000u;
	}
	return 0;
bad:
	l->ra_bad++;
	return -EINVAL;
}

void mip6_halist_expire(struct mip6_halist *l, uint64_t now_ms)
{
	for (unsigned i = 0; i < l->n;) {
		if (l->e[i].expires_ms <= now_ms)
			l->e[i] = l->e[--l->n];
		else
			i++;
	}
}

void mip6_ha_anycast(const uint8_t prefix[16], unsigned plen, uint8_t out[16])
{
	if (plen > 121)
		plen = 121;
	memset(out, 0xff, 16);
	memcpy(out, prefix, (plen + 7) / 8);
	if (plen % 8)
		out[plen / 8] |= (uint8_t)(0xffu >> (plen % 8));
	if (plen == 64)
		out[8] &= (uint8_t)~0x02u;       /* EUI-64: the universal/local bit is 0 */
	out[15] = 0x80u | MIP6_ANYCAST_HA_ID;
}

struct cand {
	const uint8_t *addr;
	int16_t pref;
};

int mip6_dhaad_reply(struct mip6_halist *l, const uint8_t own[16], const uint8_t prefix[16],
		     unsigned plen, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
	struct cand c[MIP6_HALIST_MAX + 1];
	unsigned n = 0, max;
	bool own_seen = false;

	if (len < MIP6_DHAAD_HDR || req[0] != MIP6_ICMP_DHAAD_REQ || req[1] != 0 ||
	    cap < MIP6_DHAAD_HDR + 16)
		return -EINVAL;
	for (unsigned i = 0; i < l->n; i++) {
		bool dup = false;

		if (!in_prefix(l->e[i].addr, prefix, plen))
			continue;
		for (unsigned j = 0; j < n && !dup; j++)
			dup = !memcmp(c[j].addr, l->e[i].addr, 16);
		if (dup)
			continue;
		own_seen = own_seen || !memcmp(l->e[i].addr, own, 16);
		c[n++] = (struct cand){ l->e[i].addr, l->e[i].pref };
	}
	if (!own_seen)
		c[n++] = (struct cand){ own, 0 };
	/* by preference, then by address: a stable order the rotation below starts from */
	for (unsigned i = 1; i < n; i++) {
		struct cand x = c[i];
		unsigned j = i;

		while (j && (c[j - 1].pref < x.pref ||
			     (c[j - 1].pref == x.pref && memcmp(c[j - 1].addr, x.addr, 16) > 0))) {
			c[j] = c[j - 1];
			j--;
		}
		c[j] = x;
	}
	/* section 10.5.1: home agents of equal preference share the mobile nodes, so each run of
	 * equal preferences starts one further along at each reply */
	for (unsigned i = 0; i < n;) {
		unsigned k = i, r;
		struct cand tmp[MIP6_HALIST_MAX + 1];

		while (k < n && c[k].pref == c[i].pref)
			k++;
		r = l->rot % (k - i);
		for (unsigned j = 0; j < k - i; j++)
			tmp[j] = c[i + (j + r) % (k - i)];
		memcpy(&c[i], tmp, (k - i) * sizeof(*tmp));
		i = k;
	}
	l->rot++;
	max = (unsigned)((cap - MIP6_DHAAD_HDR) / 16);
	if (max > MIP6_DHAAD_MAX_ADDRS)
		max = MIP6_DHAAD_MAX_ADDRS;
	if (n > max)
		n = max;
	memset(out, 0, MIP6_DHAAD_HDR);
	out[0] = MIP6_ICMP_DHAAD_REP;
	out[4] = req[4];                         /* the request's identifier (section 6.6) */
	out[5] = req[5];
	for (unsigned i = 0; i < n; i++)
		memcpy(out + MIP6_DHAAD_HDR + 16 * i, c[i].addr, 16);
	return (int)(MIP6_DHAAD_HDR + 16 * n);
}

/* ---- Mobile Prefix Discovery (sections 6.7, 6.8, 10.6) ---- */

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)(v >> 16));
	wr16(p + 2, (uint16_t)v);
}

int mip6_mps_parse(const uint8_t *pkt, uint32_t len, struct mip6_mps *out)
{
	uint32_t off = 40, plen;
	const uint8_t *msg;
	uint8_t nh;

	if (len < 40 || pkt[0] >> 4 != 6)
		return -EINVAL;
	plen = rd16(pkt + 4);
	if (40 + plen > len)
		return -EINVAL;
	len = 40 + plen;                 /* what follows the payload is not the packet's */
	/* hop-by-hop, routing and destination options headers in front of ICMPv6; anything else
	 * (a fragment, ESP, another upper layer) is no solicitation */
	for (nh = pkt[6]; nh == 0 || nh == 43 || nh == 60;) {
		uint32_t hl;

		if (off + 8 > len || off + (hl = ((uint32_t)pkt[off + 1] + 1) * 8) > len)
			return -EINVAL;
		nh = pkt[off];
		off += hl;
	}
	if (nh != 58 || off >= len || pkt[off] != MIP6_ICMP_MPS)
		return -ENOMSG;
	msg = pkt + off;
	if (len - off < 8 || msg[1] != 0)
		return -EINVAL;
	memcpy(out->coa, pkt + 8, 16);
	memcpy(out->hoa, pkt + 8, 16);
	memcpy(out->dst, pkt + 24, 16);
	mip6_sel_addrs(pkt, len, out->hoa, out->dst);
	if (!memcmp(out->hoa, out->coa, 16))
		return -EINVAL;                  /* no Home Address option: not from away */
	/* the checksum field included, a correct message sums to zero (RFC 4443 section 2.3; the
	 * home address is the source of the pseudo-header, RFC 6275 section 6.3) */
	if (mip6_l4_checksum(58, out->hoa, out->dst, msg, len - off) != 0)
		return -EINVAL;
	out->id = rd16(msg + 4);
	return 0;
}

int mip6_build_mpa(uint8_t *buf, size_t cap, const struct mip6_mpa_params *p)
{
	unsigned n = p->n_prefix < MIP6_MPA_MAX_PREFIXES ? p->n_prefix : MIP6_MPA_MAX_PREFIXES;
	uint32_t icmp = 8 + 32 * n, total = 40 + 24 + icmp;
	uint8_t *r = buf + 40, *m = buf + 64;

	if (cap < total)
		return -ENOSPC;
	memset(buf, 0, total);
	buf[0] = 0x60;
	wr16(buf + 4, (uint16_t)(24 + icmp));
	buf[6] = 43;                     /* routing header */
	buf[7] = 64;
	memcpy(buf + 8, p->src, 16);
	memcpy(buf + 24, p->dst, 16);
	r[0] = 58;
	r[1] = 2;
	r[2] = 2;                        /* type 2 (section 6.4), one segment left: the home address */
	r[3] = 1;
	memcpy(r + 8, p->hoa, 16);
	m[0] = MIP6_ICMP_MPA;
	wr16(m + 4, p->id);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *o = m + 8 + 32 * i;

		o[0] = OPT_PREFIX;
		o[1] = 4;
		o[2] = p->prefix[i].len;
		o[3] = 0xc0;                 /* on-link, autonomous */
		wr32(o + 4, p->valid_s);
		wr32(o + 8, p->preferred_s);
		memcpy(o + 16, p->prefix[i].addr, 16);
	}
	/* the final destination, the home address, in the pseudo-header (RFC 8200 section 8.1) */
	wr16(m + 2, mip6_l4_checksum(58, p->src, p->hoa, m, icmp));
	return (int)total;
}
