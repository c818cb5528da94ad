# systemd/local.mk: the systemd units, made from their .in files with the configured paths
# (sbindir, sysconfdir) substituted at make time (so `make prefix=...` is honoured), installed in
# $(systemdsystemunitdir) (configure --with-systemdsystemunitdir; default $(prefix)/lib/systemd/system).
# xipsec-iked.service only where xipsec-iked is built, xipsec-snmpd.service where xipsec-snmpd is;
# xipsec-exporter.service (ipsecctl metrics --listen) always, as ipsecctl is.
XIPSEC_UNITS = systemd/xipsecd.service systemd/xipsec-load.service systemd/xipsec-exporter.service
if HAVE_STRONGSWAN
XIPSEC_UNITS += systemd/xipsec-iked.service
endif
if HAVE_SNMP
XIPSEC_UNITS += systemd/xipsec-snmpd.service
endif
systemdsystemunit_DATA = $(XIPSEC_UNITS)
EXTRA_DIST += systemd/xipsecd.service.in systemd/xipsec-load.service.in systemd/xipsec-iked.service.in \
	systemd/xipsec-snmpd.service.in systemd/xipsec-exporter.service.in
CLEANFILES += systemd/xipsecd.service systemd/xipsec-load.service systemd/xipsec-iked.service \
	systemd/xipsec-snmpd.service systemd/xipsec-exporter.service

XIPSEC_SUBST = $(AM_V_GEN)$(MKDIR_P) systemd && rm -f $@ $@.tmp && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	    -e 's|@localstatedir[@]|$(localstatedir)|g' $(srcdir)/$@.in > $@.tmp && \
	if grep -n '@[a-z_]*@' $@.tmp; then echo "$@: unsubstituted" >&2; exit 1; fi && \
	chmod a-w $@.tmp && mv $@.tmp $@
systemd/xipsecd.service: $(srcdir)/systemd/xipsecd.service.in Makefile
	$(XIPSEC_SUBST)
systemd/xipsec-load.service: $(srcdir)/systemd/xipsec-load.service.in Makefile
	$(XIPSEC_SUBST)
systemd/xipsec-iked.service: $(srcdir)/systemd/xipsec-iked.service.in Makefile
	$(XIPSEC_SUBST)
systemd/xipsec-snmpd.service: $(srcdir)/systemd/xipsec-snmpd.service.in Makefile
	$(XIPSEC_SUBST)
systemd/xipsec-exporter.service: $(srcdir)/systemd/xipsec-exporter.service.in Makefile
	$(XIPSEC_SUBST)
# The cluster's drop-ins are examples the README has the administrator copy on the two nodes only:
# installed, they would tie every host's keepalived to xipsecd and widen xipsec-iked's sandbox.
EXTRA_DIST += systemd/keepalived.service.d/xipsec.conf systemd/xipsec-iked.service.d/cluster.conf
