#!/usr/bin/env bash
# tests/ipsecctl/live.sh: `ipsecctl show --json` against counters written by xipsec's real ESP/AH
# engine. ipsecctl loads mirrored SA pairs into two SADBs (gateways A and B); esp-drive runs libesp
# over them with the SADBs' runtime areas as its counters: A encrypts N+1 packets, B decrypts N,
# then gets a replay and a corrupted packet. ipsecctl must then show, per transform: A's outbound
# packets/bytes and reserved sequence numbers, B's inbound packets/bytes, replay window top and
# fill, one replay and one ICV drop, and the same drops in `show stats`.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON:-/usr/bin/python3}
CTL="$top_builddir/ipsecctl/ipsecctl"
DRIVE="$top_builddir/tests/ipsecctl/esp-drive"
T=$(mktemp -d /tmp/ipsecctl-live.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$DRIVE" ] || { echo "esp-drive not built"; exit 1; }
hex() { head -c "$1" /dev/urandom | od -An -v -tx1 | tr -d ' \n'; }
N=50
fail=0

# transform, keying of the pair statement (OUT:IN as seen from A)
while read -r name proto enc; do
	A="$T/a.$name" B="$T/b.$name"
	"$CTL" --sadb "$A" init max-sa 16 max-policy 16 && "$CTL" --sadb "$B" init max-sa 16 max-policy 16 || exit 1
	case "$enc" in
	aes128gcm16) k1=$(hex 20) k2=$(hex 20); c="enc aes128gcm16 key 0x%s:0x%s" ;;
	chacha20poly1305) k1=$(hex 36) k2=$(hex 36); c="enc chacha20poly1305 key 0x%s:0x%s" ;;
	aes256gmac) k1=$(hex 36) k2=$(hex 36); c="enc aes256gmac key 0x%s:0x%s" ;;
	aes256-sha256) k1=$(hex 32) k2=$(hex 32); a1=$(hex 32) a2=$(hex 32)
		c="enc aes256-sha256 key 0x%s:0x%s authkey 0x$a1:0x$a2" ;;
	sha256) k1=$(hex 32) k2=$(hex 32); c="auth sha256 authkey 0x%s:0x%s" ;;
	esac
	# B's view is A's mirrored: its outbound SA is A's inbound one, with that key.
	"$CTL" --sadb "$A" load - <<< "$proto tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 spi 0x1000:0x1001 $(printf "$c" "$k1" "$k2")" || exit 1
	cb=$(printf "$c" "$k2" "$k1")
	[ "$enc" = aes256-sha256 ] && cb="enc aes256-sha256 key 0x$k2:0x$k1 authkey 0x$a2:0x$a1"
	"$CTL" --sadb "$B" load - <<< "$proto tunnel from 10.2.0.0/24 to 10.1.0.0/24 local 192.0.2.2 peer 192.0.2.1 spi 0x1001:0x1000 $cb" || exit 1
	out=$("$DRIVE" "$A" "$B" 0x1000 "$N") || { echo "FAIL: $name: esp-drive"; fail=1; continue; }
	eval "$out"
	"$CTL" --sadb "$A" --json --no-times show > "$T/a.json" &&
	"$CTL" --sadb "$B" --json --no-times show > "$T/b.json" || exit 1
	if "$PY" - "$T/a.json" "$T/b.json" "$N" "$out_bytes" "$in_bytes" <<'EOP'; then
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
n, ob, ib = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sa = lambda d, spi, dr: next(s for s in d["sas"] if s["spi"] == spi and s["dir"] == dr)
o, i = sa(a, 0x1000, "out")["counters"], sa(b, 0x1000, "in")["counters"]
def eq(what, got, want):
    if got != want:
        sys.exit("%s: %r, want %r" % (what, got, want))
eq("A out packets", o["packets"], n + 1)
eq("A out bytes", o["bytes"], ob)
assert o["seq_reserved"] >= n + 1, o
eq("A out drops", o["drops_total"], 0)
eq("B in packets", i["packets"], n)
eq("B in bytes", i["bytes"], ib)
eq("B replay top", i["replay"]["top"], n)
eq("B replay received", i["replay"]["received_in_window"], n)
eq("B replay drops", i["drops"]["replay"], 1)
eq("B icv drops", i["drops"]["icv"], 1)
eq("B drops total", i["drops_total"], 2)
eq("B lifetime used", sa(b, 0x1000, "in")["lifetime_used"], {"bytes": ib, "packets": n})
eq("B stats drops", (b["stats"]["drops"]["replay"], b["stats"]["drops"]["icv"]), (1, 1))
eq("B stats packets", b["stats"]["packets"], n)
EOP
		echo "ok: $name: show --json reports the engine's counters"
	else
		echo "FAIL: $name"; fail=1
	fi
done <<'EOT'
gcm esp aes128gcm16
cbc esp aes256-sha256
chacha esp chacha20poly1305
gmac esp aes256gmac
ah ah sha256
EOT
exit "$fail"
