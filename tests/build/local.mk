# tests/build/local.mk: tests of the build system itself: configure's messages, what `make install`
# installs, the systemd units it installs (systemd-analyze verify), the programs' log priorities
# on the journal, the tree's shape and the docs naming only files that exist.
UNIT_TESTS += tests/build/test_configure.sh tests/build/test_install.sh tests/build/test_units.sh \
	tests/build/test_journal.sh tests/build/test_structure.sh tests/build/test_docs.sh
EXTRA_DIST += tests/build/test_configure.sh tests/build/test_install.sh tests/build/test_units.sh \
	tests/build/test_journal.sh \
	tests/build/test_structure.sh tests/build/structure.py tests/build/install_common.sh \
	tests/build/test_docs.sh tests/build/docs.py tests/README.md

# The configured installation directories, for the install tests (KEY=value lines).
print-install-dirs:
	@echo "sbindir=$(sbindir)"; echo "pkglibdir=$(pkglibdir)"; echo "mandir=$(mandir)"; \
	echo "sysconfdir=$(sysconfdir)"; echo "systemdsystemunitdir=$(systemdsystemunitdir)"; \
	echo "have_strongswan=$(if $(HAVE_STRONGSWAN_TRUE),no,yes)"; \
	echo "datadir=$(datadir)"; echo "pkgdatadir=$(pkgdatadir)"; \
	echo "have_snmp=$(if $(HAVE_SNMP_TRUE),no,yes)"
.PHONY: print-install-dirs
