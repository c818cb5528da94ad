#!/usr/bin/env bash
# tests/ipsecctl/files.sh: ipsecctl trusts only configuration and key files that no one else could
# have written (and key files no one else can read): another owner's file, one writable by others,
# a symbolic link, a FIFO (which must not hang the load) and a directory are refused, each with a
# message that names the file and the problem, for a configuration file, an included one and a key
# file alike. A file made as the manual says is accepted.
set -u
: "${top_builddir:?}"
CTL="$top_builddir/ipsecctl/ipsecctl"
T=$(mktemp -d /tmp/ipsecctl-files.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0 n=0
[ -x "$CTL" ] || { echo "files.sh: $CTL not built" >&2; exit 1; }
cd "$T" || exit 1
umask 022
unset XIPSEC_TRUST_ANY_FILE

key=0x0102030405060708090a0b0c0d0e0f1011121314
printf '%s\n' "$key" > good.key && chmod 600 good.key
conf() { # file, key clause
	printf 'sa esp tunnel from 192.0.2.1 to 192.0.2.2 spi 0x1000 out reqid 1 enc aes128gcm16 %s\n' "$2" > "$1"
}
conf good.conf "key $key"

# refused FILE-TO-LOAD EXPECTED-TEXT: -n load fails within 10 s, saying EXPECTED-TEXT
refused() {
	local out rc
	n=$((n + 1))
	out=$(timeout 10 "$CTL" --sadb "$T/absent" -n load "$1" 2>&1)
	rc=$?
	if [ "$rc" = 124 ]; then echo "FAIL: $1: the load hangs"; fail=$((fail + 1)); return; fi
	if [ "$rc" != 1 ] || [[ $out != *"$2"* ]]; then
		echo "FAIL: $1: expected exit 1 and '$2', got exit $rc: $out"; fail=$((fail + 1)); return
	fi
	echo "ok: $1 refused: $2"
}
accepted() {
	n=$((n + 1))
	if out=$(timeout 10 "$CTL" --sadb "$T/absent" -n load "$1" 2>&1); then echo "ok: $1 accepted"
	else echo "FAIL: $1 refused: $out"; fail=$((fail + 1)); fi
}

accepted good.conf
conf keyfile.conf "key file good.key"
accepted keyfile.conf

# configuration files
cp good.conf world.conf && chmod 666 world.conf
refused world.conf "world.conf: writable by others (mode 0666); chmod go-w"
cp good.conf group.conf && chmod 664 group.conf
refused group.conf "group.conf: writable by its group (mode 0664); chmod go-w"
ln -s good.conf link.conf
refused link.conf "link.conf: a symbolic link"
mkfifo fifo.conf
refused fifo.conf "fifo.conf: a FIFO, not a regular file"
mkdir dir.conf
refused dir.conf "dir.conf: a directory, not a regular file"
if [ "$(id -u)" = 0 ]; then
	cp good.conf foreign.conf && chown 65534 foreign.conf
	refused foreign.conf "foreign.conf: owned by uid 65534, neither root nor you"
	# the override is for tests that must read such a file, and relaxes only owner and mode
	n=$((n + 1))
	if XIPSEC_TRUST_ANY_FILE=1 "$CTL" --sadb "$T/absent" -n load foreign.conf > /dev/null 2>&1 &&
	   ! XIPSEC_TRUST_ANY_FILE=1 timeout 10 "$CTL" --sadb "$T/absent" -n load fifo.conf > /dev/null 2>&1; then
		echo "ok: XIPSEC_TRUST_ANY_FILE=1 accepts another owner's file, not a FIFO"
	else
		echo "FAIL: XIPSEC_TRUST_ANY_FILE"; fail=$((fail + 1))
	fi
else
	echo "skip: another owner's file (needs root to chown)"
fi

# an included file goes through the same checks, said at the include statement
printf 'include "world.conf"\n' > inc.conf
refused inc.conf "inc.conf:1:9: include: world.conf: writable by others (mode 0666); chmod go-w"
printf 'include "fifo.conf"\n' > incfifo.conf
refused incfifo.conf "incfifo.conf:1:9: include: fifo.conf: a FIFO, not a regular file"

# key files: not readable by others either
cp good.key readable.key && chmod 644 readable.key
conf k-readable.conf "key file readable.key"
refused k-readable.conf "readable.key: a key file readable by others (mode 0644); chmod go-rwx"
cp good.key world.key && chmod 602 world.key
conf k-world.conf "key file world.key"
refused k-world.conf "world.key: writable by others (mode 0602); chmod go-w"
ln -s good.key link.key
conf k-link.conf "key file link.key"
refused k-link.conf "link.key: a symbolic link"
mkfifo fifo.key
conf k-fifo.conf "key file fifo.key"
refused k-fifo.conf "fifo.key: a FIFO, not a regular file"
if [ "$(id -u)" = 0 ]; then
	cp good.key foreign.key && chown 65534 foreign.key
	conf k-foreign.conf "key file foreign.key"
	refused k-foreign.conf "foreign.key: owned by uid 65534, neither root nor you"
fi

echo "files.sh: $n checks, $fail failed"
[ "$fail" = 0 ]
