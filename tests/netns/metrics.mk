# tests/netns/metrics.mk: the monitoring exporters' end-to-end tests in network namespaces:
# `ipsecctl metrics --listen` scraped by a real Prometheus server while xipsecd carries traffic, and
# the IKE metrics of two negotiating xipsec-iked (helpers in tests/netns/ike_common.sh), the
# per-tunnel counters across rekeys of an IKE-keyed tunnel through xipsecd, the exporter's limits
# against another local user's idle and slow connections, and the exporter as an unprivileged user
# that reads xipsecd's counters view and no key.
METRICS_NETNS_TESTS = tests/netns/test_metrics_prom.sh tests/netns/test_metrics_stall.sh \
	tests/netns/test_metrics_unpriv.sh
METRICS_IKE_NETNS_TESTS = tests/netns/test_metrics_ike.sh tests/netns/test_metrics_tunnel.sh
NETNS_TESTS += $(METRICS_NETNS_TESTS)
EXTRA_DIST += $(METRICS_NETNS_TESTS) $(METRICS_IKE_NETNS_TESTS)
if HAVE_STRONGSWAN
NETNS_TESTS += $(METRICS_IKE_NETNS_TESTS)
endif
