# bench/sadb.mk: libsadb's benchmark. It compiles the library sources itself with
# -O2 and without the sanitizer flags an --enable-asan build adds to AM_CFLAGS, so its figures are
# representative in every build directory.
noinst_PROGRAMS += bench/sadb-bench
bench_sadb_bench_SOURCES = bench/sadb-bench.c $(SADB_LIB_SRCS) sadb/sadb_int.h sadb/sadb_spd.h
bench_sadb_bench_CFLAGS = -std=gnu11 -pthread $(WARN_CFLAGS) -O2
bench_sadb_bench_LDFLAGS = -pthread
