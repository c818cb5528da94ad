# tools/snmp.mk: xipsec-snmpd, the SNMP AgentX subagent serving XIPSEC-MIB (mib/), built only when
# configure found Net-SNMP's agent library (libsnmp-dev). It reads its counters through the metrics
# collection layer (tools/libxmetrics.a), the same code as the Prometheus export.
if HAVE_SNMP
sbin_PROGRAMS += tools/xipsec-snmpd
tools_xipsec_snmpd_SOURCES = tools/xipsec_snmpd.c tools/snmp_mib.c tools/snmp_mib.h \
	tools/snmp_view.c tools/snmp_view.h
tools_xipsec_snmpd_CPPFLAGS = $(AM_CPPFLAGS) $(NETSNMP_CFLAGS)
tools_xipsec_snmpd_LDFLAGS = $(AM_LDFLAGS) $(IPSECCTL_IKE_LINK)
tools_xipsec_snmpd_LDADD = tools/libxmetrics.a sadb/libsadb.a $(IPSECCTL_IKE_LIBS) $(NETSNMP_LIBS) -lm
dist_man_MANS += tools/xipsec-snmpd.8
endif
EXTRA_DIST += tools/xipsec-snmpd.8
