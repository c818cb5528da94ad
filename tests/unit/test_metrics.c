/* tests/unit/test_metrics.c: unit tests of the metrics collection layer and its Prometheus text
 * writer and HTTP parser (metrics/libxmetrics.a): label and help escaping, the HELP/TYPE lines and
 * the sample lines of every family over a real SADB whose runtime counters the test sets (the values
 * must come out exactly, lifetimes remaining included; every total the sum of its parts), a
 * tunnel's counters across a rekey with and without the exporter's memory (never down with it, the
 * final counters of a deleted SA read from its runtime area, or from its gone record when the
 * snapshot comes from the counters view), the home agent's per-node families and their cap, the
 * cluster's section of the view as the xipsec_cluster_* families, the family table's naming rules
 * (counters end in _total, gauges do not, names unique), and the HTTP request parser and router on valid,
 * incomplete and malformed requests, plus random mutations (never a crash, never a read past the
 * buffer — ASan watches), and a VICI socket that never answers (the collection's time-out). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "metrics/metrics.h"
#include "sadb/sadb_stats.h"
#include "tests/unit/sadb_testlib.h"

static char *memout(void (*fn)(FILE *, const char *), const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f, in);
	fclose(f);
	return buf;
}

static void test_escape(void **state)
{
	char *s;

	(void)state;
	s = memout(xm_prom_label_escape, "a\\b\"c\nd");
	assert_string_equal(s, "a\\\\b\\\"c\\nd");
	free(s);
	s = memout(xm_prom_help_escape, "a\\b\"c\nd");
	assert_string_equal(s, "a\\\\b\"c\\nd");
	free(s);
	s = memout(xm_prom_label_escape, "");
	assert_string_equal(s, "");
	free(s);
}

/* Lines of text as a NULL-terminated array (text is modified). */
static char **lines_of(char *text, size_t *n)
{
	size_t cap = 64;
	char **v = malloc(cap * sizeof(*v));

	*n = 0;
	for (char *p = text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);        /* every line ends in a newline, the last one too */
		*nl = '\0';
		if (*n + 1 >= cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[(*n)++] = p;
	}
	v[*n] = NULL;
	return v;
}

static bool has_line(char **v, const char *want)
{
	for (; *v; v++)
		if (strcmp(*v, want) == 0)
			return true;
	return false;
}

static char *write_snap(const struct xm_snapshot *snap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(xm_prom_write(f, snap), 0);
	fclose(f);
	return buf;
}

/* Every family has exactly one HELP and one TYPE line, HELP first, directly followed by TYPE, then
 * only its own samples; counters end in _total, gauges do not; names are unique and well formed. */
static void test_format_shape(void **state)
{
	struct xm_opts o = { .sadb_path = "/nonexistent/xipsec-test.sadb", .no_ike = true };
	struct xm_snapshot snap;
	char *text, **v;
	size_t n;

	(void)state;
	assert_int_equal(xm_collect(&snap, &o), 0);
	assert_int_equal(snap.fam[XM_SADB_UP].n, 1);
	assert_int_equal(snap.fam[XM_SADB_UP].s[0].value, 0);
	assert_true(snap.sadb_err[0] != '\0');
	text = write_snap(&snap);
	v = lines_of(text, &n);
	for (unsigned i = 0; i < XM_FAMILIES; i++) {
		const struct xm_family *f = &snap.fam[i];
		size_t nl = strlen(f->name);
		char want[256];
		int help = -1;

		assert_int_equal(f->id, i);
		assert_true(strncmp(f->name, "xipsec_", 7) == 0);
		for (const char *c = f->name; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
		if (f->type == XM_COUNTER)
			assert_true(nl > 6 && strcmp(f->name + nl - 6, "_total") == 0);
		else
			assert_false(nl > 6 && strcmp(f->name + nl - 6, "_total") == 0);
		assert_null(strchr(f->help, '\n'));
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(f->name, snap.fam[j].name);
		snprintf(want, sizeof(want), "# HELP %s %s", f->name, f->help);
		for (size_t k = 0; k < n; k++)
			if (strcmp(v[k], want) == 0) {
				assert_int_equal(help, -1);
				help = (int)k;
			}
		assert_true(help >= 0);
		snprintf(want, sizeof(want), "# TYPE %s %s", f->name,
			 f->type == XM_COUNTER ? "counter" : "gauge");
		assert_non_null(v[help + 1]);
		assert_string_equal(v[help + 1], want);
	}
	assert_true(has_line(v, "xipsec_sadb_up 0"));
	free(v);
	free(text);
	xm_snapshot_free(&snap);
}

/* A label value with every character the format escapes, through the writer. */
static void test_format_label_escape(void **state)
{
	struct xm_opts o = { .sadb_path = "/nonexistent/xipsec-test.sadb", .no_ike = true };
	struct xm_snapshot snap;
	static char text[] = "a\"b\\c\nd";
	size_t off[1] = { 0 };
	struct xm_rowset r = { .kind = XM_ROWS_WORKER, .n_labels = 1, .label_names = { "worker" },
			       .n_rows = 1, .off = off, .text = text };
	struct xm_sample s = { 0, 4, 42 };
	struct xm_family *f;
	char *out, **v;
	size_t n;

	(void)state;
	assert_int_equal(xm_collect(&snap, &o), 0);
	f = &snap.fam[XM_W_DROPS];
	free(f->s);
	f->s = &s;
	f->n = 1;
	f->cap = 0;
	f->rows = &r;
	out = write_snap(&snap);
	v = lines_of(out, &n);
	assert_true(has_line(v, "xipsec_worker_drops_total{worker=\"a\\\"b\\\\c\\nd\",reason=\"icv\"} 42"));
	free(v);
	free(out);
	f->s = NULL;
	f->n = 0;
	xm_snapshot_free(&snap);
}

/* The value family id gives row row and sub sub, summed over its samples. */
static uint64_t sum_of(const struct xm_snapshot *snap, enum xm_id id, long row, long sub)
{
	const struct xm_family *f = &snap->fam[id];
	uint64_t t = 0;

	for (size_t i = 0; i < f->n; i++)
		if ((row < 0 || f->s[i].row == (uint32_t)row) && (sub < 0 || f->s[i].sub == (uint32_t)sub))
			t += f->s[i].value;
	return t;
}

/* Every total equals the sum of its parts: a drop reason's total is its SAs' drops plus the
 * workers' SA-less drops (a drop counted in both would break it), and, with no SA gone, the
 * tunnels carry exactly their SAs' counters. */
static void totals_are_sums(const struct xm_snapshot *snap)
{
	for (unsigned r = 1; r < SADB_DROP_MAX; r++)
		assert_int_equal(sum_of(snap, XM_DROPS, 0, r),
				 sum_of(snap, XM_SA_DROPS, -1, r) + sum_of(snap, XM_W_DROPS, -1, r));
	assert_int_equal(sum_of(snap, XM_TUNNEL_PACKETS, -1, -1), sum_of(snap, XM_SA_PACKETS, -1, -1));
	assert_int_equal(sum_of(snap, XM_TUNNEL_BYTES, -1, -1), sum_of(snap, XM_SA_BYTES, -1, -1));
	assert_int_equal(sum_of(snap, XM_TUNNEL_DROPS, -1, -1), sum_of(snap, XM_SA_DROPS, -1, -1));
}

/* The SADB part over a real segment: counters set in the runtime areas come out as written. */
static void test_collect_sadb(void **state)
{
	const char *path = t_path("metrics");
	struct sadb_params prm = { 64, 64 };
	struct sadb *db;
	struct sadb_sa out = t_sa(0x1000, "192.0.2.1", "192.0.2.2"), in = t_sa(0x2000, "192.0.2.2", "192.0.2.1");
	struct sadb_runtime *rt;
	struct sadb_worker_stats *w;
	struct sadb_dp_stats *ds;
	struct xm_snapshot snap;
	struct xm_opts o = { .no_ike = true };
	uint32_t slot_out, slot_in;
	char *text, **v, msg[256];
	size_t n;

	(void)state;
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
	rt->expired = 1;
	ds = sadb_dp_stats(db);
	ds->pid = (uint64_t)getpid();
	ds->started = 99;
	ds->n_workers = 2;
	w = sadb_worker_stats(db, 1);
	w->rx[SADB_PORT_OUTSIDE] = 11;
	w->tx_bytes = 22;
	w->drops[SADB_DROP_BAD_SPI] = 7;

	sadb_sa_get(db, slot_out, &out);
	o.db = db;
	o.now = out.created + 600;
	assert_int_equal(xm_collect(&snap, &o), 0);
	assert_int_equal(snap.sa.n_rows, 2);
	assert_int_equal(snap.fam[XM_SA_PACKETS].n, 2);
	assert_int_equal(snap.fam[XM_IKE_UP].n, 0);   /* not asked */
	text = write_snap(&snap);
	v = lines_of(text, &n);
/* manual SAs: no connection or CHILD SA name, the reqid the SADB holds */
#define SAO "{spi=\"0x00001000\",proto=\"esp\",dir=\"out\",local=\"192.0.2.1\",peer=\"192.0.2.2\"" \
	",connection=\"\",child=\"\",reqid=\"7\""
#define SAI "{spi=\"0x00002000\",proto=\"esp\",dir=\"in\",local=\"192.0.2.1\",peer=\"192.0.2.2\"" \
	",connection=\"\",child=\"\",reqid=\"7\""
#define TUN "{connection=\"\",child=\"\",reqid=\"7\""
	assert_true(has_line(v, "xipsec_sa_packets_total" SAO "} 5"));
	assert_true(has_line(v, "xipsec_sa_bytes_total" SAO "} 640"));
	assert_true(has_line(v, "xipsec_sa_packets_total" SAI "} 3"));
	assert_true(has_line(v, "xipsec_sa_drops_total" SAI ",reason=\"replay\"} 2"));
	assert_true(has_line(v, "xipsec_sa_expiry" SAI "} 1"));
	assert_true(has_line(v, "xipsec_sa_expiry" SAO "} 0"));
	assert_true(has_line(v, "xipsec_sa_state" SAO ",state=\"mature\"} 1"));
	assert_true(has_line(v, "xipsec_sa_state" SAO ",state=\"larval\"} 0"));
	assert_true(has_line(v, "xipsec_sa_state" SAO ",state=\"dying\"} 0"));
	assert_true(has_line(v, "xipsec_sa_state" SAO ",state=\"dead\"} 0"));
	assert_true(has_line(v, "xipsec_sa_state_code" SAO "} 1"));
	/* both SAs have reqid 7: one tunnel, one SA each way */
	assert_true(has_line(v, "xipsec_tunnel_packets_total" TUN ",dir=\"out\"} 5"));
	assert_true(has_line(v, "xipsec_tunnel_packets_total" TUN ",dir=\"in\"} 3"));
	assert_true(has_line(v, "xipsec_tunnel_bytes_total" TUN ",dir=\"out\"} 640"));
	assert_true(has_line(v, "xipsec_tunnel_drops_total" TUN ",dir=\"in\"} 2"));
	assert_true(has_line(v, "xipsec_tunnel_sas" TUN ",dir=\"in\"} 1"));
	/* the library's build decides vici, not this test's */
	assert_true(has_line(v, "xipsec_build_info{version=\"" PACKAGE_VERSION "\",sadb_layout=\"10\","
				"vici=\"yes\"} 1") ||
		    has_line(v, "xipsec_build_info{version=\"" PACKAGE_VERSION "\",sadb_layout=\"10\","
				"vici=\"no\"} 1"));
	totals_are_sums(&snap);
	assert_true(has_line(v, "xipsec_sa_last_used_timestamp_seconds" SAO "} 1234"));
	assert_true(has_line(v, "xipsec_sa_lifetime_remaining_bytes" SAO ",limit=\"soft\"} 360"));
	assert_true(has_line(v, "xipsec_sa_lifetime_remaining_packets" SAO ",limit=\"hard\"} 95"));
	assert_true(has_line(v, "xipsec_sa_lifetime_remaining_seconds" SAO ",limit=\"hard\"} 3000"));
	/* no limit set: no sample */
	assert_false(has_line(v, "xipsec_sa_lifetime_remaining_seconds" SAO ",limit=\"soft\"} 0"));
	assert_true(has_line(v, "xipsec_sadb_up 1"));
	assert_true(has_line(v, "xipsec_sadb_sas 2"));
	assert_true(has_line(v, "xipsec_sadb_sa_capacity 64"));
	assert_true(has_line(v, "xipsec_sadb_policies 0"));
	assert_true(has_line(v, "xipsec_dataplane_up 1"));
	assert_true(has_line(v, "xipsec_dataplane_start_time_seconds 99"));
	assert_true(has_line(v, "xipsec_dataplane_workers 2"));
	assert_true(has_line(v, "xipsec_worker_rx_packets_total{worker=\"1\"} 11"));
	assert_true(has_line(v, "xipsec_worker_rx_packets_total{worker=\"0\"} 0"));
	assert_true(has_line(v, "xipsec_worker_tx_bytes_total{worker=\"1\"} 22"));
	assert_true(has_line(v, "xipsec_worker_drops_total{worker=\"1\",reason=\"bad_spi\"} 7"));
	assert_true(has_line(v, "xipsec_worker_drops_total{worker=\"0\",reason=\"bad_spi\"} 0"));
	assert_true(has_line(v, "xipsec_drops_total{reason=\"bad_spi\"} 7"));
	assert_true(has_line(v, "xipsec_drops_total{reason=\"replay\"} 2"));
	/* the table handler's view: rows joinable by index, keys of each row */
	for (size_t i = 0; i < snap.fam[XM_SA_PACKETS].n; i++) {
		const struct xm_sample *s = &snap.fam[XM_SA_PACKETS].s[i];
		const struct xm_sa_key *k = &snap.sa.sa[s->row];

		assert_int_equal(s->value, k->spi == 0x1000 ? 5 : 3);
		assert_int_equal(k->slot, k->spi == 0x1000 ? slot_out : slot_in);
		assert_int_equal(snap.fam[XM_SA_BYTES].s[i].row, s->row);
	}
	free(v);
	free(text);
	xm_snapshot_free(&snap);

	/* --no-sa: no per-SA family, the totals still count the SAs' drops */
	o.no_sa = true;
	assert_int_equal(xm_collect(&snap, &o), 0);
	assert_int_equal(snap.fam[XM_SA_PACKETS].n, 0);
	assert_int_equal(snap.fam[XM_DROPS].s[SADB_DROP_REPLAY - 1].value, 2);
	xm_snapshot_free(&snap);
	sadb_close(db);
}

/* The tunnel (reqid 9, outbound) of one snapshot, with or without the exporter's memory; from the
 * counters view at path view, else from db. */
static uint64_t tunnel_out(struct xm_tunnel_memory *mem, struct sadb *db, const char *view, uint64_t what)
{
	struct xm_opts o = { .db = view ? NULL : db, .no_ike = true, .tunnels = mem, .stats = view != NULL,
			     .stats_path = view };
	struct xm_snapshot snap;
	uint64_t v = 0;

	assert_int_equal(xm_collect(&snap, &o), 0);
	for (size_t r = 0; r < snap.tunnel.n_rows; r++) {
		const struct xm_family *f = &snap.fam[what];

		assert_string_equal(xm_label_value(f, &f->s[0], 2), "9");
		for (size_t i = 0; i < f->n; i++)
			if (f->s[i].sub == 1)
				v += f->s[i].value;
	}
	assert_true(snap.tunnel.n_rows <= 1);
	xm_snapshot_free(&snap);
	return v;
}

/* A rekey: the tunnel's old SA carries on beside the new one, then goes. With the exporter's
 * memory the tunnel's counters never go down; without it they count the SAs of the moment. */
static void test_tunnel_rekey(void **state)
{
	const char *path = t_path("metrics-tunnel");
	struct sadb_params prm = { 64, 64 };
	struct sadb_sa a = t_sa(0x3000, "192.0.2.1", "192.0.2.2"), b = t_sa(0x3001, "192.0.2.1", "192.0.2.2");
	struct xm_tunnel_memory *mem = xm_tunnel_memory_new();
	uint32_t slot_a, slot_b;
	struct sadb *db;
	char msg[256];

	(void)state;
	assert_non_null(mem);
	assert_int_equal(sadb_open(path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	a.reqid = b.reqid = 9;
	assert_int_equal(sadb_sa_add(db, &a, &slot_a), 0);
	sadb_runtime(db, slot_a)->packets = 10;
	sadb_runtime(db, slot_a)->drops[SADB_DROP_MTU] = 1;
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_PACKETS), 10);
	/* the new SA is installed, both carry traffic */
	assert_int_equal(sadb_sa_add(db, &b, &slot_b), 0);
	sadb_runtime(db, slot_a)->packets = 12;
	sadb_runtime(db, slot_b)->packets = 3;
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_PACKETS), 15);
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_SAS), 2);
	/* the old one carries one packet more, unseen, and goes: its final counters, still in its
	 * runtime area (the slot is not reused yet), stay in the tunnel's */
	sadb_runtime(db, slot_a)->packets = 13;
	assert_int_equal(sadb_sa_delete(db, a.spi, a.proto, &a.dst), 0);
	sadb_runtime(db, slot_b)->packets = 4;
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_PACKETS), 17);
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_DROPS), 1);
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_SAS), 1);
	assert_int_equal(tunnel_out(NULL, db, NULL, XM_TUNNEL_PACKETS), 4);
	/* every SA gone: the tunnel is still listed with its totals */
	assert_int_equal(sadb_sa_delete(db, b.spi, b.proto, &b.dst), 0);
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_PACKETS), 17);
	assert_int_equal(tunnel_out(mem, db, NULL, XM_TUNNEL_SAS), 0);
	assert_int_equal(tunnel_out(NULL, db, NULL, XM_TUNNEL_PACKETS), 0);
	xm_tunnel_memory_free(mem);
	sadb_close(db);
}

/* The same rekey seen through the counters view, as the unprivileged exporter sees it: the old
 * SA's last packet, counted after the last reading that showed it, comes from its gone record,
 * also when a reading without the SA came before the one with its gone record. */
static void test_tunnel_rekey_view(void **state)
{
	struct sadb_params prm = { 64, 64 };
	struct sadb_sa a = t_sa(0x3100, "192.0.2.1", "192.0.2.2"), b = t_sa(0x3101, "192.0.2.1", "192.0.2.2");
	struct xm_tunnel_memory *mem = xm_tunnel_memory_new();
	struct sadb_stats_writer *w;
	struct sadb_sa rec;
	uint32_t slot_a, slot_b;
	struct sadb *db;
	char dir[] = "/tmp/xipsec-test-metrics.XXXXXX", view[64], msg[512];

	(void)state;
	assert_non_null(mem);
	assert_non_null(mkdtemp(dir));
	snprintf(view, sizeof(view), "%s/view", dir);
	assert_int_equal(sadb_open(t_path("metrics-view"), SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_create(view, getegid(), prm.max_sa, &w, msg, sizeof(msg)), 0);
	a.reqid = b.reqid = 9;
	assert_int_equal(sadb_sa_add(db, &a, &slot_a), 0);
	assert_int_equal(sadb_sa_add(db, &b, &slot_b), 0);
	sadb_runtime(db, slot_a)->packets = 12;
	sadb_runtime(db, slot_a)->drops[SADB_DROP_MTU] = 1;
	sadb_runtime(db, slot_b)->packets = 3;
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_PACKETS), 15);
	/* one packet more on the old SA, then the dataplane deletes it and keeps its final counters */
	sadb_runtime(db, slot_a)->packets = 13;
	sadb_runtime(db, slot_a)->drops[SADB_DROP_MTU] = 2;
	assert_int_equal(sadb_sa_get(db, slot_a, &rec), 0);
	assert_int_equal(sadb_sa_delete(db, a.spi, a.proto, &a.dst), 0);
	sadb_runtime(db, slot_b)->packets = 4;
	/* a reading taken before the dataplane applied the deletion: the old SA waits for its gone
	 * record in the tunnel, with its last counters, no longer one of its SAs */
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_PACKETS), 16);
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_SAS), 1);
	assert_int_equal(sadb_stats_gone(w, db, &rec, slot_a), 0);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_PACKETS), 17);
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_DROPS), 2);
	/* the gone record is no SA of the tunnel's, and no SA of its own: its series ended */
	assert_int_equal(tunnel_out(mem, NULL, view, XM_TUNNEL_SAS), 1);
	assert_int_equal(tunnel_out(NULL, NULL, view, XM_TUNNEL_PACKETS), 4);
	{
		struct xm_opts o = { .no_ike = true, .stats = true, .stats_path = view };
		struct xm_snapshot snap;

		assert_int_equal(xm_collect(&snap, &o), 0);
		assert_int_equal(snap.sa.n_rows, 1);
		xm_snapshot_free(&snap);
	}
	sadb_stats_close(w);
	unlink(view);
	rmdir(dir);
	xm_tunnel_memory_free(mem);
	sadb_close(db);
}

/* The home agent's per-node families from the counters view: one row per node labelled with its
 * home address, the values as recorded, the age grown by the time since publication, no age for a
 * node that never sent a Binding Update, and at most XM_HA_NODES_MAX rows (the rest counted). */
static uint64_t node_sample(const struct xm_snapshot *s, enum xm_id id, uint32_t row, uint32_t sub,
			    bool *found)
{
	const struct xm_family *f = &s->fam[id];

	*found = false;
	for (size_t i = 0; i < f->n; i++)
		if (f->s[i].row == row && f->s[i].sub == sub) {
			*found = true;
			return f->s[i].value;
		}
	return 0;
}

static void test_ha_nodes_view(void **state)
{
	struct sadb_params prm = { 4096, 64 };
	struct sadb_stats_writer *w;
	struct sadb *db;
	struct sadb_stats_ha ha = { .present = 1 };
	static struct sadb_stats_node n[XM_HA_NODES_MAX + 3];
	char dir[] = "/tmp/xipsec-test-metrics.XXXXXX", view[64], msg[512];
	struct xm_opts o = { .no_ike = true, .stats = true };
	struct xm_snapshot snap;
	bool found;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(view, sizeof(view), "%s/view", dir);
	o.stats_path = view;
	assert_int_equal(sadb_open(t_path("metrics-nodes"), SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)), 0);
	assert_int_equal(sadb_stats_create(view, getegid(), prm.max_sa, &w, msg, sizeof(msg)), 0);
	for (uint32_t i = 0; i < XM_HA_NODES_MAX + 3; i++) {
		n[i].hoa[0] = 0x20, n[i].hoa[1] = 0x01, n[i].hoa[2] = 0x0d, n[i].hoa[3] = 0xb8;
		n[i].hoa[14] = (uint8_t)(i >> 8), n[i].hoa[15] = (uint8_t)i;
		n[i].last_bu_age_ms = UINT64_MAX;
	}
	n[1].bound = 1;
	n[1].bu_accepted = 5;
	n[1].bu_refused = 2;
	n[1].moves = 3;
	n[1].last_bu_age_ms = 7000;
	n[1].n_ba = 2;
	n[1].ba[0].status = 0, n[1].ba[0].count = 5;
	n[1].ba[1].status = 135, n[1].ba[1].count = 2;
	sadb_stats_set_ha(w, &ha);
	assert_int_equal(sadb_stats_set_nodes(w, n, XM_HA_NODES_MAX + 3), 0);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	assert_int_equal(xm_collect(&snap, &o), 0);
	assert_int_equal(snap.node.n_rows, XM_HA_NODES_MAX);
	assert_string_equal(xm_label_value(&snap.fam[XM_HA_NODE_MOVES], &snap.fam[XM_HA_NODE_MOVES].s[1], 0),
			    "2001:db8::1");
	assert_int_equal(node_sample(&snap, XM_HA_NODE_BU, 1, 0, &found), 5);
	assert_int_equal(node_sample(&snap, XM_HA_NODE_BU, 1, 1, &found), 2);
	assert_int_equal(node_sample(&snap, XM_HA_NODE_MOVES, 1, 0, &found), 3);
	assert_int_equal(node_sample(&snap, XM_HA_NODE_BA_STATUS, 1, 135, &found), 2);
	assert_int_equal(node_sample(&snap, XM_HA_NODE_BOUND, 1, 0, &found), 1);
	uint64_t age = node_sample(&snap, XM_HA_NODE_LAST_BU_AGE, 1, 0, &found);
	assert_true(found && age >= 7 && age <= 9);
	(void)node_sample(&snap, XM_HA_NODE_LAST_BU_AGE, 0, 0, &found);
	assert_false(found);
	assert_int_equal(node_sample(&snap, XM_HA_NODE_BOUND, 0, 0, &found), 0);
	assert_true(found);
	assert_int_equal(node_sample(&snap, XM_HA_NODES_LEFT_OUT, 0, 0, &found), 3);
	xm_snapshot_free(&snap);
	sadb_stats_close(w);
	unlink(view);
	rmdir(dir);
	sadb_close(db);
}

/* The Prometheus text of a snapshot of the counters view at path. */
static char *view_text(const char *path)
{
	struct xm_opts o = { .no_ike = true, .stats = true, .stats_path = path };
	struct xm_snapshot snap;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(xm_collect(&snap, &o), 0);
	assert_int_equal(xm_prom_write(f, &snap), 0);
	fclose(f);
	xm_snapshot_free(&snap);
	return buf;
}

/* The cluster's section of the view comes out as the xipsec_cluster_* families, sample for
 * sample; what does not exist yet (no message, no SA with a lease) has no sample, and a dataplane
 * that is no node of a cluster shows xipsec_cluster_up 0 and nothing else of it. */
static void test_cluster_view(void **state)
{
	struct sadb_params prm = { 16, 16 };
	struct sadb_stats_cluster cl = {
		.present = 1, .active = 1, .eligible = 1, .peer_reachable = 1, .peer_active = 0,
		.last_message_ms = 120, .sync_lag_ms = SADB_STATS_NONE, .covered_sas = 3,
		.min_headroom = 500, .min_headroom_spi = 0xc0000001u, .segments = 2, .owned = 2,
		.seg_kept = { 4, 5 }, .seg_foreign = { 8, 9 }, .cluster_foreign = 6,
	};
	static const char *const want[] = {
		"\nxipsec_cluster_up 1\n", "\nxipsec_cluster_active 1\n", "\nxipsec_cluster_eligible 1\n",
		"\nxipsec_cluster_peer_reachable 1\n", "\nxipsec_cluster_peer_active 0\n",
		"\nxipsec_cluster_last_message_age_milliseconds 120\n", "\nxipsec_cluster_covered_sas 3\n",
		"\nxipsec_cluster_lease_headroom_min 500\n",
		"\nxipsec_cluster_lease_headroom_min_spi 3221225473\n",
		"\nxipsec_cluster_sync_total{event=\"leases_acked\"} 7\n",
		"\nxipsec_cluster_sync_total{event=\"solo_hard_expired\"} 11\n",
		"\nxipsec_cluster_sync_dropped_total{reason=\"auth\"} 2\n",
		"\nxipsec_cluster_sync_dropped_total{reason=\"malformed\"} 0\n",
		"\nxipsec_cluster_segments 2\n", "\nxipsec_cluster_segment_owned{segment=\"1\"} 0\n",
		"\nxipsec_cluster_segment_owned{segment=\"2\"} 1\n",
		"\nxipsec_cluster_segment_kept_total{segment=\"2\"} 5\n",
		"\nxipsec_cluster_segment_dropped_total{segment=\"1\"} 8\n",
		"\nxipsec_cluster_foreign_total 6\n",
		"# TYPE xipsec_cluster_sync_total counter\n", "# TYPE xipsec_cluster_active gauge\n",
	};
	struct sadb_stats_writer *w;
	struct sadb *db;
	char dir[] = "/tmp/xipsec-test-metrics.XXXXXX", view[64], msg[512], *text;

	(void)state;
	cl.counter[SADB_CL_LEASES_ACKED] = 7;
	cl.counter[SADB_CL_SOLO_HARD] = 11;
	cl.dropped[SADB_CL_DROP_AUTH] = 2;
	assert_non_null(mkdtemp(dir));
	snprintf(view, sizeof(view), "%s/view", dir);
	assert_int_equal(sadb_open(t_path("metrics-cluster"), SADB_RDWR | SADB_CREATE, &prm, &db, msg,
				   sizeof(msg)), 0);
	assert_int_equal(sadb_stats_create(view, getegid(), prm.max_sa, &w, msg, sizeof(msg)), 0);
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	text = view_text(view);
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("no line '%s' in:\n%s", want[i], text);
	assert_null(strstr(text, "\nxipsec_cluster_sync_lag_milliseconds "));
	assert_null(strstr(text, "segment=\"3\""));
	free(text);
	/* a standby: no headroom, so no SA named by it either */
	cl.active = 0;
	cl.min_headroom = SADB_STATS_NONE;
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	text = view_text(view);
	assert_non_null(strstr(text, "\nxipsec_cluster_active 0\n"));
	assert_null(strstr(text, "\nxipsec_cluster_lease_headroom_min"));
	free(text);
	/* no cluster */
	memset(&cl, 0, sizeof(cl));
	sadb_stats_set_cluster(w, &cl);
	assert_int_equal(sadb_stats_publish(w, db), 0);
	text = view_text(view);
	assert_non_null(strstr(text, "\nxipsec_cluster_up 0\n"));
	assert_null(strstr(text, "\nxipsec_cluster_active "));
	assert_null(strstr(text, "\nxipsec_cluster_sync_total{"));
	free(text);
	sadb_stats_close(w);
	unlink(view);
	rmdir(dir);
	sadb_close(db);
}

/* ---- HTTP ---- */

static int parse(const char *s, struct xm_http_req *r)
{
	/* an exact-size heap copy, so ASan sees a read past the end */
	size_t n = strlen(s);
	char *b = malloc(n ? n : 1);
	int rc;

	memcpy(b, s, n);
	rc = xm_http_parse(b, n, r);
	free(b);
	return rc;
}

static void test_http(void **state)
{
	static const struct {
		const char *req;
		int parse, route;       /* route only when parse is 0 */
	} rows[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 0, 200 },
		{ "GET /metrics HTTP/1.0\r\n\r\n", 0, 200 },
		{ "GET /metrics HTTP/1.1\n\n", 0, 200 },
		{ "\r\nGET /metrics HTTP/1.1\r\n\r\n", 0, 200 },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 0, 200 },
		{ "GET /metrics?x=1 HTTP/1.1\r\n\r\n", 0, 200 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0, 200 },
		{ "POST /metrics HTTP/1.1\r\n\r\n", 0, 405 },
		{ "DELETE /metrics HTTP/1.1\r\n\r\n", 0, 405 },
		{ "GET / HTTP/1.1\r\n\r\n", 0, 404 },
		{ "GET /metrics/ HTTP/1.1\r\n\r\n", 0, 404 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 0, 400 },
		{ "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 400 },
		{ "GET /metrics HTTP/1.1\r\n", 1, 0 },
		{ "GET /metr", 1, 0 },
		{ "", 1, 0 },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 505, 0 },
		{ "GET /metrics HTTP/1.1 \r\n\r\n", 400, 0 },
		{ "GET /metrics\r\n\r\n", 400, 0 },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400, 0 },
		{ "G(T /metrics HTTP/1.1\r\n\r\n", 400, 0 },
		{ "GET metrics HTTP/1.1\r\n\r\n", 400, 0 },
		{ "GET http://x/metrics HTTP/1.1\r\n\r\n", 400, 0 },
		{ "GET /met\x01rics HTTP/1.1\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTX/1.1\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\n: empty\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nA: b\x01\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400, 0 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, 0 },
		{ "VERYLONGMETHODNAMEX /metrics HTTP/1.1\r\n\r\n", 400, 0 },
		/* a bad request line is refused before the headers end */
		{ "GET /metrics HTTP/9\r\nHost: x\r\n", 400, 0 },
	};
	struct xm_http_req r;
	char *big;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = parse(rows[i].req, &r);

		if (rc != rows[i].parse)
			fail_msg("row %zu: parse %d, expected %d", i, rc, rows[i].parse);
		if (rc == 0 && xm_http_route(&r) != rows[i].route)
			fail_msg("row %zu: route %d, expected %d", i, xm_http_route(&r), rows[i].route);
	}
	assert_int_equal(parse("GET /metrics?a HTTP/1.1\r\nHost: h\r\n\r\nextra", &r), 0);
	assert_string_equal(r.method, "GET");
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(r.minor, 1);
	assert_int_equal(r.header_len, strlen("GET /metrics?a HTTP/1.1\r\nHost: h\r\n\r\n"));
	/* a path over 255 bytes */
	big = calloc(1, XM_HTTP_MAX_REQUEST * 2);
	strcpy(big, "GET /");
	memset(big + 5, 'a', 300);
	strcat(big, " HTTP/1.1\r\n\r\n");
	assert_int_equal(parse(big, &r), 414);
	/* headers that never end, or end past the limit */
	memset(big, 0, XM_HTTP_MAX_REQUEST * 2);
	strcpy(big, "GET /metrics HTTP/1.1\r\nX: ");
	memset(big + strlen(big), 'a', XM_HTTP_MAX_REQUEST);
	assert_int_equal(parse(big, &r), 431);
	strcat(big, "\r\n\r\n");
	assert_int_equal(parse(big, &r), 431);
	free(big);
}

/* Random bytes and mutations of a valid request: any answer, but a defined one. */
static void test_http_mutations(void **state)
{
	static const char base[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9786\r\nAccept: */*\r\n\r\n";
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	struct xm_http_req r;

	(void)state;
	for (int it = 0; it < 20000; it++) {
		size_t n = sizeof(base) - 1;
		char *b = malloc(n);
		int rc;

		memcpy(b, base, n);
		x = t_mix(x + (uint64_t)it);
		for (int k = 0; k < 1 + (int)(x % 4); k++) {
			x = t_mix(x);
			b[(x >> 8) % n] = (char)(x >> 32);
		}
		x = t_mix(x);
		n = (x & 1) ? n : (size_t)((x >> 16) % (n + 1));
		rc = xm_http_parse(b, n, &r);
		assert_true(rc == 0 || rc == 1 || rc == 400 || rc == 414 || rc == 431 || rc == 505);
		if (rc == 0) {
			int route = xm_http_route(&r);

			assert_true(route == 200 || route == 400 || route == 404 || route == 405);
			assert_true(r.header_len <= n);
		}
		free(b);
	}
}

/* A VICI socket that accepts connections and never answers (a daemon whose threads are all busy):
 * the collection gives up after 3 s and reports the daemon down with the reason, the next one does
 * not queue another query behind the unanswered one, and once the socket goes away the query left
 * behind ends and collections go on as before. */
static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void collect_ike(const char *dir, struct xm_snapshot *snap)
{
	struct xm_opts o = { .sadb_path = "/nonexistent/xipsec-test.sadb", .ike_run_dir = dir };
	assert_int_equal(xm_collect(snap, &o), 0);
}

static void test_vici_silent(void **state)
{
	char dir[] = "/tmp/xipsec-vici-XXXXXX", path[64];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct xm_snapshot snap;
	double t0, dt;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/charon.vici", dir);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 8), 0); /* connections wait in the backlog, never accepted */

	t0 = mono();
	collect_ike(dir, &snap);
	dt = mono() - t0;
	if (strstr(snap.ike_err, "without strongSwan")) {
		xm_snapshot_free(&snap);
		close(fd);
		unlink(path);
		rmdir(dir);
		skip();
	}
	assert_int_equal(snap.fam[XM_IKE_UP].n, 1);
	assert_int_equal(snap.fam[XM_IKE_UP].s[0].value, 0);
	if (!strstr(snap.ike_err, "no answer in 3000 ms"))
		fail_msg("ike_err: '%s'", snap.ike_err);
	assert_true(dt >= 2.9 && dt < 6);
	xm_snapshot_free(&snap);

	t0 = mono();
	collect_ike(dir, &snap);
	assert_true(mono() - t0 < 1);
	if (!strstr(snap.ike_err, "an earlier query is still unanswered"))
		fail_msg("second collection, ike_err: '%s'", snap.ike_err);
	assert_int_equal(snap.fam[XM_IKE_UP].s[0].value, 0);
	xm_snapshot_free(&snap);

	/* the socket goes: the query left behind fails and ends */
	close(fd);
	unlink(path);
	for (int i = 0;; i++) {
		collect_ike(dir, &snap);
		bool still = strstr(snap.ike_err, "still unanswered") != NULL;
		if (!still) {
			if (!strstr(snap.ike_err, "No such file"))
				fail_msg("after the socket went, ike_err: '%s'", snap.ike_err);
			xm_snapshot_free(&snap);
			break;
		}
		xm_snapshot_free(&snap);
		assert_true(i < 100);
		usleep(50000);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_format_shape),
		cmocka_unit_test(test_format_label_escape),
		cmocka_unit_test(test_collect_sadb),
		cmocka_unit_test(test_tunnel_rekey),
		cmocka_unit_test(test_tunnel_rekey_view),
		cmocka_unit_test(test_ha_nodes_view),
		cmocka_unit_test(test_cluster_view),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_mutations),
		cmocka_unit_test(test_vici_silent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
