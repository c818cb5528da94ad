/* ike/cluster_seg.h: the active/active segments strongSwan's ha plugin gives this node, passed on to
 * xipsecd (its control socket, "segments set LIST"), whose XDP program and workers do what the
 * plugin expects the iptables CLUSTERIP target to do: keep only the owned segments' peers. */
#ifndef XIPSEC_IKE_CLUSTER_SEG_H
#define XIPSEC_IKE_CLUSTER_SEG_H

#include <bus/listeners/logger.h>

typedef struct cluster_seg_t cluster_seg_t;
struct cluster_seg_t {
	logger_t logger;                /* must stay first: the bus hands us this pointer */
	void (*destroy)(cluster_seg_t *this);
};

/* ctl_path: xipsecd's control socket. Register the logger on charon's bus; until the plugin reports
 * its first change nothing is sent (xipsecd owns no segment then). */
cluster_seg_t *cluster_seg_create(const char *ctl_path);

#endif
