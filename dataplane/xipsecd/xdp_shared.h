/* dataplane/xipsecd/xdp_shared.h: the layout of the maps shared between xipsecd and its XDP program
 * (dataplane/xipsecd/xdp_prog.bpf.c). Plain fixed-width types only: the header is compiled for BPF too. */
#ifndef XIPSEC_DP_XDP_SHARED_H
#define XIPSEC_DP_XDP_SHARED_H

#include <linux/types.h>

#define DP_XSKMAP_SIZE     128   /* inside sockets at [0, 64), outside at [64, 128) */
#define DP_XSK_BASE_INSIDE 0
#define DP_XSK_BASE_OUTSIDE 64
#define DP_MAX_QUEUES      64
#define DP_LOCAL_ADDR_MAX  1024
#define DP_NATT_PORT       4500
#define DP_DSMIP_PORT      4191  /* DSMIPv6's UDP encapsulation behind a NAT (RFC 5555 section 4.1) */

#define DP_AF_INET  2
#define DP_AF_INET6 10

enum dp_role { DP_ROLE_INSIDE = 1, DP_ROLE_OUTSIDE = 2 };

struct dp_xdp_if {
	__u32 role;       /* enum dp_role */
	__u32 xsk_base;   /* xskmap key of queue 0 */
};

struct dp_xdp_addr {
	__u8 family;      /* DP_AF_INET / DP_AF_INET6 */
	__u8 pad[3];
	__u8 addr[16];    /* IPv4 in the first 4 bytes, rest zero */
};

/* A fragmented ESP-in-UDP datagram seen by its first fragment: its later fragments carry no UDP
 * header, so the program remembers the datagram to send them to the dataplane too. */
#define DP_XDP_FRAG_MAX 1024
struct dp_xdp_frag_key {
	__u8 family;
	__u8 pad[3];
	__u32 id;         /* IPv4 identification or IPv6 fragment identification, as on the wire */
	__u8 src[16];
	__u8 dst[16];
};

enum { DP_XDP_STAT_PASS = 0, DP_XDP_STAT_REDIRECT = 1, DP_XDP_STAT_MAX = 2 };

/* The inbound SAs the dataplane holds, as the program sees them on the wire: ESP and AH (alone or
 * ESP-in-UDP) from the outside whose (SPI, protocol, destination) is not here is dropped in the
 * program, before it costs the dataplane a copy and a wake-up (a flood of made-up SPIs is the
 * cheapest attack there is). xipsecd keeps the map a superset of its workers' inbound table: a key
 * is added before the table that holds its SA is published and removed only after the table
 * without it is, so the program never drops what a worker would accept. */
struct dp_xdp_spi_key {
	__u32 spi;        /* as on the wire (network order) */
	__u8 proto;       /* IPPROTO_ESP / IPPROTO_AH */
	__u8 family;      /* DP_AF_INET / DP_AF_INET6 */
	__u8 pad[2];
	__u8 dst[16];     /* IPv4 in the first 4 bytes, rest zero */
};
#define DP_XDP_SPI_MAX 65536      /* default size; xipsecd sizes it to the SADB before loading */

/* xdp_conf[0]: switches set by xipsecd. The SPI filter is on only while the map holds every
 * inbound SA of the dataplane (off until the first table is in, and for good if an insert fails:
 * the dataplane then sees and counts unknown SPIs itself). */
#define DP_XDP_CONF_SPI_FILTER 1u

/* spi_drops[xskmap key]: unknown-SPI frames dropped by the program, per interface and RX queue
 * (the queue's worker counts them as received and dropped, reason bad_spi). */

/* The gateway's own inbound SPD (RFC 4301 section 5.2): plaintext from the outside addressed to
 * the gateway itself meets the inbound policies whose selectors cover one of its addresses, in the
 * SPD's order (priority, then id), first match wins; the program checks it because such traffic
 * goes to the kernel, never through the dataplane's SPD (rule 8). xipsecd builds the table from the
 * SADB (dp_xdp.c) into the half of `local_spd` the program is not reading, then flips
 * `local_spd_conf` (one 32-bit word: count, half, overflow), so the program sees the old table or
 * the new one, never a mix. IKE (UDP 500/4500) always passes; ARP and ND never get here. */
#define DP_XDP_LSPD_MAX 256       /* entries per half */
enum { DP_XDP_LSPD_BYPASS = 1, DP_XDP_LSPD_PROTECT = 2, DP_XDP_LSPD_DISCARD = 3 };
struct dp_xdp_lspd {
	__u32 src[4], smask[4];   /* network order, src already masked; IPv4 in word 0 */
	__u32 dst[4], dmask[4];
	__u16 sport_lo, sport_hi; /* host order; ICMP type, code as the SADB matches them */
	__u16 dport_lo, dport_hi;
	__u8 family;              /* DP_AF_INET / DP_AF_INET6, 0 = either */
	__u8 proto;               /* 0 = any */
	__u8 verdict;             /* DP_XDP_LSPD_* */
	__u8 pad;
};
/* local_spd_conf[0]: bits 0-15 the number of entries, bit 16 the half in use (entries at
 * DP_XDP_LSPD_MAX and up). When more policies cover the gateway than the table holds, the first
 * DP_XDP_LSPD_MAX in the SPD's order go in, and each own address a policy left out covers has
 * DP_XDP_ADDR_OVERFLOW in its local_addrs value: a packet to it that matches none of the entries
 * may match a policy left out, and is dropped (fail closed, counted as a PROTECT drop). A packet
 * to another own address keeps the SPD's answer: no policy covers it but those in the table. So
 * hundreds of tunnels whose selectors hold the gateway's inside address do not cut its outside
 * address off (ICMP, management, routing). */
#define DP_XDP_LSPD_N_MASK 0xffffu
#define DP_XDP_LSPD_HALF   (1u << 16)
/* local_addrs values: bit 0 always set, and this when policies covering the address were left out */
#define DP_XDP_ADDR_OVERFLOW (1u << 1)

/* local_drops[xskmap key], per CPU: frames the table dropped, per interface and RX queue; the
 * control thread adds them to the queue's worker as received and dropped with the reason the
 * dataplane's own SPD gives plaintext (policy_mismatch for PROTECT, policy_discard). */
struct dp_xdp_local_drops {
	__u64 protect;
	__u64 discard;
};

#endif
