# tests/unit/sadb.mk: libsadb's cmocka unit tests; appended to the top Makefile.am lists.
SADB_TESTS = tests/unit/test_sadb tests/unit/test_sadb_spd tests/unit/test_sadb_concurrency \
	tests/unit/test_sadb_crash tests/unit/test_sadb_internal tests/unit/test_sadb_file \
	tests/unit/test_sadb_stats
UNIT_TESTS += $(SADB_TESTS)
check_PROGRAMS += $(SADB_TESTS)
EXTRA_DIST += tests/unit/sadb_testlib.h

tests_unit_test_sadb_SOURCES = tests/unit/test_sadb.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_spd_SOURCES = tests/unit/test_sadb_spd.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_spd_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_spd_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_concurrency_SOURCES = tests/unit/test_sadb_concurrency.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_concurrency_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_concurrency_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_crash_SOURCES = tests/unit/test_sadb_crash.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_crash_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_crash_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_internal_SOURCES = tests/unit/test_sadb_internal.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_internal_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_internal_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_file_SOURCES = tests/unit/test_sadb_file.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_file_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_file_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)

tests_unit_test_sadb_stats_SOURCES = tests/unit/test_sadb_stats.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_stats_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_stats_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)
