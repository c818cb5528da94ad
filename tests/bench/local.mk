# tests/bench/local.mk: tests of the benchmarks. test_sizing.sh runs the sizing study's reduced
# matrix (bench/sizing --quick, root, network namespaces) and verifies its report with
# `bench/sizing check`: a netns-layer test. test_peers.sh runs bench/peers --quick on xipsecd and
# wireguard-go and verifies its result with `bench/peers check`. test_mem_bench.sh runs bench/scale for one
# round on 2 and 3 threads and checks its rows and that nothing was dropped, and bench/handoff-mem
# (xipsecd's hand-off, in memory) for one round, checking that every packet decrypted (no root).
# test_ha_bench.sh runs bench/ha-bench at 100 tunnels once and checks its table is complete and that
# the failovers renegotiated nothing (netns layer).
UNIT_TESTS += tests/bench/test_mem_bench.sh
EXTRA_DIST += tests/bench/test_mem_bench.sh
NETNS_TESTS += tests/bench/test_sizing.sh tests/bench/test_peers.sh tests/bench/test_ha_bench.sh
EXTRA_DIST += tests/bench/test_sizing.sh tests/bench/test_peers.sh tests/bench/test_ha_bench.sh
# test_mip6_ike_bench.sh: bench/mip6-bench's IKEv2 registration part (d) for one mobile node, one
# point and one move with K, through its summary table.
NETNS_TESTS += tests/bench/test_mip6_ike_bench.sh
EXTRA_DIST += tests/bench/test_mip6_ike_bench.sh
