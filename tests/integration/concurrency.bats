#!/usr/bin/env bats
# Many streams starting, finishing and being cancelled at once across two
# responder processes, with /_debug readers of the shared state file in
# parallel. The counts must stay consistent. scripts/check also runs this
# file against a ThreadSanitizer build (any report fails).

load helpers

setup_file() {
	TS_PROCS=2 ts_start --keepalive-ms 200
}

teardown_file() {
	ts_stop
}

@test "concurrent streams, cancels and state readers: per-stream counts add up to the total" {
	d=$BATS_TEST_TMPDIR
	before=$(curl -sS "$BASE/_debug/generated" | jq '.total_generated // 0')
	[ -n "$before" ] || before=0
	first=$(( $(curl -sS "$BASE/_debug/generated" | jq -r '.id // "0"') + 1 ))
	# 30 streams that finish, 30 that are cancelled at random points
	# (curl -m), 20 /generate requests, and readers of the state file
	for i in $(seq 1 30); do
		curl -sS -N -o "$d/f$i" "$BASE/stream?prompt=f$i&max_tokens=30&tpot_ms=5" &
		curl -sS -N -m "0.$((i % 9 + 1))" -o /dev/null \
			"$BASE/stream?prompt=c$i&max_tokens=500&tpot_ms=5" &
	done
	for i in $(seq 1 20); do
		curl -sS -o "$d/g$i" -d "{\"prompt\":\"g$i\",\"max_tokens\":10,\"tpot_ms\":5}" \
			"$BASE/generate" &
	done
	for i in $(seq 1 40); do
		curl -sS -o /dev/null "$BASE/_debug/generated"
	done
	wait || true
	# every finished stream is complete
	for i in $(seq 1 30); do
		[ "$(grep -c '^data: {"token":' "$d/f$i")" -eq 30 ]
	done
	for i in $(seq 1 20); do
		jq -e '.usage.completion_tokens == 10' "$d/g$i" >/dev/null
	done
	last=$(curl -sS "$BASE/_debug/generated" | jq -r .id)
	# wait until nothing runs, then add up every stream's count
	sum=0
	for id in $(seq "$first" "$last"); do
		wait_not_running "$id"
		g=$(debug_field "$id" generated)
		sum=$((sum + g))
	done
	after=$(curl -sS "$BASE/_debug/generated" | jq .total_generated)
	echo "streams $first..$last sum=$sum total delta=$((after - before))"
	[ $((last - first + 1)) -eq 80 ]
	[ "$sum" -eq $((after - before)) ]
}
