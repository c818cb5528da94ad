# tests/oracle/local.mk: build and test rules owned by tests/oracle/ (included by the top Makefile.am).
