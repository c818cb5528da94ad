# bench/sizing.mk: the sizing study (bench/sizing, python3, run as root; its package bench/sizing_lib)
# and its request/response tool bench/sizing-rr (what iperf3 lacks: one transaction outstanding,
# rate and latency percentiles).
noinst_PROGRAMS += bench/sizing-rr
bench_sizing_rr_SOURCES = bench/sizing-rr.c
EXTRA_DIST += bench/sizing bench/sizing_lib/__init__.py bench/sizing_lib/framework.py \
	bench/sizing_lib/netns.py bench/sizing_lib/dataplane.py bench/sizing_lib/wire.py \
	bench/sizing_lib/report.py bench/sizing_lib/mip6.py bench/sizing_lib/plotting.py bench/sizing_lib/lossfree.py \
	bench/sizing_lib/scale.py bench/sizing_lib/ikescale.py bench/sizing_lib/ikescale_peers.sh
