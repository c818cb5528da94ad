/* tests/fuzz/fuzz_esp_plain.c: libFuzzer target that gets past the ICV. The input holds a received
 * ESP packet whose payload is in PLAINTEXT (inner headers, padding, pad length, next header); the
 * harness encrypts it and computes the ICV itself with OpenSSL (a reference written here, not the
 * engine's code), then hands it to the engine. So the fuzzer explores the decrypted-payload parsing
 * (padding check, next header, inner IPv4/IPv6 headers, TFC padding, transport reassembly) on every
 * transform and backend, and the target is also a differential test: when the harness produced a
 * correctly protected packet, the engine must not call its ICV bad.
 * Input: cfg byte (fuzz_common.h), a flags byte (bit 0: NAT-T SA, bit 1: fix the IP/UDP lengths to
 * the input's size), then the IP packet. The ESN high half is 0 (empty replay window). */
#include "tests/fuzz/fuzz_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* FZ_BREAK=1: the runner's self-test that this differential check can fail (the reference
	 * then gets one ICV byte wrong, which the engine must notice, and this harness report). */
	static int brk = -1;
	if (brk < 0)
		brk = getenv("FZ_BREAK") && atoi(getenv("FZ_BREAK")) == 1;
	if (size < 3 || size > 65535)
		return 0;
	struct fz_cfg f = fz_cfg(data[0], SADB_PROTO_ESP, data[1] & 1);
	const struct fz_xf *x = &fz_xforms[f.xf];
	struct fz_slot *sl = fz_get(&f, SADB_DIR_IN);
	fz_reset_window(sl->rt, 0);
	struct sadb_sa s;
	fz_sa_record(&f, SADB_DIR_IN, &s);

	size_t len = size - 2;
	uint8_t *pkt = malloc(len + 1);
	memcpy(pkt, data + 2, len);
	if (data[1] & 2)
		fz_fix_lengths(pkt, len);
	int applied = fz_protect_pkt(&s, x, f.natt, pkt, len);
	if (applied && brk) {
		uint32_t end = (pkt[0] >> 4) == 4 ? (uint32_t)(pkt[2] << 8 | pkt[3]) : 40u + (uint32_t)(pkt[4] << 8 | pkt[5]);
		pkt[end - 1] ^= 0x80; /* the last ICV byte */
	}
	unsigned drop = fz_run(sl->sa, pkt, len, 0, data[1] >> 5, NULL, NULL);
	if (applied && drop == SADB_DROP_ICV) {
		fprintf(stderr, "fuzz: the engine rejected the ICV of a packet the OpenSSL reference protected "
			"(xform %u, tunnel %d, esn %d, natt %d, backend %d)\n", f.xf, f.tunnel, f.esn, f.natt,
			(int)esp_sa_backend(sl->sa));
		fz_hexdump("packet", pkt, len);
		abort();
	}
	free(pkt);
	return 0;
}
