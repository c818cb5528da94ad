# tests/netns/units_common.sh: running the installed systemd units' commands in the netns topology
# (sourced by tests/netns/test_units_*.sh after lib.sh and test_dp_common.sh; not a test itself).
# Each gateway GW has its own `make install DESTDIR=$XT_DIR/root-GW`. A command line is read out of
# the installed unit file and expanded as systemd does (the environment file's KEY=value lines, then
# UNIT_VARS; ${VAR} one argument, $VAR split at blanks); an installed path on it (also as the value of
# KEY=/path) becomes the root's copy. It runs inside what setpriv and prlimit can give of the unit's
# sandbox: CapabilityBoundingSet, NoNewPrivileges, LimitMEMLOCK, and a clean environment; and under
# its UMask and SystemCallFilter (unit_sandbox.py).
#   unit_root GW [LINES]        install GW's root and write its xipsec.env (its interfaces, the test's
#                               SADB, control socket and state directory, the root's XDP program;
#                               LINES added)
#   unit_lines ROOT UNIT KEY    the KEY= lines of the installed unit
#   unit_run GW UNIT KEY [N]    run its N-th KEY= command in GW (log $XT_DIR/GW-UNIT-KEY.log)
#   unit_start_xipsecd GW       xipsecd.service's ExecStart in the background (xt_bg xipsecd-GW)
#   unit_ctl GW ARGS            the root's ipsecctl as the operator runs it by hand on GW (the
#                               environment file's XIPSEC_SADB and XIPSEC_STATE_DIR; log
#                               $XT_DIR/GW-ipsecctl.log)
. "$top_srcdir/tests/build/install_common.sh"
UNIT_VARS=()       # more VAR=value words for the expansion (MAINPID=...)
UNIT_ENV=()        # more environment for the command (sanitizer options)
UNIT_PREFIX=()     # a command the wrapped command runs under (nsenter into a mount namespace)

unit_lines() { sed -n "s/^$3=//p" "$1$systemdsystemunitdir/$2"; }

# unit_env ROOT: the environment file's assignments as KEY=value words (systemd's syntax: comments,
# blank lines, double quotes around a value)
unit_env() {
	local line k v
	while IFS= read -r line; do
		case $line in ''|'#'*) continue ;; esac
		k=${line%%=*} v=${line#*=}
		v=${v#\"} v=${v%\"}
		printf '%s=%s\n' "$k" "$v"
	done < "$1$sysconfdir/xipsec/xipsec.env"
}

# unit_argv ROOT CMDLINE: the command's arguments as systemd makes them, NUL-separated; an installed
# path becomes the ROOT's copy
unit_argv() {
	local root=$1 w k v
	local -A env=()
	while IFS= read -r w; do [ -n "$w" ] && env[${w%%=*}]=${w#*=}; done < <(unit_env "$root"; printf "%s\n" "${UNIT_VARS[@]}")
	for w in $2; do
		case $w in
		'${'*'}') k=${w#\$\{} k=${k%\}}; printf '%s\0' "${env[$k]-}" ;;
		'$'*) k=${w#\$}; for v in ${env[$k]-}; do printf '%s\0' "$v"; done ;;
		/*) if [ -e "$root$w" ]; then printf '%s\0' "$root$w"; else printf '%s\0' "$w"; fi ;;
		[A-Z]*=/*) k=${w%%=*} v=${w#*=}
			if [ -e "$root$v" ]; then printf '%s=%s\0' "$k" "$root$v"; else printf '%s\0' "$w"; fi ;;
		*) printf '%s\0' "$w" ;;
		esac
	done
}

# unit_wrap ROOT UNIT: the sandbox of the unit that setpriv/prlimit and unit_sandbox.py can give, as a
# command prefix
unit_wrap() {
	local caps bound=-all c
	caps=$(unit_lines "$1" "$2" CapabilityBoundingSet)
	for c in $caps; do c=${c#CAP_}; bound="$bound,+${c,,}"; done
	WRAP=("${UNIT_PREFIX[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" "${UNIT_ENV[@]}")
	while IFS= read -r c; do WRAP+=("$c"); done < <(unit_env "$1")
	# (a machine that denies raising the limit, as doc/platform.md's, runs under its own: stricter)
	[ "$(unit_lines "$1" "$2" LimitMEMLOCK)" = infinity ] && prlimit --memlock=unlimited:unlimited true 2>/dev/null &&
		WRAP+=(prlimit --memlock=unlimited:unlimited --)
	WRAP+=(setpriv --inh-caps=-all --bounding-set="$bound")
	[ "$(unit_lines "$1" "$2" NoNewPrivileges)" = yes ] && WRAP+=(--no-new-privs)
	WRAP+=(-- python3 "$top_srcdir/tests/netns/unit_sandbox.py" "$1$systemdsystemunitdir/$2")
}

# unit_run GW UNIT KEY [N]: run the unit's N-th (default first) KEY= command on gateway GW, in the
# foreground; its output goes to $XT_DIR/GW-UNIT-KEY.log
unit_run() {
	local gw=$1 root=$XT_DIR/root-$1 line argv=()
	line=$(unit_lines "$root" "$2" "$3" | sed -n "${4:-1}p")
	[ -n "$line" ] || xt_fail "$2 has no $3"
	mapfile -d '' argv < <(unit_argv "$root" "$line")
	unit_wrap "$root" "$2"
	xt_exec "$gw" "${WRAP[@]}" "${argv[@]}" > "$XT_DIR/$gw-$2-$3.log" 2>&1
}

# unit_start_xipsecd GW: xipsecd.service's ExecStart in the background, as xt_bg's xipsecd-GW
unit_start_xipsecd() {
	local gw=$1 root=$XT_DIR/root-$1 argv=()
	mapfile -d '' argv < <(unit_argv "$root" "$(unit_lines "$root" xipsecd.service ExecStart)")
	unit_wrap "$root" xipsecd.service
	xt_bg "$gw" "xipsecd-$gw" "${WRAP[@]}" "${argv[@]}"
	xt_wait 20 "$XIPSECD" --status --ctl "$XT_DIR/$gw.sock" ||
		{ cat "$XT_DIR/xipsecd-$gw.log" >&2; xt_fail "xipsecd.service's ExecStart on $gw did not start"; }
}

# unit_ctl GW ARGS: the root's ipsecctl in GW, with the environment file's settings, as README tells
# the operator to run it by hand; a path under \$sysconfdir in ARGS is given as the root's copy
unit_ctl() {
	local gw=$1 root=$XT_DIR/root-$1 env=()
	shift
	mapfile -t env < <(unit_env "$root")
	xt_exec "$gw" env "${env[@]}" timeout 30 "$root$sbindir/ipsecctl" "$@" > "$XT_DIR/$gw-ipsecctl.log" 2>&1
}

unit_root() {
	local gw=$1 n=${1#gw} root=$XT_DIR/root-$1
	shift
	inst_dest "$root"
	{
		echo "# $gw's environment file (the test's socket, SADB, state directory and counters view; the root's XDP program)"
		echo "XIPSECD_INSIDE=in$n"
		echo "XIPSECD_OUTSIDE=out$n"
		echo "XIPSECD_OPTIONS=\"--ctl $XT_DIR/$gw.sock --workers 1\""
		echo "XIPSEC_SADB=$(dp_sadb_of "$gw")"
		echo "XIPSEC_STATE_DIR=$XT_DISK_DIR/state-$gw"
				echo "XIPSEC_STATS=$(dp_stats_of "$gw")"
		echo "XIPSEC_XDP_OBJ=$root$pkglibdir/xipsec_xdp.o"
		printf '%s\n' "$@"
	} > "$root$sysconfdir/xipsec/xipsec.env"
}
