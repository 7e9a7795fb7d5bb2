#!/usr/bin/env bats
# Two spawn-fcgi processes (-F 2) share one state file: determinism across
# processes, unique ids, totals that add up.

load helpers

setup_file() {
	TS_PROCS=2 ts_start
}

teardown_file() {
	ts_stop
}

@test "two responder processes run and share one state file" {
	[ "$(grep -c . "$RUNDIR/tokstream-fcgi.pid")" -eq 2 ]
	[ -f "$RUNDIR/state" ]
}

@test "determinism and shared totals across two processes" {
	before=$(curl -sS "$BASE/_debug/generated" | jq '.total_generated // 0' || echo 0)
	[ -n "$before" ] || before=0
	# 16 concurrent streams: both processes serve some (each process its own engine and I/O threads)
	for i in $(seq 1 16); do
		curl -sS -N -D "$BATS_TEST_TMPDIR/h$i" -o "$BATS_TEST_TMPDIR/b$i" \
			"$BASE/stream?prompt=same&max_tokens=25&tpot_ms=40" &
	done
	wait
	pids=""
	for i in $(seq 1 16); do
		# same events (ids differ: they name each stream)
		cmp <(grep '^data: ' "$BATS_TEST_TMPDIR/b1") \
			<(grep '^data: ' "$BATS_TEST_TMPDIR/b$i")
		[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/b$i")" -eq 25 ]
		id=$(header_of "$BATS_TEST_TMPDIR/h$i" X-Request-Id)
		pids="$pids $(debug_field "$id" pid)"
		echo "$id" >> "$BATS_TEST_TMPDIR/ids"
	done
	# ids are unique across processes
	[ "$(sort -u "$BATS_TEST_TMPDIR/ids" | wc -l)" -eq 16 ]
	# both processes served
	echo "pids:$pids"
	[ "$(echo $pids | tr ' ' '\n' | sort -u | wc -l)" -eq 2 ]
	after=$(curl -sS "$BASE/_debug/generated" | jq .total_generated)
	[ $((after - before)) -eq $((16 * 25)) ]
}
