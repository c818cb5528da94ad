/* tests/fuzz/fuzz_burst.c: libFuzzer target for the burst contract and batch crypto (the multi-buffer
 * ipsec-mb paths, the good/bad partition, the per-packet state carried across a batch). Several
 * inbound ESP packets (each protected by the fuzz_ref.h reference, so most pass the ICV) go through
 * one esp_burst call; then, from the same starting state, through one call each. Both ways must accept
 * the same packets with the same output bytes, give the same drop reasons (except that a packet
 * dropped as a replay one by one may be dropped for another reason in a burst), end with the same
 * replay window and counters, and the burst must return the good packets first, in original order.
 * Input: cfg byte (ESN ignored: a burst infers the ESN high half from the window as it was before the
 * burst, which legitimately differs from packet-by-packet inference), a flags byte (bit 0 NAT-T,
 * bit 1 fix lengths, bit 2 leave the ICVs alone), then records of 2-byte length + packet. */
#include "tests/fuzz/fuzz_ref.h"

#define FZ_BURST_MAX 24

struct one {
	uint8_t *buf;
	uint32_t len;
};

static void run_burst(struct esp_sa *sa, struct one *in, unsigned n, unsigned *drop, uint8_t **out, uint32_t *out_len)
{
	struct esp_pkt pk[FZ_BURST_MAX], *pp[FZ_BURST_MAX];
	uint8_t *bufs[FZ_BURST_MAX];
	for (unsigned i = 0; i < n; i++) {
		bufs[i] = malloc(in[i].len + 1);
		memcpy(bufs[i], in[i].buf, in[i].len);
		pk[i] = (struct esp_pkt){ .buf = bufs[i], .buf_len = in[i].len, .off = 0, .len = in[i].len, .user = i };
		pp[i] = &pk[i];
	}
	unsigned k = esp_burst(sa, pp, n);
	int seen[FZ_BURST_MAX] = { 0 };
	uint64_t last = 0;
	for (unsigned i = 0; i < n; i++) {
		struct esp_pkt *p = pp[i];
		if (p->user >= n || seen[p->user]++ || (i < k) != (p->drop == SADB_DROP_NONE) ||
		    (i < k && i > 0 && p->user <= last)) {
			fprintf(stderr, "fuzz: burst contract broken at position %u of %u (good %u, packet %llu, drop %u)\n",
				i, n, k, (unsigned long long)p->user, p->drop);
			abort();
		}
		if (i < k)
			last = p->user;
	}
	for (unsigned i = 0; i < n; i++) {
		drop[i] = pk[i].drop;
		out[i] = NULL;
		out_len[i] = 0;
		if (pk[i].drop == SADB_DROP_NONE) {
			volatile unsigned s = fz_touch(&pk[i]);
			(void)s;
			out[i] = malloc(pk[i].len + 1);
			memcpy(out[i], pk[i].buf + pk[i].off, pk[i].len);
			out_len[i] = pk[i].len;
		}
		free(bufs[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* FZ_BREAK=1: the runner's self-test: the burst's first good output gets one bit flipped, which
	 * the comparison must report. */
	static int brk = -1;
	if (brk < 0)
		brk = getenv("FZ_BREAK") && atoi(getenv("FZ_BREAK")) == 1;
	if (size < 4)
		return 0;
	struct fz_cfg f = fz_cfg(data[0] & ~32u, SADB_PROTO_ESP, data[1] & 1);
	const struct fz_xf *x = &fz_xforms[f.xf];
	struct fz_slot *sl = fz_get(&f, SADB_DIR_IN);
	struct sadb_sa s;
	fz_sa_record(&f, SADB_DIR_IN, &s);

	struct one in[FZ_BURST_MAX];
	unsigned n = 0;
	size_t pos = 2;
	while (pos + 2 <= size && n < FZ_BURST_MAX) {
		size_t l = (size_t)(data[pos] << 8 | data[pos + 1]) & 0x7ff;
		pos += 2;
		if (l > size - pos)
			l = size - pos;
		in[n].buf = malloc(l + 1);
		memcpy(in[n].buf, data + pos, l);
		in[n].len = (uint32_t)l;
		if (data[1] & 2)
			fz_fix_lengths(in[n].buf, l);
		if (!(data[1] & 4))
			(void)fz_protect_pkt(&s, x, f.natt, in[n].buf, l);
		pos += l;
		n++;
	}
	if (!n)
		return 0;

	unsigned d1[FZ_BURST_MAX], d2[FZ_BURST_MAX];
	uint8_t *o1[FZ_BURST_MAX], *o2[FZ_BURST_MAX];
	uint32_t l1[FZ_BURST_MAX], l2[FZ_BURST_MAX];
	struct sadb_runtime *rt = sl->rt;

	fz_reset_window(rt, 0);
	uint64_t pk0 = rt->packets, by0 = rt->bytes;
	run_burst(sl->sa, in, n, d1, o1, l1);
	for (unsigned i = 0; brk && i < n; i++)
		if (l1[i]) {
			o1[i][l1[i] - 1] ^= 1;
			break;
		}
	uint64_t top1 = rt->replay_top, pk1 = rt->packets - pk0, by1 = rt->bytes - by0;
	uint64_t *bm1 = malloc(sizeof(rt->replay_bitmap));
	memcpy(bm1, rt->replay_bitmap, sizeof(rt->replay_bitmap));

	fz_reset_window(rt, 0);
	pk0 = rt->packets;
	by0 = rt->bytes;
	for (unsigned i = 0; i < n; i++)
		run_burst(sl->sa, &in[i], 1, &d2[i], &o2[i], &l2[i]);
	uint64_t pk2 = rt->packets - pk0, by2 = rt->bytes - by0;

	int bad = top1 != rt->replay_top || pk1 != pk2 || by1 != by2 ||
		  memcmp(bm1, rt->replay_bitmap, sizeof(rt->replay_bitmap)) != 0;
	for (unsigned i = 0; i < n; i++) {
		/* A burst checks every packet against the window as it was before the burst (the RFC's
		 * check-before-decrypt), so a packet that one-by-one processing calls a replay may get
		 * further in a burst and be dropped for another reason (bad padding, ...): both drop. */
		int same = d1[i] == d2[i] ||
			   ((d2[i] == SADB_DROP_REPLAY || d2[i] == SADB_DROP_REPLAY_OLD) && d1[i] != SADB_DROP_NONE);
		if (!same || l1[i] != l2[i] || (l1[i] && memcmp(o1[i], o2[i], l1[i]) != 0)) {
			fprintf(stderr, "fuzz: packet %u of %u: burst drop %u (%u bytes out), alone drop %u (%u bytes out)\n",
				i, n, d1[i], l1[i], d2[i], l2[i]);
			fz_hexdump("packet", in[i].buf, in[i].len);
			bad = 1;
		}
	}
	if (bad) {
		fprintf(stderr, "fuzz: burst and one-by-one processing differ (xform %u tunnel %d natt %d backend %s): "
			"top %llu/%llu packets %llu/%llu bytes %llu/%llu\n", f.xf, f.tunnel, f.natt,
			esp_backend_name(esp_sa_backend(sl->sa)), (unsigned long long)top1,
			(unsigned long long)rt->replay_top, (unsigned long long)pk1, (unsigned long long)pk2,
			(unsigned long long)by1, (unsigned long long)by2);
		abort();
	}
	for (unsigned i = 0; i < n; i++) {
		free(o1[i]);
		free(o2[i]);
		free(in[i].buf);
	}
	free(bm1);
	return 0;
}
