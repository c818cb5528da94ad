# bench/local.mk: build and test rules owned by bench/ (included by the top Makefile.am).
