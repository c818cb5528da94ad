/* dataplane/xipsecd/dp_mip6_queue.c: the Mobile IPv6 home agent's two bounded queues, the only place
 * the workers and the control thread meet. Inbound, any worker (dp_mip6_take, called by the engine
 * stage): a decapsulated Mobility Header packet or Mobile Prefix Solicitation of a mobile node's
 * transport SA is copied in (no room: dropped and counted; the workers never wait for the home
 * agent) and the control thread is woken through an eventfd; the control thread takes them out (dp_mip6_in_pop). Outbound, the
 * control thread queues the acknowledgements it built (dp_mip6_out_push) and wakes worker 0, whose
 * dp_local.c drains them (dp_mip6_pop) into its outbound path (an acknowledgement that must wait
 * for its batch's republication waits in the control thread's own holding queue first,
 * dp_mip6_queue_ba): data flows one way, the home agent
 * never calls into the packet path. One mutex guards both queues; worker 0 reads out_n before
 * taking it, so an idle home agent costs it one atomic load a round.
 *
 * Each mobile node gets its share of the inbound queue. What reaches it has passed ESP's ICV and
 * replay window and the SA's selectors, but a mobile node (a compromised or broken one, with its
 * own keys) can still send valid Binding Updates as fast as the link carries them, each a slot: in
 * one queue served first come, first served it keeps the queue full and another node's refresh is
 * dropped until its binding expires. The share is kept per signalling SA (the message's sa_id: a
 * node's Binding Updates all arrive on its one inbound transport SA, and a node cannot send on
 * another's):
 *  - an SA holds at most MQ_SHARE (4) messages: a mobile node has one Binding Update outstanding
 *    per binding (RFC 6275 section 11.8: it waits for the acknowledgement or retransmits), so four
 *    leave room for a retransmission and a move behind it; more is dropped (in_share). One flooding
 *    node then holds 4 of the 64 slots and every other node finds room;
 *  - a queue full all the same (sixteen nodes at their share, or a mass re-registration of 64
 *    nodes with one each) makes room for an SA that holds fewer than the heaviest holder by
 *    displacing that holder's oldest message (in_evicted; its newest carries its latest care-of
 *    address and sequence number, an older one would be superseded or refused with 135): whoever
 *    holds less always gets in, so nodes that flood with their own keys share the queue with the
 *    others rather than take it; displacing only when the heaviest holds two more than the arrival
 *    keeps equal shares from churning (in_full: dropped when all hold as much);
 *  - the control thread takes the oldest message first: with shares bounded a node's message waits
 *    behind at most MQ_LEN - 1 others, which one round of dp_mip6_run handles, and it takes one only
 *    when the outbound queue has room for its acknowledgement (dp_mip6.c), so an answer is never
 *    dropped for a flood's answers ahead of it.
 * Finding an SA's share and the oldest message are scans of at most MQ_LEN entries under the
 * lock: a Binding Update costs a worker far more in its decryption. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp_mip6.h"

/* The index of sa_id's share in q->share, or q->n_share when it has nothing queued. */
static unsigned share_find(const struct mq_in *q, uint32_t sa_id)
{
	unsigned i = 0;

	while (i < q->n_share && q->share[i].sa_id != sa_id)
		i++;
	return i;
}

/* Free slot i of q (it holds a message) and take it off its SA's share. */
static void slot_release(struct mq_in *q, unsigned i)
{
	unsigned s = share_find(q, q->m[i].sa_id);

	q->m[i].len = 0;
	q->n--;
	if (--q->share[s].n == 0)
		q->share[s] = q->share[--q->n_share];
}

/* The slot of the oldest message of sa_id (0: of any SA); q holds one. */
static unsigned slot_oldest(const struct mq_in *q, uint32_t sa_id)
{
	unsigned best = MQ_LEN;

	for (unsigned i = 0; i < MQ_LEN; i++)
		if (q->m[i].len && (!sa_id || q->m[i].sa_id == sa_id) &&
		    (best == MQ_LEN || q->stamp[i] < q->stamp[best]))
			best = i;
	return best;
}

/* Under m->lock: make room in a full queue for an SA holding own messages, by displacing the
 * oldest message of the heaviest holder if it holds at least two more. */
static bool make_room(struct dp_mip6 *m, unsigned own)
{
	struct mq_in *q = &m->in;
	unsigned h = 0;

	for (unsigned i = 1; i < q->n_share; i++)
		if (q->share[i].n > q->share[h].n)
			h = i;
	if (q->share[h].n < own + 2) {
		atomic_fetch_add_explicit(&m->in_full, 1, memory_order_relaxed);
		return false;
	}
	slot_release(q, slot_oldest(q, q->share[h].sa_id));
	atomic_fetch_add_explicit(&m->in_evicted, 1, memory_order_relaxed);
	return true;
}

bool dp_mip6_take(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3, uint32_t len,
		  const struct dp_v4_outer *v4)
{
	struct dp_mip6 *m = M(w->ctx);
	struct mq_in *q;
	struct sadb_pkt_sel sel;
	uint32_t id = sa->slot + 1;
	unsigned s, i;

	if (!m || sa->sa.mode != SADB_MODE_TRANSPORT || !(sa->sa.flags & SADB_SAF_MOBILE) ||
	    dp_l3_family(l3) != AF_INET6 || esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE ||
	    (sel.proto != IPPROTO_MH && !(sel.proto == IPPROTO_ICMPV6 && sel.sport == MIP6_ICMP_MPS)))
		return false;
	if (len > MQ_PKT) {
		atomic_fetch_add_explicit(&m->in_too_big, 1, memory_order_relaxed);
		dp_drop_count(w, SADB_DROP_UNSUPPORTED, 1);
		return true;
	}
	q = &m->in;
	pthread_mutex_lock(&m->lock);
	s = share_find(q, id);
	if (s < q->n_share && q->share[s].n >= MQ_SHARE) {
		pthread_mutex_unlock(&m->lock);
		atomic_fetch_add_explicit(&m->in_share, 1, memory_order_relaxed);
		dp_drop_count(w, SADB_DROP_NOMEM, 1);
		return true;
	}
	if (q->n == MQ_LEN) {
		if (!make_room(m, s < q->n_share ? q->share[s].n : 0)) {
			pthread_mutex_unlock(&m->lock);
			dp_drop_count(w, SADB_DROP_NOMEM, 1);
			return true;
		}
		dp_drop_count(w, SADB_DROP_NOMEM, 1); /* the message displaced */
		s = share_find(q, id);                /* the share table moved */
	}
	for (i = 0; q->m[i].len; i++)
		;
	q->m[i].len = len;
	q->m[i].sa_id = id;
	q->m[i].v4.set = false;
	if (v4)
		q->m[i].v4 = *v4;
	memcpy(q->m[i].pkt, l3, len);
	q->stamp[i] = q->next_stamp++;
	q->n++;
	if (s == q->n_share) {
		q->share[s].sa_id = id;
		q->share[s].n = 0;
		q->n_share++;
	}
	q->share[s].n++;
	pthread_mutex_unlock(&m->lock);
	uint64_t one = 1;
	if (write(m->in_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the control thread is woken already */
	}
	atomic_fetch_add_explicit(&m->taken, 1, memory_order_relaxed);
	return true;
}

bool dp_mip6_pending(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	return m && atomic_load_explicit(&m->out_n, memory_order_acquire) != 0;
}

uint32_t dp_mip6_pop(struct dp_ctx *ctx, uint8_t *buf, struct dp_v4_outer *v4)
{
	struct dp_mip6 *m = M(ctx);
	uint32_t len;
	uint64_t v;

	if (!m || !atomic_load_explicit(&m->out_n, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&m->lock);
	if (!m->out.n) {
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	len = m->out.m[m->out.head].len;
	memcpy(buf, m->out.m[m->out.head].pkt, len);
	*v4 = m->out.m[m->out.head].v4;
	m->out.head = (m->out.head + 1) % MQ_LEN;
	m->out.n--;
	atomic_store_explicit(&m->out_n, m->out.n, memory_order_release);
	if (!m->out.n && read(m->out_fd, &v, sizeof(v)) < 0) {
		/* nothing pending on the eventfd: fine */
	}
	pthread_mutex_unlock(&m->lock);
	return len;
}

int dp_mip6_wake_fd(struct dp_ctx *ctx)
{
	return M(ctx) ? M(ctx)->out_fd : -1;
}

int dp_mip6_event_fd(struct dp_ctx *ctx)
{
	return M(ctx) ? M(ctx)->in_fd : -1;
}

void dp_mip6_out_push(struct dp_ctx *ctx, const uint8_t *pkt, uint32_t len)
{
	dp_mip6_out_push_v4(ctx, pkt, len, NULL);
}

void dp_mip6_out_push_v4(struct dp_ctx *ctx, const uint8_t *pkt, uint32_t len, const struct dp_v4_outer *v4)
{
	struct dp_mip6 *m = M(ctx);
	uint64_t one = 1;

	pthread_mutex_lock(&m->lock);
	if (m->out.n == MQ_LEN || len > MQ_PKT) {
		pthread_mutex_unlock(&m->lock);
		atomic_fetch_add_explicit(&m->out_full, 1, memory_order_relaxed);
		return;
	}
	struct mq_msg *q = &m->out.m[(m->out.head + m->out.n) % MQ_LEN];
	q->len = len;
	q->sa_id = 0;
	q->v4.set = false;
	if (v4)
		q->v4 = *v4;
	memcpy(q->pkt, pkt, len);
	m->out.n++;
	atomic_store_explicit(&m->out_n, m->out.n, memory_order_release);
	pthread_mutex_unlock(&m->lock);
	if (write(m->out_fd, &one, sizeof(one)) < 0) {
		/* saturated: worker 0 is woken already */
	}
}

bool dp_mip6_in_pop(struct dp_mip6 *m, struct mq_msg *q)
{
	unsigned i;

	pthread_mutex_lock(&m->lock);
	if (!m->in.n) {
		pthread_mutex_unlock(&m->lock);
		return false;
	}
	i = slot_oldest(&m->in, 0);
	q->len = m->in.m[i].len;
	q->sa_id = m->in.m[i].sa_id;
	q->v4 = m->in.m[i].v4;
	memcpy(q->pkt, m->in.m[i].pkt, q->len);
	slot_release(&m->in, i);
	pthread_mutex_unlock(&m->lock);
	return true;
}

void dp_mip6_queue_ba(struct dp_ctx *ctx, const struct mip6_ha_result *res)
{
	struct dp_mip6 *m = M(ctx);
	uint8_t ba[MIP6_BA_MAX_LEN + MIP6_V4_BA_EXTRA];
	struct dp_v4_outer v4;
	int n = dp_mip6_v4_ba(ctx, res, ba, sizeof(ba), &v4);

	if (!v4.set)
		n = mip6_ha_build_ba(m->ha, res, ba, sizeof(ba));

	if (n > 0)
		m->ba_status[res->ba.status]++;
	if (n > 0 && !m->sync_due && !m->ba.n) {
		dp_mip6_out_push_v4(ctx, ba, (uint32_t)n, &v4); /* nothing moved: no republication to wait for */
	} else if (n > 0 && (uint32_t)n <= MQ_PKT && m->ba.n < MQ_LEN) {
		struct mq_msg *d = &m->ba.m[m->ba.n++];
		d->len = (uint32_t)n;
		d->sa_id = 0;
		d->v4 = v4;
		memcpy(d->pkt, ba, (size_t)n);
	} else if (n > 0) {
		atomic_fetch_add_explicit(&m->out_full, 1, memory_order_relaxed);
	}
}
