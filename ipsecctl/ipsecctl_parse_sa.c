/* ipsecctl/ipsecctl_parse_sa.c: the SA statements of ipsecctl's configuration language: `sa ...`
 * (one SA) and the pair statements `esp|ah tunnel|transport ... spi OUT:IN` (two SAs, one per
 * direction, and the two policies binding them), with the SA options both take. Keys stay text
 * until the transform is known (ipsecctl_parse_key.c). */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipsecctl/ipsecctl_conf.h"

void conf_saopt_init(struct saopt *o)
{
	memset(o, 0, sizeof(*o));
	o->t.state = SADB_STATE_MATURE;
	o->t.replay_window = SADB_REPLAY_DEFAULT;
	o->t.dscp = 0xff;
	conf_sel_init(&o->t.sel);
	conf_selopt_init(&o->sel);
}

void conf_saopt_free(struct saopt *o)
{
	conf_wipe_free(o->key);
	conf_wipe_free(o->akey);
	free(o->key_file);
	free(o->akey_file);
	explicit_bzero(&o->t, sizeof(o->t));
}

/* A lifetime's duration: seconds, or with s/m/h/d. pos: its keyword's. */
static int parse_duration(struct ps *p, struct ctl_pos pos, uint64_t *out)
{
	const char *s = ps_next(p, "a duration (seconds, or with s/m/h/d)");

	if (!s)
		return -1;
	if (ctl_duration_parse(s, out))
		return ps_err(p, pos, "expected a duration (e.g. 3600, 60m, 1h), got '%s'", s);
	return 0;
}

/* soft|hard followed by at least one of bytes N, packets N, time D, use D. */
static int parse_lifetime(struct ps *p, struct sadb_lifetime *lt, const char *which)
{
	int n = 0, rc;

	for (;; n++) {
		struct ctl_pos pos = ps_here(p);

		if (ps_acc(p, "bytes"))
			rc = ps_u64(p, "a byte count", UINT64_MAX, &lt->bytes);
		else if (ps_acc(p, "packets"))
			rc = ps_u64(p, "a packet count", UINT64_MAX, &lt->packets);
		else if (ps_acc(p, "time") || ps_acc(p, "add"))
			rc = parse_duration(p, pos, &lt->add_seconds);
		else if (ps_acc(p, "use") || ps_acc(p, "idle"))
			rc = parse_duration(p, pos, &lt->use_seconds);
		else
			break;
		if (rc)
			return -1;
	}
	if (!n)
		return ps_err(p, ps_here(p), "expected 'bytes', 'packets', 'time' or 'use' after '%s', "
			      "got %s", which, ps_got(p));
	return 0;
}

/* ---- SA options: one function per keyword, found through sa_opts[] ----
 * Each takes the position of its keyword (messages about the option as a whole point there) and
 * returns 0 or -1 (reported). */

static int opt_enc(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	struct sadb_sa *t = &o->t;
	const char *s;
	char name[64];
	char *dash;

	o->enc_pos = ps_here(p);
	if (o->enc)
		return ps_err(p, pos, "'enc' given twice");
	if (!(s = ps_next(p, "an encryption algorithm (e.g. aes128gcm16, aes256-sha256)")))
		return -1;
	snprintf(name, sizeof(name), "%s", s);
	/* strongSwan proposal style "aes256-sha256[-esn]": cipher, then integrity. */
	if ((dash = strchr(name, '-')) && !ctl_enc_find(name)) {
		char *rest = dash + 1, *d2;

		*dash = 0;
		if ((d2 = strrchr(rest, '-')) && (!strcasecmp(d2, "-esn") || !strcasecmp(d2, "-noesn"))) {
			if (!strcasecmp(d2, "-esn"))
				t->flags |= SADB_SAF_ESN;
			*d2 = 0;
		}
		if (!strcasecmp(rest, "esn") || !strcasecmp(rest, "noesn")) {
			if (!strcasecmp(rest, "esn"))
				t->flags |= SADB_SAF_ESN;
		} else if (*rest) {
			if (o->auth)
				return ps_err(p, o->enc_pos, "integrity given twice ('%s' and 'auth')", s);
			o->auth = ctl_auth_find(rest);
			o->auth_pos = o->enc_pos;
			if (!o->auth)
				return ps_err(p, o->enc_pos, "unknown integrity algorithm '%s' in '%s' "
					      "(known: %s)", rest, s, ctl_auth_names());
		}
	}
	o->enc = ctl_enc_find(name);
	if (!o->enc)
		return ps_err(p, o->enc_pos, "unknown encryption algorithm '%s' (known: %s)", name,
			      ctl_enc_names());
	return 0;
}

static int opt_auth(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	const char *s;

	o->auth_pos = ps_here(p);
	if (o->auth)
		return ps_err(p, pos, "integrity algorithm given twice");
	if (!(s = ps_next(p, "an integrity algorithm (e.g. sha256)")))
		return -1;
	o->auth = ctl_auth_find(s);
	if (!o->auth)
		return ps_err(p, o->auth_pos, "unknown integrity algorithm '%s' (known: %s)", s,
			      ctl_auth_names());
	return 0;
}

static int opt_key(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	(void)pos;
	return conf_parse_key(p, &o->key, &o->key_file, &o->key_part, &o->key_pos, &o->key_in_pos);
}

static int opt_authkey(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	(void)pos;
	return conf_parse_key(p, &o->akey, &o->akey_file, &o->akey_part, &o->akey_pos,
			      &o->akey_in_pos);
}

static int opt_reqid(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	(void)pos;
	o->reqid_pos = ps_here(p);
	o->reqid_set = true;
	if (ps_u32(p, "a reqid (1-4294967295)", UINT32_MAX, &o->t.reqid))
		return -1;
	/* 0 is "none", which an SA says by leaving reqid out, and which a pair's protect policies
	 * cannot have: they name their SAs by it */
	if (!o->t.reqid)
		return ps_err(p, o->reqid_pos, "expected a reqid (1-4294967295), got '0'");
	return 0;
}

static int opt_replay(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	struct sadb_sa *t = &o->t;

	o->replay_set = true;
	if (ps_acc(p, "off")) {
		t->flags |= SADB_SAF_NO_REPLAY;
		t->replay_window = 0;
		return 0;
	}
	if (ps_u32(p, "a replay window size (packets, up to 4096) or 'off'", SADB_REPLAY_MAX,
		   &t->replay_window))
		return -1;
	if (t->replay_window == 0)
		return ps_err(p, pos, "replay window 0: write 'replay off' to disable anti-replay");
	return 0;
}

static int opt_df(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	struct sadb_sa *t = &o->t;

	(void)pos;
	t->flags &= ~(SADB_SAF_DF_SET | SADB_SAF_DF_CLEAR);
	if (ps_acc(p, "set"))
		t->flags |= SADB_SAF_DF_SET;
	else if (ps_acc(p, "clear"))
		t->flags |= SADB_SAF_DF_CLEAR;
	else if (!ps_acc(p, "copy"))
		return ps_err(p, ps_here(p), "expected 'copy', 'set' or 'clear' after 'df', got %s",
			      ps_got(p));
	return 0;
}

static int opt_encap(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	struct sadb_sa *t = &o->t;
	uint32_t v;

	if (!ps_acc(p, "udp"))
		return ps_err(p, ps_here(p), "expected 'udp' after 'encap', got %s", ps_got(p));
	if (ps_u32(p, "a UDP source port", 65535, &v))
		return -1;
	t->encap_sport = (uint16_t)v;
	if (ps_u32(p, "a UDP destination port", 65535, &v))
		return -1;
	t->encap_dport = (uint16_t)v;
	if (!t->encap_sport || !t->encap_dport)
		return ps_err(p, pos, "UDP encapsulation ports must not be 0");
	return 0;
}

static int opt_state(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	static const struct { const char *word; uint8_t state; } states[] = {
		{ "larval", SADB_STATE_LARVAL }, { "mature", SADB_STATE_MATURE },
		{ "dying", SADB_STATE_DYING }, { "dead", SADB_STATE_DEAD },
	};

	(void)pos;
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (ps_acc(p, states[i].word)) {
			o->t.state = states[i].state;
			return 0;
		}
	}
	return ps_err(p, ps_here(p), "expected 'larval', 'mature', 'dying' or 'dead' after 'state', "
		      "got %s", ps_got(p));
}

static int opt_ttl(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	uint32_t v;

	if (ps_u32(p, "a TTL (1-255)", 255, &v))
		return -1;
	if (!v)
		return ps_err(p, pos, "TTL 0 would drop every packet");
	o->t.ttl = (uint8_t)v;
	return 0;
}

static int opt_dscp(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	uint32_t v;

	(void)pos;
	if (ps_acc(p, "copy")) {
		o->t.dscp = 0xff;
		return 0;
	}
	if (ps_u32(p, "a DSCP (0-63) or 'copy'", 63, &v))
		return -1;
	o->t.dscp = (uint8_t)v;
	return 0;
}

static int opt_mtu(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	if (ps_u32(p, "an MTU in bytes", 65535, &o->t.mtu))
		return -1;
	if (o->t.mtu && o->t.mtu < 576)
		return ps_err(p, pos, "MTU %u is below the IPv4 minimum of 576", o->t.mtu);
	return 0;
}

static int opt_soft(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	(void)pos;
	return parse_lifetime(p, &o->t.soft, "soft");
}

static int opt_hard(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	(void)pos;
	return parse_lifetime(p, &o->t.hard, "hard");
}

/* `sa ... selector from A to B ...`: the traffic a single SA carries (pairs have their own). */
static int opt_selector(struct ps *p, struct saopt *o, struct ctl_pos pos)
{
	int n = 0, r;

	if (o->sel_set)
		return ps_err(p, pos, "'selector' given twice");
	o->sel_set = true;
	while ((r = conf_sel_option(p, &o->sel)) == 1)
		n++;
	if (r < 0)
		return -1;
	if (!n)
		return ps_err(p, ps_here(p), "expected 'from', 'to' or 'proto' after 'selector', got %s",
			      ps_got(p));
	return 0;
}

/* How a keyword changes the SA: through its function; else, with a 'what', as a number up to max
 * written to the field at off (of width bytes); else by setting flag. */
static const struct sa_optdef {
	const char *kw;
	int (*fn)(struct ps *p, struct saopt *o, struct ctl_pos pos);
	uint32_t flag;
	const char *what;
	uint32_t max;
	size_t off;
	uint8_t width;
	bool sa_only;           /* `sa` only: a pair's selector is its own statement's */
} sa_opts[] = {
#define FN(kw, fn) { kw, fn, 0, NULL, 0, 0, 0, false }
#define FLAG(kw, flag) { kw, NULL, flag, NULL, 0, 0, 0, false }
#define NUM(kw, what, max, field) { kw, NULL, 0, what, max, offsetof(struct sadb_sa, field), \
	sizeof(((struct sadb_sa *)0)->field), false }
	FN("enc", opt_enc),
	FN("auth", opt_auth),
	FN("key", opt_key),
	FN("enckey", opt_key),
	FN("authkey", opt_authkey),
	FN("reqid", opt_reqid),
	FN("replay", opt_replay),
	FLAG("esn", SADB_SAF_ESN),
	FLAG("legacy", SADB_SAF_LEGACY_OK),
	FLAG("decap-dscp", SADB_SAF_DECAP_DSCP),
	FLAG("noecn", SADB_SAF_NO_ECN),
	FN("df", opt_df),
	FN("encap", opt_encap),
	FN("state", opt_state),
	NUM("icv", "an ICV length in bytes", 64, icv_len),
	NUM("tfc", "a TFC padding length in bytes", 65535, tfc_pad),
	FN("ttl", opt_ttl),
	FN("hoplimit", opt_ttl),
	FN("dscp", opt_dscp),
	FN("mtu", opt_mtu),
	NUM("ikeid", "an IKE SA id", UINT32_MAX, ike_id),
	FN("soft", opt_soft),
	FN("hard", opt_hard),
	{ "selector", opt_selector, 0, NULL, 0, 0, 0, true },
	/* a mobile-node statement's SAs carry it without the word */
	{ "mobile", NULL, SADB_SAF_MOBILE, NULL, 0, 0, 0, true },
#undef FN
#undef FLAG
#undef NUM
};

/* A NUM option: the number into its field of the SA template. */
static int sa_num(struct ps *p, struct saopt *o, const struct sa_optdef *d)
{
	unsigned char *field = (unsigned char *)&o->t + d->off;
	uint32_t v;

	if (ps_u32(p, d->what, d->max, &v))
		return -1;
	if (d->width == 1)
		*field = (uint8_t)v;
	else if (d->width == 2)
		memcpy(field, &(uint16_t){ (uint16_t)v }, 2);
	else
		memcpy(field, &v, 4);
	return 0;
}

int conf_sa_option(struct ps *p, struct saopt *o, bool allow_selector)
{
	struct ctl_pos pos = ps_here(p);

	for (size_t i = 0; i < sizeof(sa_opts) / sizeof(sa_opts[0]); i++) {
		const struct sa_optdef *d = &sa_opts[i];

		if ((d->sa_only && !allow_selector) || !ps_acc(p, d->kw))
			continue;
		if (d->fn)
			return d->fn(p, o, pos) ? -1 : 1;
		if (d->what)
			return sa_num(p, o, d) ? -1 : 1;
		o->t.flags |= d->flag;
		return 1;
	}
	return 0;
}

static int check_spi(struct ps *p, uint64_t spi, struct ctl_pos pos)
{
	if (spi < 256)
		return ps_err(p, pos, "SPI %" PRIu64 " is reserved (RFC 4303: 0-255 are not usable); "
			      "use 0x100-0xffffffff", spi);
	return 0;
}

/* sa PROTO MODE from ADDR to ADDR spi SPI in|out [options] */
int conf_parse_sa(struct ps *p)
{
	struct saopt o;
	struct sadb_sa *t = &o.t;
	bool have_src = false, have_dst = false, have_spi = false;
	struct ctl_pos spi_pos = { 0, 0, NULL }, dst_pos = { 0, 0, NULL }, src_pos;
	struct ctl_item *it;
	uint64_t spi = 0;
	int rc = -1, r;

	conf_saopt_init(&o);
	if (ps_proto_mode(p, &t->proto, &t->mode, true))
		goto out;
	while (ps_peek(p)) {
		if (ps_acc(p, "from")) {
			if (ps_addr(p, "the source address", &t->src, &src_pos))
				goto out;
			have_src = true;
		} else if (ps_acc(p, "to")) {
			if (ps_addr(p, "the destination address", &t->dst, &dst_pos))
				goto out;
			have_dst = true;
		} else if (ps_acc(p, "spi")) {
			spi_pos = ps_here(p);
			if (ps_u64(p, "an SPI (0x100-0xffffffff)", UINT32_MAX, &spi))
				goto out;
			have_spi = true;
		} else if (ps_acc(p, "in")) {
			t->dir = SADB_DIR_IN;
		} else if (ps_acc(p, "out")) {
			t->dir = SADB_DIR_OUT;
		} else if ((r = conf_sa_option(p, &o, true)) != 0) {
			if (r < 0)
				goto out;
		} else {
			ps_unknown(p, "SA", "from, to, spi, in, out, selector, mobile, " SA_OPTS);
			goto out;
		}
	}
	if (!have_src || !have_dst || !have_spi || !t->dir) {
		ps_err(p, ps_here(p), "incomplete SA: missing %s", !have_src ? "'from ADDR'" :
		       !have_dst ? "'to ADDR'" : !have_spi ? "'spi SPI'" : "direction 'in' or 'out'");
		goto out;
	}
	if (check_spi(p, spi, spi_pos))
		goto out;
	t->spi = (uint32_t)spi;
	if (t->src.family != t->dst.family) {
		ps_err(p, dst_pos, "'from' and 'to' are of different address families");
		goto out;
	}
	if (o.sel_set) {
		if (conf_sel_finish(p, &o.sel))
			goto out;
		t->sel = o.sel.sel;
	}
	{
		char *k = NULL, *k2 = NULL, *a = NULL, *a2 = NULL;

		if (conf_split_pair(p, o.key, o.key_pos, false, &k, &k2, "key") ||
		    conf_split_pair(p, o.akey, o.akey_pos, false, &a, &a2, "authkey") ||
		    conf_sa_crypto(p, &o, t, k, a)) {
			conf_wipe_free(k);
			conf_wipe_free(a);
			goto out;
		}
		conf_wipe_free(k);
		conf_wipe_free(a);
	}
	if (!(it = conf_item_new(p->c, CTL_IT_SA, p->t[0].pos)))
		goto out;
	it->sa = *t;
	it->spi_pos = spi_pos;
	it->dst_pos = dst_pos;
	it->reqid_pos = o.reqid_set ? o.reqid_pos : p->t[0].pos;
	it->key_pos = o.key_pos;
	it->authkey_pos = o.akey_pos;
	it->key_file = o.key_file;
	it->authkey_file = o.akey_file;
	it->key_part = o.key_part;
	it->authkey_part = o.akey_part;
	o.key_file = o.akey_file = NULL;
	rc = 0;
out:
	conf_saopt_free(&o);
	return rc;
}

/* spi OUT:IN */
int conf_pair_spi(struct ps *p, struct pair *pr)
{
	const char *s;
	char buf[64], *colon;

	pr->spi_pos = ps_here(p);
	if (!(s = ps_next(p, "two SPIs 'OUT:IN'")))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (!colon)
		return ps_err(p, pr->spi_pos, "an SA pair takes two SPIs 'OUT:IN', got '%s'", s);
	*colon = 0;
	if (ctl_u64_parse(buf, UINT32_MAX, &pr->spi[0]) ||
	    ctl_u64_parse(colon + 1, UINT32_MAX, &pr->spi[1]))
		return ps_err(p, pr->spi_pos, "expected two SPIs 'OUT:IN' (0x100-0xffffffff), got '%s'",
			      s);
	pr->have_spi = true;
	return 0;
}

/* The words after "esp|ah tunnel|transport", in any order. */
static int pair_words(struct ps *p, struct pair *pr)
{
	int r;

	while (ps_peek(p)) {
		if (ps_acc(p, "local")) {
			if (ps_addr(p, "the local tunnel endpoint", &pr->local, &pr->local_pos))
				return -1;
			pr->have_local = true;
		} else if (ps_acc(p, "peer")) {
			if (ps_addr(p, "the peer address", &pr->peer, &pr->peer_pos))
				return -1;
			pr->have_peer = true;
		} else if (ps_acc(p, "spi")) {
			if (conf_pair_spi(p, pr))
				return -1;
		} else if ((r = conf_sel_option(p, &pr->po.sel)) != 0 ||
			   (r = conf_pol_option(p, &pr->po, true)) != 0 ||
			   (r = conf_sa_option(p, &pr->o, false)) != 0) {
			if (r < 0)
				return -1;
		} else {
			return ps_unknown(p, "SA pair", "from, to, proto, local, peer, spi, priority, "
					  SA_OPTS);
		}
	}
	return 0;
}

static bool host_prefix(const struct sadb_addr *a, uint8_t plen)
{
	return plen == (a->family == AF_INET ? 32 : 128);
}

/* A transport pair's endpoints are its selector's addresses; a tunnel's are 'local' and 'peer'. */
static int pair_endpoints(struct ps *p, struct pair *pr)
{
	struct selopt *so = &pr->po.sel;

	if (pr->o.t.mode != SADB_MODE_TRANSPORT) {
		if (!pr->have_local || !pr->have_peer)
			return ps_err(p, ps_here(p), "incomplete SA pair: missing '%s ADDR'",
				      pr->have_local ? "peer" : "local");
		return 0;
	}
	if (pr->have_local || pr->have_peer)
		return ps_err(p, pr->have_local ? pr->local_pos : pr->peer_pos, "a transport pair "
			      "takes its endpoints from 'from' and 'to'; 'local'/'peer' are for tunnels");
	if (!so->from || !so->to)
		return ps_err(p, ps_here(p), "incomplete SA pair: missing '%s ADDR'",
			      so->from ? "to" : "from");
	if (!host_prefix(&so->sel.src, so->sel.src_plen) || !host_prefix(&so->sel.dst, so->sel.dst_plen))
		return ps_err(p, so->from_pos, "transport mode protects traffic between two hosts: "
			      "'from' and 'to' must be single addresses");
	pr->local = so->sel.src;
	pr->peer = so->sel.dst;
	return 0;
}

int conf_pair_check(struct ps *p, struct pair *pr)
{
	struct saopt *o = &pr->o;

	if (pair_endpoints(p, pr))
		return -1;
	if (!pr->have_spi)
		return ps_err(p, ps_here(p), "incomplete SA pair: missing 'spi OUT:IN'");
	if (check_spi(p, pr->spi[0], pr->spi_pos) || check_spi(p, pr->spi[1], pr->spi_pos))
		return -1;
	if (pr->local.family != pr->peer.family)
		return ps_err(p, pr->peer_pos.line || pr->peer_pos.col ? pr->peer_pos : p->t[0].pos,
			      "'local' and 'peer' are of different address families");
	if (conf_sel_finish(p, &pr->po.sel))
		return -1;
	if (o->key_part || o->akey_part)
		return ps_err(p, o->key_part ? o->key_pos : o->akey_pos, "'part' selects one SA's half "
			      "of a key file; a pair takes both halves");
	if (!o->reqid_set)
		o->t.reqid = (uint32_t)pr->spi[0];
	if (conf_split_pair(p, o->key, o->key_pos, true, &pr->k[0], &pr->k[1], "key") ||
	    conf_split_pair(p, o->akey, o->akey_pos, true, &pr->a[0], &pr->a[1], "authkey"))
		return -1;
	for (int d = 0; d < 2; d++) {
		struct sadb_sa *sa = &pr->sa[d];

		*sa = o->t;
		sa->spi = (uint32_t)pr->spi[d];
		sa->dir = d == 0 ? SADB_DIR_OUT : SADB_DIR_IN;
		sa->src = d == 0 ? pr->local : pr->peer;
		sa->dst = d == 0 ? pr->peer : pr->local;
		sa->sel = pr->po.sel.sel;
		if (d == 1)
			conf_sel_reverse(&sa->sel);
		if (conf_sa_crypto(p, o, sa, pr->k[d], pr->a[d]))
			return -1;
	}
	return 0;
}

int conf_pair_items(struct ps *p, const struct pair *pr)
{
	const struct saopt *o = &pr->o;

	for (int d = 0; d < 2; d++) {
		struct ctl_item *it = conf_item_new(p->c, CTL_IT_SA, p->t[0].pos);

		if (!it)
			return -1;
		it->sa = pr->sa[d];
		it->spi_pos = pr->spi_pos;
		it->dst_pos = d == 0 ? pr->peer_pos : pr->local_pos;
		it->reqid_pos = o->reqid_set ? o->reqid_pos : pr->spi_pos;
		it->key_pos = d == 0 ? o->key_pos : o->key_in_pos;
		it->authkey_pos = d == 0 ? o->akey_pos : o->akey_in_pos;
		if (o->key_file) {
			it->key_file = strdup(o->key_file);
			it->key_part = (unsigned)d + 1;
		}
		if (o->akey_file) {
			it->authkey_file = strdup(o->akey_file);
			it->authkey_part = (unsigned)d + 1;
		}
	}
	for (int d = 0; d < 2; d++) {
		struct ctl_item *it = conf_item_new(p->c, CTL_IT_POLICY, p->t[0].pos);
		struct sadb_policy *pol;

		if (!it)
			return -1;
		pol = &it->pol;
		*pol = pr->po.pol;
		pol->dir = d == 0 ? SADB_DIR_OUT : SADB_DIR_IN;
		pol->action = SADB_ACT_PROTECT;
		pol->proto = o->t.proto;
		pol->mode = o->t.mode;
		pol->reqid = o->t.reqid;
		pol->sel = pr->sa[d].sel;
		if (o->t.mode == SADB_MODE_TUNNEL) {
			pol->tun_src = pr->sa[d].src;
			pol->tun_dst = pr->sa[d].dst;
		}
		it->reqid_pos = it->spi_pos = pr->spi_pos;
	}
	return 0;
}

void conf_pair_init(struct pair *pr)
{
	memset(pr, 0, sizeof(*pr));
	conf_saopt_init(&pr->o);
	conf_selopt_init(&pr->po.sel);
}

void conf_pair_free(struct pair *pr)
{
	for (int d = 0; d < 2; d++) {
		conf_wipe_free(pr->k[d]);
		conf_wipe_free(pr->a[d]);
	}
	conf_saopt_free(&pr->o);
	explicit_bzero(pr, sizeof(*pr));
}

/* esp|ah tunnel [selector] local A peer B spi OUT:IN [SA options] [priority N]
 * esp|ah transport from A to B spi OUT:IN [SA options] [priority N] */
int conf_parse_pair(struct ps *p)
{
	struct pair pr;
	int rc = -1;

	conf_pair_init(&pr);
	p->i = 0;
	if (ps_proto_mode(p, &pr.o.t.proto, &pr.o.t.mode, true) == 0 && pair_words(p, &pr) == 0 &&
	    conf_pair_check(p, &pr) == 0)
		rc = conf_pair_items(p, &pr);
	conf_pair_free(&pr);
	return rc;
}
