# tests/bench/sizing-plan.mk: the golden test of `bench/sizing plan` (no root) and its stored run
# directory and cases (tests/bench/sizing-plan/).
ORACLE_TESTS += tests/bench/test_sizing_plan.sh
EXTRA_DIST += tests/bench/test_sizing_plan.sh tests/bench/sizing-plan
