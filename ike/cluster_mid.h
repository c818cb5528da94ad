/* ike/cluster_mid.h: a cluster node takes up the message IDs of the peer's requests the other node
 * answered while the two were apart (a split brain), once a request proves them authentic. */
#ifndef XIPSEC_IKE_CLUSTER_MID_H
#define XIPSEC_IKE_CLUSTER_MID_H

#include <bus/listeners/listener.h>

typedef struct cluster_mid_t cluster_mid_t;
struct cluster_mid_t {
	listener_t listener;            /* must stay first: the bus hands us this pointer */
	void (*destroy)(cluster_mid_t *this);
};

/* A listener for charon's bus (add it, remove it before destroy); only for a node of a cluster. */
cluster_mid_t *cluster_mid_create(void);

#endif
