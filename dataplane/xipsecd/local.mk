# dataplane/xipsecd/local.mk: xipsecd, the AF_XDP gateway daemon, and its XDP program.
sbin_PROGRAMS += dataplane/xipsecd/xipsecd
dataplane_xipsecd_xipsecd_SOURCES = dataplane/xipsecd/xipsecd.c dataplane/xipsecd/dp.h \
	dataplane/xipsecd/dp_sa.h dataplane/xipsecd/xdp_shared.h dataplane/xipsecd/dp_xdp.c \
	dataplane/xipsecd/dp_xsk.c dataplane/xipsecd/dp_nl.c dataplane/xipsecd/dp_route.c \
	dataplane/xipsecd/dp_pkt.c dataplane/xipsecd/dp_path.h dataplane/xipsecd/dp_rx.c \
	dataplane/xipsecd/dp_out.c dataplane/xipsecd/dp_in.c dataplane/xipsecd/dp_burst.c \
	dataplane/xipsecd/dp_fwd.c dataplane/xipsecd/dp_local.c dataplane/xipsecd/dp_sa.c \
	dataplane/xipsecd/dp_spd.h dataplane/xipsecd/dp_spd.c dataplane/xipsecd/dp_l3.h \
	dataplane/xipsecd/dp_l3.c \
	dataplane/xipsecd/dp_tun.c dataplane/xipsecd/dp_ctl.c dataplane/xipsecd/dp_frag.h \
	dataplane/xipsecd/dp_frag.c dataplane/xipsecd/dp_seqmark.h dataplane/xipsecd/dp_seqmark.c \
	dataplane/xipsecd/dp_icmp.h dataplane/xipsecd/dp_expire.c dataplane/xipsecd/dp_util.c \
	dataplane/xipsecd/dp_mip6.h dataplane/xipsecd/dp_mip6.c dataplane/xipsecd/dp_mip6_queue.c \
	dataplane/xipsecd/dp_mip6_cfg.c dataplane/xipsecd/dp_mip6_move.c dataplane/xipsecd/dp_mip6_ike.c \
	dataplane/xipsecd/dp_mip6_nemo.c \
	dataplane/xipsecd/dp_mip6_nd.c \
	dataplane/xipsecd/dp_mip6_err.c dataplane/xipsecd/dp_mip6_dad.c \
	dataplane/xipsecd/dp_mip6_brr.c \
	dataplane/xipsecd/dp_mip6_disc.c \
	dataplane/xipsecd/dp_mip6_v4.c dataplane/xipsecd/dp_mip6_v4_path.c \
	dataplane/xipsecd/dp_handoff.c dataplane/xipsecd/dp_cpus.h dataplane/xipsecd/dp_acquire.c \
	dataplane/xipsecd/dp_stats.c dataplane/xipsecd/dp_cluster.h dataplane/xipsecd/dp_cluster.c \
	dataplane/xipsecd/dp_cluster_cfg.c dataplane/xipsecd/dp_cluster_lease.c dataplane/xipsecd/dp_cluster_msg.c \
	dataplane/xipsecd/dp_cluster_seg.c dataplane/xipsecd/dp_cluster_sas.c dataplane/xipsecd/dp_cluster_status.c \
	dataplane/xipsecd/dp_cluster_int.h \
	dataplane/xipsecd/xdp_segment.h dataplane/xipsecd/dp_segment.h dataplane/xipsecd/dp_segment.c
dataplane_xipsecd_xipsecd_CPPFLAGS = $(AM_CPPFLAGS) -DXIPSEC_PKGLIBDIR='"$(pkglibdir)"' $(XDP_CFLAGS) \
	$(URCU_CFLAGS)
dataplane_xipsecd_xipsecd_LDADD = $(ESP_LIBS) $(MIP6_LIBS) sadb/libsadb.a $(XDP_LIBS) $(BPF_LIBS) $(URCU_LIBS)
dist_man_MANS += dataplane/xipsecd/xipsecd.8

# The XDP program: built with clang for BPF (for this host's byte order, so an architecture-dependent
# file: $(pkglibdir), not $(pkgdatadir)). An installed xipsecd loads $(pkglibdir)/xipsec_xdp.o; one
# running from its build tree loads that tree's copy (dp_xdp.c).
xdpobjdir = $(pkglibdir)
xdpobj_DATA = dataplane/xipsecd/xipsec_xdp.o
EXTRA_DIST += dataplane/xipsecd/xdp_prog.bpf.c
CLEANFILES += dataplane/xipsecd/xipsec_xdp.o
dataplane/xipsecd/xipsec_xdp.o: $(srcdir)/dataplane/xipsecd/xdp_prog.bpf.c \
		$(srcdir)/dataplane/xipsecd/xdp_shared.h $(srcdir)/dataplane/xipsecd/xdp_segment.h
	@$(MKDIR_P) dataplane/xipsecd
	$(AM_V_GEN)$(CLANG) $(BPF_CFLAGS) -I$(top_srcdir) -Wall -Werror -c \
		$(srcdir)/dataplane/xipsecd/xdp_prog.bpf.c -o $@
