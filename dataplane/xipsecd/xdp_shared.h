/* dataplane/xipsecd/xdp_shared.h: the layout of the maps shared between xipsecd and its XDP program
 * (dataplane/xdp_prog.bpf.c). Plain fixed-width types only: the header is compiled for BPF too. */
#ifndef XIPSEC_DP_XDP_SHARED_H
#define XIPSEC_DP_XDP_SHARED_H

#include <linux/types.h>

#define DP_XSKMAP_SIZE     128   /* inside sockets at [0, 64), outside at [64, 128) */
#define DP_XSK_BASE_INSIDE 0
#define DP_XSK_BASE_OUTSIDE 64
#define DP_MAX_QUEUES      64
#define DP_LOCAL_ADDR_MAX  1024
#define DP_NATT_PORT       4500

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

#endif
