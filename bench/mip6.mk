# bench/mip6.mk: the Mobile IPv6 home agent's benchmark. bench/mip6-bench [BUILDDIR] (as root) runs both
# measurements: BU/BA exchanges per second through ESP in memory (bench/mip6-bench-mem, libmip6 +
# libesp: bench/mip6-bench-mem [-r reps] [-t gcm|cbc]), packets forwarded through the home agent's
# ESP tunnel in namespaces (bench/fwd-gen, bench/fwd-xipsecd) and BU/BA exchanges against xipsecd
# there (bench/mip6-bu-gen), and IKEv2-keyed registrations (bench/mip6-ike-bench: xipsec-iked on both
# sides, then bench/mip6-bu-gen with the negotiated keys). Build without --enable-asan.
EXTRA_DIST += bench/mip6-bench bench/mip6-ike-bench
noinst_PROGRAMS += bench/mip6-bench-mem
bench_mip6_bench_mem_SOURCES = bench/mip6-bench-mem.c
bench_mip6_bench_mem_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_mip6_bench_mem_LDADD = $(MIP6_LIBS) $(ESP_LIBS)

# bench/mip6-bench's end-to-end generator: pre-built ESP-protected Binding Updates, BAs counted
noinst_PROGRAMS += bench/mip6-bu-gen
bench_mip6_bu_gen_SOURCES = bench/mip6-bu-gen.c
bench_mip6_bu_gen_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_mip6_bu_gen_LDADD = $(MIP6_LIBS) $(ESP_LIBS)
