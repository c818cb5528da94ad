/* snmpd/snmp_notify.c: finds XIPSEC-MIB's notification events by comparing two successive readings
 * of the view (snmpd/snmp_notify.h), and a change of the cluster role between them. SAs are matched by their SADB instance, which no other SA ever
 * has: a rekey that reuses an SPI and destination is a new SA (one down, one up), and a slot reused
 * by another SA is not mistaken for the old one. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snmpd/snmp_notify.h"

static int by_instance(const void *a, const void *b)
{
	uint64_t x = ((const struct xs_notify_sa *)a)->key.instance;
	uint64_t y = ((const struct xs_notify_sa *)b)->key.instance;

	return x < y ? -1 : x > y;
}

/* v's SAs, copied out of its snapshot and sorted by instance; NULL with *n = 0 when it has none. */
static int sa_copy(const struct xs_view *v, struct xs_notify_sa **out, size_t *n)
{
	struct xs_notify_sa *s = NULL;

	*out = NULL;
	*n = 0;
	if (!v->n_sa)
		return 0;
	s = calloc(v->n_sa, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_sa; i++) {
		s[i].key = *v->sa[i].key;
		s[i].row = v->sa[i];
	}
	qsort(s, v->n_sa, sizeof(*s), by_instance);
	/* only now: the sort moved the keys */
	for (size_t i = 0; i < v->n_sa; i++)
		s[i].row.key = &s[i].key;
	*out = s;
	*n = v->n_sa;
	return 0;
}

static void sa_compare(const struct xs_notify_sa *old, size_t n_old, const struct xs_notify_sa *cur,
		       size_t n_cur, xs_notify_fn fn, void *arg)
{
	size_t i = 0, j = 0;

	while (i < n_old || j < n_cur) {
		int c = i == n_old ? 1 : j == n_cur ? -1 : by_instance(&old[i], &cur[j]);

		if (c < 0) {
			fn(arg, XS_EV_SA_DOWN, &old[i++].row, 0);
		} else if (c > 0) {
			fn(arg, XS_EV_SA_UP, &cur[j++].row, 0);
		} else {
			/* expiry: none (0), soft (1), hard (2); a jump from none to hard passed soft */
			if (!old[i].row.expiry && cur[j].row.expiry)
				fn(arg, XS_EV_SA_SOFT_EXPIRED, &cur[j].row, 0);
			i++, j++;
		}
	}
}

int xs_notify_compare(struct xs_notify *n, const struct xs_view *v, xs_notify_fn fn, void *arg)
{
	bool sadb_up = v->g[XS_G_SADB_UP] != 0, dp_up = v->g[XS_G_DP_UP] != 0;
	struct xs_notify_sa *cur;
	size_t n_cur;

	/* the dataplane's hold on the SADB went away: it stopped (or died) */
	if (sadb_up && n->have_dp && n->dp_up && !dp_up)
		fn(arg, XS_EV_DP_DOWN, NULL, n->dp_start);
	if (sadb_up) {
		n->have_dp = true;
		n->dp_up = dp_up;
		if (dp_up)
			n->dp_start = v->g[XS_G_DP_START_TIME];
	}
	if (!sadb_up)
		return 0;
	/* a role read from a stopped dataplane's last reading is no news: only a running one's */
	if (dp_up) {
		if (n->have_role && n->role != v->c[XS_C_ROLE])
			fn(arg, XS_EV_CLUSTER_ROLE, NULL, 0);
		n->have_role = true;
		n->role = v->c[XS_C_ROLE];
	}
	if (sa_copy(v, &cur, &n_cur))
		return -ENOMEM;
	if (n->have_sa)
		sa_compare(n->sa, n->n_sa, cur, n_cur, fn, arg);
	free(n->sa);
	n->sa = cur;
	n->n_sa = n_cur;
	n->have_sa = true;
	return 0;
}

void xs_notify_free(struct xs_notify *n)
{
	free(n->sa);
	memset(n, 0, sizeof(*n));
}
