/* ipsecctl/ipsecctl_util.c: the small value parsers of ipsecctl (hex keys, numbers, durations,
 * addresses and prefixes, IP protocols), the names of the SADB enums, and ctl_err, the one way
 * every part of ipsecctl (`ipsecctl ike` too) reports an error outside a configuration file (with
 * ctl_pri, the syslog-priority prefix its messages carry when standard error is the journal). The
 * parsers are strict on purpose: a value ipsecctl accepts must mean exactly one thing, and each
 * refusal says why. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"

/* Standard error is systemd's journal stream (a unit's ExecReload): systemd names it in
 * $JOURNAL_STREAM ("DEVICE:INODE"), and a line may then start with <N>, its syslog priority. */
const char *ctl_pri(int prio)
{
	static const char *const p[] = { "<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>" };
	return sadb_stderr_is_journal() ? p[prio & 7] : "";
}

void ctl_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%sipsecctl: ", ctl_pri(LOG_ERR));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int ctl_hex_parse(const char *s, uint8_t *out, size_t max, size_t *len, char *msg, size_t mlen)
{
	const char *p = s;
	size_t n;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	n = strlen(p);
	/* Messages never quote the text: a mistyped key is still mostly a key. */
	if (n == 0) {
		snprintf(msg, mlen, "bad hex key: no hex digits");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (hexval((unsigned char)p[i]) < 0) {
			if (isprint((unsigned char)p[i]))
				snprintf(msg, mlen, "bad hex key: '%c' (hex digit %zu) is not a hex digit",
					 p[i], i + 1);
			else
				snprintf(msg, mlen, "bad hex key: byte 0x%02x (hex digit %zu) is not a "
					 "hex digit", (unsigned char)p[i], i + 1);
			return -EINVAL;
		}
	}
	if (n % 2) {
		snprintf(msg, mlen, "bad hex key: odd number of hex digits (%zu)", n);
		return -EINVAL;
	}
	if (n / 2 > max) {
		snprintf(msg, mlen, "bad hex key: %zu bytes is longer than any key (at most %zu)",
			 n / 2, max);
		return -EINVAL;
	}
	for (size_t i = 0; i < n / 2; i++)
		out[i] = (uint8_t)(hexval((unsigned char)p[2 * i]) << 4 |
				   hexval((unsigned char)p[2 * i + 1]));
	*len = n / 2;
	return 0;
}

int ctl_u64_parse(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -EINVAL;
	/* strtoull takes a leading 0 as octal; "010" meaning 8 would surprise everyone. */
	if (s[0] == '0' && s[1] && s[1] != 'x' && s[1] != 'X')
		return -EINVAL;
	*out = v;
	return 0;
}

int ctl_duration_parse(const char *s, uint64_t *out)
{
	char buf[32];
	size_t n = strlen(s);
	uint64_t mul = 1, v;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	switch (buf[n - 1]) {
	case 's': mul = 1; buf[--n] = 0; break;
	case 'm': mul = 60; buf[--n] = 0; break;
	case 'h': mul = 3600; buf[--n] = 0; break;
	case 'd': mul = 86400; buf[--n] = 0; break;
	default: break;
	}
	if (ctl_u64_parse(buf, UINT64_MAX / mul, &v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int ctl_addr_parse(const char *s, struct sadb_addr *a, char *msg, size_t mlen)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->a.b) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->a.b) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	snprintf(msg, mlen, "bad address '%s': not an IPv4 or IPv6 address", s);
	return -EINVAL;
}

int ctl_prefix_parse(const char *s, struct sadb_addr *a, uint8_t *plen, char *msg, size_t mlen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	uint64_t len;
	unsigned max;
	char m2[128];

	if (!strcasecmp(s, "any")) {
		memset(a, 0, sizeof(*a));
		*plen = 0;
		return 0;
	}
	if (strlen(s) >= sizeof(buf)) {
		snprintf(msg, mlen, "bad prefix '%.40s...': too long", s);
		return -EINVAL;
	}
	memcpy(buf, s, strlen(s) + 1);
	if (slash)
		buf[slash - s] = 0;
	if (ctl_addr_parse(buf, a, m2, sizeof(m2))) {
		snprintf(msg, mlen, "bad prefix '%s': '%s' is not an IPv4 or IPv6 address", s, buf);
		return -EINVAL;
	}
	max = a->family == AF_INET ? 32 : 128;
	if (!slash) {
		*plen = (uint8_t)max;
		return 0;
	}
	if (ctl_u64_parse(slash + 1, UINT32_MAX, &len) || len > max) {
		snprintf(msg, mlen, "bad prefix '%s': prefix length must be 0-%u for %s", s, max,
			 a->family == AF_INET ? "IPv4" : "IPv6");
		return -EINVAL;
	}
	/* Host bits set ("10.1.2.3/24") are almost always a typo for the network; refuse rather
	 * than silently match a different set of addresses than the one written. */
	for (unsigned bit = (unsigned)len; bit < max; bit++) {
		if (a->a.b[bit / 8] & (0x80 >> (bit % 8))) {
			snprintf(msg, mlen, "bad prefix '%s': host bits set after /%u", s,
				 (unsigned)len);
			return -EINVAL;
		}
	}
	*plen = (uint8_t)len;
	return 0;
}

const char *ctl_addr_str(const struct sadb_addr *a, char *buf, size_t len)
{
	if (a->family == AF_INET || a->family == AF_INET6) {
		if (inet_ntop(a->family, a->a.b, buf, (socklen_t)len))
			return buf;
	}
	snprintf(buf, len, "any");
	return buf;
}

static const struct { const char *name; uint8_t num; } ipprotos[] = {
	{ "icmp", 1 }, { "igmp", 2 }, { "ipip", 4 }, { "tcp", 6 }, { "udp", 17 }, { "ipv6", 41 },
	{ "gre", 47 }, { "esp", 50 }, { "ah", 51 }, { "icmp6", 58 }, { "ospf", 89 },
	{ "sctp", 132 }, { "mh", 135 },
};

int ctl_ipproto_parse(const char *s, uint8_t *out)
{
	uint64_t v;

	if (!strcasecmp(s, "ipv6-icmp") || !strcasecmp(s, "icmpv6")) {
		*out = 58;
		return 0;
	}
	if (!strcasecmp(s, "mobility-header") || !strcasecmp(s, "ipv6-mh")) {
		*out = 135;
		return 0;
	}
	for (size_t i = 0; i < sizeof(ipprotos) / sizeof(ipprotos[0]); i++) {
		if (!strcasecmp(s, ipprotos[i].name)) {
			*out = ipprotos[i].num;
			return 0;
		}
	}
	if (ctl_u64_parse(s, 255, &v) == 0 && v > 0) {
		*out = (uint8_t)v;
		return 0;
	}
	return -EINVAL;
}

const char *ctl_ipproto_name(uint8_t p, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(ipprotos) / sizeof(ipprotos[0]); i++)
		if (ipprotos[i].num == p)
			return ipprotos[i].name;
	snprintf(buf, len, "%u", p);
	return buf;
}

void ctl_hex_print(FILE *f, const uint8_t *b, size_t n)
{
	fputs("0x", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

const char *ctl_dir_name(uint8_t dir)
{
	switch (dir) {
	case SADB_DIR_IN: return "in";
	case SADB_DIR_OUT: return "out";
	case SADB_DIR_FWD: return "fwd";
	default: return "none";
	}
}

const char *ctl_proto_name(uint8_t proto)
{
	switch (proto) {
	case SADB_PROTO_ESP: return "esp";
	case SADB_PROTO_AH: return "ah";
	default: return "any";
	}
}

const char *ctl_mode_name(uint8_t mode)
{
	return mode == SADB_MODE_TUNNEL ? "tunnel" : mode == SADB_MODE_TRANSPORT ? "transport" : "none";
}

const char *ctl_state_name(uint8_t state)
{
	switch (state) {
	case SADB_STATE_LARVAL: return "larval";
	case SADB_STATE_MATURE: return "mature";
	case SADB_STATE_DYING: return "dying";
	case SADB_STATE_DEAD: return "dead";
	default: return "unknown";
	}
}

const char *ctl_action_name(uint8_t action)
{
	switch (action) {
	case SADB_ACT_PROTECT: return "protect";
	case SADB_ACT_BYPASS: return "bypass";
	case SADB_ACT_DISCARD: return "discard";
	default: return "unknown";
	}
}
