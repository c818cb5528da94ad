/* mobility/mip6_ha.c: the home agent's rules and binding cache (mip6_ha.h): the checks of RFC 6275
 * §9.5.1 that apply to a home agent, home registration (§10.3.1) and deregistration (§10.3.2), the
 * Binding Acknowledgement each answer carries, the binding cache (a hash table of home address ->
 * mobile node with its binding, and a heap of expiry times), and the counters.
 *
 * Security argument. A binding redirects a home address's traffic to a care-of address, so the one
 * thing to prevent is a binding nobody authorised.
 *  - An outside attacker (no keys) can forge, replay or modify Binding Updates. Every Binding Update
 *    must arrive under ESP (RFC 3776 §4, RFC 4877) on the very SA configured as that home address's
 *    signalling SA; anything unprotected, or protected by some other SA, is dropped unanswered
 *    (UNPROTECTED, WRONG_SA), so no answer leaks which home addresses exist. A modified Home
 *    Address option (outside ESP) names a different home address; that address's own SA is not the
 *    one the packet came on: WRONG_SA. A replayed packet is stopped by ESP's anti-replay window
 *    before it gets here (doc/architecture.md rule 2), and a replayed Binding Update that got through
 *    some other way would fail the sequence check below (135, no change).
 *  - The care-of address. ESP in transport mode authenticates the Mobility Header, not the IPv6
 *    header in front of it, so the outer source is whatever the last router on the path wrote: an
 *    on-path attacker who rewrote the source of a fresh Binding Update (or raced a rewritten copy
 *    ahead of it, which the genuine one then loses to the replay window) would move the binding, the
 *    tunnel SAs and the BA to an address of its choice. The Alternate Care-of Address option is inside
 *    the ICV, which is why RFC 3776 §3.1 has the mobile node carry its care-of address there. Taking
 *    that option alone is not enough either: an authenticated mobile node could then name any address
 *    and have its home traffic (far more than its Binding Updates) tunnelled onto a victim. So a home
 *    registration that creates or moves a binding, or refreshes it, must carry the option AND the
 *    option must equal the outer source: the mobile node vouches for the address (ICV), and the path
 *    shows the packet did leave from it. Either failing is rejected with 174 "invalid care-of
 *    address", the registry's status for exactly this (128 "reason unspecified" would tell the mobile
 *    node nothing; 129 "administratively prohibited" would make it stop trying this home agent when
 *    the fault may be a router rewriting its source), counted as NO_ALT_COA / ALT_COA_NOT_SRC, and
 *    nothing changes. The BA goes, like every BA (§9.5.4), to the source: protected by the mobile
 *    node's SA, no larger than the Binding Update and one per Binding Update, it is no amplifier, and
 *    an attacker able to rewrite that source can send its victim such a packet directly.
 *    Residual: the check proves that the packet left the care-of address, not that whoever sent it
 *    can receive there (no return routability test for home registrations); a mobile node can still
 *    register an address it spoofs on its own access link if that link lets it spoof (BCP 38 is the
 *    access network's to enforce). And an on-path attacker can still deny service: drop the Binding
 *    Updates, or race a rewritten copy that is refused and burns the genuine one's ESP sequence
 *    number; it could drop the traffic anyway.
 *  - Deregistration (lifetime 0, or care-of address = home address, §10.3.2) redirects nothing: the
 *    home address's traffic comes back to the home link, where it belongs. Its lifetime 0 is inside
 *    the ICV. A mobile node back at home deregisters from its home address with no Home Address
 *    option and need not send the Alternate Care-of Address option (§11.5.4), so a deregistration is
 *    taken without it, and an option that differs from the source is not held against it either (the
 *    binding goes whichever address the mobile node thinks it is at). Could an attacker turn a
 *    registration into a deregistration by rewriting the source to the home address and stripping
 *    the Home Address option? Only one without the Alternate CoA option: with it the care-of address
 *    is the option's, not the home address, and the registration is refused (174). A registration
 *    without it is refused anyway, so the residual is that a mobile node that does not follow RFC
 *    3776 can have its binding deleted by an on-path attacker, who could as well drop its traffic.
 *  - A mobile node (a "local user" holding one SA's keys) can register only its own home address,
 *    and only to a unicast routable care-of address that is neither in a home prefix nor one of the
 *    home agent's addresses (no loops through the home link, no binding of the home agent onto
 *    itself). It can fill at most its own one binding; the cache's size bounds everything else
 *    (status 130 beyond max_bindings).
 *  - One mobile node must not starve the others: every new binding and every move is a migration of
 *    its tunnel SAs (a SADB transaction) and a log line. A token bucket per mobile node (move_burst
 *    back to back, then one per move_interval_ms; 4 and 1 s by default: a node that really moves
 *    changes links seconds apart at the fastest) paces them; over it the Binding Update is rejected
 *    with 130 "insufficient resources", which tells the mobile node to retry later (129 would tell it
 *    to stop), counted as MOVE_RATE. Refreshes of the same care-of address cost no migration and are
 *    never paced; nor are deregistrations (a mobile node back home must be able to leave), and one
 *    deregistration follows at most one paced registration, so churn is bounded at two changes per
 *    token. The bucket lives with the mobile node, not its binding, so deregistering does not refill
 *    it. Residual: a restart of the home agent gives every mobile node a full bucket again.
 *  - A restart of the home agent loses the cache, and a reboot the SADB's runtime area with the
 *    replay windows in it: without more, the next Binding Update would be accepted with any
 *    sequence number (there is no previous one, §9.5.1), a recorded one included, and bind the
 *    home address to an old care-of address. Two things stop that. The window of a manually keyed
 *    SA is held under a ceiling on disk (xipsecd's dp_seqmark.c), so the recorded packet itself is
 *    a replay. And the caller records each mobile node's last accepted sequence number before
 *    anything changes (mip6_ha_config.seq_store, 130 when it cannot) and hands it back after a
 *    restart (mip6_ha_seq_restore): until the mobile node is accepted again, a Binding Update not
 *    newer than that is rejected with 135 naming it (§9.5.1 would accept any number without a
 *    cache entry; the mobile node takes the number from the BA and goes on above it, §11.7.3),
 *    bound or not. That second guard also holds for an SA without a window. Residual: the number
 *    has 16 bits, so a Binding Update recorded 32,768 or more Binding Updates ago looks newer
 *    again; the ESP window (32 or 64 bits) is what stops that one. The mobile node re-registers
 *    before its lifetime ends; until then its traffic is not tunnelled, which fails closed.
 * The hash of home addresses is seeded, but only configured mobile nodes are ever inserted, so an
 * outsider cannot choose the keys anyway. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mobility/mip6_ha.h"

#define NONE UINT32_MAX
#define MAX_MNS (1u << 24)
#define MAX_LIFETIME_UNITS 65535u
#define MOVE_BURST_DEFAULT 4u
#define MOVE_BURST_MAX 1024u
#define MOVE_INTERVAL_DEFAULT_MS 1000u
#define MOVE_INTERVAL_MAX_MS 3600000u

struct ent {
	struct mip6_mn mn;
	struct mip6_binding b;
	uint32_t next;      /* hash chain, or the free list */
	uint32_t heap_pos;  /* index in heap[] while bound */
	/* The move bucket as one time (GCRA): when it will be full again. A move is allowed while it
	 * is less than a whole burst ahead of now, and takes it one interval further. */
	uint64_t full_at_ms;
	bool used, bound;
	bool seq_restored;     /* restored_seq binds until a Binding Update is accepted */
	uint16_t restored_seq; /* mip6_ha_seq_restore */
	struct mip6_mn_stats st;
};

struct mip6_ha {
	struct mip6_ha_config cfg;
	uint32_t max_bindings;
	uint16_t max_units;
	struct ent *ents;
	uint32_t *buckets;
	uint32_t mask;
	uint32_t free_head;
	uint32_t n_mns;
	uint32_t *heap;     /* bound entries, min-heap on b.expires_ms */
	uint32_t n_bound;
	struct mip6_ha_stats st;
};

static const struct {
	const char *name;
	uint8_t status;
} reject_tab[MIP6_REJECT_MAX] = {
	[MIP6_REJECT_NONE] = { "none", MIP6_ST_ACCEPTED },
	[MIP6_REJECT_SEQ] = { "sequence", MIP6_ST_SEQ_OUT_OF_WINDOW },
	[MIP6_REJECT_NOT_HOME_REG] = { "not-home-registration", MIP6_ST_HR_NOT_SUPPORTED },
	[MIP6_REJECT_REG_TYPE_CHANGE] = { "registration-type-change", MIP6_ST_REG_TYPE_CHANGE },
	[MIP6_REJECT_DISABLED] = { "disabled", MIP6_ST_PROHIBITED },
	[MIP6_REJECT_MOBILE_ROUTER] = { "mobile-router", MIP6_ST_MR_NOT_PERMITTED },
	[MIP6_REJECT_NOT_HOME_SUBNET] = { "not-home-subnet", MIP6_ST_NOT_HOME_SUBNET },
	[MIP6_REJECT_OTHER_HA_ADDR] = { "other-home-agent-address", MIP6_ST_NOT_HA_FOR_MN },
	[MIP6_REJECT_DEREG_UNBOUND] = { "deregistration-unbound", MIP6_ST_NOT_HA_FOR_MN },
	[MIP6_REJECT_COA_AT_HOME] = { "care-of-at-home", MIP6_ST_UNSPECIFIED },
	[MIP6_REJECT_NO_ALT_COA] = { "no-alt-coa", MIP6_ST_INVALID_COA },
	[MIP6_REJECT_ALT_COA_NOT_SRC] = { "alt-coa-not-source", MIP6_ST_INVALID_COA },
	[MIP6_REJECT_CACHE_FULL] = { "cache-full", MIP6_ST_INSUFFICIENT },
	[MIP6_REJECT_MOVE_RATE] = { "move-rate", MIP6_ST_INSUFFICIENT },
	[MIP6_REJECT_SEQ_STORE] = { "sequence-store", MIP6_ST_INSUFFICIENT },
	[MIP6_REJECT_INVALID_PREFIX] = { "invalid-prefix", MIP6_ST_INVALID_PREFIX },
	[MIP6_REJECT_PREFIX_NOT_OWNED] = { "prefix-not-owned", MIP6_ST_PREFIX_NOT_AUTH },
	[MIP6_REJECT_NO_PREFIX] = { "no-prefix", MIP6_ST_FWD_SETUP_FAILED },
	[MIP6_REJECT_TOO_MANY_PREFIXES] = { "too-many-prefixes", MIP6_ST_INSUFFICIENT },
};

const char *mip6_reject_name(unsigned why)
{
	return why < MIP6_REJECT_MAX ? reject_tab[why].name : "?";
}

uint8_t mip6_reject_status(unsigned why)
{
	return why < MIP6_REJECT_MAX ? reject_tab[why].status : MIP6_ST_UNSPECIFIED;
}

const char *mip6_change_name(unsigned change)
{
	static const char *const n[] = { "none", "new", "refresh", "move", "delete" };
	return change <= MIP6_CHANGE_DELETE ? n[change] : "?";
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

static uint32_t hash(const struct mip6_ha *ha, const uint8_t a[16])
{
	uint64_t x, y;
	memcpy(&x, a, 8);
	memcpy(&y, a + 8, 8);
	return (uint32_t)fmix64(fmix64(x ^ ha->cfg.hash_seed) ^ y) & ha->mask;
}

static uint32_t find(const struct mip6_ha *ha, const uint8_t a[16])
{
	for (uint32_t i = ha->buckets[hash(ha, a)]; i != NONE; i = ha->ents[i].next)
		if (!memcmp(ha->ents[i].mn.hoa, a, 16))
			return i;
	return NONE;
}

/* ---- the expiry heap ---- */

static bool earlier(const struct mip6_ha *ha, uint32_t i, uint32_t j)
{
	return ha->ents[ha->heap[i]].b.expires_ms < ha->ents[ha->heap[j]].b.expires_ms;
}

static void heap_swap(struct mip6_ha *ha, uint32_t i, uint32_t j)
{
	uint32_t t = ha->heap[i];
	ha->heap[i] = ha->heap[j];
	ha->heap[j] = t;
	ha->ents[ha->heap[i]].heap_pos = i;
	ha->ents[ha->heap[j]].heap_pos = j;
}

static void heap_fix(struct mip6_ha *ha, uint32_t i)
{
	while (i > 0 && earlier(ha, i, (i - 1) / 2)) {
		heap_swap(ha, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < ha->n_bound && earlier(ha, l, m))
			m = l;
		if (r < ha->n_bound && earlier(ha, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(ha, i, m);
		i = m;
	}
}

static void bind(struct mip6_ha *ha, uint32_t idx)
{
	struct ent *e = &ha->ents[idx];
	e->bound = true;
	e->heap_pos = ha->n_bound;
	ha->heap[ha->n_bound++] = idx;
	heap_fix(ha, e->heap_pos);
}

static void unbind(struct mip6_ha *ha, uint32_t idx)
{
	struct ent *e = &ha->ents[idx];
	uint32_t pos = e->heap_pos, last = --ha->n_bound;
	if (pos != last) {
		heap_swap(ha, pos, last);
		heap_fix(ha, pos);
	}
	e->bound = false;
	memset(&e->b, 0, sizeof(e->b));
}

/* ---- configuration ---- */

static bool is_zero(const uint8_t a[16])
{
	static const uint8_t z[16];
	return !memcmp(a, z, 16);
}

static bool is_ha_addr(const struct mip6_ha *ha, const uint8_t a[16])
{
	for (unsigned i = 0; i < ha->cfg.n_ha_addrs; i++)
		if (!memcmp(ha->cfg.ha_addrs[i], a, 16))
			return true;
	return false;
}

static bool prefix_match(const struct mip6_prefix *p, const uint8_t a[16])
{
	unsigned bytes = p->len / 8, bits = p->len % 8;
	if (memcmp(p->addr, a, bytes))
		return false;
	if (!bits)
		return true;
	uint8_t m = (uint8_t)(0xff << (8 - bits));
	return (p->addr[bytes] & m) == (a[bytes] & m);
}

/* A unicast prefix of 1 to 128 bits without host bits: one a mobile router may own. */
static bool mnp_valid(const uint8_t a[16], unsigned len)
{
	if (len < 1 || len > 128 || !mip6_addr_unicast_routable(a))
		return false;
	for (unsigned bit = len; bit < 128; bit++)
		if (a[bit / 8] & (0x80 >> (bit % 8)))
			return false;
	return true;
}

static bool in_home_prefix(const struct mip6_ha *ha, const uint8_t a[16])
{
	for (unsigned i = 0; i < ha->cfg.n_prefixes; i++)
		if (prefix_match(&ha->cfg.prefixes[i], a))
			return true;
	return false;
}

int mip6_ha_create(const struct mip6_ha_config *cfg, struct mip6_ha **out)
{
	*out = NULL;
	if (cfg->n_ha_addrs < 1 || cfg->n_ha_addrs > MIP6_HA_MAX_ADDRS || cfg->n_prefixes < 1 ||
	    cfg->n_prefixes > MIP6_HA_MAX_PREFIXES || cfg->max_lifetime_s < 4 ||
	    cfg->max_lifetime_s > 4 * MAX_LIFETIME_UNITS || cfg->max_mns < 1 || cfg->max_mns > MAX_MNS ||
	    cfg->max_bindings > cfg->max_mns || cfg->move_burst > MOVE_BURST_MAX ||
	    cfg->move_interval_ms > MOVE_INTERVAL_MAX_MS)
		return -EINVAL;
	for (unsigned i = 0; i < cfg->n_ha_addrs; i++)
		if (!mip6_addr_unicast_routable(cfg->ha_addrs[i]))
			return -EINVAL;
	for (unsigned i = 0; i < cfg->n_prefixes; i++)
		if (cfg->prefixes[i].len < 1 || cfg->prefixes[i].len > 128)
			return -EINVAL;
	struct mip6_ha *ha = calloc(1, sizeof(*ha));
	if (!ha)
		return -ENOMEM;
	ha->cfg = *cfg;
	if (!ha->cfg.move_burst)
		ha->cfg.move_burst = MOVE_BURST_DEFAULT;
	if (!ha->cfg.move_interval_ms)
		ha->cfg.move_interval_ms = MOVE_INTERVAL_DEFAULT_MS;
	ha->max_bindings = cfg->max_bindings ? cfg->max_bindings : cfg->max_mns;
	ha->max_units = (uint16_t)(cfg->max_lifetime_s / 4);
	uint32_t nb = 1;
	while (nb < cfg->max_mns)
		nb <<= 1;
	ha->mask = nb - 1;
	ha->ents = calloc(cfg->max_mns, sizeof(*ha->ents));
	ha->buckets = malloc((size_t)nb * sizeof(*ha->buckets));
	ha->heap = malloc((size_t)cfg->max_mns * sizeof(*ha->heap));
	if (!ha->ents || !ha->buckets || !ha->heap) {
		mip6_ha_destroy(ha);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nb; i++)
		ha->buckets[i] = NONE;
	for (uint32_t i = 0; i < cfg->max_mns; i++)
		ha->ents[i].next = i + 1 < cfg->max_mns ? i + 1 : NONE;
	ha->free_head = 0;
	*out = ha;
	return 0;
}

void mip6_ha_destroy(struct mip6_ha *ha)
{
	if (!ha)
		return;
	free(ha->ents);
	free(ha->buckets);
	free(ha->heap);
	free(ha);
}

const struct mip6_ha_config *mip6_ha_config(const struct mip6_ha *ha)
{
	return &ha->cfg;
}

int mip6_ha_mn_add(struct mip6_ha *ha, const struct mip6_mn *mn)
{
	if (!mn->bu_sa || !mip6_addr_unicast_routable(mn->hoa) ||
	    (!is_zero(mn->ha_addr) && !is_ha_addr(ha, mn->ha_addr)) || mn->n_mnp > MIP6_MAX_MNP ||
	    (mn->n_mnp && !mn->router))
		return -EINVAL;
	for (unsigned i = 0; i < mn->n_mnp; i++)
		if (!mnp_valid(mn->mnp[i].addr, mn->mnp[i].len))
			return -EINVAL;
	if (find(ha, mn->hoa) != NONE)
		return -EEXIST;
	if (ha->free_head == NONE)
		return -ENOSPC;
	uint32_t idx = ha->free_head;
	struct ent *e = &ha->ents[idx];
	ha->free_head = e->next;
	memset(e, 0, sizeof(*e));
	e->mn = *mn;
	e->used = true;
	uint32_t h = hash(ha, mn->hoa);
	e->next = ha->buckets[h];
	ha->buckets[h] = idx;
	ha->n_mns++;
	return 0;
}

int mip6_ha_mn_remove(struct mip6_ha *ha, const uint8_t hoa[16], struct mip6_binding *was)
{
	uint32_t h = hash(ha, hoa), *link = &ha->buckets[h];
	while (*link != NONE && memcmp(ha->ents[*link].mn.hoa, hoa, 16))
		link = &ha->ents[*link].next;
	if (*link == NONE)
		return -ENOENT;
	uint32_t idx = *link;
	struct ent *e = &ha->ents[idx];
	int had = e->bound;
	if (had) {
		if (was)
			*was = e->b;
		unbind(ha, idx);
		ha->st.bindings_deleted++;
	}
	*link = e->next;
	e->used = false;
	e->next = ha->free_head;
	ha->free_head = idx;
	ha->n_mns--;
	return had;
}

const struct mip6_mn *mip6_ha_mn_find(const struct mip6_ha *ha, const uint8_t hoa[16])
{
	uint32_t i = find(ha, hoa);
	return i == NONE ? NULL : &ha->ents[i].mn;
}

int mip6_ha_mn_update(struct mip6_ha *ha, const struct mip6_mn *mn)
{
	uint32_t i = find(ha, mn->hoa);

	if (!mn->bu_sa)
		return -EINVAL;
	if (i == NONE)
		return -ENOENT;
	/* in place: the binding's mn pointer stays valid */
	ha->ents[i].mn.bu_sa = mn->bu_sa;
	ha->ents[i].mn.ba_sa = mn->ba_sa;
	ha->ents[i].mn.tun_out_sa = mn->tun_out_sa;
	ha->ents[i].mn.tun_in_sa = mn->tun_in_sa;
	ha->ents[i].mn.key_mobility = mn->key_mobility;
	return 0;
}

int mip6_ha_seq_restore(struct mip6_ha *ha, const uint8_t hoa[16], uint16_t seq)
{
	uint32_t i = find(ha, hoa);

	if (i == NONE)
		return -ENOENT;
	ha->ents[i].seq_restored = true;
	ha->ents[i].restored_seq = seq;
	return 0;
}

/* ---- Binding Updates ---- */

/* §9.5.1: accepted only if greater than the last one modulo 2^16. */
static bool seq_newer(uint16_t seq, uint16_t last)
{
	uint16_t d = (uint16_t)(seq - last);
	return d >= 1 && d <= 32767;
}

static void drop(struct mip6_ha *ha, struct mip6_ha_result *res, enum mip6_drop why)
{
	res->drop = why;
	res->change = MIP6_CHANGE_NONE;
	res->lifetime_s = 0;
	ha->st.dropped++;
	ha->st.drops[why]++;
}

static void reject(struct mip6_ha *ha, struct mip6_ha_result *res, enum mip6_reject why)
{
	uint8_t status = reject_tab[why].status;

	res->reject = why;
	res->ba.status = status;
	res->ba.lifetime = 0;
	res->ba.refresh = 0;
	res->change = MIP6_CHANGE_NONE;
	res->lifetime_s = 0;
	ha->st.bu_rejected++;
	ha->st.rejected[status]++;
	ha->st.reject_why[why]++;
}

/* The entry of an authenticated Binding Update's mobile node (res->mn, set before any rejection). */
static struct ent *node_of(struct mip6_ha *ha, const struct mip6_ha_result *res)
{
	uint32_t i = res->mn ? find(ha, res->hoa) : NONE;
	return i != NONE && &ha->ents[i].mn == res->mn ? &ha->ents[i] : NULL;
}

static void reject_node(struct mip6_ha *ha, struct mip6_ha_result *res, enum mip6_reject why)
{
	struct ent *e = node_of(ha, res);

	reject(ha, res, why);
	if (e)
		e->st.bu_refused++;
}

/* Take a token from e's move bucket at now_ms, or say there is none (nothing taken). */
static bool move_take(const struct mip6_ha *ha, struct ent *e, uint64_t now_ms)
{
	uint64_t interval = ha->cfg.move_interval_ms;
	uint64_t from = e->full_at_ms > now_ms ? e->full_at_ms : now_ms;

	if (from + interval - now_ms > interval * ha->cfg.move_burst)
		return false;
	e->full_at_ms = from + interval;
	return true;
}

/* The prefixes a mobile router's registration asks for (RFC 3963 6.2). */
struct mnp_set {
	unsigned n;
	struct mip6_prefix p[MIP6_MAX_MNP];
};

/* Explicit mode: each Mobile Network Prefix option must be a unicast prefix (141) that the router
 * is configured with, same prefix and length (142: a router may not claim a network by naming a
 * longer or shorter prefix around it). Implicit mode (no option): every configured one (143 when
 * none is). */
static enum mip6_reject mnp_check(const struct mip6_mn *mn, const struct mip6_bu *bu, struct mnp_set *out)
{
	memset(out, 0, sizeof(*out));
	if (bu->n_mnp_seen > MIP6_MAX_MNP)
		return MIP6_REJECT_TOO_MANY_PREFIXES;
	if (!bu->n_mnp) {
		if (!mn->n_mnp)
			return MIP6_REJECT_NO_PREFIX;
		out->n = mn->n_mnp;
		memcpy(out->p, mn->mnp, sizeof(out->p));
		return MIP6_REJECT_NONE;
	}
	for (unsigned i = 0; i < bu->n_mnp; i++) {
		const struct mip6_mnp *q = &bu->mnp[i];
		bool owned = false;

		if (!mnp_valid(q->addr, q->len))
			return MIP6_REJECT_INVALID_PREFIX;
		for (unsigned k = 0; k < mn->n_mnp && !owned; k++)
			owned = mn->mnp[k].len == q->len && !memcmp(mn->mnp[k].addr, q->addr, 16);
		if (!owned)
			return MIP6_REJECT_PREFIX_NOT_OWNED;
		memcpy(out->p[out->n].addr, q->addr, 16);
		out->p[out->n++].len = q->len;
	}
	return MIP6_REJECT_NONE;
}

/* An accepted home registration (§10.3.1): the entry at idx gets (or keeps) its binding to coa,
 * its lifetime capped by the home agent's (and the mobile node's own cap, its home agent
 * address's), and the acknowledgement says so with a refresh interval below that lifetime. */
static void accept_binding(struct mip6_ha *ha, uint32_t idx, const struct mip6_bu *bu,
			   const uint8_t *coa, bool bound, uint64_t now_ms, struct mip6_ha_result *res)
{
	struct ent *e = &ha->ents[idx];
	struct mip6_binding *b = &e->b;
	uint16_t cap = e->mn.max_lifetime_s && e->mn.max_lifetime_s / 4 < ha->max_units ?
		       (uint16_t)(e->mn.max_lifetime_s / 4) : ha->max_units;
	uint16_t units = bu->lifetime < cap ? bu->lifetime : cap;
	uint32_t r = ha->cfg.refresh_s / 4;

	if (!bound) {
		memset(b, 0, sizeof(*b));
		memcpy(b->hoa, res->hoa, 16);
		b->created_ms = now_ms;
		b->mn = &e->mn;
		res->change = MIP6_CHANGE_NEW;
		ha->st.bindings_added++;
	} else if (memcmp(b->coa, coa, 16)) {
		memcpy(res->old_coa, b->coa, 16);
		res->change = MIP6_CHANGE_MOVE;
		ha->st.bindings_moved++;
		e->st.moves++;
	} else {
		res->change = MIP6_CHANGE_REFRESH;
		ha->st.bindings_refreshed++;
	}
	memcpy(b->coa, coa, 16);
	b->seq = bu->seq;
	b->bu_flags = bu->flags;
	b->k = res->ba.k;
	b->lifetime_s = units * 4u;
	b->updated_ms = now_ms;
	b->expires_ms = now_ms + (uint64_t)units * 4000u;
	if (bound)
		heap_fix(ha, e->heap_pos);
	else
		bind(ha, idx);

	res->lifetime_s = b->lifetime_s;
	res->ba.status = MIP6_ST_ACCEPTED;
	res->ba.lifetime = units;
	res->ba.refresh = (uint16_t)(r < units ? r : units - 1u);  /* below the lifetime (§6.2.4) */
	ha->st.bu_accepted++;
	e->st.bu_accepted++;
}

/* Record the accepted number (mip6_ha_config.seq_store) before the change: false when it could
 * not be, and then res is the rejection. */
static bool seq_stored(struct mip6_ha *ha, struct ent *e, const struct mip6_bu *bu,
		       struct mip6_ha_result *res)
{
	if (ha->cfg.seq_store && ha->cfg.seq_store(ha->cfg.seq_arg, e->mn.hoa, bu->seq)) {
		reject_node(ha, res, MIP6_REJECT_SEQ_STORE);
		return false;
	}
	e->seq_restored = false;
	return true;
}

void mip6_ha_bu(struct mip6_ha *ha, const struct mip6_pkt *p, uint32_t sa_id, uint64_t now_ms,
		struct mip6_ha_result *res)
{
	memset(res, 0, sizeof(*res));
	ha->st.bu_received++;
	if (p->mh_type != MIP6_MH_BU) {
		drop(ha, res, MIP6_DROP_NOT_BU);
		return;
	}
	const struct mip6_bu *bu = &p->m.bu;
	const uint8_t *hoa = p->has_hao ? p->hoa : p->src;
	const uint8_t *coa = bu->has_alt_coa ? bu->alt_coa : p->src;
	struct mnp_set mnp = { 0 };
	enum mip6_reject why;
	memcpy(res->hoa, hoa, 16);
	memcpy(res->coa, coa, 16);

	/* Dropped, never answered: what cannot be attributed to this home address's own SA. */
	if (!sa_id) {
		drop(ha, res, MIP6_DROP_UNPROTECTED);
		return;
	}
	if (!is_ha_addr(ha, p->dst)) {
		drop(ha, res, MIP6_DROP_NOT_FOR_US);
		return;
	}
	uint32_t idx = find(ha, hoa);
	if (idx == NONE) {
		drop(ha, res, MIP6_DROP_UNKNOWN_HOA);
		return;
	}
	struct ent *e = &ha->ents[idx];
	if (e->mn.bu_sa != sa_id) {
		drop(ha, res, MIP6_DROP_WRONG_SA);
		return;
	}
	if (!mip6_addr_unicast_routable(coa)) {
		drop(ha, res, MIP6_DROP_COA_NOT_UNICAST);  /* §9.5.1: silently discarded */
		return;
	}

	/* From here on the mobile node is authenticated and gets an answer, whatever the A bit says
	 * (§10.3.1), sent back to the Binding Update's source with a type 2 routing header to the home
	 * address when that source is not the home address (§9.5.4). */
	res->mn = &e->mn;
	e->st.last_bu_ms = now_ms;
	memcpy(res->ba.src, p->dst, 16);
	memcpy(res->ba.dst, p->src, 16);
	memcpy(res->ba.hoa, hoa, 16);
	res->ba.rh2 = memcmp(p->src, hoa, 16) != 0;
	res->ba.seq = bu->seq;
	res->ba.k = (ha->cfg.key_mgmt_mobility || e->mn.key_mobility) && (bu->flags & MIP6_BU_K);
	bool bound = e->bound;
	/* A binding past its expiry that the caller has not reaped yet still has forwarding state, so
	 * it is replaced or refreshed like a live one, but its sequence number no longer binds. */
	bool live = bound && e->b.expires_ms > now_ms;

	/* the binding's number, or the one from before a restart (mip6_ha_seq_restore) */
	uint16_t last = live ? e->b.seq : e->restored_seq;

	if ((live || e->seq_restored) && !seq_newer(bu->seq, last)) {
		reject_node(ha, res, MIP6_REJECT_SEQ);
		res->ba.seq = last;  /* §9.5.1: the last accepted, so the mobile node can resync */
		return;
	}
	if (!(bu->flags & MIP6_BU_H)) {
		/* A correspondent registration: this node does route optimisation for nobody. */
		reject_node(ha, res, bound ? MIP6_REJECT_REG_TYPE_CHANGE : MIP6_REJECT_NOT_HOME_REG);
		return;
	}
	if (e->mn.disabled) {
		reject_node(ha, res, MIP6_REJECT_DISABLED);
		return;
	}
	/* RFC 3963 4.2: a router's acknowledgement says routers are served */
	res->ba.r = (bu->flags & MIP6_BU_R) && e->mn.router;
	if ((bu->flags & MIP6_BU_R) && !e->mn.router) {
		reject_node(ha, res, MIP6_REJECT_MOBILE_ROUTER);
		return;
	}
	if (!in_home_prefix(ha, hoa)) {
		reject_node(ha, res, MIP6_REJECT_NOT_HOME_SUBNET);
		return;
	}
	if (!is_zero(e->mn.ha_addr) && memcmp(e->mn.ha_addr, p->dst, 16)) {
		reject_node(ha, res, MIP6_REJECT_OTHER_HA_ADDR);  /* another of our addresses serves it */
		return;
	}

	if (bu->lifetime == 0 || !memcmp(coa, hoa, 16)) {
		/* §10.3.2: deregistration, with or without the Alternate CoA option (§11.5.4; why that
		 * is safe: the top of this file). */
		if (!bound) {
			reject_node(ha, res, MIP6_REJECT_DEREG_UNBOUND);
			return;
		}
		if (!seq_stored(ha, e, bu, res))
			return;
		memcpy(res->old_coa, e->b.coa, 16);
		unbind(ha, idx);
		res->change = MIP6_CHANGE_DELETE;
		res->ba.status = MIP6_ST_ACCEPTED;
		res->ba.lifetime = 0;
		ha->st.bu_accepted++;
		ha->st.bindings_deleted++;
		e->st.bu_accepted++;
		return;
	}
	if (in_home_prefix(ha, coa) || is_ha_addr(ha, coa)) {
		/* A care-of address on the home link (other than the home address) or the home agent
		 * itself would loop the tunnel back here. */
		reject_node(ha, res, MIP6_REJECT_COA_AT_HOME);
		return;
	}
	/* The care-of address is bound to the Binding Update: named inside the ICV and the very
	 * address the packet came from (the top of this file). */
	if (!bu->has_alt_coa) {
		reject_node(ha, res, MIP6_REJECT_NO_ALT_COA);
		return;
	}
	if ((bu->flags & MIP6_BU_R) && (why = mnp_check(&e->mn, bu, &mnp)) != MIP6_REJECT_NONE) {
		reject_node(ha, res, why);
		return;
	}
	if (memcmp(bu->alt_coa, p->src, 16)) {
		reject_node(ha, res, MIP6_REJECT_ALT_COA_NOT_SRC);
		return;
	}
	if (!bound && ha->n_bound >= ha->max_bindings) {
		reject_node(ha, res, MIP6_REJECT_CACHE_FULL);
		return;
	}
	if ((!bound || memcmp(e->b.coa, coa, 16)) && !move_take(ha, e, now_ms)) {
		reject_node(ha, res, MIP6_REJECT_MOVE_RATE);
		return;
	}
	if (!seq_stored(ha, e, bu, res))
		return;

	accept_binding(ha, idx, bu, coa, bound, now_ms, res);
	/* a router's prefixes replace what it had registered; a host's binding has none */
	ha->ents[idx].b.n_mnp = (bu->flags & MIP6_BU_R) ? mnp.n : 0;
	memcpy(ha->ents[idx].b.mnp, mnp.p, sizeof(mnp.p));
}

void mip6_ha_input(struct mip6_ha *ha, const uint8_t *pkt, uint32_t len, uint32_t sa_id,
		   uint64_t now_ms, struct mip6_ha_result *res)
{
	struct mip6_pkt p;
	enum mip6_drop d = mip6_parse(pkt, len, &p);
	if (d != MIP6_DROP_NONE) {
		memset(res, 0, sizeof(*res));
		ha->st.bu_received++;
		drop(ha, res, d);
		return;
	}
	mip6_ha_bu(ha, &p, sa_id, now_ms, res);
}

int mip6_ha_dad_failed(struct mip6_ha *ha, const uint8_t hoa[16], struct mip6_ha_result *res)
{
	uint32_t i = find(ha, hoa);
	if (i == NONE || !ha->ents[i].bound)
		return -ENOENT;
	unbind(ha, i);
	ha->st.bindings_deleted++;
	ha->st.dad_failed++;
	res->ba.status = MIP6_ST_DAD_FAILED;
	res->ba.lifetime = 0;
	res->ba.refresh = 0;
	res->change = MIP6_CHANGE_NONE;
	res->lifetime_s = 0;
	return 0;
}

int mip6_ha_build_ba(struct mip6_ha *ha, const struct mip6_ha_result *res, uint8_t *buf, size_t cap)
{
	if (res->drop != MIP6_DROP_NONE)
		return -EINVAL;
	int n = mip6_build_ba(buf, cap, &res->ba);
	if (n > 0) {
		struct ent *e = node_of(ha, res);

		ha->st.ba_sent++;
		unsigned slot = mip6_ba_slot(res->ba.status);

		if (e && slot < MIP6_MN_BA_SLOTS)
			e->st.ba[slot]++;
	}
	return n;
}

/* ---- the cache ---- */

const struct mip6_binding *mip6_ha_lookup(const struct mip6_ha *ha, const uint8_t hoa[16])
{
	uint32_t i = find(ha, hoa);
	return i != NONE && ha->ents[i].bound ? &ha->ents[i].b : NULL;
}

unsigned mip6_ha_expire(struct mip6_ha *ha, uint64_t now_ms, mip6_binding_fn fn, void *arg)
{
	unsigned n = 0;
	while (ha->n_bound && ha->ents[ha->heap[0]].b.expires_ms <= now_ms) {
		uint32_t idx = ha->heap[0];
		if (fn)
			fn(&ha->ents[idx].b, arg);
		unbind(ha, idx);
		ha->st.bindings_expired++;
		n++;
	}
	return n;
}

unsigned mip6_ha_foreach(const struct mip6_ha *ha, mip6_binding_fn fn, void *arg)
{
	for (uint32_t i = 0; i < ha->n_bound; i++)
		fn(&ha->ents[ha->heap[i]].b, arg);
	return ha->n_bound;
}

unsigned mip6_ha_count(const struct mip6_ha *ha)
{
	return ha->n_bound;
}

uint64_t mip6_ha_next_expiry(const struct mip6_ha *ha)
{
	return ha->n_bound ? ha->ents[ha->heap[0]].b.expires_ms : UINT64_MAX;
}

const struct mip6_ha_stats *mip6_ha_stats(const struct mip6_ha *ha)
{
	return &ha->st;
}

/* ---- each mobile node's counters ---- */

unsigned mip6_ba_slot(uint8_t status)
{
	if (status == MIP6_ST_ACCEPTED)
		return 0;
	if (status >= MIP6_ST_UNSPECIFIED && status <= MIP6_ST_MR_NOT_PERMITTED)
		return 1u + status - MIP6_ST_UNSPECIFIED;
	return status == MIP6_ST_INVALID_COA ? 14 : MIP6_MN_BA_SLOTS;
}

uint8_t mip6_ba_slot_status(unsigned slot)
{
	if (slot == 0)
		return MIP6_ST_ACCEPTED;
	return slot < 14 ? (uint8_t)(MIP6_ST_UNSPECIFIED + slot - 1) : MIP6_ST_INVALID_COA;
}

const struct mip6_mn_stats *mip6_ha_mn_stats(const struct mip6_ha *ha, const uint8_t hoa[16])
{
	uint32_t i = find(ha, hoa);
	return i == NONE ? NULL : &ha->ents[i].st;
}

unsigned mip6_ha_mn_foreach(const struct mip6_ha *ha, mip6_mn_fn fn, void *arg)
{
	for (uint32_t i = 0; i < ha->cfg.max_mns; i++) {
		const struct ent *e = &ha->ents[i];
		if (e->used)
			fn(&e->mn, &e->st, e->bound ? &e->b : NULL, arg);
	}
	return ha->n_mns;
}
