/* dataplane/xipsecd/dp_in.c: the inbound stage: what arrives on the outside interface, and crosses
 * the IPsec boundary inbound. A frame gets here from the RX loop (outside port). An outer fragment
 * of ESP, AH or ESP-in-UDP for us goes into the reassembly table shared by the workers (RFC 4303
 * section 3.4.1: reassembly before ESP processing) and comes back here whole. ESP/AH of a known,
 * usable SA leaves into the SA's burst for the engine (dp_group_add; a datagram larger than a frame
 * runs through the engine here, alone, and leaves to dp_fwd_large); plaintext meets the forward and
 * inbound policies (dp_spd_in, doc/architecture.md rule 6) and leaves to dp_fwd where one bypasses
 * it. Anything else is a counted drop. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataplane/xipsecd/dp_path.h"
#include "dataplane/xipsecd/dp_spd.h"

/* Whether the SA found by SPI takes the packet o describes: SADB_DROP_NONE, or why not. */
static unsigned sa_takes(const struct dp_sa *sa, const struct esp_outer *o)
{
	if (sa->unusable)
		return SADB_DROP_UNSUPPORTED;
	if (o->udp_encap != (sa->sa.encap_dport != 0))
		return SADB_DROP_BAD_ENCAP;
	return SADB_DROP_NONE;
}

/* A reassembled datagram too big for a frame (it is in w->rbuf): the engine runs on that buffer,
 * alone, under the SA's lock like a burst of one. */
static void inbound_large(struct dp_worker *w, uint32_t len)
{
	struct esp_outer o;
	struct esp_pkt p = { .buf = w->rbuf, .buf_len = DP_REASM_OUT_MAX, .off = 0, .len = len };
	struct esp_pkt *pp = &p;
	struct dp_sa *sa;
	unsigned k, r = esp_parse_outer(w->rbuf, len, DP_NATT_PORT, &o);

	if (r != SADB_DROP_NONE) {
		dp_drop_count(w, r, 1);
		return;
	}
	sa = dp_sa_find_in(w->ctx, o.spi, o.proto, &o.dst);
	if (!sa) {
		dp_drop_count(w, SADB_DROP_BAD_SPI, 1);
		return;
	}
	r = sa_takes(sa, &o);
	if (r != SADB_DROP_NONE) {
		dp_drop_sa_count(w, sa, r);
		return;
	}
	k = esp_inbound_burst(sa->e[w->id], &pp, 1);
	if (!k) {
		/* counted in the SA by the engine */
		DP_STAT(w, sa_drops[p.drop], 1);
		return;
	}
	DP_STAT(w, unprotect, 1);
	r = dp_spd_in_check(w->ctx->db, &sa->sa, p.buf + p.off, p.len);
	if (r != SADB_DROP_NONE) {
		dp_drop_sa_count(w, sa, r);
		return;
	}
	w->decap_sa = sa; /* an ICMP error about it goes back only through this SA's pair (dp_pkt.c) */
	dp_fwd_large(w, p.buf + p.off, p.len);
	w->decap_sa = NULL;
}

/* An outer fragment of ESP, AH or ESP-in-UDP: into the shared table; a datagram it completes goes on
 * as if received whole, in this fragment's frame when it fits. */
static void reassemble(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len)
{
	struct dp_ctx *ctx = w->ctx;
	uint64_t base = addr & ~(uint64_t)(DP_FRAME_SIZE - 1);
	struct dp_reasm_res res;

	pthread_spin_lock(&ctx->reasm_lock);
	res = dp_reasm_add(ctx->reasm, dp_mem(w, addr), len, dp_now_ns(), w->rbuf, DP_REASM_OUT_MAX);
	pthread_spin_unlock(&ctx->reasm_lock);
	dp_drop_count(w, SADB_DROP_FRAG_TIMEOUT, res.n_expired);
	switch (res.verdict) {
	case DP_REASM_HELD:
		dp_frame_free(w, base);
		return;
	case DP_REASM_DROP:
		dp_drop_count(w, res.reason, res.n_dropped);
		dp_drop(w, base, res.reason);
		return;
	default:
		break;
	}
	DP_STAT(w, reasm_packets, 1);
	DP_STAT(w, reasm_frags, res.n_frags);
	if (res.len > DP_FRAME_SIZE - FRESH_L3) {
		dp_frame_free(w, base);
		inbound_large(w, res.len);
		return;
	}
	memcpy(dp_mem(w, base + FRESH_L3), w->rbuf, res.len);
	dp_in(w, g, base + FRESH_L3, res.len, true);
}

void dp_in(struct dp_worker *w, struct dp_group *g, uint64_t addr, uint32_t len, bool whole)
{
	uint8_t *l3 = dp_mem(w, addr);
	struct esp_outer o;
	struct dp_sa *sa;
	unsigned r;
	uint8_t fproto;

	/* Outer fragments for us. Transit fragments of other protocols are forwarded as they are,
	 * like any plaintext. */
	if (dp_frag_is_fragment(l3, len, &fproto) &&
	    (fproto == IPPROTO_ESP || fproto == IPPROTO_AH ||
	     (fproto == IPPROTO_UDP && dp_xdp_is_local(w->ctx, dp_l3_family(l3),
						       dp_l3_dst(l3, dp_l3_family(l3)))))) {
		if (whole) {
			dp_drop(w, addr, SADB_DROP_FRAG_BAD);
			return;
		}
		reassemble(w, g, addr, len);
		return;
	}
	/* DSMIPv6 signalling (RFC 5555): the IPv6 packet inside goes on, its outer header with it */
	struct dp_v4_outer v4;
	uint32_t v4_off;
	bool in_v4 = dp_v4_outer_strip(w, l3, len, &v4, &v4_off, &len);

	if (in_v4) {
		addr += v4_off;
		l3 += v4_off;
	}
	r = esp_parse_outer(l3, len, DP_NATT_PORT, &o);
	if (r == SADB_DROP_NONE) {
		sa = dp_sa_find_in(w->ctx, o.spi, o.proto, &o.dst);
		if (!sa) {
			dp_drop(w, addr, SADB_DROP_BAD_SPI);
			return;
		}
		r = sa_takes(sa, &o);
		if (r == SADB_DROP_NONE && in_v4 && !(sa->sa.flags & SADB_SAF_MOBILE))
			r = SADB_DROP_BAD_ENCAP;  /* only a mobile node's signalling comes in IPv4 */
		if (r != SADB_DROP_NONE) {
			dp_drop_sa(w, sa, addr, r);
			return;
		}
		w->v4_next = in_v4 ? &v4 : NULL;
		dp_group_add(w, g, sa, false, addr, len, 0);
		w->v4_next = NULL;
		return;
	}
	if (in_v4) {
		dp_drop(w, addr, r == SADB_DROP_TRUNCATED ? r : SADB_DROP_BAD_ENCAP);
		return;
	}
	if (r == SADB_DROP_TRUNCATED) {
		dp_drop(w, addr, r);
		return;
	}
	/* plaintext from the outside (UNSUPPORTED: not ESP/AH; BAD_ENCAP: UDP 4500 not ESP) */
	r = dp_spd_in(w->ctx->db, l3, len);
	if (r != SADB_DROP_NONE) {
		dp_drop(w, addr, r);
		return;
	}
	DP_STAT(w, bypass, 1);
	dp_fwd(w, addr, len, FWD_DEC_TTL | FWD_SPD_OUT);
}

int dp_in_init(struct dp_ctx *ctx)
{
	struct dp_reasm_cfg rc = {
		.max_dgrams = DP_REASM_DGRAMS,
		.max_bytes = DP_REASM_BYTES,
		.max_frags = DP_REASM_FRAGS,
		.timeout_ns = DP_REASM_NS,
	};
	int err;

	ctx->local_addrs_fd = -1;
	err = pthread_spin_init(&ctx->reasm_lock, PTHREAD_PROCESS_PRIVATE);
	if (err)
		return -err;
	err = dp_reasm_create(&rc, &ctx->reasm);
	if (err)
		return err;
	for (unsigned i = 0; i < ctx->n_workers; i++) {
		ctx->w[i].rbuf = malloc(DP_REASM_OUT_MAX);
		if (!ctx->w[i].rbuf)
			return -ENOMEM;
	}
	return 0;
}

void dp_in_fini(struct dp_ctx *ctx)
{
	if (!ctx->reasm)
		return;
	for (unsigned i = 0; ctx->w && i < ctx->n_workers; i++) {
		free(ctx->w[i].rbuf);
		ctx->w[i].rbuf = NULL;
	}
	dp_reasm_destroy(ctx->reasm);
	ctx->reasm = NULL;
	pthread_spin_destroy(&ctx->reasm_lock);
	if (ctx->local_addrs_fd >= 0)
		close(ctx->local_addrs_fd);
	ctx->local_addrs_fd = -1;
}
