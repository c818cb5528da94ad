/* snmpd/snmp_notify.h: the events XIPSEC-MIB's notifications report (an SA up, down or at its soft
 * lifetime, the dataplane gone, the node's cluster role changed), found by comparing each reading of the view (snmpd/snmp_view.h)
 * with the one before it. No Net-SNMP here: snmpd/snmp_mib.c turns each event into a notification. */
#ifndef XIPSEC_SNMP_NOTIFY_H
#define XIPSEC_SNMP_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snmpd/snmp_view.h"

/* The notification's number under xipsecNotifications (XIPSEC-MIB). */
enum xs_event {
	XS_EV_SA_UP = 1,
	XS_EV_SA_DOWN = 2,
	XS_EV_SA_SOFT_EXPIRED = 3,
	XS_EV_DP_DOWN = 4,
	XS_EV_CLUSTER_ROLE = 5,     /* the node's cluster role changed; the values are the view's */
};

/* One SA of the last reading, kept beyond it: row.key points at key (set by xs_notify_compare). */
struct xs_notify_sa {
	struct xm_sa_key key;
	struct xs_sa_row row;
};

/* What the last reading held. Zero it before the first use. */
struct xs_notify {
	bool have_sa;               /* sa holds a reading of the SADB (the first one reports nothing) */
	bool have_dp;               /* dp_up is a reading's */
	bool dp_up;
	uint64_t dp_start;          /* the dataplane's start time in that reading */
	bool have_role;             /* role is a reading's (of a running dataplane) */
	uint64_t role;              /* its c[XS_C_ROLE] */
	struct xs_notify_sa *sa;    /* by SA instance */
	size_t n_sa;
};

/* One event: sa is the SA's row (for SA_DOWN, as last read), NULL for DP_DOWN and CLUSTER_ROLE;
 * dp_start is the start time of the dataplane that stopped. */
typedef void (*xs_notify_fn)(void *arg, enum xs_event ev, const struct xs_sa_row *sa,
			     uint64_t dp_start);

/* Compare v with the last reading, call fn once per change, and keep v as the last reading. A view
 * whose SADB could not be read compares no SA (its SAs are unknown, not gone). 0, or -ENOMEM (no
 * event reported, the last reading kept). */
int xs_notify_compare(struct xs_notify *n, const struct xs_view *v, xs_notify_fn fn, void *arg);
void xs_notify_free(struct xs_notify *n);

#endif
