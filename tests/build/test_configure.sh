#!/usr/bin/env bash
# tests/build/test_configure.sh: configure fails, naming the Debian package to install, when a library
# it needs is missing. Each missing library is simulated by a pkg-config wrapper that hides one
# module (or, for intel-ipsec-mb, by a compiler include path with an empty header directory). The
# optional Net-SNMP agent library only warns unless asked for.
set -u
tmp=$(mktemp -d /tmp/xipsec-conftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0

hide_pkg() { # hide_pkg MODULE: a pkg-config that says MODULE is not installed
	cat > "$tmp/pkg-config" <<W
#!/bin/sh
for a in "\$@"; do case "\$a" in $1|$1\ *) exit 1;; esac; done
exec /usr/bin/pkg-config "\$@"
W
	chmod +x "$tmp/pkg-config"
}

expect() { # expect MODULE PACKAGE
	hide_pkg "$1"
	rm -rf "$tmp/b"; mkdir "$tmp/b"
	if (cd "$tmp/b" && PKG_CONFIG="$tmp/pkg-config" "$top_srcdir/configure" >out 2>&1); then
		echo "FAIL: configure succeeded with $1 hidden"; fail=1; return
	fi
	if grep -q "install the Debian package $2" "$tmp/b/out"; then
		echo "ok: without $1, configure says: $(grep -o "error:.*" "$tmp/b/out" | head -1)"
	else
		echo "FAIL: without $1, configure did not name $2:"; tail -3 "$tmp/b/out"; fail=1
	fi
}

expect libsodium libsodium-dev
expect libxdp libxdp-dev
expect cmocka libcmocka-dev

# intel-ipsec-mb: a header-less include dir makes the header check fail.
rm -rf "$tmp/b"; mkdir -p "$tmp/b" "$tmp/inc"
: > "$tmp/inc/intel-ipsec-mb.h"
if (cd "$tmp/b" && "$top_srcdir/configure" CPPFLAGS="-I$tmp/inc -DFORCE_FAIL" ac_cv_header_intel_ipsec_mb_h=no >out 2>&1); then
	echo "FAIL: configure succeeded without intel-ipsec-mb"; fail=1
elif grep -q "libipsec-mb-dev" "$tmp/b/out"; then
	echo "ok: without intel-ipsec-mb, configure names libipsec-mb-dev"
else
	echo "FAIL: no package named for intel-ipsec-mb"; tail -3 "$tmp/b/out"; fail=1
fi
# Net-SNMP is optional: without it configure goes on (naming the package) and leaves xipsec-snmpd
# out; asked for with --with-snmp, its absence is an error naming the package.
hide_pkg netsnmp-agent
rm -rf "$tmp/b"; mkdir "$tmp/b"
if ! (cd "$tmp/b" && PKG_CONFIG="$tmp/pkg-config" "$top_srcdir/configure" >out 2>&1); then
	echo "FAIL: configure failed without Net-SNMP:"; tail -3 "$tmp/b/out"; fail=1
elif grep -q "xipsec-snmpd will not be built (install libsnmp-dev)" "$tmp/b/out" &&
     grep -q "snmp (xipsec-snmpd): no" "$tmp/b/out" && grep -q "^HAVE_SNMP_TRUE='#'" "$tmp/b/config.log"; then
	echo "ok: without Net-SNMP, configure leaves xipsec-snmpd out and names libsnmp-dev"
else
	echo "FAIL: without Net-SNMP:"; grep -i snmp "$tmp/b/out"; fail=1
fi
rm -rf "$tmp/b"; mkdir "$tmp/b"
if (cd "$tmp/b" && PKG_CONFIG="$tmp/pkg-config" "$top_srcdir/configure" --with-snmp >out 2>&1); then
	echo "FAIL: configure --with-snmp succeeded without Net-SNMP"; fail=1
elif grep -q "install the Debian package libsnmp-dev" "$tmp/b/out"; then
	echo "ok: configure --with-snmp without Net-SNMP names libsnmp-dev"
else
	echo "FAIL: configure --with-snmp did not name libsnmp-dev:"; tail -3 "$tmp/b/out"; fail=1
fi
exit $fail
