/* dataplane/xipsecd/dp_util.c: what every part of xipsecd uses: its log (stderr, one line a message,
 * filtered by --verbose; under systemd, whose journal tells the priority from a "<N>" prefix, each
 * line carries one), its clock (CLOCK_MONOTONIC nanoseconds, for timers and rate limits that a
 * change of the wall clock must not move), the wait for what a killed predecessor still holds, the
 * mapping of packet memory on huge pages, numeric settings from the environment and the appending
 * writer the control socket's answers are made with. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp.h"

int dp_verbose;

uint64_t dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dp_log(int prio, const char *fmt, ...)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error", "warning", "notice",
					     "info", "debug" };
	char msg[512];
	va_list ap;

	if (prio > LOG_NOTICE + dp_verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sadb_stderr_is_journal())
		fprintf(stderr, "<%d>%s: %s\n", prio & 7, names[prio & 7], msg);
	else
		fprintf(stderr, "xipsecd[%d]: %s: %s\n", (int)getpid(), names[prio & 7], msg);
}

/* A start-up resource that is EBUSY after a crash or kill -9 is still our predecessor's: a killed
 * process closes its files (its TUN device, its AF_XDP sockets) only after its memory is torn down,
 * and the kernel frees a socket's queue shortly after. A restart that comes sooner waits for it,
 * up to DP_BUSY_WAIT_MS, rather than fail; a live holder keeps it past the wait and the start fails
 * naming it. Called after each failed try with its error: sleeps and returns true to try again. */
bool dp_busy_wait(int err, unsigned *waited_ms, const char *what)
{
	if (err != -EBUSY || *waited_ms >= DP_BUSY_WAIT_MS)
		return false;
	if (!*waited_ms)
		dp_log(LOG_NOTICE, "%s is busy (a stopped instance still exiting?): waiting up to %u s",
		       what, DP_BUSY_WAIT_MS / 1000);
	usleep(50000);
	*waited_ms += 50;
	return true;
}

/* Packet memory (the UMEM, and the in-memory benchmarks' frame pools, which model it) on transparent
 * huge pages where the kernel has them: a worker touches frames all over its 64 MiB, and with 4 KiB
 * pages nearly every received frame's first read also missed the TLB (a page walk, nested under a
 * hypervisor). The mapping is 2 MiB-aligned (over-allocated, the ends given back) so that it consists
 * of whole huge pages; without THP it is the same memory in small pages. Exactly size bytes at the
 * returned address stay mapped (munmap(2) them); NULL if the mapping failed. */
void *dp_map_huge(size_t size)
{
	const size_t huge = 2u << 20;
	uint8_t *m = mmap(NULL, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (m + size + huge > a + size)
		munmap(a + size, (size_t)(m + size + huge - (a + size)));
	if (madvise(a, size, MADV_HUGEPAGE) && errno != EINVAL)
		dp_log(LOG_DEBUG, "packet memory: no transparent huge pages: %s", strerror(errno));
	return a;
}

uint64_t dp_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max)
{
	const char *e = getenv(name);
	unsigned long long v;
	char *end;

	if (!e || !*e)
		return def;
	v = strtoull(e, &end, 0);
	if (!*end && v >= min && v <= max)
		return v;
	dp_log(LOG_WARNING, "$%s=%s is not a number in %" PRIu64 "..%" PRIu64 "; using %" PRIu64, name, e,
	       min, max, def);
	return def;
}

void dp_put(char **p, size_t *left, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*left <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(*p, *left, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= *left)
		n = (int)*left - 1;
	*p += n;
	*left -= (size_t)n;
}
