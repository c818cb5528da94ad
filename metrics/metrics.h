/* metrics/metrics.h: xipsec's monitoring metrics collection layer (metrics/libxmetrics.a). One call,
 * xm_collect(), reads every counter an operator monitors — from the SADB, or from the key-less
 * counters view xipsecd makes of it (sadb/sadb_stats.h; xm_opts.stats), (per-SA counters, drops by
 * reason, lifetime remaining and expiry state; the dataplane workers' records; SA and policy counts)
 * and from xipsec-iked (IKE SA and CHILD SA counts by state over VICI, charon's message counters, and
 * the daemon's own counters from its status file) — into a snapshot of metric families. The
 * exporters walk that snapshot: the Prometheus text writer (ipsecctl metrics, metrics/metrics_prom.c)
 * and the SNMP AgentX subagent serve the same families, so both always show the same numbers under
 * the same meaning. Readers only: nothing here writes the SADB or talks to the dataplane.
 *
 * Model. A snapshot holds every family of enum xm_id, always all of them, at index id
 * (snap->fam[XM_SA_PACKETS]); a family whose source is down simply has no samples. A family has a
 * Prometheus name (with its _total suffix for counters), a help text and a type. Its samples carry:
 *  - row: the entity the sample belongs to, an index into the family's row set (rows): the SA row
 *    set (one row per SA; labels spi, proto, dir, local, peer, connection, child, reqid;
 *    rows->sa[row] holds its key fields for table indexes; connection and child are the names
 *    xipsec-iked's list-sas gives the SA's SPI, "" for a manual SA or with xipsec-iked not
 *    answering), the tunnel row set (one row per (connection, child, reqid) that has SAs or had
 *    them within XM_TUNNEL_KEEP_SECONDS of an exporter's memory; labels connection, child, reqid),
 *    the worker row set (label worker; row = worker number), the build row set (one row 0; labels
 *    version, sadb_layout, vici), the home agent's node row set (one row per mobile node, label
 *    home_address; XM_HA_NODES_MAX) or the global row set (one row 0, no labels);
 *  - sub: the value of the family's one extra label (sub_label, e.g. "reason"), an index into
 *    sub_values; 0 and meaningless when sub_label is NULL. For drop families sub is the drop
 *    reason's number (sadb/sadb_drops.h), which is stable within a SADB layout version;
 *  - value: an unsigned 64-bit integer (counters never go down while their source runs; gauges are
 *    whole numbers: seconds, bytes, packets, states).
 * Families over the same row set list their samples in row order, and every SA family has one
 * sample per SA row except where said (drops: only the reasons that counted; remaining lifetime:
 * only limits that are set), so a table handler can join them by row.
 *
 * Stability: enum xm_id values, names, row sets and sub tables only ever grow (new values at the
 * end); an exporter may map ids to OIDs. Strings in a snapshot live until xm_snapshot_free().
 *
 * Threads: xm_collect() may run in any one thread at a time per snapshot; xm_global_init() once per
 * process before the first xm_collect() (it starts libvici), xm_global_deinit() at exit.
 *
 * Linking: metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) -lm (configure.ac, metrics/local.mk).
 * libvici is loaded at run time (vici_dl.h); without it the IKE families are left out. */
#ifndef XIPSEC_METRICS_H
#define XIPSEC_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sadb/sadb.h"

enum xm_type { XM_COUNTER = 1, XM_GAUGE = 2 };

/* Every family; the comment is the Prometheus name (help texts in metrics.c, ipsecctl(8)). */
enum xm_id {
	/* SADB and dataplane, global row set */
	XM_SADB_UP,                 /* xipsec_sadb_up: 1 when the SADB (or its view) could be read */
	XM_SADB_SAS,                /* xipsec_sadb_sas */
	XM_SADB_SA_CAPACITY,        /* xipsec_sadb_sa_capacity */
	XM_SADB_POLICIES,           /* xipsec_sadb_policies */
	XM_SADB_POLICY_CAPACITY,    /* xipsec_sadb_policy_capacity */
	XM_SADB_CHANGES,            /* xipsec_sadb_changes_total (the SADB generation) */
	XM_DP_UP,                   /* xipsec_dataplane_up */
	XM_DP_START_TIME,           /* xipsec_dataplane_start_time_seconds */
	XM_DP_WORKERS,              /* xipsec_dataplane_workers */
	XM_DROPS,                   /* xipsec_drops_total{reason}: per-SA + SA-less */
	/* per SA, SA row set */
	XM_SA_PACKETS,              /* xipsec_sa_packets_total */
	XM_SA_BYTES,                /* xipsec_sa_bytes_total */
	XM_SA_DROPS,                /* xipsec_sa_drops_total{reason} (reasons that counted) */
	XM_SA_STATE,                /* xipsec_sa_state_code: 0 larval 1 mature 2 dying 3 dead
	                             * (deprecated for Prometheus: XM_SA_STATES; the SNMP SA table's
	                             * state column) */
	XM_SA_EXPIRY,               /* xipsec_sa_expiry: 0 none 1 soft lifetime reached 2 hard */
	XM_SA_CREATED,              /* xipsec_sa_created_timestamp_seconds */
	XM_SA_LAST_USED,            /* xipsec_sa_last_used_timestamp_seconds (0 = never) */
	XM_SA_REMAIN_SECONDS,       /* xipsec_sa_lifetime_remaining_seconds{limit} */
	XM_SA_REMAIN_BYTES,         /* xipsec_sa_lifetime_remaining_bytes{limit} */
	XM_SA_REMAIN_PACKETS,       /* xipsec_sa_lifetime_remaining_packets{limit} */
	/* per worker, worker row set */
	XM_W_RX_PACKETS,            /* xipsec_worker_rx_packets_total */
	XM_W_RX_BYTES,              /* xipsec_worker_rx_bytes_total */
	XM_W_TX_PACKETS,            /* xipsec_worker_tx_packets_total */
	XM_W_TX_BYTES,              /* xipsec_worker_tx_bytes_total */
	XM_W_FRAG_PACKETS,          /* xipsec_worker_fragmented_packets_total */
	XM_W_FRAG_MADE,             /* xipsec_worker_fragments_made_total */
	XM_W_REASM_PACKETS,         /* xipsec_worker_reassembled_packets_total */
	XM_W_REASM_FRAGS,           /* xipsec_worker_reassembled_fragments_total */
	XM_W_HANDOFF_DONE,          /* xipsec_worker_handoff_decrypted_packets_total */
	XM_W_HANDOFF_JOBS,          /* xipsec_worker_handoff_jobs_total */
	XM_W_HANDOFF_PKTS,          /* xipsec_worker_handoff_helped_packets_total */
	XM_W_HANDOFF_BACK,          /* xipsec_worker_handoff_jobs_taken_back_total */
	XM_W_DROPS,                 /* xipsec_worker_drops_total{reason}: drops that belong to no SA */
	/* xipsec-iked, global row set */
	XM_IKE_UP,                  /* xipsec_ike_up: 1 when VICI answered */
	XM_IKE_SAS,                 /* xipsec_ike_sas{state} */
	XM_IKE_HALF_OPEN,           /* xipsec_ike_half_open_sas */
	XM_IKE_CHILD_SAS,           /* xipsec_ike_child_sas{state} */
	XM_IKE_EVENTS,              /* xipsec_ike_events_total{event}: charon's counters plugin */
	XM_IKE_ESTABLISHED,         /* xipsec_ike_sa_established_total (status file from here on) */
	XM_IKE_MAIN_MODES,          /* xipsec_ike_main_modes_total */
	XM_IKE_V2_SAS,              /* xipsec_ike_ikev2_sas_total */
	XM_IKE_CHILD_ESTABLISHED,   /* xipsec_ike_child_sa_established_total */
	XM_IKE_CHILD_REKEYED,       /* xipsec_ike_child_sa_rekeyed_total */
	XM_IKE_MAXQM_RENEWALS,      /* xipsec_ike_maxqm_renewals_total */
	XM_IKE_SADB_ADDED,          /* xipsec_ike_sadb_sa_added_total */
	XM_IKE_SADB_DELETED,        /* xipsec_ike_sadb_sa_deleted_total */
	XM_IKE_SOFT_EXPIRED,        /* xipsec_ike_sadb_soft_expired_total */
	XM_IKE_HARD_EXPIRED,        /* xipsec_ike_sadb_hard_expired_total */
	XM_IKE_SEQ_SOFT_EXPIRED,    /* xipsec_ike_sadb_seq_soft_expired_total */
	XM_STATS_AGE,               /* xipsec_stats_age_seconds: the counters view's, global */
	/* per SA, SA row set */
	XM_SA_STATES,               /* xipsec_sa_state{state}: 1 for the SA's state, 0 the others */
	/* per tunnel, tunnel row set: the SAs' counters plus those of its SAs already gone */
	XM_TUNNEL_SAS,              /* xipsec_tunnel_sas{dir}: SAs the tunnel has now */
	XM_TUNNEL_PACKETS,          /* xipsec_tunnel_packets_total{dir} */
	XM_TUNNEL_BYTES,            /* xipsec_tunnel_bytes_total{dir} */
	XM_TUNNEL_DROPS,            /* xipsec_tunnel_drops_total{dir} */
	/* build row set */
	XM_BUILD_INFO,              /* xipsec_build_info{version,sadb_layout,vici} 1 */
	/* the Mobile IPv6 home agent (the counters view only), global row set */
	XM_HA_UP,                   /* xipsec_home_agent_up: 1 when xipsecd runs a home agent */
	XM_HA_BINDINGS,             /* xipsec_home_agent_bindings */
	XM_HA_EVENTS,               /* xipsec_home_agent_events_total{kind} */
	XM_HA_BA_STATUS,            /* xipsec_home_agent_binding_acks_total{status} (statuses sent) */
	/* the dataplane's side of a two-node cluster (the counters view only), global row set */
	XM_CL_UP,                   /* xipsec_cluster_up: 1 when xipsecd is a node of a cluster */
	XM_CL_ACTIVE,               /* xipsec_cluster_active: 1 active, 0 standby */
	XM_CL_ELIGIBLE,             /* xipsec_cluster_eligible */
	XM_CL_PEER_REACHABLE,       /* xipsec_cluster_peer_reachable */
	XM_CL_PEER_ACTIVE,          /* xipsec_cluster_peer_active */
	XM_CL_LAST_MESSAGE_MS,      /* xipsec_cluster_last_message_age_milliseconds */
	XM_CL_SYNC_LAG_MS,          /* xipsec_cluster_sync_lag_milliseconds */
	XM_CL_SYNC,                 /* xipsec_cluster_sync_total{event} */
	XM_CL_SYNC_DROPPED,         /* xipsec_cluster_sync_dropped_total{reason} */
	XM_CL_COVERED_SAS,          /* xipsec_cluster_covered_sas */
	XM_CL_HEADROOM_MIN,         /* xipsec_cluster_lease_headroom_min */
	XM_CL_HEADROOM_MIN_SPI,     /* xipsec_cluster_lease_headroom_min_spi */
	XM_CL_SEGMENTS,             /* xipsec_cluster_segments */
	XM_CL_SEG_OWNED,            /* xipsec_cluster_segment_owned{segment} */
	XM_CL_SEG_KEPT,             /* xipsec_cluster_segment_kept_total{segment} */
	XM_CL_SEG_DROPPED,          /* xipsec_cluster_segment_dropped_total{segment} */
	XM_CL_FOREIGN,              /* xipsec_cluster_foreign_total */
	/* each mobile node of the home agent (metrics_node.c; row set node, label home_address) */
	XM_HA_NODE_BU,              /* xipsec_home_agent_node_binding_updates_total{result} */
	XM_HA_NODE_MOVES,           /* xipsec_home_agent_node_moves_total */
	XM_HA_NODE_BA_STATUS,       /* xipsec_home_agent_node_binding_acks_total{status} */
	XM_HA_NODE_LAST_BU_AGE,     /* xipsec_home_agent_node_last_binding_update_age_seconds (nodes
	                             * that sent one) */
	XM_HA_NODE_BOUND,           /* xipsec_home_agent_node_bound: 1 while it has a binding */
	XM_HA_NODES_LEFT_OUT,       /* xipsec_home_agent_nodes_left_out: nodes past XM_HA_NODES_MAX */
	XM_FAMILIES                 /* how many there are */
};

#define XM_MAX_LABELS 8

/* The key fields of one SA row: what a table index is made of. */
struct xm_sa_key {
	uint32_t slot;              /* SADB slot, stable for the SA's life */
	uint32_t spi;
	uint8_t proto, dir, mode, state; /* enum sadb_proto, sadb_dir, sadb_mode, sadb_state */
	uint32_t reqid;
	uint32_t ike_id;            /* 0 = manual */
	uint64_t instance;          /* unique per SA ever added */
	struct sadb_addr src, dst;
};

enum xm_rows_kind { XM_ROWS_GLOBAL, XM_ROWS_SA, XM_ROWS_WORKER, XM_ROWS_TUNNEL, XM_ROWS_BUILD,
		   XM_ROWS_NODE };

/* The home agent's mobile nodes have a row each (label home_address, in the counters view's order,
 * stable while they stay configured) up to this many: each costs a Prometheus server at most 19
 * series (2 Binding Update results, moves, age, bound and up to 14 BA statuses; 5 or 6 for a node
 * that was only ever accepted), so the cap keeps a home agent of many nodes from flooding it. The
 * nodes past it are left out of every per-node family and counted in
 * xipsec_home_agent_nodes_left_out; the home agent's totals still count them. */
#define XM_HA_NODES_MAX 1024u

struct xm_rowset {
	enum xm_rows_kind kind;
	unsigned n_labels;
	const char *label_names[XM_MAX_LABELS];
	size_t n_rows;
	struct xm_sa_key *sa;       /* XM_ROWS_SA: n_rows keys; else NULL */
	/* label values: label i of row r at text + off[r * n_labels + i] (internal) */
	size_t *off;
	char *text;
	size_t text_len, text_cap, off_cap;
};

struct xm_sample {
	uint32_t row;
	uint32_t sub;
	uint64_t value;
};

struct xm_family {
	enum xm_id id;
	const char *name;           /* Prometheus metric name */
	const char *help;           /* one line, no newline */
	enum xm_type type;
	const struct xm_rowset *rows;
	const char *sub_label;      /* NULL: none */
	const char *const *sub_values; /* n_sub strings; NULL entries are never used by a sample */
	unsigned n_sub;
	struct xm_sample *s;
	size_t n, cap;
};

struct xm_snapshot {
	struct xm_family fam[XM_FAMILIES];
	struct xm_rowset global, sa, worker, tunnel, build, node;
	uint64_t now;               /* CLOCK_REALTIME seconds the lifetimes were computed at */
	char sadb_err[256];         /* why xipsec_sadb_up is 0 ("" when up) */
	char ike_err[256];          /* why xipsec_ike_up is 0 ("" when up or not asked) */
	size_t sa_key_cap;          /* internal */
};

/* What an exporter that runs for long remembers between snapshots so that a tunnel's counters go
 * on across rekeys: the last counters of every SA it saw, and per tunnel the totals of its SAs that
 * are gone (metrics/metrics_tunnel.c). An SA's traffic after the last snapshot that saw it is
 * counted only from its runtime area in the SADB or its gone record in the counters view; the
 * memory starts empty with the exporter. Opaque; one snapshot at a time uses it. */
struct xm_tunnel_memory;
#define XM_TUNNEL_KEEP_SECONDS 3600 /* a tunnel without SAs is remembered (and listed) this long */

/* NULL when out of memory. */
struct xm_tunnel_memory *xm_tunnel_memory_new(void);
void xm_tunnel_memory_free(struct xm_tunnel_memory *m);

struct xm_opts {
	/* The source of the SADB and dataplane families. stats: the counters view (sadb/sadb_stats.h),
	 * which needs no access to the SADB: what the exporter and xipsec-snmpd read, as an
	 * unprivileged user. Else the SADB itself (root: ipsecctl's one-shot). The same figures either
	 * way; only the view's are up to SADB_STATS_INTERVAL_MS old (xipsec_stats_age_seconds). */
	bool stats;
	const char *stats_path;     /* NULL: sadb_stats_default_path() */
	const char *sadb_path;      /* NULL: sadb_default_path() */
	struct sadb *db;            /* an open handle to read instead of opening sadb_path (kept open) */
	bool no_sa;                 /* leave out the per-SA families (a million SAs) */
	bool no_ike;                /* do not ask xipsec-iked */
	const char *ike_run_dir;    /* NULL: $XIPSEC_IKED_RUN, else /run/xipsec-iked */
	const char *vici_uri;       /* NULL: unix://RUN_DIR/charon.vici */
	uint64_t now;               /* 0: the current CLOCK_REALTIME second */
	struct xm_tunnel_memory *tunnels; /* NULL: a tunnel counts only the SAs it has now */
};

/* Process-wide set-up and tear-down (libvici). 0 or a negative errno. */
int xm_global_init(void);
void xm_global_deinit(void);

/* Fill snap (uninitialised memory is fine) with one reading of every source. A source that cannot
 * be read is not an error: its *_up gauge is 0 and the reason is in snap->sadb_err / ike_err.
 * Returns 0, or -ENOMEM (snap is then empty but valid for xm_snapshot_free). */
int xm_collect(struct xm_snapshot *snap, const struct xm_opts *o);
void xm_snapshot_free(struct xm_snapshot *snap);

/* The labels of a sample: how many, and the name and value of label i (the row set's labels first,
 * then sub_label). */
unsigned xm_n_labels(const struct xm_family *f);
const char *xm_label_name(const struct xm_family *f, unsigned i);
const char *xm_label_value(const struct xm_family *f, const struct xm_sample *s, unsigned i);

/* ---- Prometheus text exposition format 0.0.4 (metrics/metrics_prom.c) ---- */

#define XM_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Every family: "# HELP", "# TYPE" and its samples, one a line. 0 or -EIO (write error). */
int xm_prom_write(FILE *f, const struct xm_snapshot *snap);
/* A label value as the format quotes it (without the quotes): \ " and newline escaped. */
void xm_prom_label_escape(FILE *f, const char *s);
/* A help text: \ and newline escaped. */
void xm_prom_help_escape(FILE *f, const char *s);

/* ---- HTTP/1.x request line and headers, for the exporter (metrics/metrics_http.c) ---- */

#define XM_HTTP_MAX_REQUEST 8192    /* bytes of request line + headers accepted */

struct xm_http_req {
	char method[16];
	char path[256];             /* without the query string */
	int minor;                  /* HTTP/1.minor */
	size_t header_len;          /* bytes up to and including the blank line */
	bool has_body;              /* Content-Length > 0 or Transfer-Encoding given */
};

/* Parse buf[0..len). Returns 0 when a whole header block is there (req filled), 1 when more bytes
 * are needed, or the HTTP status to answer with: 400 (malformed), 414 (path over 255 bytes), 431
 * (headers over XM_HTTP_MAX_REQUEST), 505 (not HTTP/1.x). Never reads past len. */
int xm_http_parse(const char *buf, size_t len, struct xm_http_req *req);
/* What to answer a parsed request: 200 for GET or HEAD of /metrics, 405 another method on it, 404
 * another path, 400 a request with a body. */
int xm_http_route(const struct xm_http_req *req);

/* ---- the exporter's HTTP server (metrics/metrics_http.c) ----
 * Any local user can connect to it, so what one client can hold is bounded: */
#define XM_HTTP_MAX_CLIENTS      32     /* connections held at once */
#define XM_HTTP_MAX_PER_ADDR     8      /* of them from one source address */
#define XM_HTTP_GRACE_MS         250    /* a new connection is not closed for another */
#define XM_HTTP_HEAD_TIMEOUT_MS  2000   /* from the accept to the end of the request head */
#define XM_HTTP_WRITE_TIMEOUT_MS 10000  /* for the client to take the answer */
#define XM_HTTP_MIN_INTERVAL_MS  1000   /* default: a rendering is served this long */

struct xm_http_server_cfg {
	/* The exposition of a fresh snapshot in a malloc'ed buffer: 0, or -errno (answered 500). */
	int (*render)(const struct xm_opts *xo, char **text, size_t *len);
	const struct xm_opts *xo;
	unsigned min_interval_ms;   /* scrapes within this of a rendering get that rendering */
	/* Asked after every wake-up, at least once a second (a signal wakes the wait): true ends it. */
	bool (*stop)(void);
};

/* Serve GET/HEAD /metrics on lfd (a listening socket, O_NONBLOCK, left open for the caller) until
 * cfg->stop() says so. Single-threaded; cfg->render runs in this thread. 0, or -errno when poll
 * fails or memory for the connection table is missing. */
int xm_http_serve(int lfd, const struct xm_http_server_cfg *cfg);

#endif
