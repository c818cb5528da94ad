# tests/netns/ike.mk: end-to-end tests of xipsec-iked (two daemons in two namespaces, each with its
# own SADB); helpers in tests/netns/ike_common.sh. test_ha_failover.sh: two xipsec nodes as one
# cluster (the ha plugin, keepalived) against stock charon, test_ha_split.sh: its split brain,
# test_ha_active_charon.sh: active/active against it, all on the bed of tests/netns/ha_common.sh;
# ha_segment.py computes a peer's segment apart from the product (with test_ha_active.sh).
IKE_NETNS_TESTS = tests/netns/test_ike_psk.sh tests/netns/test_ike_auth.sh tests/netns/test_ike_maxqm.sh \
	tests/netns/test_ike_lifetime.sh tests/netns/test_ike_interop.sh tests/netns/test_ike_traffic.sh \
	tests/netns/test_ike_interop_traffic.sh tests/netns/test_ike_mobike.sh \
	tests/netns/test_ike_seqlimit.sh tests/netns/test_ike_rekey_nonce.sh tests/netns/test_ike_replace.sh \
	tests/netns/test_ike_trap.sh tests/netns/test_ha_failover.sh tests/netns/test_ha_split.sh \
	tests/netns/test_ha_active_charon.sh
EXTRA_DIST += tests/netns/ike_common.sh tests/netns/ha_common.sh tests/netns/ha_segment.py $(IKE_NETNS_TESTS)
if HAVE_STRONGSWAN
NETNS_TESTS += $(IKE_NETNS_TESTS)
endif
