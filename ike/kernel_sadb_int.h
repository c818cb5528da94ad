/* ike/kernel_sadb_int.h: what the files of xipsec-iked's kernel-ipsec backend share: the backend
 * object, the record of each SA it installed, the process-wide counters and the calls one file makes
 * into another. kernel_sadb.c owns the object, kernel_sadb_sa.c the SAs and their expiry,
 * kernel_sadb_policy.c the policies, kernel_sadb_acquire.c the dataplane's acquires,
 * kernel_sadb_mip6.c the mobile nodes' rule, kernel_sadb_pool.c (below it) the home addresses pools
 * hand out, kernel_sadb_xlate.c (below them) the translations, settings and counters. Nothing outside those files includes it. */
#ifndef XIPSEC_IKE_KERNEL_SADB_INT_H
#define XIPSEC_IKE_KERNEL_SADB_INT_H

#include <daemon.h>
#include <collections/hashtable.h>
#include <collections/linked_list.h>
#include <threading/mutex.h>
#include <sys/un.h>

#include "ike/kernel_sadb.h"

/* One SA this backend installed, tracked for expiry, queries and our own flush. */
struct ks_sa {
	uint32_t spi;
	uint8_t proto;
	bool inbound;
	struct sadb_addr dst;
	uint32_t reqid;
	uint32_t slot;
	uint64_t instance;
	struct sadb_lifetime soft, hard;
	uint64_t seq_soft;          /* outbound: soft expiry once seq_reserved reaches it; 0 = none */
	timeval_t added;            /* monotonic */
	bool soft_raised, hard_raised;
	struct ks_sa *rq_next, **rq_pprev;  /* the other SAs of this reqid (struct ks_reqid) */
};

/* The SAs of one reqid: rekeying (has an inbound SA of this reqid been installed?) and policy
 * queries (the last use of a policy is that of its reqid's SAs) look here instead of at every SA. */
struct ks_reqid {
	uint32_t reqid;
	unsigned n_in, n_out;
	struct ks_sa *head;
};

/* The mobile nodes' rule (kernel_sadb_mip6.c), a bus listener the backend owns. */
typedef struct {
	listener_t listener;        /* first: the bus hands us this pointer */
	struct sadb *db;            /* the backend's: the home agent record */
	uint64_t since;             /* SADB generation the K bit's follow has seen */
} ks_mip6_listener_t;

typedef struct private_kernel_sadb_t private_kernel_sadb_t;
struct private_kernel_sadb_t {
	kernel_ipsec_t public;
	struct sadb *db;
	mutex_t *mutex;
	/* Every charon call finds its SA or policy through these (under mutex): a gateway holds tens of
	 * thousands, and a scan per call would make each install cost as much as all the others. */
	hashtable_t *sas;           /* struct ks_sa by (spi, proto, dst) */
	hashtable_t *reqids;        /* struct ks_reqid by reqid */
	hashtable_t *pols;          /* struct ks_pol (kernel_sadb_policy.c) by (dir, selector) */
	linked_list_t *promotes;    /* struct ks_promote (kernel_sadb_sa.c), pending outbound switches */
	hashtable_t *lingers;       /* struct ks_linger (kernel_sadb_sa.c) by address, deleted inbound SAs
				     * kept: each one's job takes it out again */
	uint32_t spi_min, spi_max;
	unsigned sync_ms;           /* how long the dataplane may take to load a new SA (at most) */
	unsigned linger_ms;         /* how long a deleted inbound SA still takes the peer's packets */
	bool stopping;
	int acq_fd;                 /* acquires from the dataplane (kernel_sadb_acquire.c); -1 = none */
	struct sockaddr_un acq_addr;
	ks_mip6_listener_t mip6;    /* on charon's bus while the backend lives */
};

/* The owner recorded in a policy charon installs outside any IKE_SA: a trap's (start_action,
 * dpd_action, close_action = trap). Not 0, which means a manual entry that ipsecctl reload replaces
 * and an IKE daemon's restart keeps; charon's IKE_SA ids count up from 1 and never reach it. */
#define KS_TRAP_IKE_ID UINT32_MAX

/* Process-wide settings and counters (kernel_sadb_xlate.c): set before charon creates the backend. */
extern uint64_t ks_seq_soft_override;
extern struct kernel_sadb_stats ks_stats;
extern mutex_t *ks_stats_mutex;

#define KS_STAT_INC(field) do { \
	if (ks_stats_mutex) ks_stats_mutex->lock(ks_stats_mutex); \
	ks_stats.field++; \
	if (ks_stats_mutex) ks_stats_mutex->unlock(ks_stats_mutex); } while (0)

/* The IKE_SA on whose behalf charon calls us, recorded in SAs and policies so that a later daemon can
 * tell them from manual entries (kernel_sadb_remove_orphans). 0 outside an IKE_SA. */
static inline uint32_t current_ike_id(void)
{
	ike_sa_t *ike_sa = charon->bus->get_sa(charon->bus);

	return ike_sa ? ike_sa->get_unique_id(ike_sa) : 0;
}

/* kernel_sadb_sa.c: the SA methods into the interface, the expiry job, and at teardown (mutex held)
 * the outbound switches and the inbound deletions still scheduled. */
void ks_sa_methods(kernel_ipsec_t *pub);
/* The record tables (kernel_sadb_sa.c, kernel_sadb_policy.c), made and emptied with the backend. */
void ks_sa_tables_create(private_kernel_sadb_t *this);
void ks_sa_tables_destroy(private_kernel_sadb_t *this);
hashtable_t *ks_pol_table_create(void);
/* The SAs of reqid (NULL if none), mutex held. */
struct ks_reqid *ks_reqid_get(private_kernel_sadb_t *this, uint32_t reqid);
void ks_expiry_start(private_kernel_sadb_t *this);
void ks_promotes_finish(private_kernel_sadb_t *this);
void ks_lingers_finish(private_kernel_sadb_t *this);
/* The gate the deferred jobs (promotions, lingering SAs) and destroy take before the backend's mutex
 * (kernel_sadb_sa.c): a job never reaches a backend being freed. */
void ks_jobs_gate_lock(void);
void ks_jobs_gate_unlock(void);
/* Runtime counters of a tracked SA into *out (sadb_runtime_read): FALSE, with *out zeroed, when the
 * slot's runtime area is not this instance's (the SA was replaced or is being added). Called with
 * the mutex held. */
bool ks_sa_runtime(private_kernel_sadb_t *this, struct ks_sa *t, struct sadb_runtime_view *out);
/* Realtime seconds (SADB) to charon's monotonic clock. */
time_t ks_real2mono(uint64_t real);
/* kernel_sadb_xlate.c: the first plen bits of the IPv6 address a are those of prefix p. */
bool ks_in_prefix(const uint8_t a[16], const struct sadb_addr *p, unsigned plen);

/* A CHILD_SA config whose name starts with this is a mobile node's (kernel_sadb_mip6.c), and a
 * connection with one is a mobile node's (kernel_sadb_pool.c). */
#define KS_MIP6_CHILD_PREFIX "mip6-"

/* kernel_sadb_pool.c: whether the pool address a was cleared by the home agent's checks for the
 * identity id (the IKE SA's peer's, as charon's pools lease it) and is still leased to it. */
bool ks_pool_cleared(const uint8_t a[16], identification_t *id);

/* kernel_sadb_acquire.c: listen for the dataplane's acquires when kernel_sadb_set_acquire named an
 * SADB (a failure is logged: traps then never fire), and stop before the backend goes. */
void ks_acquire_start(private_kernel_sadb_t *this);
void ks_acquire_stop(private_kernel_sadb_t *this);

/* kernel_sadb_mip6.c: the listener that refuses a mobile node's CHILD_SA its configuration does not
 * give it (set up before it goes on the bus), and whether the CHILD_SA this thread installs now is a
 * mobile node's (its SAs are then flagged SADB_SAF_MOBILE; an outbound SA installed in a later
 * exchange is known by its reqid: kernel_sadb_sa.c). */
void ks_mip6_listener_init(ks_mip6_listener_t *l, struct sadb *db);
bool ks_mip6_child(void);
/* The K bit (expiry job, mutex not held): each IKE SA whose mobile node's outbound tunnel SA the
 * home agent moved with SADB_SAF_KEY_MOBILE gets that SA's destination as its remote endpoint. */
void ks_mip6_follow(private_kernel_sadb_t *this);
/* Mutex held. Whether an SA of reqid that we installed is a mobile node's (charon installs a
 * CHILD_SA's outbound SA after its inbound one, for a rekey in a later exchange than the one whose
 * narrow hook marked it). */
bool ks_mip6_reqid(private_kernel_sadb_t *this, uint32_t reqid);
/* Mutex held. Into *dst, the address the SADB keys the SA charon names (spi, proto, *dst) by: a
 * mobile node's outbound tunnel SA moved by the home agent keeps charon's name. */
void ks_mip6_sadb_dst(private_kernel_sadb_t *this, uint32_t spi, uint8_t proto, struct sadb_addr *dst);

/* kernel_sadb_policy.c: the policy methods into the interface. */
void ks_policy_methods(kernel_ipsec_t *pub);

#endif
