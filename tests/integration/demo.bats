#!/usr/bin/env bats
# The browser demo (docs/API.md "Browser demo"): lighttpd serves etc/www/
# index.html at / while every API path, and every unknown one, still goes
# to the responder; the page works in a real headless Chromium (tokens in
# order, Stop cancels the generation); and an EventSource that closes
# itself at [DONE], as the page does, never comes back.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

WWW=$TS_SRCDIR/etc/www/index.html

@test "GET / and /index.html are the demo page (text/html, byte for byte); so is /?query; HEAD too" {
	d=$BATS_TEST_TMPDIR
	for p in / /index.html '/?prompt=x' //; do
		run curl -sS -o "$d/page" -D "$d/h" -w '%{http_code}' "$BASE$p"
		[ "$output" = 200 ]
		[ "$(header_of "$d/h" Content-Type)" = 'text/html; charset=utf-8' ]
		cmp "$d/page" "$WWW"
	done
	run curl -sS -I -o /dev/null -w '%{http_code}' "$BASE/"
	[ "$output" = 200 ]
}

@test "the page is one self-contained file: no external URL, no script or style from elsewhere" {
	! grep -nE 'https?://' "$WWW" || false
	! grep -nE '<(script|link|img|iframe)[^>]* (src|href)="[^d#]' "$WWW" || false
	grep -q '<canvas id="itl"' "$WWW"
	grep -q "new EventSource" "$WWW"
	grep -q "fetch('/v1/chat/completions'" "$WWW"
}

@test "every other path and method still reaches the responder: its JSON 404 for unknown paths, the API unchanged" {
	d=$BATS_TEST_TMPDIR
	for p in /index.htm /favicon.ico /www/index.html /index.html/x \
		/etc/www/index.html /errors/status-404.html; do
		run curl -sS -o "$d/e" -w '%{http_code} %{content_type}' "$BASE$p"
		echo "$p: $output $(cat "$d/e")"
		[ "$output" = "404 application/json" ]
		jq -e '.error.code == "unknown_path" and
			(.error.message | startswith("no endpoint at"))' "$d/e"
	done
	# not GET or HEAD: the responder's 405 (with Allow), not the page
	run curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' -d x "$BASE/"
	[ "$output" = 405 ]
	jq -e '.error.code == "method_not_allowed"' "$d/e"
	[ "$(header_of "$d/h" Allow)" = "GET, HEAD, OPTIONS" ]
	run curl -sS -o "$d/e" -w '%{http_code}' "$BASE/v1/nothing"
	[ "$output" = 404 ]
	jq -e '.error.code == "unknown_url" and (.error | has("param"))' "$d/e"
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
	[ "$(curl -sS -N "$BASE/stream?prompt=hi&max_tokens=3" |
		grep -c '^data: {"token"')" -eq 3 ]
	[ "$(curl -sS "$BASE/v1/models" | jq -r '.data[0].id')" = tokstream-sim ]
	# lighttpd's own errors keep their JSON bodies
	run curl -sS -o "$d/e" -w '%{http_code} %{content_type}' -X POST \
		-H 'Content-Length:' "$BASE/generate"
	[ "$output" = "411 application/json" ]
	jq -e '.error.code == "length_required"' "$d/e"
}

@test "EventSource (npm eventsource) closed at [DONE]: no second request reaches the server (a client that does not close comes back once, for a 204)" {
	need_node eventsource
	run timeout 40 node "$TS_SRCDIR/tests/node/eventsource-done.mjs" "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "headless Chromium (playwright-core): tokens appear in order as /stream sends them, /v1 chat text, Stop cancels (generated <= received + 3); screenshot in tests/artifacts/demo.png" {
	need_node playwright-core
	need_chromium
	run timeout 90 node "$TS_SRCDIR/tests/node/demo-browser.mjs" "$BASE" \
		"$BATS_TEST_TMPDIR/demo.png"
	echo "$output"
	# the screenshot is kept, whatever the result
	if [ -f "$BATS_TEST_TMPDIR/demo.png" ]; then
		mkdir -p "$TS_BUILDDIR/tests/artifacts"
		cp "$BATS_TEST_TMPDIR/demo.png" "$TS_BUILDDIR/tests/artifacts/demo.png"
	fi
	[ "$status" -eq 0 ]
	[ -s "$TS_BUILDDIR/tests/artifacts/demo.png" ]
}
