/* tests/ipsecctl/fuzz_conf.c: libFuzzer target for ipsecctl's configuration language. Any input
 * must parse without a crash, leak or undefined behaviour; an input that parses and validates must
 * print (-n) to text that parses and validates again and prints identically (the round trip the
 * golden tests check on fixed files). Run by fuzz-conf.sh, seeded with the golden inputs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipsecctl/ipsecctl.h"

static char *print(const struct ctl_conf *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		abort();
	ctl_conf_print(c, f);
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static FILE *null;
	struct ctl_conf c1, c2;
	char *p1, *p2;
	size_t l1, l2;

	if (!null && !(null = fopen("/dev/null", "w")))
		abort();
	ctl_conf_init(&c1, "fuzz", null);
	if (ctl_conf_parse(&c1, (const char *)data, size) || ctl_conf_validate(&c1, NULL)) {
		ctl_conf_free(&c1);
		return 0;
	}
	p1 = print(&c1, &l1);
	ctl_conf_init(&c2, "printed", stderr);
	if (ctl_conf_parse(&c2, p1, l1) || ctl_conf_validate(&c2, NULL)) {
		fprintf(stderr, "fuzz_conf: the -n output does not parse back:\n%s\n", p1);
		abort();
	}
	p2 = print(&c2, &l2);
	if (l1 != l2 || memcmp(p1, p2, l1)) {
		fprintf(stderr, "fuzz_conf: printing is not stable:\n%s\n---\n%s\n", p1, p2);
		abort();
	}
	free(p1);
	free(p2);
	ctl_conf_free(&c1);
	ctl_conf_free(&c2);
	return 0;
}
