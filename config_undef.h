/* config_undef.h: takes back the autoconf package macros (PACKAGE, PACKAGE_*, VERSION), which every
 * autoconf project's config.h defines: strongSwan's and Net-SNMP's headers as much as ours. Where two
 * of them meet in one file, one set must go before the other is included, or the second definition
 * is a redefinition error under -Werror. Included by ike/swan.h (strongSwan's set wins: its headers
 * use VERSION) and snmpd/netsnmp.h (ours wins: the subagent reports xipsec's version). No include
 * guard: each inclusion undefines again. */
#undef PACKAGE
#undef PACKAGE_BUGREPORT
#undef PACKAGE_NAME
#undef PACKAGE_STRING
#undef PACKAGE_TARNAME
#undef PACKAGE_URL
#undef PACKAGE_VERSION
#undef VERSION
