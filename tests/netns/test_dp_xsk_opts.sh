#!/usr/bin/env bash
# tests/netns/test_dp_xsk_opts.sh: xipsecd's AF_XDP socket options. --tx-budget and --busy-poll
# refuse values outside their ranges with a message naming the option and the range; an AES-GCM
# tunnel (h1 - gw1 - gw2 - h2) carries ping, TCP (2 MB each way, compared) and UDP with the kernel's
# transmit budget (--tx-budget 0), the default one, the largest (4096), and with busy polling (the
# interfaces' NAPI deferral set as xipsecd(8) says). On a kernel that has XDP_MAX_TX_SKB_BUDGET
# (6.17 and later) no socket refuses its budget.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss
. "$top_srcdir/tests/netns/test_dp_common.sh"

for bad in "--tx-budget 16:--tx-budget takes 0 or 32..4096" "--tx-budget 4097:--tx-budget takes 0 or 32..4096" \
	"--tx-budget x:--tx-budget takes 0 or 32..4096" "--busy-poll=1:busy-poll"; do
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
xt_log "PASS: traffic through the tunnel with every transmit budget and with busy polling"
exit 0
