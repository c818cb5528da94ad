# mobility/local.mk: libmip6, the Mobile IPv6 home agent's I/O-free core: wire formats (mip6.h) and
# the home agent's rules and binding cache (mip6_ha.h), its errors (mip6_err.h) and home agent
# discovery (mip6_disc.h), Dual Stack Mobile IPv6's IPv4 care-of addresses (mip6_v4.h). It depends on
# nothing but libc.
noinst_LIBRARIES += mobility/libmip6.a
mobility_libmip6_a_SOURCES = mobility/mip6.c mobility/mip6_ha.c mobility/mip6_err.c mobility/mip6_disc.c \
	mobility/mip6_v4.c
noinst_HEADERS += mobility/mip6.h mobility/mip6_ha.h mobility/mip6_err.h mobility/mip6_disc.h \
	mobility/mip6_v4.h
MIP6_LIBS = mobility/libmip6.a
