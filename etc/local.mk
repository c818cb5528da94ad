# etc/local.mk: the configuration directory $(sysconfdir)/xipsec (/etc/xipsec with
# --sysconfdir=/etc) and its commented examples: ipsec.conf (manual keys, ipsecctl(8)'s format),
# xipsec.env (the interfaces and options the systemd units pass), iked/swanctl.conf and
# iked/strongswan.conf (xipsec-iked(8)'s --conf-dir). `make install` never overwrites a file already
# there (an administrator's configuration); `make uninstall` removes only files still as shipped.
# The files with secrets are installed mode 0600. iked/ gets swanctl's directories for certificates
# and keys (those for private keys mode 0700), which swanctl --load-all reads. Where xipsec-iked is
# built, cluster/ holds the two-node cluster's examples (README, "Two-node cluster"): keepalived.conf,
# strongswan-ha.conf (the ha plugin's settings) and keepalived's notify script, mode 0755.
xipsecconfdir = $(sysconfdir)/xipsec
XIPSEC_CONF_PUBLIC = etc/xipsec.env etc/iked/strongswan.conf
XIPSEC_CONF_SECRET = etc/ipsec.conf etc/iked/swanctl.conf
XIPSEC_SWANCTL_DIRS = x509 x509ca x509ocsp x509aa x509ac x509crl pubkey
XIPSEC_SWANCTL_KEYDIRS = private rsa ecdsa bliss pkcs8 pkcs12
XIPSEC_CLUSTER_CONF = etc/cluster/keepalived.conf etc/cluster/strongswan-ha.conf
XIPSEC_CLUSTER_EXEC = etc/cluster/xipsec-cluster-notify
EXTRA_DIST += $(XIPSEC_CONF_PUBLIC) $(XIPSEC_CONF_SECRET) $(XIPSEC_CLUSTER_CONF) $(XIPSEC_CLUSTER_EXEC)
if HAVE_STRONGSWAN
XIPSEC_CONF_CLUSTER_DIR = cluster
endif

# install_conf MODE FILES: each etc/F to $(xipsecconfdir)/F unless that exists.
XIPSEC_INSTALL_CONF = for f in $$files; do \
		d='$(DESTDIR)$(xipsecconfdir)'/$${f\#etc/}; \
		if test -e "$$d"; then echo "keeping $$d (already there)"; \
		else echo " $(INSTALL) -m $$mode $$f $$d"; \
			$(INSTALL) -m $$mode '$(srcdir)'/$$f "$$d" || exit 1; fi; \
	done

install-data-local: install-xipsec-conf
install-xipsec-conf:
	$(MKDIR_P) '$(DESTDIR)$(xipsecconfdir)/iked'
	chmod 0755 '$(DESTDIR)$(xipsecconfdir)'
	chmod 0700 '$(DESTDIR)$(xipsecconfdir)/iked'
	@for d in $(XIPSEC_SWANCTL_DIRS) $(XIPSEC_SWANCTL_KEYDIRS); do \
		$(MKDIR_P) '$(DESTDIR)$(xipsecconfdir)/iked/'$$d || exit 1; \
	done
	@for d in $(XIPSEC_SWANCTL_KEYDIRS); do chmod 0700 '$(DESTDIR)$(xipsecconfdir)/iked/'$$d; done
	@mode=0644; files='$(XIPSEC_CONF_PUBLIC)'; $(XIPSEC_INSTALL_CONF)
	@mode=0600; files='$(XIPSEC_CONF_SECRET)'; $(XIPSEC_INSTALL_CONF)
	@if test -n '$(XIPSEC_CONF_CLUSTER_DIR)'; then \
		$(MKDIR_P) '$(DESTDIR)$(xipsecconfdir)/cluster' || exit 1; \
		mode=0644; files='$(XIPSEC_CLUSTER_CONF)'; $(XIPSEC_INSTALL_CONF); \
		mode=0755; files='$(XIPSEC_CLUSTER_EXEC)'; $(XIPSEC_INSTALL_CONF); \
	fi

uninstall-local: uninstall-xipsec-conf
uninstall-xipsec-conf:
	@for f in $(XIPSEC_CONF_PUBLIC) $(XIPSEC_CONF_SECRET) $(XIPSEC_CLUSTER_CONF) $(XIPSEC_CLUSTER_EXEC); do \
		d='$(DESTDIR)$(xipsecconfdir)'/$${f#etc/}; \
		if test -f "$$d" && cmp -s '$(srcdir)'/$$f "$$d"; then echo " rm -f $$d"; rm -f "$$d"; \
		elif test -e "$$d"; then echo "keeping $$d (changed since it was installed)"; fi; \
	done
	-@for d in $(XIPSEC_SWANCTL_DIRS) $(XIPSEC_SWANCTL_KEYDIRS); do \
		rmdir '$(DESTDIR)$(xipsecconfdir)/iked/'$$d 2>/dev/null; \
	done; rmdir '$(DESTDIR)$(xipsecconfdir)/cluster' '$(DESTDIR)$(xipsecconfdir)/iked' \
		'$(DESTDIR)$(xipsecconfdir)' 2>/dev/null; true
.PHONY: install-xipsec-conf uninstall-xipsec-conf
