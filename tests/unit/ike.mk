# tests/unit/ike.mk: owned by its part; appended to the lists in the top Makefile.am.
