# dataplane/local.mk: build and test rules owned by dataplane/ (included by the top Makefile.am).

# --- engine begin ---
# libesp: the ESP/AH engine (owned by the engine helper: dataplane/esp*, ah*, replay*, crypto*).
noinst_LIBRARIES += dataplane/libesp.a
dataplane_libesp_a_SOURCES = dataplane/esp.h dataplane/esp_internal.h dataplane/esp_sa.c \
	dataplane/esp_ip.c dataplane/esp_out.c dataplane/esp_in.c dataplane/ah.c dataplane/replay.c \
	dataplane/crypto_openssl.c dataplane/crypto_sodium.c
if HAVE_IPSEC_MB
dataplane_libesp_a_SOURCES += dataplane/crypto_ipsecmb.c
endif
dataplane_libesp_a_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
# What a program linking libesp.a needs after it.
ESP_LIBS = dataplane/libesp.a $(IPSEC_MB_LIBS) $(CRYPTO_LIBS) $(SODIUM_LIBS)
# --- engine end ---
