# tests/snmp/local.mk: checks of the SNMP MIB module (snmpd/mib/) that need neither root nor a network
# (xipsec-snmpd's end-to-end test is tests/netns/test_snmp_agent.sh).
UNIT_TESTS += tests/snmp/test_mib.sh
EXTRA_DIST += tests/snmp/test_mib.sh

# xipsec-snmpd's view of a metrics snapshot (snmpd/snmp_view.c: no Net-SNMP in it, so it is tested
# whether or not the subagent is built).
UNIT_TESTS += tests/snmp/test_snmp_view
check_PROGRAMS += tests/snmp/test_snmp_view
tests_snmp_test_snmp_view_SOURCES = tests/snmp/test_snmp_view.c snmpd/snmp_view.c snmpd/snmp_view.h \
	tests/unit/sadb_testlib.h
tests_snmp_test_snmp_view_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_snmp_test_snmp_view_LDADD = metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) $(CMOCKA_LIBS) -lm

# xipsec-snmpd's notification events from successive views (snmpd/snmp_notify.c, no Net-SNMP).
UNIT_TESTS += tests/snmp/test_snmp_notify
check_PROGRAMS += tests/snmp/test_snmp_notify
tests_snmp_test_snmp_notify_SOURCES = tests/snmp/test_snmp_notify.c snmpd/snmp_notify.c \
	snmpd/snmp_notify.h
tests_snmp_test_snmp_notify_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_snmp_test_snmp_notify_LDADD = $(CMOCKA_LIBS)
