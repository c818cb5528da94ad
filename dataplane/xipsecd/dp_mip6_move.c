/* dataplane/xipsecd/dp_mip6_move.c: what a Mobile IPv6 binding does to forwarding, on the control
 * thread: the mobile node's pair of tunnel SAs is moved to its care-of address when it registers or
 * moves, and back to its home address (where dp_out tunnels nothing: SADB_DROP_NO_BINDING) when the
 * binding ends, each move one SADB transaction of sadb_sa_migrate calls through the home agent's
 * writer handle. Migration keeps each SA's runtime area, so its sequence numbers continue: nothing is
 * re-keyed and no nonce repeats. Proxy ND for the home address follows the binding (dp_mip6_nd.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

static int cmp_hoa(const void *key, const void *elem)
{
	return memcmp(key, ((const struct mn_cfg *)elem)->hoa, 16);
}

const struct mn_cfg *dp_mip6_mn_find(const struct mn_cfg *v, size_t n, const uint8_t hoa[16])
{
	return n ? bsearch(hoa, v, n, sizeof(*v), cmp_hoa) : NULL;
}

static const struct mn_cfg *mn_cfg_find(const struct dp_mip6 *m, const uint8_t hoa[16])
{
	return dp_mip6_mn_find(m->mns, m->n_mns, hoa);
}

/* The dataplane's SA table is republished by flush_moves: after it, no worker uses the old
 * endpoints. */
int dp_mip6_tunnel_move(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16])
{
	struct dp_mip6 *m = M(ctx);
	const struct mn_cfg *c = mn_cfg_find(m, hoa);
	struct sadb_addr to, here;
	uint16_t here_port, to_port;
	struct sadb_sa out, in;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	int r, k;

	if (!c || !m->wdb)
		return -ENOENT;
	/* an IPv4 care-of address (RFC 5555) puts both ends in IPv4: dp_mip6_v4.c */
	r = dp_mip6_v4_ends(m, hoa, coa, &here, &to, &here_port, &to_port);
	if (r == 0)
		r = sadb_sa_get(m->wdb, c->id[ROLE_TUN_OUT] - 1, &out);
	if (r == 0)
		r = sadb_sa_get(m->wdb, c->id[ROLE_TUN_IN] - 1, &in);
	if (r)
		goto fail;
	r = sadb_txn_begin(m->wdb);
	if (r)
		goto fail;
	/* the home agent's own end: as the SAs have it, unless IPv4 changes it */
	const struct sadb_addr *ho = here.family ? &here : &out.src, *hi = here.family ? &here : &in.dst;
	if (!sadb_addr_eq(&out.dst, &to) || !sadb_addr_eq(&out.src, ho) || out.encap_sport != here_port ||
	    out.encap_dport != to_port)
		r = sadb_sa_migrate(m->wdb, out.spi, out.proto, &out.dst, ho, &to, here_port, to_port);
	if (r == 0 && (!sadb_addr_eq(&in.src, &to) || !sadb_addr_eq(&in.dst, hi) ||
		       in.encap_sport != to_port || in.encap_dport != here_port))
		r = sadb_sa_migrate(m->wdb, in.spi, in.proto, &in.dst, &to, hi, to_port, here_port);
	/* a mobile router's networks follow in the same transaction (dp_mip6_nemo.c) */
	if (r == 0 && (r = dp_mip6_nemo_routes(ctx, c, !memcmp(coa, hoa, 16))) > 0)
		r = 0;
	if (r) {
		sadb_txn_abort(m->wdb);
		goto fail;
	}
	r = sadb_txn_commit(m->wdb);
	if (r)
		goto fail;
	k = dp_mip6_ike_key_flag(ctx, &out, hoa, coa); /* after the move: it reads the SA at coa */
	explicit_bzero(&out, sizeof(out));
	explicit_bzero(&in, sizeof(in));
	/* Nobody else wrote since the configuration was read: it is still current. */
	if (sadb_generation(m->wdb) == m->seen_gen + 1 + (k > 0))
		m->seen_gen = sadb_generation(m->wdb);
	m->migrations++;
	m->sync_due = true;
	return 0;
fail:
	explicit_bzero(&out, sizeof(out));
	explicit_bzero(&in, sizeof(in));
	m->migrate_errors++;
	dp_log(LOG_ERR, "home agent: cannot move the tunnel of %s to %s: %s", a6(hoa, b1), a6(coa, b2),
	       m->wdb ? sadb_errmsg(m->wdb) : strerror(-r));
	return r;
}

void dp_mip6_binding_up(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16], bool fresh)
{
	struct dp_mip6 *m = M(ctx);
	char b[INET6_ADDRSTRLEN];
	int r;

	dp_mip6_tunnel_move(ctx, hoa, coa);
	if (!fresh)
		return;
	r = dp_mip6_proxy_neigh(m, hoa, true);
	if (r) {
		m->nd_errors++;
		dp_log(LOG_WARNING, "home agent: cannot proxy ND for %s: %s", a6(hoa, b), strerror(-r));
	}
	dp_mip6_na_schedule(m, hoa, true);
	/* the L bit: the mobile node's link-local address is defended too (RFC 6275 section 10.4.1) */
	const struct mip6_binding *bd = mip6_ha_lookup(m->ha, hoa);
	if (bd && (bd->bu_flags & MIP6_BU_L)) {
		uint8_t ll[16];

		dp_mip6_ll_of(hoa, ll);
		if ((r = dp_mip6_proxy_neigh(m, ll, true)) != 0) {
			m->nd_errors++;
			dp_log(LOG_WARNING, "home agent: cannot proxy ND for %s: %s", a6(ll, b), strerror(-r));
		}
	}
}

void dp_mip6_binding_down(struct dp_ctx *ctx, const uint8_t hoa[16])
{
	struct dp_mip6 *m = M(ctx);
	uint8_t ll[16];
	int r = dp_mip6_proxy_neigh(m, hoa, false);

	if (r)
		m->nd_errors++;
	/* the link-local entry the L bit may have added (none: nothing to remove, not an error) */
	dp_mip6_ll_of(hoa, ll);
	if (dp_mip6_proxy_neigh(m, ll, false))
		m->nd_errors++;
	dp_mip6_na_schedule(m, hoa, false);
	dp_mip6_tunnel_move(ctx, hoa, hoa);
}
