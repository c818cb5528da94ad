/* metrics/metrics_int.h: what the parts of the metrics collection layer share: metrics.c owns the
 * families and the SADB, metrics_ike.c xipsec-iked and charon's names, metrics_snapshot.c the
 * samples. Internal to metrics/libxmetrics.a. */
#ifndef XIPSEC_METRICS_INT_H
#define XIPSEC_METRICS_INT_H

#include "metrics/metrics.h"

#define XM_IKE_STATES   8
#define XM_CHILD_STATES 11
#define XM_IKE_EVENTS_N 21

/* charon's names (metrics_ike.c), the sub labels of the IKE families */
extern const char *const xm_ike_state_names[XM_IKE_STATES];
extern const char *const xm_child_state_names[XM_CHILD_STATES];
extern const char *const xm_ike_event_names[XM_IKE_EVENTS_N];

/* One sample more in family id (metrics_snapshot.c); 0 or -ENOMEM. */
int xm_add(struct xm_snapshot *s, enum xm_id id, uint32_t row, uint32_t sub, uint64_t value);
/* The xipsec-iked families; 0 or -ENOMEM (a daemon that does not answer is not an error). */
int xm_collect_ike(struct xm_snapshot *s, const struct xm_opts *o);

#endif
