/* tests/snmp/test_snmp_view.c: unit tests of xipsec-snmpd's view (snmpd/snmp_view.c), the join of one
 * metrics snapshot into XIPSEC-MIB's scalars and table rows, over a real SADB whose runtime counters
 * and dataplane records the test sets: every SA row carries its key and counters, drops summed over
 * reasons, state and expiry as counted, remaining lifetimes only where a limit is set; worker rows
 * per worker; one drop row per reason with totals = per-SA + SA-less; the cluster's scalars and
 * segment rows from the counters view; the home agent's tables (BAs by status, mobile nodes, their
 * BAs by status) from a counters view; and an unreadable SADB gives an empty but valid view. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "snmpd/snmp_view.h"
#include "tests/unit/sadb_testlib.h"

static const struct xs_drop_row *drop_row(const struct xs_view *v, const char *name)
{
	for (size_t i = 0; i < v->n_drop; i++)
		if (!strcmp(v->drop[i].name, name))
			return &v->drop[i];
	return NULL;
}

static void test_view(void **state)
{
	const char *path = t_path("snmpview");
	struct sadb_params prm = { 64, 64 };
	struct sadb *db;
	struct sadb_sa out = t_sa(0x1000, "192.0.2.1", "192.0.2.2"), in = t_sa(0x2000, "192.0.2.2", "192.0.2.1");
	struct sadb_runtime *rt;
	struct sadb_worker_stats *w;
	struct sadb_dp_stats *ds;
	struct xm_opts o = { .no_ike = true };
	struct xs_view v;
	uint32_t slot_out, slot_in;
	char msg[256];

	(void)state;
	memset(&v, 0, sizeof(v));
	assert_int_equal(sadb_open(path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	in.dir = SADB_DIR_IN;
	out.soft.bytes = 1000;
	out.hard.packets = 100;
	out.hard.add_seconds = 3600;
	assert_int_equal(sadb_sa_add(db, &out, &slot_out), 0);
	assert_int_equal(sadb_sa_add(db, &in, &slot_in), 0);
	rt = sadb_runtime(db, slot_out);
	rt->packets = 5;
	rt->bytes = 640;
	rt->first_used = 1;
	rt->last_used = 1234;
	rt = sadb_runtime(db, slot_in);
	rt->packets = 3;
	rt->drops[SADB_DROP_REPLAY] = 2;
	rt->drops[SADB_DROP_ICV] = 4;
	rt->expired = 1;
	ds = sadb_dp_stats(db);
	ds->pid = (uint64_t)getpid();
	ds->started = 99;
	ds->n_workers = 2;
	w = sadb_worker_stats(db, 1);
	w->rx[SADB_PORT_OUTSIDE] = 11;
	w->tx_bytes = 22;
	w->drops[SADB_DROP_BAD_SPI] = 7;
	w->drops[SADB_DROP_NO_POLICY] = 1;
	w->handoff_jobs = 5;
	w->handoff_pkts = 32;
	w->handoff_back = 1;
	w = sadb_worker_stats(db, 0);
	w->handoff_done = 32;
	w->drops[SADB_DROP_NO_POLICY] = 2;

	sadb_sa_get(db, slot_out, &out);
	o.db = db;
	o.now = out.created + 600;
	assert_int_equal(xs_view_refresh(&v, &o), 0);

	assert_int_equal(v.g[XS_G_SADB_UP], 1);
	assert_int_equal(v.g[XS_G_SAS], 2);
	assert_int_equal(v.g[XS_G_SA_CAPACITY], 64);
	assert_int_equal(v.g[XS_G_POLICIES], 0);
	assert_int_equal(v.g[XS_G_DP_UP], 1);
	assert_int_equal(v.g[XS_G_DP_START_TIME], 99);
	assert_int_equal(v.g[XS_G_WORKERS], 2);
	assert_int_equal(v.g[XS_G_DROPS_TOTAL], 2 + 4 + 7 + 1 + 2);
	assert_int_equal(v.g[XS_G_IKE_UP], 0);
	assert_int_equal(v.g[XS_G_IKE_SAS], 0);

	assert_int_equal(v.n_sa, 2);
	for (size_t i = 0; i < v.n_sa; i++) {
		const struct xs_sa_row *r = &v.sa[i];

		if (r->key->spi == 0x1000) {
			assert_int_equal(r->key->dir, SADB_DIR_OUT);
			assert_int_equal(r->key->slot, slot_out);
			assert_int_equal(r->key->dst.family, AF_INET);
			assert_memory_equal(r->key->dst.a.b, "\xc0\x00\x02\x02", 4);
			assert_int_equal(r->packets, 5);
			assert_int_equal(r->bytes, 640);
			assert_int_equal(r->drops, 0);
			assert_int_equal(r->last_used, 1234);
			assert_int_equal(r->created, out.created);
			assert_int_equal(r->state, SADB_STATE_MATURE);
			assert_int_equal(r->expiry, 0);
			assert_int_equal(r->have_left, (1u << XS_LEFT_SOFT_BYTES) | (1u << XS_LEFT_HARD_PACKETS) |
					 (1u << XS_LEFT_HARD_SECONDS));
			assert_int_equal(r->left[XS_LEFT_SOFT_BYTES], 360);
			assert_int_equal(r->left[XS_LEFT_HARD_PACKETS], 95);
			assert_int_equal(r->left[XS_LEFT_HARD_SECONDS], 3000);
		} else {
			assert_int_equal(r->key->spi, 0x2000);
			assert_int_equal(r->key->dir, SADB_DIR_IN);
			assert_int_equal(r->packets, 3);
			assert_int_equal(r->drops, 6);          /* summed over its reasons */
			assert_int_equal(r->expiry, 1);
			assert_int_equal(r->have_left, 0);      /* no limit, no remaining lifetime */
		}
	}

	assert_int_equal(v.n_worker, 2);
	assert_int_equal(v.worker[1].id, 1);
	assert_int_equal(v.worker[1].v[XS_W_RX_PACKETS], 11);
	assert_int_equal(v.worker[1].v[XS_W_TX_BYTES], 22);
	assert_int_equal(v.worker[1].v[XS_W_DROPS], 8);
	assert_int_equal(v.worker[0].v[XS_W_DROPS], 2);
	assert_int_equal(v.worker[0].v[XS_W_RX_PACKETS], 0);
	assert_int_equal(v.worker[1].v[XS_W_HANDOFF_JOBS], 5);
	assert_int_equal(v.worker[1].v[XS_W_HANDOFF_PKTS], 32);
	assert_int_equal(v.worker[1].v[XS_W_HANDOFF_BACK], 1);
	assert_int_equal(v.worker[1].v[XS_W_HANDOFF_DONE], 0);
	assert_int_equal(v.worker[0].v[XS_W_HANDOFF_DONE], 32);

	/* every reason but "none", counted or not; totals are per-SA + SA-less */
	assert_int_equal(v.n_drop, SADB_DROP_MAX - 1);
	assert_null(drop_row(&v, "none"));
	const struct xs_drop_row *d = drop_row(&v, "bad_spi");
	assert_non_null(d);
	assert_true(d->total == 7 && d->sa == 0 && d->nosa == 7);
	d = drop_row(&v, "no_policy");
	assert_true(d && d->total == 3 && d->sa == 0 && d->nosa == 3);
	d = drop_row(&v, "replay");
	assert_true(d && d->total == 2 && d->sa == 2 && d->nosa == 0);
	d = drop_row(&v, "icv");
	assert_true(d && d->total == 4 && d->sa == 4 && d->nosa == 0);
	d = drop_row(&v, "mtu");
	assert_true(d && d->total == 0 && d->sa == 0 && d->nosa == 0);

	/* a second reading replaces the first (rows of the new one only) */
	assert_int_equal(sadb_sa_delete(db, in.spi, in.proto, &in.dst), 0);
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.n_sa, 1);
	assert_int_equal(v.sa[0].key->spi, 0x1000);

	/* --no-sa: no rows, the totals stay */
	o.no_sa = true;
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.n_sa, 0);
	assert_int_equal(v.g[XS_G_SAS], 1);
	xs_view_free(&v);
	sadb_close(db);
}

/* The home agent's tables from a counters view: the BAs by status it sent, one node row per mobile
 * node with its counters, an age only for a node that sent a Binding Update, and a node BA row per
 * (node, status) pointing at its node. */
static void test_ha_tables(void **state)
{
	struct sadb_params prm = { 64, 64 };
	struct sadb_stats_ha ha = { .present = 1 };
	struct sadb_stats_node n[2] = { { .last_bu_age_ms = UINT64_MAX } };
	struct sadb_stats_writer *w;
	struct sadb *db;
	struct xs_view v;
	char dir[] = "/tmp/xipsec-test-snmpview.XXXXXX", view[64], msg[512];
	struct xm_opts o = { .no_ike = true, .stats = true };

	(void)state;
	memset(&v, 0, sizeof(v));
	assert_non_null(mkdtemp(dir));
	snprintf(view, sizeof(view), "%s/view", dir);
	o.stats_path = view;
	assert_int_equal(sadb_open(t_path("snmpview-ha"), SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_create(view, getegid(), prm.max_sa, &w, msg, sizeof(msg)), 0);
	ha.ba_status[0] = 4;
	ha.ba_status[135] = 1;
	n[0].hoa[0] = 0x20, n[0].hoa[15] = 1;
	n[1].hoa[0] = 0x20, n[1].hoa[15] = 2;
	n[1].bound = 1, n[1].bu_accepted = 4, n[1].bu_refused = 1, n[1].moves = 2, n[1].last_bu_age_ms = 3000;
	n[1].n_ba = 2;
	n[1].ba[0].status = 0, n[1].ba[0].count = 4;
	n[1].ba[1].status = 135, n[1].ba[1].count = 1;
	sadb_stats_set_ha(w, &ha);
	assert_int_equal(sadb_stats_set_nodes(w, n, 2), 0);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.n_ba, 2);
	assert_int_equal(v.ba[1].status, 135);
	assert_int_equal(v.ba[1].acks, 1);
	assert_int_equal(v.n_node, 2);
	assert_memory_equal(v.node[1].hoa, n[1].hoa, 16);
	assert_false(v.node[0].has_age);
	assert_false(v.node[0].bound);
	assert_true(v.node[1].has_age && v.node[1].last_bu_age >= 3 && v.node[1].last_bu_age <= 5);
	assert_true(v.node[1].bound);
	assert_int_equal(v.node[1].bu_accepted, 4);
	assert_int_equal(v.node[1].bu_refused, 1);
	assert_int_equal(v.node[1].moves, 2);
	assert_int_equal(v.n_node_ba, 2);
	assert_ptr_equal(v.node_ba[1].node, &v.node[1]);
	assert_int_equal(v.node_ba[1].status, 135);
	assert_int_equal(v.node_ba[1].acks, 1);
	xs_view_free(&v);
	sadb_stats_close(w);
	unlink(view);
	rmdir(dir);
	sadb_close(db);
}

/* The cluster's scalars and segment rows, from the counters view's section through the metrics
 * layer: values as set, none where there is none, zeros and no rows without a cluster. */
static void test_cluster(void **state)
{
	struct sadb_params prm = { 16, 16 };
	struct sadb_stats_cluster cl = {
		.present = 1, .active = 1, .eligible = 0, .peer_reachable = 1, .peer_active = 0,
		.last_message_ms = 40, .sync_lag_ms = SADB_STATS_NONE, .covered_sas = 2, .min_headroom = 77,
		.min_headroom_spi = 0x1000, .segments = 3, .owned = 5, .seg_kept = { 1, 2, 3 },
		.seg_foreign = { 4, 5, 6 }, .cluster_foreign = 9,
	};
	struct sadb_stats_writer *w;
	struct sadb *db;
	struct xs_view v;
	char dir[] = "/tmp/xipsec-test-snmpview.XXXXXX", path[64], msg[512];
	struct xm_opts o = { .no_ike = true, .stats = true, .stats_path = path };

	(void)state;
	memset(&v, 0, sizeof(v));
	cl.counter[SADB_CL_TAKEOVERS] = 2;
	cl.dropped[SADB_CL_DROP_FOREIGN] = 3;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/view", dir);
	assert_int_equal(sadb_open(t_path("snmpview-cluster"), SADB_RDWR | SADB_CREATE, &prm, &db, msg,
				   sizeof(msg)), 0);
	assert_int_equal(sadb_stats_create(path, getegid(), prm.max_sa, &w, msg, sizeof(msg)), 0);
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.c[XS_C_UP], 1);
	assert_int_equal(v.c[XS_C_ROLE], 1);
	assert_int_equal(v.c[XS_C_ELIGIBLE], 0);
	assert_int_equal(v.c[XS_C_PEER_REACHABLE], 1);
	assert_int_equal(v.c[XS_C_PEER_ROLE], 0);
	assert_int_equal(v.c[XS_C_LAST_MESSAGE_MS], 40);
	assert_true(v.c[XS_C_SYNC_LAG_MS] == XS_C_NONE);
	assert_int_equal(v.c[XS_C_COVERED_SAS], 2);
	assert_int_equal(v.c[XS_C_HEADROOM_MIN], 77);
	assert_int_equal(v.c[XS_C_HEADROOM_MIN_SPI], 0x1000);
	assert_int_equal(v.c[XS_C_SEGMENTS], 3);
	assert_int_equal(v.c[XS_C_FOREIGN], 9);
	assert_int_equal(v.c[XS_C_SYNC + SADB_CL_TAKEOVERS], 2);
	assert_int_equal(v.c[XS_C_SYNC + SADB_CL_SENT], 0);
	assert_int_equal(v.c[XS_C_SYNC_DROPPED + SADB_CL_DROP_FOREIGN], 3);
	assert_int_equal(v.n_seg, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(v.seg[i].segment, i + 1);
		assert_int_equal(v.seg[i].owned, (5u >> i) & 1);
		assert_int_equal(v.seg[i].kept, i + 1);
		assert_int_equal(v.seg[i].dropped, i + 4);
	}
	/* no cluster: not clustered, zeros, no segment */
	memset(&cl, 0, sizeof(cl));
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.c[XS_C_UP], 0);
	assert_true(v.c[XS_C_ROLE] == XS_C_NONE);
	assert_int_equal(v.c[XS_C_COVERED_SAS], 0);
	assert_int_equal(v.c[XS_C_SYNC + SADB_CL_TAKEOVERS], 0);
	assert_int_equal(v.n_seg, 0);
	xs_view_free(&v);
	sadb_stats_close(w);
	unlink(path);
	rmdir(dir);
	sadb_close(db);
}

static void test_no_sadb(void **state)
{
	struct xm_opts o = { .sadb_path = "/nonexistent/xipsec-test.sadb", .no_ike = true };
	struct xs_view v;

	(void)state;
	memset(&v, 0, sizeof(v));
	assert_int_equal(xs_view_refresh(&v, &o), 0);
	assert_int_equal(v.g[XS_G_SADB_UP], 0);
	assert_int_equal(v.g[XS_G_SAS], 0);
	assert_int_equal(v.n_sa, 0);
	assert_int_equal(v.n_worker, 0);
	xs_view_free(&v);
	xs_view_free(&v);   /* freeing twice is harmless: the view is zeroed */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_ha_tables),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_no_sadb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
