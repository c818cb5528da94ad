/* dataplane/xipsecd/dp_cluster.c: this node of a two-node cluster: its role (active or standby), the
 * sync socket to the other xipsecd, the per-SA cluster state (leases, window tops) kept across
 * rebuilds of the SA objects, and what the control thread does with them every tick. The lease
 * argument is dp_cluster_lease.c's, the channel's dp_cluster_msg.c's.
 *
 * On the control thread, not a thread of its own: everything it reads and writes (the SA objects,
 * rt->seq_lease, the expiry bits) is the control thread's already, so it needs no lock; its work is
 * a hash lookup per covered SA per tick and a few datagrams. What it costs the cluster is latency:
 * a tick (5 ms) or a slow fsync of dp_seqmark.c delays an acknowledgement by that much, against a
 * lease that lasts 0.5 s at 1 Mpps from the moment it is asked.
 *
 * Bounded: one message holds at most DPC_MAX_ENTRIES entries (DPC_MSG_MAX bytes); a tick sends at
 * most DPC_SEND_MAX messages and reads at most DPC_READ_MAX; a resync is served DPC_RESYNC_STEP SAs
 * a tick; what does not fit waits for the next tick (a lease ask is resent after DPC_ASK_RETRY_NS).
 * A standby asks for its resync again every DPC_RESYNC_RETRY_NS with the same token until the
 * active's DPC_DONE echoes it, and the active goes on with a pass under way for that token: at
 * 20,000 SAs a pass takes about as long as the wait between asks, and a pass begun again at every
 * ask never ended (the standby stayed ineligible). A new resync (after a cut, after stepping down)
 * draws a new token, so that no pass begun before it can end it.
 *
 * A standby covered SA's engine limit (rt->seq_lease) is kept at 0: it sends nothing. Inbound
 * window tops go from the active every sync_packets numbers or sync_ms while they move; a node that
 * takes over seeds each window at the top it recorded (esp_replay_seed). The residual: the packets
 * the active accepted after its last sync (at most sync_packets numbers, or sync_ms of traffic) can
 * be accepted once more by the node that takes over. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_cluster_int.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_segment.h"
#include "dataplane/xipsecd/dp_seqmark.h"

#define DPC_HELLO_NS (200 * MS)       /* heartbeat */
#define DPC_ASK_RETRY_NS (200 * MS)   /* a lease ask without an answer is sent again */
#define DPC_RESYNC_RETRY_NS (1000 * MS)
#define DPC_SEND_MAX 64u
#define DPC_READ_MAX 64u
#define DPC_RESYNC_STEP (DPC_MAX_ENTRIES * 16u)
#define DPC_GC_NS (60000 * MS)        /* cluster state of SAs gone this long is forgotten */
#define DPC_SCAN_NS (20 * MS)         /* the SAs are looked at this often (a lease lasts 0.5 s at 1 Mpps
                                       * from its ask; a lookup per SA per 5 ms tick cost 20 % of a CPU
                                       * at 20,000 SAs) */

static struct dp_cluster *cl_of(const struct dp_ctx *ctx)
{
	return ctx->cluster;
}

bool dp_cluster_enabled(const struct dp_ctx *ctx)
{
	return ctx->cluster != NULL;
}

int dp_cluster_fd(const struct dp_ctx *ctx)
{
	return ctx->cluster ? cl_of(ctx)->fd : -1;
}

/* ---- the state table: open addressing, linear probing, grown at half full ---- */

static uint32_t key_hash(const struct dpc_sa_key *k)
{
	uint64_t h = dpc_key_term(k);

	return (uint32_t)(h ^ (h >> 32));
}

static bool tab_resize(struct dp_cluster *cl, uint32_t size, uint64_t keep_after)
{
	struct cent *nt = calloc(size, sizeof(*nt)), *old = cl->tab;
	uint32_t old_size = cl->tab ? cl->mask + 1 : 0;

	if (!nt)
		return false;
	cl->tab = nt;
	cl->mask = size - 1;
	cl->used = 0;
	for (uint32_t i = 0; i < old_size; i++) {
		uint32_t h;

		if (!old[i].used || old[i].seen_ns < keep_after)
			continue;
		for (h = key_hash(&old[i].key) & cl->mask; cl->tab[h].used; h = (h + 1) & cl->mask)
			;
		cl->tab[h] = old[i];
		cl->used++;
	}
	free(old);
	return true;
}

struct cent *cent_get(struct dp_cluster *cl, const struct dpc_sa_key *k, uint64_t now)
{
	uint32_t h;

	if ((cl->used + 1) * 2 > cl->mask + 1 && !tab_resize(cl, (cl->mask + 1) * 2, 0))
		return NULL;
	for (h = key_hash(k) & cl->mask; cl->tab[h].used; h = (h + 1) & cl->mask)
		if (!memcmp(&cl->tab[h].key, k, sizeof(*k))) {
			cl->tab[h].seen_ns = now;
			return &cl->tab[h];
		}
	memset(&cl->tab[h], 0, sizeof(cl->tab[h]));
	cl->tab[h].key = *k;
	cl->tab[h].used = true;
	cl->tab[h].seen_ns = now;
	cl->used++;
	return &cl->tab[h];
}

/* ---- sending ---- */

static void flush(struct dp_cluster *cl, enum dpc_type t)
{
	struct dpc_msg *m = &cl->out[t];
	uint8_t buf[DPC_MSG_MAX];
	size_t len;

	if (!m->n && t != DPC_HELLO)
		return;
	m->type = (uint8_t)t;
	m->role = cl->active;
	m->eligible = ready(cl, dp_now_ns());
	if (t == DPC_HELLO) {
		m->n = 2;
		m->e[0] = (struct dpc_entry){ .base = cl->sas.n, .end = cl->sas.sum };
		m->e[1] = (struct dpc_entry){ .base = DPC_SEG_SAID | cl->segments };
	}
	len = dpc_seal(&cl->chan, m, buf, dp_realtime_ns());
	if (sendto(cl->fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&cl->peer, cl->peer_len) == (ssize_t)len)
		cl->c.sent++;
	else
		cl->c.send_errors++; /* an unreachable peer: the lease logic copes (solo) */
	m->n = 0;
	cl->sends_left--;
}

/* Queue one entry; false when this tick's sending budget is spent (try again next tick). */
static bool emit(struct dp_cluster *cl, enum dpc_type t, const struct dpc_sa_key *k, uint64_t base,
		 uint64_t end)
{
	struct dpc_msg *m = &cl->out[t];

	if (m->n == DPC_MAX_ENTRIES) {
		if (!cl->sends_left)
			return false;
		flush(cl, t);
	}
	if (!cl->sends_left)
		return false;
	m->e[m->n].key = k ? *k : (struct dpc_sa_key){ 0 };
	m->e[m->n].base = base;
	m->e[m->n].end = end;
	m->n++;
	return true;
}

static void flush_all(struct dp_cluster *cl)
{
	for (unsigned t = DPC_LEASE; t < DPC_TYPE_MAX; t++)
		if (cl->out[t].n && cl->sends_left)
			flush(cl, (enum dpc_type)t);
}

/* ---- receiving ---- */

static void push(struct dp_cluster *cl, uint64_t token)
{
	cl->serving = true;
	cl->serve_slot = 0;
	if (token || !cl->serve_token)
		cl->serve_token = token;
}

static void on_entry(struct dp_cluster *cl, const struct dpc_msg *m, const struct dpc_entry *e, uint64_t now)
{
	struct cent *c = cent_get(cl, &e->key, now);

	if (!c)
		return;
	switch (m->type) {
	case DPC_LEASE:
		/* a standby acknowledges a lease above everything it knows of; an active one records
		 * what it hears and acknowledges nothing (dp_cluster_lease.c) */
		if (!cl->active && e->base >= c->l.recorded && e->base >= c->l.granted) {
			emit(cl, DPC_ACK, &e->key, 0, dpc_lease_record(&c->l, e->end));
		} else {
			dpc_lease_record(&c->l, e->end);
			emit(cl, DPC_ACK, &e->key, c->l.recorded > c->l.granted ? c->l.recorded : c->l.granted, 0);
		}
		cl->last_sync_rx_ns = now;
		break;
	case DPC_ACK:
		if (!cl->active)
			break;
		if (e->end && c->l.asked && e->end >= c->l.asked) {
			c->grant_base = c->l.asked_base;
			dpc_lease_ack(&c->l, e->end);
			c->frozen = false; /* the peer recorded everything it used below the base */
			cl->c.leases_acked++;
		} else if (!e->end) {
			dpc_lease_record(&c->l, e->base);
			c->l.asked = 0; /* asked again above what the peer knows of */
			cl->c.leases_refused++;
		}
		break;
	case DPC_MERGE:
		dpc_lease_record(&c->l, e->end);
		cl->last_sync_rx_ns = now;
		break;
	case DPC_WINDOW:
		/* active too: both active, it seeds the window if the segment moves here */
		if (e->end > c->win_top)
			c->win_top = e->end;
		cl->last_sync_rx_ns = now;
		break;
	default:
		break;
	}
}

static void on_msg(struct dp_cluster *cl, const struct dpc_msg *m, uint64_t now)
{
	bool was = reachable(cl, now);

	cl->last_rx_ns = now;
	cl->peer_active = m->role;
	cl->peer_eligible = m->eligible;
	/* back in contact after a cut: what the active did meanwhile is not here, so catch up first;
	 * and tell the peer every number this node may have used alone */
	if (!was && cl->was_reachable) {
		if (!cl->active) {
			cl->eligible = false;
			cl->resync_token = 0; /* a new resync: what was pushed before the cut may be lost */
		}
		push(cl, 0);
	}
	cl->was_reachable = true;
	switch (m->type) {
	case DPC_HELLO:
		if (m->n) {
			cl->sas.peer_n = m->e[0].base;
			cl->sas.peer_sum = m->e[0].end;
		}
		if (m->n >= 2 && (m->e[1].base & DPC_SEG_SAID)) {
			cl->peer_segments = (uint32_t)m->e[1].base;
			cl->peer_seg_ns = now;
		}
		return;
	case DPC_RESYNC:
		/* the standby asks again, with the same token, until DPC_DONE comes: a pass under way for
		 * that token goes on (a pass over 20,000 SAs takes about a second, as long as the standby
		 * waits before it asks again: restarted at every ask, it never ended) */
		if (cl->active && m->n && !(cl->serving && cl->serve_token == m->e[0].base))
			push(cl, m->e[0].base);
		return;
	case DPC_DONE:
		if (!cl->active && m->n && cl->resync_token && m->e[0].base == cl->resync_token) {
			cl->eligible = true;
			cl->resync_token = 0;
			cl->last_sync_rx_ns = now;
			dp_log(LOG_NOTICE, "cluster: caught up with %s (eligible to take over)", cl->peer_str);
		}
		return;
	default:
		for (unsigned i = 0; i < m->n; i++)
			on_entry(cl, m, &m->e[i], now);
	}
}

uint32_t dp_cluster_peer_segments(const struct dp_ctx *ctx, uint64_t now)
{
	const struct dp_cluster *cl = ctx->cluster ? cl_of(ctx) : NULL;

	return cl && cl->peer_seg_ns && now - cl->peer_seg_ns < DPC_SEG_FRESH_NS ? cl->peer_segments : 0;
}

void dp_cluster_say_segments(struct dp_ctx *ctx, uint32_t owned)
{
	struct dp_cluster *cl = ctx->cluster ? cl_of(ctx) : NULL;

	if (!cl || cl->segments == owned)
		return;
	cl->segments = owned;
	/* outside the ticks' budget: one message, when ownership changes */
	if (!cl->sends_left)
		cl->sends_left = 1;
	flush(cl, DPC_HELLO);
	cl->hello_ns = dp_now_ns();
}

void dp_cluster_read(struct dp_ctx *ctx)
{
	struct dp_cluster *cl = cl_of(ctx);

	if (!cl)
		return;
	cl->sends_left = DPC_SEND_MAX;
	for (unsigned i = 0; i < DPC_READ_MAX; i++) {
		uint8_t buf[DPC_MSG_MAX + 1];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(cl->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		struct dpc_msg m;
		enum dpc_drop why;

		if (n < 0)
			break;
		if (fl != cl->peer_len || memcmp(&from, &cl->peer, fl)) {
			cl->c.dropped[DPC_DROP_FOREIGN]++;
			continue;
		}
		if (dpc_open(&cl->chan, buf, (size_t)n, dp_realtime_ns(), &m, &why)) {
			cl->c.dropped[why]++;
			continue;
		}
		cl->c.received++;
		on_msg(cl, &m, dp_now_ns());
	}
	flush_all(cl);
}

/* ---- every tick ---- */

static void cas_max(uint64_t *p, uint64_t v)
{
	_Atomic uint64_t *a = (_Atomic uint64_t *)p;
	uint64_t old = atomic_load_explicit(a, memory_order_acquire);

	while (old < v && !atomic_compare_exchange_weak_explicit(a, &old, v, memory_order_acq_rel,
								 memory_order_acquire))
		;
}

static void set_lease(struct dp_sa *s, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)&s->rt->seq_lease, v, memory_order_release);
}

static void raise_expiry(struct dp_ctx *ctx, struct dp_cluster *cl, struct dp_sa *s, struct cent *c,
			 unsigned bits, const char *why)
{
	char a[64];

	if ((c->expiry & bits) == bits)
		return;
	c->expiry |= bits;
	__atomic_fetch_or(&s->rt->expired, bits, __ATOMIC_RELEASE);
	if (bits & 2)
		cl->c.solo_hard++;
	else
		cl->c.solo_soft++;
	dp_log(LOG_WARNING, "cluster: SA spi 0x%08x dst %s: %s expiry raised: %s", s->sa.spi,
	       sadb_addr_str(&s->sa.dst, a, sizeof(a)), bits & 2 ? "hard" : "soft", why);
	(void)ctx;
}

/* A node made active: every outbound SA above its block (dp_cluster_lease.c), every window at the
 * top recorded. A node that never caught up does not know how far the peer went on the SAs it holds
 * (the peer may be alive behind a cut link): it sends on none of them (SEQ_LEASE drops) and raises
 * their soft expiry, so xipsec-iked rekeys them; the new keys carry the traffic. Until then only a
 * lease the peer acknowledges (it acknowledges none below what it used) frees such an SA. */
static void take_over(struct dp_ctx *ctx, struct dp_cluster *cl, struct dp_sa *s, struct cent *c)
{
	if (s->sa.dir == SADB_DIR_OUT) {
		uint64_t start;

		dpc_lease_record(&c->l, rd(&s->rt->seq_lease));
		start = dpc_lease_takeover(&c->l, rd(&s->rt->seq_reserved), cl->cfg.budget, cl->rank);
		cas_max(&s->rt->seq_reserved, start);
		/* the workers drop blocks reserved below, in an earlier life as the owner (dp_out.c) */
		atomic_store_explicit(&s->seq_floor, start, memory_order_release);
		c->l.asked = 0;
		c->l.solo = false;
		if (cl->takeover_blind) {
			c->frozen = true;
			c->l.acked = c->l.granted = 0;
			c->grant_base = start;
			set_lease(s, 0);
			raise_expiry(ctx, cl, s, c, 1, "taken over without having caught up with the peer: "
				     "it sends nothing until rekeyed");
			return;
		}
		c->frozen = false; /* caught up: it knows every number the peer used */
		c->l.acked = c->l.granted = c->grant_base = start;
	} else if (c->win_top > rd(&s->rt->replay_top)) {
		esp_replay_seed(s->rt, c->win_top);
	}
}

static void tick_out(struct dp_ctx *ctx, struct dp_cluster *cl, struct dp_sa *s, struct cent *c, uint64_t now)
{
	uint64_t reserved = rd(&s->rt->seq_reserved);
	unsigned bits;

	/* a peer that acknowledges nothing (gone, or active too) leaves the SA its solo budget; a
	 * frozen SA has none (take_over) */
	if ((!reachable(cl, now) || cl->peer_active) && !c->frozen) {
		uint64_t cap;

		/* An SA that never had a lease here (installed while no peer acknowledges) has no
		 * acknowledged end to count from: the other node may hold it too and start from 0
		 * as well. It starts as a takeover does, in a block of this node's parity. */
		if (!c->l.acked && !c->l.granted)
			take_over(ctx, cl, s, c);
		cap = dpc_lease_solo_cap(&c->l, cl->cfg.budget);
		if (cap > c->l.granted)
			c->l.granted = cap;
		bits = dpc_lease_solo_expiry(&c->l, reserved, cl->cfg.budget);
		if (bits)
			raise_expiry(ctx, cl, s, c, bits, bits & 2 ?
				     "its solo budget is used up, it sends nothing more until rekeyed" :
				     "half its solo budget is used (the cluster peer acknowledges no lease)");
	}
	if (rd(&s->rt->seq_lease) < c->l.granted) {
		/* the reservation first: the numbers below the lease's base may be the peer's */
		cas_max(&s->rt->seq_reserved, c->grant_base);
		set_lease(s, c->l.granted);
	}
	if (!reachable(cl, now))
		return;
	/* both active: how far this node went, for the other's takeover of the segment (as windows) */
	if (cl->peer_active && reserved > c->merge_top && (reserved - c->merge_top >= cl->cfg.sync_packets ||
	    now - c->merge_ns >= cl->cfg.sync_ms * MS) && emit(cl, DPC_MERGE, &c->key, 0, reserved)) {
		c->merge_top = reserved;
		c->merge_ns = now;
	}
	if (c->l.asked && now - c->ask_ns >= DPC_ASK_RETRY_NS) {
		if (emit(cl, DPC_LEASE, &c->key, c->l.asked_base, c->l.asked))
			c->ask_ns = now;
	} else if (dpc_lease_want(&c->l, reserved, cl->cfg.lease)) {
		if (emit(cl, DPC_LEASE, &c->key, c->l.asked_base, c->l.asked)) {
			c->ask_ns = now;
			cl->c.leases_asked++;
		} else {
			c->l.asked = 0;
		}
	}
}

static void tick_in(struct dp_cluster *cl, struct dp_sa *s, struct cent *c, uint64_t now)
{
	uint64_t top = rd(&s->rt->replay_top);

	if (top <= c->win_top || !reachable(cl, now))
		return;
	if (top - c->win_top < cl->cfg.sync_packets && now - c->win_ns < cl->cfg.sync_ms * MS)
		return;
	if (emit(cl, DPC_WINDOW, &c->key, 0, top)) {
		c->win_top = top;
		c->win_ns = now;
	}
}

/* Push a step at a time: every outbound SA's highest number (MERGE), every window top, then (a
 * resync) DPC_DONE with the standby's token. */
static void serve(struct dp_cluster *cl, struct dp_sa *const *v, uint32_t n, uint64_t now)
{
	unsigned done = 0;

	for (uint32_t i = 0; i < n && done < cl->resync_step; i++) {
		struct dp_sa *s = v[i];
		struct cent *c;
		bool ok;

		if (s->slot < cl->serve_slot || !rt_ours(s) || !(c = cent_get(cl, &s->ckey, now)))
			continue;
		if (s->sa.dir == SADB_DIR_OUT) {
			ok = emit(cl, DPC_MERGE, &s->ckey, 0, dpc_lease_top(&c->l, rd(&s->rt->seq_reserved)));
		} else {
			ok = emit(cl, DPC_WINDOW, &s->ckey, 0, rd(&s->rt->replay_top));
		}
		if (!ok)
			return;
		cl->serve_slot = s->slot + 1;
		done++;
	}
	if (done < cl->resync_step) {
		flush_all(cl);
		if (!cl->sends_left)
			return;
		if (cl->serve_token) {
			emit(cl, DPC_DONE, NULL, cl->serve_token, 0);
			flush(cl, DPC_DONE);
			cl->c.resyncs_served++;
		}
		cl->serving = false;
		cl->serve_token = 0;
	}
}

/* This node's covered SAs against the active's (dp_cluster_sas.c), on every scan. */
static void compare_sas(struct dp_cluster *cl, struct dp_sa *const *v, uint32_t n, uint64_t now)
{
	uint64_t cnt = 0, sum = 0;

	for (uint32_t i = 0; i < n; i++)
		if (rt_ours(v[i])) {
			cnt++;
			sum += dpc_key_term(&v[i]->ckey);
		}
	switch (dpc_sas_compare(&cl->sas, cnt, sum, !cl->active && cl->peer_active && reachable(cl, now), now)) {
	case DPC_SAS_DIFFER:
		dp_log(LOG_WARNING, "cluster: this node's %llu covered SAs have differed from the %llu of the "
		       "active %s for %llu ms: not eligible to take over until they match", (unsigned long long)cnt,
		       (unsigned long long)cl->sas.peer_n, cl->peer_str, (unsigned long long)(DPC_SADB_GRACE_NS / MS));
		break;
	case DPC_SAS_MATCH:
		dp_log(LOG_NOTICE, "cluster: this node holds the SAs the active %s holds again (%llu)",
		       cl->peer_str, (unsigned long long)cnt);
		break;
	default:
		break;
	}
}

void dp_cluster_tick(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n)
{
	struct dp_cluster *cl = cl_of(ctx);
	uint64_t now = dp_now_ns();
	bool scan;

	if (!cl)
		return;
	cl->sends_left = DPC_SEND_MAX;
	if (cl->was_reachable && !reachable(cl, now) && cl->peer_active) {
		dp_log(LOG_WARNING, "cluster: no message from %s for %llu ms", cl->peer_str,
		       (unsigned long long)(DPC_DEAD_NS / MS));
		cl->peer_active = false;
	}
	scan = cl->takeover_due || now - cl->scan_ns >= DPC_SCAN_NS;
	if (!scan) {
		n = 0;
	} else {
		cl->scan_ns = now;
		compare_sas(cl, v, n, now);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dp_sa *s = v[i];
		struct cent *c;

		if (!rt_ours(s) || !(c = cent_get(cl, &s->ckey, now)))
			continue;
		if (cl->takeover_due)
			take_over(ctx, cl, s, c);
		if (!cl->active) {
			if (s->sa.dir == SADB_DIR_OUT && rd(&s->rt->seq_lease)) {
				dpc_lease_record(&c->l, rd(&s->rt->seq_lease));
				set_lease(s, 0);
			}
			continue;
		}
		if (s->sa.dir == SADB_DIR_OUT)
			tick_out(ctx, cl, s, c, now);
		else
			tick_in(cl, s, c, now);
	}
	if (cl->takeover_due) {
		cl->takeover_due = false;
		cl->takeover_blind = false;
	}
	/* with no SA too: a standby that joins before the first tunnel must end its resync */
	if (cl->serving && scan && reachable(cl, now))
		serve(cl, v, n, now);
	/* one token per resync (a fresh one after a cut or a step down: an older pass's DPC_DONE does
	 * not end it), asked for again every resync_retry_ns until DPC_DONE echoes it */
	if (!cl->active && !cl->eligible && reachable(cl, now) && cl->peer_active &&
	    (!cl->resync_token || now - cl->resync_ns >= cl->resync_retry_ns)) {
		if ((cl->resync_token || getrandom(&cl->resync_token, sizeof(cl->resync_token), 0) ==
		     sizeof(cl->resync_token)) &&
		    cl->resync_token && emit(cl, DPC_RESYNC, NULL, cl->resync_token, 0)) {
			flush(cl, DPC_RESYNC);
			cl->resync_ns = now;
			cl->c.resyncs_asked++;
		}
	}
	flush_all(cl);
	if (now - cl->hello_ns >= DPC_HELLO_NS && cl->sends_left) {
		flush(cl, DPC_HELLO);
		cl->hello_ns = now;
	}
	if (now - cl->gc_ns >= DPC_GC_NS) {
		/* forget the state of SAs no object and no message named for a while */
		tab_resize(cl, cl->mask + 1, now > DPC_GC_NS * 10 ? now - DPC_GC_NS * 10 : 0);
		cl->gc_ns = now;
	}
}

void dp_cluster_sa_new(struct dp_ctx *ctx, struct dp_sa *s)
{
	struct dp_cluster *cl = cl_of(ctx);
	struct cent *c;

	if (!cl || !dp_cluster_covers(ctx, &s->sa))
		return;
	dpc_sa_key(&s->sa, &s->ckey);
	/* A standby sends nothing: a limit left from an earlier life as the active (a restart keeps
	 * the runtime area) is recorded as used, then withdrawn, before any worker sees the SA. */
	if (!cl->active && s->sa.dir == SADB_DIR_OUT && rt_ours(s) && rd(&s->rt->seq_lease) &&
	    (c = cent_get(cl, &s->ckey, dp_now_ns()))) {
		dpc_lease_record(&c->l, rd(&s->rt->seq_lease));
		set_lease(s, 0);
	}
}

void dp_cluster_take_sa(struct dp_ctx *ctx, struct dp_sa *s)
{
	struct dp_cluster *cl = cl_of(ctx);
	uint64_t now = dp_now_ns();
	struct cent *c;

	if (!cl || !cl->active || !rt_ours(s) || !(c = cent_get(cl, &s->ckey, now)))
		return;
	take_over(ctx, cl, s, c);
	if (s->sa.dir == SADB_DIR_OUT)
		tick_out(ctx, cl, s, c, now);
}

/* ---- role ---- */

int dp_cluster_set_role(struct dp_ctx *ctx, bool active, char *msg, size_t len)
{
	struct dp_cluster *cl = cl_of(ctx);
	uint64_t now = dp_now_ns();

	if (!cl) {
		snprintf(msg, len, "this xipsecd is not clustered (no --cluster-peer)");
		return -ENOTCONN;
	}
	if (active == cl->active) {
		snprintf(msg, len, "already %s", active ? "active" : "standby");
		return 0;
	}
	if (active) {
		if (!cl->eligible && reachable(cl, now) && cl->peer_active) {
			snprintf(msg, len, "refused: not caught up with the active peer %s yet (a resync is "
				 "under way; ipsecctl show cluster)", cl->peer_str);
			return -EAGAIN;
		}
		if (dpc_sas_differ(&cl->sas, now) && reachable(cl, now) && cl->peer_active) {
			snprintf(msg, len, "refused: this node holds %llu covered SAs, the active peer %s %llu "
				 "or other ones (ipsecctl show cluster)", (unsigned long long)cl->sas.n,
				 cl->peer_str, (unsigned long long)cl->sas.peer_n);
			return -EAGAIN;
		}
		cl->active = true;
		cl->takeover_due = true;
		cl->takeover_blind = !cl->eligible;
		cl->serving = false;
		cl->c.takeovers++;
		/* a node with no covered SA has nothing to rekey: it says so rather than a raise of nothing */
		dp_log(LOG_NOTICE, "cluster: active (peer %s %s)%s", cl->peer_str,
		       reachable(cl, now) ? "reachable" : "unreachable: solo budgets",
		       cl->eligible ? "" : cl->sas.n ? "; not caught up: every SA's soft expiry is raised" :
		       "; not caught up, and it holds no covered SA yet");
		snprintf(msg, len, "active%s", cl->eligible ? "" : cl->sas.n ?
			 " (not caught up: the SAs are rekeyed)" : " (not caught up; no covered SA yet)");
	} else {
		/* it had everything it made; with an active peer (a healed split brain) it catches up */
		cl->active = false;
		cl->scan_ns = 0; /* the next tick withdraws every SA's limit */
		cl->eligible = !(reachable(cl, now) && cl->peer_active);
		cl->resync_token = 0;
		cl->serving = false;
		cl->serve_token = 0;
		push(cl, 0);
		dp_log(LOG_NOTICE, "cluster: standby");
		snprintf(msg, len, "standby");
	}
	return 0;
}

/* ---- set-up ---- */

int dp_cluster_open(struct dp_ctx *ctx, const struct dp_cluster_cfg *cfg)
{
	struct dp_cluster *cl;
	struct sockaddr_storage local;
	socklen_t local_len;
	uint8_t key[DPC_KEY_LEN];
	char msg[256];
	int err;

	ctx->cluster = NULL;
	if (!cfg->peer)
		return 0;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->cfg = *cfg;
	cl->fd = -1;
	/* test hooks: a resync of a few SAs that takes several ticks and is asked for again meanwhile,
	 * as one of 20,000 SAs is (tests/netns/test_ha_sync.sh) */
	cl->resync_step = (unsigned)dp_env_u64("XIPSEC_TEST_RESYNC_STEP", DPC_RESYNC_STEP, 1, DPC_RESYNC_STEP);
	cl->resync_retry_ns = dp_env_u64("XIPSEC_TEST_RESYNC_RETRY_MS", DPC_RESYNC_RETRY_NS / MS, 10, 60000) * MS;
	err = dpc_cfg_addrs(cfg, &local, &local_len, &cl->peer, &cl->peer_len, &cl->rank, msg, sizeof(msg));
	if (err) {
		dp_log(LOG_ERR, "%s", msg);
		goto fail;
	}
	snprintf(cl->local_str, sizeof(cl->local_str), "%s", cfg->local);
	snprintf(cl->peer_str, sizeof(cl->peer_str), "%s", cfg->peer);
	err = dpc_key_load(cfg->key_path, key, msg, sizeof(msg));
	if (err) {
		dp_log(LOG_ERR, "%s", msg);
		goto fail;
	}
	err = dpc_chan_init(&cl->chan, key, cl->rank, dp_realtime_ns());
	explicit_bzero(key, sizeof(key));
	if (err) {
		dp_log(LOG_ERR, "cluster: cannot start the sync channel: %s", strerror(-err));
		goto fail;
	}
	cl->fd = socket(local.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cl->fd < 0 || bind(cl->fd, (struct sockaddr *)&local, local_len) < 0) {
		err = -errno;
		dp_log(LOG_ERR, "cluster: sync socket on %s: %s", cfg->local, strerror(errno));
		goto fail;
	}
	if (!tab_resize(cl, 1024, 0)) {
		err = -ENOMEM;
		goto fail;
	}
	ctx->cluster = cl;
	dp_log(LOG_NOTICE, "cluster: standby, sync %s <-> %s (rank %u), lease %" PRIu64 ", budget %" PRIu64
	       ", window sync every %u packets or %u ms", cfg->local, cfg->peer, cl->rank, cfg->lease,
	       cfg->budget, cfg->sync_packets, cfg->sync_ms);
	return 0;
fail:
	if (cl->fd >= 0)
		close(cl->fd);
	explicit_bzero(&cl->chan, sizeof(cl->chan));
	free(cl);
	return err;
}

void dp_cluster_close(struct dp_ctx *ctx)
{
	struct dp_cluster *cl = cl_of(ctx);

	if (!cl)
		return;
	close(cl->fd);
	explicit_bzero(&cl->chan, sizeof(cl->chan));
	free(cl->tab);
	free(cl);
	ctx->cluster = NULL;
}
