/* ipsecctl/ipsecctl_check.c: the validation of a parsed configuration as a whole, before anything is
 * applied: duplicate SAs and policies within the file and against the SADB, duplicate mobile
 * nodes, policies whose reqid no SA of the right protocol and mode carries, keys shared between
 * SAs, then libsadb's own checks of each SA and policy. It runs only on a file that parsed
 * cleanly, reports every problem it finds, and keeps to sorted arrays so that large files against
 * large SADBs stay O(n log n). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl_conf.h"

/* Equal as libsadb stores them: an "any" side takes the other side's family with a /0 prefix. */
static void side(const struct sadb_selector *s, bool src, uint8_t *fam, const uint8_t **b,
		 uint8_t *plen)
{
	static const uint8_t zero[16];
	const struct sadb_addr *a = src ? &s->src : &s->dst;

	*fam = a->family ? a->family : src ? s->dst.family : s->src.family;
	*b = a->family ? a->a.b : zero;
	*plen = src ? s->src_plen : s->dst_plen;
}

/* Validation keys: sorted arrays instead of pairwise scans, so a file with 100k SAs against an SADB
 * holding a million validates in O(n log n). */
struct sa_key {
	uint32_t spi;
	uint8_t proto, fam;
	uint8_t a[16];
	uint32_t idx;
};

struct pol_key {
	uint32_t prio;
	uint8_t dir, proto, fs, ps, fd, pd;
	uint16_t sp_lo, sp_hi, dp_lo, dp_hi;
	uint8_t as[16], ad[16];
	uint32_t idx, id;           /* item index (file) or policy id (SADB) */
};

struct rq_key {
	uint32_t reqid;
	uint8_t proto, mode;
};

static void sa_key_make(struct sa_key *k, const struct sadb_sa *sa, uint32_t idx)
{
	memset(k, 0, sizeof(*k));
	k->spi = sa->spi;
	k->proto = sa->proto;
	k->fam = sa->dst.family;
	memcpy(k->a, sa->dst.a.b, sa->dst.family == AF_INET ? 4 : 16);
	k->idx = idx;
}

static int sa_key_cmp(const void *x, const void *y)
{
	const struct sa_key *a = x, *b = y;
	int r;

	if (a->spi != b->spi)
		return a->spi < b->spi ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	if (a->fam != b->fam)
		return a->fam < b->fam ? -1 : 1;
	if ((r = memcmp(a->a, b->a, 16)))
		return r;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void pol_key_make(struct pol_key *k, const struct sadb_policy *p, uint32_t idx)
{
	const uint8_t *b;

	memset(k, 0, sizeof(*k));
	k->prio = p->priority;
	k->dir = p->dir;
	k->proto = p->sel.proto;
	k->sp_lo = p->sel.sport_lo;
	k->sp_hi = p->sel.sport_hi;
	k->dp_lo = p->sel.dport_lo;
	k->dp_hi = p->sel.dport_hi;
	side(&p->sel, true, &k->fs, &b, &k->ps);
	memcpy(k->as, b, k->fs == AF_INET ? 4 : 16);
	side(&p->sel, false, &k->fd, &b, &k->pd);
	memcpy(k->ad, b, k->fd == AF_INET ? 4 : 16);
	k->idx = idx;
	k->id = p->id;
}

static int pol_key_cmp_noidx(const void *x, const void *y)
{
	const struct pol_key *a = x, *b = y;

	return memcmp(a, b, offsetof(struct pol_key, idx));
}

static int pol_key_cmp(const void *x, const void *y)
{
	const struct pol_key *a = x, *b = y;
	int r = pol_key_cmp_noidx(x, y);

	return r ? r : a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int rq_cmp(const void *x, const void *y)
{
	const struct rq_key *a = x, *b = y;

	if (a->reqid != b->reqid)
		return a->reqid < b->reqid ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	return a->mode < b->mode ? -1 : a->mode > b->mode;
}

/* Whether any entry has reqid (rq sorted by reqid first). */
static bool rq_has(const struct rq_key *rq, size_t n, uint32_t reqid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rq[mid].reqid < reqid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && rq[lo].reqid == reqid;
}

bool ctl_reload_replaces_sa(const struct ctl_conf *c, const struct sadb_sa *sa)
{
	return c->manual && sa->ike_id == 0 && sa->state != SADB_STATE_LARVAL;
}

bool ctl_reload_replaces_pol(const struct ctl_conf *c, const struct sadb_policy *p)
{
	return c->manual && p->ike_id == 0;
}

struct vstate {
	struct sa_key *sk;
	struct pol_key *pk, *dbp;
	struct rq_key *rq;
	uint32_t *dup_of;           /* per item: the first item it duplicates, or itself */
	size_t nsk, npk, ndbp, nrq, caprq, capdbp;
};

static int vstate_build(struct vstate *v, struct ctl_conf *c, const struct sadb *db, unsigned flush)
{
	memset(v, 0, sizeof(*v));
	v->dup_of = calloc(c->n + 1, sizeof(*v->dup_of));
	v->sk = calloc(c->n + 1, sizeof(*v->sk));
	v->pk = calloc(c->n + 1, sizeof(*v->pk));
	v->caprq = c->n + 64;
	v->rq = calloc(v->caprq, sizeof(*v->rq));
	if (!v->dup_of || !v->sk || !v->pk || !v->rq)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		v->dup_of[i] = (uint32_t)i;
		if (c->items[i].kind == CTL_IT_SA) {
			sa_key_make(&v->sk[v->nsk++], &c->items[i].sa, (uint32_t)i);
			v->rq[v->nrq++] = (struct rq_key){ c->items[i].sa.reqid, c->items[i].sa.proto,
							   c->items[i].sa.mode };
		} else if (c->items[i].kind == CTL_IT_POLICY) {
			pol_key_make(&v->pk[v->npk++], &c->items[i].pol, (uint32_t)i);
		}
	}
	qsort(v->sk, v->nsk, sizeof(*v->sk), sa_key_cmp);
	for (size_t i = 1; i < v->nsk; i++) {
		struct sa_key a = v->sk[i - 1], b = v->sk[i];

		a.idx = b.idx = 0;
		if (!sa_key_cmp(&a, &b))
			v->dup_of[v->sk[i].idx] = v->dup_of[v->sk[i - 1].idx];
	}
	qsort(v->pk, v->npk, sizeof(*v->pk), pol_key_cmp);
	for (size_t i = 1; i < v->npk; i++)
		if (!pol_key_cmp_noidx(&v->pk[i - 1], &v->pk[i]))
			v->dup_of[v->pk[i].idx] = v->dup_of[v->pk[i - 1].idx];
	if (db && !(flush & CTL_FLUSH_SA)) {
		uint32_t cur = 0;
		struct sadb_sa sa;

		while (sadb_sa_next(db, &cur, &sa, NULL) == 0) {
			if (ctl_reload_replaces_sa(c, &sa))
				continue;
			if (v->nrq == v->caprq) {
				struct rq_key *r = realloc(v->rq, 2 * v->caprq * sizeof(*r));

				if (!r) {
					explicit_bzero(&sa, sizeof(sa));
					return -ENOMEM;
				}
				v->rq = r;
				v->caprq *= 2;
			}
			v->rq[v->nrq++] = (struct rq_key){ sa.reqid, sa.proto, sa.mode };
		}
		explicit_bzero(&sa, sizeof(sa));
	}
	qsort(v->rq, v->nrq, sizeof(*v->rq), rq_cmp);
	if (db && !(flush & CTL_FLUSH_POL)) {
		uint32_t cur = 0;
		struct sadb_policy o;

		while (sadb_policy_next(db, &cur, &o) == 0) {
			if (ctl_reload_replaces_pol(c, &o))
				continue;
			if (v->ndbp == v->capdbp) {
				size_t cap = v->capdbp ? 2 * v->capdbp : 64;
				struct pol_key *r = realloc(v->dbp, cap * sizeof(*r));

				if (!r)
					return -ENOMEM;
				v->dbp = r;
				v->capdbp = cap;
			}
			pol_key_make(&v->dbp[v->ndbp++], &o, 0);
		}
		if (v->ndbp)
			qsort(v->dbp, v->ndbp, sizeof(*v->dbp), pol_key_cmp_noidx);
	}
	return 0;
}

static void vstate_free(struct vstate *v)
{
	free(v->dup_of);
	free(v->sk);
	free(v->pk);
	free(v->dbp);
	free(v->rq);
}

/* Key reuse. No two SAs may share a key: the rule is about the bytes the SAs would use, whatever
 * the text looked like ("0xAB" and "ab" are one key), and it holds across the two directions of a
 * pair, every SA of the file and the SAs already in the SADB.
 *  - GCM, GMAC (ESP and AH), CTR and ChaCha20-Poly1305 build their nonce from the salt and the
 *    sequence number: two SAs with the same key and salt send the same nonces from packet 1 on,
 *    which gives away the GHASH/Poly1305 key and XORs of plaintexts. A different salt alone keeps
 *    the nonces apart, but nothing derives keys that way (IKE draws key and salt together), so
 *    the cipher key is compared without the salt and a different salt does not make it another key.
 *  - CBC and HMAC are not broken at once by a shared key, but an ICV tells SAs apart only by
 *    the SPI, and SPIs are unique only per destination: two SAs with one integrity key and one SPI
 *    (the directions of "spi 0x1000:0x1000", or one SPI towards two peers) accept each other's
 *    packets, our own reflected back among them, and each replay window knows only its own SA's.
 *    Nothing legitimate shares a key, so it is refused whatever the SPIs.
 * So every encryption key and every integrity key is compared with every other one of the same
 * length, whatever the transforms (an AH GMAC key and salt used as an ESP CTR key and nonce give
 * the same counter blocks), another SA's or the SA's own (keys are independent, as IKE derives
 * them: an SA's encryption key is not its integrity key). The entries point into the items (no
 * copy of the key bytes); sorting keeps it O(n log n), and the SADB is streamed against the
 * sorted file keys, so a large SADB costs no memory. */
enum { KEY_ENC, KEY_AUTH };
enum { KREF_NONE, KREF_FILE, KREF_SADB };

struct key_ent {
	const uint8_t *k, *salt;
	uint8_t len, slen, what;    /* what: KEY_ENC or KEY_AUTH */
	uint32_t item;
};

/* The first SA that had a key, as the message about a later one names it. */
struct key_ref {
	uint8_t from, what;         /* KREF_*, KEY_* */
	uint8_t slen;
	uint8_t salt[SADB_SALT_MAX];
	uint32_t item;              /* KREF_FILE */
	uint32_t spi;               /* KREF_SADB: the SADB's SA */
	uint8_t proto;
	struct sadb_addr dst;
};

/* An SA's key of one kind and the salt that goes with it (ESP: the cipher's; AH: GMAC's). */
static bool key_of(const struct sadb_sa *sa, uint8_t what, struct key_ent *e, uint32_t item)
{
	e->what = what;
	e->item = item;
	e->salt = sa->salt;
	if (what == KEY_ENC) {
		e->k = sa->enc_key;
		e->len = sa->proto == SADB_PROTO_ESP ? sa->enc_key_len : 0;
		e->slen = sa->proto == SADB_PROTO_ESP ? sa->salt_len : 0;
	} else {
		e->k = sa->auth_key;
		e->len = sa->auth_alg ? sa->auth_key_len : 0;
		e->slen = sa->proto == SADB_PROTO_AH ? sa->salt_len : 0;
	}
	if (e->len > (what == KEY_ENC ? SADB_ENC_KEY_MAX : SADB_AUTH_KEY_MAX))
		e->len = 0; /* not a key this check can compare (libsadb refuses it anyway) */
	if (e->slen > SADB_SALT_MAX)
		e->slen = 0;
	return e->len > 0;
}

static int key_ent_cmp_bytes(const struct key_ent *a, const struct key_ent *b)
{
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->k, b->k, a->len);
}

/* Equal keys in file order: the SA written first is the one the others are compared with. */
static int key_ent_cmp(const void *x, const void *y)
{
	const struct key_ent *a = x, *b = y;
	int r = key_ent_cmp_bytes(a, b);

	if (r)
		return r;
	if (a->item != b->item)
		return a->item < b->item ? -1 : 1;
	return a->what < b->what ? -1 : a->what > b->what;
}

/* Whether the SADB's SA is one that this configuration replaces (sa update: same identity). */
static bool key_replaced(const struct ctl_conf *c, const struct sadb_sa *sa)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct sadb_sa *f = &c->items[i].sa;

		if (c->items[i].kind == CTL_IT_SA && f->spi == sa->spi && f->proto == sa->proto &&
		    f->dst.family == sa->dst.family && !memcmp(f->dst.a.b, sa->dst.a.b,
							       sa->dst.family == AF_INET ? 4 : 16))
			return true;
	}
	return false;
}

/* refs[2 * item + what]: the earlier SA with the same key, KREF_NONE if there is none. db may be
 * NULL (no SADB, or one that the configuration flushes first). */
static int key_refs_build(const struct ctl_conf *c, const struct sadb *db, struct key_ref **out)
{
	struct key_ent *e = calloc(2 * c->n + 1, sizeof(*e));
	struct key_ref *refs = calloc(2 * c->n + 1, sizeof(*refs)), *dbref = NULL;
	size_t n = 0;

	*out = refs;
	if (!e || !refs) {
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (c->items[i].kind != CTL_IT_SA)
			continue;
		for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++)
			if (key_of(&c->items[i].sa, w, &e[n], (uint32_t)i))
				n++;
	}
	qsort(e, n, sizeof(*e), key_ent_cmp);
	if (db && n) {
		uint32_t cur = 0;
		struct sadb_sa sa;

		if (!(dbref = calloc(n, sizeof(*dbref)))) {
			free(e);
			return -ENOMEM;
		}
		while (sadb_sa_next(db, &cur, &sa, NULL) == 0) {
			if ((c->replace && key_replaced(c, &sa)) || ctl_reload_replaces_sa(c, &sa))
				continue;
			for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++) {
				struct key_ent probe;
				size_t lo = 0, hi = n;

				if (!key_of(&sa, w, &probe, 0))
					continue;
				while (lo < hi) {
					size_t mid = lo + (hi - lo) / 2;

					if (key_ent_cmp_bytes(&e[mid], &probe) < 0)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo == n || key_ent_cmp_bytes(&e[lo], &probe) || dbref[lo].from)
					continue;
				dbref[lo] = (struct key_ref){ .from = KREF_SADB, .what = w,
							      .slen = probe.slen, .spi = sa.spi,
							      .proto = sa.proto, .dst = sa.dst };
				memcpy(dbref[lo].salt, probe.salt, probe.slen);
			}
		}
		explicit_bzero(&sa, sizeof(sa));
	}
	for (size_t g = 0, i; g < n; g = i) {
		struct key_ref first;

		if (dbref && dbref[g].from) {
			first = dbref[g];
			i = g;
		} else {
			first = (struct key_ref){ .from = KREF_FILE, .what = e[g].what,
						  .slen = e[g].slen, .item = e[g].item };
			memcpy(first.salt, e[g].salt, e[g].slen);
			i = g + 1;
		}
		for (; i < n && !key_ent_cmp_bytes(&e[g], &e[i]); i++)
			refs[2 * e[i].item + e[i].what] = first;
		explicit_bzero(&first, sizeof(first));
	}
	if (dbref)
		explicit_bzero(dbref, n * sizeof(*dbref));
	free(dbref);
	free(e);
	return 0;
}

/* "key of SA spi 0x00001001 is the key (and salt) of SA spi 0x00001000 (f:1:58): ..." */
static void key_report(struct ctl_conf *c, size_t i, uint8_t what, const struct key_ref *r)
{
	const struct ctl_item *it = &c->items[i];
	const char *name = what == KEY_ENC ? "key" : "authkey";
	const char *rname = r->what == KEY_ENC ? "key" : "authkey";
	struct ctl_pos pos = what == KEY_ENC ? it->key_pos : it->authkey_pos, rpos;
	struct key_ent mine;
	char where[INET6_ADDRSTRLEN + 96], buf[INET6_ADDRSTRLEN];
	bool salted, same_salt;

	key_of(&it->sa, what, &mine, (uint32_t)i);
	salted = mine.slen && r->slen;
	same_salt = salted && mine.slen == r->slen && !memcmp(mine.salt, r->salt, r->slen);
	if (r->from == KREF_FILE && r->item == i) {
		ctl_conf_error(c, pos, "%s of SA spi 0x%08x is its own %s: encryption and integrity "
			       "need keys of their own", name, it->sa.spi, rname);
		return;
	}
	if (r->from == KREF_SADB) {
		snprintf(where, sizeof(where), "%s to %s, already in the SADB",
			 ctl_proto_name(r->proto), ctl_addr_str(&r->dst, buf, sizeof(buf)));
	} else {
		rpos = r->what == KEY_ENC ? c->items[r->item].key_pos :
			c->items[r->item].authkey_pos;
		if (rpos.line)
			snprintf(where, sizeof(where), "(%s:%u:%u)", c->src, rpos.line, rpos.col);
		else
			snprintf(where, sizeof(where), "(argument %u)", rpos.col);
	}
	ctl_conf_error(c, pos, "%s of SA spi 0x%08x is the %s%s of SA spi 0x%08x %s: two SAs must "
		       "never share a key%s", name, it->sa.spi, rname, same_salt ? " (and salt)" : "",
		       r->from == KREF_SADB ? r->spi : c->items[r->item].sa.spi, where,
		       same_salt ? ": with a counter-mode cipher both would send the same nonces" :
		       salted ? ", not even with different salts" : "");
}

static int mn_cmp(const void *x, const void *y)
{
	const struct ctl_mobile_node *a = x, *b = y;
	int r = memcmp(a->hoa.a.b, b->hoa.a.b, 16);

	if (r)
		return r;
	if (a->pos.line != b->pos.line)
		return a->pos.line < b->pos.line ? -1 : 1;
	return a->pos.col < b->pos.col ? -1 : a->pos.col > b->pos.col;
}

/* The statements of the mobile nodes that mn_dups refused: their SAs and policies are of course
 * duplicates too, which would only repeat the message. */
struct mn_dup_list {
	struct ctl_pos *v;
	size_t n;
};

static bool mn_dup_stmt(const struct mn_dup_list *d, struct ctl_pos pos)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].line == pos.line && d->v[i].col == pos.col)
			return true;
	return false;
}

/* One mobile-node statement per home address: the home agent keeps one binding per home address,
 * and two statements would give it two sets of SAs to move. Sorted, so that a home agent with
 * thousands of mobile nodes validates in O(n log n). */
static int mn_dups(struct ctl_conf *c, struct mn_dup_list *d)
{
	struct ctl_mobile_node *v;
	char buf[INET6_ADDRSTRLEN];

	d->v = NULL;
	d->n = 0;
	if (c->nmn < 2)
		return 0;
	if (!(d->v = calloc(c->nmn, sizeof(*d->v))))
		return -ENOMEM;
	if (!(v = malloc(c->nmn * sizeof(*v))))
		return -ENOMEM;
	memcpy(v, c->mn, c->nmn * sizeof(*v));
	qsort(v, c->nmn, sizeof(*v), mn_cmp);
	for (size_t i = 1, first = 0; i < c->nmn; i++) {
		if (memcmp(v[i].hoa.a.b, v[first].hoa.a.b, 16)) {
			first = i;
			continue;
		}
		ctl_conf_error(c, v[i].pos, "duplicate mobile-node: home address %s already has one at "
			       "line %u", ctl_addr_str(&v[i].hoa, buf, sizeof(buf)), v[first].pos.line);
		d->v[d->n++] = v[i].stmt;
	}
	free(v);
	return 0;
}

int ctl_conf_validate(struct ctl_conf *c, const struct sadb *db)
{
	unsigned flush = 0;
	char msg[256], buf[INET6_ADDRSTRLEN];
	struct vstate v;
	struct key_ref *refs = NULL;
	const struct sadb *keydb = db;
	struct mn_dup_list mnd = { NULL, 0 };
	int rc;

	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_FLUSH)
			flush |= c->items[i].flush;
	/* SAs that replace the SADB's (sa update) are no duplicates of them; their keys still must
	 * not be another SA's. SAs that a flush removes first share nothing with the file. */
	if (c->replace)
		db = NULL;
	if (flush & CTL_FLUSH_SA)
		keydb = NULL;
	memset(&v, 0, sizeof(v));
	rc = mn_dups(c, &mnd);
	if (rc == 0)
		rc = vstate_build(&v, c, db, flush);
	if (rc == 0)
		rc = key_refs_build(c, keydb, &refs);
	if (rc) {
		vstate_free(&v);
		free(refs);
		free(mnd.v);
		ctl_conf_error(c, (struct ctl_pos){ 0, 0, NULL }, "out of memory while validating");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];

		if (it->kind == CTL_IT_SA) {
			const struct sadb_sa *sa = &it->sa;

			if (v.dup_of[i] != i) {
				if (!mn_dup_stmt(&mnd, it->pos))
					ctl_conf_error(c, it->spi_pos, "duplicate SA: spi 0x%08x %s to %s is "
						       "already defined at line %u", sa->spi,
						       ctl_proto_name(sa->proto),
						       ctl_addr_str(&sa->dst, buf, sizeof(buf)),
						       c->items[v.dup_of[i]].pos.line);
			} else if (db && !(flush & CTL_FLUSH_SA)) {
				struct sadb_sa cur;

				if (sadb_sa_lookup(db, sa->spi, sa->proto, &sa->dst, &cur, NULL) == 0 &&
				    !ctl_reload_replaces_sa(c, &cur))
					ctl_conf_error(c, it->spi_pos, "duplicate SA: spi 0x%08x %s to %s "
						       "already exists in the SADB%s", sa->spi,
						       ctl_proto_name(sa->proto),
						       ctl_addr_str(&sa->dst, buf, sizeof(buf)),
						       !c->manual ? "" : cur.ike_id ?
						       " (negotiated by IKE)" : " (an SPI IKE reserved)");
				explicit_bzero(&cur, sizeof(cur));
			}
			for (uint8_t w = KEY_ENC; w <= KEY_AUTH; w++)
				if (refs[2 * i + w].from != KREF_NONE)
					key_report(c, i, w, &refs[2 * i + w]);
			if (sadb_sa_validate(sa, msg, sizeof(msg)))
				ctl_conf_error(c, it->pos, "invalid SA spi 0x%08x: %s", sa->spi, msg);
		} else if (it->kind == CTL_IT_POLICY) {
			const struct sadb_policy *pol = &it->pol;
			struct pol_key k;
			const struct pol_key *hit;

			pol_key_make(&k, pol, (uint32_t)i);
			if (v.dup_of[i] != i) {
				if (!mn_dup_stmt(&mnd, it->pos))
					ctl_conf_error(c, it->pos, "duplicate policy: the same direction, "
						       "selector and priority as line %u",
						       c->items[v.dup_of[i]].pos.line);
			} else if (v.ndbp && (hit = bsearch(&k, v.dbp, v.ndbp, sizeof(k),
							    pol_key_cmp_noidx))) {
				ctl_conf_error(c, it->pos, "duplicate policy: the SADB has one with the "
					       "same direction, selector and priority (id %u)", hit->id);
			}
			if (pol->action == SADB_ACT_PROTECT) {
				struct rq_key want = { pol->reqid, pol->proto, pol->mode };
				bool found = rq_has(v.rq, v.nrq, pol->reqid);
				bool fits = v.nrq && bsearch(&want, v.rq, v.nrq, sizeof(want), rq_cmp);

				if (found && !fits)
					ctl_conf_error(c, it->reqid_pos, "policy protects with %s %s, but the "
						       "SAs with reqid %u are not %s %s SAs",
						       ctl_proto_name(pol->proto),
						       ctl_mode_name(pol->mode), pol->reqid,
						       ctl_proto_name(pol->proto),
						       ctl_mode_name(pol->mode));
				if (!found)
					ctl_conf_error(c, it->reqid_pos, "policy names reqid %u, but no SA "
						       "has that reqid (%s)", pol->reqid,
						       it->pos.line == 0 ? "in the SADB" :
						       db ? "in this file or the SADB" : "in this file");
			}
			if (sadb_policy_validate(pol, msg, sizeof(msg)))
				ctl_conf_error(c, it->pos, "invalid policy: %s", msg);
		}
	}
	vstate_free(&v);
	free(mnd.v);
	explicit_bzero(refs, (2 * c->n + 1) * sizeof(*refs));
	free(refs);
	return c->nerr ? -EINVAL : 0;
}

