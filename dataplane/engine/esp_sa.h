/* dataplane/engine/esp_sa.h: the engine's SA object (struct esp_sa, made by esp_sa.c), its outbound
 * instance check and its counters: what every packet path reads. Internal to the engine (esp.h is
 * the API); the crypto backends see only the session embedded in it (crypto/esp_crypto.h). */
#ifndef XIPSEC_ESP_SA_H
#define XIPSEC_ESP_SA_H

#include <stdatomic.h>

#include "dataplane/engine/esp.h"
#include "dataplane/engine/crypto/esp_crypto.h"

_Static_assert(ESP_BURST_MAX <= ESP_CRYPTO_BURST_MAX, "a burst chunk is one backend call");
_Static_assert(SADB_ENC_KEY_MAX <= ESP_CRYPTO_ENC_KEY_MAX, "every SADB cipher key fits a session");
_Static_assert(SADB_AUTH_KEY_MAX <= ESP_CRYPTO_AUTH_KEY_MAX, "every SADB HMAC key fits a session");

struct esp_sa {
	/* Hot fields first: read for every packet. */
	struct sadb_runtime *rt;
	const struct esp_crypto_ops *ops;
	uint64_t seq_next;       /* outbound: next number to use */
	uint64_t seq_limit;      /* outbound: last number reserved in rt */
	uint64_t seq_max;        /* 2^32 - 1 or 2^64 - 1 */
	uint32_t spi;            /* host order */
	uint32_t spi_be;
	uint32_t window;         /* replay window, 0 = off */
	uint32_t mtu;            /* outer MTU, 0 = no check */
	uint32_t flags;          /* SADB_SAF_* */
	uint8_t  proto, mode, dir;
	/* The transform as the protocol code reads it (the backend has its own copy in cs). */
	uint8_t  kind;           /* enum esp_kind */
	uint8_t  cipher, hmac;   /* enum esp_cipher / esp_hmac */
	uint8_t  icv_len;        /* bytes on the wire */
	uint8_t  iv_len;         /* explicit IV on the wire */
	uint8_t  align;          /* ESP payload+trailer alignment (cipher block or 4) */
	uint8_t  blk;            /* cipher block for CBC (16 AES, 8 3DES), else 1 */
	uint8_t  ttl, dscp;
	uint16_t tfc_pad;
	uint16_t encap_sport, encap_dport;
	uint32_t ip_id;          /* outbound tunnel IPv4: next identification, in [id_lo, id_end) */
	uint32_t id_lo, id_end;  /* this object's share of the 16-bit ID space (esp_sa_opts.id_part) */
	uint64_t instance;       /* sadb_sa.instance: the runtime area belongs to it while rt->instance
	                          * says so; esp_seq_refill and each burst check */
	uint8_t  seq_why;        /* outbound: why esp_seq_take failed (SEQ_OVERFLOW, STALE_SA, SEQ_LEASE) */
	uint8_t  ah_hdr_len;     /* AH: header bytes incl. IV and ICV, padded for IPv4 (4) */
	uint8_t  ah_hdr_len6;    /* AH: same, padded for IPv6 (8) */
	uint8_t  salt[4];
	bool     seq_done;       /* outbound: the sequence space is used up */
	uint32_t seq_block;
	uint32_t seq_want;       /* outbound, shared (seq_share > 1): numbers the rest of the burst needs */
	bool     seq_shared;
	enum esp_backend backend;
	esp_iv_fn iv_fn;
	void *iv_arg;
	pthread_spinlock_t *replay_lock; /* inbound, shared runtime: see esp_sa_opts */
	_Atomic uint32_t *lease_hint;    /* persisted numbers or window ceiling: see esp_sa_opts */
	_Atomic uint64_t *window_want;   /* inbound, window ceiling: see esp_sa_opts */
	uint64_t lease_low;
	struct sadb_addr src, dst;
	uint8_t  hdr4[20];       /* outbound tunnel: outer IPv4 header template (TOS, length, id, DF,
	                          * checksum filled per packet) */
	uint32_t hdr4_sum;       /* one's complement sum of the template's constant words */
	/* Outbound tunnel, fixed at setup (esp_outer_tos/esp_outer_df): outer TOS = (inner TOS &
	 * tos_keep) | tos_set; outer DF (0x40 of byte 6) = (inner DF & df_keep) | df_set. */
	uint8_t  tos_keep, tos_set, df_keep, df_set;
	uint16_t enc_alg, auth_alg;
	/* The backend's session: the transform, the keys and the backend's keyed state. */
	struct esp_crypto_sa cs;
	/* outbound: set by esp_sa_seq_abandon (any thread), cleared by the next burst, which drops the
	 * rest of the block (esp_seq_burst) */
	_Atomic bool seq_abandon;
};

/* The lease on disk (outbound numbers, or an inbound window's ceiling) runs low: tell its owner (a
 * load first, so that the line is written once per lease, not once per packet or refill while the
 * extension is on its way). */
static inline void esp_lease_tell(const struct esp_sa *sa)
{
	if (sa->lease_hint && !atomic_load_explicit(sa->lease_hint, memory_order_relaxed))
		atomic_store_explicit(sa->lease_hint, 1, memory_order_release);
}

/* esp_sa_inner_mtu for a packet whose transport-mode headers kept in front are prefix bytes (esp_mtu.c). */
uint32_t esp_inner_mtu_hdr(const struct esp_sa *sa, uint32_t outer_mtu, uint8_t inner_family,
			   uint32_t prefix);
/* Whether the runtime area still belongs to this object's SA instance. */
static inline bool esp_rt_ours(const struct esp_sa *sa)
{
	return atomic_load_explicit((_Atomic uint64_t *)&sa->rt->instance, memory_order_acquire) ==
	       sa->instance;
}

/* Counters: relaxed atomics, the owner is the only writer (doc/architecture.md rule 5). */
static inline void esp_count_drop(struct sadb_runtime *rt, unsigned reason)
{
	if (reason < SADB_DROP_MAX)
		atomic_fetch_add_explicit((_Atomic uint64_t *)&rt->drops[reason], 1, memory_order_relaxed);
}

#endif
