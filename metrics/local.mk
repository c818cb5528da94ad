# metrics/local.mk: libxmetrics.a, the metrics collection layer (metrics/metrics.h): every counter
# the monitoring exporters serve, read from the SADB and from xipsec-iked over VICI, plus the
# Prometheus text writer and the exporter's HTTP parser. A library of its own so that each
# exporter (`ipsecctl metrics`, the SNMP subagent in snmpd/) links the same code. A program links
# metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) -lm (configure.ac); libvici itself is loaded at
# run time (vici_dl.c).
noinst_LIBRARIES += metrics/libxmetrics.a
metrics_libxmetrics_a_SOURCES = metrics/metrics.h metrics/metrics_int.h metrics/metrics.c \
	metrics/metrics_snapshot.c metrics/metrics_ike.c metrics/metrics_tunnel.c metrics/metrics_prom.c \
	metrics/metrics_node.c \
	metrics/metrics_http.c \
	metrics/vici_dl.h metrics/vici_dl.c
metrics_libxmetrics_a_CPPFLAGS = $(AM_CPPFLAGS) $(VICI_CPPFLAGS)
