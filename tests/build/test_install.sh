#!/usr/bin/env bash
# tests/build/test_install.sh: `make install DESTDIR=...` installs exactly the product (the three
# programs, the SNMP subagent and its MIB when built, the XDP object where the installed xipsecd looks for it, the man pages, ipsecctl's bash completion, the commented
# configuration examples with their modes, the systemd units with every path substituted) and no test
# or benchmark program; a second install keeps a configuration file the administrator changed, and
# `make uninstall` removes everything else.
set -u
. "$top_srcdir/tests/build/install_common.sh"
T=$(mktemp -d /tmp/xipsec-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
D="$T/root"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

inst_dest "$D"
want=(
	"$sbindir/ipsecctl" "$sbindir/xipsecd"
	"$pkglibdir/xipsec_xdp.o"
	"$mandir/man8/ipsecctl.8" "$mandir/man8/xipsecd.8"
	"$datadir/bash-completion/completions/ipsecctl"
	"$sysconfdir/xipsec/ipsec.conf" "$sysconfdir/xipsec/xipsec.env"
	"$sysconfdir/xipsec/iked/swanctl.conf" "$sysconfdir/xipsec/iked/strongswan.conf"
	"$systemdsystemunitdir/xipsecd.service" "$systemdsystemunitdir/xipsec-load.service"
	"$systemdsystemunitdir/xipsec-exporter.service"
)
[ "$have_strongswan" = yes ] &&
	want+=("$sbindir/xipsec-iked" "$mandir/man8/xipsec-iked.8" "$systemdsystemunitdir/xipsec-iked.service"
	       "$sysconfdir/xipsec/cluster/keepalived.conf" "$sysconfdir/xipsec/cluster/strongswan-ha.conf"
	       "$sysconfdir/xipsec/cluster/xipsec-cluster-notify")
[ "$have_snmp" = yes ] &&
	want+=("$sbindir/xipsec-snmpd" "$mandir/man8/xipsec-snmpd.8" "$datadir/snmp/mibs/XIPSEC-MIB.txt"
	       "$systemdsystemunitdir/xipsec-snmpd.service"
	       "$pkgdatadir/mibs/ietf/SNMPv2-SMI.txt" "$pkgdatadir/mibs/ietf/SNMPv2-TC.txt"
	       "$pkgdatadir/mibs/ietf/SNMPv2-CONF.txt" "$pkgdatadir/mibs/ietf/HCNUM-TC.txt"
	       "$pkgdatadir/mibs/ietf/INET-ADDRESS-MIB.txt"
	       "$pkgdatadir/mibs/ietf/README")
printf '%s\n' "${want[@]}" | sort > "$T/want"
(cd "$D" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) > "$T/got"
if diff -u "$T/want" "$T/got" > "$T/diff"; then
	echo "ok: installed exactly ${#want[@]} files"
else
	bad "installed files differ from the expected list (- missing, + unexpected):"; sed -n '3,$p' "$T/diff"
fi

for f in ipsec.conf iked/swanctl.conf; do
	m=$(stat -c %a "$D$sysconfdir/xipsec/$f" 2>/dev/null)
	[ "$m" = 600 ] && echo "ok: $f mode 600 (it holds keys)" || bad "$f has mode $m, want 600"
done
m=$(stat -c %a "$D$sysconfdir/xipsec/iked" 2>/dev/null)
[ "$m" = 700 ] && echo "ok: iked/ mode 700" || bad "iked/ has mode $m, want 700"
for d in x509 x509ca pubkey private rsa pkcs12; do
	[ -d "$D$sysconfdir/xipsec/iked/$d" ] || bad "no directory iked/$d for swanctl"
done
m=$(stat -c %a "$D$sysconfdir/xipsec/iked/private" 2>/dev/null)
[ "$m" = 700 ] && echo "ok: iked/private mode 700" || bad "iked/private has mode $m, want 700"
if [ "$have_strongswan" = yes ]; then
	[ -x "$D$sysconfdir/xipsec/cluster/xipsec-cluster-notify" ] &&
		echo "ok: cluster/xipsec-cluster-notify is executable (keepalived runs it)" ||
		bad "cluster/xipsec-cluster-notify is not executable"
fi
for p in ipsecctl xipsecd; do
	[ -x "$D$sbindir/$p" ] || bad "$sbindir/$p is not executable"
done

# The installed xipsecd loads the installed XDP program (not the build tree's).
help=$("$D$sbindir/xipsecd" --help)
grep -qF "$pkglibdir/xipsec_xdp.o" <<<"$help" && echo "ok: xipsecd's default XDP program is $pkglibdir/xipsec_xdp.o" ||
	bad "xipsecd --help does not name $pkglibdir/xipsec_xdp.o: $(grep xdp-obj <<<"$help")"
[ "$have_strongswan" != yes ] || "$D$sbindir/xipsec-iked" --help | grep -qF "$sysconfdir/xipsec/iked" &&
	echo "ok: xipsec-iked's default --conf-dir is $sysconfdir/xipsec/iked" ||
	bad "xipsec-iked --help does not name $sysconfdir/xipsec/iked"

# Units: every placeholder substituted; what they run and read is installed.
for u in "$D$systemdsystemunitdir"/*.service; do
	n=$(basename "$u")
	if grep -n '@[a-z_]*@' "$u"; then bad "$n: unsubstituted placeholders"; fi
	while read -r path; do
		case $path in
		/usr/sbin/swanctl) ;;   # strongSwan's (xipsec-iked.service reloads with it): not ours, even with --prefix=/usr
		"$sbindir"/*|"$sysconfdir"/*) [ -e "$D$path" ] || bad "$n names $path, which is not installed" ;;
		esac
	done < <(grep -E '^(Exec[A-Za-z]*|EnvironmentFile)=' "$u" | sed 's/^[^=]*=-\{0,1\}//' | tr ' ' '\n' | grep '^/')
	grep -q "^EnvironmentFile=$sysconfdir/xipsec/xipsec.env$" "$u" || bad "$n does not read $sysconfdir/xipsec/xipsec.env"
done
echo "ok: units checked"

# A second install keeps what the administrator changed; uninstall removes the rest.
echo "# changed" >> "$D$sysconfdir/xipsec/ipsec.conf"
inst_dest "$D"
grep -q "^# changed$" "$D$sysconfdir/xipsec/ipsec.conf" && echo "ok: a changed ipsec.conf is kept" ||
	bad "make install overwrote a changed ipsec.conf"
$MAKE -s --no-print-directory -C "$top_builddir" uninstall DESTDIR="$D" > "$T/uninstall.log" 2>&1 ||
	{ cat "$T/uninstall.log"; bad "make uninstall"; }
left=$(cd "$D" && find . \( -type f -o -type l \) | sed 's|^\.||')
[ "$left" = "$sysconfdir/xipsec/ipsec.conf" ] && echo "ok: uninstall left only the changed ipsec.conf" ||
	bad "after uninstall: $(echo $left)"
exit $fail
