# sadb/local.mk: build and test rules of sadb/ (included by the top Makefile.am).
noinst_LIBRARIES += sadb/libsadb.a
sadb_libsadb_a_SOURCES = sadb/sadb.c sadb/sadb_file.c sadb/sadb_spd.c sadb/sadb_util.c sadb/sadb_int.h
noinst_HEADERS += sadb/sadb.h sadb/sadb_drops.h
# The SADB library is linked by every part; they add $(SADB_LIBS) to their LDADD.
SADB_LIBS = sadb/libsadb.a -lpthread
