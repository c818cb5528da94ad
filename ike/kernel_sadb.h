/* ike/kernel_sadb.h: the kernel-ipsec backend of xipsec-iked that writes every SA and policy charon
 * negotiates into the xipsec SADB (libsadb) instead of the kernel, and raises lifetime expiry to
 * charon from the SADB's runtime counters. */
#ifndef XIPSEC_IKE_KERNEL_SADB_H
#define XIPSEC_IKE_KERNEL_SADB_H

#include <kernel/kernel_ipsec.h>

#include "sadb/sadb.h"

/* Where the backend's constructor finds its SADB: set once before charon->initialize(). The backend
 * takes ownership of db (closes it on destroy). */
void kernel_sadb_set_db(struct sadb *db);

/* kernel_ipsec_constructor_t for PLUGIN_CALLBACK(kernel_ipsec_register, ...). */
kernel_ipsec_t *kernel_sadb_create(void);

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
};
void kernel_sadb_get_stats(struct kernel_sadb_stats *out);

#endif
