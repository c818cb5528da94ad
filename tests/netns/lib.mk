# tests/netns/lib.mk: the netns harness and its self-test.
NETNS_TESTS += tests/netns/test_lib.sh
EXTRA_DIST += tests/netns/test_lib.sh
NETNS_TESTS += tests/netns/test_ctl_live.sh
EXTRA_DIST += tests/netns/test_ctl_live.sh
# the default SADB (/run/xipsec) in a private mount namespace
NETNS_TESTS += tests/netns/test_sadb_default.sh
EXTRA_DIST += tests/netns/test_sadb_default.sh
