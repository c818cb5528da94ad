# bench/mip6.mk: Binding Update / Acknowledgement exchanges per second through ESP, in memory (libmip6
# + libesp). Run it from a build configured without --enable-asan: bench/mip6-bench [-r reps] [-t gcm|cbc]
noinst_PROGRAMS += bench/mip6-bench
bench_mip6_bench_SOURCES = bench/mip6-bench.c
bench_mip6_bench_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_mip6_bench_LDADD = $(MIP6_LIBS) $(ESP_LIBS)
