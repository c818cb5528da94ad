/* dataplane/xipsecd/dp_burst.c: the engine stage. The outbound stage (a packet to protect) and the
 * inbound stage (ESP/AH of a known SA) add frames to a group; consecutive packets of one SA and
 * direction go to the engine as one burst (esp_outbound_burst, or esp_inbound_burst under the SA's
 * lock: one writer of the replay window, doc/architecture.md rule 5) when the SA or direction
 * changes, the group is full, or the RX burst ends. What the engine refused is dropped here (it
 * counted the reason in the SA); what it protected goes to dp_fwd by the outside; what it
 * decapsulated is checked against the SA's selectors and the inbound policy (dp_spd_in_check), a
 * mobile node's Binding Update goes to the home agent's queue (dp_mip6_take), and the rest goes to
 * dp_fwd as a packet from the outside (FWD_SPD_OUT). Those that re-enter the outbound path there
 * (a hub's spoke-to-spoke traffic) collect in the worker's second group, flushed after. */
#include "config.h"

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/xipsecd/dp_spd.h"

void dp_group_flush(struct dp_worker *w, struct dp_group *g)
{
	struct dp_sa *sa = g->sa;
	unsigned k, n = g->n;

	if (!n)
		return;
	g->n = 0;
	if (g->out) {
		k = esp_outbound_burst(sa->e[w->id], g->pp, n);
		DP_STAT(w, protect, k);
	} else {
		/* the engine takes sa->in_lock around the window update, after the crypto, which
		 * other workers may share (dp_handoff.c) */
		k = dp_handoff_inbound(w, sa, g->pp, n);
		DP_STAT(w, unprotect, k);
	}
	for (unsigned i = k; i < n; i++) {
		struct esp_pkt *p = g->pp[i];

		/* the engine counted it in the SA, except when the SA's area was no longer its own */
		if (p->drop == SADB_DROP_STALE_SA)
			dp_drop(w, p->user, p->drop);
		else
			dp_drop_charged(w, p->user, p->drop);
	}
	for (unsigned i = 0; i < k; i++) {
		struct esp_pkt *p = g->pp[i];
		uint64_t base = p->user;
		unsigned flags = g->flags[p - g->pk];

		if (g->out) {
			const struct dp_v4_outer *v4 = &g->v4[p - g->pk];

			if (v4->set && !dp_v4_outer_wrap(w, base, &p->off, &p->len, v4)) {
				dp_drop_sa(w, sa, base, SADB_DROP_TRUNCATED);
				continue;
			}
			dp_fwd(w, base + p->off, p->len, (flags & FWD_FROM_TUN) | FWD_OUTSIDE);
		} else {
			unsigned r = dp_spd_in_check(w->ctx->db, &sa->sa, p->buf + p->off, p->len);

			if (r != SADB_DROP_NONE) {
				dp_drop_sa(w, sa, base, r);
				continue;
			}
			if ((sa->sa.flags & SADB_SAF_MOBILE) && dp_mip6_take(w, sa, p->buf + p->off, p->len,
								       &g->v4[p - g->pk])) {
				dp_frame_free(w, base);
				continue;
			}
			/* an ICMP error about it goes back only through this SA's pair (dp_pkt.c) */
			const struct dp_sa *prev = w->decap_sa;

			w->decap_sa = sa;
			dp_fwd(w, base + p->off, p->len, FWD_DEC_TTL | FWD_SPD_OUT);
			w->decap_sa = prev;
		}
	}
	if (!g->out)
		dp_group_flush(w, w->regroup); /* what those re-entered the outbound path with */
}

void dp_group_add(struct dp_worker *w, struct dp_group *g, struct dp_sa *sa, bool out,
		  uint64_t addr, uint32_t len, unsigned flags)
{
	struct esp_pkt *p;
	uint64_t base = addr & ~(uint64_t)(DP_FRAME_SIZE - 1);
	const struct dp_v4_outer *v4 = w->v4_next;

	w->v4_next = NULL;  /* this packet's only, not what a flush below hands on */
	if (g->n && (g->sa != sa || g->out != out))
		dp_group_flush(w, g);
	g->sa = sa;
	g->out = out;
	p = &g->pk[g->n];
	p->buf = dp_mem(w, base);
	p->buf_len = DP_FRAME_SIZE;
	p->off = (uint32_t)(addr - base);
	p->len = len;
	p->drop = 0;
	p->user = base;
	g->flags[g->n] = flags;
	g->v4[g->n].set = false;
	if (v4)
		g->v4[g->n] = *v4;
	g->pp[g->n] = p;
	if (++g->n >= w->ctx->batch)
		dp_group_flush(w, g);
}
