/* tests/unit/test_esp_neg.c: the ESP/AH engine's behaviour on bad input and at its edges: tampered
 * ICV and ciphertext, unknown SPI, replays, too-old numbers, truncation at every length, bad padding
 * and next header (each dropped with its reason and no state changed), the replay window against a
 * naive reference, ESN inference, sequence number reservation and exhaustion, the MTU check, AH's
 * mutable fields (also in bursts mixing AH's fast and general paths), RFC 6040 ECN, DF/TTL, the parse helpers, the burst contract, and a long run
 * through ipsec-mb's job ring (the Debian 1.3 wrap bug) checked against OpenSSL. */
#include "config.h"

#include <inttypes.h>

#include "tests/unit/test_esp_util.h"
#include "dataplane/engine/esp_internal.h"

static const struct xf *xf_by_name(const char *name)
{
	for (size_t i = 0; i < N_XFORMS; i++)
		if (!strcmp(xforms[i].name, name))
			return &xforms[i];
	fail_msg("no transform %s", name);
	return NULL;
}

struct pair {
	struct esp_sa *out, *in;
	struct sadb_runtime *rto, *rti;
	struct sadb_sa so, si;
};

static void pair_make(struct pair *p, const struct xf *x, uint8_t mode, int ofam, uint32_t flags, bool natt,
		      uint32_t window, enum esp_backend b)
{
	mk_sa(&p->so, x, mode, SADB_DIR_OUT, ofam, flags, natt, 3);
	mk_sa(&p->si, x, mode, SADB_DIR_IN, ofam, flags, natt, 3);
	p->si.replay_window = window;
	p->rto = rt_new();
	p->rti = rt_new();
	struct esp_sa_opts o = { .backend = b };
	assert_int_equal(esp_sa_create(&p->so, p->rto, &o, &p->out), 0);
	assert_int_equal(esp_sa_create(&p->si, p->rti, &o, &p->in), 0);
}

static void pair_free(struct pair *p)
{
	esp_sa_destroy(p->out);
	esp_sa_destroy(p->in);
	free(p->rto);
	free(p->rti);
}

/* Protect one UDP packet of family ifam with `size` bytes of payload into f. */
static void protect(struct pair *p, struct frame *f, int ifam, uint32_t size, uint32_t seed)
{
	uint8_t pkt[2000];
	uint32_t len = mk_udp(pkt, ifam, size, 0, seed);
	frame_set(f, pkt, len);
	struct esp_pkt *pk = &f->p;
	assert_int_equal(esp_outbound_burst(p->out, &pk, 1), 1);
}

/* Run one packet inbound; its drop reason. */
static unsigned deliver(struct pair *p, const uint8_t *data, uint32_t len)
{
	static struct frame f;
	frame_set(&f, data, len);
	struct esp_pkt *pk = &f.p;
	unsigned good = esp_inbound_burst(p->in, &pk, 1);
	return good ? SADB_DROP_NONE : f.p.drop;
}

static uint64_t drops_total(const struct sadb_runtime *rt)
{
	uint64_t t = 0;
	for (int i = 0; i < SADB_DROP_MAX; i++)
		t += rt->drops[i];
	return t;
}

/* The inbound state must be exactly as before (a copy taken earlier), drop counters aside. */
static void assert_state_same(const struct sadb_runtime *a, const struct sadb_runtime *b)
{
	assert_int_equal(a->replay_top, b->replay_top);
	assert_memory_equal(a->replay_bitmap, b->replay_bitmap, sizeof(a->replay_bitmap));
	assert_int_equal(a->packets, b->packets);
	assert_int_equal(a->bytes, b->bytes);
}

static const char *neg_xforms[] = {
	"esp aes-gcm-16-128", "esp chacha20-poly1305", "esp aes-gmac-128", "esp aes-cbc-128/sha1-96",
	"esp aes-ctr-128/sha1-96", "esp 3des-cbc/md5-96", "esp null/sha256-128", "ah hmac-sha1-96",
	"ah hmac-sha512-256", "ah aes-128-gmac",
};

/* Tampered ICV, tampered payload, tampered SPI, replay, truncation at every length: dropped with
 * the right reason, and the replay window, counters and packet count do not move. */
static void test_tamper(void **state)
{
	(void)state;
	for (size_t t = 0; t < sizeof(neg_xforms) / sizeof(neg_xforms[0]); t++)
		for (int esn = 0; esn < 2; esn++)
			for (int fam = 0; fam < 2; fam++) {
				const struct xf *x = xf_by_name(neg_xforms[t]);
				struct pair p;
				int ofam = fam ? AF_INET6 : AF_INET;
				pair_make(&p, x, SADB_MODE_TUNNEL, ofam, esn ? SADB_SAF_ESN : 0, false, 64,
					  ESP_BACKEND_AUTO);
				static struct frame f1, f2;
				protect(&p, &f1, AF_INET, 100, 1);
				protect(&p, &f2, AF_INET, 100, 2);
				uint8_t pkt[2000], bad[2000];
				uint32_t len = f1.p.len;
				memcpy(pkt, frame_data(&f1), len);
				/* Accept the second first, so the window is not empty. */
				assert_int_equal(deliver(&p, frame_data(&f2), f2.p.len), SADB_DROP_NONE);
				struct sadb_runtime before = *p.rti;

				uint32_t hl = ofam == AF_INET ? 20 : 40;
				/* ICV: last byte (ESP) or the ICV field inside AH. */
				memcpy(bad, pkt, len);
				if (x->proto == SADB_PROTO_ESP)
					bad[len - 1] ^= 0x01;
				else
					bad[hl + 12 + (x->auth >= SADB_AUTH_AES_128_GMAC ? 8 : 0)] ^= 0x80;
				assert_string_equal(dropname(deliver(&p, bad, len)), "ICV");
				assert_state_same(p.rti, &before);
				/* Ciphertext / payload. */
				memcpy(bad, pkt, len);
				bad[len - 40] ^= 0x10;
				assert_string_equal(dropname(deliver(&p, bad, len)), "ICV");
				assert_state_same(p.rti, &before);
				/* Sequence number (authenticated, also in the ESN high half's inference). */
				memcpy(bad, pkt, len);
				bad[hl + (x->proto == SADB_PROTO_ESP ? 7 : 11)] ^= 0x04;
				unsigned d = deliver(&p, bad, len);
				assert_true(d == SADB_DROP_ICV || d == SADB_DROP_REPLAY_OLD);
				assert_state_same(p.rti, &before);
				/* Unknown SPI. */
				memcpy(bad, pkt, len);
				bad[hl + (x->proto == SADB_PROTO_ESP ? 3 : 7)] ^= 0x01;
				assert_string_equal(dropname(deliver(&p, bad, len)), "BAD_SPI");
				assert_state_same(p.rti, &before);
				/* Truncation at every length, with the IP length left (inconsistent) and fixed. */
				for (uint32_t l = 0; l < len; l++) {
					memcpy(bad, pkt, len);
					d = deliver(&p, bad, l);
					assert_int_not_equal(d, SADB_DROP_NONE);
					if (l >= hl) {
						if (ofam == AF_INET)
							bad[2] = (uint8_t)(l >> 8), bad[3] = (uint8_t)l;
						else
							bad[4] = (uint8_t)((l - 40) >> 8), bad[5] = (uint8_t)(l - 40);
						d = deliver(&p, bad, l);
						assert_true(d == SADB_DROP_TRUNCATED || d == SADB_DROP_ICV ||
							    d == SADB_DROP_BAD_ENCAP || d == SADB_DROP_UNSUPPORTED);
					}
				}
				assert_state_same(p.rti, &before);
				/* The genuine packet still passes, then its replay is refused. */
				assert_int_equal(deliver(&p, pkt, len), SADB_DROP_NONE);
				assert_int_equal(p.rti->packets, before.packets + 1);
				before = *p.rti;
				assert_string_equal(dropname(deliver(&p, pkt, len)), "REPLAY");
				assert_state_same(p.rti, &before);
				assert_int_equal(p.rti->drops[SADB_DROP_REPLAY], 1);
				assert_true(p.rti->drops[SADB_DROP_ICV] >= 2);
				assert_int_equal(p.rti->drops[SADB_DROP_BAD_SPI], 1);
				pair_free(&p);
			}
}

/* Too old for the window, and a duplicate inside one burst. */
static void test_replay_old(void **state)
{
	(void)state;
	struct pair p;
	pair_make(&p, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, AF_INET, 0, false, 64,
		  ESP_BACKEND_AUTO);
	static struct frame fr[100];
	for (int i = 0; i < 100; i++)
		protect(&p, &fr[i], AF_INET, 20, (uint32_t)i);
	/* 100 (seq 100) first; then seq 36 is exactly 64 behind: too old; 37 fits. */
	assert_int_equal(deliver(&p, frame_data(&fr[99]), fr[99].p.len), SADB_DROP_NONE);
	struct sadb_runtime before = *p.rti;
	assert_string_equal(dropname(deliver(&p, frame_data(&fr[35]), fr[35].p.len)), "REPLAY_OLD");
	assert_state_same(p.rti, &before);
	assert_int_equal(deliver(&p, frame_data(&fr[36]), fr[36].p.len), SADB_DROP_NONE);
	/* One burst holding seq 50 twice: the first passes, the second is a replay. */
	static struct frame a, b;
	frame_set(&a, frame_data(&fr[49]), fr[49].p.len);
	frame_set(&b, frame_data(&fr[49]), fr[49].p.len);
	struct esp_pkt *pk[2] = { &a.p, &b.p };
	assert_int_equal(esp_inbound_burst(p.in, pk, 2), 1);
	assert_ptr_equal(pk[0], &a.p);
	assert_string_equal(dropname(b.p.drop), "REPLAY");
	pair_free(&p);
}

/* AH: one burst against the window as it stood before it (its checks read the top once): a
 * duplicate inside the burst, a number too old, one already received, two new ones; on the fast
 * path (no ESN) and the general one (ESN). */
static void test_ah_replay_burst(void **state)
{
	(void)state;
	static const char *names[] = { "ah hmac-sha256-128", "ah aes-128-gmac" };
	for (size_t t = 0; t < sizeof(names) / sizeof(names[0]); t++)
		for (int esn = 0; esn < 2; esn++) {
			struct pair p;
			pair_make(&p, xf_by_name(names[t]), SADB_MODE_TUNNEL, AF_INET, esn ? SADB_SAF_ESN : 0,
				  false, 4, ESP_BACKEND_AUTO);
			static struct frame fr[10], b[5];
			for (int i = 0; i < 10; i++)
				protect(&p, &fr[i], AF_INET, 40, (uint32_t)i);
			assert_int_equal(deliver(&p, frame_data(&fr[9]), fr[9].p.len), SADB_DROP_NONE);
			/* top 10, window 4: 7..9 may come, 6 and below are too old, 10 was received */
			static const int pick[5] = { 7, 7, 2, 9, 8 }; /* seq 8, 8, 3, 10, 9 */
			struct esp_pkt *pk[5];
			for (int i = 0; i < 5; i++) {
				frame_set(&b[i], frame_data(&fr[pick[i]]), fr[pick[i]].p.len);
				pk[i] = &b[i].p;
			}
			assert_int_equal(esp_inbound_burst(p.in, pk, 5), 2);
			assert_ptr_equal(pk[0], &b[0].p);
			assert_ptr_equal(pk[1], &b[4].p);
			assert_string_equal(dropname(b[1].p.drop), "REPLAY");
			/* with ESN a number under the window is taken for the next 2^32 (RFC 4303
			 * Appendix A.2), whose ICV then fails */
			assert_string_equal(dropname(b[2].p.drop), esn ? "ICV" : "REPLAY_OLD");
			assert_string_equal(dropname(b[3].p.drop), "REPLAY");
			/* the window moved by the burst's own updates only */
			assert_string_equal(dropname(deliver(&p, frame_data(&fr[8]), fr[8].p.len)), "REPLAY");
			assert_int_equal(deliver(&p, frame_data(&fr[6]), fr[6].p.len), SADB_DROP_NONE);
			pair_free(&p);
		}
}

/* Re-seal an ESP packet (tunnel, IPv4 outer, no ESN/NAT-T) after changing its plaintext with mod():
 * gives authentic packets with bad contents, which only the key holder can make. */
static uint32_t reseal(struct pair *p, uint8_t *pkt, uint32_t len, void (*mod)(uint8_t *pl, uint32_t *plen))
{
	struct esp_sa *in = p->in, *out = p->out;
	uint8_t *esp = pkt + 20;
	uint8_t *ivp = esp + 8, *pl = ivp + in->iv_len;
	uint32_t clen = len - 20 - 8 - in->iv_len - in->icv_len;
	struct esp_cop c;
	memset(&c, 0, sizeof(c));
	c.auth = esp;
	c.auth_len = 8 + in->iv_len + clen;
	c.data = pl;
	c.data_len = in->cipher == ESP_C_NULL ? 0 : clen;
	c.icv_in = pl + clen;
	c.tag = c.calc;
	if (in->kind == ESP_KIND_AEAD) {
		memcpy(c.iv, in->salt, 4);
		memcpy(c.iv + 4, ivp, 8);
		c.aad = esp;
		c.aad_len = 8;
	} else {
		memcpy(c.iv, ivp, in->iv_len);
	}
	in->ops->decrypt(&in->cs, &c, 1);
	assert_true(c.ok);
	mod(pl, &clen);
	len = 20 + 8 + in->iv_len + clen + in->icv_len;
	pkt[2] = (uint8_t)(len >> 8);
	pkt[3] = (uint8_t)len;
	pkt[10] = pkt[11] = 0;
	uint16_t cs = t_csum(pkt, 20);
	pkt[10] = (uint8_t)(cs >> 8);
	pkt[11] = (uint8_t)cs;
	c.auth_len = 8 + in->iv_len + clen;
	c.data_len = in->cipher == ESP_C_NULL ? 0 : clen;
	c.tag = pl + clen;
	out->ops->encrypt(&out->cs, &c, 1);
	assert_true(c.ok);
	return len;
}

static void mod_pad_byte(uint8_t *pl, uint32_t *clen) { pl[*clen - 3] ^= 0x40; /* >= 1 pad byte here */ }
static void mod_pad_len(uint8_t *pl, uint32_t *clen) { pl[*clen - 2] = (uint8_t)(*clen - 1); }
static void mod_nh_udp(uint8_t *pl, uint32_t *clen) { pl[*clen - 1] = IPPROTO_UDP; }
static void mod_nh_dummy(uint8_t *pl, uint32_t *clen) { pl[*clen - 1] = IPPROTO_NONE; }
static void mod_nh_v6(uint8_t *pl, uint32_t *clen) { pl[*clen - 1] = IPPROTO_IPV6; }
static void mod_inner_len(uint8_t *pl, uint32_t *clen) { pl[2] = 0x7f; }

static void test_bad_trailer(void **state)
{
	(void)state;
	static const struct {
		void (*mod)(uint8_t *, uint32_t *);
		const char *want;
	} cases[] = {
		{ mod_pad_byte, "BAD_PAD" },        /* RFC 4303 §2.4: padding must be 1, 2, 3, ... */
		{ mod_pad_len, "BAD_PAD" },         /* pad length beyond the payload */
		{ mod_nh_udp, "BAD_NEXT_HDR" },     /* tunnel mode carries IP only */
		{ mod_nh_dummy, "BAD_NEXT_HDR" },   /* dummy packet (§2.6): discarded */
		{ mod_nh_v6, "BAD_NEXT_HDR" },      /* says IPv6, holds IPv4 */
		{ mod_inner_len, "TRUNCATED" },     /* inner IP length beyond the payload */
	};
	const char *names[] = { "esp aes-gcm-16-128", "esp aes-cbc-128/sha1-96", "esp null/sha256-128" };
	for (size_t n = 0; n < 3; n++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct pair p;
			pair_make(&p, xf_by_name(names[n]), SADB_MODE_TUNNEL, AF_INET, 0, false, 64,
				  ESP_BACKEND_OPENSSL);
			static struct frame f;
			/* 21 bytes of payload: 49-byte inner packet, so there is padding to corrupt. */
			protect(&p, &f, AF_INET, 21, 9);
			uint8_t pkt[2000];
			uint32_t len = f.p.len;
			memcpy(pkt, frame_data(&f), len);
			len = reseal(&p, pkt, len, cases[i].mod);
			struct sadb_runtime before = *p.rti;
			unsigned d = deliver(&p, pkt, len);
			if (strcmp(dropname(d), cases[i].want))
				fail_msg("%s case %zu: got %s want %s", names[n], i, dropname(d), cases[i].want);
			assert_state_same(p.rti, &before);
			assert_int_equal(drops_total(p.rti), 1);
			pair_free(&p);
		}
}

/* Every padding byte is checked, whatever the pad length (0-15) and whichever path checks it (one
 * 8-byte load up to 8 bytes, a loop beyond): one byte changed at position k is BAD_PAD; the byte just
 * before the padding (payload) is not padding. */
static int pad_k;          /* padding byte to change, -1: the payload byte before the padding */
static bool pad_hit;       /* whether the packet had that byte */
static void mod_pad_at(uint8_t *pl, uint32_t *clen)
{
	uint32_t padlen = pl[*clen - 2];
	uint8_t *pad = pl + *clen - 2 - padlen;
	pad_hit = pad_k < 0 || (uint32_t)pad_k < padlen;
	if (pad_hit)
		pad[pad_k] ^= 0x40;
}

static void test_pad_each_byte(void **state)
{
	(void)state;
	const char *names[] = { "esp aes-gcm-16-128", "esp aes-cbc-128/sha1-96", "esp null/sha256-128" };
	unsigned checked = 0;
	for (size_t n = 0; n < 3; n++)
		for (uint32_t size = 20; size < 36; size++)
			for (pad_k = -1; pad_k < 15; pad_k++) {
				struct pair p;
				pair_make(&p, xf_by_name(names[n]), SADB_MODE_TUNNEL, AF_INET, 0, false, 64,
					  ESP_BACKEND_AUTO);
				static struct frame f;
				protect(&p, &f, AF_INET, size, 5);
				uint8_t pkt[2000];
				uint32_t len = f.p.len;
				memcpy(pkt, frame_data(&f), len);
				len = reseal(&p, pkt, len, mod_pad_at);
				if (pad_hit) {
					unsigned d = deliver(&p, pkt, len);
					const char *want = pad_k < 0 ? "NONE" : "BAD_PAD";
					if (strcmp(dropname(d), want))
						fail_msg("%s size %u byte %d: got %s want %s", names[n], size, pad_k,
							 dropname(d), want);
					checked++;
				}
				pair_free(&p);
			}
	assert_true(checked > 3 * 16); /* pad lengths up to 3 (GCM, NULL) and 15 (CBC) were seen */
}

/* The inline constant-time ICV compare: equal, or different in any one byte, for every length used
 * (12, 16, 24, 32) and the odd ones. */
static void test_icv_equal(void **state)
{
	(void)state;
	static const unsigned lens[] = { 1, 4, 7, 8, 12, 15, 16, 20, 24, 31, 32 };
	uint8_t a[32], b[32];
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		unsigned n = lens[l];
		for (unsigned i = 0; i < 32; i++)
			a[i] = b[i] = (uint8_t)(i * 37 + n);
		if (n < 32) {
			b[n] ^= 0xff; /* a byte past the length does not count */
			assert_true(esp_icv_equal(a, b, n));
			b[n] ^= 0xff;
		}
		for (unsigned i = 0; i < n; i++)
			for (unsigned bit = 0; bit < 8; bit++) {
				b[i] ^= (uint8_t)(1u << bit);
				assert_false(esp_icv_equal(a, b, n));
				b[i] ^= (uint8_t)(1u << bit);
			}
		assert_true(esp_icv_equal(a, b, n));
	}
}

/* The ring-bitmap window against a naive set of seen numbers, for several window sizes. */
static void test_replay_window_reference(void **state)
{
	(void)state;
	static const uint32_t windows[] = { 1, 32, 64, 100, 1024, 4095, 4096 };
	static uint8_t seen[70000];
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
		struct sadb_sa s;
		mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_IN, AF_INET, 0, false, 1);
		s.replay_window = windows[w];
		struct sadb_runtime *rt = rt_new();
		struct esp_sa *sa;
		assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
		memset(seen, 0, sizeof(seen));
		uint64_t top = 0;
		srandom((unsigned)w + 1);
		for (int i = 0; i < 60000; i++) {
			uint64_t seq;
			long r = random() % 10;
			if (r < 5)
				seq = top + 1 + (uint64_t)(random() % 3);
			else if (r < 6)
				seq = top + (uint64_t)(random() % 5000);
			else
				seq = top > 5000 ? top - (uint64_t)(random() % 5000) : (uint64_t)(random() % 5000);
			if (seq >= sizeof(seen) || seq == 0)
				continue;
			enum sadb_drop want;
			if (seq > top)
				want = SADB_DROP_NONE;
			else if (top - seq >= windows[w])
				want = SADB_DROP_REPLAY_OLD;
			else
				want = seen[seq] ? SADB_DROP_REPLAY : SADB_DROP_NONE;
			assert_int_equal(esp_replay_check(sa, seq), want);
			if (want == SADB_DROP_NONE && (random() & 1)) {
				assert_int_equal(esp_replay_update(sa, seq), SADB_DROP_NONE);
				seen[seq] = 1;
				if (seq > top)
					top = seq;
				assert_int_equal(rt->replay_top, top);
			}
		}
		esp_sa_destroy(sa);
		free(rt);
	}
}

/* An inbound window held under a ceiling on disk (SADB_SAF_SEQ_PERSIST, rt->seq_lease) and started
 * by esp_replay_seed above what a lost window may have accepted: one row per number, in order. */
static void test_replay_ceiling(void **state)
{
	(void)state;
	/* check: before the ICV; update: after it (only when the check passed) */
	static const struct {
		const char *what;
		uint64_t seq;
		enum sadb_drop check, update;
		bool hint;
	} rows[] = {
		{ "under the seed: a lost window may have taken it", 999, SADB_DROP_REPLAY, 0, false },
		{ "under the seed, old", 1000 - 64, SADB_DROP_REPLAY_OLD, 0, false },
		{ "the seed itself", 1000, SADB_DROP_REPLAY, 0, false },
		{ "above the seed, far from the ceiling", 1001, SADB_DROP_NONE, SADB_DROP_NONE, false },
		{ "within lease_low of the ceiling: accepted, owner told", 1090, SADB_DROP_NONE, SADB_DROP_NONE, true },
		{ "the ceiling itself", 1100, SADB_DROP_NONE, SADB_DROP_NONE, true },
		{ "above the ceiling: verified, not yet on disk, wanted", 5000, SADB_DROP_NONE, SADB_DROP_SEQ_LEASE, true },
		{ "a replay of an accepted number", 1090, SADB_DROP_REPLAY, 0, false },
	};
	struct sadb_sa s;
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_IN, AF_INET, 0, false, 1);
	s.replay_window = 64;
	s.flags |= SADB_SAF_SEQ_PERSIST;
	struct sadb_runtime *rt = rt_new();
	_Atomic uint32_t hint = 0;
	_Atomic uint64_t want = 0;
	struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO, .lease_hint = &hint, .lease_low = 20,
				 .window_want = &want };
	struct esp_sa *sa;
	rt->replay_top = 900; /* what the runtime area held: the seed covers it */
	esp_replay_seed(rt, 1000);
	esp_replay_seed(rt, 10); /* never lowers the window */
	assert_int_equal(rt->replay_top, 1000);
	rt->seq_lease = 1100;
	assert_int_equal(esp_sa_create(&s, rt, &o, &sa), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		atomic_store(&hint, 0);
		enum sadb_drop d = esp_replay_check(sa, rows[i].seq), u = 0;
		if (d == SADB_DROP_NONE)
			u = esp_replay_update(sa, rows[i].seq);
		if (d != rows[i].check || u != rows[i].update || atomic_load(&hint) != rows[i].hint)
			fail_msg("%s: seq %" PRIu64 " gave %s then %s, hint %u", rows[i].what, rows[i].seq,
				 dropname(d), dropname(u), (unsigned)atomic_load(&hint));
	}
	assert_int_equal(rt->replay_top, 1100);
	assert_int_equal(atomic_load(&want), 5000); /* only the verified number above the ceiling */
	esp_sa_destroy(sa);
	free(rt);
}

/* RFC 4303 Appendix A.2: the high half inferred from the window's position. */
static void test_esn_infer(void **state)
{
	(void)state;
	struct sadb_sa s;
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_IN, AF_INET, SADB_SAF_ESN, false, 1);
	s.replay_window = 1024;
	struct sadb_runtime *rt = rt_new();
	struct esp_sa *sa;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
	static const struct { uint64_t top; uint32_t lo; uint64_t want; } v[] = {
		{ 0x00000005000000f0ULL, 0x000000f1, 0x00000005000000f1ULL }, /* case A, ahead */
		{ 0x00000005000000f0ULL, 0x00000010, 0x0000000500000010ULL }, /* case B, behind in window */
		{ 0x00000005000000f0ULL, 0xfffffff0, 0x00000004fffffff0ULL }, /* case B, previous subspace */
		{ 0x00000005000000f0ULL, 0x80000000, 0x0000000580000000ULL }, /* case B, far ahead */
		{ 0x00000005fffffff0ULL, 0x00000002, 0x0000000600000002ULL }, /* case A, wrapped */
		{ 0x00000005fffffff0ULL, 0xfffffc00, 0x00000005fffffc00ULL }, /* case A, left edge */
		{ 0x00000005fffffff0ULL, 0xfffffbf0, 0x00000006fffffbf0ULL }, /* left of the window */
		{ 0x0000000000000003ULL, 0xfffffff0, 0x00000000fffffff0ULL }, /* no subspace below 0 */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rt->replay_top = v[i].top;
		assert_int_equal(esp_replay_infer(sa, v[i].lo), v[i].want);
	}
	esp_sa_destroy(sa);
	free(rt);
}

/* Sequence numbers: resume above the recorded mark, reserve in blocks before use, never wrap. */
static void test_seq(void **state)
{
	(void)state;
	const struct xf *x = xf_by_name("esp aes-gcm-16-128");
	for (int esn = 0; esn < 2; esn++) {
		struct sadb_sa s;
		mk_sa(&s, x, SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, esn ? SADB_SAF_ESN : 0, false, 1);
		struct sadb_runtime *rt = rt_new();
		uint64_t max = esn ? UINT64_MAX : UINT32_MAX;
		rt->seq_reserved = max - 3;
		struct esp_sa *sa;
		struct esp_sa_opts o = { .seq_block = 2 };
		assert_int_equal(esp_sa_create(&s, rt, &o, &sa), 0);
		static struct frame f[6];
		struct esp_pkt *pk[6];
		uint8_t pkt[200];
		uint32_t len = mk_udp(pkt, AF_INET, 10, 0, 1);
		for (int i = 0; i < 6; i++) {
			frame_set(&f[i], pkt, len);
			pk[i] = &f[i].p;
		}
		assert_int_equal(esp_outbound_burst(sa, pk, 6), 3);
		assert_int_equal(f[0].p.seq, max - 2);
		assert_int_equal(f[2].p.seq, max);
		for (int i = 3; i < 6; i++)
			assert_string_equal(dropname(f[i].p.drop), "SEQ_OVERFLOW");
		assert_int_equal(rt->seq_reserved, max); /* never wrapped */
		assert_int_equal(rt->drops[SADB_DROP_SEQ_OVERFLOW], 3);
		/* A new object on this runtime (a restarted dataplane) cannot reuse anything either. */
		struct esp_sa *sa2;
		assert_int_equal(esp_sa_create(&s, rt, &o, &sa2), 0);
		frame_set(&f[0], pkt, len);
		assert_int_equal(esp_outbound_burst(sa2, pk, 1), 0);
		esp_sa_destroy(sa2);
		esp_sa_destroy(sa);
		free(rt);
	}
	/* Two objects (two workers) on one runtime draw disjoint blocks; a restart resumes above. */
	struct sadb_sa s;
	mk_sa(&s, x, SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	struct sadb_runtime *rt = rt_new();
	struct esp_sa *a, *b;
	struct esp_sa_opts o = { .seq_block = 8 };
	assert_int_equal(esp_sa_create(&s, rt, &o, &a), 0);
	assert_int_equal(esp_sa_create(&s, rt, &o, &b), 0);
	static uint8_t used[64];
	memset(used, 0, sizeof(used));
	uint8_t pkt[200];
	uint32_t len = mk_udp(pkt, AF_INET, 10, 0, 1);
	for (int i = 0; i < 20; i++) {
		static struct frame f;
		struct esp_pkt *pk = &f.p;
		frame_set(&f, pkt, len);
		assert_int_equal(esp_outbound_burst(i % 3 ? a : b, &pk, 1), 1);
		assert_true(f.p.seq > 0 && f.p.seq < 64);
		assert_false(used[f.p.seq]);
		used[f.p.seq] = 1;
		assert_true(rt->seq_reserved >= f.p.seq); /* reserved before used */
	}
	uint64_t mark = rt->seq_reserved;
	esp_sa_destroy(a);
	esp_sa_destroy(b);
	assert_int_equal(esp_sa_create(&s, rt, &o, &a), 0);
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, pkt, len);
	assert_int_equal(esp_outbound_burst(a, &pk, 1), 1);
	assert_int_equal(f.p.seq, mark + 1);
	esp_sa_destroy(a);
	free(rt);
}

/* One outbound SA on two workers (esp_sa_opts.seq_share = 2): each burst reserves only what it needs
 * (in steps of at most ESP_SEQ_SHARED_SPAN / 2), numbers never collide, and a number reserved for one
 * burst is never sent in a later one (it would arrive behind what the other worker sent meanwhile). */
static void test_seq_shared(void **state)
{
	(void)state;
	const char *names[] = { "esp aes-gcm-16-128", "ah hmac-sha256-128" };
	for (size_t n = 0; n < 2; n++) {
		const struct xf *x = xf_by_name(names[n]);
		struct sadb_sa s;
		mk_sa(&s, x, SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
		struct sadb_runtime *rt = rt_new();
		struct esp_sa *a, *b;
		struct esp_sa_opts o = { .seq_share = 2, .id_parts = 2 };
		assert_int_equal(esp_sa_create(&s, rt, &o, &a), 0);
		o.id_part = 1;
		assert_int_equal(esp_sa_create(&s, rt, &o, &b), 0);
		static struct frame f[40];
		struct esp_pkt *pk[40];
		uint8_t pkt[200];
		uint32_t len = mk_udp(pkt, AF_INET, 10, 0, 1);
		for (int i = 0; i < 40; i++) {
			frame_set(&f[i], pkt, len);
			pk[i] = &f[i].p;
		}
		assert_int_equal(esp_outbound_burst(a, pk, 5), 5);
		for (int i = 0; i < 5; i++)
			assert_int_equal(f[i].p.seq, (uint64_t)i + 1);
		assert_int_equal(rt->seq_reserved, 5); /* no more than the burst needs */
		for (int i = 0; i < 40; i++) {
			frame_set(&f[i], pkt, len);
			pk[i] = &f[i].p; /* a burst call compacts pk[] */
		}
		assert_int_equal(esp_outbound_burst(b, pk, 40), 40); /* three steps: 16 + 16 + 8 */
		for (int i = 0; i < 40; i++)
			assert_int_equal(f[i].p.seq, (uint64_t)i + 6);
		assert_int_equal(rt->seq_reserved, 45);
		/* Two of four dropped before they take a number: the burst used 46 and 47 ... */
		for (int i = 0; i < 4; i++) {
			frame_set(&f[i], pkt, i == 1 || i == 2 ? 10 : len);
			pk[i] = &f[i].p;
		}
		assert_int_equal(esp_outbound_burst(a, pk, 4), 2);
		assert_int_equal(f[0].p.seq, 46);
		assert_int_equal(f[3].p.seq, 47);
		assert_int_equal(rt->seq_reserved, 49);
		/* ... and the next burst does not send 48 and 49, reserved for the earlier one. */
		for (int i = 0; i < 2; i++) {
			frame_set(&f[i], pkt, len);
			pk[i] = &f[i].p;
		}
		assert_int_equal(esp_outbound_burst(a, pk, 2), 2);
		assert_int_equal(f[0].p.seq, 50);
		assert_int_equal(f[1].p.seq, 51);
		frame_set(&f[0], pkt, len);
		pk[0] = &f[0].p;
		assert_int_equal(esp_outbound_burst(b, pk, 1), 1);
		assert_int_equal(f[0].p.seq, 52);
		esp_sa_destroy(a);
		esp_sa_destroy(b);
		free(rt);
	}
}

/* MTU: what esp_pkt.mtu reports fits, one byte more does not, for ESP and AH, tunnel and transport,
 * both families, with and without NAT-T. */
static void test_mtu(void **state)
{
	(void)state;
	const char *names[] = { "esp aes-gcm-16-128", "esp aes-cbc-256/sha512-256", "esp 3des-cbc/sha1-96",
				"ah hmac-sha256-128", "ah aes-256-gmac" };
	for (size_t n = 0; n < 5; n++)
		for (int mode = SADB_MODE_TRANSPORT; mode <= SADB_MODE_TUNNEL; mode++)
			for (int ofam = 0; ofam < 2; ofam++)
				for (int natt = 0; natt < 2; natt++) {
					const struct xf *x = xf_by_name(names[n]);
					if (natt && x->proto == SADB_PROTO_AH)
						continue;
					int of = ofam ? AF_INET6 : AF_INET;
					int inf = mode == SADB_MODE_TUNNEL ? AF_INET : of;
					uint32_t hl = inf == AF_INET ? 20 : 40;
					struct sadb_sa s;
					mk_sa(&s, x, (uint8_t)mode, SADB_DIR_OUT, of, 0, natt, 1);
					s.mtu = 1400;
					struct sadb_runtime *rt = rt_new();
					struct esp_sa *sa;
					assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), 0);
					static struct frame f;
					struct esp_pkt *pk = &f.p;
					uint8_t pkt[2000];
					uint32_t len = mk_udp(pkt, inf, 1400 - hl - 8, 0, 1);
					frame_set(&f, pkt, len);
					assert_int_equal(esp_outbound_burst(sa, &pk, 1), 0);
					assert_string_equal(dropname(f.p.drop), "MTU");
					uint32_t mtu = f.p.mtu;
					assert_true(mtu > 1200 && mtu < 1400);
					assert_int_equal(mtu, esp_sa_inner_mtu(sa, 1400, (uint8_t)inf));
					len = mk_udp(pkt, inf, mtu - hl - 8, 0, 1);
					frame_set(&f, pkt, len);
					if (esp_outbound_burst(sa, &pk, 1) != 1)
						fail_msg("%s mode %d ofam %d natt %d: %u bytes (reported MTU) dropped: %s",
							 names[n], mode, of, natt, mtu, dropname(f.p.drop));
					assert_true(f.p.len <= 1400);
					/* A block cipher may round up: the first size that fails is the next one. */
					len = mk_udp(pkt, inf, mtu + 1 - hl - 8, 0, 1);
					frame_set(&f, pkt, len);
					assert_int_equal(esp_outbound_burst(sa, &pk, 1), 0);
					assert_string_equal(dropname(f.p.drop), "MTU");
					esp_sa_destroy(sa);
					free(rt);
				}
}

/* Buffers without room: dropped with NOMEM, never written outside the buffer. */
static void test_room(void **state)
{
	(void)state;
	struct pair p;
	pair_make(&p, xf_by_name("esp aes-cbc-128/sha1-96"), SADB_MODE_TUNNEL, AF_INET6, 0, true, 64,
		  ESP_BACKEND_AUTO);
	uint8_t pkt[200];
	uint32_t len = mk_udp(pkt, AF_INET, 50, 0, 1);
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, pkt, len);
	f.p.off = 10; /* too little headroom */
	memmove(f.mem + 10, f.mem + PKT_OFF, len);
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 0);
	assert_string_equal(dropname(f.p.drop), "NOMEM");
	frame_set(&f, pkt, len);
	f.p.buf_len = PKT_OFF + len + 10; /* too little tailroom */
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 0);
	assert_string_equal(dropname(f.p.drop), "NOMEM");
	assert_int_equal(p.rto->drops[SADB_DROP_NOMEM], 2);
	pair_free(&p);
}

/* Construction checks. */
static void test_create_refuses(void **state)
{
	(void)state;
	struct sadb_sa s;
	struct sadb_runtime *rt = rt_new();
	struct esp_sa *sa = (struct esp_sa *)1;
	mk_sa(&s, xf_by_name("esp 3des-cbc/sha1-96"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.flags &= ~SADB_SAF_LEGACY_OK;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -ENOTSUP);
	assert_null(sa);
	mk_sa(&s, xf_by_name("ah hmac-md5-96"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.flags &= ~SADB_SAF_LEGACY_OK;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -ENOTSUP);
	mk_sa(&s, xf_by_name("esp 3des-cbc/sha1-96"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.enc_alg = SADB_ENC_DES_CBC; /* RFC 8221: MUST NOT, never offered, even as legacy */
	s.enc_key_len = 8;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -ENOTSUP);
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.enc_key_len = 20;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL);
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.auth_alg = SADB_AUTH_HMAC_SHA1_96; /* an AEAD takes no separate integrity */
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL);
	mk_sa(&s, xf_by_name("esp aes-cbc-128/sha1-96"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.auth_alg = SADB_AUTH_NONE; /* confidentiality without integrity: refused */
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL);
	mk_sa(&s, xf_by_name("ah hmac-sha1-96"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, true, 1);
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL); /* NAT-T is for ESP */
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.replay_window = SADB_REPLAY_MAX + 1;
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -EINVAL);
	mk_sa(&s, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET, 0, false, 1);
	s.instance = 2; /* the runtime belongs to another SA instance */
	assert_int_equal(esp_sa_create(&s, rt, NULL, &sa), -ESTALE);
	free(rt);
}

/* Hard expiry marked in the runtime: nothing goes out. */
static void test_expired(void **state)
{
	(void)state;
	struct pair p;
	pair_make(&p, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, AF_INET, 0, false, 64, ESP_BACKEND_AUTO);
	p.rto->expired = 2;
	uint8_t pkt[200];
	uint32_t len = mk_udp(pkt, AF_INET, 10, 0, 1);
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, pkt, len);
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 0);
	assert_string_equal(dropname(f.p.drop), "SA_EXPIRED");
	assert_int_equal(p.rto->seq_reserved, 0); /* no number consumed */
	pair_free(&p);
}

/* Burst contract: good packets first in their order, bad ones after with reasons; n > 64. */
static void test_burst_contract(void **state)
{
	(void)state;
	struct pair p;
	pair_make(&p, xf_by_name("esp chacha20-poly1305"), SADB_MODE_TUNNEL, AF_INET, 0, false, 4096,
		  ESP_BACKEND_AUTO);
	enum { N = 150 };
	static struct frame f[N];
	struct esp_pkt *pk[N];
	uint8_t pkt[300];
	for (int i = 0; i < N; i++) {
		uint32_t len = mk_udp(pkt, AF_INET, (uint32_t)(i % 200), 0, (uint32_t)i);
		frame_set(&f[i], pkt, len);
		if (i % 7 == 3)
			f[i].mem[PKT_OFF] = 0x55; /* not IP */
		pk[i] = &f[i].p;
	}
	unsigned good = esp_outbound_burst(p.out, pk, N);
	unsigned nbad = 0;
	for (int i = 0; i < N; i++)
		nbad += i % 7 == 3;
	assert_int_equal(good, N - nbad);
	for (unsigned i = 0; i + 1 < good; i++)
		assert_true(pk[i] < pk[i + 1]); /* original order kept */
	for (unsigned i = good; i < N; i++)
		assert_string_equal(dropname(pk[i]->drop), "TRUNCATED");
	assert_int_equal(p.rto->drops[SADB_DROP_TRUNCATED], nbad);
	/* Inbound: every third packet tampered. */
	for (unsigned i = 0; i < good; i++)
		if (i % 3 == 1)
			pk[i]->buf[pk[i]->off + pk[i]->len - 1] ^= 1;
	unsigned g2 = esp_inbound_burst(p.in, pk, good);
	unsigned tampered = (good + 1) / 3;
	assert_int_equal(g2, good - tampered);
	for (unsigned i = g2; i < good; i++)
		assert_string_equal(dropname(pk[i]->drop), "ICV");
	assert_int_equal(p.rti->packets, g2);
	pair_free(&p);
}

/* ipsec-mb job ring: thousands of packets in bursts of every size, byte-identical to OpenSSL. */
static void test_ipsecmb_ring(void **state)
{
	(void)state;
#ifndef HAVE_IPSEC_MB
	skip();
#else
	const char *names[] = { "esp aes-cbc-128/sha1-96", "esp chacha20-poly1305", "esp 3des-cbc/md5-96",
				"esp aes-ctr-256/sha256-128", "ah hmac-sha384-192" };
	for (size_t n = 0; n < 5; n++) {
		struct pair a, b;
		pair_make(&a, xf_by_name(names[n]), SADB_MODE_TUNNEL, AF_INET, 0, false, 4096, ESP_BACKEND_IPSECMB);
		pair_make(&b, xf_by_name(names[n]), SADB_MODE_TUNNEL, AF_INET, 0, false, 4096, ESP_BACKEND_OPENSSL);
		static struct frame fa[100], fb[100];
		struct esp_pkt *pa[100], *pb[100];
		uint8_t pkt[600];
		unsigned total = 0;
		srandom(7);
		for (unsigned burst = 1; total < 3000; burst = burst % 100 + 1 + (unsigned)(random() % 3)) {
			if (burst > 100)
				burst = 100;
			for (unsigned i = 0; i < burst; i++) {
				uint32_t len = mk_udp(pkt, AF_INET, (total + i) % 500, 0, total + i);
				frame_set(&fa[i], pkt, len);
				frame_set(&fb[i], pkt, len);
				pa[i] = &fa[i].p;
				pb[i] = &fb[i].p;
			}
			assert_int_equal(esp_outbound_burst(a.out, pa, burst), burst);
			assert_int_equal(esp_outbound_burst(b.out, pb, burst), burst);
			for (unsigned i = 0; i < burst; i++) {
				assert_int_equal(fa[i].p.len, fb[i].p.len);
				assert_memory_equal(frame_data(&fa[i]), frame_data(&fb[i]), fa[i].p.len);
			}
			assert_int_equal(esp_inbound_burst(a.in, pa, burst), burst);
			total += burst;
		}
		assert_int_equal(a.rti->packets, total);
		pair_free(&a);
		pair_free(&b);
	}
#endif
}

/* AH: fields that change in transit do not break the ICV; immutable ones do. */
static void test_ah_mutable(void **state)
{
	(void)state;
	/* IPv4 transport with options: Record Route (7, mutable) and Router Alert (148, immutable). */
	struct pair p;
	pair_make(&p, xf_by_name("ah hmac-sha256-128"), SADB_MODE_TRANSPORT, AF_INET, 0, false, 64,
		  ESP_BACKEND_AUTO);
	uint8_t pkt[300], opt[300];
	uint32_t len = mk_udp(pkt, AF_INET, 30, 0, 1);
	/* Insert 12 bytes of options: RR (len 7, ptr 4, one slot) + NOP + RA (len 4). */
	memcpy(opt, pkt, 20);
	static const uint8_t opts[12] = { 7, 7, 4, 0, 0, 0, 0, 1, 148, 4, 0, 0 };
	memcpy(opt + 20, opts, 12);
	memcpy(opt + 32, pkt + 20, len - 20);
	len += 12;
	opt[0] = 0x48;
	opt[2] = (uint8_t)(len >> 8);
	opt[3] = (uint8_t)len;
	opt[10] = opt[11] = 0;
	uint16_t cs = t_csum(opt, 32);
	opt[10] = (uint8_t)(cs >> 8);
	opt[11] = (uint8_t)cs;
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, opt, len);
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
	uint8_t out[400];
	uint32_t olen = f.p.len;
	memcpy(out, frame_data(&f), olen);
	/* In transit: TTL down, TOS rewritten, RR filled in, checksum redone. */
	uint8_t m[400];
	memcpy(m, out, olen);
	m[8] -= 3;
	m[1] = 0x28;
	m[20 + 2] = 8;
	memcpy(m + 23, "\x0a\x09\x08\x07", 4);
	m[10] = m[11] = 0;
	cs = t_csum(m, 32);
	m[10] = (uint8_t)(cs >> 8);
	m[11] = (uint8_t)cs;
	assert_int_equal(deliver(&p, m, olen), SADB_DROP_NONE);
	static struct frame g;
	frame_set(&g, m, olen);
	pk = &g.p;
	/* Immutable option changed: refused (a fresh copy, the first one is in the window now). */
	struct pair q;
	pair_make(&q, xf_by_name("ah hmac-sha256-128"), SADB_MODE_TRANSPORT, AF_INET, 0, false, 64,
		  ESP_BACKEND_AUTO);
	memcpy(m, out, olen);
	m[20 + 10] = 1; /* router alert value */
	assert_string_equal(dropname(deliver(&q, m, olen)), "ICV");
	memcpy(m, out, olen);
	m[12] ^= 1; /* source address */
	assert_string_equal(dropname(deliver(&q, m, olen)), "ICV");
	/* The output decapsulates to the original packet. */
	assert_int_equal(deliver(&q, out, olen), SADB_DROP_NONE);
	pair_free(&p);
	pair_free(&q);

	/* IPv6 transport with a hop-by-hop header: an option with the "may change" bit (0x3e) and one
	 * without (0x1e); flow label and hop limit change in transit. */
	pair_make(&p, xf_by_name("ah hmac-sha1-96"), SADB_MODE_TRANSPORT, AF_INET6, 0, false, 64,
		  ESP_BACKEND_AUTO);
	len = mk_udp(pkt, AF_INET6, 30, 0, 1);
	memcpy(opt, pkt, 40);
	static const uint8_t hbh[16] = { IPPROTO_UDP, 1, 0x3e, 4, 1, 2, 3, 4, 0x1e, 4, 5, 6, 7, 8, 1, 0 };
	memcpy(opt + 40, hbh, 16);
	memcpy(opt + 56, pkt + 40, len - 40);
	len += 16;
	opt[6] = IPPROTO_HOPOPTS;
	opt[4] = (uint8_t)((len - 40) >> 8);
	opt[5] = (uint8_t)(len - 40);
	frame_set(&f, opt, len);
	pk = &f.p;
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
	olen = f.p.len;
	memcpy(out, frame_data(&f), olen);
	assert_int_equal(out[6], IPPROTO_HOPOPTS);
	assert_int_equal(out[40], IPPROTO_AH); /* AH after the hop-by-hop header */
	memcpy(m, out, olen);
	m[7] = 1;                 /* hop limit */
	m[1] |= 0x0f;             /* flow label */
	m[3] = 0x99;
	m[44] ^= 0xff;            /* data of the mutable option */
	pair_make(&q, xf_by_name("ah hmac-sha1-96"), SADB_MODE_TRANSPORT, AF_INET6, 0, false, 64,
		  ESP_BACKEND_AUTO);
	assert_int_equal(deliver(&q, m, olen), SADB_DROP_NONE);
	memcpy(m, out, olen);
	m[50] ^= 0xff;            /* data of the immutable option */
	assert_string_equal(dropname(deliver(&p, m, olen)), "ICV");
	frame_set(&g, out, olen);
	pk = &g.p;
	assert_int_equal(esp_inbound_burst(p.in, &pk, 1), 1);
	assert_int_equal(g.p.len, len);
	assert_memory_equal(frame_data(&g), opt, len);
	pair_free(&p);
	pair_free(&q);
}

/* AH tunnel SAs without ESN take a fast path for bare outer headers; a packet whose outer header has
 * IPv4 options or an IPv6 extension header goes the general way (RFC 4302 §3.3.3.1 zeroing) in the
 * same burst. Such packets are built by a transport-mode SA with the same keys over an IP-in-IP
 * packet, which is what a tunnel-mode sender with outer options puts on the wire. In one burst:
 * bare and optioned packets interleaved, mutable fields changed in transit, a tampered ICV on each
 * kind, a replay inside the burst. Each good packet decapsulates to its inner packet, each bad one
 * is dropped with its reason and left as it came, and the window holds exactly the good numbers. */
static void test_ah_fast_mixed(void **state)
{
	(void)state;
	static const char *names[] = { "ah hmac-sha1-96", "ah hmac-sha256-128", "ah aes-128-gmac",
				       "ah hmac-md5-96" };
	enum { N = 9 };
	static struct frame f[N];
	static uint8_t want[N][400], sent[N][600];
	for (size_t t = 0; t < sizeof(names) / sizeof(names[0]); t++)
		for (int fam = 0; fam < 2; fam++) {
			const struct xf *x = xf_by_name(names[t]);
			int ofam = fam ? AF_INET6 : AF_INET;
			struct sadb_sa so, st, si;
			mk_sa(&so, x, SADB_MODE_TUNNEL, SADB_DIR_OUT, ofam, 0, false, 3);
			mk_sa(&st, x, SADB_MODE_TRANSPORT, SADB_DIR_OUT, ofam, 0, false, 3);
			mk_sa(&si, x, SADB_MODE_TUNNEL, SADB_DIR_IN, ofam, 0, false, 3);
			struct sadb_runtime *rto = rt_new(), *rtt = rt_new(), *rti = rt_new();
			rtt->seq_reserved = 1000; /* the optioned packets are numbered from 1001 */
			struct esp_sa *out, *tr, *in;
			struct esp_sa_opts o = { .backend = ESP_BACKEND_AUTO };
			assert_int_equal(esp_sa_create(&so, rto, &o, &out), 0);
			assert_int_equal(esp_sa_create(&st, rtt, &o, &tr), 0);
			assert_int_equal(esp_sa_create(&si, rti, &o, &in), 0);
			/* Which packets carry outer options, and what happens to each. */
			static const bool opt[N] = { 0, 1, 0, 1, 1, 0, 0, 1, 0 };
			uint32_t len[N];
			uint64_t seq[N];
			for (int i = 0; i < N; i++) {
				uint8_t inner[400];
				uint32_t il = mk_udp(inner, i % 3 == 2 ? AF_INET6 : AF_INET, 40 + (uint32_t)i * 7, 0,
						     (uint32_t)i + 1);
				memcpy(want[i], inner, il);
				if (!opt[i]) {
					frame_set(&f[i], inner, il);
					struct esp_pkt *pk = &f[i].p;
					assert_int_equal(esp_outbound_burst(out, &pk, 1), 1);
				} else {
					/* Outer header with options, then the inner packet as its payload. */
					uint8_t pkt[600];
					uint8_t nx = i % 3 == 2 ? IPPROTO_IPV6 : IPPROTO_IPIP;
					uint32_t hl;
					if (ofam == AF_INET) {
						static const uint8_t opts[12] = { 7, 7, 4, 0, 0, 0, 0, 1, 148, 4, 0, 0 };
						hl = 32;
						memset(pkt, 0, hl);
						pkt[0] = 0x48;
						pkt[6] = 0x40;
						pkt[8] = 64;
						pkt[9] = nx;
						memcpy(pkt + 12, so.src.a.b, 4);
						memcpy(pkt + 16, so.dst.a.b, 4);
						memcpy(pkt + 20, opts, 12);
						pkt[2] = (uint8_t)((hl + il) >> 8);
						pkt[3] = (uint8_t)(hl + il);
						uint16_t cs = t_csum(pkt, hl);
						pkt[10] = (uint8_t)(cs >> 8);
						pkt[11] = (uint8_t)cs;
					} else {
						/* Hop-by-hop with a "may change" option (0x3e) and PadN. */
						const uint8_t hbh[16] = { nx, 1, 0x3e, 4, 1, 2, 3, 4, 1, 6, 0, 0, 0, 0, 0, 0 };
						hl = 56;
						memset(pkt, 0, 40);
						pkt[0] = 0x60;
						pkt[4] = (uint8_t)((16 + il) >> 8);
						pkt[5] = (uint8_t)(16 + il);
						pkt[6] = IPPROTO_HOPOPTS;
						pkt[7] = 64;
						memcpy(pkt + 8, so.src.a.b, 16);
						memcpy(pkt + 24, so.dst.a.b, 16);
						memcpy(pkt + 40, hbh, 16);
					}
					memcpy(pkt + hl, inner, il);
					frame_set(&f[i], pkt, hl + il);
					struct esp_pkt *pk = &f[i].p;
					assert_int_equal(esp_outbound_burst(tr, &pk, 1), 1);
					/* In transit: hop limit / TTL down, mutable option data changed. */
					uint8_t *w = frame_data(&f[i]);
					if (ofam == AF_INET) {
						assert_int_equal(w[hl], nx); /* AH's next header: IP-in-IP */
						w[8] -= 2;
						w[22] = 8;
						memcpy(w + 23, "\x0a\x09\x08\x07", 4);
						w[10] = w[11] = 0;
						uint16_t cs = t_csum(w, hl);
						w[10] = (uint8_t)(cs >> 8);
						w[11] = (uint8_t)cs;
					} else {
						assert_int_equal(w[hl], nx);
						w[7] -= 2;
						w[44] ^= 0x5a;
					}
				}
				len[i] = f[i].p.len;
				seq[i] = f[i].p.seq;
				memcpy(sent[i], frame_data(&f[i]), len[i]);
			}
			/* Packet 3 (options) and 5 (bare): one ICV bit flipped. Packet 8 replays packet 2. */
			uint8_t *w3 = frame_data(&f[3]);
			uint32_t l4 = ofam == AF_INET ? 32 : 56;
			w3[l4 + 12 + in->iv_len + 2] ^= 0x10;
			uint8_t *w5 = frame_data(&f[5]);
			w5[(ofam == AF_INET ? 20 : 40) + 12 + in->iv_len] ^= 0x01;
			frame_set(&f[8], sent[2], len[2]);
			seq[8] = seq[2];
			memcpy(sent[8], sent[2], len[2]);
			len[8] = len[2];
			memcpy(want[8], want[2], sizeof(want[8]));
			for (int i = 0; i < N; i++) {
				memcpy(sent[i], frame_data(&f[i]), len[i]);
				frame_set(&f[i], sent[i], len[i]);
			}
			struct esp_pkt *pk[N];
			for (int i = 0; i < N; i++)
				pk[i] = &f[i].p;
			assert_int_equal(esp_inbound_burst(in, pk, N), N - 3);
			static const int bad[3] = { 3, 5, 8 };
			static const char *why[3] = { "ICV", "ICV", "REPLAY" };
			for (int b = 0; b < 3; b++) {
				struct frame *fb = &f[bad[b]];
				assert_ptr_equal(pk[N - 3 + b], &fb->p);
				assert_string_equal(dropname(fb->p.drop), why[b]);
				if (b < 2) { /* an ICV failure leaves the packet as it came */
					assert_int_equal(fb->p.off, PKT_OFF);
					assert_memory_equal(frame_data(fb), sent[bad[b]], len[bad[b]]);
				}
			}
			for (int i = 0, k = 0; i < N; i++) {
				if (i == 3 || i == 5 || i == 8)
					continue;
				struct esp_pkt *p = pk[k++];
				assert_ptr_equal(p, &f[i].p);
				assert_int_equal(p->seq, seq[i]);
				uint32_t il = (want[i][0] >> 4) == 4 ? (uint32_t)(want[i][2] << 8 | want[i][3])
								      : 40u + (uint32_t)(want[i][4] << 8 | want[i][5]);
				assert_int_equal(p->len, il);
				assert_memory_equal(p->buf + p->off, want[i], il);
			}
			/* The window: every good number, not the tampered ones. */
			assert_int_equal(rti->replay_top, seq[7]);
			for (int i = 0; i < N; i++) {
				uint64_t bit = seq[i] % SADB_REPLAY_MAX;
				bool set = (rti->replay_bitmap[bit / 64] >> (bit % 64)) & 1;
				assert_int_equal(set, i != 3 && i != 5);
			}
			/* Authentic packets whose payload is no inner packet (bare outer header, so the
			 * fast path's decapsulation): not IP-in-IP, an inner IPv4 header claiming more than
			 * is there, "IPv6" shorter than its header. Dropped with their reasons, left as they
			 * came, the window untouched. */
			struct sadb_runtime before = *rti;
			static const struct { uint8_t proto; const char *why; } odd[3] = {
				{ IPPROTO_UDP, "BAD_NEXT_HDR" }, { IPPROTO_IPIP, "TRUNCATED" },
				{ IPPROTO_IPV6, "BAD_NEXT_HDR" },
			};
			for (int k = 0; k < 3; k++) {
				uint8_t pkt[300], pl[60];
				uint32_t hl = ofam == AF_INET ? 20 : 40, pn = k == 2 ? 30 : 48;
				uint32_t il = mk_udp(pl, AF_INET, 20, 0, 7); /* 48 bytes */
				assert_int_equal(il, 48);
				if (k == 1)
					pl[3] = 58; /* total length 10 bytes beyond the packet */
				if (k == 2)
					pl[0] = 0x60;
				memset(pkt, 0, hl);
				if (ofam == AF_INET) {
					pkt[0] = 0x45;
					pkt[2] = 0;
					pkt[3] = (uint8_t)(hl + pn);
					pkt[8] = 64;
					pkt[9] = odd[k].proto;
					memcpy(pkt + 12, so.src.a.b, 4);
					memcpy(pkt + 16, so.dst.a.b, 4);
					uint16_t cs = t_csum(pkt, 20);
					pkt[10] = (uint8_t)(cs >> 8);
					pkt[11] = (uint8_t)cs;
				} else {
					pkt[0] = 0x60;
					pkt[5] = (uint8_t)pn;
					pkt[6] = odd[k].proto;
					pkt[7] = 64;
					memcpy(pkt + 8, so.src.a.b, 16);
					memcpy(pkt + 24, so.dst.a.b, 16);
				}
				memcpy(pkt + hl, pl, pn);
				static struct frame g;
				frame_set(&g, pkt, hl + pn);
				struct esp_pkt *gp = &g.p;
				assert_int_equal(esp_outbound_burst(tr, &gp, 1), 1);
				uint8_t w[400];
				uint32_t wl = g.p.len;
				memcpy(w, frame_data(&g), wl);
				frame_set(&g, w, wl);
				assert_int_equal(esp_inbound_burst(in, &gp, 1), 0);
				assert_string_equal(dropname(g.p.drop), odd[k].why);
				assert_int_equal(g.p.off, PKT_OFF);
				assert_memory_equal(frame_data(&g), w, wl);
			}
			assert_int_equal(rti->replay_top, before.replay_top);
			assert_memory_equal(rti->replay_bitmap, before.replay_bitmap, sizeof(before.replay_bitmap));
			esp_sa_destroy(out);
			esp_sa_destroy(tr);
			esp_sa_destroy(in);
			free(rto);
			free(rtt);
			free(rti);
		}
}

/* The IV source that gives the default IV (the sequence number): an SA with it takes AH's general
 * outbound path, so its output can be compared with the fast path's. */
static void iv_is_seq(void *arg, uint64_t seq, uint8_t *iv, unsigned len)
{
	(void)arg;
	for (unsigned i = 0; i < len; i++)
		iv[i] = (uint8_t)(seq >> (8 * (len - 1 - i)));
}

/* AH outbound tunnel, fast path against the general one (RFC 4302 §3.3.3.1: the outer header's
 * mutable fields counted as zeros, sent as set): byte-identical packets for every combination of
 * DSCP (copied or set), ECN (normal or compatibility), DF (copied, set, cleared), inner family,
 * inner DF and TOS, outer family; and the outer IPv4 checksum is right. Then inbound on the fast
 * path, every other packet marked CE on the way: RFC 6040 decapsulation (CE onto an ECT inner
 * packet, a Not-ECT one dropped and left as it came) and the DSCP copy. */
static void test_ah_fast_outer(void **state)
{
	(void)state;
	static const uint32_t flagsets[] = { 0, SADB_SAF_NO_ECN, SADB_SAF_DF_SET, SADB_SAF_DF_CLEAR,
					     SADB_SAF_NO_ECN | SADB_SAF_DF_CLEAR };
	const struct xf *x = xf_by_name("ah aes-128-gmac");
	for (int fam = 0; fam < 2; fam++)
		for (size_t fs = 0; fs < sizeof(flagsets) / sizeof(flagsets[0]); fs++)
			for (int dscp = 0; dscp < 2; dscp++) {
				int ofam = fam ? AF_INET6 : AF_INET;
				struct sadb_sa so;
				mk_sa(&so, x, SADB_MODE_TUNNEL, SADB_DIR_OUT, ofam, flagsets[fs], false, 3);
				so.dscp = dscp ? 10 : 0xff;
				so.ttl = 33;
				struct sadb_runtime *ra = rt_new(), *rb = rt_new();
				struct esp_sa *a, *b;
				struct esp_sa_opts oa = { .backend = ESP_BACKEND_AUTO };
				struct esp_sa_opts ob = { .backend = ESP_BACKEND_AUTO, .iv_fn = iv_is_seq };
				assert_int_equal(esp_sa_create(&so, ra, &oa, &a), 0);
				assert_int_equal(esp_sa_create(&so, rb, &ob, &b), 0);
				struct sadb_sa si;
				mk_sa(&si, x, SADB_MODE_TUNNEL, SADB_DIR_IN, ofam, dscp ? SADB_SAF_DECAP_DSCP : 0,
				      false, 3);
				struct sadb_runtime *ri = rt_new();
				struct esp_sa *in;
				assert_int_equal(esp_sa_create(&si, ri, &oa, &in), 0);
				for (int k = 0; k < 12; k++) {
					uint8_t pkt[200];
					static const uint8_t tos[4] = { 0x00, 0xb9, 0x02, 0x4b };
					int ifam = k % 3 == 2 ? AF_INET6 : AF_INET;
					uint32_t len = mk_udp(pkt, ifam, 20 + (uint32_t)k, tos[k % 4], (uint32_t)k);
					if (ifam == AF_INET && (k & 4)) { /* inner DF off */
						pkt[6] = 0;
						pkt[10] = pkt[11] = 0;
						uint16_t cs = t_csum(pkt, 20);
						pkt[10] = (uint8_t)(cs >> 8);
						pkt[11] = (uint8_t)cs;
					}
					static struct frame fa, fb;
					struct esp_pkt *pa = &fa.p, *pb = &fb.p;
					frame_set(&fa, pkt, len);
					frame_set(&fb, pkt, len);
					assert_int_equal(esp_outbound_burst(a, &pa, 1), 1);
					assert_int_equal(esp_outbound_burst(b, &pb, 1), 1);
					assert_int_equal(fa.p.len, fb.p.len);
					assert_int_equal(fa.p.off, fb.p.off);
					assert_int_equal(fa.p.seq, fb.p.seq);
					assert_memory_equal(frame_data(&fa), frame_data(&fb), fa.p.len);
					uint8_t *w = frame_data(&fa);
					if (ofam == AF_INET) {
						assert_int_equal(t_csum(w, 20), 0);
						assert_int_equal(w[8], 33);
					} else {
						assert_int_equal(w[7], 33);
					}
					/* A router marks CE on every other ECN-capable packet; packets 0 and 8
					 * (Not-ECT) get CE from a broken one. */
					uint8_t otos = esp_ip_tos(w);
					bool ce = (k & 1) ? (otos & 3) != 0 : k % 8 == 0;
					if (ce)
						esp_ip_set_tos(w, (uint8_t)(otos | 3));
					uint8_t sent[300];
					uint32_t slen = fa.p.len;
					memcpy(sent, w, slen);
					frame_set(&fa, sent, slen);
					unsigned good = esp_inbound_burst(in, &pa, 1);
					uint8_t itos = tos[k % 4];
					if (ce && !(itos & 3)) {
						assert_int_equal(good, 0);
						assert_string_equal(dropname(fa.p.drop), "UNSUPPORTED");
						assert_memory_equal(frame_data(&fa), sent, slen);
						continue;
					}
					assert_int_equal(good, 1);
					uint8_t want = (uint8_t)(((dscp ? 10 << 2 : itos) & 0xfc) | (ce ? 3 : itos & 3));
					assert_int_equal(fa.p.len, len);
					assert_int_equal(esp_ip_tos(frame_data(&fa)), want);
					if (ifam == AF_INET) {
						assert_int_equal(t_csum(frame_data(&fa), 20), 0);
						assert_memory_equal(frame_data(&fa) + 2, pkt + 2, 8);
						assert_memory_equal(frame_data(&fa) + 12, pkt + 12, len - 12);
					} else {
						assert_memory_equal(frame_data(&fa) + 2, pkt + 2, len - 2);
					}
				}
				esp_sa_destroy(in);
				free(ri);
				esp_sa_destroy(a);
				esp_sa_destroy(b);
				free(ra);
				free(rb);
			}
}

/* AH over a Mobile IPv6 packet with a type 2 routing header (RFC 6275 §6.4): the ICV is computed
 * as the packet will be at its destination (RFC 4302 §3.3.3.1.2), so it verifies both before and
 * after the routing header is processed (home address swapped into the destination). */
static void test_ah_routing_header(void **state)
{
	(void)state;
	struct pair p, q;
	pair_make(&p, xf_by_name("ah hmac-sha256-128"), SADB_MODE_TRANSPORT, AF_INET6, 0, false, 64,
		  ESP_BACKEND_AUTO);
	pair_make(&q, xf_by_name("ah hmac-sha256-128"), SADB_MODE_TRANSPORT, AF_INET6, 0, false, 64,
		  ESP_BACKEND_AUTO);
	uint8_t pkt[300], rh[300];
	uint32_t len = mk_udp(pkt, AF_INET6, 20, 0, 1);
	/* dst = care-of address; the RH2 carries the home address. */
	memcpy(rh, pkt, 40);
	static const uint8_t hoa[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99 };
	uint8_t r2[24] = { IPPROTO_UDP, 2, 2, 1, 0, 0, 0, 0 };
	memcpy(r2 + 8, hoa, 16);
	memcpy(rh + 40, r2, 24);
	memcpy(rh + 64, pkt + 40, len - 40);
	len += 24;
	rh[6] = IPPROTO_ROUTING;
	rh[4] = (uint8_t)((len - 40) >> 8);
	rh[5] = (uint8_t)(len - 40);
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, rh, len);
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
	uint8_t out[400], done[400];
	uint32_t olen = f.p.len;
	memcpy(out, frame_data(&f), olen);
	assert_int_equal(out[40], IPPROTO_AH);       /* AH after the routing header */
	assert_memory_equal(out + 24, rh + 24, 16);  /* sent to the care-of address */
	/* As received before routing header processing. */
	assert_int_equal(deliver(&p, out, olen), SADB_DROP_NONE);
	/* After it: destination <-> home address, segments left 0. */
	memcpy(done, out, olen);
	memcpy(done + 24, hoa, 16);
	memcpy(done + 48, rh + 24, 16);
	done[43] = 0;
	assert_int_equal(deliver(&q, done, olen), SADB_DROP_NONE);
	/* A different home address is refused. */
	struct pair z;
	pair_make(&z, xf_by_name("ah hmac-sha256-128"), SADB_MODE_TRANSPORT, AF_INET6, 0, false, 64,
		  ESP_BACKEND_AUTO);
	memcpy(done, out, olen);
	done[63] ^= 1;
	assert_string_equal(dropname(deliver(&z, done, olen)), "ICV");
	pair_free(&p);
	pair_free(&q);
	pair_free(&z);
}

/* RFC 6040 on decapsulation, DSCP copy, and the outer header's ECN, DF and TTL on encapsulation. */
static void test_ecn_df_ttl(void **state)
{
	(void)state;
	/* Figure 4 of RFC 6040: rows inner Not-ECT, ECT(0), ECT(1), CE; columns outer the same. */
	static const int fig4[4][4] = {
		/* outer: Not-ECT ECT(0) ECT(1) CE */
		{ 0, 0, 0, -1 },  /* inner Not-ECT */
		{ 2, 2, 1, 3 },   /* inner ECT(0) */
		{ 1, 1, 1, 3 },   /* inner ECT(1) */
		{ 3, 3, 3, 3 },   /* inner CE */
	};
	static const unsigned code[4] = { 0, 2, 1, 3 }; /* Not-ECT, ECT(0), ECT(1), CE */
	for (int i = 0; i < 4; i++)
		for (int o = 0; o < 4; o++) {
			struct pair p;
			pair_make(&p, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, AF_INET, 0, false, 64,
				  ESP_BACKEND_AUTO);
			uint8_t pkt[200];
			uint32_t len = mk_udp(pkt, AF_INET6, 10, (uint8_t)(0x80 | code[i]), 1);
			static struct frame f;
			struct esp_pkt *pk = &f.p;
			frame_set(&f, pkt, len);
			assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
			uint8_t *o4 = frame_data(&f);
			assert_int_equal(o4[1], 0x80 | code[i]); /* DSCP and ECN copied (normal mode) */
			assert_int_equal(o4[6] & 0x40, 0x40);    /* IPv6 inside: DF */
			assert_int_equal(o4[8], 64);             /* default TTL */
			/* A router on the path marks the outer header. */
			o4[1] = (uint8_t)((o4[1] & 0xfc) | code[o]);
			o4[10] = o4[11] = 0;
			uint16_t cs = t_csum(o4, 20);
			o4[10] = (uint8_t)(cs >> 8);
			o4[11] = (uint8_t)cs;
			uint8_t tmp[300];
			memcpy(tmp, o4, f.p.len);
			frame_set(&f, tmp, f.p.len);
			unsigned good = esp_inbound_burst(p.in, &pk, 1);
			if (fig4[i][o] < 0) {
				assert_int_equal(good, 0);
			} else {
				assert_int_equal(good, 1);
				uint8_t *in6 = frame_data(&f);
				unsigned tc = (unsigned)((in6[0] & 0x0f) << 4 | in6[1] >> 4);
				assert_int_equal(tc & 3, (unsigned)fig4[i][o]); /* codepoints */
				assert_int_equal(tc & 0xfc, 0x80); /* DSCP kept */
			}
			pair_free(&p);
		}
	/* DSCP fixed on the outer, copied back on decap with SADB_SAF_DECAP_DSCP; compatibility mode;
	 * DF cleared; TTL set. */
	struct pair p;
	mk_sa(&p.so, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_OUT, AF_INET,
	      SADB_SAF_NO_ECN | SADB_SAF_DF_CLEAR, false, 3);
	p.so.dscp = 10;
	p.so.ttl = 9;
	mk_sa(&p.si, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, SADB_DIR_IN, AF_INET,
	      SADB_SAF_DECAP_DSCP, false, 3);
	p.rto = rt_new();
	p.rti = rt_new();
	assert_int_equal(esp_sa_create(&p.so, p.rto, NULL, &p.out), 0);
	assert_int_equal(esp_sa_create(&p.si, p.rti, NULL, &p.in), 0);
	uint8_t pkt[200];
	uint32_t len = mk_udp(pkt, AF_INET, 10, 0xb9, 1); /* DSCP 46, ECT(1) */
	static struct frame f;
	struct esp_pkt *pk = &f.p;
	frame_set(&f, pkt, len);
	assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
	uint8_t *o4 = frame_data(&f);
	assert_int_equal(o4[1], 10 << 2); /* DSCP 10, Not-ECT */
	assert_int_equal(o4[6] & 0x40, 0);
	assert_int_equal(o4[8], 9);
	assert_int_equal(t_csum(o4, 20), 0);
	assert_int_equal(esp_inbound_burst(p.in, &pk, 1), 1);
	uint8_t *i4 = frame_data(&f);
	assert_int_equal(i4[1], (10 << 2) | 1); /* outer DSCP copied, inner ECN kept */
	assert_int_equal(t_csum(i4, 20), 0);     /* checksum updated */
	pair_free(&p);
}

/* ESP in UDP is as long as its UDP header says: a datagram whose length field falls short of the IP
 * payload carries only that much ESP (the ICV is not where the sender put it), one under 8 or past
 * the payload is malformed; the window and counters do not move, and the genuine packet passes. */
static void test_natt_udp_len(void **state)
{
	(void)state;
	for (int fam = 0; fam < 2; fam++) {
		struct pair p;
		int ofam = fam ? AF_INET6 : AF_INET;
		uint32_t hl = fam ? 40 : 20;

		pair_make(&p, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TUNNEL, ofam, 0, true, 64, ESP_BACKEND_AUTO);
		static struct frame f;
		protect(&p, &f, AF_INET, 100, 1);
		uint8_t pkt[2000], bad[2000];
		uint32_t len = f.p.len, ulen = len - hl;
		memcpy(pkt, frame_data(&f), len);
		assert_int_equal(pkt[hl + 4] << 8 | pkt[hl + 5], ulen);
		struct sadb_runtime before = *p.rti;
		const uint32_t wrong[] = { ulen - 16, ulen - 1, ulen + 1, 7 };
		for (unsigned i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
			uint32_t u = wrong[i];

			memcpy(bad, pkt, len);
			bad[hl + 4] = (uint8_t)(u >> 8);
			bad[hl + 5] = (uint8_t)u;
			unsigned d = deliver(&p, bad, len);
			assert_true(d == SADB_DROP_TRUNCATED || d == SADB_DROP_ICV);
			assert_state_same(p.rti, &before);
		}
		assert_int_equal(deliver(&p, pkt, len), SADB_DROP_NONE);
		pair_free(&p);
	}
}

/* The parse helpers on what the engine produces, and on what is not ESP. */
static void test_parse(void **state)
{
	(void)state;
	for (int v6 = 0; v6 < 2; v6++)
		for (int k = 0; k < 3; k++) {
			struct pair p;
			const struct xf *x = xf_by_name(k == 2 ? "ah hmac-sha1-96" : "esp aes-gcm-16-128");
			pair_make(&p, x, SADB_MODE_TUNNEL, v6 ? AF_INET6 : AF_INET, 0, k == 1, 64, ESP_BACKEND_AUTO);
			static struct frame f;
			protect(&p, &f, AF_INET, 10, 1);
			struct esp_outer o;
			assert_int_equal(esp_parse_outer(frame_data(&f), f.p.len, 0, &o), SADB_DROP_NONE);
			assert_int_equal(o.spi, p.so.spi);
			assert_int_equal(o.proto, x->proto);
			assert_int_equal(o.udp_encap, k == 1);
			assert_int_equal(o.seq, 1);
			assert_memory_equal(o.dst.a.b, p.so.dst.a.b, v6 ? 16 : 4);
			assert_int_equal(o.family, v6 ? AF_INET6 : AF_INET);
			pair_free(&p);
		}
	/* Not ESP: keepalive, IKE, other ports, TCP, an IPv4 fragment, garbage. */
	uint8_t pkt[200];
	struct esp_outer o;
	uint32_t len = mk_udp(pkt, AF_INET, 1, 0, 1);
	pkt[22] = 0x11; pkt[23] = 0x94; /* dport 4500 */
	pkt[28] = 0xff;
	assert_int_equal(esp_parse_outer(pkt, len, 0, &o), SADB_DROP_BAD_ENCAP);
	len = mk_udp(pkt, AF_INET, 40, 0, 1);
	pkt[22] = 0x11; pkt[23] = 0x94;
	memset(pkt + 28, 0, 4);
	assert_int_equal(esp_parse_outer(pkt, len, 0, &o), SADB_DROP_BAD_ENCAP);
	/* ESP in UDP whose UDP length is under 8, beyond the IP payload, or short of it: only the
	 * datagram's own bytes count (here 4 of its 40 bytes of payload: not ESP, as a keepalive) */
	memset(pkt + 28, 0x5a, 4);
	for (unsigned u = 0; u < 4; u++) {
		static const uint16_t ulen[4] = { 7, 49, 12, 48 };
		static const enum sadb_drop want[4] = { SADB_DROP_TRUNCATED, SADB_DROP_TRUNCATED,
							SADB_DROP_BAD_ENCAP, SADB_DROP_NONE };

		pkt[24] = (uint8_t)(ulen[u] >> 8);
		pkt[25] = (uint8_t)ulen[u];
		assert_int_equal(esp_parse_outer(pkt, len, 0, &o), want[u]);
	}
	memset(pkt + 28, 0, 4);
	pkt[23] = 0xf4; /* port 500 */
	assert_int_equal(esp_parse_outer(pkt, len, 0, &o), SADB_DROP_UNSUPPORTED);
	pkt[9] = IPPROTO_TCP;
	assert_int_equal(esp_parse_outer(pkt, len, 0, &o), SADB_DROP_UNSUPPORTED);
	pkt[9] = IPPROTO_ESP;
	pkt[6] = 0x20; /* more fragments */
	assert_int_equal(esp_parse_outer(pkt, len, 0, &o), SADB_DROP_UNSUPPORTED);
	for (uint32_t l = 0; l < 28; l++)
		assert_int_not_equal(esp_parse_outer(pkt, l, 0, &o), SADB_DROP_NONE);

	/* Selector fields: UDP ports, ICMP type/code, IPv6 through a hop-by-hop header. */
	struct sadb_pkt_sel s;
	len = mk_udp(pkt, AF_INET, 10, 0, 7);
	assert_int_equal(esp_pkt_sel(pkt, len, &s), SADB_DROP_NONE);
	assert_int_equal(s.proto, IPPROTO_UDP);
	assert_int_equal(s.sport, 12345);
	assert_int_equal(s.dport, 53);
	assert_int_equal(s.src.family, AF_INET);
	assert_int_equal(s.dst.a.b[3], 7);
	pkt[9] = IPPROTO_ICMP;
	assert_int_equal(esp_pkt_sel(pkt, len, &s), SADB_DROP_NONE);
	assert_int_equal(s.sport, 0x30);
	assert_int_equal(s.dport, 0x39);
	uint8_t p6[300];
	len = mk_udp(pkt, AF_INET6, 10, 0, 7);
	memcpy(p6, pkt, 40);
	static const uint8_t hbh[8] = { IPPROTO_UDP, 0, 1, 4, 0, 0, 0, 0 };
	memcpy(p6 + 40, hbh, 8);
	memcpy(p6 + 48, pkt + 40, len - 40);
	p6[6] = IPPROTO_HOPOPTS;
	p6[5] = (uint8_t)(p6[5] + 8);
	assert_int_equal(esp_pkt_sel(p6, len + 8, &s), SADB_DROP_NONE);
	assert_int_equal(s.proto, IPPROTO_UDP);
	assert_int_equal(s.dport, 53);
	assert_int_equal(esp_pkt_sel(p6, 45, &s), SADB_DROP_TRUNCATED);

	/* RFC 4301 §7.1: a non-first IPv6 fragment whose Fragment header names a Destination Options
	 * header. The fragment's data happens to look like such a header followed by TCP ports 22 ->
	 * 80: the selector must not read it (proto = the Fragment header's next header, ports 0). */
	uint8_t f6[120];
	memcpy(f6, pkt, 40);
	f6[6] = IPPROTO_FRAGMENT;
	static const uint8_t fh[8] = { IPPROTO_DSTOPTS, 0, 0x00, 0xa9, 0, 0, 0, 1 }; /* offset 21 */
	static const uint8_t fake[16] = { IPPROTO_TCP, 0, 1, 4, 0, 0, 0, 0, 0, 22, 0, 80, 0, 0, 0, 0 };
	memcpy(f6 + 40, fh, 8);
	memcpy(f6 + 48, fake, 16);
	f6[4] = 0;
	f6[5] = 24;
	assert_int_equal(esp_pkt_sel(f6, 64, &s), SADB_DROP_NONE);
	assert_int_equal(s.proto, IPPROTO_DSTOPTS);
	assert_int_equal(s.sport, 0);
	assert_int_equal(s.dport, 0);
	/* The first fragment (offset 0, M set) of the same: the headers are read, ports too. */
	f6[42] = 0; f6[43] = 1;
	assert_int_equal(esp_pkt_sel(f6, 64, &s), SADB_DROP_NONE);
	assert_int_equal(s.proto, IPPROTO_TCP);
	assert_int_equal(s.sport, 22);
	assert_int_equal(s.dport, 80);
	/* The same non-first fragment with UDP straight after the Fragment header: proto UDP, no ports. */
	f6[40] = IPPROTO_UDP;
	f6[42] = 0x00; f6[43] = 0xa8;
	assert_int_equal(esp_pkt_sel(f6, 64, &s), SADB_DROP_NONE);
	assert_int_equal(s.proto, IPPROTO_UDP);
	assert_int_equal(s.sport, 0);
	assert_int_equal(s.dport, 0);
}

/* Sum of the pseudo header and segment: 0 (after folding) when the checksum is right. */
static uint16_t l4_check(const uint8_t *ip, uint32_t l4, uint32_t len, uint8_t proto)
{
	uint8_t tmp[2000];
	bool v4 = (ip[0] >> 4) == 4;
	uint32_t n = 0, seg = len - l4;
	if (v4) {
		memcpy(tmp, ip + 12, 8);
		n = 8;
	} else {
		memcpy(tmp, ip + 8, 32);
		n = 32;
	}
	tmp[n++] = 0; tmp[n++] = 0; tmp[n++] = (uint8_t)(seg >> 8); tmp[n++] = (uint8_t)seg;
	tmp[n++] = 0; tmp[n++] = 0; tmp[n++] = 0; tmp[n++] = proto;
	memcpy(tmp + n, ip + l4, seg);
	return t_csum(tmp, n + seg);
}

/* RFC 3948 §3.1.2: transport mode behind a NAT: the inner TCP/UDP checksum is fixed on decap. */
static void test_natt_transport_csum(void **state)
{
	(void)state;
	for (int v6 = 0; v6 < 2; v6++) {
		struct pair p;
		int fam = v6 ? AF_INET6 : AF_INET;
		uint32_t hl = v6 ? 40 : 20;
		pair_make(&p, xf_by_name("esp aes-gcm-16-128"), SADB_MODE_TRANSPORT, fam, 0, true, 64,
			  ESP_BACKEND_AUTO);
		uint8_t pkt[300];
		uint32_t len = mk_udp(pkt, fam, 40, 0, 3);
		pkt[hl + 6] = pkt[hl + 7] = 0;
		uint16_t c = l4_check(pkt, hl, len, IPPROTO_UDP);
		pkt[hl + 6] = (uint8_t)(c >> 8);
		pkt[hl + 7] = (uint8_t)c;
		assert_int_equal(l4_check(pkt, hl, len, IPPROTO_UDP), 0);
		static struct frame f;
		struct esp_pkt *pk = &f.p;
		frame_set(&f, pkt, len);
		assert_int_equal(esp_outbound_burst(p.out, &pk, 1), 1);
		/* A NAT rewrites the source address (and, for IPv4, the header checksum). */
		uint8_t *o = frame_data(&f);
		if (v6) {
			o[23] ^= 0x42;
		} else {
			o[15] ^= 0x42;
			o[10] = o[11] = 0;
			uint16_t cs = t_csum(o, 20);
			o[10] = (uint8_t)(cs >> 8);
			o[11] = (uint8_t)cs;
		}
		uint8_t tmp[400];
		uint32_t olen = f.p.len;
		memcpy(tmp, o, olen);
		frame_set(&f, tmp, olen);
		assert_int_equal(esp_inbound_burst(p.in, &pk, 1), 1);
		assert_int_equal(f.p.len, len);
		uint8_t *d = frame_data(&f);
		assert_int_equal(d[v6 ? 6 : 9], IPPROTO_UDP);
		assert_memory_equal(d + hl + 8, pkt + hl + 8, len - hl - 8); /* payload intact */
		assert_int_equal(l4_check(d, hl, len, IPPROTO_UDP), 0);  /* checksum right for the new source */
		pair_free(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tamper),
		cmocka_unit_test(test_replay_old),
		cmocka_unit_test(test_ah_replay_burst),
		cmocka_unit_test(test_bad_trailer),
		cmocka_unit_test(test_pad_each_byte),
		cmocka_unit_test(test_icv_equal),
		cmocka_unit_test(test_replay_window_reference),
		cmocka_unit_test(test_replay_ceiling),
		cmocka_unit_test(test_esn_infer),
		cmocka_unit_test(test_seq),
		cmocka_unit_test(test_seq_shared),
		cmocka_unit_test(test_mtu),
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_create_refuses),
		cmocka_unit_test(test_expired),
		cmocka_unit_test(test_burst_contract),
		cmocka_unit_test(test_ipsecmb_ring),
		cmocka_unit_test(test_ah_mutable),
		cmocka_unit_test(test_ah_routing_header),
		cmocka_unit_test(test_ah_fast_mixed),
		cmocka_unit_test(test_ah_fast_outer),
		cmocka_unit_test(test_ecn_df_ttl),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_natt_udp_len),
		cmocka_unit_test(test_natt_transport_csum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
