/* ipsecctl/ipsecctl_bindings.c: `ipsecctl show bindings`: the Mobile IPv6 home agent's binding cache and
 * counters, asked of the running xipsecd over its control socket (bindings are the dataplane's
 * state, not the SADB's) and shown as text or JSON. The answer is xipsecd's tab-separated lines
 * (dataplane/xipsecd/dp_mip6.c); a line this version does not know is skipped, a malformed one is
 * an error naming it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipsecctl/ipsecctl.h"

#define MAX_FIELDS 12

/* Split line at tabs into f[]; returns the number of fields. */
static int fields(char *line, char **f)
{
	int n = 0;

	for (char *p = line; n < MAX_FIELDS;) {
		f[n++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = 0;
	}
	return n;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 10);
}

static void traffic_json(struct ctl_json *j, const char *key, char **f)
{
	ctl_json_obj(j, key);
	ctl_json_u64(j, "packets", num(f[0]));
	ctl_json_u64(j, "bytes", num(f[1]));
	ctl_json_end_obj(j);
}

/* A node line (HOA ACCEPTED REFUSED MOVES AGE|- STATUS:COUNT,...|-) as one object. */
static void node_json(struct ctl_json *j, char *line, bool no_times)
{
	char *f[MAX_FIELDS];

	fields(line, f);
	ctl_json_obj(j, NULL);
	ctl_json_str(j, "home_address", f[1]);
	ctl_json_u64(j, "bu_accepted", num(f[2]));
	ctl_json_u64(j, "bu_refused", num(f[3]));
	ctl_json_u64(j, "moves", num(f[4]));
	if (!strcmp(f[5], "-"))
		ctl_json_null(j, "last_bu_age");
	else
		ctl_json_u64(j, "last_bu_age", no_times ? 0 : num(f[5]));
	ctl_json_obj(j, "ba_status");
	if (strcmp(f[6], "-"))
		for (char *s = NULL, *p = strtok_r(f[6], ",", &s); p; p = strtok_r(NULL, ",", &s)) {
			char *c = strchr(p, ':');
			if (c) {
				*c++ = 0;
				ctl_json_u64(j, p, num(c));
			}
		}
	ctl_json_end_obj(j);
	ctl_json_end_obj(j);
}

/* One section's lines, in xipsecd's order. */
struct sect {
	char **v;
	size_t n;
};

static int keep(struct sect *s, char *line)
{
	char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	s->v = nv;
	s->v[s->n++] = line;
	return 0;
}

enum { S_HA, S_BIND, S_NODE, S_COUNTER, S_REJECTED, S_REFUSED, S_DROPPED, S_N };

/* One "home-agent" line of xipsecd's answer (one per home agent address) as a JSON object; line
 * stays as it is (the first is written twice). */
static void ha_json(struct ctl_json *j, const char *key, const char *line)
{
	char *f[MAX_FIELDS], copy[512];

	snprintf(copy, sizeof(copy), "%s", line);
	fields(copy, f);
	ctl_json_obj(j, key);
	ctl_json_str(j, "address", f[1]);
	ctl_json_str(j, "link", f[2]);
	ctl_json_u64(j, "max_lifetime", num(f[3]));
	ctl_json_u64(j, "mobile_nodes", num(f[4]));
	ctl_json_arr(j, "prefixes");
	for (char *s2 = NULL, *p = strtok_r(f[5], ",", &s2); p; p = strtok_r(NULL, ",", &s2))
		ctl_json_str(j, NULL, p);
	ctl_json_end_arr(j);
	ctl_json_end_obj(j);
}

int ctl_show_bindings(const struct ctl_opts *o)
{
	static const struct { const char *name, *json; int nf; } sec[S_N] = {
		{ "home-agent", "home_agent", 6 }, { "binding", "bindings", 11 }, { "node", "mobile_nodes", 7 },
		{ "counter", "counters", 3 }, { "rejected", "rejected", 3 }, { "refused", "refused", 3 },
		{ "dropped", "dropped", 3 },
	};
	const char *path = o->ctl_path ? o->ctl_path : CTL_DEFAULT_XIPSECD;
	char *ans, *line, *save = NULL, *f[MAX_FIELDS];
	struct sect v[S_N] = { { 0 } };
	struct ctl_json j;
	int rc = ctl_xipsecd_ask(path, "bindings\n", &ans), lineno = 0;
	size_t alen;

	if (rc != CTL_EXIT_OK)
		return rc;
	alen = strlen(ans);
	if (alen < 4 || strcmp(ans + alen - 4, "end\n")) {
		ctl_err("%s: incomplete answer from xipsecd%s", path,
			!strncmp(ans, "error:", 6) ? " (an xipsecd without a home agent?)" : "");
		free(ans);
		return CTL_EXIT_ERR;
	}
	for (line = strtok_r(ans, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len = strcspn(line, "\t");

		lineno++;
		if (!strcmp(line, "end"))
			break;
		for (int k = 0; k < S_N; k++) {
			if (strlen(sec[k].name) != len || strncmp(line, sec[k].name, len))
				continue;
			char copy[512];
			snprintf(copy, sizeof(copy), "%s", line);
			if (fields(copy, f) != sec[k].nf) {
				ctl_err("%s: malformed line %d of xipsecd's answer: '%.60s'", path, lineno, line);
				rc = CTL_EXIT_ERR;
				goto out;
			}
			if (keep(&v[k], line)) {
				ctl_err("out of memory");
				rc = CTL_EXIT_ERR;
				goto out;
			}
		}
	}
	if (o->json) {
		ctl_json_init(&j, stdout);
		ctl_json_obj(&j, NULL);
		/* "home_agent" the first address, as schema 1 has always had it; "home_agents" all */
		if (!v[S_HA].n)
			ctl_json_null(&j, "home_agent");
		else
			ha_json(&j, "home_agent", v[S_HA].v[0]);
		ctl_json_arr(&j, "home_agents");
		for (size_t i = 0; i < v[S_HA].n; i++)
			ha_json(&j, NULL, v[S_HA].v[i]);
		ctl_json_end_arr(&j);
		ctl_json_arr(&j, "bindings");
		for (size_t i = 0; i < v[S_BIND].n; i++) {
			fields(v[S_BIND].v[i], f);
			ctl_json_obj(&j, NULL);
			ctl_json_str(&j, "home_address", f[1]);
			ctl_json_str(&j, "care_of_address", f[2]);
			ctl_json_u64(&j, "sequence", num(f[3]));
			ctl_json_u64(&j, "lifetime", num(f[4]));
			ctl_json_u64(&j, "lifetime_left", o->no_times ? 0 : num(f[5]));
			ctl_json_u64(&j, "age", o->no_times ? 0 : num(f[6]));
			traffic_json(&j, "to_mobile_node", f + 7);
			traffic_json(&j, "from_mobile_node", f + 9);
			ctl_json_end_obj(&j);
		}
		ctl_json_end_arr(&j);
		ctl_json_arr(&j, "mobile_nodes");
		for (size_t i = 0; i < v[S_NODE].n; i++)
			node_json(&j, v[S_NODE].v[i], o->no_times);
		ctl_json_end_arr(&j);
		for (int k = S_COUNTER; k < S_N; k++) {
			ctl_json_obj(&j, sec[k].json);
			for (size_t i = 0; i < v[k].n; i++) {
				fields(v[k].v[i], f);
				ctl_json_u64(&j, f[1], num(f[2]));
			}
			ctl_json_end_obj(&j);
		}
		ctl_json_end_obj(&j);
		ctl_json_done(&j);
	} else {
		if (!v[S_HA].n)
			printf("# no home agent configured in xipsecd (%s)\n", path);
		for (size_t i = 0; i < v[S_HA].n; i++) {
			fields(v[S_HA].v[i], f);
			printf("# home agent %s on %s: %s mobile node(s), bindings up to %s s, home prefixes %s\n",
			       f[1], f[2], f[4], f[3], f[5]);
		}
		for (size_t i = 0; i < v[S_BIND].n; i++) {
			fields(v[S_BIND].v[i], f);
			printf("binding %s care-of %s sequence %s lifetime %s", f[1], f[2], f[3], f[4]);
			if (!o->no_times)
				printf(" (%s s left, registered %s s ago)", f[5], f[6]);
			printf("\n\tto the mobile node %s packets %s bytes, from it %s packets %s bytes\n",
			       f[7], f[8], f[9], f[10]);
		}
		for (size_t i = 0; i < v[S_NODE].n; i++) {
			fields(v[S_NODE].v[i], f);
			printf("mobile node %s: %s Binding Updates accepted, %s refused, %s moves", f[1], f[2],
			       f[3], f[4]);
			if (!o->no_times)
				printf(", the last %s%s", f[5], strcmp(f[5], "-") ? " s ago" : "");
			printf("\n\tBAs by status %s\n", f[6]);
		}
		for (int k = S_COUNTER; k < S_N; k++)
			for (size_t i = 0; i < v[k].n; i++) {
				static const char *const what[S_N] = { [S_COUNTER] = "counter",
					[S_REJECTED] = "rejected with status", [S_REFUSED] = "refused:",
					[S_DROPPED] = "dropped:" };
				fields(v[k].v[i], f);
				printf("# %s %s %s\n", what[k], f[1], f[2]);
			}
	}
out:
	for (int k = 0; k < S_N; k++)
		free(v[k].v);
	free(ans);
	return rc;
}
