/* dataplane/xipsecd/dp_mip6_queue.c: the Mobile IPv6 home agent's two bounded queues, the only place
 * the workers and the control thread meet. Inbound, any worker (dp_mip6_take, called by the engine
 * stage): a decapsulated Mobility Header packet of a mobile node's transport SA is copied in (full:
 * dropped and counted; the workers never wait for the home agent) and the control thread is woken
 * through an eventfd; the control thread takes them out (dp_mip6_in_pop). Outbound, the control
 * thread queues the acknowledgements it built (dp_mip6_out_push) and wakes worker 0, whose
 * dp_local.c drains them (dp_mip6_pop) into its outbound path: data flows one way, the home agent
 * never calls into the packet path. One mutex guards both queues; worker 0 reads out_n before
 * taking it, so an idle home agent costs it one atomic load a round. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp_mip6.h"

bool dp_mip6_take(struct dp_worker *w, const struct dp_sa *sa, const uint8_t *l3, uint32_t len)
{
	struct dp_mip6 *m = M(w->ctx);
	struct sadb_pkt_sel sel;

	if (!m || sa->sa.mode != SADB_MODE_TRANSPORT || !(sa->sa.flags & SADB_SAF_MOBILE) ||
	    dp_l3_family(l3) != AF_INET6 || esp_pkt_sel(l3, len, &sel) != SADB_DROP_NONE ||
	    sel.proto != IPPROTO_MH)
		return false;
	if (len > MQ_PKT) {
		dp_drop_count(w, SADB_DROP_UNSUPPORTED, 1);
		return true;
	}
	pthread_mutex_lock(&m->lock);
	if (m->in.n == MQ_LEN) {
		pthread_mutex_unlock(&m->lock);
		atomic_fetch_add_explicit(&m->in_full, 1, memory_order_relaxed);
		dp_drop_count(w, SADB_DROP_NOMEM, 1);
		return true;
	}
	struct mq_msg *q = &m->in.m[(m->in.head + m->in.n) % MQ_LEN];
	q->len = len;
	q->sa_id = sa->slot + 1;
	memcpy(q->pkt, l3, len);
	m->in.n++;
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

uint32_t dp_mip6_pop(struct dp_ctx *ctx, uint8_t *buf)
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
	pthread_mutex_lock(&m->lock);
	if (!m->in.n) {
		pthread_mutex_unlock(&m->lock);
		return false;
	}
	q->len = m->in.m[m->in.head].len;
	q->sa_id = m->in.m[m->in.head].sa_id;
	memcpy(q->pkt, m->in.m[m->in.head].pkt, q->len);
	m->in.head = (m->in.head + 1) % MQ_LEN;
	m->in.n--;
	pthread_mutex_unlock(&m->lock);
	return true;
}
