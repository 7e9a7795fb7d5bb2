#!/usr/bin/env bats
# Anthropic's Messages API (docs/API.md "Anthropic Messages API") against
# a real lighttpd + responder: POST /v1/messages, stream and not, and
# POST /v1/messages/count_tokens, checked with curl and jq; the official
# SDK's test is the last one (tests/node/anthropic-sdk.mjs). The server
# has an API key and honours X-Tokstream-Failure.

load helpers

MODEL=tokstream-sim
KEY=sekret

setup_file() {
	ts_start --keepalive-ms 500 --api-key "$KEY" --allow-failure-header
}

teardown_file() {
	ts_stop
}

# A second server one test starts (429); stopped even if the test fails.
teardown() {
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

# msg CONTENT [JSON]: a request of one user message, merged with JSON;
# max_tokens 32, prefill_ms 0 and tpot_ms 1 unless JSON says otherwise
msg() {
	jq -nc --arg c "$1" --argjson x "${2:-{\}}" --arg m "$MODEL" \
		'{model:$m, max_tokens:32, messages:[{role:"user", content:$c}],
		  prefill_ms:0, tpot_ms:1} + $x'
}

# post PATH BODY OUT [curl args...]: POSTs BODY with the key as x-api-key;
# OUT gets the body, OUT.h the headers; prints the HTTP status
post() {
	local path=$1 body=$2 out=$3
	shift 3
	curl -sS -m 30 -o "$out" -D "$out.h" -w '%{http_code}' \
		-H 'content-type: application/json' -H "x-api-key: $KEY" \
		-H 'anthropic-version: 2023-06-01' "$@" --data-binary "$body" \
		"$BASE$path"
}

# events FILE: the JSON of every data: line, one a line
events() {
	sed -n 's/^data: //p' "$1"
}

# types FILE: the event: names, one a line
types() {
	sed -n 's/^event: //p' "$1"
}

# metric NAME: a sample's value from /metrics (NAME with its labels)
metric() {
	curl -s "$BASE/metrics" | unlabel_model | awk -v n="$1" '$1 == n { print $2 }'
}

@test "a non-streamed message: Anthropic's Message object, stop_reason max_tokens, usage, counted in /metrics" {
	d=$BATS_TEST_TMPDIR
	gen0=$(metric tokstream:generation_tokens_total)
	len0=$(metric 'tokstream:request_success_total{finished_reason="length"}')
	[ "$(post /v1/messages "$(msg hello '{"metadata":{"user_id":"u1"},"temperature":0.5,"top_p":0.9,"top_k":5}')" "$d/m")" = 200 ]
	jq -e --arg m "$MODEL" '
		(keys == ["container","content","diagnostics","id","model",
			"role","stop_details","stop_reason","stop_sequence",
			"type","usage"])
		and (.id | test("^msg_[A-Za-z0-9]{24}$"))
		and .type == "message" and .role == "assistant" and .model == $m
		and (.content | length) == 1 and .content[0].type == "text"
		and (.content[0].text | length) > 0
		and .stop_reason == "max_tokens" and .stop_sequence == null
		and .usage.output_tokens == 32
		and .usage.input_tokens + .usage.cache_read_input_tokens > 0
		and .usage.cache_creation_input_tokens == 0' "$d/m"
	grep -qi '^content-type: application/json' "$d/m.h"
	# the request is recorded like any generation
	id=$(sed -n 's/^X-Request-Id: \([0-9]*\).*/\1/ip' "$d/m.h")
	[ -n "$id" ]
	wait_not_running "$id"
	[ "$(debug_field "$id" generated)" = 32 ]
	[ "$(debug_field "$id" status)" = done ]
	# the metrics count it once its record is done
	[ "$(metric tokstream:generation_tokens_total)" -eq $((gen0 + 32)) ]
	[ "$(metric 'tokstream:request_success_total{finished_reason="length"}')" -eq $((len0 + 1)) ]
}

@test "streamed: message_start, one block's start, deltas and stop, message_delta, message_stop; the deltas joined are the non-streamed text; SSE ids on the deltas and message_stop" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg hello)" "$d/m")" = 200 ]
	[ "$(post /v1/messages "$(msg hello '{"stream":true}')" "$d/s")" = 200 ]
	grep -qi '^content-type: text/event-stream' "$d/s.h"
	types "$d/s" >"$d/t"
	[ "$(sed -n 1p "$d/t")" = message_start ]
	[ "$(sed -n 2p "$d/t")" = content_block_start ]
	[ "$(tail -n 3 "$d/t" | tr '\n' ' ')" = "content_block_stop message_delta message_stop " ]
	[ "$(sed '1,2d' "$d/t" | head -n -3 | sort -u)" = content_block_delta ]
	# each event's data names its own type
	paste -d' ' "$d/t" <(events "$d/s" | jq -r .type) |
		awk '$1 != $2 { exit 1 }'
	events "$d/s" | jq -s -j '[.[] | select(.type == "content_block_delta")
		| .delta.text] | join("")' >"$d/st"
	jq -j '.content[0].text' "$d/m" | cmp - "$d/st"
	events "$d/s" | jq -s -e '.[0].message.content == [] and
		.[0].message.stop_reason == null and
		.[1].content_block == {type:"text", text:""} and
		(.[-2] | .delta.stop_reason == "max_tokens"
		 and .usage.output_tokens == 32)'
	# an SSE id on each of the 32 token deltas (the resume points) and on
	# message_stop, on nothing else (docs/API.md "Resuming an Anthropic
	# stream")
	[ "$(grep -c '^id: ' "$d/s")" -eq 33 ]
	[ "$(grep -A1 '^id: ' "$d/s" | grep '^event: ' | sort | uniq -c | awk '{ print $1, $3 }' | tr '\n' ' ')" = "32 content_block_delta 1 message_stop " ]
}

@test "ping events keep a silent stream alive before its first block" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg hi '{"stream":true,"prefill_ms":2500,"max_tokens":2}')" "$d/s")" = 200 ]
	types "$d/s" | sed -n '2p' | grep -qx ping
	types "$d/s" | sed '/content_block_start/q' | grep -qx ping
	events "$d/s" | jq -s -e '[.[] | select(.type == "ping")]
		| length > 0 and all(. == {type:"ping"})'
}

@test "stop_reason: end_turn at EOS, stop_sequence with the sequence and the text cut before it" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg 'a short answer' '{"max_tokens":2000}')" "$d/e")" = 200 ]
	jq -e '.stop_reason == "end_turn" and .stop_sequence == null and
		.usage.output_tokens < 2000' "$d/e"
	[ "$(post /v1/messages "$(msg hello)" "$d/m")" = 200 ]
	stop=$(jq -r '.content[0].text | split(" ") | map(select(length > 2))
		| " " + .[2]' "$d/m")
	want=$(jq -r --arg s "$stop" '.content[0].text | index($s) as $i
		| .[0:$i]' "$d/m")
	body=$(msg hello "$(jq -nc --arg s "$stop" '{stop_sequences:[$s]}')")
	[ "$(post /v1/messages "$body" "$d/x")" = 200 ]
	jq -e --arg s "$stop" --arg w "$want" '.stop_reason == "stop_sequence"
		and .stop_sequence == $s and .content[0].text == $w' "$d/x"
	[ "$(post /v1/messages "$(jq -c '. + {stream:true}' <<<"$body")" "$d/xs")" = 200 ]
	events "$d/xs" | jq -s -e --arg s "$stop" '.[-2].delta |
		.stop_reason == "stop_sequence" and .stop_sequence == $s'
}

@test "errors in Anthropic's shape: 400 invalid_request_error, 404 not_found_error, 413 request_too_large, 405" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg hi | jq -c 'del(.max_tokens)')" "$d/e")" = 400 ]
	jq -e '(keys == ["error","request_id","type"]) and .type == "error" and
		(.error | keys == ["message","type"]) and
		.error.type == "invalid_request_error" and
		(.error.message | test("max_tokens"))' "$d/e"
	[ "$(post /v1/messages "$(msg hi '{"model":"claude-nope"}')" "$d/e")" = 404 ]
	jq -e '.error.type == "not_found_error" and
		(.error.message | test("claude-nope"))' "$d/e"
	img='[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]'
	[ "$(post /v1/messages "$(msg hi "{\"messages\":$img}")" "$d/e")" = 400 ]
	jq -e '.error.type == "invalid_request_error" and
		(.error.message | test("image"))' "$d/e"
	[ "$(post /v1/messages '{"model":' "$d/e")" = 400 ]
	jq -e '.type == "error"' "$d/e"
	[ "$(post /v1/messages "$(msg hi '{"max_tokens":0}')" "$d/e")" = 400 ]
	[ "$(post /v1/messages "$(msg hi '{"temperature":1.5}')" "$d/e")" = 400 ]
	jq -e '.error.message | test("temperature")' "$d/e"
	# a body over 1 MiB (and under lighttpd's own 2 MiB limit)
	head -c 1500000 /dev/zero | tr '\0' x |
		jq -Rsc --arg m "$MODEL" '{model:$m, max_tokens:5,
		  messages:[{role:"user", content:.}]}' >"$d/big"
	[ "$(post /v1/messages @"$d/big" "$d/e")" = 413 ]
	jq -e '.type == "error" and .error.type == "request_too_large"' "$d/e"
	[ "$(curl -sS -o "$d/e" -w '%{http_code}' -H "x-api-key: $KEY" "$BASE/v1/messages")" = 405 ]
	jq -e '.type == "error" and .error.type == "invalid_request_error"' "$d/e"
}

@test "\\u0000 in a string is a byte of it, as on /v1: a message, a stop sequence and count_tokens answer 200" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg 'a\u0000b' '{"stop_sequences":["\u0000"]}')" "$d/m")" = 200 ]
	jq -e '.type == "message"' "$d/m"
	[ "$(post /v1/messages/count_tokens "$(msg 'a\u0000b')" "$d/c")" = 200 ]
	jq -e '.input_tokens > 0' "$d/c"
}

@test "lighttpd's own errors on /v1/messages are in Anthropic's shape: a 413 for a body over 2 MiB, a 503 with the responder down; /v1/chat/completions keeps OpenAI's" {
	d=$BATS_TEST_TMPDIR
	# anthropic_shape FILE TYPE: exactly Anthropic's error object
	anthropic_shape() {
		cat "$1"; echo
		jq -e --arg t "$2" 'keys == ["error","request_id","type"] and
			.type == "error" and .request_id == null and
			(.error | keys == ["message","type"]) and .error.type == $t and
			(.error.message | length > 10)' "$1"
	}
	# a body over lighttpd's 2 MiB, which refuses it before the responder
	head -c 2200000 /dev/zero | tr '\0' x |
		jq -Rsc --arg m "$MODEL" '{model:$m, max_tokens:5,
		  messages:[{role:"user", content:.}]}' >"$d/huge"
	[ "$(post /v1/messages @"$d/huge" "$d/e")" = 413 ]
	anthropic_shape "$d/e" request_too_large
	[ "$(post /v1/messages/count_tokens @"$d/huge" "$d/e")" = 413 ]
	anthropic_shape "$d/e" request_too_large
	[ "$(post /v1/chat/completions @"$d/huge" "$d/e")" = 413 ]
	jq -e '.error.code == "body_too_large" and .error.param == null' "$d/e"
	# the responder down on a second server (its supervisor first, or it
	# brings the responder back)
	local base1=$BASE rundir1=$RUNDIR port1=$PORT
	TS_RUNDIR=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX") ts_start
	RUNDIR2=$RUNDIR PORT2=$PORT
	RUNDIR=$rundir1 PORT=$port1
	kill "$(cat "$RUNDIR2/supervisor.pid")"
	kill "$(head -n 1 "$RUNDIR2/tokstream-fcgi.pid")"
	for i in $(seq 1 50); do
		code=$(post /v1/messages "$(msg hi)" "$d/e")
		[ "$code" = 503 ] && break
		sleep 0.1
	done
	[ "$code" = 503 ]
	grep -qi '^content-type: application/json' "$d/e.h"
	anthropic_shape "$d/e" overloaded_error
	[ "$(post /v1/messages/count_tokens "$(msg hi)" "$d/e")" = 503 ]
	anthropic_shape "$d/e" overloaded_error
	[ "$(post /v1/chat/completions '{}' "$d/e")" = 503 ]
	jq -e '.error.code == "backend_unavailable" and
		.error.type == "server_error" and .error.param == null' "$d/e"
	BASE=$base1
}

@test "the API key: x-api-key or Authorization: Bearer; none or a wrong one is a 401 authentication_error" {
	d=$BATS_TEST_TMPDIR
	code=$(curl -sS -o "$d/e" -w '%{http_code}' -H 'content-type: application/json' \
		--data-binary "$(msg hi)" "$BASE/v1/messages")
	[ "$code" = 401 ]
	jq -e '.type == "error" and .error.type == "authentication_error"' "$d/e"
	code=$(curl -sS -o "$d/e" -w '%{http_code}' -H 'content-type: application/json' \
		-H 'x-api-key: wrong' --data-binary "$(msg hi)" "$BASE/v1/messages")
	[ "$code" = 401 ]
	jq -e '.error.type == "authentication_error"' "$d/e"
	code=$(curl -sS -o "$d/m" -w '%{http_code}' -H 'content-type: application/json' \
		-H "Authorization: Bearer $KEY" --data-binary "$(msg hi)" "$BASE/v1/messages")
	[ "$code" = 200 ]
	jq -e '.type == "message"' "$d/m"
	# x-api-key is Anthropic's: the OpenAI endpoints still want Bearer
	code=$(curl -sS -o "$d/e" -w '%{http_code}' -H 'content-type: application/json' \
		-H "x-api-key: $KEY" --data-binary '{}' "$BASE/v1/chat/completions")
	[ "$code" = 401 ]
}

@test "injected failures map onto Anthropic's errors: 429 rate_limit_error, 500 api_error, 529 overloaded_error, an error event after the 200" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/messages "$(msg hi)" "$d/e" -H 'X-Tokstream-Failure: rate_limit')" = 429 ]
	jq -e '.error.type == "rate_limit_error"' "$d/e"
	grep -qi '^retry-after: 1' "$d/e.h"
	[ "$(post /v1/messages "$(msg hi)" "$d/e" -H 'X-Tokstream-Failure: server_error')" = 500 ]
	jq -e '.error.type == "api_error"' "$d/e"
	[ "$(post /v1/messages "$(msg hi)" "$d/e" -H 'X-Tokstream-Failure: overloaded')" = 529 ]
	jq -e '.error.type == "overloaded_error"' "$d/e"
	[ "$(post /v1/messages "$(msg hi)" "$d/e" -H 'X-Tokstream-Failure: invalid_api_key')" = 401 ]
	jq -e '.error.type == "authentication_error"' "$d/e"
	[ "$(post /v1/messages "$(msg hi '{"stream":true}')" "$d/s" -H 'X-Tokstream-Failure: midstream_error; after=3')" = 200 ]
	[ "$(types "$d/s" | tail -n 1)" = error ]
	events "$d/s" | tail -n 1 | jq -e '.type == "error" and
		.error.type == "api_error"'
	[ "$(events "$d/s" | jq -s '[.[] | select(.type ==
		"content_block_delta")] | length')" -eq 3 ]
	! types "$d/s" | grep -qx message_stop || false
	curl -s "$BASE/metrics" | unlabel_model | grep -q 'tokstream:injected_failures_total{type="overloaded"} [1-9]'
}

@test "a full queue is a 429 rate_limit_error with Retry-After, stream and not (--max-num-seqs 1 --max-waiting 0)" {
	d=$BATS_TEST_TMPDIR
	local base1=$BASE rundir1=$RUNDIR port1=$PORT
	ts_start --max-num-seqs 1 --max-waiting 0
	RUNDIR2=$RUNDIR PORT2=$PORT
	RUNDIR=$rundir1 PORT=$port1
	# hold the slot: 2000 tokens at 50 ms, all but the last thinking (so
	# no end of sequence comes before), read in the background
	curl -sS -N -o "$d/hold" -H 'content-type: application/json' \
		--data-binary "$(msg hold '{"stream":true,"max_tokens":2000,"tpot_ms":50,"thinking":{"type":"enabled","budget_tokens":1999}}')" \
		"$BASE/v1/messages" &
	BG_PID=$!
	for i in $(seq 1 400); do
		[ "$(curl -s "$BASE/_debug/generated" |
			jq -r .engine.running)" = 1 ] && break
		sleep 0.05
	done
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.running)" = 1 ]
	for s in false true; do
		code=$(curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' \
			-H 'content-type: application/json' \
			--data-binary "$(msg late "{\"stream\":$s}")" "$BASE/v1/messages")
		[ "$code" = 429 ]
		jq -e '.type == "error" and .error.type == "rate_limit_error"' "$d/e"
		grep -qi '^retry-after: 1' "$d/h"
	done
	curl -s "$BASE/_debug/generated" | jq -e '.status == "running" and
		.requested == 2000'
	kill "$BG_PID"
	BG_PID=
	BASE=$base1
}

@test "count_tokens: input_tokens equal to the same request's usage" {
	d=$BATS_TEST_TMPDIR
	nonce="n$$-$RANDOM$RANDOM"
	# the nonce first: no block of the prefix cache holds its start
	body=$(msg "count these words" "{\"system\":[{\"type\":\"text\",\"text\":\"$nonce be brief\"}]}")
	[ "$(post /v1/messages/count_tokens "$(jq -c 'del(.max_tokens, .prefill_ms, .tpot_ms)' <<<"$body")" "$d/c")" = 200 ]
	jq -e '(keys == ["input_tokens"]) and .input_tokens > 5' "$d/c"
	[ "$(post /v1/messages "$body" "$d/m")" = 200 ]
	[ "$(jq .input_tokens "$d/c")" = "$(jq .usage.input_tokens "$d/m")" ]
	# a repeat finds its prefix in the cache: the sum stays the count
	[ "$(post /v1/messages "$body" "$d/m2")" = 200 ]
	jq -e '.usage.cache_read_input_tokens > 0' "$d/m2"
	[ "$(jq .input_tokens "$d/c")" = "$(jq '.usage | .input_tokens +
		.cache_read_input_tokens + .cache_creation_input_tokens' "$d/m2")" ]
	# the system prompt and tools count
	[ "$(post /v1/messages/count_tokens "$(jq -c 'del(.max_tokens, .prefill_ms, .tpot_ms, .system)' <<<"$body")" "$d/c2")" = 200 ]
	[ "$(jq .input_tokens "$d/c2")" -lt "$(jq .input_tokens "$d/c")" ]
	[ "$(post /v1/messages/count_tokens '{"model":"nope","messages":[{"role":"user","content":"x"}]}' "$d/e")" = 404 ]
	jq -e '.error.type == "not_found_error"' "$d/e"
}

@test "tools: tool_choice tool gives a tool_use whose input follows input_schema, streamed as input_json_delta; none and a tool_result give text" {
	d=$BATS_TEST_TMPDIR
	tools='[{"name":"get_weather","description":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","unit"],"additionalProperties":false}}]'
	body=$(msg 'weather?' "{\"max_tokens\":200,\"tools\":$tools,\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\"}}")
	[ "$(post /v1/messages "$body" "$d/m")" = 200 ]
	jq -e '.stop_reason == "tool_use" and (.content | length) == 1 and
		(.content[0] | .type == "tool_use" and .name == "get_weather"
		 and (.id | test("^toolu_"))
		 and (.input | type == "object")
		 and (.input.city | type == "string")
		 and (.input.unit == "c" or .input.unit == "f")
		 and ((.input | keys) - ["city","unit","days"] == [])
		 and (.input.days == null or (.input.days >= 1 and .input.days <= 7)))' "$d/m"
	[ "$(post /v1/messages "$(jq -c '. + {stream:true}' <<<"$body")" "$d/s")" = 200 ]
	events "$d/s" | jq -s -e '.[1].content_block.type == "tool_use" and
		.[1].content_block.input == {} and
		([.[] | select(.type == "content_block_delta") | .delta.type]
		 | unique == ["input_json_delta"]) and
		.[-2].delta.stop_reason == "tool_use"'
	events "$d/s" | jq -s -j '[.[] | select(.type == "content_block_delta")
		| .delta.partial_json] | join("")' | jq -c . >"$d/in"
	jq -c '.content[0].input' "$d/m" | cmp - "$d/in"
	# tool_choice none: text
	[ "$(post /v1/messages "$(jq -c '.tool_choice = {type:"none"}' <<<"$body")" "$d/n")" = 200 ]
	jq -e '.content[0].type == "text" and .stop_reason != "tool_use"' "$d/n"
	# auto after the tool's result: the model answers in text
	turn=$(jq -c --arg id "$(jq -r '.content[0].id' "$d/m")" \
		--argjson c "$(jq -c .content "$d/m")" '.tool_choice = {type:"auto"}
		| .messages += [{role:"assistant", content:$c},
		  {role:"user", content:[{type:"tool_result", tool_use_id:$id,
		   content:"sunny"}]}]' <<<"$body")
	[ "$(post /v1/messages "$turn" "$d/a")" = 200 ]
	jq -e '.content[0].type == "text" and .stop_reason != "tool_use"' "$d/a"
	# a tool_choice naming no tool is a 400
	[ "$(post /v1/messages "$(jq -c '.tool_choice.name = "nope"' <<<"$body")" "$d/e")" = 400 ]
}

@test "thinking: deltas of a thinking block, its signature, then the text block, paced, ending with message_stop (the API.md example)" {
	d=$BATS_TEST_TMPDIR
	body='{"model":"tokstream-sim","max_tokens":64,"stream":true,"thinking":{"type":"enabled","budget_tokens":32},"messages":[{"role":"user","content":"hi"}]}'
	[ "$(post /v1/messages "$body" "$d/s")" = 200 ]
	events "$d/s" | jq -s -e '
		[.[] | select(.type == "content_block_delta") | .delta.type] as $t
		| ($t | index("text_delta")) as $first_text
		| $first_text != null
		and ($t[0:$first_text] | .[-1] == "signature_delta"
		     and (.[0:-1] | all(. == "thinking_delta"))
		     and length - 1 > 0 and length - 1 <= 32)
		and ($t[$first_text:] | all(. == "text_delta"))
		and ([.[] | select(.type == "content_block_start")
		      | .content_block.type] == ["thinking", "text"])
		and .[-1].type == "message_stop"
		and .[-2].usage.output_tokens > 32
		and .[-2].usage.output_tokens <= 64
		and .[-2].usage.output_tokens_details.thinking_tokens == 32'
	# the same request not streamed: the same thinking, signature, text
	[ "$(post /v1/messages "$(jq -c 'del(.stream)' <<<"$body")" "$d/m")" = 200 ]
	events "$d/s" | jq -s -j '[.[] | select(.delta.type == "thinking_delta")
		| .delta.thinking] | join("")' >"$d/th"
	jq -j '.content[0].thinking' "$d/m" | cmp - "$d/th"
	[ "$(events "$d/s" | jq -r 'select(.delta.type == "signature_delta")
		| .delta.signature')" = "$(jq -r '.content[0].signature' "$d/m")" ]
	jq -e '[.content[].type] == ["thinking","text"] and
		(.content[0].signature | length) > 0' "$d/m"
	# paced: the first thinking delta is out while the sequence still
	# runs (80 ms a token: the text is 2.5 s away, the end 5 s)
	curl -sS -N -o "$d/p" -H 'content-type: application/json' \
		-H "x-api-key: $KEY" --data-binary "$(jq -c '. + {tpot_ms:80,
		prefill_ms:0}' <<<"$body")" "$BASE/v1/messages" &
	BG_PID=$!
	for i in $(seq 1 400); do
		grep -q thinking_delta "$d/p" 2>/dev/null && break
		sleep 0.02
	done
	grep -q thinking_delta "$d/p"
	! grep -q '"text_delta"' "$d/p" || false
	curl -s "$BASE/_debug/generated" | jq -e '.status == "running"'
	wait "$BG_PID"
	BG_PID=
	types "$d/p" | tail -n 1 | grep -qx message_stop
	# the budget must be below max_tokens, and thinking cannot be forced
	# into a tool
	[ "$(post /v1/messages "$(msg hi '{"thinking":{"type":"enabled","budget_tokens":32}}')" "$d/e")" = 400 ]
	jq -e '.error.message | test("budget_tokens")' "$d/e"
}

@test "resume: a stream whose client left after 5 deltas, POSTed again with its last SSE id as Last-Event-ID, goes on with exactly the events that followed; /_debug links the two" {
	d=$BATS_TEST_TMPDIR
	body=$(msg "tell me a story" '{"stream":true,"max_tokens":24,"tpot_ms":40,"thinking":{"type":"enabled","budget_tokens":8}}')
	# the whole stream, for comparison
	[ "$(post /v1/messages "$body" "$d/whole")" = 200 ]
	# ids on the token deltas and on message_stop only, never on
	# message_start, block starts and stops or the signature
	awk '/^id: / { getline; print }' "$d/whole" | sort | uniq -c
	[ -z "$(awk '/^id: / { getline; print }' "$d/whole" | grep -v -e '^event: content_block_delta$' -e '^event: message_stop$')" ]
	grep -B2 '"signature_delta"' "$d/whole" | grep -q '^id: ' && false
	sed -n 's/^id: //p' "$d/whole" | tail -n 1 | grep -Eq -- '-[0-9a-f]{16}-end$'
	# a client that leaves after 5 deltas with ids (its connection cut)
	curl -sS -N -D "$d/cut.h" -o "$d/cut" -H 'content-type: application/json' \
		-H "x-api-key: $KEY" --data-binary "$body" "$BASE/v1/messages" &
	BG_PID=$!
	for i in $(seq 1 500); do
		[ "$(grep -c '^id: ' "$d/cut" 2>/dev/null)" -ge 5 ] && break
		sleep 0.02
	done
	kill "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	last=$(sed -n 's/^id: //p' "$d/cut" | tail -n 1)
	echo "last id $last"
	[ -n "$last" ]
	! grep -q message_stop "$d/cut" || false
	cut_id=$(header_of "$d/cut.h" X-Request-Id)
	# resumed: no message_start, the events after the last id
	[ "$(post /v1/messages "$body" "$d/rest" -H "Last-Event-ID: $last")" = 200 ]
	! grep -q '^event: message_start' "$d/rest" || false
	# what the client holds (the cut stream up to its last id's event)
	# and the rest are the whole stream's events (its message_start's
	# message id and each usage's cache split aside)
	view='select(.type != "ping" and .type != "message_start") | del(.usage)'
	{ awk -v id="$last" '{ print } $0 == "id: " id { getline; print; getline; print; exit }' "$d/cut"
	  cat "$d/rest"; } | sed -n 's/^data: //p' | jq -c "$view" >"$d/joined"
	events "$d/whole" | jq -c "$view" >"$d/want"
	diff "$d/want" "$d/joined"
	# its output_tokens count the whole message, as the whole stream's
	[ "$(events "$d/rest" | jq -s '.[-2].usage.output_tokens')" = \
	  "$(events "$d/whole" | jq -s '.[-2].usage.output_tokens')" ]
	# the record of the resumed request names the stream it resumes
	rid=$(header_of "$d/rest.h" X-Request-Id)
	start=$(( ${last##*-} + 1 ))
	curl -s "$BASE/_debug/generated?id=$rid" | jq -e --arg f "$cut_id" --argjson s "$start" \
		'(.resumed_from | tostring) == $f and .resume_index == $s and .generated == 24 - $s'
	# the end id: nothing more (204); another body's id: a 400
	end=$(sed -n 's/^id: //p' "$d/whole" | tail -n 1)
	[ "$(post /v1/messages "$body" "$d/e" -H "Last-Event-ID: $end")" = 204 ]
	[ "$(post /v1/messages "$(jq -c '.max_tokens = 25' <<<"$body")" "$d/e" -H "Last-Event-ID: $last")" = 400 ]
	jq -e '.type == "error" and .error.type == "invalid_request_error" and (.error.message | test("other parameters"))' "$d/e"
}

@test "the official Anthropic SDK (@anthropic-ai/sdk): create and stream, finalMessage, stop reasons, tools, thinking, countTokens, error classes, abort" {
	need_node @anthropic-ai/sdk ajv
	run timeout 90 node "$TS_SRCDIR/tests/node/anthropic-sdk.mjs" "$BASE" "$KEY"
	echo "$output"
	[ "$status" -eq 0 ]
}
