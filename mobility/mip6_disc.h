/* mobility/mip6_disc.h: what a home agent answers a mobile node that looks for it or for its home
 * prefixes (RFC 6275 sections 10.5 and 10.6).
 *
 * Dynamic Home Agent Address Discovery: the home agents list of a home link, learnt from the
 * Router Advertisements the home agents on it send (the H bit, the Home Agent Information option,
 * section 7.4; the Prefix Information options with the R bit that carry each one's global
 * address, section 7.2), and the DHAAD Reply (sections 6.5, 6.6) a request to the home prefix's
 * Mobile IPv6 Home-Agents anycast address (RFC 2526) gets: the list's addresses in that prefix,
 * the most preferred first.
 *
 * Mobile Prefix Discovery: a Mobile Prefix Solicitation (section 6.7) from a mobile node away from
 * home, as ESP transport mode delivered it (RFC 3776 section 4.2), read, and the Mobile Prefix
 * Advertisement (section 6.8) that answers it built as a whole IPv6 packet for the same SAs, like a
 * Binding Acknowledgement (mip6.h).
 *
 * No I/O, no allocation: discovery messages start at the ICMPv6 header, as a raw ICMPv6 socket
 * delivers them (the kernel checks and fills the ICMPv6 checksum of such a socket); the caller
 * checks what only the socket knows (the hop limit 255 of a Router Advertisement, RFC 4861
 * section 6.1.2, and the link it came from). Times are the caller's monotonic milliseconds.
 * Threading: a list belongs to one thread (xipsecd's control thread); the functions keep no other
 * state. */
#ifndef XIPSEC_MIP6_DISC_H
#define XIPSEC_MIP6_DISC_H

#include <stddef.h>
#include <stdint.h>

#define MIP6_ICMP_RA          134  /* Router Advertisement (RFC 4861 section 4.2) */
#define MIP6_ICMP_DHAAD_REQ   144  /* Home Agent Address Discovery Request (RFC 6275 section 6.5) */
#define MIP6_ICMP_DHAAD_REP   145  /* Home Agent Address Discovery Reply (section 6.6) */
#define MIP6_ICMP_MPS         146  /* Mobile Prefix Solicitation (RFC 6275 section 6.7) */
#define MIP6_ICMP_MPA         147  /* Mobile Prefix Advertisement (section 6.8) */
#define MIP6_RA_H             0x20u /* the RA's Home Agent flag (section 7.1) */
#define MIP6_ANYCAST_HA_ID    0x7eu /* Mobile IPv6 Home-Agents anycast ID (RFC 2526 section 3) */

/* Entries the list holds: home agents on one link, each with a few global addresses. An RA that
 * would add more is taken for what fits and counted (mip6_halist.full). */
#define MIP6_HALIST_MAX 32
/* Addresses a reply carries at most: a Reply fits the IPv6 minimum MTU (section 10.5: the rest, the
 * least preferred, are left out): (1280 - 40 - 8) / 16. */
#define MIP6_DHAAD_MAX_ADDRS 77u
#define MIP6_DHAAD_HDR 8u

/* One home agent address heard on the link (section 10.5.1: a home agent is known by the link-local
 * address its RAs come from; its global addresses are the R-bit prefixes of those RAs). */
struct mip6_ha_entry {
	uint8_t ll[16];          /* the RA's source */
	uint8_t addr[16];        /* one of its global addresses */
	int16_t pref;            /* higher is preferred (section 7.4) */
	uint64_t expires_ms;
};

struct mip6_halist {
	struct mip6_ha_entry e[MIP6_HALIST_MAX];
	unsigned n;
	unsigned rot;            /* turns equal preferences from one reply to the next (section 10.5.1) */
	uint64_t ra_taken, ra_bad, full;
};

/* A Router Advertisement from src (its IPv6 source) heard on the home link, the ICMPv6 message at
 * ra[0..len): with the H bit, its home agent's entries are set to the addresses, preference and
 * lifetime it announces (lifetime 0: it is no home agent any more, section 10.5.1); without it, a
 * router that was listed is removed. 0, or -EINVAL for a malformed message (counted in ra_bad;
 * nothing changed). */
int mip6_halist_ra(struct mip6_halist *l, const uint8_t src[16], const uint8_t *ra, size_t len,
		   uint64_t now_ms);
/* Drop the entries whose lifetime ended. */
void mip6_halist_expire(struct mip6_halist *l, uint64_t now_ms);
/* The Mobile IPv6 Home-Agents anycast address of prefix/plen (RFC 2526 section 2: the prefix, then
 * ones, the last 7 bits the anycast ID; in a /64 the interface identifier's universal bit is 0). */
void mip6_ha_anycast(const uint8_t prefix[16], unsigned plen, uint8_t out[16]);
/* The DHAAD Reply to the request at req[0..len), written to out (cap bytes, at least
 * MIP6_DHAAD_HDR + 16): the addresses of the list in prefix/plen, own among them even when no RA
 * named it (preference 0, the default of section 7.4), the most preferred first, equal preferences
 * turned from one reply to the next. Its length, or -EINVAL when req is no DHAAD Request. */
int mip6_dhaad_reply(struct mip6_halist *l, const uint8_t own[16], const uint8_t prefix[16],
		     unsigned plen, const uint8_t *req, size_t len, uint8_t *out, size_t cap);

/* A Mobile Prefix Solicitation: its identifier, and the addresses of the packet that carried it. */
struct mip6_mps {
	uint8_t coa[16];         /* the IPv6 source: the care-of address */
	uint8_t hoa[16];         /* the Home Address option's address */
	uint8_t dst[16];         /* the home agent's address */
	uint16_t id;
};
/* Read the decrypted packet pkt[0..len) (IPv6, extension headers, ICMPv6) as a Mobile Prefix
 * Solicitation from a mobile node away from home (section 11.4.2: with a Home Address option;
 * RFC 4443's checksum over the home address as source). 0 with *out filled, -ENOMSG when its
 * upper layer is no ICMPv6 type 146 (another message for the caller), -EINVAL when it is a
 * malformed one (no Home Address option, short, a bad checksum or code). */
int mip6_mps_parse(const uint8_t *pkt, uint32_t len, struct mip6_mps *out);

/* What a Mobile Prefix Advertisement says and where it goes. */
#define MIP6_MPA_MAX_PREFIXES 8
struct mip6_mpa_params {
	uint8_t src[16];         /* the home agent's address */
	uint8_t dst[16];         /* the mobile node's care-of address (its binding's) */
	uint8_t hoa[16];         /* in the type 2 routing header: the final destination */
	uint16_t id;             /* the solicitation's */
	struct {
		uint8_t addr[16];
		uint8_t len;
	} prefix[MIP6_MPA_MAX_PREFIXES];
	unsigned n_prefix;
	uint32_t valid_s, preferred_s;  /* the prefixes' lifetimes */
};
#define MIP6_MPA_MAX_LEN (40 + 24 + 8 + 32 * MIP6_MPA_MAX_PREFIXES)
/* Build the advertisement as a whole IPv6 packet in buf[0..cap): IPv6 / type 2 routing header
 * (segments left 1) / ICMPv6 147 with one Prefix Information option per home prefix (the L and A
 * flags set, RFC 4861 section 4.6.2), checksummed with the home address as the pseudo-header's
 * destination. Its length, or -ENOSPC. */
int mip6_build_mpa(uint8_t *buf, size_t cap, const struct mip6_mpa_params *p);

#endif
