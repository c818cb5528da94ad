# tests/unit/ike.mk: cmocka unit tests of xipsec-iked's SADB translation (ike/kernel_sadb*.c) and of
# its status file (ike/maxqm.c), linked against libcharon like the daemon.
if HAVE_STRONGSWAN
UNIT_TESTS += tests/unit/test_ike_kernel_sadb
check_PROGRAMS += tests/unit/test_ike_kernel_sadb
tests_unit_test_ike_kernel_sadb_SOURCES = tests/unit/test_ike_kernel_sadb.c \
	$(IKE_KERNEL_SADB_SOURCES)
tests_unit_test_ike_kernel_sadb_CPPFLAGS = $(AM_CPPFLAGS) $(IKE_SWAN_CPPFLAGS)
tests_unit_test_ike_kernel_sadb_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_ike_kernel_sadb_LDFLAGS = $(AM_LDFLAGS) $(IKE_SWAN_LINKFLAGS)
tests_unit_test_ike_kernel_sadb_LDADD = $(SADB_LIBS) $(IKE_SWAN_LIBS) $(CMOCKA_LIBS)
UNIT_TESTS += tests/unit/test_ike_maxqm
check_PROGRAMS += tests/unit/test_ike_maxqm
tests_unit_test_ike_maxqm_SOURCES = tests/unit/test_ike_maxqm.c ike/maxqm.c ike/maxqm.h \
	$(IKE_KERNEL_SADB_SOURCES)
tests_unit_test_ike_maxqm_CPPFLAGS = $(AM_CPPFLAGS) $(IKE_SWAN_CPPFLAGS)
tests_unit_test_ike_maxqm_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -pthread
tests_unit_test_ike_maxqm_LDFLAGS = $(AM_LDFLAGS) $(IKE_SWAN_LINKFLAGS) -pthread
tests_unit_test_ike_maxqm_LDADD = $(SADB_LIBS) $(IKE_SWAN_LIBS) $(CMOCKA_LIBS)
endif
EXTRA_DIST += tests/unit/test_ike_kernel_sadb.c tests/unit/test_ike_maxqm.c
