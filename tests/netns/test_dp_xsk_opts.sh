#!/usr/bin/env bash
# tests/netns/test_dp_xsk_opts.sh: xipsecd's AF_XDP socket and worker options. --tx-budget,
# --busy-poll and --cpus refuse bad values with a message naming the option and the problem; an AES-GCM
# tunnel (h1 - gw1 - gw2 - h2) carries ping, TCP (2 MB each way, compared) and UDP with the kernel's
# transmit budget (--tx-budget 0), the default one, the largest (4096), and with busy polling (the
# interfaces' NAPI deferral set as xipsecd(8) says). On a kernel that has XDP_MAX_TX_SKB_BUDGET
# (6.17 and later) no socket refuses its budget. Workers are pinned to the --cpus list, and without it
# within the CPUs the process may run on (taskset).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss
. "$top_srcdir/tests/netns/test_dp_common.sh"

for bad in "--tx-budget 16:--tx-budget takes 0 or 32..4096" "--tx-budget 4097:--tx-budget takes 0 or 32..4096" \
	"--tx-budget x:--tx-budget takes 0 or 32..4096" "--busy-poll=1:busy-poll" \
	"--cpus 1-0:range 1-0 runs backwards" "--cpus 0,0:names CPU 0 twice" "--cpus 0,:expected ','" \
	"--cpus x:is not a CPU number" "--cpus 4095:is not a CPU number" \
	"--cpus 0 --no-pin:--cpus and --no-pin exclude each other"; do
	args=${bad%%:*} want=${bad#*:}
	# shellcheck disable=SC2086
	out=$("$XIPSECD" --inside a --outside b $args 2>&1) && xt_fail "xipsecd accepted $args"
	echo "$out" | grep -q -- "$want" || xt_fail "xipsecd $args: message '$out' does not say '$want'"
done

dp_topo 1
# the kernel's version: XDP_MAX_TX_SKB_BUDGET came with Linux 6.17
kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')

napi() { # VALUE...: napi_defer_hard_irqs and gro_flush_timeout of the gateways' interfaces
	local gw dev
	for gw in gw1 gw2; do
		for dev in "in${gw#gw}" "out${gw#gw}"; do
			ip netns exec "$(xt_ns "$gw")" sh -c "echo $1 > /sys/class/net/$dev/napi_defer_hard_irqs &&
				echo $2 > /sys/class/net/$dev/gro_flush_timeout" || xt_fail "cannot set $dev's NAPI deferral"
		done
	done
}

spi=0x3000
for opts in "--tx-budget 0" "" "--tx-budget 4096" "--busy-poll"; do
	xt_log "xipsecd ${opts:-(defaults)}"
	[ "$opts" = --busy-poll ] && napi 2 200000
	# shellcheck disable=SC2086
	dp_start gw1 $opts
	# shellcheck disable=SC2086
	dp_start gw2 $opts
	dp_ctl gw1 flush
	dp_ctl gw2 flush
	dp_tunnel gcm 4 1 $((spi + 1)) $((spi + 2))
	spi=$((spi + 2))
	dp_ping h1 10.2.0.2
	dp_tcp h1 h2 10.2.0.2 2000000
	dp_tcp h2 h1 10.1.0.2 2000000
	dp_udp h1 h2 10.2.0.2 200
	if [ "$kv" -ge 6017 ] && grep -h "transmit budget" "$XT_DIR"/xipsecd-gw*.log; then
		xt_fail "xipsecd ${opts:-(defaults)}: a socket refused its transmit budget on Linux $(uname -r)"
	fi
	grep -h "busy polling refused" "$XT_DIR"/xipsecd-gw*.log && xt_fail "busy polling refused"
	dp_finish
	rm -f "$XT_DIR"/xipsecd-gw*.log
done
napi 0 0

# Pinning: --cpus puts worker 0 where it says; without it, on the first CPU the process may run on
# (here taskset's), not on CPU 0 regardless. A CPU outside the process's set is refused by number.
last=$(($(nproc) - 1))
out=$("$XIPSECD" --inside a --outside b --cpus $((last + 1)) 2>&1) && xt_fail "xipsecd accepted --cpus $((last + 1))"
echo "$out" | grep -q "CPU $((last + 1)) is not one this process may run on (allowed: " ||
	xt_fail "--cpus $((last + 1)): message '$out'"
cpu_of() { dp_json <(dp_status "$1") "j['worker'][0]['cpu']"; }
dp_start gw1 --cpus "$last"
real=$XIPSECD
printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$last" "$real" > "$XT_DIR/xipsecd-taskset"
chmod +x "$XT_DIR/xipsecd-taskset"
XIPSECD=$XT_DIR/xipsecd-taskset dp_start gw2
[ "$(cpu_of gw1)" = "$last" ] || xt_fail "--cpus $last: worker 0 on CPU $(cpu_of gw1)"
[ "$(cpu_of gw2)" = "$last" ] || xt_fail "taskset -c $last: worker 0 on CPU $(cpu_of gw2)"
dp_ctl gw1 flush
dp_ctl gw2 flush
dp_tunnel gcm 4 1 $((spi + 1)) $((spi + 2))
dp_ping h1 10.2.0.2
dp_finish
xt_log "PASS: traffic through the tunnel with every transmit budget and with busy polling; workers pinned as told"
exit 0
