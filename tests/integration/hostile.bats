#!/usr/bin/env bats
# Hostile and broken input through lighttpd (issue #5): each gets a clear
# status and a JSON error, or a bounded timeout, and the server keeps
# serving everyone else.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

setup() {
	OUT="$BATS_TEST_TMPDIR/out"
}

# post_code BODY: the status of POST /generate with BODY; body in $OUT
# (bats keeps fd 3 for itself: raw sockets below use fd 5)
post_code() {
	curl -s -o "$OUT" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary "$1" "$BASE/generate"
}

@test "JSON nested 10,000 levels deep is 400 invalid_json, no crash" {
	body=$(printf '%.0s[' $(seq 1 10000))
	[ "$(post_code "$body")" = 400 ]
	[ "$(jq -r .error.code "$OUT")" = invalid_json ]
	body="{\"prompt\":$(printf '%.0s[' $(seq 1 10000))"
	[ "$(post_code "$body")" = 400 ]
	curl -sf "$BASE/health"
}

@test "max_tokens 2147483648, 1e9, 3.5, \"5\", 1e400 and a 400-digit number are 400; null means 16" {
	for v in 2147483648 1e9 3.5 '"5"' 1e400 \
		"$(printf '%.0s9' $(seq 1 400))"; do
		code=$(post_code "{\"prompt\":\"x\",\"max_tokens\":$v}")
		echo "max_tokens=${v:0:20}: $code $(cat "$OUT")"
		[ "$code" = 400 ]
		jq -e .error.code "$OUT" >/dev/null
	done
	[ "$(post_code '{"prompt":"x","max_tokens":null}')" = 200 ]
	[ "$(jq .usage.completion_tokens "$OUT")" -eq 16 ]
}

@test "invalid UTF-8 in a JSON string, trailing garbage and duplicate keys are 400" {
	[ "$(post_code "$(printf '{"prompt":"\xff\xfe"}')")" = 400 ]
	[ "$(jq -r .error.code "$OUT")" = invalid_json ]
	[ "$(post_code '{"prompt":"x"} trailing')" = 400 ]
	[ "$(jq -r .error.code "$OUT")" = invalid_json ]
	[ "$(post_code '{"prompt":"x","prompt":"y"}')" = 400 ]
	jq -r .error.message "$OUT" | grep -qi duplicate
}

@test "a 1 MB prompt is read whole; one byte over the 1 MiB limit is 413" {
	head -c 1000000 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/p"
	printf '{"max_tokens":2,"prompt":"%s"}' "$(cat "$BATS_TEST_TMPDIR/p")" \
		>"$BATS_TEST_TMPDIR/body"
	code=$(curl -s -o "$BATS_TEST_TMPDIR/o" -w '%{http_code}' \
		--data-binary @"$BATS_TEST_TMPDIR/body" "$BASE/generate")
	[ "$code" = 200 ]
	[ "$(jq .usage.completion_tokens "$BATS_TEST_TMPDIR/o")" -eq 2 ]
	head -c 1048577 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/big"
	code=$(curl -s -o "$BATS_TEST_TMPDIR/o" -w '%{http_code}' \
		--data-binary @"$BATS_TEST_TMPDIR/big" "$BASE/generate")
	[ "$code" = 413 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/o")" = body_too_large ]
}

@test "an 8 KB header is fine; a 64 KB header is 431 with a JSON body" {
	h=$(head -c 8192 /dev/zero | tr '\0' x)
	[ "$(curl -s -H "X-Big: $h" "$BASE/stream?prompt=x&max_tokens=2" |
		grep -c '^data: {"token"')" -eq 2 ]
	h=$(head -c 65536 /dev/zero | tr '\0' x)
	code=$(curl -s -o "$BATS_TEST_TMPDIR/o" -w '%{http_code}' \
		-H "X-Big: $h" "$BASE/stream?prompt=x&max_tokens=2")
	[ "$code" = 431 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/o")" = headers_too_large ]
	curl -sf "$BASE/health"
}

@test "a chunked request body is buffered by lighttpd and read whole" {
	code=$(curl -s -o "$BATS_TEST_TMPDIR/o" -w '%{http_code}' \
		-H 'Transfer-Encoding: chunked' \
		-d '{"prompt":"hello","max_tokens":5}' "$BASE/generate")
	[ "$code" = 200 ]
	[ "$(jq -r .text "$BATS_TEST_TMPDIR/o")" = \
	  "$(curl -s -d '{"prompt":"hello","max_tokens":5}' "$BASE/generate" |
		jq -r .text)" ]
}

@test "a body shorter than its Content-Length: dropped after max-read-idle (10 s), others served meanwhile" {
	start=$EPOCHREALTIME
	exec 5<>"/dev/tcp/127.0.0.1/$PORT"
	printf 'POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"prompt":' >&5
	# the server keeps serving while that request hangs
	[ "$(curl -s "$BASE/stream?prompt=x&max_tokens=3" |
		grep -c '^data: {"token"')" -eq 3 ]
	reply=$(timeout 20 cat <&5 || true)
	exec 5<&-
	took=$(calc "$EPOCHREALTIME - $start")
	echo "closed after $took s, reply: '$reply'"
	[ -z "$reply" ]
	holds "$took >= 9 && $took < 15"
}

@test "slowloris: 30 clients sending headers a byte at a time do not slow a stream" {
	for n in $(seq 1 30); do
		(
			exec 5<>"/dev/tcp/127.0.0.1/$PORT"
			for c in G E T ' ' / ' ' H T T P; do
				printf '%s' "$c" >&5
				sleep 0.3
			done
			exec 5<&-
		) &
	done
	sleep 0.5
	"$TOKBENCH" stream --url "$BASE" --json >"$BATS_TEST_TMPDIR/s.json"
	cat "$BATS_TEST_TMPDIR/s.json"
	ttft=$(jq .ttft_ms "$BATS_TEST_TMPDIR/s.json")
	holds "$ttft < 100"
	wait
	curl -sf "$BASE/health"
}
