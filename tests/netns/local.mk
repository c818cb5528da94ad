# tests/netns/local.mk: build and test rules owned by tests/netns/ (included by the top Makefile.am).
