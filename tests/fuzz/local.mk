# tests/fuzz/local.mk: libFuzzer targets for the ESP/AH engine, built with clang from the engine's
# sources (the automake objects are gcc-built), a seed-corpus generator and the runner.
#   make fuzz                      build the targets
#   make check TESTS=tests/fuzz/run-fuzz.sh   run each for FUZZ_SECONDS (default 10) and fail on a crash
#   make fuzz-long                 run each for FUZZ_SECONDS (default 600) on a corpus kept in the
#                                  build tree (tests/fuzz/corpus), so long runs build on each other
# (Explicit rules: automake -Werror refuses %-pattern rules.)
FUZZ_CFLAGS = -g -O1 -std=gnu11 -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-I$(top_srcdir) -I$(top_builddir) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
FUZZ_LINKFLAGS = -fsanitize=fuzzer,address,undefined
FUZZ_LIBS = $(IPSEC_MB_LIBS) $(CRYPTO_LIBS) $(SODIUM_LIBS) -lpthread
# The engine and its backends as one instrumented archive, from the libraries' own source lists
# (dataplane/engine/local.mk, dataplane/engine/crypto/local.mk): a file added there is fuzzed too.
# The sources are prerequisites by their names in the tree (make finds them through VPATH).
FUZZ_ENGINE_SRCS = $(dataplane_engine_libesp_a_SOURCES) $(dataplane_engine_crypto_libespcrypto_a_SOURCES)
FUZZ_ENGINE_HDRS = $(FUZZ_ENGINE_SRCS) $(srcdir)/sadb/sadb.h $(srcdir)/sadb/sadb_drops.h \
	$(srcdir)/tests/fuzz/fuzz_common.h $(srcdir)/tests/fuzz/fuzz_ref.h
FUZZ_ENGINE_LIB = tests/fuzz/libesp-fuzz.a
FUZZ_BINS = tests/fuzz/fuzz_parse tests/fuzz/fuzz_esp_in tests/fuzz/fuzz_udp_in tests/fuzz/fuzz_ah_in \
	tests/fuzz/fuzz_esp_plain tests/fuzz/fuzz_roundtrip tests/fuzz/fuzz_burst tests/fuzz/fuzz_ah_plain \
	tests/fuzz/fuzz_sadb_open tests/fuzz/fuzz_reasm tests/fuzz/fuzz_http tests/fuzz/fuzz_mip6
FUZZ_HARNESS_OBJS = tests/fuzz/obj/h_parse.o tests/fuzz/obj/h_esp_in.o tests/fuzz/obj/h_udp_in.o \
	tests/fuzz/obj/h_ah_in.o tests/fuzz/obj/h_esp_plain.o tests/fuzz/obj/h_roundtrip.o tests/fuzz/obj/h_burst.o \
	tests/fuzz/obj/h_ah_plain.o tests/fuzz/obj/h_sadb_open.o tests/fuzz/obj/h_reasm.o \
	tests/fuzz/obj/h_http.o tests/fuzz/obj/metrics_http.o tests/fuzz/obj/h_mip6.o tests/fuzz/obj/mip6.o

# One rule for the archive: the objects are built in parallel (as many as there are CPUs) and a
# failing one fails the rule; every object is rebuilt when any engine source or header changes.
$(FUZZ_ENGINE_LIB): $(FUZZ_ENGINE_HDRS) config.h
	@rm -rf tests/fuzz/obj/engine && $(MKDIR_P) tests/fuzz/obj/engine
	$(AM_V_CC)for f in $(FUZZ_ENGINE_SRCS); do case $$f in *.c) echo "$$f";; esac; done | \
		xargs -P "$$(nproc)" -I{} sh -c '$(CLANG) $(FUZZ_CFLAGS) -c "$(srcdir)/{}" \
			-o "tests/fuzz/obj/engine/$$(basename {} .c).o"'
	$(AM_V_AR)rm -f $@ && $(AR) $(ARFLAGS) $@ tests/fuzz/obj/engine/*.o && $(RANLIB) $@

tests/fuzz/obj/h_parse.o: $(srcdir)/tests/fuzz/fuzz_parse.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_parse.c -o $@

tests/fuzz/obj/h_esp_in.o: $(srcdir)/tests/fuzz/fuzz_in.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -DFZ_PROTO=SADB_PROTO_ESP -DFZ_NATT=0 -c $(srcdir)/tests/fuzz/fuzz_in.c -o $@

tests/fuzz/obj/h_udp_in.o: $(srcdir)/tests/fuzz/fuzz_in.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -DFZ_PROTO=SADB_PROTO_ESP -DFZ_NATT=1 -c $(srcdir)/tests/fuzz/fuzz_in.c -o $@

tests/fuzz/obj/h_ah_in.o: $(srcdir)/tests/fuzz/fuzz_in.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -DFZ_PROTO=SADB_PROTO_AH -DFZ_NATT=0 -c $(srcdir)/tests/fuzz/fuzz_in.c -o $@

tests/fuzz/obj/h_esp_plain.o: $(srcdir)/tests/fuzz/fuzz_esp_plain.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_esp_plain.c -o $@

tests/fuzz/obj/h_roundtrip.o: $(srcdir)/tests/fuzz/fuzz_roundtrip.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_roundtrip.c -o $@

tests/fuzz/fuzz_parse: tests/fuzz/obj/h_parse.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_parse.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz_esp_in: tests/fuzz/obj/h_esp_in.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_esp_in.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz_udp_in: tests/fuzz/obj/h_udp_in.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_udp_in.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz_ah_in: tests/fuzz/obj/h_ah_in.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_ah_in.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz_esp_plain: tests/fuzz/obj/h_esp_plain.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_esp_plain.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/fuzz_roundtrip: tests/fuzz/obj/h_roundtrip.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_roundtrip.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/obj/h_burst.o: $(srcdir)/tests/fuzz/fuzz_burst.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_burst.c -o $@

tests/fuzz/fuzz_burst: tests/fuzz/obj/h_burst.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_burst.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

tests/fuzz/obj/h_ah_plain.o: $(srcdir)/tests/fuzz/fuzz_ah_plain.c $(FUZZ_ENGINE_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_ah_plain.c -o $@

tests/fuzz/fuzz_ah_plain: tests/fuzz/obj/h_ah_plain.o $(FUZZ_ENGINE_LIB)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_ah_plain.o $(FUZZ_ENGINE_LIB) $(FUZZ_LIBS) -o $@

# libsadb's readers over a corrupted segment: the library's own sources, built with clang.
FUZZ_SADB_HDRS = $(srcdir)/sadb/sadb.h $(srcdir)/sadb/sadb_int.h $(srcdir)/sadb/sadb_spd.h $(srcdir)/sadb/sadb_drops.h
# libsadb as one instrumented archive from its own source list (sadb/local.mk), as the engine's.
FUZZ_SADB_LIB = tests/fuzz/libsadb-fuzz.a
FUZZ_SADB_OBJS = $(FUZZ_SADB_LIB)
$(FUZZ_SADB_LIB): $(sadb_libsadb_a_SOURCES) $(FUZZ_SADB_HDRS) config.h
	@rm -rf tests/fuzz/obj/sadb && $(MKDIR_P) tests/fuzz/obj/sadb
	$(AM_V_CC)for f in $(sadb_libsadb_a_SOURCES); do case $$f in *.c) echo "$$f";; esac; done | \
		xargs -P "$$(nproc)" -I{} sh -c '$(CLANG) $(FUZZ_CFLAGS) -c "$(srcdir)/{}" \
			-o "tests/fuzz/obj/sadb/$$(basename {} .c).o"'
	$(AM_V_AR)rm -f $@ && $(AR) $(ARFLAGS) $@ tests/fuzz/obj/sadb/*.o && $(RANLIB) $@

tests/fuzz/obj/h_sadb_open.o: $(srcdir)/tests/fuzz/fuzz_sadb_open.c $(FUZZ_SADB_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_sadb_open.c -o $@

tests/fuzz/fuzz_sadb_open: tests/fuzz/obj/h_sadb_open.o $(FUZZ_SADB_OBJS)
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_sadb_open.o $(FUZZ_SADB_OBJS) -lpthread -o $@

# xipsecd's reassembly of outer fragments: dp_frag.c alone (no I/O), built with clang.
FUZZ_REASM_HDRS = $(srcdir)/dataplane/xipsecd/dp_frag.h $(srcdir)/dataplane/xipsecd/dp.h $(srcdir)/sadb/sadb_drops.h \
	$(srcdir)/dataplane/engine/ip_bytes.h

tests/fuzz/obj/dp_frag.o: $(srcdir)/dataplane/xipsecd/dp_frag.c $(FUZZ_REASM_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -c $(srcdir)/dataplane/xipsecd/dp_frag.c -o $@

# The model's byte loops would spend most of the time in comparison hooks: the fuzzer steers by
# the reassembler's comparisons and by the harness's edges only.
tests/fuzz/obj/h_reasm.o: $(srcdir)/tests/fuzz/fuzz_reasm.c $(FUZZ_REASM_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -fno-sanitize-coverage=trace-cmp -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_reasm.c -o $@

tests/fuzz/fuzz_reasm: tests/fuzz/obj/h_reasm.o tests/fuzz/obj/dp_frag.o
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_reasm.o tests/fuzz/obj/dp_frag.o -o $@

# The metrics exporter's HTTP request parser (metrics/metrics_http.c), on its own: no SADB, no VICI.
FUZZ_HTTP_HDRS = $(srcdir)/metrics/metrics.h $(srcdir)/sadb/sadb.h $(srcdir)/sadb/sadb_drops.h
tests/fuzz/obj/metrics_http.o: $(srcdir)/metrics/metrics_http.c $(FUZZ_HTTP_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/metrics/metrics_http.c -o $@

tests/fuzz/obj/h_http.o: $(srcdir)/tests/fuzz/fuzz_http.c $(FUZZ_HTTP_HDRS) config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_http.c -o $@

tests/fuzz/fuzz_http: tests/fuzz/obj/h_http.o tests/fuzz/obj/metrics_http.o
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_http.o tests/fuzz/obj/metrics_http.o -o $@

# The Mobility Header parser (mobility/mip6.c), on its own: libmip6 depends on nothing but libc.
tests/fuzz/obj/mip6.o: $(srcdir)/mobility/mip6.c $(srcdir)/mobility/mip6.h config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -c $(srcdir)/mobility/mip6.c -o $@

tests/fuzz/obj/h_mip6.o: $(srcdir)/tests/fuzz/fuzz_mip6.c $(srcdir)/mobility/mip6.h config.h
	@$(MKDIR_P) tests/fuzz/obj
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/fuzz/fuzz_mip6.c -o $@

tests/fuzz/fuzz_mip6: tests/fuzz/obj/h_mip6.o tests/fuzz/obj/mip6.o
	$(AM_V_CCLD)$(CLANG) $(FUZZ_LINKFLAGS) tests/fuzz/obj/h_mip6.o tests/fuzz/obj/mip6.o -o $@

fuzz: $(FUZZ_BINS)
fuzz-long: $(FUZZ_BINS) tests/oracle/oracle_drv
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' PYTHON='$(DEBIAN_PYTHON)' \
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} FUZZ_CORPUS_DIR='$(abs_top_builddir)/tests/fuzz/corpus' \
	$(SHELL) $(srcdir)/tests/fuzz/run-fuzz.sh
.PHONY: fuzz fuzz-long

FUZZ_TESTS += tests/fuzz/run-fuzz.sh
# The runner needs the targets and, for the seed corpus, the oracle driver (our engine's outbound).
tests/fuzz/run-fuzz.log: $(FUZZ_BINS) tests/oracle/oracle_drv
CLEANFILES += $(FUZZ_BINS) $(FUZZ_ENGINE_LIB) tests/fuzz/obj/engine/*.o $(FUZZ_HARNESS_OBJS) $(FUZZ_SADB_OBJS) tests/fuzz/obj/sadb/*.o tests/fuzz/obj/dp_frag.o tests/fuzz/obj/mip6.o
EXTRA_DIST += tests/fuzz/fuzz_mip6.c tests/fuzz/fuzz_http.c tests/fuzz/fuzz_reasm.c tests/fuzz/fuzz_sadb_open.c tests/fuzz/fuzz_common.h tests/fuzz/fuzz_ref.h tests/fuzz/fuzz_burst.c tests/fuzz/fuzz_ah_plain.c tests/fuzz/fuzz_parse.c tests/fuzz/fuzz_in.c tests/fuzz/fuzz_esp_plain.c \
	tests/fuzz/fuzz_roundtrip.c tests/fuzz/gen_seeds.py tests/fuzz/run-fuzz.sh
