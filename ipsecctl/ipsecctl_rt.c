/* ipsecctl/ipsecctl_rt.c: what ipsecctl's readers of live counters share (ipsecctl_rt.h): the copy
 * of one SA's runtime area, the names of its expiry bits, and the SPI filter of the command line.
 * `show` (ipsecctl_show.c) and the statistics and `monitor` (ipsecctl_stats.c) call down here;
 * nothing here calls either of them. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl_rt.h"

void ctl_rt_read(struct sadb *db, const struct sadb_sa *sa, uint32_t slot, struct rt_copy *c,
		 bool want_replay)
{
	struct sadb_runtime_view v;

	memset(c, 0, sizeof(*c));
	if (sadb_runtime_read(db, slot, sa->instance, want_replay ? SADB_RTV_REPLAY : 0, &v) < 0)
		return;
	c->valid = true;
	c->packets = v.packets;
	c->bytes = v.bytes;
	c->first_used = v.first_used;
	c->last_used = v.last_used;
	c->seq_reserved = v.seq_reserved;
	c->replay_top = v.replay_top;
	memcpy(c->drops, v.drops, sizeof(c->drops));
	c->drops_total = v.drops_total;
	/* The bitmap is a ring indexed by sequence number modulo SADB_REPLAY_MAX (RFC 6479, as
	 * dataplane/engine/replay.c keeps it); only [top - window + 1, top] is the window, older bits are
	 * stale. Sequence number 0 is never sent. */
	if (want_replay && sa->replay_window && c->replay_top) {
		uint64_t lo = c->replay_top >= sa->replay_window ? c->replay_top - sa->replay_window + 1 : 1;

		/* Word by word: at most window/64 + 2 words. */
		for (uint64_t s = lo; s <= c->replay_top;) {
			uint64_t bit = s % SADB_REPLAY_MAX, n = 64 - bit % 64, w;

			if (n > c->replay_top - s + 1)
				n = c->replay_top - s + 1;
			w = v.replay_bitmap[bit / 64] >> (bit % 64);
			if (n < 64)
				w &= (1ULL << n) - 1;
			c->replay_seen += (unsigned)__builtin_popcountll(w);
			s += n;
		}
	}
	c->expired = v.expired;
}

const char *ctl_expiry_name(uint32_t expired)
{
	return expired & 2 ? "hard" : expired & 1 ? "soft" : "none";
}

int ctl_filter_parse(int argc, char **argv, struct spi_filter *flt)
{
	flt->n = 0;
	flt->spi = calloc((size_t)argc + 1, sizeof(uint32_t));
	if (!flt->spi)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		uint64_t v;

		if (ctl_u64_parse(argv[i], UINT32_MAX, &v)) {
			ctl_err("bad SPI '%s': expected a number such as 0x1000", argv[i]);
			free(flt->spi);
			return -EINVAL;
		}
		flt->spi[flt->n++] = (uint32_t)v;
	}
	return 0;
}

bool ctl_filter_match(const struct spi_filter *flt, uint32_t spi)
{
	if (!flt->n)
		return true;
	for (int i = 0; i < flt->n; i++)
		if (flt->spi[i] == spi)
			return true;
	return false;
}
