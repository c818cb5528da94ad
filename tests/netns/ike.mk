# tests/netns/ike.mk: end-to-end tests of xipsec-iked (two daemons in two namespaces, each with its
# own SADB); helpers in ike/netns-ike.sh.
EXTRA_DIST += ike/netns-ike.sh
if HAVE_STRONGSWAN
NETNS_TESTS += tests/netns/test_ike_psk.sh
endif
EXTRA_DIST += tests/netns/test_ike_psk.sh
