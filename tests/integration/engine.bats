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

# The tests below hold the slots with streams that end only when the test
# lets them go: each test waits for the state it needs (the slots taken,
# a request in the queue), acts, then releases a holder, so what happens
# is in an order the test chose, however slowly this machine runs (a
# loaded machine or a sanitizer build stretches every step; a holder that
# ran out by itself would change the order).

# hold NAME: a stream that holds a slot (or its place in the queue) until
# `release NAME`: 4000 tokens at 20 ms, 80 s, longer than any test step
hold() {
	stream_bg 4000 "$BATS_TEST_TMPDIR/$1"
	echo $! >"$BATS_TEST_TMPDIR/$1.pid"
}

# release NAME: the holder's client leaves (its curl is killed), so the
# server cancels its stream (client_gone) and frees its slot
release() {
	local pid
	pid=$(cat "$BATS_TEST_TMPDIR/$1.pid")
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$BATS_TEST_TMPDIR/$1.pid"
}

# id_of NAME: the X-Request-Id of a holder or background stream
id_of() {
	header_of "$BATS_TEST_TMPDIR/$1.h" X-Request-Id
}

teardown() {
	local f
	for f in "$BATS_TEST_TMPDIR"/*.pid; do
		[ -e "$f" ] || continue
		release "$(basename "$f" .pid)"
	done
}

# wait_engine EXPR: until the engine's counts satisfy the jq EXPR over
# {running, waiting, held} (250 polls 20 ms apart, about 10 s): a stream
# started in the background has reached its slot or the queue, however
# busy this machine is
wait_engine() {
	local i
	for i in $(seq 1 250); do
		curl -s -m 2 "$BASE/_debug/generated" | jq -e \
			"{running: (.engine.running // 0), waiting: (.engine.waiting // 0), held: (.engine.held // 0)} | $1" \
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

# wait_line PATTERN FILE: until a line of FILE matches PATTERN (10 s)
wait_line() {
	local i
	for i in $(seq 1 500); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		sleep 0.02
	done
	echo "no line $1 in $2" >&2
	return 1
}

# admitted ID: when stream ID took its slot, in Unix ms: its start plus
# its queue_ms (started_ms is taken on submission, the queue time from
# the request's arrival, the leaver's ended_ms in the engine's pass: the
# three clocks agree within about a millisecond on an idle machine; the
# tests allow 25 ms)
admitted() {
	calc "$(debug_field "$1" started_ms) + $(debug_field "$1" queue_ms)"
}

@test "two slots: a third stream waits with keep-alives, then runs; queue_ms shows the wait" {
	wait_idle
	hold a
	hold b
	wait_engine '.running == 2'
	curl -sN -D "$BATS_TEST_TMPDIR/c.h" \
		"$BASE/stream?prompt=third&max_tokens=3" >"$BATS_TEST_TMPDIR/c" &
	c=$!
	wait_engine '.running == 2 and .waiting == 1'
	# while it waits it gets keep-alives (every 200 ms after its head)
	# and no token: a and b hold both slots until they are released
	wait_line '^: keep-alive' "$BATS_TEST_TMPDIR/c"
	wait_engine '.running == 2 and .waiting == 1'
	[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/c")" -eq 0 ]
	release a
	wait "$c"
	[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/c")" -eq 3 ]
	id=$(header_of "$BATS_TEST_TMPDIR/c.h" X-Request-Id)
	q=$(debug_field "$id" queue_ms)
	left=$(debug_field "$(id_of a)" ended_ms)
	admitted=$(admitted "$id")
	echo "queue_ms=$q; a left at $left, the third was admitted at $admitted"
	# it was still waiting after a keep-alive, so it waited at least the
	# keep-alive interval; and it took the slot a left
	holds "$q >= 200"
	holds "($admitted - $left) < 25 && ($left - $admitted) < 25"
	[ "$(debug_field "$id" status)" = done ]
	[ "$(debug_field "$id" finish_reason)" = length ]
}

@test "beyond slots + waiting cap: 429 with Retry-After and a JSON error; others unharmed" {
	wait_idle
	hold s1
	hold s2
	wait_engine '.running == 2'
	for n in 3 4; do
		stream_bg 25 "$BATS_TEST_TMPDIR/s$n"
		echo $! >"$BATS_TEST_TMPDIR/p$n"
	done
	wait_engine '.running == 2 and .waiting == 2'
	code=$(curl -s -D "$BATS_TEST_TMPDIR/r.h" -o "$BATS_TEST_TMPDIR/r" \
		-w '%{http_code}' "$BASE/stream?prompt=late&max_tokens=3")
	# POST /generate is refused the same way
	gcode=$(curl -s -o /dev/null -w '%{http_code}' \
		-d '{"prompt":"late","max_tokens":2}' "$BASE/generate")
	# both met a full server: the same four streams are held after them
	# (s1 and s2 end only when released; none more was let in)
	wait_engine '.running == 2 and .waiting == 2 and .held == 4'
	cat "$BATS_TEST_TMPDIR/r"
	[ "$code" = 429 ]
	[ "$(header_of "$BATS_TEST_TMPDIR/r.h" Retry-After)" = 1 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/r")" = queue_full ]
	[ "$(jq -r .error.type "$BATS_TEST_TMPDIR/r")" = rate_limit_error ]
	[ "$gcode" = 429 ]
	# s3 and s4 waited through the refusals, then run to the end; s1 and
	# s2 streamed until their clients left
	release s1
	release s2
	wait "$(cat "$BATS_TEST_TMPDIR/p3")" "$(cat "$BATS_TEST_TMPDIR/p4")"
	for n in 3 4; do
		[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/s$n")" -eq 25 ]
		tail -n 2 "$BATS_TEST_TMPDIR/s$n" | grep -q '^data: \[DONE\]'
	done
	for n in 1 2; do
		[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/s$n")" -gt 0 ]
		[ "$(grep -c '"error"' "$BATS_TEST_TMPDIR/s$n")" -eq 0 ]
		wait_not_running "$(id_of "s$n")"
		[ "$(debug_field "$(id_of "s$n")" cancel_cause)" = client_gone ]
	done
}

@test "a client that leaves the waiting queue is dropped at once, no token made" {
	wait_idle
	hold a
	hold b
	wait_engine '.running == 2'
	# waits, sees keep-alives, gives up after 0.5 s
	curl -sN -m 0.5 -D "$BATS_TEST_TMPDIR/w.h" \
		"$BASE/stream?prompt=impatient&max_tokens=5" \
		>"$BATS_TEST_TMPDIR/w" || true
	gone=$(calc "$EPOCHREALTIME * 1000")
	id=$(header_of "$BATS_TEST_TMPDIR/w.h" X-Request-Id)
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" finish_reason)" = abort ]
	[ "$(debug_field "$id" generated)" -eq 0 ]
	[ "$(debug_field "$id" cancel_cause)" = client_gone ]
	# it never took a slot: no queue time to report
	[ "$(curl -s "$BASE/_debug/generated?id=$id" | jq .queue_ms)" = null ]
	# it left while a and b still held both slots (they run until they
	# are released), and nothing waits any more
	wait_engine '.running == 2 and .waiting == 0 and .held == 2'
	[ "$(debug_field "$(id_of a)" status)" = running ]
	[ "$(debug_field "$(id_of b)" status)" = running ]
	# noticed at a keep-alive write: lighttpd sees the client's FIN when
	# it next writes (one interval, 200 ms) and closes the FastCGI
	# connection at the write after that at the latest; a third interval
	# is the slack
	ended=$(debug_field "$id" ended_ms)
	echo "the client left at $gone, the server dropped it at $ended"
	holds "$ended - $gone < 600"
}

@test "a cancelled stream's slot goes to the waiting request within one decode step" {
	wait_idle
	hold long
	wait_engine '.running == 1'
	hold leaver
	wait_engine '.running == 2'
	curl -sN -D "$BATS_TEST_TMPDIR/n.h" \
		"$BASE/stream?prompt=next&max_tokens=2" >"$BATS_TEST_TMPDIR/n" &
	n=$!
	wait_engine '.running == 2 and .waiting == 1'
	# the leaver's client leaves while the next request waits
	release leaver
	wait "$n"
	leaver=$(id_of leaver)
	id=$(header_of "$BATS_TEST_TMPDIR/n.h" X-Request-Id)
	curl -s "$BASE/_debug/generated?id=$leaver"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$leaver" status)" = cancelled ]
	[ "$(debug_field "$leaver" cancel_cause)" = client_gone ]
	[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/n")" -eq 2 ]
	left=$(debug_field "$leaver" ended_ms)
	started=$(debug_field "$id" started_ms)
	admitted=$(admitted "$id")
	echo "next started at $started, leaver ended at $left, next admitted at $admitted"
	# it arrived before the leaver left, and was admitted when the
	# leaver left (clocks: +-25 ms)
	holds "$started < $left"
	holds "($admitted - $left) < 25 && ($left - $admitted) < 25"
	# the leaver left the batch at the step boundary after its client was
	# seen gone: within one 20 ms step (boundaries are deadlines, so a
	# late engine pass does not stretch it; the start is the relay's
	# timestamp, and with two streams the relay's passes are short)
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
