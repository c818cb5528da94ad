/* ipsecctl/ike_cmd.c: `ipsecctl ike ...`, the IKE part of ipsecctl. It talks to
 * xipsec-iked through VICI (libvici) for IKE/CHILD SA listings, initiate and terminate, and reads the
 * daemon's status file (maxqm counters, written by ike/maxqm.c) in its run directory. maxqm is changed
 * by writing the run directory's override file and signalling the daemon (SIGHUP), which re-reads it
 * and rewrites its status: `maxqm set` returns once the daemon shows the new value. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipsecctl/ike_cmd.h"
#include "ipsecctl/ipsecctl.h"

#ifndef XIPSEC_HAVE_VICI
/* Built without strongSwan's headers: there is no xipsec-iked to talk to either. */
int ipsecctl_ike_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ctl_err("ike: not available: built without strongSwan (no xipsec-iked, no libvici)");
	return 1;
}
#else
#include "metrics/vici_dl.h"

/* libvici, loaded by the commands that talk to the daemon (list, initiate, terminate) */
static const struct vici_dl *vici;

#define IKE_DEFAULT_RUN_DIR "/run/xipsec-iked"
#define IKE_ENV_RUN_DIR     "XIPSEC_IKED_RUN"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ipsecctl ike [--run-dir DIR] [--vici URI] [--json] COMMAND\n"
		"  list                                IKE SAs with their CHILD SAs and counters\n"
		"  maxqm show                          the maxqm limit, per-connection limits, Quick Modes per IKE SA\n"
		"  maxqm set N [--conn NAME]           set maxqm (for one connection with --conn; 0 = no limit)\n"
		"  maxqm unset [--conn NAME]           back to the strongswan.conf value\n"
		"  initiate --child NAME [--ike NAME] [--timeout MS]\n"
		"  terminate (--ike NAME | --child NAME | --ike-id N | --child-id N) [--force]\n"
		"  stats                               the daemon's counters (Main Modes, CHILD SAs, expiries)\n"
		"  help                                this list\n"
		"run directory: --run-dir, else $" IKE_ENV_RUN_DIR ", else " IKE_DEFAULT_RUN_DIR
		" (VICI socket charon.vici in it)\n");
}

/* ---- a small tree of a VICI message ---- */

enum vkind { V_SECTION, V_KV, V_LIST };
struct vnode {
	enum vkind kind;
	char *name;             /* NULL for list items */
	char *value;            /* KV and list items */
	struct vnode *child, *last, *next;
};

static struct vnode *vnode_add(struct vnode *parent, enum vkind kind, const char *name, const char *value)
{
	struct vnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	n->name = name ? strdup(name) : NULL;
	n->value = value ? strdup(value) : NULL;
	if (parent) {
		if (parent->last)
			parent->last->next = n;
		else
			parent->child = n;
		parent->last = n;
	}
	return n;
}

static void vnode_free(struct vnode *n)
{
	while (n) {
		struct vnode *next = n->next;

		vnode_free(n->child);
		free(n->name);
		free(n->value);
		free(n);
		n = next;
	}
}

static char *value_dup(vici_res_t *res)
{
	int len = 0;
	char *v = vici->parse_value(res, &len), *s = malloc(len + 1);

	if (!s)
		return NULL;
	memcpy(s, v, len);
	s[len] = '\0';
	return s;
}

/* Whole message as a tree under a root section. NULL on a parse error. */
static struct vnode *vici_tree(vici_res_t *res)
{
	struct vnode *root = vnode_add(NULL, V_SECTION, "", NULL), *stack[32];
	int depth = 0;
	char *v;

	stack[0] = root;
	for (;;) {
		switch (vici->parse(res)) {
		case VICI_PARSE_BEGIN_SECTION:
		case VICI_PARSE_BEGIN_LIST:
			if (depth + 1 >= (int)(sizeof(stack) / sizeof(stack[0])))
				goto fail;
			stack[depth + 1] = vnode_add(stack[depth], V_SECTION, vici->parse_name(res), NULL);
			depth++;
			break;
		case VICI_PARSE_END_SECTION:
		case VICI_PARSE_END_LIST:
			if (depth == 0)
				goto fail;
			depth--;
			break;
		case VICI_PARSE_KEY_VALUE:
			v = value_dup(res);
			vnode_add(stack[depth], V_KV, vici->parse_name(res), v);
			free(v);
			break;
		case VICI_PARSE_LIST_ITEM:
			stack[depth]->kind = V_LIST;
			v = value_dup(res);
			vnode_add(stack[depth], V_KV, NULL, v);
			free(v);
			break;
		case VICI_PARSE_END:
			return root;
		default:
			goto fail;
		}
	}
fail:
	vnode_free(root);
	return NULL;
}

static struct vnode *vfind(struct vnode *n, const char *name)
{
	struct vnode *c;

	for (c = n ? n->child : NULL; c; c = c->next)
		if (c->name && strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static const char *vstr(struct vnode *n, const char *name, const char *def)
{
	struct vnode *c = vfind(n, name);

	return c && c->value ? c->value : def;
}

/* ---- the daemon's status file ---- */

struct ike_status_sa {
	unsigned id, qm, limit;
	char conn[64], role[16];
	int version;
	bool renewing;
};

struct ike_status {
	bool present;
	long pid;
	unsigned maxqm;
	char counters[24][2][48];
	unsigned n_counters;
	struct ike_status_sa sa[1024];
	unsigned n_sa;
};

static int status_read(const char *run_dir, struct ike_status *st)
{
	char path[4096 + 16], line[256];
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/status", run_dir);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	st->present = true;
	while (fgets(line, sizeof(line), f)) {
		struct ike_status_sa *s;
		char k[48], v[48], ren[16] = "";

		if (line[0] == '#')
			continue;
		if (strncmp(line, "ike ", 4) == 0 && st->n_sa < sizeof(st->sa) / sizeof(st->sa[0])) {
			s = &st->sa[st->n_sa];
			if (sscanf(line, "ike %u %63s v%d %15s qm %u limit %u %15s", &s->id, s->conn, &s->version,
				   s->role, &s->qm, &s->limit, ren) >= 6) {
				s->renewing = strcmp(ren, "renewing") == 0;
				st->n_sa++;
			}
			continue;
		}
		if (sscanf(line, "%47s %47s", k, v) != 2)
			continue;
		if (strcmp(k, "pid") == 0)
			st->pid = strtol(v, NULL, 10);
		else if (strcmp(k, "maxqm") == 0)
			st->maxqm = strtoul(v, NULL, 10);
		else if (st->n_counters < sizeof(st->counters) / sizeof(st->counters[0])) {
			snprintf(st->counters[st->n_counters][0], 48, "%s", k);
			snprintf(st->counters[st->n_counters][1], 48, "%s", v);
			st->n_counters++;
		}
	}
	fclose(f);
	return 0;
}

static const struct ike_status_sa *status_sa(const struct ike_status *st, unsigned id)
{
	unsigned i;

	for (i = 0; i < st->n_sa; i++)
		if (st->sa[i].id == id)
			return &st->sa[i];
	return NULL;
}

/* ---- JSON ---- */

/* A VICI string (NULL: absent) as a JSON string literal. */
static void json_str(FILE *f, const char *s)
{
	ctl_json_escape(f, s ? s : "");
}

/* A VICI subtree as JSON: sections as objects, lists as arrays, values as strings. */
static void json_vnode(FILE *f, struct vnode *n, int ind)
{
	struct vnode *c;
	bool first = true;

	if (n->kind == V_KV) {
		json_str(f, n->value);
		return;
	}
	fputc(n->kind == V_LIST ? '[' : '{', f);
	for (c = n->child; c; c = c->next) {
		fprintf(f, "%s\n%*s", first ? "" : ",", ind + 2, "");
		first = false;
		if (n->kind != V_LIST) {
			json_str(f, c->name);
			fprintf(f, ": ");
		}
		json_vnode(f, c, ind + 2);
	}
	if (!first)
		fprintf(f, "\n%*s", ind, "");
	fputc(n->kind == V_LIST ? ']' : '}', f);
}

/* ---- commands ---- */

struct ike_ctx {
	const char *run_dir;
	char uri[4096 + 32];
	bool json;
	vici_conn_t *conn;
	struct vnode *sas;      /* list-sa events collected */
};

static int connect_vici(struct ike_ctx *c)
{
	c->conn = vici->connect(c->uri);
	if (!c->conn) {
		ctl_err("ike: cannot connect to xipsec-iked at %s: %s (is it running? see --run-dir)", c->uri,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void on_list_sa(void *user, char *name, vici_res_t *msg)
{
	struct ike_ctx *c = user;
	struct vnode *t = vici_tree(msg), *s;

	if (!t)
		return;
	/* each event holds one section, named after the connection */
	while ((s = t->child)) {
		t->child = s->next;
		s->next = NULL;
		if (c->sas->last)
			c->sas->last->next = s;
		else
			c->sas->child = s;
		c->sas->last = s;
	}
	t->last = NULL;
	vnode_free(t);
}

static void print_child_text(struct vnode *ch)
{
	struct vnode *ts, *it;

	printf("  %s[%s]: %s %s %s %s%s%s", vstr(ch, "name", "?"), vstr(ch, "uniqueid", "?"),
	       vstr(ch, "state", "?"), vstr(ch, "mode", "?"), vstr(ch, "protocol", "?"),
	       vstr(ch, "encr-alg", ""), vfind(ch, "encr-keysize") ? "-" : "", vstr(ch, "encr-keysize", ""));
	if (vfind(ch, "integ-alg"))
		printf("/%s", vstr(ch, "integ-alg", ""));
	if (vfind(ch, "dh-group"))
		printf(" PFS %s", vstr(ch, "dh-group", ""));
	printf(" reqid %s\n", vstr(ch, "reqid", "?"));
	printf("    in  %s %s bytes %s packets, out %s %s bytes %s packets\n", vstr(ch, "spi-in", "-"),
	       vstr(ch, "bytes-in", "0"), vstr(ch, "packets-in", "0"), vstr(ch, "spi-out", "-"),
	       vstr(ch, "bytes-out", "0"), vstr(ch, "packets-out", "0"));
	printf("    installed %ss ago, rekey in %ss, expires in %ss\n", vstr(ch, "install-time", "?"),
	       vstr(ch, "rekey-time", "-"), vstr(ch, "life-time", "-"));
	printf("    ");
	ts = vfind(ch, "local-ts");
	for (it = ts ? ts->child : NULL; it; it = it->next)
		printf("%s%s", it->value, it->next ? "," : "");
	printf(" === ");
	ts = vfind(ch, "remote-ts");
	for (it = ts ? ts->child : NULL; it; it = it->next)
		printf("%s%s", it->value, it->next ? "," : "");
	printf("\n");
}

static int cmd_list(struct ike_ctx *c)
{
	struct ike_status st;
	vici_req_t *req;
	vici_res_t *res;
	struct vnode *ike, *children, *ch;
	bool first = true;
	int n = 0;

	status_read(c->run_dir, &st);
	c->sas = vnode_add(NULL, V_SECTION, "", NULL);
	if (vici->register_event(c->conn, "list-sa", on_list_sa, c) != 0) {
		ctl_err("ike: registering for list-sa events failed: %s", strerror(errno));
		return 1;
	}
	req = vici->begin("list-sas");
	vici->add_key_valuef(req, "noblock", "yes");
	res = vici->submit(req, c->conn);
	if (!res) {
		ctl_err("ike: list-sas failed: %s", strerror(errno));
		return 1;
	}
	vici->free_res(res);
	vici->register_event(c->conn, "list-sa", NULL, NULL);

	if (c->json) {
		printf("{\n  \"schema\": %d,\n  \"ike_sas\": [", CTL_JSON_SCHEMA);
		for (ike = c->sas->child; ike; ike = ike->next) {
			const struct ike_status_sa *q = status_sa(&st, strtoul(vstr(ike, "uniqueid", "0"), NULL, 10));

			printf("%s\n    {\n      \"name\": ", first ? "" : ",");
			first = false;
			json_str(stdout, ike->name);
			if (q)
				printf(",\n      \"quick_modes\": %u,\n      \"maxqm\": %u", q->qm, q->limit);
			printf(",\n      \"vici\": ");
			json_vnode(stdout, ike, 6);
			printf("\n    }");
		}
		printf("%s],\n  \"main_modes\": ", first ? "" : "\n  ");
		{
			const char *mm = NULL;
			unsigned i;

			for (i = 0; i < st.n_counters; i++)
				if (strcmp(st.counters[i][0], "main_modes") == 0)
					mm = st.counters[i][1];
			printf("%s,\n  \"maxqm\": %u\n}\n", mm ? mm : "null", st.maxqm);
		}
		vnode_free(c->sas);
		return 0;
	}
	for (ike = c->sas->child; ike; ike = ike->next) {
		const struct ike_status_sa *q = status_sa(&st, strtoul(vstr(ike, "uniqueid", "0"), NULL, 10));

		n++;
		printf("%s[%s]: IKEv%s %s %s[%s] ... %s[%s]\n", ike->name, vstr(ike, "uniqueid", "?"),
		       vstr(ike, "version", "?"), vstr(ike, "state", "?"), vstr(ike, "local-host", "?"),
		       vstr(ike, "local-id", "?"), vstr(ike, "remote-host", "?"), vstr(ike, "remote-id", "?"));
		printf("  %s-%s/%s/%s/%s, established %ss ago", vstr(ike, "encr-alg", "?"),
		       vstr(ike, "encr-keysize", "?"), vstr(ike, "integ-alg", "AEAD"), vstr(ike, "prf-alg", "?"),
		       vstr(ike, "dh-group", "?"), vstr(ike, "established", "?"));
		if (q)
			printf(", quick modes %u of maxqm %u%s", q->qm, q->limit, q->renewing ? " (renewing)" : "");
		printf("\n");
		children = vfind(ike, "child-sas");
		for (ch = children ? children->child : NULL; ch; ch = ch->next)
			print_child_text(ch);
	}
	if (!n)
		printf("no IKE SAs\n");
	vnode_free(c->sas);
	return 0;
}

/* The override file the daemon merges over strongswan.conf: "maxqm N" and "conn NAME N" lines. */
static int override_update(const char *run_dir, const char *conn, long value)
{
	char path[4096 + 16], tmp[4096 + 32], line[256], name[128];
	char keep[256][256];
	unsigned nkeep = 0, i;
	long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/maxqm", run_dir);
	snprintf(tmp, sizeof(tmp), "%s/maxqm.tmp", run_dir);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f) && nkeep < 256) {
			if (conn && sscanf(line, "conn %127s %ld", name, &v) == 2 && strcmp(name, conn) == 0)
				continue;
			if (!conn && sscanf(line, "maxqm %ld", &v) == 1)
				continue;
			snprintf(keep[nkeep++], sizeof(keep[0]), "%s", line);
		}
		fclose(f);
	}
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (i = 0; i < nkeep; i++)
		fputs(keep[i], f);
	if (value >= 0) {
		if (conn)
			fprintf(f, "conn %s %ld\n", conn, value);
		else
			fprintf(f, "maxqm %ld\n", value);
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return 0;
}

static int cmd_maxqm(struct ike_ctx *c, int argc, char **argv)
{
	struct ike_status st;
	const char *conn = NULL, *val = NULL;
	bool set, unset;
	long value = -1;
	unsigned i;
	int rc;

	if (argc < 1 || (strcmp(argv[0], "show") && strcmp(argv[0], "set") && strcmp(argv[0], "unset"))) {
		ctl_err("ike: maxqm wants show, set N or unset");
		return 2;
	}
	set = strcmp(argv[0], "set") == 0;
	unset = strcmp(argv[0], "unset") == 0;
	for (i = 1; i < (unsigned)argc; i++) {
		if (strcmp(argv[i], "--conn") == 0 && i + 1 < (unsigned)argc)
			conn = argv[++i];
		else if (set && !val)
			val = argv[i];
		else {
			ctl_err("ike: maxqm %s: unexpected argument '%s'", argv[0], argv[i]);
			return 2;
		}
	}
	if (conn && (!*conn || strchr(conn, '.') || strchr(conn, ' '))) {
		ctl_err("ike: maxqm: bad connection name '%s'", conn);
		return 2;
	}
	if (set) {
		char *end;

		if (!val) {
			ctl_err("ike: maxqm set wants a number (0 = no limit)");
			return 2;
		}
		errno = 0;
		value = strtol(val, &end, 10);
		if (errno || *end || value < 0 || value > 1000000) {
			ctl_err("ike: maxqm set: '%s' is not a number from 0 to 1000000", val);
			return 2;
		}
	}
	if (set || unset) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		char mark[64];
		int tries;

		if ((rc = status_read(c->run_dir, &st)) < 0 || st.pid <= 0) {
			ctl_err("ike: xipsec-iked is not running with run directory %s", c->run_dir);
			return 1;
		}
		if ((rc = override_update(c->run_dir, conn, value)) < 0) {
			ctl_err("ike: cannot write %s/maxqm: %s", c->run_dir, strerror(-rc));
			return 1;
		}
		/* the daemon re-reads the override file on SIGHUP and then rewrites its status */
		snprintf(mark, sizeof(mark), "%ld", value);
		if (kill((pid_t)st.pid, SIGHUP) < 0) {
			ctl_err("ike: cannot signal xipsec-iked (pid %ld): %s", st.pid, strerror(errno));
			return 1;
		}
		for (tries = 0; tries < 60; tries++) {
			nanosleep(&ts, NULL);
			if (conn || unset)
				break;   /* per-connection limits show on the next IKE SA event */
			if (status_read(c->run_dir, &st) == 0 && (long)st.maxqm == value)
				break;
		}
		if (!conn && !unset && (long)st.maxqm != value) {
			ctl_err("ike: xipsec-iked did not take maxqm %ld (status still says %u)", value, st.maxqm);
			return 1;
		}
		if (!c->json)
			return 0;
	}
	if ((rc = status_read(c->run_dir, &st)) < 0) {
		ctl_err("ike: cannot read %s/status: %s (is xipsec-iked running?)", c->run_dir, strerror(-rc));
		return 1;
	}
	if (c->json) {
		printf("{\n  \"schema\": %d,\n  \"maxqm\": %u,\n  \"ike_sas\": [", CTL_JSON_SCHEMA,
		       st.maxqm);
		for (i = 0; i < st.n_sa; i++) {
			printf("%s\n    {\"id\": %u, \"conn\": ", i ? "," : "", st.sa[i].id);
			json_str(stdout, st.sa[i].conn);
			printf(", \"version\": %d, \"role\": \"%s\", \"quick_modes\": %u, \"maxqm\": %u, "
			       "\"renewing\": %s}", st.sa[i].version, st.sa[i].role, st.sa[i].qm, st.sa[i].limit,
			       st.sa[i].renewing ? "true" : "false");
		}
		printf("%s]\n}\n", st.n_sa ? "\n  " : "");
		return 0;
	}
	printf("maxqm %u%s\n", st.maxqm, st.maxqm ? "" : " (no limit)");
	for (i = 0; i < st.n_sa; i++)
		printf("  %s[%u] IKEv%d %s: %u quick modes, limit %u%s\n", st.sa[i].conn, st.sa[i].id,
		       st.sa[i].version, st.sa[i].role, st.sa[i].qm, st.sa[i].limit,
		       st.sa[i].renewing ? " (renewing)" : "");
	return 0;
}

static int result(vici_res_t *res, const char *what)
{
	int rc = 0;

	if (!res) {
		ctl_err("ike: %s failed: %s", what, strerror(errno));
		return 1;
	}
	if (strcmp(vici->find_str(res, "no", "success"), "yes") != 0) {
		ctl_err("ike: %s failed: %s", what, vici->find_str(res, "unknown error", "errmsg"));
		rc = 1;
	}
	vici->free_res(res);
	return rc;
}

/* What initiate and terminate did, as one JSON document. */
static void done_json(const char *what, const char *child, const char *ike)
{
	printf("{\n  \"schema\": %d,\n  \"%s\": true,\n  \"child\": ", CTL_JSON_SCHEMA, what);
	if (child)
		json_str(stdout, child);
	else
		fputs("null", stdout);
	fputs(",\n  \"ike\": ", stdout);
	if (ike)
		json_str(stdout, ike);
	else
		fputs("null", stdout);
	fputs("\n}\n", stdout);
}

static int cmd_initiate(struct ike_ctx *c, int argc, char **argv)
{
	const char *child = NULL, *ike = NULL, *timeout = "10000";
	vici_req_t *req;
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--child") == 0 && i + 1 < argc)
			child = argv[++i];
		else if (strcmp(argv[i], "--ike") == 0 && i + 1 < argc)
			ike = argv[++i];
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			timeout = argv[++i];
		else {
			ctl_err("ike: initiate: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!child && !ike) {
		ctl_err("ike: initiate wants --child NAME (and optionally --ike NAME)");
		return 2;
	}
	if (strspn(timeout, "0123456789") != strlen(timeout) || !*timeout) {
		ctl_err("ike: initiate: --timeout wants milliseconds, not '%s'", timeout);
		return 2;
	}
	req = vici->begin("initiate");
	if (child)
		vici->add_key_valuef(req, "child", "%s", child);
	if (ike)
		vici->add_key_valuef(req, "ike", "%s", ike);
	vici->add_key_valuef(req, "timeout", "%s", timeout);
	vici->add_key_valuef(req, "init-limits", "no");
	if (result(vici->submit(req, c->conn), "initiate"))
		return 1;
	if (c->json)
		done_json("initiated", child, ike);
	else
		printf("initiated %s%s%s\n", child ? child : "", child && ike ? " of " : "", ike ? ike : "");
	return 0;
}

static int cmd_terminate(struct ike_ctx *c, int argc, char **argv)
{
	vici_req_t *req = vici->begin("terminate");
	const char *child = NULL, *ike = NULL;
	bool which = false;
	int i;

	for (i = 0; i < argc; i++) {
		const char *k = NULL;

		if (strcmp(argv[i], "--ike") == 0) k = "ike";
		else if (strcmp(argv[i], "--child") == 0) k = "child";
		else if (strcmp(argv[i], "--ike-id") == 0) k = "ike-id";
		else if (strcmp(argv[i], "--child-id") == 0) k = "child-id";
		else if (strcmp(argv[i], "--force") == 0) {
			vici->add_key_valuef(req, "force", "yes");
			continue;
		}
		if (!k || i + 1 >= argc) {
			ctl_err("ike: terminate: unexpected argument '%s'", argv[i]);
			vici->free_req(req);
			return 2;
		}
		if (!strcmp(k, "child") || !strcmp(k, "child-id"))
			child = argv[i + 1];
		else
			ike = argv[i + 1];
		vici->add_key_valuef(req, (char *)k, "%s", argv[++i]);
		which = true;
	}
	if (!which) {
		ctl_err("ike: terminate wants --ike NAME, --child NAME, --ike-id N or --child-id N");
		vici->free_req(req);
		return 2;
	}
	vici->add_key_valuef(req, "timeout", "10000");
	if (result(vici->submit(req, c->conn), "terminate"))
		return 1;
	if (c->json)
		done_json("terminated", child, ike);
	return 0;
}

static int cmd_stats(struct ike_ctx *c)
{
	struct ike_status st;
	unsigned i;
	int rc = status_read(c->run_dir, &st);

	if (rc < 0) {
		ctl_err("ike: cannot read %s/status: %s (is xipsec-iked running?)", c->run_dir, strerror(-rc));
		return 1;
	}
	if (c->json) {
		printf("{\n  \"schema\": %d,\n  \"pid\": %ld,\n  \"maxqm\": %u", CTL_JSON_SCHEMA, st.pid,
		       st.maxqm);
		for (i = 0; i < st.n_counters; i++)
			printf(",\n  \"%s\": %s", st.counters[i][0], st.counters[i][1]);
		printf("\n}\n");
		return 0;
	}
	printf("xipsec-iked pid %ld, maxqm %u\n", st.pid, st.maxqm);
	for (i = 0; i < st.n_counters; i++)
		printf("  %-22s %s\n", st.counters[i][0], st.counters[i][1]);
	return 0;
}

int ipsecctl_ike_main(int argc, char **argv)
{
	struct ike_ctx c = { 0 };
	const char *uri = NULL;
	int i, rc;

	c.run_dir = getenv(IKE_ENV_RUN_DIR);
	if (!c.run_dir || !*c.run_dir)
		c.run_dir = IKE_DEFAULT_RUN_DIR;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--run-dir") == 0 && i + 1 < argc)
			c.run_dir = argv[++i];
		else if (strcmp(argv[i], "--vici") == 0 && i + 1 < argc)
			uri = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			c.json = true;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else
			break;
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	/* --json may also follow the command */
	for (int j = i + 1; j < argc; j++)
		if (strcmp(argv[j], "--json") == 0) {
			c.json = true;
			memmove(&argv[j], &argv[j + 1], (argc - j - 1) * sizeof(argv[0]));
			argc--;
			j--;
		}
	if (uri)
		snprintf(c.uri, sizeof(c.uri), "%s", uri);
	else
		snprintf(c.uri, sizeof(c.uri), "unix://%s/charon.vici", c.run_dir);

	if (strcmp(argv[i], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[i], "maxqm") == 0)
		return cmd_maxqm(&c, argc - i - 1, argv + i + 1);
	if (strcmp(argv[i], "stats") == 0)
		return cmd_stats(&c);
	if (strcmp(argv[i], "list") && strcmp(argv[i], "initiate") && strcmp(argv[i], "terminate")) {
		ctl_err("ike: unknown command '%s'", argv[i]);
		usage(stderr);
		return 2;
	}
	if (!(vici = vici_dl())) {
		ctl_err("ike: " VICI_DL_MISSING);
		ctl_err("ike: %s", vici_dl_error());
		return 1;
	}
	vici->init();
	if (connect_vici(&c) < 0) {
		vici->deinit();
		return 1;
	}
	if (strcmp(argv[i], "list") == 0)
		rc = i + 1 == argc ? cmd_list(&c) : (ctl_err("ike: list takes no arguments"), 2);
	else if (strcmp(argv[i], "initiate") == 0)
		rc = cmd_initiate(&c, argc - i - 1, argv + i + 1);
	else
		rc = cmd_terminate(&c, argc - i - 1, argv + i + 1);
	vici->disconnect(c.conn);
	vici->deinit();
	return rc;
}
#endif /* XIPSEC_HAVE_VICI */
