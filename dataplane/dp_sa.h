/* dataplane/dp_sa.h: the dataplane's private, pre-keyed SA objects (dp_sa.c) as workers see them. */
#ifndef XIPSEC_DP_SA_H
#define XIPSEC_DP_SA_H

#include <pthread.h>

#include "dataplane/dp.h"
#include "dataplane/esp.h"

struct dp_sa {
	struct sadb_sa sa;           /* the record this object was built from (keys wiped on free) */
	uint32_t slot;
	bool unusable;               /* the engine refused the transform */
	bool lease_failed;           /* SADB_SAF_SEQ_PERSIST: the last lease could not be recorded */
	struct sadb_runtime *rt;     /* in the SADB: survives restarts */
	pthread_spinlock_t *in_lock; /* inbound: the replay window's single writer (rule 5) */
	struct esp_sa *ei;           /* inbound engine object */
	struct esp_sa *eo[];         /* outbound: one per worker */
};

/* Workers, inside an RCU read-side section (between quiescent states). NULL when absent. */
struct dp_sa *dp_sa_find_in(struct dp_ctx *ctx, uint32_t spi, uint8_t proto,
			    const struct sadb_addr *dst);
struct dp_sa *dp_sa_find_out(struct dp_ctx *ctx, uint32_t reqid);
unsigned dp_sa_count(struct dp_ctx *ctx);
/* Control thread, every few milliseconds: extend the on-disk leases of sequence numbers that are
 * running low (dp_seqmark.c). */
void dp_sa_tick(struct dp_ctx *ctx);

#endif
