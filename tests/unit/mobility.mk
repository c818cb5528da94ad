# tests/unit/mobility.mk: unit tests of libmip6 (mobility/): wire formats, the home agent's rules,
# the binding cache.
UNIT_TESTS += tests/unit/test_mip6
check_PROGRAMS += tests/unit/test_mip6
tests_unit_test_mip6_SOURCES = tests/unit/test_mip6.c
tests_unit_test_mip6_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mip6_LDADD = $(MIP6_LIBS) $(CMOCKA_LIBS)
UNIT_TESTS += tests/unit/test_mip6_err
check_PROGRAMS += tests/unit/test_mip6_err
tests_unit_test_mip6_err_SOURCES = tests/unit/test_mip6_err.c
tests_unit_test_mip6_err_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mip6_err_LDADD = $(MIP6_LIBS) $(CMOCKA_LIBS)
UNIT_TESTS += tests/unit/test_mip6_disc
check_PROGRAMS += tests/unit/test_mip6_disc
tests_unit_test_mip6_disc_SOURCES = tests/unit/test_mip6_disc.c
tests_unit_test_mip6_disc_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mip6_disc_LDADD = $(MIP6_LIBS) $(CMOCKA_LIBS)
UNIT_TESTS += tests/unit/test_mip6_v4
check_PROGRAMS += tests/unit/test_mip6_v4
tests_unit_test_mip6_v4_SOURCES = tests/unit/test_mip6_v4.c
tests_unit_test_mip6_v4_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mip6_v4_LDADD = $(MIP6_LIBS) $(CMOCKA_LIBS)
