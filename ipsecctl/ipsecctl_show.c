/* ipsecctl/ipsecctl_show.c: `show`, what ipsecctl reads back from the SADB: SAs with their live
 * runtime counters (read through ipsecctl_rt.c), policies, the home agent record and segment info,
 * as text or JSON (the statistics and `monitor` are in ipsecctl_stats.c). Readers only: nothing
 * here writes to the SADB, and keys appear only with --show-keys. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl_rt.h"

static uint64_t now_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

static void sel_json(struct ctl_json *j, const char *key, const struct sadb_selector *s)
{
	char buf[INET6_ADDRSTRLEN + 8], a[INET6_ADDRSTRLEN];

	ctl_json_obj(j, key);
	if (s->src.family)
		snprintf(buf, sizeof(buf), "%s/%u", ctl_addr_str(&s->src, a, sizeof(a)), s->src_plen);
	else
		snprintf(buf, sizeof(buf), "any");
	ctl_json_str(j, "src", buf);
	if (s->dst.family)
		snprintf(buf, sizeof(buf), "%s/%u", ctl_addr_str(&s->dst, a, sizeof(a)), s->dst_plen);
	else
		snprintf(buf, sizeof(buf), "any");
	ctl_json_str(j, "dst", buf);
	ctl_json_u64(j, "proto", s->proto);
	ctl_json_u64(j, "sport_lo", s->sport_lo);
	ctl_json_u64(j, "sport_hi", s->sport_hi);
	ctl_json_u64(j, "dport_lo", s->dport_lo);
	ctl_json_u64(j, "dport_hi", s->dport_hi);
	ctl_json_end_obj(j);
}

static void lifetime_json(struct ctl_json *j, const char *key, const struct sadb_lifetime *lt)
{
	ctl_json_obj(j, key);
	ctl_json_u64(j, "bytes", lt->bytes);
	ctl_json_u64(j, "packets", lt->packets);
	ctl_json_u64(j, "add_seconds", lt->add_seconds);
	ctl_json_u64(j, "use_seconds", lt->use_seconds);
	ctl_json_end_obj(j);
}


/* Remaining before a limit; null for "no limit". Time limits only when times are shown. */
static void remaining_json(struct ctl_json *j, const char *key, const struct sadb_lifetime *lt,
			   const struct sadb_sa *sa, const struct rt_copy *rc, uint64_t now,
			   bool times)
{
	ctl_json_obj(j, key);
	if (lt->bytes)
		ctl_json_u64(j, "bytes", ctl_sub0(lt->bytes, rc->bytes));
	else
		ctl_json_null(j, "bytes");
	if (lt->packets)
		ctl_json_u64(j, "packets", ctl_sub0(lt->packets, rc->packets));
	else
		ctl_json_null(j, "packets");
	if (times) {
		if (lt->add_seconds)
			ctl_json_u64(j, "add_seconds", ctl_sub0(lt->add_seconds, ctl_sub0(now, sa->created)));
		else
			ctl_json_null(j, "add_seconds");
		if (lt->use_seconds)
			ctl_json_u64(j, "use_seconds", rc->first_used ?
				     ctl_sub0(lt->use_seconds, ctl_sub0(now, rc->first_used)) : lt->use_seconds);
		else
			ctl_json_null(j, "use_seconds");
	}
	ctl_json_end_obj(j);
}

static const struct { uint32_t flag; const char *name; } sa_flags[] = {
	{ SADB_SAF_ESN, "esn" }, { SADB_SAF_LEGACY_OK, "legacy" },
	{ SADB_SAF_DECAP_DSCP, "decap-dscp" }, { SADB_SAF_NO_ECN, "noecn" },
	{ SADB_SAF_DF_CLEAR, "df-clear" }, { SADB_SAF_DF_SET, "df-set" },
	{ SADB_SAF_NO_REPLAY, "no-replay" }, { SADB_SAF_SEQ_PERSIST, "seq-persist" },
	{ SADB_SAF_SEQ_NEW, "new-key" },
	{ SADB_SAF_MOBILE, "mobile" }, { SADB_SAF_KEY_MOBILE, "key-mobile" },
};

static unsigned effective_icv(const struct sadb_sa *sa)
{
	const struct ctl_enc_alg *e = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *a = ctl_auth_by_id(sa->auth_alg);

	if (sa->icv_len)
		return sa->icv_len;
	if (e && e->aead)
		return e->icv_len;
	return a ? a->icv_len : 0;
}

/* The live part of an SA's record: counters, replay state, drops, expiry, lifetime used. */
static void counters_json(struct ctl_json *j, const struct sadb_sa *sa, const struct rt_copy *rc,
			  uint64_t now, bool times)
{
	ctl_json_obj(j, "counters");
	ctl_json_u64(j, "packets", rc->packets);
	ctl_json_u64(j, "bytes", rc->bytes);
	if (times) {
		ctl_json_u64(j, "first_used", rc->first_used);
		ctl_json_u64(j, "last_used", rc->last_used);
	}
	if (sa->dir == SADB_DIR_OUT) {
		ctl_json_u64(j, "seq_reserved", rc->seq_reserved);
	} else {
		ctl_json_obj(j, "replay");
		ctl_json_u64(j, "window", sa->replay_window);
		ctl_json_u64(j, "top", rc->replay_top);
		ctl_json_u64(j, "received_in_window", rc->replay_seen);
		ctl_json_end_obj(j);
	}
	ctl_json_obj(j, "drops");
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		ctl_json_u64(j, sadb_drop_name(i), rc->drops[i]);
	ctl_json_end_obj(j);
	ctl_json_u64(j, "drops_total", rc->drops_total);
	ctl_json_obj(j, "expired");
	ctl_json_bool(j, "soft", rc->expired & 1);
	ctl_json_bool(j, "hard", rc->expired & 2);
	ctl_json_end_obj(j);
	ctl_json_end_obj(j);
	ctl_json_obj(j, "lifetime_used");
	ctl_json_u64(j, "bytes", rc->bytes);
	ctl_json_u64(j, "packets", rc->packets);
	if (times) {
		ctl_json_u64(j, "add_seconds", ctl_sub0(now, sa->created));
		ctl_json_u64(j, "use_seconds", rc->first_used ? ctl_sub0(now, rc->first_used) : 0);
	}
	ctl_json_end_obj(j);
}

/* An SA's algorithm as KEY (its name, "unknown" for an id this ipsecctl has no name for, null for
 * none), KEY_id and KEY_key_bits. */
static void alg_json(struct ctl_json *j, const char *key, unsigned id, const char *name,
		     unsigned key_len)
{
	char k[32];

	if (id)
		ctl_json_str(j, key, name ? name : "unknown");
	else
		ctl_json_null(j, key);
	snprintf(k, sizeof(k), "%s_id", key);
	ctl_json_u64(j, k, id);
	snprintf(k, sizeof(k), "%s_key_bits", key);
	ctl_json_u64(j, k, key_len * 8u);
}

void ctl_sa_json(struct ctl_json *j, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now)
{
	const struct ctl_enc_alg *enc = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *auth = ctl_auth_by_id(sa->auth_alg);
	char buf[INET6_ADDRSTRLEN];
	struct rt_copy rc;
	bool times = !o->no_times;

	ctl_rt_read(db, sa, slot, &rc, true);
	ctl_json_obj(j, NULL);
	ctl_json_u64(j, "spi", sa->spi);
	snprintf(buf, sizeof(buf), "0x%08x", sa->spi);
	ctl_json_str(j, "spi_hex", buf);
	ctl_json_str(j, "proto", ctl_proto_name(sa->proto));
	ctl_json_str(j, "mode", ctl_mode_name(sa->mode));
	ctl_json_str(j, "dir", ctl_dir_name(sa->dir));
	ctl_json_str(j, "state", ctl_state_name(sa->state));
	if (rc.valid)
		ctl_json_str(j, "expiry", ctl_expiry_name(rc.expired));
	else
		ctl_json_null(j, "expiry");
	ctl_json_str(j, "src", ctl_addr_str(&sa->src, buf, sizeof(buf)));
	ctl_json_str(j, "dst", ctl_addr_str(&sa->dst, buf, sizeof(buf)));
	ctl_json_u64(j, "reqid", sa->reqid);
	alg_json(j, "enc", sa->enc_alg, enc ? enc->name : NULL, sa->enc_key_len);
	ctl_json_u64(j, "salt_bits", sa->salt_len * 8u);
	alg_json(j, "auth", sa->auth_alg, auth ? auth->name : NULL, sa->auth_key_len);
	ctl_json_u64(j, "icv_len", effective_icv(sa));
	if (o->show_keys) {
		ctl_json_obj(j, "keys");
		ctl_json_hex(j, "enc", sa->enc_key, sa->enc_key_len);
		ctl_json_hex(j, "salt", sa->salt, sa->salt_len);
		ctl_json_hex(j, "auth", sa->auth_key, sa->auth_key_len);
		ctl_json_end_obj(j);
	}
	ctl_json_arr(j, "flags");
	for (size_t i = 0; i < sizeof(sa_flags) / sizeof(sa_flags[0]); i++)
		if (sa->flags & sa_flags[i].flag)
			ctl_json_str(j, NULL, sa_flags[i].name);
	ctl_json_end_arr(j);
	if (sa->encap_sport || sa->encap_dport) {
		ctl_json_obj(j, "encap");
		ctl_json_str(j, "type", "udp");
		ctl_json_u64(j, "sport", sa->encap_sport);
		ctl_json_u64(j, "dport", sa->encap_dport);
		ctl_json_end_obj(j);
	} else {
		ctl_json_null(j, "encap");
	}
	ctl_json_u64(j, "replay_window", sa->replay_window);
	ctl_json_u64(j, "tfc_pad", sa->tfc_pad);
	ctl_json_u64(j, "ttl", sa->ttl);
	if (sa->dscp == 0xff)
		ctl_json_null(j, "dscp");
	else
		ctl_json_u64(j, "dscp", sa->dscp);
	ctl_json_u64(j, "mtu", sa->mtu);
	ctl_json_u64(j, "ike_id", sa->ike_id);
	ctl_json_obj(j, "lifetime");
	lifetime_json(j, "soft", &sa->soft);
	lifetime_json(j, "hard", &sa->hard);
	ctl_json_end_obj(j);
	sel_json(j, "selector", &sa->sel);
	if (times) {
		ctl_json_u64(j, "slot", slot);
		ctl_json_u64(j, "created", sa->created);
		ctl_json_u64(j, "instance", sa->instance);
	}
	if (!rc.valid) {
		/* The runtime slot belongs to another instance: nothing to report honestly. */
		ctl_json_null(j, "counters");
		ctl_json_end_obj(j);
		return;
	}
	counters_json(j, sa, &rc, now, times);
	ctl_json_obj(j, "lifetime_remaining");
	remaining_json(j, "soft", &sa->soft, sa, &rc, now, times);
	remaining_json(j, "hard", &sa->hard, sa, &rc, now, times);
	ctl_json_end_obj(j);
	ctl_json_end_obj(j);
}

static void fmt_time(uint64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t) {
		snprintf(buf, len, "never");
		return;
	}
	localtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static void lt_remaining_text(FILE *f, const char *name, const struct sadb_lifetime *lt,
			      const struct sadb_sa *sa, const struct rt_copy *rc, uint64_t now,
			      bool times)
{
	if (!lt->bytes && !lt->packets && !lt->add_seconds && !lt->use_seconds)
		return;
	fprintf(f, "\t%s limit remaining:", name);
	if (lt->bytes)
		fprintf(f, " %" PRIu64 " bytes", ctl_sub0(lt->bytes, rc->bytes));
	if (lt->packets)
		fprintf(f, " %" PRIu64 " packets", ctl_sub0(lt->packets, rc->packets));
	if (times && lt->add_seconds)
		fprintf(f, " %" PRIu64 " s", ctl_sub0(lt->add_seconds, ctl_sub0(now, sa->created)));
	if (times && lt->use_seconds)
		fprintf(f, " %" PRIu64 " s after use", rc->first_used ?
			ctl_sub0(lt->use_seconds, ctl_sub0(now, rc->first_used)) : lt->use_seconds);
	fputc('\n', f);
}

void ctl_sa_text(FILE *f, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now)
{
	struct rt_copy rc;
	char t1[32], t2[32];
	bool times = !o->no_times;

	ctl_rt_read(db, sa, slot, &rc, true);
	ctl_sa_print(sa, f, o->show_keys, NULL);
	if (times) {
		fmt_time(sa->created, t1, sizeof(t1));
		fprintf(f, "\t# slot %u, instance %" PRIu64 ", created %s, state %s\n", slot,
			sa->instance, t1, ctl_state_name(sa->state));
	} else {
		fprintf(f, "\t# state %s\n", ctl_state_name(sa->state));
	}
	if (!rc.valid) {
		fprintf(f, "\t# counters: none (runtime area not initialised for this instance)\n");
		return;
	}
	fprintf(f, "\t# packets %" PRIu64 ", bytes %" PRIu64, rc.packets, rc.bytes);
	if (times) {
		fmt_time(rc.first_used, t1, sizeof(t1));
		fmt_time(rc.last_used, t2, sizeof(t2));
		fprintf(f, ", first used %s, last used %s", t1, t2);
	}
	fputc('\n', f);
	if (sa->dir == SADB_DIR_OUT)
		fprintf(f, "\t# sequence numbers reserved up to %" PRIu64 "\n", rc.seq_reserved);
	else if (sa->replay_window)
		fprintf(f, "\t# replay window %u, top %" PRIu64 ", %u received in window\n",
			sa->replay_window, rc.replay_top, rc.replay_seen);
	else
		fprintf(f, "\t# replay check off, top %" PRIu64 "\n", rc.replay_top);
	fprintf(f, "\t# drops %" PRIu64, rc.drops_total);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (rc.drops[i])
			fprintf(f, ", %s: %" PRIu64, sadb_drop_str(i), rc.drops[i]);
	fputc('\n', f);
	if (rc.expired & 2)
		fprintf(f, "\t# expired: hard lifetime reached, every packet is dropped\n");
	else if (rc.expired & 1)
		fprintf(f, "\t# dying: soft lifetime reached, to be replaced\n");
	if (sa->soft.bytes || sa->soft.packets || sa->soft.add_seconds || sa->soft.use_seconds ||
	    sa->hard.bytes || sa->hard.packets || sa->hard.add_seconds || sa->hard.use_seconds) {
		lt_remaining_text(f, "# soft", &sa->soft, sa, &rc, now, times);
		lt_remaining_text(f, "# hard", &sa->hard, sa, &rc, now, times);
	}
}

void ctl_policy_json(struct ctl_json *j, const struct sadb_policy *p)
{
	char buf[INET6_ADDRSTRLEN];

	ctl_json_obj(j, NULL);
	ctl_json_u64(j, "id", p->id);
	ctl_json_str(j, "dir", ctl_dir_name(p->dir));
	ctl_json_str(j, "action", ctl_action_name(p->action));
	ctl_json_u64(j, "priority", p->priority);
	sel_json(j, "selector", &p->sel);
	if (p->action == SADB_ACT_PROTECT) {
		ctl_json_str(j, "proto", ctl_proto_name(p->proto));
		ctl_json_str(j, "mode", ctl_mode_name(p->mode));
		ctl_json_u64(j, "reqid", p->reqid);
		if (p->mode == SADB_MODE_TUNNEL) {
			ctl_json_obj(j, "tunnel");
			ctl_json_str(j, "src", ctl_addr_str(&p->tun_src, buf, sizeof(buf)));
			ctl_json_str(j, "dst", ctl_addr_str(&p->tun_dst, buf, sizeof(buf)));
			ctl_json_end_obj(j);
		} else {
			ctl_json_null(j, "tunnel");
		}
	} else if (p->reqid) {
		ctl_json_u64(j, "reqid", p->reqid);  /* a mobile router's network (discard) */
	}
	ctl_json_u64(j, "ike_id", p->ike_id);
	ctl_json_end_obj(j);
}

static void info_json(struct ctl_json *j, const char *key, struct sadb *db)
{
	struct sadb_info in;

	memset(&in, 0, sizeof(in));
	sadb_info(db, &in);
	const struct ctl_json_num n[] = {
		{ "layout_version", in.layout_version }, { "max_sa", in.max_sa },
		{ "max_policy", in.max_policy }, { "n_sa", in.n_sa }, { "n_policy", in.n_policy },
		{ "generation", in.generation }, { "size", in.size },
	};

	ctl_json_obj(j, key);
	ctl_json_u64s(j, n, sizeof(n) / sizeof(n[0]));
	ctl_json_end_obj(j);
}

static void home_agent_json(struct ctl_json *j, const char *key, const struct sadb_home_agent *ha,
			    bool times)
{
	char buf[INET6_ADDRSTRLEN + 8];

	ctl_json_obj(j, key);
	ctl_json_str(j, "address", ctl_addr_str(&ha->addr, buf, sizeof(buf)));
	ctl_json_arr(j, "prefixes");
	for (unsigned i = 0; i < ha->n_prefix && i < SADB_HA_MAX_PREFIX; i++) {
		size_t l;

		ctl_addr_str(&ha->prefix[i], buf, sizeof(buf));
		l = strlen(buf);
		snprintf(buf + l, sizeof(buf) - l, "/%u", ha->plen[i]);
		ctl_json_str(j, NULL, buf);
	}
	ctl_json_end_arr(j);
	ctl_json_u64(j, "lifetime", ha->max_lifetime);
	ctl_json_str(j, "link", memchr(ha->link, 0, sizeof(ha->link)) ? ha->link : "");
	if (ha->addr4[0] | ha->addr4[1] | ha->addr4[2] | ha->addr4[3]) {  /* only when given: DSMIPv6 */
		snprintf(buf, sizeof(buf), "%u.%u.%u.%u", ha->addr4[0], ha->addr4[1], ha->addr4[2], ha->addr4[3]);
		ctl_json_str(j, "ipv4", buf);
	}
	if (times)
		ctl_json_u64(j, "set_time", ha->set_time);
	ctl_json_end_obj(j);
}

void ctl_home_agents_json(struct ctl_json *j, const struct sadb_home_agent *ha, unsigned n, bool times)
{
	if (n)
		home_agent_json(j, "home_agent", &ha[0], times);
	else
		ctl_json_null(j, "home_agent");
	ctl_json_arr(j, "home_agents");
	for (unsigned h = 0; h < n; h++)
		home_agent_json(j, NULL, &ha[h], times);
	ctl_json_end_arr(j);
}

int ctl_show(struct sadb *db, const struct ctl_opts *o, const char *what, int argc, char **argv)
{
	bool sa = false, pol = false, stats = false, info = false, home = false;
	struct sadb_home_agent ha[SADB_HA_MAX];
	unsigned n_ha = 0;
	struct spi_filter flt;
	struct ctl_json j;
	uint64_t now = now_realtime();
	uint32_t cur, slot;
	struct sadb_sa s;
	struct sadb_policy p;

	if (!what || !strcmp(what, "all")) {
		sa = pol = stats = info = home = true;
	} else if (!strcmp(what, "home-agent")) {
		home = true;
	} else if (!strcmp(what, "sa") || !strcmp(what, "sas")) {
		sa = true;
	} else if (!strcmp(what, "policy") || !strcmp(what, "policies")) {
		pol = true;
	} else if (!strcmp(what, "stats") || !strcmp(what, "statistics")) {
		stats = true;
	} else if (!strcmp(what, "info")) {
		info = true;
	} else {
		ctl_err("show: unknown object '%s' (expected sa, policy, home-agent, stats, info or all)",
			what);
		return CTL_EXIT_USAGE;
	}
	if ((!sa && argc > 0) || ctl_filter_parse(argc, argv, &flt))
		return argc > 0 && !sa ? (ctl_err("show %s takes no arguments", what), CTL_EXIT_USAGE)
				       : CTL_EXIT_USAGE;
	for (unsigned idx = 0; home && idx < SADB_HA_MAX; idx++)
		if (sadb_home_agent_get(db, idx, &ha[n_ha]) == 0)
			n_ha++;
	if (o->json) {
		ctl_json_init(&j, stdout);
		ctl_json_obj(&j, NULL);
		if (info)
			info_json(&j, "info", db);
		if (home)
			ctl_home_agents_json(&j, ha, n_ha, !o->no_times);
		if (sa) {
			ctl_json_arr(&j, "sas");
			cur = 0;
			while (sadb_sa_next(db, &cur, &s, &slot) == 0)
				if (ctl_filter_match(&flt, s.spi))
					ctl_sa_json(&j, db, &s, slot, o, now);
			ctl_json_end_arr(&j);
		}
		if (pol) {
			ctl_json_arr(&j, "policies");
			cur = 0;
			while (sadb_policy_next(db, &cur, &p) == 0)
				ctl_policy_json(&j, &p);
			ctl_json_end_arr(&j);
		}
		if (stats)
			ctl_stats_json(&j, "stats", db);
		ctl_json_end_obj(&j);
		ctl_json_done(&j);
	} else {
		if (info) {
			struct sadb_info in;

			memset(&in, 0, sizeof(in));
			sadb_info(db, &in);
			printf("# SADB %s: layout %u, %u/%u SAs, %u/%u policies, generation %" PRIu64
			       ", %zu bytes\n", o->sadb_path, in.layout_version, in.n_sa, in.max_sa,
			       in.n_policy, in.max_policy, in.generation, in.size);
		}
		for (unsigned h = 0; h < n_ha; h++) {
			ctl_home_agent_print(&ha[h], stdout);
			putchar('\n');
			if (!o->no_times)
				printf("\t# set %" PRIu64 " s ago\n",
				       now > ha[h].set_time ? now - ha[h].set_time : 0);
		}
		if (!n_ha && home && what) {
			printf("# no home agent\n");
		}
		if (sa) {
			cur = 0;
			while (sadb_sa_next(db, &cur, &s, &slot) == 0)
				if (ctl_filter_match(&flt, s.spi))
					ctl_sa_text(stdout, db, &s, slot, o, now);
		}
		if (pol) {
			cur = 0;
			while (sadb_policy_next(db, &cur, &p) == 0) {
				ctl_policy_print(&p, stdout);
				printf("\t# id %u%s\n", p.id, p.ike_id ? " (IKE)" : "");
			}
		}
		if (stats)
			ctl_stats_text(stdout, db);
	}
	explicit_bzero(&s, sizeof(s));
	free(flt.spi);
	fflush(stdout);
	return ferror(stdout) ? CTL_EXIT_ERR : CTL_EXIT_OK;
}
