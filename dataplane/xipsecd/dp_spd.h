/* dataplane/xipsecd/dp_spd.h: every SPD decision of the packet path (RFC 4301 sections 4.4.1 and 5),
 * below the stages that act on it: the outbound SPD for plaintext about to leave through the outside
 * (the outbound stage dp_out.c, and the forwarding stage for a datagram too large for a frame), the
 * forward-then-inbound policy for plaintext that arrived from the outside (the inbound stage), and
 * the check of a decapsulated packet against its SA and that policy (the engine stage), and the way
 * back for an ICMP error about a decapsulated packet (dp_pkt.c). Each takes
 * the SADB and the packet and returns a verdict: SADB_DROP_NONE or the reason to drop it, so the
 * stages count every drop with its reason (doc/architecture.md rule 4). A mobile node's packets are
 * selected by their home address (RFC 3776 section 4: the Home Address option, the type 2 routing
 * header; mip6_sel_addrs in libmip6). Any thread; lock-free SADB readers only. */
#ifndef XIPSEC_DP_SPD_H
#define XIPSEC_DP_SPD_H

#include <stdbool.h>
#include <stdint.h>

#include "sadb/sadb.h"

/* The outbound SPD for the L3 packet at l3 (len bytes; mobile: the home agent's own signalling, its
 * type 2 routing header names the destination). SADB_DROP_NONE with *pol the policy that bypasses
 * (SADB_ACT_BYPASS) or protects (SADB_ACT_PROTECT, pol->reqid) it; otherwise TRUNCATED (no
 * selector), NO_POLICY, or POLICY_DISCARD. */
unsigned dp_spd_out(const struct sadb *db, const uint8_t *l3, uint32_t len, bool mobile,
		    struct sadb_policy *pol);

/* The selector the outbound SPD matched the packet by (the same one dp_spd_out builds), for the
 * acquire a PROTECT policy without an SA raises: SADB_DROP_NONE or TRUNCATED. */
unsigned dp_spd_sel(const uint8_t *l3, uint32_t len, bool mobile, struct sadb_pkt_sel *sel);

/* Plaintext from the outside: a forward policy (as XFRM's "fwd") first, an inbound one otherwise.
 * SADB_DROP_NONE where one bypasses it; TRUNCATED, NO_POLICY, POLICY_MISMATCH (it demands
 * protection: plaintext is a mismatch, not a discard) or POLICY_DISCARD. */
unsigned dp_spd_in(const struct sadb *db, const uint8_t *l3, uint32_t len);

/* The packet sa decapsulated: SADB_DROP_NONE when it is what the SA's selector and the policy for it
 * allow (that policy protects with the SA's protocol and reqid); TRUNCATED or POLICY_MISMATCH. A
 * mobile node's transport-mode packet is selected by its Home Address option, which the SA that
 * authenticated it names (RFC 3776 section 4.1). A mobile node's tunnel SA may carry a source
 * outside its selector where the policy for the packet names the SA's own reqid: a mobile router's
 * registered network (RFC 3963; dataplane/xipsecd/dp_mip6_nemo.c). */
unsigned dp_spd_in_check(const struct sadb *db, const struct sadb_sa *sa, const uint8_t *l3,
			 uint32_t len);

/* An ICMP error the gateway built about a packet that arrived in an SA, to leave through out, the
 * outbound SA of that SA's reqid: SADB_DROP_NONE when out's selector covers it and the outbound
 * policy for it protects it with out's protocol and reqid; TRUNCATED, or ICMP_DECAP (then it must
 * not be sent at all: RFC 4301 section 6.2, dp_pkt.c). */
unsigned dp_spd_icmp_via(const struct sadb *db, const struct sadb_sa *out, const uint8_t *l3,
			 uint32_t len);

#endif
