# sadb/local.mk: build and test rules owned by sadb/ (included by the top Makefile.am).
