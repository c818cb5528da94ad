/* snmpd/snmp_mib.c: XIPSEC-MIB's handlers inside Net-SNMP's agent library, for xipsec-snmpd. It owns
 * the OIDs: the xipsecGlobals scalar group and the three tables (SA, worker, drop reason) as
 * table-data registrations whose rows point into one shared view (snmpd/snmp_view.h). The view is
 * rebuilt from a fresh reading of the metrics layer when it is older than the cache period, at most
 * once per SNMP request (so one GETBULK never sees two readings and no row it holds is freed under
 * it), and then all three tables are rebuilt from it together. Read-only: every registration is
 * HANDLER_CAN_RONLY, so the agent answers notWritable to a SET. */
#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>
#include <net-snmp/agent/net-snmp-agent-includes.h>
/* Net-SNMP's config header defines the autoconf package macros too; ours follow. */
#undef PACKAGE_BUGREPORT
#undef PACKAGE_NAME
#undef PACKAGE_STRING
#undef PACKAGE_TARNAME
#undef PACKAGE_URL
#undef PACKAGE_VERSION
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "snmpd/snmp_mib.h"
#include "snmpd/snmp_view.h"

/* xipsecMIB: enterprises.32473 (see snmpd/mib/XIPSEC-MIB.txt on the placeholder PEN). */
#define XS_ROOT 1, 3, 6, 1, 4, 1, 32473
static const oid globals_oid[] = { XS_ROOT, 1, 1 };
static const oid sa_table_oid[] = { XS_ROOT, 1, 2 };
static const oid worker_table_oid[] = { XS_ROOT, 1, 3 };
static const oid drop_table_oid[] = { XS_ROOT, 1, 4 };

/* xipsecSaEntry columns */
enum {
	COL_SA_SOURCE = 5, COL_SA_MODE, COL_SA_REQID, COL_SA_IKE_ID, COL_SA_STATE, COL_SA_EXPIRY,
	COL_SA_PACKETS, COL_SA_OCTETS, COL_SA_DROPS, COL_SA_CREATED, COL_SA_LAST_USED,
	COL_SA_SOFT_SECONDS, /* .. COL_SA_SOFT_SECONDS + XS_LEFT_MAX - 1 */
	COL_SA_LAST = COL_SA_SOFT_SECONDS + XS_LEFT_MAX - 1
};
enum { COL_W_FIRST = 2, COL_W_LAST = COL_W_FIRST + XS_W_MAX - 1 };
enum { COL_DROP_PACKETS = 2, COL_DROP_SA, COL_DROP_NOSA };

#define VIEW_MARK "xipsec-snmpd-view"

static struct {
	struct xs_mib_conf conf;
	struct xs_view view;
	bool have_view;
	struct timespec taken;
	netsnmp_tdata *sa, *worker, *drop;
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

static size_t addr_bytes(const struct sadb_addr *a, const u_char **p)
{
	*p = a->a.b;
	return a->family == AF_INET6 ? 16 : 4;
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

static void build_tables(void)
{
	struct xs_view *v = &M.view;

	tdata_clear(M.sa);
	tdata_clear(M.worker);
	tdata_clear(M.drop);
	M.dups = 0;
	for (size_t i = 0; i < v->n_sa; i++) {
		const struct xm_sa_key *k = v->sa[i].key;
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		u_long spi = k->spi;
		long dir = k->dir, proto = k->proto;
		const u_char *dst;
		size_t dlen = addr_bytes(&k->dst, &dst);

		if (!row)
			break;
		/* xipsecSaDirection has inbound(1) and outbound(2) only, as the SADB's SAs do */
		if ((dir != SADB_DIR_IN && dir != SADB_DIR_OUT) || spi < 256) {
			netsnmp_tdata_delete_row(row);
			continue;
		}
		row->data = &v->sa[i];
		netsnmp_tdata_row_add_index(row, ASN_UNSIGNED, &spi, sizeof(spi));
		netsnmp_tdata_row_add_index(row, ASN_INTEGER, &dir, sizeof(dir));
		netsnmp_tdata_row_add_index(row, ASN_INTEGER, &proto, sizeof(proto));
		netsnmp_tdata_row_add_index(row, ASN_OCTET_STR, dst, dlen);
		row_add(M.sa, row);
	}
	for (size_t i = 0; i < v->n_worker; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		u_long id = v->worker[i].id;

		if (!row)
			break;
		row->data = &v->worker[i];
		netsnmp_tdata_row_add_index(row, ASN_UNSIGNED, &id, sizeof(id));
		row_add(M.worker, row);
	}
	for (size_t i = 0; i < v->n_drop; i++) {
		netsnmp_tdata_row *row = netsnmp_tdata_create_row();
		const char *name = v->drop[i].name;

		if (!row)
			break;
		row->data = &v->drop[i];
		netsnmp_tdata_row_add_index(row, ASN_OCTET_STR, name, strlen(name));
		row_add(M.drop, row);
	}
	/* said when it changes, not at every reading */
	if (M.dups != M.dups_before && M.dups)
		snmp_log(LOG_WARNING, "xipsec-snmpd: %lu rows left out: another row has the same index (two "
			 "SAs with the same SPI, direction, protocol and destination)\n", M.dups);
	M.dups_before = M.dups;
}

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
	tdata_clear(M.sa);
	tdata_clear(M.worker);
	tdata_clear(M.drop);
	if (xs_view_refresh(&M.view, &M.conf.opts))
		snmp_log(LOG_ERR, "xipsec-snmpd: out of memory reading the metrics\n");
	M.have_view = true;
	clock_gettime(CLOCK_MONOTONIC, &M.taken);
	build_tables();
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

static int globals_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			   netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	view_sync(reqinfo);
	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		netsnmp_variable_list *vb = r->requestvb;
		oid n;

		/* the scalar-group helper hands down GROUP.N.0 with the registration's root set to it */
		if (r->processed || vb->name_length < OID_LENGTH(globals_oid) + 2)
			continue;
		n = vb->name[OID_LENGTH(globals_oid)];
		if (n < 1 || n > XS_G_MAX) {
			netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHOBJECT);
			continue;
		}
		uint64_t v = M.view.g[n - 1];

		switch (n - 1) {
		case XS_G_SADB_UP: case XS_G_DP_UP: case XS_G_IKE_UP:
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
	return SNMP_ERR_NOERROR;
}

static int sa_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
		      netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		const struct xs_sa_row *e = r->processed ? NULL : netsnmp_tdata_extract_entry(r);
		netsnmp_table_request_info *ti = netsnmp_extract_table_info(r);
		netsnmp_variable_list *vb = r->requestvb;
		const u_char *src;
		size_t slen;

		if (r->processed)
			continue;
		if (!e || !ti) {
			netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHINSTANCE);
			continue;
		}
		switch (ti->colnum) {
		case COL_SA_SOURCE:
			slen = addr_bytes(&e->key->src, &src);
			snmp_set_var_typed_value(vb, ASN_OCTET_STR, src, slen);
			break;
		case COL_SA_MODE: set_int(vb, e->key->mode); break;
		case COL_SA_REQID: set_u32(vb, ASN_UNSIGNED, e->key->reqid); break;
		case COL_SA_IKE_ID: set_u32(vb, ASN_UNSIGNED, e->key->ike_id); break;
		case COL_SA_STATE: set_int(vb, (long)e->state + 1); break;   /* larval(1).. */
		case COL_SA_EXPIRY: set_int(vb, (long)e->expiry + 1); break; /* none(1).. */
		case COL_SA_PACKETS: set_c64(vb, e->packets); break;
		case COL_SA_OCTETS: set_c64(vb, e->bytes); break;
		case COL_SA_DROPS: set_c64(vb, e->drops); break;
		case COL_SA_CREATED: set_u32(vb, ASN_UNSIGNED, e->created); break;
		case COL_SA_LAST_USED: set_u32(vb, ASN_UNSIGNED, e->last_used); break;
		default:
			if (ti->colnum >= COL_SA_SOFT_SECONDS && ti->colnum <= COL_SA_LAST) {
				unsigned l = ti->colnum - COL_SA_SOFT_SECONDS;

				/* a limit the SA does not have has no instance (the table is sparse) */
				if (!(e->have_left & (1u << l)))
					netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHINSTANCE);
				else if (l == XS_LEFT_SOFT_SECONDS || l == XS_LEFT_HARD_SECONDS)
					set_u32(vb, ASN_UNSIGNED, e->left[l]);
				else
					set_c64(vb, e->left[l]);
			} else {
				netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHOBJECT);
			}
		}
	}
	return SNMP_ERR_NOERROR;
}

static int worker_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			  netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		const struct xs_worker_row *e = r->processed ? NULL : netsnmp_tdata_extract_entry(r);
		netsnmp_table_request_info *ti = netsnmp_extract_table_info(r);

		if (r->processed)
			continue;
		if (!e || !ti || ti->colnum < COL_W_FIRST || ti->colnum > COL_W_LAST) {
			netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHINSTANCE);
			continue;
		}
		set_c64(r->requestvb, e->v[ti->colnum - COL_W_FIRST]);
	}
	return SNMP_ERR_NOERROR;
}

static int drop_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	if (reqinfo->mode != MODE_GET)
		return SNMP_ERR_NOERROR;
	for (netsnmp_request_info *r = requests; r; r = r->next) {
		const struct xs_drop_row *e = r->processed ? NULL : netsnmp_tdata_extract_entry(r);
		netsnmp_table_request_info *ti = netsnmp_extract_table_info(r);

		if (r->processed)
			continue;
		if (!e || !ti) {
			netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHINSTANCE);
			continue;
		}
		switch (ti->colnum) {
		case COL_DROP_PACKETS: set_c64(r->requestvb, e->total); break;
		case COL_DROP_SA: set_c64(r->requestvb, e->sa); break;
		case COL_DROP_NOSA: set_c64(r->requestvb, e->nosa); break;
		default: netsnmp_set_request_error(reqinfo, r, SNMP_NOSUCHOBJECT);
		}
	}
	return SNMP_ERR_NOERROR;
}

/* Runs before a table's helpers: the rows they look up are the current view's. */
static int sync_handler(netsnmp_mib_handler *handler, netsnmp_handler_registration *reg,
			netsnmp_agent_request_info *reqinfo, netsnmp_request_info *requests)
{
	view_sync(reqinfo);
	return netsnmp_call_next_handler(handler, reg, reqinfo, requests);
}

static int register_table(const char *name, const oid *o, size_t olen, Netsnmp_Node_Handler *h,
			  netsnmp_tdata *t, unsigned min_col, unsigned max_col, ...)
{
	netsnmp_handler_registration *reg;
	netsnmp_table_registration_info *ti;
	va_list ap;
	int type;

	reg = netsnmp_create_handler_registration(name, h, o, olen, HANDLER_CAN_RONLY);
	ti = SNMP_MALLOC_TYPEDEF(netsnmp_table_registration_info);
	if (!reg || !ti)
		return -ENOMEM;
	va_start(ap, max_col);
	while ((type = va_arg(ap, int)) != 0)
		netsnmp_table_helper_add_index(ti, type);
	va_end(ap);
	ti->min_column = min_col;
	ti->max_column = max_col;
	if (netsnmp_tdata_register(reg, t, ti) != MIB_REGISTERED_OK)
		return -EINVAL;
	/* first in the chain: the table-data registration looks rows up in its table helper already */
	if (netsnmp_inject_handler(reg, netsnmp_create_handler("xipsec_view", sync_handler)) != SNMPERR_SUCCESS)
		return -EINVAL;
	return 0;
}

int xs_mib_init(const struct xs_mib_conf *conf)
{
	netsnmp_handler_registration *reg;

	M.conf = *conf;
	if (!M.conf.cache_seconds)
		M.conf.cache_seconds = 1;
	M.sa = netsnmp_tdata_create_table("xipsecSaTable", 0);
	M.worker = netsnmp_tdata_create_table("xipsecWorkerTable", 0);
	M.drop = netsnmp_tdata_create_table("xipsecDropTable", 0);
	if (!M.sa || !M.worker || !M.drop)
		return -ENOMEM;

	reg = netsnmp_create_handler_registration("xipsecGlobals", globals_handler, globals_oid,
						  OID_LENGTH(globals_oid), HANDLER_CAN_RONLY);
	if (!reg || netsnmp_register_scalar_group(reg, 1, XS_G_MAX) != MIB_REGISTERED_OK)
		return -EINVAL;
	if (register_table("xipsecSaTable", sa_table_oid, OID_LENGTH(sa_table_oid), sa_handler, M.sa,
			   COL_SA_SOURCE, COL_SA_LAST, ASN_UNSIGNED, ASN_INTEGER, ASN_INTEGER, ASN_OCTET_STR, 0) ||
	    register_table("xipsecWorkerTable", worker_table_oid, OID_LENGTH(worker_table_oid), worker_handler,
			   M.worker, COL_W_FIRST, COL_W_LAST, ASN_UNSIGNED, 0) ||
	    register_table("xipsecDropTable", drop_table_oid, OID_LENGTH(drop_table_oid), drop_handler, M.drop,
			   COL_DROP_PACKETS, COL_DROP_NOSA, ASN_OCTET_STR, 0))
		return -EINVAL;
	return 0;
}

void xs_mib_shutdown(void)
{
	if (M.sa)
		tdata_clear(M.sa);
	if (M.worker)
		tdata_clear(M.worker);
	if (M.drop)
		tdata_clear(M.drop);
	xs_view_free(&M.view);
	M.have_view = false;
}
