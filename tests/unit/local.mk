# tests/unit/local.mk: cmocka unit tests. Each part owns its own fragment here.
include $(srcdir)/tests/unit/sadb.mk
include $(srcdir)/tests/unit/esp.mk
include $(srcdir)/tests/unit/ipsecctl.mk
include $(srcdir)/tests/unit/dataplane.mk
include $(srcdir)/tests/unit/ike.mk
include $(srcdir)/tests/unit/mobility.mk
