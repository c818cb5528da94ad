/* sadb/sadb_drops.h: the one list of reasons for which the dataplane drops a packet, with the text
 * shown to administrators. The ESP/AH engine, the workers, the SADB runtime counters and ipsecctl all
 * use this list (VPP-style X-macro), so a reason has one name and one text everywhere.
 *
 * Append only: the numeric value of a reason is part of the SADB layout (per-SA drop counters are
 * indexed by it); adding a reason means bumping SADB_LAYOUT_VERSION if SADB_DROP_MAX changes. */
#ifndef XIPSEC_SADB_DROPS_H
#define XIPSEC_SADB_DROPS_H

#define SADB_DROP_LIST(X) \
	X(NONE,           "none") \
	X(BAD_SPI,        "no SA for SPI") \
	X(REPLAY,         "replayed sequence number") \
	X(REPLAY_OLD,     "sequence number left of the replay window") \
	X(ICV,            "ICV verification failed") \
	X(TRUNCATED,      "packet truncated or malformed") \
	X(BAD_PAD,        "bad ESP padding") \
	X(BAD_NEXT_HDR,   "bad next header") \
	X(NO_POLICY,      "no matching policy") \
	X(POLICY_DISCARD, "policy action discard") \
	X(POLICY_MISMATCH,"inner packet does not match the SA's policy") \
	X(SEQ_OVERFLOW,   "sequence number space exhausted (rekey needed)") \
	X(SA_EXPIRED,     "SA hard lifetime expired") \
	X(SA_STATE,       "SA not mature") \
	X(MTU,            "packet too big for path MTU") \
	X(TTL,            "TTL/hop limit exceeded") \
	X(NO_ROUTE,       "no route") \
	X(NO_NEIGH,       "neighbour unresolved") \
	X(NOMEM,          "out of buffers") \
	X(CRYPTO,         "crypto backend error") \
	X(UNSUPPORTED,    "unsupported packet or transform") \
	X(BAD_ENCAP,      "bad UDP encapsulation") \
	X(TX_FULL,        "transmit ring full") \
	X(FRAG_NOBUF,     "no free buffer for fragments") \
	X(FRAG_BAD,       "malformed fragment") \
	X(FRAG_OVERLAP,   "overlapping fragments") \
	X(FRAG_DUP,       "duplicate fragment") \
	X(FRAG_TIMEOUT,   "reassembly timeout") \
	X(FRAG_LIMIT,     "reassembly limit reached") \
	X(FRAG_TOO_BIG,   "reassembled datagram too big") \
	X(STALE_SA,       "SA object of a replaced SA instance") \
	X(SEQ_LEASE,      "sequence numbers not yet recorded on disk")

enum sadb_drop {
#define SADB_DROP_ENUM(name, text) SADB_DROP_##name,
	SADB_DROP_LIST(SADB_DROP_ENUM)
#undef SADB_DROP_ENUM
	SADB_DROP_MAX
};

/* Text of a drop reason ("unknown" for an out-of-range value); never NULL. */
const char *sadb_drop_str(unsigned reason);
/* Short identifier of a drop reason in lower case ("bad_spi"), for JSON keys; never NULL. */
const char *sadb_drop_name(unsigned reason);

#endif
