/* snmpd/snmp_view.h: what xipsec-snmpd serves, in the shape of XIPSEC-MIB (snmpd/mib/XIPSEC-MIB.txt): one
 * reading of the metrics collection layer (metrics/metrics.h), joined into the MIB's scalars and the
 * rows of its SA, worker, drop-reason and cluster segment tables and the home agent's tables
 * (acknowledgements by status, mobile nodes, their acknowledgements by status). The view is rebuilt
 * at most once per cache period, so every object of one SNMP walk comes from the same few readings,
 * and the SNMP values always equal the Prometheus export's. No Net-SNMP here: snmpd/snmp_mib.c maps the view onto OIDs. */
#ifndef XIPSEC_SNMP_VIEW_H
#define XIPSEC_SNMP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics/metrics.h"
#include "sadb/sadb_stats.h"

/* XIPSEC-MIB's xipsecGlobals, in the MIB's column order (xipsecGlobals.N is g[N - 1]). */
enum xs_global {
	XS_G_SADB_UP, XS_G_SAS, XS_G_SA_CAPACITY, XS_G_POLICIES, XS_G_POLICY_CAPACITY, XS_G_SADB_CHANGES,
	XS_G_DP_UP, XS_G_DP_START_TIME, XS_G_WORKERS, XS_G_DROPS_TOTAL, XS_G_IKE_UP, XS_G_IKE_SAS,
	XS_G_IKE_HALF_OPEN, XS_G_CHILD_SAS,
	XS_G_HA_UP, XS_G_HA_BINDINGS,
	XS_G_HA_EVENTS,               /* .. XS_G_HA_EVENTS + SADB_HA_KINDS - 1: by enum sadb_stats_ha_kind */
	XS_G_MAX = XS_G_HA_EVENTS + SADB_HA_KINDS
};

/* XIPSEC-MIB's xipsecCluster scalars, in the MIB's order (xipsecCluster.N is c[N - 1]): the
 * cluster families of the metrics layer (metrics.h's XM_CL_*). A value the layer has no sample of
 * (no message yet, no SA with a lease) is XS_C_NONE. */
enum xs_cluster {
	XS_C_UP, XS_C_ROLE, XS_C_ELIGIBLE, XS_C_PEER_REACHABLE, XS_C_PEER_ROLE, XS_C_LAST_MESSAGE_MS,
	XS_C_SYNC_LAG_MS, XS_C_COVERED_SAS, XS_C_HEADROOM_MIN, XS_C_HEADROOM_MIN_SPI, XS_C_SEGMENTS,
	XS_C_FOREIGN,
	XS_C_SYNC,                    /* .. XS_C_SYNC + SADB_CL_COUNTERS - 1: by enum sadb_stats_cl_counter */
	XS_C_SYNC_DROPPED = XS_C_SYNC + SADB_CL_COUNTERS, /* .. + SADB_CL_DROPS - 1: by sadb_stats_cl_drop */
	XS_C_MAX = XS_C_SYNC_DROPPED + SADB_CL_DROPS
};
#define XS_C_NONE UINT64_MAX

/* A row of xipsecClusterSegmentTable: one active/active segment. */
struct xs_seg_row {
	uint32_t segment;               /* 1..SADB_STATS_SEGMENTS */
	uint64_t owned, kept, dropped;
};

/* The remaining lifetimes of an SA, in the MIB's column order (xipsecSaSoftSecondsLeft on). */
enum xs_left {
	XS_LEFT_SOFT_SECONDS, XS_LEFT_HARD_SECONDS, XS_LEFT_SOFT_BYTES, XS_LEFT_HARD_BYTES,
	XS_LEFT_SOFT_PACKETS, XS_LEFT_HARD_PACKETS,
	XS_LEFT_MAX
};

struct xs_sa_row {
	const struct xm_sa_key *key;    /* in the view's snapshot */
	uint64_t packets, bytes, drops, created, last_used;
	uint32_t state, expiry;         /* as the metrics layer counts them (0 = larval / none) */
	uint64_t left[XS_LEFT_MAX];
	unsigned have_left;             /* bit i: left[i] is set (the SA has that limit) */
};

/* XIPSEC-MIB's xipsecWorkerEntry columns 2.., in order. */
enum xs_wcol {
	XS_W_RX_PACKETS, XS_W_RX_BYTES, XS_W_TX_PACKETS, XS_W_TX_BYTES, XS_W_FRAG_PACKETS, XS_W_FRAG_MADE,
	XS_W_REASM_PACKETS, XS_W_REASM_FRAGS, XS_W_DROPS,
	XS_W_HANDOFF_JOBS, XS_W_HANDOFF_PKTS, XS_W_HANDOFF_BACK, XS_W_HANDOFF_DONE,
	XS_W_MAX
};

struct xs_worker_row {
	uint32_t id;                    /* the worker's number (row of the worker row set) */
	uint64_t v[XS_W_MAX];
};

struct xs_drop_row {
	const char *name;               /* the reason's label value, e.g. "bad_spi" */
	uint64_t total, sa, nosa;
};

/* xipsecHaBaStatusEntry: the home agent's acknowledgements of one status (those it sent). */
struct xs_ba_row {
	uint32_t status;
	uint64_t acks;
};

/* xipsecHaNodeEntry: one mobile node (a row of the metrics layer's node row set, so at most
 * XM_HA_NODES_MAX of them), and xipsecHaNodeBaEntry: its acknowledgements of one status. */
struct xs_node_row {
	uint8_t hoa[16];
	uint64_t bu_accepted, bu_refused, moves, last_bu_age;
	bool has_age, bound;            /* has_age false: no Binding Update yet, no instance */
};

struct xs_node_ba_row {
	const struct xs_node_row *node;
	uint32_t status;
	uint64_t acks;
};

struct xs_view {
	struct xm_snapshot snap;
	bool have_snap;
	uint64_t g[XS_G_MAX];
	uint64_t c[XS_C_MAX];
	struct xs_seg_row seg[SADB_STATS_SEGMENTS];
	size_t n_seg;
	struct xs_sa_row *sa;
	size_t n_sa;
	struct xs_worker_row *worker;
	size_t n_worker;
	struct xs_drop_row *drop;
	size_t n_drop;
	struct xs_ba_row *ba;
	size_t n_ba;
	struct xs_node_row *node;
	size_t n_node;
	struct xs_node_ba_row *node_ba;
	size_t n_node_ba;
};

/* Rebuild v from one xm_collect() with o. v must be zeroed before its first use. 0 or -ENOMEM (the
 * view is then empty but valid). */
int xs_view_refresh(struct xs_view *v, const struct xm_opts *o);
/* Join an already collected snapshot into v (v takes it over; xs_view_refresh's second half). */
int xs_view_build(struct xs_view *v, struct xm_snapshot *snap);
void xs_view_free(struct xs_view *v);

#endif
