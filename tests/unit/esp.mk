# tests/unit/esp.mk: unit tests of the ESP/AH engine (dataplane/engine/libesp.a), alone and with libsadb.
ESP_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
ESP_TEST_LDADD = $(ESP_LIBS) $(CMOCKA_LIBS)

UNIT_TESTS += tests/unit/test_esp
check_PROGRAMS += tests/unit/test_esp
tests_unit_test_esp_SOURCES = tests/unit/test_esp.c tests/unit/test_esp_util.h
tests_unit_test_esp_CFLAGS = $(ESP_TEST_CFLAGS)
tests_unit_test_esp_LDADD = $(ESP_TEST_LDADD)

UNIT_TESTS += tests/unit/test_esp_neg
check_PROGRAMS += tests/unit/test_esp_neg
tests_unit_test_esp_neg_SOURCES = tests/unit/test_esp_neg.c tests/unit/test_esp_util.h
tests_unit_test_esp_neg_CFLAGS = $(ESP_TEST_CFLAGS)
tests_unit_test_esp_neg_LDADD = $(ESP_TEST_LDADD)

UNIT_TESTS += tests/unit/test_sa_lifecycle
check_PROGRAMS += tests/unit/test_sa_lifecycle
tests_unit_test_sa_lifecycle_SOURCES = tests/unit/test_sa_lifecycle.c tests/unit/test_esp_util.h \
	tests/unit/sadb_testlib.h
tests_unit_test_sa_lifecycle_CFLAGS = $(ESP_TEST_CFLAGS)
tests_unit_test_sa_lifecycle_LDADD = $(ESP_LIBS) sadb/libsadb.a $(CMOCKA_LIBS) -lpthread
