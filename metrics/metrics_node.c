/* metrics/metrics_node.c: the home agent's per-node families (metrics.h: XM_HA_NODE_*), one row per
 * mobile node of a counters view's reading (sadb/sadb_stats.h's node records), labelled with its
 * home address, up to XM_HA_NODES_MAX rows: what each mobile node's Binding Updates got, its moves,
 * its acknowledgements by status, the age of its last Binding Update and whether it is bound. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>

#include "metrics/metrics_int.h"

/* The age of a record's last Binding Update at the snapshot's time: the view gives it at its
 * publication, up to SADB_STATS_INTERVAL_MS before the snapshot. */
static uint64_t age_seconds(const struct xm_snapshot *s, const struct sadb_stats_reading *r,
			    const struct sadb_stats_node *n)
{
	uint64_t now_ms = s->now * 1000u, pub_ms = r->published / 1000000u;

	return (n->last_bu_age_ms + (now_ms > pub_ms ? now_ms - pub_ms : 0)) / 1000u;
}

static int node_one(struct xm_snapshot *s, const struct sadb_stats_reading *r,
		    const struct sadb_stats_node *n)
{
	char a[INET6_ADDRSTRLEN];
	const char *v[1] = { inet_ntop(AF_INET6, n->hoa, a, sizeof(a)) };
	long row = xm_rows_add(&s->node, v);
	int rc = 0;

	if (row < 0)
		return (int)row;
	rc |= xm_add(s, XM_HA_NODE_BU, (uint32_t)row, 0, n->bu_accepted);
	rc |= xm_add(s, XM_HA_NODE_BU, (uint32_t)row, 1, n->bu_refused);
	rc |= xm_add(s, XM_HA_NODE_MOVES, (uint32_t)row, 0, n->moves);
	for (uint64_t i = 0; i < n->n_ba && i < SADB_STATS_NODE_BA; i++)
		if (n->ba[i].status < 256)
			rc |= xm_add(s, XM_HA_NODE_BA_STATUS, (uint32_t)row, (uint32_t)n->ba[i].status,
				     n->ba[i].count);
	if (n->last_bu_age_ms != UINT64_MAX)
		rc |= xm_add(s, XM_HA_NODE_LAST_BU_AGE, (uint32_t)row, 0, age_seconds(s, r, n));
	rc |= xm_add(s, XM_HA_NODE_BOUND, (uint32_t)row, 0, n->bound ? 1 : 0);
	return rc;
}

int xm_collect_nodes(struct xm_snapshot *s, const struct sadb_stats_reading *r)
{
	const struct sadb_stats_node *n = sadb_stats_nodes(r);
	uint32_t shown = r->n_node < XM_HA_NODES_MAX ? r->n_node : XM_HA_NODES_MAX;
	int rc = 0;

	for (uint32_t i = 0; i < shown && !rc; i++)
		rc = node_one(s, r, &n[i]);
	if (!rc)
		rc = xm_add(s, XM_HA_NODES_LEFT_OUT, 0, 0, r->n_node - shown);
	return rc;
}
