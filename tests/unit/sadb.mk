# tests/unit/sadb.mk: libsadb's cmocka unit tests (owned by sadb/); appended to the top Makefile.am lists.
SADB_TESTS = tests/unit/test_sadb
UNIT_TESTS += $(SADB_TESTS)
check_PROGRAMS += $(SADB_TESTS)
EXTRA_DIST += tests/unit/sadb_testlib.h

tests_unit_test_sadb_SOURCES = tests/unit/test_sadb.c tests/unit/sadb_testlib.h
tests_unit_test_sadb_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sadb_LDADD = sadb/libsadb.a $(CMOCKA_LIBS)
