# tests/netns/lib.sh: helpers for end-to-end tests in network namespaces. Source it from a test:
#
#   . "$top_srcdir/tests/netns/lib.sh"
#
# Every name it creates carries a per-run id ($XT_ID), so two runs never collide. Everything made
# through it (namespaces, background processes, SADB files, the temp dir) is removed by an EXIT trap
# even when the test fails, and the trap then checks that nothing of the run is left: a leak turns
# the test's result into a failure.
#
#   xt_ns_add A            create namespace A (full name: $(xt_ns A)); lo is brought up
#   xt_veth A IFA B IFB [Q] veth pair IFA in A <-> IFB in B, Q rx/tx queues (default 1), both up
#   xt_exec A cmd...       run cmd in A with a timeout ($XT_TIMEOUT seconds, default 60)
#   xt_bg A NAME cmd...    run cmd in A in the background (timeout $XT_BG_TIMEOUT, default 300),
#                          log in $XT_DIR/NAME.log, pid in $XT_DIR/NAME.pid; killed at cleanup
#   xt_stop NAME [SIG]     stop a background process started by xt_bg (default TERM), wait for it
#   xt_wait SECS cmd...    poll cmd every 0.1 s until it succeeds; 1 on timeout
#   xt_sadb NAME           print a unique SADB path (removed at cleanup)
#   xt_require CMD...      skip the test (exit 77) if a command is missing
#   xt_skip MSG / xt_fail MSG / xt_log MSG
#   xt_on_cleanup CMD      run CMD (a string for eval) first at cleanup
# Nothing here needs bpffs: xt_exec enters the namespace with nsenter (ip netns exec remounts /sys).

set -u

XT_ID="xt$$$(printf '%04x' $((RANDOM % 65536)))"
XT_DIR=$(mktemp -d "/tmp/xipsec-$XT_ID.XXXXXX")
# Sequence marks of manually keyed SAs (xipsecd's state directory) stay in the run's own directory
# when no caller chose one (tests/run-test does): a benchmark or a test run by hand never writes the
# machine's /var/lib/xipsec, where they would pile up (20,000 files per 10,000 mobile nodes). On a
# disk (/var/tmp): a state directory on tmpfs is refused, and /tmp may be one.
# XT_DISK_DIR is the run's directory on a disk, removed with XT_DIR.
XT_DISK_DIR=$(mktemp -d "/var/tmp/xipsec-$XT_ID.XXXXXX")
[ -n "${XIPSEC_STATE_DIR:-}" ] || export XIPSEC_STATE_DIR="$XT_DISK_DIR/state"
# Likewise xipsecd's counters view (sadb/sadb_stats.h): never the machine's /run/xipsec-stats.
[ -n "${XIPSEC_STATS:-}" ] || export XIPSEC_STATS="$XT_DIR/stats/view"
XT_TIMEOUT=${XT_TIMEOUT:-60}
XT_BG_TIMEOUT=${XT_BG_TIMEOUT:-300}
XT_NAMESPACES=()
XT_BGS=()
XT_FILES=()
XT_CLEANUP_CMDS=()
XT_TEST=$(basename "$0")

xt_log() { printf '[%s] %s\n' "$XT_TEST" "$*" >&2; }
xt_fail() { xt_log "FAIL: $*"; exit 1; }
xt_skip() { xt_log "SKIP: $*"; exit 77; }

xt_require() {
	local c
	[ "$(id -u)" -eq 0 ] || xt_skip "needs root"
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || xt_skip "needs $c"
	done
}

xt_ns() { printf '%s-%s' "$XT_ID" "$1"; }

xt_ns_add() {
	local ns
	ns=$(xt_ns "$1")
	ip netns add "$ns" || xt_fail "cannot create namespace $ns"
	XT_NAMESPACES+=("$ns")
	ip -n "$ns" link set lo up
}

xt_veth() {
	local a=$1 ifa=$2 b=$3 ifb=$4 q=${5:-1}
	ip link add "$ifa" netns "$(xt_ns "$a")" numtxqueues "$q" numrxqueues "$q" type veth \
		peer name "$ifb" netns "$(xt_ns "$b")" numtxqueues "$q" numrxqueues "$q" ||
		xt_fail "cannot create veth $ifa/$ifb"
	ip -n "$(xt_ns "$a")" link set "$ifa" up
	ip -n "$(xt_ns "$b")" link set "$ifb" up
}

xt_exec() {
	local ns
	ns=$(xt_ns "$1"); shift
	timeout --kill-after=5 "$XT_TIMEOUT" nsenter --net="/run/netns/$ns" "$@"
}

xt_bg() {
	local ns name=$2
	ns=$(xt_ns "$1"); shift 2
	timeout --kill-after=5 "$XT_BG_TIMEOUT" nsenter --net="/run/netns/$ns" "$@" \
		>"$XT_DIR/$name.log" 2>&1 &
	echo $! > "$XT_DIR/$name.pid"
	XT_BGS+=("$name")
}

xt_pid() { cat "$XT_DIR/$1.pid" 2>/dev/null; }

xt_stop() {
	local name=$1 sig=${2:-TERM} pid i k kids
	pid=$(xt_pid "$name") || return 0
	[ -n "$pid" ] || return 0
	# The recorded pid is timeout(1)'s; signal its child (the real program) and timeout itself.
	kids=$(pgrep -P "$pid" | tr '\n' ' ')
	pkill "-$sig" -P "$pid" 2>/dev/null
	kill "-$sig" "$pid" 2>/dev/null
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		pkill -KILL -P "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	# timeout(1) killed with KILL leaves its child to exit on its own: a program that is restarted
	# next must find its predecessor gone (its sockets, devices and files released)
	for k in $kids; do
		for i in $(seq 100); do kill -0 "$k" 2>/dev/null || break; sleep 0.1; done
	done
	return 0
}

xt_wait() {
	local secs=$1 end; shift
	end=$(( $(date +%s%N) / 1000000 + secs * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

xt_sadb() {
	local p="/dev/shm/xipsec-$XT_ID-$1.sadb"
	XT_FILES+=("$p")
	printf '%s' "$p"
}

xt_on_cleanup() { XT_CLEANUP_CMDS+=("$1"); }

# Processes of this run still alive: anything whose command line or environment names the run id,
# and anything still inside one of our namespaces.
xt_leftover_pids() {
	local ns p
	pgrep -f -- "$XT_ID" 2>/dev/null | grep -v "^$$\$" || true
	for ns in "${XT_NAMESPACES[@]}"; do
		[ -e "/run/netns/$ns" ] && ip netns pids "$ns" 2>/dev/null
	done
	return 0
}

xt_cleanup() {
	local rc=$? name ns f leaks=()
	trap - EXIT INT TERM
	set +e
	for f in "${XT_CLEANUP_CMDS[@]}"; do eval "$f" >/dev/null 2>&1; done
	for name in "${XT_BGS[@]}"; do xt_stop "$name" TERM; done
	for ns in "${XT_NAMESPACES[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	done
	sleep 0.2
	for ns in "${XT_NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
	for f in "${XT_FILES[@]}"; do rm -f "$f"; done
	[ "${XT_KEEP_DIR:-}" = 1 ] && xt_log "logs kept in $XT_DIR" || rm -rf "$XT_DIR"
	rm -rf "$XT_DISK_DIR"

	# The leak check: nothing of this run may survive it.
	sleep 0.2
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -- "^$XT_ID-"); do
		leaks+=("namespace $ns")
	done
	for f in /dev/shm/xipsec-"$XT_ID"-*; do [ -e "$f" ] && leaks+=("file $f"); done
	for p in $(pgrep -f -- "$XT_ID" 2>/dev/null); do
		[ "$p" = "$$" ] || leaks+=("process $p ($(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null))")
	done
	if [ ${#leaks[@]} -gt 0 ]; then
		xt_log "LEAK: the run left behind: ${leaks[*]}"
		for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -- "^$XT_ID-"); do
			ip netns del "$ns" 2>/dev/null
		done
		for p in $(pgrep -f -- "$XT_ID" 2>/dev/null); do
			[ "$p" = "$$" ] || { kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; }
		done
		rm -f /dev/shm/xipsec-"$XT_ID"-* 2>/dev/null
		[ "$rc" -eq 0 ] && rc=1
	fi
	exit "$rc"
}
trap xt_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
