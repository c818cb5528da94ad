#!/usr/bin/env bash
# tests/build/test_units.sh: systemd-analyze verify on every unit `make install` installs, offline
# (systemd need not be PID 1): the units are installed into a DESTDIR root that also gets the host's
# own units (the targets ours order against) and copies of the host programs our units run besides
# ours (kill, env, swanctl), and verify runs with --root on it, so it also checks that every command
# a unit runs is there. systemd-analyze exits 0 on many errors (an unknown key, a value it cannot
# parse: "..., ignoring"), so any output at all is a failure. Then each unit's exposure
# (`systemd-analyze security --offline=true`, 0 best, 10 worst) must stay at or below its ceiling
# below, so that no change loosens a unit's sandbox without saying so here.
set -u
. "$top_srcdir/tests/build/install_common.sh"

# The exposure each unit has today (systemd 252): lower one when a unit is tightened.
declare -A CEILING=(
	[xipsecd.service]=3.2
	[xipsec-load.service]=1.5
	[xipsec-iked.service]=3.0
	[xipsec-snmpd.service]=1.9
	[xipsec-exporter.service]=1.7
)
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze missing (Debian package systemd)"; exit 77; }
T=$(mktemp -d /tmp/xipsec-units.XXXXXX)
trap 'rm -rf "$T"' EXIT
D="$T/root"
inst_dest "$D"
units=$(cd "$D$systemdsystemunitdir" && ls -- *.service)
[ -n "$units" ] || { echo "FAIL: no units installed in $systemdsystemunitdir"; exit 1; }
mkdir -p "$D/usr/lib/systemd"
[ -e "$D/usr/lib/systemd/system" ] || cp -a /usr/lib/systemd/system "$D/usr/lib/systemd/"
for u in $units; do
	for p in $(grep -E '^Exec[A-Za-z]*=' "$D$systemdsystemunitdir/$u" | sed 's/^[^=]*=[-@:+!]*//; s/ .*//'); do
		case $p in
		"$sbindir"/*) ;;  # ours: installed above
		/*) [ -e "$D$p" ] || { mkdir -p "$D$(dirname "$p")"; cp "$(readlink -f "$p")" "$D$p" 2>/dev/null ||
			{ echo "FAIL: $u runs $p, which this host lacks"; exit 1; }; } ;;
		*) echo "FAIL: $u runs '$p', not an absolute path"; exit 1 ;;
		esac
	done
done
# systemd's search path includes /usr/local/lib/systemd/system and /usr/lib/systemd/system; a unit
# directory outside it (a --prefix elsewhere) is linked into /etc/systemd/system of the root.
case $systemdsystemunitdir in
/etc/systemd/system|/usr/local/lib/systemd/system|/usr/lib/systemd/system|/lib/systemd/system) ;;
*) mkdir -p "$D/etc/systemd/system"
   for u in $units; do cp "$D$systemdsystemunitdir/$u" "$D/etc/systemd/system/$u"; done ;;
esac
rc=0
(cd "$T" && systemd-analyze verify --man=no --root="$D" $units) > "$T/out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] || [ -s "$T/out" ]; then
	echo "FAIL: systemd-analyze verify (exit $rc):"; cat "$T/out"; exit 1
fi
echo "ok: systemd-analyze verify --root: $(echo $units) (no message)"
fail=0
for u in $units; do
	max=${CEILING[$u]-}
	[ -n "$max" ] || { echo "FAIL: $u has no exposure ceiling in $0"; fail=1; continue; }
	(cd "$T" && systemd-analyze security --offline=true --root="$D" --no-pager "$u") > "$T/sec" 2>&1
	score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' "$T/sec")
	[ -n "$score" ] || { echo "FAIL: systemd-analyze security $u:"; cat "$T/sec"; fail=1; continue; }
	if awk -v s="$score" -v m="$max" 'BEGIN { exit !(s > m) }'; then
		echo "FAIL: $u: exposure $score above its ceiling $max:"
		grep '^✗' "$T/sec"
		fail=1
	else
		echo "ok: $u: exposure $score (ceiling $max)"
	fi
done
exit $fail
