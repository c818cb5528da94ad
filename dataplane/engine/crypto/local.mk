# dataplane/engine/crypto/local.mk: libespcrypto, the engine's crypto backends (native AES-NI/PCLMUL,
# OpenSSL libcrypto, libsodium, and intel-ipsec-mb when configure found it). They implement
# esp_crypto.h and use nothing of the engine (libesp) itself.
noinst_LIBRARIES += dataplane/engine/crypto/libespcrypto.a
dataplane_engine_crypto_libespcrypto_a_SOURCES = dataplane/engine/crypto/esp_crypto.h \
	dataplane/engine/crypto/crypto_openssl.c \
	dataplane/engine/crypto/crypto_sodium.c dataplane/engine/crypto/crypto_native.c \
	dataplane/engine/crypto/crypto_ipsecmb.h
if HAVE_IPSEC_MB
dataplane_engine_crypto_libespcrypto_a_SOURCES += dataplane/engine/crypto/crypto_ipsecmb.c
endif
dataplane_engine_crypto_libespcrypto_a_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
