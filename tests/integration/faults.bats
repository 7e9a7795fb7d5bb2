#!/usr/bin/env bats
# Faults (issue #5): kill -9 of one of two responder processes mid-stream,
# and clients that hard-reset at random points.

load helpers

setup_file() {
	TS_PROCS=2 ts_start --keepalive-ms 300
}

teardown_file() {
	ts_stop
}

# pid_of_stream HEADERS_FILE: the responder pid that runs that stream
pid_of_stream() {
	debug_field "$(header_of "$1" X-Request-Id)" pid
}

@test "kill -9 of one of two responders: its clients see a truncated stream, the other's finish; the supervisor brings it back" {
	for n in 1 2 3 4 5 6; do
		curl -sN -D "$BATS_TEST_TMPDIR/h$n" -o "$BATS_TEST_TMPDIR/b$n" \
			"$BASE/stream?prompt=k$n&max_tokens=60" &
	done
	sleep 0.4
	victim=$(pid_of_stream "$BATS_TEST_TMPDIR/h1")
	echo "killing $victim"
	kill -9 "$victim"
	wait || true
	# back within a few seconds, a new pid on the same socket; lighttpd
	# sends to that socket again after its disable-time (1 s)
	for i in $(seq 1 50); do
		[ "$(live_responders)" -eq 2 ] && break
		sleep 0.1
	done
	[ "$(live_responders)" -eq 2 ]
	! grep -qw "$victim" "$RUNDIR/tokstream-fcgi.pid" || false
	grep -q "is gone; starting it again" "$RUNDIR/supervisor.log"
	sleep 1.2
	cut=0 whole=0
	for n in 1 2 3 4 5 6; do
		id=$(header_of "$BATS_TEST_TMPDIR/h$n" X-Request-Id)
		if [ "$(debug_field "$id" pid)" = "$victim" ]; then
			# truncated: no [DONE], fewer than 60 tokens
			! grep -q '^data: \[DONE\]' "$BATS_TEST_TMPDIR/b$n" || false
			[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/b$n")" -lt 60 ]
			# the state file still answers for it: its owner is gone
			[ "$(debug_field "$id" status)" = error ]
			cut=$((cut + 1))
		else
			[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/b$n")" -eq 60 ]
			tail -n 2 "$BATS_TEST_TMPDIR/b$n" | grep -q '^data: \[DONE\]'
			whole=$((whole + 1))
		fi
	done
	echo "cut $cut, whole $whole"
	[ "$cut" -ge 1 ]
	[ "$whole" -ge 1 ]
	# and both processes serve again
	for n in $(seq 1 8); do
		curl -sN -D "$BATS_TEST_TMPDIR/n$n" -o /dev/null \
			"$BASE/stream?prompt=n$n&max_tokens=20" &
	done
	wait
	for n in $(seq 1 8); do
		pid_of_stream "$BATS_TEST_TMPDIR/n$n"
	done | sort -u >"$BATS_TEST_TMPDIR/pids"
	cat "$BATS_TEST_TMPDIR/pids"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/pids")" -eq 2 ]
}

live_responders() {
	n=0
	while read -r p; do
		[ -n "$p" ] && kill -0 "$p" 2>/dev/null && n=$((n + 1))
	done <"$RUNDIR/tokstream-fcgi.pid"
	echo $n
}

@test "50 streams reset (SO_LINGER 0) at random points: same pids, no fd, thread or memory growth, totals consistent" {
	pids=$(cat "$RUNDIR/tokstream-fcgi.pid" | xargs)
	snap() {
		for p in $pids; do
			echo "$p fds=$(ls /proc/$p/fd | wc -l)" \
			     "threads=$(ls /proc/$p/task | wc -l)" \
			     "rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$p/status)"
		done
	}
	# warm up: every pool thread and the engines have run once
	"$TOKBENCH" load --url "$BASE" --concurrency 20 --requests 40 \
		--output-tokens 10 --tpot-ms 5 --quiet --json /dev/null >/dev/null
	snap >"$BATS_TEST_TMPDIR/before"
	"$TOKBENCH" load --url "$BASE" --concurrency 25 --requests 50 \
		--output-tokens 10:80 --tpot-ms 5 --abandon 1:1 --abandon-rst \
		--seed 11 --quiet --json "$BATS_TEST_TMPDIR/r1.json" >/dev/null
	for k in 3 7 15 31; do
		"$TOKBENCH" load --url "$BASE" --concurrency 25 --requests 50 \
			--output-tokens 40:80 --tpot-ms 5 --abandon 1:$k \
			--abandon-rst --seed $k --quiet \
			--json "$BATS_TEST_TMPDIR/r$k.json" >/dev/null
	done
	sleep 0.5
	snap >"$BATS_TEST_TMPDIR/after"
	paste "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	# the same processes
	[ "$(cat "$RUNDIR/tokstream-fcgi.pid" | xargs)" = "$pids" ]
	while read -r p fb tb rb p2 fa ta ra; do
		fb=${fb#fds=} fa=${fa#fds=} tb=${tb#threads=} ta=${ta#threads=}
		rb=${rb#rss_kb=} ra=${ra#rss_kb=}
		[ "$fa" -le $((fb + 2)) ]
		[ "$ta" -eq "$tb" ]
		# ASan's quarantine keeps freed memory on purpose: RSS means
		# nothing under it (the fds and threads still must not grow)
		[ -n "${ASAN_OPTIONS:-}" ] || [ "$ra" -le $((rb + 2048)) ]
	done < <(paste -d' ' "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after")
	for f in "$BATS_TEST_TMPDIR"/r*.json; do
		jq -e '.abandoned == 50 and .failed == 0' "$f" >/dev/null
	done
	# every stream has ended and the totals agree
	curl -s "$BASE/metrics" | unlabel_model >"$BATS_TEST_TMPDIR/m"
	[ "$(awk '$1 == "tokstream:num_requests_running" {print $2}' "$BATS_TEST_TMPDIR/m")" -eq 0 ]
	[ "$(awk '$1 == "tokstream:generation_tokens_total" {print $2}' "$BATS_TEST_TMPDIR/m")" \
	  -eq "$(curl -s "$BASE/_debug/generated" | jq .total_generated)" ]
}
