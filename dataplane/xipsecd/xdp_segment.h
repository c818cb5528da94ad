/* dataplane/xipsecd/xdp_segment.h: the cluster segment of a peer's address, and the map that tells the
 * XDP program which segments this node owns. Compiled for BPF (xdp_prog.bpf.c) and for xipsecd's
 * workers alike: plain fixed-width types and straight-line code only.
 *
 * Active/active clustering splits the peers between the nodes by segment (1..count, count <= 16):
 * both nodes receive every frame for the cluster address and each keeps only the segments it owns.
 * strongSwan's ha plugin decides which node owns which segment, and hands an IKE_SA to the node
 * whose segments hold its peer; it computes the segment of a peer exactly as the kernel's iptables
 * CLUSTERIP target hashes a source address (hashmode sourceip, hash-init 0), because it meant that
 * target to do the filtering: jhash of the address as a host-order 32-bit word, scaled to
 * 1..count. Which jhash the kernel used changed twice, and the plugin picks the variant from the
 * running kernel's version (uname), so this must too: a peer in another segment here than in the
 * plugin would be kept by the node that has no IKE_SA for it and dropped by the node that has. */
#ifndef XIPSEC_XDP_SEGMENT_H
#define XIPSEC_XDP_SEGMENT_H

#include <linux/types.h>

#define DP_SEG_MAX 16             /* the plugin's segment_mask_t is 16 bits wide */

/* The kernel's jhash of one word (initval 0), by kernel version: */
enum dp_seg_jhash {
	DP_SEG_LOOKUP3_1 = 0,     /* Linux 4.1 and later: lookup3, init values depend on the length */
	DP_SEG_LOOKUP3 = 1,       /* 2.6.37 to 4.0: lookup3 */
	DP_SEG_LOOKUP2 = 2,       /* before 2.6.37: lookup2 */
};

static inline __u32 dp_seg_rol(__u32 x, unsigned k)
{
	return (x << k) | (x >> (32 - k));
}

/* jhash of one 32-bit word a (host order) with initval 0, as variant v computes it. */
static inline __u32 dp_seg_jhash(__u32 v, __u32 a)
{
	__u32 b = 0, c = 0;

	if (v == DP_SEG_LOOKUP2) {
		a += 0x9e3779b9;
		b += 0x9e3779b9;
		a -= b; a -= c; a ^= (c >> 13);
		b -= c; b -= a; b ^= (a << 8);
		c -= a; c -= b; c ^= (b >> 13);
		a -= b; a -= c; a ^= (c >> 12);
		b -= c; b -= a; b ^= (a << 16);
		c -= a; c -= b; c ^= (b >> 5);
		a -= b; a -= c; a ^= (c >> 3);
		b -= c; b -= a; b ^= (a << 10);
		c -= a; c -= b; c ^= (b >> 15);
		return c;
	}
	if (v == DP_SEG_LOOKUP3_1) {
		/* the length (one word, << 2) joined the init value of all three */
		a += 1u << 2;
		b += 1u << 2;
		c += (1u << 2) + 0xdeadbeef;
	}
	a += 0xdeadbeef;
	b += 0xdeadbeef;
	c ^= b; c -= dp_seg_rol(b, 14);
	a ^= c; a -= dp_seg_rol(c, 11);
	b ^= a; b -= dp_seg_rol(a, 25);
	c ^= b; c -= dp_seg_rol(b, 16);
	a ^= c; a -= dp_seg_rol(c, 4);
	b ^= a; b -= dp_seg_rol(a, 14);
	c ^= b; c -= dp_seg_rol(b, 24);
	return c;
}

/* The segment (1..count) of a peer's IPv4 address in network order; count is 1..DP_SEG_MAX. The
 * plugin hashes every IPv6 peer as the address 0 (CLUSTERIP is IPv4 only): callers pass 0 for them. */
static inline __u32 dp_seg_of(__u32 v, __u32 count, __u32 addr_be)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__u32 host = __builtin_bswap32(addr_be);
#else
	__u32 host = addr_be;
#endif

	return (__u32)(((__u64)dp_seg_jhash(v, host) * count) >> 32) + 1;
}

/* cluster_seg[0], written by xipsecd's control thread (dp_segment.c), read by the program per frame.
 * count 0: no active/active cluster, nothing is filtered. Otherwise every IPv4 frame from the
 * outside addressed to `addr` (the cluster address) is kept only when the segment of its source is
 * in `owned` (bit s-1 for segment s, the plugin's SEGMENTS_BIT), whatever it carries: ESP, AH,
 * ESP-in-UDP and IKE, their fragments (each carries the source), ICMP about them. */
struct dp_xdp_cluster {
	__u32 count;              /* segments in the cluster, 0..DP_SEG_MAX */
	__u32 owned;              /* bit s-1: this node owns segment s */
	__u32 jhash;              /* enum dp_seg_jhash */
	__u32 addr;               /* the cluster address, IPv4, network order */
};

/* cluster_seg_stats[s], per CPU, s = 1..DP_SEG_MAX: frames for the cluster address from segment s. */
struct dp_xdp_seg_stats {
	__u64 kept;               /* owned: on to the dataplane or the kernel as any other frame */
	__u64 foreign;            /* dropped: the other node's */
};

#endif
