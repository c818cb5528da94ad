# tests/netns/dataplane.mk: xipsecd's end-to-end tests in network namespaces (owned by the xipsecd
# helper). test_dp_common.sh is sourced by them, not run.
NETNS_TESTS += tests/netns/test_dp_bypass.sh tests/netns/test_dp_esp.sh
EXTRA_DIST += tests/netns/test_dp_common.sh tests/netns/test_dp_bypass.sh tests/netns/test_dp_esp.sh
