/* mobility/mip6_v4.h: Dual Stack Mobile IPv6 (RFC 5555) in libmip6, for a mobile node on an
 * IPv4-only network: the mobility options it adds (IPv4 Care-of Address §3.1.1 and IPv4 Home
 * Address §3.1.2 in the Binding Update; IPv4 Address Acknowledgement §3.2.1 and NAT Detection §3.2.2
 * in the Binding Acknowledgement), and the home agent's decision on such a Binding Update given the
 * IPv4 (and UDP) header it arrived in: the care-of address the binding takes, whether a NAT is in
 * the path, and the options its acknowledgement carries. No I/O, no state: the dataplane strips the
 * outer header, hands what it saw here, and puts the acknowledgement into the same encapsulation.
 *
 * A binding's IPv4 care-of address is kept as its IPv4-mapped IPv6 address (::ffff:a.b.c.d), so the
 * binding cache, its counters and its listings need no second address family. */
#ifndef XIPSEC_MIP6_V4_H
#define XIPSEC_MIP6_V4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mobility/mip6.h"
#include "mobility/mip6_ha.h"

/* Mobility option types (RFC 5555 section 9); all four are 6 bytes long, alignment 4n. */
#define MIP6_OPT_V4HOA 29
#define MIP6_OPT_V4ACK 30
#define MIP6_OPT_NATD  31
#define MIP6_OPT_V4COA 32

#define MIP6_V4_UDP_PORT      4500  /* UDP encapsulation's port (section 4.1) */
#define MIP6_V4_NAT_REFRESH_S 110   /* NATKATIMEOUT: keepalive interval advised behind a NAT */

/* IPv4 Address Acknowledgement status (section 3.2.1). */
enum mip6_v4_ack {
	MIP6_V4ACK_SUCCESS      = 0,
	MIP6_V4ACK_UNSPECIFIED  = 128,
	MIP6_V4ACK_PROHIBITED   = 129,  /* administratively prohibited */
	MIP6_V4ACK_INCORRECT    = 130,  /* incorrect IPv4 home address */
	MIP6_V4ACK_INVALID      = 131,  /* invalid IPv4 address */
	MIP6_V4ACK_NO_DYNAMIC   = 132,  /* dynamic IPv4 home address assignment not available */
	MIP6_V4ACK_PREFIX_UNAUTH = 133  /* prefix allocation unauthorized */
};

/* The RFC 5555 options of one Binding Update. */
struct mip6_v4_bu {
	bool has_coa;
	uint8_t coa[4];          /* IPv4 Care-of Address option */
	bool has_hoa;
	uint8_t hoa[4];          /* IPv4 Home Address option: 0.0.0.0 asks for one to be assigned */
	uint8_t hoa_plen;        /* its Prefix-len (6 bits) */
	bool hoa_p;              /* its P flag (a mobile network prefix, NEMO) */
};

/* Read the RFC 5555 options of the Binding Update whose Mobility Header is mh[0..mh_len) (as
 * mip6_parse found it: struct mip6_pkt's mh_off and mh_len; its other options are mip6_parse's).
 * MIP6_DROP_NONE with *out filled, MIP6_DROP_BAD_OPTION for an option that overruns the message,
 * has a length other than 6 or repeats, MIP6_DROP_BAD_OPTION_ALIGN for one off 4n. */
enum mip6_drop mip6_v4_bu_opts(const uint8_t *mh, uint32_t mh_len, struct mip6_v4_bu *out);

/* The IPv4 header (and UDP header, udp) a Binding Update arrived in, as the home agent saw it. */
struct mip6_v4_outer {
	uint8_t src[4];
	bool udp;
	uint16_t sport;          /* host order, when udp */
};

/* Why the home agent does not take an IPv4-encapsulated Binding Update. */
enum mip6_v4_refusal {
	MIP6_V4_OK = 0,
	MIP6_V4_NO_COA_OPTION,   /* no IPv4 Care-of Address option (section 4.1 makes it mandatory) */
	MIP6_V4_COA_NOT_UNICAST, /* the option's or the outer header's source is not unicast */
	MIP6_V4_MALFORMED,       /* not a Binding Update, a Home Address option, a bad IPv4 option */
	MIP6_V4_REFUSAL_MAX
};

/* "no-ipv4-coa-option", ...; "?" out of range. */
const char *mip6_v4_refusal_name(unsigned r);

/* What an IPv4-encapsulated Binding Update registers and what its acknowledgement says. */
struct mip6_v4_reg {
	uint8_t coa[16];         /* the binding's care-of address: the outer source, IPv4-mapped */
	bool udp;                /* the tunnel and the acknowledgement go in UDP, to port */
	uint16_t port;           /* the outer UDP source port (a NAT's), host order */
	bool nat;                /* the option's address is not the outer source: a NAT rewrote it */
	bool natd_option;        /* the acknowledgement carries NAT Detection (F = nat) */
	uint32_t nat_refresh_s;  /* its Refresh time when nat (0 otherwise) */
	bool ack_option;         /* the acknowledgement carries IPv4 Address Acknowledgement */
	uint8_t ack_status;      /* enum mip6_v4_ack */
	uint8_t ack_plen;
	uint8_t ack_hoa[4];
};

/* The home agent's decision (section 4.3): the binding follows the outer header's source, which is
 * what a NAT between them lets through (its address and port); the option's address, compared with
 * it, tells whether there is a NAT (section 4.2.2) and NAT Detection is answered to any Binding
 * Update that came in UDP or through a NAT. This home agent assigns no IPv4 home address: an IPv4
 * Home Address option is acknowledged with 132 (a dynamic one asked for) or 129 (a static one),
 * and the IPv6 binding is decided on as usual. MIP6_V4_OK with *r filled, or the refusal. */
enum mip6_v4_refusal mip6_v4_register(const struct mip6_v4_bu *bu, const struct mip6_v4_outer *o,
				      struct mip6_v4_reg *r);

/* Append r's options (NAT Detection, then IPv4 Address Acknowledgement, each 8 bytes at a 4n
 * offset) to the Binding Acknowledgement ba[0..len) mip6_build_ba made, in a buffer of cap bytes:
 * the Mobility Header's length, the IPv6 payload length and the MH checksum are updated. Returns the
 * new length, -ENOSPC, or -EINVAL when ba is not such a packet. */
int mip6_v4_ba_append(uint8_t *ba, size_t len, size_t cap, const struct mip6_v4_reg *r);
#define MIP6_V4_BA_EXTRA 16   /* the most mip6_v4_ba_append adds */

/* The home agent on a Binding Update that came in IPv4 (o), decrypted (p, from mip6_parse, on SA
 * sa_id): its IPv4 options read and the registration decided (mip6_v4_register, into *r), then the
 * Binding Update decided by mip6_ha_bu as one from the IPv4-mapped care-of address with that
 * address as its Alternate Care-of Address and the IPv6 source as its home address, which is what
 * RFC 5555 section 4.1 makes of it (no Home Address option: the care-of address is not IPv6). The
 * ESP that protected it names the home address and the IPv4 Care-of Address option; a NAT's address
 * and port, which the binding takes, are outside it, as in IKE's NAT traversal: an attacker on the
 * path can redirect the tunnel but not read or forge what it carries.
 *  - MIP6_V4_OK: *res is mip6_ha_bu's (a drop, or the BA to send with mip6_v4_build_ba);
 *  - otherwise nothing is decided or answered, and res->drop says why as a drop reason
 *    (MALFORMED: the parse's; NO_COA_OPTION: bad-option; COA_NOT_UNICAST: coa-not-unicast), not
 *    counted in mip6_ha_stats: the caller counts it. */
enum mip6_v4_refusal mip6_v4_ha_bu(struct mip6_ha *ha, const struct mip6_pkt *p, const uint8_t *pkt,
				   const struct mip6_v4_outer *o, uint32_t sa_id, uint64_t now_ms,
				   struct mip6_ha_result *res, struct mip6_v4_reg *r);

/* The Binding Acknowledgement of res (from mip6_v4_ha_bu) into buf[0..cap), as RFC 5555 section
 * 4.2 sends it inside IPv4: to the home address, no routing header, with r's options
 * (mip6_v4_ba_append); counted sent. Its length, -ENOSPC, or -EINVAL for a dropped result. */
int mip6_v4_build_ba(struct mip6_ha *ha, const struct mip6_ha_result *res, const struct mip6_v4_reg *r,
		     uint8_t *buf, size_t cap);

/* v4 as its IPv4-mapped IPv6 address in a; whether a is one (v4, when not NULL, gets its address). */
void mip6_v4_mapped(const uint8_t v4[4], uint8_t a[16]);
bool mip6_v4_is_mapped(const uint8_t a[16], uint8_t v4[4]);

#endif
