/* ipsecctl/ipsecctl_cluster.c: `ipsecctl cluster segments [LIST]`: the active/active segments the running
 * xipsecd owns (which peers' ESP, IKE and outbound traffic this node handles), shown with the frames
 * its XDP program kept and dropped per segment, or set: xipsec-iked sets them as strongSwan's ha
 * plugin moves segments, and an administrator or a test can too. xipsecd answers in JSON
 * (dataplane/xipsecd/dp_segment.c), which --json prints as it is. Reached from `cluster`
 * (ipsecctl_dpctl.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl.h"

/* The text form of xipsecd's answer; CTL_EXIT_ERR when it is not the answer this version knows. */
static int print_text(const char *path, const char *ans)
{
	unsigned count, seg;
	char addr[64], jhash[16], owned[64] = "", flag[8];
	unsigned long long out_foreign, kept, foreign;
	const char *p;

	if (sscanf(ans, "{\"count\":%u,\"address\":\"%63[^\"]\",\"jhash\":\"%15[^\"]\",\"owned\":[%63[0-9,]],"
		   "\"cluster_foreign\":%llu", &count, addr, jhash, owned, &out_foreign) != 5 &&
	    sscanf(ans, "{\"count\":%u,\"address\":\"%63[^\"]\",\"jhash\":\"%15[^\"]\",\"owned\":[],"
		   "\"cluster_foreign\":%llu", &count, addr, jhash, &out_foreign) != 4) {
		if (!strncmp(ans, "{\"count\":0,", 11)) {
			printf("# no active/active cluster in xipsecd (%s)\n", path);
			return CTL_EXIT_OK;
		}
		ctl_err("%s: unexpected answer from xipsecd: '%.60s'", path, ans);
		return CTL_EXIT_ERR;
	}
	printf("# active/active: %u segments on %s (jhash %s), owned: %s\n", count, addr, jhash,
	       *owned ? owned : "none");
	for (p = strstr(ans, "{\"segment\":"); p; p = strstr(p + 1, "{\"segment\":")) {
		if (sscanf(p, "{\"segment\":%u,\"owned\":%7[a-z],\"kept\":%llu,\"foreign\":%llu}", &seg, flag,
			   &kept, &foreign) != 4) {
			ctl_err("%s: unexpected segment in xipsecd's answer: '%.60s'", path, p);
			return CTL_EXIT_ERR;
		}
		printf("segment %u %s\tkept %llu\tdropped %llu\n", seg,
		       strcmp(flag, "true") ? "foreign" : "owned", kept, foreign);
	}
	printf("# outbound packets left to the other node: %llu\n", out_foreign);
	return CTL_EXIT_OK;
}

int ctl_cluster_segments(const struct ctl_opts *o, int argc, char **argv)
{
	const char *path = o->ctl_path ? o->ctl_path : CTL_DEFAULT_XIPSECD;
	char req[96], *ans;
	int rc;

	if (argc > 1) {
		ctl_err("cluster segments: expected 'cluster segments [LIST|none|all]'");
		return CTL_EXIT_USAGE;
	}
	if (argc == 1) {
		if (strlen(argv[0]) > 63 || strpbrk(argv[0], " \t\n")) {
			ctl_err("cluster segments: '%s' is not a list of segments (e.g. 1,3)", argv[0]);
			return CTL_EXIT_USAGE;
		}
		snprintf(req, sizeof(req), "segments set %s\n", argv[0]);
	} else {
		snprintf(req, sizeof(req), "segments\n");
	}
	rc = ctl_xipsecd_ask(path, req, &ans);
	if (rc != CTL_EXIT_OK)
		return rc;
	if (!strncmp(ans, "error:", 6)) {
		ans[strcspn(ans, "\n")] = 0;
		ctl_err("xipsecd: %s", ans + 7);
		rc = strstr(ans, "not a list") ? CTL_EXIT_USAGE : CTL_EXIT_ERR;
	} else if (o->json) {
		fputs(ans, stdout);
	} else {
		rc = print_text(path, ans);
	}
	free(ans);
	return rc;
}
