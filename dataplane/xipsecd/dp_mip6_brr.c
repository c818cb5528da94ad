/* dataplane/xipsecd/dp_mip6_brr.c: the home agent's Binding Refresh Requests (RFC 6275 section
 * 6.1.2, 9.5.5 and 11.7.4), on the control thread. When a binding has lived --mip6-brr-at percent of
 * its granted lifetime without a new Binding Update, the mobile node is asked for one; without an
 * answer the request is repeated, evenly spread over the time left, --mip6-brr-max times in all, and
 * then the binding expires as usual. A re-registration starts the count again from the new
 * lifetime. The request goes like an acknowledgement: to the care-of address with a type 2 routing
 * header naming the home address, so the mobile node's signalling SA protects it, through worker
 * 0's outbound path. With the Binding Refresh Advice of the acknowledgements
 * (--mip6-refresh-advice) a mobile node knows when to refresh by itself; the request is for one
 * that did not. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

/* The table is sorted by home address: a Binding Update's look-up is a binary search (a home
 * agent of 10,000 mobile nodes registering at once pays no scan each); a new binding or one gone
 * moves the tail, a few hundred kilobytes at most. Where hoa is, or would go. */
static size_t slot(const struct dp_mip6 *m, const uint8_t hoa[16], bool *found)
{
	size_t lo = 0, hi = m->n_brr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(m->brr[mid].hoa, hoa, 16);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* The first request's time for binding b: at brr_at percent of its lifetime. */
static uint64_t first_due(const struct dp_mip6 *m, const struct mip6_binding *b)
{
	return b->updated_ms + (uint64_t)b->lifetime_s * 10u * m->brr_at;
}

void dp_mip6_brr_track(struct dp_ctx *ctx, const uint8_t hoa[16])
{
	struct dp_mip6 *m = M(ctx);
	const struct mip6_binding *b = mip6_ha_lookup(m->ha, hoa);
	struct brr_due *d;
	bool found;
	size_t i;

	if (!m->brr_at || !m->brr_max)
		return;
	i = slot(m, hoa, &found);
	if (!b) {
		if (found)
			memmove(&m->brr[i], &m->brr[i + 1], (m->n_brr-- - i - 1) * sizeof(*m->brr));
		return;
	}
	if (!found) {
		if (m->n_brr == m->cap_brr) {
			size_t cap = m->cap_brr ? 2 * m->cap_brr : 16;
			struct brr_due *v = realloc(m->brr, cap * sizeof(*v));
			if (!v)
				return;  /* this binding gets no request: it expires as it would without */
			m->brr = v;
			m->cap_brr = cap;
		}
		memmove(&m->brr[i + 1], &m->brr[i], (m->n_brr++ - i) * sizeof(*m->brr));
		memcpy(m->brr[i].hoa, hoa, 16);
	}
	d = &m->brr[i];
	d->updated_ms = b->updated_ms;
	d->due_ms = first_due(m, b);
	d->left = m->brr_max;
	if (d->due_ms < m->brr_next)
		m->brr_next = d->due_ms;
}

void dp_mip6_brr_run(struct dp_ctx *ctx, uint64_t now)
{
	struct dp_mip6 *m = M(ctx);
	uint64_t next = UINT64_MAX;
	uint8_t pkt[MIP6_BRR_LEN];
	char h[INET6_ADDRSTRLEN];
	size_t j = 0;  /* the entries kept are compacted in place: the order stays sorted */

	if (!m->n_brr || now < m->brr_next)
		return;
	for (size_t i = 0; i < m->n_brr; i++) {
		struct brr_due *d = &m->brr[i];
		const struct mip6_binding *b = m->ha ? mip6_ha_lookup(m->ha, d->hoa) : NULL;

		/* the binding went (expired, deregistered, refused by detection, node removed) */
		if (!b || b->updated_ms != d->updated_ms || !d->left)
			continue;
		if (d->due_ms <= now) {
			/* from the address the node registered with (libmip6 holds it to that one) */
			int n = mip6_build_brr(pkt, sizeof(pkt), b->mn->ha_addr, b->coa, b->hoa);

			if (n > 0) {
				dp_mip6_out_push(ctx, pkt, (uint32_t)n);
				m->brr_sent++;
				dp_log(LOG_INFO, "home agent: Binding Refresh Request to %s", a6(b->hoa, h));
			}
			/* the rest spread evenly over the time the binding has left */
			d->left--;
			if (d->left && b->expires_ms > now)
				d->due_ms = now + (b->expires_ms - now) / (d->left + 1u);
			else
				d->left = 0;
		}
		if (!d->left)
			continue;
		if (d->due_ms < next)
			next = d->due_ms;
		m->brr[j++] = *d;
	}
	m->n_brr = j;
	m->brr_next = next;
}

void dp_mip6_brr_clear(struct dp_mip6 *m)
{
	free(m->brr);
	m->brr = NULL;
	m->n_brr = m->cap_brr = 0;
	m->brr_next = UINT64_MAX;
}
