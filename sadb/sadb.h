/* sadb/sadb.h: libsadb, the shared-memory security association database (SAD + SPD) of xipsec.
 *
 * This header is the contract between the writers (xipsec-iked, ipsecctl), the readers (xipsecd's
 * control thread and workers, ipsecctl's listings) and the runtime area the dataplane owns.
 *
 * Conventions: every function that can fail returns 0 (or a count) on success and a negative errno
 * on failure; the handle then also holds a human-readable message (sadb_errmsg). Records are plain
 * structs copied in and out: a reader never holds a pointer into a record that a writer may change.
 *
 * Threading and processes:
 *  - Writers are serialised across processes by a robust process-shared mutex inside the segment. A
 *    writer that dies holding it never leaves a half-done change visible; the next writer recovers.
 *  - Readers never lock and never block: lookups copy a consistent version of a record (old or new,
 *    never torn) and retry internally only while a writer is inside that very record.
 *  - The runtime area (sadb_runtime) is written only by the dataplane, one owner per SA direction
 *    (doc/architecture.md rule 5); the writer API initialises it when an SA is added, before publication.
 *  - The dataplane stats area (sadb_dp_stats, sadb_worker_stats) is likewise written only by the
 *    dataplane: one record per worker, each written by that worker alone with relaxed atomics.
 *  - A handle's writer calls and its transaction belong to one thread at a time; reader calls may
 *    share a handle across threads. A writer waits at most 10 s for the lock (-ETIMEDOUT, the
 *    message names the holder's pid; XIPSEC_SADB_LOCK_TIMEOUT_MS changes it).
 *  - Test hook: XIPSEC_SADB_TEST_STOP=locked|copy|precommit|postcommit[:n] makes a writer raise
 *    SIGSTOP at the n-th passage of that point while holding the lock (crash tests).
 *
 * Addresses are family-neutral everywhere (IPv4 and IPv6).
 */
#ifndef XIPSEC_SADB_H
#define XIPSEC_SADB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "sadb/sadb_drops.h"

#define SADB_RUN_DIR        "/run/xipsec" /* the default SADB's directory (sadb_run_dir_open) */
#define SADB_DEFAULT_PATH   SADB_RUN_DIR "/xipsec.sadb"
#define SADB_ENV_PATH       "XIPSEC_SADB"
#define SADB_MAGIC          0x5853414442303031ULL /* "XSADB001" */
#define SADB_LAYOUT_VERSION 10u /* 2: AH-GMAC numbered as IANA (9, 11); 3: dataplane stats area;
                                * 4: fragmentation drop reasons and counters; 5: the dataplane's
                                * hold on SA slots, stale-SA and sequence-lease drop reasons,
                                * runtime seq_lease; 6: the home agent record; 7: the workers'
                                * hand-off counters; 8: the workers' records hold every worker
                                * counter (per port, per path, SA-charged drops) and the ICMP_DECAP
                                * drop reason; 9: the ACQUIRE drop reason; 10: several home agent
                                * records */

#define SADB_DEFAULT_MAX_SA     65536u
#define SADB_DEFAULT_MAX_POLICY 65536u
#define SADB_MAX_SA_LIMIT       (1u << 22)  /* capacity must scale to 1M SAs; 4M is the hard cap */

#define SADB_ENC_KEY_MAX   32   /* AES-256, ChaCha20, 3DES (24) */
#define SADB_SALT_MAX      4    /* GCM/GMAC/ChaCha20-Poly1305 salt, CTR nonce (RFC 4106/4543/7634/3686) */
#define SADB_AUTH_KEY_MAX  64   /* HMAC-SHA-512 */
#define SADB_REPLAY_MAX    4096 /* largest anti-replay window in packets */
#define SADB_REPLAY_DEFAULT 1024

/* Address: family AF_INET or AF_INET6 (0 = unspecified/any); IPv4 in the first 4 bytes of a.b. */
struct sadb_addr {
	uint8_t family;
	uint8_t pad[3];
	union {
		uint8_t  b[16];
		uint32_t w[4];
		struct in_addr v4;
		struct in6_addr v6;
	} a;
};

enum sadb_proto { SADB_PROTO_ANY = 0, SADB_PROTO_ESP = 50, SADB_PROTO_AH = 51 };
enum sadb_mode  { SADB_MODE_TRANSPORT = 1, SADB_MODE_TUNNEL = 2 };
enum sadb_dir   { SADB_DIR_IN = 1, SADB_DIR_OUT = 2, SADB_DIR_FWD = 3 };
enum sadb_state { SADB_STATE_LARVAL = 0, SADB_STATE_MATURE = 1, SADB_STATE_DYING = 2, SADB_STATE_DEAD = 3 };

/* Encryption transforms: IANA IKEv2 Transform Type 1 identifiers. */
enum sadb_enc {
	SADB_ENC_NONE            = 0,   /* AH, or no ESP confidentiality */
	SADB_ENC_DES_CBC         = 2,   /* not offered: see dataplane/ESP engine (RFC 8221 MUST NOT) */
	SADB_ENC_3DES_CBC        = 3,   /* legacy, only when explicitly enabled */
	SADB_ENC_NULL            = 11,  /* RFC 2410 */
	SADB_ENC_AES_CBC         = 12,
	SADB_ENC_AES_CTR         = 13,  /* RFC 3686 */
	SADB_ENC_AES_GCM16       = 20,  /* RFC 4106, 16-octet ICV */
	SADB_ENC_AES_GMAC        = 21,  /* RFC 4543 ENCR_NULL_AUTH_AES_GMAC */
	SADB_ENC_CHACHA20_POLY1305 = 28 /* RFC 7634 */
};

/* Integrity transforms: IANA IKEv2 Transform Type 3 identifiers. */
enum sadb_auth {
	SADB_AUTH_NONE              = 0,
	SADB_AUTH_HMAC_MD5_96       = 1,  /* legacy */
	SADB_AUTH_HMAC_SHA1_96      = 2,
	SADB_AUTH_HMAC_SHA256_128   = 12,
	SADB_AUTH_HMAC_SHA384_192   = 13,
	SADB_AUTH_HMAC_SHA512_256   = 14,
	SADB_AUTH_AES_128_GMAC      = 9,  /* AH with GMAC (RFC 4543) */
	SADB_AUTH_AES_256_GMAC      = 11
};

/* SA flags. */
#define SADB_SAF_ESN          0x0001u /* extended (64-bit) sequence numbers */
#define SADB_SAF_LEGACY_OK    0x0002u /* a legacy transform (3DES, MD5) was explicitly enabled */
#define SADB_SAF_DECAP_DSCP   0x0004u /* copy outer DSCP to inner on decapsulation */
#define SADB_SAF_NO_ECN       0x0008u /* do not propagate ECN (RFC 6040 compatibility mode) */
#define SADB_SAF_DF_CLEAR     0x0010u /* tunnel mode: clear DF on the outer IPv4 header */
#define SADB_SAF_DF_SET       0x0020u /* tunnel mode: set DF on the outer IPv4 header (default: copy) */
#define SADB_SAF_NO_REPLAY    0x0040u /* no anti-replay check (manual keying only) */
#define SADB_SAF_SEQ_PERSIST  0x0080u /* outbound: sequence numbers only below a mark recorded on disk
                                       * (manual keys with counter-mode ciphers; rt->seq_lease) */
#define SADB_SAF_MOBILE       0x0100u /* an SA of a Mobile IPv6 mobile node (RFC 3776/4877): its
                                       * selector names the home address as a /128 (the source of
                                       * an inbound SA, the destination of an outbound one); in
                                       * transport mode the Home Address option and the type 2
                                       * routing header select (mip6_sel_addrs) */
#define SADB_SAF_SEQ_NEW      0x0200u /* manual key (outbound counter-mode, or inbound with a replay
                                       * window): the operator said the key is new, so xipsecd may
                                       * start its sequence mark or window ceiling when none is on
                                       * disk (without it a missing mark refuses the SA) */
#define SADB_SAF_KEY_MOBILE   0x0400u /* a mobile node's outbound tunnel SA, IKE-keyed, whose binding
                                       * was granted the K bit (RFC 4877 7): xipsec-iked moves the
                                       * IKE SA's remote endpoint to this SA's destination (set and
                                       * cleared by xipsecd's home agent with each move) */

/* Lifetime limits; 0 means no limit. Times are seconds since the SA was added. */
struct sadb_lifetime {
	uint64_t bytes;
	uint64_t packets;
	uint64_t add_seconds;   /* after the SA is added */
	uint64_t use_seconds;   /* after its first use */
};

/* Traffic selector. Ports are host byte order ranges, [0, 65535] = any. For ICMP/ICMPv6 the "ports"
 * carry type (sport) and code (dport) ranges, for the Mobility Header (135) the MH type in sport. */
struct sadb_selector {
	struct sadb_addr src, dst;  /* prefixes; family 0 = any family */
	uint8_t src_plen, dst_plen;
	uint8_t proto;              /* IP protocol number, 0 = any */
	uint8_t pad;
	uint16_t sport_lo, sport_hi;
	uint16_t dport_lo, dport_hi;
};

/* One security association. Identity: (spi, proto, dst). */
struct sadb_sa {
	uint32_t spi;               /* host byte order; never 0..255 */
	uint8_t  proto;             /* enum sadb_proto */
	uint8_t  mode;              /* enum sadb_mode */
	uint8_t  dir;               /* enum sadb_dir (IN or OUT) */
	uint8_t  state;             /* enum sadb_state */
	uint32_t reqid;             /* binds the SA to policies; 0 = none */
	uint32_t flags;             /* SADB_SAF_* */
	struct sadb_addr src, dst;  /* outer (tunnel) or host (transport) addresses */
	uint16_t encap_sport;       /* NAT-T UDP encapsulation (RFC 3948): 0 = none, host byte order */
	uint16_t encap_dport;
	uint16_t enc_alg;           /* enum sadb_enc */
	uint16_t auth_alg;          /* enum sadb_auth */
	uint8_t  enc_key_len;       /* bytes, without salt */
	uint8_t  salt_len;          /* bytes */
	uint8_t  auth_key_len;      /* bytes */
	uint8_t  icv_len;           /* bytes; 0 = the transform's default */
	uint8_t  enc_key[SADB_ENC_KEY_MAX];
	uint8_t  salt[SADB_SALT_MAX];
	uint8_t  auth_key[SADB_AUTH_KEY_MAX];
	uint32_t replay_window;     /* packets, 0..SADB_REPLAY_MAX; 0 with SADB_SAF_NO_REPLAY */
	uint16_t tfc_pad;           /* pad ESP tunnel payloads to at least this many bytes (0 = off) */
	uint8_t  ttl;               /* outer TTL/hop limit (0 = 64) */
	uint8_t  dscp;              /* outer DSCP when not copied (0xff = copy inner) */
	uint32_t mtu;               /* path MTU towards the peer, 0 = the interface's */
	struct sadb_lifetime soft, hard;
	struct sadb_selector sel;   /* inner traffic the SA may carry (checked after decapsulation) */
	uint64_t created;           /* CLOCK_REALTIME seconds, set by sadb_sa_add */
	uint64_t instance;          /* unique per add (never reused), set by sadb_sa_add: tells the
	                             * dataplane whether runtime state belongs to this SA */
	uint32_t ike_id;            /* IKE SA unique id that negotiated it, 0 = manual */
	uint32_t checksum;          /* set by libsadb over the whole record; readers verify it */
};

enum sadb_action { SADB_ACT_PROTECT = 1, SADB_ACT_BYPASS = 2, SADB_ACT_DISCARD = 3 };

/* One security policy (SPD entry). */
struct sadb_policy {
	uint32_t id;                /* assigned by sadb_policy_add; stable for the policy's life */
	uint8_t  dir;               /* enum sadb_dir */
	uint8_t  action;            /* enum sadb_action */
	uint8_t  proto;             /* PROTECT: SADB_PROTO_ESP or SADB_PROTO_AH */
	uint8_t  mode;              /* PROTECT: enum sadb_mode */
	uint32_t priority;          /* lower value wins (as in XFRM and strongSwan); ties: lower id */
	uint32_t reqid;             /* PROTECT: the SA(s) with this reqid */
	struct sadb_selector sel;
	struct sadb_addr tun_src, tun_dst; /* PROTECT in tunnel mode: outer endpoints */
	uint32_t ike_id;            /* owner, 0 = manual */
	uint32_t checksum;          /* set by libsadb; readers verify it */
};

/* The header fields of a packet that policy lookup matches on. */
struct sadb_pkt_sel {
	struct sadb_addr src, dst;
	uint8_t proto;
	uint8_t pad;
	uint16_t sport, dport;      /* host byte order; ICMP type/code, MH type in sport */
};

/* Runtime state of one SA slot, owned by the dataplane (doc/architecture.md, "Runtime state"). Counters are
 * written by the workers that process the SA with relaxed atomics and read by anyone. */
struct sadb_runtime {
	/* One SA's packets may be processed by several workers at once; what each burst reads and
	 * writes (the instance check, the window's top, the counters, the outbound reservation) is
	 * in this first line, so that a burst moves one line between their caches, not several. */
	uint64_t instance;          /* sadb_sa.instance this state belongs to */
	uint64_t packets, bytes;    /* successfully processed */
	uint64_t first_used;        /* CLOCK_REALTIME seconds, 0 = never */
	uint64_t last_used;
	uint64_t seq_reserved;      /* outbound: highest sequence number reserved (rule 1); a
	                             * restarted dataplane resumes above it */
	uint64_t seq_lease;         /* SAs with SADB_SAF_SEQ_PERSIST only: the highest number the
	                             * dataplane has recorded on disk (dp_seqmark.c), or that a cluster's
	                             * standby acknowledged (dp_cluster.c); outbound none
	                             * above it is used, inbound (the window's ceiling) none above it
	                             * is accepted. Written by the dataplane's control thread. */
	uint64_t replay_top;        /* inbound: highest authenticated sequence number */
	uint64_t replay_bitmap[SADB_REPLAY_MAX / 64];
	uint64_t drops[SADB_DROP_MAX];
	uint32_t expired;           /* bit 0 soft, bit 1 hard (hard implies soft), set by the SA's one
	                             * expiry owner: xipsec-iked for the SAs it negotiated (ike_id != 0),
	                             * xipsecd's control thread for manual ones (dp_expire.c); and on a
	                             * lone cluster node xipsecd's sequence budget (dp_cluster.c), which
	                             * xipsec-iked passes on to charon. The engine drops every packet
	                             * of an SA with the hard bit. */
	uint32_t pad;
};

/* Counters of one dataplane worker: the only copy of them (xipsecd's control socket, ipsecctl, the
 * exporter and the SNMP subagent all read this record). Written with relaxed atomic adds by that
 * worker, and by its dataplane's control thread for the frames the XDP program dropped on the
 * worker's queue, so every write is an add, never a store; read by anyone with relaxed loads.
 * drops[] holds only the drops that belong to no SA (unknown SPI, no policy, no route, ...): a drop
 * attributed to an SA is counted in that SA's sadb_runtime.drops instead, never in both, so that
 * per-SA + drops[] is the total. sa_drops[] is this worker's share of those SA-charged drops (the
 * worker's own view, not added into any total). One record per 64-byte line group so that workers
 * never share a cache line. Every field is a uint64_t (sadb_worker_stats_sum adds them word by word). */
#define SADB_MAX_WORKERS 64u
enum sadb_port { SADB_PORT_INSIDE = 0, SADB_PORT_OUTSIDE = 1, SADB_NPORTS = 2 };
struct sadb_worker_stats {
	_Alignas(64) uint64_t rx[SADB_NPORTS];  /* packets received, by port */
	uint64_t tx[SADB_NPORTS];               /* packets transmitted, by port */
	uint64_t rx_bytes, tx_bytes;
	uint64_t bypass, protect, unprotect;    /* packets by SPD verdict and ESP/AH done */
	uint64_t to_tun, from_tun;              /* through the dataplane's TUN device */
	uint64_t held;                          /* packets held waiting for a neighbour */
	uint64_t icmp_sent;                     /* ICMP errors the dataplane generated */
	uint64_t spd_out;                       /* from the outside and back out: the outbound SPD */
	uint64_t frag_packets;      /* IPv4 packets cut into fragments (before ESP/AH or to a link) */
	uint64_t frag_made;         /* fragments those became */
	uint64_t reasm_packets;     /* datagrams reassembled from received fragments */
	uint64_t reasm_frags;       /* fragments that went into them */
	/* Inbound crypto handed between workers (xipsecd(8), "Threads and SA ownership"): packets this
	 * worker decrypted for others; jobs it handed off; packets of those others decrypted; jobs
	 * it took back because no helper claimed them in time. */
	uint64_t handoff_done, handoff_jobs, handoff_pkts, handoff_back;
	uint64_t drops[SADB_DROP_MAX];
	uint64_t sa_drops[SADB_DROP_MAX];
};

/* Packets a worker record counts received / transmitted on both ports (relaxed loads). */
static inline uint64_t sadb_worker_rx_packets(const struct sadb_worker_stats *w)
{
	return __atomic_load_n(&w->rx[SADB_PORT_INSIDE], __ATOMIC_RELAXED) +
	       __atomic_load_n(&w->rx[SADB_PORT_OUTSIDE], __ATOMIC_RELAXED);
}

static inline uint64_t sadb_worker_tx_packets(const struct sadb_worker_stats *w)
{
	return __atomic_load_n(&w->tx[SADB_PORT_INSIDE], __ATOMIC_RELAXED) +
	       __atomic_load_n(&w->tx[SADB_PORT_OUTSIDE], __ATOMIC_RELAXED);
}

/* The dataplane stats area: who runs the dataplane and its workers' records. A dataplane that starts
 * zeroes every record, then sets n_workers, started (CLOCK_REALTIME seconds) and pid. */
struct sadb_dp_stats {
	uint64_t pid;               /* xipsecd's pid, 0 = never started */
	uint64_t started;           /* CLOCK_REALTIME seconds */
	uint32_t n_workers;         /* records in use (<= SADB_MAX_WORKERS) */
	uint32_t pad;
	/* The dataplane's hold on SA slots (sadb_dp_attach and friends; written by libsadb only). */
	uint64_t hold_pid;          /* the process that holds engine objects of SAs, 0 = none */
	uint64_t hold_start;        /* its start time (clock ticks after boot, /proc/PID/stat) */
	uint64_t released_gen;      /* every SA deleted at a generation <= this is gone from it */
	struct sadb_worker_stats w[SADB_MAX_WORKERS];
};

/* Change journal entry: which record changed, in publication order. */
enum sadb_change_op {
	SADB_CHG_SA_ADD = 1, SADB_CHG_SA_UPDATE, SADB_CHG_SA_DEL,
	SADB_CHG_POL_ADD, SADB_CHG_POL_DEL, SADB_CHG_FLUSH_SA, SADB_CHG_FLUSH_POL,
	SADB_CHG_HOME_AGENT  /* a home agent record was set or cleared (index: the record) */
};
/* index: SA slot (SA_*), policy id (POL_*), the flushed proto (FLUSH_SA, 0 = all), 0 (FLUSH_POL).
 * A flush is one entry, not one per record. */
struct sadb_change {
	uint64_t gen;               /* generation this change produced */
	uint32_t op;                /* enum sadb_change_op */
	uint32_t index;             /* SA slot or policy id */
};

/* The Mobile IPv6 home agent's configuration (RFC 6275 section 10): one record per home agent
 * address (a home link or set of home prefixes), up to SADB_HA_MAX per SADB, none when the gateway
 * is no home agent. No two records share an address or overlapping prefixes: a home address
 * belongs to one record. Its mobile nodes are the SAs flagged SADB_SAF_MOBILE; the bindings
 * are the dataplane's state, not the SADB's. */
#define SADB_HA_MAX_PREFIX 8
#define SADB_HA_MAX 8
struct sadb_home_agent {
	struct sadb_addr addr;      /* the home agent's address: BUs' destination, BAs' source (IPv6) */
	struct sadb_addr prefix[SADB_HA_MAX_PREFIX]; /* the home prefixes (IPv6, host bits zero) */
	uint8_t  plen[SADB_HA_MAX_PREFIX];
	uint32_t n_prefix;          /* 1..SADB_HA_MAX_PREFIX */
	uint32_t max_lifetime;      /* seconds: the longest binding granted, 4..262140 (RFC 6275 6.1.7:
	                             * 16 bits of 4-second units) */
	uint32_t flags;             /* none defined yet: 0 */
	char     link[16];          /* the home link's interface name, "" = xipsecd's inside interface */
	uint64_t set_time;          /* CLOCK_REALTIME seconds, set by sadb_home_agent_set */
	uint8_t  addr4[4];          /* its IPv4 address, where mobile nodes on IPv4 networks send their
	                             * Binding Updates (DSMIPv6, RFC 5555); 0.0.0.0: none. Once this
	                             * record's padding, so a SADB written before it reads as none. */
	uint32_t checksum;          /* set by libsadb; readers verify it */
};

struct sadb_params {
	uint32_t max_sa;            /* 0 = SADB_DEFAULT_MAX_SA */
	uint32_t max_policy;        /* 0 = SADB_DEFAULT_MAX_POLICY */
};

struct sadb_info {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t max_sa, max_policy;
	uint32_t n_sa, n_policy;
	uint64_t generation;
	size_t   size;              /* bytes of the segment */
};

struct sadb;

/* Open flags. */
#define SADB_RDONLY  0x0
#define SADB_RDWR    0x1  /* writer API allowed */
#define SADB_CREATE  0x2  /* create (mode 0600) if missing, with params (ignored if it exists) */
#define SADB_RUNTIME 0x4  /* read-only, except the runtime area (the dataplane's mapping) */

/* Whether the SA's nonces are its sequence numbers (GCM, GMAC, CTR, ChaCha20-Poly1305): a manual
 * key of these may send only numbers leased from a mark on disk (SADB_SAF_SEQ_PERSIST). */
static inline bool sadb_sa_counter_mode(const struct sadb_sa *sa)
{
	return sa->enc_alg == SADB_ENC_AES_GCM16 || sa->enc_alg == SADB_ENC_AES_GMAC ||
	       sa->enc_alg == SADB_ENC_AES_CTR || sa->enc_alg == SADB_ENC_CHACHA20_POLY1305 ||
	       sa->auth_alg == SADB_AUTH_AES_128_GMAC || sa->auth_alg == SADB_AUTH_AES_256_GMAC;
}

/* Path to use: $XIPSEC_SADB if set and non-empty, else SADB_DEFAULT_PATH. Never NULL. */
const char *sadb_default_path(void);

/* The default SADB's directory (path NULL = SADB_RUN_DIR), made with create (mode 0700) when missing;
 * every opener of a SADB in SADB_RUN_DIR goes through it. An fd as sadb_state_dir_open's, or -errno
 * with a message: anything but a directory owned by the effective uid with mode 0700 (a symbolic
 * link, another owner, a wider mode) is refused, since whoever made it could remove or replace the
 * SADB. */
int sadb_run_dir_open(const char *path, bool create, char *errmsg, size_t errlen);

/* The state directory: state that must outlive a reboot, e.g. sequence-number high-water marks. */
#define SADB_STATE_DIR_DEFAULT "/var/lib/xipsec"
#define SADB_ENV_STATE_DIR     "XIPSEC_STATE_DIR"
/* $XIPSEC_STATE_DIR if set and non-empty, else SADB_STATE_DIR_DEFAULT. Never NULL. */
const char *sadb_state_dir(void);
/* Open the state directory (path NULL = sadb_state_dir()); with create, make it (mode 0700; the parent
 * must exist) when missing. Returns an O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC fd, or -errno with a message
 * in errmsg naming the path, what was found (type, owner, mode) and what is expected: a directory
 * owned by the effective uid with mode 0700. A directory on tmpfs or ramfs is refused (-EXDEV): its
 * marks would not outlive a reboot. */
int sadb_state_dir_open(const char *path, bool create, char *errmsg, size_t errlen);

/* Open (and with SADB_CREATE, create) the segment at path (NULL = sadb_default_path()).
 * Only a regular file owned by the effective uid with mode 0600 is opened, never through a symbolic
 * link: anything else fails with -EPERM (owner or mode), -ELOOP (a symbolic link) or -EINVAL (a
 * directory, FIFO, ...), and the message names the path, what was found and what is expected.
 * A new segment is built in a temporary file and linked into place; a name that appears meanwhile
 * is opened through the same checks. Also fails with -EPROTO (wrong magic or layout version, a
 * header or state that does not fit the file; message says which), -ENOENT, -EACCES, -EINVAL (bad
 * params). On failure *out is NULL and, if errmsg is not NULL, a message of at most errlen bytes
 * explains the failure. */
int sadb_open(const char *path, int flags, const struct sadb_params *params,
	      struct sadb **out, char *errmsg, size_t errlen);
void sadb_close(struct sadb *db);
/* Remove the segment's name (ipsecctl/tests): a symbolic link is removed, not its target; a
 * directory is refused (-EISDIR). */
int sadb_unlink(const char *path);

/* Message describing the last failure on this handle (per thread); "" when none. */
const char *sadb_errmsg(const struct sadb *db);
int sadb_info(const struct sadb *db, struct sadb_info *info);
/* Generation: incremented once per published change (or transaction). Acquire load. */
uint64_t sadb_generation(const struct sadb *db);

/* ---- Writer API (needs SADB_RDWR). Each call is atomic: readers see all of it or none. ---- */

/* Add an SA. Validates it (algorithms vs key lengths, SPI >= 256, addresses, window size) and fails
 * with -EINVAL (message names the field), -EEXIST (same spi/proto/dst), -ENOSPC (table full).
 * Sets created, instance and checksum; initialises the SA's runtime area. *slot (may be NULL)
 * receives its slot index, stable until deletion. An SA made by sadb_spi_alloc (LARVAL) is
 * completed with sadb_sa_update, not added again. */
int sadb_sa_add(struct sadb *db, const struct sadb_sa *sa, uint32_t *slot);
/* Replace the SA with the same identity (keys, state, lifetimes, endpoints after NAT/MOBIKE...).
 * -ENOENT if absent. Keeps slot, instance and runtime state unless the SA was LARVAL. */
int sadb_sa_update(struct sadb *db, const struct sadb_sa *sa);
/* Change the outer endpoints (and NAT-T ports) of an SA, e.g. a Mobile IPv6 care-of address
 * migration; identity changes if dst changes. */
int sadb_sa_migrate(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		    const struct sadb_addr *new_src, const struct sadb_addr *new_dst,
		    uint16_t encap_sport, uint16_t encap_dport);
/* Delete an SA; its keys are wiped in the segment. -ENOENT if absent. */
int sadb_sa_delete(struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst);
/* Delete all SAs of proto (SADB_PROTO_ANY = all). Returns the number deleted. */
int sadb_sa_flush(struct sadb *db, uint8_t proto);
/* Allocate an SPI in [min, max] (0,0 = [256, 0xffffffff]) that no SA of proto to dst uses, chosen
 * at random, and reserve it as a LARVAL SA (IKE's get_spi). -ENOSPC when none is free. */
int sadb_spi_alloc(struct sadb *db, uint8_t proto, const struct sadb_addr *src,
		   const struct sadb_addr *dst, uint32_t min, uint32_t max, uint32_t *spi);

/* Add a policy; sets p->id-equivalent *id. -EEXIST for an identical dir+selector+priority,
 * -EINVAL (message names the field), -ENOSPC. */
int sadb_policy_add(struct sadb *db, const struct sadb_policy *p, uint32_t *id);
int sadb_policy_delete(struct sadb *db, uint32_t id);
/* Delete the policy with the same dir and selector (IKE's del_policy). */
int sadb_policy_delete_sel(struct sadb *db, uint8_t dir, const struct sadb_selector *sel);
int sadb_policy_flush(struct sadb *db);

/* Transactions: changes made between begin and commit are published together (one generation)
 * and abort undoes them all; readers never see part of a transaction. One per handle at a time. */
int sadb_txn_begin(struct sadb *db);
int sadb_txn_commit(struct sadb *db);
void sadb_txn_abort(struct sadb *db);

/* Set home agent record idx (0..SADB_HA_MAX-1; ha NULL: clear it). Validated as
 * sadb_home_agent_validate says (-EINVAL, message names the field); -EEXIST when another record
 * has the same address or an overlapping prefix (clear or change that one first, in the same
 * transaction to move a prefix between records). Atomic like every writer call, and part of the
 * caller's transaction when one is open. */
int sadb_home_agent_set(struct sadb *db, unsigned idx, const struct sadb_home_agent *ha);
int sadb_home_agent_validate(const struct sadb_home_agent *ha, char *msg, size_t len);

/* ---- Reader API: lock-free, never blocks, copies a consistent record. ---- */

/* Home agent record idx: 0, -ENOENT when it is not set, -EINVAL when idx >= SADB_HA_MAX. */
int sadb_home_agent_get(const struct sadb *db, unsigned idx, struct sadb_home_agent *out);

/* O(1) lookup by identity. -ENOENT if absent. *slot may be NULL. */
int sadb_sa_lookup(const struct sadb *db, uint32_t spi, uint8_t proto, const struct sadb_addr *dst,
		   struct sadb_sa *out, uint32_t *slot);
/* Copy the SA in a slot; -ENOENT if the slot is free. */
int sadb_sa_get(const struct sadb *db, uint32_t slot, struct sadb_sa *out);
/* Iterate: start with *cursor = 0; returns 0 and the next SA, or -ENOENT at the end. */
int sadb_sa_next(const struct sadb *db, uint32_t *cursor, struct sadb_sa *out, uint32_t *slot);

/* Highest-priority policy of direction dir matching the packet. -ENOENT if none. */
int sadb_policy_lookup(const struct sadb *db, uint8_t dir, const struct sadb_pkt_sel *pkt,
		       struct sadb_policy *out);
int sadb_policy_get(const struct sadb *db, uint32_t id, struct sadb_policy *out);
int sadb_policy_next(const struct sadb *db, uint32_t *cursor, struct sadb_policy *out);
/* Whether a packet matches a selector (shared with the dataplane's post-decap check). */
bool sadb_selector_match(const struct sadb_selector *sel, const struct sadb_pkt_sel *pkt);

/* Changes after generation *since, oldest first, at most max; advances *since. Returns the number
 * copied, or -ESTALE when the journal no longer holds them (the reader must resynchronise from a
 * full iteration, then continue from the generation it read before iterating). Only whole
 * generations are returned; a single transaction with more than max changes also gives -ESTALE. */
int sadb_changes(const struct sadb *db, uint64_t *since, struct sadb_change *out, unsigned max);

/* Runtime area of a slot, for its one writer: the dataplane (read-write mapping needed to write)
 * and libsadb itself. NULL for a bad slot. Everyone else reads it through sadb_runtime_read. */
struct sadb_runtime *sadb_runtime(const struct sadb *db, uint32_t slot);

/* A copy of one SA's runtime area, as sadb_runtime_read gives it. */
struct sadb_runtime_view {
	uint64_t packets, bytes, first_used, last_used;
	uint64_t seq_reserved, seq_lease, replay_top;
	uint64_t replay_bitmap[SADB_REPLAY_MAX / 64];  /* only with SADB_RTV_REPLAY, else zero */
	uint64_t drops[SADB_DROP_MAX];
	uint64_t drops_total;                          /* sum of drops[] */
	uint32_t expired;                              /* bit 0 soft, bit 1 hard */
};
#define SADB_RTV_REPLAY 0x1u  /* copy the replay bitmap too (4096 bits: only when it is shown) */

/* The one reader of the runtime area: copies slot's area into *out if it belongs to SA instance
 * `instance` (sadb_sa.instance, as the caller read it with the SA).
 * Memory-order rule, the same for every reader: the area's instance word is loaded with acquire
 * before the copy; every other word is copied with relaxed loads (each counter is exact, the set is
 * not one instant: counters move while they are read); then an acquire fence and a second load of
 * the instance word. A slot is given to a new SA instance (sadb_sa_add) by storing 0 into its
 * instance word, a release fence, zeroing every other word, then storing the new instance; the
 * dataplane writes the words of the new instance only after that. A copy that took any word of the
 * reset or of the later instance took a value after a zero store that follows the release fence,
 * so its acquire fence orders the second load after the store of 0 (for the later read-modify-writes
 * by the C11 release-sequence rule, for the later plain stores (last_used, the replay window) by each
 * word's coherence order, which x86-64 and ARMv8 give): the second load sees 0 or a newer instance.
 * Both loads must equal `instance`.
 * Returns 0 with the copy; -ESTALE when the area belongs to another instance, or was given to one
 * while it was read (a deleted SA whose slot was reused, an SA being added): *out is then all zero,
 * never a mix of two instances; -EINVAL for a NULL db or out, or a slot beyond the capacity (*out
 * zeroed). flags: SADB_RTV_REPLAY or 0. */
int sadb_runtime_read(const struct sadb *db, uint32_t slot, uint64_t instance, unsigned flags,
		      struct sadb_runtime_view *out);

/* The dataplane stats area (writable through a SADB_RUNTIME or SADB_RDWR handle). NULL for NULL. */
struct sadb_dp_stats *sadb_dp_stats(const struct sadb *db);
/* One worker's record; NULL when worker >= SADB_MAX_WORKERS. */
struct sadb_worker_stats *sadb_worker_stats(const struct sadb *db, unsigned worker);
/* Sum of the records of every worker (relaxed loads: each counter is exact, the set is not one
 * instant). Returns the dataplane's n_workers, or -EINVAL for NULL arguments. */
int sadb_worker_stats_sum(const struct sadb *db, struct sadb_worker_stats *total);

/* ---- The dataplane's hold on SA slots ----
 * A freed SA slot is not reused while a dataplane may still hold an engine object of the SA that
 * was in it: such an object would reserve sequence numbers from, and write a replay window into,
 * the runtime area of the next SA in the slot (under its own old key: a repeated nonce). The
 * dataplane attaches before it reads any SA, and after it has applied the changes up to generation
 * g and no worker can reach the objects of SAs deleted by then (an RCU grace period later), it
 * releases g. A writer reuses a slot freed at generation f only when f <= the released generation,
 * or when no live dataplane is attached (nobody holds objects then; a dataplane that attaches later
 * reads the SADB only after attaching, and the attach and the writer's check are ordered by
 * sequentially consistent fences, so it sees the slot's new contents). A dataplane that dies is
 * detected by its pid and start time, so a crash never pins slots.
 * Attach fails with -EBUSY when another live process holds the SADB (message names its pid): two
 * dataplanes on one SADB would both write the runtime areas. The hold is claimed with an exclusive
 * lock on the segment file's first byte (an open file description lock, fcntl(2); xipsec-iked's own
 * flock(2) on the file does not conflict with it), so two dataplanes starting at once cannot both
 * take it; a holder that is going away is waited for, up to 10 s. */
int sadb_dp_attach(struct sadb *db);
void sadb_dp_release(struct sadb *db, uint64_t gen);
void sadb_dp_detach(struct sadb *db);
/* The generation up to which the attached dataplane has applied every change (its workers see the
 * SADB as it was then, or later), or UINT64_MAX when no live dataplane is attached. A writer that
 * must know its change reached the packet path (a new inbound SA before the peer is told of it)
 * waits until this is at least the generation its change produced. */
uint64_t sadb_dp_applied(const struct sadb *db);
/* Freed SA slots a writer may not reuse yet (diagnostics, tests). */
uint32_t sadb_sa_quarantined(const struct sadb *db);

/* ---- Helpers shared by every part. ---- */
/* Parse "192.0.2.1", "2001:db8::1" (no prefix). 0 or -EINVAL. */
int sadb_addr_parse(const char *s, struct sadb_addr *out);
/* Parse "10.0.0.0/8", "2001:db8::/32", a bare address (full length) or "any". */
int sadb_prefix_parse(const char *s, struct sadb_addr *out, uint8_t *plen);
/* Format an address into buf (at least INET6_ADDRSTRLEN); returns buf. "any" for family 0. */
const char *sadb_addr_str(const struct sadb_addr *a, char *buf, size_t len);
bool sadb_addr_eq(const struct sadb_addr *a, const struct sadb_addr *b);
/* Key length (bytes, without salt), salt length and ICV length of a transform; -EINVAL if unknown
 * or the key length is not one the transform takes. key_len 0 asks for the default.
 * sadb_enc_lengths returns the key length (key_len, or the default when 0 was asked) on success. */
int sadb_enc_lengths(uint16_t enc_alg, unsigned key_len, unsigned *salt_len, unsigned *icv_len);
int sadb_auth_lengths(uint16_t auth_alg, unsigned *key_len, unsigned *icv_len);
/* Validate an SA as sadb_sa_add would; 0 or -EINVAL with a message in msg. */
int sadb_sa_validate(const struct sadb_sa *sa, char *msg, size_t len);
int sadb_policy_validate(const struct sadb_policy *p, char *msg, size_t len);
const char *sadb_enc_name(uint16_t enc_alg);   /* "aes-gcm-16", never NULL */
const char *sadb_auth_name(uint16_t auth_alg); /* "hmac-sha256-128", never NULL */

/* ---- Extensions (tests, benchmarks, diagnostics). ---- */
/* Reference policy lookup: a linear scan of every policy, same answer as sadb_policy_lookup. */
int sadb_policy_lookup_linear(const struct sadb *db, uint8_t dir, const struct sadb_pkt_sel *pkt,
			      struct sadb_policy *out);
/* How many times this thread's lookups retried because a writer changed what they were copying. */
uint64_t sadb_read_retries(void);
/* Whether standard error is systemd's journal stream ($JOURNAL_STREAM names it as "DEVICE:INODE"):
 * a line written there may then start with <N>, its syslog priority, and the journal adds the
 * program name, the pid and the time itself. Here because every program of the gateway links
 * libsadb. Decided once per process. */
bool sadb_stderr_is_journal(void);

#endif
