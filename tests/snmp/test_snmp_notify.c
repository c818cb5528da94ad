/* tests/snmp/test_snmp_notify.c: unit tests of xipsec-snmpd's notification events
 * (snmpd/snmp_notify.c): successive readings, each a set of SAs (instance, expiry) and the
 * SADB's and dataplane's up flags, give exactly one event per change and none for the first
 * reading; an unreadable SADB loses no SA and invents none; a cluster role change of a running
 * dataplane is one event, a stopped one's reading none. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "snmpd/snmp_notify.h"

#define MAX_SA 4
#define MAX_EV 8

/* One reading: SADB up?, dataplane up?, its start time, SAs as instance:expiry (0 ends), the
 * cluster role (c[XS_C_ROLE]: 0 standby, 1 active). */
struct reading {
	bool sadb, dp;
	uint64_t dp_start;
	struct { uint64_t instance; uint32_t expiry; } sa[MAX_SA];
	uint64_t role;
};

/* An expected event: kind and the SA's instance (0 for the dataplane's: then its start time). */
struct event { enum xs_event ev; uint64_t what; };

struct got { struct event e[MAX_EV]; size_t n; };

static void record(void *arg, enum xs_event ev, const struct xs_sa_row *sa, uint64_t dp_start)
{
	struct got *g = arg;

	assert_true(g->n < MAX_EV);
	g->e[g->n++] = (struct event){ ev, sa ? sa->key->instance : dp_start };
}

static void view_of(const struct reading *r, struct xs_view *v, struct xm_sa_key *keys,
		    struct xs_sa_row *rows)
{
	memset(v, 0, sizeof(*v));
	v->g[XS_G_SADB_UP] = r->sadb;
	v->g[XS_G_DP_UP] = r->dp;
	v->g[XS_G_DP_START_TIME] = r->dp_start;
	v->c[XS_C_ROLE] = r->role;
	v->sa = rows;
	for (size_t i = 0; i < MAX_SA && r->sa[i].instance; i++) {
		keys[i] = (struct xm_sa_key){ .spi = 0x80000000u + (uint32_t)i, .instance = r->sa[i].instance };
		rows[i] = (struct xs_sa_row){ .key = &keys[i], .expiry = r->sa[i].expiry };
		v->n_sa++;
	}
}

static const struct step {
	const char *name;
	struct reading r;
	struct event want[MAX_EV];  /* in report order: downs and ups by instance, then soft expiries */
} steps[] = {
	{ "first reading: a baseline, no event", { true, true, 100, { { 5, 0 }, { 7, 0 } }, 0 }, { { 0 } } },
	{ "same reading", { true, true, 100, { { 7, 0 }, { 5, 0 } }, 0 }, { { 0 } } },
	{ "an SA added", { true, true, 100, { { 5, 0 }, { 7, 0 }, { 9, 0 } }, 0 },
	  { { XS_EV_SA_UP, 9 } } },
	{ "rekey: one SA replaced by a new instance", { true, true, 100, { { 7, 0 }, { 9, 0 }, { 11, 0 } }, 0 },
	  { { XS_EV_SA_DOWN, 5 }, { XS_EV_SA_UP, 11 } } },
	{ "soft expiry, once", { true, true, 100, { { 7, 1 }, { 9, 0 }, { 11, 0 } }, 0 },
	  { { XS_EV_SA_SOFT_EXPIRED, 7 } } },
	{ "soft then hard: no second event", { true, true, 100, { { 7, 2 }, { 9, 0 }, { 11, 0 } }, 0 }, { { 0 } } },
	{ "none to hard at once passes soft", { true, true, 100, { { 7, 2 }, { 9, 2 }, { 11, 0 } }, 0 },
	  { { XS_EV_SA_SOFT_EXPIRED, 9 } } },
	{ "SADB unreadable: no SA is gone", { false, false, 0, { { 0 } }, 0 }, { { 0 } } },
	{ "SADB back: only real changes", { true, true, 100, { { 7, 2 }, { 9, 2 } }, 0 },
	  { { XS_EV_SA_DOWN, 11 } } },
	{ "dataplane stops", { true, false, 0, { { 7, 2 }, { 9, 2 } }, 0 }, { { XS_EV_DP_DOWN, 100 } } },
	{ "still stopped", { true, false, 0, { { 7, 2 }, { 9, 2 } }, 0 }, { { 0 } } },
	{ "restarts, then every SA deleted", { true, true, 200, { { 0 } }, 0 },
	  { { XS_EV_SA_DOWN, 7 }, { XS_EV_SA_DOWN, 9 } } },
	{ "the new dataplane stops", { true, false, 0, { { 0 } }, 0 }, { { XS_EV_DP_DOWN, 200 } } },
	{ "a clustered one starts standby", { true, true, 300, { { 0 } }, 0 }, { { 0 } } },
	{ "it takes over", { true, true, 300, { { 0 } }, 1 }, { { XS_EV_CLUSTER_ROLE, 0 } } },
	{ "still active", { true, true, 300, { { 0 } }, 1 }, { { 0 } } },
	{ "stopped: its last reading's role is no change", { true, false, 0, { { 0 } }, 0 },
	  { { XS_EV_DP_DOWN, 300 } } },
	{ "restarted standby: a change from the active it was", { true, true, 400, { { 0 } }, 0 },
	  { { XS_EV_CLUSTER_ROLE, 0 } } },
	{ "no cluster any more (no role)", { true, true, 400, { { 0 } }, XS_C_NONE },
	  { { XS_EV_CLUSTER_ROLE, 0 } } },
};

static void test_steps(void **state)
{
	struct xs_notify n;

	(void)state;
	memset(&n, 0, sizeof(n));
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		struct xm_sa_key keys[MAX_SA];
		struct xs_sa_row rows[MAX_SA];
		struct xs_view v;
		struct got g = { .n = 0 };
		size_t want = 0;

		view_of(&steps[s].r, &v, keys, rows);
		assert_int_equal(xs_notify_compare(&n, &v, record, &g), 0);
		while (want < MAX_EV && steps[s].want[want].ev)
			want++;
		if (g.n != want)
			fail_msg("%s: %zu events, want %zu", steps[s].name, g.n, want);
		for (size_t i = 0; i < want; i++)
			if (g.e[i].ev != steps[s].want[i].ev || g.e[i].what != steps[s].want[i].what)
				fail_msg("%s: event %zu is %d/%llu, want %d/%llu", steps[s].name, i, g.e[i].ev,
					 (unsigned long long)g.e[i].what, steps[s].want[i].ev,
					 (unsigned long long)steps[s].want[i].what);
	}
	xs_notify_free(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
