/* dataplane/xipsecd/dp_mip6.h: the Mobile IPv6 home agent's state in xipsecd and what its files say
 * to each other (the rest of the daemon sees dp.h and dp_path.h only). The files, by thread:
 *   dp_mip6_queue.c  the two bounded queues between the workers and the control thread (any thread)
 *   dp_mip6.c        the control thread's home agent: Binding Updates in, acknowledgements out,
 *                    expiry, start and stop, the control socket's "bindings" answer
 *   dp_mip6_dad.c    control thread: Duplicate Address Detection before a new binding's answer
 *   dp_mip6_brr.c    control thread: Binding Refresh Requests before a binding expires
 *   dp_mip6_err.c    control thread: Binding Errors and Parameter Problems for what it dropped
 *   dp_mip6_cfg.c    control thread: the configuration from the SADB (home agent record, mobile nodes)
 *   dp_mip6_move.c   control thread: what a binding does to forwarding (tunnel SA migration)
 *   dp_mip6_ike.c    control thread: IKE-keyed mobile nodes (RFC 4877): rekeys, the K bit
 *   dp_mip6_nemo.c   control thread: mobile routers (RFC 3963): their networks and routes
 *   dp_mip6_nd.c     control thread: proxy Neighbor Discovery on the home link
 *   dp_mip6_disc.c   control thread: home agent address discovery (the home agents list, DHAAD),
 *                    Mobile Prefix Discovery
 *   dp_mip6_v4.c     control thread: mobile nodes on IPv4 networks (DSMIPv6, RFC 5555): their
 *                    Binding Updates, acknowledgements and tunnel endpoints in IPv4
 * Each calls only those listed after it, and none calls into the packet path: what the home agent
 * originates goes through its queue, which worker 0 drains (dp_local.c). */
#ifndef XIPSEC_DP_MIP6_H
#define XIPSEC_DP_MIP6_H

#include <arpa/inet.h>
#include <netinet/in.h>

#include "dataplane/xipsecd/dp_path.h"
#include "mobility/mip6_err.h"
#include "mobility/mip6_disc.h"
#include "mobility/mip6_ha.h"
#include "mobility/mip6_v4.h"

#define MQ_PKT   DP_MIP6_PKT /* the largest Binding Update taken (IPv6 minimum MTU) */
#define MQ_LEN   64u         /* queued messages each way */
#define MQ_SHARE 4u          /* inbound messages one signalling SA may have queued (dp_mip6_queue.c) */
#define NA_REPEAT 3u         /* unsolicited advertisements per registration (RFC 4861 section 7.2.6) */
#define NA_GAP_MS 1000u
#define ND_SYSCTLS 3u        /* proxy_ndp, proxy_delay, forwarding of the home link (dp_mip6_nd.c) */

struct mq_msg {
	uint32_t len;
	uint32_t sa_id;          /* the SA's slot + 1 (0: none) */
	struct dp_v4_outer v4;   /* the IPv4 header it came or goes in (RFC 5555), set false: none */
	uint8_t pkt[MQ_PKT];
};

struct mq {
	struct mq_msg m[MQ_LEN];
	unsigned head, n;
};

/* The inbound queue: slots in no order, taken oldest first; each signalling SA's share counted
 * (dp_mip6_queue.c says why). */
struct mq_in {
	struct mq_msg m[MQ_LEN];     /* len 0: a free slot */
	uint64_t stamp[MQ_LEN];      /* arrival order of each slot's message */
	uint64_t next_stamp;
	unsigned n;
	struct {
		uint32_t sa_id;
		unsigned n;
	} share[MQ_LEN];             /* the SAs with messages queued and how many each, n_share of them */
	unsigned n_share;
};

enum { ROLE_BU, ROLE_BA, ROLE_TUN_OUT, ROLE_TUN_IN, ROLES };

/* A mobile node as the SADB describes it: the slots (+1) of its four SAs. */
struct mn_cfg {
	uint8_t hoa[16];
	uint32_t id[ROLES];
	bool ike;                    /* all four negotiated by IKE (RFC 4877): K may be granted */
	/* a mobile router's networks (dp_mip6_nemo.c), n_mnp 0 for a host: the prefixes, and the
	 * reqid, protocol, local endpoint and priority of the routes made for them */
	unsigned n_mnp;
	struct mip6_prefix mnp[MIP6_MAX_MNP];
	uint32_t mnp_reqid, mnp_prio;
	uint8_t mnp_proto;
	struct sadb_addr mnp_tun_src;
};

/* A new binding waiting for Duplicate Address Detection (dp_mip6_dad.c). */
struct dad_wait {
	uint8_t hoa[16];
	uint8_t ll_addr[16];         /* the link-local address of hoa's interface identifier */
	bool ll;                     /* the L bit: ll_addr is detected (and proxied) too */
	bool dup;                    /* an advertisement or a detecting solicitation for it was seen */
	uint64_t due_ms;
	struct mip6_ha_result res;   /* the decision answered when the detection ends */
};

/* A binding whose Binding Refresh Requests are due (dp_mip6_brr.c). */
struct brr_due {
	uint8_t hoa[16];
	uint64_t updated_ms;         /* the binding's, when scheduled: another means it was renewed */
	uint64_t due_ms;
	unsigned left;               /* requests still to send */
};

struct na_due {
	uint8_t hoa[16];
	unsigned left;
	uint64_t due_ms;
};

struct dp_mip6 {
	pthread_mutex_t lock;        /* the two queues */
	struct mq_in in;
	struct mq out;
	_Atomic unsigned out_n;      /* worker 0 and the control thread look at this without the lock */
	int in_fd, out_fd;           /* eventfds: workers -> control thread, control -> worker 0 */
	_Atomic uint64_t taken, out_full;
	/* inbound messages dropped, by reason: the SA over its share, displaced by a lighter SA's,
	 * the queue full of equal shares, larger than a slot */
	_Atomic uint64_t in_share, in_evicted, in_full, in_too_big;

	/* control thread only */
	struct sadb *wdb;            /* the home agent's writer handle (tunnel SA migrations) */
	struct mip6_ha *ha;          /* NULL: no home agent configured */
	struct sadb_home_agent rec[SADB_HA_MAX];  /* the records served (home link: the inside one) */
	unsigned n_rec;
	uint64_t seen_gen;           /* SADB generation the configuration was read at */
	struct mn_cfg *mns;
	size_t n_mns;
	int home_ifindex;
	int nd_fd, nl_fd;
	uint32_t nl_seq;
	struct na_due *na;
	size_t n_na, cap_na;
	uint64_t na_sent, nd_errors, migrations, migrate_errors, refused_mns, republished;
	uint64_t migrate_errors_seen; /* migrate_errors when sync_config last looked at every tunnel */
	uint8_t *mn_slot;            /* bitmap over the SADB's slots: an SA of a mobile node in mns */
	uint32_t mn_slot_bits;
	bool warned_link;
	bool sync_due;               /* tunnels moved since the SA table was last republished */
	int state_fd;                /* the state directory (Binding Update sequence numbers), -1 */
	struct mq ba;                /* acknowledgements waiting for that republication */
	struct mip6_err_bucket err_bucket;  /* Binding Errors and Parameter Problems (dp_mip6_err.c) */
	uint64_t err_sent[MIP6_ERR_MAX], err_limited[MIP6_ERR_MAX];
	bool nd_linked;              /* the home link's sysctls are set; nd_saved holds their old values */
	char nd_saved[ND_SYSCTLS][16];
	unsigned dad_ms;             /* RetransTimer of the detection; 0: none */
	int dad_tx, dad_rx;          /* packet socket (solicitations out), raw ICMPv6 (ND in) */
	struct dad_wait *dad;
	size_t n_dad, cap_dad;
	uint64_t dad_started, dad_ok, dad_skipped, dad_ns_sent;  /* refusals: mip6_ha_stats.dad_failed */
	unsigned brr_at, brr_max;    /* --mip6-brr-at (percent of the lifetime; 0: none), --mip6-brr-max */
	struct brr_due *brr;
	size_t n_brr, cap_brr;
	uint64_t brr_next;           /* the earliest due_ms (UINT64_MAX: none) */
	uint64_t brr_sent;
	uint64_t ba_status[256];     /* acknowledgements built, by status (the counters view) */
	int disc_fd;                 /* ICMPv6: RAs heard on the home link, DHAAD requests; -1 */
	struct mip6_halist halist;   /* the home link's home agents (dp_mip6_disc.c) */
	/* the home prefixes' Home-Agents anycast addresses; anycast_of[i]: record << 8 | prefix */
	uint8_t anycast[SADB_HA_MAX * SADB_HA_MAX_PREFIX][16];
	uint16_t anycast_of[SADB_HA_MAX * SADB_HA_MAX_PREFIX];
	bool anycast_joined[SADB_HA_MAX * SADB_HA_MAX_PREFIX];
	unsigned n_anycast;
	uint64_t dhaad_requests, dhaad_replies, dhaad_dropped;
	uint64_t mps_received, mpa_sent, mps_dropped;
	size_t n_mnp_pol;            /* the policies that give mobile routers their networks */
	struct v4_node *v4;          /* mobile nodes whose last Binding Update came in IPv4 (dp_mip6_v4.c) */
	size_t n_v4, cap_v4;
	uint64_t v4_bu, v4_dropped;  /* Binding Updates in IPv4 taken; dropped before libmip6 decided */
};

/* A mobile node's last Binding Update that came in IPv4: what was decided on it and the header it
 * came in, for its acknowledgement and its tunnel (dp_mip6_v4.c). */
struct v4_node {
	uint8_t hoa[16];
	struct mip6_v4_reg reg;
	struct dp_v4_outer o;
	uint8_t ha6[16];             /* its record's IPv6 address, the tunnel's end when it leaves IPv4 */
};

static inline struct dp_mip6 *M(struct dp_ctx *ctx)
{
	return ctx->mip6;
}

static inline uint64_t now_ms(void)
{
	return dp_now_ns() / 1000000u;
}

static inline const char *a6(const uint8_t a[16], char *b)
{
	return inet_ntop(AF_INET6, a, b, INET6_ADDRSTRLEN);
}

/* ---- dp_mip6_queue.c ---- */
/* Control thread: queue a packet the home agent originated for worker 0 (full: counted in
 * out_full, dropped). */
void dp_mip6_out_push(struct dp_ctx *ctx, const uint8_t *pkt, uint32_t len);
/* The same, to leave in the IPv4 header v4 once protected (NULL or not set: none). */
void dp_mip6_out_push_v4(struct dp_ctx *ctx, const uint8_t *pkt, uint32_t len, const struct dp_v4_outer *v4);
/* Control thread: the oldest Binding Update the workers queued, copied to *q; false when none. */
bool dp_mip6_in_pop(struct dp_mip6 *m, struct mq_msg *q);
/* Control thread: queue res's acknowledgement (built here): at once when nothing moved, else in
 * the batch's holding queue until its republication (dp_mip6.c, flush_moves). */
void dp_mip6_queue_ba(struct dp_ctx *ctx, const struct mip6_ha_result *res);

/* ---- dp_mip6_dad.c ---- */
void dp_mip6_dad_open(struct dp_ctx *ctx, struct dp_mip6 *m);
void dp_mip6_dad_close(struct dp_mip6 *m);
/* The accepted decision res (not yet applied to forwarding): true when its answer waits for a
 * detection (a new binding, or a later Binding Update of one waiting), false when the caller goes
 * on with it as usual. */
bool dp_mip6_dad_hold(struct dp_ctx *ctx, const struct mip6_ha_result *res);
/* The detections that ended by now: bring each binding up or refuse it (134), and queue its BA. */
void dp_mip6_dad_run(struct dp_ctx *ctx, uint64_t now);

/* ---- dp_mip6_brr.c ---- */
/* hoa's binding was made or renewed (or went: no binding, nothing due any more). */
void dp_mip6_brr_track(struct dp_ctx *ctx, const uint8_t hoa[16]);
/* Send the requests due by now. */
void dp_mip6_brr_run(struct dp_ctx *ctx, uint64_t now);
void dp_mip6_brr_clear(struct dp_mip6 *m);

/* ---- dp_mip6_err.c ---- */
void dp_mip6_err_init(struct dp_ctx *ctx, struct dp_mip6 *m);
/* The home agent dropped the message q for drop (MIP6_DROP_NONE: not dropped, nothing to say):
 * answer it with the error RFC 6275 section 9.2 or 9.3 asks for, if any and the bucket allows. */
void dp_mip6_error(struct dp_ctx *ctx, const struct mq_msg *q, enum mip6_drop drop);

/* ---- dp_mip6_cfg.c ---- */
/* Bring the home agent in step with the SADB (when its generation moved since the last look). */
void dp_mip6_sync_config(struct dp_ctx *ctx);
/* The home agent record served whose prefix holds hoa (records never overlap), or NULL. */
const struct sadb_home_agent *dp_mip6_rec_of(const struct dp_mip6 *m, const uint8_t hoa[16]);

/* ---- dp_mip6_move.c ---- */
/* The mobile node of v[0..n) (sorted by home address, each once) with home address hoa, or NULL. */
const struct mn_cfg *dp_mip6_mn_find(const struct mn_cfg *v, size_t n, const uint8_t hoa[16]);
/* Move the mobile node's tunnel SAs to coa (its home address: back home) in one SADB transaction;
 * 0 or -errno (counted in migrate_errors and logged). The SA table is republished by the caller's
 * batch (dp_mip6.c, flush_moves; sync_due says one is owed). */
int dp_mip6_tunnel_move(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16]);
/* A binding was made (fresh) or moved: the tunnel follows it; a fresh one gets proxy ND. */
void dp_mip6_binding_up(struct dp_ctx *ctx, const uint8_t hoa[16], const uint8_t coa[16], bool fresh);
/* A binding ended: proxy ND stops and the tunnel goes home. */
void dp_mip6_binding_down(struct dp_ctx *ctx, const uint8_t hoa[16]);

/* ---- dp_mip6_ike.c ---- */
/* A mobile node's SAs o were replaced by nw: when both are IKE-keyed and it has a binding (a CHILD_SA
 * rekey), libmip6 takes the new SAs and the binding stays (true); false: the caller ends it. */
bool dp_mip6_ike_rekeyed(struct dp_ctx *ctx, const struct mn_cfg *o, const struct mn_cfg *nw);
/* After a tunnel move of hoa to coa: the outbound tunnel SA out (as read before the move, now at
 * coa) carries SADB_SAF_KEY_MOBILE exactly while hoa's binding at coa was granted K. 1 when it
 * wrote the SADB (one generation), 0 when nothing was to change, -errno (logged). */
int dp_mip6_ike_key_flag(struct dp_ctx *ctx, const struct sadb_sa *out, const uint8_t hoa[16],
			 const uint8_t coa[16]);

/* ---- dp_mip6_nemo.c ---- */
/* The networks of the mobile routers among mns[0..n) (their SAs read): mnp and its route's
 * parameters filled, m->n_mnp_pol how many policies say so. 0 or -ENOMEM. */
int dp_mip6_nemo_read(struct dp_ctx *ctx, struct mn_cfg *mns, size_t n);
/* Whether a and b own the same networks with the same route parameters. */
bool dp_mip6_nemo_same(const struct mn_cfg *a, const struct mn_cfg *b);
/* Whether the policy change ch (POL_ADD, POL_DEL, FLUSH_POL) may change a router's networks or
 * routes: a network added, anything removed while routers are configured. */
bool dp_mip6_nemo_pol_change(const struct dp_mip6 *m, const struct sadb *db, const struct sadb_change *ch);
/* In the caller's transaction on m->wdb: c's routes become those of its binding's registered
 * networks (none when home or unbound). The number of policies written, or -errno. */
int dp_mip6_nemo_routes(struct dp_ctx *ctx, const struct mn_cfg *c, bool home);
/* A refreshed binding of the mobile node c (NULL: none): its routes follow the networks registered
 * now (own transaction; nothing written when they are unchanged). */
void dp_mip6_nemo_refresh(struct dp_ctx *ctx, const struct mn_cfg *c);
/* xipsecd stopping: every router's routes go (one transaction). */
void dp_mip6_nemo_stop(struct dp_ctx *ctx);

/* ---- dp_mip6_nd.c ---- */
/* Open the ND and netlink sockets of the home link (a socket that cannot be had leaves its fd -1:
 * proxy ND then fails and is counted, the home agent still runs). */
void dp_mip6_nd_open(struct dp_ctx *ctx, struct dp_mip6 *m);
/* The home link's sysctls proxy ND needs (RFC 6275 section 10.4.1), their earlier values kept;
 * dp_mip6_nd_unlink puts those back (the home agent removed, xipsecd stopping). */
void dp_mip6_nd_link(struct dp_ctx *ctx);
void dp_mip6_nd_unlink(struct dp_ctx *ctx);
/* The link-local address with hoa's interface identifier (the L bit, RFC 6275 section 6.1.7). */
void dp_mip6_ll_of(const uint8_t hoa[16], uint8_t ll[16]);
/* Add or remove the proxy neighbour entry for hoa on the home link: 0 or -errno. */
int dp_mip6_proxy_neigh(struct dp_mip6 *m, const uint8_t hoa[16], bool add);
/* Start (on) or stop the unsolicited Neighbor Advertisements for hoa; dp_mip6_na_run sends those due. */
void dp_mip6_na_schedule(struct dp_mip6 *m, const uint8_t hoa[16], bool on);
void dp_mip6_na_run(struct dp_ctx *ctx, uint64_t now);

/* ---- dp_mip6_disc.c ---- */
/* Open the discovery socket (none: disc_fd -1, logged; the home agent runs without discovery). */
void dp_mip6_disc_open(struct dp_mip6 *m);
/* The anycast addresses follow the home prefixes; the RAs and DHAAD Requests waiting are taken
 * (a bounded number per call), the home agents list expired. */
void dp_mip6_disc_run(struct dp_ctx *ctx, uint64_t now);
/* A message the workers queued: when it is a Mobile Prefix Solicitation, it is answered (or dropped
 * and counted) and true returned; false for anything else (a Binding Update's for dp_mip6.c). */
bool dp_mip6_mps(struct dp_ctx *ctx, const struct mq_msg *q);

/* ---- dp_mip6_v4.c ---- */
/* The Binding Update q that came in IPv4 (q->v4 set) decided on into *res, as mip6_ha_input does
 * for one in IPv6; rec: the home agent record serving the IPv6 source (the home address), NULL for
 * none. A message dropped is counted and logged here, and answered with nothing (no error goes
 * back: res->drop set, the caller only returns). True when it refreshed a binding from another UDP
 * port (a NAT's new mapping): the caller moves the tunnel (dp_mip6_tunnel_move). */
bool dp_mip6_v4_input(struct dp_ctx *ctx, const struct mq_msg *q, const struct sadb_home_agent *rec,
		      struct mip6_ha_result *res);
/* The acknowledgement of res into buf[0..cap) with the IPv4 header it leaves in (*v4) when the
 * Binding Update it answers came in IPv4: its length (<= 0: none built); v4->set false otherwise
 * (nothing built: the caller builds the IPv6 one). */
int dp_mip6_v4_ba(struct dp_ctx *ctx, const struct mip6_ha_result *res, uint8_t *buf, size_t cap,
		  struct dp_v4_outer *v4);
/* The endpoints hoa's tunnel SAs take for care-of address coa: the peer's (*peer: coa, or its IPv4
 * address when coa is IPv4-mapped), the home agent's own (*here: the IPv4 address its Binding Update
 * in IPv4 was sent to, its record's; for an IPv6 coa its record's IPv6 address when its last one
 * came in IPv4, else family 0: the SAs' own end stays) and, when that Binding Update came in UDP,
 * the UDP ports of ESP in UDP (RFC 3948: *here_port 4500, *peer_port the one it came from; both 0
 * otherwise). 0, or -ENOENT for an IPv4 coa no Binding Update in IPv4 registered. */
int dp_mip6_v4_ends(const struct dp_mip6 *m, const uint8_t hoa[16], const uint8_t coa[16],
		    struct sadb_addr *here, struct sadb_addr *peer, uint16_t *here_port, uint16_t *peer_port);
void dp_mip6_v4_clear(struct dp_mip6 *m);

#endif
