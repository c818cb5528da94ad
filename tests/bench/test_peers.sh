#!/usr/bin/env bash
# tests/bench/test_peers.sh: bench/peers end to end in its reduced form. `bench/peers --quick` brings up
# xipsecd ESP AES-GCM-128, the same with a variant's options (--tx-budget 32) and wireguard-go in turn
# between two gateways in namespaces (1-second points, one round, with a timeout), then `bench/peers check` re-verifies its JSON result: a row for every
# tunnel and test, each tunnel carried traffic (Mbit/s, packets/s and RTT above zero and in a physical
# range), the daemons' CPU time per packet present and user time within it, datagrams received no more
# than packets on h2's interface, and the table equal to the one its raw rows give. No speed is
# asserted. Anything the run left (it cleans up itself; a killed run cannot) is removed on every exit.
set -u
[ "$(id -u)" -eq 0 ] || { echo "test_peers: needs root" >&2; exit 77; }
for c in iperf3 ethtool nsenter ip ping wireguard-go wg; do
	command -v "$c" >/dev/null 2>&1 || { echo "test_peers: needs $c (scripts/install-deps)" >&2; exit 77; }
done
[ -c /dev/net/tun ] || { echo "test_peers: no /dev/net/tun" >&2; exit 77; }
PY=/usr/bin/python3
top_srcdir=${top_srcdir:?}
top_builddir=${top_builddir:?}
[ -x "$top_builddir/tests/tools/dp_testctl" ] || { echo "test_peers: dp_testctl not built" >&2; exit 77; }

tmp=$(mktemp -d /tmp/test-peers.XXXXXX)
# every name the run makes (namespaces, SADB files, wireguard interfaces) carries this id
export SIZING_RUN_ID="pet$$"
pid=
leftovers() {
	ip netns list | awk '{print $1}' | grep "^$SIZING_RUN_ID-"
	ls /dev/shm | grep "^xipsec-$SIZING_RUN_ID-"
}
cleanup() {
	local ns
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	# deleting the namespaces ends what still ran in them with its interfaces (the daemons' timeouts
	# end them in any case)
	for ns in $(ip netns list | awk '{print $1}' | grep "^$SIZING_RUN_ID-"); do ip netns del "$ns"; done
	rm -f /dev/shm/xipsec-"$SIZING_RUN_ID"-*
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "test_peers: FAIL: $*" >&2; exit 1; }

tunnels=xipsecd-gcm,wireguard
timeout --kill-after=10 90 "$PY" "$top_srcdir/bench/peers" --quick --tunnels "$tunnels" --build "$top_builddir" \
	--variant budget32=--tx-budget=32 --json "$tmp/peers.json" --csv "$tmp/peers.csv" \
	> "$tmp/peers.out" 2> "$tmp/peers.err" &
pid=$!
wait "$pid"; rc=$?
pid=
cat "$tmp/peers.out"
cat "$tmp/peers.err" >&2
[ "$rc" -ne 77 ] || exit 77
[ "$rc" -eq 0 ] || fail "bench/peers --quick exited $rc"
[ -z "$(leftovers)" ] || fail "left behind by bench/peers: $(leftovers | tr '\n' ' ')"
"$PY" "$top_srcdir/bench/peers" check "$tmp/peers.json" || fail "bench/peers check found problems"
# the printed table and the CSV have a row per tunnel and test
for t in xipsecd-gcm xipsecd-gcm:budget32 wireguard; do
	for x in tcp udp64 udp1372 ping; do
		grep -q "^$t  *$x " "$tmp/peers.out" || fail "no $t $x row in the printed table"
		grep -q "^$t,$x," "$tmp/peers.csv" || fail "no $t $x row in the CSV"
	done
done
# wireguard-go's rows carry their ratio against xipsecd ESP AES-GCM-128
grep -q "^wireguard,udp64,1,.*,xipsecd-gcm,[0-9.]*,[0-9.]*," "$tmp/peers.csv" ||
	fail "no xipsecd/wireguard ratios: $(grep '^wireguard,udp64' "$tmp/peers.csv")"
# the variant ran with its option and is compared with xipsecd as it is
grep -q "^xipsecd-gcm:budget32,udp64,1,.*,xipsecd-gcm,[0-9.]*,[0-9.]*," "$tmp/peers.csv" ||
	fail "no ratios of the variant against xipsecd-gcm: $(grep '^xipsecd-gcm:budget32,udp64' "$tmp/peers.csv")"
"$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['meta']['variants'] == {'budget32': ['--tx-budget=32']}, d['meta']['variants']
" "$tmp/peers.json" || fail "the variant is not recorded in the result"
echo "test_peers: ok"
exit 0
