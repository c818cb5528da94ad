# tests/build/local.mk: tests of the build system itself: configure's messages, what `make install`
# installs, and the systemd units it installs (systemd-analyze verify).
UNIT_TESTS += tests/build/test_configure.sh tests/build/test_install.sh tests/build/test_units.sh
EXTRA_DIST += tests/build/test_configure.sh tests/build/test_install.sh tests/build/test_units.sh \
	tests/build/install_common.sh

# The configured installation directories, for the install tests (KEY=value lines).
print-install-dirs:
	@echo "sbindir=$(sbindir)"; echo "pkglibdir=$(pkglibdir)"; echo "mandir=$(mandir)"; \
	echo "sysconfdir=$(sysconfdir)"; echo "systemdsystemunitdir=$(systemdsystemunitdir)"; \
	echo "have_strongswan=$(if $(HAVE_STRONGSWAN_TRUE),no,yes)"
.PHONY: print-install-dirs
