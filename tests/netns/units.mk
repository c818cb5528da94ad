# tests/netns/units.mk: the installed systemd units' command lines, run in the netns topology with
# the units' capability bounding sets, umasks and system call filters (make install DESTDIR into the
# test's directory).
NETNS_TESTS += tests/netns/test_units_run.sh
EXTRA_DIST += tests/netns/test_units_run.sh tests/netns/units_common.sh tests/netns/unit_sandbox.py \
	tests/netns/test_units_ike.sh
# xipsec-iked.service, next to the other two
if HAVE_STRONGSWAN
NETNS_TESTS += tests/netns/test_units_ike.sh
endif
