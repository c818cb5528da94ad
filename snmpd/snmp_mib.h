/* snmpd/snmp_mib.h: XIPSEC-MIB's registrations in Net-SNMP's agent (snmpd/snmp_mib.c), for
 * xipsec-snmpd, and its notifications. Call xs_mib_init() after init_agent() and before
 * init_snmp(). */
#ifndef XIPSEC_SNMP_MIB_H
#define XIPSEC_SNMP_MIB_H

#include "metrics/metrics.h"

struct xs_mib_conf {
	struct xm_opts opts;        /* what to read and where (the strings must outlive the agent) */
	unsigned cache_seconds;     /* a reading serves requests for this long (0: 1 s) */
};

/* Register every object of XIPSEC-MIB. 0, or -ENOMEM / -EINVAL (a registration failed). */
int xs_mib_init(const struct xs_mib_conf *conf);
/* Take a new reading if the last one is older than the cache period, and send a notification for
 * each change it shows (call it every notify interval: changes are seen without any request). */
void xs_mib_poll(void);
void xs_mib_shutdown(void);

#endif
