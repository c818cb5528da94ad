# dataplane/local.mk: build and test rules owned by dataplane/ (included by the top Makefile.am).

# --- xipsecd begin ---
# xipsecd (the AF_XDP gateway) and its XDP program; owned by the xipsecd helper.
sbin_PROGRAMS += dataplane/xipsecd
dataplane_xipsecd_SOURCES = dataplane/xipsecd.c dataplane/dp.h dataplane/dp_sa.h \
	dataplane/xdp_shared.h dataplane/dp_xdp.c dataplane/dp_xsk.c dataplane/dp_nl.c \
	dataplane/dp_route.c dataplane/dp_pkt.c dataplane/dp_worker.c dataplane/dp_sa.c \
	dataplane/dp_tun.c dataplane/dp_ctl.c dataplane/dp_frag.h dataplane/dp_frag.c \
	dataplane/dp_seqmark.h dataplane/dp_seqmark.c dataplane/dp_icmp.h dataplane/dp_expire.c
dataplane_xipsecd_CPPFLAGS = $(AM_CPPFLAGS) -DPKGDATADIR='"$(pkgdatadir)"' $(XDP_CFLAGS) $(URCU_CFLAGS)
dataplane_xipsecd_LDADD = dataplane/libesp.a sadb/libsadb.a $(XDP_LIBS) $(BPF_LIBS) $(URCU_LIBS) \
	$(CRYPTO_LIBS) $(SODIUM_LIBS) $(IPSEC_MB_LIBS)
dist_man_MANS += dataplane/xipsecd.8

# A small SADB writer for the netns tests, benchmarks and demo (ipsecctl is the real tool).
noinst_PROGRAMS += dataplane/dp_testctl
dataplane_dp_testctl_SOURCES = dataplane/dp_testctl.c
dataplane_dp_testctl_LDADD = sadb/libsadb.a

# The XDP program: built with clang for BPF, installed next to the other data; xipsecd finds the
# build tree's copy through XIPSEC_BUILDDIR first.
pkgdata_DATA += dataplane/xipsec_xdp.o
EXTRA_DIST += dataplane/xdp_prog.bpf.c
CLEANFILES += dataplane/xipsec_xdp.o
dataplane/xipsec_xdp.o: $(srcdir)/dataplane/xdp_prog.bpf.c $(srcdir)/dataplane/xdp_shared.h
	@$(MKDIR_P) dataplane
	$(AM_V_GEN)$(CLANG) $(BPF_CFLAGS) -I$(top_srcdir) -Wall -Werror -c \
		$(srcdir)/dataplane/xdp_prog.bpf.c -o $@
# --- xipsecd end ---

# --- engine begin ---
# libesp: the ESP/AH engine (owned by the engine helper: dataplane/esp*, ah*, replay*, crypto*).
noinst_LIBRARIES += dataplane/libesp.a
dataplane_libesp_a_SOURCES = dataplane/esp.h dataplane/esp_internal.h dataplane/esp_sa.c \
	dataplane/esp_ip.c dataplane/esp_out.c dataplane/esp_in.c dataplane/ah.c dataplane/replay.c \
	dataplane/crypto_openssl.c dataplane/crypto_sodium.c dataplane/crypto_native.c \
	dataplane/crypto_ipsecmb.h
if HAVE_IPSEC_MB
dataplane_libesp_a_SOURCES += dataplane/crypto_ipsecmb.c
endif
dataplane_libesp_a_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS)
# What a program linking libesp.a needs after it.
ESP_LIBS = dataplane/libesp.a $(IPSEC_MB_LIBS) $(CRYPTO_LIBS) $(SODIUM_LIBS)
# --- engine end ---
