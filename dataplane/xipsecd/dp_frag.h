/* dataplane/xipsecd/dp_frag.h: IPv4 fragmentation and IPv4/IPv6 reassembly for xipsecd, with no I/O, no
 * locks and no allocation on the packet path, so the unit tests drive them on plain buffers.
 *
 * Fragmentation (RFC 791 section 3.2, RFC 4303 section 3.3.4 / RFC 4301 section 8.1: pre-fragmentation
 * of the inner packet before encapsulation) is IPv4 only: IPv6 routers never fragment and a DF packet
 * gets ICMP "fragmentation needed" from the caller instead.
 *
 * Reassembly (RFC 791, RFC 8200 section 4.5, RFC 5722) keeps a bounded table of datagrams in progress:
 * a limit on datagrams, on payload bytes held and on fragments per datagram, a timeout from the first
 * fragment, and 65535 bytes as the largest datagram. Overlapping fragments abandon the datagram (RFC 5722
 * for IPv6; xipsecd applies the same rule to IPv4, where an overlap is either a broken sender or an
 * attack on the inspection that follows); an exact duplicate (same offset, length and bytes) is dropped
 * alone (RFC 8200 section 4.5 allows that). Every failure names the enum sadb_drop reason. A dp_reasm is
 * used by one thread at a time (xipsecd holds a lock around it). */
#ifndef XIPSEC_DP_FRAG_H
#define XIPSEC_DP_FRAG_H

#include <stdbool.h>
#include <stdint.h>

#define DP_FRAG_MAX        64u     /* most fragments one packet is cut into */
#define DP_REASM_HDR_MAX   256u    /* largest unfragmentable part (IPv6 header + extension headers) */
#define DP_REASM_MAX_LEN   65535u  /* largest reassembled IPv4 datagram / IPv6 payload length */
/* A buffer that holds any reassembled datagram: the IPv6 header plus a 65535-byte payload. */
#define DP_REASM_OUT_MAX   (40u + DP_REASM_MAX_LEN)

/* ---- fragmentation ---- */

/* A plan for cutting one IPv4 packet; fragments are then written one by one. The original header is
 * kept in the plan, so fragment 0 may be written in place over the original packet (it is a prefix
 * of it) before or after the others, as long as the payload past fragment 0 is left untouched. */
struct dp_frag4 {
	const uint8_t *pkt;    /* the original packet (header at pkt[0]) */
	uint32_t hlen0;        /* its header length (fragment 0 keeps every option) */
	uint32_t hlen;         /* header length of the later fragments (copied options only) */
	uint32_t plen;         /* payload bytes of the original */
	uint32_t step0, step;  /* payload bytes in fragment 0 and in each later fragment */
	uint32_t n;            /* number of fragments */
	uint16_t off0;         /* the original's fragment offset (8-byte units): re-fragmenting a fragment */
	bool mf0;              /* the original's MF flag: kept on its last piece */
	uint8_t hdr0[60], hdr[60];
};

/* Plan to cut the IPv4 packet pkt (len bytes, len as its total length) into fragments of at most mtu
 * bytes. Returns 0, or -SADB_DROP_TRUNCATED (malformed header or options), -SADB_DROP_MTU (DF set, an
 * MTU below 68, or more than DP_FRAG_MAX fragments needed). A packet that fits gets n = 1. */
int dp_frag4_plan(struct dp_frag4 *f, const uint8_t *pkt, uint32_t len, uint32_t mtu);
/* Length of fragment i (i < f->n). */
uint32_t dp_frag4_len(const struct dp_frag4 *f, unsigned i);
/* Write fragment i to out (dp_frag4_len(f, i) bytes; out may be f->pkt itself for i = 0). Returns its
 * length. Header checksum computed; identification, TOS, TTL, protocol and addresses kept. */
uint32_t dp_frag4_write(const struct dp_frag4 *f, unsigned i, uint8_t *out);

/* ---- reassembly ---- */

struct dp_reasm;

struct dp_reasm_cfg {
	uint32_t max_dgrams;   /* datagrams in progress at once */
	uint32_t max_bytes;    /* payload bytes held across them */
	uint32_t max_frags;    /* fragments per datagram (at most 255) */
	uint64_t timeout_ns;   /* from the first fragment of a datagram */
};

/* What one fragment did. */
struct dp_reasm_res {
	int verdict;           /* DP_REASM_HELD, DP_REASM_DONE or DP_REASM_DROP */
	uint16_t reason;       /* with DROP: enum sadb_drop for this fragment and the n_dropped others */
	uint32_t n_dropped;    /* fragments held before and dropped with this one (datagram abandoned) */
	uint32_t n_frags;      /* with DONE: fragments the datagram was made of */
	uint32_t len;          /* with DONE: bytes written to out */
	uint32_t n_expired;    /* fragments of other, timed-out datagrams dropped during the call
	                        * (SADB_DROP_FRAG_TIMEOUT) */
};
enum { DP_REASM_HELD = 0, DP_REASM_DONE = 1, DP_REASM_DROP = 2 };

int dp_reasm_create(const struct dp_reasm_cfg *cfg, struct dp_reasm **out);
void dp_reasm_destroy(struct dp_reasm *r);

/* Whether the IP packet pkt (len bytes) is a fragment: IPv4 with MF or an offset, IPv6 with a
 * Fragment header after any hop-by-hop, routing and destination options headers. *proto: the
 * protocol of the fragmented payload (IPv4 protocol, the Fragment header's next header). */
bool dp_frag_is_fragment(const uint8_t *pkt, uint32_t len, uint8_t *proto);

/* Add the fragment pkt (len bytes: the IP length) received at now_ns. With DONE the whole datagram,
 * header first (IPv4 total length, offset and checksum fixed; IPv6 payload length fixed and the
 * Fragment header removed), is in out (out_room >= DP_REASM_OUT_MAX always suffices) and its state
 * is gone. An IPv6 atomic fragment (offset 0, M clear; RFC 6946) is returned at once without its
 * Fragment header. The fragment's bytes are copied: the caller keeps its buffer. */
struct dp_reasm_res dp_reasm_add(struct dp_reasm *r, const uint8_t *pkt, uint32_t len,
				 uint64_t now_ns, uint8_t *out, uint32_t out_room);
/* Abandon datagrams older than the timeout; returns the number of fragments dropped with them
 * (SADB_DROP_FRAG_TIMEOUT). */
uint32_t dp_reasm_expire(struct dp_reasm *r, uint64_t now_ns);
/* Datagrams in progress and payload bytes held (tests, status). */
void dp_reasm_usage(const struct dp_reasm *r, uint32_t *dgrams, uint32_t *bytes);

#endif
