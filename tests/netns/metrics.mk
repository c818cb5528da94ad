# tests/netns/metrics.mk: the monitoring exporters' end-to-end tests in network namespaces:
# `ipsecctl metrics --listen` scraped by a real Prometheus server while xipsecd carries traffic.
METRICS_NETNS_TESTS = tests/netns/test_metrics_prom.sh
NETNS_TESTS += $(METRICS_NETNS_TESTS)
EXTRA_DIST += $(METRICS_NETNS_TESTS)
