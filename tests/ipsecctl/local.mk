# tests/ipsecctl/local.mk: build and test rules of tests/ipsecctl/ (included by the top Makefile.am).
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
# fuzz-conf.sh: libFuzzer over the configuration parser and its -n round trip. Built with clang
# straight from the sources (the automake objects are gcc-built), like tests/fuzz/.
IPSECCTL_FUZZ_CFLAGS = -g -O1 -std=gnu11 -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-I$(top_srcdir) -I$(top_builddir) -include config.h
IPSECCTL_FUZZ_OBJS = tests/ipsecctl/fz/fuzz_conf.o tests/ipsecctl/fz/ipsecctl_alg.o \
	tests/ipsecctl/fz/ipsecctl_util.o tests/ipsecctl/fz/ipsecctl_json.o \
	tests/ipsecctl/fz/ipsecctl_conf.o tests/ipsecctl/fz/sadb_spd.o \
	tests/ipsecctl/fz/sadb_seg.o tests/ipsecctl/fz/sadb_read.o tests/ipsecctl/fz/sadb_hash.o tests/ipsecctl/fz/sadb_journal.o \
	tests/ipsecctl/fz/sadb_txn.o tests/ipsecctl/fz/sadb_hold.o tests/ipsecctl/fz/sadb_sa.o tests/ipsecctl/fz/sadb_policy.o \
	tests/ipsecctl/fz/sadb_util.o tests/ipsecctl/fz/sadb_file.o
IPSECCTL_FUZZ_HDRS = $(srcdir)/tools/ipsecctl.h $(srcdir)/sadb/sadb.h $(srcdir)/sadb/sadb_drops.h \
	$(srcdir)/sadb/sadb_int.h config.h
tests/ipsecctl/fz/fuzz_conf.o: $(srcdir)/tests/ipsecctl/fuzz_conf.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/ipsecctl/fuzz_conf.c -o $@
tests/ipsecctl/fz/ipsecctl_alg.o: $(srcdir)/tools/ipsecctl_alg.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tools/ipsecctl_alg.c -o $@
tests/ipsecctl/fz/ipsecctl_util.o: $(srcdir)/tools/ipsecctl_util.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tools/ipsecctl_util.c -o $@
tests/ipsecctl/fz/ipsecctl_json.o: $(srcdir)/tools/ipsecctl_json.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tools/ipsecctl_json.c -o $@
tests/ipsecctl/fz/ipsecctl_conf.o: $(srcdir)/tools/ipsecctl_conf.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tools/ipsecctl_conf.c -o $@
tests/ipsecctl/fz/sadb_seg.o: $(srcdir)/sadb/sadb_seg.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_seg.c -o $@
tests/ipsecctl/fz/sadb_read.o: $(srcdir)/sadb/sadb_read.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_read.c -o $@
tests/ipsecctl/fz/sadb_hash.o: $(srcdir)/sadb/sadb_hash.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_hash.c -o $@
tests/ipsecctl/fz/sadb_journal.o: $(srcdir)/sadb/sadb_journal.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_journal.c -o $@
tests/ipsecctl/fz/sadb_txn.o: $(srcdir)/sadb/sadb_txn.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_txn.c -o $@
tests/ipsecctl/fz/sadb_hold.o: $(srcdir)/sadb/sadb_hold.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_hold.c -o $@
tests/ipsecctl/fz/sadb_sa.o: $(srcdir)/sadb/sadb_sa.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_sa.c -o $@
tests/ipsecctl/fz/sadb_policy.o: $(srcdir)/sadb/sadb_policy.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_policy.c -o $@
tests/ipsecctl/fz/sadb_spd.o: $(srcdir)/sadb/sadb_spd.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_spd.c -o $@
tests/ipsecctl/fz/sadb_util.o: $(srcdir)/sadb/sadb_util.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_util.c -o $@
tests/ipsecctl/fz/sadb_file.o: $(srcdir)/sadb/sadb_file.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -c $(srcdir)/sadb/sadb_file.c -o $@
tests/ipsecctl/fuzz_conf: $(IPSECCTL_FUZZ_OBJS)
	$(AM_V_CCLD)$(CLANG) -fsanitize=fuzzer,address,undefined $(IPSECCTL_FUZZ_OBJS) -lpthread -o $@
FUZZ_TESTS += tests/ipsecctl/fuzz-conf.sh
tests/ipsecctl/fuzz-conf.log: tests/ipsecctl/fuzz_conf
CLEANFILES += tests/ipsecctl/fuzz_conf $(IPSECCTL_FUZZ_OBJS)
