# tests/ipsecctl/local.mk: build and test rules owned by tests/ipsecctl/ (included by the top Makefile.am).
# Golden-file tests of ipsecctl (tests/ipsecctl/golden.sh explains the file naming); the whole
# directory (*.in, *.ok, keys/) is distributed.
ORACLE_TESTS += tests/ipsecctl/golden.sh tests/ipsecctl/tshark.sh
EXTRA_DIST += tests/ipsecctl
