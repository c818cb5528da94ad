/* dataplane/engine/esp.h: the ESP/AH engine (libesp), the code that turns a plaintext IP packet into an ESP or
 * AH packet and back for one SA. No I/O, no allocation on the packet path, no global state besides
 * per-thread crypto managers. Used by the AF_XDP workers, the benchmarks and the tests.
 *
 * Standards: RFC 4303 (ESP), RFC 4302 (AH), RFC 3948 (ESP-in-UDP), RFC 4106 (GCM), RFC 4543 (GMAC),
 * RFC 7634 (ChaCha20-Poly1305), RFC 3602/3686 (AES-CBC/CTR), RFC 2404/2403/4868 (HMAC), RFC 2410
 * (NULL), RFC 6040 (ECN), RFC 6479 (replay window), RFC 8221 (legacy algorithms).
 *
 * Single DES (SADB_ENC_DES_CBC) is not offered at all: RFC 8221 says MUST NOT, and no peer we must
 * interoperate with needs it (the HP-UX comparison uses 3DES). esp_sa_create refuses it with
 * -ENOTSUP. 3DES-CBC and HMAC-MD5-96 work only with SADB_SAF_LEGACY_OK.
 *
 * Packets are L3: pkt->buf + pkt->off is the first byte of an IP header (IPv4 or IPv6).
 *  - Outbound tunnel: in = the inner IP packet; out = outer IP [+ UDP for NAT-T] + ESP/AH + inner.
 *  - Outbound transport: in = an IP packet; ESP/AH is inserted after the IPv4 header (options stay
 *    in it) or after the IPv6 hop-by-hop, routing and fragment headers (and a destination options
 *    header that precedes a routing header), RFC 4303 §3.1.1 / RFC 4302 §3.1.1.
 *  - Inbound: in = the outer IP packet (with its UDP header when the SA has NAT-T ports); out = the
 *    inner IP packet (tunnel) or the IP packet with ESP/AH removed (transport).
 *  - Received IPv4/IPv6 fragments are dropped (SADB_DROP_UNSUPPORTED): reassembly is the caller's.
 *  - Transport mode with NAT-T: the inner TCP/UDP checksum is recomputed on decapsulation (RFC 3948
 *    §3.1.2), since a NAT changed the addresses it covers.
 * The packet grows into the buffer's headroom (at most ESP_HEADROOM bytes) and, for ESP, its tailroom
 * (at most ESP_TAILROOM bytes plus TFC padding); off and len are updated in place.
 *
 * Threading: an esp_sa is used by one thread at a time (the worker that owns the SA direction,
 * doc/architecture.md rule 5). Several esp_sa objects of one outbound SA (one per worker) may share one
 * sadb_runtime: sequence numbers are reserved from it in blocks with one atomic step, so they never
 * collide. With esp_sa_opts.seq_share > 1 each burst reserves what it needs, in steps of at most
 * ESP_SEQ_SHARED_SPAN / seq_share numbers, and never uses a number reserved for an earlier burst
 * (the rest of a step is abandoned: gaps are legal, RFC 4303 §3.3.3). So the workers take one
 * contended atomic step per burst rather than per packet, and a number is always sent within the
 * burst that reserved it: the disorder the receiver sees is what the workers send while one burst is
 * on its way, as with numbers taken one at a time, plus less than ESP_SEQ_SHARED_SPAN. Inbound
 * objects share the window under the SA's lock (esp_sa_opts.replay_lock).
 *
 * Errors: functions that can fail return 0 or a negative errno; per-packet failures are reported in
 * esp_pkt.drop as an enum sadb_drop (sadb/sadb_drops.h) and counted in the runtime's drops[].
 */
#ifndef XIPSEC_ESP_H
#define XIPSEC_ESP_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "sadb/sadb.h"

#define ESP_BURST_MAX  64   /* most packets one burst call takes */
#define ESP_HEADROOM   128  /* bytes before the packet an outbound call may need (IPv6 + UDP + ESP
                             * + 16-byte IV, or IPv6 + AH with a 32-byte ICV, with margin) */
#define ESP_TAILROOM   64   /* bytes after the packet an outbound ESP call may need, besides TFC
                             * padding (cipher padding <= 15, pad length, next header, ICV <= 32) */
#define ESP_SEQ_BLOCK_DEFAULT 1024 /* outbound sequence numbers reserved per atomic step */
#define ESP_SEQ_SHARED_SPAN   32   /* shared outbound SA: numbers all objects together reserve ahead of
                                    * what they send, at most (RFC 4303 §3.4.3's smallest window) */

/* One packet in a burst. The caller fills buf, buf_len, off, len (and user); the engine moves off and
 * changes len, and sets drop (and mtu, seq). */
struct esp_pkt {
	uint8_t *buf;        /* the buffer (e.g. an AF_XDP frame of 4096 bytes) */
	uint32_t buf_len;    /* usable bytes in buf */
	uint32_t off;        /* offset of the IP header in buf */
	uint32_t len;        /* bytes of the IP packet */
	uint16_t drop;       /* out: enum sadb_drop; SADB_DROP_NONE for a good packet */
	uint8_t  family;     /* out: AF_INET/AF_INET6 of the packet after processing */
	uint8_t  pad0;
	uint32_t mtu;        /* out: with SADB_DROP_MTU, the largest packet (as given to the outbound
	                      * call, i.e. the inner packet) that would have fitted: the caller turns it
	                      * into ICMP "fragmentation needed" / ICMPv6 "packet too big" */
	uint64_t seq;        /* out: the full (64-bit) sequence number sent or received */
	uint64_t user;       /* the caller's (umem address, ...): never read nor written by the engine */
};

/* Crypto backends. */
enum esp_backend {
	ESP_BACKEND_AUTO = 0,  /* $XIPSEC_CRYPTO if set, else the fastest that supports the transform,
	                        * measured once per transform per process on a small burst (a few ms
	                        * at the first SA of that transform) */
	ESP_BACKEND_IPSECMB,   /* intel-ipsec-mb (only when built with it: HAVE_IPSEC_MB) */
	ESP_BACKEND_OPENSSL,   /* OpenSSL libcrypto EVP: every transform */
	ESP_BACKEND_SODIUM,    /* libsodium: ChaCha20-Poly1305 and AES-256-GCM (if the CPU has AES-NI) */
	ESP_BACKEND_NATIVE,    /* our own AES-GCM/GMAC 128/256 with AES-NI + PCLMULQDQ (x86-64) */
	ESP_BACKEND_MAX
};
#define ESP_ENV_CRYPTO "XIPSEC_CRYPTO"   /* "ipsecmb", "openssl", "sodium" or "native" */

/* Source of explicit IVs, for deterministic tests and cross-checks only. Writes len bytes to iv for
 * the packet with sequence number seq. Default (NULL): the 64-bit sequence number for the counter-
 * based transforms (GCM, GMAC, CTR, ChaCha20-Poly1305: RFC 4106 §3.1 etc., unique because sequence
 * numbers are never reused), and E_K(nonce built from the sequence number) for CBC, the method of
 * NIST SP 800-38A Appendix C, which makes CBC IVs unpredictable without a random call per packet. */
typedef void (*esp_iv_fn)(void *arg, uint64_t seq, uint8_t *iv, unsigned len);

struct esp_sa_opts {
	enum esp_backend backend; /* ESP_BACKEND_AUTO: $XIPSEC_CRYPTO, else the fastest */
	uint32_t seq_block;       /* outbound sequence numbers reserved at a time, 0 = default (with
	                           * seq_share > 1: ESP_SEQ_SHARED_SPAN / seq_share) */
	uint16_t seq_share;       /* outbound: objects of this SA that send in parallel on one runtime
	                           * area (one per worker); > 1 = per-burst reservation, see below */
	uint32_t mtu;             /* outer MTU when sa->mtu is 0 (the interface's); 0 = no MTU check */
	esp_iv_fn iv_fn;          /* tests only: NULL = the default IVs described above */
	void *iv_arg;
	uint16_t id_part, id_parts; /* outbound tunnel IPv4: this object is part id_part of id_parts
	                             * objects of one SA (one per worker) and takes IDs from its own
	                             * 1/id_parts of the space; 0 parts = the whole space */
	pthread_spinlock_t *replay_lock; /* inbound: several objects share the SA's runtime area (one
	                                  * per worker) and decrypt in parallel; this lock, the SA's,
	                                  * is held around each burst's replay-window update. NULL:
	                                  * one object, used by one thread at a time. */
	_Atomic uint32_t *lease_hint; /* SADB_SAF_SEQ_PERSIST: set to 1 when fewer than lease_low
	                               * numbers of the lease on disk are left (or none): outbound
	                               * below rt->seq_lease, inbound between a received number and
	                               * the window's ceiling; so the owner of the leases knows one is
	                               * due without polling every SA; NULL: nobody to tell */
	uint64_t lease_low;
	_Atomic uint64_t *window_want; /* inbound SADB_SAF_SEQ_PERSIST: raised to every authenticated
	                                * number the ceiling refused (SEQ_LEASE), so its owner can
	                                * move the ceiling past a peer that jumped ahead; NULL: none */
};

struct esp_sa;

/* Build a private, pre-keyed SA object from an SADB record: keys are expanded and crypto contexts
 * set up here, once. rt is the SA's runtime state: in production the SADB's shared runtime area
 * (sadb_runtime(db, slot)), in tests private zeroed memory; it must outlive the esp_sa.
 *  - Outbound: the first sequence number used is rt->seq_reserved + 1 (doc/architecture.md rule 1: a restart
 *    resumes above the recorded mark). To start elsewhere (tests), set rt->seq_reserved before.
 *  - Inbound: the replay window is rt->replay_top / rt->replay_bitmap (zero = nothing received).
 * The engine counts rt->packets, bytes (of the packets as given), drops[], first_used, last_used.
 * If rt->instance is not sa->instance, the runtime state belongs to an older SA: -ESTALE. An object
 * whose runtime area is later given to another SA instance (sadb_sa_delete + sadb_sa_add into the
 * same slot) stops: outbound it reserves no further numbers, and every burst it is given (both
 * directions) is dropped with SADB_DROP_STALE_SA, counted nowhere (the counters are the new SA's).
 *  - Outbound with SADB_SAF_SEQ_PERSIST: no number above rt->seq_lease is used (SADB_DROP_SEQ_LEASE
 *    until the dataplane has recorded a higher mark on disk).
 *  - Inbound with SADB_SAF_SEQ_PERSIST and a window: rt->seq_lease is the window's ceiling, no
 *    number above it is accepted (SADB_DROP_SEQ_LEASE after the ICV, until a higher ceiling is
 *    recorded on disk; the number goes to opts->window_want);
 *    esp_replay_seed starts a window above every number a lost window may have accepted.
 * Errors: -EINVAL (inconsistent record: lengths, mode, direction), -ENOTSUP (single DES, a legacy
 * transform without SADB_SAF_LEGACY_OK, or a transform the forced backend lacks), -ENOMEM. *out is
 * NULL on failure. */
int esp_sa_create(const struct sadb_sa *sa, struct sadb_runtime *rt, const struct esp_sa_opts *opts,
		  struct esp_sa **out);
/* Wipe the keys and free the object (NULL is fine). The runtime state is left as it is. */
void esp_sa_destroy(struct esp_sa *sa);
/* Outbound: the object's next burst leaves the rest of the block it reserved and reserves above
 * rt->seq_reserved. Any thread, no lock; call it after raising rt->seq_reserved above numbers the
 * object must not use (a cluster node taking over: numbers below its takeover block lie below what
 * the peer has seen, which it would drop as replays). */
void esp_sa_seq_abandon(struct esp_sa *sa);
/* Start the inbound window of rt at top with every number up to top marked as received, so that
 * nothing at or below top is ever accepted, however wide the window. Only while no object of the SA
 * updates the window (before any is given packets, or while its ceiling refuses every number). */
void esp_replay_seed(struct sadb_runtime *rt, uint64_t top);

/* Which backend an SA uses, and its name ("ipsecmb", "openssl", "sodium", "native"). */
enum esp_backend esp_sa_backend(const struct esp_sa *sa);
const char *esp_backend_name(enum esp_backend b);
/* Whether backend b (not AUTO) can run the transform (enc_alg, auth_alg, key length in bytes). */
bool esp_backend_supports(enum esp_backend b, uint16_t enc_alg, uint16_t auth_alg, unsigned enc_key_len);

/* Largest packet, as given to the outbound call, whose result fits in an outer MTU of outer_mtu for
 * an inner packet of family inner_family (AF_INET/AF_INET6; it matters only in transport mode, where
 * a header without options / extension headers is assumed; the value a dropped packet reports in
 * esp_pkt.mtu accounts for its own headers). */
uint32_t esp_sa_inner_mtu(const struct esp_sa *sa, uint32_t outer_mtu, uint8_t inner_family);

/* Burst contract (DPDK style): pkts[0..n), any n (the engine works in chunks of ESP_BURST_MAX).
 * Returns the number of good packets k; on return pkts[0..k) are the good packets in their original
 * order and pkts[k..n) the bad ones, each with its esp_pkt.drop reason set and counted in rt->drops.
 * A burst never aborts because of one bad packet. A bad packet's buffer contents are unspecified
 * (the caller drops it) but it stays within the buffer.
 *
 * Outbound: a packet that would exceed the MTU is dropped with SADB_DROP_MTU and esp_pkt.mtu set;
 * SADB_DROP_SEQ_OVERFLOW when the 32-bit (no ESN) or 64-bit space is used up (rekey: the SA is not
 * used further); SADB_DROP_NOMEM when the buffer lacks headroom/tailroom; SADB_DROP_SA_EXPIRED when
 * rt->expired has the hard bit (bit 1). Inbound: the replay window is checked before decryption and
 * updated only after the ICV verifies; any failure leaves the window untouched. */
unsigned esp_outbound_burst(struct esp_sa *sa, struct esp_pkt *pkts[], unsigned n);
unsigned esp_inbound_burst(struct esp_sa *sa, struct esp_pkt *pkts[], unsigned n);
/* Dispatch on the SA's direction (SADB_DIR_OUT: outbound, else inbound). ESP or AH by the SA's proto. */
unsigned esp_burst(struct esp_sa *sa, struct esp_pkt *pkts[], unsigned n);

/* What the dataplane needs to find the SA of a received packet. */
struct esp_outer {
	uint8_t  family;        /* AF_INET / AF_INET6 */
	uint8_t  proto;         /* SADB_PROTO_ESP or SADB_PROTO_AH */
	bool     udp_encap;     /* ESP-in-UDP (RFC 3948) */
	uint8_t  pad;
	uint32_t spi;           /* host byte order */
	uint32_t seq;           /* low 32 bits as sent */
	uint16_t sport, dport;  /* UDP ports (host order) when udp_encap */
	uint32_t l4_off;        /* offset of the ESP/AH header (after UDP when encapsulated) */
	struct sadb_addr src, dst;
};

/* Parse the outer headers of a received IP packet (walking IPv6 extension headers), for the SA
 * lookup (spi, proto, dst). Returns SADB_DROP_NONE, SADB_DROP_TRUNCATED (malformed/short),
 * SADB_DROP_BAD_ENCAP (UDP that is not ESP-in-UDP: a NAT keepalive 0xff or an IKE packet with a
 * zero non-ESP marker, which belong to the kernel), or SADB_DROP_UNSUPPORTED (not ESP/AH, IPv4
 * fragment). encap_port: the UDP destination port that means ESP-in-UDP (4500; 0 = 4500). */
enum sadb_drop esp_parse_outer(const uint8_t *pkt, uint32_t len, uint16_t encap_port,
			       struct esp_outer *out);

/* The selector fields of an IP packet (addresses, upper protocol after IPv6 extension headers, ports
 * or ICMP type/code or MH type): for the outbound SPD lookup and, after inbound decapsulation, the
 * check of the inner packet against the SA's selector with sadb_selector_match (a mismatch is
 * SADB_DROP_POLICY_MISMATCH). Non-first fragments get ports 0. Returns SADB_DROP_NONE or
 * SADB_DROP_TRUNCATED. A mobile node's packets are selected by its home address instead (RFC 3776
 * section 4): the dataplane's SPD (dataplane/xipsecd/dp_spd.c) puts libmip6's mip6_sel_addrs over
 * these addresses. */
enum sadb_drop esp_pkt_sel(const uint8_t *pkt, uint32_t len, struct sadb_pkt_sel *out);

#endif
