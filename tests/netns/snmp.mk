# tests/netns/snmp.mk: xipsec-snmpd's end-to-end test (a real snmpd as master agent, SNMPv3 clients,
# two xipsecd gateways with known traffic).
NETNS_TESTS += tests/netns/test_snmp_agent.sh
EXTRA_DIST += tests/netns/test_snmp_agent.sh
NETNS_TESTS += tests/netns/test_snmp_ike.sh
EXTRA_DIST += tests/netns/test_snmp_ike.sh
