# dataplane/engine/local.mk: libesp, the I/O-free ESP/AH engine (esp.h): SA objects, outbound and
# inbound processing, AH, the replay window, IP-level helpers. Its crypto backends are built in
# crypto/ (their own library); a program using the engine links both through $(ESP_LIBS).
noinst_LIBRARIES += dataplane/engine/libesp.a
dataplane_engine_libesp_a_SOURCES = dataplane/engine/esp.h dataplane/engine/esp_internal.h \
	dataplane/engine/esp_sa.h dataplane/engine/esp_seq.h dataplane/engine/esp_replay.h \
	dataplane/engine/esp_replay_ring.h dataplane/engine/esp_ip.h \
	dataplane/engine/ip_bytes.h \
	dataplane/engine/esp_sa.c dataplane/engine/esp_seq.c dataplane/engine/esp_mtu.c dataplane/engine/esp_ip.c dataplane/engine/esp_out.c \
	dataplane/engine/esp_in.c dataplane/engine/ah.c dataplane/engine/replay.c
dataplane_engine_libesp_a_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)

include $(srcdir)/dataplane/engine/crypto/local.mk

# What a program linking the engine needs after it.
ESP_LIBS = dataplane/engine/libesp.a dataplane/engine/crypto/libespcrypto.a $(IPSEC_MB_LIBS) \
	$(CRYPTO_LIBS) $(SODIUM_LIBS)
