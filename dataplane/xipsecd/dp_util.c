/* dataplane/xipsecd/dp_util.c: what every part of xipsecd uses: its log (stderr, one line a message,
 * filtered by --verbose; under systemd, whose journal tells the priority from a "<N>" prefix, each
 * line carries one) and its clock (CLOCK_MONOTONIC nanoseconds, for timers and rate limits that a
 * change of the wall clock must not move). */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dataplane/xipsecd/dp.h"

int dp_verbose;

uint64_t dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether standard error is the journal's stream: systemd names it in $JOURNAL_STREAM
 * ("DEVICE:INODE"), and a line written there may start with <N>, its syslog priority; the journal
 * adds the program name and pid itself. */
bool dp_stderr_is_journal(void)
{
	static int journal = -1;
	const char *e;
	unsigned long long dev, ino;
	struct stat st;

	if (journal < 0) {
		e = getenv("JOURNAL_STREAM");
		journal = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
			  fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			  (unsigned long long)st.st_ino == ino;
	}
	return journal;
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
	if (dp_stderr_is_journal())
		fprintf(stderr, "<%d>%s: %s\n", prio & 7, names[prio & 7], msg);
	else
		fprintf(stderr, "xipsecd[%d]: %s: %s\n", (int)getpid(), names[prio & 7], msg);
}
