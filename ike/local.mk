# ike/local.mk: xipsec-iked (libcharon host + SADB kernel-ipsec backend + maxqm), built only when
# configure found the prepared strongSwan source headers (HAVE_STRONGSWAN, doc/platform.md).
#
# strongSwan's config.h is included by ike/swan.h after ours (both define the autoconf package
# macros), never with -include. With that, strongSwan's headers compile clean under the project's
# warning flags (-Wno-unused-parameter is already among them), so ike/ needs no relaxations.
IKE_SWAN_CPPFLAGS = -DXIPSEC_SWAN_CONFIG='"$(SWAN_SRC)/config.h"' \
	-I$(SWAN_SRC)/src/libstrongswan -I$(SWAN_SRC)/src/libcharon
IKE_SWAN_LINKFLAGS = -L/usr/lib/ipsec -Wl,-rpath,/usr/lib/ipsec
IKE_SWAN_LIBS = -lcharon -lstrongswan

EXTRA_DIST += ike/swan.h ike/kernel_sadb.h ike/kernel_sadb_int.h ike/maxqm.h ike/lsan.supp \
	ike/cluster_seg.h ike/cluster_mid.h

# The kernel-ipsec backend, also linked whole into its unit test (tests/unit/ike.mk).
IKE_KERNEL_SADB_SOURCES = ike/kernel_sadb.c ike/kernel_sadb_sa.c ike/kernel_sadb_policy.c \
	ike/kernel_sadb_xlate.c ike/kernel_sadb_acquire.c ike/kernel_sadb_mip6.c ike/kernel_sadb_pool.c \
	ike/kernel_sadb.h ike/kernel_sadb_int.h

if HAVE_STRONGSWAN
sbin_PROGRAMS += ike/xipsec-iked
ike_xipsec_iked_SOURCES = ike/iked.c $(IKE_KERNEL_SADB_SOURCES) ike/maxqm.c ike/maxqm.h ike/swan.h \
	ike/cluster_seg.c ike/cluster_seg.h ike/cluster_mid.c ike/cluster_mid.h
ike_xipsec_iked_CPPFLAGS = $(AM_CPPFLAGS) $(IKE_SWAN_CPPFLAGS) -DXIPSEC_SYSCONFDIR='"$(sysconfdir)"' \
	-DXIPSEC_VERSION='"$(PACKAGE_VERSION)"'
ike_xipsec_iked_LDFLAGS = $(AM_LDFLAGS) $(IKE_SWAN_LINKFLAGS)
ike_xipsec_iked_LDADD = $(SADB_LIBS) $(IKE_SWAN_LIBS)
dist_man_MANS += ike/xipsec-iked.8

endif
