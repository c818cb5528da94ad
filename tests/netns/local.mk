# tests/netns/local.mk: end-to-end tests in network namespaces (root). One fragment per part.
include $(srcdir)/tests/netns/lib.mk
include $(srcdir)/tests/netns/dataplane.mk
include $(srcdir)/tests/netns/ike.mk
include $(srcdir)/tests/netns/units.mk
