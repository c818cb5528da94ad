/* dataplane/xipsecd/dp_frag.c: IPv4 fragmentation and IPv4/IPv6 reassembly (the contract is in dp_frag.h).
 * The reassembly table copies fragment payloads into one preallocated buffer per datagram slot, so a
 * fragment's frame goes back to its worker at once and a datagram may gather fragments received by
 * different workers (multi-queue: fragments of one datagram need not share an RX queue). Slots are
 * few (tens) and fragments rare, so lookups and expiry are plain scans. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "sadb/sadb_drops.h"
#include "dataplane/engine/ip_bytes.h"
#include "dataplane/xipsecd/dp_frag.h"

/* ---- fragmentation ---- */

int dp_frag4_plan(struct dp_frag4 *f, const uint8_t *pkt, uint32_t len, uint32_t mtu)
{
	uint32_t hlen0, i, o;
	uint16_t ff;

	memset(f, 0, sizeof(*f));
	if (len < 20 || (pkt[0] >> 4) != 4)
		return -SADB_DROP_TRUNCATED;
	hlen0 = (pkt[0] & 0xfu) * 4;
	if (hlen0 < 20 || hlen0 > len)
		return -SADB_DROP_TRUNCATED;
	f->pkt = pkt;
	f->hlen0 = hlen0;
	f->plen = len - hlen0;
	memcpy(f->hdr0, pkt, hlen0);
	ff = esp_rd16(pkt + 6);
	f->off0 = ff & 0x1fff;
	f->mf0 = (ff & 0x2000) != 0;
	if (len <= mtu) {
		f->n = 1;
		f->step0 = f->plen;
		return 0;
	}
	if ((ff & 0x4000) || mtu < 68)
		return -SADB_DROP_MTU;
	/* Later fragments carry only the options whose copy flag is set (RFC 791 section 3.1, "copied
	 * flag"), padded with end-of-option-list bytes to a 32-bit boundary. */
	memcpy(f->hdr, pkt, 20);
	o = 20;
	for (i = 20; i < hlen0;) {
		uint8_t t = pkt[i], l;

		if (t == 0)                     /* end of option list */
			break;
		if (t == 1) {                   /* no-operation: one byte, not copied */
			i++;
			continue;
		}
		if (i + 1 >= hlen0)
			return -SADB_DROP_TRUNCATED;
		l = pkt[i + 1];
		if (l < 2 || i + l > hlen0)
			return -SADB_DROP_TRUNCATED;
		if (t & 0x80) {
			memcpy(f->hdr + o, pkt + i, l);
			o += l;
		}
		i += l;
	}
	while (o & 3)
		f->hdr[o++] = 0;
	f->hlen = o;
	f->hdr[0] = (uint8_t)(0x40 | (o / 4));
	f->step0 = (mtu - hlen0) & ~7u;
	f->step = (mtu - o) & ~7u;
	f->n = 1 + (f->plen - f->step0 + f->step - 1) / f->step;
	if (f->n > DP_FRAG_MAX)
		return -SADB_DROP_MTU;
	return 0;
}

static uint32_t frag_data_off(const struct dp_frag4 *f, unsigned i)
{
	return i ? f->step0 + (i - 1) * f->step : 0;
}

uint32_t dp_frag4_len(const struct dp_frag4 *f, unsigned i)
{
	uint32_t d = frag_data_off(f, i), left = f->plen - d;

	if (f->n == 1)
		return f->hlen0 + f->plen;
	if (i == 0)
		return f->hlen0 + f->step0;
	return f->hlen + (left < f->step ? left : f->step);
}

uint32_t dp_frag4_write(const struct dp_frag4 *f, unsigned i, uint8_t *out)
{
	uint32_t d = frag_data_off(f, i), len = dp_frag4_len(f, i);
	uint32_t h = i ? f->hlen : f->hlen0;
	bool last = i + 1 == f->n;
	uint16_t ff;

	/* payload first: for i == 0 in place it is already there (memmove of a region onto itself) */
	memmove(out + h, f->pkt + f->hlen0 + d, len - h);
	memcpy(out, i ? f->hdr : f->hdr0, h);
	if (f->n == 1)
		return len;
	esp_wr16(out + 2, len);
	ff = (uint16_t)(esp_rd16(f->hdr0 + 6) & 0x8000);   /* reserved bit as received; DF is clear */
	ff |= (uint16_t)((f->off0 + d / 8) & 0x1fff);
	if (!last || f->mf0)
		ff |= 0x2000;
	esp_wr16(out + 6, ff);
	esp_ip4_set_csum(out);
	return len;
}

/* ---- reassembly ---- */

#define UNKNOWN_END UINT32_MAX

struct frag_rec {
	uint32_t off, len;
};

struct slot {
	bool used;
	uint8_t family, proto;     /* proto: IPv4 protocol (part of the IPv4 key) */
	uint8_t nexthdr;           /* IPv6: the first fragment's next header */
	uint32_t id;
	uint8_t src[16], dst[16];
	uint64_t start_ns;
	uint32_t hlen;             /* unfragmentable part kept from the first fragment, 0 = none yet */
	uint32_t nh_off;           /* IPv6: offset of the next-header byte that named the Fragment header */
	uint32_t end;              /* payload end from the last fragment, UNKNOWN_END before */
	uint32_t have;             /* payload bytes held (no overlaps, so == end means complete) */
	uint32_t nfrag;
	struct frag_rec *fr;
	uint8_t *buf;              /* [DP_REASM_HDR_MAX - hlen, HDR_MAX) header, then the payload */
};

struct dp_reasm {
	struct dp_reasm_cfg cfg;
	uint32_t n_used, bytes;
	struct slot *slot;
	struct frag_rec *fr;
	uint8_t *mem;
};

#define SLOT_BUF (DP_REASM_HDR_MAX + DP_REASM_MAX_LEN + 1)

int dp_reasm_create(const struct dp_reasm_cfg *cfg, struct dp_reasm **out)
{
	struct dp_reasm *r;

	*out = NULL;
	if (!cfg->max_dgrams || !cfg->max_frags || cfg->max_frags > 255 || !cfg->timeout_ns)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cfg = *cfg;
	r->slot = calloc(cfg->max_dgrams, sizeof(*r->slot));
	r->fr = calloc((size_t)cfg->max_dgrams * cfg->max_frags, sizeof(*r->fr));
	/* large and mostly untouched: calloc maps it lazily */
	r->mem = calloc(cfg->max_dgrams, SLOT_BUF);
	if (!r->slot || !r->fr || !r->mem) {
		dp_reasm_destroy(r);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cfg->max_dgrams; i++) {
		r->slot[i].fr = r->fr + (size_t)i * cfg->max_frags;
		r->slot[i].buf = r->mem + (size_t)i * SLOT_BUF;
	}
	*out = r;
	return 0;
}

void dp_reasm_destroy(struct dp_reasm *r)
{
	if (!r)
		return;
	free(r->mem);
	free(r->fr);
	free(r->slot);
	free(r);
}

void dp_reasm_usage(const struct dp_reasm *r, uint32_t *dgrams, uint32_t *bytes)
{
	*dgrams = r->n_used;
	*bytes = r->bytes;
}

/* A parsed fragment. */
struct frag {
	uint8_t family, proto, nexthdr;
	bool mf;
	uint32_t id, off, dlen;
	uint32_t unfrag;           /* bytes before the payload that form the header of the datagram */
	uint32_t nh_off;           /* IPv6 */
	const uint8_t *src, *dst, *payload;
};

/* IPv6: find the Fragment header after hop-by-hop, routing and destination options headers. Returns
 * its offset, 0 when there is none, -1 when the chain is malformed. */
static int ip6_frag_hdr(const uint8_t *pkt, uint32_t len, uint32_t *nh_off)
{
	uint32_t p = 40, at = 6;
	uint8_t nh = pkt[6];

	while (nh == 0 || nh == 43 || nh == 60) {
		if (p + 8 > len)
			return -1;
		at = p;
		nh = pkt[p];
		p += ((uint32_t)pkt[p + 1] + 1) * 8;
	}
	if (nh != 44)
		return 0;
	if (p + 8 > len)
		return -1;
	*nh_off = at;
	return (int)p;
}

static bool parse(const uint8_t *pkt, uint32_t len, struct frag *f)
{
	memset(f, 0, sizeof(*f));
	if (len < 20)
		return false;
	if ((pkt[0] >> 4) == 4) {
		uint32_t ihl = (pkt[0] & 0xfu) * 4;
		uint16_t ff = esp_rd16(pkt + 6);

		if (ihl < 20 || ihl > len)
			return false;
		/* a corrupted offset or length would wreck the datagram: check what covers them */
		if (esp_csum(pkt, ihl) != 0)
			return false;
		f->family = 4;
		f->proto = pkt[9];
		f->id = esp_rd16(pkt + 4);
		f->mf = (ff & 0x2000) != 0;
		f->off = (uint32_t)(ff & 0x1fff) * 8;
		f->unfrag = ihl;
		f->src = pkt + 12;
		f->dst = pkt + 16;
		f->payload = pkt + ihl;
		f->dlen = len - ihl;
		return true;
	}
	if ((pkt[0] >> 4) == 6 && len >= 40) {
		int p = ip6_frag_hdr(pkt, len, &f->nh_off);
		uint16_t fo;

		if (p <= 0)
			return false;
		f->family = 6;
		f->nexthdr = pkt[p];
		fo = esp_rd16(pkt + p + 2);
		f->off = fo & 0xfff8u;
		f->mf = fo & 1;
		f->id = esp_rd32(pkt + p + 4);
		f->unfrag = (uint32_t)p;
		f->src = pkt + 8;
		f->dst = pkt + 24;
		f->payload = pkt + p + 8;
		f->dlen = len - (uint32_t)p - 8;
		return true;
	}
	return false;
}

bool dp_frag_is_fragment(const uint8_t *pkt, uint32_t len, uint8_t *proto)
{
	if (len >= 20 && (pkt[0] >> 4) == 4) {
		if (!(esp_rd16(pkt + 6) & 0x3fff))
			return false;
		*proto = pkt[9];
		return true;
	}
	if (len >= 40 && (pkt[0] >> 4) == 6) {
		uint32_t nho;
		int p = ip6_frag_hdr(pkt, len, &nho);

		if (p <= 0)
			return false;
		*proto = pkt[p];
		return true;
	}
	return false;
}

static void slot_free(struct dp_reasm *r, struct slot *s)
{
	r->bytes -= s->have;
	r->n_used--;
	s->used = false;
}

uint32_t dp_reasm_expire(struct dp_reasm *r, uint64_t now_ns)
{
	uint32_t n = 0;

	if (!r->n_used)
		return 0;
	for (uint32_t i = 0; i < r->cfg.max_dgrams; i++) {
		struct slot *s = &r->slot[i];

		/* a datagram begun after now_ns is not old: a caller's clock may have been read
		 * before another thread added its first fragment */
		if (s->used && now_ns >= s->start_ns && now_ns - s->start_ns >= r->cfg.timeout_ns) {
			n += s->nfrag;
			slot_free(r, s);
		}
	}
	return n;
}

static struct slot *find(struct dp_reasm *r, const struct frag *f)
{
	unsigned alen = f->family == 4 ? 4 : 16;

	for (uint32_t i = 0; i < r->cfg.max_dgrams; i++) {
		struct slot *s = &r->slot[i];

		if (s->used && s->id == f->id && s->family == f->family &&
		    (f->family == 6 || s->proto == f->proto) && !memcmp(s->src, f->src, alen) &&
		    !memcmp(s->dst, f->dst, alen))
			return s;
	}
	return NULL;
}

static struct dp_reasm_res drop(uint16_t reason, uint32_t others)
{
	return (struct dp_reasm_res){ .verdict = DP_REASM_DROP, .reason = reason,
				      .n_dropped = others };
}

/* Abandon the datagram: every fragment held is dropped with this one's reason. */
static struct dp_reasm_res abandon(struct dp_reasm *r, struct slot *s, uint16_t reason)
{
	uint32_t n = s->nfrag;

	slot_free(r, s);
	return drop(reason, n);
}

/* RFC 6946: an IPv6 "fragment" with offset 0 and M clear is a whole packet. */
static struct dp_reasm_res atomic6(const uint8_t *pkt, uint32_t len, const struct frag *f,
				   uint8_t *out, uint32_t room)
{
	uint32_t n = len - 8;

	if (n > room)
		return drop(SADB_DROP_NOMEM, 0);
	memcpy(out, pkt, f->unfrag);
	memcpy(out + f->unfrag, f->payload, f->dlen);
	out[f->nh_off] = f->nexthdr;
	esp_wr16(out + 4, n - 40);
	return (struct dp_reasm_res){ .verdict = DP_REASM_DONE, .n_frags = 1, .len = n };
}

static struct dp_reasm_res complete(struct dp_reasm *r, struct slot *s, uint8_t *out, uint32_t room)
{
	uint8_t *h = s->buf + DP_REASM_HDR_MAX - s->hlen;
	uint32_t n = s->hlen + s->end;
	struct dp_reasm_res res = { .verdict = DP_REASM_DONE, .n_frags = s->nfrag, .len = n };

	if (n > room) {
		/* the completing fragment is already in s->nfrag; n_dropped counts only the others
		 * (the caller counts this one with its frame) */
		res = abandon(r, s, SADB_DROP_NOMEM);
		res.n_dropped--;
		return res;
	}
	if (s->family == 4) {
		esp_wr16(h + 2, n);
		esp_wr16(h + 6, esp_rd16(h + 6) & 0xc000);   /* offset 0, MF clear; DF/reserved as sent */
		esp_ip4_set_csum(h);
	} else {
		esp_wr16(h + 4, n - 40);
		h[s->nh_off] = s->nexthdr;
	}
	memcpy(out, h, n);
	slot_free(r, s);
	return res;
}

struct dp_reasm_res dp_reasm_add(struct dp_reasm *r, const uint8_t *pkt, uint32_t len,
				 uint64_t now_ns, uint8_t *out, uint32_t out_room)
{
	struct dp_reasm_res res;
	struct frag f;
	struct slot *s;
	uint32_t end, hdr_after, expired;

	expired = dp_reasm_expire(r, now_ns);
	if (!parse(pkt, len, &f)) {
		res = drop(SADB_DROP_FRAG_BAD, 0);
		goto out;
	}
	if (f.family == 6 && f.off == 0 && !f.mf) {
		res = atomic6(pkt, len, &f, out, out_room);
		goto out;
	}
	if (f.family == 4 && f.off == 0 && !f.mf) {
		/* not a fragment at all: nothing to do but hand it back */
		if (len > out_room) {
			res = drop(SADB_DROP_NOMEM, 0);
		} else {
			memcpy(out, pkt, len);
			res = (struct dp_reasm_res){ .verdict = DP_REASM_DONE, .n_frags = 1, .len = len };
		}
		goto out;
	}
	s = find(r, &f);
	/* Every fragment but the last carries a multiple of 8 bytes (RFC 8200 section 4.5; RFC 791's
	 * offsets count 8-byte units); an empty fragment adds nothing but state. */
	if (f.dlen == 0 || (f.mf && (f.dlen & 7))) {
		res = s ? abandon(r, s, SADB_DROP_FRAG_BAD) : drop(SADB_DROP_FRAG_BAD, 0);
		goto out;
	}
	end = f.off + f.dlen;
	/* The datagram this fragment implies: IPv4 total length (header at least 20 bytes), IPv6
	 * payload length (this fragment's unfragmentable headers after the fixed header). */
	hdr_after = f.family == 4 ? 20 : f.unfrag - 40;
	if (end + hdr_after > DP_REASM_MAX_LEN || (s && s->hlen && end + s->hlen - (f.family == 4 ?
	    0 : 40) > DP_REASM_MAX_LEN)) {
		res = s ? abandon(r, s, SADB_DROP_FRAG_TOO_BIG) : drop(SADB_DROP_FRAG_TOO_BIG, 0);
		goto out;
	}
	if (!s) {
		if (r->n_used == r->cfg.max_dgrams) {
			res = drop(SADB_DROP_FRAG_LIMIT, 0);
			goto out;
		}
		for (uint32_t i = 0; i < r->cfg.max_dgrams; i++)
			if (!r->slot[i].used) {
				s = &r->slot[i];
				break;
			}
		s->used = true;
		s->family = f.family;
		s->proto = f.proto;
		s->id = f.id;
		memset(s->src, 0, 16);
		memset(s->dst, 0, 16);
		memcpy(s->src, f.src, f.family == 4 ? 4 : 16);
		memcpy(s->dst, f.dst, f.family == 4 ? 4 : 16);
		s->start_ns = now_ns;
		s->hlen = 0;
		s->end = UNKNOWN_END;
		s->have = 0;
		s->nfrag = 0;
		r->n_used++;
	}
	if (s->nfrag == r->cfg.max_frags) {
		res = abandon(r, s, SADB_DROP_FRAG_LIMIT);
		goto out;
	}
	if (r->bytes + f.dlen > r->cfg.max_bytes) {
		/* this fragment only: the datagram may still complete once others finish */
		if (!s->nfrag)
			slot_free(r, s);
		res = drop(SADB_DROP_FRAG_LIMIT, 0);
		goto out;
	}
	if ((s->end != UNKNOWN_END && end > s->end) ||
	    (!f.mf && s->end != UNKNOWN_END && end != s->end)) {
		res = abandon(r, s, SADB_DROP_FRAG_BAD);   /* past the end, or two different ends */
		goto out;
	}
	for (uint32_t i = 0; i < s->nfrag; i++) {
		const struct frag_rec *q = &s->fr[i];

		if (f.off >= q->off + q->len || q->off >= end)
			continue;
		if (q->off == f.off && q->len == f.dlen &&
		    !memcmp(s->buf + DP_REASM_HDR_MAX + f.off, f.payload, f.dlen)) {
			res = drop(SADB_DROP_FRAG_DUP, 0);
			goto out;
		}
		res = abandon(r, s, SADB_DROP_FRAG_OVERLAP);
		goto out;
	}
	if (!f.mf) {
		for (uint32_t i = 0; i < s->nfrag; i++)
			if (s->fr[i].off + s->fr[i].len > end) {
				res = abandon(r, s, SADB_DROP_FRAG_BAD);
				goto out;
			}
	}
	if (f.off == 0) {
		if (f.unfrag > DP_REASM_HDR_MAX) {
			res = abandon(r, s, SADB_DROP_FRAG_BAD);
			goto out;
		}
		s->hlen = f.unfrag;
		s->nh_off = f.nh_off;
		s->nexthdr = f.nexthdr;
		memcpy(s->buf + DP_REASM_HDR_MAX - f.unfrag, pkt, f.unfrag);
		/* the first fragment's header decides the datagram's size (checked for the others) */
		for (uint32_t i = 0; i < s->nfrag; i++)
			if (s->fr[i].off + s->fr[i].len + s->hlen - (f.family == 4 ? 0 : 40) >
			    DP_REASM_MAX_LEN) {
				res = abandon(r, s, SADB_DROP_FRAG_TOO_BIG);
				goto out;
			}
	}
	memcpy(s->buf + DP_REASM_HDR_MAX + f.off, f.payload, f.dlen);
	s->fr[s->nfrag].off = f.off;
	s->fr[s->nfrag].len = f.dlen;
	s->nfrag++;
	s->have += f.dlen;
	r->bytes += f.dlen;
	if (!f.mf)
		s->end = end;
	if (s->hlen && s->end != UNKNOWN_END && s->have == s->end)
		res = complete(r, s, out, out_room);
	else
		res = (struct dp_reasm_res){ .verdict = DP_REASM_HELD };
out:
	res.n_expired = expired;
	return res;
}
