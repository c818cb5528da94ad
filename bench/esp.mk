# bench/esp.mk: the ESP/AH engine's micro-benchmark. Run it from a build
# configured without --enable-asan for meaningful figures: bench/esp-micro [-r reps] [-t name] [-s size]
noinst_PROGRAMS += bench/esp-micro
bench_esp_micro_SOURCES = bench/esp-micro.c
bench_esp_micro_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_esp_micro_LDADD = $(ESP_LIBS)

# The per-packet path's scaling with threads, in memory: bench/scale [-r reps] [-t threads]
noinst_PROGRAMS += bench/scale
bench_scale_SOURCES = bench/scale.c
bench_scale_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
bench_scale_LDADD = $(ESP_LIBS) sadb/libsadb.a -lpthread
