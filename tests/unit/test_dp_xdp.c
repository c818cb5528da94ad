/* tests/unit/test_dp_xdp.c: xipsecd's XDP classifier (dataplane/xipsecd/xdp_prog.bpf.c) run by the kernel
 * itself on crafted frames (BPF_PROG_TEST_RUN), one row per case: what goes to the dataplane and
 * what stays with the kernel (doc/architecture.md rule 8). With no AF_XDP socket bound, a frame meant for the
 * dataplane must be dropped (fail closed, never passed to kernel forwarding); the program's own
 * counters tell a redirect attempt from a pass, and an unknown-SPI drop from both. The gateway's own
 * inbound SPD (local_spd, RFC 4301 section 5.2) has its rows too; with XIPSEC_XDP_BENCH set, the
 * program's cost per frame with 0, 16 and 256 entries is printed (BPF_PROG_TEST_RUN repeat timing).
 * The active/active segment filter (cluster_seg, xdp_segment.h) has rows of its own: what it drops
 * is told apart by its per-segment counters.
 * Needs root (BPF); skips otherwise. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <cmocka.h>

#include "dataplane/xipsecd/xdp_shared.h"
#include "dataplane/xipsecd/xdp_segment.h"

enum want { PASS, DATAPLANE };

struct row {
	const char *name;
	unsigned role;           /* DP_ROLE_INSIDE / DP_ROLE_OUTSIDE, 0 = interface not ours */
	uint8_t frame[128];
	unsigned len;
	enum want want;
};

static struct bpf_object *obj;
static int prog_fd, ifaces_fd, addrs_fd, stats_fd, spis_fd, conf_fd, spi_drops_fd;
static int lspd_fd, lspd_conf_fd, local_drops_fd, cluster_fd, seg_stats_fd;

/* ---- frame builders ---- */
static unsigned eth(uint8_t *f, uint16_t type)
{
	memset(f, 0, 14);
	f[0] = 0x02; f[6] = 0x02; f[11] = 1;
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	return 14;
}

static unsigned ip4(uint8_t *f, const char *src, const char *dst, uint8_t proto, unsigned l4len)
{
	unsigned o = eth(f, 0x0800);
	uint8_t *ip = f + o;

	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + l4len) >> 8);
	ip[3] = (uint8_t)(20 + l4len);
	ip[8] = 64;
	ip[9] = proto;
	inet_pton(AF_INET, src, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	return o + 20;
}

static unsigned ip6(uint8_t *f, const char *src, const char *dst, uint8_t nh, unsigned l4len)
{
	unsigned o = eth(f, 0x86dd);
	uint8_t *ip = f + o;

	memset(ip, 0, 40);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(l4len >> 8);
	ip[5] = (uint8_t)l4len;
	ip[6] = nh;
	ip[7] = 64;
	inet_pton(AF_INET6, src, ip + 8);
	inet_pton(AF_INET6, dst, ip + 24);
	return o + 40;
}

static unsigned udp(uint8_t *f, unsigned o, uint16_t dport, const uint8_t *payload, unsigned plen)
{
	uint8_t *u = f + o;

	memset(u, 0, 8);
	u[0] = 0x30; u[1] = 0x39;
	u[2] = (uint8_t)(dport >> 8);
	u[3] = (uint8_t)dport;
	u[5] = (uint8_t)(8 + plen);
	memcpy(u + 8, payload, plen);
	return o + 8 + plen;
}

/* IPv4 fragment fields: offset in 8-byte units, MF */
static void frag4(uint8_t *f, uint16_t id, unsigned off, bool mf)
{
	uint8_t *ip = f + 14;

	ip[4] = (uint8_t)(id >> 8);
	ip[5] = (uint8_t)id;
	ip[6] = (uint8_t)((mf ? 0x20 : 0) | (off >> 8));
	ip[7] = (uint8_t)off;
}

/* An IPv6 Fragment header (RFC 8200 4.5) at o: next header, offset in bytes, M, identification. */
static unsigned frag6(uint8_t *f, unsigned o, uint8_t nh, unsigned off, bool m, uint32_t id)
{
	uint8_t *h = f + o;

	h[0] = nh;
	h[1] = 0;
	h[2] = (uint8_t)(off >> 8);
	h[3] = (uint8_t)((off & 0xf8) | (m ? 1 : 0));
	h[4] = (uint8_t)(id >> 24); h[5] = (uint8_t)(id >> 16);
	h[6] = (uint8_t)(id >> 8); h[7] = (uint8_t)id;
	return o + 8;
}

static unsigned pad(uint8_t *f, unsigned o, unsigned n)
{
	memset(f + o, 0xab, n);
	return o + n;
}

static struct row rows[64];
static unsigned n_rows;

static struct row *add(const char *name, unsigned role, enum want want)
{
	struct row *r = &rows[n_rows++];

	memset(r, 0, sizeof(*r));
	r->name = name;
	r->role = role;
	r->want = want;
	return r;
}

static void build_rows(void)
{
	static const uint8_t spi[8] = { 0, 0, 0x10, 0x01, 0, 0, 0, 1 };
	static const uint8_t zero_marker[8] = { 0, 0, 0, 0, 'I', 'K', 'E', 0 };
	static const uint8_t keepalive[1] = { 0xff };
	const unsigned O = DP_ROLE_OUTSIDE, I = DP_ROLE_INSIDE;
	struct row *r;
	unsigned o;

	r = add("outside ARP -> kernel", O, PASS);
	o = eth(r->frame, 0x0806); r->len = pad(r->frame, o, 28);
	r = add("outside ESP to the gateway -> dataplane (RFC 4303)", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 50, 40); r->len = pad(r->frame, o, 40);
	r = add("outside AH in transit -> dataplane", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "198.51.100.9", 51, 40); r->len = pad(r->frame, o, 40);
	r = add("outside IKE UDP 500 to the gateway -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); r->len = udp(r->frame, o, 500, zero_marker, 8);
	r = add("outside UDP 4500 zero non-ESP marker (IKE) -> kernel (RFC 3948 2.2)", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); r->len = udp(r->frame, o, 4500, zero_marker, 8);
	r = add("outside UDP 4500 with an SPI (ESP-in-UDP) -> dataplane", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); r->len = udp(r->frame, o, 4500, spi, 8);
	r = add("outside NAT keepalive 0xff -> kernel (RFC 3948 2.3)", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 9); r->len = udp(r->frame, o, 4500, keepalive, 1);
	r = add("outside ICMP to the gateway -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 1, 8); r->len = pad(r->frame, o, 8);
	r = add("outside plaintext in transit -> dataplane (policy decides)", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "10.1.0.2", 6, 20); r->len = pad(r->frame, o, 20);
	r = add("outside IPv6 ESP to the gateway -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 50, 24); r->len = pad(r->frame, o, 24);
	r = add("outside IPv6 ESP-in-UDP to the gateway -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 17, 16); r->len = udp(r->frame, o, 4500, spi, 8);
	r = add("outside IPv6 IKE on 4500 -> kernel", O, PASS);
	o = ip6(r->frame, "fd00::2", "fd00::1", 17, 16); r->len = udp(r->frame, o, 4500, zero_marker, 8);
	/* Outer fragments (the dataplane reassembles ESP/AH/ESP-in-UDP, RFC 4303 3.4.1). Rows run in
	 * order: a first fragment's verdict is remembered for its later fragments. */
	r = add("outside IPv4 ESP non-first fragment -> dataplane", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 50, 40); frag4(r->frame, 7, 185, false);
	r->len = pad(r->frame, o, 40);
	r = add("outside IPv6 ESP non-first fragment -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 44, 32); o = frag6(r->frame, o, 50, 1448, false, 9);
	r->len = pad(r->frame, o, 24);
	r = add("outside IPv6 AH first fragment -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 44, 32); o = frag6(r->frame, o, 51, 0, true, 10);
	r->len = pad(r->frame, o, 24);
	r = add("outside IPv4 ESP-in-UDP first fragment -> dataplane", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4242, 0, true);
	r->len = udp(r->frame, o, 4500, spi, 8);
	r = add("outside IPv4 ESP-in-UDP later fragment (remembered) -> dataplane", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4242, 185, false);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv4 UDP later fragment of an unknown datagram -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4243, 185, false);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv4 IKE first fragment (UDP 4500, zero marker) -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4244, 0, true);
	r->len = udp(r->frame, o, 4500, zero_marker, 8);
	r = add("outside IPv4 IKE later fragment -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4244, 185, false);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv4 IKE first fragment reusing that id -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4242, 0, true);
	r->len = udp(r->frame, o, 4500, zero_marker, 8);
	r = add("outside IPv4 IKE later fragment with that id -> kernel (forgotten)", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "192.0.2.1", 17, 16); frag4(r->frame, 0x4242, 185, false);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv6 ESP-in-UDP first fragment -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 44, 24); o = frag6(r->frame, o, 17, 0, true, 77);
	r->len = udp(r->frame, o, 4500, spi, 8);
	r = add("outside IPv6 ESP-in-UDP later fragment (remembered) -> dataplane", O, DATAPLANE);
	o = ip6(r->frame, "fd00::2", "fd00::1", 44, 24); o = frag6(r->frame, o, 17, 1448, false, 77);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv6 IKE later fragment -> kernel", O, PASS);
	o = ip6(r->frame, "fd00::2", "fd00::1", 44, 24); o = frag6(r->frame, o, 17, 1448, false, 78);
	r->len = pad(r->frame, o, 16);
	r = add("outside IPv4 UDP fragment in transit -> dataplane (forwarded as it is)", O, DATAPLANE);
	o = ip4(r->frame, "192.0.2.2", "10.1.0.2", 17, 16); frag4(r->frame, 0x4245, 185, false);
	r->len = pad(r->frame, o, 16);
	r = add("inside TCP to be forwarded -> dataplane", I, DATAPLANE);
	o = ip4(r->frame, "10.1.0.2", "10.2.0.2", 6, 20); r->len = pad(r->frame, o, 20);
	r = add("inside ICMP to the gateway -> kernel", I, PASS);
	o = ip4(r->frame, "10.1.0.2", "10.1.0.1", 1, 8); r->len = pad(r->frame, o, 8);
	r = add("inside UDP 4500 to the gateway (not the outside) -> kernel", I, PASS);
	o = ip4(r->frame, "10.1.0.2", "10.1.0.1", 17, 16); r->len = udp(r->frame, o, 4500, spi, 8);
	r = add("inside IPv4 multicast -> kernel", I, PASS);
	o = ip4(r->frame, "10.1.0.2", "224.0.0.5", 89, 20); r->len = pad(r->frame, o, 20);
	r = add("inside limited broadcast -> kernel", I, PASS);
	o = ip4(r->frame, "10.1.0.2", "255.255.255.255", 17, 16); r->len = udp(r->frame, o, 67, zero_marker, 8);
	r = add("inside ND neighbour solicitation -> kernel", I, PASS);
	o = ip6(r->frame, "fd01::2", "ff02::1:ff00:1", 58, 24); r->frame[o] = 135; r->len = pad(r->frame, o + 1, 23);
	r = add("inside ND advertisement to a unicast address -> kernel", I, PASS);
	o = ip6(r->frame, "fd01::2", "fd01::99", 58, 24); r->frame[o] = 136; r->len = pad(r->frame, o + 1, 23);
	r = add("inside IPv6 to a link-local address -> kernel", I, PASS);
	o = ip6(r->frame, "fd01::2", "fe80::1", 17, 16); r->len = udp(r->frame, o, 9, zero_marker, 8);
	r = add("inside IPv6 hop-by-hop (MLD) -> kernel", I, PASS);
	o = ip6(r->frame, "fd01::2", "fd02::2", 0, 8); r->len = pad(r->frame, o, 8);
	r = add("inside IPv6 echo to be forwarded -> dataplane", I, DATAPLANE);
	o = ip6(r->frame, "fd01::2", "fd02::2", 58, 8); r->frame[o] = 128; r->len = pad(r->frame, o + 1, 7);
	r = add("inside IPv6 to the gateway -> kernel", I, PASS);
	o = ip6(r->frame, "fd01::2", "fd01::1", 58, 8); r->frame[o] = 128; r->len = pad(r->frame, o + 1, 7);
	r = add("truncated IPv4 header -> kernel (it judges)", O, PASS);
	o = eth(r->frame, 0x0800); r->frame[o] = 0x45; r->len = pad(r->frame, o + 1, 9);
	r = add("IPv4 header length below 5 -> kernel", O, PASS);
	o = ip4(r->frame, "192.0.2.2", "10.1.0.2", 50, 20); r->frame[14] = 0x44; r->len = pad(r->frame, o, 20);
	r = add("VLAN-tagged frame -> kernel", I, PASS);
	o = eth(r->frame, 0x8100); r->len = pad(r->frame, o, 46);
	r = add("an interface that is not ours -> kernel", 0, PASS);
	o = ip4(r->frame, "10.1.0.2", "10.2.0.2", 6, 20); r->len = pad(r->frame, o, 20);
}

static uint64_t stat_sum(uint32_t k)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[512] = { 0 }, s = 0;

	assert_true(ncpu > 0 && ncpu <= 512);
	assert_int_equal(bpf_map_lookup_elem(stats_fd, &k, v), 0);
	for (int c = 0; c < ncpu; c++)
		s += v[c];
	return s;
}

/* An own address in local_addrs, with its value (1, or with DP_XDP_ADDR_OVERFLOW). */
static void set_addr(const char *a, uint32_t one)
{
	struct dp_xdp_addr k = { 0 };

	if (strchr(a, ':')) {
		k.family = DP_AF_INET6;
		inet_pton(AF_INET6, a, k.addr);
	} else {
		k.family = DP_AF_INET;
		inet_pton(AF_INET, a, k.addr);
	}
	assert_int_equal(bpf_map_update_elem(addrs_fd, &k, &one, BPF_ANY), 0);
}

static void add_addr(const char *a)
{
	set_addr(a, 1);
}

static int setup(void **state)
{
	const char *path = getenv("XIPSEC_XDP_OBJ");
	char buf[4096];
	struct bpf_program *prog;

	(void)state;
	if (!path) {
		snprintf(buf, sizeof(buf), "%s/dataplane/xipsecd/xipsec_xdp.o", XIPSEC_BUILDDIR);
		path = buf;
	}
	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s (root needed)\n", path);
		return -1;
	}
	prog = bpf_object__find_program_by_name(obj, "xipsec_xdp");
	prog_fd = prog ? bpf_program__fd(prog) : -1;
	ifaces_fd = bpf_object__find_map_fd_by_name(obj, "ifaces");
	addrs_fd = bpf_object__find_map_fd_by_name(obj, "local_addrs");
	stats_fd = bpf_object__find_map_fd_by_name(obj, "xdp_stats");
	spis_fd = bpf_object__find_map_fd_by_name(obj, "spis");
	conf_fd = bpf_object__find_map_fd_by_name(obj, "xdp_conf");
	spi_drops_fd = bpf_object__find_map_fd_by_name(obj, "spi_drops");
	lspd_fd = bpf_object__find_map_fd_by_name(obj, "local_spd");
	lspd_conf_fd = bpf_object__find_map_fd_by_name(obj, "local_spd_conf");
	local_drops_fd = bpf_object__find_map_fd_by_name(obj, "local_drops");
	cluster_fd = bpf_object__find_map_fd_by_name(obj, "cluster_seg");
	seg_stats_fd = bpf_object__find_map_fd_by_name(obj, "cluster_seg_stats");
	if (prog_fd < 0 || ifaces_fd < 0 || addrs_fd < 0 || stats_fd < 0 || spis_fd < 0 ||
	    conf_fd < 0 || spi_drops_fd < 0 || lspd_fd < 0 || lspd_conf_fd < 0 || local_drops_fd < 0 ||
	    cluster_fd < 0 || seg_stats_fd < 0)
		return -1;
	add_addr("192.0.2.1");
	add_addr("10.1.0.1");
	add_addr("fd00::1");
	add_addr("fd01::1");
	build_rows();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bpf_object__close(obj);
	return 0;
}

static void test_rows(void **state)
{
	(void)state;
	for (unsigned i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		/* Without a context the kernel runs the program as received on queue 0 of lo, which
		 * exists in every namespace: ingress_ifindex 1 is the interface whose role we set. */
		uint32_t ifindex = 1;
		struct dp_xdp_if v = { .role = r->role,
				       .xsk_base = r->role == DP_ROLE_OUTSIDE ? DP_XSK_BASE_OUTSIDE : 0 };
		uint8_t out[256];
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = r->frame, .data_size_in = r->len,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
		uint64_t pass0, red0, pass1, red1;
		int err;

		if (r->role)
			assert_int_equal(bpf_map_update_elem(ifaces_fd, &ifindex, &v, BPF_ANY), 0);
		else
			bpf_map_delete_elem(ifaces_fd, &ifindex);
		pass0 = stat_sum(DP_XDP_STAT_PASS);
		red0 = stat_sum(DP_XDP_STAT_REDIRECT);
		err = bpf_prog_test_run_opts(prog_fd, &opts);
		if (err)
			fail_msg("%s: test run failed: %s", r->name, strerror(-err));
		pass1 = stat_sum(DP_XDP_STAT_PASS);
		red1 = stat_sum(DP_XDP_STAT_REDIRECT);
		if (r->want == PASS) {
			if (opts.retval != XDP_PASS || pass1 != pass0 + 1)
				fail_msg("%s: want XDP_PASS, got %u", r->name, opts.retval);
		} else {
			/* no socket bound: the redirect falls back to XDP_DROP, never XDP_PASS */
			if (opts.retval != XDP_DROP || red1 != red0 + 1)
				fail_msg("%s: want a redirect to the dataplane (XDP_DROP without a "
					 "socket), got %u (redirects %llu -> %llu, passes %llu -> %llu)", r->name, opts.retval,
					 (unsigned long long)red0, (unsigned long long)red1, (unsigned long long)pass0, (unsigned long long)pass1);
		}
	}
}

/* ---- the SPI filter: ESP/AH from the outside for an SA the dataplane does not hold ---- */

enum spi_want { TO_DP, SPI_DROP };

static void spi_put(uint8_t *f, unsigned o, uint32_t spi)
{
	f[o] = (uint8_t)(spi >> 24); f[o + 1] = (uint8_t)(spi >> 16);
	f[o + 2] = (uint8_t)(spi >> 8); f[o + 3] = (uint8_t)spi;
}

static void spi_known(uint8_t proto, const char *dst, uint32_t spi)
{
	struct dp_xdp_spi_key k;
	uint32_t one = 1;

	memset(&k, 0, sizeof(k));
	k.spi = htonl(spi);
	k.proto = proto;
	k.family = strchr(dst, ':') ? DP_AF_INET6 : DP_AF_INET;
	inet_pton(k.family == DP_AF_INET6 ? AF_INET6 : AF_INET, dst, k.dst);
	assert_int_equal(bpf_map_update_elem(spis_fd, &k, &one, BPF_ANY), 0);
}

static void spi_filter(bool on)
{
	uint32_t zero = 0, v = on ? DP_XDP_CONF_SPI_FILTER : 0;

	assert_int_equal(bpf_map_update_elem(conf_fd, &zero, &v, BPF_ANY), 0);
}

static uint64_t spi_drops(void)
{
	uint32_t k = DP_XSK_BASE_OUTSIDE;  /* queue 0 of the outside interface */
	uint64_t v = 0;

	assert_int_equal(bpf_map_lookup_elem(spi_drops_fd, &k, &v), 0);
	return v;
}

static void spi_case(const char *name, const uint8_t *frame, unsigned len, enum spi_want want)
{
	uint32_t ifindex = 1;
	struct dp_xdp_if v = { .role = DP_ROLE_OUTSIDE, .xsk_base = DP_XSK_BASE_OUTSIDE };
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
	uint64_t red0, d0;

	assert_int_equal(bpf_map_update_elem(ifaces_fd, &ifindex, &v, BPF_ANY), 0);
	red0 = stat_sum(DP_XDP_STAT_REDIRECT);
	d0 = spi_drops();
	if (bpf_prog_test_run_opts(prog_fd, &opts))
		fail_msg("%s: test run failed", name);
	if (opts.retval != XDP_DROP)
		fail_msg("%s: want XDP_DROP (a drop, or a redirect without a socket), got %u", name,
			 opts.retval);
	if (want == TO_DP && (stat_sum(DP_XDP_STAT_REDIRECT) != red0 + 1 || spi_drops() != d0))
		fail_msg("%s: want it sent to the dataplane, the program dropped it as unknown", name);
	if (want == SPI_DROP && (stat_sum(DP_XDP_STAT_REDIRECT) != red0 || spi_drops() != d0 + 1))
		fail_msg("%s: want it dropped as an unknown SPI (counted for queue 0), it went on", name);
}

static void test_spi_filter(void **state)
{
	static const uint8_t udp_spi_known[8] = { 0, 0, 0x10, 0x01, 0, 0, 0, 1 };
	static const uint8_t udp_spi_unknown[8] = { 0, 0, 0x66, 0x66, 0, 0, 0, 1 };
	uint8_t f[128];
	unsigned o, len;

	(void)state;
	spi_known(50, "192.0.2.1", 0x1001);
	spi_known(51, "192.0.2.1", 0x2001);
	spi_known(50, "fd00::1", 0x1001);

	spi_filter(true);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	spi_case("ESP, known SPI", f, len, TO_DP);
	spi_put(f, o, 0x1002);
	spi_case("ESP, unknown SPI", f, len, SPI_DROP);
	o = ip4(f, "192.0.2.2", "198.51.100.9", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	spi_case("ESP, known SPI to another destination", f, len, SPI_DROP);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 51, 40); len = pad(f, o, 40); spi_put(f, o + 4, 0x2001);
	spi_case("AH, known SPI (after next header, length, reserved)", f, len, TO_DP);
	spi_put(f, o + 4, 0x1001);
	spi_case("AH, an ESP SA's SPI", f, len, SPI_DROP);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 17, 16); len = udp(f, o, 4500, udp_spi_known, 8);
	spi_case("ESP-in-UDP, known SPI", f, len, TO_DP);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 17, 16); len = udp(f, o, 4500, udp_spi_unknown, 8);
	spi_case("ESP-in-UDP, unknown SPI", f, len, SPI_DROP);
	o = ip6(f, "fd00::2", "fd00::1", 50, 24); len = pad(f, o, 24); spi_put(f, o, 0x1001);
	spi_case("IPv6 ESP, known SPI", f, len, TO_DP);
	spi_put(f, o, 0x7777);
	spi_case("IPv6 ESP, unknown SPI", f, len, SPI_DROP);
	o = ip6(f, "fd00::2", "fd00::1", 17, 16); len = udp(f, o, 4500, udp_spi_unknown, 8);
	spi_case("IPv6 ESP-in-UDP, unknown SPI", f, len, SPI_DROP);
	/* what the program cannot judge goes to the dataplane, which reassembles or counts it */
	o = ip4(f, "192.0.2.2", "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x6666);
	frag4(f, 11, 0, true);
	spi_case("ESP first fragment, unknown SPI (reassembled first)", f, len, TO_DP);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 50, 80); len = pad(f, o, 40); spi_put(f, o, 0x6666);
	spi_case("ESP shorter than its IP length (truncated)", f, len, TO_DP);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 50, 2); len = pad(f, o, 2);
	spi_case("ESP too short for an SPI", f, len, TO_DP);
	o = ip6(f, "fd00::2", "fd00::1", 44, 32); o = frag6(f, o, 50, 0, true, 12);
	len = pad(f, o, 24); spi_put(f, o, 0x6666);
	spi_case("IPv6 ESP first fragment, unknown SPI", f, len, TO_DP);

	spi_filter(false);
	o = ip4(f, "192.0.2.2", "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1002);
	spi_case("filter off: unknown SPI to the dataplane", f, len, TO_DP);
}

/* ---- the gateway's own inbound SPD: plaintext from the outside addressed to the gateway ---- */

enum local_want { L_PASS, L_PROTECT, L_DISCARD };

/* One table entry from text: "src/plen", "dst/plen" (NULL: any address of either family), IP
 * protocol (0: any), destination port (0: any), verdict. */
static void lspd_put(uint32_t i, const char *src, const char *dst, uint8_t proto, uint16_t dport,
		     uint8_t verdict)
{
	struct dp_xdp_lspd r;
	const char *pfx[2] = { src, dst };

	memset(&r, 0, sizeof(r));
	r.proto = proto;
	r.sport_hi = 0xffff;
	r.dport_lo = dport;
	r.dport_hi = dport ? dport : 0xffff;
	r.verdict = verdict;
	for (int s = 0; s < 2; s++) {
		char a[64];
		uint8_t b[16] = { 0 };
		uint32_t *addr = s ? r.dst : r.src, *mask = s ? r.dmask : r.smask;
		int plen, v6;

		if (!pfx[s])
			continue;
		snprintf(a, sizeof(a), "%s", pfx[s]);
		plen = atoi(strchr(a, '/') + 1);
		*strchr(a, '/') = 0;
		v6 = strchr(a, ':') != NULL;
		assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, a, b), 1);
		r.family = v6 ? DP_AF_INET6 : DP_AF_INET;
		for (int w = 0; w < 4; w++) {
			int bits = plen - 32 * w;
			uint32_t m = htonl(bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~(0xffffffffu >> bits));

			memcpy(&addr[w], b + 4 * w, 4);
			mask[w] = m;
			addr[w] &= m;
		}
	}
	assert_int_equal(bpf_map_update_elem(lspd_fd, &i, &r, BPF_ANY), 0);
}

static void lspd_conf(uint32_t v)
{
	uint32_t zero = 0;

	assert_int_equal(bpf_map_update_elem(lspd_conf_fd, &zero, &v, BPF_ANY), 0);
}

static struct dp_xdp_local_drops local_drops(void)
{
	uint32_t k = DP_XSK_BASE_OUTSIDE;  /* queue 0 of the outside interface */
	struct dp_xdp_local_drops v[512], sum = { 0, 0 };
	int ncpu = libbpf_num_possible_cpus();

	assert_true(ncpu > 0 && ncpu <= 512);
	assert_int_equal(bpf_map_lookup_elem(local_drops_fd, &k, v), 0);
	for (int c = 0; c < ncpu; c++) {
		sum.protect += v[c].protect;
		sum.discard += v[c].discard;
	}
	return sum;
}

static uint32_t run_as(unsigned role, const uint8_t *frame, unsigned len, unsigned repeat,
		       uint32_t *duration)
{
	uint32_t ifindex = 1;
	struct dp_xdp_if v = { .role = role,
			       .xsk_base = role == DP_ROLE_OUTSIDE ? DP_XSK_BASE_OUTSIDE : 0 };
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = repeat);

	assert_int_equal(bpf_map_update_elem(ifaces_fd, &ifindex, &v, BPF_ANY), 0);
	assert_int_equal(bpf_prog_test_run_opts(prog_fd, &opts), 0);
	if (duration)
		*duration = opts.duration;
	return opts.retval;
}

static void local_case(const char *name, unsigned role, const uint8_t *frame, unsigned len,
		       enum local_want want)
{
	struct dp_xdp_local_drops d0 = local_drops(), d1;
	uint64_t pass0 = stat_sum(DP_XDP_STAT_PASS);
	uint32_t ret = run_as(role, frame, len, 1, NULL);

	d1 = local_drops();
	if (want == L_PASS && (ret != XDP_PASS || stat_sum(DP_XDP_STAT_PASS) != pass0 + 1))
		fail_msg("%s: want it passed to the gateway's stack, got %u", name, ret);
	if (want != L_PASS && ret != XDP_DROP)
		fail_msg("%s: want it dropped by the local SPD, got %u", name, ret);
	if (d1.protect != d0.protect + (want == L_PROTECT) ||
	    d1.discard != d0.discard + (want == L_DISCARD))
		fail_msg("%s: local SPD drops protect %llu -> %llu, discard %llu -> %llu", name,
			 (unsigned long long)d0.protect, (unsigned long long)d1.protect,
			 (unsigned long long)d0.discard, (unsigned long long)d1.discard);
}

static unsigned icmp4(uint8_t *f, const char *src, const char *dst)
{
	unsigned o = ip4(f, src, dst, 1, 8);

	f[o] = 8;                        /* echo request */
	return pad(f, o + 1, 7);
}

static unsigned tcp4(uint8_t *f, const char *src, const char *dst, uint16_t dport)
{
	unsigned o = ip4(f, src, dst, 6, 20);

	f[o] = 0x30; f[o + 1] = 0x39;
	f[o + 2] = (uint8_t)(dport >> 8); f[o + 3] = (uint8_t)dport;
	return pad(f, o + 4, 16);
}

static void test_local_spd(void **state)
{
	static const uint8_t ike[8] = { 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0 };
	static const uint8_t zero_marker[8] = { 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44 };
	const unsigned O = DP_ROLE_OUTSIDE;
	uint8_t f[128];
	unsigned o, len;

	(void)state;
	/* the SPD's order: management over SSH bypasses, the peer's network must be protected,
	 * a hostile network is discarded (RFC 4301 section 4.4.1) */
	lspd_put(0, "198.51.100.0/24", "192.0.2.1/32", 6, 22, DP_XDP_LSPD_BYPASS);
	lspd_put(1, "198.51.100.0/24", "192.0.2.1/32", 0, 0, DP_XDP_LSPD_PROTECT);
	lspd_put(2, "203.0.113.0/24", "192.0.2.0/24", 0, 0, DP_XDP_LSPD_DISCARD);
	lspd_put(3, "fd02::/64", "fd00::1/128", 0, 0, DP_XDP_LSPD_PROTECT);
	lspd_conf(4);

	len = icmp4(f, "198.51.100.7", "192.0.2.1");
	local_case("ping a PROTECT policy covers: dropped", O, f, len, L_PROTECT);
	local_case("the same from the inside: the kernel's", DP_ROLE_INSIDE, f, len, L_PASS);
	len = tcp4(f, "198.51.100.7", "192.0.2.1", 22);
	local_case("SSH, a BYPASS policy before the PROTECT one", O, f, len, L_PASS);
	len = tcp4(f, "198.51.100.7", "192.0.2.1", 23);
	local_case("telnet, the PROTECT policy", O, f, len, L_PROTECT);
	o = ip4(f, "198.51.100.7", "192.0.2.1", 17, 16); len = udp(f, o, 500, ike, 8);
	local_case("IKE on UDP 500 always passes (rule 8)", O, f, len, L_PASS);
	o = ip4(f, "198.51.100.7", "192.0.2.1", 17, 16); len = udp(f, o, 4500, zero_marker, 8);
	local_case("IKE on UDP 4500 (zero marker) always passes", O, f, len, L_PASS);
	len = icmp4(f, "192.0.2.99", "192.0.2.1");
	local_case("a source no policy covers", O, f, len, L_PASS);
	len = icmp4(f, "198.51.100.7", "10.1.0.1");
	local_case("another own address no policy covers", O, f, len, L_PASS);
	len = icmp4(f, "203.0.113.5", "192.0.2.1");
	local_case("DISCARD policy: dropped, counted apart", O, f, len, L_DISCARD);
	len = tcp4(f, "198.51.100.7", "192.0.2.1", 23);
	frag4(f, 7, 0, true);
	local_case("first fragment: ports known, the policy decides", O, f, len, L_PROTECT);
	frag4(f, 7, 3, false);
	local_case("later fragment: the kernel never completes it", O, f, len, L_PASS);

	o = ip6(f, "fd02::5", "fd00::1", 58, 8); f[o] = 128; len = pad(f, o + 1, 7);
	local_case("IPv6 ping a PROTECT policy covers", O, f, len, L_PROTECT);
	o = ip6(f, "fd02::5", "fd00::1", 0, 16);
	f[o] = 58; f[o + 1] = 0; f[o + 2] = 1; f[o + 3] = 4; /* hop-by-hop: PadN */
	f[o + 8] = 128; len = pad(f, o + 9, 7);
	local_case("IPv6 ping behind a hop-by-hop header", O, f, len, L_PROTECT);
	o = ip6(f, "fd02::5", "fd00::1", 58, 24); f[o] = 135; len = pad(f, o + 1, 23);
	local_case("IPv6 neighbour solicitation passes", O, f, len, L_PASS);
	o = ip6(f, "fd02::5", "fd00::1", 17, 16); len = udp(f, o, 500, ike, 8);
	local_case("IPv6 IKE passes", O, f, len, L_PASS);
	o = ip6(f, "fd03::5", "fd00::1", 58, 8); f[o] = 128; len = pad(f, o + 1, 7);
	local_case("IPv6 from a source no policy covers", O, f, len, L_PASS);

	/* the cap: the entries that fit are matched in order; above it, what none of them
	 * matches may match a policy left out, and is dropped (fail closed) */
	for (uint32_t i = 0; i < DP_XDP_LSPD_MAX - 1; i++) {
		char a[32];

		snprintf(a, sizeof(a), "100.64.%u.%u/32", i >> 8, i & 0xff);
		lspd_put(i, a, "192.0.2.1/32", 0, 0, DP_XDP_LSPD_PROTECT);
	}
	lspd_put(DP_XDP_LSPD_MAX - 1, "198.51.100.0/24", "192.0.2.1/32", 0, 0, DP_XDP_LSPD_BYPASS);
	lspd_conf(DP_XDP_LSPD_MAX);
	len = icmp4(f, "198.51.100.7", "192.0.2.1");
	local_case("the last of 256 entries decides", O, f, len, L_PASS);
	len = icmp4(f, "192.0.2.99", "192.0.2.1");
	local_case("256 entries, none matches", O, f, len, L_PASS);
	/* more policies than entries, some covering 192.0.2.1 and fd00::1 left out (xipsecd marks
	 * the addresses they cover) */
	set_addr("192.0.2.1", 1 | DP_XDP_ADDR_OVERFLOW);
	set_addr("fd00::1", 1 | DP_XDP_ADDR_OVERFLOW);
	local_case("a policy left out covers it, none matches: fail closed", O, f, len, L_PROTECT);
	len = icmp4(f, "192.0.2.99", "10.1.0.1");
	local_case("no policy left out covers this own address: the SPD's answer", O, f, len, L_PASS);
	o = ip6(f, "fd03::5", "fd00::1", 58, 8); f[o] = 128; len = pad(f, o + 1, 7);
	local_case("IPv6, a policy left out covers it: fail closed", O, f, len, L_PROTECT);
	o = ip6(f, "fd03::5", "fd01::1", 58, 8); f[o] = 128; len = pad(f, o + 1, 7);
	local_case("IPv6, an own address no policy left out covers", O, f, len, L_PASS);
	len = icmp4(f, "198.51.100.7", "192.0.2.1");
	local_case("a policy left out covers it, the last entry still decides", O, f, len, L_PASS);
	set_addr("192.0.2.1", 1);
	set_addr("fd00::1", 1);
	/* the other half, as xipsecd flips to it */
	lspd_put(DP_XDP_LSPD_MAX, "198.51.100.0/24", "192.0.2.1/32", 0, 0, DP_XDP_LSPD_PROTECT);
	lspd_conf(1 | DP_XDP_LSPD_HALF);
	local_case("the second half in use", O, f, len, L_PROTECT);
	lspd_conf(0);
	local_case("empty table: the kernel's", O, f, len, L_PASS);
}

/* The program's cost per frame for a ping to the gateway that no entry matches (every entry
 * looked at): without the check (the inside), and with 0, 16 and 256 entries on the outside. */
static void test_local_spd_bench(void **state)
{
	static const unsigned sizes[] = { 0, 16, 256 };
	const char *env = getenv("XIPSEC_XDP_BENCH");
	unsigned repeat = env && atoi(env) > 0 ? (unsigned)atoi(env) : 1000000;
	uint8_t f[128];
	unsigned len;
	uint32_t ns;

	(void)state;
	if (!env) {
		skip();
		return;
	}
	len = icmp4(f, "192.0.2.99", "192.0.2.1");
	for (uint32_t i = 0; i < DP_XDP_LSPD_MAX; i++) {
		char a[32];

		snprintf(a, sizeof(a), "100.64.%u.%u/32", i >> 8, i & 0xff);
		lspd_put(i, a, "192.0.2.1/32", 0, 0, DP_XDP_LSPD_PROTECT);
	}
	assert_int_equal(run_as(DP_ROLE_INSIDE, f, len, repeat, &ns), XDP_PASS);
	printf("local SPD bench: without the check (inside): %u ns/frame\n", ns);
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		lspd_conf(sizes[s]);
		assert_int_equal(run_as(DP_ROLE_OUTSIDE, f, len, repeat, &ns), XDP_PASS);
		printf("local SPD bench: %u entries: %u ns/frame\n", sizes[s], ns);
	}
	lspd_conf(0);
}

/* ---- active/active: frames for the cluster address from a segment another node owns ---- */

enum seg_want { SEG_DP, SEG_KERNEL, SEG_FOREIGN };

static void cluster(uint32_t count, uint32_t owned)
{
	struct dp_xdp_cluster c = { .count = count, .owned = owned, .jhash = DP_SEG_LOOKUP3_1 };
	uint32_t zero = 0;

	inet_pton(AF_INET, "192.0.2.1", &c.addr);
	assert_int_equal(bpf_map_update_elem(cluster_fd, &zero, &c, BPF_ANY), 0);
}

static void seg_sums(uint32_t seg, uint64_t *kept, uint64_t *foreign)
{
	int ncpu = libbpf_num_possible_cpus();
	struct dp_xdp_seg_stats v[512];

	*kept = *foreign = 0;
	assert_true(ncpu > 0 && ncpu <= 512);
	assert_int_equal(bpf_map_lookup_elem(seg_stats_fd, &seg, v), 0);
	for (int c = 0; c < ncpu; c++) {
		*kept += v[c].kept;
		*foreign += v[c].foreign;
	}
}

/* seg: the source's segment (1 or 2 of 2), 0 when the filter must not look at the frame */
static void seg_case(const char *name, unsigned role, const uint8_t *frame, unsigned len,
		     uint32_t seg, enum seg_want want)
{
	uint64_t red0 = stat_sum(DP_XDP_STAT_REDIRECT), pass0 = stat_sum(DP_XDP_STAT_PASS);
	uint64_t k0 = 0, f0 = 0, k1 = 0, f1 = 0;
	uint32_t ret, ns;

	if (seg)
		seg_sums(seg, &k0, &f0);
	ret = run_as(role, frame, len, 1, &ns);
	if (seg)
		seg_sums(seg, &k1, &f1);
	switch (want) {
	case SEG_FOREIGN:
		if (ret != XDP_DROP || f1 != f0 + 1 || k1 != k0 ||
		    stat_sum(DP_XDP_STAT_REDIRECT) != red0 || stat_sum(DP_XDP_STAT_PASS) != pass0)
			fail_msg("%s: want it dropped as segment %u's, got %u (foreign %llu -> %llu)",
				 name, seg, ret, (unsigned long long)f0, (unsigned long long)f1);
		break;
	case SEG_DP:
	case SEG_KERNEL:
		if (seg && (k1 != k0 + 1 || f1 != f0))
			fail_msg("%s: want it kept as segment %u's (kept %llu -> %llu)", name, seg,
				 (unsigned long long)k0, (unsigned long long)k1);
		if (want == SEG_DP && (ret != XDP_DROP || stat_sum(DP_XDP_STAT_REDIRECT) != red0 + 1))
			fail_msg("%s: want it sent to the dataplane, got %u", name, ret);
		if (want == SEG_KERNEL && ret != XDP_PASS)
			fail_msg("%s: want it passed to the kernel, got %u", name, ret);
		break;
	}
}

static void test_segments(void **state)
{
	static const uint8_t ike[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	static const uint8_t esp_udp[8] = { 0, 0, 0x10, 0x01, 0, 0, 0, 1 };
	/* segments of 2 (tests/unit/test_dp_segment.c): 10.0.0.1 is in 1, 172.16.1.1 in 2 */
	const char *s1 = "10.0.0.1", *s2 = "172.16.1.1";
	uint8_t f[128];
	unsigned o, len;

	(void)state;
	spi_filter(false);
	lspd_conf(0);
	cluster(2, 0x1);
	o = ip4(f, s1, "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	seg_case("ESP from an owned segment", DP_ROLE_OUTSIDE, f, len, 1, SEG_DP);
	o = ip4(f, s2, "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	seg_case("ESP from a foreign segment", DP_ROLE_OUTSIDE, f, len, 2, SEG_FOREIGN);
	frag4(f, 12, 4, false);
	seg_case("ESP later fragment from a foreign segment", DP_ROLE_OUTSIDE, f, len, 2, SEG_FOREIGN);
	o = ip4(f, s2, "192.0.2.1", 17, 16); len = udp(f, o, 4500, esp_udp, 8);
	seg_case("ESP-in-UDP from a foreign segment", DP_ROLE_OUTSIDE, f, len, 2, SEG_FOREIGN);
	o = ip4(f, s2, "192.0.2.1", 17, 16); len = udp(f, o, 500, ike, 8);
	seg_case("IKE from a foreign segment (CLUSTERIP's job)", DP_ROLE_OUTSIDE, f, len, 2, SEG_FOREIGN);
	o = ip4(f, s1, "192.0.2.1", 17, 16); len = udp(f, o, 500, ike, 8);
	seg_case("IKE from an owned segment", DP_ROLE_OUTSIDE, f, len, 1, SEG_KERNEL);
	o = ip4(f, s2, "10.1.0.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	seg_case("ESP to another address of the gateway", DP_ROLE_OUTSIDE, f, len, 0, SEG_DP);
	o = ip4(f, s2, "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	seg_case("to the cluster address from the inside", DP_ROLE_INSIDE, f, len, 0, SEG_KERNEL);
	cluster(2, 0x2);
	seg_case("ESP from segment 2 once it is owned", DP_ROLE_OUTSIDE, f, len, 2, SEG_DP);
	o = ip4(f, s1, "192.0.2.1", 50, 40); len = pad(f, o, 40); spi_put(f, o, 0x1001);
	seg_case("ESP from segment 1 once it is not", DP_ROLE_OUTSIDE, f, len, 1, SEG_FOREIGN);
	cluster(2, 0);
	seg_case("owning none: everything is the other node's", DP_ROLE_OUTSIDE, f, len, 1, SEG_FOREIGN);
	cluster(0, 0);
	seg_case("no cluster: not looked at", DP_ROLE_OUTSIDE, f, len, 0, SEG_DP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_spi_filter),
		cmocka_unit_test(test_local_spd),
		cmocka_unit_test(test_local_spd_bench),
		cmocka_unit_test(test_segments),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_dp_xdp: needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
