# ipsecctl/local.mk: ipsecctl, the administration command line (included by the top Makefile.am).
# Its logic lives in ipsecctl/libipsecctl.a so the unit tests (tests/unit/ipsecctl.mk) and the
# configuration fuzzer (tests/ipsecctl/local.mk) link the same parsers the command uses. The
# command adds what only it runs: the SADB writes, `ipsecctl metrics` over the metrics layer
# (metrics/) and `ipsecctl ike`, the VICI client (ike_cmd.c; libvici loaded through metrics/vici_dl.h).
noinst_LIBRARIES += ipsecctl/libipsecctl.a
ipsecctl_libipsecctl_a_SOURCES = \
	ipsecctl/ipsecctl.h \
	ipsecctl/ipsecctl_alg.c \
	ipsecctl/ipsecctl_util.c \
	ipsecctl/ipsecctl_file.c \
	ipsecctl/ipsecctl_json.c \
	ipsecctl/ipsecctl_conf.h \
	ipsecctl/ipsecctl_lex.c \
	ipsecctl/ipsecctl_cursor.c \
	ipsecctl/ipsecctl_selector.c \
	ipsecctl/ipsecctl_parse.c \
	ipsecctl/ipsecctl_parse_sa.c \
	ipsecctl/ipsecctl_parse_mip6.c \
	ipsecctl/ipsecctl_parse_nemo.c \
	ipsecctl/ipsecctl_parse_key.c \
	ipsecctl/ipsecctl_check.c \
	ipsecctl/ipsecctl_print.c \
	ipsecctl/ipsecctl_rt.h ipsecctl/ipsecctl_rt.c \
	ipsecctl/ipsecctl_show.c ipsecctl/ipsecctl_bindings.c ipsecctl/ipsecctl_dpctl.c \
	ipsecctl/ipsecctl_cluster.c \
	ipsecctl/ipsecctl_stats.c \
	ipsecctl/ipsecctl_export.c

sbin_PROGRAMS += ipsecctl/ipsecctl
ipsecctl_ipsecctl_SOURCES = ipsecctl/ipsecctl.c ipsecctl/ipsecctl_cmd.h ipsecctl/ipsecctl_db.c \
	ipsecctl/ipsecctl_load.c ipsecctl/ipsecctl_edit.c ipsecctl/ipsecctl_metrics.c \
	ipsecctl/ike_cmd.h ipsecctl/ike_cmd.c
ipsecctl_ipsecctl_CPPFLAGS = $(AM_CPPFLAGS) $(VICI_CPPFLAGS)
ipsecctl_ipsecctl_LDADD = ipsecctl/libipsecctl.a metrics/libxmetrics.a sadb/libsadb.a $(VICI_LIBS) -lm

dist_man_MANS += ipsecctl/ipsecctl.8
# bash-completion loads a command's completion by the command's name from this directory
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = ipsecctl/completion/ipsecctl
