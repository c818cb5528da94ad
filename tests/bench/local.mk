# tests/bench/local.mk: tests of the benchmarks. test_sizing.sh runs the sizing study's reduced
# matrix (bench/sizing --quick, root, network namespaces) and verifies its report with
# `bench/sizing check`: a netns-layer test.
NETNS_TESTS += tests/bench/test_sizing.sh
EXTRA_DIST += tests/bench/test_sizing.sh
