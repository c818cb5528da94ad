/* dataplane/xipsecd/xdp_prog.bpf.c: xipsecd's one XDP program (doc/architecture.md rule 8). It decides, per frame,
 * whether the dataplane (an AF_XDP socket) or the kernel handles it:
 *  - both interfaces: ARP, ND/other ICMPv6 control, IPv6 hop-by-hop (MLD), multicast/broadcast and
 *    anything addressed to the gateway itself go to the kernel (XDP_PASS), so neighbour resolution,
 *    IKE and management keep working;
 *  - outside, addressed to the gateway itself: the gateway's inbound SPD first (`local_spd`,
 *    RFC 4301 section 5.2): plaintext a PROTECT or DISCARD policy covers is dropped and counted,
 *    IKE (UDP 500/4500) always passes, and so does what no policy covers;
 *  - outside: ESP and AH (also behind a Destination Options header: a Mobile IPv6 Binding Update's
 *    Home Address option, or inside IPv4: a DSMIPv6 one, RFC 5555), and ESP-in-UDP on port 4500
 *    with a non-zero marker, go to the dataplane even when addressed to the gateway; IKE (UDP 500, 4500 with a zero marker) and keepalives stay
 *    with the kernel;
 *  - outside, fragments: ESP and AH fragments (IPv4, and IPv6 with a Fragment header right after
 *    the fixed header) go to the dataplane, which reassembles them. A UDP first fragment addressed
 *    to the gateway that is ESP-in-UDP goes there too, and its datagram is remembered (LRU map
 *    `esp_udp_frags`) so that its later fragments, which carry no UDP header, follow it; other UDP
 *    fragments (IKE, and ESP-in-UDP fragments that overtake their first fragment) stay with the
 *    kernel, which reassembles IKE for charon;
 *  - any IP packet to be forwarded goes to the dataplane;
 *  - outside, in an active/active cluster, before all of the above: IPv4 to the cluster address
 *    whose source hashes to a segment another node owns is dropped and counted per segment
 *    (`cluster_seg`, xdp_segment.h), the job the iptables CLUSTERIP target did for strongSwan's ha
 *    plugin: ESP, ESP-in-UDP and IKE alike, so the node that owns a peer's IKE_SA is the only one
 *    that decrypts its traffic or answers it.
 * Fragments cannot be steered to one queue here: an AF_XDP socket takes only frames of the queue it
 * is bound to. The dataplane's reassembly table is shared by its workers instead.
 * The xskmap key is the interface's base (from `ifaces`, filled by xipsecd) plus the RX queue, so
 * one loaded program serves both interfaces. When no socket is bound the redirect fails closed
 * (XDP_DROP): transit traffic must never fall through to kernel forwarding unprotected. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "dataplane/xipsecd/xdp_shared.h"
#include "dataplane/xipsecd/xdp_segment.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, DP_XSKMAP_SIZE);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);                 /* ifindex */
	__type(value, struct dp_xdp_if);
} ifaces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DP_LOCAL_ADDR_MAX);
	__type(key, struct dp_xdp_addr);
	__type(value, __u32);
} local_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DP_XDP_FRAG_MAX);
	__type(key, struct dp_xdp_frag_key);
	__type(value, __u32);
} esp_udp_frags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DP_XDP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xdp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DP_XDP_SPI_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);   /* sized to the SADB, filled as SAs come */
	__type(key, struct dp_xdp_spi_key);
	__type(value, __u32);
} spis SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdp_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DP_XSKMAP_SIZE);
	__type(key, __u32);
	__type(value, __u64);
} spi_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * DP_XDP_LSPD_MAX);   /* two halves: xdp_shared.h */
	__type(key, __u32);
	__type(value, struct dp_xdp_lspd);
} local_spd SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} local_spd_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DP_XSKMAP_SIZE);
	__type(key, __u32);
	__type(value, struct dp_xdp_local_drops);
} local_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dp_xdp_cluster);
} cluster_seg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DP_SEG_MAX + 1);        /* by segment, 1..DP_SEG_MAX */
	__type(key, __u32);
	__type(value, struct dp_xdp_seg_stats);
} cluster_seg_stats SEC(".maps");

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&xdp_stats, &i);

	if (v)
		*v += 1;
}

static __always_inline int to_kernel(void)
{
	stat_inc(DP_XDP_STAT_PASS);
	return XDP_PASS;
}

static __always_inline int to_dataplane(struct xdp_md *ctx, const struct dp_xdp_if *ifc)
{
	__u32 key = ifc->xsk_base + ctx->rx_queue_index;

	stat_inc(DP_XDP_STAT_REDIRECT);
	return bpf_redirect_map(&xsks, key, XDP_DROP);
}

/* ESP or AH for an SA the dataplane does not hold: dropped here, counted for the queue's worker.
 * spi_at points at the SPI (4 bytes, bounds checked by the caller). */
static __always_inline int spi_unknown(struct xdp_md *ctx, const struct dp_xdp_if *ifc, __u8 proto,
				       __u8 family, const void *dst, const __u32 *spi_at)
{
	struct dp_xdp_spi_key k = { .proto = proto, .family = family };
	__u32 zero = 0, key = ifc->xsk_base + ctx->rx_queue_index;
	__u32 *conf = bpf_map_lookup_elem(&xdp_conf, &zero);
	__u64 *n;

	if (!conf || !(*conf & DP_XDP_CONF_SPI_FILTER))
		return 0;
	k.spi = *spi_at;
	__builtin_memcpy(k.dst, dst, family == DP_AF_INET ? 4 : 16);
	if (bpf_map_lookup_elem(&spis, &k))
		return 0;
	n = bpf_map_lookup_elem(&spi_drops, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 1;
}

/* IPv4 from the outside to the cluster address from a peer in a segment this node does not own:
 * the other node's to handle. One 32-bit load decides it is owned or no cluster at all. */
static __always_inline int seg_foreign4(const struct iphdr *ip)
{
	__u32 zero = 0, count, seg;
	const struct dp_xdp_cluster *c = bpf_map_lookup_elem(&cluster_seg, &zero);
	struct dp_xdp_seg_stats *st;
	int foreign;

	if (!c || !c->count || ip->daddr != c->addr)
		return 0;
	count = c->count > DP_SEG_MAX ? DP_SEG_MAX : c->count;
	seg = dp_seg_of(c->jhash, count, ip->saddr);
	foreign = !(c->owned & (1u << ((seg - 1) & (DP_SEG_MAX - 1))));
	st = bpf_map_lookup_elem(&cluster_seg_stats, &seg);
	if (st) {
		if (foreign)
			st->foreign++;
		else
			st->kept++;
	}
	return foreign;
}

static __always_inline int is_local4(__u32 daddr)
{
	struct dp_xdp_addr k = { .family = DP_AF_INET };

	__builtin_memcpy(k.addr, &daddr, 4);
	return bpf_map_lookup_elem(&local_addrs, &k) != NULL;
}

static __always_inline int is_local6(const struct in6_addr *daddr)
{
	struct dp_xdp_addr k = { .family = DP_AF_INET6 };

	__builtin_memcpy(k.addr, daddr, 16);
	return bpf_map_lookup_elem(&local_addrs, &k) != NULL;
}

/* UDP to port 4500: ESP-in-UDP has a non-zero SPI where IKE has the zero non-ESP marker and a
 * NAT keepalive is a single 0xff byte (RFC 3948 section 2). */
static __always_inline int is_esp_in_udp(void *l4, void *end)
{
	struct udphdr *uh = l4;
	__u32 *marker;

	if ((void *)(uh + 1) > end)
		return 0;
	if (uh->dest != bpf_htons(DP_NATT_PORT))
		return 0;
	marker = (void *)(uh + 1);
	if ((void *)(marker + 1) > end)
		return 0;
	return *marker != 0;
}

/* A UDP fragment to the gateway: the first one decides (ESP-in-UDP marker) and is remembered. */
static __always_inline int udp_frag_is_esp(struct dp_xdp_frag_key *k, int first, void *l4,
					   void *end)
{
	__u32 one = 1;

	if (first) {
		if (!is_esp_in_udp(l4, end)) {
			/* an earlier ESP-in-UDP datagram may have left this id behind */
			bpf_map_delete_elem(&esp_udp_frags, k);
			return 0;
		}
		bpf_map_update_elem(&esp_udp_frags, k, &one, BPF_ANY);
		return 1;
	}
	return bpf_map_lookup_elem(&esp_udp_frags, k) != NULL;
}

/* The selector fields of a packet for the gateway, as the SADB matches them (esp_pkt_sel). */
struct lsel {
	__u32 src[4], dst[4];     /* network order; IPv4 in word 0 */
	__u16 sport, dport;       /* host order; ICMP type and code */
	__u8 family, proto;
};

/* Ports, ICMP type and code, the Mobility Header type: from a first (or no) fragment only. */
static __always_inline void lsel_ports(struct lsel *p, const __u8 *l4, void *end)
{
	switch (p->proto) {
	case IPPROTO_TCP: case IPPROTO_UDP: case IPPROTO_SCTP: case IPPROTO_UDPLITE:
		if ((void *)(l4 + 4) <= end) {
			p->sport = (__u16)(l4[0] << 8 | l4[1]);
			p->dport = (__u16)(l4[2] << 8 | l4[3]);
		}
		break;
	case IPPROTO_ICMP: case 58:           /* ICMPv6 */
		if ((void *)(l4 + 2) <= end) {
			p->sport = l4[0];
			p->dport = l4[1];
		}
		break;
	case 135:                             /* Mobility Header */
		if ((void *)(l4 + 3) <= end)
			p->sport = l4[2];
		break;
	default:
		break;
	}
}

static __always_inline int lspd_match(const struct dp_xdp_lspd *r, const struct lsel *p)
{
	if ((r->family && r->family != p->family) || (r->proto && r->proto != p->proto))
		return 0;
	if (p->sport < r->sport_lo || p->sport > r->sport_hi ||
	    p->dport < r->dport_lo || p->dport > r->dport_hi)
		return 0;
#pragma unroll
	for (int w = 0; w < 4; w++)
		if ((p->src[w] & r->smask[w]) != r->src[w] || (p->dst[w] & r->dmask[w]) != r->dst[w])
			return 0;
	return 1;
}

/* Plaintext from the outside addressed to the gateway itself (a first fragment or a whole
 * datagram): the first entry of the gateway's inbound SPD that matches decides. A later fragment
 * is never looked at: the kernel delivers nothing of a datagram whose first fragment was dropped
 * here. */
static __always_inline int local_in(struct xdp_md *ctx, const struct dp_xdp_if *ifc,
				    const struct lsel *p)
{
	__u32 zero = 0, key = ifc->xsk_base + ctx->rx_queue_index;
	__u32 *conf = bpf_map_lookup_elem(&local_spd_conf, &zero);
	struct dp_xdp_local_drops *d;
	__u32 n, base, i;
	__u8 verdict = 0;

	/* IKE stays with charon whatever the policies say (rule 8): it is what negotiates them */
	if (p->proto == IPPROTO_UDP && (p->dport == 500 || p->dport == DP_NATT_PORT))
		return to_kernel();
	if (!conf || !*conf)
		return to_kernel();
	n = *conf & DP_XDP_LSPD_N_MASK;
	base = *conf & DP_XDP_LSPD_HALF ? DP_XDP_LSPD_MAX : 0;
	for (i = 0; i < DP_XDP_LSPD_MAX && i < n; i++) {
		__u32 k = base + i;
		const struct dp_xdp_lspd *r = bpf_map_lookup_elem(&local_spd, &k);

		if (!r)
			break;
		if (lspd_match(r, p)) {
			verdict = r->verdict;
			break;
		}
	}
	if (!verdict) {
		/* none matched: a policy left out of the table may cover this address (xdp_shared.h);
		 * an address gone from the map since it was looked up fails closed */
		struct dp_xdp_addr a = { .family = p->family };
		__u32 *v;

		__builtin_memcpy(a.addr, p->dst, 16);
		v = bpf_map_lookup_elem(&local_addrs, &a);
		verdict = !v || (*v & DP_XDP_ADDR_OVERFLOW) ? DP_XDP_LSPD_PROTECT : DP_XDP_LSPD_BYPASS;
	}
	if (verdict == DP_XDP_LSPD_BYPASS)
		return to_kernel();
	d = bpf_map_lookup_elem(&local_drops, &key);
	if (d) {
		if (verdict == DP_XDP_LSPD_DISCARD)
			d->discard++;
		else
			d->protect++;
	}
	return XDP_DROP;
}

static __always_inline int local_in4(struct xdp_md *ctx, const struct dp_xdp_if *ifc,
				     const struct iphdr *ip, const __u8 *l4, void *end)
{
	struct lsel p = { .family = DP_AF_INET, .proto = ip->protocol };

	if (ip->frag_off & bpf_htons(0x1fff))
		return to_kernel();
	p.src[0] = ip->saddr;
	p.dst[0] = ip->daddr;
	lsel_ports(&p, l4, end);
	return local_in(ctx, ifc, &p);
}

/* IPv6: the upper-layer header behind at most DP_XDP_EXT_MAX extension headers (more: the last one
 * stands for the protocol, and only a policy for any protocol and port matches). */
#define DP_XDP_EXT_MAX 4
static __always_inline int local_in6(struct xdp_md *ctx, const struct dp_xdp_if *ifc,
				     const struct ipv6hdr *ip6, const __u8 *l4, void *end)
{
	struct lsel p = { .family = DP_AF_INET6, .proto = ip6->nexthdr };

	__builtin_memcpy(p.src, &ip6->saddr, 16);
	__builtin_memcpy(p.dst, &ip6->daddr, 16);
#pragma unroll
	for (int i = 0; i < DP_XDP_EXT_MAX; i++) {
		if (p.proto != 0 && p.proto != 43 && p.proto != 60 && p.proto != 44)
			break;
		if ((void *)(l4 + 8) > end)
			return local_in(ctx, ifc, &p);
		if (p.proto == 44) {
			if ((l4[2] << 8 | l4[3]) & 0xfff8)
				return to_kernel();
			p.proto = l4[0];
			l4 += 8;
		} else {
			p.proto = l4[0];
			l4 += ((__u32)l4[1] + 1) * 8;
		}
	}
	if (p.proto != 0 && p.proto != 43 && p.proto != 60 && p.proto != 44)
		lsel_ports(&p, l4, end);
	return local_in(ctx, ifc, &p);
}

/* IPv4 after the Ethernet header at eth: to the dataplane, to the kernel, or dropped. */
static __always_inline int classify4(struct xdp_md *ctx, const struct dp_xdp_if *ifc, int outside,
				     struct ethhdr *eth, void *end)
{
	struct iphdr *ip = (void *)(eth + 1);
	void *l4;

	if ((void *)(ip + 1) > end || ip->ihl < 5)
		return to_kernel();
	l4 = (void *)ip + ip->ihl * 4;
	if (outside && seg_foreign4(ip))
		return XDP_DROP;
	if (outside) {
		/* Whole (unfragmented) ESP and AH: the SPI decides. Fragments go to the
		 * dataplane, which reassembles them first. A frame shorter than its IP
		 * length is the dataplane's to count (truncated). */
		int whole = !(ip->frag_off & bpf_htons(0x3fff)) &&
			    (void *)ip + bpf_ntohs(ip->tot_len) <= end;

		if (ip->protocol == IPPROTO_ESP || ip->protocol == IPPROTO_AH) {
			__u32 *spi = ip->protocol == IPPROTO_ESP ? l4 : l4 + 4;

			if (whole && (void *)(spi + 1) <= end &&
			    spi_unknown(ctx, ifc, ip->protocol, DP_AF_INET, &ip->daddr, spi))
				return XDP_DROP;
			return to_dataplane(ctx, ifc);
		}
		/* DSMIPv6 (RFC 5555 section 4.1): a mobile node on an IPv4 network sends its
		 * ESP-protected Binding Update in IPv6 in IPv4 to the home agent's IPv4 address, or
		 * in UDP to port 4191 when a NAT may be in the way */
		if ((ip->protocol == IPPROTO_IPV6 || ip->protocol == IPPROTO_UDP) && whole &&
		    is_local4(ip->daddr)) {
			const __u8 *v6 = (const __u8 *)l4;

			if (ip->protocol == IPPROTO_UDP) {
				const struct udphdr *uh = l4;

				v6 += sizeof(*uh);
				if ((void *)(uh + 1) > end || uh->dest != bpf_htons(DP_DSMIP_PORT))
					v6 = NULL;
			}
			if (v6 && (void *)(v6 + 7) <= end && v6[0] >> 4 == 6 && v6[6] == IPPROTO_ESP)
				return to_dataplane(ctx, ifc);
		}
		if (ip->protocol == IPPROTO_UDP && is_local4(ip->daddr)) {
			if (!(ip->frag_off & bpf_htons(0x3fff))) {
				if (is_esp_in_udp(l4, end)) {
					if (whole && spi_unknown(ctx, ifc, IPPROTO_ESP, DP_AF_INET,
								 &ip->daddr, l4 + 8))
						return XDP_DROP;
					return to_dataplane(ctx, ifc);
				}
			} else {
				struct dp_xdp_frag_key k = { .family = DP_AF_INET };

				k.id = ip->id;
				__builtin_memcpy(k.src, &ip->saddr, 4);
				__builtin_memcpy(k.dst, &ip->daddr, 4);
				if (udp_frag_is_esp(&k, !(ip->frag_off & bpf_htons(0x1fff)),
						    l4, end))
					return to_dataplane(ctx, ifc);
			}
		}
	}
	/* 224.0.0.0/4 multicast and limited broadcast */
	if ((ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) ||
	    ip->daddr == 0xffffffff)
		return to_kernel();
	if (is_local4(ip->daddr))
		return outside ? local_in4(ctx, ifc, ip, l4, end) : to_kernel();
	return to_dataplane(ctx, ifc);
}

/* IPv6 after the Ethernet header at eth: to the dataplane, to the kernel, or dropped. */
static __always_inline int classify6(struct xdp_md *ctx, const struct dp_xdp_if *ifc, int outside,
				     struct ethhdr *eth, void *end)
{
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	void *l4;

	if ((void *)(ip6 + 1) > end)
		return to_kernel();
	l4 = ip6 + 1;
	if (outside) {
		int whole = (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) <= end;

		if (ip6->nexthdr == IPPROTO_ESP || ip6->nexthdr == IPPROTO_AH) {
			__u32 *spi = ip6->nexthdr == IPPROTO_ESP ? l4 : l4 + 4;

			if (whole && (void *)(spi + 1) <= end &&
			    spi_unknown(ctx, ifc, ip6->nexthdr, DP_AF_INET6, &ip6->daddr, spi))
				return XDP_DROP;
			return to_dataplane(ctx, ifc);
		}
		if (ip6->nexthdr == IPPROTO_UDP && is_local6(&ip6->daddr) &&
		    is_esp_in_udp(l4, end)) {
			if (whole && spi_unknown(ctx, ifc, IPPROTO_ESP, DP_AF_INET6, &ip6->daddr,
						 l4 + 8))
				return XDP_DROP;
			return to_dataplane(ctx, ifc);
		}
		/* Mobile IPv6 (RFC 6275 6.3): a Binding Update carries its Home Address option in
		 * a Destination Options header in front of ESP */
		if (ip6->nexthdr == 60) {
			__u8 *dh = l4;
			__u32 hl;
			__u32 *spi;

			if ((void *)(dh + 8) > end)
				return to_kernel();
			hl = ((__u32)dh[1] + 1) * 8;
			if (dh[0] == IPPROTO_ESP || dh[0] == IPPROTO_AH) {
				spi = (void *)(dh + hl + (dh[0] == IPPROTO_AH ? 4 : 0));
				if ((void *)(spi + 1) > end)
					return to_kernel();
				if (whole && spi_unknown(ctx, ifc, dh[0], DP_AF_INET6, &ip6->daddr, spi))
					return XDP_DROP;
				return to_dataplane(ctx, ifc);
			}
		}
		if (ip6->nexthdr == 44) {           /* Fragment header (RFC 8200 4.5) */
			__u8 *fh = l4;

			if ((void *)(fh + 8) > end)
				return to_kernel();
			if (fh[0] == IPPROTO_ESP || fh[0] == IPPROTO_AH)
				return to_dataplane(ctx, ifc);
			if (fh[0] == IPPROTO_UDP && is_local6(&ip6->daddr)) {
				struct dp_xdp_frag_key k = { .family = DP_AF_INET6 };

				__builtin_memcpy(&k.id, fh + 4, 4);
				__builtin_memcpy(k.src, &ip6->saddr, 16);
				__builtin_memcpy(k.dst, &ip6->daddr, 16);
				if (udp_frag_is_esp(&k, !((fh[2] << 8 | fh[3]) & 0xfff8),
						    fh + 8, end))
					return to_dataplane(ctx, ifc);
			}
		}
	}
	/* ff00::/8 multicast (ND solicitations, MLD) and link-local fe80::/10 */
	if (ip6->daddr.s6_addr[0] == 0xff ||
	    (ip6->daddr.s6_addr[0] == 0xfe && (ip6->daddr.s6_addr[1] & 0xc0) == 0x80))
		return to_kernel();
	/* neighbour discovery addressed to a unicast address (NS for NUD, NA, redirect) */
	if (ip6->nexthdr == IPPROTO_ICMPV6) {
		__u8 *type = l4;

		if ((void *)(type + 1) > end)
			return to_kernel();
		if (*type >= 133 && *type <= 137)
			return to_kernel();
	}
	/* before the hop-by-hop rule: a hop-by-hop header must not carry plaintext past the SPD */
	if (is_local6(&ip6->daddr))
		return outside ? local_in6(ctx, ifc, ip6, l4, end) : to_kernel();
	/* hop-by-hop options (MLD, router alert) belong to the kernel */
	if (ip6->nexthdr == 0)
		return to_kernel();
	return to_dataplane(ctx, ifc);
}

SEC("xdp")
int xipsec_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 ifindex = ctx->ingress_ifindex;
	struct dp_xdp_if *ifc;
	int outside;

	ifc = bpf_map_lookup_elem(&ifaces, &ifindex);
	if (!ifc)
		return to_kernel();
	outside = ifc->role == DP_ROLE_OUTSIDE;
	if ((void *)(eth + 1) > end)
		return to_kernel();

	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return classify4(ctx, ifc, outside, eth, end);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return classify6(ctx, ifc, outside, eth, end);
	/* ARP, LLDP, VLAN-tagged and everything else */
	return to_kernel();
}

char _license[] SEC("license") = "GPL";
