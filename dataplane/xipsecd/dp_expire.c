/* dataplane/xipsecd/dp_expire.c: lifetime enforcement of manually keyed SAs. Each SA has one expiry owner:
 * xipsec-iked for the SAs it negotiated (sadb_sa.ike_id != 0: it knows charon's lifetimes, rekeys,
 * and runs also when no dataplane does), xipsecd's control thread, here, for every other SA. Both
 * apply the same rule (a limit is reached once the full time has passed or the counter has reached
 * it, never earlier) and raise expiry the same way: by setting bits of the SA's runtime area
 * (bit 0 soft, bit 1 hard, hard implies soft). The engine drops every packet of an SA whose hard
 * bit is set (sa_expired); the soft bit marks it as dying for ipsecctl and the operator.
 *
 * Time limits count from sadb_sa.created (whole CLOCK_REALTIME seconds, so they hold across
 * restarts of xipsecd) and from the runtime area's first_used (whole seconds too). A whole second
 * only says the event happened within that second, so the age is taken from the end of it, or from
 * the moment this process saw the SA (or its first use), whichever is earlier: never early, and
 * late by at most the scan interval for an SA added while xipsecd runs.
 *
 * The scan is cheap: only the SAs of the table that have a limit and no IKE owner are looked at
 * (dp_sa.c lists them when it builds a table), a round starts at most every 100 ms, and one tick
 * of the control loop looks at a bounded number of them, so a million SAs never stall the loop. */
#include "config.h"

#include <syslog.h>
#include <time.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_sa.h"

#define DP_EXPIRE_ROUND_NS 100000000ull /* a new round at most this often */
#define DP_EXPIRE_BUDGET   4096u        /* SAs looked at per tick of the control loop */
#define NS                 1000000000ull

uint64_t dp_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static bool has_limit(const struct sadb_lifetime *l)
{
	return l->bytes || l->packets || l->add_seconds || l->use_seconds;
}

bool dp_expire_owned(const struct sadb_sa *sa)
{
	return sa->ike_id == 0 && (has_limit(&sa->soft) || has_limit(&sa->hard)) &&
	       (sa->state == SADB_STATE_MATURE || sa->state == SADB_STATE_DYING);
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Which limit of l is reached: its name, or NULL. use_ns is meaningful only when used. */
static const char *limit_hit(const struct sadb_lifetime *l, uint64_t add_ns, uint64_t use_ns,
			     bool used, uint64_t bytes, uint64_t packets)
{
	if (l->add_seconds && add_ns / NS >= l->add_seconds)
		return "time";
	if (l->use_seconds && used && use_ns / NS >= l->use_seconds)
		return "time since first use";
	if (l->bytes && bytes >= l->bytes)
		return "bytes";
	if (l->packets && packets >= l->packets)
		return "packets";
	return NULL;
}

static void check(struct dp_ctx *ctx, struct dp_sa *s, uint64_t now)
{
	struct sadb_runtime_view v;
	uint64_t bytes, packets, first_used, add_ns, use_ns = 0;
	const char *why, *kind;
	uint32_t bits, set, old;
	char a[64];

	/* the area may hold another SA instance already (a delete not applied yet): not ours */
	if (sadb_runtime_read(ctx->db, s->slot, s->sa.instance, 0, &v) < 0)
		return;
	bits = v.expired;
	if (bits & 2)
		return;
	bytes = v.bytes;
	packets = v.packets;
	first_used = v.first_used;
	if (first_used && !s->use_seen_ns)
		s->use_seen_ns = now;
	add_ns = sub0(now, min64(s->seen_ns, (s->sa.created + 1) * NS));
	if (first_used)
		use_ns = sub0(now, min64(s->use_seen_ns, (first_used + 1) * NS));
	if ((why = limit_hit(&s->sa.hard, add_ns, use_ns, first_used != 0, bytes, packets))) {
		set = 3u;
		kind = "hard";
	} else if (!(bits & 1) &&
		   (why = limit_hit(&s->sa.soft, add_ns, use_ns, first_used != 0, bytes, packets))) {
		set = 1u;
		kind = "soft";
	} else {
		return;
	}
	/* the runtime area is the workers'; only the expired bits are the expiry owner's to set */
	old = __atomic_fetch_or(&s->rt->expired, set, __ATOMIC_RELEASE);
	if ((old & set) == set)
		return;
	if (set & 2)
		ctx->sa_hard_expired++;
	else
		ctx->sa_soft_expired++;
	dp_log(LOG_NOTICE, "SA spi 0x%08x dst %s (%s, manual key) %s lifetime reached (%s)%s",
	       s->sa.spi, sadb_addr_str(&s->sa.dst, a, sizeof(a)),
	       s->sa.dir == SADB_DIR_OUT ? "outbound" : "inbound", kind, why,
	       set & 2 ? ": its packets are dropped from now on" : "");
}

void dp_expire_tick(struct dp_ctx *ctx, struct dp_expire_round *r, struct dp_sa *const *v,
		    uint32_t n)
{
	uint64_t now, end;

	if (r->next >= n)
		r->next = 0;
	if (r->next == 0) {
		uint64_t mono = dp_now_ns();

		if (mono < r->due_ns)
			return;
		r->due_ns = mono + DP_EXPIRE_ROUND_NS;
	}
	now = dp_realtime_ns();
	end = min64(n, (uint64_t)r->next + DP_EXPIRE_BUDGET);
	for (uint32_t i = r->next; i < end; i++)
		check(ctx, v[i], now);
	r->next = end >= n ? 0 : (uint32_t)end;
}
