# bench/local.mk: benchmarks (built by `make`, run by hand as each one's header says). One fragment per part.
include $(srcdir)/bench/sadb.mk
include $(srcdir)/bench/esp.mk
include $(srcdir)/bench/fwd.mk
include $(srcdir)/bench/ike.mk
include $(srcdir)/bench/mip6.mk
include $(srcdir)/bench/sizing.mk
include $(srcdir)/bench/peers.mk
include $(srcdir)/bench/ha.mk
