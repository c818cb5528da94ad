#!/bin/bash
# tests/netns/test_ike_rekey_nonce.sh: no AES-GCM nonce is used twice while CHILD SAs are rekeyed
# under continuous traffic. Two gateways run xipsec-iked and xipsecd on one SADB each (topology of
# test_dp_common.sh: h1 - gw1 - bridge - gw2 - h2); gw1's CHILD SA has the shortest rekey time
# strongSwan takes (1 s, no jitter), so it is rekeyed about once a second, first over IKEv2
# (CREATE_CHILD_SA), then over IKEv1 (Quick Mode), while h1 streams numbered datagrams to h2 and h2
# pings h1 (ESP both ways). A GCM nonce is the SA's salt and the packet's 8-byte IV, under the SA's
# key. Asserted per protocol:
#  - at least 5 rekeys; every datagram and every ping arrived; no CHILD SA in use reached its hard
#    lifetime (IKEv1 keeps rekeyed ones until then, up to 10 at a time here: each one's policies
#    count as users of the same SADB policies);
#  - on the bridge, no (destination, SPI, sequence) and no (destination, SPI, IV) appears twice;
#  - the keys of every SA, read from both SADBs every 0.5 s (`ipsecctl --json --show-keys show sa`),
#    cover every SPI seen on the wire, agree between the two gateways, and no two SPIs share a key
#    (key and salt): so no nonce repeats under any key.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool socat ping ss tcpdump tshark
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"
IPSECCTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$IPSECCTL" ] || xt_skip "ipsecctl not built"

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"

conf() { # SIDE ME PEER MYNET PEERNET REKEY LIFE
	local v conns=()
	for v in 2 1; do
		conns+=(conn "v$v" "$v" aes128-sha256-modp2048
			child net "$4" "$5" aes128gcm16 rekey_time="$6" life_time="$7" rand_time=0s)
	done
	ike_swanctl "$1" "$2" "$3" "${conns[@]}"
}
conf gw1 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24 1s 10s
conf gw2 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24 60s 90s
# rekeyed inbound SAs go 1 s after the rekey (default 5 s): fewer SAs at once at one rekey a second
for gw in gw1 gw2; do ike_sconf "$gw" "delete_rekeyed_delay = 1"; done
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2

# poll_keys LABEL: snapshots of both SADBs with keys every 0.5 s, in $XT_DIR/LABEL-keys/
poll_keys() {
	mkdir -p "$XT_DIR/$1-keys"
	xt_bg gw1 "keys-$1" bash -c '
		i=0
		while :; do
			for gw in gw1 gw2; do
				eval "sadb=\$SADB_$gw"
				"$0" --json --show-keys --sadb "$sadb" show sa > "$1/$gw-$i.json" 2>/dev/null
			done
			i=$((i + 1))
			sleep 0.5
		done' "$IPSECCTL" "$XT_DIR/$1-keys"
}
export SADB_gw1="$DP_SADB_gw1" SADB_gw2="$DP_SADB_gw2"

# check_nonces LABEL PCAP KEYDIR: the wire and key checks above; prints a summary
check_nonces() {
	timeout 120 tshark -r "$2" -Y esp -T fields -e frame.number -e ip.dst -e esp.spi -e esp.sequence \
		> "$XT_DIR/$1.esp" 2>/dev/null || xt_fail "$1: tshark cannot read $2"
	/usr/bin/python3 - "$1" "$2" "$XT_DIR/$1.esp" "$3" <<'PY'
import glob, json, struct, sys
label, pcap, esp, keydir = sys.argv[1:5]
def fail(msg):
    sys.exit("%s: %s" % (label, msg))

# tshark's reading of the outer headers
wire, seen = {}, set()
for line in open(esp):
    f = line.rstrip("\n").split("\t")
    if len(f) < 4 or not f[2]:
        continue
    frame, dst, spi, seq = int(f[0]), f[1], int(f[2], 16), int(f[3])
    if (dst, spi, seq) in seen:
        fail("(%s, SPI 0x%08x, sequence %d) twice on the wire (frame %d)" % (dst, spi, seq, frame))
    seen.add((dst, spi, seq))
    wire[(dst, spi)] = wire.get((dst, spi), 0) + 1

# the IVs: classic pcap, Ethernet, IPv4, ESP header (SPI, sequence) then the 8-byte IV of GCM
ivs, n_iv, iv_is_seq = set(), 0, 0
with open(pcap, "rb") as f:
    hdr = f.read(24)
    end = "<" if struct.unpack("<I", hdr[:4])[0] == 0xa1b2c3d4 else ">"
    while True:
        ph = f.read(16)
        if len(ph) < 16:
            break
        caplen = struct.unpack(end + "IIII", ph)[2]
        pkt = f.read(caplen)
        if len(pkt) < 14 + 20 or pkt[12:14] != b"\x08\x00" or pkt[14 + 9] != 50:
            continue
        ihl = (pkt[14] & 0x0f) * 4
        e = pkt[14 + ihl:]
        if len(e) < 16:
            fail("a truncated ESP packet in the capture")
        dst = ".".join(str(b) for b in pkt[30:34])
        spi, seq = struct.unpack(">II", e[:8])
        iv = e[8:16]
        if (dst, spi, iv) in ivs:
            fail("IV %s used twice under SPI 0x%08x towards %s" % (iv.hex(), spi, dst))
        ivs.add((dst, spi, iv))
        n_iv += 1
        iv_is_seq += struct.unpack(">Q", iv)[0] == seq

# the keys the SADBs held
keys = {}
for fn in sorted(glob.glob(keydir + "/*.json")):
    try:
        sas = json.load(open(fn))["sas"]
    except (ValueError, KeyError):
        continue   # a snapshot cut short by the end of the poller
    for s in sas:
        if s["proto"] != "esp" or s["state"] == "larval" or not s.get("keys"):
            continue
        k = (s["keys"]["enc"], s["keys"]["salt"])
        ident = (s["dst"], s["spi"])
        if keys.setdefault(ident, k) != k:
            fail("SPI 0x%08x towards %s held two different keys" % (s["spi"], s["dst"]))
missing = [i for i in wire if i not in keys]
if missing:
    fail("no key read for %d of the %d SPIs on the wire: %s" % (len(missing), len(wire),
         ", ".join("%s/0x%08x" % m for m in missing)))
by_key = {}
for ident, k in keys.items():
    by_key.setdefault(k, []).append(ident)
shared = [v for v in by_key.values() if len(v) > 1]
if shared:
    fail("SPIs sharing one key: %s" % shared)
out1 = sorted(spi for (dst, spi) in wire if dst == "192.0.2.2")
out2 = sorted(spi for (dst, spi) in wire if dst == "192.0.2.1")
if n_iv != len(seen):
    fail("tshark saw %d ESP packets, the IV reader %d" % (len(seen), n_iv))
print("%d ESP packets, %d+%d SPIs on the wire (gw1->gw2, gw2->gw1), %d keys read, all distinct; "
      "IV == sequence in %d of %d" % (len(seen), len(out1), len(out2), len(keys), iv_is_seq, n_iv))
PY
}

# rekey_run VERSION SECONDS
rekey_run() {
	local v=$1 secs=$2 label=ikev$1 rk0 rk res sent got n
	ike_ctl gw1 --initiate --ike "v$v" --child net >/dev/null || { ike_logs; xt_fail "$label: initiate failed"; }
	dp_ping h1 10.2.0.2
	poll_keys "$label"
	dp_capture_start "$label" sw s1
	rk0=$(ike_status gw1 child_sa_rekeyed)
	n=$((secs * 20))
	xt_bg h2 "ping-$label" ping -q -i 0.05 -c "$n" -W 2 10.1.0.2
	res=$(ike_udp_stream h1 h2 10.2.0.2 "$secs" 200)
	xt_wait 20 grep -q "packets transmitted" "$XT_DIR/ping-$label.log" || xt_fail "$label: ping did not finish"
	rk=$(( $(ike_status gw1 child_sa_rekeyed) - rk0 ))
	sleep 0.6   # one more key snapshot after the last packet
	xt_stop "keys-$label"
	dp_capture_stop "$label"
	set -- $res
	[ "$6" = 0 ] || xt_fail "$label: $6 corrupt datagrams"
	[ "$4" -eq "$2" ] || { ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "$label: sent $2 datagrams, received $4 (loss while rekeying)"; }
	sent=$2
	got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$XT_DIR/ping-$label.log")
	[ "$got" = "$n" ] || { cat "$XT_DIR/ping-$label.log" >&2; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "$label: $got of $n pings answered (loss while rekeying)"; }
	[ "$rk" -ge 5 ] || { ike_logs; xt_fail "$label: only $rk rekeys in ${secs} s"; }
	# IKEv2 deletes a rekeyed CHILD SA at once; IKEv1 keeps it until its hard lifetime, which is fine
	# as long as traffic had moved to its successor: no CHILD SA in use may reach the hard limit
	for out in $(sed -n "s/.*<v$v|.*closing expired CHILD_SA net{[0-9]*} with SPIs [0-9a-f]*_i \([0-9a-f]*\)_o.*/\1/p" "$XT_DIR/iked-gw1.log"); do
		[ "$v" = 1 ] && grep -q "xipsec: SA $out deleted once traffic switched to SA" "$XT_DIR/iked-gw1.log" && continue
		ike_logs; xt_fail "$label: CHILD SA with outbound SPI $out reached its hard lifetime while in use"
	done
	summary=$(check_nonces "$label" "$XT_DIR/$label.pcap" "$XT_DIR/$label-keys") || { ike_logs; xt_fail "$label: nonce check failed"; }
	xt_log "$label: $rk rekeys in ${secs} s; $sent datagrams and $n pings, all arrived; $summary"
	ike_ctl gw1 --terminate --ike "v$v" >/dev/null || xt_fail "$label: terminate failed"
	xt_wait 5 ike_nsa gw2 0 || xt_fail "$label: SAs left on gw2"
}

start=$(date +%s)
rekey_run 2 20
rekey_run 1 15
dp_finish
ike_check_logs
xt_log "PASS: CHILD SAs rekeyed every second under traffic (IKEv2 and IKEv1), no loss, no nonce twice ($(( $(date +%s) - start )) s)"
exit 0
