#!/usr/bin/env bash
# tests/build/test_journal.sh: when standard error is systemd's journal stream ($JOURNAL_STREAM names
# its device and inode, as systemd sets it for a unit), the programs' own lines start with their
# syslog priority ("<3>" for an error), so that `journalctl -p` can select them; with any other
# standard error (a terminal, a file that is not the one named) they carry no prefix.
set -u
T=$(mktemp -d /tmp/xipsec-journal.XXXXXX)
SADB=/dev/shm/xipsec-journal-test-$$
trap 'rm -rf "$T"; rm -f "$SADB"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
CTL="$top_builddir/ipsecctl/ipsecctl"
DPD="$top_builddir/dataplane/xipsecd/xipsecd"
printf 'esp tunnel from 10.1.0.0/24 to\n' > "$T/bad.conf"

# run OUT CMD...: CMD's standard error to the file OUT, with $JOURNAL_STREAM naming that file
# when JOURNAL=yes, naming another file when JOURNAL=other, unset otherwise
run() {
	local out=$1; shift
	: > "$out"
	case ${JOURNAL:-no} in
	yes) JOURNAL_STREAM=$(stat -c '%d:%i' "$out") "$@" 2>> "$out" ;;
	other) JOURNAL_STREAM=$(stat -c '%d:%i' "$T/bad.conf") "$@" 2>> "$out" ;;
	*) env -u JOURNAL_STREAM "$@" 2>> "$out" ;;
	esac
}

JOURNAL=yes run "$T/ctl.j" "$CTL" -n load "$T/bad.conf"
head -c 3 "$T/ctl.j" | grep -qx '<3>' && echo "ok: ipsecctl's error starts with <3> on the journal" ||
	bad "ipsecctl on the journal: $(head -1 "$T/ctl.j")"
for j in no other; do
	JOURNAL=$j run "$T/ctl.$j" "$CTL" -n load "$T/bad.conf"
	grep -q '^<' "$T/ctl.$j" && bad "ipsecctl with JOURNAL_STREAM=$j: $(head -1 "$T/ctl.$j")"
	grep -q "bad.conf:1:" "$T/ctl.$j" && echo "ok: ipsecctl's error has no prefix ($j)" ||
		bad "ipsecctl ($j) did not report the error: $(head -1 "$T/ctl.$j")"
done

if [ "$(id -u)" = 0 ] && [ -x "$DPD" ]; then
	# an interface that does not exist: xipsecd logs an error and exits
	JOURNAL=yes run "$T/dp.j" timeout 20 "$DPD" --inside xjt-none0 --outside xjt-none1 --sadb "$SADB"
	grep -q '^<3>.*xjt-none0' "$T/dp.j" && echo "ok: xipsecd's error starts with <3> on the journal" ||
		bad "xipsecd on the journal: $(cat "$T/dp.j")"
	JOURNAL=no run "$T/dp.n" timeout 20 "$DPD" --inside xjt-none0 --outside xjt-none1 --sadb "$SADB"
	grep -q '^<' "$T/dp.n" && bad "xipsecd without the journal: $(head -1 "$T/dp.n")"
	grep -q 'xjt-none0' "$T/dp.n" && echo "ok: xipsecd's error has no prefix off the journal" ||
		bad "xipsecd did not report the missing interface: $(cat "$T/dp.n")"
else
	echo "note: xipsecd part skipped (needs root and the build's xipsecd)"
fi
exit $fail
