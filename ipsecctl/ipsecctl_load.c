/* ipsecctl/ipsecctl_load.c: the writes of ipsecctl that go through the configuration language: `load
 * FILE` (and OpenBSD's -f), `reload FILE`, `sa add|update ...` and `policy add ...`. All of a file
 * is parsed and validated before the SADB is touched, then applied in one transaction through
 * libsadb's writer API, so a bad file changes nothing; -n prints what would be applied instead.
 * reload makes the SADB's manually keyed entries exactly the file's, leaving alone what IKE
 * negotiated, and keeps the runtime state (sequence numbers, replay window, counters) of every SA
 * the file still has with the same keys, and the care-of address of every mobile node's tunnel SA
 * that the home agent moved. The home agent record is applied in the same transaction. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <syslog.h>
#include <string.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl_cmd.h"

/* A manual key outlives the SADB: flushed and loaded again, or after a reboot, an outbound SA with
 * a counter-mode cipher would start at sequence 1 and send its nonces again. xipsecd leases such
 * SAs' numbers from a mark in the state directory (SADB_SAF_SEQ_PERSIST); without a usable state
 * directory they are refused here, before anything changes. A key with no mark yet is used only
 * when the operator says it is new (--new-keys: SADB_SAF_SEQ_NEW): a lost, rolled-back or copied
 * mark looks the same as none, and xipsecd refuses the SA rather than send its nonces again.
 * Inbound, a manual key's replay window would start empty again and accept a recorded packet:
 * xipsecd holds it under a ceiling recorded in the same directory, with the same rule for a key
 * without a mark (SADB_SAF_SEQ_NEW from --new-keys, else the SA accepts nothing). */
static int seq_persist(struct ctl_conf *c, const struct ctl_opts *o)
{
	char msg[300];
	bool checked = false;

	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];

		if (it->kind != CTL_IT_SA || it->sa.ike_id)
			continue;
		if (it->sa.dir == SADB_DIR_IN && it->sa.replay_window &&
		    !(it->sa.flags & SADB_SAF_NO_REPLAY)) {
			/* xipsecd refuses it without a usable state directory, and says so */
			it->sa.flags |= o->new_keys ? SADB_SAF_SEQ_NEW : 0;
			continue;
		}
		if (it->sa.dir != SADB_DIR_OUT || !sadb_sa_counter_mode(&it->sa))
			continue;
		it->sa.flags |= SADB_SAF_SEQ_PERSIST | (o->new_keys ? SADB_SAF_SEQ_NEW : 0);
		if (checked)
			continue;
		int fd = sadb_state_dir_open(NULL, true, msg, sizeof(msg));
		if (fd < 0) {
			ctl_conf_error(c, it->pos, "SA spi 0x%08x uses %s with a manual key: its sequence "
				       "numbers are its nonces, and without a record of them outside the SADB "
				       "a reload or a reboot would send the same nonces again under the same "
				       "key. %s. Make the state directory usable (or point $%s at one), or "
				       "key this SA with IKE", it->sa.spi,
				       it->sa.enc_alg ? sadb_enc_name(it->sa.enc_alg) :
				       sadb_auth_name(it->sa.auth_alg), msg, SADB_ENV_STATE_DIR);
			fprintf(stderr, "%sipsecctl: nothing was changed\n", ctl_pri(LOG_ERR));
			return CTL_EXIT_ERR;
		}
		close(fd);
		checked = true;
	}
	return CTL_EXIT_OK;
}

/* Whether the configuration flushes everything (`flush`, `flush all`, -F): the home agent record
 * too, as it is part of the configuration. */
static bool flushes_all(const struct ctl_conf *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_FLUSH &&
		    c->items[i].flush == (CTL_FLUSH_SA | CTL_FLUSH_POL))
			return true;
	return false;
}

/* The home agent records the configuration leaves, in the caller's transaction: the file's
 * home-agent statements, record i the i-th, the records above them cleared; none when clear (a
 * flush of everything, a reload of a file without one); else the SADB's stay. An unchanged record
 * is not written again (its readers would reload it). Every record that changes is cleared before
 * any is set, so a prefix or an address may move between records (libsadb refuses two records
 * that share one). *what: "set", "cleared" or NULL. 0 or -1 (reported). */
static int apply_home_agent(struct ctl_conf *c, struct sadb *db, bool clear, const char **what)
{
	struct sadb_home_agent cur;
	bool change[SADB_HA_MAX] = { false };
	struct ctl_pos pos = c->n_ha ? c->ha_pos[0] : (struct ctl_pos){ 0 };
	int rc;

	*what = NULL;
	if (!c->n_ha && !clear)
		return 0;
	for (unsigned idx = 0; idx < SADB_HA_MAX; idx++) {
		bool have = sadb_home_agent_get(db, idx, &cur) == 0;

		change[idx] = idx < c->n_ha ? !have || !ctl_home_agent_same(&cur, &c->ha[idx]) : have;
		if (!change[idx] || !have)
			continue;
		if ((rc = sadb_home_agent_set(db, idx, NULL))) {
			ctl_conf_error(c, pos, "cannot clear home agent record %u: %s", idx, ctl_db_err(db, rc));
			return -1;
		}
		*what = "cleared";
	}
	for (unsigned idx = 0; idx < c->n_ha; idx++) {
		if (!change[idx])
			continue;
		if ((rc = sadb_home_agent_set(db, idx, &c->ha[idx]))) {
			ctl_conf_error(c, c->ha_pos[idx], "cannot set the home agent record: %s",
				       ctl_db_err(db, rc));
			return -1;
		}
		*what = "set";
	}
	return 0;
}

/* The sequence marks first (ahead of the SAs that need them), then one transaction for the whole
 * file: CTL_EXIT_OK with the transaction open, or the exit code, said. */
static int txn_begin(struct ctl_conf *c, const struct ctl_opts *o, struct sadb *db)
{
	int rc;

	if ((rc = seq_persist(c, o)) != CTL_EXIT_OK)
		return rc;
	if (sadb_txn_begin(db)) {
		ctl_err("cannot start a transaction: %s", sadb_errmsg(db));
		return CTL_EXIT_ERR;
	}
	return CTL_EXIT_OK;
}

/* A failed add or update of the SA item it, said at its position in the file. */
static void sa_write_error(struct ctl_conf *c, const struct ctl_item *it, bool update, struct sadb *db,
			   int rc)
{
	char buf[INET6_ADDRSTRLEN];

	ctl_conf_error(c, it->pos, "cannot %s SA spi 0x%08x %s to %s: %s", update ? "update" : "add",
		       it->sa.spi, ctl_proto_name(it->sa.proto),
		       ctl_addr_str(&it->sa.dst, buf, sizeof(buf)), ctl_db_err(db, rc));
}

/* Apply the parsed and validated items in one transaction. */
static int apply(struct ctl_conf *c, struct sadb *db, const struct ctl_opts *o, bool update)
{
	unsigned nsa = 0, npol = 0;
	const char *ha_what;
	int rc;

	if ((rc = txn_begin(c, o, db)) != CTL_EXIT_OK)
		return rc;
	for (size_t i = 0; i < c->n; i++) {
		struct ctl_item *it = &c->items[i];
		uint32_t id = 0;

		switch (it->kind) {
		case CTL_IT_FLUSH:
			if (it->flush & CTL_FLUSH_POL)
				rc = sadb_policy_flush(db);
			if (rc >= 0 && (it->flush & CTL_FLUSH_SA))
				rc = sadb_sa_flush(db, SADB_PROTO_ANY);
			if (rc < 0) {
				ctl_conf_error(c, it->pos, "cannot flush: %s", sadb_errmsg(db));
				goto fail;
			}
			rc = 0;
			break;
		case CTL_IT_SA:
			rc = update ? sadb_sa_update(db, &it->sa) : sadb_sa_add(db, &it->sa, NULL);
			if (rc) {
				sa_write_error(c, it, update, db, rc);
				goto fail;
			}
			nsa++;
			break;
		case CTL_IT_POLICY:
			rc = sadb_policy_add(db, &it->pol, &id);
			if (rc) {
				ctl_conf_error(c, it->pos, "cannot add policy: %s",
					       ctl_db_err(db, rc));
				goto fail;
			}
			if (o->verbose)
				fprintf(stderr, "%sipsecctl: policy id %u\n", ctl_pri(LOG_INFO), id);
			npol++;
			break;
		}
	}
	if (apply_home_agent(c, db, flushes_all(c), &ha_what))
		goto fail;
	if ((rc = sadb_txn_commit(db))) {
		ctl_err("cannot commit: %s", sadb_errmsg(db));
		sadb_txn_abort(db);
		return CTL_EXIT_ERR;
	}
	if (o->verbose)
		fprintf(stderr, "%sipsecctl: applied %u SA(s) and %u policy(ies)%s%s, generation %"
			PRIu64 "\n", ctl_pri(LOG_INFO), nsa, npol, ha_what ? ", home agent " : "",
			ha_what ? ha_what : "", sadb_generation(db));
	return CTL_EXIT_OK;
fail:
	sadb_txn_abort(db);
	fprintf(stderr, "%sipsecctl: nothing was changed\n", ctl_pri(LOG_ERR));
	return CTL_EXIT_ERR;
}

/* ---- reload ---- */

static bool sa_same_keys(const struct sadb_sa *a, const struct sadb_sa *b)
{
	return a->enc_alg == b->enc_alg && a->auth_alg == b->auth_alg &&
	       a->enc_key_len == b->enc_key_len && a->salt_len == b->salt_len &&
	       a->auth_key_len == b->auth_key_len &&
	       !memcmp(a->enc_key, b->enc_key, sizeof(a->enc_key)) &&
	       !memcmp(a->salt, b->salt, sizeof(a->salt)) &&
	       !memcmp(a->auth_key, b->auth_key, sizeof(a->auth_key));
}

/* The SADB's copy and the file's SA say the same (libsadb's own fields aside). A difference in
 * padding only makes an SA look changed: it is then updated in place, which is still right. */
static bool sa_unchanged(const struct sadb_sa *db, const struct sadb_sa *f)
{
	struct sadb_sa t = *f;
	bool same;

	t.created = db->created;
	t.instance = db->instance;
	t.checksum = db->checksum;
	same = !memcmp(&t, db, sizeof(t));
	explicit_bzero(&t, sizeof(t));
	return same;
}

static bool pol_same(const struct sadb_policy *a, const struct sadb_policy *b)
{
	return a->dir == b->dir && a->action == b->action && a->proto == b->proto &&
	       a->mode == b->mode && a->priority == b->priority && a->reqid == b->reqid &&
	       !memcmp(&a->sel, &b->sel, sizeof(a->sel)) &&
	       sadb_addr_eq(&a->tun_src, &b->tun_src) && sadb_addr_eq(&a->tun_dst, &b->tun_dst);
}

/* A mobile node's tunnel SA: the home agent moves its outer endpoint on the mobile node's side to
 * the care-of address (and back home), so the SADB's copy may have one the file cannot know. */
static bool rl_mobile_tunnel(const struct sadb_sa *sa)
{
	return (sa->flags & SADB_SAF_MOBILE) && sa->mode == SADB_MODE_TUNNEL;
}

/* The item that is the SADB's SA sa: the one of the same identity; else, for an outbound mobile
 * tunnel SA that the home agent moved (its destination is the care-of address, not the file's
 * home address), the one with its SPI, protocol, home agent address and selector (which names
 * the home address) whose own identity the SADB does not hold; and for a mobile tunnel SA moved
 * to an IPv4 care-of address (DSMIPv6: both ends in IPv4, the home agent's its record's IPv4
 * address), in either direction, the one with its SPI, protocol and selector. c->n when there is
 * none. */
static size_t rl_find(const struct ctl_conf *c, const struct sadb *db, const struct sadb_sa *sa)
{
	size_t i, moved = c->n;

	for (i = 0; i < c->n; i++) {
		const struct sadb_sa *f = &c->items[i].sa;

		if (c->items[i].kind != CTL_IT_SA || f->spi != sa->spi || f->proto != sa->proto)
			continue;
		if (sadb_addr_eq(&f->dst, &sa->dst))
			return i;
		if (moved == c->n && sa->dir == f->dir && rl_mobile_tunnel(sa) && rl_mobile_tunnel(f) &&
		    !memcmp(&f->sel, &sa->sel, sizeof(f->sel)) &&
		    ((sa->dir == SADB_DIR_OUT && sadb_addr_eq(&f->src, &sa->src)) ||
		     (sa->dst.family == AF_INET && f->dst.family == AF_INET6)))
			moved = i;
	}
	if (moved < c->n) {
		const struct sadb_sa *f = &c->items[moved].sa;
		struct sadb_sa other;

		if (sadb_sa_lookup(db, f->spi, f->proto, &f->dst, &other, NULL) == 0)
			moved = c->n;
		explicit_bzero(&other, sizeof(other));
	}
	return moved;
}

enum { RL_ADD = 0, RL_KEEP, RL_UPDATE };

struct rl_sa_id {
	uint32_t spi;
	uint8_t proto;
	struct sadb_addr dst;
};

struct rl_plan {
	unsigned char *what;        /* per item: RL_ADD, RL_KEEP or RL_UPDATE */
	struct rl_sa_id *del_sa;    /* manual SAs to delete (gone from the file, or rekeyed) */
	uint32_t *del_pol;          /* manual policies to delete */
	size_t ndel_sa, ndel_pol, nrekey;
};

/* Which items the SADB already has, and which manual entries go: read before any change. */
static int rl_plan(struct ctl_conf *c, struct sadb *db, struct rl_plan *pl)
{
	size_t cap_sa = 64, cap_pol = 64;
	uint32_t cur = 0;
	struct sadb_sa sa;
	struct sadb_policy pol;
	int rc = 0;

	memset(pl, 0, sizeof(*pl));
	pl->what = calloc(c->n + 1, 1);
	pl->del_sa = calloc(cap_sa, sizeof(*pl->del_sa));
	pl->del_pol = calloc(cap_pol, sizeof(*pl->del_pol));
	if (!pl->what || !pl->del_sa || !pl->del_pol)
		return -ENOMEM;
	while (rc == 0 && sadb_sa_next(db, &cur, &sa, NULL) == 0) {
		size_t i;
		bool gone = true;

		if (!ctl_reload_replaces_sa(c, &sa))
			continue;
		i = rl_find(c, db, &sa);
		/* A live binding survives the reload: the mobile node's side of a mobile tunnel SA stays
		 * where the home agent put it (its care-of address, and NAT-T ports), even with a new key;
		 * the home agent's side is the file's. */
		if (i < c->n && rl_mobile_tunnel(&sa) && rl_mobile_tunnel(&c->items[i].sa) &&
		    c->items[i].sa.dir == sa.dir) {
			struct sadb_sa *f = &c->items[i].sa;

			if (sa.dst.family == AF_INET && f->dst.family == AF_INET6) {
				f->src = sa.src;  /* an IPv4 care-of address: both ends moved */
				f->dst = sa.dst;
			} else if (sa.dir == SADB_DIR_OUT) {
				f->dst = sa.dst;
			} else {
				f->src = sa.src;
			}
			f->encap_sport = sa.encap_sport;
			f->encap_dport = sa.encap_dport;
		}
		if (i < c->n && sa_same_keys(&sa, &c->items[i].sa)) {
			/* The operator's word that the key is new (--new-keys) stays with the SA while
			 * the key does: the units' plain reload neither takes it back nor counts as a
			 * change. Its numbers stay bounded by the SA's runtime area and its mark. */
			c->items[i].sa.flags |= sa.flags & SADB_SAF_SEQ_NEW;
			pl->what[i] = sa_unchanged(&sa, &c->items[i].sa) ? RL_KEEP : RL_UPDATE;
			gone = false;
		} else if (i < c->n) {
			/* a new key starts over: fresh sequence numbers and replay window */
			pl->nrekey++;
		}
		if (gone) {
			if (pl->ndel_sa == cap_sa) {
				struct rl_sa_id *n = realloc(pl->del_sa, 2 * cap_sa * sizeof(*n));

				if (!n) {
					rc = -ENOMEM;
					break;
				}
				pl->del_sa = n;
				cap_sa *= 2;
			}
			pl->del_sa[pl->ndel_sa++] = (struct rl_sa_id){ sa.spi, sa.proto, sa.dst };
		}
	}
	explicit_bzero(&sa, sizeof(sa));
	cur = 0;
	while (rc == 0 && sadb_policy_next(db, &cur, &pol) == 0) {
		size_t i;

		if (!ctl_reload_replaces_pol(c, &pol))
			continue;
		for (i = 0; i < c->n; i++)
			if (c->items[i].kind == CTL_IT_POLICY && pl->what[i] != RL_KEEP &&
			    pol_same(&pol, &c->items[i].pol))
				break;
		if (i < c->n) {
			pl->what[i] = RL_KEEP;
			continue;
		}
		if (pl->ndel_pol == cap_pol) {
			uint32_t *n = realloc(pl->del_pol, 2 * cap_pol * sizeof(*n));

			if (!n) {
				rc = -ENOMEM;
				break;
			}
			pl->del_pol = n;
			cap_pol *= 2;
		}
		pl->del_pol[pl->ndel_pol++] = pol.id;
	}
	return rc;
}

static void rl_plan_free(struct rl_plan *pl)
{
	free(pl->what);
	free(pl->del_sa);
	free(pl->del_pol);
}

/* Apply a reload in one transaction: the deletions first (so a rekeyed SA's identity is free),
 * then the SAs, then the policies that name them. */
static int apply_reload(struct ctl_conf *c, struct sadb *db, const struct ctl_opts *o)
{
	char buf[INET6_ADDRSTRLEN];
	unsigned n[3][2] = { { 0 } }; /* [RL_*][0 SA, 1 policy] */
	const char *ha_what;
	struct rl_plan pl;
	int rc;

	if ((rc = txn_begin(c, o, db)) != CTL_EXIT_OK)
		return rc;
	if ((rc = rl_plan(c, db, &pl))) {
		ctl_err("reload: cannot read the SADB: %s", strerror(-rc));
		goto fail;
	}
	for (size_t i = 0; i < pl.ndel_pol; i++)
		if ((rc = sadb_policy_delete(db, pl.del_pol[i]))) {
			ctl_err("cannot delete policy %u: %s", pl.del_pol[i], ctl_db_err(db, rc));
			goto fail;
		}
	for (size_t i = 0; i < pl.ndel_sa; i++) {
		const struct rl_sa_id *d = &pl.del_sa[i];

		if ((rc = sadb_sa_delete(db, d->spi, d->proto, &d->dst))) {
			ctl_err("cannot delete SA spi 0x%08x %s to %s: %s", d->spi,
				ctl_proto_name(d->proto), ctl_addr_str(&d->dst, buf, sizeof(buf)),
				ctl_db_err(db, rc));
			goto fail;
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->n; i++) {
			struct ctl_item *it = &c->items[i];
			unsigned w = pl.what[i];

			if (it->kind != (pass ? CTL_IT_POLICY : CTL_IT_SA))
				continue;
			n[w][pass]++;
			if (w == RL_KEEP)
				continue;
			if (pass)
				rc = sadb_policy_add(db, &it->pol, NULL);
			else if (w == RL_UPDATE)
				rc = sadb_sa_update(db, &it->sa);
			else
				rc = sadb_sa_add(db, &it->sa, NULL);
			if (rc && pass) {
				ctl_conf_error(c, it->pos, "cannot add policy: %s", ctl_db_err(db, rc));
				goto fail;
			}
			if (rc) {
				sa_write_error(c, it, w == RL_UPDATE, db, rc);
				goto fail;
			}
		}
	}
	/* the record becomes the file's: none when the file has no home-agent statement */
	if (apply_home_agent(c, db, true, &ha_what))
		goto fail;
	if ((rc = sadb_txn_commit(db))) {
		ctl_err("cannot commit: %s", sadb_errmsg(db));
		sadb_txn_abort(db);
		rl_plan_free(&pl);
		return CTL_EXIT_ERR;
	}
	if (o->verbose)
		fprintf(stderr, "%sipsecctl: reload %s: SAs: %u kept, %u updated, %u added (%zu with a "
			"new key), %zu removed; policies: %u kept, %u added, %zu removed%s%s; generation %"
			PRIu64 "\n", ctl_pri(LOG_NOTICE), c->src, n[RL_KEEP][0], n[RL_UPDATE][0],
			n[RL_ADD][0], pl.nrekey, pl.ndel_sa - pl.nrekey, n[RL_KEEP][1], n[RL_ADD][1],
			pl.ndel_pol, ha_what ? "; home agent " : "", ha_what ? ha_what : "",
			sadb_generation(db));
	rl_plan_free(&pl);
	return CTL_EXIT_OK;
fail:
	sadb_txn_abort(db);
	rl_plan_free(&pl);
	fprintf(stderr, "%sipsecctl: nothing was changed\n", ctl_pri(LOG_ERR));
	return CTL_EXIT_ERR;
}

/* -n --json: what would be applied, as `show --json` would list it (no counters yet; keys only
 * with --show-keys). */
static void conf_json(const struct ctl_conf *c, const struct ctl_opts *o)
{
	struct ctl_opts jo = *o;
	struct ctl_json j;
	unsigned flush = 0;

	jo.no_times = true; /* nothing was created yet */
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_FLUSH)
			flush |= c->items[i].flush;
	ctl_json_init(&j, stdout);
	ctl_json_obj(&j, NULL);
	ctl_json_obj(&j, "flush");
	ctl_json_bool(&j, "sa", flush & CTL_FLUSH_SA);
	ctl_json_bool(&j, "policy", flush & CTL_FLUSH_POL);
	ctl_json_end_obj(&j);
	ctl_home_agents_json(&j, c->ha, c->n_ha, false);
	ctl_json_arr(&j, "sas");
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_SA)
			ctl_sa_json(&j, NULL, &c->items[i].sa, 0, &jo, 0);
	ctl_json_end_arr(&j);
	ctl_json_arr(&j, "policies");
	for (size_t i = 0; i < c->n; i++)
		if (c->items[i].kind == CTL_IT_POLICY)
			ctl_policy_json(&j, &c->items[i].pol);
	ctl_json_end_arr(&j);
	ctl_json_end_obj(&j);
	ctl_json_done(&j);
}

/* Open for a -n check: read-only if the SADB exists, else no SADB checks at all. */
static struct sadb *open_for_check(const struct ctl_opts *o)
{
	struct sadb *db = NULL;
	char msg[8];

	if (access(o->sadb_path, F_OK) == 0)
		sadb_open(o->sadb_path, SADB_RDONLY, NULL, &db, msg, sizeof(msg));
	return db;
}

static int run_conf(struct ctl_conf *c, const struct ctl_opts *o, bool update)
{
	struct sadb *db = NULL;
	int rc;

	c->replace = update && !c->manual;
	if (o->dry_run) {
		db = open_for_check(o);
		rc = ctl_conf_validate(c, db);
		if (db)
			sadb_close(db);
		ctl_conf_report(c);
		if (rc)
			return CTL_EXIT_ERR;
		if (o->json)
			conf_json(c, o);
		else
			ctl_conf_print(c, stdout);
		fflush(stdout);
		return ferror(stdout) ? CTL_EXIT_ERR : CTL_EXIT_OK;
	}
	if ((rc = ctl_open_rw(o, &db)))
		return rc;
	rc = ctl_conf_validate(c, db);
	ctl_conf_report(c);
	/* what goes wrong from here is said as it happens */
	c->defer = false;
	if (rc) {
		fprintf(stderr, "%sipsecctl: nothing was changed\n", ctl_pri(LOG_ERR));
		sadb_close(db);
		return CTL_EXIT_ERR;
	}
	rc = c->manual ? apply_reload(c, db, o) : apply(c, db, o, update);
	sadb_close(db);
	return rc;
}

/* A reload replaces the manual entries itself: a flush statement in the file (written for
 * `ipsecctl -F -f`) would also remove what IKE negotiated, so it is dropped, saying so. */
static void reload_drop_flushes(struct ctl_conf *c)
{
	size_t j = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (c->items[i].kind == CTL_IT_FLUSH) {
			fprintf(stderr, "%s%s:%u:%u: note: flush ignored: reload replaces the manually keyed "
				"SAs and policies anyway, and keeps those IKE negotiated\n", ctl_pri(LOG_NOTICE), c->src,
				c->items[i].pos.line, c->items[i].pos.col);
			continue;
		}
		if (j != i) {
			c->items[j] = c->items[i];
			memset(&c->items[i], 0, sizeof(c->items[i]));
		}
		j++;
	}
	c->n = j;
}

/* Every error of the file in one list: the semantic checks run on the statements that parsed,
 * even when others did not, and the whole list comes sorted by file and line. */
static int load_errors(struct ctl_conf *c, const struct ctl_opts *o)
{
	struct sadb *db = NULL;

	if (!c->nerr)
		return 0;
	/* what parsed is checked against the SADB too, as it would be once the rest is fixed */
	db = open_for_check(o);
	ctl_conf_validate(c, db);
	if (db)
		sadb_close(db);
	ctl_conf_report(c);
	if (!o->dry_run)
		fprintf(stderr, "%sipsecctl: nothing was changed\n", ctl_pri(LOG_ERR));
	return CTL_EXIT_ERR;
}

static int load_file(const struct ctl_opts *o, int argc, char **argv, bool reload)
{
	const char *cmd = reload ? "reload" : "load";
	struct ctl_conf c;
	int rc;

	if (argc != 1) {
		ctl_err("%s: expected one configuration file name ('-' for standard input)", cmd);
		return CTL_EXIT_USAGE;
	}
	if (reload && o->flush) {
		ctl_err("reload: -F would remove what IKE negotiated; reload replaces the manual "
			"entries by itself");
		return CTL_EXIT_USAGE;
	}
	ctl_conf_init(&c, strcmp(argv[0], "-") ? argv[0] : "<stdin>", stderr);
	c.manual = reload;
	c.defer = true;
	/* -F -f FILE (OpenBSD): replace everything, in the same transaction as the file. */
	if (o->flush)
		ctl_conf_parse(&c, "flush\n", 6);
	rc = ctl_conf_parse_file(&c, argv[0]);
	if (rc && !c.nerr) {
		/* the file itself was refused or unreadable: said already, with its name */
		ctl_conf_free(&c);
		return CTL_EXIT_ERR;
	}
	if (reload) {
		reload_drop_flushes(&c);
		/* what reload replaces is told apart by ike_id 0: an entry of the file with an IKE id
		 * would be left behind by the next reload and then collide with the file */
		for (size_t i = 0; i < c.n; i++)
			if ((c.items[i].kind == CTL_IT_SA && c.items[i].sa.ike_id) ||
			    (c.items[i].kind == CTL_IT_POLICY && c.items[i].pol.ike_id))
				ctl_conf_error(&c, c.items[i].pos, "reload: ikeid marks an entry as IKE's, "
					       "which reload never replaces; load such entries with "
					       "ipsecctl load");
	}
	if ((rc = load_errors(&c, o)) != 0) {
		ctl_conf_free(&c);
		return rc;
	}
	rc = run_conf(&c, o, false);
	ctl_conf_free(&c);
	return rc;
}

int ctl_cmd_load(const struct ctl_opts *o, int argc, char **argv)
{
	return load_file(o, argc, argv, false);
}

int ctl_cmd_reload(const struct ctl_opts *o, int argc, char **argv)
{
	return load_file(o, argc, argv, true);
}

/* `sa add ...` / `policy add ...`: one statement from the command line. */
int ctl_cmd_stmt(const struct ctl_opts *o, const char *kw, const char *ctx, bool update, int argc,
		 char **argv)
{
	struct ctl_conf c;
	char **v = calloc((size_t)argc + 1, sizeof(char *));
	int rc;

	if (!v)
		return CTL_EXIT_ERR;
	v[0] = (char *)kw;
	for (int i = 0; i < argc; i++)
		v[i + 1] = argv[i];
	ctl_conf_init(&c, ctx, stderr);
	rc = ctl_conf_parse_argv(&c, argc + 1, v);
	free(v);
	if (rc) {
		ctl_conf_free(&c);
		return CTL_EXIT_USAGE;
	}
	rc = run_conf(&c, o, update);
	ctl_conf_free(&c);
	return rc;
}
