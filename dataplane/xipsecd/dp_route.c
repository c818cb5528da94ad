/* dataplane/xipsecd/dp_route.c: where a worker sends a packet. Each worker caches the kernel's answer
 * (route + neighbour) per destination; the control thread bumps dp_ctx.route_gen on every route,
 * neighbour, address or link notification, which invalidates every entry at once. A miss asks the
 * kernel synchronously on the worker's own netlink socket (tens of microseconds, once per
 * destination per change). An unresolved neighbour makes the kernel resolve it (NTF_USE) while the
 * packet waits in the forwarding stage's hold queue (dp_fwd.c), which asks here again. */
#include "config.h"

#include <string.h>
#include <linux/rtnetlink.h>

#include "dataplane/xipsecd/dp.h"

static unsigned alen(uint8_t family)
{
	return family == AF_INET ? 4 : 16;
}

static uint32_t hash_dst(uint8_t family, const uint8_t *dst, int want)
{
	uint32_t h = (2166136261u ^ family) + (uint32_t)(want + 1) * 0x9e3779b9u;

	for (unsigned i = 0; i < alen(family); i++)
		h = (h ^ dst[i]) * 16777619u;
	return h;
}

static void fill(struct dp_worker *w, struct dp_rentry *e, uint8_t family, const uint8_t *dst,
		 int want, uint64_t gen)
{
	struct dp_ctx *ctx = w->ctx;
	int oif = 0;
	uint8_t type = 0;
	int err;

	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->family = family;
	memcpy(e->dst, dst, alen(family));
	e->gen = gen;
	e->want = (int8_t)want;
	e->port = DP_RT_NONE;
	if (want >= 0) {
		oif = ctx->ifc[want].ifindex;
		err = dp_nl_route_get_oif(w->nl_fd, &w->nl_seq, family, dst, &oif, e->nh, &type);
	} else {
		err = dp_nl_route_get(w->nl_fd, &w->nl_seq, family, dst, &oif, e->nh, &type);
	}
	if (err)
		return;
	if (type == RTN_LOCAL) {
		e->port = DP_RT_LOCAL;
		return;
	}
	if (type != RTN_UNICAST)
		return;
	if (oif == ctx->ifc[DP_IN].ifindex)
		e->port = DP_IN;
	else if (oif == ctx->ifc[DP_OUT].ifindex)
		e->port = DP_OUT;
	else if (ctx->tun_fd >= 0 && oif == ctx->tun_ifindex)
		e->port = DP_RT_LOCAL; /* routed into our TUN device: the local stack's side */
	else
		return;
	if (e->port == DP_IN || e->port == DP_OUT) {
		e->mtu = atomic_load_explicit(&ctx->ifc[e->port].mtu, memory_order_relaxed);
		e->resolved = dp_nl_neigh_get(w->nl_fd, &w->nl_seq, family, oif, e->nh, e->dmac) == 0;
		if (!e->resolved) {
			dp_nl_neigh_resolve(w->nl_fd, &w->nl_seq, family, oif, e->nh);
			e->retry_ns = dp_now_ns() + 1000000; /* ask again after 1 ms */
		}
	}
}

#define SAME(e) ((e)->family == family && (e)->want == want && !memcmp((e)->dst, dst, alen(family)))

enum dp_route_res dp_route_lookup(struct dp_worker *w, uint8_t family, const uint8_t *dst, int want,
				  struct dp_rentry **out, enum sadb_drop *why)
{
	uint64_t gen = atomic_load_explicit(&w->ctx->route_gen, memory_order_acquire);
	uint32_t h = hash_dst(family, dst, want) & (DP_RCACHE_SIZE - 1);
	struct dp_rentry *e = NULL;

	/* linear probing over a few slots; the last one probed is recycled */
	for (unsigned i = 0; i < 4; i++) {
		e = &w->rcache[(h + i) & (DP_RCACHE_SIZE - 1)];
		if (!e->used || SAME(e))
			break;
		if (e->gen != gen)
			break; /* stale anyway: reuse */
	}
	if (!e->used || !SAME(e) || e->gen != gen)
		fill(w, e, family, dst, want, gen);
	else if (e->port <= DP_OUT && !e->resolved && dp_now_ns() >= e->retry_ns)
		fill(w, e, family, dst, want, gen);
	*out = e;
	if (e->port == DP_RT_NONE) {
		*why = SADB_DROP_NO_ROUTE;
		return DP_ROUTE_DROP;
	}
	if (e->port == DP_RT_LOCAL)
		return DP_ROUTE_OK;
	return e->resolved ? DP_ROUTE_OK : DP_ROUTE_PENDING;
}
