#!/usr/bin/env bash
# tests/netns/test_dp_lifetime.sh: xipsecd enforces the lifetimes of manually keyed SAs (loaded with
# `ipsecctl load`; no IKE daemon runs). (a) A time lifetime, soft 3 s / hard 5 s: pings go through
# at first; `ipsecctl --json show sa` shows no expiry while less than 3 s can have passed since the
# SAs were added, the soft state ("dying") by 4.5 s and not the hard one while less than 5 s can have
# passed, the hard state by 7 s; after it every ping is dropped and counted as sa_expired on the
# outbound SA, and xipsecd's --status counts the expiries. (b) A byte lifetime, hard 20000 bytes:
# 1000-byte pings expire the outbound SA after 20 packets (plus the few sent before the next scan);
# the rest, and every later packet, are dropped as sa_expired. Tolerances hold on a loaded 2-core
# machine: "not before" is checked against when the SA was loaded (never early), "by" leaves 1.5-2 s.
# (c) Restart: an SA whose hard time (2 s) runs out while xipsecd is stopped stays unmarked until
# xipsecd starts again, and expires within 2 s of the start (the time counts from the SA's creation,
# which the SADB records in whole seconds).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ping
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

export XIPSEC_STATE_DIR="$XT_DISK_DIR/state"   # the GCM SAs' sequence marks (dp_seqmark.c)
K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
K3=0x4142434445464748494a4b4c4d4e4f5051525354
K4=0x6162636465666768696a6b6c6d6e6f7071727374
K5=0x8182838485868788898a8b8c8d8e8f9091929394
K6=0xa1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4
dp_topo 1
dp_start gw1
dp_start gw2

ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }
# conf GW SPIS KEYS OPTIONS: the gateway's file for one tunnel-mode AES-GCM pair
conf() {
	local gw=$1 spis=$2 keys=$3 opts=${4:-} l r ln rn
	if [ "$gw" = gw1 ]; then l=192.0.2.1 r=192.0.2.2 ln=10.1.0.0/24 rn=10.2.0.0/24
	else l=192.0.2.2 r=192.0.2.1 ln=10.2.0.0/24 rn=10.1.0.0/24; fi
	printf 'esp tunnel from %s to %s local %s peer %s \\\n    spi %s enc aes128gcm16 key %s %s\n' \
		"$ln" "$rn" "$l" "$r" "$spis" "$keys" "$opts" > "$XT_DIR/$gw.conf"
}
load() { # load GW [ipsecctl options] (every key here is made for this run: --new-keys)
	local gw=$1; shift
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "$gw")" --new-keys "$@" -f "$XT_DIR/$gw.conf" ||
		xt_fail "ipsecctl $* -f $gw.conf"
}
# state SPI: "EXPIRY SOFT HARD PACKETS BYTES SA_EXPIRED_DROPS" of gw1's SA SPI (from ipsecctl)
state() {
	timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" --json show sa "$1" > "$XT_DIR/show.json" ||
		xt_fail "ipsecctl --json show sa $1"
	dp_json "$XT_DIR/show.json" "(lambda s, c: ' '.join(str(x) for x in [s['expiry'],
		c['expired']['soft'], c['expired']['hard'], c['packets'], c['bytes'],
		c['drops']['sa_expired']]))(j['sas'][0], j['sas'][0]['counters'])"
}
# consistent EXPIRY SOFT HARD: the expiry name and the JSON "expired" object agree
consistent() {
	case "$1 $2 $3" in
	"none False False"|"soft True False"|"hard True True") ;;
	*) xt_fail "expiry '$1' but expired {soft: $2, hard: $3}";;
	esac
}

# wait_loaded TAG: the dataplanes follow their SADBs every 10 ms, and the counts below need the
# first ping to find the new SAs (one sent before went uncounted: 4 of 5 seen once in CI), so wait
# until both have seen the last change
wait_loaded() {
	local gw gen
	for gw in gw1 gw2; do
		gen=$(timeout 30 "$CTL" --sadb "$(dp_sadb_of $gw)" --json show info > "$XT_DIR/info.json" &&
		      dp_json "$XT_DIR/info.json" "j['info']['generation']")
		xt_wait 10 sh -c "'$XIPSECD' --status --ctl '$XT_DIR/$gw.sock' | grep -q '\"sadb_generation\":$gen,'" ||
			xt_fail "$1 xipsecd on $gw did not load SADB generation $gen"
	done
}

# ---- (a) time: soft 3 s, hard 5 s ----
conf gw1 0x1000:0x1001 "$K1:$K2" "soft time 3 hard time 5"
conf gw2 0x1001:0x1000 "$K2:$K1" "soft time 3 hard time 5"
t0=$(ms)              # no SA is older than this
load gw1
load gw2
wait_loaded "(a)"
xt_exec h1 ping -c 5 -i 0.1 -W 2 10.2.0.2 > "$XT_DIR/ping-a1.out" ||
	{ cat "$XT_DIR/ping-a1.out" >&2; xt_fail "(a) ping before the soft lifetime"; }
t=$(( $(ms) - t0 ))
[ "$t" -lt 3000 ] || xt_fail "(a) the first pings took until $t ms: too slow to check the lifetime"
sleep "$(awk -v t="$t" 'BEGIN { d = (2000 - t) / 1000; print (d > 0 ? d : 0) }')"
read -r exp soft hard pk by dr <<< "$(state 0x1000)"
t=$(( $(ms) - t0 ))
consistent "$exp" "$soft" "$hard"
xt_log "(a) at most $t ms: expiry $exp, packets $pk"
[ "$t" -lt 3000 ] || xt_fail "(a) the first look at the SA took until $t ms"
[ "$exp" = none ] || xt_fail "(a) expiry '$exp' at most $t ms after the SA was added (soft limit 3 s)"
[ "$pk" -ge 5 ] || xt_fail "(a) outbound SA counted $pk packets (5 pings)"

# soft by 4.5 s, and never the hard state while less than 5 s can have passed
seen_soft=
while :; do
	ts=$(( $(ms) - t0 ))
	read -r exp soft hard pk by dr <<< "$(state 0x1000)"
	consistent "$exp" "$soft" "$hard"
	if [ "$exp" = hard ] && [ "$ts" -lt 5000 ]; then
		xt_fail "(a) hard expiry seen by $ts ms (hard limit 5 s)"
	fi
	[ "$exp" = none ] || { seen_soft=$ts; break; }
	[ "$ts" -lt 4500 ] || break
	sleep 0.1
done
[ -n "$seen_soft" ] || xt_fail "(a) no soft expiry 4.5 s after the SA was added (soft limit 3 s)"
[ "$exp" = soft ] || xt_fail "(a) expiry '$exp' at $seen_soft ms, expected soft first"
xt_log "(a) soft expiry seen at $seen_soft ms (the look started then)"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" show sa 0x1000 > "$XT_DIR/show-soft.txt"
grep -q "# dying: soft lifetime reached" "$XT_DIR/show-soft.txt" ||
	{ cat "$XT_DIR/show-soft.txt" >&2; xt_fail "(a) ipsecctl show does not say dying"; }
# a dying SA still carries traffic
xt_exec h1 ping -c 3 -i 0.1 -W 2 10.2.0.2 > "$XT_DIR/ping-a2.out" ||
	{ cat "$XT_DIR/ping-a2.out" >&2; xt_fail "(a) ping through the soft-expired SA"; }
[ $(( $(ms) - t0 )) -lt 5000 ] || xt_log "(a) the pings through the dying SA ended after 5 s: not conclusive"

seen_hard=
while :; do
	ts=$(( $(ms) - t0 ))
	read -r exp soft hard pk by dr <<< "$(state 0x1000)"
	consistent "$exp" "$soft" "$hard"
	if [ "$exp" = hard ]; then
		[ "$ts" -ge 5000 ] || xt_fail "(a) hard expiry seen by $ts ms (hard limit 5 s)"
		seen_hard=$ts; break
	fi
	[ "$ts" -lt 7000 ] || break
	sleep 0.1
done
[ -n "$seen_hard" ] || xt_fail "(a) no hard expiry 7 s after the SA was added (hard limit 5 s)"
xt_log "(a) hard expiry seen at $seen_hard ms"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" show sa 0x1000 > "$XT_DIR/show-hard.txt"
grep -q "# expired: hard lifetime reached" "$XT_DIR/show-hard.txt" ||
	{ cat "$XT_DIR/show-hard.txt" >&2; xt_fail "(a) ipsecctl show does not say expired"; }
dr0=$dr
if xt_exec h1 ping -c 5 -i 0.1 -W 1 10.2.0.2 > "$XT_DIR/ping-a3.out"; then
	xt_fail "(a) pings got through a hard-expired SA"
fi
read -r exp soft hard pk2 by dr <<< "$(state 0x1000)"
[ "$pk2" = "$pk" ] || xt_fail "(a) the hard-expired SA protected $((pk2 - pk)) more packets"
[ $((dr - dr0)) -ge 5 ] || xt_fail "(a) $((dr - dr0)) sa_expired drops on the outbound SA (5 pings)"
xt_log "(a) after the hard expiry: $((dr - dr0)) pings dropped as sa_expired, packets stay $pk"
dp_status gw1 > "$XT_DIR/status-a.json" || xt_fail "xipsecd --status on gw1"
[ "$(dp_json "$XT_DIR/status-a.json" "j['sa_soft_expired'], j['sa_hard_expired']")" = "2 2" ] ||
	{ cat "$XT_DIR/status-a.json" >&2; xt_fail "(a) gw1 --status: expected 2 soft and 2 hard expiries"; }
for w in "spi 0x00001000 .*soft lifetime reached (time)" "spi 0x00001000 .*hard lifetime reached (time)" \
	 "spi 0x00001001 .*soft lifetime reached (time)" "spi 0x00001001 .*hard lifetime reached (time)"; do
	grep -q "notice: SA $w" "$XT_DIR/xipsecd-gw1.log" ||
		{ cat "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "(a) xipsecd log lacks '$w'"; }
done

# ---- (b) bytes: hard 20000 bytes on gw1's SAs ----
conf gw1 0x2000:0x2001 "$K3:$K4" "hard bytes 20000"
conf gw2 0x2001:0x2000 "$K4:$K3"
load gw1 -F
load gw2 -F
wait_loaded "(b)"
# 40 pings of 1000 bytes (IP): every request is sent whether or not its reply comes back. The
# inbound SA of gw1 has the same limit and may expire on the replies first; that does not matter
# here: the outbound SA is what is checked.
xt_exec h1 ping -c 40 -i 0.05 -W 1 -s 972 10.2.0.2 > "$XT_DIR/ping-b1.out" || true
sleep 0.5   # one scan at least
read -r exp soft hard pk by dr <<< "$(state 0x2000)"
consistent "$exp" "$soft" "$hard"
xt_log "(b) outbound: expiry $exp, $pk packets, $by bytes, $dr sa_expired drops ($(grep transmitted "$XT_DIR/ping-b1.out"))"
[ "$exp" = hard ] || xt_fail "(b) expiry '$exp' after $by bytes (hard limit 20000)"
[ "$by" -ge 20000 ] || xt_fail "(b) hard expiry after only $by bytes (limit 20000)"
# at 20 packets per second at most ~0.2 s of packets pass between the limit and the next scan
[ "$by" -le 26000 ] || xt_fail "(b) $by bytes protected (limit 20000): the limit was enforced late"
[ $((pk + dr)) -ge 40 ] || xt_fail "(b) $pk protected + $dr dropped as sa_expired < 40 pings"
[ "$dr" -ge 10 ] || xt_fail "(b) only $dr packets dropped as sa_expired"
if xt_exec h1 ping -c 5 -i 0.1 -W 1 10.2.0.2 > "$XT_DIR/ping-b2.out"; then
	xt_fail "(b) pings got through a hard-expired SA"
fi
read -r exp soft hard pk2 by2 dr2 <<< "$(state 0x2000)"
[ "$pk2" = "$pk" ] || xt_fail "(b) the hard-expired SA protected $((pk2 - pk)) more packets"
[ $((dr2 - dr)) -ge 5 ] || xt_fail "(b) $((dr2 - dr)) sa_expired drops for 5 later pings"
grep -q "notice: SA spi 0x00002000 .*hard lifetime reached (bytes)" "$XT_DIR/xipsecd-gw1.log" ||
	{ cat "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "(b) xipsecd log lacks the byte expiry"; }
# the peer's SAs have no limit: they stay as they were
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --json show sa 0x2000 > "$XT_DIR/show-gw2.json"
[ "$(dp_json "$XT_DIR/show-gw2.json" "j['sas'][0]['expiry']")" = none ] ||
	xt_fail "(b) gw2's SA without lifetime expired"

# ---- (c) restart: nothing expires while xipsecd is stopped; time counts from the SA's creation ----
xt_stop xipsecd-gw1 TERM
log1="$XT_DIR/xipsecd-gw1-first.log"
mv "$XT_DIR/xipsecd-gw1.log" "$log1"
grep -q "notice: stopped" "$log1" || { cat "$log1" >&2; xt_fail "xipsecd on gw1 did not stop cleanly"; }
! grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$log1" ||
	{ cat "$log1" >&2; xt_fail "sanitizer report from the first xipsecd on gw1"; }
conf gw1 0x3000:0x3001 "$K5:$K6" "hard time 2"
t0=$(ms)
load gw1 -F
sleep 2.5
read -r exp soft hard pk by dr <<< "$(state 0x3000)"
[ "$exp" = none ] || xt_fail "(c) expiry '$exp' while no xipsecd ran"
dp_start gw1
t=$(( $(ms) - t0 ))
xt_wait 2 sh -c "timeout 30 '$CTL' --sadb '$(dp_sadb_of gw1)' --json show sa 0x3000 | grep -q '\"expiry\": \"hard\"'" ||
	xt_fail "(c) the SA whose 2 s ran out while xipsecd was stopped is not expired 2 s after its start"
xt_log "(c) xipsecd up $t ms after the load; the SA seen expired $(( $(ms) - t0 )) ms after the load"
grep -q "notice: SA spi 0x00003000 .*hard lifetime reached (time)" "$XT_DIR/xipsecd-gw1.log" ||
	{ cat "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "(c) xipsecd log lacks the expiry"; }
dp_status gw1 > "$XT_DIR/status-c.json" || xt_fail "xipsecd --status on gw1"
[ "$(dp_json "$XT_DIR/status-c.json" "j['sa_soft_expired'], j['sa_hard_expired']")" = "0 2" ] ||
	{ cat "$XT_DIR/status-c.json" >&2; xt_fail "(c) gw1 --status after the restart: expected 0 soft, 2 hard"; }

# keys never reach the log
for k in "$K1" "$K2" "$K3" "$K4" "$K5" "$K6"; do
	! grep -qi "${k#0x}" "$log1" "$XT_DIR/xipsecd-gw1.log" "$XT_DIR/xipsecd-gw2.log" ||
		xt_fail "a key in xipsecd's log"
done
dp_finish
exit 0
