#!/usr/bin/env bats
# Overload (issue #13): admission counts every stream that holds
# resources, a finished one whose client has not taken its bytes
# included, so a full server answers 429 at once instead of hanging.

load helpers

setup_file() {
	ts_start --max-num-seqs 4 --max-waiting 0 --write-stall-ms 20000
}

teardown_file() {
	ts_stop
}

@test "stalled writers count toward slots + waiting: the next request gets 429, not a hang" {
	need_node
	stallers=""
	for i in 1 2 3 4; do
		node "$TS_SRCDIR/tests/node/fcgi-stall.mjs" "$RUNDIR/tokstream.sock" \
			"/stream?prompt=hold$i&max_tokens=6000&tpot_ms=1" 60 >/dev/null &
		stallers="$stallers $!"
	done
	# 6,000 tokens at 1 ms (about 310 KB, more than a unix socket's
	# 212,992-byte send buffer holds however the relay batches its
	# writes): all four connected (held) and done generating
	# (none running), stuck in their sockets. Waited for as a state (up
	# to 20 s), not a fixed sleep that a slow start of four node
	# processes outlasts; they hold for 60 s, until killed below.
	for i in $(seq 1 200); do
		curl -s "$BASE/_debug/generated" |
			jq -e '.engine.held == 4 and .engine.running == 0' \
			>/dev/null && break
		sleep 0.1
	done
	curl -s "$BASE/_debug/generated" | jq -c '{status, generated, engine}'
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.running)" -eq 0 ]
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.held)" -eq 4 ]
	start=$EPOCHREALTIME
	code=$(curl -s -o "$BATS_TEST_TMPDIR/b" -D "$BATS_TEST_TMPDIR/h" -m 5 \
		-w '%{http_code}' "$BASE/stream?prompt=one+more&max_tokens=3")
	took=$(calc "$EPOCHREALTIME - $start")
	# still the same four held: the request met a full server
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.held)" -eq 4 ]
	cat "$BATS_TEST_TMPDIR/b"
	echo "answered in $took s"
	[ "$code" = 429 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/b")" = queue_full ]
	[ "$(header_of "$BATS_TEST_TMPDIR/h" Retry-After)" = 1 ]
	holds "$took < 1"
	# shellcheck disable=SC2086
	kill $stallers
	wait
	# the stallers are gone: their slots are free again
	for i in $(seq 1 100); do
		c=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/stream?prompt=after&max_tokens=3")
		[ "$c" = 200 ] && break
		sleep 0.1
	done
	[ "$c" = 200 ]
}
