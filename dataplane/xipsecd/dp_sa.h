/* dataplane/xipsecd/dp_sa.h: the dataplane's private, pre-keyed SA objects (dp_sa.c) as workers see them. */
#ifndef XIPSEC_DP_SA_H
#define XIPSEC_DP_SA_H

#include <pthread.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/engine/esp.h"
#include "dataplane/xipsecd/dp_cluster.h"

struct dp_sa {
	struct sadb_sa sa;           /* the record this object was built from (keys wiped on free) */
	uint32_t slot;
	bool unusable;               /* the engine refused the transform */
	bool deleted;                /* control thread: the SADB no longer holds this instance */
	bool lease_failed;           /* SADB_SAF_SEQ_PERSIST: the last lease could not be recorded */
	uint64_t lease_retry_ns;     /* ... and is not tried again before this dp_now_ns() */
	struct sadb_runtime *rt;     /* in the SADB: survives restarts */
	pthread_spinlock_t *in_lock; /* inbound: held by the one worker updating the replay window
	                              * (rule 5), given to the engine objects as their replay lock */
	/* Control thread only (dp_expire.c): CLOCK_REALTIME ns when this process first saw this SA
	 * instance, and first saw it used (0 = not yet); kept across updates of the record. */
	uint64_t seen_ns, use_seen_ns;
	_Atomic uint64_t window_want; /* inbound, window ceiling: esp_sa_opts.window_want */
	struct dpc_sa_key ckey;      /* clustered: the SA's key across the two nodes (dp_cluster.c) */
	_Atomic uint64_t seq_floor;  /* outbound, clustered: where this node last took the SA over
	                              * (dp_cluster.c, after raising rt->seq_reserved there); each
	                              * worker abandons numbers it reserved at or below it (dp_out.c) */
	struct esp_sa *e[];          /* engine objects, one per worker (either direction) */
};

/* Workers, inside an RCU read-side section (between quiescent states). NULL when absent. */
struct dp_sa *dp_sa_find_in(struct dp_ctx *ctx, uint32_t spi, uint8_t proto,
			    const struct sadb_addr *dst);
struct dp_sa *dp_sa_find_out(struct dp_ctx *ctx, uint32_t reqid);
/* After the XDP program is loaded: fill its SPI filter with the inbound SAs held now and switch it
 * on; every sync keeps it in step from then on. */
void dp_sa_spi_filter_start(struct dp_ctx *ctx);
unsigned dp_sa_count(struct dp_ctx *ctx);
/* Control thread, every few milliseconds: extend the on-disk leases of sequence numbers that are
 * running low (dp_seqmark.c), and the cluster's leases and window tops (dp_cluster.c). */
void dp_sa_tick(struct dp_ctx *ctx);
/* Control thread: the SAs of the current table the cluster covers (dp_cluster_covers), in slot
 * order; valid until the next dp_sa_sync. */
uint32_t dp_sa_cluster_list(struct dp_ctx *ctx, struct dp_sa *const **v);

/* ---- dp_expire.c: lifetimes of the SAs without an IKE owner ---- */
struct dp_expire_round {
	uint32_t next;               /* index of the next SA to look at, 0 = between rounds */
	uint64_t due_ns;             /* dp_now_ns() when the next round may start */
};
uint64_t dp_realtime_ns(void);
/* Whether xipsecd owns the expiry of this SA: no IKE owner, a limit, keyed (MATURE or DYING). */
bool dp_expire_owned(const struct sadb_sa *sa);
/* Control thread, every tick: look at the next SAs of v (those dp_expire_owned) and raise the soft
 * or hard expiry of each whose limit is reached (runtime bits, log, ctx counters). */
void dp_expire_tick(struct dp_ctx *ctx, struct dp_expire_round *r, struct dp_sa *const *v,
		    uint32_t n);

#endif
