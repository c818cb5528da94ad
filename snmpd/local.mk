# snmpd/local.mk: xipsec-snmpd, the SNMP AgentX subagent serving XIPSEC-MIB, built only when
# configure found Net-SNMP's agent library (libsnmp-dev). It reads its counters through the metrics
# collection layer (metrics/libxmetrics.a), the same code as the Prometheus export.
if HAVE_SNMP
sbin_PROGRAMS += snmpd/xipsec-snmpd
snmpd_xipsec_snmpd_SOURCES = snmpd/xipsec_snmpd.c snmpd/netsnmp.h snmpd/snmp_mib.c \
	snmpd/snmp_mib.h snmpd/snmp_notify.c snmpd/snmp_notify.h snmpd/snmp_view.c snmpd/snmp_view.h
snmpd_xipsec_snmpd_CPPFLAGS = $(AM_CPPFLAGS) $(NETSNMP_CFLAGS)
snmpd_xipsec_snmpd_LDADD = metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) $(NETSNMP_LIBS) -lm
dist_man_MANS += snmpd/xipsec-snmpd.8
endif
EXTRA_DIST += snmpd/xipsec-snmpd.8

# The MIB lives here, with the program whose OIDs it names (snmp_mib.c registers them and
# tests/snmp/test_mib.sh checks the two agree): it is the subagent's interface, one product with it.
# It is installed whether or not the subagent is built, so that a manager can load it from a
# gateway built without Net-SNMP's agent library. XIPSEC-MIB goes where Net-SNMP looks for MIBs by
# default; the IETF base modules it imports (snmpd/mib/ietf/README says why they are here) go to
# xipsec's own data directory so that they never shadow a system's copies.
snmpmibdir = $(datadir)/snmp/mibs
dist_snmpmib_DATA = snmpd/mib/XIPSEC-MIB.txt
ietfmibdir = $(pkgdatadir)/mibs/ietf
dist_ietfmib_DATA = snmpd/mib/ietf/SNMPv2-SMI.txt snmpd/mib/ietf/SNMPv2-TC.txt \
	snmpd/mib/ietf/SNMPv2-CONF.txt snmpd/mib/ietf/HCNUM-TC.txt \
	snmpd/mib/ietf/INET-ADDRESS-MIB.txt snmpd/mib/ietf/README
