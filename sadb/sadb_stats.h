/* sadb/sadb_stats.h: the counters view, a key-less copy of what monitoring shows, for processes
 * that must not map the SADB (doc/architecture.md rule 10: only the dataplane, the IKE daemon and
 * ipsecctl map keys). Part of libsadb; sadb/sadb_stats.c implements it.
 *
 * What it holds: the SADB's counts and generation, the dataplane's identity (pid, start time,
 * workers) and every worker's counter record, and per SA its identity (SPI, protocol, direction,
 * mode, state, reqid, IKE SA id, slot, instance, outer addresses), its lifetimes, creation time,
 * counters, first and last use, expiry bits and drops by reason; the home agent's and the
 * cluster's counters, with a record per mobile node of the home agent named by its home address
 * (never its care-of address); and for a while the final counters of the SAs deleted lately (gone
 * records, below). Never a key, a salt, the replay window, a sequence number or a selector. What
 * an unprivileged reader learns from it is which tunnels exist between which addresses and how
 * much they carry: the same as anyone who sees the outside interface's traffic, and nothing that
 * lets it read, forge or replay a packet.
 *
 * Who writes it: one producer, xipsecd's control thread (dp_stats.c), which maps the SADB anyway;
 * it publishes a new reading at most every SADB_STATS_INTERVAL_MS and soon after each SADB change.
 * Who reads it: anyone the file's group lets in (the exporter, xipsec-snmpd), read-only.
 *
 * Files: the view is a regular file mode 0640, owned by the producer's euid, group the monitoring
 * group, in a directory mode 2750 of the same owner and group (default /run/xipsec-stats: not
 * /run/xipsec, whose 0700 keeps the monitoring group away from the SADB; set-group-ID so that the
 * file takes the group without CAP_CHOWN). The producer creates the directory when missing, uses
 * one it owns that no one else may write as it is, and refuses a directory or file name that is a
 * symbolic link, not of the expected type, owned by another user (or a directory others may write). Each producer start builds a new file under a temporary name and renames it into place, so
 * a reader never sees a half-initialised file.
 *
 * Publication (the argument): the file holds a head and two buffers. The producer fills the buffer
 * that is not current: it makes the buffer's seq odd (release fence after), writes the reading word
 * by word with relaxed atomic stores, makes seq even again with a release store, then stores the
 * buffer's index into the head's current word with release. A reader loads current (acquire) and
 * that buffer's seq (acquire), copies the buffer word by word with relaxed loads, issues an acquire
 * fence and loads seq again: the copy is whole exactly when both seq loads are the same even
 * number, since a store of the producer that the copy saw happened after the odd store that follows
 * the first seq load's value, and the fence orders the second load after it. Otherwise it retries
 * (the producer only comes back to this buffer one interval later, so a retry is rare and bounded).
 * Counters in a reading are each exact and the set is a few microseconds wide, as every reader of
 * the runtime area sees them (sadb_runtime_read).
 *
 * Errors: 0 or a negative errno; a message of at most errlen bytes names the path, what was found
 * and what is expected. */
#ifndef XIPSEC_SADB_STATS_H
#define XIPSEC_SADB_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sadb/sadb.h"

#define SADB_STATS_DEFAULT_PATH  "/run/xipsec-stats/stats"
#define SADB_STATS_ENV_PATH      "XIPSEC_STATS"
#define SADB_STATS_DEFAULT_GROUP "xipsec-mon"
#define SADB_STATS_MAGIC         0x5853544154533031ULL /* "XSTATS01" */
#define SADB_STATS_VERSION       5u    /* 2: gone records after the live ones; 3: the home agent's;
                                        * 4: the cluster's; 5: the mobile nodes' records */
#define SADB_STATS_INTERVAL_MS   500u  /* the longest a reading waits for its successor */
#define SADB_STATS_CHANGE_MS     50u   /* the shortest: after a SADB change */

/* Gone records: an SA the dataplane deleted is shown, with the counters it ended with, state
 * SADB_STATE_DEAD and flag SADB_STATS_GONE, for SADB_STATS_GONE_SECONDS after its deletion and
 * among the SADB_STATS_GONE_MAX latest (the oldest leave first). Time enough for every scraper
 * that saw the SA to learn its last moments (a tunnel's counters add them, metrics_tunnel.c). */
#define SADB_STATS_GONE_SECONDS  30u
#define SADB_STATS_GONE_MAX      1024u
#define SADB_STATS_GONE          1u    /* sadb_stats_sa.flags: a gone record */

/* One SA as the view shows it. Every field is a whole number of 64-bit words (copied word by word). */
struct sadb_stats_sa {
	uint32_t slot, spi;
	uint8_t proto, dir, mode, state;   /* enum sadb_proto, sadb_dir, sadb_mode, sadb_state */
	uint32_t reqid;
	uint32_t ike_id;
	uint16_t expired;                  /* bit 0 soft, bit 1 hard */
	uint16_t flags;                    /* SADB_STATS_GONE */
	uint64_t instance, created;
	struct sadb_addr src, dst;
	struct sadb_lifetime soft, hard;
	uint64_t packets, bytes, first_used, last_used;
	uint64_t drops[SADB_DROP_MAX];
};

/* The Mobile IPv6 home agent's counters, as xipsecd keeps them (dataplane/xipsecd/dp_mip6.c): its
 * messages by kind and its Binding Acknowledgements by status. Counters, never a binding's
 * addresses: the view shows no mobile node's whereabouts. New kinds only ever go at the end. */
enum sadb_stats_ha_kind {
	SADB_HA_BU_RECEIVED,         /* Binding Updates handed to the home agent */
	SADB_HA_BU_ACCEPTED,
	SADB_HA_BU_REJECTED,         /* answered with a status >= 128 */
	SADB_HA_BU_DROPPED,          /* not answered */
	SADB_HA_BA_SENT,
	SADB_HA_BE_SENT,             /* Binding Errors */
	SADB_HA_PP_SENT,             /* ICMPv6 Parameter Problems */
	SADB_HA_ERRORS_LIMITED,      /* errors the token bucket held back */
	SADB_HA_BRR_SENT,            /* Binding Refresh Requests */
	SADB_HA_MOVES,               /* bindings moved to a new care-of address */
	SADB_HA_PROXY_NA_SENT,       /* unsolicited Neighbor Advertisements for home addresses */
	SADB_HA_DAD_OK,              /* Duplicate Address Detections that found the address free */
	SADB_HA_DAD_FAILED,          /* ... that found it in use (BA 134) */
	SADB_HA_EXPIRED,             /* bindings that expired */
	SADB_HA_KINDS
};
/* "bu_received", ...: the kind's label; "?" out of range. */
const char *sadb_stats_ha_kind_name(unsigned kind);

struct sadb_stats_ha {
	uint64_t present;                  /* 1: the dataplane runs a home agent */
	uint64_t bindings;                 /* in its cache now */
	uint64_t kind[SADB_HA_KINDS];
	uint64_t ba_status[256];           /* Binding Acknowledgements sent, by status */
};

/* One mobile node of the home agent (mobility/mip6_ha.h's struct mip6_mn_stats): its home address,
 * the name it is configured under, and its counters; never its care-of address, so the view still
 * shows no one's whereabouts. A mobile node is configured from at least two SAs of its own (its
 * Binding Updates' and its acknowledgements'), so a view holds records for half the SADB's SA
 * capacity (SADB_STATS_NODE_CAP), each node once, while it is configured. */
#define SADB_STATS_NODE_BA 16u    /* BA statuses kept apart per node (mip6_ha.h's MIP6_MN_BA_SLOTS) */
#define SADB_STATS_NODE_CAP(max_sa) ((max_sa) / 2u)
struct sadb_stats_node {
	uint8_t hoa[16];
	uint64_t bound;                    /* 1: it has a binding now */
	uint64_t bu_accepted, bu_refused, moves;
	uint64_t last_bu_age_ms;           /* at the reading's `published`; UINT64_MAX: no Binding
	                                    * Update since it was configured */
	uint64_t n_ba;                     /* ba[0..n_ba): the statuses it was answered with */
	struct { uint64_t status, count; } ba[SADB_STATS_NODE_BA];
};

/* The dataplane's side of a two-node cluster, as xipsecd keeps it (dataplane/xipsecd/dp_cluster.c,
 * dp_segment.c): the node's role and its peer, the sync channel's counters, the active/active
 * segments and the least lease headroom. The SA with that headroom is named by its SPI and slot,
 * as the SA records already name it: never a lease end, a sequence number or a window top. The
 * names below are the ones `ipsecctl show cluster` prints too. New counters and reasons only ever
 * go at the end. */
enum sadb_stats_cl_counter {
	SADB_CL_SENT,                /* sync messages sent */
	SADB_CL_RECEIVED,            /* ... received and accepted */
	SADB_CL_SEND_ERRORS,
	SADB_CL_LEASES_ASKED,        /* lease ends asked of the peer (active) */
	SADB_CL_LEASES_ACKED,        /* ... the peer acknowledged */
	SADB_CL_LEASES_REFUSED,
	SADB_CL_RESYNCS_ASKED,       /* full resyncs this node asked for (standby) */
	SADB_CL_RESYNCS_SERVED,      /* ... it served (active) */
	SADB_CL_TAKEOVERS,           /* times this node became active */
	SADB_CL_SOLO_SOFT,           /* SAs whose solo budget was half used (soft expiry raised) */
	SADB_CL_SOLO_HARD,           /* ... all used (hard expiry) */
	SADB_CL_COUNTERS
};
/* Why a sync datagram was dropped (the order of dp_cluster.h's enum dpc_drop). */
enum sadb_stats_cl_drop {
	SADB_CL_DROP_SHORT, SADB_CL_DROP_AUTH, SADB_CL_DROP_REPLAY, SADB_CL_DROP_STALE,
	SADB_CL_DROP_REFLECTED, SADB_CL_DROP_FOREIGN, SADB_CL_DROP_BAD,
	SADB_CL_DROPS
};
#define SADB_STATS_SEGMENTS      16u   /* active/active segments (xdp_segment.h's DP_SEG_MAX) */
#define SADB_STATS_NONE          UINT64_MAX /* an age or headroom that does not exist (yet) */

/* "sent", ...: the counter's label; "?" out of range. */
const char *sadb_stats_cl_counter_name(unsigned counter);
/* "short", "auth", ...: the drop reason's label; "?" out of range. */
const char *sadb_stats_cl_drop_name(unsigned reason);

struct sadb_stats_cluster {
	uint64_t present;                  /* 1: the dataplane is a node of a cluster */
	uint64_t active, eligible;         /* this node's role (1 active), caught up with its peer */
	uint64_t peer_reachable, peer_active;
	uint64_t last_message_ms;          /* since the peer's last message; SADB_STATS_NONE: never */
	uint64_t sync_lag_ms;              /* since its last lease or window message; SADB_STATS_NONE */
	uint64_t counter[SADB_CL_COUNTERS];
	uint64_t dropped[SADB_CL_DROPS];
	uint64_t covered_sas;              /* SAs whose numbers or window the cluster holds */
	uint64_t min_headroom;             /* least lease headroom of an outbound SA this node sends
	                                    * on (numbers left before it must wait for an
	                                    * acknowledgement); SADB_STATS_NONE: no such SA */
	uint32_t min_headroom_spi, min_headroom_slot;
	uint64_t segments, owned;          /* active/active segments (0: none), bit s-1 for owned s */
	uint64_t seg_kept[SADB_STATS_SEGMENTS];    /* inbound frames the XDP program kept, by segment */
	uint64_t seg_foreign[SADB_STATS_SEGMENTS]; /* ... dropped as the other node's */
	uint64_t cluster_foreign;          /* outbound plaintext the workers left to the other node */
};

/* One reading: the buffer's fixed part, followed by n_rec records of the SAs in the SADB, then
 * n_gone gone records (a reader that looks at the first n_rec only sees the SADB's SAs), then
 * n_node records of the home agent's mobile nodes (sadb_stats_nodes). */
struct sadb_stats_reading {
	uint64_t seq;                      /* odd while the producer writes this buffer */
	uint64_t published;                /* CLOCK_REALTIME nanoseconds the reading was completed */
	uint64_t sadb_generation;
	uint32_t n_sa, max_sa;             /* SAs in the SADB and its capacity */
	uint32_t n_policy, max_policy;
	uint64_t dp_pid, dp_started;       /* the dataplane (sadb_dp_stats), 0 = none */
	uint32_t n_workers;
	uint32_t n_rec;                    /* SA records below (every SA the reading saw) */
	uint32_t n_gone;                   /* gone records after them */
	uint32_t n_node;                   /* mobile node records after those */
	uint64_t sa_drops[SADB_DROP_MAX];  /* drops of every SA, by reason */
	struct sadb_stats_ha ha;           /* the last sadb_stats_set_ha; zero without one */
	struct sadb_stats_cluster cluster; /* the last sadb_stats_set_cluster; zero without one */
	struct sadb_worker_stats w[SADB_MAX_WORKERS];
	struct sadb_stats_sa sa[];
};

/* ---- the producer ---- */
struct sadb_stats_writer;

/* $XIPSEC_STATS if set (even to "", which means no view), else SADB_STATS_DEFAULT_PATH. */
const char *sadb_stats_default_path(void);
/* The group named or numbered by s (NULL: SADB_STATS_DEFAULT_GROUP); -ENOENT when there is none. */
int sadb_stats_group(const char *s, gid_t *gid);
/* Make the view at path for SAs up to max_sa (the SADB's capacity), directory and file group gid.
 * -ELOOP, -ENOTDIR, -EINVAL, -EPERM for names that are not ours (above), else the errno of the
 * failing call. */
int sadb_stats_create(const char *path, gid_t gid, uint32_t max_sa, struct sadb_stats_writer **out,
		      char *errmsg, size_t errlen);
/* Publish a reading of db now (its SAs, counts, dataplane and workers). 0, or -errno of the SADB
 * read (the previous reading stays current). Keys read from db never leave this call's stack,
 * which is wiped. One thread at a time. */
int sadb_stats_publish(struct sadb_stats_writer *w, const struct sadb *db);
/* The home agent's counters for the next readings (the producer's own, not the SADB's). */
void sadb_stats_set_ha(struct sadb_stats_writer *w, const struct sadb_stats_ha *ha);
/* Its mobile nodes' records for the next readings, copied: n of them, at most
 * SADB_STATS_NODE_CAP(max_sa) (more: -ENOSPC, and the readings keep the previous ones). 0 or
 * -ENOMEM. */
int sadb_stats_set_nodes(struct sadb_stats_writer *w, const struct sadb_stats_node *nodes, uint32_t n);
/* The cluster's state for the next readings (the producer's own). */
void sadb_stats_set_cluster(struct sadb_stats_writer *w, const struct sadb_stats_cluster *cl);
/* The dataplane deleted sa (its record as the dataplane held it, in slot): keep a gone record of
 * it with the counters its runtime area holds now, published from the next reading on. The
 * caller calls it when no one adds to them any more (dp_stats.c) and before the slot may be given
 * to another SA. 0, or -ESTALE when the area no longer belongs to the SA (nothing kept). */
int sadb_stats_gone(struct sadb_stats_writer *w, const struct sadb *db, const struct sadb_sa *sa,
		    uint32_t slot);
/* Unmap; the file stays (readers see its age grow and the dataplane's pid gone). NULL is fine. */
void sadb_stats_close(struct sadb_stats_writer *w);

/* ---- readers ---- */
/* One whole reading of the view at path (NULL: sadb_stats_default_path()) in malloc'ed memory
 * (*out, free() it): opened read-only, never through a symbolic link, a regular file only.
 * -ENOENT (no producer has run), -EACCES, -EPROTO (not a view of this version; the message says
 * what), -EAGAIN (the producer kept changing the buffer), -ENOMEM. */
int sadb_stats_load(const char *path, struct sadb_stats_reading **out, char *errmsg, size_t errlen);

/* The mobile node records of r (r->n_node of them). */
const struct sadb_stats_node *sadb_stats_nodes(const struct sadb_stats_reading *r);

/* The reading the producer would publish, made from db directly in malloc'ed memory (*out, free()
 * it): for a process that maps the SADB anyway (ipsecctl's one-shot metrics), so that it shows
 * exactly what a reader of the view does. with_sa false: no SA records, the totals still count
 * every SA. 0, -ENOMEM or the SADB read's -errno. */
int sadb_stats_read(const struct sadb *db, bool with_sa, struct sadb_stats_reading **out);

#endif
