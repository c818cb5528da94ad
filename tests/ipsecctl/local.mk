# tests/ipsecctl/local.mk: build and test rules owned by tests/ipsecctl/ (included by the top Makefile.am).
