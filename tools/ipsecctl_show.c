/* tools/ipsecctl_show.c: everything ipsecctl reads back from the SADB: `show` (SAs with their live
 * runtime counters, policies, statistics, segment info) as text or JSON, and `monitor` (per-second
 * rates). Readers only: nothing here writes to the SADB, and keys appear only with --show-keys. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "tools/ipsecctl.h"

static uint64_t now_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A consistent-enough copy of the runtime counters: each field is read once with a relaxed atomic
 * load (the owner writes them that way), so no value is torn even if the set is not a snapshot. */
struct rt_copy {
	bool valid;                 /* runtime belongs to this SA instance */
	uint64_t packets, bytes, first_used, last_used, seq_reserved, replay_top;
	uint64_t drops[SADB_DROP_MAX];
	uint64_t drops_total;
	unsigned replay_seen;       /* bits set in the window */
	uint32_t expired;
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void rt_read(struct sadb *db, const struct sadb_sa *sa, uint32_t slot, struct rt_copy *c,
		    bool want_replay)
{
	struct sadb_runtime *rt = db ? sadb_runtime(db, slot) : NULL;

	memset(c, 0, sizeof(*c));
	if (!rt || LD(rt->instance) != sa->instance)
		return;
	c->valid = true;
	c->packets = LD(rt->packets);
	c->bytes = LD(rt->bytes);
	c->first_used = LD(rt->first_used);
	c->last_used = LD(rt->last_used);
	c->seq_reserved = LD(rt->seq_reserved);
	c->replay_top = LD(rt->replay_top);
	for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
		c->drops[i] = LD(rt->drops[i]);
		c->drops_total += c->drops[i];
	}
	/* The bitmap is a ring indexed by sequence number modulo SADB_REPLAY_MAX (RFC 6479, as
	 * dataplane/engine/replay.c keeps it); only [top - window + 1, top] is the window, older bits are
	 * stale. Sequence number 0 is never sent. */
	if (want_replay && sa->replay_window && c->replay_top) {
		uint64_t lo = c->replay_top >= sa->replay_window ? c->replay_top - sa->replay_window + 1 : 1;

		/* Word by word: at most window/64 + 2 loads. */
		for (uint64_t s = lo; s <= c->replay_top;) {
			uint64_t bit = s % SADB_REPLAY_MAX, n = 64 - bit % 64, w;

			if (n > c->replay_top - s + 1)
				n = c->replay_top - s + 1;
			w = LD(rt->replay_bitmap[bit / 64]) >> (bit % 64);
			if (n < 64)
				w &= (1ULL << n) - 1;
			c->replay_seen += (unsigned)__builtin_popcountll(w);
			s += n;
		}
	}
	c->expired = LD(rt->expired);
}

/* What the expiry bits say: "soft" (the SA is dying: its soft lifetime was reached, it should be
 * replaced), "hard" (expired: the dataplane drops every packet of it), or "none". Whoever owns the
 * SA's expiry sets them: xipsec-iked for negotiated SAs, xipsecd for manual ones. */
static const char *expiry_name(uint32_t expired)
{
	return expired & 2 ? "hard" : expired & 1 ? "soft" : "none";
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

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Remaining before a limit; null for "no limit". Time limits only when times are shown. */
static void remaining_json(struct ctl_json *j, const char *key, const struct sadb_lifetime *lt,
			   const struct sadb_sa *sa, const struct rt_copy *rc, uint64_t now,
			   bool times)
{
	ctl_json_obj(j, key);
	if (lt->bytes)
		ctl_json_u64(j, "bytes", sub0(lt->bytes, rc->bytes));
	else
		ctl_json_null(j, "bytes");
	if (lt->packets)
		ctl_json_u64(j, "packets", sub0(lt->packets, rc->packets));
	else
		ctl_json_null(j, "packets");
	if (times) {
		if (lt->add_seconds)
			ctl_json_u64(j, "add_seconds", sub0(lt->add_seconds, sub0(now, sa->created)));
		else
			ctl_json_null(j, "add_seconds");
		if (lt->use_seconds)
			ctl_json_u64(j, "use_seconds", rc->first_used ?
				     sub0(lt->use_seconds, sub0(now, rc->first_used)) : lt->use_seconds);
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

void ctl_sa_json(struct ctl_json *j, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now)
{
	const struct ctl_enc_alg *enc = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *auth = ctl_auth_by_id(sa->auth_alg);
	char buf[INET6_ADDRSTRLEN];
	struct rt_copy rc;
	bool times = !o->no_times;

	rt_read(db, sa, slot, &rc, true);
	ctl_json_obj(j, NULL);
	ctl_json_u64(j, "spi", sa->spi);
	snprintf(buf, sizeof(buf), "0x%08x", sa->spi);
	ctl_json_str(j, "spi_hex", buf);
	ctl_json_str(j, "proto", ctl_proto_name(sa->proto));
	ctl_json_str(j, "mode", ctl_mode_name(sa->mode));
	ctl_json_str(j, "dir", ctl_dir_name(sa->dir));
	ctl_json_str(j, "state", ctl_state_name(sa->state));
	if (rc.valid)
		ctl_json_str(j, "expiry", expiry_name(rc.expired));
	else
		ctl_json_null(j, "expiry");
	ctl_json_str(j, "src", ctl_addr_str(&sa->src, buf, sizeof(buf)));
	ctl_json_str(j, "dst", ctl_addr_str(&sa->dst, buf, sizeof(buf)));
	ctl_json_u64(j, "reqid", sa->reqid);
	if (sa->enc_alg)
		ctl_json_str(j, "enc", enc ? enc->name : "unknown");
	else
		ctl_json_null(j, "enc");
	ctl_json_u64(j, "enc_id", sa->enc_alg);
	ctl_json_u64(j, "enc_key_bits", sa->enc_key_len * 8u);
	ctl_json_u64(j, "salt_bits", sa->salt_len * 8u);
	if (sa->auth_alg)
		ctl_json_str(j, "auth", auth ? auth->name : "unknown");
	else
		ctl_json_null(j, "auth");
	ctl_json_u64(j, "auth_id", sa->auth_alg);
	ctl_json_u64(j, "auth_key_bits", sa->auth_key_len * 8u);
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
	ctl_json_obj(j, "counters");
	ctl_json_u64(j, "packets", rc.packets);
	ctl_json_u64(j, "bytes", rc.bytes);
	if (times) {
		ctl_json_u64(j, "first_used", rc.first_used);
		ctl_json_u64(j, "last_used", rc.last_used);
	}
	if (sa->dir == SADB_DIR_OUT) {
		ctl_json_u64(j, "seq_reserved", rc.seq_reserved);
	} else {
		ctl_json_obj(j, "replay");
		ctl_json_u64(j, "window", sa->replay_window);
		ctl_json_u64(j, "top", rc.replay_top);
		ctl_json_u64(j, "received_in_window", rc.replay_seen);
		ctl_json_end_obj(j);
	}
	ctl_json_obj(j, "drops");
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		ctl_json_u64(j, sadb_drop_name(i), rc.drops[i]);
	ctl_json_end_obj(j);
	ctl_json_u64(j, "drops_total", rc.drops_total);
	ctl_json_obj(j, "expired");
	ctl_json_bool(j, "soft", rc.expired & 1);
	ctl_json_bool(j, "hard", rc.expired & 2);
	ctl_json_end_obj(j);
	ctl_json_end_obj(j);
	ctl_json_obj(j, "lifetime_used");
	ctl_json_u64(j, "bytes", rc.bytes);
	ctl_json_u64(j, "packets", rc.packets);
	if (times) {
		ctl_json_u64(j, "add_seconds", sub0(now, sa->created));
		ctl_json_u64(j, "use_seconds", rc.first_used ? sub0(now, rc.first_used) : 0);
	}
	ctl_json_end_obj(j);
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
		fprintf(f, " %" PRIu64 " bytes", sub0(lt->bytes, rc->bytes));
	if (lt->packets)
		fprintf(f, " %" PRIu64 " packets", sub0(lt->packets, rc->packets));
	if (times && lt->add_seconds)
		fprintf(f, " %" PRIu64 " s", sub0(lt->add_seconds, sub0(now, sa->created)));
	if (times && lt->use_seconds)
		fprintf(f, " %" PRIu64 " s after use", rc->first_used ?
			sub0(lt->use_seconds, sub0(now, rc->first_used)) : lt->use_seconds);
	fputc('\n', f);
}

void ctl_sa_text(FILE *f, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now)
{
	struct rt_copy rc;
	char t1[32], t2[32];
	bool times = !o->no_times;

	rt_read(db, sa, slot, &rc, true);
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
	}
	ctl_json_u64(j, "ike_id", p->ike_id);
	ctl_json_end_obj(j);
}

/* SPI filter from words: empty = all. */
struct spi_filter {
	uint32_t *spi;
	int n;
};

static int filter_parse(int argc, char **argv, struct spi_filter *flt)
{
	flt->n = 0;
	flt->spi = calloc((size_t)argc + 1, sizeof(uint32_t));
	if (!flt->spi)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		uint64_t v;

		if (ctl_u64_parse(argv[i], UINT32_MAX, &v)) {
			ctl_err("bad SPI '%s': expected a number such as 0x1000", argv[i]);
			free(flt->spi);
			return -EINVAL;
		}
		flt->spi[flt->n++] = (uint32_t)v;
	}
	return 0;
}

static bool filter_match(const struct spi_filter *flt, uint32_t spi)
{
	if (!flt->n)
		return true;
	for (int i = 0; i < flt->n; i++)
		if (flt->spi[i] == spi)
			return true;
	return false;
}

static void info_json(struct ctl_json *j, const char *key, struct sadb *db)
{
	struct sadb_info in;

	memset(&in, 0, sizeof(in));
	sadb_info(db, &in);
	ctl_json_obj(j, key);
	ctl_json_u64(j, "layout_version", in.layout_version);
	ctl_json_u64(j, "max_sa", in.max_sa);
	ctl_json_u64(j, "max_policy", in.max_policy);
	ctl_json_u64(j, "n_sa", in.n_sa);
	ctl_json_u64(j, "n_policy", in.n_policy);
	ctl_json_u64(j, "generation", in.generation);
	ctl_json_u64(j, "size", in.size);
	ctl_json_end_obj(j);
}

struct totals {
	uint64_t sas, packets, bytes, drops_total;
	uint64_t drops[SADB_DROP_MAX];      /* per-SA, + SA-less after stats_collect (not monitor) */
	uint64_t sa_drops[SADB_DROP_MAX];   /* counted in the SAs' runtime areas */
	struct sadb_worker_stats nosa;      /* sum of the dataplane workers' records */
	int n_workers;
};

static void totals_add(struct totals *t, const struct rt_copy *rc)
{
	t->sas++;
	if (!rc->valid)
		return;
	t->packets += rc->packets;
	t->bytes += rc->bytes;
	t->drops_total += rc->drops_total;
	for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
		t->drops[i] += rc->drops[i];
		t->sa_drops[i] += rc->drops[i];
	}
}

static void stats_collect(struct sadb *db, struct totals *t)
{
	uint32_t cur = 0, slot;
	struct sadb_sa sa;
	struct rt_copy rc;

	memset(t, 0, sizeof(*t));
	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		rt_read(db, &sa, slot, &rc, false);
		totals_add(t, &rc);
	}
	explicit_bzero(&sa, sizeof(sa));
	t->n_workers = sadb_worker_stats_sum(db, &t->nosa);
	if (t->n_workers < 0 || t->n_workers > (int)SADB_MAX_WORKERS)
		t->n_workers = 0;
	for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
		t->drops[i] += t->nosa.drops[i];
		t->drops_total += t->nosa.drops[i];
	}
}

static void drops_json(struct ctl_json *j, const char *key, const uint64_t *d)
{
	ctl_json_obj(j, key);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		ctl_json_u64(j, sadb_drop_name(i), LD(d[i]));
	ctl_json_end_obj(j);
}

static void stats_json(struct ctl_json *j, const char *key, struct sadb *db)
{
	const struct sadb_dp_stats *ds = sadb_dp_stats(db);
	struct totals t;

	stats_collect(db, &t);
	ctl_json_obj(j, key);
	ctl_json_u64(j, "sas", t.sas);
	ctl_json_u64(j, "packets", t.packets);
	ctl_json_u64(j, "bytes", t.bytes);
	drops_json(j, "drops", t.drops);
	ctl_json_u64(j, "drops_total", t.drops_total);
	drops_json(j, "sa_drops", t.sa_drops);
	drops_json(j, "no_sa_drops", t.nosa.drops);
	ctl_json_obj(j, "dataplane");
	ctl_json_u64(j, "pid", LD(ds->pid));
	ctl_json_u64(j, "started", LD(ds->started));
	ctl_json_u64(j, "workers", (uint64_t)t.n_workers);
	ctl_json_u64(j, "rx_packets", t.nosa.rx_packets);
	ctl_json_u64(j, "rx_bytes", t.nosa.rx_bytes);
	ctl_json_u64(j, "tx_packets", t.nosa.tx_packets);
	ctl_json_u64(j, "tx_bytes", t.nosa.tx_bytes);
	ctl_json_u64(j, "frag_packets", t.nosa.frag_packets);
	ctl_json_u64(j, "frag_made", t.nosa.frag_made);
	ctl_json_u64(j, "reasm_packets", t.nosa.reasm_packets);
	ctl_json_u64(j, "reasm_frags", t.nosa.reasm_frags);
	ctl_json_end_obj(j);
	ctl_json_arr(j, "workers");
	for (int i = 0; i < t.n_workers; i++) {
		const struct sadb_worker_stats *w = sadb_worker_stats(db, (unsigned)i);

		ctl_json_obj(j, NULL);
		ctl_json_u64(j, "id", (uint64_t)i);
		ctl_json_u64(j, "rx_packets", LD(w->rx_packets));
		ctl_json_u64(j, "rx_bytes", LD(w->rx_bytes));
		ctl_json_u64(j, "tx_packets", LD(w->tx_packets));
		ctl_json_u64(j, "tx_bytes", LD(w->tx_bytes));
		ctl_json_u64(j, "frag_packets", LD(w->frag_packets));
		ctl_json_u64(j, "frag_made", LD(w->frag_made));
		ctl_json_u64(j, "reasm_packets", LD(w->reasm_packets));
		ctl_json_u64(j, "reasm_frags", LD(w->reasm_frags));
		drops_json(j, "drops", w->drops);
		ctl_json_end_obj(j);
	}
	ctl_json_end_arr(j);
	ctl_json_end_obj(j);
}

static void stats_text(FILE *f, struct sadb *db)
{
	const struct sadb_dp_stats *ds = sadb_dp_stats(db);
	struct totals t;

	stats_collect(db, &t);
	fprintf(f, "SAs: %" PRIu64 "\npackets: %" PRIu64 "\nbytes: %" PRIu64 "\ndrops: %" PRIu64 "\n",
		t.sas, t.packets, t.bytes, t.drops_total);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (t.drops[i])
			fprintf(f, "  %-48s %" PRIu64 " (SAs %" PRIu64 ", no SA %" PRIu64 ")\n",
				sadb_drop_str(i), t.drops[i], t.sa_drops[i], t.nosa.drops[i]);
	if (!LD(ds->pid)) {
		fprintf(f, "dataplane: never started on this SADB\n");
		return;
	}
	fprintf(f, "dataplane: pid %" PRIu64 ", started %" PRIu64 ", %d workers\n", LD(ds->pid),
		LD(ds->started), t.n_workers);
	for (int i = 0; i < t.n_workers; i++) {
		const struct sadb_worker_stats *w = sadb_worker_stats(db, (unsigned)i);
		uint64_t nd = 0;

		for (unsigned r = 1; r < SADB_DROP_MAX; r++)
			nd += LD(w->drops[r]);
		fprintf(f, "  worker %d: rx %" PRIu64 " packets %" PRIu64 " bytes, tx %" PRIu64 " packets %"
			PRIu64 " bytes, drops without SA %" PRIu64 "\n", i, LD(w->rx_packets),
			LD(w->rx_bytes), LD(w->tx_packets), LD(w->tx_bytes), nd);
		if (LD(w->frag_packets) || LD(w->reasm_packets))
			fprintf(f, "    fragmented %" PRIu64 " packets into %" PRIu64 ", reassembled %"
				PRIu64 " from %" PRIu64 " fragments\n", LD(w->frag_packets),
				LD(w->frag_made), LD(w->reasm_packets), LD(w->reasm_frags));
		for (unsigned r = 1; r < SADB_DROP_MAX; r++)
			if (LD(w->drops[r]))
				fprintf(f, "    %-46s %" PRIu64 "\n", sadb_drop_str(r), LD(w->drops[r]));
	}
}

int ctl_show(struct sadb *db, const struct ctl_opts *o, const char *what, int argc, char **argv)
{
	bool sa = false, pol = false, stats = false, info = false;
	struct spi_filter flt;
	struct ctl_json j;
	uint64_t now = now_realtime();
	uint32_t cur, slot;
	struct sadb_sa s;
	struct sadb_policy p;

	if (!what || !strcmp(what, "all")) {
		sa = pol = stats = info = true;
	} else if (!strcmp(what, "sa") || !strcmp(what, "sas")) {
		sa = true;
	} else if (!strcmp(what, "policy") || !strcmp(what, "policies")) {
		pol = true;
	} else if (!strcmp(what, "stats") || !strcmp(what, "statistics")) {
		stats = true;
	} else if (!strcmp(what, "info")) {
		info = true;
	} else {
		ctl_err("show: unknown object '%s' (expected sa, policy, stats, info or all)", what);
		return CTL_EXIT_USAGE;
	}
	if ((!sa && argc > 0) || filter_parse(argc, argv, &flt))
		return argc > 0 && !sa ? (ctl_err("show %s takes no arguments", what), CTL_EXIT_USAGE)
				       : CTL_EXIT_USAGE;
	if (o->json) {
		ctl_json_init(&j, stdout);
		ctl_json_obj(&j, NULL);
		if (info)
			info_json(&j, "info", db);
		if (sa) {
			ctl_json_arr(&j, "sas");
			cur = 0;
			while (sadb_sa_next(db, &cur, &s, &slot) == 0)
				if (filter_match(&flt, s.spi))
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
			stats_json(&j, "stats", db);
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
		if (sa) {
			cur = 0;
			while (sadb_sa_next(db, &cur, &s, &slot) == 0)
				if (filter_match(&flt, s.spi))
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
			stats_text(stdout, db);
	}
	explicit_bzero(&s, sizeof(s));
	free(flt.spi);
	fflush(stdout);
	return ferror(stdout) ? CTL_EXIT_ERR : CTL_EXIT_OK;
}

/* ---- monitor ---- */

struct mon_sa {
	uint32_t slot, spi;
	uint8_t dir, proto;
	uint64_t instance;
	uint64_t packets, bytes, drops_total;
	uint32_t expired;           /* runtime expiry bits: a change between samples is an event */
};

struct mon_sample {
	struct mon_sa *v;
	size_t n;
	double t;
	struct totals tot;
};

static int mon_cmp(const void *a, const void *b)
{
	const struct mon_sa *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int mon_sample(struct sadb *db, const struct spi_filter *flt, struct mon_sample *m)
{
	uint32_t cur = 0, slot;
	struct sadb_sa sa;
	struct rt_copy rc;
	size_t cap = 0;

	m->n = 0;
	memset(&m->tot, 0, sizeof(m->tot));
	m->t = now_mono();
	free(m->v);
	m->v = NULL;
	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		if (!filter_match(flt, sa.spi))
			continue;
		if (m->n == cap) {
			struct mon_sa *v;

			cap = cap ? cap * 2 : 64;
			v = realloc(m->v, cap * sizeof(*v));
			if (!v) {
				explicit_bzero(&sa, sizeof(sa));
				return -ENOMEM;
			}
			m->v = v;
		}
		rt_read(db, &sa, slot, &rc, false);
		totals_add(&m->tot, &rc);
		m->v[m->n++] = (struct mon_sa){ slot, sa.spi, sa.dir, sa.proto, sa.instance,
						rc.packets, rc.bytes, rc.drops_total, rc.expired };
	}
	explicit_bzero(&sa, sizeof(sa));
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), mon_cmp);
	return 0;
}

/* The same SA in the previous sample: same slot and instance (a slot reused by a new SA starts
 * from zero). Samples are sorted by slot, so this stays O(log n) with a million SAs. */
static const struct mon_sa *mon_find(const struct mon_sample *m, const struct mon_sa *s)
{
	const struct mon_sa *p = m->n ? bsearch(s, m->v, m->n, sizeof(*s), mon_cmp) : NULL;

	return p && p->instance == s->instance ? p : NULL;
}

/* The expiry an SA reached since the previous sample ("soft-expired", "hard-expired"), or NULL. An
 * SA not in the previous sample has no transition to report. */
static const char *mon_event(const struct mon_sa *s, const struct mon_sa *p)
{
	if (!p || (s->expired & ~p->expired & 3u) == 0)
		return NULL;
	return (s->expired & ~p->expired & 2u) ? "hard-expired" : "soft-expired";
}

static void human(char *buf, size_t len, double v)
{
	const char *u = "";

	if (v >= 1e9) {
		v /= 1e9;
		u = "G";
	} else if (v >= 1e6) {
		v /= 1e6;
		u = "M";
	} else if (v >= 1e3) {
		v /= 1e3;
		u = "k";
	}
	snprintf(buf, len, "%.1f%s", v, u);
}

static void mon_print(const struct ctl_opts *o, const struct mon_sample *a,
		      const struct mon_sample *b, bool tty)
{
	double dt = b->t - a->t;
	uint64_t dp = sub0(b->tot.packets, a->tot.packets), db_ = sub0(b->tot.bytes, a->tot.bytes);
	uint64_t dd = sub0(b->tot.drops_total, a->tot.drops_total);
	char t[32], h1[16], h2[16];
	time_t now = time(NULL);
	struct tm tm;

	if (dt <= 0)
		dt = 1e-9;
	localtime_r(&now, &tm);
	strftime(t, sizeof(t), "%H:%M:%S", &tm);
	if (o->json) {
		struct ctl_json j;

		ctl_json_init(&j, stdout);
		j.compact = true;
		ctl_json_obj(&j, NULL);
		ctl_json_u64(&j, "sas", b->tot.sas);
		ctl_json_u64(&j, "packets", dp);
		ctl_json_u64(&j, "bytes", db_);
		ctl_json_u64(&j, "drops", dd);
		ctl_json_u64(&j, "packets_per_s", (uint64_t)llround((double)dp / dt));
		ctl_json_u64(&j, "bytes_per_s", (uint64_t)llround((double)db_ / dt));
		ctl_json_u64(&j, "drops_per_s", (uint64_t)llround((double)dd / dt));
		ctl_json_obj(&j, "drops_by_reason");
		for (unsigned i = 1; i < SADB_DROP_MAX; i++)
			if (b->tot.drops[i] > a->tot.drops[i])
				ctl_json_u64(&j, sadb_drop_name(i), b->tot.drops[i] - a->tot.drops[i]);
		ctl_json_end_obj(&j);
		ctl_json_arr(&j, "per_sa");
		for (size_t i = 0; i < b->n; i++) {
			const struct mon_sa *s = &b->v[i], *p = mon_find(a, s);
			char spi[16];

			snprintf(spi, sizeof(spi), "0x%08x", s->spi);
			ctl_json_obj(&j, NULL);
			ctl_json_str(&j, "spi", spi);
			ctl_json_str(&j, "dir", ctl_dir_name(s->dir));
			ctl_json_u64(&j, "packets", sub0(s->packets, p ? p->packets : 0));
			ctl_json_u64(&j, "bytes", sub0(s->bytes, p ? p->bytes : 0));
			ctl_json_u64(&j, "drops", sub0(s->drops_total, p ? p->drops_total : 0));
			ctl_json_str(&j, "expiry", expiry_name(s->expired));
			ctl_json_end_obj(&j);
		}
		ctl_json_end_arr(&j);
		ctl_json_arr(&j, "events");
		for (size_t i = 0; i < b->n; i++) {
			const struct mon_sa *s = &b->v[i];
			const char *ev = mon_event(s, mon_find(a, s));
			char spi[16];

			if (!ev)
				continue;
			snprintf(spi, sizeof(spi), "0x%08x", s->spi);
			ctl_json_obj(&j, NULL);
			ctl_json_str(&j, "spi", spi);
			ctl_json_str(&j, "dir", ctl_dir_name(s->dir));
			ctl_json_str(&j, "event", ev);
			ctl_json_end_obj(&j);
		}
		ctl_json_end_arr(&j);
		ctl_json_end_obj(&j);
		ctl_json_done(&j);
		return;
	}
	human(h1, sizeof(h1), (double)dp / dt);
	human(h2, sizeof(h2), (double)db_ * 8 / dt);
	if (!tty) {
		printf("%s sas %" PRIu64 " pkts/s %s bits/s %s drops/s %.1f", t, b->tot.sas, h1, h2,
		       (double)dd / dt);
		for (unsigned i = 1; i < SADB_DROP_MAX; i++)
			if (b->tot.drops[i] > a->tot.drops[i])
				printf(" %s %.1f/s", sadb_drop_name(i),
				       (double)(b->tot.drops[i] - a->tot.drops[i]) / dt);
		for (size_t i = 0; i < b->n; i++) {
			const struct mon_sa *s = &b->v[i];
			const char *ev = mon_event(s, mon_find(a, s));

			if (ev)
				printf(" SA 0x%08x %s %s", s->spi, ctl_dir_name(s->dir), ev);
		}
		putchar('\n');
		fflush(stdout);
		return;
	}
	/* Redraw in place: home, clear to end of screen. */
	printf("\033[H\033[J");
	printf("ipsecctl monitor  %s  every %.1fs  (%s)\n\n", t, o->interval, o->sadb_path);
	printf("%-12s %-4s %-4s %12s %12s %12s %14s  %s\n", "SPI", "PROTO", "DIR", "pkts/s", "bits/s",
	       "drops/s", "packets", "LIFETIME");
	for (size_t i = 0; i < b->n; i++) {
		const struct mon_sa *s = &b->v[i], *p = mon_find(a, s);
		char r1[16], r2[16];

		human(r1, sizeof(r1), (double)sub0(s->packets, p ? p->packets : 0) / dt);
		human(r2, sizeof(r2), (double)sub0(s->bytes, p ? p->bytes : 0) * 8 / dt);
		printf("0x%08x   %-5s %-4s %12s %12s %12.1f %14" PRIu64 "  %s\n", s->spi,
		       ctl_proto_name(s->proto), ctl_dir_name(s->dir), r1, r2,
		       (double)sub0(s->drops_total, p ? p->drops_total : 0) / dt, s->packets,
		       s->expired & 2 ? "expired" : s->expired & 1 ? "dying" : "ok");
	}
	printf("\n%-23s %12s %12s %12.1f\n", "total", h1, h2, (double)dd / dt);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (b->tot.drops[i])
			printf("  %-46s %12" PRIu64 " (%.1f/s)\n", sadb_drop_str(i), b->tot.drops[i],
			       (double)sub0(b->tot.drops[i], a->tot.drops[i]) / dt);
	fflush(stdout);
}

int ctl_monitor(struct sadb *db, const struct ctl_opts *o, int argc, char **argv)
{
	struct spi_filter flt;
	struct mon_sample a = { 0 }, b = { 0 }, tmp;
	bool tty = isatty(STDOUT_FILENO) && !o->json;
	int rc = CTL_EXIT_OK;

	if (filter_parse(argc, argv, &flt))
		return CTL_EXIT_USAGE;
	if (mon_sample(db, &flt, &a)) {
		rc = CTL_EXIT_ERR;
		goto out;
	}
	for (long i = 0; o->count == 0 || i < o->count; i++) {
		struct timespec ts;
		double target = a.t + o->interval, left;

		/* Sleep to the interval boundary measured from the last sample, so rates stay
		 * per-interval even when printing is slow. */
		while ((left = target - now_mono()) > 0) {
			ts.tv_sec = (time_t)left;
			ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		if (mon_sample(db, &flt, &b)) {
			rc = CTL_EXIT_ERR;
			goto out;
		}
		mon_print(o, &a, &b, tty);
		if (ferror(stdout)) {
			rc = CTL_EXIT_ERR;
			goto out;
		}
		tmp = a;
		a = b;
		b = tmp;
	}
out:
	free(a.v);
	free(b.v);
	free(flt.spi);
	return rc;
}
