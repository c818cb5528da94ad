#!/usr/bin/env bash
# tests/ipsecctl/monitor.sh: `ipsecctl monitor` against moving counters. rt-poke plays the
# dataplane and adds 100 packets (10 ICV drops) to one SA every 10 ms while monitor samples: every
# interval must show that SA's packets and ICV drops, none for the idle SA; the plain output is one
# line per interval, and on a terminal the screen is redrawn in place.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON:-/usr/bin/python3}
CTL="$top_builddir/ipsecctl/ipsecctl"
POKE="$top_builddir/tests/ipsecctl/rt-poke"
T=$(mktemp -d /tmp/ipsecctl-monitor.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
DB="$T/sadb"
ctl() { timeout 30 "$CTL" --sadb "$DB" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

ctl init max-sa 16 max-policy 16 || fail init
ctl load "$top_srcdir/tests/ipsecctl/show-basic.in" || fail load

timeout 60 "$POKE" "$DB" 0x1000 --ramp 100 10 500 & pid=$!
# Sample only once the stand-in dataplane is running (a loaded machine may start it late).
for i in $(seq 100); do
	ctl --json --no-times show sa 0x1000 | grep -q '"packets": [1-9]' && break
	sleep 0.1
done
ctl --json monitor --count 3 --interval 0.3 > "$T/json" || fail "monitor --json"
"$PY" - "$T/json" <<'EOP' || fail "monitor --json content"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, "want 3 lines, got %d" % len(lines)
for l in lines:
    o = json.loads(l)
    assert o["sas"] == 4, o
    per = {s["spi_hex"]: s for s in o["per_sa"]}
    busy, idle = per["0x00001000"], per["0x00001001"]
    assert busy["packets"] > 0 and busy["bytes"] == 100 * busy["packets"], busy
    assert idle["packets"] == 0 and idle["drops"] == 0, idle
    assert o["packets"] == busy["packets"] and o["packets_per_s"] > 0, o
    assert o["drops_by_reason"].get("icv", 0) == busy["drops"] > 0, o
print("monitor --json: 3 intervals, packets", [json.loads(l)["packets"] for l in lines])
EOP
ctl monitor --count 2 --interval 0.2 > "$T/plain" || fail "monitor"
[ "$(wc -l < "$T/plain")" = 2 ] || { cat "$T/plain"; fail "plain monitor: want 2 lines"; }
grep -Eqv '^[0-9]{2}:[0-9]{2}:[0-9]{2} sas 4 pkts/s [0-9.]+[kMG]? bits/s [0-9.]+[kMG]? drops/s [0-9.]+' \
	"$T/plain" && { cat "$T/plain"; fail "plain monitor line format"; }
cat "$T/plain"
if command -v script > /dev/null; then
	# On a terminal: home + clear before every redraw, one table per interval.
	timeout 30 script -qec "$CTL --sadb $DB monitor --count 2 --interval 0.2" /dev/null > "$T/tty"
	n=$(grep -o $'\e\[H\e\[J' "$T/tty" | wc -l)
	[ "$n" = 2 ] || fail "tty monitor: want 2 redraws, got $n"
	grep -q '0x00001000' "$T/tty" || fail "tty monitor: no row for SA 0x1000"
	echo "tty monitor: 2 redraws"
else
	echo "script(1) missing: tty redraw not checked"
fi
wait "$pid"; pid=
# Expiry transitions are events: the soft bit, then the hard bit of the idle SA appear between two
# samples each (rt-poke sets them as the SA's expiry owner would).
ctl --json monitor --count 6 --interval 0.5 > "$T/ev" & mpid=$!
sleep 0.75; timeout 10 "$POKE" "$DB" 0x1001 expired=1 || fail "poke expired=1"
sleep 1; timeout 10 "$POKE" "$DB" 0x1001 expired=3 || fail "poke expired=3"
wait "$mpid" || fail "monitor --json (events)"
"$PY" - "$T/ev" <<'EOP' || { cat "$T/ev"; fail "monitor --json expiry events"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
ev = [(e["spi_hex"], e["dir"], e["event"]) for o in lines for e in o["events"]]
assert ev == [("0x00001001", "in", "soft-expired"), ("0x00001001", "in", "hard-expired")], ev
last = {s["spi_hex"]: s for s in lines[-1]["per_sa"]}
assert last["0x00001001"]["expiry"] == "hard" and last["0x00001000"]["expiry"] == "none", last
print("monitor --json: events", ev)
EOP
ctl monitor --count 3 --interval 0.5 > "$T/plain-ev" & mpid=$!
sleep 0.6; timeout 10 "$POKE" "$DB" 0x1000 expired=1 || fail "poke expired=1"
wait "$mpid" || fail "monitor (events)"
grep -q ' SA 0x00001000 out soft-expired' "$T/plain-ev" || { cat "$T/plain-ev"; fail "plain monitor: no event"; }
echo "ok"
