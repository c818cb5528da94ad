/* tests/ipsecctl/esp-drive.c: drives xipsec's real ESP/AH engine (libesp) over SAs that ipsecctl
 * loaded into two SADBs (gateway A's and gateway B's), with the runtime areas of those SADBs as the
 * engine's counters, so live.sh can check that `ipsecctl show --json` reports what the engine did.
 *   esp-drive SADB_A SADB_B SPI N
 * encrypts N+1 inner IPv4 UDP packets with A's outbound SA SPI, decrypts the first N with B's
 * inbound SA SPI, then offers B packet 1 again (a replay) and packet N+1 with one ciphertext byte
 * flipped (an ICV failure). Prints "out_bytes=... in_bytes=..." (plaintext sizes: the engine counts unprotected bytes in both directions). */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/engine/esp.h"
#include "sadb/sadb.h"

#define MAXN 256

static int find(struct sadb *db, uint32_t spi, uint8_t dir, struct sadb_sa *sa, uint32_t *slot)
{
	uint32_t cur = 0;

	while (sadb_sa_next(db, &cur, sa, slot) == 0)
		if (sa->spi == spi && sa->dir == dir)
			return 0;
	return -1;
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* An IPv4/UDP packet from the SA's selector source to its destination. */
static uint32_t inner(uint8_t *p, const struct sadb_sa *sa, unsigned i)
{
	uint32_t len = 20 + 8 + 32 + (i % 7) * 10;

	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 17;
	memcpy(p + 12, sa->sel.src.a.b, 4);
	memcpy(p + 16, sa->sel.dst.a.b, 4);
	p[15] |= 1; /* a host in the network, not the network address */
	p[19] |= 1;
	{
		uint16_t c = csum(p, 20);

		p[10] = (uint8_t)(c >> 8);
		p[11] = (uint8_t)c;
	}
	p[20] = 0x30; p[21] = 0x39;           /* sport 12345 */
	p[22] = 0x9c; p[23] = 0x40;           /* dport 40000 */
	p[24] = (uint8_t)((len - 20) >> 8);
	p[25] = (uint8_t)(len - 20);
	snprintf((char *)p + 28, 32, "xipsec packet %u", i);
	return len;
}

int main(int argc, char **argv)
{
	struct sadb *a, *b;
	struct sadb_sa sa_out, sa_in;
	uint32_t slot_out, slot_in;
	struct esp_sa *eo, *ei;
	static uint8_t bufs[MAXN + 1][4096];
	struct esp_pkt pk[MAXN + 1], *pp[MAXN + 1];
	unsigned n, k;
	uint64_t out_bytes = 0, in_bytes = 0;
	char msg[256];
	int rc;

	if (argc != 5 || (n = (unsigned)strtoul(argv[4], NULL, 0)) < 2 || n > MAXN) {
		fprintf(stderr, "usage: esp-drive SADB_A SADB_B SPI N (2..%d)\n", MAXN);
		return 2;
	}
	if (sadb_open(argv[1], SADB_RDWR, NULL, &a, msg, sizeof(msg)) ||
	    sadb_open(argv[2], SADB_RDWR, NULL, &b, msg, sizeof(msg))) {
		fprintf(stderr, "esp-drive: %s\n", msg);
		return 1;
	}
	if (find(a, (uint32_t)strtoul(argv[3], NULL, 0), SADB_DIR_OUT, &sa_out, &slot_out) ||
	    find(b, (uint32_t)strtoul(argv[3], NULL, 0), SADB_DIR_IN, &sa_in, &slot_in)) {
		fprintf(stderr, "esp-drive: SA %s not found out in A and in in B\n", argv[3]);
		return 1;
	}
	/* This tool plays the dataplane on a throwaway SADB: a manual counter-mode SA's numbers would be
	 * leased from a mark on disk by xipsecd (SADB_SAF_SEQ_PERSIST); here the whole space is. */
	if (sa_out.flags & SADB_SAF_SEQ_PERSIST)
		sadb_runtime(a, slot_out)->seq_lease = UINT32_MAX;
	if ((rc = esp_sa_create(&sa_out, sadb_runtime(a, slot_out), NULL, &eo)) ||
	    (rc = esp_sa_create(&sa_in, sadb_runtime(b, slot_in), NULL, &ei))) {
		fprintf(stderr, "esp-drive: esp_sa_create: %d\n", rc);
		return 1;
	}
	for (unsigned i = 0; i <= n; i++) {
		memset(&pk[i], 0, sizeof(pk[i]));
		pk[i].buf = bufs[i];
		pk[i].buf_len = sizeof(bufs[i]);
		pk[i].off = ESP_HEADROOM;
		pk[i].len = inner(bufs[i] + ESP_HEADROOM, &sa_out, i + 1);
		out_bytes += pk[i].len;
		if (i < n) /* the engine counts plaintext bytes in both directions */
			in_bytes += pk[i].len;
		pp[i] = &pk[i];
	}
	k = esp_burst(eo, pp, n + 1);
	if (k != n + 1) {
		fprintf(stderr, "esp-drive: outbound: %u of %u good (drop %u)\n", k, n + 1, pp[k]->drop);
		return 1;
	}
	/* Keep a copy of packet 1 for the replay; flip a ciphertext byte of packet N+1. */
	{
		static uint8_t again[4096];
		struct esp_pkt rp = pk[0], *rpp[1] = { &rp };
		uint8_t *last = pk[n].buf + pk[n].off;

		memcpy(again, pk[0].buf, sizeof(again));
		rp.buf = again;
		last[pk[n].len - 20] ^= 0x01;
		k = esp_burst(ei, pp, n);
		if (k != n) {
			fprintf(stderr, "esp-drive: inbound: %u of %u good (drop %u)\n", k, n, pp[k]->drop);
			return 1;
		}
		if (esp_burst(ei, rpp, 1) != 0 || rp.drop != SADB_DROP_REPLAY) {
			fprintf(stderr, "esp-drive: the replay was not dropped as a replay (%u)\n", rp.drop);
			return 1;
		}
		if (esp_burst(ei, &pp[n], 1) != 0 || pk[n].drop != SADB_DROP_ICV) {
			fprintf(stderr, "esp-drive: the corrupted packet was not an ICV failure (%u)\n",
				pk[n].drop);
			return 1;
		}
	}
	printf("out_bytes=%llu in_bytes=%llu\n", (unsigned long long)out_bytes,
	       (unsigned long long)in_bytes);
	esp_sa_destroy(eo);
	esp_sa_destroy(ei);
	sadb_close(a);
	sadb_close(b);
	return 0;
}
