/* snmpd/snmp_mib.c: XIPSEC-MIB's handlers inside Net-SNMP's agent library, for xipsec-snmpd. It owns
 * the OIDs: the xipsecGlobals and xipsecCluster scalar groups and the tables (SA, worker, drop
 * reason, cluster segment, the home agent's acknowledgements by status, its mobile nodes and theirs
 * by status) as table-data registrations whose rows point into one shared view
 * (snmpd/snmp_view.h). The view is rebuilt from a fresh reading of the metrics layer when it is
 * older than the cache period, at most once per SNMP request (so one GETBULK never sees two readings
 * and no row it holds is freed under it), and then all the tables are rebuilt from it together.
 * Read-only: every registration is HANDLER_CAN_RONLY, so the agent answers notWritable to a SET.
 * Each new reading is also compared with the one before (snmpd/snmp_notify.h) and every change sent
 * as a notification through the master agent; xs_mib_poll() takes readings between requests so that
 * changes are seen without any. */
#include "snmpd/netsnmp.h"
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "snmpd/snmp_mib.h"
#include "snmpd/snmp_notify.h"
#include "snmpd/snmp_view.h"

/* xipsecMIB: enterprises.32473 (see snmpd/mib/XIPSEC-MIB.txt on the placeholder PEN). */
#define XS_ROOT 1, 3, 6, 1, 4, 1, 32473
static const oid globals_oid[] = { XS_ROOT, 1, 1 };
static const oid sa_table_oid[] = { XS_ROOT, 1, 2 };
static const oid sa_entry_oid[] = { XS_ROOT, 1, 2, 1 };
static const oid worker_table_oid[] = { XS_ROOT, 1, 3 };
static const oid drop_table_oid[] = { XS_ROOT, 1, 4 };
static const oid cluster_oid[] = { XS_ROOT, 1, 5 };
static const oid segment_table_oid[] = { XS_ROOT, 1, 6 };
static const oid ha_ba_table_oid[] = { XS_ROOT, 1, 7 };
static const oid ha_node_table_oid[] = { XS_ROOT, 1, 8 };
static const oid ha_node_ba_table_oid[] = { XS_ROOT, 1, 9 };
static const oid notifications_oid[] = { XS_ROOT, 0 };
static const oid snmp_trap_oid[] = { 1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0 }; /* snmpTrapOID.0 */

/* xipsecSaEntry columns */
enum {
	COL_SA_SOURCE = 5, COL_SA_MODE, COL_SA_REQID, COL_SA_IKE_ID, COL_SA_STATE, COL_SA_EXPIRY,
	COL_SA_PACKETS, COL_SA_OCTETS, COL_SA_DROPS, COL_SA_CREATED, COL_SA_LAST_USED,
	COL_SA_SOFT_SECONDS, /* .. COL_SA_SOFT_SECONDS + XS_LEFT_MAX - 1 */
	COL_SA_DST_TYPE = COL_SA_SOFT_SECONDS + XS_LEFT_MAX, COL_SA_DST_ADDR, COL_SA_SRC_TYPE,
	COL_SA_SRC_ADDR,
	COL_SA_LAST = COL_SA_SRC_ADDR
};
enum { COL_W_FIRST = 2, COL_W_LAST = COL_W_FIRST + XS_W_MAX - 1 };
enum { COL_DROP_PACKETS = 2, COL_DROP_SA, COL_DROP_NOSA };
enum { COL_SEG_OWNED = 2, COL_SEG_KEPT, COL_SEG_DROPPED };
enum { COL_HA_BA_ACKS = 2 };
enum { COL_NODE_BU_ACCEPTED = 3, COL_NODE_BU_REFUSED, COL_NODE_MOVES, COL_NODE_LAST_BU_AGE, COL_NODE_BOUND };
enum { COL_NODE_BA_ACKS = 2 };

enum xs_table { T_SA, T_WORKER, T_DROP, T_SEGMENT, T_HA_BA, T_NODE, T_NODE_BA, XS_TABLES };

#define VIEW_MARK "xipsec-snmpd-view"

static struct {
	struct xs_mib_conf conf;
	struct xs_view view;
	bool have_view;
	struct xs_notify notify;        /* the last reading, for the next one's notifications */
	struct timespec taken;
	netsnmp_tdata *t[XS_TABLES];   /* indexed by enum xs_table */
	unsigned long dups, dups_before; /* rows left out for a duplicate index: this view, the last */
} M;

static double since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void tdata_clear(netsnmp_tdata *t)
{
	netsnmp_tdata_row *row;

	while ((row = netsnmp_tdata_row_first(t)))
		netsnmp_tdata_remove_and_delete_row(t, row);
}

static void tables_clear(void)
{
	for (unsigned i = 0; i < XS_TABLES; i++)
		if (M.t[i])
			tdata_clear(M.t[i]);
}

static size_t addr_bytes(const struct sadb_addr *a, const u_char **p)
{
	*p = a->a.b;
	return a->family == AF_INET6 ? 16 : 4;
}

/* InetAddressType (RFC 4001): ipv4(1), ipv6(2) */
static long addr_type(const struct sadb_addr *a)
{
	return a->family == AF_INET6 ? 2 : 1;
}

/* The longest SA row index: SPI, direction, protocol, address type, length, 16 octets. */
#define XS_SA_INDEX_MAX 21

/* The index of an SA's row (xipsecSaEntry's INDEX: SPI, direction, protocol, destination
 * InetAddressType and InetAddress, the last with its length) into o; its length, 0 when the SA has
 * no row (a direction the MIB has no value for, or an SPI below 256, which no SA has). */
static size_t sa_index(const struct xm_sa_key *k, oid o[XS_SA_INDEX_MAX])
{
	const u_char *dst;
	size_t n = 0, dlen = addr_bytes(&k->dst, &dst);

	/* xipsecSaDirection has inbound(1) and outbound(2) only, as the SADB's SAs do */
	if ((k->dir != SADB_DIR_IN && k->dir != SADB_DIR_OUT) || k->spi < 256)
		return 0;
	o[n++] = k->spi;
	o[n++] = k->dir;
	o[n++] = k->proto;
	o[n++] = (oid)addr_type(&k->dst);
	o[n++] = dlen;
	for (size_t i = 0; i < dlen; i++)
		o[n++] = dst[i];
	return n;
}

/* A new row of t with its index already set; false (counted, row freed) when the index exists. */
static bool row_add(netsnmp_tdata *t, netsnmp_tdata_row *row)
{
	if (netsnmp_tdata_add_row(t, row) == SNMPERR_SUCCESS)
		return true;
	M.dups++;
	netsnmp_tdata_delete_row(row);
	return false;
}

/* A new row of t for data, indexed by one unsigned number; false when out of memory. */
static bool row_add_u32(netsnmp_tdata *t, void *data, u_long id)
{
	netsnmp_tdata_row *row = netsnmp_tdata_create_row();

	if (!row)
		return false;
	row->data = data;
	netsnmp_tdata_row_add_index(row, ASN_UNSIGNED, &id, sizeof(id));
	row_add(t, row);
	return true;
}

/* A mobile node's index (xipsecHaNodeAddressType ipv6(2), xipsecHaNodeAddress) as row's first. */
static void node_index(netsnmp_tdata_row *row, const struct xs_node_row *n)
{
	long type = 2;

	netsnmp_tdata_row_add_index(row, ASN_INTEGER, &type, sizeof(type));
	netsnmp_tdata_row_add_index(row, ASN_OCTET_STR, n->hoa, 16);
}

static void build_tables(void)
{
	struct xs_view *v = &M.view;

	tables_clear();
	M.dups = 0;
	for (size_t i = 0; i < v->n_sa; i++) {
		oid idx[XS_SA_INDEX_MAX];
		size_t len = sa_index(v->sa[i].key, idx);
		netsnmp_tdata_row *row;

		if (!len)
			continue;
		if (!(row = netsnmp_tdata_create_row()))
			break;
		/* the index as an OID, built once with the notifications' (the row frees it) */
		row->oid_index.oids = snmp_duplicate_objid(idx, len);
		row->oid_index.len = len;
		if (!row->oid_index.oids) {
			netsnmp_tdata_delete_row(row);
			break;
		}
		row->data = &v->sa[i];
		row_add(M.t[T_SA], row);
	}
	for (size_t i = 0; i < v->n_worker; i++)
		if (!row_add_u32(M.t[T_WORKER], &v->worker[i], v->worker[i].id))
			break;
	for (size_t i = 0; i < v->n_drop; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		const char *name = v->drop[i].name;

		if (!row)
			break;
		row->data = &v->drop[i];
		netsnmp_tdata_row_add_index(row, ASN_OCTET_STR, name, strlen(name));
		row_add(M.t[T_DROP], row);
	}
	for (size_t i = 0; i < v->n_seg; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		u_long seg = v->seg[i].segment;

		if (!row)
			break;
		row->data = &v->seg[i];
		netsnmp_tdata_row_add_index(row, ASN_UNSIGNED, &seg, sizeof(seg));
		row_add(M.t[T_SEGMENT], row);
	}
	for (size_t i = 0; i < v->n_ba; i++)
		if (!row_add_u32(M.t[T_HA_BA], &v->ba[i], v->ba[i].status))
			break;
	for (size_t i = 0; i < v->n_node; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();

		if (!row)
			break;
		row->data = &v->node[i];
		node_index(row, &v->node[i]);
		row_add(M.t[T_NODE], row);
	}
	for (size_t i = 0; i < v->n_node_ba; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		u_long st = v->node_ba[i].status;

		if (!row)
			break;
		row->data = &v->node_ba[i];
		node_index(row, v->node_ba[i].node);
		netsnmp_tdata_row_add_index(row, ASN_UNSIGNED, &st, sizeof(st));
		row_add(M.t[T_NODE_BA], row);
	}
	/* said when it changes, not at every reading */
	if (M.dups != M.dups_before && M.dups)
		snmp_log(LOG_WARNING, "xipsec-snmpd: %lu rows left out: another row has the same index (two "
			 "SAs with the same SPI, direction, protocol and destination)\n", M.dups);
	M.dups_before = M.dups;
}

static void send_event(void *arg, enum xs_event ev, const struct xs_sa_row *sa, uint64_t dp_start);

/* The view for this request: the one already used by it, else a fresh one if the cache period is
 * over. A reading that fails keeps an empty view (the *Up scalars say why not in the log). */
static void view_sync(netsnmp_agent_request_info *reqinfo)
{
	/* the mark's data must not be NULL: a NULL is what the look-up answers for "absent" */
	if (reqinfo && netsnmp_agent_get_list_data(reqinfo, VIEW_MARK))
		return;
	if (reqinfo)
		netsnmp_agent_add_list_data(reqinfo, netsnmp_create_data_list(VIEW_MARK, &M, NULL));
	if (M.have_view && since(&M.taken) < (double)M.conf.cache_seconds)
		return;
	tables_clear();
	if (xs_view_refresh(&M.view, &M.conf.opts))
		snmp_log(LOG_ERR, "xipsec-snmpd: out of memory reading the metrics\n");
	M.have_view = true;
	clock_gettime(CLOCK_MONOTONIC, &M.taken);
	build_tables();
	if (xs_notify_compare(&M.notify, &M.view, send_event, NULL))
		snmp_log(LOG_ERR, "xipsec-snmpd: out of memory comparing readings: no notification\n");
}

void xs_mib_poll(void)
{
	view_sync(NULL);
}

static void set_c64(netsnmp_variable_list *vb, uint64_t v)
{
	struct counter64 c = { .high = (u_long)(v >> 32), .low = (u_long)(v & 0xffffffffu) };

	snmp_set_var_typed_value(vb, ASN_COUNTER64, &c, sizeof(c));
}

static void set_u32(netsnmp_variable_list *vb, u_char type, uint64_t v)
{
	u_long u = v > 0xffffffffu ? 0xffffffffu : (u_long)v;

	snmp_set_var_typed_value(vb, type, &u, sizeof(u));
}

static void set_int(netsnmp_variable_list *vb, long v)
{
	snmp_set_var_typed_value(vb, ASN_INTEGER, &v, sizeof(v));
}

static void set_truth(netsnmp_variable_list *vb, uint64_t v)
{
	set_int(vb, v ? 1 : 2);     /* TruthValue: true(1), false(2) */
}

/* xipsecGlobals.(i + 1).0 into vb. */
static void global_value(netsnmp_variable_list *vb, unsigned i)
{
	uint64_t v = M.view.g[i];

	if (i >= XS_G_HA_EVENTS) {
		set_c64(vb, v);  /* the home agent's counters */
		return;
	}
	switch (i) {
	case XS_G_SADB_UP: case XS_G_DP_UP: case XS_G_IKE_UP: case XS_G_HA_UP:
		set_truth(vb, v);
		break;
	case XS_G_SADB_CHANGES: case XS_G_DROPS_TOTAL:
		set_c64(vb, v);
		break;
	case XS_G_DP_START_TIME:
		set_u32(vb, ASN_UNSIGNED, v);
		break;
	default:
		set_u32(vb, ASN_GAUGE, v);
	}
}

/* The SYNTAX of each xipsecCluster scalar (the counters, by default, are Counter64). */
enum cluster_syntax { CS_COUNTER64, CS_TRUTH, CS_ROLE, CS_GAUGE32, CS_UNSIGNED32, CS_GAUGE64 };
static const enum cluster_syntax cluster_syntax[XS_C_MAX] = {
	[XS_C_UP] = CS_TRUTH, [XS_C_ROLE] = CS_ROLE, [XS_C_ELIGIBLE] = CS_TRUTH,
	[XS_C_PEER_REACHABLE] = CS_TRUTH, [XS_C_PEER_ROLE] = CS_ROLE,
	[XS_C_LAST_MESSAGE_MS] = CS_GAUGE32, [XS_C_SYNC_LAG_MS] = CS_GAUGE32,
	[XS_C_COVERED_SAS] = CS_GAUGE32, [XS_C_HEADROOM_MIN] = CS_GAUGE64,
	[XS_C_HEADROOM_MIN_SPI] = CS_UNSIGNED32, [XS_C_SEGMENTS] = CS_GAUGE32,
};

/* xipsecCluster.(i + 1).0 into vb: the view's value, none as the MIB says (a Gauge32's none is its
 * largest value, as set_u32 caps it; a role's is notClustered(1)). */
static void cluster_value(netsnmp_variable_list *vb, unsigned i)
{
	uint64_t v = M.view.c[i];

	switch (cluster_syntax[i]) {
	case CS_TRUTH: set_truth(vb, v); break;
	case CS_ROLE: set_int(vb, v == XS_C_NONE ? 1 : v ? 3 : 2); break; /* notClustered, standby, active */
	case CS_GAUGE32: set_u32(vb, ASN_GAUGE, v); break;
	case CS_UNSIGNED32: set_u32(vb, ASN_UNSIGNED, v); break;
	case CS_GAUGE64: case CS_COUNTER64: set_c64(vb, v); break;
	}
}

/* A scalar group of the MIB: where it is registered, how many scalars, how scalar i is read. */
struct scalars {
	const char *name;
	const oid *oid;
	size_t oid_len;
	unsigned n;
	void (*value)(netsnmp_variable_list *vb, unsigned i);
};

static const struct scalars scalar_groups[] = {
	{ "xipsecGlobals", globals_oid, OID_LENGTH(globals_oid), XS_G_MAX, global_value },
	{ "xipsecCluster", cluster_oid, OID_LENGTH(cluster_oid), XS_C_MAX, cluster_value },
};

static int scalars_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			   netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	const struct scalars *g = handler->myvoid;

	view_sync(reqinfo);
	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		netsnmp_variable_list *vb = r->requestvb;
		oid n;

		/* the scalar-group helper hands down GROUP.N.0 with the registration's root set to it */
		if (r->processed || vb->name_length < g->oid_len + 2)
			continue;
		n = vb->name[g->oid_len];
		if (n < 1 || n > g->n) {
			netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHOBJECT);
			continue;
		}
		g->value(vb, (unsigned)n - 1);
	}
	return SNMP_ERR_NOERROR;
}

/* The value of column col of an SA row into vb: 0, or the SNMP error of the request. */
static int sa_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_sa_row *e = row;
	const u_char *src;
	size_t slen;

	switch (col) {
	case COL_SA_SOURCE: case COL_SA_SRC_ADDR:
		slen = addr_bytes(&e->key->src, &src);
		snmp_set_var_typed_value(vb, ASN_OCTET_STR, src, slen);
		return 0;
	case COL_SA_SRC_TYPE: set_int(vb, addr_type(&e->key->src)); return 0;
	case COL_SA_DST_TYPE: case COL_SA_DST_ADDR: return SNMP_NOSUCHOBJECT; /* index only */
	case COL_SA_MODE: set_int(vb, e->key->mode); return 0;
	case COL_SA_REQID: set_u32(vb, ASN_UNSIGNED, e->key->reqid); return 0;
	case COL_SA_IKE_ID: set_u32(vb, ASN_UNSIGNED, e->key->ike_id); return 0;
	case COL_SA_STATE: set_int(vb, (long)e->state + 1); return 0;   /* larval(1).. */
	case COL_SA_EXPIRY: set_int(vb, (long)e->expiry + 1); return 0; /* none(1).. */
	case COL_SA_PACKETS: set_c64(vb, e->packets); return 0;
	case COL_SA_OCTETS: set_c64(vb, e->bytes); return 0;
	case COL_SA_DROPS: set_c64(vb, e->drops); return 0;
	case COL_SA_CREATED: set_u32(vb, ASN_UNSIGNED, e->created); return 0;
	case COL_SA_LAST_USED: set_u32(vb, ASN_UNSIGNED, e->last_used); return 0;
	}
	if (col < COL_SA_SOFT_SECONDS || col >= COL_SA_SOFT_SECONDS + XS_LEFT_MAX)
		return SNMP_NOSUCHOBJECT;
	unsigned l = col - COL_SA_SOFT_SECONDS;

	/* a limit the SA does not have has no instance (the table is sparse) */
	if (!(e->have_left & (1u << l)))
		return SNMP_NOSUCHINSTANCE;
	if (l == XS_LEFT_SOFT_SECONDS || l == XS_LEFT_HARD_SECONDS)
		set_u32(vb, ASN_UNSIGNED, e->left[l]);
	else
		set_c64(vb, e->left[l]);
	return 0;
}

/* An SA event's objects, in the order of its NOTIFICATION-TYPE's OBJECTS clause. */
static const unsigned sa_event_cols[][6] = {
	[XS_EV_SA_UP] = { COL_SA_SRC_TYPE, COL_SA_SRC_ADDR, COL_SA_REQID, COL_SA_IKE_ID, COL_SA_STATE },
	[XS_EV_SA_DOWN] = { COL_SA_REQID, COL_SA_IKE_ID, COL_SA_PACKETS, COL_SA_OCTETS, COL_SA_DROPS },
	[XS_EV_SA_SOFT_EXPIRED] = { COL_SA_REQID, COL_SA_IKE_ID, COL_SA_EXPIRY },
};

/* Append OID prefix.sub.index to vars with no value; the variable added, NULL when out of memory. */
static netsnmp_variable_list *var_add(netsnmp_variable_list **vars, const oid *prefix, size_t plen,
				      oid sub, const oid *index, size_t ilen)
{
	oid name[MAX_OID_LEN];
	size_t n = plen;

	if (plen + 1 + ilen > MAX_OID_LEN)
		return NULL;
	memcpy(name, prefix, plen * sizeof(oid));
	name[n++] = sub;
	memcpy(name + n, index, ilen * sizeof(oid));
	n += ilen;
	return snmp_varlist_add_variable(vars, name, n, ASN_NULL, NULL, 0);
}

/* One notification through the master agent (an AgentX Notify: the master sends it to its trap
 * sinks as its configuration says), snmpTrapOID.0 first, then the event's objects. */
static void send_event(void *arg, enum xs_event ev, const struct xs_sa_row *sa, uint64_t dp_start)
{
	oid trap[OID_LENGTH(notifications_oid) + 1], idx[XS_SA_INDEX_MAX];
	netsnmp_variable_list *vars = NULL, *vb;
	size_t ilen;
	bool ok;

	memcpy(trap, notifications_oid, sizeof(notifications_oid));
	trap[OID_LENGTH(notifications_oid)] = (oid)ev;
	ok = snmp_varlist_add_variable(&vars, snmp_trap_oid, OID_LENGTH(snmp_trap_oid), ASN_OBJECT_ID,
				       trap, sizeof(trap)) != NULL;
	if (sa) {
		if (!(ilen = sa_index(sa->key, idx))) {
			snmp_free_varbind(vars);
			return;
		}
		/* xipsecSaEntry.COLUMN.INDEX, valued as a GET of it would be */
		for (const unsigned *c = sa_event_cols[ev]; ok && *c; c++)
			ok = (vb = var_add(&vars, sa_entry_oid, OID_LENGTH(sa_entry_oid), *c, idx, ilen)) &&
			     !sa_column(vb, sa, *c);
	} else if (ev == XS_EV_CLUSTER_ROLE) {
		static const oid scalar[] = { 0 };
		/* the NOTIFICATION-TYPE's OBJECTS, valued as the reading that saw the change has them */
		static const unsigned objs[] = { XS_C_ROLE, XS_C_PEER_REACHABLE, XS_C_SYNC + SADB_CL_TAKEOVERS };

		for (size_t k = 0; ok && k < sizeof(objs) / sizeof(objs[0]); k++)
			if ((ok = (vb = var_add(&vars, cluster_oid, OID_LENGTH(cluster_oid), objs[k] + 1, scalar,
						1)) != NULL))
				cluster_value(vb, objs[k]);
	} else {
		static const oid scalar[] = { 0 };

		ok = ok && (vb = var_add(&vars, globals_oid, OID_LENGTH(globals_oid), XS_G_DP_UP + 1,
					 scalar, 1));
		if (ok)
			set_truth(vb, 0);
		ok = ok && (vb = var_add(&vars, globals_oid, OID_LENGTH(globals_oid), XS_G_DP_START_TIME + 1,
					 scalar, 1));
		if (ok)
			set_u32(vb, ASN_UNSIGNED, dp_start);
	}
	if (ok)
		send_v2trap(vars);
	else
		snmp_log(LOG_ERR, "xipsec-snmpd: out of memory: notification %d not sent\n", (int)ev);
	snmp_free_varbind(vars);
}

static int worker_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_worker_row *e = row;

	if (col < COL_W_FIRST || col > COL_W_LAST)
		return SNMP_NOSUCHINSTANCE;
	set_c64(vb, e->v[col - COL_W_FIRST]);
	return 0;
}

static int segment_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_seg_row *e = row;

	switch (col) {
	case COL_SEG_OWNED: set_truth(vb, e->owned); return 0;
	case COL_SEG_KEPT: set_c64(vb, e->kept); return 0;
	case COL_SEG_DROPPED: set_c64(vb, e->dropped); return 0;
	}
	return SNMP_NOSUCHOBJECT;
}

static int drop_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_drop_row *e = row;

	switch (col) {
	case COL_DROP_PACKETS: set_c64(vb, e->total); return 0;
	case COL_DROP_SA: set_c64(vb, e->sa); return 0;
	case COL_DROP_NOSA: set_c64(vb, e->nosa); return 0;
	}
	return SNMP_NOSUCHOBJECT;
}

static int ha_ba_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_ba_row *e = row;

	if (col != COL_HA_BA_ACKS)
		return SNMP_NOSUCHOBJECT;
	set_c64(vb, e->acks);
	return 0;
}

static int node_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_node_row *e = row;

	switch (col) {
	case COL_NODE_BU_ACCEPTED: set_c64(vb, e->bu_accepted); return 0;
	case COL_NODE_BU_REFUSED: set_c64(vb, e->bu_refused); return 0;
	case COL_NODE_MOVES: set_c64(vb, e->moves); return 0;
	case COL_NODE_LAST_BU_AGE:
		if (!e->has_age)
			return SNMP_NOSUCHINSTANCE;   /* no Binding Update yet: the column is sparse */
		set_u32(vb, ASN_UNSIGNED, e->last_bu_age);
		return 0;
	case COL_NODE_BOUND: set_truth(vb, e->bound); return 0;
	}
	return SNMP_NOSUCHOBJECT;
}

static int node_ba_column(netsnmp_variable_list *vb, const void *row, unsigned col)
{
	const struct xs_node_ba_row *e = row;

	if (col != COL_NODE_BA_ACKS)
		return SNMP_NOSUCHOBJECT;
	set_c64(vb, e->acks);
	return 0;
}

/* The SA table's readable columns: the index (1..4, 22, 23) has no instance, and GETNEXT must step
 * over it rather than stop at it. */
static unsigned sa_valid_list[] = { COL_SA_SRC_TYPE, COL_SA_SRC_ADDR };
static netsnmp_column_info sa_valid[2] = {
	{ .isRange = 1, .details.range = { COL_SA_SOURCE, COL_SA_SOFT_SECONDS + XS_LEFT_MAX - 1 },
	  .next = &sa_valid[1] },
	{ .isRange = 0, .list_count = 2, .details.list = sa_valid_list },
};

/* XIPSEC-MIB's tables: where each is registered, its columns and index, and how a column of one of
 * its rows is read. */
static const struct table {
	const char *name;
	const oid *oid;
	size_t oid_len;
	unsigned min_col, max_col;
	int index[6];               /* ASN types of the index parts, 0-terminated */
	int (*column)(netsnmp_variable_list *vb, const void *row, unsigned col);
	netsnmp_column_info *valid;  /* NULL: every column from min_col to max_col */
} tables[XS_TABLES] = {
	[T_SA] = { "xipsecSaTable", sa_table_oid, OID_LENGTH(sa_table_oid), COL_SA_SOURCE,
		   COL_SA_LAST, { ASN_UNSIGNED, ASN_INTEGER, ASN_INTEGER, ASN_INTEGER, ASN_OCTET_STR },
		   sa_column, &sa_valid[0] },
	[T_WORKER] = { "xipsecWorkerTable", worker_table_oid, OID_LENGTH(worker_table_oid),
		       COL_W_FIRST, COL_W_LAST, { ASN_UNSIGNED }, worker_column },
	[T_DROP] = { "xipsecDropTable", drop_table_oid, OID_LENGTH(drop_table_oid),
		     COL_DROP_PACKETS, COL_DROP_NOSA, { ASN_OCTET_STR }, drop_column },
	[T_SEGMENT] = { "xipsecClusterSegmentTable", segment_table_oid, OID_LENGTH(segment_table_oid),
			COL_SEG_OWNED, COL_SEG_DROPPED, { ASN_UNSIGNED }, segment_column },
	[T_HA_BA] = { "xipsecHaBaStatusTable", ha_ba_table_oid, OID_LENGTH(ha_ba_table_oid),
		      COL_HA_BA_ACKS, COL_HA_BA_ACKS, { ASN_UNSIGNED }, ha_ba_column },
	[T_NODE] = { "xipsecHaNodeTable", ha_node_table_oid, OID_LENGTH(ha_node_table_oid),
		     COL_NODE_BU_ACCEPTED, COL_NODE_BOUND, { ASN_INTEGER, ASN_OCTET_STR }, node_column },
	[T_NODE_BA] = { "xipsecHaNodeBaTable", ha_node_ba_table_oid, OID_LENGTH(ha_node_ba_table_oid),
			COL_NODE_BA_ACKS, COL_NODE_BA_ACKS, { ASN_INTEGER, ASN_OCTET_STR, ASN_UNSIGNED },
			node_ba_column },
};

/* Every table's GET: the row the table-data helper found for each request, read by the table's
 * column function (handler->myvoid); a request without a row has no instance. */
static int table_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			 netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	const struct table *t = handler->myvoid;

	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		const void *e;
		netsnmp_table_request_info *ti;
		int err;

		if (r->processed)
			continue;
		e = netsnmp_tdata_extract_entry(r);
		ti = netsnmp_extract_table_info(r);
		err = SNMP_NOSUCHINSTANCE;
		if (e && ti)
			err = t->column(r->requestvb, e, ti->colnum);
		if (err)
			netsnmp_set_request_error(reqinfo, r, err);
	}
	return SNMP_ERR_NOERROR;
}

/* Net-SNMP's AgentX parser (agentx_parse_oid(), 5.9.3 and since) reads each 32-bit sub-identifier
 * into an int and stores it in a 64-bit oid: one of 2^31 and more, as every SPI IKE allocates,
 * arrives sign-extended to 2^64 - 2^32 + spi. A GET of such a row then matches no row
 * (noSuchInstance), and a GETNEXT from one looks past every row (the walk stops there, skipping
 * the SPIs above it). A sub-identifier is 32 bits (RFC 2578, section 3.5), so the high half only
 * ever holds that sign: it is cut off before the table helpers read the index. The master agent
 * parses our answers the same way, harmlessly: it sends them back to us in 32 bits, and an answer
 * it compares with its request still sorts after it. */
static void oid_unsign(netsnmp_variable_list *vb)
{
	for (size_t i = 0; i < vb->name_length; i++)
		vb->name[i] &= 0xffffffffu;
}

/* Runs before a table's helpers: the request's OIDs are the manager's, and the rows they look up
 * are the current view's. */
static int sync_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	for (netsnmp_request_info *r = requests; r; r = r->next)
		oid_unsign(r->requestvb);
	view_sync(reqinfo);
	return netsnmp_call_next_handler(handler, reg, reqinfo, requests);
}

static int register_table(const struct table *t, netsnmp_tdata *data)
{
	netsnmp_handler_registration *reg;
	netsnmp_table_registration_info *ti;

	reg = netsnmp_create_handler_registration(t->name, table_handler, t->oid, t->oid_len,
						  HANDLER_CAN_RONLY);
	ti = SNMP_MALLOC_TYPEDEF(netsnmp_table_registration_info);
	if (!reg || !ti)
		return -ENOMEM;
	reg->handler->myvoid = (void *)t;
	for (const int *type = t->index; *type; type++)
		netsnmp_table_helper_add_index(ti, *type);
	ti->min_column = t->min_col;
	ti->max_column = t->max_col;
	ti->valid_columns = t->valid;
	if (netsnmp_tdata_register(reg, data, ti) != MIB_REGISTERED_OK)
		return -EINVAL;
	/* first in the chain: the table-data registration looks rows up in its table helper already */
	if (netsnmp_inject_handler(reg, netsnmp_create_handler("xipsec_view", sync_handler)) !=
	    SNMPERR_SUCCESS)
		return -EINVAL;
	return 0;
}

int xs_mib_init(const struct xs_mib_conf *conf)
{
	netsnmp_handler_registration *reg;

	M.conf = *conf;
	if (!M.conf.cache_seconds)
		M.conf.cache_seconds = 1;
	for (unsigned i = 0; i < XS_TABLES; i++)
		if (!(M.t[i] = netsnmp_tdata_create_table(tables[i].name, 0)))
			return -ENOMEM;

	for (unsigned i = 0; i < sizeof(scalar_groups) / sizeof(scalar_groups[0]); i++) {
		const struct scalars *g = &scalar_groups[i];

		reg = netsnmp_create_handler_registration(g->name, scalars_handler, g->oid, g->oid_len,
							  HANDLER_CAN_RONLY);
		if (!reg)
			return -EINVAL;
		reg->handler->myvoid = (void *)g;
		if (netsnmp_register_scalar_group(reg, 1, g->n) != MIB_REGISTERED_OK)
			return -EINVAL;
	}
	for (unsigned i = 0; i < XS_TABLES; i++)
		if (register_table(&tables[i], M.t[i]))
			return -EINVAL;
	return 0;
}

void xs_mib_shutdown(void)
{
	tables_clear();
	xs_notify_free(&M.notify);
	xs_view_free(&M.view);
	M.have_view = false;
}
