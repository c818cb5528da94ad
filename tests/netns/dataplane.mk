# tests/netns/dataplane.mk: xipsecd's end-to-end tests in network namespaces (owned by the xipsecd
# helper). test_dp_common.sh is sourced by them, not run.
DP_NETNS_TESTS = tests/netns/test_dp_bypass.sh tests/netns/test_dp_esp.sh \
	tests/netns/test_dp_transport.sh tests/netns/test_dp_mq.sh tests/netns/test_dp_fault.sh
NETNS_TESTS += $(DP_NETNS_TESTS)
EXTRA_DIST += tests/netns/test_dp_common.sh $(DP_NETNS_TESTS)
