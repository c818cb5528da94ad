/* ike/maxqm.h: the maxqm policy of xipsec-iked (HP-UX IPSec's limit on Quick Mode SAs per Main Mode
 * SA) as a charon bus listener, and the status file that `ipsecctl ike` reads. */
#ifndef XIPSEC_IKE_MAXQM_H
#define XIPSEC_IKE_MAXQM_H

#include <bus/listeners/listener.h>

#define MAXQM_DEFAULT 100

typedef struct maxqm_t maxqm_t;
struct maxqm_t {
	listener_t listener;            /* must stay first: the bus hands us this pointer */
	/* Rewrite the status file now (after a settings reload, at start). */
	void (*write_status)(maxqm_t *this);
	void (*destroy)(maxqm_t *this);
};

/* run_dir: where the status file (rewritten atomically after IKE/CHILD events, at most every 10 ms
 * while they come faster) and the override file of `ipsecctl ike maxqm set` live; NULL for none. */
maxqm_t *maxqm_create(const char *run_dir);

/* The maxqm that applies to a connection: %s.maxqm_conn.<name>, else %s.maxqm, else 100. 0 = none. */
unsigned maxqm_limit(const char *conn);

#endif
