# tests/unit/esp.mk: unit tests of the ESP/AH engine (dataplane/libesp.a); owned by the engine helper.
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
