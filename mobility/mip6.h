/* mobility/mip6.h: the Mobile IPv6 wire formats a home agent reads and writes (RFC 6275): the
 * Mobility Header and its checksum (§6.1, §6.1.1), the Binding Update (§6.1.7), the Binding
 * Acknowledgement (§6.1.8), the Binding Error (§6.1.9), the mobility options (§6.2), the Home Address
 * destination option (§6.3) and the type 2 routing header (§6.4). No I/O, no allocation, no state:
 * functions take a packet (or a buffer to build one in) and return. The home agent's rules are in
 * mip6_ha.h.
 *
 * Packets are whole IPv6 packets starting at the IPv6 header, as libesp leaves them after removing
 * transport-mode ESP (dataplane/engine/esp.h): a Binding Update from a mobile node away from home is
 * IPv6 / Destination Options (Home Address option) / Mobility Header once decrypted, and a Binding
 * Acknowledgement built here is IPv6 / type 2 routing header / Mobility Header, ready for libesp's
 * outbound transport mode, which inserts ESP after the routing header (RFC 3776 §3).
 *
 * Addresses are 16 bytes in network order. Every malformed input has its own drop reason
 * (enum mip6_drop, named by mip6_drop_name); the home agent's rules add theirs to the same list.
 * Threading: none of these functions keeps state; any thread may call them. */
#ifndef XIPSEC_MIP6_H
#define XIPSEC_MIP6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIP6_PROTO_MH      135  /* IPv6 next header of the Mobility Header */
#define MIP6_PROTO_NONE    59   /* the MH's Payload Proto: nothing follows (§6.1.1) */
#define MIP6_OPT_HAO       201  /* Home Address destination option type (§6.3) */
#define MIP6_RH_TYPE2      2    /* type 2 routing header (§6.4) */

/* MH types (§6.1.2-6.1.9). */
enum mip6_mh_type {
	MIP6_MH_BRR  = 0,  /* Binding Refresh Request */
	MIP6_MH_HOTI = 1,  /* Home Test Init */
	MIP6_MH_COTI = 2,  /* Care-of Test Init */
	MIP6_MH_HOT  = 3,  /* Home Test */
	MIP6_MH_COT  = 4,  /* Care-of Test */
	MIP6_MH_BU   = 5,  /* Binding Update */
	MIP6_MH_BA   = 6,  /* Binding Acknowledgement */
	MIP6_MH_BE   = 7,  /* Binding Error */
	MIP6_MH_KNOWN = 8  /* types below this are RFC 6275's; others are unknown here */
};

/* Mobility options (§6.2). */
enum mip6_opt {
	MIP6_OPT_PAD1   = 0,
	MIP6_OPT_PADN   = 1,
	MIP6_OPT_BRA    = 2,  /* Binding Refresh Advice: 2 bytes, alignment 2n */
	MIP6_OPT_ALTCOA = 3,  /* Alternate Care-of Address: 16 bytes, alignment 8n+6 */
	MIP6_OPT_NONCE  = 4,  /* Nonce Indices: 4 bytes, alignment 2n */
	MIP6_OPT_AUTH   = 5,  /* Binding Authorization Data: alignment 8n+2 */
	MIP6_OPT_MNP    = 6   /* Mobile Network Prefix (RFC 3963 4.3): 18 bytes, alignment 8n+4 */
};

/* Binding Update flags (the 16-bit word after the sequence number, §6.1.7). */
#define MIP6_BU_A 0x8000u  /* Acknowledge */
#define MIP6_BU_H 0x4000u  /* Home Registration */
#define MIP6_BU_L 0x2000u  /* Link-Local Address Compatibility */
#define MIP6_BU_K 0x1000u  /* Key Management Mobility Capability */
#define MIP6_BU_M 0x0800u  /* MAP Registration (RFC 5380) */
#define MIP6_BU_R 0x0400u  /* Mobile Router (RFC 3963) */
/* Binding Acknowledgement flags (the byte after the status, §6.1.8). */
#define MIP6_BA_K 0x80u    /* Key Management Mobility Capability */
#define MIP6_BA_R 0x40u    /* Mobile Router (RFC 3963 4.2): the home agent supports mobile routers */

/* Binding Acknowledgement status (§6.1.8; 140 is RFC 3963's). Below 128: accepted. */
enum mip6_status {
	MIP6_ST_ACCEPTED             = 0,
	MIP6_ST_UNSPECIFIED          = 128,
	MIP6_ST_PROHIBITED           = 129,  /* administratively prohibited */
	MIP6_ST_INSUFFICIENT         = 130,  /* insufficient resources */
	MIP6_ST_HR_NOT_SUPPORTED     = 131,  /* home registration not supported */
	MIP6_ST_NOT_HOME_SUBNET      = 132,
	MIP6_ST_NOT_HA_FOR_MN        = 133,  /* not home agent for this mobile node */
	MIP6_ST_DAD_FAILED           = 134,
	MIP6_ST_SEQ_OUT_OF_WINDOW    = 135,
	MIP6_ST_REG_TYPE_CHANGE      = 139,  /* registration type change disallowed */
	MIP6_ST_MR_NOT_PERMITTED     = 140,  /* mobile router operation not permitted (RFC 3963) */
	MIP6_ST_INVALID_PREFIX       = 141,  /* invalid prefix (RFC 3963) */
	MIP6_ST_PREFIX_NOT_AUTH      = 142,  /* not authorized for prefix (RFC 3963) */
	MIP6_ST_FWD_SETUP_FAILED     = 143,  /* forwarding setup failed: no prefix known (RFC 3963) */
	MIP6_ST_INVALID_COA          = 174   /* invalid care-of address (RFC 6275's, in the registry) */
};
/* Binding Error status (§6.1.9). */
enum mip6_be_status {
	MIP6_BE_UNKNOWN_HAO_BINDING = 1,  /* a Home Address option with no binding for it */
	MIP6_BE_UNKNOWN_MH_TYPE     = 2
};

/* Why a packet (or, from mip6_ha.h, a Binding Update) is dropped. One list for the parser and the
 * home agent's rules, so one counter array covers both. */
enum mip6_drop {
	MIP6_DROP_NONE = 0,
	/* the IPv6 packet */
	MIP6_DROP_TRUNCATED,         /* shorter than its IPv6 header, payload length or an extension header */
	MIP6_DROP_NOT_IPV6,          /* version is not 6 */
	MIP6_DROP_BAD_EXT_HDR,       /* hop-by-hop not first, a second routing header, or options that overrun */
	MIP6_DROP_FRAGMENT,          /* a fragment: reassembly is the caller's */
	MIP6_DROP_BAD_IPV6_OPT,      /* an unknown hop-by-hop or destination option whose type says
	                              * "discard" (RFC 8200 §4.2) */
	MIP6_DROP_BAD_HAO,           /* Home Address option: length not 16, alignment not 8n+6, two of them,
	                              * or in a destination options header before the routing header */
	MIP6_DROP_HAO_NOT_UNICAST,   /* the home address is multicast, unspecified, loopback or link-local */
	MIP6_DROP_BAD_RH2,           /* type 2 routing header: length not 2 or segments left above 1 */
	MIP6_DROP_BAD_ROUTING_HDR,   /* another routing type with segments left: not for this node */
	MIP6_DROP_NOT_MH,            /* the upper-layer header is not a Mobility Header */
	/* the Mobility Header */
	MIP6_DROP_BAD_HDR_LEN,       /* MH header length beyond the payload or below the type's minimum */
	MIP6_DROP_BAD_CHECKSUM,
	MIP6_DROP_BAD_PAYLOAD_PROTO, /* Payload Proto is not 59 */
	MIP6_DROP_UNKNOWN_MH_TYPE,   /* a type RFC 6275 does not define (a Binding Error status 2 is due) */
	MIP6_DROP_BAD_OPTION,        /* a mobility option overruns the message, has a wrong length, or repeats */
	MIP6_DROP_BAD_OPTION_ALIGN,  /* a known mobility option off its alignment */
	/* the home agent's rules (mip6_ha.h) */
	MIP6_DROP_NOT_BU,            /* a valid MH message the home agent does not take (not a BU) */
	MIP6_DROP_UNPROTECTED,       /* a Binding Update that did not arrive under ESP (RFC 3776 §4) */
	MIP6_DROP_UNKNOWN_HOA,       /* a home address no mobile node is configured with */
	MIP6_DROP_WRONG_SA,          /* protected by an SA that is not this mobile node's signalling SA */
	MIP6_DROP_NOT_FOR_US,        /* sent to an address that is not one of the home agent's */
	MIP6_DROP_COA_NOT_UNICAST,   /* the care-of address is not unicast routable (§9.5.1) */
	MIP6_DROP_MAX
};

/* "truncated", "bad-checksum", ...: a stable token for counters and logs; "?" out of range. */
const char *mip6_drop_name(unsigned drop);
/* "accepted", "not-home-subnet", ...; "unknown" for a value with no name. */
const char *mip6_status_name(unsigned status);
/* The MH type's name ("binding-update", ...), "unknown" above 7. */
const char *mip6_mh_type_name(unsigned type);

#define MIP6_MAX_MNP 4   /* mobile network prefixes per mobile router */

/* A parsed Binding Update (§6.1.7). */
struct mip6_bu {
	uint16_t seq;
	uint16_t flags;          /* MIP6_BU_* (reserved bits as received) */
	uint16_t lifetime;       /* in 4-second units, as on the wire */
	bool has_alt_coa;
	uint8_t alt_coa[16];     /* the Alternate Care-of Address option */
	/* the Mobile Network Prefix options (RFC 3963 4.3), the first MIP6_MAX_MNP of n_mnp_seen */
	uint8_t n_mnp, n_mnp_seen;
	struct mip6_mnp { uint8_t addr[16]; uint8_t len; } mnp[MIP6_MAX_MNP];
};

/* A parsed Binding Acknowledgement (§6.1.8). */
struct mip6_ba {
	uint8_t status;
	uint8_t flags;           /* MIP6_BA_K, MIP6_BA_R */
	uint16_t seq;
	uint16_t lifetime;       /* 4-second units */
	bool has_refresh;
	uint16_t refresh;        /* Binding Refresh Advice, 4-second units */
};

/* A parsed Binding Error (§6.1.9). */
struct mip6_be {
	uint8_t status;
	uint8_t hoa[16];
};

/* What mip6_parse finds in an IPv6 packet carrying a Mobility Header. */
struct mip6_pkt {
	uint8_t src[16], dst[16];  /* the IPv6 header's */
	bool has_hao;
	uint8_t hoa[16];           /* the Home Address option's address */
	bool has_rh2;
	uint8_t rh2_addr[16];      /* the type 2 routing header's home address */
	uint8_t rh2_segleft;
	uint32_t mh_off;           /* offset of the Mobility Header in the packet */
	uint32_t mh_len;           /* its length ((Header Len + 1) * 8) */
	uint8_t mh_type;
	union {
		struct mip6_bu bu;  /* mh_type MIP6_MH_BU */
		struct mip6_ba ba;  /* mh_type MIP6_MH_BA */
		struct mip6_be be;  /* mh_type MIP6_MH_BE */
	} m;
};

/* The addresses a mobile node's packet is selected by (RFC 3776 section 4, RFC 4877 section 4: its
 * SAs and policies name its home address, not its care-of address): src becomes the address of the
 * Home Address option, dst that of a type 2 routing header with one segment left (the final
 * destination), each only when the IPv6 packet at pkt (len bytes, bytes past its payload length
 * ignored) carries exactly one well-formed instance before any Fragment header; src and dst (the
 * caller's selector, the IPv6 header's addresses) are left as they are otherwise, so a check against
 * an SA made for the home address fails and the packet is dropped, never matched more loosely. Only
 * for packets whose origin is authenticated or our own: the check of a decapsulated transport-mode
 * packet (the SA's selector binds the home address to its keys) and the home agent's signalling; a
 * plaintext packet's Home Address option is the sender's claim and never selects a policy. */
void mip6_sel_addrs(const uint8_t *pkt, uint32_t len, uint8_t src[16], uint8_t dst[16]);

/* Parse pkt[0..len): the IPv6 header, its extension headers (a Home Address option in a
 * destination options header after any routing header; a type 2 routing header), and the Mobility
 * Header at the end of the chain: length, checksum (over the pseudo-header with the home address as
 * source when a Home Address option is present, and the routing header's address as destination
 * when a type 2 routing header has segments left, §6.1.1), payload proto, type, and for BU, BA and
 * BE the message and its options (unknown options are skipped, §6.2.1). Bytes after the IPv6
 * payload length are ignored. Types 0-4 are checked up to their minimum length and returned with
 * nothing else parsed. Returns MIP6_DROP_NONE with *out filled, or the reason. */
enum mip6_drop mip6_parse(const uint8_t *pkt, uint32_t len, struct mip6_pkt *out);

/* The value of the MH Checksum field for the mh_len bytes at mh (whose checksum field is taken as
 * zero), between src and dst (the pseudo-header's addresses, RFC 8200 §8.1). */
uint16_t mip6_mh_checksum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *mh,
			  uint32_t mh_len);

/* The checksum of the upper-layer message of protocol nh at msg[0..len) (its checksum field zero)
 * between src and dst, the pseudo-header's addresses (RFC 8200 §8.1): ICMPv6's, for instance. */
uint16_t mip6_l4_checksum(uint8_t nh, const uint8_t src[16], const uint8_t dst[16], const uint8_t *msg,
			  uint32_t len);

/* Whether a is a unicast routable address: not unspecified, loopback, multicast or link-local. */
bool mip6_addr_unicast_routable(const uint8_t a[16]);

/* What a Binding Acknowledgement says and where it goes. */
struct mip6_ba_params {
	uint8_t src[16];        /* the home agent's address the Binding Update was sent to */
	uint8_t dst[16];        /* the IPv6 destination: the Binding Update's source (the care-of address) */
	bool rh2;               /* a type 2 routing header with hoa (when dst is not the home address) */
	uint8_t hoa[16];
	uint8_t status;
	bool k;
	bool r;                 /* the R flag: a mobile router's Binding Update, and routers served */
	uint16_t seq;
	uint16_t lifetime;      /* 4-second units */
	uint16_t refresh;       /* Binding Refresh Advice in 4-second units; 0 = none */
	uint8_t hop_limit;      /* 0 = 64 */
};
#define MIP6_BA_MAX_LEN (40 + 24 + 16)

/* Build a Binding Acknowledgement as a whole IPv6 packet in buf[0..cap): IPv6 / [type 2 routing
 * header, segments left 1] / Mobility Header with the checksum computed with the home address as
 * the pseudo-header's destination. Returns its length, or -ENOSPC. */
int mip6_build_ba(uint8_t *buf, size_t cap, const struct mip6_ba_params *p);

/* What a Binding Error says and where it goes (§9.3.3: to the offending packet's source). */
struct mip6_be_params {
	uint8_t src[16], dst[16];
	uint8_t status;         /* enum mip6_be_status */
	uint8_t hoa[16];        /* the home address of the offending packet's Home Address option, or zero */
	uint8_t hop_limit;      /* 0 = 64 */
	bool rh2;               /* a type 2 routing header with hoa: to a mobile node away from home, so
	                         * that its signalling SA (selected by the home address) protects it */
};
#define MIP6_BE_MAX_LEN (40 + 24 + 24)

/* Build a Binding Error as a whole IPv6 packet: IPv6 / [type 2 routing header] / Mobility Header.
 * Returns its length, or -ENOSPC. */
int mip6_build_be(uint8_t *buf, size_t cap, const struct mip6_be_params *p);

/* Build an ICMPv6 Parameter Problem, code 0 (erroneous header field, RFC 4443 §3.4), from src to
 * dst about the packet inv[0..inv_len), quoted as far as the IPv6 minimum MTU allows; pointer is
 * the offset in inv of the offending field. Returns the length, or -ENOSPC. */
#define MIP6_PP_MAX_LEN 1280
int mip6_build_param_problem(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
			     uint32_t pointer, const uint8_t *inv, uint32_t inv_len);

/* Build a Binding Refresh Request (§6.1.2) from the home agent's address src to a mobile node away
 * from home: IPv6 to its care-of address dst / type 2 routing header with hoa / Mobility Header,
 * so that its signalling SA, selected by the home address, protects it. Returns its length
 * (MIP6_BRR_LEN), or -ENOSPC. */
#define MIP6_BRR_LEN (40 + 24 + 8)
int mip6_build_brr(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
		   const uint8_t hoa[16]);

/* Build the Neighbor Solicitation of Duplicate Address Detection for target (RFC 4862 §5.4.2), as
 * the home agent sends it for a home address before it proxies it (RFC 6275 §10.4.1): from the
 * unspecified address to target's solicited-node multicast address, hop limit 255, no option.
 * Returns its length (MIP6_DAD_NS_LEN), or -ENOSPC. */
#define MIP6_DAD_NS_LEN (40 + 24)
int mip6_build_dad_ns(uint8_t *buf, size_t cap, const uint8_t target[16]);

/* Build a Binding Update as a whole IPv6 packet: IPv6 / [Destination Options with the Home Address
 * option, when hoa is not NULL] / Mobility Header [with an Alternate Care-of Address option when
 * bu->has_alt_coa], checksummed. The home agent never sends one: the benchmark's and the tests'
 * mobile nodes do. Returns the length, or -ENOSPC. */
int mip6_build_bu(uint8_t *buf, size_t cap, const uint8_t src[16], const uint8_t dst[16],
		  const uint8_t *hoa, const struct mip6_bu *bu);
#define MIP6_BU_MAX_LEN (40 + 24 + 32)

#endif
