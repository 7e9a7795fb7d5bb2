#!/usr/bin/env bats
# The cancel proof: when a client leaves, generation really stops, whether
# it leaves mid-decode or during a long silent prefill.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# read_and_close N QUERY: reads N token events of /stream?QUERY, then
# closes the connection; prints the stream id.
read_and_close() {
	"$TOKBENCH" cancel --url "$BASE" --read "$1" --query "$2" --id-only
}

@test "cancel proof: read 5 of 100 tokens, close; generation stops (<= 30)" {
	run "$TOKBENCH" cancel --url "$BASE" --out "$BATS_TEST_TMPDIR"
	[ "$status" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/cancel.txt"
	line=$(cat "$BATS_TEST_TMPDIR/cancel.txt")
	[[ "$line" =~ ^requested=100\ generated=([0-9]+)$ ]]
	g=${BASH_REMATCH[1]}
	[ "$g" -ge 5 ]
	[ "$g" -le 30 ]
	# it stays stopped
	id=$(curl -sS "$BASE/_debug/generated" | jq -r .id)
	sleep 0.3
	[ "$(debug_field "$id" generated)" -eq "$g" ]
}

@test "C04: max_tokens=4000, read 3 and close: stops within 2 tokens; next request at normal TTFT" {
	t0=$EPOCHREALTIME
	id=$("$TOKBENCH" cancel --url "$BASE" --read 3 --max-tokens 4000 --id-only)
	wait_not_running "$id"
	g=$(debug_field "$id" generated)
	echo "generated $g"
	[ "$g" -le 5 ]
	[ "$(debug_field "$id" status)" = cancelled ]
	run "$TOKBENCH" stream --url "$BASE" --prompt next --max-tokens 3 --json
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.ttft_ms < 500'
}

@test "C03: a client that leaves during a 5 s prefill is noticed within a keep-alive interval" {
	curl -sS -N -m 1 -D "$BATS_TEST_TMPDIR/h" -o /dev/null \
		"$BASE/stream?prompt=hello&max_tokens=50&prefill_ms=5000" || true
	gone=$(calc "$EPOCHREALTIME * 1000")
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	[ -n "$id" ]
	wait_not_running "$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" generated)" -eq 0 ]
	# closed at 1 s; noticed by the next keep-alive write or the one after
	# (lighttpd needs one write to see a FIN: docs/RELIABILITY.md
	# "How a client that leaves is noticed"), far before 5 s: the
	# server's end, from when curl had left, within two 500 ms intervals
	# and a half for slack; and before the prefill would have ended
	started=$(debug_field "$id" started_ms)
	ended=$(debug_field "$id" ended_ms)
	echo "started $started, the client left at $gone, ended $ended"
	holds "$ended - $gone < 1250"
	holds "$ended - $started < 5000"
}

@test "a client that leaves during a 2 s prefill is noticed before any token" {
	curl -sS -N -m 0.5 -D "$BATS_TEST_TMPDIR/h" -o /dev/null \
		"$BASE/stream?prompt=hello&max_tokens=20&prefill_ms=2000" || true
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	wait_not_running "$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" generated)" -eq 0 ]
	sleep 2
	[ "$(debug_field "$id" generated)" -eq 0 ]
}

@test "a hard reset (RST) mid-stream stops generation too" {
	id=$("$TOKBENCH" cancel --url "$BASE" --read 5 --max-tokens 200 --rst --id-only)
	wait_not_running "$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" generated)" -le 8 ]
}

@test "other streams are unaffected by a cancelled one" {
	curl -sS -N -o "$BATS_TEST_TMPDIR/other" "$BASE/stream?prompt=other&max_tokens=40" &
	other=$!
	"$TOKBENCH" cancel --url "$BASE" --read 2 --max-tokens 100 --id-only
	wait "$other"
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/other")" -eq 40 ]
	grep -qx 'data: \[DONE\]' "$BATS_TEST_TMPDIR/other"
}
