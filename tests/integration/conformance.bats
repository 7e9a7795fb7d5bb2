#!/usr/bin/env bats
# HTTP conformance through lighttpd, as the clients people use see it
# (docs/API.md "HTTP methods" and "OpenAI API"): HEAD and OPTIONS on every
# path, a JSON 405 with Allow for any other method (CONNECT included),
# GET /v1/models/{model} and several served names, the charset of event
# streams, CORS on errors, the Host rule of /_debug and /metrics, and
# absolute-form targets.

load helpers

setup_file() {
	ts_start --served-model-name tokstream-sim org/other-name
}

teardown_file() {
	ts_stop
}

teardown() {
	if [ -n "${RUNDIR2:-}" ]; then
		TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 "$CTL" stop \
			>/dev/null 2>&1 || true
	fi
}

# raw REQUEST: sends the bytes (printf escapes) to the server's port and
# prints the answer (bash's /dev/tcp: no nc in a fresh Debian)
raw() {
	exec 9<>"/dev/tcp/127.0.0.1/$PORT"
	# shellcheck disable=SC2059
	printf "$1" >&9
	timeout 5 cat <&9 || true
	exec 9<&-
}

@test "HEAD on every GET endpoint: the GET's status and headers, no body; HEAD /stream generates nothing" {
	d=$BATS_TEST_TMPDIR
	before=$(curl -sS "$BASE/metrics" | unlabel_model | awk '$1 == "tokstream:generation_tokens_total" { print $2 }')
	for p in /health /v1/models /v1/models/tokstream-sim /metrics \
		'/stream?prompt=hi&max_tokens=50' / /index.html; do
		curl -sS -D "$d/g" -o /dev/null "$BASE$p"
		run curl -sS -I -o "$d/body" -D "$d/h" -w '%{http_code} %{size_download}' "$BASE$p"
		echo "$p: $output"
		[ "$output" = "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$d/g") 0" ]
		[ "$(header_of "$d/h" Content-Type)" = "$(header_of "$d/g" Content-Type)" ]
	done
	[ "$(header_of "$d/h" Content-Type)" = 'text/html; charset=utf-8' ]
	# HEAD /stream: an event stream's head, no X-Request-Id, no record
	curl -sS -I -D "$d/h" -o /dev/null "$BASE/stream?prompt=head-only&max_tokens=500"
	[ "$(header_of "$d/h" Content-Type)" = 'text/event-stream; charset=utf-8' ]
	[ -z "$(header_of "$d/h" X-Request-Id)" ]
	# and a bad query is the same 400 as for GET, without the body
	run curl -sS -I -o /dev/null -w '%{http_code}' "$BASE/stream"
	[ "$output" = 400 ]
	# only the GETs of /stream above generated: 50 tokens
	after=$(curl -sS "$BASE/metrics" | unlabel_model | awk '$1 == "tokstream:generation_tokens_total" { print $2 }')
	[ "$((after - before))" -eq 50 ]
}

@test "OPTIONS on every path: 204 with Allow (HAProxy's default check is OPTIONS /), the CORS preflight on the public ones; unknown paths 404" {
	d=$BATS_TEST_TMPDIR
	for p in / /index.html /stream /health /metrics /_debug/generated \
		/v1/models /v1/models/anything; do
		run curl -sS -X OPTIONS -o /dev/null -D "$d/h" -w '%{http_code}' "$BASE$p"
		echo "$p: $output"
		[ "$output" = 204 ]
		[ "$(header_of "$d/h" Allow)" = "GET, HEAD, OPTIONS" ]
	done
	for p in /generate /v1/completions /v1/chat/completions /v1/responses; do
		run curl -sS -X OPTIONS -o /dev/null -D "$d/h" -w '%{http_code}' "$BASE$p"
		[ "$output" = 204 ]
		[ "$(header_of "$d/h" Allow)" = "POST, OPTIONS" ]
		[ "$(header_of "$d/h" Access-Control-Allow-Methods)" = "POST, OPTIONS" ]
	done
	# /_debug and /metrics never have CORS
	curl -sS -X OPTIONS -o /dev/null -D "$d/h" "$BASE/metrics"
	[ -z "$(header_of "$d/h" Access-Control-Allow-Methods)" ]
	run curl -sS -X OPTIONS -o "$d/e" -w '%{http_code}' "$BASE/nope"
	[ "$output" = 404 ]
	jq -e '.error.code == "unknown_path"' "$d/e"
	# "OPTIONS *" (the server itself): lighttpd's answer
	raw 'OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 200'
}

@test "every other method is a JSON 405 with Allow: PUT, DELETE, PATCH, CONNECT to a path and CONNECT host:port" {
	d=$BATS_TEST_TMPDIR
	for m in PUT DELETE PATCH CONNECT; do
		run curl -sS -X "$m" -o "$d/e" -D "$d/h" -w '%{http_code} %{content_type}' "$BASE/generate"
		echo "$m: $output $(cat "$d/e")"
		[ "$output" = "405 application/json" ]
		[ "$(header_of "$d/h" Allow)" = "POST, OPTIONS" ]
		jq -e '.error.code == "method_not_allowed"' "$d/e"
	done
	run curl -sS -X DELETE -o "$d/e" -D "$d/h" -w '%{http_code}' "$BASE/v1/models"
	[ "$output" = 405 ]
	[ "$(header_of "$d/h" Allow)" = "GET, HEAD, OPTIONS" ]
	jq -e '.error | has("param")' "$d/e"
	# a proxy's CONNECT never reaches the responder: lighttpd's 405, JSON too
	raw 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n' >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 405'
	tr -d '\r' <"$d/r" | grep -qx 'Content-Type: application/json'
	tr -d '\r' <"$d/r" | grep -qx 'Allow: GET, HEAD, POST, OPTIONS'
	tr -d '\r' <"$d/r" | sed '1,/^$/d' | jq -e '.error.code == "method_not_allowed" and
		(.error | has("param"))'
	# (with a host name lighttpd 1.4.69 refuses the target itself: 400)
	raw 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n' >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 400'
	tr -d '\r' <"$d/r" | grep -qx 'Content-Type: application/json'
	# an unknown method or transfer coding: 501, and the text says which
	raw 'BREW /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 501'
	raw 'POST /generate HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n' >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 501'
	tr -d '\r' <"$d/r" | sed '1,/^$/d' | jq -e '.error.message | test("Transfer-Encoding")'
}

@test "GET /v1/models/{model}: each served name (a / percent-encoded or not), 404 model_not_found otherwise; /v1/models lists every name; a request may use any" {
	d=$BATS_TEST_TMPDIR
	curl -sS "$BASE/v1/models" | jq -e '[.data[].id] == ["tokstream-sim", "org/other-name"]'
	for p in tokstream-sim org/other-name org%2Fother-name; do
		curl -sS "$BASE/v1/models/$p" >"$d/m"
		jq -e '.object == "model" and .owned_by == "tokstream" and (.id | test("^(tokstream-sim|org/other-name)$"))' "$d/m"
	done
	run curl -sS -o "$d/e" -w '%{http_code}' "$BASE/v1/models/gpt-4o"
	[ "$output" = 404 ]
	jq -e '.error.code == "model_not_found" and .error.param == null and
		(.error.message | test("gpt-4o"))' "$d/e"
	# the second name serves; the answer names the first, as vLLM's
	curl -sS -d '{"model":"org/other-name","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}' \
		"$BASE/v1/chat/completions" | jq -e '.model == "tokstream-sim" and
		.choices[0].message.refusal == null and
		(.choices[0].message | has("refusal"))'
}

@test "every event stream says charset=utf-8, and a client that decodes by it gets the same text as the JSON answer" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N -D "$d/h1" -o "$d/s1" "$BASE/stream?prompt=caf%C3%A9%20%E6%9D%B1&max_tokens=40"
	curl -sS -N -D "$d/h2" -o "$d/s2" -d '{"model":"tokstream-sim","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' \
		"$BASE/v1/chat/completions"
	curl -sS -N -D "$d/h3" -o "$d/s3" -d '{"model":"tokstream-sim","stream":true,"max_output_tokens":5,"input":"hi"}' \
		"$BASE/v1/responses"
	for i in 1 2 3; do
		[ "$(header_of "$d/h$i" Content-Type)" = 'text/event-stream; charset=utf-8' ]
	done
	# a client that decodes by the announced charset (Python requests
	# does) gets the bytes the server sent: they are valid in it
	cs=$(header_of "$d/h1" Content-Type | sed 's/.*charset=//')
	[ "$cs" = utf-8 ]
	iconv -f "$cs" -t UTF-8 "$d/s1" | cmp - "$d/s1"
	# and the prompt's non-ASCII text did come back in tokens
	grep -q '^data: {"token"' "$d/s1"
}

@test "CORS headers on errors too: a 404, a 405, a 400 and a 414 from the responder carry Access-Control-Allow-Origin" {
	d=$BATS_TEST_TMPDIR
	long=$(head -c 31000 /dev/zero | tr '\0' a)
	for args in "$BASE/v1/nope" "$BASE/nope" "-X PUT $BASE/v1/chat/completions" \
		"$BASE/stream" "$BASE/v1/models/nope" "$BASE/stream?prompt=$long"; do
		# shellcheck disable=SC2086
		curl -sS -o /dev/null -D "$d/h" -H 'Origin: http://ui.example' $args
		echo "$(head -n 1 "$d/h")"
		[ "$(header_of "$d/h" Access-Control-Allow-Origin)" = '*' ]
	done
}

@test "/_debug and /metrics refuse a Host that is not loopback (DNS rebinding) with a JSON 403; localhost, 127.x and [::1] names pass" {
	d=$BATS_TEST_TMPDIR
	for h in rebind.attacker.example "rebind.attacker.example:$PORT" 127.0.0.1.nip.io; do
		for p in /metrics /_debug/generated; do
			run curl -sS -o "$d/e" -w '%{http_code}' -H "Host: $h" "$BASE$p"
			echo "$h $p: $output $(cat "$d/e")"
			[ "$output" = 403 ]
			jq -e '.error.code == "loopback_only" and (.error.message | test("loopback host"))' "$d/e"
		done
	done
	for h in localhost "localhost:$PORT" "127.0.0.1:$PORT" 127.0.0.2 "[::1]:$PORT"; do
		run curl -sS -o /dev/null -w '%{http_code}' -H "Host: $h" "$BASE/metrics"
		echo "$h: $output"
		[ "$output" = 200 ]
	done
	# the public endpoints answer any Host
	[ "$(curl -sS -H 'Host: rebind.attacker.example' "$BASE/health" | jq -r .status)" = ok ]
}

@test "an absolute-form target is served (RFC 9112 section 3.2.2), its authority as the Host; a Host that contradicts it is a JSON 400" {
	d=$BATS_TEST_TMPDIR
	raw "GET http://127.0.0.1:$PORT/health HTTP/1.1\r\nHost: 127.0.0.1:$PORT\r\nConnection: close\r\n\r\n" >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 200'
	raw "GET http://localhost/metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 200'
	# the authority is what the Host rule checks
	raw "GET http://rebind.attacker.example/metrics HTTP/1.1\r\nHost: rebind.attacker.example\r\nConnection: close\r\n\r\n" >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 403'
	raw "GET http://127.0.0.1:$PORT/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >"$d/r"
	head -n 1 "$d/r" | grep -q '^HTTP/1.1 400'
	tr -d '\r' <"$d/r" | sed '1,/^$/d' | jq -e '.error.code == "bad_http_request" and .error.param == null'
}

@test "lighttpd's own errors carry the responder's CORS origin too (a 503 while the responder is down), once, and never on /metrics" {
	RUNDIR2=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX")
	PORT2=$(free_port)
	TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		TOKSTREAM_FCGI_ARGS="--cors-origin=https://ui.example" "$CTL" start
	B2=http://127.0.0.1:$PORT2
	d=$BATS_TEST_TMPDIR
	curl -sS -D "$d/h" -o /dev/null "$B2/stream?prompt=c&max_tokens=1"
	[ "$(grep -ci '^access-control-allow-origin: https://ui.example' "$d/h")" -eq 1 ]
	# the responder down (its supervisor first, or it brings it back)
	kill "$(cat "$RUNDIR2/supervisor.pid")"
	kill "$(head -n 1 "$RUNDIR2/tokstream-fcgi.pid")"
	for i in $(seq 1 50); do
		code=$(curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' "$B2/v1/models")
		[ "$code" = 503 ] && break
		sleep 0.1
	done
	[ "$code" = 503 ]
	jq -e '.error.code == "backend_unavailable"' "$d/e"
	[ "$(grep -ci '^access-control-allow-origin: https://ui.example' "$d/h")" -eq 1 ]
	for p in /metrics /_debug/generated "/_debug/generated?id=1"; do
		curl -sS -D "$d/h" -o /dev/null "$B2$p"
		! grep -qi '^access-control-allow-origin' "$d/h" || false
	done
	TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 "$CTL" stop
}
