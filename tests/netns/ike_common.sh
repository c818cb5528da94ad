# tests/netns/ike_common.sh: helpers for the IKE netns tests (tests/netns/test_ike*.sh), sourced after
# tests/netns/lib.sh. Two gateways A (10.9.0.1) and B (10.9.0.2) on one veth, each running its own
# xipsec-iked with its own configuration directory, run directory (VICI socket, pid, status) and SADB.
#
#   ike_pair                      namespaces A and B, the veth, addresses
#   ike_dirs SIDE [SADB]          make $XT_DIR/SIDE/{conf,run} and an SADB path (or use SADB)
#   ike_sconf SIDE [LINES]        write SIDE's strongswan.conf (xipsec-iked section body LINES)
#   ike_swanctl SIDE ME PEER SPEC write SIDE's swanctl.conf: connections, CHILD SAs, the PSK
#   ike_start SIDE [ARGS]         start xipsec-iked for SIDE and wait for its VICI socket
#   ike_ctl SIDE ARGS             swanctl against SIDE's daemon
#   ike_ipsecctl SIDE ARGS        `ipsecctl ike` against SIDE's daemon (ipsecctl/ipsecctl, or skip)
#   ike_dump SIDE [ARGS]          sadb-dump of SIDE's SADB
#   ike_match A B                 A's inbound SAs == B's outbound SAs and vice versa (fail otherwise)
#   ike_status SIDE KEY           a counter from SIDE's status file
#   ike_nsa SIDE N                SIDE's SADB holds exactly N mature SAs (for xt_wait)
#   ike_udp_sender DST PORT S PPS a fixed-rate UDP sender (a Python program's text)

IKE_IKED="$top_builddir/ike/xipsec-iked"
IKE_DUMP="$top_builddir/tests/tools/sadb-dump"
IKE_SWANCTL=/usr/sbin/swanctl

ike_require() {
	xt_require ip nsenter "$IKE_SWANCTL"
	[ -x "$IKE_IKED" ] || xt_skip "xipsec-iked not built (strongSwan headers missing?)"
	[ -x "$IKE_DUMP" ] || xt_skip "sadb-dump not built"
}

ike_addr() { case "$1" in A) echo 10.9.0.1 ;; B) echo 10.9.0.2 ;; esac; }

ike_pair() {
	xt_ns_add A
	xt_ns_add B
	xt_veth A va B vb
	ip -n "$(xt_ns A)" addr add 10.9.0.1/24 dev va
	ip -n "$(xt_ns B)" addr add 10.9.0.2/24 dev vb
}

ike_dirs() {
	mkdir -p "$XT_DIR/$1/conf" "$XT_DIR/$1/run"
	if [ -n "${2:-}" ]; then
		printf '%s' "$2" > "$XT_DIR/$1/sadb-path"   # an SADB shared with xipsecd
	else
		# not $(xt_sadb): lib.sh must record the file for its cleanup in this shell, not a subshell
		xt_sadb "iked-$1" > "$XT_DIR/$1/sadb-path"
	fi
	# the daemon's acquire socket beside the SADB (sadb/sadb_acquire.h), left behind if it is killed
	XT_FILES+=("$(cat "$XT_DIR/$1/sadb-path").acquire")
}

ike_sadb() { cat "$XT_DIR/$1/sadb-path"; }

# strongswan.conf: the daemon's section plus a plugin list for swanctl (quiet, no system config).
ike_sconf() {
	local side=$1; shift
	{
		echo "xipsec-iked {"
		printf '  %s\n' "$@"
		echo "}"
		echo "swanctl {"
		echo "  load = pem pkcs1 pkcs8 x509 revocation constraints pubkey openssl random"
		echo "}"
	} > "$XT_DIR/$side/conf/strongswan.conf"
}

ike_start() {
	local side=$1; shift
	[ -f "$XT_DIR/$side/conf/strongswan.conf" ] || ike_sconf "$side"
	# check_printf=0: the ASan printf interceptor does not know strongSwan's %N/%H/%R extensions
	# leaks are checked (ike_check_logs) except OpenSSL's own at plugin unload (ike/lsan.supp)
	xt_bg "$side" "iked-$side" env ASAN_OPTIONS="${IKE_ASAN_OPTIONS:-detect_leaks=1:check_printf=0}" \
		LSAN_OPTIONS="suppressions=$top_srcdir/ike/lsan.supp:print_suppressions=0" "$IKE_IKED" \
		--conf-dir "$XT_DIR/$side/conf" --run-dir "$XT_DIR/$side/run" --sadb "$(ike_sadb "$side")" \
		--debug "${IKE_DEBUG:-1}" "$@"
	xt_wait 10 test -S "$XT_DIR/$side/run/charon.vici" || { ike_logs; xt_fail "xipsec-iked $side did not start"; }
	# swanctl --load-all runs inside the daemon's start: wait until the connections are there
	if [ -f "$XT_DIR/$side/conf/swanctl.conf" ] && [[ " $* " != *" --no-load "* ]]; then
		xt_wait 10 grep -q "xipsec: loaded" "$XT_DIR/iked-$side.log" ||
			{ ike_logs; xt_fail "xipsec-iked $side did not load swanctl.conf"; }
	fi
}

ike_ctl() {
	local side=$1; shift
	STRONGSWAN_CONF="$XT_DIR/$side/conf/strongswan.conf" timeout 30 "$IKE_SWANCTL" "$@" \
		--uri "unix://$XT_DIR/$side/run/charon.vici"
}

ike_ipsecctl() {
	local side=$1; shift
	[ -x "$top_builddir/ipsecctl/ipsecctl" ] || return 77
	XIPSEC_IKED_RUN="$XT_DIR/$side/run" timeout 30 "$top_builddir/ipsecctl/ipsecctl" ike "$@"
}

ike_dump() {
	local side=$1; shift
	"$IKE_DUMP" --sadb "$(ike_sadb "$side")" "$@"
}

# SIDE's SADB holds exactly N mature SAs (a function, so xt_wait re-evaluates it every poll).
ike_status_is() { [ "$(ike_status "$1" "$2")" = "$3" ]; }
ike_nsa() { [ "$(ike_dump "$1" | wc -l)" -eq "$2" ]; }

ike_status() { awk -v k="$2" '$1 == k { print $2 }' "$XT_DIR/$1/run/status"; }

# Stops the daemons, then fails the test on any sanitizer report in their logs (ASan/UBSan abort a
# daemon, which other checks notice too, but this names the cause; leaks show only at exit).
ike_check_logs() {
	local f
	# stop the daemons first: LeakSanitizer reports at exit
	for f in "$XT_DIR"/iked-*.pid; do
		[ -f "$f" ] || continue
		f=${f##*/}
		xt_stop "${f%.pid}" TERM
	done
	if grep -l "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer" "$XT_DIR"/iked-*.log* 2>/dev/null; then
		grep -h -A30 "ERROR: AddressSanitizer\|runtime error:" "$XT_DIR"/iked-*.log* >&2
		xt_fail "sanitizer report in an xipsec-iked log"
	fi
	return 0
}

ike_logs() {
	local f
	for f in "$XT_DIR"/iked-*.log; do
		[ -f "$f" ] || continue
		echo "---- $f (last 40 lines)" >&2
		tail -n 40 "$f" >&2
	done
}

# The part of a dump line both ends must agree on (before " | "), for SAs of one direction.
ike_sa_set() { ike_dump "$1" | grep " dir=$2 " | sed 's/ | .*//' | sort; }

ike_match() {
	local a=$1 b=$2 n1 n2
	if ! diff <(ike_sa_set "$a" in) <(ike_sa_set "$b" out) >&2; then
		ike_logs; xt_fail "inbound SAs of $a differ from outbound SAs of $b"
	fi
	if ! diff <(ike_sa_set "$a" out) <(ike_sa_set "$b" in) >&2; then
		ike_logs; xt_fail "outbound SAs of $a differ from inbound SAs of $b"
	fi
	n1=$(ike_sa_set "$a" in | wc -l)
	n2=$(ike_sa_set "$a" out | wc -l)
	echo "$((n1 + n2))"
}

# ike_ipsecctl_match A B: the SAs `ipsecctl show` lists on A and B agree: every inbound SA of one is
# an outbound SA of the other (SPI, endpoints, mode, transforms, keys, NAT-T ports) and the other way
# round. Prints the number of SAs on A; returns 77 when ipsecctl is not built.
ike_ipsecctl_match() {
	local ctl="$top_builddir/ipsecctl/ipsecctl"
	[ -x "$ctl" ] || return 77
	"$ctl" --json --show-keys --sadb "$(ike_sadb "$1")" show sa > "$XT_DIR/show-$1.json" || return 1
	"$ctl" --json --show-keys --sadb "$(ike_sadb "$2")" show sa > "$XT_DIR/show-$2.json" || return 1
	/usr/bin/python3 - "$XT_DIR/show-$1.json" "$XT_DIR/show-$2.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["sas"] for f in sys.argv[1:3])
def key(s):
    return (s["spi"], s["proto"], s["mode"], s["src"], s["dst"], s["enc"], s["auth"],
            json.dumps(s.get("keys"), sort_keys=True), json.dumps(s["encap"], sort_keys=True))
def side(l, d):
    return sorted(key(s) for s in l if s["dir"] == d and s["state"] == "mature")
ok = side(a, "in") == side(b, "out") and side(a, "out") == side(b, "in") and len(a) > 0
if not ok:
    print("ipsecctl show differs:", side(a, "in"), side(b, "out"), side(a, "out"), side(b, "in"), file=sys.stderr)
    sys.exit(1)
print(len(a))
PY
}

# ike_certs SIDE...: a test CA and one ECDSA certificate per side (CN and SAN gw-SIDE) made with
# strongSwan's pki, installed as SIDE/conf/{x509ca/ca.crt,x509/gw.crt,private/gw.key}.
ike_certs() {
	local p="$XT_DIR/pki" s d
	mkdir -p "$p"
	command pki --gen --type ecdsa --size 256 --outform pem > "$p/ca.key" 2>>"$XT_DIR/pki.log" || xt_fail "pki --gen failed"
	command pki --self --ca --lifetime 2 --in "$p/ca.key" --dn "C=CH, O=xipsec test, CN=xipsec test CA" \
		--outform pem > "$p/ca.crt" 2>>"$XT_DIR/pki.log" || xt_fail "pki --self failed"
	for s in "$@"; do
		d="$XT_DIR/$s/conf"
		mkdir -p "$d/x509" "$d/x509ca" "$d/private"
		cp "$p/ca.crt" "$d/x509ca/"
		command pki --gen --type ecdsa --size 256 --outform pem > "$d/private/gw.key" 2>>"$XT_DIR/pki.log"
		command pki --pub --in "$d/private/gw.key" 2>>"$XT_DIR/pki.log" |
			command pki --issue --lifetime 2 --cacert "$p/ca.crt" --cakey "$p/ca.key" \
			--dn "C=CH, O=xipsec test, CN=gw-$s" --san "gw-$s" --outform pem > "$d/x509/gw.crt" 2>>"$XT_DIR/pki.log" ||
			xt_fail "pki --issue for $s failed"
	done
}

# ike_swanctl's pieces, on its local variables (bash scoping is dynamic): the CHILD SA and the connection
# being written are closed into the text of the file.
_ike_swanctl_child_end() {
	[ -n "$k" ] || return 0
	kids+="      $k {"$'\n'"$kopts      }"$'\n'
	k=""
}
_ike_swanctl_conn_end() {
	local certs="" pair
	[ -n "$c" ] || return 0
	_ike_swanctl_child_end
	[ "$auth" = pubkey ] && certs="      certs = gw.crt"$'\n'
	out+="  $c {"$'\n'"    version = $ver"$'\n'"    local_addrs = $la"$'\n'"    remote_addrs = $ra"$'\n'
	out+="    proposals = $prop"$'\n'"$copts    local {"$'\n'"      auth = $auth"$'\n'"$certs      id = $id"$'\n'"    }"$'\n'
	out+="    remote {"$'\n'"      auth = $auth"$'\n'"      id = $pid"$'\n'"    }"$'\n'
	out+="    children {"$'\n'"$kids    }"$'\n'"  }"$'\n'
	if [ "$auth" = psk ]; then
		if [[ "$id" < "$pid" ]]; then pair="$id $pid"; else pair="$pid $id"; fi
		[ -z "$psk" ] || [ "$psk" = "$pair" ] ||
			xt_fail "ike_swanctl $side: PSK connections with two identity pairs ($psk, $pair)"
		psk=$pair
	fi
	c=""
}

# ike_swanctl SIDE ME PEER SPEC...: writes SIDE's swanctl.conf. ME and PEER are the two gateways' outer
# addresses as SIDE sees them; SPEC is a list of words, read in order:
#   conn NAME VERSION PROPOSALS                  a connection from ME to PEER (IKE version 1 or 2, IKE
#                                                proposals), authenticated by PSK as ME towards PEER
#   child NAME LOCAL_TS REMOTE_TS ESP_PROPOSALS  a CHILD SA of the connection before it
#   KEY=VALUE                                    a swanctl setting of the CHILD SA (or, before any child,
#                                                the connection) before it: rekey_time=5s, life_bytes=2000000,
#                                                rand_time=0s, dpd_delay=1s, mobike=no, aggressive=yes...;
#                                                these always set the connection: local_addrs (default
#                                                ME), remote_addrs (default PEER), and in its local and
#                                                remote sections auth=pubkey (certificate gw.crt, made
#                                                by ike_certs), id=ID (default ME), peer_id=ID (default PEER)
# The PSK connections of one file share one identity pair: the file ends with its secret (ike_psk_secret,
# identities sorted, so that both gateways' files hold the same one).
ike_swanctl() {
	local side=$1 me=$2 peer=$3 w key
	shift 3
	local out="" psk="" c="" ver prop la ra copts="" auth id pid kids k="" kopts=""
	while [ $# -gt 0 ]; do
		w=$1; shift
		case "$w" in
		conn)
			[ $# -ge 3 ] || xt_fail "ike_swanctl $side: conn needs NAME VERSION PROPOSALS"
			_ike_swanctl_conn_end
			c=$1 ver=$2 prop=$3 la=$me ra=$peer auth=psk id=$me pid=$peer copts="" kids=""
			shift 3 ;;
		child)
			[ $# -ge 4 ] || xt_fail "ike_swanctl $side: child needs NAME LOCAL_TS REMOTE_TS ESP_PROPOSALS"
			[ -n "$c" ] || xt_fail "ike_swanctl $side: child $1 outside a connection"
			_ike_swanctl_child_end
			k=$1
			kopts="        local_ts = $2"$'\n'"        remote_ts = $3"$'\n'"        esp_proposals = $4"$'\n'
			shift 4 ;;
		*=*)
			key=${w%%=*}
			[ -n "$c" ] || xt_fail "ike_swanctl $side: $w outside a connection"
			case "$key" in
			auth) auth=${w#*=} ;;
			id) id=${w#*=} ;;
			peer_id) pid=${w#*=} ;;
			local_addrs) la=${w#*=} ;;
			remote_addrs) ra=${w#*=} ;;
			*)
				if [ -n "$k" ]; then kopts+="        $key = ${w#*=}"$'\n'
				else copts+="    $key = ${w#*=}"$'\n'; fi ;;
			esac ;;
		*) xt_fail "ike_swanctl $side: unknown word '$w'" ;;
		esac
	done
	_ike_swanctl_conn_end
	{
		printf 'connections {\n%s}\n' "$out"
		if [ -n "$psk" ]; then ike_psk_secret $psk; fi
	} > "$XT_DIR/$side/conf/swanctl.conf"
}

# ike_psk_secret ID1 ID2: the secrets section of a swanctl.conf, one PSK for the two identities.
ike_psk_secret() {
	cat <<EOF
secrets {
  ike-psk {
    id-1 = $1
    id-2 = $2
    secret = "xipsec test key: not a real secret 0123456789"
  }
}
EOF
}

# ike_udp_sender DSTADDR PORT SECONDS PPS: the Python program of a fixed-rate sender of numbered
# 1000-byte datagrams ((b'%010d' % i) * 100), then three "end"; it prints how many it sent. A send
# that fails (no route or neighbour for a moment) counts as sent and lost.
ike_udp_sender() {
	cat <<EOF
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = int($3 * $4); t0 = time.monotonic()
for i in range(n):
    try:
        s.sendto((b'%010d' % i) * 100, ('$1', $2))
    except OSError:
        pass
    delay = t0 + (i + 1) / $4 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
time.sleep(0.5)
for _ in range(3):
    s.sendto(b'end', ('$1', $2))
print(n)
EOF
}

# ike_udp_stream SRC DST_NS DSTADDR SECONDS PPS: numbered 1000-byte datagrams at PPS for SECONDS;
# prints "sent N received M" (M counts distinct intact datagrams).
ike_udp_stream() {
	local src=$1 dns=$2 daddr=$3 secs=$4 pps=$5 port=$((7000 + RANDOM % 1000))
	xt_bg "$dns" "udp-stream-$port" /usr/bin/python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', $port))
s.settimeout(3)
got = set(); bad = 0
try:
    while True:
        d, _ = s.recvfrom(2000)
        if d == b'end':
            break
        i = int(d[:10])
        if d == (b'%010d' % i) * 100:
            got.add(i)
        else:
            bad += 1
except socket.timeout:
    pass
print('received', len(got), 'corrupt', bad, flush=True)
"
	sleep 0.3
	xt_exec "$src" /usr/bin/python3 -c "$(ike_udp_sender "$daddr" "$port" "$secs" "$pps")" \
		> "$XT_DIR/udp-sent-$port" || xt_fail "UDP stream sender failed"
	xt_wait 10 grep -q "^received" "$XT_DIR/udp-stream-$port.log" || xt_fail "UDP stream receiver did not finish"
	echo "sent $(cat "$XT_DIR/udp-sent-$port") $(cat "$XT_DIR/udp-stream-$port.log")"
	xt_stop "udp-stream-$port"
}

# ike_start_stock NODE: the interoperability peer. Strongswan's stock charon with kernel-libipsec (its own
# user-space ESP over TUN, always UDP-encapsulated) in namespace NODE, in a private mount namespace with its
# own /run, configured from $XT_DIR/NODE/conf/swanctl.conf; fails the test if it does not come up.
# LINES (optional): settings of its charon section (reuse_ikesa = no, install_routes = no, ...).
ike_start_stock() {
	local n=$1
	shift
	cat > "$XT_DIR/$n/conf/strongswan.conf" <<CONF
charon {
  load = random nonce openssl x509 revocation constraints pubkey pkcs1 pkcs8 pem hmac kdf gcm socket-default kernel-libipsec kernel-netlink vici
$(if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi)
  plugins {
    vici {
      socket = unix://$XT_DIR/$n/run/charon.vici
    }
  }
  filelog {
    stderr {
      default = 1
      # 4 logs the IKE keys (Sk_ei, Sk_er) a capture is decrypted with (ha_ike_addresses)
      ike = ${IKE_STOCK_IKE_LOG:-1}
      ike_name = yes
    }
  }
}
swanctl {
  load = pem pkcs1 pkcs8 x509 revocation constraints pubkey openssl random
}
CONF
	xt_bg "$n" "charon-$n" env STRONGSWAN_CONF="$XT_DIR/$n/conf/strongswan.conf" unshare -m --propagation private \
		sh -c 'mount -t tmpfs tmpfs /run && exec /usr/lib/ipsec/charon'
	xt_wait 10 test -S "$XT_DIR/$n/run/charon.vici" ||
		{ cat "$XT_DIR/charon-$n.log" >&2; xt_fail "stock charon did not start"; }
	ike_ctl "$n" --load-all --file "$XT_DIR/$n/conf/swanctl.conf" >"$XT_DIR/swanctl-$n.log" 2>&1 ||
		{ cat "$XT_DIR/charon-$n.log" >&2; xt_fail "loading $n's swanctl.conf failed"; }
}
