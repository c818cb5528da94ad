/* dataplane/xipsecd/dp_cluster.h: the dataplane's side of a two-node cluster: replicated sequence
 * leases with a bounded solo budget and synced inbound window tops (the argument is at the top of
 * dp_cluster_lease.c), the authenticated sync channel between the two xipsecds (dp_cluster_msg.c),
 * the settings (dp_cluster_cfg.c) and the node's role (dp_cluster.c). Control thread only. */
#ifndef XIPSEC_DP_CLUSTER_H
#define XIPSEC_DP_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "sadb/sadb.h"
#include "sadb/sadb_stats.h"

#define DP_CLUSTER_PORT 4510
#define DP_CLUSTER_KEY_DEFAULT "/etc/xipsec/cluster.key"
#define DP_CLUSTER_LEASE_DEFAULT (1ull << 20)   /* numbers per replicated lease */
#define DP_CLUSTER_BUDGET_DEFAULT (1ull << 24)  /* numbers a node may use without an acknowledgement */
#define DP_CLUSTER_SYNC_PACKETS_DEFAULT 1024u   /* window top sent after this many numbers... */
#define DP_CLUSTER_SYNC_MS_DEFAULT 100u         /* ... or this often while it moves */

/* ---- dp_cluster_lease.c: the lease arithmetic, no I/O (unit-tested on its own) ---- */

/* One outbound SA's lease state on one node. All values are sequence numbers: a lease end E means
 * every number up to E may be used. */
struct dpc_lease {
	uint64_t recorded;  /* the highest lease end this node knows may have been used by either node:
	                     * what it acknowledged to the peer, what the peer told it in a resync, and
	                     * what it granted itself; merged by max, never lowered */
	uint64_t acked;     /* the highest lease end the peer acknowledged to this node (active) */
	uint64_t asked;     /* the lease end asked of the peer and not acknowledged yet (0: none) */
	uint64_t asked_base; /* ... and its base: the reservation is raised to it before the end is used */
	uint64_t granted;   /* the lease end this node let its engine use (rt->seq_lease) */
	uint64_t solo_base; /* alone: the acknowledged end its solo budget counts from */
	bool solo;
};

/* The highest number this node knows may have been used under the SA, by either node: its
 * reservation, its grants and asks, what it recorded (what a resync or a merge sends). */
uint64_t dpc_lease_top(const struct dpc_lease *l, uint64_t reserved);
/* Where a node taking over starts an SA: its own reservation and every lease end it recorded,
 * plus the budget times (1 + rank), rank 0 or 1 from the node's address (dp_cluster_lease.c says
 * why the rank). The first number it sends is the result + 1. */
uint64_t dpc_lease_takeover(const struct dpc_lease *l, uint64_t reserved, uint64_t budget, unsigned rank);
/* The next lease end an active node asks the peer for, or 0 when none is due: less than half of
 * lease is left between reserved and granted, and none is in flight. Sets asked and asked_base. */
uint64_t dpc_lease_want(struct dpc_lease *l, uint64_t reserved, uint64_t lease);
/* The peer acknowledged end: the new end the engine may use (granted), never lower than before. */
uint64_t dpc_lease_ack(struct dpc_lease *l, uint64_t end);
/* The standby records a lease end the active asked for (or a resync reported): returns the value
 * to acknowledge (the new recorded end). */
uint64_t dpc_lease_record(struct dpc_lease *l, uint64_t end);
/* The peer is unreachable: the most the engine may use alone, counted from the last acknowledged
 * end (a takeover sets acked to its start): acked + budget, fixed on the first call until an
 * acknowledgement comes. */
uint64_t dpc_lease_solo_cap(struct dpc_lease *l, uint64_t budget);
/* Solo expiry: 1 (soft) once half the budget is used, 3 (hard) once it is all used, else 0. */
unsigned dpc_lease_solo_expiry(const struct dpc_lease *l, uint64_t reserved, uint64_t budget);

/* ---- dp_cluster_sas.c: whether a standby holds the SAs the active holds ---- */

#define DPC_SADB_GRACE_NS (3000ull * 1000000ull) /* a standby's SAs may differ from the active's this
                                                   * long before it is no longer eligible */

/* This node's covered SAs (n, sum) and the active peer's from its last heartbeat; differ_ns: since
 * when they differ (0: the same); warned: the difference was reported. */
struct dpc_sas {
	uint64_t n, sum, peer_n, peer_sum, differ_ns;
	bool warned;
};

enum dpc_sas_event { DPC_SAS_NONE, DPC_SAS_DIFFER, DPC_SAS_MATCH };

struct dpc_sa_key;
/* One SA's term of the sum: a 64-bit hash of its cross-node key. */
uint64_t dpc_key_term(const struct dpc_sa_key *k);
/* The sets have differed for the grace period. */
bool dpc_sas_differ(const struct dpc_sas *s, uint64_t now);
/* Record this node's set (n SAs, sum of their terms) at now; reference: the peer's set is the one to
 * hold (an active peer, heard, while this node is standby). DPC_SAS_DIFFER once the sets have
 * differed for the grace, DPC_SAS_MATCH when they match again after that. */
enum dpc_sas_event dpc_sas_compare(struct dpc_sas *s, uint64_t n, uint64_t sum, bool reference, uint64_t now);

/* ---- dp_cluster_msg.c: the sync channel's messages ---- */

/* An SA across nodes: (SPI, protocol, destination) and a fingerprint of its keys, never the keys. */
struct dpc_sa_key {
	uint32_t spi;
	uint8_t proto, dir, family, pad;
	uint8_t dst[16];
	uint8_t fp[8];
};

enum dpc_type {
	DPC_HELLO = 1,  /* heartbeat: role, eligible; entry 0: the sender's covered SAs (below) */
	DPC_LEASE,      /* active -> standby: record these lease ends */
	DPC_ACK,        /* standby -> active: these lease ends are recorded */
	DPC_WINDOW,     /* active -> standby: inbound window tops */
	DPC_RESYNC,     /* standby -> active: send me everything */
	DPC_DONE,       /* active -> standby: a resync is complete */
	DPC_MERGE,      /* either way: lease ends this node used, merged by max (after a split brain) */
	DPC_TYPE_MAX
};

#define DPC_MAX_ENTRIES 28u     /* per message: 28 * 48 + 48 bytes, under a 1500-byte MTU */
#define DPC_MSG_MAX 1600u
#define DPC_KEY_LEN 32u
#define DPC_SKEW_NS (30ull * 1000000000ull) /* how far a message's counter may be from our clock */
#define DPC_SEG_SAID (1ull << 32)   /* HELLO's entry 1: the segments below are the sender's */
#define DPC_SEG_FRESH_NS (600ull * 1000000ull) /* a peer's segments count for three heartbeats */

/* HELLO: base = how many SAs the sender's cluster covers, end = the sum of their keys' 64-bit hashes;
 * its entry 1, base = DPC_SEG_SAID | the active/active segments the sender owns (a sender that does
 * not say them, an older one, sends entry 0 alone);
 * LEASE: (base, end] asked; ACK: end recorded (0: refused), base = the standby's recorded top;
 * WINDOW: end = the window's top; MERGE: end = the highest number this node may have used;
 * RESYNC and DONE: base = the standby's resync token in entry 0. */
struct dpc_entry {
	struct dpc_sa_key key;
	uint64_t base, end;
};

struct dpc_msg {
	uint8_t type;
	uint8_t role;      /* the sender's: 1 active, 0 standby */
	uint8_t eligible;  /* the sender has caught up */
	uint8_t n;
	uint64_t counter;  /* the sender's message counter (nonce), set by dpc_seal */
	struct dpc_entry e[DPC_MAX_ENTRIES];
};

/* One direction's AEAD state. */
struct dpc_chan {
	uint8_t key[DPC_KEY_LEN];
	uint8_t dir;          /* this node's rank: the nonce's direction byte */
	uint8_t salt[15];     /* random per process start */
	uint64_t next;        /* next counter to send */
	uint64_t peer_top;    /* highest counter accepted from the peer */
};

enum dpc_drop {
	DPC_DROP_SHORT,      /* shorter than a header and a tag, or a length that does not add up */
	DPC_DROP_AUTH,       /* the AEAD tag does not verify (forged, corrupted, another key) */
	DPC_DROP_REPLAY,     /* a counter at or below the highest accepted */
	DPC_DROP_STALE,      /* a counter too far from our clock (a replay from an earlier run) */
	DPC_DROP_REFLECTED,  /* our own direction byte: one of our messages sent back */
	DPC_DROP_FOREIGN,    /* not from the configured peer's address and port */
	DPC_DROP_BAD,        /* verified but malformed (type, count) */
	DPC_DROP_MAX
};
/* Their names: sadb_stats_cl_drop_name (the counters view's, one list for every reader). */

/* Start a channel: key (32 bytes), this node's rank, counter from now_ns (CLOCK_REALTIME), fresh
 * salt. 0 or -errno. */
int dpc_chan_init(struct dpc_chan *c, const uint8_t key[DPC_KEY_LEN], unsigned rank, uint64_t now_ns);
/* Encode and encrypt m into buf (at least DPC_MSG_MAX): its length. now_ns: CLOCK_REALTIME. */
size_t dpc_seal(struct dpc_chan *c, struct dpc_msg *m, uint8_t *buf, uint64_t now_ns);
/* Decrypt and decode: 0 and *m, or -1 with *why (a dpc_drop). now_ns: CLOCK_REALTIME. */
int dpc_open(struct dpc_chan *c, const uint8_t *buf, size_t len, uint64_t now_ns, struct dpc_msg *m,
	     enum dpc_drop *why);
/* The key fingerprint of an SA (SHA-256 of a label and its keys, 64 bits) and its cross-node key. */
void dpc_sa_key(const struct sadb_sa *sa, struct dpc_sa_key *k);
/* Read a cluster key file: 64 hex digits, a regular file of root's (or ours), mode 0600, opened
 * without following links. 0 or -errno with a message. */
int dpc_key_load(const char *path, uint8_t key[DPC_KEY_LEN], char *msg, size_t len);

struct dp_ctx;
struct dp_sa;

/* ---- the settings (dp_cluster_cfg.c) and the node (dp_cluster.c) ---- */
struct dp_cluster_cfg {
	const char *local, *peer, *key_path;
	uint64_t lease, budget;
	unsigned sync_packets, sync_ms;
	const char *segments, *address; /* --cluster-segments, --cluster-address (dp_segment.c) */
};

/* ---- dp_cluster_cfg.c: the settings ---- */
/* A --cluster-* option (name without the dashes) and its argument into cfg: 0, or -EINVAL with a
 * message. */
int dp_cluster_option(struct dp_cluster_cfg *cfg, const char *name, const char *arg, char *err, size_t len);
/* Fill cfg from the environment (XIPSEC_CLUSTER_*) where the options left it unset. */
void dp_cluster_cfg_env(struct dp_cluster_cfg *cfg);
/* ADDR, ADDR:PORT or [ADDR]:PORT into ss (port DP_CLUSTER_PORT when none): 0 or -EINVAL. */
int dpc_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* --cluster-local and --cluster-peer parsed (one family, not the same) and this node's rank (0 for
 * the lower address): 0, or -EINVAL with the reason in msg. */
int dpc_cfg_addrs(const struct dp_cluster_cfg *cfg, struct sockaddr_storage *local, socklen_t *local_len,
		  struct sockaddr_storage *peer, socklen_t *peer_len, unsigned *rank, char *msg, size_t len);

/* ---- dp_cluster.c: the node ---- */
/* Without cfg->peer: no cluster, 0. Else the socket and key, the node starts standby. 0 or -errno
 * (logged). */
int dp_cluster_open(struct dp_ctx *ctx, const struct dp_cluster_cfg *cfg);
void dp_cluster_close(struct dp_ctx *ctx);
bool dp_cluster_enabled(const struct dp_ctx *ctx);
/* Whether the cluster holds this SA's sequence numbers (outbound) or window (inbound). */
bool dp_cluster_covers(const struct dp_ctx *ctx, const struct sadb_sa *sa);
/* Whether a clustered node refuses this SA: a manual key whose numbers (outbound counter mode) or
 * replay window (inbound) only this node's disk holds (dp_seqmark.c). The other node carries the
 * same key with its own marks, so whichever of the two sends or accepts after the other would
 * repeat a nonce or take a replay: no lease the pair shares covers it. NULL: the reason, else. */
const char *dp_cluster_refuses(const struct dp_ctx *ctx, const struct sadb_sa *sa);
/* The sync socket's descriptor for poll, -1 without a cluster. */
int dp_cluster_fd(const struct dp_ctx *ctx);
/* A datagram is waiting. */
void dp_cluster_read(struct dp_ctx *ctx);
/* Every control tick: leases, window tops, heartbeats, solo budgets. v: the SAs the cluster covers
 * (dp_sa.c lists them when it builds a table), n of them. */
void dp_cluster_tick(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n);
/* A new SA object (before the table holding it is published): a standby's outbound SA gets no
 * lease, an active's starts where the cluster says. */
void dp_cluster_sa_new(struct dp_ctx *ctx, struct dp_sa *s);
/* An active node takes SA s over now, as when it was made active (dp_cluster_lease.c): outbound
 * above everything the other node may have used, with the engine's new limit; inbound its window
 * seeded at the top the other reported. For a segment gained (dp_cluster_seg.c). */
void dp_cluster_take_sa(struct dp_ctx *ctx, struct dp_sa *s);
/* Active/active: this node now owns the segments of mask too (bit s-1 for s). Called before the
 * workers see the new ownership: dp_cluster_take_sa for each SA of those segments
 * (dp_cluster_seg.c). */
void dp_cluster_segments_gained(struct dp_ctx *ctx, uint32_t mask);
/* Active/active: the segments the other node's dataplane owns, as its last heartbeat said, when that
 * heartbeat came within DPC_SEG_FRESH_NS of now (0 otherwise: no peer, a silent one, or one that
 * does not say). dp_segment.c takes a segment the other node still forwards only once it has let
 * it go. */
uint32_t dp_cluster_peer_segments(const struct dp_ctx *ctx, uint64_t now);
/* Active/active: this node's owned segments changed to owned: said to the other node at once (a
 * heartbeat now) and in every heartbeat after. */
void dp_cluster_say_segments(struct dp_ctx *ctx, uint32_t owned);
/* `cluster active` / `cluster standby` from the control socket: 0, or a refusal written to msg. */
int dp_cluster_set_role(struct dp_ctx *ctx, bool active, char *msg, size_t len);
/* The control socket's `cluster` answer (JSON, one line) or `cluster text`, with the lease headroom
 * of each of the n SAs of v (dp_sa_cluster_list). */
size_t dp_cluster_status(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, bool json, char *buf,
			 size_t len);
/* The cluster's section of the counters view (dp_stats.c), from the same figures as
 * dp_cluster_status: zero but the segments' without a cluster. */
void dp_cluster_stats(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, struct sadb_stats_cluster *st);

#endif
