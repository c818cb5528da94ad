/* ike/kernel_sadb.h: the kernel-ipsec backend of xipsec-iked that writes every SA and policy charon
 * negotiates into the xipsec SADB (libsadb) instead of the kernel, and raises lifetime expiry to
 * charon from the SADB's runtime counters. */
#ifndef XIPSEC_IKE_KERNEL_SADB_H
#define XIPSEC_IKE_KERNEL_SADB_H

#include <attributes/attribute_provider.h>
#include <kernel/kernel_ipsec.h>

#include "sadb/sadb.h"

/* Where the backend's constructor finds its SADB: set once before charon->initialize(). The backend
 * takes ownership of db (closes it on destroy). */
void kernel_sadb_set_db(struct sadb *db);

/* Listen for the dataplane's acquires on the socket of the SADB at sadb_path (sadb/sadb_acquire.h):
 * set before charon->initialize(); without it the backend raises no acquires (the unit tests). */
void kernel_sadb_set_acquire(const char *sadb_path);

/* Soft expiry on sequence space: an outbound SA is rekeyed once the dataplane reserved sequence
 * number kernel_sadb_seq_soft_limit(esn, seq) or above (RFC 4303 section 3.3.3; the ESP engine's hard
 * stop is the wrap). seq 0 keeps the defaults; set before charon->initialize(). */
void kernel_sadb_set_seq_soft(uint64_t seq);
/* The threshold for an SA: override if not 0, else 2^32 - 2^24 (2^64 - 2^56 with ESN). */
uint64_t kernel_sadb_seq_soft_limit(bool esn, uint64_t override);
/* Parse a threshold (decimal, at least 1; the XIPSEC_SEQ_SOFT test knob). 0 or -EINVAL. */
int kernel_sadb_parse_seq_soft(const char *s, uint64_t *out);
/* An SA's age in ms on charon's monotonic clock; 0 when added is after now (an SA installed while the
 * expiry check waited for the backend's lock). */
uint64_t kernel_sadb_age_ms(const timeval_t *now, const timeval_t *added);

/* Delete what an earlier xipsec-iked on db left behind: SAs and policies it negotiated (non-zero IKE
 * id) and the SPIs it reserved (LARVAL SAs: only xipsec-iked makes them, for charon's get_spi) and
 * never completed. Manual entries stay. Counts go to the pointers (each may be NULL). The caller
 * must be the only xipsec-iked on db (iked.c holds a lock on the SADB file for that). */
void kernel_sadb_remove_orphans(struct sadb *db, unsigned *n_sa, unsigned *n_pol, unsigned *n_larval);

/* kernel_ipsec_constructor_t for PLUGIN_CALLBACK(kernel_ipsec_register, ...). */
kernel_ipsec_t *kernel_sadb_create(void);

/* The home agent's check on the home addresses swanctl.conf's pools hand out to mobile nodes through
 * the IKEv2 configuration payload (RFC 4877 4.3; kernel_sadb_pool.c): an attribute provider that
 * create adds to charon->attributes and destroy removes. Create it after libcharon_init() and before
 * charon->initialize(), so that it comes before the vici plugin's provider, and destroy it before
 * libcharon_deinit(). db is borrowed, read only, and must outlive it. The home link's probe socket is
 * opened here, while the daemon still holds CAP_NET_RAW; without it (logged) no pool address passes
 * the probe. One at a time per process. */
typedef struct kernel_sadb_pool_t kernel_sadb_pool_t;
struct kernel_sadb_pool_t {
	attribute_provider_t provider;  /* first: the attribute manager hands us this pointer */
	void (*destroy)(kernel_sadb_pool_t *this);
};
kernel_sadb_pool_t *kernel_sadb_pool_create(struct sadb *db);

/* Translation helpers, exposed for the unit tests. Return 0 or -EINVAL (unsupported transform). */
int kernel_sadb_map_enc(uint16_t swan_alg, chunk_t key, struct sadb_sa *sa);
int kernel_sadb_map_auth(uint16_t swan_alg, chunk_t key, struct sadb_sa *sa);
int kernel_sadb_host2addr(host_t *host, struct sadb_addr *out);
int kernel_sadb_ts2sel(traffic_selector_t *src, traffic_selector_t *dst, struct sadb_selector *sel);

/* Counters of the backend for logs and benchmarks. */
struct kernel_sadb_stats {
	uint64_t sa_added, sa_deleted, sa_updated, spi_allocated;
	uint64_t pol_added, pol_deleted;
	uint64_t soft_expired, hard_expired;
	uint64_t seq_soft_expired;  /* soft expiries raised by the sequence space (among soft_expired) */
	uint64_t acquires;          /* acquires from the dataplane handed to charon */
};
void kernel_sadb_get_stats(struct kernel_sadb_stats *out);

#endif
