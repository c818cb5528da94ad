#!/usr/bin/env bash
# tests/ipsecctl/fuzz-conf.sh: runs the libFuzzer target fuzz_conf (ipsecctl's configuration
# parser and its -n round trip) for FUZZ_SECONDS (default 30) from the golden inputs as seeds, on a
# scratch corpus removed afterwards. Fails on any crash, sanitizer report or round-trip mismatch.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
F="$top_builddir/tests/ipsecctl/fuzz_conf"
[ -x "$F" ] || { echo "fuzz-conf.sh: $F not built (make tests/ipsecctl/fuzz_conf)"; exit 1; }
T=$(mktemp -d /tmp/ipsecctl-fuzz.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir "$T/corpus" "$T/seeds"
cp "$top_srcdir"/tests/ipsecctl/*.in "$top_srcdir/tests/ipsecctl/base.conf" "$T/seeds/"
cd "$T" || exit 1
secs=${FUZZ_SECONDS:-30}
timeout $((secs + 120)) "$F" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 corpus seeds > "$T/log" 2>&1
rc=$?
tail -15 "$T/log"
if [ "$rc" != 0 ]; then
	echo "fuzz-conf.sh: fuzz_conf failed ($rc)"
	grep -A30 -m1 -E 'ERROR|fuzz_conf:|runtime error' "$T/log"
	ls crash-* leak-* timeout-* 2>/dev/null | while read -r f; do echo "== $f"; od -c "$f" | head -20; done
	exit 1
fi
grep -E '^stat::number_of_executed_units' "$T/log"
