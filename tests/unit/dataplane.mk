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

# test_dp_cpus: the CPU lists workers are pinned to (dataplane/xipsecd/dp_cpus.h).
UNIT_TESTS += tests/unit/test_dp_cpus
check_PROGRAMS += tests/unit/test_dp_cpus
tests_unit_test_dp_cpus_SOURCES = tests/unit/test_dp_cpus.c dataplane/xipsecd/dp_cpus.h
tests_unit_test_dp_cpus_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_cpus_LDADD = $(CMOCKA_LIBS)

# test_dp_handoff: inbound crypto handed between workers (dataplane/xipsecd/dp_handoff.c) on an
# in-memory SA shared by two fake workers.
UNIT_TESTS += tests/unit/test_dp_handoff
check_PROGRAMS += tests/unit/test_dp_handoff
tests_unit_test_dp_handoff_SOURCES = tests/unit/test_dp_handoff.c dataplane/xipsecd/dp_handoff.c \
	dataplane/xipsecd/dp_util.c
tests_unit_test_dp_handoff_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS) $(URCU_CFLAGS)
tests_unit_test_dp_handoff_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
tests_unit_test_dp_handoff_LDADD = $(ESP_LIBS) sadb/libsadb.a $(CMOCKA_LIBS) -lpthread

# test_dp_seqmark: on-disk leases of manual SAs' sequence numbers (dataplane/xipsecd/dp_seqmark.c),
# one at a time and in batches, in a temporary directory.
UNIT_TESTS += tests/unit/test_dp_seqmark
check_PROGRAMS += tests/unit/test_dp_seqmark
tests_unit_test_dp_seqmark_SOURCES = tests/unit/test_dp_seqmark.c dataplane/xipsecd/dp_seqmark.c \
	dataplane/xipsecd/dp_util.c
tests_unit_test_dp_seqmark_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS) $(URCU_CFLAGS)
tests_unit_test_dp_seqmark_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
tests_unit_test_dp_seqmark_LDADD = $(ESP_LIBS) sadb/libsadb.a $(CMOCKA_LIBS) -lpthread

# test_dp_cluster: the cluster's replicated sequence leases against a naive record of every number
# used (dataplane/xipsecd/dp_cluster_lease.c) and its sync channel's messages (dp_cluster_msg.c).
UNIT_TESTS += tests/unit/test_dp_cluster
check_PROGRAMS += tests/unit/test_dp_cluster
tests_unit_test_dp_cluster_SOURCES = tests/unit/test_dp_cluster.c dataplane/xipsecd/dp_cluster.h \
	dataplane/xipsecd/dp_cluster_lease.c dataplane/xipsecd/dp_cluster_msg.c
tests_unit_test_dp_cluster_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
tests_unit_test_dp_cluster_LDADD = sadb/libsadb.a $(CMOCKA_LIBS) $(CRYPTO_LIBS) $(SODIUM_LIBS)

# test_dp_l3: the IP rules the stages share (dataplane/xipsecd/dp_l3.c): TTL / hop limit, the
# too-big decision at the MTU's edges, the IPv4 cut into the frames of a fake worker.
UNIT_TESTS += tests/unit/test_dp_l3
check_PROGRAMS += tests/unit/test_dp_l3
tests_unit_test_dp_l3_SOURCES = tests/unit/test_dp_l3.c dataplane/xipsecd/dp_l3.c dataplane/xipsecd/dp_l3.h \
	dataplane/xipsecd/dp_frag.c dataplane/xipsecd/dp_frag.h
tests_unit_test_dp_l3_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS) $(URCU_CFLAGS)
tests_unit_test_dp_l3_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_l3_LDADD = $(CMOCKA_LIBS)

# test_dp_spd: the packet path's SPD decisions (dataplane/xipsecd/dp_spd.c) on a real SADB segment.
UNIT_TESTS += tests/unit/test_dp_spd
check_PROGRAMS += tests/unit/test_dp_spd
tests_unit_test_dp_spd_SOURCES = tests/unit/test_dp_spd.c dataplane/xipsecd/dp_spd.c dataplane/xipsecd/dp_spd.h
tests_unit_test_dp_spd_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dp_spd_LDADD = $(ESP_LIBS) $(MIP6_LIBS) sadb/libsadb.a $(CMOCKA_LIBS) -lpthread
