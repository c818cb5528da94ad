/* tests/fuzz/fuzz_in.c: libFuzzer targets for inbound packets through the engine: built three times,
 * as fuzz_esp_in (ESP SAs), fuzz_udp_in (ESP-in-UDP SAs, RFC 3948) and fuzz_ah_in (AH SAs), by
 * FZ_PROTO/FZ_NATT. Input: cfg byte (fuzz_common.h), a byte choosing the replay window's top (ESN
 * high-bit inference), a byte of tailroom, then the received IP packet. Every transform, tunnel and
 * transport, ESN, every backend; the packet sits in a buffer of exactly its size (plus the tailroom)
 * so any access outside it is caught. Without valid ICVs this reaches everything before the ICV
 * check (header walks, AH mutable-field zeroing, lengths, replay); fuzz_esp_plain gets past it. */
#include "tests/fuzz/fuzz_common.h"

#ifndef FZ_PROTO
#define FZ_PROTO SADB_PROTO_ESP
#endif
#ifndef FZ_NATT
#define FZ_NATT 0
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	struct fz_cfg f = fz_cfg(data[0], FZ_PROTO, FZ_NATT);
	struct fz_slot *sl = fz_get(&f, SADB_DIR_IN);
	fz_reset_window(sl->rt, data[1]);
	size_t tail = data[2] & 7;
	(void)fz_run(sl->sa, data + 3, size - 3, 0, tail, NULL, NULL);
	return 0;
}
