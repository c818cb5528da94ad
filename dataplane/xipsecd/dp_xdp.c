/* dataplane/xipsecd/dp_xdp.c: loading, attaching and detaching xipsecd's XDP program (xdp_prog.bpf.c) and
 * keeping its maps (interfaces, xskmap, the gateway's own addresses) in step with the kernel, and its
 * table of the gateway's own inbound SPD (local_spd) in step with the SADB.
 * libbpf attaches the one program directly: libxdp's dispatcher cannot load here (doc/platform.md) and
 * we never want a second program on these interfaces anyway. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "dataplane/xipsecd/dp.h"

#ifndef XIPSEC_PKGLIBDIR
#define XIPSEC_PKGLIBDIR "/usr/local/lib/xipsec"
#endif
#define DP_XDP_OBJ_NAME "xipsec_xdp.o"

struct dp_xdp {
	struct bpf_object *obj;
	int prog_fd, xsks_fd, ifaces_fd, addrs_fd, stats_fd;
	int spis_fd, conf_fd, spi_drops_fd;
	int lspd_fd, lspd_conf_fd, local_drops_fd;
	bool spi_broken;             /* an insert failed: the filter stays off (the workers count) */
	uint64_t spi_seen[DP_MAX_WORKERS]; /* spi_drops already added to each worker's counters */
	uint32_t lspd_conf;          /* local_spd_conf as last written */
	bool lspd_warned;            /* the table's overflow was logged */
	struct dp_xdp_addr *own;     /* the addresses local_addrs holds, for local_spd */
	uint8_t *own_ovf;            /* per own address: policies covering it were left out of
	                              * local_spd (its local_addrs value has DP_XDP_ADDR_OVERFLOW) */
	unsigned n_own;
	int ncpu;
	struct dp_xdp_local_drops *lbuf;   /* ncpu values of one local_drops key */
	struct dp_xdp_local_drops local_seen[DP_MAX_WORKERS];
	int attached[DP_NPORTS];     /* XDP flags used to attach, 0 = not attached */
	int nl_fd;
	uint32_t nl_seq;
};

/* Whether this program runs from the build tree it was compiled in (its own path under
 * XIPSEC_BUILDDIR): only then is that tree's XDP program the one that matches it. An installed copy
 * must not pick up a build tree that happens to still exist. */
static bool in_build_tree(void)
{
	char exe[PATH_MAX], real[PATH_MAX];
	/* /proc/self/exe has no symbolic links: nor may the build directory's name */
	const char *b = realpath(XIPSEC_BUILDDIR, real) ? real : XIPSEC_BUILDDIR;
	size_t n = strlen(b);
	ssize_t r = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (r <= 0)
		return false;
	exe[r] = 0;
	return !strncmp(exe, b, n) && exe[n] == '/';
}

const char *dp_xdp_installed_obj(void)
{
	return XIPSEC_PKGLIBDIR "/" DP_XDP_OBJ_NAME;
}

static const char *find_obj(const struct dp_config *cfg, char *buf, size_t len)
{
	const char *env = getenv("XIPSEC_XDP_OBJ");

	if (cfg->bpf_obj)
		return cfg->bpf_obj;
	if (env && *env)
		return env;
	if (in_build_tree()) {
		snprintf(buf, len, "%s/dataplane/xipsecd/%s", XIPSEC_BUILDDIR, DP_XDP_OBJ_NAME);
		return buf;
	}
	return dp_xdp_installed_obj();
}

static int attach(struct dp_xdp *x, const struct dp_ctx *ctx, unsigned port)
{
	int ifindex = ctx->ifc[port].ifindex;
	int err = -EOPNOTSUPP;

	/* Replace whatever is attached: after a kill -9 our previous instance's program is still
	 * there (bound to dead sockets, dropping transit traffic), and a restart must take over. */
	if (!ctx->cfg.skb_mode) {
		err = bpf_xdp_attach(ifindex, x->prog_fd, XDP_FLAGS_DRV_MODE, NULL);
		if (err == 0) {
			x->attached[port] = XDP_FLAGS_DRV_MODE;
			dp_log(LOG_INFO, "%s: XDP attached in native mode", ctx->ifc[port].name);
			return 0;
		}
		/* a generic program left behind would block a native attach and vice versa */
		bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);
		err = bpf_xdp_attach(ifindex, x->prog_fd, XDP_FLAGS_DRV_MODE, NULL);
		if (err == 0) {
			x->attached[port] = XDP_FLAGS_DRV_MODE;
			dp_log(LOG_INFO, "%s: XDP attached in native mode", ctx->ifc[port].name);
			return 0;
		}
		dp_log(LOG_NOTICE, "%s: native XDP attach failed (%s), using generic mode",
		       ctx->ifc[port].name, strerror(-err));
	}
	bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
	err = bpf_xdp_attach(ifindex, x->prog_fd, XDP_FLAGS_SKB_MODE, NULL);
	if (err) {
		dp_log(LOG_ERR, "%s: cannot attach XDP program: %s", ctx->ifc[port].name, strerror(-err));
		return err;
	}
	x->attached[port] = XDP_FLAGS_SKB_MODE;
	dp_log(LOG_INFO, "%s: XDP attached in generic mode", ctx->ifc[port].name);
	return 0;
}

int dp_xdp_load(struct dp_ctx *ctx)
{
	char buf[4096];
	const char *path = find_obj(&ctx->cfg, buf, sizeof(buf));
	struct dp_xdp *x = calloc(1, sizeof(*x));
	struct bpf_program *prog;
	int err;

	if (!x)
		return -ENOMEM;
	x->nl_fd = -1;
	x->obj = bpf_object__open_file(path, NULL);
	if (!x->obj) {
		err = -errno;
		dp_log(LOG_ERR, "cannot open XDP object %s: %s (set XIPSEC_XDP_OBJ or --xdp-obj)",
		       path, strerror(-err));
		free(x);
		return err;
	}
	/* one key per SA the SADB can hold: the filter must never be full while it is on */
	{
		struct bpf_map *m = bpf_object__find_map_by_name(x->obj, "spis");
		struct sadb_info info;

		if (m && ctx->db && sadb_info(ctx->db, &info) == 0 && info.max_sa)
			bpf_map__set_max_entries(m, info.max_sa);
	}
	err = bpf_object__load(x->obj);
	if (err) {
		dp_log(LOG_ERR, "cannot load XDP object %s: %s", path, strerror(-err));
		goto fail;
	}
	prog = bpf_object__find_program_by_name(x->obj, "xipsec_xdp");
	if (!prog) {
		err = -ENOENT;
		dp_log(LOG_ERR, "%s has no program xipsec_xdp", path);
		goto fail;
	}
	x->prog_fd = bpf_program__fd(prog);
	x->xsks_fd = bpf_object__find_map_fd_by_name(x->obj, "xsks");
	x->ifaces_fd = bpf_object__find_map_fd_by_name(x->obj, "ifaces");
	x->addrs_fd = bpf_object__find_map_fd_by_name(x->obj, "local_addrs");
	x->stats_fd = bpf_object__find_map_fd_by_name(x->obj, "xdp_stats");
	x->spis_fd = bpf_object__find_map_fd_by_name(x->obj, "spis");
	x->conf_fd = bpf_object__find_map_fd_by_name(x->obj, "xdp_conf");
	x->spi_drops_fd = bpf_object__find_map_fd_by_name(x->obj, "spi_drops");
	x->lspd_fd = bpf_object__find_map_fd_by_name(x->obj, "local_spd");
	x->lspd_conf_fd = bpf_object__find_map_fd_by_name(x->obj, "local_spd_conf");
	x->local_drops_fd = bpf_object__find_map_fd_by_name(x->obj, "local_drops");
	if (x->xsks_fd < 0 || x->ifaces_fd < 0 || x->addrs_fd < 0 || x->stats_fd < 0 ||
	    x->spis_fd < 0 || x->conf_fd < 0 || x->spi_drops_fd < 0 || x->lspd_fd < 0 ||
	    x->lspd_conf_fd < 0 || x->local_drops_fd < 0) {
		err = -ENOENT;
		dp_log(LOG_ERR, "%s lacks one of the maps xsks/ifaces/local_addrs/xdp_stats/spis/"
		       "xdp_conf/spi_drops/local_spd/local_spd_conf/local_drops", path);
		goto fail;
	}
	x->ncpu = libbpf_num_possible_cpus();
	x->own = calloc(DP_LOCAL_ADDR_MAX, sizeof(*x->own));
	x->own_ovf = calloc(DP_LOCAL_ADDR_MAX, 1);
	x->lbuf = x->ncpu > 0 ? calloc((size_t)x->ncpu, sizeof(*x->lbuf)) : NULL;
	if (!x->own || !x->own_ovf || !x->lbuf) {
		err = x->ncpu > 0 ? -ENOMEM : x->ncpu;
		goto fail;
	}
	x->nl_fd = dp_nl_open(0);
	if (x->nl_fd < 0) {
		err = x->nl_fd;
		goto fail;
	}
	ctx->xdp = x;
	/* the workers' own reference: it outlives the unload that runs while they finish */
	if (ctx->local_addrs_fd < 0)
		ctx->local_addrs_fd = fcntl(x->addrs_fd, F_DUPFD_CLOEXEC, 0);
	/* Own addresses first: from the moment of attachment, traffic for the gateway must keep
	 * reaching the kernel. */
	err = dp_xdp_sync_addrs(ctx);
	if (err)
		goto fail_ctx;
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		struct dp_xdp_if v = {
			.role = p == DP_IN ? DP_ROLE_INSIDE : DP_ROLE_OUTSIDE,
			.xsk_base = p == DP_IN ? DP_XSK_BASE_INSIDE : DP_XSK_BASE_OUTSIDE,
		};
		uint32_t k = (uint32_t)ctx->ifc[p].ifindex;

		if (bpf_map_update_elem(x->ifaces_fd, &k, &v, BPF_ANY)) {
			err = -errno;
			goto fail_ctx;
		}
	}
	for (unsigned p = 0; p < DP_NPORTS; p++) {
		err = attach(x, ctx, p);
		if (err)
			goto fail_ctx;
	}
	dp_log(LOG_INFO, "XDP program %s loaded", path);
	return 0;
fail_ctx:
	dp_xdp_unload(ctx);
	return err;
fail:
	if (x->nl_fd >= 0)
		close(x->nl_fd);
	bpf_object__close(x->obj);
	free(x->own);
	free(x->own_ovf);
	free(x->lbuf);
	free(x);
	return err;
}

int dp_xdp_add_xsk(struct dp_ctx *ctx, unsigned port, unsigned queue, struct xsk_socket *xsk)
{
	struct dp_xdp *x = ctx->xdp;
	uint32_t key = (port == DP_IN ? DP_XSK_BASE_INSIDE : DP_XSK_BASE_OUTSIDE) + queue;
	int fd = xsk_socket__fd(xsk);

	if (bpf_map_update_elem(x->xsks_fd, &key, &fd, BPF_ANY))
		return -errno;
	return 0;
}

struct addr_set {
	struct dp_xdp_addr a[DP_LOCAL_ADDR_MAX];
	unsigned n;
	int inside;                  /* ifindex of the inside interface */
	struct dp_srcaddr src;
};

static void collect(uint8_t family, const uint8_t *addr, const struct dp_nl_addr_info *info, void *arg)
{
	struct addr_set *s = arg;
	struct dp_xdp_addr *k;

	if (info->ifindex == s->inside && info->own && info->scope == 0) {
		if (family == AF_INET && s->src.n4 < DP_SRC_MAX)
			memcpy(s->src.v4[s->src.n4++], addr, 4);
		else if (family == AF_INET6 && s->src.n6 < DP_SRC_MAX)
			memcpy(s->src.v6[s->src.n6++], addr, 16);
	}

	if (s->n >= DP_LOCAL_ADDR_MAX)
		return;
	k = &s->a[s->n];
	memset(k, 0, sizeof(*k));
	k->family = family == AF_INET ? DP_AF_INET : DP_AF_INET6;
	memcpy(k->addr, addr, family == AF_INET ? 4 : 16);
	/* once each: an IPv4 address comes as IFA_LOCAL and IFA_ADDRESS, and two interfaces may share
	 * one; a copy would take a place of the DP_LOCAL_ADDR_MAX (and be counted twice by local_spd) */
	for (unsigned i = 0; i < s->n; i++)
		if (!memcmp(&s->a[i], k, sizeof(*k)))
			return;
	s->n++;
}

int dp_xdp_sync_addrs(struct dp_ctx *ctx)
{
	struct dp_xdp *x = ctx->xdp;
	struct addr_set *s = calloc(1, sizeof(*s));
	struct dp_xdp_addr key, next;
	int err;
	bool first = true;

	if (!s)
		return -ENOMEM;
	s->inside = ctx->ifc[DP_IN].ifindex;
	err = dp_nl_addrs(x->nl_fd, &x->nl_seq, collect, s);
	if (err < 0)
		goto out;
	{
		unsigned other = !atomic_load(&ctx->src_cur);

		ctx->src[other] = s->src;
		atomic_store_explicit(&ctx->src_cur, other, memory_order_release);
	}
	/* The local SPD for the new set before the program sees a new address: traffic to it is
	 * never passed unchecked. */
	memcpy(x->own, s->a, s->n * sizeof(*s->a));
	x->n_own = s->n;
	/* on failure ctx->local_spd_stale has the next sync build it again, every policy read afresh */
	err = dp_xdp_local_spd(ctx);
	/* Add the new set before removing what is gone, so an address that stays is never missing. */
	for (unsigned i = 0; i < s->n; i++) {
		uint32_t v = 1 | (x->own_ovf[i] ? DP_XDP_ADDR_OVERFLOW : 0);

		if (bpf_map_update_elem(x->addrs_fd, &s->a[i], &v, BPF_ANY)) {
			err = -errno;
			goto out;
		}
	}
	for (;;) {
		bool keep = false;

		if (bpf_map_get_next_key(x->addrs_fd, first ? NULL : &key, &next))
			break;
		first = false;
		for (unsigned i = 0; i < s->n && !keep; i++)
			keep = memcmp(&s->a[i], &next, sizeof(next)) == 0;
		if (!keep) {
			bpf_map_delete_elem(x->addrs_fd, &next);
			first = true; /* iteration restarts after a delete */
			continue;
		}
		key = next;
	}
	err = 0;
out:
	free(s);
	return err;
}

int dp_xdp_stats(struct dp_ctx *ctx, uint64_t *pass, uint64_t *redirect)
{
	struct dp_xdp *x = ctx->xdp;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;
	uint32_t k;

	*pass = *redirect = 0;
	if (!x || ncpu <= 0)
		return -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (k = 0; k < DP_XDP_STAT_MAX; k++) {
		uint64_t sum = 0;

		if (bpf_map_lookup_elem(x->stats_fd, &k, v) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += v[c];
		if (k == DP_XDP_STAT_PASS)
			*pass = sum;
		else
			*redirect = sum;
	}
	free(v);
	return 0;
}

int dp_xdp_map_fd(struct dp_ctx *ctx, const char *name)
{
	struct dp_xdp *x = ctx->xdp;
	int fd = x ? bpf_object__find_map_fd_by_name(x->obj, name) : -1;

	return fd < 0 ? -ENOENT : fd;
}

static void spi_key(struct dp_xdp_spi_key *k, uint32_t spi, uint8_t proto,
		    const struct sadb_addr *dst)
{
	memset(k, 0, sizeof(*k));
	k->spi = htonl(spi);
	k->proto = proto;
	k->family = dst->family == AF_INET ? DP_AF_INET : DP_AF_INET6;
	memcpy(k->dst, dst->a.b, dst->family == AF_INET ? 4 : 16);
}

static void spi_filter_set(struct dp_xdp *x, bool on)
{
	uint32_t zero = 0, v = on ? DP_XDP_CONF_SPI_FILTER : 0;

	bpf_map_update_elem(x->conf_fd, &zero, &v, BPF_ANY);
}

int dp_xdp_spi_add(struct dp_ctx *ctx, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	struct dp_xdp *x = ctx->xdp;
	struct dp_xdp_spi_key k;
	uint32_t one = 1;

	if (!x || x->spi_broken)
		return 0;
	spi_key(&k, spi, proto, dst);
	if (bpf_map_update_elem(x->spis_fd, &k, &one, BPF_ANY) == 0)
		return 0;
	/* Fail open to the dataplane, never closed: a worker that holds the SA must see its
	 * packets. The workers count unknown SPIs themselves from here on. */
	x->spi_broken = true;
	spi_filter_set(x, false);
	dp_log(LOG_WARNING, "XDP SPI filter off: cannot add SPI 0x%08x: %s", spi, strerror(errno));
	return -errno;
}

void dp_xdp_spi_del(struct dp_ctx *ctx, uint32_t spi, uint8_t proto, const struct sadb_addr *dst)
{
	struct dp_xdp *x = ctx->xdp;
	struct dp_xdp_spi_key k;

	if (!x)
		return;
	spi_key(&k, spi, proto, dst);
	bpf_map_delete_elem(x->spis_fd, &k);
}

void dp_xdp_spi_filter(struct dp_ctx *ctx, bool on)
{
	struct dp_xdp *x = ctx->xdp;

	if (x)
		spi_filter_set(x, on && !x->spi_broken);
}

/* The program's local SPD drops of the outside queue of worker i since the last fold. */
static void fold_local(struct dp_xdp *x, struct dp_worker *w, unsigned i)
{
	uint32_t key = DP_XSK_BASE_OUTSIDE + w->queue;
	struct dp_xdp_local_drops sum = { 0, 0 }, *seen = &x->local_seen[i];

	if (bpf_map_lookup_elem(x->local_drops_fd, &key, x->lbuf))
		return;
	for (int c = 0; c < x->ncpu; c++) {
		sum.protect += x->lbuf[c].protect;
		sum.discard += x->lbuf[c].discard;
	}
	if (sum.protect == seen->protect && sum.discard == seen->discard)
		return;
	/* the same bookkeeping as the dataplane's SPD for plaintext from the outside (dp_spd_in) */
	dp_count_rx(w, DP_OUT, (uint32_t)(sum.protect - seen->protect + sum.discard - seen->discard));
	DP_STAT(w, drops[SADB_DROP_POLICY_MISMATCH], sum.protect - seen->protect);
	DP_STAT(w, drops[SADB_DROP_POLICY_DISCARD], sum.discard - seen->discard);
	*seen = sum;
}

void dp_xdp_fold_drops(struct dp_ctx *ctx)
{
	struct dp_xdp *x = ctx->xdp;

	if (!x)
		return;
	for (unsigned i = 0; i < ctx->n_workers && i < DP_MAX_WORKERS; i++) {
		struct dp_worker *w = &ctx->w[i];
		uint32_t key = DP_XSK_BASE_OUTSIDE + w->queue;
		uint64_t n = 0, d;

		fold_local(x, w, i);
		if (bpf_map_lookup_elem(x->spi_drops_fd, &key, &n) || n <= x->spi_seen[i])
			continue;
		d = n - x->spi_seen[i];
		x->spi_seen[i] = n;
		/* the program is the first stage of the queue's worker: received, dropped bad_spi */
		/* atomic adds: the worker adds to the same counters at the same time */
		dp_count_rx(w, DP_OUT, (uint32_t)d);
		DP_STAT(w, drops[SADB_DROP_BAD_SPI], d);
	}
}

uint64_t dp_xdp_spi_drops(struct dp_ctx *ctx)
{
	struct dp_xdp *x = ctx->xdp;
	uint64_t sum = 0;

	if (!x)
		return 0;
	for (unsigned i = 0; i < ctx->n_workers && i < DP_MAX_WORKERS; i++)
		sum += x->spi_seen[i];
	return sum;
}

/* A prefix as the program compares it: the masked address and the mask, in network order. */
static void lspd_prefix(uint32_t a[4], uint32_t m[4], const struct sadb_addr *p, unsigned plen)
{
	unsigned max = p->family == AF_INET ? 32 : 128;
	int bits = (int)(plen < max ? plen : max);

	for (int w = 0; w < 4; w++) {
		int b = bits - 32 * w;

		m[w] = htonl(b <= 0 ? 0 : b >= 32 ? 0xffffffffu : ~(0xffffffffu >> b));
		a[w] = p->a.w[w] & m[w];
	}
}

static void lspd_entry(struct dp_xdp_lspd *r, const struct sadb_policy *p)
{
	const struct sadb_selector *s = &p->sel;
	uint8_t f = s->src.family ? s->src.family : s->dst.family;

	memset(r, 0, sizeof(*r));
	r->family = f == AF_INET ? DP_AF_INET : f == AF_INET6 ? DP_AF_INET6 : 0;
	r->proto = s->proto;
	r->sport_lo = s->sport_lo;
	r->sport_hi = s->sport_hi;
	r->dport_lo = s->dport_lo;
	r->dport_hi = s->dport_hi;
	r->verdict = p->action == SADB_ACT_BYPASS ? DP_XDP_LSPD_BYPASS :
		     p->action == SADB_ACT_PROTECT ? DP_XDP_LSPD_PROTECT : DP_XDP_LSPD_DISCARD;
	if (s->src.family)
		lspd_prefix(r->src, r->smask, &s->src, s->src_plen);
	if (s->dst.family)
		lspd_prefix(r->dst, r->dmask, &s->dst, s->dst_plen);
}

/* Whether entry r's destination selector holds address a. */
static bool lspd_covers(const struct dp_xdp_lspd *r, const struct dp_xdp_addr *a)
{
	bool in = !r->family || r->family == a->family;

	for (int w = 0; w < 4 && in; w++) {
		uint32_t v;

		memcpy(&v, a->addr + 4 * w, 4);
		in = (v & r->dmask[w]) == r->dst[w];
	}
	return in;
}

/* Whether entry r's destination selector holds one of the gateway's addresses. */
static bool lspd_covers_own(const struct dp_xdp *x, const struct dp_xdp_lspd *r)
{
	for (unsigned i = 0; i < x->n_own; i++)
		if (lspd_covers(r, &x->own[i]))
			return true;
	return false;
}

/* Sets (set) or clears the overflow mark of the own addresses whose want[i] is set (clear: not
 * set), in the addresses the map holds now (an address of x->own not yet added gets its mark when
 * dp_xdp_sync_addrs adds it). */
static int lspd_mark(struct dp_xdp *x, const uint8_t *want, bool set)
{
	for (unsigned i = 0; i < x->n_own; i++) {
		uint32_t v = 1 | (set ? DP_XDP_ADDR_OVERFLOW : 0);

		if (!want[i] != !set)
			continue;
		if (bpf_map_update_elem(x->addrs_fd, &x->own[i], &v, BPF_EXIST) && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* The SPD's order (sadb_policy_lookup): lower priority value first, then lower id. */
static int spd_order(const void *a, const void *b)
{
	const struct sadb_policy *p = a, *q = b;

	if (p->priority != q->priority)
		return p->priority < q->priority ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

int dp_xdp_local_spd(struct dp_ctx *ctx)
{
	struct dp_xdp *x = ctx->xdp;
	struct sadb_policy p, *v = NULL;
	struct dp_xdp_lspd r;
	size_t n = 0, cap = 0;
	uint32_t cursor = 0, half, base, conf, zero = 0;
	uint8_t ovf[DP_LOCAL_ADDR_MAX];
	unsigned n_ovf = 0;
	bool flipped = false;
	int err = 0;

	if (!x || !ctx->db)
		return 0;
	while ((err = sadb_policy_next(ctx->db, &cursor, &p)) == 0) {
		if (p.dir != SADB_DIR_IN)
			continue;
		lspd_entry(&r, &p);
		if (!lspd_covers_own(x, &r))
			continue;
		if (n == cap) {
			struct sadb_policy *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv) {
				err = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n++] = p;
	}
	/* a policy that could not be read may be one that protects: the table in use stays */
	if (err != -ENOENT)
		goto out;
	err = 0;
	if (n)
		qsort(v, n, sizeof(*v), spd_order);
	/* fill the half the program is not reading, then flip to it with one word */
	half = x->lspd_conf & DP_XDP_LSPD_HALF ? 0 : DP_XDP_LSPD_HALF;
	base = half ? DP_XDP_LSPD_MAX : 0;
	for (uint32_t i = 0; i < n && i < DP_XDP_LSPD_MAX; i++) {
		uint32_t k = base + i;

		lspd_entry(&r, &v[i]);
		if (bpf_map_update_elem(x->lspd_fd, &k, &r, BPF_ANY)) {
			err = -errno;
			goto out;
		}
	}
	/* The policies left out: the addresses they cover fail closed (a packet to one of them that
	 * no entry matches may match a policy left out), the others keep the SPD's answer, BYPASS.
	 * The marks that tighten go in before the flip and those that loosen after it, so the
	 * program never meets a table with a mark looser than that table needs. */
	memset(ovf, 0, DP_LOCAL_ADDR_MAX);
	for (size_t i = DP_XDP_LSPD_MAX; i < n; i++) {
		lspd_entry(&r, &v[i]);
		for (unsigned a = 0; a < x->n_own; a++)
			if (!ovf[a] && lspd_covers(&r, &x->own[a]))
				ovf[a] = 1, n_ovf++;
	}
	err = lspd_mark(x, ovf, true);
	if (err)
		goto out;
	conf = (uint32_t)(n < DP_XDP_LSPD_MAX ? n : DP_XDP_LSPD_MAX) | half;
	if (bpf_map_update_elem(x->lspd_conf_fd, &zero, &conf, BPF_ANY)) {
		err = -errno;
		goto out;
	}
	x->lspd_conf = conf;
	flipped = true;
	memcpy(x->own_ovf, ovf, DP_LOCAL_ADDR_MAX);
	/* a mark left on is stricter than needed, never looser: the next sync builds it all again */
	err = lspd_mark(x, ovf, false);
	if (err)
		dp_log(LOG_WARNING, "local SPD: an address's overflow mark not cleared: %s; its plaintext "
		       "fails closed until the next build", strerror(-err));
	if (n > DP_XDP_LSPD_MAX && !x->lspd_warned)
		dp_log(LOG_WARNING, "%zu inbound policies cover the gateway's own addresses, the XDP "
		       "program holds the first %u: plaintext to the %u address(es) the others cover "
		       "that none of them matches is dropped (policy_mismatch)", n, DP_XDP_LSPD_MAX, n_ovf);
	x->lspd_warned = n > DP_XDP_LSPD_MAX;
out:
	if (err) {
		if (!flipped)
			dp_log(LOG_WARNING, "local SPD not built: %s; the table in use stays",
			       strerror(-err));
		/* an address dp_xdp_sync_addrs adds before the next build fails closed */
		memset(x->own_ovf, 1, DP_LOCAL_ADDR_MAX);
	}
	ctx->local_spd_stale = err != 0;
	free(v);
	return err;
}

void dp_xdp_unload(struct dp_ctx *ctx)
{
	struct dp_xdp *x = ctx->xdp;

	if (!x)
		return;
	for (unsigned p = 0; p < DP_NPORTS; p++)
		if (x->attached[p]) {
			int err = bpf_xdp_detach(ctx->ifc[p].ifindex, x->attached[p], NULL);

			if (err)
				dp_log(LOG_WARNING, "%s: XDP detach failed: %s", ctx->ifc[p].name,
				       strerror(-err));
			else
				dp_log(LOG_INFO, "%s: XDP detached", ctx->ifc[p].name);
		}
	if (x->nl_fd >= 0)
		close(x->nl_fd);
	bpf_object__close(x->obj);
	free(x->own);
	free(x->own_ovf);
	free(x->lbuf);
	free(x);
	ctx->xdp = NULL;
}

bool dp_xdp_is_local(struct dp_ctx *ctx, uint8_t family, const uint8_t *addr)
{
	struct dp_xdp_addr k;
	uint32_t v;

	if (ctx->local_addrs_fd < 0)
		return false;
	memset(&k, 0, sizeof(k));
	k.family = family == AF_INET ? DP_AF_INET : DP_AF_INET6;
	memcpy(k.addr, addr, family == AF_INET ? 4 : 16);
	return bpf_map_lookup_elem(ctx->local_addrs_fd, &k, &v) == 0;
}
