# tests/unit/local.mk: build and test rules owned by tests/unit/ (included by the top Makefile.am).
