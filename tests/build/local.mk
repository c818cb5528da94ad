# tests/build/local.mk: tests of the build system itself.
UNIT_TESTS += tests/build/test_configure.sh
EXTRA_DIST += tests/build/test_configure.sh
