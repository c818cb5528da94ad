/* dataplane/xipsecd/dp_mip6_ike.c: the home agent's side of mobile nodes keyed by IKEv2 (RFC 4877),
 * on the control thread. xipsec-iked installs such a node's four SAs (SADB_SAF_MOBILE, with the IKE
 * SA's id), which dp_mip6_cfg.c reads like ipsecctl's. Two things differ from manual keys:
 *  - a CHILD_SA rekey replaces SAs under a binding. The new SAs are for the same home address, and
 *    xipsec-iked gives a home address only to the identity its configuration binds to it
 *    (ike/kernel_sadb_mip6.c), so the node that registered is the one that rekeyed: its binding and
 *    last sequence number stay, the Binding Updates now arrive on the new signalling SA, and the new
 *    tunnel SAs are moved to the care-of address (dp_mip6_cfg.c). Manually keyed SAs that change are
 *    an operator's new configuration and end the binding, as before.
 *  - the K bit (RFC 6275 9.5.1, RFC 4877 7): granted to a node whose SAs are all IKE-keyed
 *    (mip6_mn.key_mobility) when its Binding Update asks; the home agent then marks the outbound
 *    tunnel SA SADB_SAF_KEY_MOBILE right after the transaction that moves it, and xipsec-iked moves the
 *    IKE SA's remote endpoint to that SA's destination, so a move never renegotiates. A binding
 *    without K, or none (the tunnel at home), clears the mark: the IKE SA stays where it is. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

bool dp_mip6_ike_rekeyed(struct dp_ctx *ctx, const struct mn_cfg *o, const struct mn_cfg *nw)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_mn mn;
	char b[INET6_ADDRSTRLEN];
	int r;

	if (!o->ike || !nw->ike || !mip6_ha_lookup(m->ha, o->hoa))
		return false;
	memset(&mn, 0, sizeof(mn));
	memcpy(mn.hoa, nw->hoa, 16);
	mn.bu_sa = nw->id[ROLE_BU];
	mn.ba_sa = nw->id[ROLE_BA];
	mn.tun_out_sa = nw->id[ROLE_TUN_OUT];
	mn.tun_in_sa = nw->id[ROLE_TUN_IN];
	mn.key_mobility = true;
	r = mip6_ha_mn_update(m->ha, &mn);
	if (r) {
		dp_log(LOG_WARNING, "home agent: new SAs of %s not taken: %s", a6(nw->hoa, b), strerror(-r));
		return false;
	}
	dp_log(LOG_INFO, "home agent: %s rekeyed, binding kept", a6(nw->hoa, b));
	return true;
}

int dp_mip6_ike_key_flag(struct dp_ctx *ctx, const struct sadb_sa *out, const uint8_t hoa[16],
			 const uint8_t coa[16])
{
	struct dp_mip6 *m = M(ctx);
	const struct mip6_binding *bd = mip6_ha_lookup(m->ha, hoa);
	bool k = bd && bd->k && !memcmp(bd->coa, coa, 16) && memcmp(coa, hoa, 16);
	struct sadb_addr to = { .family = AF_INET6 };
	struct sadb_sa sa;
	int r;

	if (k == !!(out->flags & SADB_SAF_KEY_MOBILE) || (!out->ike_id && !k))
		return 0;
	memcpy(to.a.b, coa, 16);
	r = sadb_sa_lookup(m->wdb, out->spi, out->proto, &to, &sa, NULL);
	if (r == 0) {
		if (k)
			sa.flags |= SADB_SAF_KEY_MOBILE;
		else
			sa.flags &= ~SADB_SAF_KEY_MOBILE;
		r = sadb_sa_update(m->wdb, &sa);
	}
	explicit_bzero(&sa, sizeof(sa));
	if (r) {
		char b[INET6_ADDRSTRLEN];

		dp_log(LOG_ERR, "home agent: cannot %s the K bit's mark on the tunnel of %s: %s",
		       k ? "set" : "clear", a6(hoa, b), sadb_errmsg(m->wdb));
		return r;
	}
	return 1;
}
