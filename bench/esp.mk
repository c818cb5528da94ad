# bench/esp.mk: the ESP/AH engine's micro-benchmark. Run it from a build
# configured without --enable-asan for meaningful figures: bench/esp-micro [-r reps] [-t name] [-s size]
noinst_PROGRAMS += bench/esp-micro
bench_esp_micro_SOURCES = bench/esp-micro.c
bench_esp_micro_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_esp_micro_LDADD = $(ESP_LIBS)

# The per-packet path's scaling with threads, in memory: bench/scale [-r reps] [-t threads]
noinst_PROGRAMS += bench/scale
bench_scale_SOURCES = bench/scale.c dataplane/xipsecd/dp_util.c
bench_scale_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS) $(URCU_CFLAGS)
bench_scale_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_scale_LDADD = $(ESP_LIBS) sadb/libsadb.a -lpthread

# One inbound SA decrypted by one worker and by two with hand-off (dataplane/xipsecd/dp_handoff.c),
# in memory: bench/handoff-mem [-r reps]; end to end: bench/handoff.sh [BUILDDIR], as root.
noinst_PROGRAMS += bench/handoff-mem
bench_handoff_mem_SOURCES = bench/handoff-mem.c dataplane/xipsecd/dp_handoff.c dataplane/xipsecd/dp_util.c
bench_handoff_mem_CPPFLAGS = $(AM_CPPFLAGS) $(XDP_CFLAGS) $(URCU_CFLAGS)
bench_handoff_mem_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_handoff_mem_LDADD = $(ESP_LIBS) sadb/libsadb.a -lpthread
EXTRA_DIST += bench/handoff.sh bench/bench_pkt.h
