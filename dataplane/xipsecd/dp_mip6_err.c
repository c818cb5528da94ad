/* dataplane/xipsecd/dp_mip6_err.c: the home agent's Binding Errors and ICMPv6 Parameter Problems
 * (libmip6's mip6_err.h decides and builds them) on the control thread: a Mobility Header packet
 * the home agent dropped is answered when RFC 6275 §9.2 / §9.3 say so, within the token bucket
 * (xipsecd's --mip6-error-burst and --mip6-error-rate), and every answer sent or held back by the
 * bucket is counted by kind. The answer goes out like a Binding Acknowledgement, through worker 0's
 * outbound path, whose SPD protects it: a Binding Error to a mobile node away from home carries
 * the type 2 routing header that selects its signalling SA, a Parameter Problem goes to its home
 * address, through its tunnel. */
#include "config.h"

#include <syslog.h>

#include "dataplane/xipsecd/dp_mip6.h"

void dp_mip6_err_init(struct dp_ctx *ctx, struct dp_mip6 *m)
{
	mip6_err_bucket_init(&m->err_bucket, ctx->cfg.mip6_err_burst, ctx->cfg.mip6_err_rate, now_ms());
}

void dp_mip6_error(struct dp_ctx *ctx, const struct mq_msg *q, enum mip6_drop drop)
{
	struct dp_mip6 *m = M(ctx);
	struct mip6_pkt p;
	uint8_t buf[MIP6_ERR_MAX_LEN];
	enum mip6_drop again = mip6_parse(q->pkt, q->len, &p);
	enum mip6_err err;
	int n;

	/* parsed again: mip6_ha_input keeps no copy, and only a dropped packet pays for it */
	if (again == MIP6_DROP_NONE && drop != MIP6_DROP_NONE)
		again = drop;  /* the home agent's rules dropped a well-formed message */
	err = mip6_err_due(again, &p, p.has_hao && mip6_ha_lookup(m->ha, p.hoa));
	if (err == MIP6_ERR_NONE)
		return;
	if (!mip6_err_bucket_take(&m->err_bucket, now_ms())) {
		m->err_limited[err]++;
		return;
	}
	n = mip6_err_build(err, &p, q->pkt, q->len, buf, sizeof(buf));
	if (n <= 0)
		return;
	m->err_sent[err]++;
	dp_log(LOG_INFO, "home agent: %s answered (%s)", mip6_err_name(err), mip6_drop_name(again));
	dp_mip6_out_push(ctx, buf, (uint32_t)n);
}
