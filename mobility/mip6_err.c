/* mobility/mip6_err.c: the Binding Errors and ICMPv6 Parameter Problems the home agent answers
 * Mobility Header packets it cannot take with (mip6_err.h): the choice by drop reason, the packet,
 * and the token bucket that bounds them.
 *
 * Why a bucket: each error answers a packet that passed ESP with the mobile node's own keys (the
 * dataplane queues nothing else here), but a broken or compromised node could still ask for one per
 * packet; a bounded rate keeps the home agent's outbound queue and the node's link for the
 * acknowledgements that matter, as the kernel's ICMP limits do for its errors (RFC 4443 §2.4 (f)). */
#include <errno.h>
#include <string.h>

#include "mobility/mip6_err.h"

const char *mip6_err_name(unsigned err)
{
	static const char *const n[MIP6_ERR_MAX] = {
		"none", "be_unknown_binding", "be_unknown_mh_type", "pp_payload_proto", "pp_header_len",
	};
	return err < MIP6_ERR_MAX ? n[err] : "?";
}

enum mip6_err mip6_err_due(enum mip6_drop drop, const struct mip6_pkt *p, bool hoa_bound)
{
	/* p->mh_len is set only once the MH's Header Len fits the packet: before that (a truncated
	 * packet) there is no field that can be pointed at with any certainty, and the checksum
	 * comes before every error (§9.2). */
	if (!p->mh_len)
		return MIP6_ERR_NONE;
	switch (drop) {
	case MIP6_DROP_BAD_PAYLOAD_PROTO:
		return MIP6_ERR_PP_PAYLOAD_PROTO;
	case MIP6_DROP_BAD_HDR_LEN:
		return MIP6_ERR_PP_HEADER_LEN;
	case MIP6_DROP_UNKNOWN_MH_TYPE:
		return MIP6_ERR_BE_UNKNOWN_MH_TYPE;
	case MIP6_DROP_NOT_BU:
		/* §9.3.1: a Home Address option is taken only with a binding for it */
		return p->has_hao && !hoa_bound ? MIP6_ERR_BE_UNKNOWN_BINDING : MIP6_ERR_NONE;
	default:
		return MIP6_ERR_NONE;
	}
}

int mip6_err_build(enum mip6_err err, const struct mip6_pkt *p, const uint8_t *pkt, uint32_t len,
		   uint8_t *buf, size_t cap)
{
	const uint8_t *to = err >= MIP6_ERR_PP_PAYLOAD_PROTO && p->has_hao ? p->hoa : p->src;

	if (err == MIP6_ERR_NONE || err >= MIP6_ERR_MAX || !mip6_addr_unicast_routable(to))
		return -EINVAL;
	if (err == MIP6_ERR_PP_PAYLOAD_PROTO || err == MIP6_ERR_PP_HEADER_LEN)
		return mip6_build_param_problem(buf, cap, p->dst, to,
						p->mh_off + (err == MIP6_ERR_PP_HEADER_LEN ? 1u : 0u), pkt, len);

	struct mip6_be_params be = {
		.status = err == MIP6_ERR_BE_UNKNOWN_BINDING ? MIP6_BE_UNKNOWN_HAO_BINDING
		                                             : MIP6_BE_UNKNOWN_MH_TYPE,
		.rh2 = p->has_hao,
	};
	memcpy(be.src, p->dst, 16);
	memcpy(be.dst, to, 16);
	if (p->has_hao)
		memcpy(be.hoa, p->hoa, 16);
	return mip6_build_be(buf, cap, &be);
}

void mip6_err_bucket_init(struct mip6_err_bucket *b, uint32_t burst, uint32_t per_s, uint64_t now_ms)
{
	b->burst = burst ? burst : MIP6_ERR_BURST_DEFAULT;
	b->per_s = per_s ? per_s : MIP6_ERR_RATE_DEFAULT;
	b->milli = (uint64_t)b->burst * 1000u;
	b->last_ms = now_ms;
}

bool mip6_err_bucket_take(struct mip6_err_bucket *b, uint64_t now_ms)
{
	uint64_t cap = (uint64_t)b->burst * 1000u;

	if (now_ms > b->last_ms) {
		/* per_s tokens a second is per_s thousandths a millisecond; capped first so that a
		 * long idle time cannot overflow the product */
		uint64_t dt = now_ms - b->last_ms;
		b->milli = dt >= cap ? cap : b->milli + dt * b->per_s;
		if (b->milli > cap)
			b->milli = cap;
		b->last_ms = now_ms;
	}
	if (b->milli < 1000u)
		return false;
	b->milli -= 1000u;
	return true;
}
