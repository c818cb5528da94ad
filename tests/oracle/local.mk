# tests/oracle/local.mk: the oracle layer: our ESP/AH engine checked against implementations nobody
# here wrote (scapy's ESP/AH, tshark's ESP dissector, python-cryptography's AES-GCM for GMAC), and
# libmip6 against scapy's Mobile IPv6 layers and tshark's Mobile IPv6 dissector. oracle_drv, mip6_drv
# and mip6_v4_drv are the C drivers the scripts feed packets through; the scripts are the tests.
check_PROGRAMS += tests/oracle/oracle_drv
tests_oracle_oracle_drv_SOURCES = tests/oracle/oracle_drv.c
tests_oracle_oracle_drv_CFLAGS = $(AM_CFLAGS)
tests_oracle_oracle_drv_LDADD = $(ESP_LIBS) $(SADB_LIBS)

ORACLE_TESTS += tests/oracle/test_scapy_esp.py tests/oracle/test_scapy_ah.py tests/oracle/test_gmac.py \
	tests/oracle/test_ah_icv_pad.py tests/oracle/test_tshark.py tests/oracle/test_mtu.py
EXTRA_DIST += tests/oracle/oraclelib.py tests/oracle/scapyutil.py tests/oracle/test_scapy_esp.py \
	tests/oracle/test_scapy_ah.py tests/oracle/test_gmac.py tests/oracle/test_ah_icv_pad.py \
	tests/oracle/test_tshark.py tests/oracle/test_mtu.py

# Mobile IPv6 (mobility/libmip6.a) against scapy's MIP6 layers, through mip6_drv.
check_PROGRAMS += tests/oracle/mip6_drv
tests_oracle_mip6_drv_SOURCES = tests/oracle/mip6_drv.c
tests_oracle_mip6_drv_CFLAGS = $(AM_CFLAGS)
tests_oracle_mip6_drv_LDADD = $(MIP6_LIBS)
ORACLE_TESTS += tests/oracle/test_scapy_mip6.py
EXTRA_DIST += tests/oracle/test_scapy_mip6.py

# Dual Stack Mobile IPv6 (mobility/mip6_v4.h) against tshark's Mobile IPv6 dissector and scapy,
# through mip6_v4_drv.
check_PROGRAMS += tests/oracle/mip6_v4_drv
tests_oracle_mip6_v4_drv_SOURCES = tests/oracle/mip6_v4_drv.c
tests_oracle_mip6_v4_drv_CFLAGS = $(AM_CFLAGS)
tests_oracle_mip6_v4_drv_LDADD = $(MIP6_LIBS)
ORACLE_TESTS += tests/oracle/test_tshark_mip6_v4.py
EXTRA_DIST += tests/oracle/test_tshark_mip6_v4.py
