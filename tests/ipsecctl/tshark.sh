#!/usr/bin/env bash
# tests/ipsecctl/tshark.sh: proves `ipsecctl export wireshark` with two implementations nobody here
# wrote: scapy encrypts ESP packets with the keys ipsecctl stores (show --show-keys --json), tshark
# decrypts the capture knowing only what `export wireshark --tshark` prints. Every exported SA must
# yield its inner UDP packets (destination port and payload), for AES-GCM, AES-CBC, AES-CTR, 3DES
# and NULL with the HMAC variants, IPv4 and IPv6, tunnel and transport mode, NAT-T (ESP in UDP 4500).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=${PYTHON:-/usr/bin/python3}
CTL="$top_builddir/ipsecctl/ipsecctl"
T=$(mktemp -d /tmp/ipsecctl-tshark.XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v tshark >/dev/null || { echo "tshark missing (apt-get install tshark)"; exit 77; }
"$PY" -c 'import scapy.layers.ipsec' 2>/dev/null || { echo "scapy missing for $PY"; exit 77; }

DB="$T/sadb"
ctl() { "$CTL" --sadb "$DB" "$@"; }
hex() { head -c "$1" /dev/urandom | od -An -v -tx1 | tr -d ' \n'; }
ctl init max-sa 64 max-policy 64 || exit 1
cat > "$T/conf" <<EOC
esp tunnel from 10.1.0.0/16 to 10.2.0.0/16 local 192.0.2.1 peer 192.0.2.2 spi 0x1000:0x1001 \\
	enc aes128gcm16 key 0x$(hex 20):0x$(hex 20)
sa esp tunnel from 192.0.2.1 to 192.0.2.3 spi 0x2000 out enc aes256gcm16 key 0x$(hex 36)
sa esp tunnel from 192.0.2.1 to 192.0.2.4 spi 0x3000 out enc aes256-sha256 key 0x$(hex 32) \\
	authkey 0x$(hex 32)
sa esp transport from 192.0.2.1 to 192.0.2.5 spi 0x4000 out enc aes128ctr-sha1 key 0x$(hex 20) \\
	authkey 0x$(hex 20)
sa esp transport from 192.0.2.1 to 192.0.2.6 spi 0x5000 out enc 3des-sha1 legacy key 0x$(hex 24) \\
	authkey 0x$(hex 20)
sa esp transport from 192.0.2.1 to 192.0.2.7 spi 0x6000 out enc null-sha512 authkey 0x$(hex 64)
sa esp transport from 192.0.2.1 to 192.0.2.8 spi 0x7000 out enc aes128-md5 legacy key 0x$(hex 16) \\
	authkey 0x$(hex 16)
sa esp tunnel from 2001:db8::1 to 2001:db8::2 spi 0x8000 out enc aes128gcm16 key 0x$(hex 20)
sa esp transport from 2001:db8::1 to 2001:db8::3 spi 0x9000 out enc aes256-sha384 key 0x$(hex 32) \\
	authkey 0x$(hex 48)
sa esp tunnel from 192.0.2.1 to 192.0.2.10 spi 0xa000 out enc aes128gcm16 key 0x$(hex 20) \\
	encap udp 4500 4500
EOC
ctl load "$T/conf" || exit 1
ctl --json --show-keys show sa > "$T/sas.json" || exit 1
n=$("$PY" "$top_srcdir/tests/ipsecctl/esp_pcap.py" "$T/sas.json" "$T/cap.pcap") || exit 1
echo "scapy wrote $n ESP packets"

ctl export wireshark --tshark > "$T/args" || exit 1
# The -o arguments are printed shell-quoted, one per line, for eval.
eval "set -- $(tr '\n' ' ' < "$T/args")"
timeout 120 tshark -n -r "$T/cap.pcap" "$@" -T fields -E separator=' ' -E occurrence=l -e esp.spi -e udp.dstport \
	-e data.data -e esp.icv_good > "$T/out" 2> "$T/err"
rc=$?
[ -s "$T/err" ] && cat "$T/err"
[ "$rc" = 0 ] || { echo "tshark failed ($rc)"; exit 1; }

fail=0
for spi in 0x1000 0x1001 0x2000 0x3000 0x4000 0x5000 0x6000 0x7000 0x8000 0x9000 0xa000; do
	want_port=$((40000 + (spi & 0xfff)))
	want=$(printf 'xipsec spi 0x%08x #1' "$spi" | od -An -v -tx1 | tr -d ' \n')
	got=$(awk -v s="$(printf '0x%08x' "$spi")" '$1 == s { print $2, $3 }' "$T/out" | sort -u)
	icv=$(awk -v s="$(printf '0x%08x' "$spi")" '$1 == s { print $4 }' "$T/out" | sort -u)
	if ! grep -q "^$want_port $want\$" <<< "$got"; then
		echo "FAIL: SA $spi: tshark did not decrypt to UDP port $want_port with the payload"
		echo "      got: ${got:-nothing}"
		fail=1
	elif [ -n "$icv" ] && [ "$icv" != 1 ] && [ "$icv" != True ]; then
		# tshark checks HMAC ICVs (not AES-GCM's): when it reports one, it must be good.
		echo "FAIL: SA $spi: tshark says the ICV is bad ($icv)"
		fail=1
	else
		echo "ok: SA $spi decrypted by tshark${icv:+ (ICV good)}"
	fi
done
[ "$fail" = 0 ] || { echo "tshark output:"; cat "$T/out"; }
exit "$fail"
