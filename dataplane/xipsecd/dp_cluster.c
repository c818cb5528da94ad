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
#include "dataplane/xipsecd/dp_sa.h"
#include "dataplane/xipsecd/dp_segment.h"
#include "dataplane/xipsecd/dp_seqmark.h"

#define MS 1000000ull
#define DPC_HELLO_NS (200 * MS)       /* heartbeat */
#define DPC_DEAD_NS (1000 * MS)       /* the peer is unreachable after this long without a message */
#define DPC_ASK_RETRY_NS (200 * MS)   /* a lease ask without an answer is sent again */
#define DPC_RESYNC_RETRY_NS (1000 * MS)
#define DPC_SEND_MAX 64u
#define DPC_READ_MAX 64u
#define DPC_RESYNC_STEP (DPC_MAX_ENTRIES * 16u)
#define DPC_GC_NS (60000 * MS)        /* cluster state of SAs gone this long is forgotten */
#define DPC_SCAN_NS (20 * MS)         /* the SAs are looked at this often (a lease lasts 0.5 s at 1 Mpps
                                       * from its ask; a lookup per SA per 5 ms tick cost 20 % of a CPU
                                       * at 20,000 SAs) */

/* One SA's cluster state, by its cross-node key. */
struct cent {
	struct dpc_sa_key key;
	bool used;
	unsigned expiry;          /* solo expiry bits raised */
	bool frozen;              /* outbound, taken over without having caught up: no number until
	                           * the peer acknowledges a lease, or the SA is replaced by a rekey */
	struct dpc_lease l;       /* outbound */
	uint64_t grant_base;      /* outbound: the reservation is raised to this before l.granted */
	uint64_t ask_ns;          /* outbound: when l.asked was last sent */
	uint64_t win_top;         /* inbound: standby, the top recorded; active, the top last sent */
	uint64_t win_ns;          /* inbound, active: when it was sent */
	uint64_t seen_ns;         /* the last tick an SA object or a message had this key */
};

struct counters {
	uint64_t sent, received, dropped[DPC_DROP_MAX], leases_asked, leases_acked, leases_refused,
		 resyncs_asked, resyncs_served, takeovers, solo_soft, solo_hard, send_errors;
};

struct dp_cluster {
	struct dp_cluster_cfg cfg;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	char peer_str[80], local_str[80];
	unsigned rank;
	struct dpc_chan chan;
	bool active, eligible, takeover_due, takeover_blind;
	bool peer_active, peer_eligible, was_reachable;
	uint64_t last_rx_ns, last_sync_rx_ns, hello_ns;
	uint64_t resync_token, resync_ns;     /* standby: the token of the resync it waits for */
	/* A push of this node's numbers to the peer, from serve_slot on: a resync the active serves
	 * (serve_token, the standby's, ends it with DPC_DONE), or this node's own ends after a cut or on
	 * stepping down (token 0: merged by max, dp_cluster_lease.c) */
	uint64_t serve_token;
	uint32_t serve_slot;
	bool serving;
	struct cent *tab;
	uint32_t mask, used;
	uint64_t gc_ns, scan_ns;
	struct dpc_msg out[DPC_TYPE_MAX];
	unsigned sends_left;
	struct counters c;
};

static struct dp_cluster *cl_of(const struct dp_ctx *ctx)
{
	return ctx->cluster;
}

bool dp_cluster_enabled(const struct dp_ctx *ctx)
{
	return ctx->cluster != NULL;
}

bool dp_cluster_covers(const struct dp_ctx *ctx, const struct sadb_sa *sa)
{
	if (!ctx->cluster || dp_seqmark_needed(sa))
		return false;
	return sa->dir == SADB_DIR_OUT || (sa->dir == SADB_DIR_IN && !(sa->flags & SADB_SAF_NO_REPLAY));
}

int dp_cluster_fd(const struct dp_ctx *ctx)
{
	return ctx->cluster ? cl_of(ctx)->fd : -1;
}

/* ---- the state table: open addressing, linear probing, grown at half full ---- */

static uint32_t key_hash(const struct dpc_sa_key *k)
{
	uint32_t h = 2166136261u;
	const uint8_t *p = (const uint8_t *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
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

/* The entry of k; made when missing (NULL only when out of memory). */
static struct cent *cent_get(struct dp_cluster *cl, const struct dpc_sa_key *k, uint64_t now)
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
	m->eligible = cl->eligible;
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

static bool reachable(const struct dp_cluster *cl, uint64_t now)
{
	return cl->last_rx_ns && now - cl->last_rx_ns < DPC_DEAD_NS;
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
		if (!cl->active && e->end > c->win_top)
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
		if (!cl->active)
			cl->eligible = false;
		push(cl, 0);
	}
	cl->was_reachable = true;
	switch (m->type) {
	case DPC_RESYNC:
		if (cl->active && m->n)
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

static uint64_t rd(const uint64_t *p)
{
	return atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_acquire);
}

static void set_lease(struct dp_sa *s, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)&s->rt->seq_lease, v, memory_order_release);
}

static bool rt_ours(const struct dp_sa *s)
{
	return atomic_load_explicit((const _Atomic uint64_t *)&s->rt->instance, memory_order_acquire) ==
	       s->sa.instance;
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
		/* an engine object that kept part of a block from an earlier active period would spend
		 * it first, below the peer's window */
		for (unsigned w = 0; w < ctx->n_workers; w++)
			if (s->e[w])
				esp_sa_seq_abandon(s->e[w]);
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

	for (uint32_t i = 0; i < n && done < DPC_RESYNC_STEP; i++) {
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
	if (done < DPC_RESYNC_STEP) {
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

void dp_cluster_tick(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n)
{
	struct dp_cluster *cl = cl_of(ctx);
	uint64_t now = dp_now_ns();

	if (!cl)
		return;
	cl->sends_left = DPC_SEND_MAX;
	if (cl->was_reachable && !reachable(cl, now) && cl->peer_active) {
		dp_log(LOG_WARNING, "cluster: no message from %s for %llu ms", cl->peer_str,
		       (unsigned long long)(DPC_DEAD_NS / MS));
		cl->peer_active = false;
	}
	if (!cl->takeover_due && now - cl->scan_ns < DPC_SCAN_NS)
		n = 0;
	else
		cl->scan_ns = now;
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
	if (cl->serving && n && reachable(cl, now))
		serve(cl, v, n, now);
	if (!cl->active && !cl->eligible && reachable(cl, now) && cl->peer_active &&
	    (!cl->resync_token || now - cl->resync_ns >= DPC_RESYNC_RETRY_NS)) {
		if (getrandom(&cl->resync_token, sizeof(cl->resync_token), 0) == sizeof(cl->resync_token) &&
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
		cl->active = true;
		cl->takeover_due = true;
		cl->takeover_blind = !cl->eligible;
		cl->serving = false;
		cl->c.takeovers++;
		dp_log(LOG_NOTICE, "cluster: active (peer %s %s)%s", cl->peer_str,
		       reachable(cl, now) ? "reachable" : "unreachable: solo budgets",
		       cl->eligible ? "" : "; not caught up: every SA's soft expiry is raised");
		snprintf(msg, len, "active%s", cl->eligible ? "" : " (not caught up: the SAs are rekeyed)");
	} else {
		/* it had everything it made; with an active peer (a healed split brain) it catches up */
		cl->active = false;
		cl->scan_ns = 0; /* the next tick withdraws every SA's limit */
		cl->eligible = !(reachable(cl, now) && cl->peer_active);
		cl->serving = false;
		cl->serve_token = 0;
		push(cl, 0);
		dp_log(LOG_NOTICE, "cluster: standby");
		snprintf(msg, len, "standby");
	}
	return 0;
}

/* ---- status ---- */

/* One covered SA as `show cluster` lists it: its reservation (outbound) or window top, the lease
 * its engine may use, what this node recorded, and the headroom between the two first. */
struct sa_row {
	bool out;
	uint64_t top, lease, recorded, headroom;
};

static void sa_row(struct dp_cluster *cl, struct dp_sa *s, uint64_t now, struct sa_row *r)
{
	struct cent *c = cent_get(cl, &s->ckey, now);

	r->out = s->sa.dir == SADB_DIR_OUT;
	r->top = r->out ? rd(&s->rt->seq_reserved) : rd(&s->rt->replay_top);
	r->lease = r->out ? rd(&s->rt->seq_lease) : 0;
	r->recorded = c ? (r->out ? c->l.recorded : c->win_top) : 0;
	r->headroom = r->out && r->lease > r->top ? r->lease - r->top : 0;
}

static uint64_t ago_ms(uint64_t then, uint64_t now)
{
	return then ? (now - then) / MS : SADB_STATS_NONE;
}

_Static_assert((int)DPC_DROP_MAX == (int)SADB_CL_DROPS, "the view's drop reasons are the channel's");

void dp_cluster_stats(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, struct sadb_stats_cluster *st)
{
	struct dp_cluster *cl = cl_of(ctx);
	uint64_t now = dp_now_ns();
	const uint64_t cnt[SADB_CL_COUNTERS] = {
		[SADB_CL_SENT] = cl ? cl->c.sent : 0, [SADB_CL_RECEIVED] = cl ? cl->c.received : 0,
		[SADB_CL_SEND_ERRORS] = cl ? cl->c.send_errors : 0,
		[SADB_CL_LEASES_ASKED] = cl ? cl->c.leases_asked : 0,
		[SADB_CL_LEASES_ACKED] = cl ? cl->c.leases_acked : 0,
		[SADB_CL_LEASES_REFUSED] = cl ? cl->c.leases_refused : 0,
		[SADB_CL_RESYNCS_ASKED] = cl ? cl->c.resyncs_asked : 0,
		[SADB_CL_RESYNCS_SERVED] = cl ? cl->c.resyncs_served : 0,
		[SADB_CL_TAKEOVERS] = cl ? cl->c.takeovers : 0, [SADB_CL_SOLO_SOFT] = cl ? cl->c.solo_soft : 0,
		[SADB_CL_SOLO_HARD] = cl ? cl->c.solo_hard : 0,
	};

	memset(st, 0, sizeof(*st));
	dp_segment_stats(ctx, st);
	if (!cl)
		return;
	st->present = 1;
	st->active = cl->active;
	st->eligible = cl->eligible;
	st->peer_reachable = reachable(cl, now);
	st->peer_active = cl->peer_active;
	st->last_message_ms = ago_ms(cl->last_rx_ns, now);
	st->sync_lag_ms = ago_ms(cl->last_sync_rx_ns, now);
	memcpy(st->counter, cnt, sizeof(cnt));
	memcpy(st->dropped, cl->c.dropped, sizeof(st->dropped));
	st->min_headroom = SADB_STATS_NONE;
	for (uint32_t i = 0; i < n; i++) {
		struct sa_row r;

		if (!rt_ours(v[i]))
			continue;
		st->covered_sas++;
		sa_row(cl, v[i], now, &r);
		/* a standby sends on no SA: its leases are 0 by design, not a headroom running out */
		if (r.out && cl->active && r.headroom < st->min_headroom) {
			st->min_headroom = r.headroom;
			st->min_headroom_spi = v[i]->sa.spi;
			st->min_headroom_slot = v[i]->slot;
		}
	}
}

static long long or_minus_one(uint64_t ms)
{
	return ms == SADB_STATS_NONE ? -1LL : (long long)ms;
}

size_t dp_cluster_status(struct dp_ctx *ctx, struct dp_sa *const *v, uint32_t n, bool json, char *buf,
			 size_t len)
{
	struct dp_cluster *cl = cl_of(ctx);
	struct sadb_stats_cluster st;
	uint64_t now = dp_now_ns();
	const char *q = json ? "\"" : "";
	char *p = buf;
	size_t left = len;
	bool first = true;

	if (!cl)
		return (size_t)snprintf(buf, len, json ? "{\"enabled\":false}\n" : "not clustered\n");
	/* the figures the counters view shows, under the same names (sadb_stats.h) */
	dp_cluster_stats(ctx, v, n, &st);
	if (json)
		dp_put(&p, &left, "{\"enabled\":true,\"role\":\"%s\",\"rank\":%u,\"local\":\"%s\","
		       "\"peer\":\"%s\",\"peer_reachable\":%s,\"peer_role\":\"%s\",\"eligible\":%s,"
		       "\"last_message_ms\":%lld,\"sync_lag_ms\":%lld,\"lease\":%llu,\"budget\":%llu,"
		       "\"sync_packets\":%u,\"sync_ms\":%u,\"covered_sas\":%llu,\"min_headroom\":%lld,"
		       "\"min_headroom_spi\":\"0x%08x\",\"counters\":{",
		       st.active ? "active" : "standby", cl->rank, cl->local_str, cl->peer_str,
		       st.peer_reachable ? "true" : "false", st.peer_active ? "active" : "standby",
		       st.eligible ? "true" : "false", or_minus_one(st.last_message_ms),
		       or_minus_one(st.sync_lag_ms), (unsigned long long)cl->cfg.lease,
		       (unsigned long long)cl->cfg.budget, cl->cfg.sync_packets, cl->cfg.sync_ms,
		       (unsigned long long)st.covered_sas, or_minus_one(st.min_headroom), st.min_headroom_spi);
	else
		dp_put(&p, &left, "role %s (rank %u), local %s, peer %s %s (%s), %s\n"
		       "last message %lld ms ago, sync lag %lld ms; lease %llu, budget %llu, window sync "
		       "every %u packets or %u ms\ncounters:",
		       st.active ? "active" : "standby", cl->rank, cl->local_str, cl->peer_str,
		       st.peer_reachable ? "reachable" : "unreachable", st.peer_active ? "active" : "standby",
		       st.eligible ? "eligible" : "not eligible (catching up)", or_minus_one(st.last_message_ms),
		       or_minus_one(st.sync_lag_ms), (unsigned long long)cl->cfg.lease,
		       (unsigned long long)cl->cfg.budget, cl->cfg.sync_packets, cl->cfg.sync_ms);
	for (unsigned i = 0; i < SADB_CL_COUNTERS; i++)
		dp_put(&p, &left, json ? "%s\"%s\":%llu" : "%s %s %llu", json && i ? "," : "",
		       sadb_stats_cl_counter_name(i), (unsigned long long)st.counter[i]);
	dp_put(&p, &left, json ? ",\"dropped\":{" : "\ndropped:");
	for (unsigned r = 0; r < SADB_CL_DROPS; r++)
		dp_put(&p, &left, json ? "%s%s%s%s:%llu" : "%s %s%s%s %llu", json && r ? "," : "", q,
		       sadb_stats_cl_drop_name(r), q, (unsigned long long)st.dropped[r]);
	dp_put(&p, &left, json ? "}}," : "\n");
	dp_segment_put(ctx, json, &p, &left);
	if (json)
		dp_put(&p, &left, ",\"sas\":[");
	else
		dp_put(&p, &left, "%-10s %-3s %20s %20s %20s %20s\n", "spi", "dir", "reserved/top",
		       "lease", "recorded", "headroom");
	for (uint32_t i = 0; i < n && left > 256; i++) {
		struct sa_row r;

		if (!rt_ours(v[i]))
			continue;
		sa_row(cl, v[i], now, &r);
		if (json)
			dp_put(&p, &left, "%s{\"spi\":\"0x%08x\",\"dir\":\"%s\",\"%s\":%llu,\"lease\":%llu,"
			       "\"recorded\":%llu,\"headroom\":%llu}", first ? "" : ",", v[i]->sa.spi,
			       r.out ? "out" : "in", r.out ? "reserved" : "top", (unsigned long long)r.top,
			       (unsigned long long)r.lease, (unsigned long long)r.recorded,
			       (unsigned long long)r.headroom);
		else
			dp_put(&p, &left, "0x%08x %-3s %20llu %20llu %20llu %20llu\n", v[i]->sa.spi,
			       r.out ? "out" : "in", (unsigned long long)r.top, (unsigned long long)r.lease,
			       (unsigned long long)r.recorded, (unsigned long long)r.headroom);
		first = false;
	}
	if (json)
		dp_put(&p, &left, "]}\n");
	return (size_t)(p - buf);
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
	if (!cfg->local) {
		dp_log(LOG_ERR, "cluster: --cluster-peer needs --cluster-local (the sync link's own address)");
		return -EINVAL;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->cfg = *cfg;
	cl->fd = -1;
	if (dpc_parse_addr(cfg->local, &local, &local_len) || dpc_parse_addr(cfg->peer, &cl->peer, &cl->peer_len) ||
	    local.ss_family != cl->peer.ss_family) {
		dp_log(LOG_ERR, "cluster: --cluster-local %s / --cluster-peer %s: not ADDR[:PORT] of one family",
		       cfg->local, cfg->peer);
		err = -EINVAL;
		goto fail;
	}
	snprintf(cl->local_str, sizeof(cl->local_str), "%s", cfg->local);
	snprintf(cl->peer_str, sizeof(cl->peer_str), "%s", cfg->peer);
	/* the rank: which node is which, the same answer on both (dp_cluster_lease.c, dp_cluster_msg.c) */
	err = memcmp(&local, &cl->peer, local_len);
	if (!err) {
		dp_log(LOG_ERR, "cluster: --cluster-local and --cluster-peer are the same");
		err = -EINVAL;
		goto fail;
	}
	cl->rank = err > 0;
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
