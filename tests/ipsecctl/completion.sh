#!/usr/bin/env bash
# tests/ipsecctl/completion.sh: the bash completion of ipsecctl (ipsecctl/completion/ipsecctl):
# sourced, it registers itself for ipsecctl, and completes commands, options, subcommands, the -s
# listings and file names after load.
set -u
: "${top_srcdir:?}"
T=$(mktemp -d /tmp/ipsecctl-compl.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0 n=0

# shellcheck source=/dev/null
source "$top_srcdir/ipsecctl/completion/ipsecctl" || { echo "FAIL: the script does not source"; exit 1; }

n=$((n + 1))
if complete -p ipsecctl 2>/dev/null | grep -q -- '-F _ipsecctl ipsecctl$'; then echo "ok: complete -p ipsecctl"
else echo "FAIL: complete -p ipsecctl: $(complete -p ipsecctl 2>&1)"; fail=$((fail + 1)); fi

# expect "WORDS..." "EXPECTED": what _ipsecctl offers for the command line WORDS (the last word is
# the one completed), sorted and space-separated.
expect() {
	local line=$1 want=$2 got
	read -r -a COMP_WORDS <<< "$line"
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_ipsecctl 2>/dev/null
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
	n=$((n + 1))
	if [ "$got" = "$want" ]; then echo "ok: '$line' -> $want"
	else echo "FAIL: '$line': expected '$want', got '$got'"; fail=$((fail + 1)); fi
}

expect "ipsecctl lo" "load"
expect "ipsecctl re" "reload"
expect "ipsecctl --vers" "--version"
expect "ipsecctl -s " "all flow sa"
expect "ipsecctl -s f" "flow"
expect "ipsecctl show h" "home-agent"
expect "ipsecctl cluster " "active segments standby"
expect "ipsecctl --json ike " "--json --run-dir --vici help initiate list maxqm stats terminate"
expect "ipsecctl ike maxqm s" "set show"
expect "ipsecctl flush " "all policy sa"
mkdir "$T/d" && touch "$T/d/gw.conf" "$T/d/gw.keys"
expect "ipsecctl load $T/d/gw.c" "$T/d/gw.conf"
expect "ipsecctl -f $T/d/gw.k" "$T/d/gw.keys"

echo "completion.sh: $n checks, $fail failed"
[ "$fail" = 0 ]
