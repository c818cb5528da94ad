/* dataplane/xipsecd/dp.h: xipsecd's internal declarations shared by its files: configuration, the per-worker
 * state (AF_XDP ports, frame pool, route cache, counters) and the functions each file provides.
 * Prefix dp_. Nothing here is a public API; ipsecctl and tests talk to xipsecd through the SADB and
 * the control socket only. */
#ifndef XIPSEC_DP_H
#define XIPSEC_DP_H

#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <xdp/xsk.h>

#include "sadb/sadb.h"
#include "sadb/sadb_stats.h"
#include "dataplane/xipsecd/xdp_shared.h"
#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_frag.h"
#include "dataplane/xipsecd/dp_cpus.h"

#define DP_MAX_WORKERS   DP_MAX_QUEUES
#define DP_FRAME_SIZE    XSK_UMEM__DEFAULT_FRAME_SIZE
#define DP_NUM_FRAMES    16384u     /* per worker: 2 fill rings + 2 RX + 2 TX rings + hold queue */
#define DP_RING_SIZE     4096u      /* doc/platform.md: RX rings below 4096 drop above ~450 kpps */
#define DP_FILL_MIN      512u       /* the least a fill ring is kept at (dp_rx.c: refill) */
#define DP_BATCH         64u        /* burst cap (array bound; --batch lowers the burst below it) */
#define DP_TUN_SKIP      16u        /* busy rounds between looks at an idle TUN device */
#define DP_COALESCE_RATE 200u       /* packets per ms above which small rounds wait ... */
#define DP_COALESCE_BELOW 64u       /* (a round of fewer packets than this: a full burst) ... */
#define DP_COALESCE_MIN_NS 10000u   /* ... as long as this burst takes to arrive at the */
#define DP_COALESCE_MAX_NS 250000u  /* measured rate, within these bounds (the longest only near
                                     * DP_COALESCE_RATE, where 64 packets take 320 us) */
/* Frames the fill rings never get: what the TUN device, held packets, fragments and ICMP errors take
 * fresh frames from, so that a full RX ring cannot starve them. */
#define DP_FRAME_RESERVE (2 * DP_BATCH)
#define DP_HOLD_MAX      256u       /* packets waiting for neighbour resolution, per worker */
#define DP_HOLD_NS       3000000000ull /* three ARP/ND retransmissions */
#define DP_RCACHE_SIZE   1024u      /* per-worker route/neighbour cache entries (power of 2) */
/* Reassembly of received outer fragments: one table for all workers (fragments of one datagram may
 * arrive on different queues), bounded in datagrams, bytes and fragments, and in time. */
#define DP_REASM_DGRAMS  64u
#define DP_REASM_BYTES   (1u << 20)
#define DP_REASM_FRAGS   64u
#define DP_REASM_NS      5000000000ull

enum dp_port_id { DP_IN = 0, DP_OUT = 1, DP_NPORTS = 2 };

struct dp_config {
	char inside[IF_NAMESIZE], outside[IF_NAMESIZE];
	unsigned workers;            /* 0 = one per queue of the interfaces */
	const char *sadb_path;
	const char *bpf_obj;         /* NULL = XIPSEC_XDP_OBJ, else the build tree's copy
	                              * when running from it, else dp_xdp_installed_obj() */
	const char *ctl_path;        /* control socket */
	const char *stats_path;      /* counters view; NULL = sadb_stats_default_path(), "" = none */
	const char *stats_group;     /* its group; NULL = SADB_STATS_DEFAULT_GROUP */
	const char *tun_name;        /* NULL = "xipsec0"; "" = none */
	bool skb_mode;               /* force generic XDP */
	bool copy_mode;              /* never try zero-copy */
	bool no_pin;                 /* do not pin workers to CPUs */
	uint16_t cpu_list[DP_CPUS_MAX]; /* worker i on cpu_list[i % n_cpus] (dp_cpus.h) */
	unsigned n_cpus;
	unsigned batch;              /* burst size 1..DP_BATCH; 0 = DP_BATCH */
	unsigned tx_budget;          /* copy-mode frames per sendto (XDP_MAX_TX_SKB_BUDGET); 0 = kernel's */
	bool busy_poll;              /* busy polling on the AF_XDP sockets (SO_PREFER_BUSY_POLL) */
	bool no_handoff;             /* never hand inbound crypto to another worker (dp_handoff.c) */
	unsigned cluster_segments;   /* active/active segments, 0 = none (dp_segment.c, from */
	uint32_t cluster_addr;       /* cluster.segments/address): the cluster address, network order */
	struct dp_cluster_cfg cluster; /* --cluster-*: unset (peer NULL) = not clustered */
	unsigned mip6_err_burst, mip6_err_rate; /* the home agent's error bucket; 0 = mip6_err.h's defaults */
	int mip6_dad_ms;             /* the home agent's DAD wait; -1 = 1000 ms, 0 = no detection */
	unsigned mip6_refresh_s;     /* Binding Refresh Advice in its BAs, seconds; 0 = none */
	int mip6_brr_at, mip6_brr_max; /* Binding Refresh Requests: at this percent of a binding's
	                              * lifetime, this many in all; -1 = 75 and 2, 0 = none */
	int verbose;
};

/* Per-worker counters. Written by the worker (relaxed atomic adds), read by the control socket. */
struct dp_port {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	int fd;
	uint32_t tx_pending;         /* descriptors on the TX ring not yet completed */
	/* the fill level (dp_rx.c): frames kept on the fill ring, DP_FILL_MIN..DP_RING_SIZE */
	uint32_t fill_level;
	uint32_t fill_after;         /* frames on the fill ring after the last top-up */
	uint32_t fill_peak;          /* most the kernel took between two top-ups since fill_since */
	uint64_t fill_since;
};

struct dp_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];
	_Atomic uint32_t mtu;
	unsigned queues;
};

/* The source addresses of ICMP errors the dataplane sends: the inside interface's global addresses,
 * addresses of the protected site, first one first (the source of an error about a packet that came
 * in clear). An error about a decapsulated packet takes the first of them its tunnel's outbound
 * policy and SA cover (dp_pkt.c says why). Double-buffered: the control thread fills the other one,
 * then switches dp_ctx.src_cur. */
#define DP_SRC_MAX 8
struct dp_srcaddr {
	uint8_t v4[DP_SRC_MAX][4], v6[DP_SRC_MAX][16];
	uint8_t n4, n6;
};

/* One cached answer of the kernel's FIB + neighbour table for a destination. */
struct dp_rentry {
	uint64_t gen;                /* dp_ctx.route_gen when filled; stale when different */
	uint64_t retry_ns;           /* unresolved neighbour: when to ask the kernel again */
	uint8_t used, family, port;  /* port: DP_IN, DP_OUT, DP_RT_LOCAL, DP_RT_NONE */
	uint8_t resolved;
	int8_t want;                 /* output constrained to this port (-1: wherever it routes) */
	uint8_t dst[16];
	uint8_t nh[16];
	uint8_t dmac[6];
	uint32_t mtu;
};
#define DP_RT_LOCAL 2
#define DP_RT_NONE  3

struct dp_held {
	uint64_t addr;               /* frame address of the packet start */
	uint32_t len;
	uint8_t port, family;
	int8_t want;
	uint64_t deadline_ns;
};

struct dp_ctx;
struct dp_group;
struct dp_sa;

_Static_assert(DP_MAX_WORKERS <= SADB_MAX_WORKERS, "every worker needs a record in the SADB stats area");

/* A worker's counters have one copy: its record in the SADB stats area (struct sadb_worker_stats,
 * read by the control socket's status, ipsecctl, the exporter). The worker writes it with relaxed
 * atomic adds; the control thread adds to it too, for the frames the XDP program dropped on the
 * worker's queue (unknown SPIs, dp_xdp_fold_drops), so every write is an add, never a store. */
#define DP_STAT(w, field, n) __atomic_fetch_add(&(w)->sst->field, (n), __ATOMIC_RELAXED)
_Static_assert((int)DP_IN == (int)SADB_PORT_INSIDE && (int)DP_OUT == (int)SADB_PORT_OUTSIDE,
	       "the SADB worker record counts packets by the dataplane's port number");

struct dp_worker {
	struct dp_ctx *ctx;
	unsigned id, queue;
	int cpu;
	pthread_t thread;
	void *umem_area;
	struct xsk_umem *umem;
	struct dp_port port[DP_NPORTS];
	uint64_t *free_frames;
	uint32_t n_free;
	uint8_t *frame_out;          /* per frame: 1 while the kernel or a packet holds it */
	uint64_t frame_anomalies;    /* completions of frames we did not hand out (ignored) */
	uint64_t cluster_foreign;    /* outbound plaintext left to the node owning its segment
	                              * (dp_segment.h; written by this worker, read relaxed) */
	int nl_fd;                   /* synchronous route/neighbour queries */
	uint32_t nl_seq;
	struct dp_rentry rcache[DP_RCACHE_SIZE];
	struct dp_held hold[DP_HOLD_MAX];
	uint32_t n_hold;
	uint64_t hold_retry_ns;
	uint64_t icmp_tokens_ns;     /* rate limit of the ICMP errors it sends */
	uint16_t icmp_ipid;            /* IPv4 identification of those errors */
	/* The inbound SA of the decapsulated packet the stages handle now (NULL: a packet that did not
	 * arrive in an SA): an ICMP error about it goes back only through that SA's pair (dp_pkt.c).
	 * Set by the engine stage around the packet's forwarding, inside the RCU read-side section. */
	const struct dp_sa *decap_sa;
	/* The IPv4 header the packet the stages handle now came in or leaves in (RFC 5555 signalling:
	 * dp_path.h), NULL for any other: set around the call that hands it to dp_group_add. */
	const struct dp_v4_outer *v4_next;
	struct sadb_worker_stats *sst; /* this worker's counters: its record in the SADB stats area */
	uint8_t *rbuf;               /* a reassembled datagram (DP_REASM_OUT_MAX bytes) */
	struct dp_group *regroup;    /* dp_path.h: outbound burst of packets that came in from the
	                              * outside (decapsulated or bypassed) and leave through it again */
	uint64_t reasm_expire_ns;    /* next look for timed-out datagrams */
};

/* n packets received on port (bytes are counted per packet). */
static inline void dp_count_rx(struct dp_worker *w, unsigned port, uint32_t n)
{
	DP_STAT(w, rx[port], n);
}

static inline void dp_count_tx(struct dp_worker *w, unsigned port, uint32_t len)
{
	DP_STAT(w, tx[port], 1);
	DP_STAT(w, tx_bytes, len);
}

struct dp_ctx {
	struct dp_config cfg;
	struct sadb *db;
	struct dp_iface ifc[DP_NPORTS];
	unsigned n_workers;
	unsigned batch;              /* packets per RX burst and per engine call, 1..DP_BATCH */
	struct dp_worker *w;
	_Atomic uint64_t route_gen;
	_Atomic bool stop;
	void *xdp;                   /* dp_xdp.c */
	int tun_fd;
	int tun_ifindex;
	uint32_t tun_mtu;
	pthread_mutex_t tun_tx_lock;
	int ctl_fd;
	void *satab;                 /* dp_sa.c: RCU-published table */
	void *sa_state;              /* dp_sa.c: control thread's journal position, locks */
	uint64_t sadb_gen;           /* generation applied by the control thread */
	uint64_t start_ns;
	struct dp_reasm *reasm;      /* shared by the workers, under reasm_lock */
	pthread_spinlock_t reasm_lock;
	int local_addrs_fd;          /* the XDP program's local_addrs map, for the workers; -1 = none */
	struct dp_srcaddr src[2];    /* ICMP error sources (struct dp_srcaddr) */
	_Atomic unsigned src_cur;
	/* dp_expire.c (control thread): soft and hard expiries it raised since start */
	uint64_t sa_soft_expired, sa_hard_expired;
	struct dp_mip6 *mip6;        /* dp_mip6.c: the Mobile IPv6 home agent */
	struct dp_handoff *handoff;  /* dp_handoff.c; NULL with one worker or --no-handoff */
	struct dp_acquire *acq;      /* dp_acquire.c */
	/* The XDP program's local SPD (dp_xdp.c) could not be built from the SADB: the next
	 * dp_sa_sync reads every record and builds it again (control thread only). */
	bool local_spd_stale;
	_Atomic uint32_t seg_state;  /* dp_segment.h: the segments this node owns */
	/* dp_segment.c (control thread): segments given to this node that the other node still
	 * forwards, taken once it lets them go or at seg_wait_until */
	uint32_t seg_wait;
	uint64_t seg_wait_until;
	/* dp_stats.c (control thread): the counters view, when one could be made */
	struct sadb_stats_writer *stats;
	uint64_t stats_at, stats_gen;  /* when the last reading was published, of which generation */
	struct dp_cluster *cluster;  /* dp_cluster.c (control thread); NULL when not clustered */
};

/* ---- dp_mip6*.c: the Mobile IPv6 home agent (control thread, except where noted; dp_mip6.h) ---- */
int dp_mip6_init(struct dp_ctx *ctx);
void dp_mip6_fini(struct dp_ctx *ctx);
/* Readable when workers queued Binding Updates: then (and every tick) call dp_mip6_run. */
int dp_mip6_event_fd(struct dp_ctx *ctx);
void dp_mip6_run(struct dp_ctx *ctx);
/* Readable when the home agent's packets (acknowledgements, errors, refresh requests) wait for
 * worker 0 (dp_local_ha_burst). */
int dp_mip6_wake_fd(struct dp_ctx *ctx);
/* The control socket's "bindings" answer (tab-separated lines, ending with "end"). */
size_t dp_mip6_ctl(struct dp_ctx *ctx, char *buf, size_t len);
/* A buffer that holds the whole "bindings" answer. */
size_t dp_mip6_ctl_cap(struct dp_ctx *ctx);
/* The home agent's counters for the counters view (dp_stats.c); ha zeroed when it has none. */
void dp_mip6_stats(struct dp_ctx *ctx, struct sadb_stats_ha *ha);
/* Its mobile nodes' records for the counters view (sadb_stats_set_nodes into w); none without a
 * home agent. */
void dp_mip6_stats_nodes(struct dp_ctx *ctx, struct sadb_stats_writer *w);

/* ---- dp_handoff.c: inbound crypto handed to other workers (after ctx->w exists; fini after the
 * workers stopped). The rest are the workers' own calls. ---- */
int dp_handoff_init(struct dp_ctx *ctx);
void dp_handoff_fini(struct dp_ctx *ctx);
/* The worker's eventfd for its poll set (-1: no hand-off); readable when a job was posted to it
 * while it slept. */
int dp_handoff_fd(struct dp_worker *w);
/* Every round: the packets it received (what owners judge its spare capacity by). */
void dp_handoff_load(struct dp_worker *w, unsigned rx);
/* Run the jobs other workers posted to it; the packets they held. */
unsigned dp_handoff_serve(struct dp_worker *w);
/* Before a sleep: false when a job is waiting (do not sleep); after it, woke (readable: the eventfd
 * was). */
bool dp_handoff_sleep(struct dp_worker *w);
void dp_handoff_woke(struct dp_worker *w, bool readable);

/* ---- dp_acquire.c: acquires for PROTECT policies without an SA (on-demand tunnels) ---- */
/* Control thread, before the workers start / after they stopped. 0 or -ENOMEM (without a channel
 * to the IKE daemon it logs a warning and raises none). */
int dp_acquire_init(struct dp_ctx *ctx);
void dp_acquire_fini(struct dp_ctx *ctx);
/* A worker's packet at l3 (len bytes) matched PROTECT policy pol and its reqid has no SA: ask the
 * IKE daemon for one, rate limited per policy and in all, never blocking. The caller drops the
 * packet (SADB_DROP_ACQUIRE). */
void dp_acquire_raise(struct dp_worker *w, const struct sadb_policy *pol, const uint8_t *l3,
		      uint32_t len, bool mobile);
/* Acquires sent, lost (no daemon listens, its queue full) and held back by the rate limit. */
void dp_acquire_stats(const struct dp_ctx *ctx, uint64_t *raised, uint64_t *lost, uint64_t *limited);

/* ---- dp_util.c ---- */
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t dp_now_ns(void);
void dp_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* $name if it is a number in min..max, else def (a bad value logged). */
uint64_t dp_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max);
/* Append to the buffer at *p with *left bytes free (NUL-terminated, truncated when full). */
void dp_put(char **p, size_t *left, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define DP_BUSY_WAIT_MS 10000u
bool dp_busy_wait(int err, unsigned *waited_ms, const char *what);
/* size bytes of packet memory, on transparent huge pages where the kernel has them; NULL if none. */
void *dp_map_huge(size_t size);
/* Messages above LOG_NOTICE + dp_verbose (--verbose) are not written. */
extern int dp_verbose;

/* ---- dp_xdp.c: our one XDP program ---- */
int dp_xdp_load(struct dp_ctx *ctx);
/* The installed XDP program, $(pkglibdir)/xipsec_xdp.o. */
const char *dp_xdp_installed_obj(void);
int dp_xdp_add_xsk(struct dp_ctx *ctx, unsigned port, unsigned queue, struct xsk_socket *xsk);
int dp_xdp_sync_addrs(struct dp_ctx *ctx);
void dp_xdp_unload(struct dp_ctx *ctx);
int dp_xdp_stats(struct dp_ctx *ctx, uint64_t *pass, uint64_t *redirect);
/* The fd of the loaded program's map called name (owned by the program), or -ENOENT. */
int dp_xdp_map_fd(struct dp_ctx *ctx, const char *name);
/* The SPI filter (xdp_shared.h): keys of the inbound SAs; add fails open (the filter goes off). */
int dp_xdp_spi_add(struct dp_ctx *ctx, uint32_t spi, uint8_t proto, const struct sadb_addr *dst);
void dp_xdp_spi_del(struct dp_ctx *ctx, uint32_t spi, uint8_t proto, const struct sadb_addr *dst);
void dp_xdp_spi_filter(struct dp_ctx *ctx, bool on);
/* Control thread: adds the program's unknown-SPI drops and local SPD drops to the workers'
 * counters; the unknown-SPI total. */
void dp_xdp_fold_drops(struct dp_ctx *ctx);
uint64_t dp_xdp_spi_drops(struct dp_ctx *ctx);
/* Control thread: builds the program's table of the inbound policies that cover the gateway's own
 * addresses (xdp_shared.h, local_spd) from the SADB again, after a policy or address change. 0 or
 * -errno (the table in use stays). */
int dp_xdp_local_spd(struct dp_ctx *ctx);
/* Whether addr (family AF_INET/AF_INET6) is one of the gateway's own addresses (a map lookup: a
 * system call, for the rare fragment only). */
bool dp_xdp_is_local(struct dp_ctx *ctx, uint8_t family, const uint8_t *addr);

/* ---- dp_xsk.c: UMEM and sockets of a worker ---- */
int dp_xsk_setup(struct dp_ctx *ctx, struct dp_worker *w);
void dp_xsk_teardown(struct dp_worker *w);
unsigned dp_if_queues(const char *name);

/* ---- dp_nl.c: the kernel's routes, neighbours and addresses over netlink ---- */
int dp_nl_open(int groups);
/* Ask the kernel for the route to dst: *oif, nexthop (gateway or dst itself), *type (RTN_*). */
int dp_nl_route_get(int fd, uint32_t *seq, uint8_t family, const uint8_t *dst, int *oif,
		    uint8_t *nh, uint8_t *type);
/* The same, constrained to leave through oif (the kernel skips routes through other devices). */
int dp_nl_route_get_oif(int fd, uint32_t *seq, uint8_t family, const uint8_t *dst, int *oif,
			uint8_t *nh, uint8_t *type);
/* Neighbour entry: 0 and mac when usable, -ENOENT when unknown or unresolved. */
int dp_nl_neigh_get(int fd, uint32_t *seq, uint8_t family, int ifindex, const uint8_t *addr,
		    uint8_t *mac);
/* Have the kernel start resolving addr on ifindex (NTF_USE). */
int dp_nl_neigh_resolve(int fd, uint32_t *seq, uint8_t family, int ifindex, const uint8_t *addr);
/* Dump every local address, IPv6 anycast addresses joined included: cb(family, addr, arg). */
struct dp_nl_addr_info {
	int ifindex;
	uint8_t scope;               /* RT_SCOPE_*: 0 = universe (global) */
	bool own;                    /* the interface's own address (not a peer or broadcast address) */
};
int dp_nl_addrs(int fd, uint32_t *seq,
		void (*cb)(uint8_t family, const uint8_t *addr, const struct dp_nl_addr_info *info, void *arg),
		void *arg);
/* Read pending notifications from a monitor socket; returns a bitmask of DP_NL_CHG_*. */
#define DP_NL_CHG_ROUTE 1
#define DP_NL_CHG_ADDR  2
#define DP_NL_CHG_LINK  4
int dp_nl_monitor_read(int fd);
int dp_if_info(const char *name, struct dp_iface *ifc);

/* ---- dp_route.c: per-worker route/neighbour cache ---- */
/* What dp_route_lookup found. */
enum dp_route_res {
	DP_ROUTE_OK,                 /* *e: the port (or DP_RT_LOCAL) and the next hop's MAC */
	DP_ROUTE_PENDING,            /* the neighbour is being resolved: hold the packet (*e: port, MTU) */
	DP_ROUTE_DROP,               /* no way out: *why says why */
};
/* Resolve the output for dst (want: DP_OUT to force the outside interface, as for ESP/AH whose
 * peer the local stack may route into the TUN device; -1: wherever the kernel routes it). *e is
 * filled for DP_ROUTE_OK and DP_ROUTE_PENDING, *why for DP_ROUTE_DROP only. */
enum dp_route_res dp_route_lookup(struct dp_worker *w, uint8_t family, const uint8_t *dst, int want,
				  struct dp_rentry **e, enum sadb_drop *why);

/* ---- dp_pkt.c: frames, TX, ICMP errors ---- */
bool dp_tx(struct dp_worker *w, unsigned port, uint64_t addr, uint32_t len);
void dp_tx_kick(struct dp_port *pt);
void dp_frame_free(struct dp_worker *w, uint64_t addr);
/* Take a free frame: its base address, marked as handed out. The caller checks n_free first. */
static inline uint64_t dp_frame_take(struct dp_worker *w)
{
	uint64_t addr = w->free_frames[--w->n_free];

	w->frame_out[addr / DP_FRAME_SIZE] = 1;
	return addr;
}
/* Build the ICMP(v6) error owed to the source of the packet at l3 in a fresh frame: its length, with
 * its address in *addr, or 0 when none is sent (not owed, rate limited, no frame, no source; an
 * error about a decapsulated packet that its tunnel cannot carry is counted as ICMP_DECAP). *via is
 * the outbound SA the error must be protected with, and by no other way (w->decap_sa was set: RFC
 * 4301 section 6.2), or NULL: then it is forwarded like a packet from the outside (FWD_SPD_OUT). The
 * caller sends it on (dp_fwd.c, or dp_out.c). */
uint32_t dp_icmp_too_big(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint32_t mtu,
			 uint64_t *addr, struct dp_sa **via);
uint32_t dp_icmp_ttl(struct dp_worker *w, const uint8_t *l3, uint32_t len, uint64_t *addr,
		     struct dp_sa **via);

/* ---- dp_rx.c: the worker loop (the packet path's stages: dp_path.h) ---- */
void *dp_worker_main(void *arg);

/* ---- dp_in.c: the reassembly table and the workers' reassembly buffers (after ctx->w exists);
 * fini frees them ---- */
int dp_in_init(struct dp_ctx *ctx);
void dp_in_fini(struct dp_ctx *ctx);

/* ---- dp_fwd.c: held packets: resolved ones sent, expired ones dropped (NO_NEIGH) ---- */
void dp_hold_retry(struct dp_worker *w, bool force);

/* ---- dp_tun.c ---- */
int dp_tun_open(struct dp_ctx *ctx);
void dp_tun_close(struct dp_ctx *ctx);
int dp_tun_write(struct dp_ctx *ctx, const uint8_t *l3, uint32_t len);
/* Worker 0: one packet from the device into buf (read(2)'s result: -1 with EAGAIN when none waits). */
ssize_t dp_tun_read(struct dp_ctx *ctx, uint8_t *buf, size_t cap);

/* ---- dp_stats.c: the counters view (control thread) ---- */
/* Make the view (after the SADB is open and attached) and publish a first reading; a failure is
 * logged, never fatal. cv, ncv: the SAs the cluster covers (dp_sa_cluster_list), for its section. */
void dp_stats_open(struct dp_ctx *ctx, struct dp_sa *const *cv, uint32_t ncv);
/* Every control round: publish a reading when one is due (now: dp_now_ns()); cv, ncv as above. */
void dp_stats_tick(struct dp_ctx *ctx, uint64_t now, struct dp_sa *const *cv, uint32_t ncv);
/* dp_sa_sync, after the grace period that retired sa and before its slot is released: keep a gone
 * record of the deleted SA sa (slot) with its final counters in the view. */
void dp_stats_gone(struct dp_ctx *ctx, const struct sadb_sa *sa, uint32_t slot);
/* A last reading, then unmap (the file stays for the readers). */
void dp_stats_close(struct dp_ctx *ctx);

/* ---- dp_ctl.c: control socket ---- */
int dp_ctl_open(struct dp_ctx *ctx);
void dp_ctl_handle(struct dp_ctx *ctx);
void dp_ctl_close(struct dp_ctx *ctx);

/* ---- dp_sa.c: private SA objects, SADB change pickup, RCU ---- */
int dp_sa_init(struct dp_ctx *ctx);
int dp_sa_sync(struct dp_ctx *ctx);     /* control thread: apply SADB changes */
void dp_sa_resync(struct dp_ctx *ctx);  /* control thread: the next dp_sa_sync reads every record */
void dp_sa_fini(struct dp_ctx *ctx);

#endif
