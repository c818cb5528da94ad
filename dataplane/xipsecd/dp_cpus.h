/* dataplane/xipsecd/dp_cpus.h: the CPUs xipsecd's workers are pinned to. Worker i runs on the i-th
 * CPU of a list (round robin when there are more workers than CPUs): by default the CPUs the
 * process may run on when it starts (its affinity mask, as taskset(1), a cpuset cgroup or systemd's
 * CPUAffinity= leave it), else the --cpus list, given as the kernel writes CPU lists ("0-3,8,10-11").
 * A list names each CPU once, in the order workers take them, and only CPUs the process may run on:
 * anything else is refused with a message naming the problem, before any worker starts.
 * Header-only: xipsecd.c parses, dp_rx.c pins, tests/unit/test_dp_cpus.c checks the parser. */
#ifndef XIPSEC_DP_CPUS_H
#define XIPSEC_DP_CPUS_H

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#define DP_CPUS_MAX CPU_SETSIZE

/* A set written as the kernel writes CPU lists, into buf (truncated to fit). */
static inline void dp_cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (int c = 0; c < DP_CPUS_MAX && used + 1 < len; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int e = c;
		while (e + 1 < DP_CPUS_MAX && CPU_ISSET(e + 1, set))
			e++;
		int n = e > c ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, e)
			      : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
		c = e;
	}
}

/* The allowed set in ascending order: the default list. Returns its length. */
static inline unsigned dp_cpus_default(const cpu_set_t *allowed, uint16_t *list)
{
	unsigned n = 0;

	for (int c = 0; c < DP_CPUS_MAX; c++)
		if (CPU_ISSET(c, allowed))
			list[n++] = (uint16_t)c;
	return n;
}

static inline bool dp_cpus_num(const char **p, long *v)
{
	const char *s = *p;
	long x = 0;

	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9') {
		x = x * 10 + (*s - '0');
		if (x >= DP_CPUS_MAX)
			return false;
		s++;
	}
	*p = s;
	*v = x;
	return true;
}

/* Parse a --cpus list against the allowed set. Returns the number of CPUs put in list (at most
 * DP_CPUS_MAX), or 0 with a message in err. */
static inline unsigned dp_cpus_parse(const char *arg, const cpu_set_t *allowed, uint16_t *list, char *err,
				     size_t errlen)
{
	cpu_set_t seen;
	const char *p = arg;
	unsigned n = 0;
	char have[256];

	CPU_ZERO(&seen);
	if (!*p) {
		snprintf(err, errlen, "--cpus: empty list");
		return 0;
	}
	for (;;) {
		long lo, hi;
		const char *item = p;

		if (!dp_cpus_num(&p, &lo)) {
			snprintf(err, errlen, "--cpus: '%s' is not a CPU number (0..%d) or range at '%.16s'", arg,
				 DP_CPUS_MAX - 1, item);
			return 0;
		}
		hi = lo;
		if (*p == '-') {
			p++;
			if (!dp_cpus_num(&p, &hi)) {
				snprintf(err, errlen, "--cpus: '%s': range without an end CPU (0..%d) at '%.16s'", arg,
					 DP_CPUS_MAX - 1, item);
				return 0;
			}
			if (hi < lo) {
				snprintf(err, errlen, "--cpus: '%s': range %ld-%ld runs backwards", arg, lo, hi);
				return 0;
			}
		}
		for (long c = lo; c <= hi; c++) {
			if (CPU_ISSET((int)c, &seen)) {
				snprintf(err, errlen, "--cpus: '%s' names CPU %ld twice", arg, c);
				return 0;
			}
			if (!CPU_ISSET((int)c, allowed)) {
				dp_cpus_format(allowed, have, sizeof(have));
				snprintf(err, errlen, "--cpus: CPU %ld is not one this process may run on (allowed: %s)", c,
					 have);
				return 0;
			}
			CPU_SET((int)c, &seen);
			list[n++] = (uint16_t)c;
		}
		if (!*p)
			return n;
		if (*p != ',' || !p[1]) {
			snprintf(err, errlen, "--cpus: '%s': expected ',' and a CPU after '%.*s'", arg, (int)(p - arg), arg);
			return 0;
		}
		p++;
	}
}

#endif
