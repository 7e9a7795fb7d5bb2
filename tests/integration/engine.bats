#!/usr/bin/env bats
# The serving engine through lighttpd: slots and the waiting queue, 429 at
# the cap, a slot freed by a cancellation going to the next request, a
# client that leaves the queue, a stalled reader, and POST /generate
# noticing a client that gave up.

load helpers

setup_file() {
	ts_start --max-num-seqs 2 --max-waiting 2 --keepalive-ms 200 \
		--write-stall-ms 500
}

teardown_file() {
	ts_stop
}

# stream_bg MAX_TOKENS OUT: a /stream read to the end in the background
stream_bg() {
	curl -sN -D "$2.h" "$BASE/stream?prompt=busy&max_tokens=$1" >"$2" &
}

# wait_engine EXPR: until the engine's counts satisfy the jq EXPR over
# {running, waiting} (250 polls 20 ms apart, about 10 s): a stream started
# in the background has reached its slot or the queue, however busy this
# machine is
wait_engine() {
	local i
	for i in $(seq 1 250); do
		curl -s -m 2 "$BASE/_debug/generated" | jq -e \
			"{running: (.engine.running // 0), waiting: (.engine.waiting // 0)} | $1" \
			>/dev/null && return 0
		sleep 0.02
	done
	echo "the engine never reached $1" >&2
	return 1
}

# wait_idle: until no sequence is in a slot or waiting
wait_idle() {
	wait_engine '.running == 0 and .waiting == 0'
}

@test "two slots: a third stream waits with keep-alives, then runs; queue_ms shows the wait" {
	wait_idle
	stream_bg 40 "$BATS_TEST_TMPDIR/a"
	stream_bg 40 "$BATS_TEST_TMPDIR/b"
	wait_engine '.running == 2'
	t0=$EPOCHREALTIME
	curl -sN -D "$BATS_TEST_TMPDIR/c.h" \
		"$BASE/stream?prompt=third&max_tokens=3" >"$BATS_TEST_TMPDIR/c"
	elapsed=$(calc "$EPOCHREALTIME - $t0")
	wait
	echo "third stream took $elapsed s"
	# a and b hold the slots for 40 + 39 x 20 = 820 ms from their start
	holds "$elapsed > 0.45"
	grep -q '^: keep-alive' "$BATS_TEST_TMPDIR/c"
	[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/c")" -eq 3 ]
	id=$(header_of "$BATS_TEST_TMPDIR/c.h" X-Request-Id)
	q=$(debug_field "$id" queue_ms)
	echo "queue_ms=$q"
	holds "$q > 400"
	[ "$(debug_field "$id" status)" = done ]
	[ "$(debug_field "$id" finish_reason)" = length ]
}

@test "beyond slots + waiting cap: 429 with Retry-After and a JSON error; others unharmed" {
	wait_idle
	for n in 1 2 3 4; do
		stream_bg 25 "$BATS_TEST_TMPDIR/s$n"
	done
	wait_engine '.running == 2 and .waiting == 2'
	code=$(curl -s -D "$BATS_TEST_TMPDIR/r.h" -o "$BATS_TEST_TMPDIR/r" \
		-w '%{http_code}' "$BASE/stream?prompt=late&max_tokens=3")
	cat "$BATS_TEST_TMPDIR/r"
	[ "$code" = 429 ]
	[ "$(header_of "$BATS_TEST_TMPDIR/r.h" Retry-After)" = 1 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/r")" = queue_full ]
	[ "$(jq -r .error.type "$BATS_TEST_TMPDIR/r")" = rate_limit_error ]
	# POST /generate is refused the same way
	code=$(curl -s -o /dev/null -w '%{http_code}' \
		-d '{"prompt":"late","max_tokens":2}' "$BASE/generate")
	[ "$code" = 429 ]
	wait
	for n in 1 2 3 4; do
		[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/s$n")" -eq 25 ]
		tail -n 2 "$BATS_TEST_TMPDIR/s$n" | grep -q '^data: \[DONE\]'
	done
}

@test "a client that leaves the waiting queue is dropped at once, no token made" {
	wait_idle
	stream_bg 40 "$BATS_TEST_TMPDIR/a"
	stream_bg 40 "$BATS_TEST_TMPDIR/b"
	wait_engine '.running == 2'
	# waits, sees keep-alives, gives up after 0.5 s
	curl -sN -m 0.5 -D "$BATS_TEST_TMPDIR/w.h" \
		"$BASE/stream?prompt=impatient&max_tokens=5" \
		>"$BATS_TEST_TMPDIR/w" || true
	id=$(header_of "$BATS_TEST_TMPDIR/w.h" X-Request-Id)
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" finish_reason)" = abort ]
	[ "$(debug_field "$id" generated)" -eq 0 ]
	[ "$(debug_field "$id" cancel_cause)" = client_gone ]
	# it never took a slot: no queue time to report
	[ "$(curl -s "$BASE/_debug/generated?id=$id" | jq .queue_ms)" = null ]
	# it left while a and b still ran (they end at ~840 ms)
	[ "$(debug_field "$id" ended_ms)" -lt \
	  "$(( $(debug_field "$id" started_ms) + 800 ))" ]
	wait
}

@test "a cancelled stream's slot goes to the waiting request within one decode step" {
	wait_idle
	stream_bg 60 "$BATS_TEST_TMPDIR/long"
	wait_engine '.running == 1'
	# takes the second slot, reads 10 tokens (~240 ms), then leaves
	"$TOKBENCH" cancel --url "$BASE" --read 10 --max-tokens 400 \
		--prompt leaver --id-only >"$BATS_TEST_TMPDIR/leaver" &
	wait_engine '.running == 2'
	curl -sN -D "$BATS_TEST_TMPDIR/n.h" \
		"$BASE/stream?prompt=next&max_tokens=2" >"$BATS_TEST_TMPDIR/n"
	wait
	leaver=$(cat "$BATS_TEST_TMPDIR/leaver")
	id=$(header_of "$BATS_TEST_TMPDIR/n.h" X-Request-Id)
	curl -s "$BASE/_debug/generated?id=$leaver"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$leaver" status)" = cancelled ]
	left=$(debug_field "$leaver" ended_ms)
	started=$(debug_field "$id" started_ms)
	q=$(debug_field "$id" queue_ms)
	admitted=$(calc "$started + $q")
	echo "leaver ended at $left, next admitted at $admitted"
	# it waited, and was admitted when the leaver left (clocks: +-25 ms)
	holds "$q > 100"
	holds "($admitted - $left) < 25 && ($left - $admitted) < 25"
	[ "$(debug_field "$leaver" cancel_to_leave_ms | cut -d. -f1)" -le 21 ]
}

@test "a stalled reader is cancelled after --write-stall-ms and frees its slot" {
	command -v node >/dev/null || skip "node is not installed"
	wait_idle
	run node "$TS_SRCDIR/tests/node/fcgi-stall.mjs" "$RUNDIR/tokstream.sock" \
		"/stream?prompt=stall&max_tokens=8192&tpot_ms=1" 6
	[ "$status" -eq 0 ]
	id=$(curl -s "$BASE/_debug/generated" | jq -r .id)
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" cancel_cause)" = write_stall ]
	[ "$(debug_field "$id" generated)" -lt 8192 ]
	[ "$(debug_field "$id" wasted)" -gt 0 ]
	wait_idle
	curl -sf "$BASE/health"
}

@test "POST /generate: a client that gives up (curl -m 1) is noticed and cancelled" {
	wait_idle
	curl -s -m 1 -D "$BATS_TEST_TMPDIR/g.h" \
		-d '{"prompt":"slow","max_tokens":300}' "$BASE/generate" || true
	id=$(header_of "$BATS_TEST_TMPDIR/g.h" X-Request-Id)
	[ -n "$id" ]
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	g=$(debug_field "$id" generated)
	echo "generated $g of 300"
	[ "$g" -lt 150 ]
}

@test "POST /generate longer than a keep-alive: 200 head, newlines, then the JSON; an error arrives as the body" {
	wait_idle
	curl -s -D "$BATS_TEST_TMPDIR/h" -d '{"prompt":"x","max_tokens":30}' \
		"$BASE/generate" >"$BATS_TEST_TMPDIR/b"
	[ "$(head -c 1 "$BATS_TEST_TMPDIR/b" | od -An -c | tr -d ' ')" = '\n' ]
	[ "$(jq -r .usage.completion_tokens "$BATS_TEST_TMPDIR/b")" -eq 30 ]
	curl -s -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
		-d '{"prompt":"x","max_tokens":30,"error_after":25}' \
		"$BASE/generate" >"$BATS_TEST_TMPDIR/code"
	[ "$(cat "$BATS_TEST_TMPDIR/code")" = 200 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = injected_error ]
	# a short one keeps its status
	code=$(curl -s -o /dev/null -w '%{http_code}' \
		-d '{"prompt":"x","max_tokens":3,"error_after":1}' "$BASE/generate")
	[ "$code" = 500 ]
}
