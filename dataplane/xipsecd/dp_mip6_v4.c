/* dataplane/xipsecd/dp_mip6_v4.c: Dual Stack Mobile IPv6 (RFC 5555) in xipsecd's home agent, on the
 * control thread: a mobile node on an IPv4-only network sends its Binding Update, protected by its
 * signalling SA as any other (ESP transport, the home address as the IPv6 source, no Home Address
 * option), inside an IPv4 header addressed to the home agent's IPv4 address (the `ipv4` of its
 * home agent record), and carries its IPv4 care-of address in an IPv4 Care-of Address option. The
 * workers took the IPv4 header off (dp_mip6_v4_path.c) and queued what it said with the message;
 * here libmip6 decides (mip6_v4_ha_bu: the binding takes the outer source, IPv4-mapped), the
 * acknowledgement is built with its NAT Detection and IPv4 Address Acknowledgement options and
 * queued to leave in the same IPv4 header reversed (section 4.2), and the node's tunnel SAs are
 * given IPv4 endpoints (the record's IPv4 address and the care-of address, dp_mip6_move.c asking
 * dp_mip6_v4_ends): ESP in IPv4 carries its IPv6 traffic, and the SAs' runtime areas, so their
 * sequence numbers and replay windows, stay as they are (sadb_sa_migrate keeps them).
 *
 * The outer header is outside ESP: it is trusted for nothing but where to send. The Binding
 * Update's ESP names the mobile node (its SA, its home address) and the IPv4 Care-of Address
 * option; libmip6 binds the outer source, which a NAT may have rewritten (detected by comparing
 * it with the option, and answered with NAT Detection). An attacker on the path could redirect the
 * tunnel as with any care-of address it can rewrite, but not read or forge what it carries.
 * Only a Binding Update addressed to the IPv4 address of the record that serves its home address
 * is taken. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

static struct v4_node *node_find(const struct dp_mip6 *m, const uint8_t hoa[16])
{
	for (size_t i = 0; i < m->n_v4; i++)
		if (!memcmp(m->v4[i].hoa, hoa, 16))
			return &m->v4[i];
	return NULL;
}

/* The node's entry, made when new; NULL when there is no memory for it. */
static struct v4_node *node_get(struct dp_mip6 *m, const uint8_t hoa[16])
{
	struct v4_node *v = node_find(m, hoa);

	if (v)
		return v;
	if (m->n_v4 == m->cap_v4) {
		size_t cap = m->cap_v4 ? 2 * m->cap_v4 : 8;
		struct v4_node *nv = realloc(m->v4, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		m->v4 = nv;
		m->cap_v4 = cap;
	}
	v = &m->v4[m->n_v4++];
	memset(v, 0, sizeof(*v));
	memcpy(v->hoa, hoa, 16);
	return v;
}

static bool v4_set(const uint8_t a[4])
{
	return a[0] | a[1] | a[2] | a[3];
}

static void v4_drop(struct dp_mip6 *m, struct mip6_ha_result *res, enum mip6_drop d, const char *why)
{
	res->drop = d;
	m->v4_dropped++;
	dp_log(LOG_INFO, "home agent: Binding Update in IPv4 dropped: %s", why);
}

bool dp_mip6_v4_input(struct dp_ctx *ctx, const struct mq_msg *q, const struct sadb_home_agent *rec,
		      struct mip6_ha_result *res)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_v4_outer o = { .udp = q->v4.sport != 0, .sport = q->v4.sport };
	struct mip6_v4_reg reg;
	struct mip6_pkt p;
	enum mip6_drop d = mip6_parse(q->pkt, q->len, &p);

	memset(res, 0, sizeof(*res));
	m->v4_bu++;
	if (d != MIP6_DROP_NONE) {
		v4_drop(m, res, d, mip6_drop_name(d));
		return false;
	}
	if (!rec || !v4_set(rec->addr4) || memcmp(rec->addr4, q->v4.dst, 4)) {
		v4_drop(m, res, MIP6_DROP_NOT_FOR_US, "not to the IPv4 address of its home agent record");
		return false;
	}
	memcpy(o.src, q->v4.src, 4);
	enum mip6_v4_refusal f = mip6_v4_ha_bu(m->ha, &p, q->pkt, &o, q->sa_id, now_ms(), res, &reg);
	if (f != MIP6_V4_OK) {
		v4_drop(m, res, res->drop, mip6_v4_refusal_name(f));
		return false;
	}
	if (res->drop != MIP6_DROP_NONE) {
		/* mip6_ha_bu's: counted in its statistics */
		dp_log(LOG_INFO, "home agent: Binding Update in IPv4 dropped: %s", mip6_drop_name(res->drop));
		return false;
	}
	struct v4_node *v = node_get(m, p.src);
	if (!v) {
		v4_drop(m, res, MIP6_DROP_NOT_FOR_US, "no memory for the mobile node's IPv4 state");
		return false;
	}
	/* the same care-of address from another UDP port (a NAT's new mapping), or now in UDP or no
	 * longer: a refresh to libmip6, but the tunnel's ESP in UDP follows it */
	bool rebound = !memcmp(v->reg.coa, reg.coa, 16) && (v->reg.udp != reg.udp || v->reg.port != reg.port);
	v->reg = reg;
	v->o = q->v4;
	memcpy(v->ha6, rec->addr.a.b, 16);
	return rebound && res->ba.status < 128 && res->change != MIP6_CHANGE_NEW &&
	       res->change != MIP6_CHANGE_MOVE && res->change != MIP6_CHANGE_DELETE;
}

int dp_mip6_v4_ba(struct dp_ctx *ctx, const struct mip6_ha_result *res, uint8_t *buf, size_t cap,
		  struct dp_v4_outer *v4)
{
	struct dp_mip6 *m = M(ctx);
	const struct v4_node *v = node_find(m, res->hoa);

	memset(v4, 0, sizeof(*v4));
	if (!v || !mip6_v4_is_mapped(res->coa, NULL) || memcmp(v->reg.coa, res->coa, 16))
		return 0;
	v4->set = true;
	memcpy(v4->src, v->o.dst, 4);
	memcpy(v4->dst, v->o.src, 4);
	v4->sport = v->o.dport;
	v4->dport = v->o.sport;
	return mip6_v4_build_ba(m->ha, res, &v->reg, buf, cap);
}

int dp_mip6_v4_ends(const struct dp_mip6 *m, const uint8_t hoa[16], const uint8_t coa[16],
		    struct sadb_addr *here, struct sadb_addr *peer, uint16_t *here_port, uint16_t *peer_port)
{
	const struct v4_node *v = node_find(m, hoa);
	uint8_t c4[4];

	*here_port = *peer_port = 0;
	memset(here, 0, sizeof(*here));
	memset(peer, 0, sizeof(*peer));
	if (!mip6_v4_is_mapped(coa, c4)) {
		peer->family = AF_INET6;
		memcpy(peer->a.b, coa, 16);
		if (v) {  /* it was in IPv4: the home agent's IPv6 address again */
			here->family = AF_INET6;
			memcpy(here->a.b, v->ha6, 16);
		}
		return 0;
	}
	/* the address its Binding Update was sent to, which is its record's IPv4 address */
	if (!v || memcmp(v->reg.coa, coa, 16))
		return -ENOENT;
	here->family = peer->family = AF_INET;
	memcpy(here->a.b, v->o.dst, 4);
	memcpy(peer->a.b, c4, 4);
	/* The Binding Update came in UDP (through a NAT, or the node could not tell): the tunnel goes
	 * in UDP too, ESP in UDP to the port the Binding Update came from, which is the NAT's for the
	 * node's one UDP port (a NAT that maps an inside port to one outside port whatever the
	 * destination, as RFC 4787 REQ-1 asks, gives its ESP in UDP the same one). */
	if (v->reg.udp) {
		*here_port = DP_NATT_PORT;
		*peer_port = v->reg.port;
	}
	return 0;
}

void dp_mip6_v4_clear(struct dp_mip6 *m)
{
	free(m->v4);
	m->v4 = NULL;
	m->n_v4 = m->cap_v4 = 0;
}
