/* mobility/mip6_err.h: the home agent's answers to Mobility Header packets it cannot take (RFC 6275
 * §9.2, §9.3.3): which error a drop reason calls for (a Binding Error, status 1 or 2, or an ICMPv6
 * Parameter Problem pointing at the offending field; a bad checksum or anything else: silence),
 * the packet that carries it, and the token bucket that bounds how many are sent. No I/O; the
 * caller (xipsecd's control thread) queues the packet for its outbound path, whose SPD protects
 * it. Threading: none here; one struct mip6_err_bucket has one owner. */
#ifndef XIPSEC_MIP6_ERR_H
#define XIPSEC_MIP6_ERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mobility/mip6.h"

enum mip6_err {
	MIP6_ERR_NONE = 0,
	MIP6_ERR_BE_UNKNOWN_BINDING,  /* BE status 1: a Home Address option of no binding (§9.3.1) */
	MIP6_ERR_BE_UNKNOWN_MH_TYPE,  /* BE status 2: an MH type not known here (§9.2) */
	MIP6_ERR_PP_PAYLOAD_PROTO,    /* Parameter Problem at the Payload Proto field (§9.2) */
	MIP6_ERR_PP_HEADER_LEN,       /* Parameter Problem at the Header Len field: below the type's
	                               * minimum (§9.2) */
	MIP6_ERR_MAX
};
/* "be_unknown_mh_type", ...: a stable token for counters; "?" out of range. */
const char *mip6_err_name(unsigned err);

/* The error the drop of packet p calls for. p is mip6_parse's output for that drop (its MH fields
 * are filled once the MH's length was found within the packet); hoa_bound says whether p's Home
 * Address option names a binding of this home agent. A Binding Update is never answered with a
 * Binding Error 1 (the home agent's rules answer it), a bad checksum never at all (§9.2). */
enum mip6_err mip6_err_due(enum mip6_drop drop, const struct mip6_pkt *p, bool hoa_bound);

/* Build the error err about the packet pkt[0..len) (parsed into *p) in buf[0..cap): from the
 * address p was sent to, to its source; a Binding Error to a mobile node away from home (p has a
 * Home Address option) carries a type 2 routing header with the home address so that the SA
 * selected by the home address protects it, and a Parameter Problem about such a packet goes to
 * the home address (through the mobile node's tunnel). Returns the length, -EINVAL when err is
 * NONE or the destination cannot take an answer (RFC 4443 §2.4 (e)), -ENOSPC. */
int mip6_err_build(enum mip6_err err, const struct mip6_pkt *p, const uint8_t *pkt, uint32_t len,
		   uint8_t *buf, size_t cap);
#define MIP6_ERR_MAX_LEN MIP6_PP_MAX_LEN

/* A token bucket: burst errors back to back, then per_s a second. Kernel-like defaults (its
 * icmp_msgs_burst and icmp_msgs_per_sec). */
#define MIP6_ERR_BURST_DEFAULT 50u
#define MIP6_ERR_RATE_DEFAULT  1000u
struct mip6_err_bucket {
	uint32_t burst, per_s;
	uint64_t milli;          /* tokens in thousandths */
	uint64_t last_ms;
};
/* burst 0 = the default, per_s 0 = the default; the bucket starts full. */
void mip6_err_bucket_init(struct mip6_err_bucket *b, uint32_t burst, uint32_t per_s, uint64_t now_ms);
/* Take a token at now_ms (a monotonic clock in milliseconds): false when the bucket is empty. */
bool mip6_err_bucket_take(struct mip6_err_bucket *b, uint64_t now_ms);

#endif
