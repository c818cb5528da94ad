# ike/local.mk: build and test rules owned by ike/ (included by the top Makefile.am).
