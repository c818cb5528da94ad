#!/usr/bin/env bash
# tests/security/test_sadb_file.sh: no program trusts a SADB file it did not make. /dev/shm is
# world-writable, so the SADB's name may already be taken: by a file another user made (mode 0666,
# readable by them), by a file of ours with the wrong mode (0644), by a symbolic link to a good SADB,
# by a directory or by a FIFO. For each, every program that opens the SADB (ipsecctl show and load,
# xipsecd, xipsec-iked, dp_testctl) must exit non-zero without hanging, say which path is wrong and
# why, and leave the file (or the link's target) byte for byte as it was: no key byte written.
# A positive control shows that the same load into a SADB of ours does write the key, so the "key
# absent" check can fail. No network namespace is needed: xipsecd checks its SADB before it looks
# at any interface, and the interfaces named here do not exist.
. "$top_srcdir/tests/netns/lib.sh"
xt_require setpriv mkfifo cmp
PY=${PYTHON:-/usr/bin/python3}
CTL="$top_builddir/ipsecctl/ipsecctl"
XIPSECD="$top_builddir/dataplane/xipsecd/xipsecd"
TESTCTL="$top_builddir/tests/tools/dp_testctl"
IKED="$top_builddir/ike/xipsec-iked"
for p in "$CTL" "$XIPSECD" "$TESTCTL"; do [ -x "$p" ] || xt_skip "$p not built"; done
[ "$(id -u)" -eq 0 ] || xt_skip "needs root (files of another uid)"
NOBODY=65534
T=20 # seconds any one program may take

# A distinctive key: if any program wrote the SA, these bytes would be in the file.
KEY=5eca7e5eca7e5eca7e5eca7e5eca7e5eca7e5eca
KEY2=0b5e55ed0b5e55ed0b5e55ed0b5e55ed0b5e55ed
cat > "$XT_DIR/sa.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x1000:0x1001 enc aes128gcm16 key 0x$KEY:0x$KEY2
CONF
# The first 16 bytes: the SA record keeps the AES key and the 4-byte salt in separate fields.
# Searched as bytes in the mapped file: a SADB of the default size is 160 MB, and its hex dump
# (one 320 MB line once the newlines are gone) took grep a minute to read. 0: there, 1: not there,
# 2: the file could not be read (neither "there" nor "not there" then).
has_key() {
	"$PY" -c 'import mmap, sys
try:
    with open(sys.argv[1], "rb") as f:
        if f.seek(0, 2) == 0:
            sys.exit(1)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            sys.exit(0 if m.find(bytes.fromhex(sys.argv[2])) >= 0 else 1)
except OSError as e:
    print("has_key:", e, file=sys.stderr)
    sys.exit(2)' "$1" "${KEY:0:32}"
}
# sadb NAME: set $P to a unique SADB path that the harness removes (xt_sadb must run in this shell,
# not in a $(...) subshell, to record it).
sadb() { xt_sadb "$1" > "$XT_DIR/path"; P=$(<"$XT_DIR/path"); }

# Positive control: a SADB of ours takes the load, and the key is then in the file.
sadb good; good=$P
timeout "$T" "$CTL" --sadb "$good" load "$XT_DIR/sa.conf" || xt_fail "load into a SADB of ours failed"
has_key "$good" || xt_fail "control: the loaded key is not found in the SADB (the key check proves nothing)"
rm -f "$good"

# The target of the symbolic link: a good, empty SADB of ours outside /dev/shm.
target="$XT_DIR/target.sadb"
timeout "$T" "$CTL" --sadb "$target" init max-sa 16 max-policy 16 || xt_fail "init of the link target"
cp "$target" "$XT_DIR/target.orig"

# make_case PATH KIND: create the hostile object at PATH; print what its message must say.
make_case() {
	local p=$1 kind=$2
	case $kind in
	other)
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups sh -c \
			"umask 0; printf 'made by nobody\n' > '$p'" || xt_fail "cannot create $p as uid $NOBODY"
		[ "$(stat -c '%u %a' "$p")" = "$NOBODY 666" ] || xt_fail "$p: $(stat -c '%u %a' "$p")"
		echo "owned by uid $NOBODY with mode 0666" ;;
	mode0644)
		timeout "$T" "$CTL" --sadb "$p" init max-sa 16 max-policy 16 || xt_fail "init $p"
		chmod 0644 "$p"
		echo "owned by uid 0 with mode 0644" ;;
	symlink)
		ln -s "$target" "$p"
		echo "a symbolic link (to $target" ;;
	dir)
		mkdir -m 0700 "$p"
		echo "a directory owned by uid 0 with mode 0700" ;;
	fifo)
		mkfifo -m 0600 "$p"
		echo "a FIFO owned by uid 0 with mode 0600" ;;
	esac
}

# snapshot PATH DEST / unchanged PATH DEST: what a hostile object is, before and after.
snapshot() {
	if [ -L "$1" ]; then readlink "$1" > "$2"
	elif [ -d "$1" ]; then { stat -c '%F %u %a' "$1"; ls -A "$1"; } > "$2"
	elif [ -p "$1" ]; then stat -c '%F %u %a' "$1" > "$2"
	else cp "$1" "$2"; stat -c '%u %a %s' "$1" >> "$2.meta"; fi
}
unchanged() {
	local now="$XT_DIR/now"
	rm -f "$now" "$now.meta"
	snapshot "$1" "$now"
	cmp -s "$2" "$now" || return 1
	[ ! -f "$2.meta" ] || cmp -s "$2.meta" "$now.meta" || return 1
	if [ -f "$1" ] && [ ! -L "$1" ]; then ! has_key "$1" || return 1; fi
	return 0
}

# run CASE PATH WANT LABEL cmd...: the program must fail in time with a message naming PATH and WANT.
run() {
	local kind=$1 p=$2 want=$3 label=$4 out rc; shift 4
	out=$(timeout --kill-after=5 "$T" "$@" 2>&1 </dev/null); rc=$?
	[ "$rc" -ne 0 ] || xt_fail "$kind: $label accepted $p (exit 0): $out"
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || xt_fail "$kind: $label hung on $p (killed by timeout)"
	case $out in
	*"$p"*"$want"*"expected a regular file owned by uid 0 with mode 0600"*) ;;
	*) xt_fail "$kind: $label (exit $rc) does not name $p and '$want': $out" ;;
	esac
	echo "$kind: $label: exit $rc: $(printf '%s' "$out" | grep -m1 "$p" | cut -c1-200)"
}

for kind in other mode0644 symlink dir fifo; do
	sadb "$kind"; p=$P
	[ "$kind" = dir ] && xt_on_cleanup "rmdir '$p'"
	want=$(make_case "$p" "$kind")
	snapshot "$p" "$XT_DIR/$kind.orig"
	run "$kind" "$p" "$want" "ipsecctl show" "$CTL" --sadb "$p" show
	run "$kind" "$p" "$want" "ipsecctl load" "$CTL" --sadb "$p" load "$XT_DIR/sa.conf"
	run "$kind" "$p" "$want" "xipsecd" "$XIPSECD" --inside xtnone0 --outside xtnone1 --sadb "$p" \
		--ctl "" --tun none
	run "$kind" "$p" "$want" "dp_testctl" "$TESTCTL" "$p" sa out 0x2000 esp tunnel 192.0.2.1 192.0.2.2 \
		enc aes-gcm-16 "$KEY"
	if [ -x "$IKED" ]; then
		mkdir -p "$XT_DIR/iked-$kind/conf" "$XT_DIR/iked-$kind/run"
		run "$kind" "$p" "$want" "xipsec-iked" env ASAN_OPTIONS=detect_leaks=0 "$IKED" \
			--conf-dir "$XT_DIR/iked-$kind/conf" --run-dir "$XT_DIR/iked-$kind/run" --sadb "$p"
	elif [ "${CI:-}" = true ]; then
		xt_fail "xipsec-iked not built"
	fi
	unchanged "$p" "$XT_DIR/$kind.orig" || xt_fail "$kind: $p changed"
	cmp -s "$target" "$XT_DIR/target.orig" || xt_fail "$kind: the symbolic link's target $target changed"
done

# ipsecctl destroy removes the name, not what a symbolic link points to.
p=/dev/shm/xipsec-$XT_ID-symlink.sadb # made above
timeout "$T" "$CTL" --sadb "$p" destroy || xt_fail "destroy of a symbolic link"
[ ! -e "$p" ] && [ ! -L "$p" ] || xt_fail "destroy left $p"
cmp -s "$target" "$XT_DIR/target.orig" || xt_fail "destroy changed the link's target"
xt_log "PASS: 5 hostile SADB names x 5 programs refused, nothing written"
