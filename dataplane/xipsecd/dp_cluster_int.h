/* dataplane/xipsecd/dp_cluster_int.h: what the files of the cluster node share inside xipsecd: the
 * node's state (struct dp_cluster, one per xipsecd, the control thread's alone), the per-SA cluster
 * state and the few readers the node's files all use (dp_cluster.c: the node's work; dp_cluster_status.c:
 * what `ipsecctl show cluster` and the counters view show). */
#ifndef XIPSEC_DP_CLUSTER_INT_H
#define XIPSEC_DP_CLUSTER_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_sa.h"

#define MS 1000000ull
#define DPC_DEAD_NS (1000 * MS)       /* the peer is unreachable after this long without a message */

/* One SA's cluster state, by its cross-node key. */
struct cent {
	struct dpc_sa_key key;
	bool used;
	unsigned expiry;          /* solo expiry bits raised */
	bool frozen;              /* outbound, taken over without having caught up: no number until
	                           * the peer acknowledges a lease, or the SA is replaced by a rekey */
	struct dpc_lease l;       /* outbound */
	uint64_t grant_base;      /* outbound: the reservation is raised to this before l.granted */
	uint64_t ask_ns;          /* outbound: when l.asked was last sent */
	uint64_t win_top;         /* inbound: standby, the top recorded; active, the top last sent */
	uint64_t win_ns;          /* inbound, active: when it was sent */
	uint64_t merge_top, merge_ns; /* outbound, both active: the reservation last sent, when */
	uint64_t seen_ns;         /* the last tick an SA object or a message had this key */
};

struct counters {
	uint64_t sent, received, dropped[DPC_DROP_MAX], leases_asked, leases_acked, leases_refused,
		 resyncs_asked, resyncs_served, takeovers, solo_soft, solo_hard, send_errors;
};

struct dp_cluster {
	struct dp_cluster_cfg cfg;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	char peer_str[80], local_str[80];
	unsigned rank;
	struct dpc_chan chan;
	bool active, eligible, takeover_due, takeover_blind;
	bool peer_active, peer_eligible, was_reachable;
	uint64_t last_rx_ns, last_sync_rx_ns, hello_ns;
	uint32_t segments, peer_segments;     /* active/active: owned here, and there as last said */
	uint64_t peer_seg_ns;                 /* when the peer last said its segments */
	uint64_t resync_token, resync_ns;     /* standby: the token of the resync it waits for */
	uint64_t resync_retry_ns;             /* standby: asked again after this long without DPC_DONE */
	unsigned resync_step;                 /* active: SAs a resync serves per scan */
	struct dpc_sas sas;                   /* this node's covered SAs and the active's (dp_cluster_sas.c) */
	/* A push of this node's numbers to the peer, from serve_slot on: a resync the active serves
	 * (serve_token, the standby's, ends it with DPC_DONE), or this node's own ends after a cut or on
	 * stepping down (token 0: merged by max, dp_cluster_lease.c) */
	uint64_t serve_token;
	uint32_t serve_slot;
	bool serving;
	struct cent *tab;
	uint32_t mask, used;
	uint64_t gc_ns, scan_ns;
	struct dpc_msg out[DPC_TYPE_MAX];
	unsigned sends_left;
	struct counters c;
};

/* The entry of k; made when missing (NULL only when out of memory). */
struct cent *cent_get(struct dp_cluster *cl, const struct dpc_sa_key *k, uint64_t now);

static inline uint64_t rd(const uint64_t *p)
{
	return atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_acquire);
}

static inline bool rt_ours(const struct dp_sa *s)
{
	return atomic_load_explicit((const _Atomic uint64_t *)&s->rt->instance, memory_order_acquire) ==
	       s->sa.instance;
}

static inline bool reachable(const struct dp_cluster *cl, uint64_t now)
{
	return cl->last_rx_ns && now - cl->last_rx_ns < DPC_DEAD_NS;
}

/* Eligible to take over: caught up with the active's numbers, and holding the SAs it holds. */
static inline bool ready(const struct dp_cluster *cl, uint64_t now)
{
	return cl->eligible && !dpc_sas_differ(&cl->sas, now);
}

#endif
