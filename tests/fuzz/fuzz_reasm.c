/* tests/fuzz/fuzz_reasm.c: libFuzzer target for xipsecd's reassembly of outer IPv4/IPv6 fragments of
 * ESP, AH and ESP-in-UDP (dataplane/xipsecd/dp_frag.c), driven as the worker drives it: one table, every
 * fragment through dp_reasm_add with the clock of its arrival and an output buffer of
 * DP_REASM_OUT_MAX, dp_reasm_expire now and then. The input is a program of operations on up to 256
 * datagram keys (family, protocol, identification) of both families: send piece j of a key's plan
 * (total length, piece size, header shape), send a fragment of any offset, length and MF flag (and
 * malformed ones), send a whole plan in some order, change a plan, advance the clock, expire. Byte
 * variants make duplicates identical or conflicting. A naive model of each datagram (what was
 * accepted: payload bytes, a coverage map, the first fragment's header) decides what a correct
 * reassembler must do: accept exactly the fragments that break no rule (alignment, 65535 bytes, the
 * table's limits, one end, no overlap), give a reason for every drop that one of the broken rules
 * justifies, abandon a datagram with all its fragments counted, return a completed datagram at once,
 * byte for byte what was sent with the header fixed up, expire on time. The table's usage must match
 * the model after every call, and at the end every fragment fed must be accounted for: in an output,
 * dropped (with n_dropped), or expired. Input: a cfg byte (the worker's table or a small one, the
 * default plans' salt), then operations; see the op_* comments. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sadb/sadb_drops.h"
#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_frag.h"

#define MS 1000000ull
#define NKEYS 256
#define MAX_ADDS 3000            /* fragments fed per input (keeps one input fast) */
#define MAX_BYTES_FED (8u << 20) /* payload bytes fed per input */
#define PKT_MAX (40u + 4 * 288 + 8 + 65536 + 64)

static void fail(const char *what, unsigned long a, unsigned long b)
{
	fprintf(stderr, "fuzz: reassembly: %s (%lu, %lu)\n", what, a, b);
	abort();
}

/* ---- what the input asks for ---- */

struct plan {
	uint32_t total;   /* payload bytes after the unfragmentable part */
	uint32_t piece;   /* bytes per fragment, a multiple of 8 */
	uint8_t hdr;      /* IPv4: option words (low nibble), DF (0x20), reserved bit (0x40);
	                   * IPv6: extension headers (low 2 bits), their size (bits 2-4) */
};

/* The model of one datagram in progress, keyed as the table keys it: IPv4 by addresses, protocol
 * and identification, IPv6 by addresses and identification. */
struct mdg {
	uint32_t nfrag;          /* 0: none in progress */
	uint64_t start;
	uint32_t end;            /* UINT32_MAX until the last fragment */
	uint32_t have, max_end;
	uint32_t hlen;           /* the first fragment's unfragmentable part, 0 before it */
	uint32_t nh_off;
	uint8_t nexthdr;
	uint8_t hdr[DP_REASM_HDR_MAX];
	struct { uint32_t off, len; } fr[255];
	uint8_t cov[65536 / 8];
	uint8_t bytes[65536];
};

static struct mdg model[NKEYS];
static struct plan plans[NKEYS];
static uint8_t pkt[PKT_MAX], out[DP_REASM_OUT_MAX + 64], expect[PKT_MAX];

struct cur {
	const uint8_t *p;
	size_t n, i;
};

static bool more(const struct cur *c) { return c->i < c->n; }
static uint8_t get8(struct cur *c) { return c->i < c->n ? c->p[c->i++] : 0; }
static uint16_t get16(struct cur *c) { uint16_t v = (uint16_t)(get8(c) << 8); return v | get8(c); }

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

/* The RFC 1071 sum over an IPv4 header, independent of dp_frag.c's. */
static uint32_t sum16(const uint8_t *h, uint32_t hlen)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < hlen; i += 2)
		s += rd16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* Key k: bit 0 the family, bit 1 the protocol (IPv4: ESP or ESP-in-UDP/AH; IPv6: the Fragment
 * header's next header, not part of the key), bits 2-7 the identification. */
static bool is6(unsigned k) { return k & 1; }
static unsigned ident(unsigned k) { return is6(k) ? k & ~2u : k; }
static uint8_t proto_of(unsigned k) { return (k & 2) ? ((k & 4) ? 51 : 17) : 50; }

static uint8_t pay_byte(unsigned k, uint32_t pos, unsigned variant)
{
	uint32_t h = (ident(k) * 0x9e3779b1u) ^ (pos * 0x85ebca6bu);

	h ^= h >> 15;
	h *= 0xc2b2ae35u;
	h ^= h >> 13;
	return (uint8_t)(h + variant * 37u);   /* variants differ in every byte */
}

/* A fragment of key k: the whole IP packet in pkt. Returns its length; *unfrag, *nh_off: the part
 * before the payload (IPv6: up to the Fragment header) and where the next header naming the Fragment
 * header is. malform: 1 broken IPv4 checksum / IPv6 header chain cut short, 2 wrong version, 3 an
 * IPv4 header shorter than 20 bytes / an IPv6 chain without a Fragment header. */
static uint32_t build(unsigned k, uint8_t hdr, uint32_t off, uint32_t dlen, bool mf, unsigned variant,
		      unsigned malform, uint32_t *unfrag, uint32_t *nh_off)
{
	uint32_t p, len;

	if (!is6(k)) {
		uint32_t ihl = 20 + 4 * ((hdr & 15u) > 10 ? 10 : (hdr & 15u));
		uint16_t ff = (uint16_t)((off / 8) | (mf ? 0x2000 : 0) | (hdr & 0x20 ? 0x4000 : 0) |
					 (hdr & 0x40 ? 0x8000 : 0));

		if (dlen > 65535 - ihl)
			dlen = 65535 - ihl;
		len = ihl + dlen;
		memset(pkt, 1, ihl);   /* options: no-operation */
		pkt[0] = (uint8_t)(0x40 | ihl / 4);
		pkt[1] = 0;
		wr16(pkt + 2, len);
		wr16(pkt + 4, 0x1000 + (k >> 2));
		wr16(pkt + 6, ff);
		pkt[8] = 64;
		pkt[9] = proto_of(k);
		memcpy(pkt + 12, (const uint8_t[]){ 192, 0, 2, 1, 198, 51, 100, 7 }, 8);
		pkt[10] = pkt[11] = 0;
		wr16(pkt + 10, ~sum16(pkt, ihl) & 0xffff);
		if (malform == 1)
			pkt[11] ^= 0x5a;
		p = ihl;
		*nh_off = 0;
	} else {
		unsigned next = hdr & 3, hl = ((hdr >> 2) & 7u) * 5;
		uint32_t at = 6;

		memset(pkt, 0, 40);
		pkt[0] = 0x60;
		pkt[7] = 64;
		memcpy(pkt + 8, (const uint8_t[]){ 0x20, 1, 0xd, 0xb8, [15] = 1 }, 16);
		memcpy(pkt + 24, (const uint8_t[]){ 0x20, 1, 0xd, 0xb8, [14] = 0x77, [15] = 2 }, 16);
		p = 40;
		for (unsigned i = 0; i < next; i++) {
			pkt[at] = i == 0 ? 0 : (i == 1 ? 43 : 60);   /* hop-by-hop, routing, destination */
			memset(pkt + p, 0, (hl + 1) * 8);
			pkt[p + 1] = (uint8_t)hl;
			pkt[p + 2] = 1;                               /* PadN fills the rest */
			pkt[p + 3] = (uint8_t)((hl + 1) * 8 - 4);
			at = p;
			p += (hl + 1) * 8;
		}
		pkt[at] = 44;
		*nh_off = at;
		pkt[p] = proto_of(k);
		pkt[p + 1] = 0;
		wr16(pkt + p + 2, off | (mf ? 1 : 0));
		wr16(pkt + p + 4, 0xabcd);
		wr16(pkt + p + 6, 0x1000 + (k >> 2));
		p += 8;
		if (dlen > 65535 + 40 - p)
			dlen = 65535 + 40 - p;
		len = p + dlen;
		wr16(pkt + 4, len - 40);
		if (malform == 1)
			len = 47;   /* the chain is cut before the Fragment header ends */
	}
	if (malform == 2)
		pkt[0] ^= 0x30;
	if (malform == 3) {
		if (is6(k))
			pkt[*nh_off] = 59;   /* no next header */
		else
			pkt[0] = 0x44;
	}
	*unfrag = is6(k) ? p - 8 : p;
	if (malform == 1 && is6(k))
		return len;
	for (uint32_t i = 0; i < dlen; i++)
		pkt[p + i] = pay_byte(k, off + i, variant);
	return len;
}

/* ---- the model ---- */

struct run {
	struct dp_reasm *r;
	struct dp_reasm_cfg cfg;
	uint64_t now;
	uint32_t active, bytes;           /* the model's datagrams in progress and bytes held */
	uint64_t fed, done_frags, dropped, expired;
	uint64_t adds, bytes_fed;
	bool brk, broke;
};

static bool covered(const struct mdg *m, uint32_t off, uint32_t len)
{
	for (uint32_t i = off; i < off + len && i < 65536; i++)
		if (m->cov[i / 8] & (1u << (i % 8)))
			return true;
	return false;
}

static void mark(struct mdg *m, uint32_t off, uint32_t end)
{
	for (uint32_t i = off; i < end; i++)
		m->cov[i / 8] |= (uint8_t)(1u << (i % 8));
}

static void forget(struct run *R, struct mdg *m)
{
	R->active--;
	R->bytes -= m->have;
	m->nfrag = 0;
}

/* A datagram is older than the timeout at t when t is at least timeout past its first fragment; one
 * begun after t (a clock read before the call, by a worker waiting for the table) is not. */
static uint32_t model_expire(struct run *R, uint64_t t)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < NKEYS; i++) {
		struct mdg *m = &model[i];

		if (m->nfrag && t >= m->start && t - m->start >= R->cfg.timeout_ns) {
			n += m->nfrag;
			forget(R, m);
		}
	}
	return n;
}

static void check_usage(struct run *R)
{
	uint32_t d, b;

	dp_reasm_usage(R->r, &d, &b);
	if (d != R->active || b != R->bytes)
		fail("usage differs from the fragments held (datagrams table/model, bytes table/model)",
		     (unsigned long)d << 32 | R->active, (unsigned long)b << 32 | R->bytes);
	if (d > R->cfg.max_dgrams || b > R->cfg.max_bytes)
		fail("table limits exceeded (datagrams, bytes)", d, b);
}

static void check_done(struct run *R, const struct mdg *m, bool v6, const struct dp_reasm_res *res)
{
	uint32_t n = m->hlen + m->end;

	if (m->have != m->end)
		fail("completed with bytes missing (have, end)", m->have, m->end);
	if (res->n_frags != m->nfrag)
		fail("completed datagram: fragment count (reported, sent)", res->n_frags, m->nfrag);
	if (res->len != n)
		fail("completed datagram: length differs from its fragments' (reported, implied)", res->len, n);
	if (n > DP_REASM_OUT_MAX || (v6 ? n - 40 : n) > DP_REASM_MAX_LEN)
		fail("completed datagram beyond the largest one", n, DP_REASM_MAX_LEN);
	if (!v6) {
		if (out[0] != m->hdr[0] || memcmp(out + 8, m->hdr + 8, 2) || memcmp(out + 12, m->hdr + 12,
		    m->hlen - 12) || out[1] != m->hdr[1] || memcmp(out + 4, m->hdr + 4, 2))
			fail("IPv4 header not the first fragment's", 0, m->hlen);
		if (rd16(out + 2) != n || rd16(out + 6) != (rd16(m->hdr + 6) & 0xc000) ||
		    sum16(out, m->hlen) != 0xffff)
			fail("IPv4 header: total length, offset/flags or checksum (length, flags)",
			     rd16(out + 2), rd16(out + 6));
	} else {
		uint8_t h[DP_REASM_HDR_MAX];

		memcpy(h, m->hdr, m->hlen);
		wr16(h + 4, n - 40);
		h[m->nh_off] = m->nexthdr;
		if (memcmp(out, h, m->hlen))
			fail("IPv6 header: payload length, next header or extension headers", 0, m->hlen);
	}
	/* FZ_BREAK=1: the runner's self-test: the model's copy is made wrong once, which the comparison
	 * must report. */
	if (R->brk && !R->broke && m->end) {
		R->broke = true;
		((struct mdg *)m)->bytes[m->end - 1] ^= 0x80;
	}
	if (memcmp(out + m->hlen, m->bytes, m->end))
		for (uint32_t i = 0; i < m->end; i++)
			if (out[m->hlen + i] != m->bytes[i])
				fail("reassembled payload differs from what was sent (offset, datagram length)",
				     i, m->end);
}

/* One fragment (already in pkt) through the table, checked against the model. */
static void feed(struct run *R, unsigned k, uint32_t len, uint32_t unfrag, uint32_t nh_off, uint32_t off,
		 bool mf, unsigned malform)
{
	bool v6 = is6(k);
	struct mdg *m = &model[ident(k)];
	uint32_t hdr6 = unfrag + (v6 ? 8 : 0);                     /* bytes before the payload */
	uint32_t dlen = malform ? 0 : len - hdr6;
	uint32_t end = off + dlen, sub = v6 ? 40 : 0;
	struct dp_reasm_res res;
	uint32_t exp;

	/* The worker hands the table only what dp_frag_is_fragment calls a fragment of ESP, AH or
	 * UDP; the table must still stand anything else. */
	{
		uint8_t proto = 0;
		bool isf = dp_frag_is_fragment(pkt, len, &proto);

		if (!malform && (isf != (v6 || off || mf) || (isf && proto != proto_of(k))))
			fail("dp_frag_is_fragment (answer, protocol)", isf, proto);
		if ((malform == 2 || (malform == 3 && v6)) && isf)
			fail("dp_frag_is_fragment on a packet without a fragment (malformation)", malform, 0);
	}
	R->fed++;
	R->adds++;
	R->bytes_fed += dlen;
	exp = model_expire(R, R->now);
	res = dp_reasm_add(R->r, pkt, len, R->now, out, DP_REASM_OUT_MAX);
	if (res.n_expired != exp)
		fail("fragments expired by the call (reported, timed out)", res.n_expired, exp);
	R->expired += res.n_expired;
	if (res.verdict != DP_REASM_HELD && res.verdict != DP_REASM_DONE && res.verdict != DP_REASM_DROP)
		fail("verdict", (unsigned long)res.verdict, 0);

	if (malform) {
		if (res.verdict != DP_REASM_DROP || res.reason != SADB_DROP_FRAG_BAD || res.n_dropped)
			fail("malformed fragment not dropped alone as FRAG_BAD (verdict, reason)",
			     (unsigned long)res.verdict, res.reason);
		R->dropped++;
		check_usage(R);
		return;
	}
	if (off == 0 && !mf) {
		/* not a fragment (IPv4) or an atomic fragment (IPv6): handed back at once, whole */
		uint32_t n = v6 ? len - 8 : len;

		if (res.verdict != DP_REASM_DONE || res.n_frags != 1 || res.len != n)
			fail("unfragmented packet not returned whole (verdict, length)",
			     (unsigned long)res.verdict, res.len);
		if (v6) {
			/* RFC 6946: the packet without its Fragment header */
			memcpy(expect, pkt, unfrag);
			memcpy(expect + unfrag, pkt + unfrag + 8, dlen);
			expect[nh_off] = pkt[unfrag];
			wr16(expect + 4, n - 40);
		} else {
			memcpy(expect, pkt, len);
		}
		if (memcmp(out, expect, n))
			fail("unfragmented packet altered", 0, len);
		R->done_frags++;
		check_usage(R);
		return;
	}

	/* What a correct reassembler makes of this fragment, rule by rule. */
	bool bad_shape = dlen == 0 || (mf && (dlen & 7));
	bool too_big = end + (v6 ? unfrag - 40 : 20) > DP_REASM_MAX_LEN ||
		       (m->nfrag && m->hlen && end + m->hlen - sub > DP_REASM_MAX_LEN) ||
		       (off == 0 && m->nfrag && m->max_end + unfrag - sub > DP_REASM_MAX_LEN);
	bool table_full = !m->nfrag && R->active == R->cfg.max_dgrams;
	bool frag_limit = m->nfrag == R->cfg.max_frags;
	bool byte_limit = R->bytes + dlen > R->cfg.max_bytes;
	bool known = m->nfrag && m->end != UINT32_MAX;
	bool bad_end = (known && (end > m->end || (!mf && end != m->end))) ||
		       (!mf && m->nfrag && m->max_end > end);
	bool bad_hdr = off == 0 && unfrag > DP_REASM_HDR_MAX;
	bool overlap = m->nfrag && covered(m, off, dlen);
	bool dup = false;

	for (uint32_t i = 0; overlap && i < m->nfrag; i++)
		if (m->fr[i].off == off && m->fr[i].len == dlen &&
		    !memcmp(m->bytes + off, pkt + hdr6, dlen))
			dup = true;
	bool accept = !bad_shape && !too_big && !table_full && !frag_limit && !byte_limit && !bad_end &&
		      !bad_hdr && !overlap;

	if (res.verdict == DP_REASM_DROP) {
		bool why;

		if (accept)
			fail("a fragment breaking no rule was dropped (reason, offset)", res.reason, off);
		switch (res.reason) {
		case SADB_DROP_FRAG_BAD: why = bad_shape || bad_end || bad_hdr; break;
		case SADB_DROP_FRAG_TOO_BIG: why = too_big; break;
		case SADB_DROP_FRAG_LIMIT: why = table_full || frag_limit || byte_limit; break;
		case SADB_DROP_FRAG_DUP: why = dup && !res.n_dropped; break;
		case SADB_DROP_FRAG_OVERLAP: why = overlap && !dup; break;
		default: why = false;
		}
		if (!why)
			fail("drop reason not justified by the fragment (reason, offset)", res.reason, off);
		if (res.n_dropped && res.n_dropped != m->nfrag)
			fail("abandoned datagram: fragments dropped with it (reported, held)", res.n_dropped,
			     m->nfrag);
		/* abandoning rules (all but the table-wide limits and an exact duplicate) take the held
		 * fragments along */
		if (m->nfrag && !res.n_dropped && res.reason != SADB_DROP_FRAG_DUP &&
		    !(res.reason == SADB_DROP_FRAG_LIMIT && !frag_limit))
			fail("datagram kept after a fragment that abandons it (reason, held)", res.reason,
			     m->nfrag);
		R->dropped += 1 + res.n_dropped;
		if (res.n_dropped)
			forget(R, m);
		check_usage(R);
		return;
	}
	if (!accept)
		fail("a fragment breaking a rule was accepted (offset, length)", off, dlen);
	if (end > 65536)
		fail("accepted past the largest datagram", off, dlen);
	/* into the model */
	if (!m->nfrag) {
		R->active++;
		m->start = R->now;
		m->end = UINT32_MAX;
		m->have = m->max_end = m->hlen = 0;
		memset(m->cov, 0, sizeof(m->cov));
	}
	m->fr[m->nfrag].off = off;
	m->fr[m->nfrag].len = dlen;
	m->nfrag++;
	memcpy(m->bytes + off, pkt + hdr6, dlen);
	mark(m, off, end);
	m->have += dlen;
	R->bytes += dlen;
	if (end > m->max_end)
		m->max_end = end;
	if (!mf)
		m->end = end;
	if (off == 0) {
		m->hlen = unfrag;
		memcpy(m->hdr, pkt, unfrag);
		m->nh_off = nh_off;
		m->nexthdr = v6 ? pkt[unfrag] : 0;
	}
	bool complete = m->hlen && m->end != UINT32_MAX && m->have == m->end;

	if (complete != (res.verdict == DP_REASM_DONE))
		fail("completion (table, model)", res.verdict == DP_REASM_DONE, complete);
	if (complete) {
		uint8_t proto;

		check_done(R, m, v6, &res);
		/* the worker drops a reassembled datagram that is still a fragment */
		if (dp_frag_is_fragment(out, res.len, &proto))
			fail("reassembled datagram still a fragment", res.len, proto);
		R->done_frags += res.n_frags;
		forget(R, m);
	}
	if (m->nfrag > R->cfg.max_frags)
		fail("fragments per datagram beyond the limit", m->nfrag, R->cfg.max_frags);
	check_usage(R);
}

static struct plan plan_of(unsigned k)
{
	return plans[k];
}

static void send_piece(struct run *R, unsigned k, uint32_t j, unsigned variant)
{
	struct plan p = plan_of(k);
	uint32_t n = (p.total + p.piece - 1) / p.piece, off, dlen, unfrag, nh_off, len;

	if (!n)
		n = 1;
	j %= n;
	off = j * p.piece;
	dlen = p.total - off < p.piece ? p.total - off : p.piece;
	len = build(k, p.hdr, off, dlen, j + 1 < n, variant, 0, &unfrag, &nh_off);
	feed(R, k, len, unfrag, nh_off, off, j + 1 < n, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct dp_reasm_cfg cfgs[4] = {
		{ DP_REASM_DGRAMS, DP_REASM_BYTES, DP_REASM_FRAGS, DP_REASM_NS },   /* the worker's */
		{ 3, 6000, 6, DP_REASM_NS },
		{ 1, 200000, 255, 1000 * MS },
		{ 2, DP_REASM_BYTES, 2, 100 * MS },
	};
	static int brk = -1;
	struct run R = { 0 };
	struct cur c = { data, size, 0 };
	uint8_t cfg;

	if (brk < 0)
		brk = getenv("FZ_BREAK") && atoi(getenv("FZ_BREAK")) == 1;
	if (size < 2)
		return 0;
	cfg = get8(&c);
	R.cfg = cfgs[cfg & 3];
	R.brk = brk;
	R.now = 1000 * MS + (uint64_t)(cfg >> 2) * 7 * MS;
	/* The worker's table (4 MiB of slot buffers) is made once and left empty by the final expiry
	 * of every input, as the worker's is between bursts of fragments: what a datagram left in its
	 * slot must not leak into the next one's (the byte comparison would see it). The small tables
	 * are made and destroyed by every input. */
	if ((cfg & 3) == 0) {
		static struct dp_reasm *worker_table;

		if (!worker_table && dp_reasm_create(&R.cfg, &worker_table))
			fail("dp_reasm_create", 0, 0);
		R.r = worker_table;
	} else if (dp_reasm_create(&R.cfg, &R.r)) {
		fail("dp_reasm_create", 0, 0);
	}
	for (unsigned k = 0; k < NKEYS; k++) {
		uint32_t h = (k * 0x9e3779b1u) ^ (cfg * 0x27d4eb2du);

		h ^= h >> 16;
		plans[k] = (struct plan){ .total = 16 + h % 1500, .piece = 8 * (1 + (h >> 11) % 40),
					  .hdr = (uint8_t)(h >> 20) & 0x07 };
		model[k].nfrag = 0;
	}
	while (more(&c) && R.adds < MAX_ADDS && R.bytes_fed < MAX_BYTES_FED) {
		uint8_t op = get8(&c);
		unsigned k, variant = (op >> 3) & 3;

		switch (op & 7) {
		case 0: case 1: case 2:
			/* op_piece: key, piece index; variant from the op byte */
			k = get8(&c);
			send_piece(&R, k, get8(&c), variant);
			break;
		case 3: {
			/* op_custom: key, 16-bit offset field, 16-bit length, flags (bit 0 MF, bits 1-2
			 * variant, bits 3-4 malformation, bit 5: another header shape than the plan's) */
			uint32_t offf, dlen, unfrag, nh_off, len, off;
			uint8_t fl, hdr;
			unsigned mal;

			k = get8(&c);
			offf = get16(&c);
			dlen = get16(&c);
			fl = get8(&c);
			mal = (fl >> 3) & 3;
			off = is6(k) ? offf & 0xfff8u : (offf & 0x1fffu) * 8;
			hdr = plan_of(k).hdr ^ ((fl & 0x20) ? (uint8_t)(fl >> 6 | 0x4) : 0);
			len = build(k, hdr, off, dlen, fl & 1, (fl >> 1) & 3, mal, &unfrag, &nh_off);
			feed(&R, k, len, unfrag, nh_off, off, fl & 1, mal);
			break;
		}
		case 4: {
			/* op_plan: key, 16-bit total, piece size / 8 - 1, header shape */
			struct plan p;

			k = get8(&c);
			p.total = get16(&c);
			p.piece = 8 * (1u + get8(&c));
			p.hdr = get8(&c);
			plans[k] = p;
			break;
		}
		case 5: {
			/* op_advance: the clock moves on by (a & 63) ms, 10 ms, 100 ms or s */
			static const uint64_t unit[4] = { MS, 10 * MS, 100 * MS, 1000 * MS };
			uint8_t a = get8(&c);

			R.now += (a & 63) * unit[a >> 6];
			break;
		}
		case 6: {
			/* op_expire: the worker's periodic expiry; with op >> 3 non-zero its clock is that
			 * many ms behind the last fragment's (the worker reads it before taking the
			 * table's lock, and another worker may add a fragment meanwhile) */
			uint64_t t = R.now - (op >> 3) * MS;
			uint32_t exp = model_expire(&R, t), n = dp_reasm_expire(R.r, t);

			if (n != exp)
				fail("dp_reasm_expire: fragments dropped (reported, timed out)", n, exp);
			R.expired += n;
			check_usage(&R);
			break;
		}
		default: {
			/* op_whole: every piece of a key's plan, in order, reversed, odd ones first or
			 * rotated */
			struct plan p;
			uint32_t n, mode = op >> 3, rot;

			k = get8(&c);
			p = plan_of(k);
			n = (p.total + p.piece - 1) / p.piece;
			if (!n)
				n = 1;
			if (n > 300)
				n = 300;
			rot = get8(&c);
			for (uint32_t i = 0; i < n && R.adds < MAX_ADDS; i++) {
				uint32_t j;

				switch (mode & 3) {
				case 0: j = i; break;
				case 1: j = n - 1 - i; break;
				case 2: j = i < n / 2 ? 2 * i + 1 : 2 * (i - n / 2); break;
				default: j = (i + rot) % n; break;
				}
				send_piece(&R, k, j, (mode >> 2) & 1 && i == n / 2 ? 1 : 0);
			}
			break;
		}
		}
	}
	/* Everything still held times out; then every fragment fed is accounted for. */
	{
		uint32_t exp, n;

		R.now += R.cfg.timeout_ns;
		exp = model_expire(&R, R.now);
		n = dp_reasm_expire(R.r, R.now);
		if (n != exp)
			fail("final expiry: fragments dropped (reported, held)", n, exp);
		R.expired += n;
		check_usage(&R);
		if (R.fed != R.done_frags + R.dropped + R.expired)
			fail("fragments unaccounted for (fed, in outputs + dropped + expired)", R.fed,
			     R.done_frags + R.dropped + R.expired);
	}
	if (cfg & 3)
		dp_reasm_destroy(R.r);
	return 0;
}
