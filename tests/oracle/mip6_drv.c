/* tests/oracle/mip6_drv.c: a line-oriented driver that lets tests/oracle/test_scapy_mip6.py feed
 * scapy's Mobile IPv6 packets through libmip6 (mobility/) and read what it makes of them. Test code
 * only; it owns nothing but its stdin/stdout protocol:
 *
 *   parse HEX             mip6_parse: "drop REASON" or "ok TYPE KEY=VALUE ..." with, for every
 *                         type, hao= rh2= (address or -) and mhlen=, for a BU seq= flags= lifetime=
 *                         altcoa=, for a BA status= flags= seq= lifetime= refresh= (- when absent),
 *                         for a BE status= hoa=
 *   mn HOA SA             allow a mobile node: home address, signalling SA id; "ok" or "err ERRNO"
 *   bu SA NOW HEX         mip6_ha_input on a decrypted packet from SA id SA at NOW ms: "drop REASON"
 *                         or "ba STATUS CHANGE LIFETIME_S HEX" (the Binding Acknowledgement built)
 *   break N               self-test of the script: flip bit 0 of byte N (modulo the length) of every
 *                         BA it prints; -1 turns it off
 *   quit
 *
 * The home agent: address 2001:db8::1, home prefix 2001:db8::/64, longest lifetime 3600 s, Binding
 * Refresh Advice at 1000 s, K honoured, room for 64 mobile nodes. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mobility/mip6_ha.h"

static long g_break = -1;

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static long unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s);
	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int h = hexval(s[2 * i]), l = hexval(s[2 * i + 1]);
		if (h < 0 || l < 0)
			return -1;
		out[i] = (uint8_t)(h << 4 | l);
	}
	return (long)(n / 2);
}

static void puthex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static const char *a6(const uint8_t *a, char *buf)
{
	return inet_ntop(AF_INET6, a, buf, INET6_ADDRSTRLEN);
}

static void cmd_parse(const char *hex)
{
	static uint8_t buf[65536 + 64];
	long n = unhex(hex, buf, sizeof(buf));
	if (n < 0) {
		printf("fatal badhex\n");
		exit(2);
	}
	/* The packet alone in a heap block of its own size: ASan catches any read past it. */
	uint8_t *pkt = malloc(n ? (size_t)n : 1);
	memcpy(pkt, buf, (size_t)n);
	struct mip6_pkt p;
	enum mip6_drop d = mip6_parse(pkt, (uint32_t)n, &p);
	free(pkt);
	if (d != MIP6_DROP_NONE) {
		printf("drop %s\n", mip6_drop_name(d));
		return;
	}
	char x[INET6_ADDRSTRLEN], y[INET6_ADDRSTRLEN];
	printf("ok %s hao=%s rh2=%s mhlen=%u", mip6_mh_type_name(p.mh_type), p.has_hao ? a6(p.hoa, x) : "-",
	       p.has_rh2 ? a6(p.rh2_addr, y) : "-", p.mh_len);
	if (p.mh_type == MIP6_MH_BU) {
		printf(" seq=%u flags=%u lifetime=%u altcoa=%s mnp=", p.m.bu.seq, p.m.bu.flags, p.m.bu.lifetime,
		       p.m.bu.has_alt_coa ? a6(p.m.bu.alt_coa, x) : "-");
		for (unsigned i = 0; i < p.m.bu.n_mnp; i++)  /* the Mobile Network Prefix options */
			printf("%s%s/%u", i ? "," : "", a6(p.m.bu.mnp[i].addr, x), p.m.bu.mnp[i].len);
		if (!p.m.bu.n_mnp)
			printf("-");
	} else if (p.mh_type == MIP6_MH_BA) {
		printf(" status=%u flags=%u seq=%u lifetime=%u refresh=", p.m.ba.status, p.m.ba.flags,
		       p.m.ba.seq, p.m.ba.lifetime);
		if (p.m.ba.has_refresh)
			printf("%u", p.m.ba.refresh);
		else
			printf("-");
	} else if (p.mh_type == MIP6_MH_BE)
		printf(" status=%u hoa=%s", p.m.be.status, a6(p.m.be.hoa, x));
	putchar('\n');
}

int main(void)
{
	struct mip6_ha_config c;
	struct mip6_ha *ha;
	memset(&c, 0, sizeof(c));
	inet_pton(AF_INET6, "2001:db8::1", c.ha_addrs[0]);
	c.n_ha_addrs = 1;
	inet_pton(AF_INET6, "2001:db8::", c.prefixes[0].addr);
	c.prefixes[0].len = 64;
	c.n_prefixes = 1;
	c.max_lifetime_s = 3600;
	c.refresh_s = 1000;
	c.key_mgmt_mobility = true;
	c.max_mns = 64;
	if (mip6_ha_create(&c, &ha))
		return 2;

	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	static uint8_t buf[65536 + 64];
	while ((got = getline(&line, &cap, stdin)) > 0) {
		if (line[got - 1] == '\n')
			line[--got] = 0;
		if (!strncmp(line, "parse ", 6)) {
			cmd_parse(line + 6);
		} else if (!strncmp(line, "mn ", 3)) {
			char hoa[64];
			unsigned sa;
			struct mip6_mn m;
			memset(&m, 0, sizeof(m));
			if (sscanf(line + 3, "%63s %u", hoa, &sa) != 2 || inet_pton(AF_INET6, hoa, m.hoa) != 1) {
				printf("fatal bad mn\n");
				return 2;
			}
			m.bu_sa = sa;
			m.ba_sa = sa + 1;
			int r = mip6_ha_mn_add(ha, &m);
			if (r)
				printf("err %d\n", -r);
			else
				printf("ok\n");
		} else if (!strncmp(line, "bu ", 3)) {
			unsigned sa;
			unsigned long long now;
			int pos = 0;
			if (sscanf(line + 3, "%u %llu %n", &sa, &now, &pos) != 2 || !pos) {
				printf("fatal bad bu\n");
				return 2;
			}
			long n = unhex(line + 3 + pos, buf, sizeof(buf));
			if (n < 0) {
				printf("fatal badhex\n");
				return 2;
			}
			struct mip6_ha_result r;
			mip6_ha_input(ha, buf, (uint32_t)n, sa, now, &r);
			if (r.drop != MIP6_DROP_NONE) {
				printf("drop %s\n", mip6_drop_name(r.drop));
			} else {
				uint8_t ba[MIP6_BA_MAX_LEN];
				int len = mip6_ha_build_ba(ha, &r, ba, sizeof(ba));
				if (len <= 0) {
					printf("fatal build %d\n", len);
					return 2;
				}
				if (g_break >= 0)
					ba[g_break % len] ^= 1;
				printf("ba %u %s %u ", r.ba.status, mip6_change_name(r.change), r.lifetime_s);
				puthex(ba, (size_t)len);
				putchar('\n');
			}
		} else if (!strncmp(line, "break ", 6)) {
			g_break = strtol(line + 6, NULL, 0);
			printf("ok\n");
		} else if (!strcmp(line, "quit")) {
			break;
		} else if (*line) {
			printf("fatal unknown command\n");
			return 2;
		}
		fflush(stdout);
	}
	mip6_ha_destroy(ha);
	free(line);
	return 0;
}
