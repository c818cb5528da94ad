/* ipsecctl/ipsecctl_print.c: the normalised text of ipsecctl's configuration language, behind `-n`
 * and the text listings of `show`: every SA and policy, and the home agent record, as the one
 * statement that parses back to it, with defaults left out and keys printed only where asked (or
 * as the file they came from). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "ipsecctl/ipsecctl_conf.h"

static void prefix_print(FILE *f, const struct sadb_addr *a, uint8_t plen)
{
	char buf[INET6_ADDRSTRLEN];

	if (!a->family) {
		fputs("any", f);
		return;
	}
	fputs(ctl_addr_str(a, buf, sizeof(buf)), f);
	if (plen != (a->family == AF_INET ? 32 : 128))
		fprintf(f, "/%u", plen);
}

static void range_print(FILE *f, const char *kw, uint16_t lo, uint16_t hi)
{
	if (lo == hi)
		fprintf(f, " %s %u", kw, lo);
	else
		fprintf(f, " %s %u-%u", kw, lo, hi);
}

void ctl_selector_print(const struct sadb_selector *s, FILE *f)
{
	char buf[8];
	bool ports = conf_proto_has_ports(s->proto);
	unsigned max = ports ? 65535 : 255;

	fputs("from ", f);
	prefix_print(f, &s->src, s->src_plen);
	if (ports && (s->sport_lo != 0 || s->sport_hi != 65535))
		range_print(f, "port", s->sport_lo, s->sport_hi);
	fputs(" to ", f);
	prefix_print(f, &s->dst, s->dst_plen);
	if (ports && (s->dport_lo != 0 || s->dport_hi != 65535))
		range_print(f, "port", s->dport_lo, s->dport_hi);
	if (s->proto)
		fprintf(f, " proto %s", ctl_ipproto_name(s->proto, buf, sizeof(buf)));
	if (s->proto == 1 || s->proto == 58) {
		if (s->sport_lo != 0 || (s->sport_hi != max && s->sport_hi != 65535))
			range_print(f, "type", s->sport_lo, s->sport_hi);
		if (s->dport_lo != 0 || (s->dport_hi != max && s->dport_hi != 65535))
			range_print(f, "code", s->dport_lo, s->dport_hi);
	} else if (s->proto == 135) {
		if (s->sport_lo != 0 || (s->sport_hi != max && s->sport_hi != 65535))
			range_print(f, "mhtype", s->sport_lo, s->sport_hi);
	}
}

static bool sel_is_any(const struct sadb_selector *s)
{
	return !s->src.family && !s->dst.family && !s->proto && !s->sport_lo &&
	       s->sport_hi == 0xffff && !s->dport_lo && s->dport_hi == 0xffff;
}

static void lifetime_print(FILE *f, const char *kw, const struct sadb_lifetime *lt)
{
	if (!lt->bytes && !lt->packets && !lt->add_seconds && !lt->use_seconds)
		return;
	fprintf(f, " \\\n\t%s", kw);
	if (lt->bytes)
		fprintf(f, " bytes %" PRIu64, lt->bytes);
	if (lt->packets)
		fprintf(f, " packets %" PRIu64, lt->packets);
	if (lt->add_seconds)
		fprintf(f, " time %" PRIu64, lt->add_seconds);
	if (lt->use_seconds)
		fprintf(f, " use %" PRIu64, lt->use_seconds);
}

static void key_print(FILE *f, const char *kw, const char *file, unsigned part, const uint8_t *k,
		      size_t kl, const uint8_t *salt, size_t sl, bool keys)
{
	if (file) {
		fprintf(f, " %s file ", kw);
		ctl_json_escape(f, file); /* a quoted string with \" and \\ escapes, as the lexer reads */
		if (part)
			fprintf(f, " part %s", part == 1 ? "out" : "in");
		return;
	}
	if (!kl && !sl)
		return;
	if (!keys)
		return; /* listings without --show-keys: no key, not even its length */
	fprintf(f, " %s ", kw);
	ctl_hex_print(f, k, kl);
	for (size_t i = 0; i < sl; i++)
		fprintf(f, "%02x", salt[i]);
}

/* One SA option: the first starts a continuation line, the others follow it after a blank. */
static void opt_print(FILE *f, bool *opts, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void opt_print(FILE *f, bool *opts, const char *fmt, ...)
{
	va_list ap;

	if (!*opts) {
		fputs(" \\\n\t", f);
		*opts = true;
	} else {
		fputc(' ', f);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

/* The SA options after the transforms, on one continuation line, each only when it is not the
 * default (what the parser would set without it). */
static void sa_options_print(FILE *f, const struct sadb_sa *sa)
{
	bool opts = false;

	if (sa->flags & SADB_SAF_NO_REPLAY)
		opt_print(f, &opts, "replay off");
	else if (sa->replay_window)
		opt_print(f, &opts, "replay %u", sa->replay_window);
	if (sa->flags & SADB_SAF_ESN)
		opt_print(f, &opts, "esn");
	if (sa->flags & SADB_SAF_LEGACY_OK)
		opt_print(f, &opts, "legacy");
	if (sa->encap_sport || sa->encap_dport)
		opt_print(f, &opts, "encap udp %u %u", sa->encap_sport, sa->encap_dport);
	if (sa->state != SADB_STATE_MATURE)
		opt_print(f, &opts, "state %s", ctl_state_name(sa->state));
	if (sa->icv_len)
		opt_print(f, &opts, "icv %u", sa->icv_len);
	if (sa->tfc_pad)
		opt_print(f, &opts, "tfc %u", sa->tfc_pad);
	if (sa->ttl)
		opt_print(f, &opts, "ttl %u", sa->ttl);
	if (sa->dscp != 0xff)
		opt_print(f, &opts, "dscp %u", sa->dscp);
	if (sa->flags & SADB_SAF_DF_SET)
		opt_print(f, &opts, "df set");
	if (sa->flags & SADB_SAF_DF_CLEAR)
		opt_print(f, &opts, "df clear");
	if (sa->flags & SADB_SAF_NO_ECN)
		opt_print(f, &opts, "noecn");
	if (sa->flags & SADB_SAF_DECAP_DSCP)
		opt_print(f, &opts, "decap-dscp");
	if (sa->mtu)
		opt_print(f, &opts, "mtu %u", sa->mtu);
	if (sa->ike_id)
		opt_print(f, &opts, "ikeid %u", sa->ike_id);
	if (sa->flags & SADB_SAF_MOBILE)
		opt_print(f, &opts, "mobile");
}

void ctl_sa_print(const struct sadb_sa *sa, FILE *f, bool keys, const struct ctl_item *it)
{
	const char *kf = it ? it->key_file : NULL, *akf = it ? it->authkey_file : NULL;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	const struct ctl_enc_alg *enc = ctl_enc_by_id(sa->enc_alg, sa->enc_key_len);
	const struct ctl_auth_alg *auth = ctl_auth_by_id(sa->auth_alg);

	fprintf(f, "sa %s %s from %s to %s spi 0x%08x %s", ctl_proto_name(sa->proto),
		ctl_mode_name(sa->mode), ctl_addr_str(&sa->src, b1, sizeof(b1)),
		ctl_addr_str(&sa->dst, b2, sizeof(b2)), sa->spi, ctl_dir_name(sa->dir));
	if (sa->reqid)
		fprintf(f, " reqid %u", sa->reqid);
	if (sa->proto == SADB_PROTO_ESP && sa->enc_alg != SADB_ENC_NONE) {
		fputs(" \\\n\t", f);
		if (enc)
			fprintf(f, "enc %s", enc->name);
		else
			fprintf(f, "enc <unknown %u/%u>", sa->enc_alg, sa->enc_key_len);
		key_print(f, "key", kf, it ? it->key_part : 0, sa->enc_key, sa->enc_key_len, sa->salt,
			  enc ? enc->salt_len : sa->salt_len, keys);
	}
	if (sa->auth_alg) {
		fputs(" \\\n\t", f);
		if (auth)
			fprintf(f, "auth %s", auth->name);
		else
			fprintf(f, "auth <unknown %u>", sa->auth_alg);
		key_print(f, "authkey", akf, it ? it->authkey_part : 0, sa->auth_key,
			  sa->auth_key_len, sa->salt, auth && auth->salt_len ? sa->salt_len : 0, keys);
	}
	sa_options_print(f, sa);
	lifetime_print(f, "soft", &sa->soft);
	lifetime_print(f, "hard", &sa->hard);
	if (!sel_is_any(&sa->sel)) {
		fputs(" \\\n\tselector ", f);
		ctl_selector_print(&sa->sel, f);
	}
	fputc('\n', f);
}

void ctl_policy_print(const struct sadb_policy *p, FILE *f)
{
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];

	fprintf(f, "policy %s ", ctl_dir_name(p->dir));
	ctl_selector_print(&p->sel, f);
	fprintf(f, " \\\n\t%s", ctl_action_name(p->action));
	if (p->action == SADB_ACT_PROTECT) {
		fprintf(f, " %s %s", ctl_proto_name(p->proto), ctl_mode_name(p->mode));
		if (p->mode == SADB_MODE_TUNNEL) {
			bool out = p->dir == SADB_DIR_OUT;

			fprintf(f, " local %s peer %s",
				ctl_addr_str(out ? &p->tun_src : &p->tun_dst, b1, sizeof(b1)),
				ctl_addr_str(out ? &p->tun_dst : &p->tun_src, b2, sizeof(b2)));
		}
		fprintf(f, " reqid %u", p->reqid);
	} else if (p->reqid) {
		fprintf(f, " reqid %u", p->reqid);  /* a mobile router's network (discard) */
	}
	fprintf(f, " priority %u\n", p->priority);
}

void ctl_home_agent_print(const struct sadb_home_agent *ha, FILE *f)
{
	char b[INET6_ADDRSTRLEN];

	fprintf(f, "home-agent %s", ctl_addr_str(&ha->addr, b, sizeof(b)));
	for (unsigned i = 0; i < ha->n_prefix && i < SADB_HA_MAX_PREFIX; i++)
		fprintf(f, " prefix %s/%u", ctl_addr_str(&ha->prefix[i], b, sizeof(b)), ha->plen[i]);
	if (ha->max_lifetime != 3600)
		fprintf(f, " lifetime %u", ha->max_lifetime);
	if (ha->link[0] && memchr(ha->link, 0, sizeof(ha->link))) {
		fputs(" link ", f);
		ctl_json_escape(f, ha->link);
	}
	if (ha->addr4[0] | ha->addr4[1] | ha->addr4[2] | ha->addr4[3])
		fprintf(f, " ipv4 %u.%u.%u.%u", ha->addr4[0], ha->addr4[1], ha->addr4[2], ha->addr4[3]);
}

bool ctl_home_agent_same(const struct sadb_home_agent *a, const struct sadb_home_agent *b)
{
	if (!sadb_addr_eq(&a->addr, &b->addr) || a->n_prefix != b->n_prefix ||
	    a->max_lifetime != b->max_lifetime || a->flags != b->flags ||
	    memcmp(a->link, b->link, sizeof(a->link)) || memcmp(a->addr4, b->addr4, sizeof(a->addr4)) ||
	    a->n_prefix > SADB_HA_MAX_PREFIX)
		return false;
	for (unsigned i = 0; i < a->n_prefix; i++)
		if (a->plen[i] != b->plen[i] || !sadb_addr_eq(&a->prefix[i], &b->prefix[i]))
			return false;
	return true;
}

static void item_print(const struct ctl_item *it, FILE *out)
{
	switch (it->kind) {
	case CTL_IT_FLUSH:
		fprintf(out, "flush %s\n", it->flush == CTL_FLUSH_SA ? "sa" :
			it->flush == CTL_FLUSH_POL ? "policy" : "all");
		break;
	case CTL_IT_SA:
		ctl_sa_print(&it->sa, out, true, it);
		break;
	case CTL_IT_POLICY:
		ctl_policy_print(&it->pol, out);
		break;
	}
}

void ctl_conf_print(const struct ctl_conf *c, FILE *out)
{
	size_t i = 0;

	/* the home agent after the flushes, which come first and would clear it */
	for (; i < c->n && c->items[i].kind == CTL_IT_FLUSH; i++)
		item_print(&c->items[i], out);
	for (unsigned h = 0; h < c->n_ha; h++) {
		ctl_home_agent_print(&c->ha[h], out);
		fputc('\n', out);
	}
	for (; i < c->n; i++)
		item_print(&c->items[i], out);
}
