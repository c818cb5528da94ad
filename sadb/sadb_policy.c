/* sadb/sadb_policy.c: the policy writer API (add, delete by id or selector, flush). Policies are
 * records like SAs (sadb_txn.c writes them); what is particular to them is the id, which names the
 * slot and how often it was reused, and the duplicate check on (direction, selector, priority), for
 * which the published SPD index answers (a bulk load inside one transaction keeps a selector map).
 * The index readers search is brought up to date at commit (sadb_spd_build.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sadb/sadb_int.h"

static void pol_seal(struct sadb_policy *p)
{
	struct sadb_policy z;

	memset(&z, 0, sizeof(z));
	z.id = p->id; z.dir = p->dir; z.action = p->action; z.proto = p->proto; z.mode = p->mode;
	z.priority = p->priority; z.reqid = p->reqid;
	memcpy(&z.sel, &p->sel, sizeof(z.sel));
	sadb__selector_normalize(&z.sel);
	sadb__addr_seal(&z.tun_src, &p->tun_src);
	sadb__addr_seal(&z.tun_dst, &p->tun_dst);
	z.ike_id = p->ike_id;
	z.checksum = sadb__policy_checksum(&z);
	memcpy(p, &z, sizeof(z));
}

static uint64_t sel_hash(uint8_t dir, const struct sadb_selector *normalized)
{
	uint8_t buf[1 + sizeof(*normalized)];

	buf[0] = dir;
	memcpy(buf + 1, normalized, sizeof(*normalized));
	return (uint64_t)sadb__checksum(buf, sizeof(buf)) | 1;
}

static void selmap_put(struct sadb *db, uint64_t hv, uint32_t slot)
{
	uint32_t mask = db->selmap_cap - 1, pos = (uint32_t)sadb__mix64(hv) & mask;

	while (db->selmap_key[pos])
		pos = (pos + 1) & mask;
	db->selmap_key[pos] = hv;
	db->selmap_slot[pos] = slot;
	db->selmap_n++;
}

void sadb__selmap_drop(struct sadb *db)
{
	free(db->selmap_key);
	free(db->selmap_slot);
	db->selmap_key = NULL;
	db->selmap_slot = NULL;
	db->selmap_cap = db->selmap_n = 0;
	db->selmap_valid = false;
}

/* Room for every policy the table can hold at half load, built from the writer's view. */
static bool selmap_build(struct sadb *db)
{
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed), cap = 16;

	sadb__selmap_drop(db);
	while (cap < 2 * db->h->max_policy)
		cap <<= 1;
	db->selmap_key = calloc(cap, sizeof(*db->selmap_key));
	db->selmap_slot = calloc(cap, sizeof(*db->selmap_slot));
	if (!db->selmap_key || !db->selmap_slot) {
		sadb__selmap_drop(db);
		return false;
	}
	db->selmap_cap = cap;
	for (uint32_t i = 0; i < hw; i++)
		if (sadb__pol_wview(db, i))
			selmap_put(db, db->pol_meta[i].selhash, i);
	db->selmap_valid = true;
	return true;
}

/* A policy in use with this direction and (normalised) selector, and this priority if asked. */
static bool pol_matches(const struct sadb_policy *p, uint8_t dir, const struct sadb_selector *normalized,
			bool match_prio, uint32_t prio)
{
	return p && p->dir == dir && (!match_prio || p->priority == prio) && sadb__selector_eq(&p->sel, normalized);
}

/* Transactions with more changes than this search their selector map; smaller ones search the
 * published index and their own changes. */
#define SELMAP_MIN_LOG 64

/* The slot of the policy with this direction and selector (and priority), or -ENOENT. The committed
 * policies are found through the published SPD index (O(1), whatever their number), this
 * transaction's own changes in its log; a large explicit transaction (a load) uses a selector map
 * built once for it instead, and without a usable index the compact meta array is scanned. */
static int find_policy_sel(struct sadb *db, uint8_t dir, const struct sadb_selector *sel, bool match_prio,
			   uint32_t prio)
{
	uint32_t hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	uint32_t nlog = atomic_load_explicit(&db->h->txn.nlog, memory_order_relaxed);
	struct sadb_selector n;
	uint64_t hv;
	int r;

	memcpy(&n, sel, sizeof(n));
	sadb__selector_normalize(&n);
	hv = sel_hash(dir, &n);
	if (db->txn_explicit && (db->selmap_valid || (nlog > SELMAP_MIN_LOG && selmap_build(db)))) {
		uint32_t mask = db->selmap_cap - 1, pos = (uint32_t)sadb__mix64(hv) & mask;
		for (; db->selmap_key[pos]; pos = (pos + 1) & mask) {
			uint32_t i = db->selmap_slot[pos];
			if (db->selmap_key[pos] != hv || i >= hw)
				continue;
			if (pol_matches(sadb__pol_wview(db, i), dir, &n, match_prio, prio))
				return (int)i;
		}
		return -ENOENT;
	}
	r = sadb__idx_find_sel(db, dir, &n, match_prio, prio);
	if (r != -EAGAIN) {
		uint32_t best = r >= 0 ? (uint32_t)r : UINT32_MAX;

		if (nlog > db->h->log_cap)
			nlog = db->h->log_cap;
		for (uint32_t k = 0; k < nlog; k++) {
			uint32_t i = db->log[k] & ~SADB_LOG_POLICY;
			if (!(db->log[k] & SADB_LOG_POLICY) || i >= hw || i >= best || db->pol_meta[i].selhash != hv)
				continue;
			if (pol_matches(sadb__pol_wview(db, i), dir, &n, match_prio, prio))
				best = i;
		}
		return best == UINT32_MAX ? -ENOENT : (int)best;
	}
	/* A scan of the compact meta array; only hash matches look at a record. */
	for (uint32_t i = 0; i < hw; i++) {
		if (db->pol_meta[i].selhash != hv)
			continue;
		if (pol_matches(sadb__pol_wview(db, i), dir, &n, match_prio, prio))
			return (int)i;
	}
	return -ENOENT;
}

int sadb_policy_add(struct sadb *db, const struct sadb_policy *in, uint32_t *id)
{
	struct sadb_hdr *h;
	struct sadb_tbl t;
	struct sadb_policy p;
	char msg[200];
	uint32_t reuse;
	int s, r;

	r = sadb__check_writable(db, in, "sadb_policy_add");
	if (r)
		return r;
	if (sadb_policy_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid policy: %s", msg);
		return -EINVAL;
	}
	r = sadb__op_begin(db);
	if (r)
		return r;
	h = db->h;
	t = sadb__pol_tbl(db);
	if (find_policy_sel(db, in->dir, &in->sel, true, in->priority) >= 0) {
		sadb__set_err(db, "an identical policy (direction, selector, priority) exists");
		return sadb__op_end(db, -EEXIST);
	}
	s = sadb__slot_alloc(db, true);
	if (s < 0) {
		sadb__set_err(db, "policy table full (%u policies)", h->max_policy);
		return sadb__op_end(db, -ENOSPC);
	}
	/* Ids name a slot and how often it was reused, so a stale id never finds a newer policy. */
	reuse = db->pol_meta[s].reuse++;
	if ((uint64_t)reuse * h->max_policy + (uint64_t)s + 1 > UINT32_MAX) {
		reuse = 0;
		db->pol_meta[s].reuse = 1;
	}
	memcpy(&p, in, sizeof(p));
	p.id = reuse * h->max_policy + (uint32_t)s + 1;
	pol_seal(&p);
	db->pol_meta[s].selhash = sel_hash(p.dir, &p.sel);
	if (db->selmap_valid) {
		if (db->selmap_n + 1 > db->selmap_cap / 2)
			sadb__selmap_drop(db); /* rebuilt on next use */
		else
			selmap_put(db, db->pol_meta[s].selhash, (uint32_t)s);
	}
	sadb__write_copy(db, &t, (uint32_t)s, true, &p);
	sadb__jappend(db, SADB_CHG_POL_ADD, p.id);
	h->txn.n_policy++;
	h->txn.pol_changed = 1;
	if (id)
		*id = p.id;
	sadb__clear_err(db);
	return sadb__op_end(db, 0);
}

static void pol_del_slot(struct sadb *db, uint32_t s, uint32_t id)
{
	struct sadb_tbl t = sadb__pol_tbl(db);

	sadb__write_copy(db, &t, s, false, NULL);
	db->h->txn.n_policy--;
	db->h->txn.pol_changed = 1;
	if (id)
		sadb__jappend(db, SADB_CHG_POL_DEL, id);
}

int sadb_policy_delete(struct sadb *db, uint32_t id)
{
	const struct sadb_policy *p;
	uint32_t s;
	int r;

	if (!db)
		return -EINVAL;
	r = sadb__op_begin(db);
	if (r)
		return r;
	s = id ? (id - 1) % db->h->max_policy : 0;
	p = id && s < atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed) ? sadb__pol_wview(db, s) : NULL;
	if (!p || p->id != id) {
		sadb__set_err(db, "no policy with id %u", id);
		return sadb__op_end(db, -ENOENT);
	}
	pol_del_slot(db, s, id);
	sadb__clear_err(db);
	return sadb__op_end(db, 0);
}

int sadb_policy_delete_sel(struct sadb *db, uint8_t dir, const struct sadb_selector *sel)
{
	int s, r;

	r = sadb__check_writable(db, sel, "sadb_policy_delete_sel");
	if (r)
		return r;
	r = sadb__op_begin(db);
	if (r)
		return r;
	s = find_policy_sel(db, dir, sel, false, 0);
	if (s < 0) {
		sadb__set_err(db, "no policy with that direction and selector");
		return sadb__op_end(db, -ENOENT);
	}
	pol_del_slot(db, (uint32_t)s, sadb__pol_wview(db, (uint32_t)s)->id);
	sadb__clear_err(db);
	return sadb__op_end(db, 0);
}

int sadb_policy_flush(struct sadb *db)
{
	uint32_t hw;
	int r, n = 0;

	if (!db)
		return -EINVAL;
	r = sadb__op_begin(db);
	if (r)
		return r;
	hw = atomic_load_explicit(&db->h->pol_hwm, memory_order_relaxed);
	for (uint32_t i = 0; i < hw; i++) {
		if (sadb__pol_wview(db, i)) {
			pol_del_slot(db, i, 0);
			n++;
		}
	}
	if (n)
		sadb__jappend(db, SADB_CHG_FLUSH_POL, 0);
	sadb__clear_err(db);
	return sadb__op_end(db, n);
}
