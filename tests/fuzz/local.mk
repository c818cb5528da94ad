# tests/fuzz/local.mk: build and test rules owned by tests/fuzz/ (included by the top Makefile.am).
