/* ipsecctl/ipsecctl_stats.c: ipsecctl's statistics: totals over every SA's runtime counters and the
 * dataplane workers' records (`show stats`), and `monitor`, which samples them every interval and
 * prints per-second rates and the SAs that reached a lifetime since the last sample. Readers only. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl_rt.h"

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
		ctl_rt_read(db, &sa, slot, &rc, false);
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

/* A worker's packet counters, or their sum over the workers (the sum is a private copy; LD reads
 * either the same way). */
static void worker_json(struct ctl_json *j, const struct sadb_worker_stats *w)
{
	const struct ctl_json_num n[] = {
		{ "rx_packets", sadb_worker_rx_packets(w) }, { "rx_bytes", LD(w->rx_bytes) },
		{ "tx_packets", sadb_worker_tx_packets(w) }, { "tx_bytes", LD(w->tx_bytes) },
		{ "frag_packets", LD(w->frag_packets) }, { "frag_made", LD(w->frag_made) },
		{ "reasm_packets", LD(w->reasm_packets) }, { "reasm_frags", LD(w->reasm_frags) },
		{ "handoff_done", LD(w->handoff_done) }, { "handoff_jobs", LD(w->handoff_jobs) },
		{ "handoff_pkts", LD(w->handoff_pkts) }, { "handoff_back", LD(w->handoff_back) },
	};

	ctl_json_u64s(j, n, sizeof(n) / sizeof(n[0]));
}

void ctl_stats_json(struct ctl_json *j, const char *key, struct sadb *db)
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
	worker_json(j, &t.nosa);
	ctl_json_end_obj(j);
	ctl_json_arr(j, "workers");
	for (int i = 0; i < t.n_workers; i++) {
		const struct sadb_worker_stats *w = sadb_worker_stats(db, (unsigned)i);

		ctl_json_obj(j, NULL);
		ctl_json_u64(j, "id", (uint64_t)i);
		worker_json(j, w);
		drops_json(j, "drops", w->drops);
		ctl_json_end_obj(j);
	}
	ctl_json_end_arr(j);
	ctl_json_end_obj(j);
}

void ctl_stats_text(FILE *f, struct sadb *db)
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
			PRIu64 " bytes, drops without SA %" PRIu64 "\n", i, sadb_worker_rx_packets(w),
			LD(w->rx_bytes), sadb_worker_tx_packets(w), LD(w->tx_bytes), nd);
		if (LD(w->frag_packets) || LD(w->reasm_packets))
			fprintf(f, "    fragmented %" PRIu64 " packets into %" PRIu64 ", reassembled %"
				PRIu64 " from %" PRIu64 " fragments\n", LD(w->frag_packets),
				LD(w->frag_made), LD(w->reasm_packets), LD(w->reasm_frags));
		if (LD(w->handoff_done) || LD(w->handoff_jobs))
			fprintf(f, "    hand-off: decrypted %" PRIu64 " packets for other workers; handed off %"
				PRIu64 " jobs, %" PRIu64 " packets of them decrypted by others, %" PRIu64
				" jobs taken back\n", LD(w->handoff_done), LD(w->handoff_jobs),
				LD(w->handoff_pkts), LD(w->handoff_back));
		for (unsigned r = 1; r < SADB_DROP_MAX; r++)
			if (LD(w->drops[r]))
				fprintf(f, "    %-46s %" PRIu64 "\n", sadb_drop_str(r), LD(w->drops[r]));
	}
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
		if (!ctl_filter_match(flt, sa.spi))
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
		ctl_rt_read(db, &sa, slot, &rc, false);
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

/* What changed between two samples a and b, over dt seconds. */
struct mon_delta {
	const struct mon_sample *a, *b;
	double dt;
	uint64_t packets, bytes, drops;
	char time[32];              /* when b was printed, HH:MM:SS */
};

/* --json: one compact object a line. */
static void mon_print_json(const struct mon_delta *d)
{
	const struct mon_sample *a = d->a, *b = d->b;
	struct ctl_json j;

	ctl_json_init(&j, stdout);
	j.compact = true;
	ctl_json_obj(&j, NULL);
	ctl_json_u64(&j, "sas", b->tot.sas);
	ctl_json_u64(&j, "packets", d->packets);
	ctl_json_u64(&j, "bytes", d->bytes);
	ctl_json_u64(&j, "drops", d->drops);
	ctl_json_u64(&j, "packets_per_s", (uint64_t)llround((double)d->packets / d->dt));
	ctl_json_u64(&j, "bytes_per_s", (uint64_t)llround((double)d->bytes / d->dt));
	ctl_json_u64(&j, "drops_per_s", (uint64_t)llround((double)d->drops / d->dt));
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
		ctl_json_u64(&j, "spi", s->spi);
		ctl_json_str(&j, "spi_hex", spi);
		ctl_json_str(&j, "dir", ctl_dir_name(s->dir));
		ctl_json_u64(&j, "packets", ctl_sub0(s->packets, p ? p->packets : 0));
		ctl_json_u64(&j, "bytes", ctl_sub0(s->bytes, p ? p->bytes : 0));
		ctl_json_u64(&j, "drops", ctl_sub0(s->drops_total, p ? p->drops_total : 0));
		ctl_json_str(&j, "expiry", ctl_expiry_name(s->expired));
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
		ctl_json_u64(&j, "spi", s->spi);
		ctl_json_str(&j, "spi_hex", spi);
		ctl_json_str(&j, "dir", ctl_dir_name(s->dir));
		ctl_json_str(&j, "event", ev);
		ctl_json_end_obj(&j);
	}
	ctl_json_end_arr(&j);
	ctl_json_end_obj(&j);
	ctl_json_done(&j);
}

/* Not a terminal: one line an interval, for logs and pipes. */
static void mon_print_line(const struct mon_delta *d, const char *pkts, const char *bits)
{
	const struct mon_sample *a = d->a, *b = d->b;

	printf("%s sas %" PRIu64 " pkts/s %s bits/s %s drops/s %.1f", d->time, b->tot.sas, pkts, bits,
	       (double)d->drops / d->dt);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (b->tot.drops[i] > a->tot.drops[i])
			printf(" %s %.1f/s", sadb_drop_name(i),
			       (double)(b->tot.drops[i] - a->tot.drops[i]) / d->dt);
	for (size_t i = 0; i < b->n; i++) {
		const struct mon_sa *s = &b->v[i];
		const char *ev = mon_event(s, mon_find(a, s));

		if (ev)
			printf(" SA 0x%08x %s %s", s->spi, ctl_dir_name(s->dir), ev);
	}
	putchar('\n');
}

/* A terminal: the table of SAs, redrawn in place (home, clear to end of screen). */
static void mon_print_screen(const struct ctl_opts *o, const struct mon_delta *d, const char *pkts,
			     const char *bits)
{
	const struct mon_sample *a = d->a, *b = d->b;

	printf("\033[H\033[J");
	printf("ipsecctl monitor  %s  every %.1fs  (%s)\n\n", d->time, o->interval, o->sadb_path);
	printf("%-12s %-4s %-4s %12s %12s %12s %14s  %s\n", "SPI", "PROTO", "DIR", "pkts/s", "bits/s",
	       "drops/s", "packets", "LIFETIME");
	for (size_t i = 0; i < b->n; i++) {
		const struct mon_sa *s = &b->v[i], *p = mon_find(a, s);
		char r1[16], r2[16];

		human(r1, sizeof(r1), (double)ctl_sub0(s->packets, p ? p->packets : 0) / d->dt);
		human(r2, sizeof(r2), (double)ctl_sub0(s->bytes, p ? p->bytes : 0) * 8 / d->dt);
		printf("0x%08x   %-5s %-4s %12s %12s %12.1f %14" PRIu64 "  %s\n", s->spi,
		       ctl_proto_name(s->proto), ctl_dir_name(s->dir), r1, r2,
		       (double)ctl_sub0(s->drops_total, p ? p->drops_total : 0) / d->dt, s->packets,
		       s->expired & 2 ? "expired" : s->expired & 1 ? "dying" : "ok");
	}
	printf("\n%-23s %12s %12s %12.1f\n", "total", pkts, bits, (double)d->drops / d->dt);
	for (unsigned i = 1; i < SADB_DROP_MAX; i++)
		if (b->tot.drops[i])
			printf("  %-46s %12" PRIu64 " (%.1f/s)\n", sadb_drop_str(i), b->tot.drops[i],
			       (double)ctl_sub0(b->tot.drops[i], a->tot.drops[i]) / d->dt);
}

static void mon_print(const struct ctl_opts *o, const struct mon_sample *a,
		      const struct mon_sample *b, bool tty)
{
	struct mon_delta d = { a, b, b->t - a->t, ctl_sub0(b->tot.packets, a->tot.packets),
			       ctl_sub0(b->tot.bytes, a->tot.bytes),
			       ctl_sub0(b->tot.drops_total, a->tot.drops_total), "" };
	char pkts[16], bits[16];
	time_t now = time(NULL);
	struct tm tm;

	if (d.dt <= 0)
		d.dt = 1e-9;
	localtime_r(&now, &tm);
	strftime(d.time, sizeof(d.time), "%H:%M:%S", &tm);
	if (o->json) {
		mon_print_json(&d);
		return;
	}
	human(pkts, sizeof(pkts), (double)d.packets / d.dt);
	human(bits, sizeof(bits), (double)d.bytes * 8 / d.dt);
	if (tty)
		mon_print_screen(o, &d, pkts, bits);
	else
		mon_print_line(&d, pkts, bits);
	fflush(stdout);
}

int ctl_monitor(struct sadb *db, const struct ctl_opts *o, int argc, char **argv)
{
	struct spi_filter flt;
	struct mon_sample a = { 0 }, b = { 0 }, tmp;
	bool tty = isatty(STDOUT_FILENO) && !o->json;
	int rc = CTL_EXIT_OK;

	if (ctl_filter_parse(argc, argv, &flt))
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
