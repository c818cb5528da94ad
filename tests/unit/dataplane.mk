# tests/unit/dataplane.mk: unit tests of xipsecd's parts.
# test_dp_xdp runs the XDP classifier in the kernel (BPF_PROG_TEST_RUN) on crafted frames.
UNIT_TESTS += tests/unit/test_dp_xdp
check_PROGRAMS += tests/unit/test_dp_xdp
tests_unit_test_dp_xdp_SOURCES = tests/unit/test_dp_xdp.c
tests_unit_test_dp_xdp_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_xdp_LDADD = $(BPF_LIBS) $(CMOCKA_LIBS)
EXTRA_tests_unit_test_dp_xdp_DEPENDENCIES = dataplane/xipsecd/xipsec_xdp.o

# test_dp_frag: the fragmenter and the reassembler (dataplane/xipsecd/dp_frag.c) on plain buffers.
UNIT_TESTS += tests/unit/test_dp_frag
check_PROGRAMS += tests/unit/test_dp_frag
tests_unit_test_dp_frag_SOURCES = tests/unit/test_dp_frag.c dataplane/xipsecd/dp_frag.c dataplane/xipsecd/dp_frag.h
tests_unit_test_dp_frag_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_frag_LDADD = $(CMOCKA_LIBS)

# test_dp_icmp: which packets get an ICMP error (dataplane/xipsecd/dp_icmp.h).
UNIT_TESTS += tests/unit/test_dp_icmp
check_PROGRAMS += tests/unit/test_dp_icmp
tests_unit_test_dp_icmp_SOURCES = tests/unit/test_dp_icmp.c dataplane/xipsecd/dp_icmp.h
tests_unit_test_dp_icmp_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_icmp_LDADD = $(CMOCKA_LIBS)
