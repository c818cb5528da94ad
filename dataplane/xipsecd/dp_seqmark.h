/* dataplane/xipsecd/dp_seqmark.h: persistent sequence-number marks for outbound SAs of manual
 * counter-mode keys, replay-window ceilings for inbound SAs of manual keys (dp_seqmark.c explains
 * both schemes), and the home agent's last accepted Binding Update sequence numbers. Control thread
 * only. */
#ifndef XIPSEC_DP_SEQMARK_H
#define XIPSEC_DP_SEQMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sadb/sadb.h"

#define DP_ENV_SEQ_LEASE "XIPSEC_SEQ_LEASE" /* numbers per lease (default 2^20) */
#define DP_ENV_WINDOW_LEASE "XIPSEC_WINDOW_LEASE" /* least step of a window ceiling (default 4096) */

/* Whether the SA's numbers must be leased from a mark on disk. Outbound: SADB_SAF_SEQ_PERSIST, or a
 * manual counter-mode key whoever wrote it. Inbound: an SA with a replay window whose key is manual
 * (or flagged SADB_SAF_SEQ_PERSIST): its window accepts nothing above a ceiling on disk. */
bool dp_seqmark_needed(const struct sadb_sa *sa);
/* Lease the next numbers for sa (whose runtime area is rt) from the mark in the state directory
 * dirfd: the new mark is on disk before rt->seq_reserved / rt->seq_lease let the engine use them.
 * Inbound, rt->seq_lease is the window's ceiling, raised to dp_seqmark_window_block numbers above
 * its top or want (the highest authenticated number it refused: esp_sa_opts.window_want), and a runtime area without a ceiling has its window started at the mark first
 * (esp_replay_seed). No mark yet: -ENOENT unless sa has SADB_SAF_SEQ_NEW.
 * 0 or -errno with a message (never key bytes). */
int dp_seqmark_lease(int dirfd, const struct sadb_sa *sa, struct sadb_runtime *rt, uint64_t want,
		     char *msg, size_t len);
/* One SA's lease in a batch: sa, rt and want (inbound, as dp_seqmark_lease) in; err (0 or -errno)
 * and msg (never key bytes) out. */
struct dp_seqmark_req {
	const struct sadb_sa *sa;
	struct sadb_runtime *rt;
	uint64_t want;
	int err;
	char msg[256];
	/* the batch's own */
	char name[64];
	uint64_t start, end;
	enum { DP_SEQMARK_PENDING, DP_SEQMARK_AGAIN, DP_SEQMARK_WRITTEN, DP_SEQMARK_DONE } state;
};
/* dp_seqmark_lease for n SAs at once, with one lock, one syncfs and one directory fsync for all of
 * them (dp_seqmark.c explains why that is as safe). */
void dp_seqmark_lease_batch(int dirfd, struct dp_seqmark_req *rq, unsigned n);
/* Inbound SAs whose objects are gone for good (no worker can accept a number under them any more):
 * each mark on disk that is still its SA's ceiling is brought down to the window's top, and then
 * the ceiling too, so the next SA of the key starts exactly where this one ended. One lock, one
 * syncfs and one directory fsync for all; an SA that cannot be brought down keeps its ceiling as
 * its mark (safe: only the peer's next numbers up to it are lost). */
void dp_seqmark_release_batch(int dirfd, struct dp_seqmark_req *rq, unsigned n);
/* Whether less than half a lease is left (time to extend): outbound below rt->seq_lease, inbound
 * between the window's top and its ceiling, or the ceiling refused an authenticated want. */
bool dp_seqmark_due(const struct sadb_sa *sa, const struct sadb_runtime *rt, uint64_t want);
uint64_t dp_seqmark_lease_size(void);
/* The least step of an inbound window's ceiling: $XIPSEC_WINDOW_LEASE, default 4096. */
uint64_t dp_seqmark_window_block(void);

/* The home agent's last accepted Binding Update sequence number of home address hoa, in the state
 * directory dirfd (one file per mobile node, written and synced like a mark: dp_seqmark.c):
 * store returns once it is on disk; load gives -ENOENT when none was ever stored. 0 or -errno with
 * a message. */
int dp_seqmark_bu_store(int dirfd, const uint8_t hoa[16], uint16_t seq, char *msg, size_t len);
int dp_seqmark_bu_load(int dirfd, const uint8_t hoa[16], uint16_t *seq, char *msg, size_t len);

#endif
