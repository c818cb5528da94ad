#!/usr/bin/env bash
# tests/netns/test_dp_seqmark.sh: a manually keyed AES-GCM tunnel never sends a sequence number (its
# nonce) twice under its key across a flush + load of the same configuration and across a "reboot"
# (the SADB file removed, every daemon restarted): the numbers are leased from a mark in the state
# directory. Checked in a capture between the gateways: every (SPI, sequence) at most once. Small
# leases (XIPSEC_SEQ_LEASE) make xipsecd extend them many times during the run. Then: the state
# files are ours (0600 in a 0700 directory) and hold no key; a lost mark (the file removed) keeps
# the SA from sending, its packets dropped as seq_lease and the log naming the risk, until the
# operator loads it with --new-keys; an SA another writer put in without SADB_SAF_SEQ_PERSIST
# (dp_testctl ... flags 0) is held to a lease all the same, so with no mark it sends nothing; and
# without a usable state directory `ipsecctl load` refuses the SA with a message naming the risk
# and changes nothing. The flush + load and the reboot lose no packet of the inbound windows either:
# their ceilings come down to the exact tops when xipsecd lets go of an SA (dp_seqmark.c).
. "$top_srcdir/tests/netns/lib.sh"
xt_require tcpdump tshark ping
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

export XIPSEC_STATE_DIR="$XT_DISK_DIR/state"
export XIPSEC_SEQ_LEASE=16
K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
dp_topo 1
cat > "$XT_DIR/gw1.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x1000:0x1001 enc aes128gcm16 key $K1:$K2
CONF
cat > "$XT_DIR/gw2.conf" <<CONF
esp tunnel from 10.2.0.0/24 to 10.1.0.0/24 local 192.0.2.2 peer 192.0.2.1 \\
    spi 0x1001:0x1000 enc aes128gcm16 key $K2:$K1
CONF
load() { # load [-F]: (flush and) load both gateways' files
	local n
	for n in 1 2; do
		timeout 30 "$CTL" --sadb "$(dp_sadb_of "gw$n")" "$@" -f "$XT_DIR/gw$n.conf" ||
			xt_fail "ipsecctl $* -f gw$n.conf"
	done
}
traffic() { # traffic PHASE: 30 pings each way must get through
	xt_exec h1 ping -c 30 -i 0.02 -W 2 10.2.0.2 >"$XT_DIR/ping-$1.out" ||
		{ cat "$XT_DIR/ping-$1.out" >&2; xt_fail "$1: ping h1 -> h2"; }
	xt_exec h2 ping -c 30 -i 0.02 -W 2 10.1.0.2 >"$XT_DIR/ping2-$1.out" ||
		{ cat "$XT_DIR/ping2-$1.out" >&2; xt_fail "$1: ping h2 -> h1"; }
}

load --new-keys
dp_start gw1
dp_start gw2
dp_capture_start seq sw s1
traffic first
# flush + load of the same file while xipsecd runs: new SA instances, same keys
load -F
sleep 0.2
traffic reload
# a reboot: the daemons stop, /dev/shm is cleared, everything starts again
xt_stop xipsecd-gw1
xt_stop xipsecd-gw2
rm -f "$(dp_sadb_of gw1)" "$(dp_sadb_of gw2)"
load
dp_start gw1
dp_start gw2
traffic reboot
dp_capture_stop seq
for n in 1 2; do timeout 30 "$CTL" --sadb "$(dp_sadb_of "gw$n")" --json show sa > "$XT_DIR/sa$n.json"; done
xt_log "drops: $("$PYTHON" -c "import json,sys
for p in sys.argv[1:]:
  d=json.load(open(p)); s=d['sas'] if isinstance(d,dict) else d
  print([(x['spi_hex'], {k:v for k,v in x['counters']['drops'].items() if v}) for x in s])" "$XT_DIR/sa1.json" "$XT_DIR/sa2.json")"
grep -h "transmitted" "$XT_DIR"/ping*.out >&2

timeout 120 tshark -r "$XT_DIR/seq.pcap" -Y esp -T fields -e esp.spi -e esp.sequence > "$XT_DIR/seq.txt"
for spi in 0x00001000 0x00001001; do
	n=$(grep -c "^$spi" "$XT_DIR/seq.txt")
	# 180 sent (every ping got its reply); the capture may miss a few while tcpdump starts
	[ "$n" -ge 150 ] || xt_fail "SPI $spi: $n ESP packets in the capture (expected about 180)"
	xt_log "SPI $spi: $n packets, sequence numbers $(grep "^$spi" "$XT_DIR/seq.txt" | cut -f2 | sort -n | sed -n '1p;$p' | tr '\n' ' ')"
done
dup=$(sort "$XT_DIR/seq.txt" | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "(SPI, sequence) sent twice under one key: $dup"

# The state: one file per outbound key, ours, holding a mark and no key material.
[ "$(stat -c '%a %u' "$XIPSEC_STATE_DIR")" = "700 $(id -u)" ] || xt_fail "state directory: $(stat -c '%a %u' "$XIPSEC_STATE_DIR")"
n=0
for f in "$XIPSEC_STATE_DIR"/*.seq; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	[ "$(stat -c '%a %u' "$f")" = "600 $(id -u)" ] || xt_fail "$f: mode/owner $(stat -c '%a %u' "$f")"
	grep -qE '^xipsec-seqmark 1 [0-9]+$' "$f" || xt_fail "$f: $(cat "$f")"
	for k in "$K1" "$K2"; do
		grep -qi "${k#0x}" "$f" && xt_fail "$f holds key bytes"
	done
done
[ "$n" -eq 2 ] || xt_fail "$n state files (expected 2: one per outbound key)"
! grep -rqi -e "${K1#0x}" -e "${K2#0x}" "$XIPSEC_STATE_DIR" || xt_fail "a key in the state directory"

# A lost mark: gw1's removed, gw1 "rebooted" and loaded as usual. Its outbound SA sends nothing.
xt_stop xipsecd-gw1
rm -f "$(dp_sadb_of gw1)"
rm -f "$XIPSEC_STATE_DIR"/*.seq
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" -f "$XT_DIR/gw1.conf" || xt_fail "load gw1 after the mark was lost"
dp_start gw1
if xt_exec h1 ping -c 3 -i 0.2 -W 1 10.2.0.2 >/dev/null; then
	xt_fail "gw1 sent under a key whose mark was lost"
fi
grep -q "spi 0x0000100[01].*no sequence mark.*--new-keys" "$XT_DIR/xipsecd-gw1.log" ||
	{ tail -5 "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "xipsecd did not say why the SA sends nothing"; }
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" --json show sa > "$XT_DIR/lost.json"
[ "$(dp_json "$XT_DIR/lost.json" "sum(x['counters']['drops'].get('seq_lease', 0) for x in (j['sas'] if isinstance(j, dict) else j))")" -gt 0 ] ||
	xt_fail "the refused SA's packets are not counted as seq_lease drops"
# The operator says the key is new: it sends again, from 1. The key was in fact used here, and
# gw2's window, held above every number it accepted under it (dp_seqmark.c), refuses those numbers
# as replays: a key said new must be new, or the peer drops its packets (never accepts them twice).
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" --new-keys -F -f "$XT_DIR/gw1.conf" || xt_fail "load --new-keys"
sleep 0.3
xt_exec h1 ping -c 3 -i 0.2 -W 1 10.2.0.2 >/dev/null || true
for n in 1 2; do timeout 30 "$CTL" --sadb "$(dp_sadb_of "gw$n")" --json show sa > "$XT_DIR/new$n.json"; done
sas='(j["sas"] if isinstance(j, dict) else j)'
[ "$(dp_json "$XT_DIR/new1.json" "sum(x['counters']['packets'] for x in $sas if x['spi_hex'] == '0x00001000')")" -ge 3 ] ||
	xt_fail "gw1 did not send after load --new-keys"
[ "$(dp_json "$XT_DIR/new2.json" "sum(x['counters']['drops'].get('replay', 0) + x['counters']['drops'].get('replay_old', 0) for x in $sas if x['spi_hex'] == '0x00001000')")" -ge 3 ] ||
	xt_fail "gw2 accepted numbers it had accepted before under the same key"
xt_log "lost mark: refused until --new-keys; the peer refuses the repeated numbers"

# Another writer's counter-mode SA without SADB_SAF_SEQ_PERSIST: leased all the same, so with no
# mark for its key it sends nothing and xipsecd says why.
"$DP_TESTCTL" "$(dp_sadb_of gw1)" sa out 0x2000 esp tunnel 192.0.2.1 192.0.2.2 reqid 77 \
	enc aes-gcm-16 "$(dp_key 0x2000 20)" flags 0 || xt_fail "dp_testctl sa (flags 0)"
for i in $(seq 50); do grep -q "spi 0x00002000.*no sequence mark" "$XT_DIR/xipsecd-gw1.log" && break; sleep 0.1; done
grep -q "spi 0x00002000.*no sequence mark" "$XT_DIR/xipsecd-gw1.log" ||
	{ tail -5 "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "xipsecd took a counter-mode SA without a lease"; }

# Without a usable state directory the SA is refused, and nothing changes.
before=$(timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" show info)
for bad in "$XT_DIR/nothere/state" "$XT_DIR/wide"; do
	mkdir -p "$XT_DIR/wide" && chmod 0755 "$XT_DIR/wide"
	if XIPSEC_STATE_DIR=$bad timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" -F -f "$XT_DIR/gw1.conf" \
		2>"$XT_DIR/refused.err"; then
		xt_fail "ipsecctl load accepted a manual GCM SA without a usable state directory ($bad)"
	fi
	grep -q "gw1.conf:1:.*nonces again under the same key" "$XT_DIR/refused.err" ||
		{ cat "$XT_DIR/refused.err" >&2; xt_fail "refusal message does not name the risk"; }
	grep -q "$bad" "$XT_DIR/refused.err" || { cat "$XT_DIR/refused.err" >&2; xt_fail "refusal message does not name $bad"; }
	grep -q "nothing was changed" "$XT_DIR/refused.err" || xt_fail "no 'nothing was changed'"
	[ "$(timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" show info)" = "$before" ] || xt_fail "the SADB changed"
done
xt_log "refused: $(head -c 300 "$XT_DIR/refused.err")"
dp_finish
exit 0
