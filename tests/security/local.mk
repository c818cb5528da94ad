# tests/security/local.mk: tests of what the programs trust (files, directories) that need no
# network namespace; run by `make check` after the fuzzers and before the netns tests. They use the
# netns harness (tests/netns/lib.sh) for its temp dir, cleanup trap and leak check.
SECURITY_TESTS += tests/security/test_sadb_file.sh
EXTRA_DIST += tests/security/test_sadb_file.sh
