/* ipsecctl/ipsecctl_rt.h: what ipsecctl's two readers of live counters share: `show`
 * (ipsecctl_show.c) and the statistics and `monitor` (ipsecctl_stats.c) read an SA's runtime area
 * the same way, filter SAs by SPI the same way, and name the expiry bits the same way
 * (ipsecctl_rt.c, below both). Internal to libipsecctl. */
#ifndef XIPSEC_IPSECCTL_RT_H
#define XIPSEC_IPSECCTL_RT_H

#include "ipsecctl/ipsecctl.h"

/* A consistent-enough copy of the runtime counters: each field is read once with a relaxed atomic
 * load (the owner writes them that way), so no value is torn even if the set is not a snapshot. */
struct rt_copy {
	bool valid;                 /* runtime belongs to this SA instance */
	uint64_t packets, bytes, first_used, last_used, seq_reserved, replay_top;
	uint64_t drops[SADB_DROP_MAX];
	uint64_t drops_total;
	unsigned replay_seen;       /* bits set in the window */
	uint32_t expired;
};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* The runtime counters of the SA in slot into c; c->valid only when the slot's runtime area is
 * this SA instance's. want_replay: count the replay window's bits as well. */
void ctl_rt_read(struct sadb *db, const struct sadb_sa *sa, uint32_t slot, struct rt_copy *c,
		 bool want_replay);

/* What the expiry bits say: "soft" (the SA is dying: its soft lifetime was reached, it should be
 * replaced), "hard" (expired: the dataplane drops every packet of it), or "none". Whoever owns the
 * SA's expiry sets them: xipsec-iked for negotiated SAs, xipsecd for manual ones. */
const char *ctl_expiry_name(uint32_t expired);

/* a - b, or 0 when a counter is already past its limit (or a clock went back). */
static inline uint64_t ctl_sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* SPIs from the command line; none: every SA. */
struct spi_filter {
	uint32_t *spi;
	int n;
};

/* 0, or -EINVAL/-ENOMEM (said); free flt->spi afterwards. */
int ctl_filter_parse(int argc, char **argv, struct spi_filter *flt);
bool ctl_filter_match(const struct spi_filter *flt, uint32_t spi);

/* `show stats` (ipsecctl_stats.c). */
void ctl_stats_json(struct ctl_json *j, const char *key, struct sadb *db);
void ctl_stats_text(FILE *f, struct sadb *db);

#endif
