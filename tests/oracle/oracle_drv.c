/* tests/oracle/oracle_drv.c: a line-oriented driver that lets the oracle scripts (scapy, tshark,
 * python-cryptography) feed packets through our ESP/AH engine (libesp) and read the result. Test code
 * only; it owns nothing but its own stdin/stdout protocol:
 *
 *   sa KEY=VALUE ...      create the SA (the previous one is destroyed); answers
 *                         "ok BACKEND" or "err ERRNO"
 *   pkt HEX [HEX ...]     one burst of packets through esp_burst (direction from the SA); answers
 *                         one line per packet, in the order given:
 *                         "ok SEQ FAMILY HEX" or "drop REASON_NAME MTU"
 *   rt                    "rt TOP PACKETS BYTES DROPS_TOTAL"
 *   break N               self-test of the scripts: flip bit 0 of byte N (modulo the length) of
 *                         every good packet before printing it; N = -1 turns it off. A script
 *                         that does not notice is a script that cannot fail.
 *   quit
 *
 * SA keys: proto=esp|ah mode=tunnel|transport dir=in|out enc=N auth=N (IANA numbers, sadb.h)
 * ekey=HEX salt=HEX akey=HEX esn=0|1 natt=SPORT:DPORT src=ADDR dst=ADDR spi=N
 * seq=N (first outbound sequence number) top=N (inbound: highest sequence number already seen)
 * window=N backend=auto|ipsecmb|openssl|sodium|native ttl=N dscp=N tfc=N mtu=N flags=N (extra SADB_SAF_*)
 * iv=HEX (a fixed explicit IV through esp_sa_opts.iv_fn, for reproducible packets).
 * Legacy transforms are always allowed here (SADB_SAF_LEGACY_OK): the oracle tests them. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/engine/esp.h"
#include "sadb/sadb.h"

#define FRAME_LEN 16384u
#define FRAME_OFF 512u
#define MAX_PKTS  256u

static struct esp_sa *g_sa;
static struct sadb_runtime *g_rt;
static uint8_t g_iv[16];
static unsigned g_iv_len;
static long g_break = -1;

static void fixed_iv(void *arg, uint64_t seq, uint8_t *iv, unsigned len)
{
	(void)arg;
	(void)seq;
	for (unsigned i = 0; i < len; i++)
		iv[i] = i < g_iv_len ? g_iv[i] : 0;
}

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

/* Decode hex into out (at most max bytes); the length or -1. */
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
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		putchar(d[p[i] >> 4]);
		putchar(d[p[i] & 15]);
	}
}

static enum esp_backend backend_of(const char *s)
{
	if (!strcmp(s, "ipsecmb"))
		return ESP_BACKEND_IPSECMB;
	if (!strcmp(s, "openssl"))
		return ESP_BACKEND_OPENSSL;
	if (!strcmp(s, "sodium"))
		return ESP_BACKEND_SODIUM;
	if (!strcmp(s, "native"))
		return ESP_BACKEND_NATIVE;
	return ESP_BACKEND_AUTO;
}

static int cmd_sa(char *args)
{
	struct sadb_sa s;
	struct esp_sa_opts o;
	uint64_t seq = 1, top = 0;
	long n;

	memset(&s, 0, sizeof(s));
	memset(&o, 0, sizeof(o));
	s.spi = 0x1000;
	s.proto = SADB_PROTO_ESP;
	s.mode = SADB_MODE_TUNNEL;
	s.dir = SADB_DIR_OUT;
	s.state = SADB_STATE_MATURE;
	s.flags = SADB_SAF_LEGACY_OK;
	s.replay_window = 1024;
	s.dscp = 0xff;
	s.instance = 1;
	g_iv_len = 0;
	for (char *tok = strtok(args, " \t"); tok; tok = strtok(NULL, " \t")) {
		char *v = strchr(tok, '=');
		if (!v)
			return -EINVAL;
		*v++ = 0;
		if (!strcmp(tok, "proto"))
			s.proto = !strcmp(v, "ah") ? SADB_PROTO_AH : SADB_PROTO_ESP;
		else if (!strcmp(tok, "mode"))
			s.mode = !strcmp(v, "transport") ? SADB_MODE_TRANSPORT : SADB_MODE_TUNNEL;
		else if (!strcmp(tok, "dir"))
			s.dir = !strcmp(v, "in") ? SADB_DIR_IN : SADB_DIR_OUT;
		else if (!strcmp(tok, "spi"))
			s.spi = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "enc"))
			s.enc_alg = (uint16_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "auth"))
			s.auth_alg = (uint16_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "ekey")) {
			if ((n = unhex(v, s.enc_key, sizeof(s.enc_key))) < 0)
				return -EINVAL;
			s.enc_key_len = (uint8_t)n;
		} else if (!strcmp(tok, "salt")) {
			if ((n = unhex(v, s.salt, sizeof(s.salt))) < 0)
				return -EINVAL;
			s.salt_len = (uint8_t)n;
		} else if (!strcmp(tok, "akey")) {
			if ((n = unhex(v, s.auth_key, sizeof(s.auth_key))) < 0)
				return -EINVAL;
			s.auth_key_len = (uint8_t)n;
		} else if (!strcmp(tok, "iv")) {
			if ((n = unhex(v, g_iv, sizeof(g_iv))) < 0)
				return -EINVAL;
			g_iv_len = (unsigned)n;
			o.iv_fn = fixed_iv;
		} else if (!strcmp(tok, "esn")) {
			if (atoi(v))
				s.flags |= SADB_SAF_ESN;
		} else if (!strcmp(tok, "natt")) {
			unsigned sp, dp;
			if (sscanf(v, "%u:%u", &sp, &dp) != 2)
				return -EINVAL;
			s.encap_sport = (uint16_t)sp;
			s.encap_dport = (uint16_t)dp;
		} else if (!strcmp(tok, "src")) {
			if (sadb_addr_parse(v, &s.src))
				return -EINVAL;
		} else if (!strcmp(tok, "dst")) {
			if (sadb_addr_parse(v, &s.dst))
				return -EINVAL;
		} else if (!strcmp(tok, "seq"))
			seq = strtoull(v, NULL, 0);
		else if (!strcmp(tok, "top"))
			top = strtoull(v, NULL, 0);
		else if (!strcmp(tok, "window"))
			s.replay_window = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "backend"))
			o.backend = backend_of(v);
		else if (!strcmp(tok, "ttl"))
			s.ttl = (uint8_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "dscp"))
			s.dscp = (uint8_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "tfc"))
			s.tfc_pad = (uint16_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "mtu"))
			s.mtu = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "flags"))
			s.flags |= (uint32_t)strtoul(v, NULL, 0);
		else
			return -EINVAL;
	}
	esp_sa_destroy(g_sa);
	g_sa = NULL;
	memset(g_rt, 0, sizeof(*g_rt));
	g_rt->instance = s.instance;
	g_rt->seq_reserved = seq ? seq - 1 : 0;
	if (top) {
		/* Pretend every number in the window up to top was already received except top's
		 * neighbours below: only top itself is marked, so replays of top are caught. */
		g_rt->replay_top = top;
		g_rt->replay_bitmap[(top % SADB_REPLAY_MAX) / 64] |= 1ULL << (top % 64);
	}
	int r = esp_sa_create(&s, g_rt, &o, &g_sa);
	memset(&s, 0, sizeof(s)); /* the keys: this copy is no longer needed */
	return r;
}

static void cmd_pkt(char *args)
{
	static uint8_t *frames[MAX_PKTS];
	struct esp_pkt pk[MAX_PKTS], *pp[MAX_PKTS];
	unsigned n = 0;

	for (char *tok = strtok(args, " \t"); tok && n < MAX_PKTS; tok = strtok(NULL, " \t")) {
		if (!frames[n] && !(frames[n] = malloc(FRAME_LEN))) {
			printf("fatal nomem\n");
			exit(2);
		}
		memset(frames[n], 0xee, FRAME_LEN);
		long len = unhex(tok, frames[n] + FRAME_OFF, FRAME_LEN - FRAME_OFF - 256);
		if (len < 0) {
			printf("fatal badhex\n");
			exit(2);
		}
		memset(&pk[n], 0, sizeof(pk[n]));
		pk[n].buf = frames[n];
		pk[n].buf_len = FRAME_LEN;
		pk[n].off = FRAME_OFF;
		pk[n].len = (uint32_t)len;
		pk[n].user = n;
		pp[n] = &pk[n];
		n++;
	}
	unsigned good = esp_burst(g_sa, pp, n);
	/* Check the burst contract while we are at it: good first, then bad, all accounted for. */
	for (unsigned i = 0; i < n; i++) {
		if ((i < good) != (pp[i]->drop == SADB_DROP_NONE)) {
			printf("fatal burst contract broken at %u (good %u)\n", i, good);
			exit(3);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		struct esp_pkt *p = &pk[i];
		if (p->drop == SADB_DROP_NONE) {
			if (p->off + p->len > p->buf_len) {
				printf("fatal packet outside its buffer\n");
				exit(3);
			}
			if (g_break >= 0 && p->len)
				p->buf[p->off + (uint32_t)(g_break % p->len)] ^= 1;
			printf("ok %llu %u ", (unsigned long long)p->seq, p->family);
			puthex(p->buf + p->off, p->len);
			putchar('\n');
		} else {
			printf("drop %s %u\n", sadb_drop_name(p->drop), p->mtu);
		}
	}
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	g_rt = aligned_alloc(64, (sizeof(*g_rt) + 63) & ~(size_t)63);
	if (!g_rt)
		return 2;
	memset(g_rt, 0, sizeof(*g_rt));
	while ((got = getline(&line, &cap, stdin)) > 0) {
		if (line[got - 1] == '\n')
			line[--got] = 0;
		if (!strncmp(line, "sa ", 3) || !strcmp(line, "sa")) {
			int r = cmd_sa(line + 2);
			if (r < 0)
				printf("err %d\n", -r);
			else
				printf("ok %s\n", esp_backend_name(esp_sa_backend(g_sa)));
		} else if (!strncmp(line, "pkt ", 4)) {
			if (!g_sa) {
				printf("fatal no sa\n");
				return 2;
			}
			cmd_pkt(line + 4);
		} else if (!strcmp(line, "rt")) {
			uint64_t d = 0;
			for (unsigned i = 0; i < SADB_DROP_MAX; i++)
				d += g_rt->drops[i];
			printf("rt %llu %llu %llu %llu\n", (unsigned long long)g_rt->replay_top,
			       (unsigned long long)g_rt->packets, (unsigned long long)g_rt->bytes,
			       (unsigned long long)d);
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
	esp_sa_destroy(g_sa);
	free(g_rt);
	free(line);
	return 0;
}
