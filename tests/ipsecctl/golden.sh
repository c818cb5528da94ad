#!/usr/bin/env bash
# tests/ipsecctl/golden.sh: ipsecctl's golden-file tests (ipsecctl -nv -f file | diff -u file.ok -,
# as OpenBSD's regress does). Every tests/ipsecctl/*.in has a *.ok with the exact expected output;
# the file name says how it is run:
#   load-*.in  `ipsecctl -n load` (stdout+stderr+exit); the output must also parse back to itself
#   err-*.in   `ipsecctl load` on an SADB holding base.conf: the exact error messages, exit 1, and
#              the SADB unchanged: same generation, same `show --json` before and after
#   show-*.in  load into an empty SADB, then `show --json --no-times` and `show --no-times`
#   cmd-*.in   one ipsecctl command line per line on a fresh SADB ("%gen" prints the generation,
#              "%poke SPI field=value..." writes runtime counters as the dataplane would,
#              ${POL[i]} is the id of the i-th listed policy)
# UPDATE_GOLDEN=1 rewrites the .ok files from the current output (review the diff before committing).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
CTL="$top_builddir/ipsecctl/ipsecctl"
DIR="$top_srcdir/tests/ipsecctl"
T=$(mktemp -d /tmp/ipsecctl-golden.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0 n=0

[ -x "$CTL" ] || { echo "golden.sh: $CTL not built" >&2; exit 1; }
# ipsecctl reads key files only when no one else can read them, and a checkout's modes are its
# umask's: the files run from a copy with the modes ipsecctl asks for.
mkdir "$T/src" && cp -R "$DIR"/. "$T/src" &&
	chmod -R go-w "$T/src" && chmod go-rwx "$T/src"/keys/* && cd "$T/src" || exit 1

ctl() { "$CTL" --sadb "$DB" "$@"; }
gen() { ctl --json show info | sed -n 's/^ *"generation": \([0-9]*\),*$/\1/p'; }

check() { # name, actual-file
	local ok="$DIR/${1%.in}.ok"
	n=$((n + 1))
	# The temporary directory differs per run: name it by a fixed word. Policy ids and the
	# segment size are libsadb's choice, not part of what these files specify.
	sed -i -e "s|$T|\$T|g" -e 's/^\( *"id": \)[0-9]*/\1ID/' -e 's/^\(\t# id \)[0-9]*/\1ID/' \
		-e 's/^\( *"size": \)[0-9]*/\1SIZE/' -e 's/(id [0-9]*)/(id ID)/' -e 's/^\(# SADB .*, \)[0-9]* bytes$/\1SIZE bytes/' "$2"
	if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$2" "$ok"
	elif ! diff -u "$ok" "$2" > "$T/diff"; then
		echo "FAIL: $1"; cat "$T/diff"; fail=$((fail + 1)); return 1
	fi
	echo "ok: $1"
}

newdb() {
	DB="$T/sadb.$1"
	rm -f "$DB"
	ctl init max-sa "${2:-64}" max-policy 64 || { echo "FAIL: init $DB"; exit 1; }
}

for f in load-*.in; do
	[ -e "$f" ] || continue
	DB="$T/absent"
	{ "$CTL" --sadb "$DB" -n load "$f"; echo "[exit $?]"; } > "$T/out" 2>&1
	check "$f" "$T/out" || continue
	# Round trip: the normalised output parses to the same normalised output.
	"$CTL" --sadb "$DB" -n load "$f" > "$T/norm1" 2>/dev/null
	if ! "$CTL" --sadb "$DB" -n load "$T/norm1" > "$T/norm2" 2> "$T/err" ||
	   ! diff -u "$T/norm1" "$T/norm2"; then
		echo "FAIL: $f: -n output does not parse back to itself"; cat "$T/err"
		fail=$((fail + 1))
	fi
done

for f in err-*.in; do
	[ -e "$f" ] || continue
	newdb err 16
	ctl load base.conf || { echo "FAIL: $f: base.conf does not load"; fail=$((fail + 1)); continue; }
	g0=$(gen)
	ctl --json --no-times show > "$T/before"
	{ ctl load "$f"; echo "[exit $?]"; } > "$T/out" 2>&1
	check "$f" "$T/out"
	g1=$(gen)
	ctl --json --no-times show > "$T/after"
	if [ -z "$g0" ] || [ "$g0" != "$g1" ] || ! cmp -s "$T/before" "$T/after"; then
		echo "FAIL: $f changed the SADB (generation $g0 -> $g1)"
		diff -u "$T/before" "$T/after" | head -40
		fail=$((fail + 1))
	fi
	if ! grep -q '^\[exit 1\]$' "$T/out"; then
		echo "FAIL: $f: exit status is not 1"; fail=$((fail + 1))
	fi
done

for f in show-*.in; do
	[ -e "$f" ] || continue
	newdb show
	{
		ctl load "$f"; echo "[load exit $?]"
		ctl --json --no-times show; echo "[exit $?]"
		ctl --no-times show; echo "[exit $?]"
	} > "$T/out" 2>&1
	check "$f" "$T/out"
done

for f in cmd-*.in; do
	[ -e "$f" ] || continue
	newdb cmd
	while IFS= read -r line; do
		case "$line" in
		''|'#'*) continue ;;
		%gen) echo "% generation $(gen)"; continue ;;
		%poke\ *) # the dataplane's part: write runtime counters (rt-poke.c)
			eval "set -- ${line#%poke }"
			"$top_builddir/tests/ipsecctl/rt-poke" "$DB" "$@" 2>&1 || echo "[poke failed]"
			continue ;;
		esac
		echo "\$ ipsecctl $line"
		# ${POL[i]}: the id of the i-th policy listed now (ids are libsadb's choice).
		case "$line" in *'${POL['*)
			POL=($(ctl --json policy list | sed -n 's/^ *"id": \([0-9]*\),*$/\1/p')) ;;
		esac
		eval "set -- $line"
		ctl "$@" 2>&1
		rc=$?
		[ "$rc" = 0 ] || echo "[exit $rc]"
	done < "$f" > "$T/out"
	check "$f" "$T/out"
done

# Keys appear in no listing without --show-keys (doc/architecture.md rule 3), and with it they do.
newdb keys
ctl load show-basic.in > /dev/null
keyhex="0102030405060708090a0b0c0d0e0f10 2122232425262728292a2b2c2d2e2f30 0000000000000000000000000000000000000000000000000000000000000002"
{
	ctl show; ctl --json show; ctl --no-times show sa; ctl sa get 0x1000; ctl --json sa get 0x1001
	ctl sa list; ctl policy list; ctl --json monitor --count 1 --interval 0.01
	ctl monitor --count 1 --interval 0.01; ctl show stats
} > "$T/listings" 2>&1
n=$((n + 1))
leak=
for k in $keyhex; do grep -q "$k" "$T/listings" && leak="$leak $k"; done
ctl --show-keys --json show sa > "$T/withkeys"
for k in $keyhex; do grep -q "$k" "$T/withkeys" || leak="$leak (missing with --show-keys: $k)"; done
if [ -z "$leak" ]; then echo "ok: keys hidden without --show-keys"
else echo "FAIL: key exposure:$leak"; fail=$((fail + 1)); fi

# The SADB path from $XIPSEC_SADB when --sadb is not given (libsadb's sadb_default_path()).
newdb env
ctl load base.conf > /dev/null
n=$((n + 1))
if [ "$(XIPSEC_SADB="$DB" "$CTL" --json show info | sed -n 's/^ *"n_sa": \([0-9]*\),*$/\1/p')" = 2 ]; then
	echo "ok: XIPSEC_SADB"
else
	echo "FAIL: XIPSEC_SADB is not used"; fail=$((fail + 1))
fi

# Without libvici (a host without strongswan-swanctl, as XIPSEC_VICI_LIB=/nonexistent stands for),
# `ipsecctl ike list` names the package and fails; `ipsecctl metrics` leaves the IKE families out.
n=$((n + 1))
{ XIPSEC_VICI_LIB=/nonexistent "$CTL" ike --run-dir "$T" list; echo "[exit $?]"; } > "$T/novici" 2>&1
if grep -qx 'ipsecctl: ike: IKE commands need strongswan-swanctl (libvici): apt install strongswan-swanctl' "$T/novici" &&
   grep -qx '\[exit 1\]' "$T/novici"; then
	echo "ok: ike list without libvici"
else
	echo "FAIL: ike list without libvici:"; cat "$T/novici"; fail=$((fail + 1))
fi
n=$((n + 1))
if XIPSEC_VICI_LIB=/nonexistent ctl metrics --ike-run-dir "$T" > "$T/novici" 2>&1 &&
   grep -qx 'xipsec_ike_up 0' "$T/novici" && ! grep -q '^xipsec_ike_sas' "$T/novici"; then
	echo "ok: metrics without libvici"
else
	echo "FAIL: metrics without libvici:"; cat "$T/novici"; fail=$((fail + 1))
fi

echo "golden.sh: $n checks, $fail failed"
[ "$n" -gt 0 ] && [ "$fail" = 0 ]
