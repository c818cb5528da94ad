# bench/ha.mk: bench/ha-bench [BUILDDIR] (as root): the two-node cluster's failover gap, sync traffic,
# CPU and catch-up time per number of tunnels, on tests/netns/ha_common.sh's test bed; it drives the
# peer's VICI with bench/ike-bench-vici (bench/ike.mk).
EXTRA_DIST += bench/ha-bench
