#!/usr/bin/env bash
# tests/netns/test_metrics_stall.sh: no local user can stall `ipsecctl metrics --listen`. In a
# namespace with only loopback, another user (nobody) holds 120 idle connections to the exporter,
# half from the address the scrapes come from (127.0.0.1) and half from 60 other loopback
# addresses, and opens a new one whenever the exporter closes one. Meanwhile 5 scrapes with curl
# must each get the whole exposition (promtool-valid, the SADB's SA count in it) within 5 s; a
# client that sends its request one byte a second is closed about 2 s after it connected; and
# within --min-interval a scrape is answered from the last rendering (an SA added in between does
# not show until the interval has passed).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip curl setpriv promtool
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
PY=${PYTHON:-/usr/bin/python3}
id nobody >/dev/null 2>&1 || xt_skip "no user nobody"
PORT=9786 PORT_SLOW=9787

# An SADB with two SAs, so the exposition has a value to check.
xt_sadb exp > "$XT_DIR/sadb-path"     # in this shell: xt_sadb registers the file for cleanup
SADB=$(cat "$XT_DIR/sadb-path")
K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
K3=0x4142434445464748494a4b4c4d4e4f5051525354
K4=0x6162636465666768696a6b6c6d6e6f7071727374
cat > "$XT_DIR/sa.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x1000:0x1001 enc aes128gcm16 key $K1:$K2
CONF
timeout 30 "$CTL" --sadb "$SADB" load "$XT_DIR/sa.conf" || xt_fail "ipsecctl load"

xt_ns_add mon
# No dataplane here to publish the counters view: the exporter reads the SADB (--source sadb), as
# root may; what is under test is its HTTP server.
xt_bg mon exp "$CTL" --sadb "$SADB" metrics --listen "127.0.0.1:$PORT" --no-ike --source sadb
xt_wait 10 xt_exec mon curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$PORT/metrics" ||
	{ cat "$XT_DIR/exp.log" >&2; xt_fail "the exporter does not answer"; }

# scrape FILE: one scrape into FILE; fails unless it is whole, valid and counts the SADB's SAs
scrape() {
	xt_exec mon curl -sSf --max-time 5 -o "$1" "http://127.0.0.1:$PORT/metrics" 2>>"$XT_DIR/curl.err" &&
		promtool check metrics < "$1" >/dev/null 2>&1 &&
		grep -qx 'xipsec_sadb_sas 2' "$1"
}

# The holder, as another user: HOLD sockets, each reopened at once when the exporter closes it.
HOLD=120
HOLD_PY=$(cat <<'PY'
import selectors, signal, socket, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sel = selectors.DefaultSelector()
def src(i):
    return "127.0.0.1" if i < n // 2 else "127.0.1.%d" % (i - n // 2 + 1)
def hold(i):
    s = socket.socket()
    s.setblocking(False)
    s.bind((src(i), 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    sel.register(s, selectors.EVENT_READ, i)
for i in range(n):
    hold(i)
print("holding", n, flush=True)
reopened, end = 0, time.monotonic() + secs
try:
    while time.monotonic() < end:
        for key, _ in sel.select(0.2):
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                hold(key.data)
                reopened += 1
finally:
    print("closed by the exporter and opened again:", reopened, flush=True)
PY
)
xt_bg mon hold setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$PY" -c "$HOLD_PY" "$PORT" "$HOLD" 40
xt_wait 10 grep -q '^holding' "$XT_DIR/hold.log" || { cat "$XT_DIR/hold.log" >&2; xt_fail "the holder did not start"; }
sleep 1
ok=0
for i in 1 2 3 4 5; do
	t0=$(date +%s%N)
	if scrape "$XT_DIR/scrape$i.txt"; then
		ok=$((ok + 1))
		xt_log "scrape $i answered in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	else
		xt_log "scrape $i not answered (or not whole) after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	fi
	sleep 0.3
done
kill -0 "$(pgrep -P "$(xt_pid hold)")" 2>/dev/null || { cat "$XT_DIR/hold.log" >&2; xt_fail "the holder stopped early"; }
[ "$ok" = 5 ] || { cat "$XT_DIR/curl.err" >&2; xt_fail "$ok of 5 scrapes answered while $HOLD idle connections were held"; }
xt_stop hold
xt_log "holder: $(tr '\n' ' ' < "$XT_DIR/hold.log")"

# Slow loris (alone: the holder's churn would close it as the oldest idle connection): a request
# one byte a second; the exporter answers 408 and closes it about 2 s after the connect.
LORIS_PY=$(cat <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0, req, got = time.monotonic(), b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b""
s.settimeout(1.0)
for i in range(len(req)):
    try:
        s.send(req[i:i + 1])
    except OSError:
        break
    try:
        d = s.recv(4096)
        if not d:
            break
        got += d
    except socket.timeout:
        continue
    except OSError:
        break
print("closed after %.1f s: %s" % (time.monotonic() - t0, got.split(b"\r\n")[0].decode() or "-"))
PY
)
loris=$(xt_exec mon setpriv --reuid=nobody --regid=nogroup --clear-groups "$PY" -c "$LORIS_PY" "$PORT")
xt_log "slow client: $loris"
t=$(printf '%s' "$loris" | sed -n 's/^closed after \([0-9]*\)\.\([0-9]\) s.*/\1\2/p')
[ -n "$t" ] && [ "$t" -ge 15 ] && [ "$t" -le 35 ] || xt_fail "slow client: '$loris' (expected closed 2-3 s after connecting)"
case $loris in *"408 Request Timeout"*) ;; *) xt_fail "slow client not told 408: '$loris'" ;; esac
scrape "$XT_DIR/scrape-after.txt" || xt_fail "no scrape after the slow client"

# Within --min-interval the last rendering is served: an SA added in between shows only later.
xt_bg mon exp-slow "$CTL" --sadb "$SADB" metrics --listen "127.0.0.1:$PORT_SLOW" --no-ike \
	--source sadb --min-interval 3000
sas() {
	xt_exec mon curl -sf --max-time 5 "http://127.0.0.1:$PORT_SLOW/metrics" |
		awk '$1 == "xipsec_sadb_sas" { print $2 }'
}
sas_are() { [ "$(sas)" = "$1" ]; }
cat > "$XT_DIR/sa2.conf" <<CONF
esp tunnel from 10.3.0.0/24 to 10.4.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x3000:0x3001 enc aes128gcm16 key $K3:$K4
CONF
# t0 is taken before the first rendering, so ms below never understates the time since it
t0=$(date +%s%N)
xt_wait 10 sas_are 2 || { cat "$XT_DIR/exp-slow.log" >&2; xt_fail "the second exporter does not answer 2 SAs"; }
timeout 30 "$CTL" --sadb "$SADB" load "$XT_DIR/sa2.conf" || xt_fail "ipsecctl load of two more SAs"
v=$(sas)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# only meaningful when the machine got here within the interval
[ "$ms" -ge 3000 ] || [ "$v" = 2 ] ||
	xt_fail "a scrape $ms ms after the first shows $v SAs: rendered again within --min-interval"
xt_wait 10 sas_are 4 || xt_fail "the added SAs never show after --min-interval ($(sas) SAs)"

for e in exp exp-slow; do
	xt_stop "$e"
	grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/$e.log" &&
		{ cat "$XT_DIR/$e.log" >&2; xt_fail "sanitizer report from the exporter $e"; }
done
exit 0
