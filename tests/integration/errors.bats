#!/usr/bin/env bats
# Bad input: each gets a clear status and a JSON error body, never a crash,
# a hang or harm to other requests. Cases C08 and C09 by id.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# expect_error STATUS CODE CURL-ARGS...: the status, a JSON error body
# {"error":{"message","type","code"}} with that code, and a server that
# still answers afterwards.
expect_error() {
	local want=$1 code=$2
	shift 2
	run curl -sS -m 10 -o "$BATS_TEST_TMPDIR/err" -w '%{http_code} %{content_type}' "$@"
	[ "$status" -eq 0 ]
	echo "got: $output $(cat "$BATS_TEST_TMPDIR/err")"
	[ "$output" = "$want application/json" ]
	# the lab's shape, or with "param" (null) the OpenAI shape that
	# lighttpd's own bodies (etc/errors) have
	jq -e --arg c "$code" '(.error | keys == ["code","message","type"] or
		(keys == ["code","message","param","type"] and .param == null)) and
		.error.code == $c and (.error.message | length > 10)' \
		"$BATS_TEST_TMPDIR/err"
	# the server is unharmed
	[ "$(curl -sS -m 5 -d '{"prompt":"ok","max_tokens":2}' "$BASE/generate" |
		jq .usage.completion_tokens)" -eq 2 ]
}

@test "C09: body 'not json' is 400 invalid_json" {
	expect_error 400 invalid_json -d 'not json' "$BASE/generate"
}

@test "C09: body '{' is 400 invalid_json" {
	expect_error 400 invalid_json -d '{' "$BASE/generate"
}

@test "C09: prompt 123 is 400 invalid_prompt" {
	expect_error 400 invalid_prompt -d '{"prompt":123}' "$BASE/generate"
}

@test "missing prompt: 400, POST and GET" {
	expect_error 400 missing_prompt -d '{"max_tokens":3}' "$BASE/generate"
	expect_error 400 missing_prompt "$BASE/stream?max_tokens=3"
}

@test "lighttpd's own errors are JSON too: a POST without Content-Length is 411" {
	expect_error 411 length_required -X POST -H 'Content-Length:' "$BASE/generate"
}

@test "a /generate body nested 1,000 deep (in a field it ignores) is 400 invalid_json naming the 64-level limit, as on /v1" {
	deep=$(printf '%*s' 1000 '' | tr ' ' '['; printf '%*s' 1000 '' | tr ' ' ']')
	expect_error 400 invalid_json \
		-d "{\"prompt\":\"x\",\"max_tokens\":1,\"extra\":$deep}" \
		"$BASE/generate"
	jq -e '.error.message | test("more than 64 levels")' \
		"$BATS_TEST_TMPDIR/err"
	# 64 levels are fine
	deep=$(printf '%*s' 63 '' | tr ' ' '['; printf '%*s' 63 '' | tr ' ' ']')
	[ "$(curl -sS -d "{\"prompt\":\"x\",\"max_tokens\":1,\"extra\":$deep}" \
		"$BASE/generate" | jq .usage.completion_tokens)" -eq 1 ]
}

@test "a body of more than 32,768 arrays and objects (in a field it ignores) is 400 invalid_json before parsing, on /generate, /v1, /v1/messages (Anthropic's shape) and /api/chat; 32,768 are parsed" {
	d=$BATS_TEST_TMPDIR
	# 40,000 empty objects: 280 KB that jansson would hold as ~9 MB
	python3 -c 'print("[" + ",".join(["{}"] * 40000) + "]")' >"$d/many"
	jq -c --slurpfile x "$d/many" '{prompt:"x",max_tokens:1,extra:$x[0]}' -n >"$d/b"
	expect_error 400 invalid_json --data-binary @"$d/b" "$BASE/generate"
	jq -e '.error.message | test("more than 32768 arrays and objects")' "$d/err"
	jq -c --slurpfile x "$d/many" '{model:"tokstream-sim",messages:[{role:"user",content:"x"}],max_tokens:1,extra:$x[0]}' -n >"$d/b"
	expect_error 400 invalid_json --data-binary @"$d/b" "$BASE/v1/chat/completions"
	[ "$(curl -sS -o "$d/a" -w '%{http_code}' -H 'content-type: application/json' --data-binary @"$d/b" "$BASE/v1/messages")" = 400 ]
	jq -e '.type == "error" and .error.type == "invalid_request_error" and (.error.message | test("32768"))' "$d/a"
	[ "$(curl -sS -o "$d/o" -w '%{http_code}' --data-binary @"$d/b" "$BASE/api/chat")" = 400 ]
	jq -e '.error | test("32768")' "$d/o"
	# at the bound: the body's object, the extra array and 32,766 in it
	python3 -c 'print("[" + ",".join(["{}"] * 32766) + "]")' >"$d/fits"
	jq -c --slurpfile x "$d/fits" '{prompt:"x",max_tokens:1,extra:$x[0]}' -n >"$d/b"
	[ "$(curl -sS --data-binary @"$d/b" "$BASE/generate" | jq .usage.completion_tokens)" -eq 1 ]
}

@test "a lab knob's error carries the knob's code on every endpoint: tpot_ms 10001 is invalid_tpot_ms on /stream, /generate and /v1" {
	expect_error 400 invalid_tpot_ms "$BASE/stream?prompt=x&tpot_ms=10001"
	expect_error 400 invalid_tpot_ms -d '{"prompt":"x","tpot_ms":10001}' \
		"$BASE/generate"
	run curl -sS -o "$BATS_TEST_TMPDIR/v" -w '%{http_code}' \
		-H 'Content-Type: application/json' -d \
		'{"model":"tokstream-lab","prompt":"x","tpot_ms":10001}' \
		"$BASE/v1/completions"
	[ "$output" = 400 ]
	jq -e '.error.code == "invalid_tpot_ms" and .error.param == "tpot_ms"' \
		"$BATS_TEST_TMPDIR/v"
}

@test "empty body is 400 empty_body" {
	expect_error 400 empty_body -d '' "$BASE/generate"
}

@test "a JSON body that is not an object is 400" {
	expect_error 400 invalid_json -d '["hello"]' "$BASE/generate"
	expect_error 400 invalid_json -d '{"prompt":"a"} trailing' "$BASE/generate"
}

@test "C08: max_tokens=-1 is 400, stream and POST" {
	expect_error 400 invalid_max_tokens "$BASE/stream?prompt=hi&max_tokens=-1"
	expect_error 400 invalid_max_tokens -d '{"prompt":"hi","max_tokens":-1}' "$BASE/generate"
}

@test "max_tokens not an integer is 400" {
	for v in 3.5 '"5"' 1e9 true '[]'; do
		expect_error 400 invalid_max_tokens -d "{\"prompt\":\"hi\",\"max_tokens\":$v}" "$BASE/generate"
	done
	for v in 3.5 abc '' 5x; do
		expect_error 400 invalid_max_tokens "$BASE/stream?prompt=hi&max_tokens=$v"
	done
}

@test "max_tokens above the cap (8192) is 400" {
	expect_error 400 invalid_max_tokens -d '{"prompt":"hi","max_tokens":8193}' "$BASE/generate"
	expect_error 400 invalid_max_tokens -d '{"prompt":"hi","max_tokens":2147483648}' "$BASE/generate"
	expect_error 400 invalid_max_tokens "$BASE/stream?prompt=hi&max_tokens=99999999999999999999"
}

@test "a body over 1 MiB is 413" {
	head -c 1048600 /dev/zero | tr '\0' a > "$BATS_TEST_TMPDIR/big"
	expect_error 413 body_too_large --data-binary @"$BATS_TEST_TMPDIR/big" "$BASE/generate"
}

@test "over 2 MiB lighttpd refuses the body itself, before spooling it, with a JSON 413" {
	expect_error 413 body_too_large -H 'Content-Length: 5000000000' \
		-X POST -m 5 "$BASE/generate"
	[ "$(curl -sS -d '{"prompt":"ok","max_tokens":1}' "$BASE/generate" | jq .usage.completion_tokens)" -eq 1 ]
}

@test "a query string of 30,000 bytes streams by GET; one byte more is 414, in JSON, from 30 to 63 KB; a request line over 64,000 bytes is 431" {
	# the limit of docs/API.md: 30,000 bytes of query string
	p=$(head -c 29980 /dev/zero | tr '\0' a)
	q="prompt=$p&max_tokens=3"
	[ ${#q} -eq 30000 ]
	[ "$(curl -sS -N "$BASE/stream?$q" | grep -c '^data: {"token":')" -eq 3 ]
	# with headers of 4 KB beside it, too
	[ "$(curl -sS -N -H "X-Pad: $(head -c 4000 /dev/zero | tr '\0' b)" \
		"$BASE/stream?$q" | grep -c '^data: {"token":')" -eq 3 ]
	for n in 29981 32600 40000 63000; do
		p=$(head -c $n /dev/zero | tr '\0' a)
		expect_error 414 uri_too_long "$BASE/stream?prompt=$p&max_tokens=3"
		jq -e '.error.message | test("30000")' "$BATS_TEST_TMPDIR/err"
	done
	# HEAD and the other endpoints alike
	run curl -sS -o /dev/null -w '%{http_code}' -I "$BASE/health?x=$p"
	[ "$output" = 414 ]
	p=$(head -c 70000 /dev/zero | tr '\0' a)
	expect_error 431 headers_too_large "$BASE/stream?prompt=$p&max_tokens=3"
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
}

@test "a /generate that fails after it started carries its X-Request-Id" {
	curl -sS -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/b" \
		-d '{"prompt":"hello","max_tokens":5,"error_after":2}' "$BASE/generate"
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	[ -n "$id" ]
	jq -e '.error.code == "injected_error"' "$BATS_TEST_TMPDIR/b"
	[ "$(debug_field "$id" status)" = error ]
	[ "$(debug_field "$id" generated)" -eq 2 ]
}

@test "unknown path is 404" {
	expect_error 404 unknown_path "$BASE/nope"
	expect_error 404 unknown_path "$BASE/streamx?prompt=a"
}

@test "wrong method is 405 with Allow" {
	expect_error 405 method_not_allowed -X GET "$BASE/generate"
	curl -sS -D "$BATS_TEST_TMPDIR/h" -o /dev/null "$BASE/generate"
	[ "$(header_of "$BATS_TEST_TMPDIR/h" Allow)" = "POST, OPTIONS" ]
	expect_error 405 method_not_allowed -X POST -d x "$BASE/stream?prompt=a"
	curl -sS -D "$BATS_TEST_TMPDIR/h" -o /dev/null -X DELETE "$BASE/stream?prompt=a"
	[ "$(header_of "$BATS_TEST_TMPDIR/h" Allow)" = "GET, HEAD, OPTIONS" ]
}

@test "malformed percent escapes are 400" {
	for q in '%' '%4' '%G1' 'a%zz'; do
		expect_error 400 invalid_percent_encoding "$BASE/stream?prompt=$q"
	done
}

@test "a parameter given twice is 400 (documented rule)" {
	expect_error 400 duplicate_param "$BASE/stream?prompt=a&prompt=b"
	expect_error 400 duplicate_param "$BASE/stream?prompt=a&max_tokens=1&max_tokens=2"
	expect_error 400 invalid_json -d '{"prompt":"a","prompt":"b"}' "$BASE/generate"
	# the rule holds for percent-encoded names too
	expect_error 400 duplicate_param "$BASE/stream?prompt=hi&error_after=4&%65%72%72%6f%72%5f%61%66%74%65%72=2"
	expect_error 400 duplicate_param "$BASE/stream?prompt=hi&%70rompt=x"
	expect_error 400 invalid_percent_encoding "$BASE/stream?prompt=hi&%zz=1"
}

@test "/_debug/generated: unknown and malformed ids" {
	expect_error 404 unknown_stream "$BASE/_debug/generated?id=999999999"
	expect_error 400 invalid_id "$BASE/_debug/generated?id=abc"
	expect_error 400 invalid_id "$BASE/_debug/generated?id=-1"
	expect_error 400 invalid_id "$BASE/_debug/generated?id=+5"
	expect_error 400 invalid_id "$BASE/_debug/generated?id=5&id=6"
	expect_error 400 invalid_query "$BASE/_debug/generated?x=1"
}

@test "a prompt with NUL, ESC, U+2028 and 'data: [DONE]' does not break framing" {
	q='a%00b%1Bc%E2%80%A8data%3A+%5BDONE%5D%0A%0Adata%3A+x'
	curl -sS -N -o "$BATS_TEST_TMPDIR/b" "$BASE/stream?prompt=$q&max_tokens=30"
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/b")" -eq 30 ]
	[ "$(grep -c '^data: \[DONE\]$' "$BATS_TEST_TMPDIR/b")" -eq 1 ]
	jq -n '{prompt:"a\u0000b\u001bc\u2028data: [DONE]\n\ndata: x",max_tokens:30}' |
		curl -sS --data-binary @- "$BASE/generate" | jq -e '.usage.completion_tokens == 30'
}
