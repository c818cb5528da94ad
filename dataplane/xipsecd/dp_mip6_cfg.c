/* dataplane/xipsecd/dp_mip6_cfg.c: the Mobile IPv6 home agent's configuration, on the control thread.
 * It comes from the SADB: the home agent records (sadb_home_agent_get; one per home agent address,
 * each with its home prefixes: a mobile node is served on the record whose prefix holds its home
 * address) and the mobile nodes' SAs
 * (SADB_SAF_MOBILE; ipsecctl's mobile-node statement makes them): per home address an inbound
 * transport SA its Binding Updates arrive on, an outbound transport SA for the acknowledgements, and
 * a pair of tunnel SAs. Each change of the SADB is followed: a changed home agent record ends every
 * binding (the records are one home agent: libmip6's configuration), a mobile node whose SAs
 * changed loses its binding (it registers again; an IKE-keyed one whose CHILD_SAs were rekeyed
 * keeps it: dp_mip6_ike.c), and a mobile node
 * without a binding is held at home (its tunnel's peer is its home address), after a restart too. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"
#include "dataplane/xipsecd/dp_seqmark.h"

/* One mobile node's SA as read_mns sees it. */
struct mn_ent {
	uint8_t hoa[16];
	uint32_t role, id;
	uint32_t ike_id;          /* the IKE SA that negotiated it, 0: manual */
	uint64_t instance;        /* sadb_sa_add's: a later add has a larger one */
};

static int cmp_role(const void *a, const void *b)
{
	const struct mn_ent *x = a, *y = b;
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
		dp_mip6_tunnel_move(ctx, c->hoa, c->hoa);
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
				if (dp_mip6_nemo_pol_change(m, ctx->db, &ch[i]))
					return false;  /* a mobile router's networks */
				continue;
			default:
				return false;
			}
			if (slot >= m->mn_slot_bits)
				return false;
			was = m->mn_slot[slot / 8] & (1u << (slot % 8));
			if (sadb_sa_get(ctx->db, slot, &rec) == 0 && mn_role(&rec, &role, hoa)) {
				const struct mn_cfg *c = dp_mip6_mn_find(m->mns, m->n_mns, hoa);
				is = true;
				same = c && c->id[role] == slot + 1;
			}
			explicit_bzero(&rec, sizeof(rec));
			if (was != is || (is && !same))
				return false;
			if (is)
				keep_home(ctx, dp_mip6_mn_find(m->mns, m->n_mns, hoa));
		}
	return n == 0;
}

/* The mobile nodes the SADB's SAs describe, complete ones only (four SAs). */
static int read_mns(struct dp_ctx *ctx, struct mn_cfg **out, size_t *n_out)
{
	struct mn_ent *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	struct mn_cfg *mns;
	struct sadb_sa sa;
	uint32_t cur = 0, slot;

	while (sadb_sa_next(ctx->db, &cur, &sa, &slot) == 0) {
		if (!(sa.flags & SADB_SAF_MOBILE) || sa.state == SADB_STATE_LARVAL)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct mn_ent *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				explicit_bzero(&sa, sizeof(sa));
				return -ENOMEM;
			}
			v = nv;
		}
		mn_role(&sa, &v[n].role, v[n].hoa);
		v[n].id = slot + 1;
		v[n].ike_id = sa.ike_id;
		v[n].instance = sa.instance;
		n++;
	}
	explicit_bzero(&sa, sizeof(sa));
	if (n) /* a home agent with no mobile node yet: v is NULL, which qsort may not be given */
		qsort(v, n, sizeof(*v), cmp_role);
	mns = calloc(n ? n : 1, sizeof(*mns));
	if (!mns) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct mn_cfg c;
		const struct mn_ent *by_role[ROLES] = { NULL };
		bool dup = false;

		memset(&c, 0, sizeof(c));
		memcpy(c.hoa, v[i].hoa, 16);
		/* Two SAs in one role are an IKE CHILD_SA rekey's old and new ones while both live: the
		 * newer is the one charon uses from now on. Two manual ones are a configuration error. */
		for (; j < n && !memcmp(v[j].hoa, c.hoa, 16); j++) {
			const struct mn_ent *o = by_role[v[j].role];

			if (o && !(o->ike_id && v[j].ike_id))
				dup = true;
			if (!o || v[j].instance > o->instance)
				by_role[v[j].role] = &v[j];
		}
		c.ike = true;
		for (unsigned r = 0; r < ROLES; r++) {
			c.id[r] = by_role[r] ? by_role[r]->id : 0;
			c.ike &= by_role[r] && by_role[r]->ike_id;
		}
		if (by_role[ROLE_BU] && by_role[ROLE_BA] && by_role[ROLE_TUN_OUT] && by_role[ROLE_TUN_IN] && !dup)
			mns[k++] = c;
		i = j;
	}
	free(v);
	if (dp_mip6_nemo_read(ctx, mns, k)) {
		free(mns);
		return -ENOMEM;
	}
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
			dp_mip6_binding_down(ctx, m->mns[i].hoa);
	m->n_dad = 0;  /* their decisions name this home agent's state */
	m->n_rec = 0;
	dp_mip6_nd_unlink(ctx);
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

static bool recs_same(const struct sadb_home_agent *a, unsigned na, const struct sadb_home_agent *b,
		      unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++)
		if (!rec_same(&a[i], &b[i]))
			return false;
	return true;
}

/* The SADB's home agent records this home agent serves, in record order: those on the inside
 * interface (xipsecd has one home link); another link's is logged once and left out. */
static unsigned read_recs(struct dp_ctx *ctx, struct sadb_home_agent *out)
{
	struct dp_mip6 *m = M(ctx);
	bool other_link = false;
	unsigned n = 0;

	for (unsigned idx = 0; idx < SADB_HA_MAX; idx++) {
		if (sadb_home_agent_get(ctx->db, idx, &out[n]))
			continue;
		if (out[n].link[0] && strcmp(out[n].link, ctx->ifc[DP_IN].name)) {
			if (!m->warned_link)
				dp_log(LOG_ERR, "home agent record %u: home link %s is not the inside "
				       "interface %s: that home agent address stays off", idx, out[n].link,
				       ctx->ifc[DP_IN].name);
			other_link = true;
			continue;
		}
		n++;
	}
	m->warned_link = other_link;
	return n;
}

const struct sadb_home_agent *dp_mip6_rec_of(const struct dp_mip6 *m, const uint8_t hoa[16])
{
	for (unsigned r = 0; r < m->n_rec; r++)
		for (unsigned i = 0; i < m->rec[r].n_prefix && i < SADB_HA_MAX_PREFIX; i++) {
			unsigned len = m->rec[r].plen[i], k = 0;

			for (; k < len && !((hoa[k / 8] ^ m->rec[r].prefix[i].a.b[k / 8]) &
					    (0x80 >> (k % 8))); k++)
				;
			if (k == len)
				return &m->rec[r];
		}
	return NULL;
}

/* The state directory (dp_seqmark.c), opened when first needed; -1 while it cannot be. */
static int state_dir(struct dp_mip6 *m)
{
	char msg[256];

	if (m->state_fd < 0) {
		m->state_fd = sadb_state_dir_open(NULL, true, msg, sizeof(msg));
		if (m->state_fd < 0)
			dp_log(LOG_ERR, "home agent: state directory: %s", msg);
	}
	return m->state_fd;
}

/* libmip6's seq_store: each mobile node's last accepted Binding Update sequence number, on disk
 * before anything changes and before the acknowledgement goes (mip6_ha.c says why). */
static int bu_seq_store(void *arg, const uint8_t hoa[16], uint16_t seq)
{
	struct dp_mip6 *m = arg;
	char msg[256], b[INET6_ADDRSTRLEN];
	int r = dp_seqmark_bu_store(state_dir(m), hoa, seq, msg, sizeof(msg));

	if (r)
		dp_log(LOG_ERR, "home agent: Binding Update %u of %s refused (130): its sequence number "
		       "cannot be recorded: %s", seq, a6(hoa, b), msg);
	return r;
}

/* After a restart or reboot: a mobile node's Binding Updates continue above the last one accepted
 * (mip6_ha_seq_restore). None recorded: a mobile node that never registered here, or a lost file;
 * either way its Binding Updates still arrive only on an SA whose window is held under a ceiling
 * on disk (dp_seqmark.c), which refuses a recorded one. */
static void bu_seq_restore(struct dp_mip6 *m, const uint8_t hoa[16])
{
	char msg[256], b[INET6_ADDRSTRLEN];
	uint16_t seq;
	int r = dp_seqmark_bu_load(state_dir(m), hoa, &seq, msg, sizeof(msg));

	if (!r)
		mip6_ha_seq_restore(m->ha, hoa, seq);
	else if (r != -ENOENT)
		dp_log(LOG_ERR, "home agent: last Binding Update of %s: %s", a6(hoa, b), msg);
}

/* One home agent for the records rec[0..n): libmip6 holds each mobile node to its record's address
 * (mip6_mn.ha_addr) and to its record's longest lifetime (mip6_mn.max_lifetime_s); the
 * configuration's is the longest of them. */
static int ha_create(struct dp_ctx *ctx, const struct sadb_home_agent *rec, unsigned n)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_ha_config cfg;
	char b[INET6_ADDRSTRLEN];
	unsigned np = 0;
	int r;

	_Static_assert(SADB_HA_MAX <= MIP6_HA_MAX_ADDRS &&
		       SADB_HA_MAX * SADB_HA_MAX_PREFIX <= MIP6_HA_MAX_PREFIXES,
		       "libmip6 holds every address and prefix of the SADB's home agent records");
	memset(&cfg, 0, sizeof(cfg));
	for (unsigned h = 0; h < n && h < MIP6_HA_MAX_ADDRS; h++) {
		memcpy(cfg.ha_addrs[h], rec[h].addr.a.b, 16);
		cfg.n_ha_addrs++;
		for (unsigned i = 0; i < rec[h].n_prefix && np < MIP6_HA_MAX_PREFIXES; i++, np++) {
			memcpy(cfg.prefixes[np].addr, rec[h].prefix[i].a.b, 16);
			cfg.prefixes[np].len = rec[h].plen[i];
		}
		if (rec[h].max_lifetime > cfg.max_lifetime_s)
			cfg.max_lifetime_s = rec[h].max_lifetime;
	}
	cfg.n_prefixes = np;
	cfg.refresh_s = ctx->cfg.mip6_refresh_s;  /* Binding Refresh Advice (xipsecd --mip6-refresh-advice) */
	cfg.max_mns = 1u << 16;
	cfg.hash_seed = (uint32_t)dp_now_ns();
	cfg.seq_store = bu_seq_store;
	cfg.seq_arg = m;
	r = mip6_ha_create(&cfg, &m->ha);
	if (r) {
		dp_log(LOG_ERR, "home agent: configuration refused: %s", strerror(-r));
		return r;
	}
	dp_mip6_nd_link(ctx);
	memcpy(m->rec, rec, n * sizeof(*rec));
	m->n_rec = n;
	for (unsigned h = 0; h < n; h++)
		dp_log(LOG_NOTICE, "home agent %s on %s: %u home prefix(es), bindings up to %u s",
		       a6(rec[h].addr.a.b, b), ctx->ifc[DP_IN].name, rec[h].n_prefix, rec[h].max_lifetime);
	return 0;
}

/* Bring the home agent in step with the SADB: its record, and the mobile nodes the SAs describe. A
 * mobile node whose SAs changed loses its binding (it registers again); one whose SAs are unchanged
 * keeps it. */
void dp_mip6_sync_config(struct dp_ctx *ctx)
{
	struct dp_mip6 *m = M(ctx);
	struct sadb_home_agent rec[SADB_HA_MAX];
	struct mn_cfg *mns;
	size_t n;
	uint64_t g = ctx->sadb_gen;
	unsigned n_rec;
	int r;

	if (g == m->seen_gen)
		return;
	n_rec = read_recs(ctx, rec);
	r = n_rec ? 0 : -ENOENT;
	if (r == 0 && m->ha && !recs_same(rec, n_rec, m->rec, m->n_rec))
		teardown_all(ctx);
	if (r != 0 && m->ha) {
		dp_log(LOG_NOTICE, "home agent: removed from the configuration");
		teardown_all(ctx);
	}
	if (r == 0 && !m->ha && ha_create(ctx, rec, n_rec) != 0) {
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
		const struct mn_cfg *o = &m->mns[i], *nw = dp_mip6_mn_find(mns, n, o->hoa);
		if (nw && !memcmp(nw->id, o->id, sizeof(o->id)) && dp_mip6_nemo_same(o, nw))
			continue;
		if (nw && dp_mip6_ike_rekeyed(ctx, o, nw))
			continue;
		if (mip6_ha_lookup(m->ha, o->hoa))
			dp_mip6_binding_down(ctx, o->hoa);
		mip6_ha_mn_remove(m->ha, o->hoa, NULL);
	}
	for (size_t j = 0; j < n; j++) {
		struct mip6_mn mn;
		char b[INET6_ADDRSTRLEN];

		if (mip6_ha_mn_find(m->ha, mns[j].hoa))
			continue;
		memset(&mn, 0, sizeof(mn));
		memcpy(mn.hoa, mns[j].hoa, 16);
		/* served on its record's address alone (133 on another's); none: refused as in no
		 * home prefix (132) */
		const struct sadb_home_agent *hr = dp_mip6_rec_of(m, mns[j].hoa);
		if (hr) {
			memcpy(mn.ha_addr, hr->addr.a.b, 16);
			mn.max_lifetime_s = hr->max_lifetime;
		}
		mn.bu_sa = mns[j].id[ROLE_BU];
		mn.ba_sa = mns[j].id[ROLE_BA];
		mn.tun_out_sa = mns[j].id[ROLE_TUN_OUT];
		mn.tun_in_sa = mns[j].id[ROLE_TUN_IN];
		mn.key_mobility = mns[j].ike;
		mn.router = mns[j].n_mnp > 0;
		mn.n_mnp = mns[j].n_mnp;
		memcpy(mn.mnp, mns[j].mnp, sizeof(mn.mnp));
		r = mip6_ha_mn_add(m->ha, &mn);
		if (r) {
			m->refused_mns++;
			dp_log(LOG_WARNING, "home agent: mobile node %s refused: %s", a6(mn.hoa, b), strerror(-r));
		} else {
			bu_seq_restore(m, mn.hoa);
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
		const struct mn_cfg *o = dp_mip6_mn_find(m->mns, m->n_mns, mns[j].hoa);
		fresh[j] = !o || memcmp(o->id, mns[j].id, sizeof(o->id));
	}
	free(m->mns);
	m->mns = mns;
	m->n_mns = n;
	mn_slots_mark(ctx, m);
	for (size_t j = 0; j < n; j++) {
		const struct mip6_binding *b = mip6_ha_lookup(m->ha, mns[j].hoa);

		if (b && (!fresh || fresh[j])) /* a rekey's new tunnel SAs join the binding */
			dp_mip6_tunnel_move(ctx, mns[j].hoa, b->coa);
		else if (b && mns[j].n_mnp) /* a router's routes as registered (a reload took them) */
			dp_mip6_nemo_refresh(ctx, &mns[j]);
		else if (all || fresh[j])
			keep_home(ctx, &mns[j]);
	}
	free(fresh);
}
