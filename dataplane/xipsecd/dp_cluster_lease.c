/* dataplane/xipsecd/dp_cluster_lease.c: the arithmetic of replicated sequence leases between the two
 * nodes of a cluster (doc/architecture.md rule 9): which numbers an outbound SA may use, on the
 * active node, with and without its peer, and where a node that takes over starts. No I/O: the
 * messages are dp_cluster_msg.c's, the node dp_cluster.c's.
 *
 * Why: the ha plugin copies keys to the standby but not the sequence counter, which moves a million
 * times a second; a standby that took over at the counter it was last told would send nonces the
 * active already sent. So the active uses only numbers the standby has recorded first.
 *
 * The scheme, for one SA (one key) and the two nodes A and B, each with a rank (0 for the lower
 * address, 1 for the other) and the same lease L and budget b:
 *  - A lease is a range (base, end] of numbers. The active asks its peer to record end, with base at
 *    least every end it has recorded or used (its reservation, its grants, what the peer told it).
 *    A standby records end (merged by max, never lowered) and acknowledges it only if base is at
 *    or above everything it has recorded itself; an active node records what it hears but
 *    acknowledges nothing (two actives never lease from each other). The active raises its own
 *    reservation to base and only then the engine's limit (rt->seq_lease) to end, so every number
 *    it uses with the peer in contact lies in an acknowledged lease: at most what the peer recorded.
 *  - Alone (no message from the peer for a second), the active may go on up to the highest end
 *    acknowledged, plus b: (acked, acked + b]. Half-way it raises the SA's soft expiry, at the end
 *    the hard one, so that IKE makes new keys (the engine sends nothing above acked + b).
 *  - A node that takes over starts at a whole block of b numbers, [k*b, (k+1)*b), the first with
 *    k*b at or above base + b and k of its own rank's parity, where base is the highest number it
 *    knows of (what it recorded, its own reservation and grants); it sends from k*b + 1 and, alone,
 *    up to (k+1)*b.
 *
 * Why the ranges never meet:
 *  - Active A with B in contact, B takes over when A dies: every number A used is at most an
 *    acknowledged end, so at most what B recorded; B starts above that plus b.
 *  - An acknowledgement lost: B recorded end E, A never learned it; A's acked stays below E, so A
 *    alone stays below E + b, and B starts at or above E + b.
 *  - Both active, the link cut (split brain): A alone stays at or below acked_A + b <= recorded_B + b
 *    <= B's block. If both were standby and both are promoted, their blocks have different parities,
 *    so they are different blocks, whatever each recorded; each stops at its block's end.
 *  - A node promoted a second time in one cut starts above its own first block (its grants are in
 *    its base).
 *  - An SA that never had a lease on an active node whose peer acknowledges nothing (installed on
 *    both nodes while both are active) has no acknowledged end to count from: it starts as a
 *    takeover does, in a block of the node's parity, so the two nodes' blocks differ.
 *  - Active/active (both active, in contact, each sending on the SAs of its own segments): each
 *    SA starts on each node in a block of that node's parity, so the two never meet whoever
 *    sends. Each reports its reservation to the other (DPC_MERGE, every sync_packets numbers or
 *    sync_ms). A node that gains a segment takes its SAs over as above before its workers may
 *    send on them (dp_cluster_segments_gained): the new block is at or above base + b, with base
 *    at least the other node's last report; between that report and its last number the other
 *    node stays in its own block, which ends at most b above where the report was, so the
 *    takeover starts above every number it used (and above the peer's replay window), and the
 *    workers abandon numbers reserved in an earlier life as the SA's owner (dp_sa.seq_floor).
 *    Each move costs up to 3b of the space, as a takeover.
 *  - After the link heals, each sends the other its ends (DPC_MERGE) and each records the max; the
 *    node that stays active asks its next lease above that max, so it continues above every number
 *    either node used; the other, made standby, acknowledges it.
 * A lease asked twice (a lost message resent) is recorded once more as the same max: harmless.
 *
 * The residual: a takeover skips up to 3b numbers (the block's alignment and the gap of b above
 * base); a crash of the active loses the rest of its lease. A node that was never caught up (it
 * started, or rejoined, and did not finish a resync) and is promoted while its peer is unreachable
 * knows only its own numbers: if the peer was active beyond them and is alive behind a cut link, the
 * parity of the blocks still separates the two nodes' solo ranges, but not the peer's earlier
 * leases from this node's block. So such a node sends nothing on the SAs it holds: it raises their
 * soft expiry at once and they carry no traffic until xipsec-iked has rekeyed them (new keys, so no
 * nonce of the old ones), or until the peer, reachable again, acknowledges a lease (it acknowledges
 * none below what it used). The cost is the traffic of one rekey exchange; never a nonce twice.
 * dp_cluster.c (take_over) does it and logs it.
 *
 * Sizes (defaults): L = 2^20 numbers, asked again when half is left: at 1 Mpps the ask has 0.5 s
 * for its round trip. b = 2^24: a 3 s failover at 1 Mpps uses 3 * 2^20 (about 2^21.6) numbers, and
 * soft expiry comes at b/2, 8 s of solo traffic at 1 Mpps, leaving IKE another 8 s to rekey. Each
 * failover costs at most 3b + L (about 2^25.6) of the 32-bit space, so an SA survives about 80
 * failovers before it reaches its 2^32 limit and is rekeyed anyway (xipsec-iked's soft limit is
 * lower: 70 or so). With ESN the 64-bit space makes it unbounded in practice. */
#include "config.h"

#include "dataplane/xipsecd/dp_cluster.h"

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t dpc_lease_top(const struct dpc_lease *l, uint64_t reserved)
{
	return max64(max64(l->recorded, l->granted), max64(max64(l->acked, l->asked), reserved));
}

uint64_t dpc_lease_takeover(const struct dpc_lease *l, uint64_t reserved, uint64_t budget, unsigned rank)
{
	uint64_t base = dpc_lease_top(l, reserved);
	uint64_t k = (base + budget + budget - 1) / budget;

	if ((k & 1) != (rank & 1))
		k++;
	return k * budget;
}

uint64_t dpc_lease_want(struct dpc_lease *l, uint64_t reserved, uint64_t lease)
{
	if (l->asked)
		return 0;
	if (l->granted > reserved && l->granted - reserved >= lease / 2)
		return 0;
	l->asked_base = dpc_lease_top(l, reserved);
	l->asked = l->asked_base + lease;
	return l->asked;
}

uint64_t dpc_lease_ack(struct dpc_lease *l, uint64_t end)
{
	l->acked = max64(l->acked, end);
	l->recorded = max64(l->recorded, end);
	if (l->asked && l->asked <= end)
		l->asked = 0;
	l->solo = false;
	l->granted = max64(l->granted, l->acked);
	return l->granted;
}

uint64_t dpc_lease_record(struct dpc_lease *l, uint64_t end)
{
	l->recorded = max64(l->recorded, end);
	return l->recorded;
}

uint64_t dpc_lease_solo_cap(struct dpc_lease *l, uint64_t budget)
{
	if (!l->solo) {
		l->solo = true;
		l->solo_base = l->acked;
	}
	return l->solo_base + budget;
}

unsigned dpc_lease_solo_expiry(const struct dpc_lease *l, uint64_t reserved, uint64_t budget)
{
	if (!l->solo || reserved <= l->solo_base)
		return 0;
	if (reserved - l->solo_base >= budget)
		return 3;
	return reserved - l->solo_base >= budget / 2 ? 1 : 0;
}
