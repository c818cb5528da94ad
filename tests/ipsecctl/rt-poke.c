/* tests/ipsecctl/rt-poke.c: a stand-in for the dataplane in ipsecctl's tests. It writes an SA's
 * runtime counters in the SADB the way xipsecd's workers do (relaxed atomic stores into the slot's
 * sadb_runtime), so `ipsecctl show`/`monitor` can be checked against known values without a
 * packet path:
 *   rt-poke SADB SPI [field=value ...]      set fields (packets, bytes, first_used, last_used,
 *                                           seq, top, bitmapN (word N), expired, drop.NAME)
 *   rt-poke SADB SPI --ramp N MS COUNT      add N packets (and 100*N bytes, N/10 ICV drops) every
 *                                           MS milliseconds, COUNT times */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sadb/sadb.h"

#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static int set(struct sadb_runtime *rt, const char *kv)
{
	const char *eq = strchr(kv, '=');
	unsigned long long v;
	char name[64];

	if (!eq || (size_t)(eq - kv) >= sizeof(name))
		return -EINVAL;
	memcpy(name, kv, (size_t)(eq - kv));
	name[eq - kv] = 0;
	v = strtoull(eq + 1, NULL, 0);
	if (!strcmp(name, "packets"))
		ST(rt->packets, v);
	else if (!strcmp(name, "bytes"))
		ST(rt->bytes, v);
	else if (!strcmp(name, "first_used"))
		ST(rt->first_used, v);
	else if (!strcmp(name, "last_used"))
		ST(rt->last_used, v);
	else if (!strcmp(name, "seq"))
		ST(rt->seq_reserved, v);
	else if (!strcmp(name, "top"))
		ST(rt->replay_top, v);
	else if (!strncmp(name, "bitmap", 6) && strtoul(name + 6, NULL, 10) < SADB_REPLAY_MAX / 64)
		ST(rt->replay_bitmap[strtoul(name + 6, NULL, 10)], v);
	else if (!strcmp(name, "expired"))
		ST(rt->expired, (uint32_t)v);
	else if (!strncmp(name, "drop.", 5)) {
		for (unsigned i = 0; i < SADB_DROP_MAX; i++) {
			if (!strcmp(name + 5, sadb_drop_name(i))) {
				ST(rt->drops[i], v);
				return 0;
			}
		}
		return -EINVAL;
	} else
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	struct sadb *db;
	struct sadb_sa sa;
	struct sadb_runtime *rt;
	uint32_t cur = 0, slot = 0;
	unsigned long spi;
	char msg[256];
	bool found = false;

	if (argc < 3) {
		fprintf(stderr, "usage: rt-poke SADB SPI [field=value...] | --ramp N MS COUNT\n");
		return 2;
	}
	spi = strtoul(argv[2], NULL, 0);
	if (sadb_open(argv[1], SADB_RDWR, NULL, &db, msg, sizeof(msg))) {
		fprintf(stderr, "rt-poke: %s\n", msg);
		return 1;
	}
	while (!found && sadb_sa_next(db, &cur, &sa, &slot) == 0)
		found = sa.spi == spi;
	if (!found || !(rt = sadb_runtime(db, slot))) {
		fprintf(stderr, "rt-poke: no SA with SPI 0x%lx\n", spi);
		return 1;
	}
	if (argc == 7 && !strcmp(argv[3], "--ramp")) {
		unsigned long n = strtoul(argv[4], NULL, 0), ms = strtoul(argv[5], NULL, 0);
		long count = strtol(argv[6], NULL, 0);
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

		for (long i = 0; i < count; i++) {
			ADD(rt->packets, n);
			ADD(rt->bytes, 100 * n);
			ADD(rt->drops[SADB_DROP_ICV], n / 10);
			nanosleep(&ts, NULL);
		}
	} else {
		for (int i = 3; i < argc; i++) {
			if (set(rt, argv[i])) {
				fprintf(stderr, "rt-poke: bad field '%s'\n", argv[i]);
				return 2;
			}
		}
	}
	sadb_close(db);
	return 0;
}
