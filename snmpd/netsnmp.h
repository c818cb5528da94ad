/* snmpd/netsnmp.h: Net-SNMP's agent headers for xipsec-snmpd's files, included first, before
 * config.h. Net-SNMP's config header defines the autoconf package macros too; they are taken back
 * here so that ours, from config.h right after, are the ones the subagent reports. */
#ifndef XIPSEC_SNMPD_NETSNMP_H
#define XIPSEC_SNMPD_NETSNMP_H

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>
#include <net-snmp/agent/net-snmp-agent-includes.h>
#include "config_undef.h"

#endif
