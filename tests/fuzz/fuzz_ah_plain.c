/* tests/fuzz/fuzz_ah_plain.c: libFuzzer target that gets AH packets past the ICV. The harness computes
 * the ICV of the received packet itself (RFC 4302 §3.3.3.1 and Appendix A, written here from the RFC:
 * mutable IPv4 header fields and options, IPv6 traffic class/flow label/hop limit and options with the
 * "may change" bit counted as zeros; HMAC or AES-GMAC per RFC 4543 §5 on OpenSSL), so the fuzzer
 * explores what the engine does after a valid ICV (next header, inner headers, transport
 * reassembly), and it is a differential test of the mutable-field rules: when the harness could
 * protect the packet, the engine must not call its ICV bad.
 * Input: cfg byte (fuzz_common.h: AH transforms), a flags byte (bit 1: fix the IP length to the
 * input's size), then the IP packet. Packets with a source route still to run (IPv4 LSRR/SSRR, an
 * IPv6 routing header with segments left) are left unprotected: their ICV input depends on the final
 * destination, which the RFC leaves to the sender to predict. */
#include "tests/fuzz/fuzz_ref.h"

/* RFC 4302 Appendix A.1: IPv4 options included in the ICV calculation (copied/class/number bytes). */
static int opt_immutable(uint8_t t)
{
	return t == 0 || t == 1 || t == 130 || t == 133 || t == 134 || t == 148 || t == 149;
}

/* Zero the mutable fields of the headers before AH (z[0..hlen)); 0 if the harness does not handle
 * this packet. */
static int zero_mutable(uint8_t *z, uint32_t hlen)
{
	if ((z[0] >> 4) == 4) {
		uint32_t ihl = (z[0] & 15u) * 4u;
		if (ihl < 20 || ihl > hlen)
			return 0;
		z[1] = 0;                 /* TOS */
		z[6] = z[7] = 0;          /* flags, fragment offset */
		z[8] = 0;                 /* TTL */
		z[10] = z[11] = 0;        /* header checksum */
		for (uint32_t o = 20; o < ihl;) {
			uint8_t t = z[o];
			if (t == 0)
				break;
			if (t == 1) {
				o++;
				continue;
			}
			if (o + 1 >= ihl || z[o + 1] < 2 || o + z[o + 1] > ihl)
				return 0;
			uint8_t olen = z[o + 1];
			if (t == 131 || t == 137)
				return 0; /* source routes: not handled here */
			if (!opt_immutable(t))
				memset(z + o, 0, olen);
			o += olen;
		}
		return 1;
	}
	if (hlen < 40)
		return 0;
	z[0] = 0x60;
	z[1] = z[2] = z[3] = 0;           /* traffic class, flow label */
	z[7] = 0;                         /* hop limit */
	uint8_t nh = z[6];
	uint32_t o = 40;
	while (o < hlen) {
		if (o + 8 > hlen)
			return 0;
		uint32_t hl = nh == 44 ? 8 : (z[o + 1] + 1u) * 8u;
		if (o + hl > hlen)
			return 0;
		if (nh == 0 || nh == 60) {
			/* Options (RFC 8200 §4.2): the third-highest bit of the type says "may change". */
			for (uint32_t t = o + 2; t < o + hl;) {
				if (z[t] == 0) {
					t++;
					continue;
				}
				if (t + 2 > o + hl || t + 2 + z[t + 1] > o + hl)
					return 0;
				if (z[t] & 0x20)
					memset(z + t + 2, 0, z[t + 1]);
				t += 2u + z[t + 1];
			}
		} else if (nh == 43) {
			if (z[o + 3] != 0)
				return 0; /* segments left: not handled here */
		} else if (nh != 44) {
			return 0;
		}
		nh = z[o];
		o += hl;
	}
	return o == hlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* FZ_BREAK=1: the runner's self-test: one ICV bit is wrong, the engine must say so and this
	 * harness report it. */
	static int brk = -1;
	if (brk < 0)
		brk = getenv("FZ_BREAK") && atoi(getenv("FZ_BREAK")) == 1;
	if (size < 3 || size > 65535)
		return 0;
	struct fz_cfg f = fz_cfg(data[0], SADB_PROTO_AH, 0);
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

	int applied = 0;
	struct esp_outer o;
	if (esp_parse_outer(pkt, (uint32_t)len, 4500, &o) == SADB_DROP_NONE && o.proto == SADB_PROTO_AH) {
		uint32_t end = (pkt[0] >> 4) == 4 ? (uint32_t)(pkt[2] << 8 | pkt[3]) : 40u + (uint32_t)(pkt[4] << 8 | pkt[5]);
		uint32_t ah = o.l4_off;
		/* AH's length: 12 + IV + ICV, padded to 4 (IPv4) or 8 (IPv6) bytes (RFC 4302 §2.2). */
		uint32_t ahl = 12u + x->iv_len + x->icv_len;
		ahl = (pkt[0] >> 4) == 6 ? (ahl + 7) & ~7u : (ahl + 3) & ~3u;
		if (end <= len && ah + ahl <= end && (pkt[ah + 1] + 2u) * 4u == ahl) {
			uint8_t *icv = pkt + ah + 12 + x->iv_len;
			memset(icv, 0, x->icv_len);
			uint8_t *z = malloc(end + 4);
			memcpy(z, pkt, end);
			memset(z + end, 0, 4); /* ESN high half: 0 with an empty window */
			size_t zlen = end + ((s.flags & SADB_SAF_ESN) ? 4u : 0u);
			if (zero_mutable(z, ah)) {
				if (x->auth == SADB_AUTH_AES_128_GMAC) {
					uint8_t nonce[12], tag[16];
					memcpy(nonce, s.auth_key + 16, 4); /* salt: the last 4 bytes of the key */
					memcpy(nonce + 4, pkt + ah + 12, 8);
					ref_aead(EVP_aes_128_gcm(), s.auth_key, nonce, z, zlen, NULL, 0, tag);
					memcpy(icv, tag, 16);
				} else {
					uint8_t md[EVP_MAX_MD_SIZE];
					unsigned mdlen = 0;
					must(HMAC(ref_md(x->auth), s.auth_key, s.auth_key_len, z, zlen, md, &mdlen) != NULL);
					memcpy(icv, md, x->icv_len);
				}
				applied = 1;
				if (brk)
					icv[0] ^= 0x04;
			}
			free(z);
		}
	}
	unsigned drop = fz_run(sl->sa, pkt, len, 0, 4, NULL, NULL);
	if (applied && drop == SADB_DROP_ICV) {
		fprintf(stderr, "fuzz: the engine rejected the ICV of an AH packet the reference signed "
			"(xform %u, tunnel %d, esn %d, backend %s)\n", f.xf, f.tunnel, f.esn,
			esp_backend_name(esp_sa_backend(sl->sa)));
		fz_hexdump("packet", pkt, len);
		abort();
	}
	free(pkt);
	return 0;
}
