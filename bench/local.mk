# bench/local.mk: benchmarks (built by `make`, run by hand or scripts/bench). One fragment per part.
include $(srcdir)/bench/sadb.mk
include $(srcdir)/bench/esp.mk
include $(srcdir)/bench/fwd.mk
include $(srcdir)/bench/ike.mk
