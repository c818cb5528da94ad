# dataplane/local.mk: the dataplane is two things, each built in its own folder: the ESP/AH engine
# library (engine/, with its crypto backends in engine/crypto/) and the xipsecd daemon that runs it
# on AF_XDP sockets (xipsecd/).
include $(srcdir)/dataplane/engine/local.mk
include $(srcdir)/dataplane/xipsecd/local.mk
