#!/usr/bin/env bash
# tests/soak/soak.sh - a bounded soak test (issue #5): 500 concurrent
# streams for SOAK_DURATION seconds, 30% of them abandoned at random (half
# of the clients hang up with a FIN, half with a TCP reset), against two
# responder processes behind lighttpd, started by tokstream-ctl (so as
# www-data when run as root). It samples every responder's and lighttpd's
# RSS, open descriptors and threads before the load, every SOAK_EVERY
# seconds during it, and after it has drained, prints them as a table, and
# fails when they drift past the bounds below or a request failed.
#
#   tests/soak/soak.sh              (from the top of a built tree)
#
# Bounds (docs/RELIABILITY.md "Soak test"), per process:
#   fds      after the drain, within SOAK_FD_SLACK (4) of before the load
#   threads  after the drain, equal to before the load
#   RSS      at the end of the load and after the drain, less than
#            SOAK_RSS_MB (10) MB above the first sample taken after
#            SOAK_WARMUP (20) s of load
#   requests no failure of any kind (no 429, 5xx, truncation, timeout),
#            the responders never restarted, no request left running
#
# Environment: SOAK_DURATION (90), SOAK_CONCURRENCY (500, split over two
# tokbench clients), SOAK_ABANDON (0.3), SOAK_PROCS (2), SOAK_EVERY (10),
# SOAK_WARMUP (20), SOAK_SEED (1), SOAK_FD_SLACK (4), SOAK_RSS_MB (10),
# SOAK_OUT (soak-out/); TS_BUILDDIR (the build tree, default the source
# tree); GLIBC_TUNABLES goes to tokstream-ctl as it is (its default for
# the responders is glibc.malloc.tcache_count=0; an empty one measures
# glibc's defaults, docs/OPERATIONS.md "Memory"). Exit status 0 when
# every bound held, 1 otherwise, 2 when it could not run.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TS_BUILDDIR:-$top}
ctl=$top/scripts/tokstream-ctl
tokbench=$build/src/bench/tokbench
duration=${SOAK_DURATION:-90}
concurrency=${SOAK_CONCURRENCY:-500}
abandon=${SOAK_ABANDON:-0.3}
procs=${SOAK_PROCS:-2}
every=${SOAK_EVERY:-10}
warmup=${SOAK_WARMUP:-20}
seed=${SOAK_SEED:-1}
fd_slack=${SOAK_FD_SLACK:-4}
rss_mb=${SOAK_RSS_MB:-10}
out=${SOAK_OUT:-$top/soak-out}
me=soak

die() { echo "$me: $*" >&2; exit 2; }

[ -x "$tokbench" ] && [ -x "$build/src/tokstream-fcgi" ] ||
	die "build first (make): $tokbench not found"
for p in curl jq; do
	command -v $p >/dev/null || die "$p not found: apt-get install $p"
done
# tokbench holds one socket per stream, the responders one FastCGI
# connection each: 500 streams need more than the usual 1024 descriptors.
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" -ge $((concurrency * 2 + 100)) ] ||
	die "ulimit -n is $(ulimit -n); $((concurrency * 2 + 100)) needed"

mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.txt "$out"/samples
for i in $(seq 1 50); do   # a port nobody listens on
	port=$(( 10000 + (RANDOM * 32768 + RANDOM) % 22000 ))  # below the ephemeral range
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
# a run directory www-data can reach when run as root (tokstream-ctl makes
# it root:www-data 0750; /tmp is searchable by all)
rundir=$(mktemp -d /tmp/tokstream-soak.XXXXXX)
# ... and a responder it can run: a copy when the checkout is out of its
# reach (under /root, say)
. "$top/tests/lib/stage.bash"
stage_for_user "${TOKSTREAM_USER:-www-data}" "$build" "$top" ||
	die "cannot copy the responder where ${TOKSTREAM_USER:-www-data} can run it"
url=http://127.0.0.1:$port
# capacity for every stream in a slot: 500 over two processes, with room
# for lighttpd's least-connection balancing to be uneven
per=$(( (concurrency + procs - 1) / procs ))
seqs=$(( per + per / 4 ))
waiting=$(( per / 2 ))

ctl_env() {
	env TOKSTREAM_PORT="$port" TOKSTREAM_RUNDIR="$rundir" \
		TOKSTREAM_PROCS="$procs" TOKSTREAM_BINDIR="$STAGE_BINDIR" \
		TOKSTREAM_SITECONF="$STAGE_SITECONF" "$@"
}

cleanup() {
	ctl_env "$ctl" stop >/dev/null 2>&1
	[ -n "${loadpids:-}" ] && kill $loadpids 2>/dev/null
	rm -rf "$rundir"
	stage_remove
}
trap cleanup EXIT
trap 'exit 2' INT TERM

ctl_env TOKSTREAM_FCGI_ARGS="--max-num-seqs $seqs --max-waiting $waiting --keepalive-ms 500" \
	"$ctl" start > "$out/ctl.txt" 2>&1 || { cat "$out/ctl.txt"; die "the server did not start"; }
cat "$out/ctl.txt"

# processes: "name pid" lines, the responders in socket order, then lighttpd
processes() {
	local i=1 p
	for p in $(cat "$rundir/tokstream-fcgi.pid"); do
		echo "responder-$i $p"
		i=$((i + 1))
	done
	echo "lighttpd $(cat "$rundir/lighttpd.pid")"
}
procs_before=$(processes)
# what tokstream-ctl gave the responders (docs/OPERATIONS.md "Memory": without
# glibc's per-thread caches unless GLIBC_TUNABLES says otherwise)
p1=$(echo "$procs_before" | awk 'NR == 1 { print $2 }')
tunables=$(tr '\0' '\n' < "/proc/$p1/environ" | sed -n 's/^GLIBC_TUNABLES=//p')

# sample T PHASE: one line per process:
# T PHASE NAME PID RSS_KB FDS THREADS CPU_TICKS (user + system)
sample() {
	local name pid rss fds thr cpu
	while read -r name pid; do
		rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status" 2>/dev/null)
		thr=$(awk '$1 == "Threads:" { print $2 }' "/proc/$pid/status" 2>/dev/null)
		fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
		# after the ")" that ends the command name: utime, stime are
		# fields 12 and 13
		cpu=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 }')
		echo "$1 $2 $name $pid ${rss:-gone} $fds ${thr:-gone} ${cpu:-0}"
	done <<EOF
$procs_before
EOF
}

# Warm-up: a few streams of each kind, so the baseline is a server that
# has served (thread stacks touched, allocator arenas made).
"$tokbench" load --url "$url" --concurrency 32 --requests 200 \
	--output-tokens 8:32 --abandon 0.3:3 --seed "$seed" --quiet \
	> "$out/warmup.txt" 2>&1 || { cat "$out/warmup.txt"; exit 1; }
sleep 2
sample 0 before > "$out/samples"

half=$(( concurrency / 2 ))
common="--url $url --duration $duration --prompt-tokens 16:256 --output-tokens 16:128 --timeout 60 --quiet"
# shellcheck disable=SC2086
"$tokbench" load $common --concurrency "$half" --abandon "$abandon:5" \
	--seed "$seed" --json "$out/fin.json" > "$out/fin.txt" 2>&1 &
loadpids=$!
# shellcheck disable=SC2086
"$tokbench" load $common --concurrency $(( concurrency - half )) \
	--abandon "$abandon:12" --abandon-rst --seed $(( seed + 1 )) \
	--json "$out/rst.json" > "$out/rst.txt" 2>&1 &
loadpids="$loadpids $!"
start=$(date +%s)
t=0
while [ $t -lt "$duration" ]; do
	sleep $(( every - ( $(date +%s) - start ) % every ))
	t=$(( $(date +%s) - start ))
	sample "$t" load >> "$out/samples"
	echo "$me: ${t}s: $(curl -s -m 2 "$url/metrics" | sed -E 's/\{model_name="([^"\\]|\\.)*"\}//' | awk '$1 == "tokstream:num_requests_running" { r = $2 } $1 == "tokstream:num_requests_waiting" { w = $2 } END { print r " running, " w " waiting" }')" >&2
done
rc_load=0
for p in $loadpids; do wait "$p" || rc_load=1; done
loadpids=
end=$(( $(date +%s) - start ))
# the drain: every stream has ended (the clients have), let the server
# close what it holds
for i in $(seq 1 30); do
	sleep 1
	sample "$end" after > "$out/after.tmp"
	ok=1
	while read -r t0 ph name pid rss fds thr cpu; do
		b=$(awk -v n="$name" '$3 == n { print $6 }' "$out/samples" | head -n 1)
		[ $(( fds - b )) -le "$fd_slack" ] || ok=0
	done < "$out/after.tmp"
	[ $ok -eq 1 ] && break
done
end=$(( $(date +%s) - start ))
sample "$end" after >> "$out/samples"
# every series carries model_name (docs/API.md "GET /metrics"): left out
# here, so the series are named NAME or NAME{label="v"}
curl -s "$url/metrics" |
	sed -E 's/\{model_name="([^"\\]|\\.)*"\}//; s/\{model_name="([^"\\]|\\.)*",/{/' \
	> "$out/metrics.txt"
rm -f "$out/after.tmp"

# ---- report -----------------------------------------------------------
echo
echo "== soak: $concurrency streams for ${duration} s, $procs responders ($seqs slots, $waiting waiting each), abandon $abandon (FIN after 5 tokens / RST after 12), responders' GLIBC_TUNABLES=${tunables:-(none: glibc defaults)}"
printf '%6s  %-6s  %-12s %7s %10s %6s %8s %8s\n' t phase process pid "RSS kB" fds threads "CPU s"
hz=$(getconf CLK_TCK)
while read -r t ph name pid rss fds thr cpu; do
	printf '%6s  %-6s  %-12s %7s %10s %6s %8s %8s\n' "$t" "$ph" "$name" "$pid" "$rss" "$fds" "$thr" "$(awk -v c="$cpu" -v h="$hz" 'BEGIN { printf "%.1f", c / h }')"
done < "$out/samples"

fail=0
bad() { echo "FAIL: $*"; fail=1; }

echo
printf '%-12s %9s %9s %9s | %8s %8s | %11s %11s %11s %9s\n' process "fds 0" "fds max" "fds end" "thr 0" "thr end" "RSS 0 kB" "RSS warm kB" "RSS end kB" "growth"
while read -r name pid; do
	rows=$(awk -v n="$name" '$3 == n' "$out/samples")
	f0=$(echo "$rows" | awk '$2 == "before" { print $6 }')
	fmax=$(echo "$rows" | awk '{ if ($6 > m) m = $6 } END { print m }')
	fend=$(echo "$rows" | awk '$2 == "after" { print $6 }')
	t0=$(echo "$rows" | awk '$2 == "before" { print $7 }')
	tend=$(echo "$rows" | awk '$2 == "after" { print $7 }')
	r0=$(echo "$rows" | awk '$2 == "before" { print $5 }')
	rwarm=$(echo "$rows" | awk -v w="$warmup" '$2 == "load" && $1 >= w { print $5; exit }')
	rlast=$(echo "$rows" | awk '$2 == "load" { r = $5 } END { print r }')
	rend=$(echo "$rows" | awk '$2 == "after" { print $5 }')
	[ -n "$rwarm" ] || rwarm=$rlast
	grow=$(( (rlast > rend ? rlast : rend) - rwarm ))
	printf '%-12s %9s %9s %9s | %8s %8s | %11s %11s %11s %9s\n' "$name" "$f0" "$fmax" "$fend" "$t0" "$tend" "$r0" "$rwarm" "$rend" "$grow"
	case "$rend$tend" in *gone*) bad "$name (pid $pid) is gone"; continue ;; esac
	d=$(( fend - f0 )); [ ${d#-} -le "$fd_slack" ] ||
		bad "$name: $fend open fds after the drain, $f0 before (bound +-$fd_slack)"
	[ "$tend" -eq "$t0" ] || bad "$name: $tend threads after, $t0 before"
	[ "$grow" -lt $(( rss_mb * 1024 )) ] ||
		bad "$name: RSS grew $grow kB after the warm-up (bound $rss_mb MB)"
done <<EOF
$procs_before
EOF

echo
for side in fin rst; do
	j=$out/$side.json
	if [ ! -s "$j" ]; then bad "tokbench ($side) wrote no report: $(tail -n 3 "$out/$side.txt")"; continue; fi
	jq -r --arg s "$side" '"tokbench \($s): \(.completed) completed, \(.abandoned) abandoned, \(.failed) failed, \(.output_throughput | floor) tok/s, TTFT p50/p99 \(.median_ttft_ms | floor)/\(.p99_ttft_ms | floor) ms, ITL p50/p99 \(.median_itl_ms * 10 | floor / 10)/\(.p99_itl_ms * 10 | floor / 10) ms, peak \(.max_concurrent_requests) streams"' "$j"
	[ "$(jq .failed "$j")" -eq 0 ] ||
		bad "tokbench $side: failures $(jq -c '.failures | with_entries(select(.value > 0))' "$j") $(jq -c .failure_examples "$j")"
done
[ $rc_load -eq 0 ] || bad "a tokbench client exited non-zero"
m() { awk -v n="$1" '$1 == n { print $2 }' "$out/metrics.txt"; }
echo "server: $(m 'tokstream:generation_tokens_total') tokens generated, $(m 'tokstream:wasted_tokens_total') wasted, aborted $(m 'tokstream:request_success_total{finished_reason="abort"}'), length $(m 'tokstream:request_success_total{finished_reason="length"}'), 429s $(m 'tokstream:requests_rejected_total{reason="queue_full"}')"
[ "$(m tokstream:num_requests_running)" = 0 ] ||
	bad "$(m tokstream:num_requests_running) requests still running after the drain"
[ "$(m tokstream:num_requests_waiting)" = 0 ] ||
	bad "$(m tokstream:num_requests_waiting) requests still waiting after the drain"
[ "$(processes)" = "$procs_before" ] || bad "a responder was restarted: $(processes | xargs)"
! grep -q 'is gone' "$rundir/supervisor.log" 2>/dev/null ||
	bad "supervisor: $(grep 'is gone' "$rundir/supervisor.log")"
cp "$rundir"/*.log "$out/" 2>/dev/null

echo
if [ $fail -eq 0 ]; then echo "soak: ok (${end} s; samples and reports in $out)"
else echo "soak: FAILED (samples and reports in $out)"; fi
exit $fail
