# bench/ike.mk: bench/ike-bench (SA negotiation cost of xipsec-iked, run as root) and its VICI
# timing client.
EXTRA_DIST += bench/ike-bench
if HAVE_STRONGSWAN
noinst_PROGRAMS += bench/ike-bench-vici
bench_ike_bench_vici_SOURCES = bench/ike-bench-vici.c
bench_ike_bench_vici_CPPFLAGS = $(AM_CPPFLAGS) -I$(SWAN_SRC)/src/libcharon/plugins/vici
bench_ike_bench_vici_LDFLAGS = $(AM_LDFLAGS) -pthread -L/usr/lib/ipsec -Wl,-rpath,/usr/lib/ipsec
bench_ike_bench_vici_LDADD = -lvici $(SADB_LIBS)
endif
