# tests/build/local.mk: tests of the build system itself (owned by the lead).
UNIT_TESTS += tests/build/test_configure.sh
EXTRA_DIST += tests/build/test_configure.sh
