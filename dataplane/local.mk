# dataplane/local.mk: build and test rules owned by dataplane/ (included by the top Makefile.am).
