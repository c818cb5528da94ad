# tests/bench/sizing-plan.mk: the golden test of `bench/sizing plan` (no root) with its stored run
# directory and cases (tests/bench/sizing-plan/), and the sizing study's modules it and the study's
# negotiation and model sections need in the distribution (bench/sizing_lib: ike, model, plan).
ORACLE_TESTS += tests/bench/test_sizing_plan.sh
EXTRA_DIST += tests/bench/test_sizing_plan.sh tests/bench/sizing-plan \
	bench/sizing_lib/ike.py bench/sizing_lib/ike_peers.sh bench/sizing_lib/model.py bench/sizing_lib/plan.py
