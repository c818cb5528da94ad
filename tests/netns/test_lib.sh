#!/usr/bin/env bash
# tests/netns/test_lib.sh: self-test of tests/netns/lib.sh: a multi-queue topology carries a ping,
# background processes are stopped, and a test that leaks a namespace, a process or an SADB file is
# turned into a failure by the harness (and the leak is removed).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip nsenter ping timeout

xt_ns_add a
xt_ns_add b
xt_veth a va b vb 2
xt_exec a ip addr add 10.250.0.1/24 dev va
xt_exec b ip addr add 10.250.0.2/24 dev vb
nq=$(xt_exec a ip -d link show va | grep -o 'numrxqueues [0-9]*' | awk '{print $2}')
[ "$nq" = 2 ] || xt_fail "expected 2 rx queues on va, found $nq"
xt_exec a ping -c 2 -i 0.2 -W 2 10.250.0.2 >/dev/null || xt_fail "no ping across the veth pair"

xt_bg b listener sleep 1000
xt_wait 5 kill -0 "$(xt_pid listener)" || xt_fail "background process did not start"
xt_stop listener
kill -0 "$(xt_pid listener)" 2>/dev/null && xt_fail "xt_stop left the process running"
xt_wait 1 false && xt_fail "xt_wait reported success of false"

# A child test that leaks: it must fail, and must not leave its leak behind.
for leak in namespace process file; do
	cat > "$XT_DIR/leaky.sh" <<LEAK
. "$top_srcdir/tests/netns/lib.sh"
case $leak in
namespace) ip netns add "\$XT_ID-leaked" ;;
process) setsid sh -c 'sleep 30; :' "\$XT_ID" </dev/null >/dev/null 2>&1 & ;;
file) : > "/dev/shm/xipsec-\$XT_ID-leaked.sadb" ;;
esac
exit 0
LEAK
	out=$(top_srcdir=$top_srcdir bash "$XT_DIR/leaky.sh" 2>&1) && xt_fail "a test leaking a $leak passed"
	echo "$out" | grep -q "LEAK" || xt_fail "no LEAK report for a leaked $leak: $out"
	id=$(echo "$out" | grep -o 'xt[0-9a-f]*-leaked' | head -1)
	[ -n "$id" ] || id=$(echo "$out" | grep -o 'xt[0-9a-f]*' | head -1)
	if [ "$leak" = namespace ] && ip netns list | grep -q -- "-leaked"; then
		xt_fail "leaked namespace was not removed"
	fi
done
xt_log "ok"
