# tests/unit/ipsecctl.mk: ipsecctl's unit tests, appended to the lists in the top Makefile.am.
# cmocka tests of ipsecctl's parsers, linked against the same tools/libipsecctl.a as the command.
UNIT_TESTS += tests/unit/test_ipsecctl
check_PROGRAMS += tests/unit/test_ipsecctl
tests_unit_test_ipsecctl_SOURCES = tests/unit/test_ipsecctl.c
tests_unit_test_ipsecctl_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_ipsecctl_LDADD = tools/libipsecctl.a sadb/libsadb.a $(CMOCKA_LIBS) -lm
