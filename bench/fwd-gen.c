/* bench/fwd-gen.c: traffic generator and counting sink of the forwarding benchmark (bench/fwd.sh).
 *   fwd-gen tx IF DMAC SRC DST SIZE QUEUES SECONDS [esp SPI [seq BASE]] [rate PPS] [flows N]
 *                                                    UDP packets of SIZE bytes (IP length) as fast as
 *                                                    AF_XDP copy-mode TX goes, one thread per queue,
 *                                                    64 flows (source ports); prints packets sent.
 *                                                    SIZE "imix": the simple IMIX, 64, 576 and 1400
 *                                                    bytes in 7:4:1 (1400, not 1500: the largest
 *                                                    packet still fits the MTU once tunnelled); each
 *                                                    frame of the ring keeps one size, so the mix on
 *                                                    the wire is the ring's (the sink's byte count
 *                                                    tells the mean the receiver saw).
 *                                                    With esp SPI: ESP packets of that SPI with
 *                                                    sequence numbers from BASE (default 10^6:
 *                                                    above the window of any SA the tests make, so
 *                                                    each gets a full ICV check) and a garbage
 *                                                    ICV (the bad-ICV flood of the fault test).
 *                                                    With rate PPS: paced to PPS packets per second
 *                                                    in all (sleeping between batches, so the
 *                                                    generator's own CPU time follows its rate)
 *                                                    With flows N (IPv4 UDP only): the destination
 *                                                    address goes round-robin over DST, DST+1, ...
 *                                                    DST+N-1, one packet each in turn (N tunnels'
 *                                                    /32 policies each see an even share)
 *   fwd-gen rx IF OBJ WARMUP SECONDS                 attach OBJ (fwd_sink.bpf.o) to IF, wait WARMUP,
 *                                                    count for SECONDS; prints "pkts bytes seconds"
 * SRC and DST are both IPv4 or both IPv6 addresses: the packets are of that family (IPv6: no extension
 * headers, a UDP checksum computed per flow since IPv6 requires one). The generator does nothing per
 * packet beyond the ring work: the benchmark measures the gateway, not the generator. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#define NFRAMES 4096u
#define FSIZE   2048u
#define BATCH   64u
#define IMIX_SIZES 3u

/* The simple IMIX: 7 x 64, 4 x 576, 1 x 1400 bytes, interleaved over every 12 frames of the ring. */
static const unsigned imix_size[IMIX_SIZES] = { 64, 576, 1400 };
static const uint8_t imix_slot[12] = { 0, 1, 0, 0, 1, 0, 2, 0, 1, 0, 0, 1 };

struct txq {
	const char *ifname;
	unsigned l3len;          /* IP header length: 20 (IPv4) or 40 (IPv6) */
	uint32_t esp_spi;        /* 0: UDP */
	uint32_t seq_base;       /* first ESP sequence number */
	unsigned queue;
	uint8_t frame[IMIX_SIZES][FSIZE]; /* one template per size: [0] only unless imix */
	unsigned flen[IMIX_SIZES];
	bool imix;
	uint32_t flows;          /* destinations round-robin from the template's, 0: one */
	uint32_t next_flow;
	double seconds;
	double pps;              /* this queue's pace, 0: as fast as it goes */
	unsigned long long sent;
	unsigned long long anomalies; /* completions of frames not in flight */
	pthread_t th;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The UDP checksum of an IPv6 frame built by build6 (RFC 8200 section 8.1 pseudo-header). */
static void udp6_csum(uint8_t *f)
{
	uint8_t *ip = f + 14, *udp = ip + 40, buf[40 + FSIZE];
	unsigned ulen = (unsigned)(ip[4] << 8 | ip[5]);
	uint16_t c;

	memset(buf, 0, 40);
	memcpy(buf, ip + 8, 32);
	buf[34] = (uint8_t)(ulen >> 8);
	buf[35] = (uint8_t)ulen;
	buf[39] = 17;
	udp[6] = udp[7] = 0;
	memcpy(buf + 40, udp, ulen);
	c = csum(buf, 40 + ulen);
	if (!c)
		c = 0xffff;
	c = htons(c);
	memcpy(udp + 6, &c, 2);
}

static int build6(struct txq *q, unsigned k, const uint8_t *dmac, const uint8_t *smac,
		  const struct in6_addr *src, const struct in6_addr *dst, unsigned size)
{
	uint8_t *f = q->frame[k], *ip = f + 14, *udp = ip + 40;

	if (size < 48 || size > 1500)
		return -EINVAL;
	memset(f, 0, FSIZE);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[4] = (uint8_t)((size - 40) >> 8);
	ip[5] = (uint8_t)(size - 40);
	ip[6] = q->esp_spi ? 50 : 17;
	ip[7] = 64;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	if (q->esp_spi) {
		uint32_t spi = htonl(q->esp_spi);

		memcpy(udp, &spi, 4);
		for (unsigned i = 8; i < size - 40; i++)
			udp[i] = (uint8_t)(i * 37 + 11); /* IV, ciphertext and ICV: garbage */
	} else {
		udp[0] = 0x13;
		udp[2] = 0x13;
		udp[3] = 0x89; /* port 5001 */
		udp[4] = (uint8_t)((size - 40) >> 8);
		udp[5] = (uint8_t)(size - 40);
		udp6_csum(f);
	}
	q->l3len = 40;
	q->flen[k] = 14 + size;
	return 0;
}

static int build(struct txq *q, unsigned k, const uint8_t *dmac, const uint8_t *smac, struct in_addr src,
		 struct in_addr dst, unsigned size)
{
	uint8_t *f = q->frame[k], *ip = f + 14, *udp = ip + 20;
	uint16_t c;

	if (size < 28 || size > 1500)
		return -EINVAL;
	memset(f, 0, FSIZE);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(size >> 8);
	ip[3] = (uint8_t)size;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = q->esp_spi ? 50 : 17;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	c = htons(csum(ip, 20));
	memcpy(ip + 10, &c, 2);
	if (q->esp_spi) {
		uint32_t spi = htonl(q->esp_spi);

		memcpy(udp, &spi, 4);
		for (unsigned i = 8; i < size - 20; i++)
			udp[i] = (uint8_t)(i * 37 + 11); /* IV, ciphertext and ICV: garbage */
	} else {
		udp[0] = 0x13;
		udp[2] = 0x13;
		udp[3] = 0x89; /* port 5001 */
		udp[4] = (uint8_t)((size - 20) >> 8);
		udp[5] = (uint8_t)(size - 20);
		/* UDP checksum 0: none (IPv4) */
	}
	q->l3len = 20;
	q->flen[k] = 14 + size;
	return 0;
}

/* The next destination of the round-robin over q->flows addresses into frame F (IPv4), its header
 * checksum recomputed: two stores and a 20-byte sum per packet, small beside the gateway's work. */
static void next_dst(struct txq *q, uint8_t *f)
{
	uint8_t *ip = f + 14;
	uint32_t d;
	uint16_t c;

	memcpy(&d, q->frame[0] + 14 + 16, 4);
	d = htonl(ntohl(d) + q->next_flow);
	if (++q->next_flow == q->flows)
		q->next_flow = 0;
	memcpy(ip + 16, &d, 4);
	ip[10] = ip[11] = 0;
	c = htons(csum(ip, 20));
	memcpy(ip + 10, &c, 2);
}

static void *tx_main(void *arg)
{
	struct txq *q = arg;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp;
	struct xsk_socket_config cfg = {
		.rx_size = 0, .tx_size = 4096,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY,
	};
	struct xsk_umem_config ucfg = { .fill_size = 2048, .comp_size = 4096, .frame_size = FSIZE };
	uint64_t *pool, n_free = NFRAMES, start, end;
	void *area = mmap(NULL, (size_t)NFRAMES * FSIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	uint8_t *out = calloc(NFRAMES, 1);
	uint16_t *len = calloc(NFRAMES, sizeof(*len));

	pool = calloc(NFRAMES, sizeof(*pool));
	if (area == MAP_FAILED || !pool || !out || !len)
		return NULL;
	for (unsigned i = 0; i < NFRAMES; i++) {
		uint8_t *f = (uint8_t *)area + (size_t)i * FSIZE;
		unsigned k = q->imix ? imix_slot[i % sizeof(imix_slot)] : 0;

		memcpy(f, q->frame[k], q->flen[k]);
		len[i] = (uint16_t)q->flen[k];
		if (q->esp_spi) {
			/* sequence numbers far above the window: they pass the replay check and
			 * reach the ICV check, which fails, so the window never moves */
			uint32_t seq = htonl(q->seq_base + i + q->queue * NFRAMES);

			memcpy(f + 14 + q->l3len + 4, &seq, 4);
		} else {
			/* 64 flows: the source port, so hashing spreads them */
			f[14 + q->l3len + 1] = (uint8_t)(0x40 + (i % 64) + q->queue * 64);
			if (q->l3len == 40)
				udp6_csum(f);
		}
		pool[i] = (uint64_t)i * FSIZE;
	}
	err = xsk_umem__create(&umem, area, (uint64_t)NFRAMES * FSIZE, &fill, &comp, &ucfg);
	if (!err)
		err = xsk_socket__create(&xsk, q->ifname, q->queue, umem, NULL, &tx, &cfg);
	if (err) {
		fprintf(stderr, "fwd-gen: %s queue %u: %s\n", q->ifname, q->queue, strerror(-err));
		exit(1);
	}
	if (q->queue == 0) {
		printf("sending\n"); /* callers wait for this before measuring */
		fflush(stdout);
	}
	start = now_ns();
	end = start + (uint64_t)(q->seconds * 1e9);
	while (now_ns() < end) {
		uint32_t idx, n;

		if (q->pps > 0) {
			double due = (double)(now_ns() - start) * 1e-9 * q->pps;

			if ((double)q->sent + BATCH > due) {
				struct timespec ts = { 0, 20000 };

				nanosleep(&ts, NULL);
				continue;
			}
		}

		n = xsk_ring_cons__peek(&comp, 4096, &idx);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t a = *xsk_ring_cons__comp_addr(&comp, idx + i) & ~(uint64_t)(FSIZE - 1);

			/* take a frame back once: a completion of a frame not in flight once
			 * overflowed this pool under a flood (cause not established) */
			if (a / FSIZE < NFRAMES && out[a / FSIZE]) {
				out[a / FSIZE] = 0;
				pool[n_free++] = a;
			} else {
				q->anomalies++;
			}
		}
		xsk_ring_cons__release(&comp, n);
		n = n_free < BATCH ? (uint32_t)n_free : BATCH;
		if (n && xsk_ring_prod__reserve(&tx, n, &idx) == n) {
			for (uint32_t i = 0; i < n; i++) {
				struct xdp_desc *d = xsk_ring_prod__tx_desc(&tx, idx + i);

				d->addr = pool[--n_free];
				out[d->addr / FSIZE] = 1;
				d->len = len[d->addr / FSIZE];
				if (q->flows > 1)
					next_dst(q, (uint8_t *)area + d->addr);
			}
			xsk_ring_prod__submit(&tx, n);
			q->sent += n;
		}
		/* copy mode sends at most 32 frames per call: drain what was queued */
		for (int k = 0; k < 8; k++)
			if (sendto(xsk_socket__fd(xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0 ||
			    (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS))
				break;
	}
	xsk_socket__delete(xsk);
	xsk_umem__delete(umem);
	munmap(area, (size_t)NFRAMES * FSIZE);
	free(pool);
	free(out);
	free(len);
	return NULL;
}

static int mac_parse(const char *s, uint8_t *m)
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

static int own_mac(const char *ifname, uint8_t *m)
{
	char path[128], buf[64];
	FILE *f;

	/* sysfs may show another namespace under nsenter: ask the kernel through a socket instead */
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
	(void)path;
	{
		struct ifreq ifr;
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		if (fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) {
			memcpy(m, ifr.ifr_hwaddr.sa_data, 6);
			close(fd);
			return 0;
		}
		if (fd >= 0)
			close(fd);
	}
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -ENODEV;
	}
	fclose(f);
	return mac_parse(buf, m);
}

static int cmd_tx(int argc, char **argv)
{
	uint8_t dmac[6], smac[6];
	struct in_addr src, dst;
	struct in6_addr src6, dst6;
	bool v6 = false;
	unsigned size, queues;
	double secs;
	struct txq *q;
	unsigned long long total = 0;

	uint32_t spi = 0, seq_base = 1000000u;
	double pps = 0;
	unsigned long flows = 0;
	bool bad = argc < 9 || (argc - 9) % 2;

	for (int i = 9; !bad && i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "esp"))
			spi = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "seq") && spi) {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(argv[i + 1], &end, 0);
			bad = errno || *end || end == argv[i + 1] || v > UINT32_MAX;
			seq_base = (uint32_t)v;
		}
		else if (!strcmp(argv[i], "rate") && (pps = atof(argv[i + 1])) > 0)
			;
		else if (!strcmp(argv[i], "flows")) {
			char *end;

			errno = 0;
			flows = strtoul(argv[i + 1], &end, 0);
			bad = errno || *end || end == argv[i + 1] || flows < 1 || flows > (1ul << 24);
		}
		else
			bad = true;
	}
	if (!bad && !inet_aton(argv[4], &src) && inet_pton(AF_INET6, argv[4], &src6) == 1 &&
	    inet_pton(AF_INET6, argv[5], &dst6) == 1)
		v6 = true;
	if (bad || mac_parse(argv[3], dmac) || (v6 && flows > 1) || (spi && flows > 1) ||
	    (!v6 && (!inet_aton(argv[4], &src) || !inet_aton(argv[5], &dst)))) {
		fprintf(stderr, "usage: fwd-gen tx IF DMAC SRC DST SIZE QUEUES SECONDS [esp SPI [seq BASE]] "
			"[rate PPS] [flows N] (flows: IPv4 UDP only)\n");
		return 2;
	}
	bool imix = !strcmp(argv[6], "imix");

	size = imix ? 0 : (unsigned)atoi(argv[6]);
	queues = (unsigned)atoi(argv[7]);
	secs = atof(argv[8]);
	if (own_mac(argv[2], smac) || queues < 1 || queues > 8 || secs <= 0) {
		fprintf(stderr, "fwd-gen: bad interface, queue count or duration\n");
		return 2;
	}
	q = calloc(queues, sizeof(*q));
	if (!q)
		return 1;
	for (unsigned i = 0; i < queues; i++) {
		q[i].ifname = argv[2];
		q[i].queue = i;
		q[i].seconds = secs;
		q[i].esp_spi = spi;
		q[i].seq_base = seq_base;
		q[i].pps = pps / queues;
		q[i].imix = imix;
		q[i].flows = (uint32_t)flows;
		/* each queue starts elsewhere in the round, so together they still cover it evenly */
		q[i].next_flow = flows ? (uint32_t)(flows * i / queues) : 0;
		for (unsigned k = 0; k < (imix ? IMIX_SIZES : 1); k++) {
			unsigned sz = imix ? imix_size[k] : size;

			if (v6 ? build6(&q[i], k, dmac, smac, &src6, &dst6, sz) :
				 build(&q[i], k, dmac, smac, src, dst, sz)) {
				fprintf(stderr, "fwd-gen: size must be %s..1500 or imix\n", v6 ? "48" : "28");
				return 2;
			}
		}
		pthread_create(&q[i].th, NULL, tx_main, &q[i]);
	}
	for (unsigned i = 0; i < queues; i++) {
		pthread_join(q[i].th, NULL);
		total += q[i].sent;
		if (q[i].anomalies)
			fprintf(stderr, "fwd-gen: queue %u: %llu completions of frames not in flight\n",
				i, q[i].anomalies);
	}
	printf("%llu\n", total);
	free(q);
	return 0;
}

static int read_count(int fd, unsigned long long *pkts, unsigned long long *bytes)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[256];
	uint32_t k;

	if (ncpu <= 0 || ncpu > 256)
		return -EINVAL;
	*pkts = *bytes = 0;
	for (k = 0; k < 2; k++) {
		if (bpf_map_lookup_elem(fd, &k, v))
			return -errno;
		for (int c = 0; c < ncpu; c++)
			*(k ? bytes : pkts) += v[c];
	}
	return 0;
}

static int cmd_rx(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	int ifindex, fd, err;
	unsigned long long p0, b0, p1, b1;
	double warm, secs;
	uint64_t t0, t1;
	struct timespec ts;

	if (argc != 6) {
		fprintf(stderr, "usage: fwd-gen rx IF OBJ WARMUP SECONDS\n");
		return 2;
	}
	ifindex = (int)if_nametoindex(argv[2]);
	warm = atof(argv[4]);
	secs = atof(argv[5]);
	obj = bpf_object__open_file(argv[3], NULL);
	if (!ifindex || !obj || bpf_object__load(obj)) {
		fprintf(stderr, "fwd-gen: cannot load %s on %s\n", argv[3], argv[2]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "fwd_sink");
	fd = bpf_object__find_map_fd_by_name(obj, "sink_count");
	err = prog ? bpf_xdp_attach(ifindex, bpf_program__fd(prog), XDP_FLAGS_DRV_MODE, NULL) : -ENOENT;
	if (err)
		err = bpf_xdp_attach(ifindex, bpf_program__fd(prog), XDP_FLAGS_SKB_MODE, NULL);
	if (err || fd < 0) {
		fprintf(stderr, "fwd-gen: cannot attach the sink: %s\n", strerror(-err));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	ts.tv_sec = (time_t)warm;
	ts.tv_nsec = (long)((warm - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	read_count(fd, &p0, &b0);
	t0 = now_ns();
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	read_count(fd, &p1, &b1);
	t1 = now_ns();
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);
	printf("%llu %llu %.6f\n", p1 - p0, b1 - b0, (double)(t1 - t0) / 1e9);
	bpf_object__close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "tx"))
		return cmd_tx(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "rx"))
		return cmd_rx(argc, argv);
	fprintf(stderr, "usage: fwd-gen tx|rx ...\n");
	return 2;
}
