#!/usr/bin/env bash
# tests/ipsecctl/reload.sh: `ipsecctl reload FILE`, what `systemctl reload xipsecd` runs. The SADB's
# manually keyed SAs and policies become exactly the file's in one transaction: an SA the file still
# has with the same keys keeps its runtime state (rt-poke plays the dataplane that wrote it), one with
# a new key starts over, one the file dropped goes; IKE's entries (dp_testctl ... ike ID) stay, even
# past a flush statement; a file with an error, or one that would take an IKE SA's identity,
# changes nothing; reloading an unchanged file changes nothing either (the generation stays).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON:-/usr/bin/python3}
CTL="$top_builddir/ipsecctl/ipsecctl"
POKE="$top_builddir/tests/ipsecctl/rt-poke"
TESTCTL="$top_builddir/tests/tools/dp_testctl"
T=$(mktemp -d /var/tmp/ipsecctl-reload.XXXXXX) # a disk: a state directory on tmpfs is refused
trap 'rm -rf "$T"' EXIT
DB="$T/sadb"
export XIPSEC_STATE_DIR="$T/state"
ctl() { timeout 30 "$CTL" --sadb "$DB" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
gen() { ctl --json show info | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["info"]["generation"])'; }
# sa SPI FIELD: a field of the SA's JSON (counters.FIELD for runtime ones), "absent" without the SA
sa() {
	ctl --json show sa | "$PY" -c '
import json, sys
spi, field = int(sys.argv[1], 0), sys.argv[2]
for s in json.load(sys.stdin)["sas"]:
    if s["spi"] == spi:
        v = s
        for k in field.split("."):
            v = v[k]
        print(v)
        break
else:
    print("absent")' "$1" "$2"
}
expect() { # expect WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	echo "ok: $1 = $3"
}
npol() { ctl --json show policy | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["policies"]))'; }

tunnel() { # tunnel N SPI KEYBYTE [options]: a tunnel between 10.1.N.0/24 and 10.2.N.0/24
	local n=$1 spi=$2 k=$3; shift 3
	printf 'esp tunnel from 10.1.%s.0/24 to 10.2.%s.0/24 local 192.0.2.1 peer 192.0.2.2 \\\n' "$n" "$n"
	printf '    spi %s:%s enc aes128gcm16 %s \\\n' "$spi" "$((spi + 1))" "$*"
	printf '    key 0x%s%s:0x%s%s\n' "$k" 0102030405060708090a0b0c0d0e0f10111213 \
		"$k" 2122232425262728292a2b2c2d2e2f30313233
}
{ tunnel 1 0x1000 a1; tunnel 2 0x2000 a2; tunnel 4 0x4000 a4; } > "$T/a.conf"
{ echo flush; tunnel 1 0x1000 a1; tunnel 2 0x2000 b2; tunnel 3 0x3000 a3; } > "$T/b.conf"

ctl init max-sa 64 max-policy 64 || fail init
ctl -v reload "$T/a.conf" 2> "$T/err" || { cat "$T/err"; fail "reload a.conf into an empty SADB"; }
grep -q "SAs: 0 kept, 0 updated, 6 added (0 with a new key), 0 removed; policies: 0 kept, 6 added, 0 removed" "$T/err" ||
	{ cat "$T/err"; fail "first reload's report"; }
expect "policies after the first reload" "$(npol)" 6

# what xipsec-iked would have installed: an SA and a policy of IKE SA 5
timeout 30 "$TESTCTL" "$DB" sa out 0xc0000001 esp tunnel 192.0.2.1 192.0.2.3 reqid 77 \
	enc aes-gcm-16 5152535455565758595a5b5c5d5e5f6061626364 ike 5 >/dev/null || fail "IKE SA"
timeout 30 "$TESTCTL" "$DB" policy out protect 10.1.9.0/24 10.3.0.0/24 reqid 77 \
	tunnel 192.0.2.1 192.0.2.3 ike 5 >/dev/null || fail "IKE policy"
# the dataplane's state of three SAs
timeout 10 "$POKE" "$DB" 0x1000 packets=100 seq=500 || fail rt-poke
timeout 10 "$POKE" "$DB" 0x1001 packets=90 top=77 || fail rt-poke
timeout 10 "$POKE" "$DB" 0x2000 packets=50 seq=60 || fail rt-poke

g=$(gen)
ctl -v reload "$T/a.conf" 2> "$T/err" || { cat "$T/err"; fail "reload of the same file"; }
expect "generation after reloading the same file" "$(gen)" "$g"
grep -q "SAs: 6 kept, 0 updated, 0 added" "$T/err" || { cat "$T/err"; fail "same file's report"; }

ctl -n reload "$T/b.conf" > "$T/n.out" 2>&1 || { cat "$T/n.out"; fail "-n reload b.conf"; }
expect "generation after -n reload" "$(gen)" "$g"

ctl -v reload "$T/b.conf" 2> "$T/err" || { cat "$T/err"; fail "reload b.conf"; }
grep -q "b.conf:1:1: note: flush ignored" "$T/err" || { cat "$T/err"; fail "no note about the flush"; }
grep -q "SAs: 2 kept, 0 updated, 4 added (2 with a new key), 2 removed; policies: 4 kept, 2 added, 2 removed" "$T/err" ||
	{ cat "$T/err"; fail "b.conf's report"; }
expect "0x1000 packets (same key: kept)" "$(sa 0x1000 counters.packets)" 100
expect "0x1000 sequence numbers reserved" "$(sa 0x1000 counters.seq_reserved)" 500
expect "0x1001 replay top" "$(sa 0x1001 counters.replay.top)" 77
expect "0x2000 packets (new key: starts over)" "$(sa 0x2000 counters.packets)" 0
expect "0x2000 sequence numbers reserved" "$(sa 0x2000 counters.seq_reserved)" 0
expect "0x3000 (new in the file)" "$(sa 0x3000 dir)" out
expect "0x4000 (gone from the file)" "$(sa 0x4000 dir)" absent
expect "0x4001 (gone from the file)" "$(sa 0x4001 dir)" absent
expect "IKE's SA" "$(sa 0xc0000001 ike_id)" 5
expect "policies (6 of the file, 1 of IKE)" "$(npol)" 7

# a change that keeps the keys: updated in place, state kept
{ tunnel 1 0x1000 a1 replay 64; tunnel 2 0x2000 b2; tunnel 3 0x3000 a3; } > "$T/c.conf"
ctl -v reload "$T/c.conf" 2> "$T/err" || { cat "$T/err"; fail "reload c.conf"; }
grep -q "SAs: 4 kept, 2 updated, 0 added" "$T/err" || { cat "$T/err"; fail "c.conf's report"; }
expect "0x1001 replay window (updated)" "$(sa 0x1001 replay_window)" 64
expect "0x1001 replay top (kept)" "$(sa 0x1001 counters.replay.top)" 77
expect "0x1000 packets (kept)" "$(sa 0x1000 counters.packets)" 100

# all or nothing: an error anywhere, or an IKE SA's identity, changes nothing
g=$(gen)
{ tunnel 5 0x5000 a5; echo "esp tunnel from 10.1.6.0/24 bogus"; } > "$T/bad.conf"
if ctl reload "$T/bad.conf" 2> "$T/err"; then fail "a bad file was accepted"; fi
grep -q "bad.conf:4:29: unexpected .bogus." "$T/err" && grep -q "nothing was changed" "$T/err" || { cat "$T/err"; fail "bad file's message"; }
{ cat "$T/c.conf"
  echo "sa esp tunnel from 192.0.2.1 to 192.0.2.3 spi 0xc0000001 out enc aes128gcm16 key 0x7172737475767778797a7b7c7d7e7f8081828384"
} > "$T/ike.conf"
if ctl reload "$T/ike.conf" 2> "$T/err"; then fail "a file taking an IKE SA's identity was accepted"; fi
grep -q "already exists in the SADB (negotiated by IKE)" "$T/err" || { cat "$T/err"; fail "IKE collision message"; }
expect "generation after the refused files" "$(gen)" "$g"
expect "0x5000 (from the refused file)" "$(sa 0x5000 dir)" absent

# an empty file removes every manual entry, and nothing of IKE's
ctl -v reload "$top_srcdir/etc/ipsec.conf" 2> "$T/err" || { cat "$T/err"; fail "reload of the shipped (empty) ipsec.conf"; }
expect "IKE's SA after an empty file" "$(sa 0xc0000001 ike_id)" 5
expect "policies after an empty file (IKE's)" "$(npol)" 1
expect "0x1000 after an empty file" "$(sa 0x1000 dir)" absent

# reload tells its entries apart by ike_id 0: a file entry with an IKE id is refused
echo "sa esp tunnel from 192.0.2.1 to 192.0.2.3 spi 0x7000 out enc aes128gcm16 key 0x9192939495969798999a9b9c9d9e9fa0a1a2a3a4 ikeid 9" > "$T/ikeid.conf"
if ctl reload "$T/ikeid.conf" 2> "$T/err"; then fail "reload took an entry with an IKE id"; fi
grep -q "ikeid.conf:1:1: reload: ikeid marks an entry as IKE's" "$T/err" || { cat "$T/err"; fail "ikeid message"; }
expect "0x7000 (refused)" "$(sa 0x7000 dir)" absent

# -F makes no sense with reload
if ctl -F reload "$T/a.conf" 2>/dev/null; then fail "-F reload was accepted"; fi
echo "reload: all checks passed"
