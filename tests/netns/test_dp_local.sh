#!/usr/bin/env bash
# tests/netns/test_dp_local.sh: plaintext from the outside addressed to the gateway itself meets the
# gateway's inbound SPD in the XDP program (RFC 4301 section 5.2): what a PROTECT policy covers is
# dropped and counted (policy_mismatch) while IKE (UDP 500) and traffic no policy covers still reach
# the gateway's kernel; a BYPASS policy of higher priority lets it through again; the inside is not
# concerned; with more policies than the program's table holds, only the addresses a policy left out
# covers fail closed. Policies are added while xipsecd runs: it follows the SADB.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
dp_bypass_all
xt_exec gw1 ip addr add 192.0.2.11/24 dev out1
dp_start gw1

# mismatch: the sum of the workers' policy_mismatch drops
mismatch() {
	dp_status gw1 > "$XT_DIR/st1.json"
	dp_json "$XT_DIR/st1.json" "sum(w['drops'].get('policy_mismatch', 0) for w in j['worker'])"
}

# before any inbound policy the gateway answers
dp_ping gw2 192.0.2.1
dp_ping gw2 fd00::1

dp_ctl gw1 policy in protect 192.0.2.2/32 192.0.2.1/32 transport
dp_ctl gw1 policy in protect fd00::2/128 fd00::1/128 transport
sleep 0.3
m0=$(mismatch)
xt_exec gw2 ping -q -c 3 -i 0.1 -W 1 192.0.2.1 >/dev/null &&
	xt_fail "plaintext ping to the gateway reached it although a PROTECT policy covers it"
xt_exec gw2 ping -q -c 3 -i 0.1 -W 1 fd00::1 >/dev/null &&
	xt_fail "plaintext IPv6 ping to the gateway reached it although a PROTECT policy covers it"
# the control thread adds the program's drops to the workers' counters within a few milliseconds
counted() { [ "$(mismatch)" -ge $((m0 + 6)) ]; }
xt_wait 5 counted || xt_fail "local SPD drops not counted: policy_mismatch $m0 -> $(mismatch)"
m1=$(mismatch)

# IKE always reaches charon's kernel (rule 8), whatever the policy covers
xt_bg gw1 ike500 socat -u UDP4-RECV:500 -
sleep 0.3
printf 'IKE-500' | xt_exec gw2 socat -u - UDP4-SENDTO:192.0.2.1:500
xt_wait 5 grep -q IKE-500 "$XT_DIR/ike500.log" || xt_fail "IKE on UDP 500 did not reach gw1's kernel"
xt_stop ike500

# an address of the gateway no policy covers, and the inside, still answer
dp_ping gw2 192.0.2.11
dp_ping h1 10.1.0.1

# a BYPASS policy of higher priority (lower value) for ICMP wins over the PROTECT one
dp_ctl gw1 policy in bypass 192.0.2.2/32 192.0.2.1/32 proto 1 prio 10
sleep 0.3
dp_ping gw2 192.0.2.1
[ "$(mismatch)" -eq "$m1" ] || xt_fail "bypassed pings counted as drops"

# More inbound policies than the XDP program's table holds (256), as hundreds of tunnels to the
# inside network make: 300 that cover the inside address 10.1.0.1, the last of them (the lowest
# priority, so left out of the table) protecting gw2's plaintext to it. The address a policy left
# out covers fails closed; the outside addresses no such policy covers still answer.
for i in $(seq 0 298); do
	echo "policy in protect 198.18.$((i / 250)).$((i % 250 + 1))/32 10.1.0.0/24 transport"
done > "$XT_DIR/many"
while read -r cmd; do
	# shellcheck disable=SC2086
	dp_ctl gw1 $cmd
done < "$XT_DIR/many"
dp_ctl gw1 policy in protect 192.0.2.2/32 10.1.0.1/32 transport prio 1000
# (said once, when the table first overflows: the policies left out cover one address of gw1's,
# 10.1.0.1, which netlink reports twice, as IFA_LOCAL and IFA_ADDRESS)
xt_wait 5 grep -q "inbound policies cover the gateway's own addresses.*plaintext to the [0-9]* address" \
	"$XT_DIR/xipsecd-gw1.log" || xt_fail "xipsecd did not say the local SPD's table overflowed"
grep -q "plaintext to the 1 address(es) the others cover" "$XT_DIR/xipsecd-gw1.log" ||
	xt_fail "xipsecd counted other than the one address the left-out policies cover: $(grep "inbound policies cover" "$XT_DIR/xipsecd-gw1.log")"
sleep 0.3
m2=$(mismatch)
dp_ping gw2 192.0.2.11
dp_ping gw2 192.0.2.1
xt_exec gw2 ping -q -c 3 -i 0.1 -W 1 10.1.0.1 >/dev/null &&
	xt_fail "plaintext to the inside address reached the gateway although a policy left out of the XDP table protects it"
counted2() { [ "$(mismatch)" -ge $((m2 + 3)) ]; }
xt_wait 5 counted2 || xt_fail "the overflow's drops not counted: policy_mismatch $m2 -> $(mismatch)"
dp_finish
exit 0
