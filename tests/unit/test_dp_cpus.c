/* tests/unit/test_dp_cpus.c: the CPU lists xipsecd pins its workers to (dataplane/xipsecd/dp_cpus.h):
 * lists and ranges in the order given, the default (the allowed set in order), and every malformed
 * or disallowed list refused with a message naming the problem. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dataplane/xipsecd/dp_cpus.h"

static uint16_t list[DP_CPUS_MAX];
static char err[512];

static void allow(cpu_set_t *s, const int *cpus, unsigned n)
{
	CPU_ZERO(s);
	for (unsigned i = 0; i < n; i++)
		CPU_SET(cpus[i], s);
}

static void test_lists(void **state)
{
	(void)state;
	cpu_set_t a;
	allow(&a, (const int[]){ 0, 1, 2, 3, 4, 5, 8, 10, 11, 1023 }, 10);

	assert_int_equal(dp_cpus_parse("3", &a, list, err, sizeof(err)), 1);
	assert_int_equal(list[0], 3);
	/* ranges expand, and the order given is the order workers take them */
	assert_int_equal(dp_cpus_parse("8,2-4,0", &a, list, err, sizeof(err)), 5);
	assert_int_equal(list[0], 8);
	assert_int_equal(list[1], 2);
	assert_int_equal(list[2], 3);
	assert_int_equal(list[3], 4);
	assert_int_equal(list[4], 0);
	assert_int_equal(dp_cpus_parse("1023", &a, list, err, sizeof(err)), 1);
	assert_int_equal(list[0], 1023);
	assert_int_equal(dp_cpus_parse("5-5", &a, list, err, sizeof(err)), 1);
	assert_int_equal(list[0], 5);
}

static void test_default(void **state)
{
	(void)state;
	cpu_set_t a;
	allow(&a, (const int[]){ 6, 1, 3 }, 3);
	assert_int_equal(dp_cpus_default(&a, list), 3);
	assert_int_equal(list[0], 1);
	assert_int_equal(list[1], 3);
	assert_int_equal(list[2], 6);
}

static void test_format(void **state)
{
	(void)state;
	cpu_set_t a;
	char buf[64];
	allow(&a, (const int[]){ 0, 1, 2, 3, 8, 10, 11 }, 7);
	dp_cpus_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,8,10-11");
	CPU_ZERO(&a);
	dp_cpus_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "");
	allow(&a, (const int[]){ 0, 2, 4, 6, 8, 10, 12, 14 }, 8);
	dp_cpus_format(&a, buf, 8); /* truncated at an item, never mid-number */
	assert_string_equal(buf, "0,2,4,6");
}

static void refused(const cpu_set_t *a, const char *arg, const char *want)
{
	err[0] = '\0';
	assert_int_equal(dp_cpus_parse(arg, a, list, err, sizeof(err)), 0);
	if (!strstr(err, want))
		fail_msg("'%s': message '%s' does not say '%s'", arg, err, want);
}

static void test_refused(void **state)
{
	(void)state;
	cpu_set_t a;
	allow(&a, (const int[]){ 0, 1, 2, 3 }, 4);

	refused(&a, "", "empty list");
	refused(&a, "x", "not a CPU number");
	refused(&a, "-1", "not a CPU number");
	refused(&a, "1024", "not a CPU number (0..1023)");
	refused(&a, "99999999999999999999", "not a CPU number");
	refused(&a, "0-", "range without an end CPU");
	refused(&a, "0-x", "range without an end CPU");
	refused(&a, "3-1", "range 3-1 runs backwards");
	refused(&a, "1,1", "names CPU 1 twice");
	refused(&a, "0-2,1", "names CPU 1 twice");
	refused(&a, "0,", "expected ','");
	refused(&a, "0;1", "expected ','");
	refused(&a, "0 1", "expected ','");
	refused(&a, "0,,1", "not a CPU number");
	refused(&a, "4", "CPU 4 is not one this process may run on (allowed: 0-3)");
	refused(&a, "2-5", "CPU 4 is not one this process may run on");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
