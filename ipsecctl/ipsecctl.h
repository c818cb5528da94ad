/* ipsecctl/ipsecctl.h: internals of ipsecctl shared between its files: the algorithm table, the
 * configuration language (lexer, parser, normalised printer, validation), the JSON emitter and the
 * command implementations. Nothing here is a library API: only ipsecctl and its tests use it. */
#ifndef XIPSEC_IPSECCTL_H
#define XIPSEC_IPSECCTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sadb/sadb.h"

/* Exit codes (ipsecctl(8)). */
#define CTL_EXIT_OK    0
#define CTL_EXIT_ERR   1
#define CTL_EXIT_USAGE 2

/* ---- Algorithms (ipsecctl_alg.c) ---- */

struct ctl_enc_alg {
	const char *name;       /* canonical, as printed: "aes128gcm16" */
	uint16_t enc;           /* enum sadb_enc */
	uint8_t key_len;        /* bytes, without salt */
	uint8_t salt_len;       /* bytes appended to the key in the keying material */
	uint8_t icv_len;        /* AEAD ICV bytes, 0 for a cipher that needs an integrity transform */
	bool aead;              /* integrity included: no separate auth allowed */
	bool legacy;            /* needs 'legacy' */
	const char *ws_name;    /* Wireshark esp_sa name, NULL when Wireshark cannot decrypt it */
};

struct ctl_auth_alg {
	const char *name;       /* canonical: "sha256" */
	uint16_t auth;          /* enum sadb_auth */
	uint8_t key_len;        /* bytes */
	uint8_t salt_len;       /* AH GMAC: salt after the key */
	uint8_t icv_len;
	bool legacy;
	bool ah_only;           /* GMAC as an AH integrity transform */
	const char *ws_name;
};

const struct ctl_enc_alg *ctl_enc_find(const char *name);
const struct ctl_auth_alg *ctl_auth_find(const char *name);
const struct ctl_enc_alg *ctl_enc_by_id(uint16_t enc, unsigned key_len);
const struct ctl_auth_alg *ctl_auth_by_id(uint16_t auth);
/* Comma-separated canonical names, for error messages. */
const char *ctl_enc_names(void);
const char *ctl_auth_names(void);

/* "ipsecctl: message" on stderr (ipsecctl_util.c): every command's errors outside a configuration. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "<N>" (syslog priority prio, LOG_*) when standard error is systemd's journal stream, else "". */
const char *ctl_pri(int prio);

/* ---- The files ipsecctl trusts (ipsecctl_file.c) ---- */

/* Set to 1, it relaxes the owner and mode checks of configuration and key files. For tests that
 * must read a file they do not own; never for production. */
#define CTL_ENV_TRUST_ANY_FILE "XIPSEC_TRUST_ANY_FILE"
/* The largest configuration file and key file read. */
#define CTL_CONF_MAX (64u << 20)
#define CTL_KEY_FILE_MAX 4096u
/* Opens a configuration file (secret: a key file) for reading: a regular file, not a symbolic
 * link, owned by the euid or root, not writable by group or others, and for a key file not
 * readable by them either. The descriptor, or -errno with the reason ("gw.conf: writable by others
 * (mode 0666); chmod go-w") in msg. */
int ctl_file_open(const char *path, bool secret, char *msg, size_t mlen);
/* The whole of such a file ("-": standard input, unchecked), at most about max bytes, into *out
 * (NUL-terminated, the caller wipes and frees it). 0 or -errno with the reason in msg. */
int ctl_file_read(const char *path, bool secret, size_t max, char **out, size_t *len, char *msg,
		  size_t mlen);
/* The same from fd, opened by ctl_file_open (or standard input); closes it (not standard input). */
int ctl_fd_read(int fd, const char *path, size_t max, char **out, size_t *len, char *msg,
		size_t mlen);

/* ---- Small parsers (ipsecctl_util.c); all return 0 or -EINVAL and write a reason to msg ---- */

/* Hex key: "0x0102..." or "0102...". At most max bytes. */
int ctl_hex_parse(const char *s, uint8_t *out, size_t max, size_t *len, char *msg, size_t mlen);
/* Unsigned number: decimal or 0x hex, at most max. */
int ctl_u64_parse(const char *s, uint64_t max, uint64_t *out);
/* Duration: N, Ns, Nm, Nh, Nd -> seconds. */
int ctl_duration_parse(const char *s, uint64_t *out);
/* Prefix with our messages: "bad prefix ...". */
int ctl_prefix_parse(const char *s, struct sadb_addr *a, uint8_t *plen, char *msg, size_t mlen);
int ctl_addr_parse(const char *s, struct sadb_addr *a, char *msg, size_t mlen);
const char *ctl_addr_str(const struct sadb_addr *a, char *buf, size_t len);
/* IP protocol by name or number; name of a number ("tcp" or "47"). */
int ctl_ipproto_parse(const char *s, uint8_t *out);
const char *ctl_ipproto_name(uint8_t p, char *buf, size_t len);
void ctl_hex_print(FILE *f, const uint8_t *b, size_t n);

const char *ctl_dir_name(uint8_t dir);
const char *ctl_proto_name(uint8_t proto);
const char *ctl_mode_name(uint8_t mode);
const char *ctl_state_name(uint8_t state);
const char *ctl_action_name(uint8_t action);

/* ---- Configuration language (ipsecctl_lex.c, ipsecctl_parse.c, ipsecctl_parse_sa.c,
 * ipsecctl_parse_mip6.c, ipsecctl_check.c, ipsecctl_print.c; their shared internals:
 * ipsecctl_conf.h) ---- */

/* Where a token came from, for "file:line:column:" (or "argument N:" on the command line). */
struct ctl_pos {
	unsigned line, col;     /* line 0: command-line argument number col */
	const char *file;       /* the included file it is in (owned by the ctl_conf); NULL: src */
};

enum ctl_item_kind { CTL_IT_SA = 1, CTL_IT_POLICY, CTL_IT_FLUSH };
#define CTL_FLUSH_SA  1u
#define CTL_FLUSH_POL 2u

/* One statement after expansion: a pair statement ("esp tunnel ... spi A:B") yields two SAs and two
 * policies. Positions point at the tokens that validation may complain about. */
struct ctl_item {
	enum ctl_item_kind kind;
	struct ctl_pos pos;         /* statement start */
	struct ctl_pos spi_pos, reqid_pos, key_pos, authkey_pos, dst_pos;
	unsigned flush;             /* CTL_FLUSH_* */
	struct sadb_sa sa;
	struct sadb_policy pol;
	char *key_file, *authkey_file; /* keys read from files: printed as file references */
	unsigned key_part, authkey_part; /* 1/2: the OUT/IN half of a file holding "OUT:IN" */
};

struct ctl_conf {
	const char *src;            /* file name for messages */
	struct ctl_item *items;
	size_t n, cap;
	unsigned nerr;              /* errors reported */
	bool replace;               /* the SAs replace the SADB's of the same identity (sa update) */
	bool manual;                /* reload: the items replace every manually keyed SA (ike_id 0,
	                             * not larval) and policy of the SADB; IKE's stay */
	FILE *err;                  /* where errors go (stderr; tests may redirect) */
	/* Errors kept until ctl_conf_report, then printed sorted by file and line, each once: so
	 * the syntax errors and the semantic checks of a file come in one list. */
	bool defer;
	struct ctl_msg *msgs;
	size_t nmsg, capmsg;
	/* Files read (ctl_conf_parse_file): their names, which positions point at, in the order
	 * first read; the chain of includes being read now, for cycles and the depth limit. */
	char **files;
	size_t nfiles;
	const char *cur_file;       /* the file being lexed; NULL: src */
	struct ctl_file_id *chain;
	unsigned depth;
	/* the home-agent statements (one per home agent address, at most SADB_HA_MAX): the SADB's
	 * home agent records, in the order given */
	unsigned n_ha;
	struct sadb_home_agent ha[SADB_HA_MAX];
	struct ctl_pos ha_pos[SADB_HA_MAX];
	/* the mobile-node statements' home addresses, for the one-per-address check */
	struct ctl_mobile_node *mn;
	size_t nmn, capmn;
};

struct ctl_json;

struct ctl_msg {
	struct ctl_pos pos;
	size_t file_rank;           /* order of pos.file among c->files (0: src) */
	size_t seq;                 /* order reported: ties keep it */
	char *text;
};

struct ctl_file_id {
	unsigned long long dev, ino;
};

/* Includes nest at most this deep. */
#define CTL_MAX_INCLUDE_DEPTH 8

/* A mobile router's networks (NEMO, RFC 3963): the `router-prefix` words of its statement. */
#define CTL_MNP_MAX 4               /* libmip6's MIP6_MAX_MNP: the prefixes one router registers */
struct ctl_mn_router {
	struct sadb_addr prefix[CTL_MNP_MAX];
	uint8_t plen[CTL_MNP_MAX];
	unsigned n;                 /* 0: a mobile host */
};

struct ctl_mobile_node {
	struct sadb_addr hoa;
	struct ctl_pos pos;         /* of the home address */
	struct ctl_pos stmt;        /* of the statement: its items' pos */
	struct ctl_mn_router router;
};

/* The home-agent statement of ha, normalised (no newline). */
void ctl_home_agent_print(const struct sadb_home_agent *ha, FILE *out);
/* Whether two home agent records say the same (libsadb's own fields aside). */
bool ctl_home_agent_same(const struct sadb_home_agent *a, const struct sadb_home_agent *b);
/* The home agent records ha[0..n) as `show --json` lists them: "home_agents", and "home_agent"
 * the first (null without one) as schema 1 has always had it. */
void ctl_home_agents_json(struct ctl_json *j, const struct sadb_home_agent *ha, unsigned n, bool times);

void ctl_conf_init(struct ctl_conf *c, const char *src, FILE *err);
/* Wipes keys and frees everything. */
void ctl_conf_free(struct ctl_conf *c);
/* Parse a whole configuration text (need not be NUL-terminated). Every error is printed as
 * "src:line:col: message"; returns 0 or -EINVAL if any error was found. */
int ctl_conf_parse(struct ctl_conf *c, const char *text, size_t len);
/* Parse the configuration file path ("-": standard input) after the checks of ctl_file_open, and
 * the files it includes (`include "FILE"`, relative to its directory, checked the same way; a
 * cycle or more than CTL_MAX_INCLUDE_DEPTH levels is an error). 0 or -EINVAL (reported). */
int ctl_conf_parse_file(struct ctl_conf *c, const char *path);
/* Prints the errors kept while c->defer, sorted by file and position, each once, and forgets
 * them. */
void ctl_conf_report(struct ctl_conf *c);
/* Parse one statement given as command-line words (first word the statement keyword, e.g. "sa"). */
int ctl_conf_parse_argv(struct ctl_conf *c, int argc, char **argv);
/* Semantic checks over the whole set (duplicates, reqids, keys shared between SAs) against an
 * optional open SADB, then libsadb's own validation. Prints every error; 0 or -EINVAL. */
int ctl_conf_validate(struct ctl_conf *c, const struct sadb *db);
/* Whether a reload (c->manual) replaces this SADB entry: manual (ike_id 0) and, for an SA, not a
 * larval one (an SPI that IKE has reserved). */
bool ctl_reload_replaces_sa(const struct ctl_conf *c, const struct sadb_sa *sa);
bool ctl_reload_replaces_pol(const struct ctl_conf *c, const struct sadb_policy *p);
/* Normalised text: parses back to the same items. */
void ctl_conf_print(const struct ctl_conf *c, FILE *out);
void ctl_sa_print(const struct sadb_sa *sa, FILE *out, bool keys, const struct ctl_item *it);
void ctl_policy_print(const struct sadb_policy *p, FILE *out);
void ctl_selector_print(const struct sadb_selector *s, FILE *out);
void ctl_conf_error(struct ctl_conf *c, struct ctl_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether s is a policy action word ("protect", "ipsec", "bypass", "drop", ...); its action. */
bool ctl_action_word(const char *s, uint8_t *action);

/* ---- JSON (ipsecctl_json.c): pretty-printed, keys in the order emitted ---- */

/* The version of the JSON schema of every ipsecctl document (ipsecctl(8), JSON OUTPUT): its first
 * field "schema". Raised when a field changes meaning or type or goes away; new fields do not. */
#define CTL_JSON_SCHEMA 1

struct ctl_json {
	FILE *f;
	int depth;
	bool compact;               /* one line (monitor's stream), else two-space indented */
	bool first[32];
};
void ctl_json_init(struct ctl_json *j, FILE *f);
void ctl_json_obj(struct ctl_json *j, const char *key);   /* key NULL inside arrays / at top */
void ctl_json_arr(struct ctl_json *j, const char *key);
void ctl_json_end_obj(struct ctl_json *j);
void ctl_json_end_arr(struct ctl_json *j);
void ctl_json_str(struct ctl_json *j, const char *key, const char *v);
void ctl_json_u64(struct ctl_json *j, const char *key, uint64_t v);
/* A record's numbers written from one table, in its order: each row is ctl_json_u64(key, v). */
struct ctl_json_num {
	const char *key;
	uint64_t v;
};
void ctl_json_u64s(struct ctl_json *j, const struct ctl_json_num *n, size_t count);
void ctl_json_bool(struct ctl_json *j, const char *key, bool v);
void ctl_json_null(struct ctl_json *j, const char *key);
void ctl_json_hex(struct ctl_json *j, const char *key, const uint8_t *b, size_t n);
void ctl_json_done(struct ctl_json *j); /* final newline */
/* Escaped JSON string literal (with quotes) to f. */
void ctl_json_escape(FILE *f, const char *s);

/* ---- Commands (ipsecctl_show.c, ipsecctl_stats.c, ipsecctl_export.c) ---- */

struct ctl_opts {
	const char *sadb_path;
	bool json, dry_run, verbose, show_keys, no_times;
	bool new_keys;              /* --new-keys: the manual keys loaded are new (SADB_SAF_SEQ_NEW) */
	bool flush;                 /* -F: flush everything first (with -f in the same transaction) */
	double interval;            /* monitor */
	long count;                 /* monitor: intervals, 0 = forever */
	bool tshark;                /* export: tshark -o arguments */
	const char *ctl_path;       /* show bindings, cluster: xipsecd's control socket (--ctl) */
};

#define CTL_DEFAULT_XIPSECD "/run/xipsecd.sock"
/* `show bindings`: the home agent's binding cache, from the running xipsecd (ipsecctl_bindings.c). */
int ctl_show_bindings(const struct ctl_opts *o);
/* xipsecd's control socket (ipsecctl_dpctl.c): send req, read the whole answer into *out (malloc'd,
 * NUL-terminated, not empty), within 5 s. CTL_EXIT_* with a message. */
int ctl_xipsecd_ask(const char *path, const char *req, char **out);
/* `show cluster [--json]` and `cluster active|standby` (ipsecctl_dpctl.c). */
int ctl_show_cluster(const struct ctl_opts *o);
int ctl_cmd_cluster(const struct ctl_opts *o, int argc, char **argv);
/* `cluster segments [LIST]`: the active/active segments xipsecd owns, shown or set (ipsecctl_cluster.c). */
int ctl_cluster_segments(const struct ctl_opts *o, int argc, char **argv);


int ctl_show(struct sadb *db, const struct ctl_opts *o, const char *what, int argc, char **argv);
void ctl_sa_json(struct ctl_json *j, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now);
void ctl_sa_text(FILE *f, struct sadb *db, const struct sadb_sa *sa, uint32_t slot,
		 const struct ctl_opts *o, uint64_t now);
void ctl_policy_json(struct ctl_json *j, const struct sadb_policy *p);
int ctl_monitor(struct sadb *db, const struct ctl_opts *o, int argc, char **argv);
int ctl_export_wireshark(struct sadb *db, const struct ctl_opts *o, int argc, char **argv);

#endif
