# tests/netns/ha_common.sh: the two-node cluster test bed (sourced after tests/netns/lib.sh and
# tests/netns/ike_common.sh) of the HA netns tests and bench/ha-bench:
#
#   h1 10.1.0.2 -- lin (bridge) -- gw1 node A [in1 | out1] -- sw (bridge) -- [out2] gw2 -- h2 10.2.0.2
#   inside VIP 10.1.0.1   +------ gw3 node B [in3 | out3] ------+   outside VIP 192.0.2.1
#                          gw1 sy 10.9.9.1 <-> sy 10.9.9.2 gw3 (the sync link)
#
# Each node runs xipsecd + xipsec-iked with strongSwan's ha plugin + keepalived, configured from
# etc/cluster/; gw2 is stock charon with kernel-libipsec (nothing of ours), or with HA_PEER=xipsec a
# plain xipsec gateway (xipsecd + xipsec-iked, no cluster): bench/ha-bench's peer for sizes whose
# traffic kernel-libipsec cannot carry (doc/ha-bench.md). Each node's xipsec-iked
# and keepalived share a private /run (the plugin's FIFO is /var/run/charon.ha, fixed at build
# time): keepalived's notify script reaches its own node's plugin only.
#
#   ha_require                 fail (or skip) unless keepalived, stock charon and its plugins are here
#   ha_net                     the namespaces, bridges, links (ha_links) and addresses above
#   ha_configure               cluster key, each node's strongswan.conf/swanctl.conf/keepalived.conf
#   ha_start NODE [ARGS]       start NODE's xipsecd (extra ARGS, then $HA_DP_ARGS), xipsec-iked, keepalived
#   ha_up                      peer, node A master, node B backup, the CHILD_SA in both SADBs
#   ha_capture_start           tcpdump of IKE and ESP on the shared outside link (outside.pcap)
#   ha_bed                     all of the above in order: the cluster up, the peer's tunnel, the capture
#   ha_flow_start/ha_flow_result, ha_tcp_start/ha_tcp_midway/ha_tcp_result: traffic h1 -> h2 (HA_SITE)
#   ha_check_peer, ha_check_capture, ha_peer_sas, ha_role, ha_kill ...: checks and faults

IPSECCTL="$top_builddir/ipsecctl/ipsecctl"
PYTHON=${PYTHON:-/usr/bin/python3}
HA_VIP=192.0.2.1
HA_FLOW_PPS=${HA_FLOW_PPS:-200}
HA_TCP_BYTES=${HA_TCP_BYTES:-$((50 * 1024 * 1024))}
HA_GAP_MAX_MS=${HA_GAP_MAX_MS:-3000}
# extra xipsecd options for both nodes (e.g. --cluster-budget N)
HA_DP_ARGS=${HA_DP_ARGS:-}
# the namespace where the flows and TCP transfers from h1 end (h2; the peer itself if it holds them)
HA_SITE=${HA_SITE:-h2}
# the peer: stock (charon with kernel-libipsec) or xipsec
HA_PEER=${HA_PEER:-stock}
case $HA_PEER in stock|xipsec) ;; *) echo "HA_PEER must be stock or xipsec, not '$HA_PEER'" >&2; exit 2 ;; esac

ha_require() {
	xt_require tcpdump tshark socat unshare nsenter sha256sum openssl /usr/lib/ipsec/charon
	command -v keepalived >/dev/null || xt_fail "keepalived missing (scripts/install-deps installs it)"
	ike_require
	[ -f /usr/lib/ipsec/plugins/libstrongswan-ha.so ] || xt_fail "strongSwan's ha plugin missing (libcharon-extra-plugins: scripts/install-deps)"
	[ -f /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] || xt_fail "kernel-libipsec plugin missing (libcharon-extra-plugins: scripts/install-deps)"
	[ -c /dev/net/tun ] || xt_skip "no /dev/net/tun"
}
. "$top_srcdir/tests/netns/test_dp_common.sh"

ha_id() { case $1 in gw1) echo 1 ;; gw3) echo 2 ;; esac; }
ha_other() { case $1 in gw1) echo gw3 ;; gw3) echo gw1 ;; esac; }

# ha_links: the links of the bed's picture between h1, lin, gw1, gw3, sw and gw2 (namespaces made)
ha_links() {
	xt_veth h1 eth0 lin l0
	xt_veth gw1 in1 lin l1
	xt_veth gw3 in3 lin l3
	xt_veth gw1 out1 sw s1
	xt_veth gw3 out3 sw s3
	xt_veth gw2 out2 sw s2
	xt_veth gw1 sy gw3 sy
}
ha_net() {
	local ns p n i k
	for ns in h1 lin gw1 gw3 sw gw2 h2; do xt_ns_add "$ns"; done
	for ns in lin sw; do
		xt_exec "$ns" ip link add br0 type bridge
		xt_exec "$ns" ip link set br0 up
		xt_exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
	done
	ha_links
	xt_veth gw2 in2 h2 eth0
	for p in l0 l1 l3; do xt_exec lin ip link set "$p" master br0; done
	for p in s1 s2 s3; do xt_exec sw ip link set "$p" master br0; done
	for ns in h1 lin gw1 gw3 sw gw2 h2; do
		xt_exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
	xt_exec h1 ip addr add 10.1.0.2/24 dev eth0
	xt_exec h1 ip route add default via 10.1.0.1
	xt_exec h1 ethtool -K eth0 tx off >/dev/null
	xt_exec h2 ip addr add 10.2.0.2/24 dev eth0
	xt_exec h2 ip route add default via 10.2.0.1
	xt_exec h2 ethtool -K eth0 tx off >/dev/null
	xt_exec gw2 ip addr add 10.2.0.1/24 dev in2
	xt_exec gw2 ip addr add 192.0.2.2/24 dev out2
	xt_exec gw2 ip route add 10.1.0.0/24 via $HA_VIP
	if [ "$HA_PEER" = xipsec ]; then
		# only its xipsecd forwards
		xt_exec gw2 sysctl -qw net.ipv4.ip_forward=0
		dp_sadb gw2
	else
		xt_exec gw2 sysctl -qw net.ipv4.ip_forward=1
	fi
	for n in gw1 gw3; do
		i=$(ha_id $n); k=${n#gw}
		xt_exec $n ip addr add 10.1.0.1$i/24 dev in$k
		xt_exec $n ip addr add 192.0.2.1$i/24 dev out$k
		xt_exec $n ip addr add 10.9.9.$i/24 dev sy
		# only xipsecd forwards (a plaintext leak would show)
		xt_exec $n sysctl -qw net.ipv4.ip_forward=0
		dp_sadb $n
	done
}

ha_conf() { # NODE: strongswan.conf (etc/cluster/strongswan-ha.conf), swanctl.conf, keepalived.conf, env
	local n=$1 i o k=${1#gw} d
	i=$(ha_id "$n"); o=$(ha_id "$(ha_other "$n")")
	ike_dirs "$n" "$(dp_sadb_of "$n")"
	d=$XT_DIR/$n
	sed -e "s/local = 10.9.9.1/local = 10.9.9.$i/" -e "s/remote = 10.9.9.2/remote = 10.9.9.$o/" \
		-e "s/^interfaces_ignore = eth2$/interfaces_ignore = sy/" \
		"$top_srcdir/etc/cluster/strongswan-ha.conf" > "$d/conf/strongswan-ha.conf"
	grep -q "^interfaces_ignore = sy$" "$d/conf/strongswan-ha.conf" ||
		xt_fail "etc/cluster/strongswan-ha.conf no longer ignores the sync interface as this test rewrites it"
	ike_sconf "$n" "include $d/conf/strongswan-ha.conf"
	ike_swanctl "$n" $HA_VIP 192.0.2.2 conn ha 2 aes128gcm16-prfsha256-ecp256 \
		child net 10.1.0.0/24 10.2.0.0/24 aes128gcm16
	# xipsec-iked runs under ha_start's restart loop in place of systemd (a TERM restarts it)
	cat > "$d/env" <<EOF
XIPSEC_CTL=$XT_DIR/$n.sock
IPSECCTL=$IPSECCTL
XIPSEC_IKED_RESTART='kill -TERM \$(cat $d/run/xipsec-iked.pid)'
EOF
	sed -e "s/router_id xipsec-a/router_id xipsec-$n/" -e "s/eth1/out$k/g" -e "s/eth0/in$k/g" \
		-e "s/192.0.2.11 /192.0.2.1$i /" -e "s/^\( *\)192.0.2.12 /\1192.0.2.1$o /" \
		-e "s/10.1.0.11 /10.1.0.1$i /" -e "s/^\( *\)10.1.0.12$/\110.1.0.1$o/" \
		-e "s|\"/etc/xipsec/cluster/xipsec-cluster-notify|\"/usr/bin/env XIPSEC_ENV=$d/env $top_srcdir/etc/cluster/xipsec-cluster-notify|" \
		"$top_srcdir/etc/cluster/keepalived.conf" > "$d/keepalived.conf"
	grep -q "unicast_src_ip 192.0.2.1$i " "$d/keepalived.conf" && grep -q "^ *10.1.0.1$o$" "$d/keepalived.conf" ||
		xt_fail "etc/cluster/keepalived.conf no longer has the addresses this test rewrites"
}
ha_configure() {
	# the dataplanes' cluster key (README, "Two-node cluster"): 64 hex digits, root's, mode 0600
	HA_KEY=$XT_DIR/cluster.key
	( umask 077; openssl rand -hex 32 > "$HA_KEY" )
	if [ "$HA_PEER" = xipsec ]; then ike_dirs gw2 "$(dp_sadb_of gw2)"; else ike_dirs gw2; fi
	ike_swanctl gw2 192.0.2.2 $HA_VIP conn ha 2 aes128gcm16-prfsha256-ecp256 dpd_delay=1s \
		child net 10.2.0.0/24 10.1.0.0/24 aes128gcm16
	ha_conf gw1
	ha_conf gw3
}

ha_iked_pid() { pgrep -P "$(xt_pid "iked-$1")"; }
ha_start() { # NODE [XIPSECD ARGS]: xipsecd, xipsec-iked (private /run), keepalived (in xipsec-iked's mount namespace)
	local n=$1 d=$XT_DIR/$1
	shift
	# the dataplanes' own sync on the sync link, beside the ha plugin's UDP 4510 on the same address
	dp_start "$n" --cluster-local "10.9.9.$(ha_id "$n"):4511" --cluster-peer "10.9.9.$(ha_id "$(ha_other "$n")"):4511" \
		--cluster-key "$HA_KEY" "$@" $HA_DP_ARGS
	ha_iked "$n"
	xt_bg "$n" "keepalived-$n" nsenter --mount="/proc/$(ha_iked_pid "$n")/ns/mnt" keepalived --vrrp -n -l -D \
		-f "$d/keepalived.conf" -p "$d/keepalived.pid" -r "$d/vrrp.pid"
}
# ha_iked NODE: NODE's xipsec-iked (configured in $XT_DIR/NODE/conf) in a private /run, until the
# plugin asked the other node for a resync
ha_iked() {
	local n=$1 d=$XT_DIR/$1
	# xipsec-iked restarted whenever it exits, as systemd would (the notify script restarts it to
	# resync); a TERM to the loop stops both
	xt_bg "$n" "iked-$n" env ASAN_OPTIONS="detect_leaks=0:check_printf=0" unshare -m --propagation private \
		sh -c 'mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
			trap "kill -TERM \$c 2>/dev/null; wait \$c; exit 0" TERM INT
			while :; do "$@" & c=$!; wait $c; echo "ha_start: xipsec-iked exited ($?), restarting"; sleep 0.5; done' sh \
		"$IKE_IKED" --conf-dir "$d/conf" --run-dir "$d/run" --sadb "$(ike_sadb "$n")" --debug 1
	xt_wait 10 test -S "$d/run/charon.vici" || { cat "$XT_DIR/iked-$n.log" >&2; xt_fail "xipsec-iked $n did not start"; }
	xt_wait 10 grep -q "xipsec: loaded" "$XT_DIR/iked-$n.log" || { cat "$XT_DIR/iked-$n.log" >&2; xt_fail "xipsec-iked $n did not load swanctl.conf"; }
	grep -q "ha" <<<"$(grep "loaded plugins" "$XT_DIR/iked-$n.log")" || { cat "$XT_DIR/iked-$n.log" >&2; xt_fail "xipsec-iked $n did not load the ha plugin"; }
	# A starting plugin asks the other node for every IKE_SA. An IKE_SA that reaches it live before
	# that request is answered is installed twice (the plugin does not look for the one it has), and
	# the copy keeps CHILD_SAs whose deletes reach the other copy: wait for the request first.
	xt_wait 10 grep -q "requesting HA resynchronization" "$XT_DIR/iked-$n.log" ||
		{ cat "$XT_DIR/iked-$n.log" >&2; xt_fail "xipsec-iked $n did not ask for a resync"; }
}
ha_is_master() { ip -n "$(xt_ns "$1")" -4 addr show dev "out${1#gw}" | grep -q " $HA_VIP/"; }
ha_is_backup() { grep -q "Entering BACKUP STATE" "$XT_DIR/keepalived-$1.log" && ! ha_is_master "$1"; }
ha_logs() {
	local f
	for f in iked-gw1 iked-gw3 keepalived-gw1 keepalived-gw3 xipsecd-gw1 xipsecd-gw3 charon-gw2 \
		iked-gw2 xipsecd-gw2; do
		[ -f "$XT_DIR/$f.log" ] && { echo "----- $f" >&2; tail -40 "$XT_DIR/$f.log" >&2; }
	done
	# what each dataplane did: its workers' counters and drops by reason, non-zero ones
	for f in gw1 gw3 gw2; do
		[ -S "$XT_DIR/$f.sock" ] || continue
		echo "----- xipsecd-$f counters" >&2
		timeout 10 "$XIPSECD" --status --ctl "$XT_DIR/$f.sock" 2>/dev/null | "$PYTHON" -c '
import json, sys
tot = {}
for w in json.load(sys.stdin).get("worker", []):
    for k, v in list(w.items()) + [("drop " + k, v) for k, v in w.get("drops", {}).items()]:
        if isinstance(v, int) and not isinstance(v, bool):
            tot[k] = tot.get(k, 0) + v
print(" ".join("%s=%d" % kv for kv in sorted(tot.items()) if kv[1]))' >&2
	done
	return 0
}
ha_fail() { ha_logs; xt_fail "$*"; }

# ha_peer_sas [CONN]: the peer's IKE_SA and CHILD_SAs of connection CONN (default ha; all: every
# connection's) as swanctl lists them: "IKE spi_i spi_r" and "CHILD spi_in spi_out".
ha_peer_sas() {
	local only=(--ike "${1:-ha}")
	[ "${1:-}" = all ] && only=()
	ike_ctl gw2 --list-sas "${only[@]}" | awk '
		/ IKEv2, / { for (i = 1; i <= NF; i++) if ($i ~ /_i\*?$/) si = $i; else if ($i ~ /_r\*?$/) sr = $i
			     print "IKE", si, sr }
		$1 == "in" { si = $2; sub(",", "", si) }
		$1 == "out" { so = $2; sub(",", "", so); print "CHILD", si, so }'
}
# ha_role NODE: its xipsecd's role as `ipsecctl show cluster` reports it (active or standby)
ha_role() {
	timeout 10 "$IPSECCTL" --ctl "$XT_DIR/$1.sock" --json show cluster 2>/dev/null |
		"$PYTHON" -c "import json, sys; print(json.load(sys.stdin)['role'])" 2>/dev/null
}
ha_role_is() { [ "$(ha_role "$1")" = "$2" ]; }
# the peer holds exactly one CHILD_SA (after a rekey, once the old one is deleted)
ha_peer_one_child() { [ "$(ha_peer_sas | grep -c ^CHILD)" = 1 ]; }
ha_sa_spis() { ike_dump "$1" | grep -o "spi=[0-9a-fx]*" | sort | tr '\n' ' '; }
ha_same_sas() { [ "$(ha_sa_spis gw1)" = "$(ha_sa_spis gw3)" ]; }

# ha_peer_start: the peer's daemons (HA_PEER)
ha_peer_start() {
	if [ "$HA_PEER" = xipsec ]; then
		# an IKE_SA carries all its CHILD_SAs, as the stock peer's does (maxqm, 100 by default,
		# would rekey it after each 100)
		ike_sconf gw2 "maxqm = 0"
		dp_start gw2
		IKE_ASAN_OPTIONS="detect_leaks=0:check_printf=0" ike_start gw2
	else
		ike_start_stock gw2
	fi
}
ha_up() {
	ha_peer_start
	ha_start gw1
	xt_wait 10 ha_is_master gw1 || ha_fail "node A did not become master"
	xt_wait 5 ha_role_is gw1 active || ha_fail "keepalived's notify did not make node A's dataplane active"
	ha_start gw3
	xt_wait 10 ha_is_backup gw3 || ha_fail "node B did not become backup"
	ha_role_is gw3 standby || ha_fail "node B's dataplane is $(ha_role gw3), not standby"
	# the whole exchange (ha_ike_addresses decrypts it), apart from the outside capture that begins after it
	# (IKE_SA_INIT and IKE_AUTH, request and response: four packets)
	xt_bg sw ike-auth tcpdump -i br0 -n --immediate-mode -U -c 4 -w "$XT_DIR/ike-auth.pcap" 'udp port 500 or udp port 4500'
	xt_wait 5 grep -q "listening on" "$XT_DIR/ike-auth.log" || ha_fail "tcpdump of the IKE_AUTH did not start"
	ike_ctl gw2 --initiate --ike ha --child net >/dev/null || ha_fail "the peer's initiate failed"
	xt_wait 5 grep -q "^4 packets captured" "$XT_DIR/ike-auth.log" || ha_fail "tcpdump: $(cat "$XT_DIR/ike-auth.log")"
	xt_wait 10 ike_nsa gw1 2 || ha_fail "node A's SADB does not hold the CHILD_SA's two SAs"
	xt_wait 10 ike_nsa gw3 2 || ha_fail "node B's SADB did not get the CHILD_SA from the ha plugin"
	[ "$(ha_sa_spis gw1)" = "$(ha_sa_spis gw3)" ] || ha_fail "the nodes' SADBs differ: A $(ha_sa_spis gw1), B $(ha_sa_spis gw3)"
	grep -q "installed HA CHILD_SA" "$XT_DIR/iked-gw3.log" || ha_fail "node B did not install the CHILD_SA as passive"
	ike_ctl gw1 --list-sas | grep -q "ha: #[0-9]*, ESTABLISHED, IKEv2" || ha_fail "node A's IKE_SA is not ESTABLISHED"
	ike_ctl gw3 --list-sas | grep -q "ha: #[0-9]*, PASSIVE, IKEv2" || ha_fail "node B's IKE_SA is not PASSIVE"
	dp_ping h1 10.2.0.2
	dp_ping h2 10.1.0.2
}

# ha_capture_start: capture IKE and ESP on the shared outside link, from here to the end
ha_capture_start() {
	xt_bg sw capture tcpdump -i br0 -n -s 128 -U -w "$XT_DIR/outside.pcap" 'udp port 500 or udp port 4500 or esp'
	xt_wait 5 test -s "$XT_DIR/outside.pcap" || ha_fail "tcpdump did not start"
}

# ha_flow_start NAME SECONDS [DST]: a fixed-rate UDP flow h1 -> HA_SITE (numbered datagrams, to DST,
# default 10.2.0.2; the receiver binds DST, so flows to different addresses may share a port);
# ha_flow_result NAME prints "sent N received M gap_ms G" (G: the longest time without a delivered
# datagram).
ha_flow_start() {
	local name=$1 secs=$2 dst=${3:-10.2.0.2} port=$((7000 + RANDOM % 1000))
	xt_bg "$HA_SITE" "flow-rx-$name" "$PYTHON" -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('$dst', $port)); s.settimeout(8)
got = set(); first = last = None; gap = 0.0
try:
    while True:
        d, _ = s.recvfrom(2000)
        now = time.monotonic()
        if d == b'end':
            # the sender waits 0.5 s after its last datagram
            gap = max(gap, now - 0.5 - (last or now))
            break
        i = int(d[:10])
        if d == (b'%010d' % i) * 100 and i not in got:
            got.add(i)
            if last is not None:
                gap = max(gap, now - last)
            else:
                first = now
            last = now
except socket.timeout:
    # the end never came: the flow stopped for good at the last datagram (its nominal end is
    # $secs s after the first)
    gap = max(gap, first + $secs - last) if last else 1e6
print('received', len(got), 'gap_ms', int(gap * 1000), flush=True)
"
	sleep 0.2
	xt_bg h1 "flow-tx-$name" "$PYTHON" -c "$(ike_udp_sender "$dst" "$port" "$secs" $HA_FLOW_PPS)"
}
ha_flow_result() {
	local name=$1
	xt_wait 60 grep -q "^[0-9]" "$XT_DIR/flow-tx-$name.log" || ha_fail "UDP flow $name: the sender did not finish"
	xt_wait 15 grep -q "^received" "$XT_DIR/flow-rx-$name.log" || ha_fail "UDP flow $name: the receiver did not finish"
	echo "sent $(cat "$XT_DIR/flow-tx-$name.log") $(cat "$XT_DIR/flow-rx-$name.log")"
}
# ha_tcp_start NAME [DST]: HA_TCP_BYTES random bytes h1 -> HA_SITE (DST, default 10.2.0.2) over TCP in
# the background
ha_tcp_start() {
	local name=$1 dst=${2:-10.2.0.2} port=$((5000 + RANDOM % 1000))
	head -c "$HA_TCP_BYTES" /dev/urandom > "$XT_DIR/tcp-$name.in"
	xt_bg "$HA_SITE" "tcp-rx-$name" socat -u "TCP-LISTEN:$port,reuseaddr" "OPEN:$XT_DIR/tcp-$name.out,creat,trunc"
	xt_wait 10 xt_exec "$HA_SITE" sh -c "ss -ltn | grep -q ':$port '" || ha_fail "TCP sink did not start"
	xt_bg h1 "tcp-tx-$name" socat -u "OPEN:$XT_DIR/tcp-$name.in" "TCP:$dst:$port,connect-timeout=10"
}
# ha_tcp_midway NAME: wait until a tenth of the transfer arrived; fail if it is already complete
ha_tcp_midway() {
	xt_wait 20 sh -c "[ \$(stat -c %s '$XT_DIR/tcp-$1.out') -ge $((HA_TCP_BYTES / 10)) ]" ||
		ha_fail "TCP transfer $1 did not start"
	[ "$(stat -c %s "$XT_DIR/tcp-$1.out")" -lt "$HA_TCP_BYTES" ] || ha_fail "TCP transfer $1 ended before the failure"
}
ha_tcp_result() {
	local name=$1 want got
	xt_wait 90 sh -c "! kill -0 $(xt_pid "tcp-tx-$name") 2>/dev/null" || ha_fail "TCP transfer $name did not end"
	want=$(sha256sum < "$XT_DIR/tcp-$name.in"); want=${want%% *}
	xt_wait 10 sh -c "[ \"\$(stat -c %s '$XT_DIR/tcp-$name.out')\" -eq $HA_TCP_BYTES ]"
	got=$(sha256sum < "$XT_DIR/tcp-$name.out"); got=${got%% *}
	[ "$want" = "$got" ] || ha_fail "TCP transfer $name: SHA-256 $got of $(stat -c %s "$XT_DIR/tcp-$name.out") bytes, want $want"
	xt_stop "tcp-rx-$name"
	rm -f "$XT_DIR/tcp-$name.in" "$XT_DIR/tcp-$name.out"
}
# ha_check_peer WHAT: the peer dropped no ESP packet as a replay and none for its ICV (stock: its
# libipsec's log; xipsec: its dataplane's drop counters, as ipsecctl shows them)
ha_peer_drops() {
	if [ "$HA_PEER" = xipsec ]; then
		timeout 10 "$IPSECCTL" --sadb "$(dp_sadb_of gw2)" show > "$XT_DIR/peer-show.txt" 2>&1
		# "  <reason>   COUNT (SAs a, no SA b)"
		awk 'function n(r) { i = index($0, " (SAs"); if (!i || index($0, "  " r " ") != 1) return 0
				     v = substr($0, 1, i - 1); sub(/.* /, "", v); return v + 0 }
		     { rp += n("replayed sequence number") + n("sequence number left of the replay window")
		       icv += n("ICV verification failed") }
		     END { printf "replay %d ICV %d\n", rp, icv }' "$XT_DIR/peer-show.txt"
		return
	fi
	echo "replay $(grep -c "sequence number verification failed" "$XT_DIR/charon-gw2.log")" \
		"ICV $(grep -c "ICV verification failed" "$XT_DIR/charon-gw2.log")"
}
ha_check_peer() {
	[ "$(ha_peer_drops)" = "replay 0 ICV 0" ] || ha_fail "$1: the peer dropped ESP packets: $(ha_peer_drops)"
}
# ha_check_capture WHAT: no IKE_SA_INIT since the capture began, no (SPI, sequence) pair sent twice
ha_check_capture() {
	local init dup
	# tshark's own failure (a field it does not know) fails the check rather than counting as none
	tshark -r "$XT_DIR/outside.pcap" -Y 'isakmp.exchangetype == 34' -T fields -e frame.number \
		> "$XT_DIR/init.txt" 2> "$XT_DIR/tshark.err" || ha_fail "$1: tshark: $(cat "$XT_DIR/tshark.err")"
	init=$(wc -l < "$XT_DIR/init.txt")
	[ "$init" -eq 0 ] || ha_fail "$1: $init IKE_SA_INIT messages on the outside link"
	tshark -r "$XT_DIR/outside.pcap" -Y "esp && ip.src == $HA_VIP" -T fields -e esp.spi -e esp.sequence \
		2>/dev/null > "$XT_DIR/esp-out.txt"
	[ -s "$XT_DIR/esp-out.txt" ] || ha_fail "$1: tshark found no ESP from the cluster in the capture"
	dup=$(sort "$XT_DIR/esp-out.txt" | uniq -d | wc -l)
	[ "$dup" -eq 0 ] || ha_fail "$1: $dup (SPI, sequence number) pairs sent twice by the cluster, e.g. $(sort "$XT_DIR/esp-out.txt" | uniq -d | head -3 | tr '\n' ' ')"
	xt_log "$1: $(wc -l < "$XT_DIR/esp-out.txt") ESP packets from the cluster on the outside link, no (SPI, sequence) twice, no IKE_SA_INIT"
}
# ha_ike_addresses: the IPv4 addresses the cluster listed to the peer in the IKE_AUTH response
# (MOBIKE's ADDITIONAL_IP4_ADDRESS), one a line, read by tshark from ike-auth.pcap decrypted with the
# keys the stock peer logged (IKE_STOCK_IKE_LOG=4 before ha_bed). Fails if tshark fails or cannot
# decrypt the response (no IDr in it), so an empty list means none was sent.
ha_ike_addresses() {
	local ike spi_i spi_r keys
	ike=$(ha_peer_sas | grep ^IKE) || ha_fail "IKE addresses: the peer holds no IKE_SA"
	spi_i=$(awk '{sub(/_i\*?$/, "", $2); print $2}' <<<"$ike")
	spi_r=$(awk '{sub(/_r\*?$/, "", $3); print $3}' <<<"$ike")
	# charon's hex dumps after "Sk_ei secret => 20 bytes @ ...": "   0: 8A 6C ..  ascii"
	keys=$("$PYTHON" -c '
import re, sys
log = open(sys.argv[1]).read().splitlines()
def key(name):
    for i, l in enumerate(log):
        m = re.search(name + r" secret => (\d+) bytes", l)
        if m:
            n, h = int(m.group(1)), ""
            for d in log[i + 1:]:
                r = re.search(r"\s(\d+): ((?:[0-9A-F]{2} )+)", d)
                if not r or len(h) >= 2 * n:
                    break
                h += r.group(2).replace(" ", "")
            return h[:2 * n].lower()
    sys.exit("no " + name + " in the peer log (IKE_STOCK_IKE_LOG=4?)")
print(key("Sk_ei"), key("Sk_er"))
' "$XT_DIR/charon-gw2.log") || ha_fail "IKE addresses: the peer logged no IKE keys"
	local uat="$spi_i,$spi_r,${keys% *},${keys#* },\"AES-GCM-128 with 16 octet ICV [RFC5282]\",,,\"NONE [RFC4306]\""
	tshark -r "$XT_DIR/ike-auth.pcap" -o "uat:ikev2_decryption_table:$uat" \
		-Y "isakmp.exchangetype == 35 && ip.src == $HA_VIP" -T json --no-duplicate-keys > "$XT_DIR/ike-auth.json" 2> "$XT_DIR/tshark.err" || ha_fail "IKE addresses: tshark: $(cat "$XT_DIR/tshark.err")"
	# ADDITIONAL_IP4_ADDRESS is notify 16397, its data the address's four bytes
	"$PYTHON" -c '
import json, sys
ids, addrs = 0, []
def walk(o):
    global ids
    if isinstance(o, dict):
        if "isakmp.id.type" in o:
            ids += 1
        if o.get("isakmp.notify.msgtype") == "16397":
            d = o.get("isakmp.notify.data", "").replace(":", "")
            addrs.append(".".join(str(int(d[i:i + 2], 16)) for i in range(0, 8, 2)))
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(json.load(open(sys.argv[1])))
if ids < 1:
    sys.exit("tshark did not decrypt the IKE_AUTH response (no IDr)")
print("\n".join(addrs))
' "$XT_DIR/ike-auth.json" || ha_fail "IKE addresses (SPIs $spi_i $spi_r)"
}

# ha_kill NODE: kill -9 every process of the node (xipsecd, xipsec-iked, keepalived)
ha_kill() {
	local p
	for p in $(ip netns pids "$(xt_ns "$1")"); do kill -KILL "$p" 2>/dev/null; done
	xt_wait 5 sh -c "[ -z \"\$(ip netns pids $(xt_ns "$1"))\" ]" || xt_fail "node $1's processes survived kill -9"
}

# ha_bed: the whole bed, from the prerequisites to the capture (HA_DP_ARGS set before it)
ha_bed() {
	ha_require
	ha_net
	ha_configure
	ha_up
	ha_capture_start
}
