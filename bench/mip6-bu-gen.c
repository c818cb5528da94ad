/* bench/mip6-bu-gen.c: the Binding Update generator of bench/mip6-bench's end-to-end measurement: N
 * mobile nodes behind one care-of address register with a home agent (xipsecd) and then refresh
 * their bindings, as fast as the home agent answers.
 *
 *   mip6-bu-gen conf HA PREFIX/LEN HOA0 N      the home agent's ipsecctl configuration for N mobile
 *                                              nodes (home addresses HOA0, HOA0 + 1, ...): keys and
 *                                              SPIs derived from the mobile node's index, as `run`
 *                                              derives them
 *   mip6-bu-gen run IF DMAC COA HA HOA0|@KEYS N ROUNDS WINDOW SECONDS
 *                                              one registration per mobile node (Binding Update
 *                                              sequence 1: a new binding, the home agent migrates its
 *                                              tunnel SAs), then ROUNDS refreshes of each from the
 *                                              same care-of address; prints one line per phase:
 *                                              "PHASE answered lost seconds per_second cpu%" (cpu%:
 *                                              the generator's own CPU time over the phase) and the BA
 *                                              statuses other than 0; each phase stops after
 *                                              SECONDS whatever is left. @KEYS: the mobile
 *                                              nodes' home addresses, SPIs and keys come from the
 *                                              first N lines of file KEYS, "HOA BU_SPI BU_KEY
 *                                              BA_SPI BA_KEY" (keys: 40 hex digits, AES-128 and
 *                                              salt), as IKEv2 negotiated them (mip6-ike-bench)
 * Every Binding Update (Home Address and Alternate Care-of Address options, mip6_build_bu) is built
 * and ESP-protected (libesp, AES-GCM-16-128, transport mode, the Home Address option in front of
 * ESP as RFC 6275 section 6.3 orders it) before anything is sent, so the generator's work while it
 * measures is one sendto per Binding Update and one decryption and parse per Binding
 * Acknowledgement. At most WINDOW Binding Updates are outstanding (sent and not answered); a new
 * one goes out for each acknowledgement. When nothing is answered for 200 ms the outstanding ones
 * are counted lost and sending goes on. Frames go out of an AF_PACKET socket on IF to DMAC; the
 * acknowledgements are read there too. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_ether.h>

#include "dataplane/engine/esp.h"
#include "mobility/mip6.h"

#define SPI_BASE 0x100000u   /* mobile node i: BA SPI_BASE + 4i, BU +1, tunnel out +2, tunnel in +3 */
#define SLOT 256u            /* one pre-built frame */
#define OFF 128u
#define LIFETIME_UNITS 150u  /* 600 s */
#define STALL_MS 200u

static void die(const char *what, int r)
{
	fprintf(stderr, "mip6-bu-gen: %s: %d (%s)\n", what, r, strerror(r < 0 ? -r : r));
	exit(1);
}

static double cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
	       (double)u.ru_stime.tv_usec / 1e6;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The 20 bytes (AES-128 key, then the 4-byte salt) of the SA with this SPI: splitmix64 of the SPI,
 * so no two SAs share a key (ipsecctl refuses that: the nonces would repeat). Benchmark keys only. */
static void key20(uint32_t spi, uint8_t k[20])
{
	uint64_t x = 0x6275000000000000ull + spi;

	for (unsigned j = 0; j < 20; j += 8) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		for (unsigned b = 0; b < 8 && j + b < 20; b++)
			k[j + b] = (uint8_t)(z >> (8 * b));
	}
}

static void hoa_of(const uint8_t hoa0[16], uint32_t i, uint8_t out[16])
{
	uint32_t low;

	memcpy(out, hoa0, 16);
	memcpy(&low, out + 12, 4);
	low = htonl(ntohl(low) + i);
	memcpy(out + 12, &low, 4);
}

static void hex(const uint8_t *b, unsigned n, char *out)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int cmd_conf(int argc, char **argv)
{
	uint8_t hoa0[16], h[16], k[4][20];
	char a[INET6_ADDRSTRLEN], x[4][41];
	uint32_t n;

	if (argc != 6 || inet_pton(AF_INET6, argv[4], hoa0) != 1 || !(n = (uint32_t)atoi(argv[5]))) {
		fprintf(stderr, "usage: mip6-bu-gen conf HA PREFIX/LEN HOA0 N\n");
		return 2;
	}
	printf("home-agent %s prefix %s lifetime 600\n", argv[2], argv[3]);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = SPI_BASE + 4 * i;

		hoa_of(hoa0, i, h);
		inet_ntop(AF_INET6, h, a, sizeof(a));
		for (unsigned r = 0; r < 4; r++) {
			key20(s + r, k[r]);
			hex(k[r], 20, x[r]);
		}
		printf("mobile-node %s signalling spi 0x%x:0x%x enc aes128gcm16 key 0x%s:0x%s "
		       "tunnel spi 0x%x:0x%x enc aes128gcm16 key 0x%s:0x%s\n",
		       a, s, s + 1, x[0], x[1], s + 2, s + 3, x[2], x[3]);
	}
	return 0;
}

/* One mobile node's signalling SAs: derived from its index (key20), or read from a keys file. */
struct node {
	uint8_t hoa[16];
	uint32_t bu_spi, ba_spi;
	uint8_t bu_key[20], ba_key[20];
};

static int unhex20(const char *h, uint8_t k[20])
{
	unsigned v;

	if (strlen(h) != 40)
		return -1;
	for (unsigned i = 0; i < 20; i++) {
		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			return -1;
		k[i] = (uint8_t)v;
	}
	return 0;
}

/* n nodes from file path (@KEYS), or derived from hoa0 as `conf` makes them. */
static struct node *nodes_load(const char *arg, uint32_t n)
{
	struct node *v = calloc(n, sizeof(*v));
	uint8_t hoa0[16];

	if (!v)
		die("malloc", -ENOMEM);
	if (arg[0] != '@') {
		if (inet_pton(AF_INET6, arg, hoa0) != 1)
			die("HOA0", -EINVAL);
		for (uint32_t i = 0; i < n; i++) {
			hoa_of(hoa0, i, v[i].hoa);
			v[i].ba_spi = SPI_BASE + 4 * i;
			v[i].bu_spi = v[i].ba_spi + 1;
			key20(v[i].ba_spi, v[i].ba_key);
			key20(v[i].bu_spi, v[i].bu_key);
		}
		return v;
	}
	FILE *f = fopen(arg + 1, "r");
	char a[64], bk[64], ak[64];

	if (!f)
		die(arg + 1, -errno);
	for (uint32_t i = 0; i < n; i++)
		if (fscanf(f, "%63s %u %63s %u %63s", a, &v[i].bu_spi, bk, &v[i].ba_spi, ak) != 5 ||
		    inet_pton(AF_INET6, a, v[i].hoa) != 1 || unhex20(bk, v[i].bu_key) || unhex20(ak, v[i].ba_key))
			die("keys file line", -EINVAL);
	fclose(f);
	return v;
}

/* An SA of libesp and its runtime area (*rt_out, free() it after esp_sa_destroy). */
static struct esp_sa *mk_sa(uint32_t spi, const uint8_t k[20], uint8_t dir, const uint8_t src[16],
			    const uint8_t dst[16], struct sadb_runtime **rt_out)
{
	struct sadb_sa s;
	struct sadb_runtime *rt;
	struct esp_sa_opts o;
	struct esp_sa *sa;
	int r;

	memset(&s, 0, sizeof(s));
	s.spi = spi;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TRANSPORT;
	s.dir = dir;
	s.state = SADB_STATE_MATURE;
	s.src.family = s.dst.family = AF_INET6;
	memcpy(s.src.a.b, src, 16);
	memcpy(s.dst.a.b, dst, 16);
	s.enc_alg = SADB_ENC_AES_GCM16;
	s.auth_alg = SADB_AUTH_NONE;
	s.enc_key_len = 16;
	s.salt_len = 4;
	memcpy(s.enc_key, k, 16);
	memcpy(s.salt, k + 16, 4);
	s.replay_window = 1024;
	s.dscp = 0xff;
	s.instance = 1;
	rt = aligned_alloc(64, (sizeof(*rt) + 63) & ~(size_t)63);
	if (!rt)
		die("aligned_alloc", -ENOMEM);
	memset(rt, 0, sizeof(*rt));
	rt->instance = 1;
	memset(&o, 0, sizeof(o));
	if ((r = esp_sa_create(&s, rt, &o, &sa)))
		die("esp_sa_create", r);
	*rt_out = rt;
	return sa;
}

/* libesp's transport mode puts ESP in front of the destination options header; RFC 6275 section
 * 6.3 wants the Home Address option before ESP: take it out before encrypting, put it back after. */
static void hao_lift(struct esp_pkt *p, uint8_t saved[24])
{
	uint8_t *ip = p->buf + p->off;
	uint16_t pl;

	memcpy(saved, ip + 40, 24);
	memmove(ip + 24, ip, 40);
	p->off += 24;
	p->len -= 24;
	ip += 24;
	ip[6] = saved[0];
	pl = (uint16_t)(p->len - 40);
	ip[4] = (uint8_t)(pl >> 8);
	ip[5] = (uint8_t)pl;
}

static void hao_put_back(struct esp_pkt *p, const uint8_t saved[24])
{
	uint8_t *ip = p->buf + p->off, nh = ip[6];
	uint16_t pl;

	memmove(ip - 24, ip, 40);
	p->off -= 24;
	p->len += 24;
	ip -= 24;
	memcpy(ip + 40, saved, 24);
	ip[40] = nh;
	ip[6] = 60;
	pl = (uint16_t)(p->len - 40);
	ip[4] = (uint8_t)(pl >> 8);
	ip[5] = (uint8_t)pl;
}

struct gen {
	int fd;
	struct sockaddr_ll to;
	uint8_t coa[16];
	uint32_t n;
	struct esp_sa **ba_in;
	struct sadb_runtime **ba_rt;          /* their runtime areas */
	struct { uint32_t spi, i; } *by_spi;  /* the BA SPIs, sorted, for take() */
	uint8_t *frames;         /* SLOT bytes each: length (2 bytes), then the Ethernet frame */
	unsigned long status[256];
	uint8_t work[2048];
};

/* One frame from the socket: a Binding Acknowledgement for one of ours? 1 if it is (status counted). */
static int take(struct gen *g, const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + 14;
	size_t off = 40;
	uint8_t nh;
	uint32_t spi, i;
	struct esp_pkt p, *pp = &p;
	struct mip6_pkt m;

	if (len < 14 + 40 + 8 || f[12] != 0x86 || f[13] != 0xdd || memcmp(ip + 24, g->coa, 16))
		return 0;
	nh = ip[6];
	if (nh == 43) {     /* the type 2 routing header in front of ESP */
		nh = ip[40];
		off += ((size_t)ip[41] + 1) * 8;
	}
	if (nh != 50 || 14 + off + 8 > len)
		return 0;
	memcpy(&spi, ip + off, 4);
	spi = ntohl(spi);
	{
		size_t lo = 0, hi = g->n;

		while (lo < hi) {   /* the first SPI not below spi */
			size_t mid = (lo + hi) / 2;
			if (g->by_spi[mid].spi < spi)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == g->n || g->by_spi[lo].spi != spi)
			return 0;
		i = g->by_spi[lo].i;
	}
	if (len - 14 > sizeof(g->work) - OFF - ESP_TAILROOM)
		return 0;
	memcpy(g->work + OFF, ip, len - 14);
	p = (struct esp_pkt){ .buf = g->work, .buf_len = sizeof(g->work), .off = OFF, .len = (uint32_t)(len - 14) };
	if (esp_inbound_burst(g->ba_in[i], &pp, 1) != 1)
		return 0;
	if (mip6_parse(p.buf + p.off, p.len, &m) != MIP6_DROP_NONE || m.mh_type != MIP6_MH_BA)
		return 0;
	g->status[m.m.ba.status]++;
	return 1;
}

/* Send frames [first, end) with at most window outstanding; prints the phase's line. */
static void phase(struct gen *g, const char *name, size_t first, size_t end, unsigned window, double secs_max)
{
	static uint8_t rx[2048];
	size_t next = first;
	unsigned long answered = 0, lost = 0;
	unsigned inflight = 0;
	uint64_t t0 = now_ns(), last = t0, heard = t0, deadline = t0 + (uint64_t)(secs_max * 1e9);
	double c0 = cpu_s();

	while (next < end || inflight) {
		while (inflight < window && next < end) {
			const uint8_t *s = g->frames + next * SLOT;
			uint16_t flen;

			memcpy(&flen, s, 2);
			if (sendto(g->fd, s + 2, flen, 0, (struct sockaddr *)&g->to, sizeof(g->to)) < 0) {
				if (errno == ENOBUFS || errno == EAGAIN)
					break;
				die("sendto", -errno);
			}
			next++;
			inflight++;
		}
		struct pollfd pfd = { .fd = g->fd, .events = POLLIN };

		if (poll(&pfd, 1, 1) > 0) {
			ssize_t r;

			while ((r = recv(g->fd, rx, sizeof(rx), MSG_DONTWAIT)) > 0) {
				if (take(g, rx, (size_t)r)) {
					answered++;
					if (inflight)
						inflight--;
					heard = last = now_ns();
				}
			}
		}
		uint64_t t = now_ns();

		if (inflight && t - heard > STALL_MS * 1000000ull) {
			lost += inflight;
			inflight = 0;
			heard = t;
		}
		if (t > deadline)
			break;
	}
	double secs = (double)(last - t0) / 1e9, busy = (cpu_s() - c0) / ((double)(now_ns() - t0) / 1e9);

	printf("%s %lu %lu %.3f %.0f %.0f\n", name, answered, lost + inflight, secs, secs > 0 ? answered / secs : 0,
	       100 * busy);
	fflush(stdout);
}

static int cmd_run(int argc, char **argv)
{
	struct gen g;
	uint8_t dmac[6], smac[6], ha[16];
	struct node *nodes;
	unsigned v[6], rounds, window;
	double secs;
	struct ifreq ifr;
	size_t total;
	int sock;

	memset(&g, 0, sizeof(g));
	if (argc != 11 || sscanf(argv[3], "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6 ||
	    inet_pton(AF_INET6, argv[4], g.coa) != 1 || inet_pton(AF_INET6, argv[5], ha) != 1 ||
	    !(g.n = (uint32_t)atoi(argv[7])) ||
	    (rounds = (unsigned)atoi(argv[8])) > 30000 || !(window = (unsigned)atoi(argv[9])) ||
	    (secs = atof(argv[10])) <= 0) {
		fprintf(stderr, "usage: mip6-bu-gen run IF DMAC COA HA HOA0|@KEYS N ROUNDS WINDOW SECONDS\n");
		return 2;
	}
	nodes = nodes_load(argv[6], g.n);
	for (int i = 0; i < 6; i++)
		dmac[i] = (uint8_t)v[i];
	g.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IPV6));
	if (g.fd < 0)
		die("AF_PACKET socket", -errno);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[2]);
	if (ioctl(g.fd, SIOCGIFHWADDR, &ifr))
		die(argv[2], -errno);
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	g.to.sll_family = AF_PACKET;
	g.to.sll_protocol = htons(ETH_P_IPV6);
	g.to.sll_ifindex = (int)if_nametoindex(argv[2]);
	g.to.sll_halen = 6;
	memcpy(g.to.sll_addr, dmac, 6);
	if (bind(g.fd, (struct sockaddr *)&g.to, sizeof(g.to)))
		die("bind", -errno);
	{
		int sz = 8 << 20;

		setsockopt(g.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		setsockopt(g.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
	/* The kernel here has no ESP: a raw ESP socket takes the acknowledgements it is also given, so
	 * it answers none of them with an ICMPv6 error. Never read. */
	sock = socket(AF_INET6, SOCK_RAW, IPPROTO_ESP);
	(void)sock;

	total = (size_t)g.n * (1 + rounds);
	g.frames = malloc(total * SLOT);
	g.ba_in = calloc(g.n, sizeof(*g.ba_in));
	g.by_spi = calloc(g.n, sizeof(*g.by_spi));
	g.ba_rt = calloc(g.n, sizeof(*g.ba_rt));
	if (!g.frames || !g.ba_in || !g.by_spi || !g.ba_rt)
		die("malloc", -ENOMEM);
	for (uint32_t i = 0; i < g.n; i++) {   /* insertion: the derived SPIs come sorted already */
		uint32_t j = i;

		while (j && g.by_spi[j - 1].spi > nodes[i].ba_spi) {
			g.by_spi[j] = g.by_spi[j - 1];
			j--;
		}
		g.by_spi[j].spi = nodes[i].ba_spi;
		g.by_spi[j].i = i;
	}
	static uint8_t buf[1024];
	for (uint32_t i = 0; i < g.n; i++) {
		uint8_t *hoa = nodes[i].hoa, saved[24];
		struct sadb_runtime *bu_rt;
		struct esp_sa *bu_out = mk_sa(nodes[i].bu_spi, nodes[i].bu_key, SADB_DIR_OUT, g.coa, ha, &bu_rt);

		g.ba_in[i] = mk_sa(nodes[i].ba_spi, nodes[i].ba_key, SADB_DIR_IN, ha, g.coa, &g.ba_rt[i]);
		for (unsigned r = 0; r <= rounds; r++) {
			struct mip6_bu bu = { .seq = (uint16_t)(r + 1), .flags = MIP6_BU_A | MIP6_BU_H,
					      .lifetime = LIFETIME_UNITS, .has_alt_coa = true };
			struct esp_pkt p, *pp = &p;
			uint8_t *slot = g.frames + ((size_t)r * g.n + i) * SLOT;
			uint16_t flen;
			int len;

			memcpy(bu.alt_coa, g.coa, 16);
			len = mip6_build_bu(buf + OFF, sizeof(buf) - OFF - ESP_TAILROOM, g.coa, ha, hoa, &bu);
			if (len < 0)
				die("mip6_build_bu", len);
			p = (struct esp_pkt){ .buf = buf, .buf_len = sizeof(buf), .off = OFF, .len = (uint32_t)len };
			hao_lift(&p, saved);
			if (esp_outbound_burst(bu_out, &pp, 1) != 1)
				die("BU encrypt", (int)p.drop);
			hao_put_back(&p, saved);
			flen = (uint16_t)(14 + p.len);
			if (flen > SLOT - 2)
				die("BU too long", flen);
			memcpy(slot, &flen, 2);
			memcpy(slot + 2, dmac, 6);
			memcpy(slot + 8, smac, 6);
			slot[14] = 0x86;
			slot[15] = 0xdd;
			memcpy(slot + 16, p.buf + p.off, p.len);
		}
		esp_sa_destroy(bu_out);
		free(bu_rt);
	}
	phase(&g, "register", 0, g.n, window, secs);
	if (rounds)
		phase(&g, "refresh", g.n, total, window, secs);
	for (unsigned s = 1; s < 256; s++)
		if (g.status[s])
			printf("status %u %lu\n", s, g.status[s]);
	for (uint32_t i = 0; i < g.n; i++) {
		esp_sa_destroy(g.ba_in[i]);
		free(g.ba_rt[i]);
	}
	free(g.ba_in);
	free(g.ba_rt);
	free(g.by_spi);
	free(g.frames);
	free(nodes);
	close(g.fd);
	if (sock >= 0)
		close(sock);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "conf"))
		return cmd_conf(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return cmd_run(argc, argv);
	fprintf(stderr, "usage: mip6-bu-gen conf|run ...\n");
	return 2;
}
