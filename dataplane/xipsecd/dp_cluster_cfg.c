/* dataplane/xipsecd/dp_cluster_cfg.c: the cluster's settings: the --cluster-* options, their
 * environment fallbacks (XIPSEC_CLUSTER_*, from /etc/xipsec/xipsec.env under the unit) and the sync
 * addresses (ADDR[:PORT]); and which SAs a clustered node covers, and which it refuses. The node
 * itself is dp_cluster.c's. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dataplane/xipsecd/dp.h"
#include "dataplane/xipsecd/dp_cluster.h"
#include "dataplane/xipsecd/dp_seqmark.h"

static const char *env_str(const char *name)
{
	const char *e = getenv(name);

	return e && *e ? e : NULL;
}

int dp_cluster_option(struct dp_cluster_cfg *cfg, const char *name, const char *arg, char *err, size_t len)
{
	/* the numbers' ranges: a lease or budget under 1024 would ask the peer for every few packets */
	static const struct { const char *name; unsigned long long min, max; } num[] = {
		{ "cluster-lease", 1024, 1ull << 30 }, { "cluster-budget", 1024, 1ull << 30 },
		{ "cluster-sync-packets", 1, 1u << 24 }, { "cluster-sync-ms", 1, 60000 },
	};
	unsigned long long v;
	char *end;

	/* an unset variable of the unit's environment file arrives as "": as if not given */
	if (!strcmp(name, "cluster-local") || !strcmp(name, "cluster-peer") || !strcmp(name, "cluster-key")) {
		const char **p = name[8] == 'l' ? &cfg->local : name[8] == 'p' ? &cfg->peer : &cfg->key_path;

		*p = *arg ? arg : NULL;
		return 0;
	}
	if (!strcmp(name, "cluster-segments") || !strcmp(name, "cluster-address")) {
		*(name[8] == 's' ? &cfg->segments : &cfg->address) = *arg ? arg : NULL;
		return 0;
	}
	for (unsigned i = 0; i < sizeof(num) / sizeof(num[0]); i++) {
		if (strcmp(name, num[i].name))
			continue;
		errno = 0;
		v = strtoull(arg, &end, 0);
		if (errno || *end || v < num[i].min || v > num[i].max) {
			snprintf(err, len, "--%s takes %llu..%llu, not '%s'", name, num[i].min, num[i].max, arg);
			return -EINVAL;
		}
		if (i == 0)
			cfg->lease = v;
		else if (i == 1)
			cfg->budget = v;
		else if (i == 2)
			cfg->sync_packets = (unsigned)v;
		else
			cfg->sync_ms = (unsigned)v;
		return 0;
	}
	snprintf(err, len, "--%s: not a cluster option", name);
	return -EINVAL;
}

void dp_cluster_cfg_env(struct dp_cluster_cfg *cfg)
{
	if (!cfg->local)
		cfg->local = env_str("XIPSEC_CLUSTER_LOCAL");
	if (!cfg->peer)
		cfg->peer = env_str("XIPSEC_CLUSTER_PEER");
	if (!cfg->key_path)
		cfg->key_path = env_str("XIPSEC_CLUSTER_KEY");
	if (!cfg->key_path)
		cfg->key_path = DP_CLUSTER_KEY_DEFAULT;
	if (!cfg->lease)
		cfg->lease = dp_env_u64("XIPSEC_CLUSTER_LEASE", DP_CLUSTER_LEASE_DEFAULT, 1024, 1ull << 30);
	if (!cfg->budget)
		cfg->budget = dp_env_u64("XIPSEC_CLUSTER_BUDGET", DP_CLUSTER_BUDGET_DEFAULT, 1024, 1ull << 30);
	if (!cfg->sync_packets)
		cfg->sync_packets = (unsigned)dp_env_u64("XIPSEC_CLUSTER_SYNC_PACKETS",
						      DP_CLUSTER_SYNC_PACKETS_DEFAULT, 1, 1u << 24);
	if (!cfg->sync_ms)
		cfg->sync_ms = (unsigned)dp_env_u64("XIPSEC_CLUSTER_SYNC_MS", DP_CLUSTER_SYNC_MS_DEFAULT, 1, 60000);
}

/* ADDR, ADDR:PORT or [ADDR]:PORT (IPv6), port DP_CLUSTER_PORT when none. */
int dpc_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port = NULL, *colon = strrchr(s, ':');
	unsigned long pn = DP_CLUSTER_PORT;
	size_t hl;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || (rb[1] && rb[1] != ':'))
			return -EINVAL;
		hl = (size_t)(rb - s - 1);
		s++;
		port = rb[1] ? rb + 2 : NULL;
	} else if (colon && strchr(s, ':') == colon) {
		hl = (size_t)(colon - s);
		port = colon + 1;
	} else {
		hl = strlen(s);
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (port) {
		char *end;

		pn = strtoul(port, &end, 10);
		if (*end || pn == 0 || pn > 65535)
			return -EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)pn);
		*len = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)pn);
		*len = sizeof(struct sockaddr_in6);
	} else {
		return -EINVAL;
	}
	return 0;
}

int dpc_cfg_addrs(const struct dp_cluster_cfg *cfg, struct sockaddr_storage *local, socklen_t *local_len,
		  struct sockaddr_storage *peer, socklen_t *peer_len, unsigned *rank, char *msg, size_t len)
{
	int cmp;

	if (!cfg->local) {
		snprintf(msg, len, "cluster: --cluster-peer needs --cluster-local (the sync link's own address)");
		return -EINVAL;
	}
	if (dpc_parse_addr(cfg->local, local, local_len) || dpc_parse_addr(cfg->peer, peer, peer_len) ||
	    local->ss_family != peer->ss_family) {
		snprintf(msg, len, "cluster: --cluster-local %s / --cluster-peer %s: not ADDR[:PORT] of one family",
			 cfg->local, cfg->peer);
		return -EINVAL;
	}
	/* the rank: which node is which, the same answer on both (dp_cluster_lease.c, dp_cluster_msg.c) */
	cmp = memcmp(local, peer, *local_len);
	if (!cmp) {
		snprintf(msg, len, "cluster: --cluster-local and --cluster-peer are the same");
		return -EINVAL;
	}
	*rank = cmp > 0;
	return 0;
}

bool dp_cluster_covers(const struct dp_ctx *ctx, const struct sadb_sa *sa)
{
	if (!ctx->cluster || dp_seqmark_needed(sa))
		return false;
	return sa->dir == SADB_DIR_OUT || (sa->dir == SADB_DIR_IN && !(sa->flags & SADB_SAF_NO_REPLAY));
}

const char *dp_cluster_refuses(const struct dp_ctx *ctx, const struct sadb_sa *sa)
{
	if (!ctx->cluster || !dp_seqmark_needed(sa))
		return NULL;
	return sa->dir == SADB_DIR_OUT ? "a manual counter-mode key's sequence numbers live on this node's disk "
					 "only, and the other node would repeat them"
				       : "a manual key's replay window lives on this node's disk only, and the "
					 "other node would accept again what this one did";
}
