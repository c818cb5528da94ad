/* metrics/metrics.c: the metrics collection layer's families and its SADB part: the table of every
 * family (name, help, type, row set, extra label), a snapshot's set-up and rows, and the SADB and
 * dataplane families — per-SA counters, lifetimes and expiry, the dataplane workers' records, SA and
 * policy counts — from one reading (sadb/sadb_stats.h): the counters view xipsecd publishes (the
 * exporter and xipsec-snmpd, unprivileged) or the same reading made from the SADB (root's one-shot),
 * so both sources give the same figures. The xipsec-iked part, with charon's names, is
 * metrics/metrics_ike.c; samples are stored by metrics/metrics_snapshot.c; both are below this
 * file. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics.h"
#include "metrics/metrics_int.h"
#include "sadb/sadb_stats.h"

static const char *reason_names[SADB_DROP_MAX];
static pthread_once_t reason_once = PTHREAD_ONCE_INIT;

static void reason_init(void)
{
	for (unsigned i = 0; i < SADB_DROP_MAX; i++)
		reason_names[i] = i ? sadb_drop_name(i) : NULL; /* 0 is "none": never a drop */
}

static const char *const limit_names[] = { "soft", "hard" };
/* enum sadb_state */
static const char *const sa_state_names[] = { "larval", "mature", "dying", "dead" };
#define N_SA_STATES (sizeof(sa_state_names) / sizeof(sa_state_names[0]))
/* a tunnel's direction: 0 in, 1 out (metrics_tunnel.c) */
static const char *const tunnel_dir_names[] = { "in", "out" };
/* a mobile node's Binding Updates: 0 accepted, 1 refused (metrics_node.c) */
static const char *const bu_result_names[] = { "accepted", "refused" };

enum sub_kind { SUB_NONE, SUB_REASON, SUB_LIMIT, SUB_IKE_STATE, SUB_CHILD_STATE, SUB_IKE_EVENT,
		SUB_SA_STATE, SUB_DIR, SUB_HA_KIND, SUB_BA_STATUS, SUB_CL_EVENT, SUB_CL_REASON, SUB_SEGMENT,
		SUB_BU_RESULT };

/* the home agent's event kinds (sadb_stats_ha_kind_name) and BA statuses ("0".."255"), filled once */
static const char *ha_kind_names[SADB_HA_KINDS];
static char ba_status_str[256][4];
static const char *ba_status_names[256];
/* the cluster's counters and drop reasons (sadb_stats_cl_*_name), segments "1".."16", filled once */
static const char *cl_event_names[SADB_CL_COUNTERS];
static const char *cl_reason_names[SADB_CL_DROPS];
static char segment_str[SADB_STATS_SEGMENTS][4];
static const char *segment_names[SADB_STATS_SEGMENTS];

struct fam_def {
	const char *name, *help;
	enum xm_type type;
	enum xm_rows_kind rows;
	enum sub_kind sub;
};

#define C XM_COUNTER
#define G XM_GAUGE
#define RG XM_ROWS_GLOBAL
#define RS XM_ROWS_SA
#define RW XM_ROWS_WORKER
#define RT XM_ROWS_TUNNEL
#define RB XM_ROWS_BUILD
#define RN XM_ROWS_NODE
static const struct fam_def defs[XM_FAMILIES] = {
	[XM_SADB_UP] = { "xipsec_sadb_up", "1 when the SADB, or the counters view of it, could be opened "
		"and read, else 0", G, RG, 0 },
	[XM_SADB_SAS] = { "xipsec_sadb_sas", "SAs in the SADB", G, RG, 0 },
	[XM_SADB_SA_CAPACITY] = { "xipsec_sadb_sa_capacity", "SAs the SADB can hold", G, RG, 0 },
	[XM_SADB_POLICIES] = { "xipsec_sadb_policies", "Policies in the SADB", G, RG, 0 },
	[XM_SADB_POLICY_CAPACITY] = { "xipsec_sadb_policy_capacity", "Policies the SADB can hold", G, RG, 0 },
	[XM_SADB_CHANGES] = { "xipsec_sadb_changes_total",
		"Changes published to the SADB (its generation)", C, RG, 0 },
	[XM_DP_UP] = { "xipsec_dataplane_up", "1 when the dataplane (xipsecd) that set up the SADB's "
		"stats area is running, else 0", G, RG, 0 },
	[XM_DP_START_TIME] = { "xipsec_dataplane_start_time_seconds",
		"When the dataplane started, seconds since the epoch (0 = never)", G, RG, 0 },
	[XM_DP_WORKERS] = { "xipsec_dataplane_workers", "Dataplane worker threads", G, RG, 0 },
	[XM_DROPS] = { "xipsec_drops_total", "Packets the dataplane dropped, by reason (the SAs' "
		"drops plus the drops that belong to no SA)", C, RG, SUB_REASON },
	[XM_SA_PACKETS] = { "xipsec_sa_packets_total", "Packets the SA processed successfully", C, RS, 0 },
	[XM_SA_BYTES] = { "xipsec_sa_bytes_total", "Bytes the SA processed successfully", C, RS, 0 },
	[XM_SA_DROPS] = { "xipsec_sa_drops_total", "Packets of the SA dropped, by reason", C, RS,
		SUB_REASON },
	[XM_SA_STATE] = { "xipsec_sa_state_code", "Deprecated, removed in the next release: the SA "
		"state as a number (0 larval, 1 mature, 2 dying, 3 dead); use xipsec_sa_state{state}", G, RS, 0 },
	[XM_SA_EXPIRY] = { "xipsec_sa_expiry", "SA lifetime reached: 0 none, 1 soft (to be replaced), "
		"2 hard (every packet dropped)", G, RS, 0 },
	[XM_SA_CREATED] = { "xipsec_sa_created_timestamp_seconds",
		"When the SA was added, seconds since the epoch", G, RS, 0 },
	[XM_SA_LAST_USED] = { "xipsec_sa_last_used_timestamp_seconds",
		"When the SA last carried a packet, seconds since the epoch (0 = never)", G, RS, 0 },
	[XM_SA_REMAIN_SECONDS] = { "xipsec_sa_lifetime_remaining_seconds",
		"Seconds until the SA's soft or hard time limit", G, RS, SUB_LIMIT },
	[XM_SA_REMAIN_BYTES] = { "xipsec_sa_lifetime_remaining_bytes",
		"Bytes the SA may still carry before its soft or hard byte limit", G, RS, SUB_LIMIT },
	[XM_SA_REMAIN_PACKETS] = { "xipsec_sa_lifetime_remaining_packets",
		"Packets the SA may still carry before its soft or hard packet limit", G, RS, SUB_LIMIT },
	[XM_W_RX_PACKETS] = { "xipsec_worker_rx_packets_total", "Packets the worker received", C, RW, 0 },
	[XM_W_RX_BYTES] = { "xipsec_worker_rx_bytes_total", "Bytes the worker received", C, RW, 0 },
	[XM_W_TX_PACKETS] = { "xipsec_worker_tx_packets_total", "Packets the worker transmitted", C, RW, 0 },
	[XM_W_TX_BYTES] = { "xipsec_worker_tx_bytes_total", "Bytes the worker transmitted", C, RW, 0 },
	[XM_W_FRAG_PACKETS] = { "xipsec_worker_fragmented_packets_total",
		"IPv4 packets the worker cut into fragments", C, RW, 0 },
	[XM_W_FRAG_MADE] = { "xipsec_worker_fragments_made_total",
		"Fragments the worker's fragmented packets became", C, RW, 0 },
	[XM_W_REASM_PACKETS] = { "xipsec_worker_reassembled_packets_total",
		"Datagrams the worker reassembled from received fragments", C, RW, 0 },
	[XM_W_REASM_FRAGS] = { "xipsec_worker_reassembled_fragments_total",
		"Fragments that went into the worker's reassembled datagrams", C, RW, 0 },
	[XM_W_HANDOFF_DONE] = { "xipsec_worker_handoff_decrypted_packets_total",
		"Inbound packets the worker decrypted for other workers (hand-off)", C, RW, 0 },
	[XM_W_HANDOFF_JOBS] = { "xipsec_worker_handoff_jobs_total",
		"Jobs of inbound crypto the worker handed to other workers", C, RW, 0 },
	[XM_W_HANDOFF_PKTS] = { "xipsec_worker_handoff_helped_packets_total",
		"Packets of the worker's handed-off jobs that other workers decrypted", C, RW, 0 },
	[XM_W_HANDOFF_BACK] = { "xipsec_worker_handoff_jobs_taken_back_total",
		"Handed-off jobs the worker took back because no other worker claimed them in time", C, RW, 0 },
	[XM_W_DROPS] = { "xipsec_worker_drops_total",
		"Packets the worker dropped that belong to no SA, by reason", C, RW, SUB_REASON },
	[XM_IKE_UP] = { "xipsec_ike_up", "1 when xipsec-iked answered over VICI, else 0", G, RG, 0 },
	[XM_IKE_SAS] = { "xipsec_ike_sas", "IKE SAs by state", G, RG, SUB_IKE_STATE },
	[XM_IKE_HALF_OPEN] = { "xipsec_ike_half_open_sas", "IKE SAs being set up (half-open)", G, RG, 0 },
	[XM_IKE_CHILD_SAS] = { "xipsec_ike_child_sas", "CHILD SAs by state", G, RG, SUB_CHILD_STATE },
	[XM_IKE_EVENTS] = { "xipsec_ike_events_total",
		"IKE messages and rekeyings counted by charon, by event", C, RG, SUB_IKE_EVENT },
	[XM_IKE_ESTABLISHED] = { "xipsec_ike_sa_established_total",
		"IKE SAs established (IKEv1 Main/Aggressive Modes, IKEv2 IKE_AUTH and IKE SA rekeys)", C, RG, 0 },
	[XM_IKE_MAIN_MODES] = { "xipsec_ike_main_modes_total", "IKEv1 SAs established", C, RG, 0 },
	[XM_IKE_V2_SAS] = { "xipsec_ike_ikev2_sas_total", "IKEv2 SAs established or rekeyed", C, RG, 0 },
	[XM_IKE_CHILD_ESTABLISHED] = { "xipsec_ike_child_sa_established_total",
		"CHILD SAs (Quick Modes) established", C, RG, 0 },
	[XM_IKE_CHILD_REKEYED] = { "xipsec_ike_child_sa_rekeyed_total", "CHILD SAs rekeyed", C, RG, 0 },
	[XM_IKE_MAXQM_RENEWALS] = { "xipsec_ike_maxqm_renewals_total",
		"IKE SAs renewed because they keyed maxqm CHILD SAs", C, RG, 0 },
	[XM_IKE_SADB_ADDED] = { "xipsec_ike_sadb_sa_added_total",
		"SAs xipsec-iked added to the SADB", C, RG, 0 },
	[XM_IKE_SADB_DELETED] = { "xipsec_ike_sadb_sa_deleted_total",
		"SAs xipsec-iked deleted from the SADB", C, RG, 0 },
	[XM_IKE_SOFT_EXPIRED] = { "xipsec_ike_sadb_soft_expired_total",
		"Negotiated SAs that reached their soft lifetime", C, RG, 0 },
	[XM_IKE_HARD_EXPIRED] = { "xipsec_ike_sadb_hard_expired_total",
		"Negotiated SAs that reached their hard lifetime", C, RG, 0 },
	[XM_IKE_SEQ_SOFT_EXPIRED] = { "xipsec_ike_sadb_seq_soft_expired_total",
		"Negotiated SAs that neared the end of their sequence number space", C, RG, 0 },
	[XM_STATS_AGE] = { "xipsec_stats_age_seconds", "Seconds since xipsecd published the counters "
		"view these figures come from (only when they come from it)", G, RG, 0 },
	[XM_SA_STATES] = { "xipsec_sa_state", "1 for the SA's state (larval, mature, dying, dead), "
		"0 for the others", G, RS, SUB_SA_STATE },
	[XM_TUNNEL_SAS] = { "xipsec_tunnel_sas", "SAs the tunnel (connection, CHILD SA, reqid) has now, "
		"by direction", G, RT, SUB_DIR },
	[XM_TUNNEL_PACKETS] = { "xipsec_tunnel_packets_total", "Packets the tunnel's SAs processed "
		"successfully, by direction: its SAs now plus those gone since the exporter started "
		"(restarts with the exporter)", C, RT, SUB_DIR },
	[XM_TUNNEL_BYTES] = { "xipsec_tunnel_bytes_total", "Bytes the tunnel's SAs processed "
		"successfully, by direction: its SAs now plus those gone since the exporter started "
		"(restarts with the exporter)", C, RT, SUB_DIR },
	[XM_TUNNEL_DROPS] = { "xipsec_tunnel_drops_total", "Packets of the tunnel's SAs dropped, by "
		"direction: its SAs now plus those gone since the exporter started (restarts with the "
		"exporter)", C, RT, SUB_DIR },
	[XM_BUILD_INFO] = { "xipsec_build_info", "Always 1: the exporter's version, the SADB layout "
		"version it reads and whether it was built with VICI (xipsec-iked's metrics)", G, RB, 0 },
	[XM_HA_UP] = { "xipsec_home_agent_up", "1 when the dataplane runs a Mobile IPv6 home agent, else 0 "
		"(read from the counters view only)", G, RG, 0 },
	[XM_HA_BINDINGS] = { "xipsec_home_agent_bindings", "Bindings in the home agent's cache", G, RG, 0 },
	[XM_HA_EVENTS] = { "xipsec_home_agent_events_total", "The home agent's signalling and binding "
		"events by kind: Binding Updates in, messages sent, errors held back, moves, DAD results, "
		"expiries", C, RG, SUB_HA_KIND },
	[XM_HA_BA_STATUS] = { "xipsec_home_agent_binding_acks_total",
		"Binding Acknowledgements the home agent sent, by status (RFC 6275 6.1.8)", C, RG, SUB_BA_STATUS },
	[XM_CL_UP] = { "xipsec_cluster_up", "1 when the dataplane is a node of a two-node cluster, else 0 "
		"(read from the counters view only)", G, RG, 0 },
	[XM_CL_ACTIVE] = { "xipsec_cluster_active", "1 when this node is the active one, 0 standby", G, RG, 0 },
	[XM_CL_ELIGIBLE] = { "xipsec_cluster_eligible", "1 when this node has caught up with its peer "
		"and may take over, else 0", G, RG, 0 },
	[XM_CL_PEER_REACHABLE] = { "xipsec_cluster_peer_reachable", "1 when the peer's last sync "
		"message is recent enough, else 0", G, RG, 0 },
	[XM_CL_PEER_ACTIVE] = { "xipsec_cluster_peer_active", "1 when the peer says it is active", G, RG, 0 },
	[XM_CL_LAST_MESSAGE_MS] = { "xipsec_cluster_last_message_age_milliseconds", "Milliseconds since "
		"the peer's last sync message (absent before the first)", G, RG, 0 },
	[XM_CL_SYNC_LAG_MS] = { "xipsec_cluster_sync_lag_milliseconds", "Milliseconds since the peer's "
		"last lease or window message (absent before the first)", G, RG, 0 },
	[XM_CL_SYNC] = { "xipsec_cluster_sync_total", "The sync channel's messages, lease asks and "
		"acknowledgements, resyncs, takeovers and solo budget expiries, by event", C, RG, SUB_CL_EVENT },
	[XM_CL_SYNC_DROPPED] = { "xipsec_cluster_sync_dropped_total",
		"Sync datagrams dropped, by reason", C, RG, SUB_CL_REASON },
	[XM_CL_COVERED_SAS] = { "xipsec_cluster_covered_sas", "SAs whose sequence numbers or replay "
		"window the cluster holds", G, RG, 0 },
	[XM_CL_HEADROOM_MIN] = { "xipsec_cluster_lease_headroom_min", "The least lease headroom of an "
		"outbound SA the active node sends on: sequence numbers left before it waits for the "
		"peer's acknowledgement (absent on a standby or without such an SA)", G, RG, 0 },
	[XM_CL_HEADROOM_MIN_SPI] = { "xipsec_cluster_lease_headroom_min_spi", "The SPI of the SA with "
		"the least lease headroom (as in xipsec_sa_*{spi})", G, RG, 0 },
	[XM_CL_SEGMENTS] = { "xipsec_cluster_segments", "Active/active segments (0: none)", G, RG, 0 },
	[XM_CL_SEG_OWNED] = { "xipsec_cluster_segment_owned", "1 when this node owns the segment, "
		"else 0", G, RG, SUB_SEGMENT },
	[XM_CL_SEG_KEPT] = { "xipsec_cluster_segment_kept_total", "Inbound frames to the cluster address "
		"the XDP program kept as this node's, by segment", C, RG, SUB_SEGMENT },
	[XM_CL_SEG_DROPPED] = { "xipsec_cluster_segment_dropped_total", "Inbound frames to the cluster "
		"address the XDP program dropped as the other node's, by segment", C, RG, SUB_SEGMENT },
	[XM_CL_FOREIGN] = { "xipsec_cluster_foreign_total", "Outbound packets the workers left to the "
		"node that owns their peer's segment", C, RG, 0 },
	[XM_HA_NODE_BU] = { "xipsec_home_agent_node_binding_updates_total", "Binding Updates of the "
		"mobile node (home address) that arrived on its own SA, by what they got: accepted "
		"(status below 128) or refused", C, RN, SUB_BU_RESULT },
	[XM_HA_NODE_MOVES] = { "xipsec_home_agent_node_moves_total", "Times the mobile node's binding "
		"moved to a new care-of address", C, RN, 0 },
	[XM_HA_NODE_BA_STATUS] = { "xipsec_home_agent_node_binding_acks_total", "Binding "
		"Acknowledgements the home agent sent the mobile node, by status", C, RN, SUB_BA_STATUS },
	[XM_HA_NODE_LAST_BU_AGE] = { "xipsec_home_agent_node_last_binding_update_age_seconds",
		"Seconds since the mobile node's last Binding Update was decided (nodes that sent one "
		"since they were configured)", G, RN, 0 },
	[XM_HA_NODE_BOUND] = { "xipsec_home_agent_node_bound", "1 while the mobile node has a binding, "
		"else 0", G, RN, 0 },
	[XM_HA_NODES_LEFT_OUT] = { "xipsec_home_agent_nodes_left_out", "Mobile nodes past the "
		"exporter's cap of per-node series (XM_HA_NODES_MAX), in no per-node family", G, RG, 0 },
};
#undef C
#undef G
#undef RG
#undef RS
#undef RW
#undef RT
#undef RB
#undef RN

/* The extra label of each sub_kind: its name, values (index = sub) and how many. */
static const struct {
	const char *label;
	const char *const *values;
	unsigned n;
} sub_defs[] = {
	[SUB_NONE] = { NULL, NULL, 0 },
	[SUB_REASON] = { "reason", reason_names, SADB_DROP_MAX },
	[SUB_LIMIT] = { "limit", limit_names, 2 },
	[SUB_IKE_STATE] = { "state", xm_ike_state_names, XM_IKE_STATES },
	[SUB_CHILD_STATE] = { "state", xm_child_state_names, XM_CHILD_STATES },
	[SUB_IKE_EVENT] = { "event", xm_ike_event_names, XM_IKE_EVENTS_N },
	[SUB_SA_STATE] = { "state", sa_state_names, N_SA_STATES },
	[SUB_DIR] = { "dir", tunnel_dir_names, 2 },
	[SUB_HA_KIND] = { "kind", ha_kind_names, SADB_HA_KINDS },
	[SUB_BA_STATUS] = { "status", ba_status_names, 256 },
	[SUB_CL_EVENT] = { "event", cl_event_names, SADB_CL_COUNTERS },
	[SUB_CL_REASON] = { "reason", cl_reason_names, SADB_CL_DROPS },
	[SUB_SEGMENT] = { "segment", segment_names, SADB_STATS_SEGMENTS },
	[SUB_BU_RESULT] = { "result", bu_result_names, 2 },
};

static pthread_once_t sub_names_once = PTHREAD_ONCE_INIT;

static void sub_names_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		snprintf(ba_status_str[i], sizeof(ba_status_str[i]), "%u", i);
		ba_status_names[i] = ba_status_str[i];
	}
	for (unsigned k = 0; k < SADB_HA_KINDS; k++)
		ha_kind_names[k] = sadb_stats_ha_kind_name(k);
	for (unsigned k = 0; k < SADB_CL_COUNTERS; k++)
		cl_event_names[k] = sadb_stats_cl_counter_name(k);
	for (unsigned k = 0; k < SADB_CL_DROPS; k++)
		cl_reason_names[k] = sadb_stats_cl_drop_name(k);
	for (unsigned k = 0; k < SADB_STATS_SEGMENTS; k++) {
		snprintf(segment_str[k], sizeof(segment_str[k]), "%u", k + 1);
		segment_names[k] = segment_str[k];
	}
}

/* The home agent's families: only a view's reading has them (the producer's own counters). */
static int collect_ha(struct xm_snapshot *s, const struct sadb_stats_ha *ha)
{
	int rc = 0;

	rc |= xm_add(s, XM_HA_UP, 0, 0, ha->present ? 1 : 0);
	if (!ha->present)
		return rc;
	rc |= xm_add(s, XM_HA_BINDINGS, 0, 0, ha->bindings);
	for (unsigned k = 0; k < SADB_HA_KINDS && !rc; k++)
		rc |= xm_add(s, XM_HA_EVENTS, 0, k, ha->kind[k]);
	for (unsigned st = 0; st < 256 && !rc; st++)
		if (ha->ba_status[st])
			rc |= xm_add(s, XM_HA_BA_STATUS, 0, st, ha->ba_status[st]);
	return rc;
}

/* The cluster's families: only a view's reading has them (the producer's own state). A segment's
 * sample is row 0, sub segment - 1. */
static int collect_cluster(struct xm_snapshot *s, const struct sadb_stats_cluster *cl)
{
	const struct { enum xm_id id; uint64_t v; } one[] = {
		{ XM_CL_ACTIVE, cl->active }, { XM_CL_ELIGIBLE, cl->eligible },
		{ XM_CL_PEER_REACHABLE, cl->peer_reachable }, { XM_CL_PEER_ACTIVE, cl->peer_active },
		{ XM_CL_LAST_MESSAGE_MS, cl->last_message_ms }, { XM_CL_SYNC_LAG_MS, cl->sync_lag_ms },
		{ XM_CL_COVERED_SAS, cl->covered_sas }, { XM_CL_HEADROOM_MIN, cl->min_headroom },
		{ XM_CL_HEADROOM_MIN_SPI, cl->min_headroom == SADB_STATS_NONE ? SADB_STATS_NONE :
					  cl->min_headroom_spi },
	};
	unsigned nseg = cl->segments < SADB_STATS_SEGMENTS ? (unsigned)cl->segments : SADB_STATS_SEGMENTS;
	int rc = 0;

	rc |= xm_add(s, XM_CL_UP, 0, 0, cl->present ? 1 : 0);
	if (!cl->present)
		return rc;
	for (unsigned i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if (one[i].v != SADB_STATS_NONE)
			rc |= xm_add(s, one[i].id, 0, 0, one[i].v);
	for (unsigned k = 0; k < SADB_CL_COUNTERS && !rc; k++)
		rc |= xm_add(s, XM_CL_SYNC, 0, k, cl->counter[k]);
	for (unsigned k = 0; k < SADB_CL_DROPS && !rc; k++)
		rc |= xm_add(s, XM_CL_SYNC_DROPPED, 0, k, cl->dropped[k]);
	rc |= xm_add(s, XM_CL_SEGMENTS, 0, 0, cl->segments);
	for (unsigned k = 0; k < nseg && !rc; k++) {
		rc |= xm_add(s, XM_CL_SEG_OWNED, 0, k, cl->owned >> k & 1);
		rc |= xm_add(s, XM_CL_SEG_KEPT, 0, k, cl->seg_kept[k]);
		rc |= xm_add(s, XM_CL_SEG_DROPPED, 0, k, cl->seg_foreign[k]);
	}
	rc |= xm_add(s, XM_CL_FOREIGN, 0, 0, cl->cluster_foreign);
	return rc;
}

/* ---- snapshots (their samples: metrics_snapshot.c) ---- */

static void snapshot_init(struct xm_snapshot *s, uint64_t now)
{
	memset(s, 0, sizeof(*s));
	s->now = now;
	s->global.kind = XM_ROWS_GLOBAL;
	s->sa.kind = XM_ROWS_SA;
	s->sa.n_labels = XM_SA_N_LABELS;
	s->sa.label_names[XM_SA_L_SPI] = "spi";
	s->sa.label_names[XM_SA_L_PROTO] = "proto";
	s->sa.label_names[XM_SA_L_DIR] = "dir";
	s->sa.label_names[XM_SA_L_LOCAL] = "local";
	s->sa.label_names[XM_SA_L_PEER] = "peer";
	s->sa.label_names[XM_SA_L_CONN] = "connection";
	s->sa.label_names[XM_SA_L_CHILD] = "child";
	s->sa.label_names[XM_SA_L_REQID] = "reqid";
	s->worker.kind = XM_ROWS_WORKER;
	s->worker.n_labels = 1;
	s->worker.label_names[0] = "worker";
	s->tunnel.kind = XM_ROWS_TUNNEL;
	s->tunnel.n_labels = 3;
	s->tunnel.label_names[0] = "connection";
	s->tunnel.label_names[1] = "child";
	s->tunnel.label_names[2] = "reqid";
	s->build.kind = XM_ROWS_BUILD;
	s->build.n_labels = 3;
	s->build.label_names[0] = "version";
	s->build.label_names[1] = "sadb_layout";
	s->build.label_names[2] = "vici";
	s->node.kind = XM_ROWS_NODE;
	s->node.n_labels = 1;
	s->node.label_names[0] = "home_address";
	pthread_once(&sub_names_once, sub_names_init);
	for (unsigned i = 0; i < XM_FAMILIES; i++) {
		struct xm_family *f = &s->fam[i];
		const struct fam_def *d = &defs[i];

		f->id = (enum xm_id)i;
		f->name = d->name;
		f->help = d->help;
		f->type = d->type;
		f->rows = d->rows == XM_ROWS_SA ? &s->sa : d->rows == XM_ROWS_WORKER ? &s->worker :
			  d->rows == XM_ROWS_TUNNEL ? &s->tunnel : d->rows == XM_ROWS_BUILD ? &s->build :
			  d->rows == XM_ROWS_NODE ? &s->node : &s->global;
		f->sub_label = sub_defs[d->sub].label;
		f->sub_values = sub_defs[d->sub].values;
		f->n_sub = sub_defs[d->sub].n;
	}
}

/* ---- the SADB ---- */

static const char *proto_name(uint8_t p)
{
	return p == SADB_PROTO_ESP ? "esp" : p == SADB_PROTO_AH ? "ah" : "any";
}

static const char *dir_name(uint8_t d)
{
	return d == SADB_DIR_IN ? "in" : d == SADB_DIR_OUT ? "out" : d == SADB_DIR_FWD ? "fwd" : "?";
}

/* Seconds left of one time limit set (soft or hard): the earlier of the add and use limits; the use
 * limit counts from the first packet, so an unused SA has all of it. UINT64_MAX: no time limit. */
static uint64_t remain_seconds(const struct sadb_lifetime *lt, uint64_t created, uint64_t first_used,
			       uint64_t now)
{
	uint64_t r = UINT64_MAX, used;

	if (lt->add_seconds) {
		used = now > created ? now - created : 0;
		r = lt->add_seconds > used ? lt->add_seconds - used : 0;
	}
	if (lt->use_seconds) {
		uint64_t u = lt->use_seconds;

		if (first_used) {
			used = now > first_used ? now - first_used : 0;
			u = lt->use_seconds > used ? lt->use_seconds - used : 0;
		}
		if (u < r)
			r = u;
	}
	return r;
}

/* One SA's rows and samples from one reading (the totals were summed from the same one, so that a
 * total is the sum of its parts). */
static int sa_one(struct xm_snapshot *s, const struct sadb_stats_sa *sa)
{
	char spi[16], src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], reqid[16];
	const char *vals[XM_SA_N_LABELS];
	struct xm_sa_key *k;
	long row;
	int rc = 0;

	snprintf(spi, sizeof(spi), "0x%08" PRIx32, sa->spi);
	snprintf(reqid, sizeof(reqid), "%" PRIu32, sa->reqid);
	sadb_addr_str(&sa->src, src, sizeof(src));
	sadb_addr_str(&sa->dst, dst, sizeof(dst));
	vals[XM_SA_L_SPI] = spi;
	vals[XM_SA_L_PROTO] = proto_name(sa->proto);
	vals[XM_SA_L_DIR] = dir_name(sa->dir);
	/* Inbound SAs come from the peer to us; outbound ones go to it. */
	vals[XM_SA_L_LOCAL] = sa->dir == SADB_DIR_IN ? dst : src;
	vals[XM_SA_L_PEER] = sa->dir == SADB_DIR_IN ? src : dst;
	/* the names are xipsec-iked's (metrics_ike.c sets them); the SADB holds none */
	vals[XM_SA_L_CONN] = "";
	vals[XM_SA_L_CHILD] = "";
	vals[XM_SA_L_REQID] = reqid;
	if ((row = xm_rows_add(&s->sa, vals)) < 0)
		return -ENOMEM;
	if (s->sa.n_rows > s->sa_key_cap) {
		size_t cap = s->sa_key_cap ? s->sa_key_cap * 2 : 64;
		struct xm_sa_key *v = realloc(s->sa.sa, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->sa.sa = v;
		s->sa_key_cap = cap;
	}
	k = &s->sa.sa[row];
	*k = (struct xm_sa_key){ sa->slot, sa->spi, sa->proto, sa->dir, sa->mode, sa->state, sa->reqid,
				 sa->ike_id, sa->instance, sa->src, sa->dst };
	rc |= xm_add(s, XM_SA_PACKETS, (uint32_t)row, 0, sa->packets);
	rc |= xm_add(s, XM_SA_BYTES, (uint32_t)row, 0, sa->bytes);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (sa->drops[i])
			rc |= xm_add(s, XM_SA_DROPS, (uint32_t)row, i, sa->drops[i]);
	rc |= xm_add(s, XM_SA_STATE, (uint32_t)row, 0, sa->state);
	for (unsigned st = 0; st < N_SA_STATES; st++)
		rc |= xm_add(s, XM_SA_STATES, (uint32_t)row, st, sa->state == st);
	rc |= xm_add(s, XM_SA_EXPIRY, (uint32_t)row, 0, sa->expired & 2 ? 2 : sa->expired & 1 ? 1 : 0);
	rc |= xm_add(s, XM_SA_CREATED, (uint32_t)row, 0, sa->created);
	rc |= xm_add(s, XM_SA_LAST_USED, (uint32_t)row, 0, sa->last_used);
	for (unsigned l = 0; l < 2; l++) {
		const struct sadb_lifetime *lt = l ? &sa->hard : &sa->soft;
		uint64_t sec = remain_seconds(lt, sa->created, sa->first_used, s->now);

		if (sec != UINT64_MAX)
			rc |= xm_add(s, XM_SA_REMAIN_SECONDS, (uint32_t)row, l, sec);
		if (lt->bytes)
			rc |= xm_add(s, XM_SA_REMAIN_BYTES, (uint32_t)row, l,
				     lt->bytes > sa->bytes ? lt->bytes - sa->bytes : 0);
		if (lt->packets)
			rc |= xm_add(s, XM_SA_REMAIN_PACKETS, (uint32_t)row, l,
				     lt->packets > sa->packets ? lt->packets - sa->packets : 0);
	}
	return rc ? -ENOMEM : 0;
}

/* Whether the process that set the stats area up still runs (EPERM: it does, as another user). */
static bool pid_alive(uint64_t pid)
{
	return pid && pid <= INT32_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int worker_one(struct xm_snapshot *s, uint32_t w, const struct sadb_worker_stats *ws,
		      uint64_t *drops)
{
	char name[16];
	const char *v[1] = { name };
	long row;
	int rc = 0;

	snprintf(name, sizeof(name), "%" PRIu32, w);
	if ((row = xm_rows_add(&s->worker, v)) < 0)
		return -ENOMEM;
	rc |= xm_add(s, XM_W_RX_PACKETS, (uint32_t)row, 0, ws->rx[SADB_PORT_INSIDE] + ws->rx[SADB_PORT_OUTSIDE]);
	rc |= xm_add(s, XM_W_RX_BYTES, (uint32_t)row, 0, ws->rx_bytes);
	rc |= xm_add(s, XM_W_TX_PACKETS, (uint32_t)row, 0, ws->tx[SADB_PORT_INSIDE] + ws->tx[SADB_PORT_OUTSIDE]);
	rc |= xm_add(s, XM_W_TX_BYTES, (uint32_t)row, 0, ws->tx_bytes);
	rc |= xm_add(s, XM_W_FRAG_PACKETS, (uint32_t)row, 0, ws->frag_packets);
	rc |= xm_add(s, XM_W_FRAG_MADE, (uint32_t)row, 0, ws->frag_made);
	rc |= xm_add(s, XM_W_REASM_PACKETS, (uint32_t)row, 0, ws->reasm_packets);
	rc |= xm_add(s, XM_W_REASM_FRAGS, (uint32_t)row, 0, ws->reasm_frags);
	rc |= xm_add(s, XM_W_HANDOFF_DONE, (uint32_t)row, 0, ws->handoff_done);
	rc |= xm_add(s, XM_W_HANDOFF_JOBS, (uint32_t)row, 0, ws->handoff_jobs);
	rc |= xm_add(s, XM_W_HANDOFF_PKTS, (uint32_t)row, 0, ws->handoff_pkts);
	rc |= xm_add(s, XM_W_HANDOFF_BACK, (uint32_t)row, 0, ws->handoff_back);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++) {
		drops[i] += ws->drops[i];
		rc |= xm_add(s, XM_W_DROPS, (uint32_t)row, i, ws->drops[i]);
	}
	return rc ? -ENOMEM : 0;
}

/* The SADB and dataplane families from one reading, the view's or the SADB's (the same struct, so
 * the exporter and the one-shot show the same figures). */
static int collect_reading(struct xm_snapshot *s, const struct sadb_stats_reading *r, bool no_sa)
{
	uint64_t drops[SADB_DROP_MAX];
	uint32_t nw = r->n_workers < SADB_MAX_WORKERS ? r->n_workers : SADB_MAX_WORKERS;
	int rc = 0;

	memcpy(drops, r->sa_drops, sizeof(drops));
	rc |= xm_add(s, XM_SADB_UP, 0, 0, 1);
	rc |= xm_add(s, XM_SADB_SAS, 0, 0, r->n_sa);
	rc |= xm_add(s, XM_SADB_SA_CAPACITY, 0, 0, r->max_sa);
	rc |= xm_add(s, XM_SADB_POLICIES, 0, 0, r->n_policy);
	rc |= xm_add(s, XM_SADB_POLICY_CAPACITY, 0, 0, r->max_policy);
	rc |= xm_add(s, XM_SADB_CHANGES, 0, 0, r->sadb_generation);
	for (uint32_t i = 0; i < r->n_rec && !no_sa && !rc; i++)
		rc |= sa_one(s, &r->sa[i]);
	rc |= xm_add(s, XM_DP_UP, 0, 0, pid_alive(r->dp_pid) ? 1 : 0);
	rc |= xm_add(s, XM_DP_START_TIME, 0, 0, r->dp_started);
	rc |= xm_add(s, XM_DP_WORKERS, 0, 0, nw);
	for (uint32_t w = 0; w < nw && !rc; w++)
		rc |= worker_one(s, w, &r->w[w], drops);
	for (unsigned i = 1; i < SADB_DROP_MAX && !rc; i++)
		rc |= xm_add(s, XM_DROPS, 0, i, drops[i]);
	if (!rc)
		rc |= collect_ha(s, &r->ha);
	if (!rc)
		rc |= collect_cluster(s, &r->cluster);
	if (!rc && r->ha.present)
		rc |= xm_collect_nodes(s, r);
	return rc ? -ENOMEM : 0;
}

/* A reading of the counters view (o->stats) or of the SADB; NULL with s->sadb_err set when the
 * source cannot be read. */
static struct sadb_stats_reading *read_source(struct xm_snapshot *s, const struct xm_opts *o)
{
	struct sadb_stats_reading *r = NULL;
	struct sadb *db = o->db;
	int err;

	if (o->stats) {
		if (sadb_stats_load(o->stats_path, &r, s->sadb_err, sizeof(s->sadb_err)) < 0)
			return NULL;
		if (!r->published) {
			snprintf(s->sadb_err, sizeof(s->sadb_err), "the counters view has no reading yet");
			free(r);
			return NULL;
		}
		return r;
	}
	if (!db && sadb_open(o->sadb_path, SADB_RDONLY, NULL, &db, s->sadb_err, sizeof(s->sadb_err)) < 0)
		return NULL;
	err = sadb_stats_read(db, !o->no_sa, &r);
	if (err < 0)
		snprintf(s->sadb_err, sizeof(s->sadb_err), "%s", err == -ENOMEM ? strerror(ENOMEM) : sadb_errmsg(db));
	if (db != o->db)
		sadb_close(db);
	return r;
}

static int collect_build(struct xm_snapshot *s)
{
	char layout[16];
	const char *v[3] = { PACKAGE_VERSION, layout,
#ifdef XIPSEC_HAVE_VICI
			     "yes"
#else
			     "no"
#endif
	};
	long row;

	snprintf(layout, sizeof(layout), "%u", SADB_LAYOUT_VERSION);
	if ((row = xm_rows_add(&s->build, v)) < 0)
		return -ENOMEM;
	return xm_add(s, XM_BUILD_INFO, (uint32_t)row, 0, 1);
}

int xm_collect(struct xm_snapshot *s, const struct xm_opts *o)
{
	static const struct xm_opts none = { 0 };
	struct sadb_stats_reading *r;
	int rc;

	if (!o)
		o = &none;
	pthread_once(&reason_once, reason_init);
	snapshot_init(s, o->now ? o->now : (uint64_t)time(NULL));
	r = read_source(s, o);
	if (r) {
		rc = collect_reading(s, r, o->no_sa);
		if (o->stats) {
			uint64_t at = r->published / 1000000000u;

			rc |= xm_add(s, XM_STATS_AGE, 0, 0, s->now > at ? s->now - at : 0);
		}
	} else {
		rc = xm_add(s, XM_SADB_UP, 0, 0, 0);
	}
	if (!rc && !o->no_ike)
		rc = xm_collect_ike(s, o);
	/* The final counters of the tunnels' SAs gone since the last time: from their runtime areas
	 * when the caller holds the SADB open (root, reading the SADB), else (no key, no SADB) from
	 * the counters view's gone records. The per-SA families leave gone records out: a deleted
	 * SA's series end with it. */
	if (!rc && !o->no_sa)
		rc = xm_collect_tunnels(s, o->tunnels, o->stats ? NULL : o->db, o->stats ? r : NULL);
	free(r);
	if (!rc)
		rc = collect_build(s);
	if (rc) {
		xm_snapshot_free(s);
		return -ENOMEM;
	}
	return 0;
}
