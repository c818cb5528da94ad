/* sadb/sadb_sa.c: the SA writer API (add, update, migrate, delete, flush, SPI reservation). Every
 * call runs inside a transaction (sadb_txn.c) and writes whole sealed records: padding and unused
 * key bytes zeroed, checksum set, so that a record has one checksum and no stale bytes. Staging
 * copies of an SA are wiped after use: they hold its keys (doc/architecture.md rule 3). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <arpa/inet.h>

#include "sadb/sadb_int.h"

static int find_sa(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	uint64_t hv = sadb__sa_key_hash(db->h, spi, proto, dst), fp = hv >> 32;
	uint32_t b[2];

	sadb__hash_buckets(db->h, hv, &b[0], &b[1]);
	for (int k = 0; k < 2; k++) {
		for (unsigned w = 0; w < SADB_HASH_WAYS; w++) {
			uint64_t e = atomic_load_explicit(&sadb__bucket(db, b[k])[w], memory_order_relaxed);
			uint32_t s = (uint32_t)e;
			const struct sadb_sa *sa;
			if ((e >> 32) != fp || !s || s > db->h->max_sa)
				continue;
			sa = sadb__sa_wview(db, s - 1);
			if (sa && sadb__sa_ident_eq(sa, spi, proto, dst))
				return (int)(s - 1);
		}
	}
	return -ENOENT;
}

/* Give a slot's runtime area to a new SA instance. The instance word is cleared first and set last,
 * with fences between: an engine object of an older instance that reads any zeroed word after its own
 * atomic operation then sees an instance that is not its own (esp_seq_refill re-checks after its
 * compare-and-swap), so it can never take sequence numbers from the reset counter. The quarantine of
 * freed slots (sadb_dp_attach) keeps such objects from existing in the first place. */
_Static_assert(offsetof(struct sadb_runtime, instance) == 0 && sizeof(struct sadb_runtime) % 8 == 0,
	       "rt_reset clears the instance word first and the rest word by word");
static void rt_reset(struct sadb *db, uint32_t slot, uint64_t instance)
{
	struct sadb_runtime *rt = sadb_runtime(db, slot);
	uint64_t *w = (uint64_t *)rt;

	__atomic_store_n(&rt->instance, 0, __ATOMIC_SEQ_CST);
	atomic_thread_fence(memory_order_release);
	for (size_t k = 1; k < sizeof(*rt) / sizeof(uint64_t); k++)
		__atomic_store_n(&w[k], 0, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&rt->instance, instance, __ATOMIC_RELEASE);
}

static void sa_seal(struct sadb_sa *sa)
{
	/* Padding and unused key bytes are zeroed so a record has one checksum and no stale bytes. */
	struct sadb_sa z;

	memset(&z, 0, sizeof(z));
	z.spi = sa->spi; z.proto = sa->proto; z.mode = sa->mode; z.dir = sa->dir; z.state = sa->state;
	z.reqid = sa->reqid; z.flags = sa->flags;
	sadb__addr_seal(&z.src, &sa->src);
	sadb__addr_seal(&z.dst, &sa->dst);
	z.encap_sport = sa->encap_sport; z.encap_dport = sa->encap_dport;
	z.enc_alg = sa->enc_alg; z.auth_alg = sa->auth_alg;
	z.enc_key_len = sa->enc_key_len; z.salt_len = sa->salt_len; z.auth_key_len = sa->auth_key_len;
	z.icv_len = sa->icv_len;
	memcpy(z.enc_key, sa->enc_key, sa->enc_key_len <= SADB_ENC_KEY_MAX ? sa->enc_key_len : 0);
	memcpy(z.salt, sa->salt, sa->salt_len <= SADB_SALT_MAX ? sa->salt_len : 0);
	memcpy(z.auth_key, sa->auth_key, sa->auth_key_len <= SADB_AUTH_KEY_MAX ? sa->auth_key_len : 0);
	z.replay_window = sa->replay_window; z.tfc_pad = sa->tfc_pad; z.ttl = sa->ttl; z.dscp = sa->dscp;
	z.mtu = sa->mtu;
	z.soft = sa->soft; z.hard = sa->hard;
	memcpy(&z.sel, &sa->sel, sizeof(z.sel));
	sadb__selector_normalize(&z.sel);
	z.created = sa->created; z.instance = sa->instance; z.ike_id = sa->ike_id;
	z.checksum = sadb__sa_checksum(&z);
	memcpy(sa, &z, sizeof(z));
	explicit_bzero(&z, sizeof(z));
}

static int sa_add_locked(struct sadb *db, const struct sadb_sa *in, uint32_t *slot)
{
	struct sadb_hdr *h = db->h;
	struct sadb_tbl t = sadb__sa_tbl(db);
	char msg[200];
	struct sadb_sa sa;
	uint64_t hv;
	int s;

	if (sadb_sa_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid SA: %s", msg);
		return -EINVAL;
	}
	if (find_sa(db, in->spi, in->proto, &in->dst) >= 0) {
		char a[INET6_ADDRSTRLEN];
		sadb__set_err(db, "an SA with SPI 0x%08x proto %u dst %s exists", in->spi, in->proto,
			      sadb_addr_str(&in->dst, a, sizeof(a)));
		return -EEXIST;
	}
	hv = sadb__sa_key_hash(h, in->spi, in->proto, &in->dst);
	if (sadb__hash_room(db, hv)) {
		sadb__set_err(db, "SPI hash buckets full (capacity %u SAs)", h->max_sa);
		return -ENOSPC;
	}
	s = sadb__slot_alloc(db, false);
	if (s < 0) {
		if (s == -EBUSY)
			sadb__set_err(db, "SA table full (%u SAs; %u freed slots wait until the dataplane has "
				      "let go of their old SAs)", h->max_sa, sadb_sa_quarantined(db));
		else
			sadb__set_err(db, "SA table full (%u SAs)", h->max_sa);
		return -ENOSPC;
	}
	memcpy(&sa, in, sizeof(sa));
	sa.created = sadb__now();
	sa.instance = h->next_instance++;
	sa_seal(&sa);
	sadb__touch(db, false, (uint32_t)s);
	sadb__hash_attach(db, (uint32_t)s, hv);
	/* The runtime area is reset before the SA can be seen; the dataplane checks instance. */
	rt_reset(db, (uint32_t)s, sa.instance);
	sadb__write_copy(db, &t, (uint32_t)s, true, &sa);
	explicit_bzero(&sa, sizeof(sa));
	sadb__jappend(db, SADB_CHG_SA_ADD, (uint32_t)s);
	h->txn.n_sa++;
	if (slot)
		*slot = (uint32_t)s;
	return 0;
}

int sadb_sa_add(struct sadb *db, const struct sadb_sa *sa, uint32_t *slot)
{
	int r = sadb__check_writable(db, sa, "sadb_sa_add");

	if (r)
		return r;
	r = sadb__op_begin(db);
	if (r)
		return r;
	r = sa_add_locked(db, sa, slot);
	if (!r)
		sadb__clear_err(db);
	return sadb__op_end(db, r);
}

/* The start of call fn on one existing SA: its transaction opened and the SA's slot found; or the
 * error, the call's own transaction already closed. */
static int sa_begin(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst, const char *fn,
		    const char *verb)
{
	int s, r = sadb__check_writable(db, dst, fn);

	if (!r)
		r = sadb__op_begin(db);
	if (r)
		return r;
	s = find_sa(db, spi, proto, dst);
	if (s < 0) {
		sadb__set_err(db, "no SA with SPI 0x%08x proto %u to %s", spi, proto, verb);
		return sadb__op_end(db, -ENOENT);
	}
	return s;
}

/* The end of an update in place (sadb_sa_update, sadb_sa_migrate): the new version of slot s, sealed,
 * goes into the copy readers are not using; the caller's staging copy (keys) is wiped. */
static int sa_rewrite(struct sadb *db, uint32_t s, struct sadb_sa *sa)
{
	struct sadb_tbl t = sadb__sa_tbl(db);

	sa_seal(sa);
	sadb__write_copy(db, &t, s, true, sa);
	explicit_bzero(sa, sizeof(*sa));
	sadb__jappend(db, SADB_CHG_SA_UPDATE, s);
	sadb__clear_err(db);
	return sadb__op_end(db, 0);
}

int sadb_sa_update(struct sadb *db, const struct sadb_sa *in)
{
	struct sadb_sa sa;
	const struct sadb_sa *old;
	char msg[200];
	int s, r;

	r = sadb__check_writable(db, in, "sadb_sa_update");
	if (r)
		return r;
	if (sadb_sa_validate(in, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid SA: %s", msg);
		return -EINVAL;
	}
	s = sa_begin(db, in->spi, in->proto, &in->dst, "sadb_sa_update", "update");
	if (s < 0)
		return s;
	old = sadb__sa_wview(db, (uint32_t)s);
	memcpy(&sa, in, sizeof(sa));
	if (old->state == SADB_STATE_LARVAL) {
		/* A reserved SPI becomes a real SA: new instance, fresh runtime state. */
		sa.created = sadb__now();
		sa.instance = db->h->next_instance++;
		rt_reset(db, (uint32_t)s, sa.instance);
	} else {
		sa.created = old->created;
		sa.instance = old->instance;
	}
	return sa_rewrite(db, (uint32_t)s, &sa);
}

int sadb_sa_migrate(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		    const struct sadb_addr *new_src, const struct sadb_addr *new_dst,
		    uint16_t encap_sport, uint16_t encap_dport)
{
	struct sadb_sa sa;
	char msg[200];
	uint64_t hv;
	int s, r;

	s = sa_begin(db, spi, proto, dst, "sadb_sa_migrate", "migrate");
	if (s < 0)
		return s;
	memcpy(&sa, sadb__sa_wview(db, (uint32_t)s), sizeof(sa));
	if (new_src)
		sa.src = *new_src;
	if (new_dst)
		sa.dst = *new_dst;
	sa.encap_sport = encap_sport;
	sa.encap_dport = encap_dport;
	if (sadb_sa_validate(&sa, msg, sizeof(msg))) {
		sadb__set_err(db, "invalid migration: %s", msg);
		r = -EINVAL;
		goto fail;
	}
	if (!sadb_addr_eq(&sa.dst, dst)) {
		if (find_sa(db, spi, proto, &sa.dst) >= 0) {
			sadb__set_err(db, "an SA with SPI 0x%08x proto %u exists at the new destination", spi, proto);
			r = -EEXIST;
			goto fail;
		}
		hv = sadb__sa_key_hash(db->h, spi, proto, &sa.dst);
		if (sadb__hash_room(db, hv)) {
			sadb__set_err(db, "SPI hash buckets full");
			r = -ENOSPC;
			goto fail;
		}
		sadb__touch(db, false, (uint32_t)s);
		sadb__hash_attach(db, (uint32_t)s, hv);
	}
	return sa_rewrite(db, (uint32_t)s, &sa);
fail:
	explicit_bzero(&sa, sizeof(sa)); /* a copy of the SA's keys */
	return sadb__op_end(db, r);
}

static void sa_del_slot(struct sadb *db, uint32_t s)
{
	struct sadb_tbl t = sadb__sa_tbl(db);

	sadb__write_copy(db, &t, s, false, NULL);
	db->h->txn.n_sa--;
}

int sadb_sa_delete(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	int s = sa_begin(db, spi, proto, dst, "sadb_sa_delete", "delete");

	if (s < 0)
		return s;
	sa_del_slot(db, (uint32_t)s);
	sadb__jappend(db, SADB_CHG_SA_DEL, (uint32_t)s);
	sadb__clear_err(db);
	return sadb__op_end(db, 0);
}

int sadb_sa_flush(struct sadb *db, uint8_t proto)
{
	uint32_t hw;
	int r, n = 0;

	if (!db)
		return -EINVAL;
	if (proto != SADB_PROTO_ANY && proto != SADB_PROTO_ESP && proto != SADB_PROTO_AH) {
		sadb__set_err(db, "sadb_sa_flush: proto %u is not any, ESP or AH", proto);
		return -EINVAL;
	}
	r = sadb__op_begin(db);
	if (r)
		return r;
	hw = atomic_load_explicit(&db->h->sa_hwm, memory_order_relaxed);
	for (uint32_t i = 0; i < hw; i++) {
		const struct sadb_sa *sa = sadb__sa_wview(db, i);
		if (sa && (proto == SADB_PROTO_ANY || sa->proto == proto)) {
			sa_del_slot(db, i);
			n++;
		}
	}
	if (n)
		sadb__jappend(db, SADB_CHG_FLUSH_SA, proto);
	sadb__clear_err(db);
	return sadb__op_end(db, n);
}

int sadb_spi_alloc(struct sadb *db, uint8_t proto, const struct sadb_addr *src, const struct sadb_addr *dst,
		   uint32_t min, uint32_t max, uint32_t *spi)
{
	struct sadb_sa sa;
	uint64_t range, start;
	uint32_t cand = 0;
	bool found = false;
	int r;

	if (!db)
		return -EINVAL;
	if (!dst || !spi) {
		sadb__set_err(db, "sadb_spi_alloc: NULL argument");
		return -EINVAL;
	}
	if (proto != SADB_PROTO_ESP && proto != SADB_PROTO_AH) {
		sadb__set_err(db, "sadb_spi_alloc: proto %u is neither ESP nor AH", proto);
		return -EINVAL;
	}
	if (min == 0 && max == 0)
		max = UINT32_MAX;
	if (min < 256)
		min = 256;
	if (max < min) {
		sadb__set_err(db, "sadb_spi_alloc: empty SPI range [%u, %u] (0-255 are reserved)", min, max);
		return -EINVAL;
	}
	range = (uint64_t)max - min + 1;
	r = sadb__op_begin(db);
	if (r)
		return r;
	for (int k = 0; k < 32 && !found; k++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			break;
		cand = (uint32_t)(min + rnd % range);
		found = find_sa(db, cand, proto, dst) < 0;
	}
	if (!found) {
		/* Dense range: walk it from a random point. Among max_sa + 1 consecutive SPIs one is free. */
		uint64_t steps = range < (uint64_t)db->h->max_sa + 1 ? range : (uint64_t)db->h->max_sa + 1;
		uint64_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint64_t)time(NULL);
		start = rnd % range;
		for (uint64_t k = 0; k < steps && !found; k++) {
			cand = (uint32_t)(min + (start + k) % range);
			found = find_sa(db, cand, proto, dst) < 0;
		}
	}
	if (!found) {
		sadb__set_err(db, "no free SPI in [%u, %u]", min, max);
		return sadb__op_end(db, -ENOSPC);
	}
	memset(&sa, 0, sizeof(sa));
	sa.spi = cand;
	sa.proto = proto;
	sa.mode = SADB_MODE_TUNNEL;
	sa.dir = SADB_DIR_IN;
	sa.state = SADB_STATE_LARVAL;
	sa.dst = *dst;
	if (src)
		sa.src = *src;
	sa.sel.sport_hi = sa.sel.dport_hi = 65535;
	r = sa_add_locked(db, &sa, NULL);
	if (!r) {
		*spi = cand;
		sadb__clear_err(db);
	}
	return sadb__op_end(db, r);
}
