# tools/local.mk: build and test rules owned by tools/ (included by the top Makefile.am).
