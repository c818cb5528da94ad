#!/bin/bash
# tests/netns/test_ike_seqlimit.sh: xipsec-iked rekeys an outbound SA before its sequence space runs
# out, and cleans up after a killed daemon. Two gateways run xipsec-iked and xipsecd on one SADB each
# (topology of test_dp_common.sh: h1 - gw1 - bridge - gw2 - h2), the daemons with the test knob
# XIPSEC_SEQ_SOFT=300 (the soft threshold, normally 2^32 - 2^24) and CHILD SAs with no time limit
# that matters, so only the sequence space can rekey them:
#  - IKEv2, then IKEv1 (Quick Mode): 2000 numbered datagrams at 500/s through the tunnel all arrive;
#    on the bridge the outbound ESP of gw1 uses several SPIs, each old one up to a sequence number of
#    at least 300 and well below 2000 (so the rekey came from the threshold, not before it), and no
#    (SPI, sequence) pair appears twice.
#  - a second xipsec-iked on gw1's SADB (own run directory) refuses to start and names the first.
#  - SPIs reserved by a killed daemon: with gw2's daemon stopped (SIGSTOP), gw1 starts a CHILD SA, so
#    its SADB holds the SPI it reserved (a larval SA); gw1's daemon is killed with SIGKILL and started
#    again: it releases the larval SA (and the SAs it had negotiated) before serving IKE.
# xipsecd runs two workers: it then reserves sequence numbers one at a time (with one worker, 1024 at
# a time, and the reservation would pass 300 at the first packet).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool socat ping ss tcpdump tshark pkill
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 2
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"

conf() { # SIDE ME PEER MYNET PEERNET
	ike_swanctl "$1" "$2" "$3" \
		conn v2 2 aes128gcm16-prfsha256-x25519 \
			child net "$4" "$5" aes128gcm16 rekey_time=1h rand_time=0s \
			child held "$4" 10.9.9.0/24 aes128gcm16 \
		conn v1 1 aes128-sha256-modp2048 \
			child net "$4" "$5" aes128gcm16 rekey_time=1h rand_time=0s
}
conf gw1 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24
conf gw2 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24
for gw in gw1 gw2; do ike_sconf "$gw" "delete_rekeyed_delay = 2"; done
export XIPSEC_SEQ_SOFT=300
ike_start gw1
ike_start gw2
grep -q "XIPSEC_SEQ_SOFT: outbound SAs are rekeyed at sequence number 300" "$XT_DIR/iked-gw1.log" ||
	{ ike_logs; xt_fail "xipsec-iked did not take XIPSEC_SEQ_SOFT=300"; }
dp_start gw1 --workers 2
dp_start gw2 --workers 2

# check_wire PCAP LABEL: gw1's outbound ESP in the capture: at least 2 SPIs, every SPI but the last
# used up to a sequence number in [300, 1000), no (SPI, sequence) pair twice. Prints the SPI count.
check_wire() {
	timeout 120 tshark -r "$1" -Y "ip.src == 192.0.2.1 && esp" -T fields -e esp.spi -e esp.sequence \
		> "$XT_DIR/$2.esp" 2>/dev/null || xt_fail "$2: tshark cannot read $1"
	/usr/bin/python3 - "$XT_DIR/$2.esp" "$2" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
seen, order, top, bad = set(), [], {}, 0
for spi, seq in rows:
    seq = int(seq)
    if (spi, seq) in seen:
        bad += 1
    seen.add((spi, seq))
    if spi not in top:
        order.append(spi)
        top[spi] = 0
    top[spi] = max(top[spi], seq)
label = sys.argv[2]
if bad:
    sys.exit("%s: %d (SPI, sequence) pairs appear twice on the wire" % (label, bad))
if len(order) < 2:
    sys.exit("%s: one outbound SPI only (%s): no rekey" % (label, order))
for spi in order[:-1]:
    if not 300 <= top[spi] < 1000:
        sys.exit("%s: SPI %s was used up to sequence %d, not replaced between 300 and 1000 (%s)" %
                 (label, spi, top[spi], [(s, top[s]) for s in order]))
print(len(order), len(rows), " ".join("%s:%d" % (s, top[s]) for s in order))
PY
}

# seq_stream LABEL: the stream through the established CHILD SA net, captured on the bridge
seq_stream() {
	local label=$1 res n0 n
	n0=$(grep -c "reached sequence [0-9]* of the soft limit 300: rekeying" "$XT_DIR/iked-gw1.log")
	dp_capture_start "$label" sw s1
	res=$(ike_udp_stream h1 h2 10.2.0.2 4 500)
	dp_capture_stop "$label"
	set -- $res
	[ "$6" = 0 ] || xt_fail "$label: $6 corrupt datagrams"
	[ "$2" -eq 2000 ] && [ "$4" -eq "$2" ] ||
		{ ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "$label: sent $2, received $4 (loss across sequence-space rekeys)"; }
	wire=$(check_wire "$XT_DIR/$label.pcap" "$label") || { ike_logs; xt_fail "$label: capture check failed"; }
	n=$(( $(grep -c "reached sequence [0-9]* of the soft limit 300: rekeying" "$XT_DIR/iked-gw1.log") - n0 ))
	[ "$n" -ge 2 ] || { ike_logs; xt_fail "$label: $n sequence-space soft expiries logged by gw1"; }
	xt_log "$label: 2000 datagrams at 500/s, all received; $n soft expiries on sequence space; on the wire (SPIs, packets, SPI:highest sequence): $wire"
}

# ---- IKEv2 ----
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "IKEv2 initiate failed"; }
dp_ping h1 10.2.0.2
seq_stream ikev2
[ "$(ike_status gw1 sadb_seq_soft_expired)" -ge 2 ] ||
	{ cat "$XT_DIR/gw1/run/status" >&2; xt_fail "the status file does not count the sequence-space expiries"; }
grep -q "closing expired CHILD_SA" "$XT_DIR/iked-gw1.log" && xt_fail "IKEv2: a CHILD SA reached a hard limit"
ike_ctl gw1 --terminate --ike v2 >/dev/null || xt_fail "terminate v2 failed"
xt_wait 5 ike_nsa gw2 0 || xt_fail "IKEv2 SAs left on gw2"

# ---- IKEv1 ----
ike_ctl gw1 --initiate --ike v1 --child net >/dev/null || { ike_logs; xt_fail "IKEv1 initiate failed"; }
grep -q "xipsec: Main Mode established IKE_SA v1" "$XT_DIR/iked-gw1.log" || xt_fail "no Main Mode"
dp_ping h1 10.2.0.2
seq_stream ikev1
ike_ctl gw1 --terminate --ike v1 >/dev/null || xt_fail "terminate v1 failed"
xt_wait 5 ike_nsa gw2 0 || xt_fail "IKEv1 SAs left on gw2"

# ---- one daemon per SADB ----
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "IKEv2 initiate failed"; }
mkdir -p "$XT_DIR/gw1/run2"
iked_pid=$(pgrep -P "$(xt_pid iked-gw1)" -x xipsec-iked)
[ -n "$iked_pid" ] || xt_fail "cannot find gw1's xipsec-iked"
rc=0
xt_exec gw1 "$IKE_IKED" --conf-dir "$XT_DIR/gw1/conf" --run-dir "$XT_DIR/gw1/run2" --sadb "$DP_SADB_gw1" \
	--no-load > "$XT_DIR/second.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || { cat "$XT_DIR/second.log" >&2; xt_fail "a second xipsec-iked started on gw1's SADB"; }
grep -q "another xipsec-iked (pid $iked_pid) uses the SADB $DP_SADB_gw1" "$XT_DIR/second.log" ||
	{ cat "$XT_DIR/second.log" >&2; xt_fail "the second xipsec-iked did not name the first (pid $iked_pid)"; }
ike_nsa gw1 2 || { ike_dump gw1 >&2; xt_fail "the refused second daemon changed gw1's SAs"; }
dp_ping h1 10.2.0.2
xt_log "a second xipsec-iked on the same SADB is refused: $(head -n 1 "$XT_DIR/second.log")"

# ---- SPIs reserved by a killed daemon ----
larval() { ike_dump gw1 --all | grep -c " state=larval "; }
has_larval() { [ "$(larval)" -ge 1 ]; }
[ "$(larval)" -eq 0 ] || { ike_dump gw1 --all >&2; xt_fail "larval SAs on gw1 before the test"; }
gw2_parent=$(xt_pid iked-gw2)
xt_on_cleanup "pkill -CONT -P $gw2_parent"
pkill -STOP -P "$gw2_parent" || xt_fail "cannot stop gw2's xipsec-iked"
# CREATE_CHILD_SA that gw2 never answers: gw1 reserved the new CHILD SA's inbound SPI
xt_bg gw1 initiate-held env STRONGSWAN_CONF="$XT_DIR/gw1/conf/strongswan.conf" timeout 20 "$IKE_SWANCTL" \
	--initiate --child held --timeout 10 --uri "unix://$XT_DIR/gw1/run/charon.vici"
xt_wait 5 has_larval || { ike_dump gw1 --all >&2; ike_logs; xt_fail "no SPI reserved on gw1 for the unanswered CHILD SA"; }
n_larval=$(larval)
pkill -KILL -P "$(xt_pid iked-gw1)" -x xipsec-iked || xt_fail "cannot kill gw1's xipsec-iked"
xt_stop iked-gw1
xt_stop initiate-held
pkill -CONT -P "$gw2_parent"
[ "$(larval)" -eq "$n_larval" ] || xt_fail "the larval SA went away with the killed daemon"
rm -f "$XT_DIR/gw1/run/charon.vici"
mv "$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw1-killed.log.txt"
ike_start gw1
grep -q "xipsec: released $n_larval SPIs reserved (larval SAs) by an earlier IKE daemon" "$XT_DIR/iked-gw1.log" ||
	{ ike_logs; xt_fail "the restarted xipsec-iked did not log the $n_larval larval SAs it released"; }
[ "$(larval)" -eq 0 ] || { ike_dump gw1 --all >&2; xt_fail "larval SAs left on gw1 after the restart"; }
grep -q "xipsec: removed 2 SAs and [0-9]* policies left in the SADB by an earlier IKE daemon" "$XT_DIR/iked-gw1.log" ||
	{ ike_logs; xt_fail "the restarted xipsec-iked did not remove the killed one's SAs"; }
ike_nsa gw1 0 || { ike_dump gw1 --all >&2; xt_fail "SAs of the killed daemon left on gw1"; }
xt_log "killed daemon: $n_larval reserved SPI(s) and its SAs released by the next start"
# the restarted daemon serves IKE: a fresh IKE SA with the peer carries traffic again
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "IKEv2 initiate after the restart failed"; }
dp_ping h1 10.2.0.2

dp_finish
ike_check_logs
xt_log "PASS: sequence-space soft expiry rekeys IKEv2 and IKEv1 CHILD SAs without loss or a repeated (SPI, sequence); one daemon per SADB; a killed daemon's reserved SPIs are released"
exit 0
