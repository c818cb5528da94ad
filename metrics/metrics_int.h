/* metrics/metrics_int.h: what the parts of the metrics collection layer share: metrics.c owns the
 * families and the SADB, metrics_ike.c xipsec-iked and charon's names (and the SA rows' connection
 * and child labels), metrics_tunnel.c the tunnels, metrics_snapshot.c the rows and samples. Internal to metrics/libxmetrics.a. */
#ifndef XIPSEC_METRICS_INT_H
#define XIPSEC_METRICS_INT_H

#include "metrics/metrics.h"
#include "sadb/sadb_stats.h"

#define XM_IKE_STATES   8
#define XM_CHILD_STATES 11
#define XM_IKE_EVENTS_N 21

/* charon's names (metrics_ike.c), the sub labels of the IKE families */
extern const char *const xm_ike_state_names[XM_IKE_STATES];
extern const char *const xm_child_state_names[XM_CHILD_STATES];
extern const char *const xm_ike_event_names[XM_IKE_EVENTS_N];

/* One sample more in family id (metrics_snapshot.c); 0 or -ENOMEM. */
int xm_add(struct xm_snapshot *s, enum xm_id id, uint32_t row, uint32_t sub, uint64_t value);
/* A new row whose label values are the r->n_labels strings in vals: the row, or -ENOMEM. */
long xm_rows_add(struct xm_rowset *r, const char *const *vals);
/* Label i of an existing row takes the value v (a copy): 0 or -ENOMEM. */
int xm_rows_set(struct xm_rowset *r, size_t row, unsigned i, const char *v);
/* The SA row set's labels (metrics.c fills them in this order; metrics_ike.c and
 * metrics_tunnel.c set the connection and child names). */
enum { XM_SA_L_SPI, XM_SA_L_PROTO, XM_SA_L_DIR, XM_SA_L_LOCAL, XM_SA_L_PEER, XM_SA_L_CONN,
       XM_SA_L_CHILD, XM_SA_L_REQID, XM_SA_N_LABELS };
/* The tunnel families from the SA families (metrics_tunnel.c), after the connection and child
 * labels are in; mem as xm_opts.tunnels; for the final counters of SAs gone since, db the SADB the
 * SA families were read from, or view the counters view's reading they came from (its gone
 * records), or neither (NULL). 0 or -ENOMEM. */
int xm_collect_tunnels(struct xm_snapshot *s, struct xm_tunnel_memory *mem, struct sadb *db,
		       const struct sadb_stats_reading *view);
/* The home agent's per-node families from a view's reading r (metrics_node.c); the snapshot's
 * time s->now. 0 or -ENOMEM. */
int xm_collect_nodes(struct xm_snapshot *s, const struct sadb_stats_reading *r);
/* The xipsec-iked families; 0 or -ENOMEM (a daemon that does not answer is not an error). */
int xm_collect_ike(struct xm_snapshot *s, const struct xm_opts *o);

#endif
