/* ike/kernel_sadb.c: xipsec-iked's kernel-ipsec backend, which writes every SA and policy charon
 * negotiates into the xipsec SADB (struct sadb_sa / sadb_policy through libsadb); ike/kernel_sadb*.c
 * hold every translation between charon's view of IPsec state and the SADB, as OpenBSD iked's pfkey.c
 * holds all of iked's SADB I/O. This file owns the backend object (construction, teardown, the methods
 * that need no SADB state) and the removal of what an earlier daemon left behind. The SAs and their
 * expiry are in kernel_sadb_sa.c, the policies in kernel_sadb_policy.c, the dataplane's acquires in
 * kernel_sadb_acquire.c, the mobile nodes' rule in kernel_sadb_mip6.c (below kernel_sadb_sa.c, which
 * calls it) and below it kernel_sadb_pool.c (home addresses from swanctl.conf's pools, an attribute
 * provider the daemon creates before the backend); they call down into kernel_sadb_xlate.c (the translations, the settings and counters),
 * never up or sideways, nor into this file's functions; kernel_sadb_int.h is what they share. */
#include "ike/swan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ike/kernel_sadb_int.h"

static struct sadb *ks_pending_db;

void kernel_sadb_set_db(struct sadb *db)
{
	ks_pending_db = db;
}

METHOD(kernel_ipsec_t, get_features, kernel_feature_t, private_kernel_sadb_t *this)
{
	/* TFC padding is implemented by the ESP engine (sadb_sa.tfc_pad). ESN and anti-replay windows up
	 * to SADB_REPLAY_MAX packets are taken as charon configures them and checked in add_sa
	 * (kernel_sadb_sa.c). The
	 * kernel_feature_t set has no bit for either. */
	return KERNEL_ESP_V3_TFC;
}

METHOD(kernel_ipsec_t, get_cpi, status_t, private_kernel_sadb_t *this, host_t *src, host_t *dst,
       uint16_t *cpi)
{
	DBG1(DBG_KNL, "xipsec: IPComp is not supported by the xipsec dataplane (no CPI allocated)");
	return NOT_SUPPORTED;
}

METHOD(kernel_ipsec_t, bypass_socket, bool, private_kernel_sadb_t *this, int fd, int family)
{
	/* IKE never meets our ESP path: the dataplane's XDP program hands UDP 500 and non-ESP 4500 to
	 * the kernel (doc/architecture.md rule 8), so no per-socket bypass policy is needed. */
	return TRUE;
}

METHOD(kernel_ipsec_t, enable_udp_decap, bool, private_kernel_sadb_t *this, int fd, int family,
       uint16_t port)
{
	/* ESP-in-UDP (non-zero marker) on this port is taken by the dataplane before the kernel sees it;
	 * IKE on it keeps its zero marker, which charon's socket strips. Nothing to set on the socket. */
	DBG2(DBG_KNL, "xipsec: ESP-in-UDP on port %u is decapsulated by the dataplane", port);
	return TRUE;
}

METHOD(kernel_ipsec_t, destroy, void, private_kernel_sadb_t *this)
{
	charon->bus->remove_listener(charon->bus, &this->mip6.listener);
	ks_acquire_stop(this);
	ks_jobs_gate_lock(); /* a deferred job running now finishes first; later ones find no backend */
	this->mutex->lock(this->mutex);
	this->stopping = TRUE;
	ks_promotes_finish(this);
	ks_lingers_finish(this);
	this->mutex->unlock(this->mutex);
	ks_jobs_gate_unlock();
	/* SAs and policies stay in the SADB only as long as charon keeps them: charon deletes them
	 * before it destroys the backend; anything left is ours and is removed. */
	this->public.flush_sas(&this->public);
	this->public.flush_policies(&this->public);
	ks_sa_tables_destroy(this);
	this->pols->destroy(this->pols);
	this->promotes->destroy(this->promotes);
	this->lingers->destroy(this->lingers);
	sadb_close(this->db);
	this->mutex->destroy(this->mutex);
	free(this);
}

/* SAs and policies a previous xipsec-iked on this SADB negotiated and could not remove (it was killed):
 * no charon knows them any more, so nobody would rekey, expire or delete them. SPIs it reserved for
 * exchanges that never completed (LARVAL SAs) would stay reserved forever the same way. One IKE daemon
 * owns the IKE part of an SADB (iked.c locks the SADB file); manual entries (ike_id 0) are never
 * touched. */
void kernel_sadb_remove_orphans(struct sadb *db, unsigned *n_sa, unsigned *n_pol, unsigned *n_larval)
{
	struct sadb_policy p;
	struct sadb_sa sa;
	uint32_t cur = 0, slot;
	unsigned nsa = 0, npol = 0, nlarval = 0;

	while (sadb_sa_next(db, &cur, &sa, &slot) == 0) {
		if (sa.state == SADB_STATE_LARVAL) {
			if (sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst) == 0)
				nlarval++;
		} else if (sa.ike_id && sadb_sa_delete(db, sa.spi, sa.proto, &sa.dst) == 0) {
			nsa++;
		}
	}
	memwipe(&sa, sizeof(sa));
	cur = 0;
	while (sadb_policy_next(db, &cur, &p) == 0) {
		if (p.ike_id && sadb_policy_delete(db, p.id) == 0)
			npol++;
	}
	if (nsa || npol)
		DBG1(DBG_KNL, "xipsec: removed %u SAs and %u policies left in the SADB by an earlier IKE daemon",
		     nsa, npol);
	if (nlarval)
		DBG1(DBG_KNL, "xipsec: released %u SPIs reserved (larval SAs) by an earlier IKE daemon",
		     nlarval);
	if (n_sa)
		*n_sa = nsa;
	if (n_pol)
		*n_pol = npol;
	if (n_larval)
		*n_larval = nlarval;
}

kernel_ipsec_t *kernel_sadb_create(void)
{
	private_kernel_sadb_t *this;

	if (!ks_pending_db) {
		DBG1(DBG_KNL, "xipsec: no SADB opened for the kernel-ipsec backend");
		return NULL;
	}
	if (!ks_stats_mutex)
		ks_stats_mutex = mutex_create(MUTEX_TYPE_DEFAULT);
	INIT(this,
		.public = {
			.get_features = _get_features,
			.get_cpi = _get_cpi,
			.bypass_socket = _bypass_socket,
			.enable_udp_decap = _enable_udp_decap,
			.destroy = _destroy,
		},
		.db = ks_pending_db,
		.mutex = mutex_create(MUTEX_TYPE_RECURSIVE),
		.pols = ks_pol_table_create(),
		.promotes = linked_list_create(),
		.lingers = hashtable_create(hashtable_hash_ptr, hashtable_equals_ptr, 1024),
		.spi_min = lib->settings->get_int(lib->settings, "%s.spi_min", KERNEL_SPI_MIN, lib->ns),
		.spi_max = lib->settings->get_int(lib->settings, "%s.spi_max", KERNEL_SPI_MAX, lib->ns),
		.sync_ms = lib->settings->get_int(lib->settings, "%s.dataplane_sync_ms", 30, lib->ns),
		.linger_ms = lib->settings->get_int(lib->settings, "%s.inbound_delete_delay_ms", 1000,
						    lib->ns),
	);
	ks_sa_tables_create(this);
	ks_sa_methods(&this->public);
	ks_policy_methods(&this->public);
	ks_pending_db = NULL;
	if ((int)this->linger_ms < 0 || this->linger_ms > 60000) {
		DBG1(DBG_KNL, "xipsec: inbound_delete_delay_ms %d out of range 0-60000, using 1000",
		     (int)this->linger_ms);
		this->linger_ms = 1000;
	}
	if (this->spi_min > this->spi_max) {
		uint32_t tmp = this->spi_min;

		this->spi_min = this->spi_max;
		this->spi_max = tmp;
	}
	if (this->spi_min < 256)
		this->spi_min = 256;
	kernel_sadb_remove_orphans(this->db, NULL, NULL, NULL);
	ks_expiry_start(this);
	ks_acquire_start(this);
	ks_mip6_listener_init(&this->mip6, this->db);
	charon->bus->add_listener(charon->bus, &this->mip6.listener);
	DBG1(DBG_KNL, "xipsec: kernel-ipsec backend writes the SADB (SPIs %.8x-%.8x)", this->spi_min,
	     this->spi_max);
	if (ks_seq_soft_override)
		DBG1(DBG_KNL, "xipsec: XIPSEC_SEQ_SOFT: outbound SAs are rekeyed at sequence number %llu",
		     (unsigned long long)ks_seq_soft_override);
	return &this->public;
}
