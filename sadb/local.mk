# sadb/local.mk: build and test rules of sadb/ (included by the top Makefile.am).
noinst_LIBRARIES += sadb/libsadb.a
# The library's sources, also compiled on their own by bench/sadb.mk and the clang fuzz builds.
SADB_LIB_SRCS = sadb/sadb_seg.c sadb/sadb_read.c sadb/sadb_hash.c sadb/sadb_journal.c sadb/sadb_txn.c \
	sadb/sadb_hold.c sadb/sadb_runtime.c sadb/sadb_sa.c sadb/sadb_policy.c sadb/sadb_spd.c \
	sadb/sadb_spd_build.c sadb/sadb_file.c sadb/sadb_util.c sadb/sadb_home.c \
	sadb/sadb_acquire.c
# The counters view (monitoring's key-less copy) is built on the reader API only.
SADB_LIB_SRCS += sadb/sadb_stats.c
sadb_libsadb_a_SOURCES = $(SADB_LIB_SRCS) sadb/sadb_int.h sadb/sadb_spd.h
noinst_HEADERS += sadb/sadb.h sadb/sadb_drops.h sadb/sadb_acquire.h sadb/sadb_stats.h
# The SADB library is linked by every part; they add $(SADB_LIBS) to their LDADD.
SADB_LIBS = sadb/libsadb.a -lpthread
