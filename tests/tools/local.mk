# tests/tools/local.mk: programs only the tests (and the demo) use.
# dp_testctl: a small SADB writer for the netns tests, benchmarks and demo (ipsecctl is the real tool).
noinst_PROGRAMS += tests/tools/dp_testctl
tests_tools_dp_testctl_SOURCES = tests/tools/dp_testctl.c
tests_tools_dp_testctl_LDADD = sadb/libsadb.a

# sadb-dump: a small SADB reader for the IKE netns tests: prints SAs as lines both sides can be
# compared with.
noinst_PROGRAMS += tests/tools/sadb-dump
tests_tools_sadb_dump_SOURCES = tests/tools/sadb_dump.c
tests_tools_sadb_dump_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
tests_tools_sadb_dump_LDADD = $(SADB_LIBS) $(CRYPTO_LIBS)
