#!/usr/bin/env bash
# tests/netns/test_mip6_refresh.sh: the home agent's refresh signalling (RFC 6275 6.2.4, 6.1.2), on
# mip6_common.sh's bed with scapy's mobile node (test_mip6_mn.py), which decodes the Binding Refresh
# Advice option and the Binding Refresh Request with scapy's own layers. xipsecd runs with
# --mip6-refresh-advice 4 --mip6-brr-at 50 --mip6-brr-max 2. Checked:
#  1. a registration for 12 s gets BA 0 with a Binding Refresh Advice of 4 s;
#  2. at half the lifetime (6 s) a Binding Refresh Request arrives, ESP-protected by the signalling
#     SA, to the care-of address with a type 2 routing header naming the home address, checksum
#     right; the mobile node re-registers and the binding outlives its first lifetime;
#  3. left unanswered, the renewed binding gets two requests in all (at 6 s, then halfway through
#     what is left), and then expires; brr_sent counts the three.
set -u
XT_BG_TIMEOUT=90
MIP6_HA_OPTS="--mip6-refresh-advice 4 --mip6-brr-at 50 --mip6-brr-max 2 --mip6-dad-ms 200"
. "$top_srcdir/tests/netns/mip6_common.sh"

nev() { grep -c "\"ev\": \"$1\"" "$XT_DIR/mn.log"; }
ev_have() { [ "$(nev "$1")" -ge "$2" ]; }
ev() { grep "\"ev\": \"$1\"" "$XT_DIR/mn.log" | sed -n "${2}p"; }
ev_is() { # EV N EXPR: a python expression over the N-th event EV (bound to b)
	ev "$1" "$2" > "$XT_DIR/ev.json"
	[ "$("$PYTHON" -c "import json,sys; b=json.load(open(sys.argv[1])); print($3)" "$XT_DIR/ev.json")" = True ] ||
		xt_fail "$1 #$2: not $3: $(cat "$XT_DIR/ev.json")"
}
ev_t() { ev "$1" "$2" | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)['t'])"; }
nbind() { b_json "len(j['bindings'])"; }

# ---- 1. the advice
mn bu eth1 1 12
wait_ba 1
ba_is 1 "b['status'] == 0 and b['lifetime'] == 12 and b['refresh'] == 4"
t_ba=$(ev_t ba 1)

# ---- 2. a request at half the lifetime, answered by a re-registration
xt_wait 9 ev_have brr 1 || { tail -5 "$XT_DIR/xipsecd-ha.log" >&2; xt_fail "no Binding Refresh Request within 9 s of a 12 s binding"; }
ev_is brr 1 "b['src'] == '$HA' and b['dst'] == '$COA1' and b['rh_addr'] == '$HOA' and b['esp_spi'] == 0x2000 and \
b['cksum_ok'] and 5.5 <= b['t'] - $t_ba <= 8"
mn bu eth1 2 12
wait_ba 2
ba_is 2 "b['status'] == 0 and b['seq'] == 2"
t_ba2=$(ev_t ba 2)
# past the first binding's lifetime (12 s after BA 1), the renewed one is still there
sleep "$("$PYTHON" -c "import time; print(max(0, $t_ba + 13 - time.time()))")"
[ "$(nbind)" = 1 ] || xt_fail "the re-registered binding went at the first one's expiry"

# ---- 3. unanswered: two requests in all, then expiry
gone() { [ "$(nbind)" = 0 ]; }
xt_wait 8 gone || xt_fail "the renewed binding did not expire"
[ "$(nev brr)" = 3 ] || xt_fail "$(nev brr) requests, not 1 + 2: $(grep '"ev": "brr"' "$XT_DIR/mn.log")"
ev_is brr 2 "5.5 <= b['t'] - $t_ba2 <= 8"
ev_is brr 3 "b['t'] - $t_ba2 <= 12"
[ "$(cnt brr_sent)" = 3 ] || xt_fail "brr_sent $(cnt brr_sent), not 3"

mn counts
sleep 0.3
grep -q '"bad": 0' "$XT_DIR/mn.log" || xt_fail "the mobile node could not decrypt something: $(grep '"ev": "bad"' "$XT_DIR/mn.log" | head -3)"
xt_log "refresh advice in the BA, a request at half the lifetime, the re-registration keeps the binding, two requests unanswered then expiry"
exit 0
