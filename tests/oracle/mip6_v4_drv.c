/* tests/oracle/mip6_v4_drv.c: a line-oriented driver that lets tests/oracle/test_tshark_mip6_v4.py
 * feed Binding Updates scapy built through libmip6's Dual Stack Mobile IPv6 part
 * (mobility/mip6_v4.h) as the home agent would, had they come over IPv4. Test code only; it owns
 * nothing but its stdin/stdout protocol:
 *
 *   bu SRC4 UDP SPORT HEX   HEX is the IPv6 packet with the Binding Update, SRC4 the outer IPv4
 *                           source, UDP 1 when it came in UDP from port SPORT: "drop REASON",
 *                           "refused REASON" or "reg coa=ADDR v4coa=A v4hoa=A|- plen=N nat=0|1
 *                           natd=0|1 refresh=N ack=STATUS|- HEX", HEX the Binding Acknowledgement
 *                           (to the IPv6 source, status 0, the BU's sequence number and lifetime)
 *                           with its RFC 5555 options
 *   quit */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mobility/mip6_v4.h"

static int unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);

	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)(n / 2);
}

static void cmd_bu(const char *args)
{
	char src[32], hex[8192];
	unsigned udp, sport;
	uint8_t pkt[4096], ba[MIP6_BA_MAX_LEN + MIP6_V4_BA_EXTRA];
	struct mip6_v4_outer o = { 0 };
	struct mip6_v4_bu bu;
	struct mip6_v4_reg r;
	struct mip6_pkt p;
	char a[INET6_ADDRSTRLEN], c[INET_ADDRSTRLEN], h[INET_ADDRSTRLEN];
	int n;

	if (sscanf(args, "%31s %u %u %8191s", src, &udp, &sport, hex) != 4 || inet_pton(AF_INET, src, o.src) != 1 ||
	    (n = unhex(hex, pkt, sizeof(pkt))) < 0) {
		printf("fatal bad bu\n");
		exit(2);
	}
	o.udp = udp != 0;
	o.sport = (uint16_t)sport;
	enum mip6_drop d = mip6_parse(pkt, (uint32_t)n, &p);
	if (d == MIP6_DROP_NONE && p.mh_type != MIP6_MH_BU)
		d = MIP6_DROP_NOT_BU;
	if (d == MIP6_DROP_NONE)
		d = mip6_v4_bu_opts(pkt + p.mh_off, p.mh_len, &bu);
	if (d != MIP6_DROP_NONE) {
		printf("drop %s\n", mip6_drop_name(d));
		return;
	}
	enum mip6_v4_refusal f = mip6_v4_register(&bu, &o, &r);
	if (f != MIP6_V4_OK) {
		printf("refused %s\n", mip6_v4_refusal_name(f));
		return;
	}
	struct mip6_ba_params bp = { .seq = p.m.bu.seq, .lifetime = p.m.bu.lifetime };
	memcpy(bp.src, p.dst, 16);
	memcpy(bp.dst, p.src, 16);
	memcpy(bp.hoa, p.src, 16);
	int len = mip6_build_ba(ba, sizeof(ba), &bp);
	if (len > 0)
		len = mip6_v4_ba_append(ba, (size_t)len, sizeof(ba), &r);
	if (len <= 0) {
		printf("fatal build %d\n", len);
		exit(2);
	}
	printf("reg coa=%s v4coa=%s v4hoa=%s plen=%u nat=%d natd=%d refresh=%u ack=", inet_ntop(AF_INET6, r.coa, a, sizeof(a)),
	       inet_ntop(AF_INET, bu.coa, c, sizeof(c)), bu.has_hoa ? inet_ntop(AF_INET, bu.hoa, h, sizeof(h)) : "-",
	       bu.hoa_plen, r.nat, r.natd_option, r.nat_refresh_s);
	if (r.ack_option)
		printf("%u ", r.ack_status);
	else
		printf("- ");
	for (int i = 0; i < len; i++)
		printf("%02x", ba[i]);
	putchar('\n');
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;

	while ((got = getline(&line, &cap, stdin)) > 0) {
		if (line[got - 1] == '\n')
			line[--got] = 0;
		if (!strncmp(line, "bu ", 3)) {
			cmd_bu(line + 3);
		} else if (!strcmp(line, "quit")) {
			break;
		} else if (*line) {
			printf("fatal unknown command\n");
			return 2;
		}
		fflush(stdout);
	}
	free(line);
	return 0;
}
