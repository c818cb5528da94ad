# bench/fwd.mk: the forwarding benchmark: bench/fwd.sh [BUILDDIR], as root.
# bench/fwd-xipsecd is xipsecd built from the same sources (its own, libsadb's and libesp's) with -O2
# and without the sanitizers an --enable-asan build adds, so the figures mean something in any build
# directory; bench/fwd-gen is the AF_XDP generator and XDP counting sink.
noinst_PROGRAMS += bench/fwd-gen bench/fwd-xipsecd
bench_fwd_gen_SOURCES = bench/fwd-gen.c
bench_fwd_gen_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS)
bench_fwd_gen_LDADD = $(XDP_LIBS) $(BPF_LIBS)

bench_fwd_xipsecd_SOURCES = $(dataplane_xipsecd_xipsecd_SOURCES) $(sadb_libsadb_a_SOURCES) \
	$(dataplane_engine_libesp_a_SOURCES) $(dataplane_engine_crypto_libespcrypto_a_SOURCES) \
	$(mobility_libmip6_a_SOURCES)
bench_fwd_xipsecd_CPPFLAGS = $(dataplane_xipsecd_xipsecd_CPPFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_fwd_xipsecd_CFLAGS = -std=gnu11 -pthread $(WARN_CFLAGS) -O2
bench_fwd_xipsecd_LDFLAGS = -pthread
bench_fwd_xipsecd_LDADD = $(XDP_LIBS) $(BPF_LIBS) $(URCU_LIBS) $(CRYPTO_LIBS) $(SODIUM_LIBS) \
	$(IPSEC_MB_LIBS)

# built with the generator that loads it
EXTRA_bench_fwd_gen_DEPENDENCIES = bench/fwd_sink.bpf.o
CLEANFILES += bench/fwd_sink.bpf.o
EXTRA_DIST += bench/fwd.sh bench/fwd_sink.bpf.c
bench/fwd_sink.bpf.o: $(srcdir)/bench/fwd_sink.bpf.c
	@$(MKDIR_P) bench
	$(AM_V_GEN)$(CLANG) $(BPF_CFLAGS) -Wall -Werror -c $(srcdir)/bench/fwd_sink.bpf.c -o $@
