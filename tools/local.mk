# tools/local.mk: build and test rules owned by tools/ (included by the top Makefile.am).
# ipsecctl: the administration command line. Its logic lives in tools/libipsecctl.a so the unit
# tests (tests/unit/ipsecctl.mk) link the same parsers the command uses.
noinst_LIBRARIES += tools/libipsecctl.a
tools_libipsecctl_a_SOURCES = \
	tools/ipsecctl.h \
	tools/ipsecctl_alg.c \
	tools/ipsecctl_util.c \
	tools/ipsecctl_json.c \
	tools/ipsecctl_conf.h \
	tools/ipsecctl_lex.c \
	tools/ipsecctl_parse.c \
	tools/ipsecctl_parse_sa.c \
	tools/ipsecctl_parse_mip6.c \
	tools/ipsecctl_parse_key.c \
	tools/ipsecctl_check.c \
	tools/ipsecctl_print.c \
	tools/ipsecctl_rt.h \
	tools/ipsecctl_show.c tools/ipsecctl_bindings.c \
	tools/ipsecctl_stats.c \
	tools/ipsecctl_export.c

# The metrics collection layer (tools/metrics.h): every counter the monitoring exporters serve,
# read from the SADB and xipsec-iked, plus the Prometheus text writer and the exporter's HTTP
# parser. Its own library so that each exporter (ipsecctl metrics, the SNMP subagent) links the
# same code: tools/libxmetrics.a sadb/libsadb.a $(IPSECCTL_IKE_LIBS) -lm, LDFLAGS
# $(IPSECCTL_IKE_LINK) (libvici when built with strongSwan).
noinst_LIBRARIES += tools/libxmetrics.a
tools_libxmetrics_a_SOURCES = tools/metrics.h tools/metrics_int.h tools/metrics.c \
	tools/metrics_ike.c tools/metrics_prom.c tools/metrics_http.c
tools_libxmetrics_a_CPPFLAGS = $(AM_CPPFLAGS) $(IPSECCTL_IKE_CPPFLAGS)

# `ipsecctl ike` lives in tools/ike_cmd.c; it adds what it needs to these
# two variables from its own fragment.
IPSECCTL_IKE_CPPFLAGS =
IPSECCTL_IKE_LIBS =

sbin_PROGRAMS += tools/ipsecctl
tools_ipsecctl_SOURCES = tools/ipsecctl.c tools/ipsecctl_cmd.h tools/ipsecctl_load.c \
	tools/ipsecctl_edit.c tools/ipsecctl_metrics.c tools/ike_cmd.h tools/ike_cmd.c
tools_ipsecctl_CPPFLAGS = $(AM_CPPFLAGS) $(IPSECCTL_IKE_CPPFLAGS)
tools_ipsecctl_LDADD = tools/libipsecctl.a tools/libxmetrics.a sadb/libsadb.a $(IPSECCTL_IKE_LIBS) -lm

dist_man_MANS += tools/ipsecctl.8
