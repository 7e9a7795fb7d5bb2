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

@test "a client that leaves a stream on a slow cadence of its own (tpot_ms 8000) frees its slot at once, not at its next token" {
	curl -sS -N -m 1.5 -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/b" \
		"$BASE/stream?prompt=slow&max_tokens=5&tpot_ms=8000&prefill_ms=0" || true
	gone=$(calc "$EPOCHREALTIME * 1000")
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	[ -n "$id" ]
	# its first token came at once; the next is 8 s away
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/b")" -eq 1 ]
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" cancel_cause)" = client_gone ]
	[ "$(debug_field "$id" generated)" -eq 1 ]
	# noticed at a keep-alive write (500 ms apart; lighttpd needs one
	# to see the FIN) and left at the engine's next pass: within two
	# intervals and a half of curl leaving, long before the 8 s step
	# at which a sequence on its own cadence used to leave
	started=$(debug_field "$id" started_ms)
	ended=$(debug_field "$id" ended_ms)
	echo "started $started, the client left at $gone, ended $ended"
	holds "$ended - $gone < 1250"
	holds "$ended - $started < 8000"
}

@test "n = 3: a client that leaves a /v1 stream cancels every choice, each within a few tokens of what it had" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N -m 1 -D "$d/h" -o "$d/b" -H 'Content-Type: application/json' \
		-d '{"model":"tokstream-sim","messages":[{"role":"user","content":"leave"}],"n":3,"stream":true,"max_tokens":200,"ignore_eos":true,"tpot_ms":50}' \
		"$BASE/v1/chat/completions" || true
	id=$(header_of "$d/h" X-Request-Id)
	[ -n "$id" ]
	# the choices are sequences id, id + 1, id + 2 (one slot each)
	for k in 0 1 2; do
		wait_not_running $((id + k))
	done
	for k in 0 1 2; do
		s=$((id + k))
		# the content deltas of choice k the client had when it left
		had=$(sed -n 's/^data: //p' "$d/b" | grep -v '^\[DONE\]' |
			jq -c --argjson k "$k" 'select(.choices[0].index == $k and
				(.choices[0].delta.content // "") != "")' | wc -l)
		g=$(debug_field "$s" generated)
		echo "choice $k (stream $s): had $had, generated $g"
		[ "$had" -ge 1 ]
		[ "$(debug_field "$s" status)" = cancelled ]
		[ "$(debug_field "$s" cancel_cause)" = client_gone ]
		# as for one choice (v1.bats): one on its way, the one lighttpd
		# must write to see the FIN, the step that was decoding
		[ "$g" -le $((had + 3)) ]
	done
	[ "$(curl -s "$BASE/_debug/generated" | jq .engine.running)" -eq 0 ]
}
