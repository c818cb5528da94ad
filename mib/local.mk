# mib/local.mk: the SNMP MIB module of xipsec-snmpd (tools/xipsec_snmpd.c) and the IETF base
# modules it imports (mib/ietf/README says why they are here). XIPSEC-MIB goes where Net-SNMP looks
# for MIBs by default; the base modules go to xipsec's own data directory so that they never
# shadow a system's copies.
snmpmibdir = $(datadir)/snmp/mibs
dist_snmpmib_DATA = mib/XIPSEC-MIB.txt
ietfmibdir = $(pkgdatadir)/mibs/ietf
dist_ietfmib_DATA = mib/ietf/SNMPv2-SMI.txt mib/ietf/SNMPv2-TC.txt mib/ietf/SNMPv2-CONF.txt \
	mib/ietf/HCNUM-TC.txt mib/ietf/README
