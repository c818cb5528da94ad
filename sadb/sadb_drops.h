/* sadb/sadb_drops.h: the one list of reasons for which the dataplane drops a packet, with the text
 * shown to administrators. The ESP/AH engine, the workers, the SADB runtime counters and ipsecctl all
 * use this list (VPP-style X-macro), so a reason has one name and one text everywhere
 * (doc/architecture.md rule 4).
 *
 * Every reason carries its number explicitly, in order and without gaps: the number is part of the
 * SADB layout (per-SA and per-worker drop counters are indexed by it, and a running xipsecd and an
 * ipsecctl of another build read the same counters). A new reason takes the next number and needs a
 * new SADB_LAYOUT_VERSION; an existing reason never changes its number within a layout version.
 * sadb_util.c holds the compile-time checks that enforce both against the layout version. */
#ifndef XIPSEC_SADB_DROPS_H
#define XIPSEC_SADB_DROPS_H

#define SADB_DROP_NUMBERED(X, F) \
	F(X, NONE,             0, "none") \
	F(X, BAD_SPI,          1, "no SA for SPI") \
	F(X, REPLAY,           2, "replayed sequence number") \
	F(X, REPLAY_OLD,       3, "sequence number left of the replay window") \
	F(X, ICV,              4, "ICV verification failed") \
	F(X, TRUNCATED,        5, "packet truncated or malformed") \
	F(X, BAD_PAD,          6, "bad ESP padding") \
	F(X, BAD_NEXT_HDR,     7, "bad next header") \
	F(X, NO_POLICY,        8, "no matching policy") \
	F(X, POLICY_DISCARD,   9, "policy action discard") \
	F(X, POLICY_MISMATCH, 10, "inner packet does not match the SA's policy") \
	F(X, SEQ_OVERFLOW,    11, "sequence number space exhausted (rekey needed)") \
	F(X, SA_EXPIRED,      12, "SA hard lifetime expired") \
	F(X, SA_STATE,        13, "SA not mature") \
	F(X, MTU,             14, "packet too big for path MTU") \
	F(X, TTL,             15, "TTL/hop limit exceeded") \
	F(X, NO_ROUTE,        16, "no route") \
	F(X, NO_NEIGH,        17, "neighbour unresolved") \
	F(X, NOMEM,           18, "out of buffers") \
	F(X, CRYPTO,          19, "crypto backend error") \
	F(X, UNSUPPORTED,     20, "unsupported packet or transform") \
	F(X, BAD_ENCAP,       21, "bad UDP encapsulation") \
	F(X, TX_FULL,         22, "transmit ring full") \
	F(X, FRAG_NOBUF,      23, "no free buffer for fragments") \
	F(X, FRAG_BAD,        24, "malformed fragment") \
	F(X, FRAG_OVERLAP,    25, "overlapping fragments") \
	F(X, FRAG_DUP,        26, "duplicate fragment") \
	F(X, FRAG_TIMEOUT,    27, "reassembly timeout") \
	F(X, FRAG_LIMIT,      28, "reassembly limit reached") \
	F(X, FRAG_TOO_BIG,    29, "reassembled datagram too big") \
	F(X, STALE_SA,        30, "SA object of a replaced SA instance") \
	F(X, SEQ_LEASE,       31, "sequence numbers not yet recorded on disk") \
	F(X, NO_BINDING,      32, "mobile node away without a binding (nothing to tunnel to)") \
	F(X, ICMP_DECAP,      33, "ICMP error about a decapsulated packet with no source or SA its tunnel allows") \
	F(X, ACQUIRE,         34, "no SA yet for the policy (acquire raised, tunnel on demand)")

/* SADB_DROP_REASONS(X) calls X(name, number, text) for every reason, in number order;
 * SADB_DROP_LIST(X) calls X(name, text), in the same order (the number is the position). */
#define SADB_DROP_CALL3(X, name, num, text) X(name, num, text)
#define SADB_DROP_CALL2(X, name, num, text) X(name, text)
#define SADB_DROP_REASONS(X) SADB_DROP_NUMBERED(X, SADB_DROP_CALL3)
#define SADB_DROP_LIST(X)    SADB_DROP_NUMBERED(X, SADB_DROP_CALL2)

enum sadb_drop {
#define SADB_DROP_ENUM(name, num, text) SADB_DROP_##name = num,
	SADB_DROP_REASONS(SADB_DROP_ENUM)
#undef SADB_DROP_ENUM
#define SADB_DROP_ONE(name, num, text) + 1
	SADB_DROP_MAX = 0 SADB_DROP_REASONS(SADB_DROP_ONE) /* how many reasons there are */
#undef SADB_DROP_ONE
};

/* Text of a drop reason ("unknown" for an out-of-range value); never NULL. */
const char *sadb_drop_str(unsigned reason);
/* Short identifier of a drop reason in lower case ("bad_spi"), for JSON keys; never NULL. */
const char *sadb_drop_name(unsigned reason);

#endif
