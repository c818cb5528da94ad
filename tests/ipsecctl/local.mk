# tests/ipsecctl/local.mk: build and test rules of tests/ipsecctl/ (included by the top Makefile.am).
# Golden-file tests of ipsecctl (tests/ipsecctl/golden.sh explains the file naming; the whole
# directory, *.in, *.ok and keys/, is distributed), the tshark decryption oracle, and the live
# counter tests that use rt-poke as a stand-in for the dataplane's runtime writes.
ORACLE_TESTS += tests/ipsecctl/golden.sh tests/ipsecctl/tshark.sh tests/ipsecctl/monitor.sh
SUBSET_TESTS += tests/ipsecctl/golden.sh
EXTRA_DIST += tests/ipsecctl
# For a directory in EXTRA_DIST automake copies the build tree's copy too (objects, test programs,
# logs): the tarball keeps only what the source tree has.
dist-hook: dist-prune-ipsecctl
dist-prune-ipsecctl:
	@d='$(distdir)/tests/ipsecctl'; s='$(abs_srcdir)/tests/ipsecctl'; \
	(cd "$$d" && find . -type f) | while read -r f; do \
		test -e "$$s/$$f" || rm -f "$$d/$$f"; \
	done; \
	find "$$d" -depth -mindepth 1 -type d -empty -exec rmdir {} +
.PHONY: dist-prune-ipsecctl
check_PROGRAMS += tests/ipsecctl/rt-poke
tests_ipsecctl_rt_poke_SOURCES = tests/ipsecctl/rt-poke.c
tests_ipsecctl_rt_poke_LDADD = sadb/libsadb.a
# files.sh: the configuration and key files ipsecctl refuses (another owner's, writable or
# readable by others, a symbolic link, a FIFO); completion.sh: the bash completion script.
ORACLE_TESTS += tests/ipsecctl/files.sh tests/ipsecctl/completion.sh
SUBSET_TESTS += tests/ipsecctl/files.sh tests/ipsecctl/completion.sh
# reload.sh: `ipsecctl reload`, what the systemd units run; dp_testctl plays xipsec-iked.
ORACLE_TESTS += tests/ipsecctl/reload.sh
SUBSET_TESTS += tests/ipsecctl/reload.sh
# live.sh: esp-drive runs the real ESP/AH engine over ipsecctl-loaded SADBs.
ORACLE_TESTS += tests/ipsecctl/live.sh
check_PROGRAMS += tests/ipsecctl/esp-drive
tests_ipsecctl_esp_drive_SOURCES = tests/ipsecctl/esp-drive.c
tests_ipsecctl_esp_drive_LDADD = sadb/libsadb.a $(ESP_LIBS)
# fuzz-conf.sh: libFuzzer over the configuration parser and its -n round trip. Built with clang
# straight from the sources (the automake objects are gcc-built, without the fuzzer's coverage):
# ipsecctl/libipsecctl.a's and sadb/libsadb.a's sources, as their local.mk files list them, compiled
# again into clang archives of the same contents, so a file added to a library needs no rule here.
IPSECCTL_FUZZ_CFLAGS = -g -O1 -std=gnu11 -fno-omit-frame-pointer \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-I$(top_srcdir) -I$(top_builddir) -include config.h
IPSECCTL_FUZZ_LIB = tests/ipsecctl/fz/libipsecctl.a tests/ipsecctl/fz/libsadb.a
IPSECCTL_FUZZ_OBJS = tests/ipsecctl/fz/fuzz_conf.o
IPSECCTL_FUZZ_HDRS = $(srcdir)/ipsecctl/ipsecctl.h $(srcdir)/sadb/sadb.h $(srcdir)/sadb/sadb_drops.h \
	$(srcdir)/sadb/sadb_int.h config.h
# the .c files of a library's source list ($$srcs) built with clang into the archive $@
IPSECCTL_FUZZ_AR = set -e; rm -f $@; d=$@.d; $(MKDIR_P) $$d; objs=; \
	for s in $$srcs; do \
		case $$s in *.c) ;; *) continue ;; esac; \
		o=$$d/`basename $$s .c`.o; \
		$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/$$s -o $$o; \
		objs="$$objs $$o"; \
	done; \
	$(AR) cr $@ $$objs
tests/ipsecctl/fz/libipsecctl.a: $(ipsecctl_libipsecctl_a_SOURCES) $(IPSECCTL_FUZZ_HDRS)
	$(AM_V_CC)srcs='$(ipsecctl_libipsecctl_a_SOURCES)'; $(IPSECCTL_FUZZ_AR)
tests/ipsecctl/fz/libsadb.a: $(sadb_libsadb_a_SOURCES) $(IPSECCTL_FUZZ_HDRS)
	$(AM_V_CC)srcs='$(sadb_libsadb_a_SOURCES)'; $(IPSECCTL_FUZZ_AR)
tests/ipsecctl/fz/fuzz_conf.o: $(srcdir)/tests/ipsecctl/fuzz_conf.c $(IPSECCTL_FUZZ_HDRS)
	@$(MKDIR_P) tests/ipsecctl/fz
	$(AM_V_CC)$(CLANG) $(IPSECCTL_FUZZ_CFLAGS) -Wall -Wextra -Werror -c $(srcdir)/tests/ipsecctl/fuzz_conf.c -o $@
tests/ipsecctl/fuzz_conf: $(IPSECCTL_FUZZ_OBJS) $(IPSECCTL_FUZZ_LIB)
	$(AM_V_CCLD)$(CLANG) -fsanitize=fuzzer,address,undefined $(IPSECCTL_FUZZ_OBJS) $(IPSECCTL_FUZZ_LIB) -lm -lpthread -o $@
FUZZ_TESTS += tests/ipsecctl/fuzz-conf.sh
tests/ipsecctl/fuzz-conf.log: tests/ipsecctl/fuzz_conf
CLEANFILES += tests/ipsecctl/fuzz_conf $(IPSECCTL_FUZZ_OBJS) $(IPSECCTL_FUZZ_LIB)
