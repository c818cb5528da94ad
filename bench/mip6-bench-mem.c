/* bench/mip6-bench-mem.c: Binding Update / Binding Acknowledgement exchanges per second through ESP, in
 * memory on one core, for 1 and for 10,000 registered mobile nodes, each with its own pair of
 * transport-mode SAs (BU: mobile node -> home agent, BA: home agent -> mobile node; RFC 3776).
 *
 * One exchange: the mobile node builds a Binding Update (Home Address and Alternate Care-of Address
 * options, mip6_build_bu) and encrypts it with libesp; the home agent finds the SA by SPI, decrypts,
 * parses the packet and applies its rules (mip6_ha_input: a refresh of the binding), builds the
 * Binding Acknowledgement (IPv6 / type 2 routing header / MH) and encrypts it; the mobile node
 * decrypts and parses it and checks its status and sequence number (an exchange that is not
 * accepted stops the benchmark). With 10,000 mobile nodes they take turns in a shuffled order, so
 * SA objects and binding cache entries are not in cache.
 *
 * libesp's outbound transport mode puts ESP in front of a destination options header that precedes
 * no routing header, while RFC 6275 §6.3 wants the Home Address option before ESP: the benchmark's
 * mobile node moves that header in front of ESP itself after encrypting (a few byte moves, counted in
 * the mobile node's time). The SA lookup is a direct index by SPI, standing in for the SADB's hash.
 *
 * Printed per transform (AES-GCM-16-128, and AES-CBC-128 with HMAC-SHA-256-128) and number of mobile
 * nodes: exchanges per second of the whole loop (both ends on this core) and of the home agent's
 * share alone, and ns per exchange split into the home agent's ESP work (decrypt BU + encrypt BA),
 * its MIP6 work (parse, rules, binding cache, BA build) and the mobile node's (build, encrypt, HAO
 * move, decrypt, parse). Medians over REPS runs of EXCH exchanges.
 * Before its figures, each run prints the home agent's own memory for that many mobile nodes (the
 * binding cache, the mobile node table and their index: glibc's mallinfo2, heap and mapped blocks,
 * from before mip6_ha_create, once the SAs exist, to after every node registered): "# home agent
 * state for N mobile nodes: B bytes"; the difference between two N is the memory a binding costs
 * beyond its SAs.
 * Build without --enable-asan for meaningful figures. Usage: mip6-bench-mem [-r REPS] [-n EXCH] [-m MNS]
 * [-t gcm|cbc] */
#include "config.h"

#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "dataplane/engine/esp.h"
#include "mobility/mip6_ha.h"

#define FRAME 2048
#define OFF 256
#define SPI_BASE 0x10000u

struct xf {
	const char *name;
	uint16_t enc, auth;
	uint8_t klen, akey_len, salt_len;
};

static const struct xf xfs[] = {
	{ "aes-gcm-16-128", SADB_ENC_AES_GCM16, SADB_AUTH_NONE, 16, 0, 4 },
	{ "aes-cbc-128/hmac-sha256-128", SADB_ENC_AES_CBC, SADB_AUTH_HMAC_SHA256_128, 16, 32, 0 },
};

struct node {
	struct esp_sa *mn_bu_out, *ha_bu_in, *ha_ba_out, *mn_ba_in;
	struct sadb_runtime *rt[4];
	uint8_t hoa[16], coa[16];
	uint16_t seq;
};

static void die(const char *what, int r)
{
	fprintf(stderr, "mip6-bench-mem: %s: %d\n", what, r);
	exit(1);
}

static inline uint64_t tsc(void)
{
	return __rdtsc();
}

static double tsc_ghz(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t t0 = tsc();
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 200000000L);
	uint64_t t1 = tsc();
	return (double)(t1 - t0) / ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec));
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_d);
	return v[n / 2];
}

static void addr(uint8_t a[16], uint16_t g0, uint16_t g1, uint32_t low)
{
	memset(a, 0, 16);
	a[0] = 0x20; a[1] = 0x01; a[2] = 0x0d; a[3] = 0xb8;
	a[4] = (uint8_t)(g0 >> 8); a[5] = (uint8_t)g0;
	a[6] = (uint8_t)(g1 >> 8); a[7] = (uint8_t)g1;
	a[12] = (uint8_t)(low >> 24); a[13] = (uint8_t)(low >> 16); a[14] = (uint8_t)(low >> 8);
	a[15] = (uint8_t)low;
}

static struct esp_sa *mk_sa(const struct xf *x, uint32_t spi, uint8_t dir, const uint8_t src[16],
			    const uint8_t dst[16], struct sadb_runtime **rtp)
{
	struct sadb_sa s;
	memset(&s, 0, sizeof(s));
	s.spi = spi;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TRANSPORT;
	s.dir = dir;
	s.state = SADB_STATE_MATURE;
	s.src.family = s.dst.family = AF_INET6;
	memcpy(s.src.a.b, src, 16);
	memcpy(s.dst.a.b, dst, 16);
	s.enc_alg = x->enc;
	s.auth_alg = x->auth;
	s.enc_key_len = x->klen;
	s.salt_len = x->salt_len;
	s.auth_key_len = x->akey_len;
	for (unsigned i = 0; i < sizeof(s.enc_key); i++)
		s.enc_key[i] = (uint8_t)(spi * 13 + i * 7);
	for (unsigned i = 0; i < sizeof(s.salt); i++)
		s.salt[i] = (uint8_t)(spi + i);
	for (unsigned i = 0; i < sizeof(s.auth_key); i++)
		s.auth_key[i] = (uint8_t)(spi * 5 + i * 3);
	s.replay_window = 1024;
	s.dscp = 0xff;
	s.instance = 1;
	struct sadb_runtime *rt = aligned_alloc(64, (sizeof(*rt) + 63) & ~(size_t)63);
	if (!rt)
		die("aligned_alloc", -12);
	memset(rt, 0, sizeof(*rt));
	rt->instance = 1;
	struct esp_sa_opts o;
	memset(&o, 0, sizeof(o));
	struct esp_sa *sa;
	int r = esp_sa_create(&s, rt, &o, &sa);
	if (r)
		die("esp_sa_create", r);
	*rtp = rt;
	return sa;
}

/* Move the destination options header (24 bytes after the IPv6 header, the HAO) out of the way
 * before encryption, and back in front of ESP after it: RFC 6275 §6.3's order. */
static void hao_lift(struct esp_pkt *p, uint8_t saved[24])
{
	uint8_t *ip = p->buf + p->off;
	memcpy(saved, ip + 40, 24);
	memmove(ip + 24, ip, 40);
	p->off += 24;
	p->len -= 24;
	ip += 24;
	ip[6] = saved[0];  /* the DO's next header (135) */
	uint16_t pl = (uint16_t)(p->len - 40);
	ip[4] = (uint8_t)(pl >> 8);
	ip[5] = (uint8_t)pl;
}

static void hao_put_back(struct esp_pkt *p, const uint8_t saved[24])
{
	uint8_t *ip = p->buf + p->off;
	uint8_t nh = ip[6];  /* ESP */
	memmove(ip - 24, ip, 40);
	p->off -= 24;
	p->len += 24;
	ip -= 24;
	memcpy(ip + 40, saved, 24);
	ip[40] = nh;
	ip[6] = 60;
	uint16_t pl = (uint16_t)(p->len - 40);
	ip[4] = (uint8_t)(pl >> 8);
	ip[5] = (uint8_t)pl;
}

struct times {
	uint64_t ha_esp, ha_mip6, mn;
};

static uint8_t ha_addr[16];
static uint8_t frame_a[FRAME], frame_b[FRAME];

static void exchange(struct mip6_ha *ha, struct node *nodes, uint32_t i, uint64_t now, struct times *t)
{
	struct node *n = &nodes[i];
	struct mip6_bu bu = { .seq = ++n->seq, .flags = MIP6_BU_A | MIP6_BU_H, .lifetime = 100,
			      .has_alt_coa = true };
	memcpy(bu.alt_coa, n->coa, 16);
	uint64_t t0 = tsc();
	/* mobile node: build, encrypt, HAO in front of ESP */
	int len = mip6_build_bu(frame_a + OFF, FRAME - OFF - ESP_TAILROOM, n->coa, ha_addr, n->hoa, &bu);
	struct esp_pkt pa = { .buf = frame_a, .buf_len = FRAME, .off = OFF, .len = (uint32_t)len }, *pp = &pa;
	uint8_t saved[24];
	hao_lift(&pa, saved);
	if (esp_outbound_burst(n->mn_bu_out, &pp, 1) != 1)
		die("BU encrypt", pa.drop);
	hao_put_back(&pa, saved);
	uint64_t t1 = tsc();
	/* home agent: SA by SPI, decrypt */
	struct esp_outer o;
	if (esp_parse_outer(pa.buf + pa.off, pa.len, 0, &o) != SADB_DROP_NONE)
		die("parse outer", 0);
	uint32_t idx = (o.spi - SPI_BASE) / 2;
	if (esp_inbound_burst(nodes[idx].ha_bu_in, &pp, 1) != 1)
		die("BU decrypt", pa.drop);
	uint64_t t2 = tsc();
	/* home agent: the rules, the BA */
	struct mip6_ha_result r;
	mip6_ha_input(ha, pa.buf + pa.off, pa.len, idx * 2 + 1, now, &r);
	if (r.drop != MIP6_DROP_NONE || r.ba.status != MIP6_ST_ACCEPTED)
		die(r.drop ? mip6_drop_name(r.drop) : mip6_status_name(r.ba.status), (int)i);
	len = mip6_ha_build_ba(ha, &r, frame_b + OFF, FRAME - OFF - ESP_TAILROOM);
	uint64_t t3 = tsc();
	struct esp_pkt pb = { .buf = frame_b, .buf_len = FRAME, .off = OFF, .len = (uint32_t)len };
	pp = &pb;
	if (esp_outbound_burst(nodes[(r.mn->ba_sa - 2) / 2].ha_ba_out, &pp, 1) != 1)
		die("BA encrypt", pb.drop);
	uint64_t t4 = tsc();
	/* mobile node: decrypt, parse, check */
	if (esp_inbound_burst(n->mn_ba_in, &pp, 1) != 1)
		die("BA decrypt", pb.drop);
	struct mip6_pkt p;
	if (mip6_parse(pb.buf + pb.off, pb.len, &p) != MIP6_DROP_NONE || p.mh_type != MIP6_MH_BA ||
	    p.m.ba.status != 0 || p.m.ba.seq != n->seq || memcmp(p.rh2_addr, n->hoa, 16))
		die("BA check", (int)i);
	uint64_t t5 = tsc();
	t->mn += (t1 - t0) + (t5 - t4);
	t->ha_esp += (t2 - t1) + (t4 - t3);
	t->ha_mip6 += t3 - t2;
}

/* Bytes the process holds from malloc, in the heap and in blocks it mapped (large tables are). */
static size_t heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

static void run(const struct xf *x, uint32_t mns, unsigned reps, unsigned exch, double ghz)
{
	struct mip6_ha_config c;
	memset(&c, 0, sizeof(c));
	addr(c.ha_addrs[0], 0, 0, 1);
	memcpy(ha_addr, c.ha_addrs[0], 16);
	c.n_ha_addrs = 1;
	addr(c.prefixes[0].addr, 0, 0, 0);
	c.prefixes[0].len = 64;
	c.n_prefixes = 1;
	c.max_lifetime_s = 3600;
	c.refresh_s = 300;
	c.max_mns = mns;
	c.hash_seed = 0x6275;
	struct mip6_ha *ha;
	struct node *nodes = calloc(mns, sizeof(*nodes));
	uint32_t *order = malloc((size_t)mns * sizeof(*order));
	if (!nodes || !order)
		die("calloc", -12);
	for (uint32_t i = 0; i < mns; i++) {
		struct node *n = &nodes[i];
		addr(n->hoa, 0, 0, 0x1000 + i);
		addr(n->coa, 0x77, (uint16_t)(i >> 16), i + 5);
		uint32_t bu_spi = SPI_BASE + 2 * i, ba_spi = bu_spi + 1;
		n->mn_bu_out = mk_sa(x, bu_spi, SADB_DIR_OUT, n->coa, ha_addr, &n->rt[0]);
		n->ha_bu_in = mk_sa(x, bu_spi, SADB_DIR_IN, n->coa, ha_addr, &n->rt[1]);
		n->ha_ba_out = mk_sa(x, ba_spi, SADB_DIR_OUT, ha_addr, n->coa, &n->rt[2]);
		n->mn_ba_in = mk_sa(x, ba_spi, SADB_DIR_IN, ha_addr, n->coa, &n->rt[3]);
		n->seq = (uint16_t)(i * 7919);
		order[i] = i;
	}
	/* the home agent after the SAs, so that what it holds is measured alone (mallinfo2 walks the
	 * allocator's free lists: twice a run, not per node) */
	size_t heap0 = heap_bytes();
	int r = mip6_ha_create(&c, &ha);
	if (r)
		die("mip6_ha_create", r);
	for (uint32_t i = 0; i < mns; i++) {
		struct mip6_mn m = { .bu_sa = 2 * i + 1, .ba_sa = 2 * i + 2 };
		memcpy(m.hoa, nodes[i].hoa, 16);
		if ((r = mip6_ha_mn_add(ha, &m)))
			die("mip6_ha_mn_add", r);
	}
	/* every mobile node registers once, untimed */
	struct times t;
	memset(&t, 0, sizeof(t));
	for (uint32_t i = 0; i < mns; i++)
		exchange(ha, nodes, i, now_ms(), &t);
	if (mip6_ha_count(ha) != mns)
		die("registrations", (int)mip6_ha_count(ha));
	printf("# home agent state for %6u mobile nodes: %zu bytes\n", mns, heap_bytes() - heap0);

	double *rate = malloc(reps * sizeof(double)), *ha_rate = malloc(reps * sizeof(double));
	double *esp_ns = malloc(reps * sizeof(double)), *mip_ns = malloc(reps * sizeof(double));
	double *mn_ns = malloc(reps * sizeof(double));
	srand(3776);
	for (unsigned rep = 0; rep < reps; rep++) {
		memset(&t, 0, sizeof(t));
		uint64_t w0 = tsc();
		for (unsigned e = 0; e < exch; e++) {
			uint32_t k = e % mns;
			if (k == 0 && mns > 1) {
				for (uint32_t i = mns - 1; i > 0; i--) {
					uint32_t j = (uint32_t)rand() % (i + 1), tmp = order[i];
					order[i] = order[j];
					order[j] = tmp;
				}
			}
			exchange(ha, nodes, order[k], now_ms(), &t);
		}
		uint64_t w1 = tsc();
		double secs = (double)(w1 - w0) / ghz / 1e9;
		rate[rep] = exch / secs;
		esp_ns[rep] = (double)t.ha_esp / ghz / exch;
		mip_ns[rep] = (double)t.ha_mip6 / ghz / exch;
		mn_ns[rep] = (double)t.mn / ghz / exch;
		ha_rate[rep] = 1e9 / (esp_ns[rep] + mip_ns[rep]);
	}
	const struct mip6_ha_stats *st = mip6_ha_stats(ha);
	printf("%-28s %6u  %9.0f  %9.0f  %8.0f  %8.0f  %8.0f  %s\n", x->name, mns, median(rate, reps),
	       median(ha_rate, reps), median(esp_ns, reps), median(mip_ns, reps), median(mn_ns, reps),
	       esp_backend_name(esp_sa_backend(nodes[0].ha_bu_in)));
	if (st->bu_accepted != st->bu_received || st->ba_sent != st->bu_received)
		die("counters", 0);
	fflush(stdout);
	for (uint32_t i = 0; i < mns; i++) {
		esp_sa_destroy(nodes[i].mn_bu_out);
		esp_sa_destroy(nodes[i].ha_bu_in);
		esp_sa_destroy(nodes[i].ha_ba_out);
		esp_sa_destroy(nodes[i].mn_ba_in);
		for (int k = 0; k < 4; k++)
			free(nodes[i].rt[k]);
	}
	free(nodes);
	free(order);
	free(rate);
	free(ha_rate);
	free(esp_ns);
	free(mip_ns);
	free(mn_ns);
	mip6_ha_destroy(ha);
}

int main(int argc, char **argv)
{
	unsigned reps = 7, exch = 20000;
	uint32_t only_mns = 0;
	const char *only_t = NULL;
	int ch;
	while ((ch = getopt(argc, argv, "r:n:m:t:")) != -1) {
		switch (ch) {
		case 'r': reps = (unsigned)atoi(optarg); break;
		case 'n': exch = (unsigned)atoi(optarg); break;
		case 'm': only_mns = (uint32_t)atoi(optarg); break;
		case 't': only_t = optarg; break;
		default:
			fprintf(stderr, "usage: mip6-bench-mem [-r REPS] [-n EXCH] [-m MNS] [-t gcm|cbc]\n");
			return 2;
		}
	}
	if (!reps || !exch)
		return 2;
	double ghz = tsc_ghz();
	printf("BU/BA exchanges through ESP transport mode, one core, median of %u runs of %u exchanges\n", reps, exch);
	printf("%-28s %6s  %9s  %9s  %8s  %8s  %8s  %s\n", "transform", "MNs", "exch/s", "HA exch/s",
	       "HA ESP", "HA MIP6", "MN", "backend");
	printf("%-28s %6s  %9s  %9s  %8s  %8s  %8s\n", "", "", "(both)", "(HA only)", "ns/exch", "ns/exch", "ns/exch");
	static const uint32_t sizes[] = { 1, 10000 };
	for (unsigned xi = 0; xi < sizeof(xfs) / sizeof(xfs[0]); xi++) {
		if (only_t && !strstr(xfs[xi].name, only_t))
			continue;
		for (unsigned si = 0; si < 2; si++) {
			if (only_mns && only_mns != sizes[si])
				continue;
			run(&xfs[xi], sizes[si], reps, exch, ghz);
		}
		if (only_mns && only_mns != 1 && only_mns != 10000)
			run(&xfs[xi], only_mns, reps, exch, ghz);
	}
	return 0;
}
