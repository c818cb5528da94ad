#!/usr/bin/env bash
# tests/fuzz/run-fuzz.sh: runs every libFuzzer target of the ESP/AH engine, of libsadb's readers, of xipsecd's fragment reassembly
# and of the metrics exporter's HTTP request parser
# for a bounded time on a generated seed corpus and fails on any crash, sanitizer report, timeout or differential mismatch;
# prints the executions each target ran. First a self-test: with FZ_BREAK=1 the five differential
# targets must report a failure on their seeds (a check that cannot fail proves nothing).
# Env: FUZZ_SECONDS (default 10 per target), FUZZ_JOBS (targets at once, default nproc), FUZZ_CORPUS_DIR (keep the corpora there, e.g. for
# `make fuzz-long`; default: a temporary directory), FUZZ_TARGETS (subset, space-separated).
set -u
: "${top_builddir:?run me through make check or make fuzz-long}" "${top_srcdir:?}"
PY=${PYTHON:-/usr/bin/python3}
# 10 s a target in make check: a smoke run on a corpus thrown away afterwards. What it checks does
# not shrink with the time: every seed is run, the differential self-test, any crash, sanitizer
# report or mismatch fails it. 8 s a target, on two CPUs loaded by other builds (a tenth of the
# executions), already reached 85-100 % of the edges of 15 s on a quiet machine; the depth is
# `make fuzz-long`'s (600 s a target, on a corpus kept between runs).
secs=${FUZZ_SECONDS:-10}
bin=$top_builddir/tests/fuzz
targets=${FUZZ_TARGETS:-fuzz_parse fuzz_esp_in fuzz_udp_in fuzz_ah_in fuzz_esp_plain fuzz_ah_plain fuzz_roundtrip fuzz_burst fuzz_sadb_open fuzz_reasm fuzz_http fuzz_mip6}

tmp=$(mktemp -d /tmp/xipsec-fuzz.XXXXXX) || exit 99
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
corpus=${FUZZ_CORPUS_DIR:-$tmp/corpus}

for t in $targets; do
	[ -x "$bin/$t" ] || { echo "FAIL: $bin/$t is not built (make fuzz)"; exit 1; }
done
timeout 300 "$PY" "$top_srcdir/tests/fuzz/gen_seeds.py" "$tmp/seeds" || { echo "FAIL: seed generation"; exit 1; }
# fuzz_sadb_open builds its valid SADB itself (in $TMPDIR, here the run's temp dir): its seeds are
# patch lists, e.g. none, and the same with the record checksums recomputed.
mkdir -p "$tmp/seeds/fuzz_sadb_open"
printf '\000' >"$tmp/seeds/fuzz_sadb_open/none"
printf '\001' >"$tmp/seeds/fuzz_sadb_open/sums"
printf '\001\002\030\000\003\377\377\377\377' >"$tmp/seeds/fuzz_sadb_open/sa-slot"
# fuzz_mip6: a home registration Binding Update (checksum made by the harness: first byte 1), the
# same with a Home Address option, and a Binding Acknowledgement with a type 2 routing header.
mkdir -p "$tmp/seeds/fuzz_mip6"
mip6_a='\040\001\015\270\000\000\000\000\000\000\000\000\000\000\000'
printf "\001\140\000\000\000\000\020\207\100${mip6_a}\001${mip6_a}\002\073\001\005\000\000\000\000\001\300\000\000\020\001\002\000\000" >"$tmp/seeds/fuzz_mip6/bu"
printf "\001\140\000\000\000\000\050\074\100${mip6_a}\001${mip6_a}\002\207\002\001\002\000\000\311\020${mip6_a}\003\073\001\005\000\000\000\000\001\300\000\000\020\001\002\000\000" >"$tmp/seeds/fuzz_mip6/bu-hao"
printf "\001\140\000\000\000\000\050\053\100${mip6_a}\002${mip6_a}\001\207\002\002\001\000\000\000\000${mip6_a}\003\073\001\006\000\000\000\000\200\000\001\000\020\001\002\000\000" >"$tmp/seeds/fuzz_mip6/ba-rh2"
# fuzz_http: requests as a scraper, a browser and a confused client send them.
mkdir -p "$tmp/seeds/fuzz_http"
printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9786\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\nX-Prometheus-Scrape-Timeout-Seconds: 1\r\n\r\n' >"$tmp/seeds/fuzz_http/prometheus"
printf 'POST /metrics?x=1 HTTP/1.0\nContent-Length: 3\n\nabc' >"$tmp/seeds/fuzz_http/post"
printf '\r\nHEAD / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n folded\r\n\r\n' >"$tmp/seeds/fuzz_http/odd"

fail=0
# Self-test of the differential checks.
for t in fuzz_esp_plain fuzz_ah_plain fuzz_roundtrip fuzz_burst fuzz_reasm; do
	case " $targets " in *" $t "*) ;; *) continue ;; esac
	FZ_BREAK=1 timeout 120 "$bin/$t" -runs=0 -artifact_prefix="$tmp/selftest-" "$tmp/seeds/$t" \
		>"$tmp/selftest-$t.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q '^fuzz: ' "$tmp/selftest-$t.log"; then
		echo "self-test: $t with a corrupted reference/packet fails as it must (exit $rc): $(grep -m1 '^fuzz: ' "$tmp/selftest-$t.log" | cut -c1-100)"
	else
		echo "FAIL: self-test: $t did not notice the corruption (exit $rc)"
		tail -20 "$tmp/selftest-$t.log"
		fail=1
	fi
done

# The targets run FUZZ_JOBS at a time (default: one per CPU), each for its whole $secs, so the
# layer takes about (targets / CPUs) x $secs and no target fuzzes less; then each is judged in turn.
jobs=${FUZZ_JOBS:-$(nproc)}
fuzz_one() {
	local t=$1
	mkdir -p "$corpus/$t" "$tmp/tmp-$t"
	# -timeout: one input taking 10 s is a hang; the outer timeout guards libFuzzer itself.
	TMPDIR=$tmp/tmp-$t timeout $((secs + 120)) "$bin/$t" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=4096 -max_len=4096 -print_final_stats=1 -artifact_prefix="$tmp/crash-$t-" \
		"$corpus/$t" "$tmp/seeds/$t" >"$tmp/$t.log" 2>&1
	echo $? >"$tmp/$t.rc"
}
running=0
for t in $targets; do
	fuzz_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
total=0
for t in $targets; do
	log=$tmp/$t.log
	rc=$(cat "$tmp/$t.rc" 2>/dev/null || echo 99)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ncorp=$(ls "$corpus/$t" | wc -l)
	if [ "$rc" -eq 0 ] && [ -n "$execs" ]; then
		printf '%-16s %10s executions in %ss, coverage %s edges, corpus %s inputs: ok\n' "$t" "$execs" "$secs" "${cov:-?}" "$ncorp"
		total=$((total + execs))
	else
		printf '%-16s FAILED (exit %s) after %s executions\n' "$t" "$rc" "${execs:-?}"
		grep -E '^(fuzz:|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -20
		for a in "$tmp"/crash-"$t"-*; do
			[ -f "$a" ] || continue
			echo "reproducer ($a): $(xxd -p "$a" | tr -d '\n' | cut -c1-400)"
			[ -n "${FUZZ_CORPUS_DIR:-}" ] && cp "$a" "$FUZZ_CORPUS_DIR/" && echo "  kept in $FUZZ_CORPUS_DIR/$(basename "$a")"
		done
		tail -5 "$log"
		fail=1
	fi
done
echo "total: $total executions"
exit $fail
