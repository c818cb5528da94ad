/* dataplane/xipsecd/dp_mip6.c: the Mobile IPv6 home agent in xipsecd (RFC 6275 section 10, protected
 * as RFC 3776 says): the hand-over of Binding Updates from the workers to the control thread, the
 * home agent's state there (libmip6: the rules and the binding cache), what a binding change does to
 * forwarding (the mobile node's tunnel SAs moved to its care-of address with sadb_sa_migrate, proxy
 * Neighbor Discovery for its home address on the home link), the Binding Acknowledgements injected
 * into worker 0's outbound path, binding expiry, and the control socket's "bindings" answer.
 *
 * Configuration comes from the SADB: the home agent record (sadb_home_agent_get) and the mobile
 * nodes' SAs (SADB_SAF_MOBILE; ipsecctl's mobile-node statement makes them): per home address an
 * inbound transport SA its Binding Updates arrive on, an outbound transport SA for the
 * acknowledgements, and a pair of tunnel SAs whose outer peer is the home address itself while the
 * mobile node has no binding ("at home": dp_out tunnels nothing into such an SA, SADB_DROP_NO_BINDING)
 * and its care-of address while it has one.
 *
 * What stays off the fast path: a worker that decapsulates a Mobility Header packet of a mobile
 * node's transport SA copies it into a bounded queue (full: dropped and counted) and wakes the
 * control thread; everything else happens there.
 *
 * Security argument.
 *  - Outside attacker: a Binding Update is acted on only after ESP authenticated it with the SA the
 *    configuration binds to that home address (the engine and dp_in_check verify ICV, replay window
 *    and selectors, the Home Address option included: esp_pkt_sel_mobile); libmip6 then checks that
 *    the SA it arrived on is that home address's own (mip6_ha_bu), so a mobile node cannot move
 *    another's binding. Unprotected or wrongly protected Binding Updates never reach this file or are
 *    dropped by it, never answered with an acceptance. Replays are stopped by the ESP window and the
 *    Binding Update sequence number. A flood of valid-looking packets costs a queue slot each: the
 *    queue is bounded and the workers never wait for it.
 *  - Ordering: on a move, the tunnel SAs are migrated and the dataplane's SA table republished (after
 *    an RCU grace period no worker still encrypts towards the old care-of address) before the
 *    acknowledgement is queued, so the old address gets nothing after the BA. The control thread
 *    takes the Binding Updates queued since its last look together: their migrations are each one
 *    SADB transaction, then one republication covers them all, then their BAs go out (flush_moves;
 *    a BA that follows no move and no waiting BA goes out at once),
 *    so a home agent that thousands of mobile nodes register with at once (after its restart) pays
 *    the table's republication once per batch, not once per mobile node. Migration keeps the
 *    SA's runtime area, so its sequence numbers continue: nothing is re-keyed and no nonce repeats.
 *  - Restart: bindings are this process's state. A restarted xipsecd starts with an empty cache and
 *    moves every mobile node's tunnel SAs back home, so nothing is tunnelled on the word of a
 *    binding it no longer knows; mobile nodes re-register at their next refresh.
 *  - Local user: the SADB and the control socket are root's (0600); the sysctls set here
 *    (proxy_ndp, proxy_delay of the home link) are the ones RFC 6275 section 10.4.1 needs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <urcu.h>

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/xipsecd/dp_sa.h"
#include "mobility/mip6_ha.h"

#define MQ_PKT   1280u       /* the largest Binding Update taken (IPv6 minimum MTU) */
#define MQ_LEN   64u         /* queued messages each way */
#define NA_REPEAT 3u         /* unsolicited advertisements per registration (RFC 4861 section 7.2.6) */
#define NA_GAP_MS 1000u

struct mq_msg {
	uint32_t len;
	uint32_t sa_id;          /* the SA's slot + 1 (0: none) */
	uint8_t pkt[MQ_PKT];
};

struct mq {
	struct mq_msg m[MQ_LEN];
	unsigned head, n;
};

enum { ROLE_BU, ROLE_BA, ROLE_TUN_OUT, ROLE_TUN_IN, ROLES };

/* A mobile node as the SADB describes it: the slots (+1) of its four SAs. */
struct mn_cfg {
	uint8_t hoa[16];
	uint32_t id[ROLES];
};

struct na_due {
	uint8_t hoa[16];
	unsigned left;
	uint64_t due_ms;
};

struct dp_mip6 {
	pthread_mutex_t lock;        /* the two queues */
	struct mq in, out;
	_Atomic unsigned out_n;      /* worker 0 looks at this before taking the lock */
	int in_fd, out_fd;           /* eventfds: workers -> control thread, control -> worker 0 */
	_Atomic uint64_t taken, in_full, out_full;

	/* control thread only */
	struct sadb *wdb;            /* the home agent's writer handle (tunnel SA migrations) */
	struct mip6_ha *ha;          /* NULL: no home agent configured */
	struct sadb_home_agent rec;
	uint64_t seen_gen;           /* SADB generation the configuration was read at */
	struct mn_cfg *mns;
	size_t n_mns;
	int home_ifindex;
	int nd_fd, nl_fd;
	uint32_t nl_seq;
	struct na_due *na;
	size_t n_na, cap_na;
	uint64_t na_sent, nd_errors, migrations, migrate_errors, refused_mns, republished;
	uint64_t migrate_errors_seen; /* migrate_errors when sync_config last looked at every tunnel */
	uint8_t *mn_slot;            /* bitmap over the SADB's slots: an SA of a mobile node in mns */
	uint32_t mn_slot_bits;
	bool warned_link;
	bool sync_due;               /* tunnels moved since the SA table was last republished */
	struct mq ba;                /* acknowledgements waiting for that republication */
};

static struct dp_mip6 *M(struct dp_ctx *ctx)
{
	return ctx->mip6;
}

static uint64_t now_ms(void)
{
	return dp_now_ns() / 1000000u;
}

static const char *a6(const uint8_t a[16], char *b)
{
	return inet_ntop(AF_INET6, a, b, INET6_ADDRSTRLEN);
}

/* ---- workers ---- */

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

unsigned dp_mip6_inject(struct dp_worker *w, struct dp_group *g)
{
	struct dp_mip6 *m = M(w->ctx);
	unsigned n = 0;

	if (!m || !atomic_load_explicit(&m->out_n, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&m->lock);
	while (m->out.n && w->n_free > DP_BATCH) {
		struct mq_msg *q = &m->out.m[m->out.head];
		uint64_t base = dp_frame_take(w), addr = base + FRESH_L3;

		memcpy(dp_mem(w, addr), q->pkt, q->len);
		uint32_t len = q->len;
		m->out.head = (m->out.head + 1) % MQ_LEN;
		m->out.n--;
		atomic_store_explicit(&m->out_n, m->out.n, memory_order_release);
		pthread_mutex_unlock(&m->lock);
		dp_out(w, g, addr, len, FWD_FROM_TUN | FWD_MOBILE);
		n++;
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	if (n) {
		uint64_t v;
		if (read(m->out_fd, &v, sizeof(v)) < 0) {
			/* nothing pending on the eventfd: fine */
		}
		dp_group_flush(w, g);
	}
	return n;
}

int dp_mip6_wake_fd(struct dp_ctx *ctx)
{
	return M(ctx) ? M(ctx)->out_fd : -1;
}

int dp_mip6_event_fd(struct dp_ctx *ctx)
{
	return M(ctx) ? M(ctx)->in_fd : -1;
}

static void out_push(struct dp_ctx *ctx, const uint8_t *pkt, uint32_t len)
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

/* ---- proxy Neighbor Discovery (RFC 6275 section 10.4.1) ---- */

static void sysctl_set(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, v, strlen(v)) < 0)
		dp_log(LOG_WARNING, "home agent: cannot set %s to %s: %s", path, v, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The kernel answers Neighbor Solicitations for a proxied address on the home link (a proxy
 * neighbour entry, as XFRM-based home agents use), with our link-layer address. */
static int proxy_neigh(struct dp_mip6 *m, const uint8_t hoa[16], bool add)
{
	struct {
		struct nlmsghdr nh;
		struct ndmsg nd;
		struct rtattr ra;
		uint8_t addr[16];
	} req;
	char ans[256];

	if (m->nl_fd < 0 || m->home_ifindex <= 0)
		return -ENODEV;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = add ? RTM_NEWNEIGH : RTM_DELNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	req.nh.nlmsg_seq = ++m->nl_seq;
	req.nd.ndm_family = AF_INET6;
	req.nd.ndm_ifindex = m->home_ifindex;
	req.nd.ndm_state = NUD_PERMANENT;
	req.nd.ndm_flags = NTF_PROXY;
	req.ra.rta_type = NDA_DST;
	req.ra.rta_len = RTA_LENGTH(16);
	memcpy(req.addr, hoa, 16);
	if (send(m->nl_fd, &req, sizeof(req), 0) < 0)
		return -errno;
	for (int tries = 0; tries < 4; tries++) {
		ssize_t n = recv(m->nl_fd, ans, sizeof(ans), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)ans;

		if (n < (ssize_t)sizeof(*h))
			return n < 0 ? -errno : -EIO;
		if (h->nlmsg_seq != m->nl_seq || h->nlmsg_type != NLMSG_ERROR)
			continue;
		int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		return e == -ENOENT && !add ? 0 : e;
	}
	return -EIO;
}

/* An unsolicited Neighbor Advertisement for the home address to all nodes on the home link: target
 * the home address, Override set, Router and Solicited clear, our link-layer address; hop limit 255
 * (RFC 4861 section 7.1.2); the kernel fills in the source and the checksum. */
static int send_na(struct dp_ctx *ctx, const uint8_t hoa[16])
{
	struct dp_mip6 *m = M(ctx);
	uint8_t b[32];
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_scope_id = (uint32_t)m->home_ifindex };

	if (m->nd_fd < 0)
		return -ENODEV;
	memset(b, 0, sizeof(b));
	b[0] = ND_NEIGHBOR_ADVERT;
	b[4] = 0x20; /* Override */
	memcpy(b + 8, hoa, 16);
	b[24] = ND_OPT_TARGET_LINKADDR;
	b[25] = 1;
	memcpy(b + 26, ctx->ifc[DP_IN].mac, 6);
	inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
	if (sendto(m->nd_fd, b, sizeof(b), 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)sizeof(b))
		return -errno;
	m->na_sent++;
	return 0;
}

static void na_schedule(struct dp_mip6 *m, const uint8_t hoa[16], bool on)
{
	for (size_t i = 0; i < m->n_na; i++)
		if (!memcmp(m->na[i].hoa, hoa, 16)) {
			m->na[i] = m->na[--m->n_na];
			break;
		}
	if (!on)
		return;
	if (m->n_na == m->cap_na) {
		size_t cap = m->cap_na ? 2 * m->cap_na : 16;
		struct na_due *v = realloc(m->na, cap * sizeof(*v));
		if (!v)
			return;
		m->na = v;
		m->cap_na = cap;
	}
	memcpy(m->na[m->n_na].hoa, hoa, 16);
	m->na[m->n_na].left = NA_REPEAT;
	m->na[m->n_na].due_ms = 0;
	m->n_na++;
}

static void na_run(struct dp_ctx *ctx, uint64_t now)
{
	struct dp_mip6 *m = M(ctx);

	for (size_t i = 0; i < m->n_na;) {
		struct na_due *d = &m->na[i];
		if (d->due_ms > now) {
			i++;
			continue;
		}
		if (send_na(ctx, d->hoa))
			m->nd_errors++;
		if (--d->left == 0) {
			*d = m->na[--m->n_na];
			continue;
		}
		d->due_ms = now + NA_GAP_MS;
		i++;
	}
}

/* ---- forwarding state of a binding ---- */

static int cmp_hoa(const void *key, const void *elem)
{
	return memcmp(key, ((const struct mn_cfg *)elem)->hoa, 16);
}

/* v[0..n) is sorted by home address, each once (read_mns) */
static const struct mn_cfg *mn_find(const struct mn_cfg *v, size_t n, const uint8_t hoa[16])
{
	return n ? bsearch(hoa, v, n, sizeof(*v), cmp_hoa) : NULL;
}

static const struct mn_cfg *mn_cfg_find(const struct dp_mip6 *m, const uint8_t hoa[16])
{
	return mn_find(m->mns, m->n_mns, hoa);
}

/* Move the mobile node's tunnel SAs to coa (the home address itself: back home) in one transaction.
 * The dataplane's SA table is republished by flush_moves: after it, no worker uses the old
 * endpoints. */
static int tunnel_move(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16])
{
	struct dp_mip6 *m = M(ctx);
	const struct mn_cfg *c = mn_cfg_find(m, hoa);
	struct sadb_addr to = { .family = AF_INET6 };
	struct sadb_sa out, in;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	int r;

	if (!c || !m->wdb)
		return -ENOENT;
	memcpy(to.a.b, coa, 16);
	r = sadb_sa_get(m->wdb, c->id[ROLE_TUN_OUT] - 1, &out);
	if (r == 0)
		r = sadb_sa_get(m->wdb, c->id[ROLE_TUN_IN] - 1, &in);
	if (r)
		goto fail;
	r = sadb_txn_begin(m->wdb);
	if (r)
		goto fail;
	if (!sadb_addr_eq(&out.dst, &to))
		r = sadb_sa_migrate(m->wdb, out.spi, out.proto, &out.dst, NULL, &to, 0, 0);
	if (r == 0 && !sadb_addr_eq(&in.src, &to))
		r = sadb_sa_migrate(m->wdb, in.spi, in.proto, &in.dst, &to, NULL, 0, 0);
	if (r) {
		sadb_txn_abort(m->wdb);
		goto fail;
	}
	r = sadb_txn_commit(m->wdb);
	explicit_bzero(&out, sizeof(out));
	explicit_bzero(&in, sizeof(in));
	if (r)
		goto fail;
	/* Nobody else wrote since the configuration was read: it is still current. */
	if (sadb_generation(m->wdb) == m->seen_gen + 1)
		m->seen_gen = sadb_generation(m->wdb);
	m->migrations++;
	m->sync_due = true;
	return 0;
fail:
	explicit_bzero(&out, sizeof(out));
	explicit_bzero(&in, sizeof(in));
	m->migrate_errors++;
	dp_log(LOG_ERR, "home agent: cannot move the tunnel of %s to %s: %s", a6(hoa, b1), a6(coa, b2),
	       m->wdb ? sadb_errmsg(m->wdb) : strerror(-r));
	return r;
}

static void binding_up(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16], bool fresh)
{
	struct dp_mip6 *m = M(ctx);
	char b[INET6_ADDRSTRLEN];
	int r;

	tunnel_move(ctx, hoa, coa);
	if (!fresh)
		return;
	r = proxy_neigh(m, hoa, true);
	if (r) {
		m->nd_errors++;
		dp_log(LOG_WARNING, "home agent: cannot proxy ND for %s: %s", a6(hoa, b), strerror(-r));
	}
	na_schedule(m, hoa, true);
}

static void binding_down(struct dp_ctx *ctx, const uint8_t hoa[16])
{
	struct dp_mip6 *m = M(ctx);
	int r = proxy_neigh(m, hoa, false);

	if (r)
		m->nd_errors++;
	na_schedule(m, hoa, false);
	tunnel_move(ctx, hoa, hoa);
}

static void expired_cb(const struct mip6_binding *b, void *arg)
{
	struct dp_ctx *ctx = arg;
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];

	dp_log(LOG_NOTICE, "home agent: binding of %s (care-of %s) expired", a6(b->hoa, h), a6(b->coa, c));
	binding_down(ctx, b->hoa);
}

/* ---- configuration from the SADB ---- */

static int cmp_role(const void *a, const void *b)
{
	const struct { uint8_t hoa[16]; uint32_t role, id; } *x = a, *y = b;
	int c = memcmp(x->hoa, y->hoa, 16);
	return c ? c : (int)x->role - (int)y->role;
}

/* The role of a mobile node's SA and its home address, or false if rec is none of a mobile node's. */
static bool mn_role(const struct sadb_sa *rec, uint32_t *role, uint8_t hoa[16])
{
	if (!(rec->flags & SADB_SAF_MOBILE) || rec->state == SADB_STATE_LARVAL)
		return false;
	memcpy(hoa, rec->dir == SADB_DIR_IN ? rec->sel.src.a.b : rec->sel.dst.a.b, 16);
	*role = rec->mode == SADB_MODE_TRANSPORT ? (rec->dir == SADB_DIR_IN ? ROLE_BU : ROLE_BA) :
		(rec->dir == SADB_DIR_OUT ? ROLE_TUN_OUT : ROLE_TUN_IN);
	return true;
}

/* m->mns changed: mark the slots of its SAs. */
static void mn_slots_mark(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	struct sadb_info info;

	free(m->mn_slot);
	m->mn_slot = NULL;
	m->mn_slot_bits = 0;
	if (sadb_info(ctx->db, &info) || !(m->mn_slot = calloc((info.max_sa + 7) / 8, 1)))
		return; /* without it every change reads the configuration again */
	m->mn_slot_bits = info.max_sa;
	for (size_t i = 0; i < m->n_mns; i++)
		for (unsigned r = 0; r < ROLES; r++) {
			uint32_t slot = m->mns[i].id[r] - 1;
			if (slot < m->mn_slot_bits)
				m->mn_slot[slot / 8] |= (uint8_t)(1u << (slot % 8));
		}
}

/* A mobile node without a binding is at home: its tunnel goes nowhere (after a restart too, and
 * whatever an update of its tunnel SA in place said). */
static void keep_home(struct dp_ctx *ctx, const struct mn_cfg *c)
{
	struct sadb_sa sa;

	if (mip6_ha_lookup(M(ctx)->ha, c->hoa))
		return;
	if (sadb_sa_get(ctx->db, c->id[ROLE_TUN_OUT] - 1, &sa) == 0 && memcmp(sa.dst.a.b, c->hoa, 16))
		tunnel_move(ctx, c->hoa, c->hoa);
	explicit_bzero(&sa, sizeof(sa));
}

/* Follow the SADB's changes after m->seen_gen; whether they leave the mobile nodes as read_mns
 * would find them: every SA changed is, as before, the same mobile node's SA in the same role (a
 * migration, an update in place), or was and is none of a mobile node's. The home agent record, a
 * flush or a journal that has moved on say no. So a home agent with 10,000 mobile nodes does not
 * read and sort its 40,000 SAs again for every SA that comes and goes elsewhere, nor after its own
 * moves. A mobile node one of whose SAs changed in place is held to keep_home here (the full read
 * only looks at new ones). */
static bool mns_follow(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	struct sadb_change ch[256];
	uint64_t since = m->seen_gen;
	int n;

	if (!m->mn_slot)
		return false;
	while ((n = sadb_changes(ctx->db, &since, ch, 256)) > 0)
		for (int i = 0; i < n; i++) {
			struct sadb_sa rec;
			uint32_t slot = ch[i].index, role;
			uint8_t hoa[16];
			bool was, is = false, same = false;

			switch (ch[i].op) {
			case SADB_CHG_SA_ADD: case SADB_CHG_SA_UPDATE: case SADB_CHG_SA_DEL:
				break;
			case SADB_CHG_POL_ADD: case SADB_CHG_POL_DEL: case SADB_CHG_FLUSH_POL:
				continue;
			default:
				return false;
			}
			if (slot >= m->mn_slot_bits)
				return false;
			was = m->mn_slot[slot / 8] & (1u << (slot % 8));
			if (sadb_sa_get(ctx->db, slot, &rec) == 0 && mn_role(&rec, &role, hoa)) {
				const struct mn_cfg *c = mn_find(m->mns, m->n_mns, hoa);
				is = true;
				same = c && c->id[role] == slot + 1;
			}
			explicit_bzero(&rec, sizeof(rec));
			if (was != is || (is && !same))
				return false;
			if (is)
				keep_home(ctx, mn_find(m->mns, m->n_mns, hoa));
		}
	return n == 0;
}

/* The mobile nodes the SADB's SAs describe, complete ones only (four SAs). */
static int read_mns(struct dp_ctx *ctx, struct mn_cfg **out, size_t *n_out)
{
	struct ent { uint8_t hoa[16]; uint32_t role, id; } *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	struct mn_cfg *mns;
	struct sadb_sa sa;
	uint32_t cur = 0, slot;

	while (sadb_sa_next(ctx->db, &cur, &sa, &slot) == 0) {
		if (!(sa.flags & SADB_SAF_MOBILE) || sa.state == SADB_STATE_LARVAL)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct ent *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				explicit_bzero(&sa, sizeof(sa));
				return -ENOMEM;
			}
			v = nv;
		}
		mn_role(&sa, &v[n].role, v[n].hoa);
		v[n].id = slot + 1;
		n++;
	}
	explicit_bzero(&sa, sizeof(sa));
	qsort(v, n, sizeof(*v), cmp_role);
	mns = calloc(n ? n : 1, sizeof(*mns));
	if (!mns) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct mn_cfg c;
		unsigned have = 0;
		bool dup = false;

		memset(&c, 0, sizeof(c));
		memcpy(c.hoa, v[i].hoa, 16);
		while (j < n && !memcmp(v[j].hoa, c.hoa, 16)) {
			dup |= (have >> v[j].role) & 1u;
			have |= 1u << v[j].role;
			c.id[v[j].role] = v[j].id;
			j++;
		}
		if (have == (1u << ROLES) - 1 && !dup)
			mns[k++] = c;
		i = j;
	}
	free(v);
	*out = mns;
	*n_out = k;
	return 0;
}

/* The home agent goes (its record was removed or changed): every binding it had ends. */
static void teardown_all(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	if (!m->ha)
		return;
	for (size_t i = 0; i < m->n_mns; i++)
		if (mip6_ha_lookup(m->ha, m->mns[i].hoa))
			binding_down(ctx, m->mns[i].hoa);
	mip6_ha_destroy(m->ha);
	m->ha = NULL;
	free(m->mns);
	m->mns = NULL;
	m->n_mns = 0;
	free(m->mn_slot);
	m->mn_slot = NULL;
	m->mn_slot_bits = 0;
}

static bool rec_same(const struct sadb_home_agent *a, const struct sadb_home_agent *b)
{
	struct sadb_home_agent x = *a, y = *b;

	x.set_time = y.set_time = 0;
	x.checksum = y.checksum = 0;
	return !memcmp(&x, &y, sizeof(x));
}

static int ha_create(struct dp_ctx *ctx, const struct sadb_home_agent *rec)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_ha_config cfg;
	char b[INET6_ADDRSTRLEN];
	int r;

	if (rec->link[0] && strcmp(rec->link, ctx->ifc[DP_IN].name)) {
		if (!m->warned_link)
			dp_log(LOG_ERR, "home agent: home link %s is not the inside interface %s: "
			       "the home agent stays off", rec->link, ctx->ifc[DP_IN].name);
		m->warned_link = true;
		return -EINVAL;
	}
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.ha_addrs[0], rec->addr.a.b, 16);
	cfg.n_ha_addrs = 1;
	for (unsigned i = 0; i < rec->n_prefix && i < MIP6_HA_MAX_PREFIXES; i++) {
		memcpy(cfg.prefixes[i].addr, rec->prefix[i].a.b, 16);
		cfg.prefixes[i].len = rec->plen[i];
	}
	cfg.n_prefixes = rec->n_prefix;
	cfg.max_lifetime_s = rec->max_lifetime;
	cfg.max_mns = 1u << 16;
	cfg.hash_seed = (uint32_t)dp_now_ns();
	r = mip6_ha_create(&cfg, &m->ha);
	if (r) {
		dp_log(LOG_ERR, "home agent: configuration refused: %s", strerror(-r));
		return r;
	}
	m->home_ifindex = ctx->ifc[DP_IN].ifindex;
	{
		char p[128];
		snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/%s/proxy_ndp", ctx->ifc[DP_IN].name);
		sysctl_set(p, "1");
		snprintf(p, sizeof(p), "/proc/sys/net/ipv6/neigh/%s/proxy_delay", ctx->ifc[DP_IN].name);
		sysctl_set(p, "0");
		/* the kernel answers for proxied addresses only on a router's interface; the
		 * gateway's forwarding stays xipsecd's (all.forwarding is untouched) */
		snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/%s/forwarding", ctx->ifc[DP_IN].name);
		sysctl_set(p, "1");
	}
	m->rec = *rec;
	m->warned_link = false;
	dp_log(LOG_NOTICE, "home agent %s on %s: %u home prefix(es), bindings up to %u s",
	       a6(rec->addr.a.b, b), ctx->ifc[DP_IN].name, rec->n_prefix, rec->max_lifetime);
	return 0;
}

/* Bring the home agent in step with the SADB: its record, and the mobile nodes the SAs describe. A
 * mobile node whose SAs changed loses its binding (it registers again); one whose SAs are unchanged
 * keeps it. */
static void sync_config(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	struct sadb_home_agent rec;
	struct mn_cfg *mns;
	size_t n;
	uint64_t g = ctx->sadb_gen;
	int r;

	if (g == m->seen_gen)
		return;
	r = sadb_home_agent_get(ctx->db, &rec);
	if (r == 0 && m->ha && !rec_same(&rec, &m->rec))
		teardown_all(ctx);
	if (r != 0 && m->ha) {
		dp_log(LOG_NOTICE, "home agent: removed from the configuration");
		teardown_all(ctx);
	}
	if (r == 0 && !m->ha && ha_create(ctx, &rec) != 0) {
		m->seen_gen = g;
		return;
	}
	if (m->ha && r == 0 && mns_follow(ctx, m)) {
		m->seen_gen = g;
		return;
	}
	m->seen_gen = g;
	if (!m->ha)
		return;
	if (read_mns(ctx, &mns, &n))
		return;
	/* removed or changed mobile nodes first (both lists are sorted: a lookup is a binary search,
	 * so a change anywhere in the SADB of a home agent with 10,000 mobile nodes does not cost
	 * 10^8 comparisons) */
	for (size_t i = 0; i < m->n_mns; i++) {
		const struct mn_cfg *o = &m->mns[i], *nw = mn_find(mns, n, o->hoa);
		if (nw && !memcmp(nw->id, o->id, sizeof(o->id)))
			continue;
		if (mip6_ha_lookup(m->ha, o->hoa))
			binding_down(ctx, o->hoa);
		mip6_ha_mn_remove(m->ha, o->hoa, NULL);
	}
	for (size_t j = 0; j < n; j++) {
		struct mip6_mn mn;
		char b[INET6_ADDRSTRLEN];

		if (mip6_ha_mn_find(m->ha, mns[j].hoa))
			continue;
		memset(&mn, 0, sizeof(mn));
		memcpy(mn.hoa, mns[j].hoa, 16);
		mn.bu_sa = mns[j].id[ROLE_BU];
		mn.ba_sa = mns[j].id[ROLE_BA];
		mn.tun_out_sa = mns[j].id[ROLE_TUN_OUT];
		mn.tun_in_sa = mns[j].id[ROLE_TUN_IN];
		r = mip6_ha_mn_add(m->ha, &mn);
		if (r) {
			m->refused_mns++;
			dp_log(LOG_WARNING, "home agent: mobile node %s refused: %s", a6(mn.hoa, b), strerror(-r));
		}
	}
	/* A mobile node without a binding is at home: its tunnel goes nowhere (after a restart too).
	 * Looked at for the mobile nodes new in this configuration (or changed: new SAs); a known one
	 * went home with its binding (binding_down), unless that move failed: then all are looked at
	 * again. Each look reads the SA's whole record, so not all of them on every SADB change. */
	bool all = m->migrate_errors != m->migrate_errors_seen;
	m->migrate_errors_seen = m->migrate_errors;
	uint8_t *fresh = calloc(n ? n : 1, 1);
	if (!fresh)
		all = true;
	for (size_t j = 0; j < n && fresh; j++) {
		const struct mn_cfg *o = mn_find(m->mns, m->n_mns, mns[j].hoa);
		fresh[j] = !o || memcmp(o->id, mns[j].id, sizeof(o->id));
	}
	free(m->mns);
	m->mns = mns;
	m->n_mns = n;
	mn_slots_mark(ctx, m);
	for (size_t j = 0; j < n; j++)
		if (all || fresh[j])
			keep_home(ctx, &mns[j]);
	free(fresh);
}

/* ---- the control thread ---- */

static void handle_bu(struct dp_ctx *ctx, const struct mq_msg *q)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_ha_result res;
	uint8_t ba[MIP6_BA_MAX_LEN];
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];
	int n;

	mip6_ha_input(m->ha, q->pkt, q->len, q->sa_id, now_ms(), &res);
	if (res.drop != MIP6_DROP_NONE) {
		dp_log(LOG_INFO, "home agent: Binding Update dropped: %s", mip6_drop_name(res.drop));
		return;
	}
	switch (res.change) {
	case MIP6_CHANGE_NEW:
		dp_log(LOG_NOTICE, "home agent: %s registered at %s for %u s", a6(res.hoa, h), a6(res.coa, c),
		       res.lifetime_s);
		binding_up(ctx, res.hoa, res.coa, true);
		break;
	case MIP6_CHANGE_MOVE:
		dp_log(LOG_NOTICE, "home agent: %s moved to %s", a6(res.hoa, h), a6(res.coa, c));
		binding_up(ctx, res.hoa, res.coa, false);
		break;
	case MIP6_CHANGE_DELETE:
		dp_log(LOG_NOTICE, "home agent: %s deregistered", a6(res.hoa, h));
		binding_down(ctx, res.hoa);
		break;
	default:
		if (res.ba.status >= 128)
			dp_log(LOG_INFO, "home agent: Binding Update of %s refused: %s", a6(res.hoa, h),
			       mip6_status_name(res.ba.status));
		break;
	}
	n = mip6_ha_build_ba(m->ha, &res, ba, sizeof(ba));
	if (n > 0 && !m->sync_due && !m->ba.n) {
		out_push(ctx, ba, (uint32_t)n); /* nothing moved: no republication to wait for */
	} else if (n > 0 && (uint32_t)n <= MQ_PKT && m->ba.n < MQ_LEN) {
		struct mq_msg *d = &m->ba.m[m->ba.n++];
		d->len = (uint32_t)n;
		d->sa_id = 0;
		memcpy(d->pkt, ba, (size_t)n);
	} else if (n > 0) {
		atomic_fetch_add_explicit(&m->out_full, 1, memory_order_relaxed);
	}
}

/* The end of a batch: republish the SA table if tunnels moved (an RCU grace period: no worker
 * encrypts towards an old care-of address any more), then queue the batch's acknowledgements. */
static void flush_moves(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	if (m->sync_due) {
		int r = dp_sa_sync(ctx);

		m->sync_due = false;
		m->republished++;
		if (r)
			dp_log(LOG_WARNING, "home agent: SA table not republished after moving tunnels: %s",
			       strerror(-r));
	}
	for (unsigned i = 0; i < m->ba.n; i++)
		out_push(ctx, m->ba.m[i].pkt, m->ba.m[i].len);
	m->ba.n = 0;
}

void dp_mip6_run(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	uint64_t v, now = now_ms();

	if (!m)
		return;
	if (read(m->in_fd, &v, sizeof(v)) < 0) {
		/* nothing signalled: a periodic call */
	}
	sync_config(ctx);
	for (;;) {
		struct mq_msg q;

		if (m->ba.n == MQ_LEN)
			flush_moves(ctx); /* a batch holds at most MQ_LEN acknowledgements */
		pthread_mutex_lock(&m->lock);
		if (!m->in.n) {
			pthread_mutex_unlock(&m->lock);
			break;
		}
		q.len = m->in.m[m->in.head].len;
		q.sa_id = m->in.m[m->in.head].sa_id;
		memcpy(q.pkt, m->in.m[m->in.head].pkt, q.len);
		m->in.head = (m->in.head + 1) % MQ_LEN;
		m->in.n--;
		pthread_mutex_unlock(&m->lock);
		if (m->ha)
			handle_bu(ctx, &q);
	}
	if (m->ha && mip6_ha_next_expiry(m->ha) <= now)
		mip6_ha_expire(m->ha, now, expired_cb, ctx);
	flush_moves(ctx);
	na_run(ctx, now);
}

static void mip6_free(struct dp_mip6 *m)
{
	if (!m)
		return;
	if (m->ha)
		mip6_ha_destroy(m->ha);
	if (m->wdb)
		sadb_close(m->wdb);
	if (m->in_fd >= 0)
		close(m->in_fd);
	if (m->out_fd >= 0)
		close(m->out_fd);
	if (m->nd_fd >= 0)
		close(m->nd_fd);
	if (m->nl_fd >= 0)
		close(m->nl_fd);
	free(m->mns);
	free(m->mn_slot);
	free(m->na);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int dp_mip6_init(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = calloc(1, sizeof(*m));
	char msg[256];
	int r;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->in_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->out_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->nd_fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
	m->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (m->in_fd < 0 || m->out_fd < 0) {
		r = -errno;
		mip6_free(m);
		return r;
	}
	if (m->nd_fd >= 0) {
		int hops = 255, ifi = ctx->ifc[DP_IN].ifindex, off = 0;
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof(hops));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifi, sizeof(ifi));
		setsockopt(m->nd_fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &off, sizeof(off));
	}
	if (m->nl_fd >= 0) {
		struct timeval tv = { .tv_sec = 1 };
		setsockopt(m->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	/* The home agent moves tunnel SAs: it needs a writer handle of its own. Opened here, before
	 * any binding exists, so a SADB that refuses it is reported at start. */
	r = sadb_open(ctx->cfg.sadb_path, SADB_RDWR, NULL, &m->wdb, msg, sizeof(msg));
	if (r) {
		dp_log(LOG_WARNING, "home agent: cannot open the SADB for writing (%s): mobile nodes "
		       "cannot be served", msg);
		m->wdb = NULL;
	}
	m->seen_gen = 0;
	ctx->mip6 = m;
	return 0;
}

/* After the workers have stopped. The tunnels stay where the bindings put them: a restarted
 * dataplane moves them home (sync_config). */
void dp_mip6_fini(struct dp_ctx *ctx)
{
	mip6_free(ctx->mip6);
	ctx->mip6 = NULL;
}

/* ---- the control socket's "bindings" ---- */
/* Tab-separated lines, for ipsecctl show bindings to render as text or JSON:
 *   home-agent ADDR LINK MAX_LIFETIME MOBILE_NODES PREFIX[,PREFIX...]     (absent: no home agent)
 *   binding HOA COA SEQ LIFETIME LEFT AGE TO_MN_PACKETS TO_MN_BYTES FROM_MN_PACKETS FROM_MN_BYTES
 *   counter NAME VALUE        rejected STATUS COUNT        dropped REASON COUNT
 *   end */

struct ctl_buf {
	char *p;
	size_t left;
};

static void put(struct ctl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->p, b->left, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->left)
		n = b->left ? (int)b->left - 1 : 0;
	b->p += n;
	b->left -= (size_t)n;
}

struct bind_walk {
	struct dp_ctx *ctx;
	struct ctl_buf *b;
	uint64_t now;
};

static void rt_put(struct bind_walk *k, uint32_t id)
{
	struct sadb_runtime *rt = id ? sadb_runtime(k->ctx->db, id - 1) : NULL;

	put(k->b, "\t%llu\t%llu",
	    rt ? (unsigned long long)__atomic_load_n(&rt->packets, __ATOMIC_RELAXED) : 0ull,
	    rt ? (unsigned long long)__atomic_load_n(&rt->bytes, __ATOMIC_RELAXED) : 0ull);
}

static void bind_cb(const struct mip6_binding *bd, void *arg)
{
	struct bind_walk *k = arg;
	char h[INET6_ADDRSTRLEN], c[INET6_ADDRSTRLEN];
	uint64_t left = bd->expires_ms > k->now ? (bd->expires_ms - k->now + 999) / 1000 : 0;

	put(k->b, "binding\t%s\t%s\t%u\t%u\t%llu\t%llu", a6(bd->hoa, h), a6(bd->coa, c), bd->seq,
	    bd->lifetime_s, (unsigned long long)left, (unsigned long long)((k->now - bd->created_ms) / 1000));
	rt_put(k, bd->mn ? bd->mn->tun_out_sa : 0);
	rt_put(k, bd->mn ? bd->mn->tun_in_sa : 0);
	put(k->b, "\n");
}

size_t dp_mip6_ctl_cap(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);

	/* a binding line is at most two addresses and eight numbers (under 220 bytes); the home
	 * agent, counter and drop lines fit in the rest */
	return 16384 + (m && m->ha ? (size_t)mip6_ha_count(m->ha) * 256 : 0);
}

size_t dp_mip6_ctl(struct dp_ctx *ctx, char *buf, size_t len)
{
	struct dp_mip6 *m = M(ctx);
	struct ctl_buf b = { buf, len };
	char a[INET6_ADDRSTRLEN];

	if (!m || !m->ha) {
		put(&b, "end\n");
		return (size_t)(b.p - buf);
	}
	const struct mip6_ha_stats *st = mip6_ha_stats(m->ha);
	put(&b, "home-agent\t%s\t%s\t%u\t%zu\t", a6(m->rec.addr.a.b, a), ctx->ifc[DP_IN].name,
	    m->rec.max_lifetime, m->n_mns);
	for (unsigned i = 0; i < m->rec.n_prefix; i++)
		put(&b, "%s%s/%u", i ? "," : "", a6(m->rec.prefix[i].a.b, a), m->rec.plen[i]);
	put(&b, "\n");
	struct bind_walk k = { ctx, &b, now_ms() };
	mip6_ha_foreach(m->ha, bind_cb, &k);
	const struct { const char *name; uint64_t v; } c[] = {
		{ "bu_received", st->bu_received }, { "bu_accepted", st->bu_accepted },
		{ "bu_rejected", st->bu_rejected }, { "bu_dropped", st->dropped }, { "ba_sent", st->ba_sent },
		{ "bindings_added", st->bindings_added }, { "bindings_refreshed", st->bindings_refreshed },
		{ "bindings_moved", st->bindings_moved }, { "bindings_deleted", st->bindings_deleted },
		{ "bindings_expired", st->bindings_expired }, { "proxy_na_sent", m->na_sent },
		{ "nd_errors", m->nd_errors }, { "migrations", m->migrations },
		{ "republished", m->republished },
		{ "migrate_errors", m->migrate_errors }, { "mobile_nodes_refused", m->refused_mns },
		{ "queue_taken", atomic_load(&m->taken) }, { "queue_full_in", atomic_load(&m->in_full) },
		{ "queue_full_out", atomic_load(&m->out_full) },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		put(&b, "counter\t%s\t%llu\n", c[i].name, (unsigned long long)c[i].v);
	for (unsigned s = 128; s < 256; s++)
		if (st->rejected[s])
			put(&b, "rejected\t%u\t%llu\n", s, (unsigned long long)st->rejected[s]);
	for (unsigned d = 1; d < MIP6_DROP_MAX; d++)
		if (st->drops[d])
			put(&b, "dropped\t%s\t%llu\n", mip6_drop_name(d), (unsigned long long)st->drops[d]);
	put(&b, "end\n");
	return (size_t)(b.p - buf);
}
