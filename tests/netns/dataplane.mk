# tests/netns/dataplane.mk: xipsecd's end-to-end tests in network namespaces.
# test_dp_common.sh is sourced by them (and mip6_common.sh, the home agent's test bed, by
# test_mip6_ha.sh, test_mip6_flood.sh, test_mip6_err.sh, test_mip6_dad.sh, test_mip6_refresh.sh, test_mip6_mpd.sh,
# test_mip6_ha2.sh, test_mip6_nemo.sh, test_mip6_v4.sh and test_dp_replay_reboot.sh; mip6_ike_common.sh, the IKE-keyed nodes' bed, by
# test_mip6_ike.sh and test_mip6_cp.sh), test_dp_scapy_peer.py is test_dp_scapy.sh's peer gateway, test_dp_frag_send.py the sender of fragmented ESP of
# test_dp_frag*.sh and test_dp_frag_recv.py their receiver, test_mip6_mn.py the mobile node of the
# home agent's tests, test_mip6_flooder.py test_mip6_flood.sh's flood, test_mip6_dhaad_req.py
# test_mip6_dhaad.sh's home agent discovery requester; none is a test itself.
DP_NETNS_TESTS = tests/netns/test_dp_bypass.sh tests/netns/test_dp_esp.sh \
	tests/netns/test_dp_transport.sh tests/netns/test_dp_mq.sh tests/netns/test_dp_fault.sh \
	tests/netns/test_dp_scapy.sh tests/netns/test_dp_stats.sh tests/netns/test_dp_frag.sh \
	tests/netns/test_dp_frag_mq.sh tests/netns/test_dp_seqmark.sh tests/netns/test_ha_sync.sh \
	tests/netns/test_dp_readd.sh tests/netns/test_dp_hub.sh \
	tests/netns/test_dp_icmp.sh tests/netns/test_dp_icmp_decap.sh tests/netns/test_dp_lifetime.sh \
	tests/netns/test_mip6_ha.sh tests/netns/test_dp_replay_reboot.sh \
	tests/netns/test_mip6_flood.sh tests/netns/test_mip6_err.sh tests/netns/test_mip6_dad.sh \
	tests/netns/test_mip6_refresh.sh tests/netns/test_mip6_dhaad.sh tests/netns/test_mip6_mpd.sh \
	tests/netns/test_mip6_ike.sh tests/netns/test_mip6_cp.sh \
	tests/netns/test_dp_xsk_opts.sh \
	tests/netns/test_dp_handoff.sh \
	tests/netns/test_dp_local.sh \
	tests/netns/test_ha_active.sh \
	tests/netns/test_mip6_ha2.sh \
	tests/netns/test_mip6_nemo.sh \
	tests/netns/test_mip6_v4.sh
NETNS_TESTS += $(DP_NETNS_TESTS)
EXTRA_DIST += tests/netns/test_dp_common.sh tests/netns/test_mip6_common.sh tests/netns/mip6_ike_common.sh \
	tests/netns/test_dp_scapy_peer.py \
	tests/netns/test_dp_frag_send.py tests/netns/test_dp_frag_recv.py tests/netns/test_mip6_mn.py \
	tests/netns/test_mip6_flooder.py tests/netns/mip6_common.sh tests/netns/test_mip6_dhaad_req.py \
	$(DP_NETNS_TESTS)
