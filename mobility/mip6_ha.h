/* mobility/mip6_ha.h: the Mobile IPv6 home agent's state and rules (RFC 6275 §9.5.1, §10.3.1,
 * §10.3.2; RFC 3776/4877 for the protection): the configuration (home agent addresses, home
 * prefixes, the longest lifetime granted, the mobile nodes allowed and the identifiers of their SAs),
 * the binding cache, the decision on each Binding Update (drop it, or answer with a Binding
 * Acknowledgement and change a binding), binding expiry, and the counters. No I/O: the caller (the
 * dataplane) decrypts the Binding Update with the SA it arrived on, hands the packet and that SA's
 * identifier here, then builds, encrypts and sends the Binding Acknowledgement and applies the binding
 * change to its forwarding state (tunnel, proxy neighbour discovery, the tunnel SAs' endpoints).
 *
 * Threading: single-threaded by contract. One struct mip6_ha has one owner, xipsecd's control
 * thread; nothing here locks. Workers hand Binding Updates to that thread rather than call in.
 *
 * SA identifiers are opaque non-zero 32-bit values the caller resolves (e.g. SADB slot or SPI);
 * 0 means "no SA": an unprotected packet.
 *
 * Times are milliseconds of a monotonic clock chosen by the caller. Errors: functions that can fail
 * return 0 or a negative errno. */
#ifndef XIPSEC_MIP6_HA_H
#define XIPSEC_MIP6_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mobility/mip6.h"

#define MIP6_HA_MAX_ADDRS    8
#define MIP6_HA_MAX_PREFIXES 64  /* 8 home agent addresses of 8 prefixes each (the SADB's records) */

struct mip6_prefix {
	uint8_t addr[16];
	uint8_t len;                 /* prefix length in bits, 1..128 */
};

struct mip6_ha_config {
	uint8_t ha_addrs[MIP6_HA_MAX_ADDRS][16];  /* the home agent's own addresses */
	unsigned n_ha_addrs;                      /* at least one */
	struct mip6_prefix prefixes[MIP6_HA_MAX_PREFIXES];  /* the home prefixes */
	unsigned n_prefixes;                      /* at least one */
	uint32_t max_lifetime_s;  /* longest binding granted, 4..262140 s (rounded down to 4 s) */
	uint32_t refresh_s;       /* Binding Refresh Advice in accepted BAs, 0 = none; capped below the
	                           * granted lifetime */
	uint32_t max_mns;         /* mobile nodes the table holds (1..1<<24) */
	uint32_t max_bindings;    /* bindings at a time, 0 = max_mns; beyond: status 130 */
	bool key_mgmt_mobility;   /* the K bit is honoured (the IKE SA survives movement, §10.3.1) */
	uint32_t hash_seed;       /* seed of the home-address hash (any value) */
	/* Each mobile node's binding changes that cost a migration (a new binding, a new care-of
	 * address) are paced by a token bucket: move_burst back to back (0 = 4, at most 1024), then one
	 * per move_interval_ms (0 = 1000, at most 3600000). Refreshes and deregistrations are free. */
	uint32_t move_burst;
	uint32_t move_interval_ms;
	/* Stable storage of each mobile node's last accepted sequence number (NULL: none): called
	 * with the number of a Binding Update that passed every check, before anything changes; 0 =
	 * recorded (durably: a restart reads it back with mip6_ha_seq_restore), else the Binding
	 * Update is rejected with 130 (SEQ_STORE) and nothing changes. */
	int (*seq_store)(void *arg, const uint8_t hoa[16], uint16_t seq);
	void *seq_arg;
};

/* One allowed mobile node. */
struct mip6_mn {
	uint8_t hoa[16];
	uint32_t bu_sa;           /* the inbound SA its Binding Updates must arrive on (non-zero) */
	uint32_t ba_sa;           /* the outbound SA that protects the Binding Acknowledgements */
	uint32_t tun_out_sa, tun_in_sa;  /* its tunnel SAs (passed back, for the caller's migration) */
	uint8_t ha_addr[16];      /* its home agent address, one of ha_addrs; all zero: any of them */
	bool disabled;            /* configured but refused (status 129) */
	bool key_mobility;        /* keyed by an IKE SA that follows its care-of address: the K bit is
	                           * honoured for this node alone (RFC 4877 7; cfg's key_mgmt_mobility
	                           * for all) */
	uint32_t max_lifetime_s;  /* its longest binding (its home agent address's), 0: the
	                           * configuration's; never above it */
	/* A mobile router (RFC 3963): the R bit is honoured for it alone (140 for any other), and
	 * mnp[0..n_mnp) are the mobile network prefixes it owns: a Binding Update naming them
	 * (explicit mode) registers those it names, one naming none (implicit mode) all of them. */
	bool router;
	unsigned n_mnp;
	struct mip6_prefix mnp[MIP6_MAX_MNP];
};

/* A binding cache entry. */
struct mip6_binding {
	uint8_t hoa[16];
	uint8_t coa[16];
	uint16_t seq;             /* of the last Binding Update accepted */
	uint16_t bu_flags;        /* MIP6_BU_* of that Binding Update */
	bool k;                   /* K granted */
	uint32_t lifetime_s;      /* granted */
	uint64_t created_ms;      /* first accepted */
	uint64_t updated_ms;      /* last accepted */
	uint64_t expires_ms;
	const struct mip6_mn *mn; /* valid until that mobile node is removed */
	/* a mobile router's registered prefixes (RFC 3963), routed through its tunnel while bound */
	unsigned n_mnp;
	struct mip6_prefix mnp[MIP6_MAX_MNP];
};

enum mip6_change {
	MIP6_CHANGE_NONE = 0,     /* rejected: no binding changed */
	MIP6_CHANGE_NEW,          /* a binding was created */
	MIP6_CHANGE_REFRESH,      /* same care-of address, new lifetime */
	MIP6_CHANGE_MOVE,         /* the care-of address changed: old_coa -> coa */
	MIP6_CHANGE_DELETE,       /* deregistered (lifetime 0 or care-of == home address) */
};
const char *mip6_change_name(unsigned change);

/* Why a Binding Update was rejected (answered with a status >= 128). Several reasons share a status
 * (130 for a full cache and for a mobile node moving too often, 174 for a missing and for a wrong
 * Alternate Care-of Address), so they are counted apart; mip6_reject_status gives each one's. */
enum mip6_reject {
	MIP6_REJECT_NONE = 0,
	MIP6_REJECT_SEQ,              /* 135: sequence number not newer than the binding's (§9.5.1) */
	MIP6_REJECT_NOT_HOME_REG,     /* 131: no H bit, no binding (no route optimisation here) */
	MIP6_REJECT_REG_TYPE_CHANGE,  /* 139: no H bit over a home registration */
	MIP6_REJECT_DISABLED,         /* 129: the mobile node is configured but disabled */
	MIP6_REJECT_MOBILE_ROUTER,    /* 140: R bit from a mobile node that is no mobile router */
	MIP6_REJECT_NOT_HOME_SUBNET,  /* 132: the home address is in no home prefix */
	MIP6_REJECT_OTHER_HA_ADDR,    /* 133: sent to our address that does not serve this node */
	MIP6_REJECT_DEREG_UNBOUND,    /* 133: deregistration with no binding (§10.3.2) */
	MIP6_REJECT_COA_AT_HOME,      /* 128: care-of address on the home link or one of ours */
	MIP6_REJECT_NO_ALT_COA,       /* 174: a registration without the Alternate CoA option */
	MIP6_REJECT_ALT_COA_NOT_SRC,  /* 174: the Alternate CoA is not the packet's source */
	MIP6_REJECT_CACHE_FULL,       /* 130: max_bindings reached */
	MIP6_REJECT_MOVE_RATE,        /* 130: the mobile node's move bucket is empty */
	MIP6_REJECT_SEQ_STORE,        /* 130: its sequence number could not be recorded (seq_store) */
	MIP6_REJECT_INVALID_PREFIX,   /* 141: a Mobile Network Prefix option of a bad length, or not a
	                               * unicast prefix (RFC 3963 6.2) */
	MIP6_REJECT_PREFIX_NOT_OWNED, /* 142: a prefix the mobile router is not configured with */
	MIP6_REJECT_NO_PREFIX,        /* 143: implicit mode, and no prefix configured for it */
	MIP6_REJECT_TOO_MANY_PREFIXES, /* 130: more Mobile Network Prefix options than MIP6_MAX_MNP */
	MIP6_REJECT_MAX
};
/* "no-alt-coa", "move-rate", ...: a stable token for counters and logs; "?" out of range. */
const char *mip6_reject_name(unsigned why);
/* The BA status a reason is answered with (enum mip6_status); 0 for MIP6_REJECT_NONE. */
uint8_t mip6_reject_status(unsigned why);

/* The decision on one Binding Update. */
struct mip6_ha_result {
	enum mip6_drop drop;      /* MIP6_DROP_NONE: a BA is to be sent (ba below) */
	enum mip6_reject reject;  /* with drop NONE and ba.status >= 128: why */
	struct mip6_ba_params ba; /* the BA: status, sequence, lifetime, K, addresses, routing header */
	enum mip6_change change;
	uint8_t hoa[16];
	uint8_t coa[16];          /* the care-of address registered (or asked for) */
	uint8_t old_coa[16];      /* with MOVE and DELETE: the one it replaced */
	uint32_t lifetime_s;      /* granted: min(asked, configured maximum); 0 when rejected or deleted */
	const struct mip6_mn *mn; /* the mobile node (its SA identifiers), NULL when dropped before it
	                           * was known */
};

/* Counters of messages handed to mip6_ha_bu / mip6_ha_input: every one is accepted, rejected (answered
 * with a status >= 128) or dropped (not answered), so received = accepted + rejected + dropped. */
struct mip6_ha_stats {
	uint64_t bu_received;          /* messages handed in (a parse failure counts, as a drop) */
	uint64_t bu_accepted;
	uint64_t bu_rejected;          /* answered with a status >= 128 */
	uint64_t rejected[256];        /* by status */
	uint64_t reject_why[MIP6_REJECT_MAX];  /* by reason: sums to bu_rejected too */
	uint64_t dropped;              /* not answered */
	uint64_t drops[MIP6_DROP_MAX]; /* by reason */
	uint64_t ba_sent;              /* BAs built by mip6_ha_build_ba */
	uint64_t bindings_added, bindings_refreshed, bindings_moved, bindings_deleted, bindings_expired;
	uint64_t dad_failed;           /* new bindings withdrawn by mip6_ha_dad_failed (the Binding
	                                * Update stays counted accepted: the rules accepted it) */
};

/* One mobile node's own counters (per home address, kept while it is configured: a node removed and
 * added again starts from zero; an SA replacement, mip6_ha_mn_update, keeps them). Only what follows
 * its authentication counts here (the Binding Update arrived on its own SA), so no one else can move
 * another node's figures. The BAs by status are kept in MIP6_MN_BA_SLOTS slots (mip6_ba_slot), one
 * per status a home agent sends. */
#define MIP6_MN_BA_SLOTS 15
struct mip6_mn_stats {
	uint64_t bu_accepted;     /* answered with a status below 128 */
	uint64_t bu_refused;      /* answered with a status of 128 or more */
	uint64_t moves;           /* bindings moved to a new care-of address */
	uint64_t last_bu_ms;      /* when its last Binding Update was decided (bu_accepted +
	                           * bu_refused > 0: else none was) */
	uint64_t ba[MIP6_MN_BA_SLOTS];  /* BAs built for it (mip6_ha_build_ba), by mip6_ba_slot */
};
/* The slot of status: 0 for 0, 1..13 for 128..140, 14 for 174; MIP6_MN_BA_SLOTS for a status a
 * home agent does not send (not counted per node). */
unsigned mip6_ba_slot(uint8_t status);
/* The status slot counts (slot < MIP6_MN_BA_SLOTS). */
uint8_t mip6_ba_slot_status(unsigned slot);

struct mip6_ha;

/* Check cfg and allocate the state for cfg->max_mns mobile nodes. -EINVAL (no address, no prefix,
 * lifetime out of range, prefix length 0 or above 128, max_mns 0 or too large, move bucket out of
 * range), -ENOMEM. mip6_ha_config returns cfg with the move bucket's defaults filled in. */
int mip6_ha_create(const struct mip6_ha_config *cfg, struct mip6_ha **out);
void mip6_ha_destroy(struct mip6_ha *ha);
const struct mip6_ha_config *mip6_ha_config(const struct mip6_ha *ha);

/* Allow a mobile node. -EINVAL (bu_sa 0, home address not unicast routable, ha_addr not one of
 * ours, a mobile network prefix of length 0 or above 128 or on a router that is none), -EEXIST (that home address is configured), -ENOSPC (max_mns reached). */
int mip6_ha_mn_add(struct mip6_ha *ha, const struct mip6_mn *mn);
/* Remove a mobile node and its binding. Returns 1 and copies the binding to *was (if not NULL)
 * when it had one, 0 when not, -ENOENT when that home address is not configured. */
int mip6_ha_mn_remove(struct mip6_ha *ha, const uint8_t hoa[16], struct mip6_binding *was);
const struct mip6_mn *mip6_ha_mn_find(const struct mip6_ha *ha, const uint8_t hoa[16]);
/* A configured mobile node's SAs were replaced (an IKE CHILD_SA rekey): take mn's SA identifiers
 * and key_mobility, keeping its binding and sequence number. -EINVAL (bu_sa 0), -ENOENT (that home
 * address is not configured). */
int mip6_ha_mn_update(struct mip6_ha *ha, const struct mip6_mn *mn);
/* The last sequence number accepted from hoa before this home agent started, read back from
 * stable storage (mip6_ha_config.seq_store): until a Binding Update of hoa is accepted again, one
 * whose number is not newer is rejected with 135 naming seq, bound or not, so a Binding Update
 * recorded before the restart changes nothing. -ENOENT when hoa is not configured. */
int mip6_ha_seq_restore(struct mip6_ha *ha, const uint8_t hoa[16], uint16_t seq);

/* Decide on the Binding Update p (from mip6_parse, MIP6_DROP_NONE) that arrived on SA sa_id (0:
 * unprotected) at now_ms, and apply it to the binding cache. The home address is the Home Address
 * option's, or the source when there is none (a mobile node at home deregistering); the care-of
 * address is the Alternate Care-of Address option's, or the source. A home registration that
 * creates or moves a binding must carry that option, equal to the source (174 otherwise), and
 * within the mobile node's move bucket (130 otherwise); see mip6_ha.c for why. Counted in the
 * statistics.
 *  - res->drop != MIP6_DROP_NONE: send nothing; nothing changed. Unprotected Binding Updates and
 *    those protected by an SA that is not the home address's own signalling SA are never answered.
 *  - otherwise send the BA res->ba (build it with mip6_ha_build_ba), protected by res->mn->ba_sa,
 *    whatever the A bit says (§10.3.1), and apply res->change. */
void mip6_ha_bu(struct mip6_ha *ha, const struct mip6_pkt *p, uint32_t sa_id, uint64_t now_ms,
		struct mip6_ha_result *res);
/* mip6_parse + mip6_ha_bu on a decrypted packet; a parse failure or a message that is not a
 * Binding Update is a drop, counted. */
void mip6_ha_input(struct mip6_ha *ha, const uint8_t *pkt, uint32_t len, uint32_t sa_id,
		   uint64_t now_ms, struct mip6_ha_result *res);
/* Build res->ba into buf (mip6_build_ba) and count it sent. Length or -ENOSPC; -EINVAL for a
 * dropped result. */
int mip6_ha_build_ba(struct mip6_ha *ha, const struct mip6_ha_result *res, uint8_t *buf, size_t cap);

/* Duplicate Address Detection (RFC 6275 §10.4.1) found hoa in use on the home link after res (a
 * new binding) was decided: the binding goes (counted deleted and in dad_failed, nothing else
 * changes) and res becomes the Binding Acknowledgement that says so, status 134, lifetime 0.
 * -ENOENT when hoa has no binding (it went meanwhile: nothing to answer for). */
int mip6_ha_dad_failed(struct mip6_ha *ha, const uint8_t hoa[16], struct mip6_ha_result *res);

/* The binding of a home address, or NULL. Valid until the next call that changes the cache. */
const struct mip6_binding *mip6_ha_lookup(const struct mip6_ha *ha, const uint8_t hoa[16]);
/* Remove every binding whose expiry is at or before now_ms, calling fn(b, arg) for each before it
 * goes (the caller tears down its forwarding). Returns how many. O(log n) per binding removed; O(1)
 * when none is due. fn must not call back into ha. */
typedef void (*mip6_binding_fn)(const struct mip6_binding *b, void *arg);
unsigned mip6_ha_expire(struct mip6_ha *ha, uint64_t now_ms, mip6_binding_fn fn, void *arg);
/* Call fn for every binding, in no particular order (`ipsecctl show bindings`); fn must not call
 * back into ha. Returns the number of bindings. */
unsigned mip6_ha_foreach(const struct mip6_ha *ha, mip6_binding_fn fn, void *arg);
unsigned mip6_ha_count(const struct mip6_ha *ha);
/* The earliest expiry in the cache, or UINT64_MAX when it is empty: when to call mip6_ha_expire. */
uint64_t mip6_ha_next_expiry(const struct mip6_ha *ha);

const struct mip6_ha_stats *mip6_ha_stats(const struct mip6_ha *ha);

/* The counters of the mobile node hoa, or NULL when it is not configured. Valid until it is
 * removed. */
const struct mip6_mn_stats *mip6_ha_mn_stats(const struct mip6_ha *ha, const uint8_t hoa[16]);
/* Call fn for every configured mobile node, bound or not (b NULL), in no particular order; fn must
 * not call back into ha. Returns the number of mobile nodes. O(max_mns). */
typedef void (*mip6_mn_fn)(const struct mip6_mn *mn, const struct mip6_mn_stats *st,
			   const struct mip6_binding *b, void *arg);
unsigned mip6_ha_mn_foreach(const struct mip6_ha *ha, mip6_mn_fn fn, void *arg);

#endif
