# tests/unit/ipsecctl.mk: ipsecctl's unit tests, appended to the lists in the top Makefile.am.
# cmocka tests of ipsecctl's parsers, linked against the same ipsecctl/libipsecctl.a as the command.
UNIT_TESTS += tests/unit/test_ipsecctl
check_PROGRAMS += tests/unit/test_ipsecctl
tests_unit_test_ipsecctl_SOURCES = tests/unit/test_ipsecctl.c
tests_unit_test_ipsecctl_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_ipsecctl_LDADD = ipsecctl/libipsecctl.a sadb/libsadb.a $(CMOCKA_LIBS) -lm

# The metrics collection layer, its Prometheus writer and the exporter's HTTP parser.
UNIT_TESTS += tests/unit/test_metrics
check_PROGRAMS += tests/unit/test_metrics
tests_unit_test_metrics_SOURCES = tests/unit/test_metrics.c tests/unit/sadb_testlib.h
tests_unit_test_metrics_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_metrics_LDADD = metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) $(CMOCKA_LIBS) -lm
