# tests/ipsecctl/local.mk: build and test rules owned by tests/ipsecctl/ (included by the top Makefile.am).
# Golden-file tests of ipsecctl (tests/ipsecctl/golden.sh explains the file naming; the whole
# directory, *.in, *.ok and keys/, is distributed), the tshark decryption oracle, and the live
# counter tests that use rt-poke as a stand-in for the dataplane's runtime writes.
ORACLE_TESTS += tests/ipsecctl/golden.sh tests/ipsecctl/tshark.sh tests/ipsecctl/monitor.sh
EXTRA_DIST += tests/ipsecctl
check_PROGRAMS += tests/ipsecctl/rt-poke
tests_ipsecctl_rt_poke_SOURCES = tests/ipsecctl/rt-poke.c
tests_ipsecctl_rt_poke_LDADD = sadb/libsadb.a
# live.sh: esp-drive runs the real ESP/AH engine over ipsecctl-loaded SADBs.
ORACLE_TESTS += tests/ipsecctl/live.sh
check_PROGRAMS += tests/ipsecctl/esp-drive
tests_ipsecctl_esp_drive_SOURCES = tests/ipsecctl/esp-drive.c
tests_ipsecctl_esp_drive_LDADD = sadb/libsadb.a $(ESP_LIBS)
