/* sadb/sadb_home.c: the SADB's home agent records — the Mobile IPv6 home agent's configuration, one
 * record per home agent address (its address, home prefixes, longest binding lifetime, home link)
 * that ipsecctl writes and xipsecd's home agent reads.
 *
 * Up to SADB_HA_MAX records, each two copies in the header, under the rule every record slot follows (sadb_int.h): a
 * writer fills the copy that is not the committed one (tag WRITING while it does, then the
 * transaction's generation N), so readers keep the committed copy until the commit point publishes
 * N; a reader takes the newest copy tagged <= the committed generation and re-reads its tag after
 * copying (tags only grow, so an unchanged tag means the copy is whole). A writer that dies leaves a
 * copy tagged WRITING or above the generation: no reader chooses it, and the next writer's recovery
 * (ha_normalize in sadb_txn.c, from txn_undo) clears it. The record holds no key, so superseded copies need
 * not be wiped. */
#include "config.h"

#include <net/if.h>
#include <stdio.h>

#include "sadb/sadb_int.h"

static uint32_t ha_checksum(const struct sadb_home_agent *ha)
{
	return sadb__checksum(ha, offsetof(struct sadb_home_agent, checksum));
}

static bool v6_usable_unicast(const struct sadb_addr *a)
{
	static const uint8_t zero[16];

	return a->family == AF_INET6 && memcmp(a->a.b, zero, 16) != 0 && a->a.b[0] != 0xff;
}

static bool in_prefix(const struct sadb_addr *a, const struct sadb_addr *p, unsigned plen)
{
	for (unsigned w = 0; w < 4; w++) {
		uint32_t m = sadb__plen_mask(plen, w);
		if ((a->a.w[w] & m) != (p->a.w[w] & m))
			return false;
	}
	return true;
}

/* Two prefixes overlap when the shorter holds the longer. */
static bool prefixes_overlap(const struct sadb_addr *p, unsigned plen, const struct sadb_addr *q,
			     unsigned qlen)
{
	return in_prefix(p, q, plen < qlen ? plen : qlen);
}

int sadb_home_agent_validate(const struct sadb_home_agent *ha, char *msg, size_t len)
{
	char b[INET6_ADDRSTRLEN];

#define BAD(...) do { if (msg && len) snprintf(msg, len, __VA_ARGS__); return -EINVAL; } while (0)
	if (!ha)
		BAD("home agent: NULL record");
	if (!v6_usable_unicast(&ha->addr))
		BAD("home agent address: must be an IPv6 unicast address");
	if (ha->n_prefix < 1 || ha->n_prefix > SADB_HA_MAX_PREFIX)
		BAD("home agent: %u home prefixes (1 to %u)", ha->n_prefix, SADB_HA_MAX_PREFIX);
	for (unsigned i = 0; i < ha->n_prefix; i++) {
		struct sadb_addr m = ha->prefix[i];

		if (ha->prefix[i].family != AF_INET6)
			BAD("home prefix %u: must be an IPv6 prefix", i + 1);
		if (ha->plen[i] < 1 || ha->plen[i] > 127)
			BAD("home prefix %s/%u: prefix length must be 1 to 127",
			    sadb_addr_str(&ha->prefix[i], b, sizeof(b)), ha->plen[i]);
		sadb__addr_mask(&m, ha->plen[i]);
		if (!sadb_addr_eq(&m, &ha->prefix[i]))
			BAD("home prefix %s/%u: host bits set", sadb_addr_str(&ha->prefix[i], b, sizeof(b)),
			    ha->plen[i]);
		for (unsigned j = 0; j < i; j++)
			if (ha->plen[j] == ha->plen[i] && sadb_addr_eq(&ha->prefix[j], &ha->prefix[i]))
				BAD("home prefix %s/%u: given twice", sadb_addr_str(&ha->prefix[i], b, sizeof(b)),
				    ha->plen[i]);
	}
	{
		bool on = false;
		for (unsigned i = 0; i < ha->n_prefix; i++)
			on = on || in_prefix(&ha->addr, &ha->prefix[i], ha->plen[i]);
		/* RFC 6275 section 10.1: the home agent is a router on the home link, addressed in
		 * one of its prefixes (mobile nodes find it there). */
		if (!on)
			BAD("home agent address %s: not in any home prefix", sadb_addr_str(&ha->addr, b, sizeof(b)));
	}
	if (ha->max_lifetime < 4 || ha->max_lifetime > 65535u * 4u)
		BAD("home agent lifetime %u s: must be 4 to %u s (RFC 6275: 16 bits of 4-second units)",
		    ha->max_lifetime, 65535u * 4u);
	if (ha->flags)
		BAD("home agent flags 0x%x: none is defined", ha->flags);
	/* an address a tunnel can come from and go to: not 0/8, loopback, multicast or class E */
	if ((ha->addr4[0] | ha->addr4[1] | ha->addr4[2] | ha->addr4[3]) &&
	    (ha->addr4[0] == 0 || ha->addr4[0] == 127 || ha->addr4[0] >= 224))
		BAD("home agent IPv4 address %u.%u.%u.%u: not a unicast address", ha->addr4[0], ha->addr4[1],
		    ha->addr4[2], ha->addr4[3]);
	if (memchr(ha->link, 0, sizeof(ha->link)) == NULL)
		BAD("home link: interface name longer than %u characters", IFNAMSIZ - 1);
	for (const char *c = ha->link; *c; c++)
		if (*c == '/' || *c == ':' || *c <= ' ' || *c > '~')
			BAD("home link \"%.15s\": not an interface name", ha->link);
#undef BAD
	return 0;
}

/* The copy of record idx this writer sees: the one its transaction wrote, else the committed one. */
static int writer_copy(struct sadb *db, unsigned idx)
{
	struct sadb_hdr *h = db->h;
	uint64_t n = h->txn.gen;
	uint64_t t0 = atomic_load_explicit(&h->ha_tag[idx][0], memory_order_relaxed);
	uint64_t t1 = atomic_load_explicit(&h->ha_tag[idx][1], memory_order_relaxed);

	if (t0 == n || t1 == n)
		return t0 == n ? 0 : 1;
	return sadb__newest(t0, t1, sadb__cur_gen(db));
}

/* ha against the other records as this writer sees them: a home address must belong to one home
 * agent address alone (xipsecd serves a mobile node on the record whose prefix holds it), so no
 * address is given twice and no home prefix overlaps another record's. */
static int ha_conflict(struct sadb *db, unsigned idx, const struct sadb_home_agent *ha, char *msg,
		       size_t len)
{
	struct sadb_hdr *h = db->h;
	char b[INET6_ADDRSTRLEN];

	for (unsigned o = 0; o < SADB_HA_MAX; o++) {
		int c = o == idx ? -1 : writer_copy(db, o);
		const struct sadb_home_agent *r;

		if (c < 0 || !h->ha_used[o][c])
			continue;
		r = &h->ha[o][c];
		if (sadb_addr_eq(&r->addr, &ha->addr)) {
			snprintf(msg, len, "home agent address %s: already record %u's",
				 sadb_addr_str(&ha->addr, b, sizeof(b)), o);
			return -EEXIST;
		}
		if (memcmp(r->addr4, ha->addr4, 4) == 0 && (ha->addr4[0] | ha->addr4[1] | ha->addr4[2] | ha->addr4[3])) {
			snprintf(msg, len, "home agent IPv4 address %u.%u.%u.%u: already record %u's", ha->addr4[0],
				 ha->addr4[1], ha->addr4[2], ha->addr4[3], o);
			return -EEXIST;
		}
		for (unsigned i = 0; i < ha->n_prefix; i++)
			for (unsigned k = 0; k < r->n_prefix && k < SADB_HA_MAX_PREFIX; k++)
				if (prefixes_overlap(&ha->prefix[i], ha->plen[i], &r->prefix[k], r->plen[k])) {
					snprintf(msg, len, "home prefix %s/%u: overlaps record %u's",
						 sadb_addr_str(&ha->prefix[i], b, sizeof(b)), ha->plen[i], o);
					return -EEXIST;
				}
	}
	return 0;
}

int sadb_home_agent_set(struct sadb *db, unsigned idx, const struct sadb_home_agent *ha)
{
	struct sadb_home_agent rec;
	struct sadb_hdr *h;
	char msg[160];
	uint64_t n, t0, t1;
	int r, c;

	if (!db)
		return -EINVAL;
	if (idx >= SADB_HA_MAX) {
		sadb__set_err(db, "sadb_home_agent_set: record %u (0 to %u)", idx, SADB_HA_MAX - 1);
		return -EINVAL;
	}
	if (ha) {
		if (sadb_home_agent_validate(ha, msg, sizeof(msg))) {
			sadb__set_err(db, "sadb_home_agent_set: %s", msg);
			return -EINVAL;
		}
		memset(&rec, 0, sizeof(rec));
		sadb__addr_seal(&rec.addr, &ha->addr);
		for (unsigned i = 0; i < ha->n_prefix; i++) {
			sadb__addr_seal(&rec.prefix[i], &ha->prefix[i]);
			rec.plen[i] = ha->plen[i];
		}
		rec.n_prefix = ha->n_prefix;
		rec.max_lifetime = ha->max_lifetime;
		memcpy(rec.link, ha->link, sizeof(rec.link));
		memcpy(rec.addr4, ha->addr4, sizeof(rec.addr4));
		rec.set_time = sadb__now();
		rec.checksum = ha_checksum(&rec);
	}
	r = sadb__op_begin(db);
	if (r)
		return r;
	if (ha && (r = ha_conflict(db, idx, &rec, msg, sizeof(msg)))) {
		sadb__set_err(db, "sadb_home_agent_set: %s", msg);
		return sadb__op_end(db, r);
	}
	h = db->h;
	n = h->txn.gen;
	t0 = atomic_load_explicit(&h->ha_tag[idx][0], memory_order_relaxed);
	t1 = atomic_load_explicit(&h->ha_tag[idx][1], memory_order_relaxed);
	/* The copy this transaction already wrote, else the one that is not committed. */
	if (t0 == n || t1 == n)
		c = t0 == n ? 0 : 1;
	else
		c = sadb__newest(t0, t1, sadb__cur_gen(db)) == 0 ? 1 : 0;
	atomic_store_explicit(&h->ha_tag[idx][c], SADB_TAG_WRITING, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	if (ha)
		h->ha[idx][c] = rec;
	else
		memset(&h->ha[idx][c], 0, sizeof(h->ha[idx][c]));
	h->ha_used[idx][c] = ha != NULL;
	atomic_store_explicit(&h->ha_tag[idx][c], n, memory_order_release);
	sadb__jappend(db, SADB_CHG_HOME_AGENT, idx);
	return sadb__op_end(db, 0);
}

int sadb_home_agent_get(const struct sadb *db, unsigned idx, struct sadb_home_agent *out)
{
	const struct sadb_hdr *h;
	unsigned bad_sum = 0;

	if (!db || !out)
		return sadb__bad_arg(db, "sadb_home_agent_get: NULL argument");
	if (idx >= SADB_HA_MAX)
		return sadb__bad_arg(db, "sadb_home_agent_get: no such record (0 to SADB_HA_MAX - 1)");
	h = db->h;
	for (unsigned attempt = 0; attempt < SADB_READ_RETRIES; attempt++) {
		uint64_t g = atomic_load_explicit(&h->gen, memory_order_acquire);
		uint64_t t0 = atomic_load_explicit(&h->ha_tag[idx][0], memory_order_acquire);
		uint64_t t1 = atomic_load_explicit(&h->ha_tag[idx][1], memory_order_acquire);
		int c = sadb__newest(t0 == SADB_TAG_WRITING ? 0 : t0, t1 == SADB_TAG_WRITING ? 0 : t1, g);
		uint32_t used;

		if (c < 0) {
			sadb__set_err(db, "no home agent record %u is configured", idx);
			return -ENOENT;
		}
		used = h->ha_used[idx][c];
		memcpy(out, &h->ha[idx][c], sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&h->ha_tag[idx][c], memory_order_relaxed) != (c ? t1 : t0)) {
			sadb__read_retry();
			continue;
		}
		if (!used) {
			sadb__set_err(db, "no home agent record %u is configured", idx);
			return -ENOENT;
		}
		if (out->checksum == ha_checksum(out))
			return 0;
		if (++bad_sum > 16) {
			sadb__set_err(db, "home agent record %u fails its checksum", idx);
			return -EIO;
		}
		sadb__read_retry();
	}
	sadb__set_err(db, "read of home agent record %u kept racing with writers; gave up", idx);
	return -EAGAIN;
}
