/* ipsecctl/ipsecctl_conf.h: what the files of ipsecctl's configuration language share and nothing
 * outside them uses: the tokens the lexer (ipsecctl_lex.c) hands to the parser, the parser's cursor
 * over one statement and its error helper (ipsecctl_parse.c), the selector and policy option sets
 * that `policy` and the pair statements both read, the SA statements' entry points
 * (ipsecctl_parse_sa.c) and the Mobile IPv6 statements' (ipsecctl_parse_mip6.c). The public side of the language is in ipsecctl/ipsecctl.h. */
#ifndef XIPSEC_IPSECCTL_CONF_H
#define XIPSEC_IPSECCTL_CONF_H

#include "ipsecctl/ipsecctl.h"

/* Past this many errors a file is not worth reading further (a binary, the wrong file). */
#define CTL_MAX_ERRORS 20

/* ---- tokens (ipsecctl_lex.c) ---- */

enum tok_type { T_WORD, T_EOL, T_EOF, T_BAD };

struct tok {
	enum tok_type t;
	bool quoted;
	bool macro;         /* text from a macro: pos is that of '$name', not of the text */
	char *s;
	struct ctl_pos pos;
};

struct toks {
	struct tok *v;
	size_t n, cap;
};

/* Frees a string that may hold key material, wiping it first. */
void conf_wipe_free(char *s);
int conf_toks_push(struct toks *ts, enum tok_type t, const char *s, size_t len, bool quoted,
		   struct ctl_pos pos);
void conf_toks_free(struct toks *ts);
/* Split text into words, quoted strings and end-of-statement marks. A bad byte or an unterminated
 * string becomes a T_BAD token (already reported) so the parser skips that statement. */
int conf_lex(struct ctl_conf *c, const char *text, size_t len, struct toks *ts);

/* Macros, as in OpenBSD's ipsec.conf: `name = value` defines, a word `$name` uses. */
struct conf_macros {
	struct conf_macro *v;
	size_t n;
};
/* 1: the statement t[0..n) was a definition, 0: not one, -1: error. */
int conf_macro_define(struct ctl_conf *c, struct tok *t, size_t n, struct conf_macros *m);
/* Replaces every $name word of the statement; -1 if one is undefined (reported). */
int conf_macro_expand(struct ctl_conf *c, struct tok *t, size_t n, const struct conf_macros *m);
/* Wipes the values (a macro may hold a key) and frees the table. */
void conf_macros_free(struct conf_macros *m);

/* ---- the parser's cursor over one statement (ipsecctl_cursor.c) ---- */

struct ps {
	struct ctl_conf *c;
	struct tok *t;      /* statement tokens; t[n] is its terminator (EOL or EOF) */
	size_t i, n;
	bool seen_other;    /* a statement other than flush came before */
};

struct tok *ps_peek(struct ps *p);
/* Position of the next token, or of the terminator at the end of the statement. */
struct ctl_pos ps_here(struct ps *p);
/* The next token as messages quote it: "'word'", "end of line" or "end of file". */
const char *ps_got(struct ps *p);
/* Next word, or an error "expected WHAT after 'PREV', got ...". */
const char *ps_next(struct ps *p, const char *what);
/* Consumes the next token if it is the unquoted keyword kw (any case). */
bool ps_acc(struct ps *p, const char *kw);
/* Reports "src:line:col: message" at pos; always returns -1, so `return ps_err(...)` fails. */
int ps_err(struct ps *p, struct ctl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "unexpected X in CTX (expected ...)" at the next token; -1. */
int ps_unknown(struct ps *p, const char *ctx, const char *expected);
int ps_u64(struct ps *p, const char *what, uint64_t max, uint64_t *out);
int ps_u32(struct ps *p, const char *what, uint32_t max, uint32_t *out);
/* An address; its position goes to *posp when posp is not NULL. */
int ps_addr(struct ps *p, const char *what, struct sadb_addr *a, struct ctl_pos *posp);
/* esp|ah (required when need_proto) then tunnel|transport. */
int ps_proto_mode(struct ps *p, uint8_t *proto, uint8_t *mode, bool need_proto);

/* A new item at the end of c->items, zeroed; NULL when out of memory. */
struct ctl_item *conf_item_new(struct ctl_conf *c, enum ctl_item_kind kind, struct ctl_pos pos);

/* ---- selectors and policy options (ipsecctl_selector.c): `policy`, `sa ... selector`, pairs ---- */

/* Selector parts; they may come in any order. */
struct selopt {
	struct sadb_selector sel;
	bool from, to, sport, dport, type, code, mhtype, proto;
	struct ctl_pos port_pos, type_pos, proto_pos, from_pos;
};

struct polopt {
	struct selopt sel;
	bool action_set, local_set, peer_set, mode_set, proto_set, reqid_set;
	struct sadb_policy pol;
	struct ctl_pos action_pos, reqid_pos, local_pos;
};

/* TCP, UDP, SCTP and UDP-Lite: the protocols whose selectors have ports. */
bool conf_proto_has_ports(uint8_t proto);
/* Everything: any address, any protocol, all ports. */
void conf_sel_init(struct sadb_selector *s);
void conf_selopt_init(struct selopt *so);
/* 1: consumed a selector keyword, 0: not a selector keyword, -1: error. */
int conf_sel_option(struct ps *p, struct selopt *so);
/* The checks that need the whole selector (ports need a protocol that has them, ...). */
int conf_sel_finish(struct ps *p, struct selopt *so);
/* The selector of the other direction: source and destination (and ports) swapped. */
void conf_sel_reverse(struct sadb_selector *s);
/* Policy keywords other than selector ones (pair: only those a pair statement takes):
 * 1 consumed, 0 not one, -1 error. */
int conf_pol_option(struct ps *p, struct polopt *po, bool pair);

/* ---- SA statements (ipsecctl_parse_sa.c, keys: ipsecctl_parse_key.c) ---- */

/* SA options shared by `sa` and the pair statements. Keys stay text until the transform is known. */
struct saopt {
	struct sadb_sa t;           /* template: options write straight into it */
	const struct ctl_enc_alg *enc;
	const struct ctl_auth_alg *auth;
	struct ctl_pos enc_pos, auth_pos, key_pos, akey_pos, reqid_pos;
	struct ctl_pos key_in_pos, akey_in_pos; /* the IN half of "OUT:IN" (pairs) */
	char *key, *akey;           /* text as written ("0x..", "0x..:0x.."), owned */
	char *key_file, *akey_file;
	unsigned key_part, akey_part;
	bool reqid_set, replay_set;
	struct selopt sel;          /* `selector ...` (sa) */
	bool sel_set;
};

/* The SA options' keywords, for "expected ..." messages. */
#define SA_OPTS "enc, auth, key, authkey, reqid, replay, esn, legacy, encap, state, icv, tfc, " \
	"ttl, dscp, df, noecn, decap-dscp, mtu, ikeid, soft, hard"

/* key|authkey [file PATH [part out|in]] | HEX: the key text into *key (owned), the file name into
 * *file; *pos is the key's position and *in_pos that of the IN half of "OUT:IN". 0 or -1. */
int conf_parse_key(struct ps *p, char **key, char **file, unsigned *part, struct ctl_pos *pos,
		   struct ctl_pos *in_pos);
/* Split "A:B" for a pair; single SAs take one key. Writes into a/b (owned by caller). */
int conf_split_pair(struct ps *p, const char *text, struct ctl_pos pos, bool pair, char **a,
		    char **b, const char *kw);
/* The transform and key text of o into SA sa's algorithm, key, salt and length fields: the checks
 * that need both (AEAD with 'auth', a key of the wrong length, legacy without 'legacy'). 0 or -1. */
int conf_sa_crypto(struct ps *p, struct saopt *o, struct sadb_sa *sa, const char *key,
		   const char *akey);

void conf_saopt_init(struct saopt *o);
/* Wipes the keys and frees what o owns. */
void conf_saopt_free(struct saopt *o);
/* SA options shared by `sa` and the pair statements (`selector` only with allow_selector):
 * 1 consumed, 0 not an SA option, -1 error. */
int conf_sa_option(struct ps *p, struct saopt *o, bool allow_selector);

/* sa PROTO MODE from ADDR to ADDR spi SPI in|out [options] */
int conf_parse_sa(struct ps *p);
/* esp|ah tunnel|transport ... spi OUT:IN ...: two SAs and the two policies binding them. */
int conf_parse_pair(struct ps *p);

/* A pair statement as it is read: the SA options (o), the selector and priority (po), and the two
 * directions' endpoints, SPIs and keys. */
struct pair {
	struct saopt o;
	struct polopt po;
	struct sadb_sa sa[2];       /* [0] out: local->peer, [1] in: peer->local */
	struct sadb_addr local, peer;
	struct ctl_pos spi_pos, local_pos, peer_pos;
	bool have_local, have_peer, have_spi;
	uint64_t spi[2];
	char *k[2], *a[2];          /* each direction's key text */
};

void conf_pair_init(struct pair *pr);
void conf_pair_free(struct pair *pr);
/* spi OUT:IN */
int conf_pair_spi(struct ps *p, struct pair *pr);
/* The statement as a whole: endpoints, SPIs, selector, keys; then both SAs built. 0 or -1. */
int conf_pair_check(struct ps *p, struct pair *pr);
/* The two SAs, then the two policies that bind them by reqid. 0 or -1. */
int conf_pair_items(struct ps *p, const struct pair *pr);

/* ---- Mobile IPv6 home agent statements (ipsecctl_parse_mip6.c) ---- */

/* home-agent ADDR prefix P/LEN [prefix P/LEN ...] [lifetime SECONDS] [link IFNAME] */
int conf_parse_home_agent(struct ps *p);
/* mobile-node HOA signalling spi OUT:IN [SA options] tunnel spi OUT:IN [SA options] [priority N]
 * [router-prefix P/LEN ...]: the two transport SAs and policies of the Mobility Header, the two
 * tunnel SAs and policies of the mobile node's traffic, and a mobile router's networks. */
int conf_parse_mobile_node(struct ps *p);
/* `router-prefix P/LEN` of a mobile-node statement (ipsecctl_parse_nemo.c): one more network of
 * the router mr, refused when it overlaps a home prefix, another of its own or another router's. */
int conf_mn_router_prefix(struct ps *p, struct ctl_mn_router *mr, struct ctl_pos kpos);
/* The policies that record mr's networks, below the router's outbound tunnel policy tun_out. */
int conf_mn_router_policies(struct ps *p, const struct ctl_mn_router *mr, const struct sadb_policy *tun_policy);

#endif
