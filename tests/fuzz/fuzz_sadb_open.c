/* tests/fuzz/fuzz_sadb_open.c: libFuzzer target for libsadb's readers on a corrupted segment. At
 * start a small valid SADB is built (SAs of both families, policies of several prefix lengths, a
 * delete, so the slots, SPI hash, SPD index and change journal all hold data); each input patches
 * bytes of that file, then every reader path that ipsecctl and xipsecd use runs over it through
 * both read-only handles (SADB_RDONLY, SADB_RUNTIME): open, info, SA iteration/get/lookup, policy
 * iteration/get/lookup (indexed and linear), the change journal, the worker stats and the runtime
 * area. Errors are fine; a crash, a sanitizer report or a hang is not. The patched bytes are put
 * back after each input, so inputs do not depend on each other.
 *
 * Input: byte 0 = flags (bit 0: recompute the checksums of every SA and policy copy after
 * patching, so that garbage inside records reaches the code behind the checksum test), then
 * records of [region (1 byte), offset (2 bytes, little-endian, modulo the region's size),
 * length-1 (1 byte, low 4 bits), bytes]. Regions: the header's identity and layout, its writer
 * and published state, SA slots, SA meta, runtime, SPI hash, policy slots, policy meta, both SPD
 * index buffers, the journal, the dataplane stats area. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sadb/sadb_int.h"

#define NSA  12
#define NPOL 12

static char path[256];
static int fd = -1;
static uint8_t *orig;
static size_t fsize;
static struct sadb_hdr H;
static uint64_t off_dp;

struct region { uint64_t off, len; };
static struct region regions[16];
static unsigned nregions;

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz_sadb_open: %s: %s\n", what, msg);
	abort();
}

static struct sadb_addr addr(const char *s)
{
	struct sadb_addr a;

	if (sadb_addr_parse(s, &a))
		die("bad address", s);
	return a;
}

static void sel_any(struct sadb_selector *sel)
{
	memset(sel, 0, sizeof(*sel));
	sel->sport_hi = sel->dport_hi = 65535;
}

static struct sadb_sa mk_sa(uint32_t spi, bool v6)
{
	struct sadb_sa sa;

	memset(&sa, 0, sizeof(sa));
	sa.spi = spi;
	sa.proto = spi & 1 ? SADB_PROTO_AH : SADB_PROTO_ESP;
	sa.mode = SADB_MODE_TUNNEL;
	sa.dir = spi & 2 ? SADB_DIR_IN : SADB_DIR_OUT;
	sa.state = SADB_STATE_MATURE;
	sa.reqid = spi & 7;
	sa.src = addr(v6 ? "2001:db8::1" : "192.0.2.1");
	sa.dst = addr(v6 ? "2001:db8::2" : "192.0.2.2");
	if (sa.proto == SADB_PROTO_ESP) {
		sa.enc_alg = SADB_ENC_AES_GCM16;
		sa.enc_key_len = 16;
		sa.salt_len = 4;
	} else {
		sa.auth_alg = SADB_AUTH_HMAC_SHA256_128;
		sa.auth_key_len = 32;
	}
	for (int i = 0; i < 32; i++)
		sa.enc_key[i] = sa.auth_key[i] = (uint8_t)(spi * 7 + i);
	sa.replay_window = 64;
	sel_any(&sa.sel);
	return sa;
}

static struct sadb_policy mk_pol(unsigned k)
{
	static const char *const src[] = { "10.1.0.0", "10.1.2.0", "2001:db8:1::", "0.0.0.0" };
	static const uint8_t plen[] = { 16, 24, 48, 0 };
	struct sadb_policy p;
	unsigned f = k % 4;

	memset(&p, 0, sizeof(p));
	p.dir = (uint8_t)(1 + k % 3);
	p.action = k % 5 == 4 ? SADB_ACT_BYPASS : SADB_ACT_PROTECT;
	p.proto = SADB_PROTO_ESP;
	p.mode = SADB_MODE_TUNNEL;
	p.priority = 100 + k;
	p.reqid = k & 7;
	sel_any(&p.sel);
	p.sel.src = addr(src[f]);
	p.sel.src_plen = plen[f];
	p.sel.dst = addr(f == 2 ? "2001:db8:2::" : "10.2.0.0");
	p.sel.dst_plen = f == 2 ? 48 : 16;
	if (f == 3)
		p.sel.src.family = p.sel.dst.family = 0, p.sel.dst_plen = 0;
	if (k & 8) {
		p.sel.proto = 17;
		p.sel.dport_lo = p.sel.dport_hi = (uint16_t)(500 + k);
	}
	p.tun_src = addr(f == 2 ? "2001:db8::1" : "192.0.2.1");
	p.tun_dst = addr(f == 2 ? "2001:db8::2" : "192.0.2.2");
	return p;
}

static void build(void)
{
	struct sadb_params prm = { 16, 16 };
	struct sadb *db;
	char msg[256];
	const char *dir = getenv("TMPDIR");
	struct stat st;
	struct sadb_dp_stats *dp;

	snprintf(path, sizeof(path), "%s/xipsec-fuzz-sadb.%d", dir && *dir ? dir : "/tmp", (int)getpid());
	unlink(path);
	if (sadb_open(path, SADB_RDWR | SADB_CREATE, &prm, &db, msg, sizeof(msg)))
		die("create", msg);
	if (sadb_txn_begin(db))
		die("txn", sadb_errmsg(db));
	for (unsigned i = 0; i < NSA; i++) {
		struct sadb_sa sa = mk_sa(0x1000 + i, i % 3 == 2);
		if (sadb_sa_add(db, &sa, NULL))
			die("sa_add", sadb_errmsg(db));
	}
	for (unsigned k = 0; k < NPOL; k++) {
		struct sadb_policy p = mk_pol(k);
		uint32_t id;
		if (sadb_policy_add(db, &p, &id))
			die("policy_add", sadb_errmsg(db));
	}
	if (sadb_txn_commit(db))
		die("commit", sadb_errmsg(db));
	/* A few more generations: a delete (a freed slot in the ring), one more SA and policy. */
	struct sadb_sa sa3 = mk_sa(0x1003, false);
	if (sadb_sa_delete(db, sa3.spi, sa3.proto, &sa3.dst))
		die("sa_delete", sadb_errmsg(db));
	struct sadb_sa sa = mk_sa(0x2000, true);
	if (sadb_sa_add(db, &sa, NULL))
		die("sa_add", sadb_errmsg(db));
	struct sadb_policy p = mk_pol(13);
	if (sadb_policy_add(db, &p, NULL) || sadb_policy_delete(db, 2))
		die("policy", sadb_errmsg(db));
	sadb_runtime(db, 0)->packets = 5;
	dp = sadb_dp_stats(db);
	dp->n_workers = 2;
	dp->w[1].rx[SADB_PORT_INSIDE] = 9;
	off_dp = (uint64_t)((uint8_t *)dp - db->base);
	sadb_close(db);

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		die("reopen", path);
	fsize = (size_t)st.st_size;
	orig = malloc(fsize);
	if (!orig || pread(fd, orig, fsize, 0) != (ssize_t)fsize)
		die("read", path);
	memcpy(&H, orig, sizeof(H));
#define R(o, l) regions[nregions++] = (struct region){ (o), (l) }
	R(0, offsetof(struct sadb_hdr, lock));                                  /* identity, layout */
	R(offsetof(struct sadb_hdr, lock), offsetof(struct sadb_hdr, journal) - offsetof(struct sadb_hdr, lock));
	R(H.off_sa, (uint64_t)H.max_sa * H.sa_slot_size);
	R(H.off_sa_meta, (uint64_t)H.max_sa * sizeof(struct sadb_sa_meta));
	R(H.off_rt, (uint64_t)H.max_sa * H.rt_size);
	R(H.off_hash, (uint64_t)H.hash_nbuckets * SADB_HASH_WAYS * 8);
	R(H.off_pol, (uint64_t)H.max_policy * H.pol_slot_size);
	R(H.off_pol_meta, (uint64_t)H.max_policy * sizeof(struct sadb_pol_meta));
	R(H.off_idx[0], 4096);  /* index header, tuples, hash slots: the part lookups follow */
	R(H.off_idx[1], 4096);
	R(H.off_idx[0], H.idx_size);
	R(offsetof(struct sadb_hdr, journal), 64 * sizeof(struct sadb_change));
	R(off_dp, sizeof(struct sadb_dp_stats));
#undef R
}

static void cleanup(void)
{
	if (path[0])
		unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	build();
	atexit(cleanup);
	return 0;
}

/* Recompute every copy's checksum with libsadb's own function, as a writer would have. */
static void fix_sums(uint8_t *img)
{
	size_t ch = sizeof(struct sadb_copy_hdr);
	size_t sa_copy = (ch + sizeof(struct sadb_sa) + 7) / 8 * 8;
	size_t pol_copy = (ch + sizeof(struct sadb_policy) + 7) / 8 * 8;

	for (uint32_t i = 0; i < H.max_sa; i++)
		for (int c = 0; c < 2; c++) {
			struct sadb_sa *sa = (struct sadb_sa *)(img + H.off_sa + (size_t)i * H.sa_slot_size + 24 +
								(size_t)c * sa_copy + ch);
			sa->checksum = sadb__sa_checksum(sa);
		}
	for (uint32_t i = 0; i < H.max_policy; i++)
		for (int c = 0; c < 2; c++) {
			struct sadb_policy *p = (struct sadb_policy *)(img + H.off_pol + (size_t)i * H.pol_slot_size +
								       24 + (size_t)c * pol_copy + ch);
			p->checksum = sadb__policy_checksum(p);
		}
}

static volatile uint64_t sink;

static void read_all(const struct sadb *db)
{
	struct sadb_info info;
	struct sadb_sa sa;
	struct sadb_policy p;
	struct sadb_change ch[64];
	struct sadb_worker_stats ws;
	uint32_t cur, slot;
	uint64_t since;
	int n;

	if (sadb_info(db, &info) == 0)
		sink += info.n_sa + info.n_policy + info.generation;
	sink += sadb_generation(db);
	cur = 0;
	for (unsigned k = 0; k <= H.max_sa + 1 && sadb_sa_next(db, &cur, &sa, &slot) == 0; k++) {
		struct sadb_sa again;
		struct sadb_runtime *rt = sadb_runtime(db, slot);
		if (rt)
			sink += rt->packets + rt->replay_bitmap[SADB_REPLAY_MAX / 64 - 1] + rt->drops[SADB_DROP_MAX - 1];
		if (sadb_sa_lookup(db, sa.spi, sa.proto, &sa.dst, &again, NULL) == 0)
			sink += again.spi;
	}
	for (uint32_t s = 0; s <= H.max_sa; s++)
		if (sadb_sa_get(db, s, &sa) == 0)
			sink += sa.spi;
	for (unsigned i = 0; i < NSA; i++) {
		struct sadb_sa want = mk_sa(0x1000 + i, i % 3 == 2);
		if (sadb_sa_lookup(db, want.spi, want.proto, &want.dst, &sa, &slot) == 0)
			sink += slot;
	}
	cur = 0;
	for (unsigned k = 0; k <= H.max_policy + 1 && sadb_policy_next(db, &cur, &p) == 0; k++)
		if (sadb_policy_get(db, p.id, &p) == 0)
			sink += p.id;
	for (uint32_t id = 0; id < 40; id++)
		if (sadb_policy_get(db, id, &p) == 0)
			sink += p.id;
	static const char *const pk[][2] = {
		{ "10.1.2.3", "10.2.0.9" }, { "10.1.9.9", "10.2.3.4" }, { "2001:db8:1::5", "2001:db8:2::7" },
		{ "192.0.2.1", "198.51.100.1" },
	};
	for (unsigned k = 0; k < sizeof(pk) / sizeof(pk[0]); k++)
		for (uint8_t dir = SADB_DIR_IN; dir <= SADB_DIR_FWD; dir++) {
			struct sadb_pkt_sel ps;
			memset(&ps, 0, sizeof(ps));
			ps.src = addr(pk[k][0]);
			ps.dst = addr(pk[k][1]);
			ps.proto = 17;
			ps.sport = 4000;
			ps.dport = (uint16_t)(508 + k);
			if (sadb_policy_lookup(db, dir, &ps, &p) == 0)
				sink += p.id;
			if (sadb_policy_lookup_linear(db, dir, &ps, &p) == 0)
				sink += p.id;
		}
	since = 0;
	for (int k = 0; k < 8 && (n = sadb_changes(db, &since, ch, 64)) > 0; k++)
		sink += ch[n - 1].index;
	since = 1;
	if (sadb_changes(db, &since, ch, 3) > 0)
		sink += ch[0].op;
	n = sadb_worker_stats_sum(db, &ws);
	sink += sadb_worker_rx_packets(&ws) + (uint64_t)n;
	const struct sadb_dp_stats *d = sadb_dp_stats(db);
	if (d)
		sink += d->pid + d->n_workers;
	sink += sadb_errmsg(db)[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *img;
	struct { uint64_t off; size_t len; } touched[64];
	unsigned nt = 0;
	bool sums;
	size_t i = 1;

	if (size < 1)
		return 0;
	if (!img && !(img = malloc(fsize)))
		abort();
	sums = data[0] & 1;
	memcpy(img, orig, fsize);
	while (i + 4 <= size && nt < 62) {
		const struct region *r = &regions[data[i] % nregions];
		uint64_t off = r->off + ((uint64_t)(data[i + 1] | data[i + 2] << 8) % r->len);
		size_t len = (size_t)(data[i + 3] & 15) + 1;

		i += 4;
		if (len > size - i)
			len = size - i;
		if (off + len > fsize)
			len = (size_t)(fsize - off);
		memcpy(img + off, data + i, len);
		touched[nt].off = off;
		touched[nt++].len = len;
		i += len;
	}
	/* The SA and policy tables as a whole when the checksums are redone. */
	if (sums) {
		fix_sums(img);
		touched[nt].off = H.off_sa;
		touched[nt++].len = (size_t)H.max_sa * H.sa_slot_size;
		touched[nt].off = H.off_pol;
		touched[nt++].len = (size_t)H.max_policy * H.pol_slot_size;
	}
	for (unsigned k = 0; k < nt; k++)
		if (pwrite(fd, img + touched[k].off, touched[k].len, (off_t)touched[k].off) != (ssize_t)touched[k].len)
			abort();

	static const int modes[] = { SADB_RDONLY, SADB_RUNTIME };
	for (unsigned m = 0; m < 2; m++) {
		struct sadb *db;
		char msg[256];

		if (sadb_open(path, modes[m], NULL, &db, msg, sizeof(msg)) == 0) {
			read_all(db);
			sadb_close(db);
		} else if (!msg[0]) {
			fprintf(stderr, "fuzz: sadb_open failed without a message\n");
			abort();
		}
	}
	for (unsigned k = 0; k < nt; k++)
		if (pwrite(fd, orig + touched[k].off, touched[k].len, (off_t)touched[k].off) != (ssize_t)touched[k].len)
			abort();
	return 0;
}
