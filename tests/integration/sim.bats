#!/usr/bin/env bats
# The simulator as agents and gateways see it (docs/API.md "Tool calls,
# logprobs, structured output, n", "Failure injection", "Prefix caching",
# "Echo mode"): tool calls whose arguments are generated from the
# function's JSON Schema, logprobs from the simulated model's distribution,
# response_format json_schema, n choices, failures injected by type and
# rate, the prefix cache in the latency model. The schema checks use a real
# validator (ajv, npm) in tests/node/sim.mjs; the agent loops use the
# official openai SDK and the Vercel AI SDK.

load helpers

setup_file() {
	# fast model: every test here is about what is generated, not when;
	# the failure tests send X-Tokstream-Failure, refused without
	# --allow-failure-header
	ts_start --tpot-ms 1 --prefill-base-ms 0 --prefill-per-token-ms 0 \
		--max-num-seqs 64 --keepalive-ms 1000 --allow-failure-header
}

teardown_file() {
	ts_stop
}

# A test with a server of its own (own_server ARGS...) stops it here.
teardown() {
	if [ -n "${OWN_SERVER:-}" ]; then
		ts_stop
	fi
}

own_server() {
	OWN_SERVER=1
	TS_RUNDIR= ts_start "$@"
}

post() {
	curl -s -o "$2" -w '%{http_code}' -H 'Content-Type: application/json' \
		"${@:3}" -d "$1" "$BASE${PATHV1:-/v1/chat/completions}"
}

# expect_400 BODY [JQ]: POST BODY is a 400 whose error body satisfies JQ
expect_400() {
	local e=$BATS_TEST_TMPDIR/e code
	code=$(post "$1" "$e")
	if [ "$code" != 400 ]; then
		echo "HTTP $code, not 400, for $1"
		cat "$e"
		return 1
	fi
	if [ -n "${2:-}" ] && ! jq -e "$2" "$e" >/dev/null; then
		echo "not true: $2"
		cat "$e"
		return 1
	fi
}

chunks() {
	sed -n 's/^data: //p' "$1" | grep -v '^\[DONE\]$'
}

metric() {
	curl -s "$BASE/metrics" | unlabel_model | awk -v m="$1" '$1 == m { print $2 }'
}

@test "tool calls: 1,000 seeded requests over 6 schemas, every call's arguments validate (ajv); streamed deltas concatenate to the non-streamed arguments byte for byte" {
	need_node ajv
	run timeout 300 node "$TS_SRCDIR/tests/node/sim.mjs" tools "$BASE" 1000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: 1000 requests,"* ]]
}

@test "response_format json_schema: 1,000 seeded outputs validate (ajv), streamed token by token; json_object gives an object" {
	need_node ajv
	run timeout 300 node "$TS_SRCDIR/tests/node/sim.mjs" json "$BASE" 1000
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: 1000 json_schema outputs validated"* ]]
}

@test "logprobs: sorted, <= 0, the sampled token's consistent with its top list, greedy picks the top one, streamed = whole, identical across runs; completions logprobs N" {
	need_node ajv
	run timeout 60 node "$TS_SRCDIR/tests/node/sim.mjs" logprobs "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: logprobs:"* ]]
}

@test "agent loops end to end: the openai SDK (call, tool result, final answer) and the Vercel AI SDK's generateText with a tool" {
	need_node openai ai @ai-sdk/openai
	run timeout 60 node "$TS_SRCDIR/tests/node/sim.mjs" agent "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: agent loops:"* ]]
}

@test "tool_choice: none never calls, a named function is the one called, auto answers with text after a tool result; histories count as prompt tokens" {
	local d=$BATS_TEST_TMPDIR
	local tools='[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}},{"type":"function","function":{"name":"b"}}]'
	local i
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(post "{\"model\":\"tokstream-sim\",\"seed\":$i,\"tools\":$tools,\"tool_choice\":\"none\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$d/n")" = 200 ]
		jq -e '.choices[0].finish_reason != "tool_calls" and
			(.choices[0].message | has("tool_calls") | not) and
			(.choices[0].message.content | type) == "string"' "$d/n"
		[ "$(post "{\"model\":\"tokstream-sim\",\"seed\":$i,\"tools\":$tools,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"b\"}},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$d/b")" = 200 ]
		jq -e '.choices[0].finish_reason == "tool_calls" and
			[.choices[0].message.tool_calls[].function.name] == ["b"] and
			.choices[0].message.tool_calls[0].function.arguments == "{}"' "$d/b"
	done
	# auto over 40 seeds: some call, some answer (3/4 call, documented)
	local calls=0
	for i in $(seq 1 40); do
		post "{\"model\":\"tokstream-sim\",\"seed\":$i,\"tools\":$tools,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$d/a" >/dev/null
		[ "$(jq -r '.choices[0].finish_reason' "$d/a")" = tool_calls ] && calls=$((calls + 1))
	done
	echo "auto called in $calls of 40"
	[ "$calls" -ge 20 ]
	[ "$calls" -le 38 ]
	# after a tool result: text; the history is prompt
	local hist='[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"42"}]'
	for i in 1 2 3 4 5; do
		[ "$(post "{\"model\":\"tokstream-sim\",\"seed\":$i,\"tools\":$tools,\"messages\":$hist}" "$d/h")" = 200 ]
		jq -e '.choices[0].finish_reason != "tool_calls" and
			(.choices[0].message.content | length) > 0' "$d/h"
	done
	post "{\"model\":\"tokstream-sim\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$d/p0" >/dev/null
	post "{\"model\":\"tokstream-sim\",\"tools\":$tools,\"messages\":$hist}" "$d/p1" >/dev/null
	jq -e --slurpfile p0 "$d/p0" '.usage.prompt_tokens > $p0[0].usage.prompt_tokens + 20' "$d/p1"
}

@test "bad tools and formats are 400s naming the field: unsupported schema keyword, bad name, duplicate, tool_choice without tools or unknown, a tool message without tool_call_id" {
	local d=$BATS_TEST_TMPDIR
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","pattern":"^a+$"}}}}}]}' \
		'.error.param == "tools[0].function.parameters" and (.error.message | test("pattern"))'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad name"}}]}' \
		'.error.param == "tools[0].function.name"'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tool_choice":"auto"}' \
		'.error.param == "tool_choice"'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"tool","content":"42"}]}' \
		'.error.param == "messages[0].tool_call_id"'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"not":{}}}}}}}' \
		'.error.param == "response_format.json_schema.schema"'
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"n":17}' \
		'.error.param == "n"'
	# a function's parameters describe an object ({} is no parameters)
	expect_400 '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"integer"}}}]}' \
		'.error.param == "tools[0].function.parameters"'
	run post '{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"required"}' "$d/e"
	[ "$output" = 200 ]
	jq -e '.choices[0].message.tool_calls[0].function.arguments == "{}"' "$d/e"
	# a body nested 1,000 deep (in an ignored annotation of a schema) is
	# a 400 before it is parsed, and the responder lives on
	local deep
	deep=$(printf '%*s' 1000 '' | tr ' ' '['; printf '%*s' 1000 '' | tr ' ' ']')
	run post "{\"model\":\"tokstream-sim\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"default\":$deep}}}]}" "$d/e"
	[ "$output" = 400 ]
	jq -e '.error.code == "invalid_json" and (.error.message | test("64 levels"))' "$d/e"
	[ "$(post '{"model":"tokstream-sim","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}' "$d/ok")" = 200 ]
}

@test "stop strings do not cut tool calls or JSON output; logprobs with a stop string are the same streamed and whole; tool call ids change with the conversation" {
	local d=$BATS_TEST_TMPDIR
	local tools='[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]'
	[ "$(post "{\"model\":\"tokstream-sim\",\"seed\":1,\"stop\":[\"\\\"\"],\"tools\":$tools,\"tool_choice\":\"required\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}" "$d/t")" = 200 ]
	jq -e '.choices[0].finish_reason == "tool_calls" and
		(.choices[0].message.tool_calls[0].function.arguments | fromjson | .a | type) == "string"' "$d/t"
	[ "$(post '{"model":"tokstream-sim","seed":1,"stop":["\""],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}},"messages":[{"role":"user","content":"go"}]}' "$d/j")" = 200 ]
	jq -e '.choices[0].message.content | fromjson | .a | type == "string"' "$d/j"
	# logprobs: the tokens of the text, stream or not
	local body='{"model":"tokstream-sim","prompt":"go","max_tokens":60,"logprobs":1,"seed":1,"stop":[" the"," a"," of"]}'
	PATHV1=/v1/completions post "$body" "$d/w" >/dev/null
	PATHV1=/v1/completions post "$(jq -c '. + {stream: true}' <<<"$body")" "$d/s" >/dev/null
	[ "$(jq -c '.choices[0].logprobs.tokens' "$d/w")" = \
	  "$(chunks "$d/s" | jq -s -c '[.[] | .choices[0].logprobs.tokens // empty | .[]]')" ]
	[ "$(jq -r '.choices[0].logprobs.tokens | join("")' "$d/w")" = "$(jq -r '.choices[0].text' "$d/w")" ]
	# a fixed seed, two turns of a loop: two ids
	local h1 h2
	post "{\"model\":\"tokstream-sim\",\"seed\":7,\"tools\":$tools,\"tool_choice\":\"required\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}]}" "$d/i1" >/dev/null
	h1=$(jq -r '.choices[0].message.tool_calls[0].id' "$d/i1")
	post "{\"model\":\"tokstream-sim\",\"seed\":7,\"tools\":$tools,\"tool_choice\":\"required\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},$(jq -c '.choices[0].message' "$d/i1"),{\"role\":\"tool\",\"tool_call_id\":\"$h1\",\"content\":\"1\"},{\"role\":\"user\",\"content\":\"again\"}]}" "$d/i2" >/dev/null
	h2=$(jq -r '.choices[0].message.tool_calls[0].id' "$d/i2")
	echo "ids $h1 $h2"
	[ "$h1" != "$h2" ]
	# the Responses API echoes the request's tools and choice
	PATHV1=/v1/responses post '{"model":"tokstream-sim","input":"go","tools":[{"type":"function","name":"f"}],"tool_choice":"required","parallel_tool_calls":false}' "$d/r" >/dev/null
	jq -e '.tools[0].name == "f" and .tool_choice == "required" and .parallel_tool_calls == false and .output[0].type == "function_call"' "$d/r"
}

@test "n > 1: n indexed choices, each its own sequence (n slots), usage summed, choice 0 is the n = 1 answer; streamed chunks carry their index" {
	local d=$BATS_TEST_TMPDIR
	[ "$(post '{"model":"tokstream-sim","seed":5,"max_tokens":30,"messages":[{"role":"user","content":"hi"}]}' "$d/one")" = 200 ]
	[ "$(post '{"model":"tokstream-sim","seed":5,"max_tokens":30,"n":3,"messages":[{"role":"user","content":"hi"}]}' "$d/three")" = 200 ]
	jq -e --slurpfile one "$d/one" '
		[.choices[].index] == [0,1,2] and
		.choices[0] == $one[0].choices[0] and
		.choices[1].message.content != .choices[0].message.content and
		.usage.prompt_tokens == $one[0].usage.prompt_tokens' "$d/three"
	# usage: the three sequences' tokens, as /_debug/generated counts them
	local id sum=0 k
	id=$(jq -r '.id | sub("chatcmpl-"; "")' "$d/three")
	for k in 0 1 2; do
		sum=$((sum + $(debug_field $((id + k)) generated)))
	done
	[ "$(jq '.usage.completion_tokens' "$d/three")" = "$sum" ]
	# streamed: every index, a finish chunk for each, one usage chunk
	[ "$(post '{"model":"tokstream-sim","seed":5,"max_tokens":30,"n":3,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}' "$d/s")" = 200 ]
	chunks "$d/s" | jq -s -e --slurpfile w "$d/three" '
		([.[] | .choices[] | select(.finish_reason != null) | .index] | sort) == [0,1,2] and
		([.[] | select(.usage != null)] | length) == 1 and
		(. as $c | [range(3)] | all(. as $i |
			([$c[] | .choices[] | select(.index == $i) | .delta.content // ""] | join("")) ==
			$w[0].choices[$i].message.content))'
	tail -c 20 "$d/s" | grep -q 'data: \[DONE\]'
	# n slots: with a slow model, 4 choices are 4 running sequences
	curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"model":"tokstream-sim","n":4,"max_tokens":40,"ignore_eos":true,"tpot_ms":50,"messages":[{"role":"user","content":"hi"}]}' "$BASE/v1/chat/completions" &
	local pid=$! r=0 i
	for i in $(seq 1 100); do
		r=$(metric tokstream:num_requests_running)
		[ "${r:-0}" -ge 4 ] && break
		sleep 0.02
	done
	wait "$pid"
	[ "$r" -ge 4 ]
	# ITL per choice, as vLLM clocks it per sequence: 4 streamed choices
	# of 20 tokens at 20 ms give 4 x 19 gaps, none near 0 (the choices'
	# interleaved events are not each other's next token)
	local n0 f0 n1 f1
	n0=$(metric tokstream:inter_token_latency_seconds_count)
	f0=$(metric 'tokstream:inter_token_latency_seconds_bucket{le="0.01"}')
	[ "$(post '{"model":"tokstream-sim","n":4,"max_tokens":20,"ignore_eos":true,"tpot_ms":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}' "$d/itl")" = 200 ]
	for i in $(seq 1 50); do    # the last flush is clocked after its write
		n1=$(metric tokstream:inter_token_latency_seconds_count)
		[ $((n1 - n0)) -lt 76 ] || break
		sleep 0.02
	done
	f1=$(metric 'tokstream:inter_token_latency_seconds_bucket{le="0.01"}')
	echo "ITL samples $n0 -> $n1, under 10 ms $f0 -> $f1"
	[ $((n1 - n0)) -eq 76 ]
	# clocked across the interleaved choices, about 57 of them would be
	# near 0; a writer late by a step on a busy machine makes a few
	[ $((f1 - f0)) -le 8 ]
}

@test "an injected timeout holds a connection, not a slot: 40 silent requests of n = 2 beside 64 slots leave every slot free, a normal request answers at once" {
	local d=$BATS_TEST_TMPDIR i pids=""
	local body='{"model":"tokstream-sim","n":2,"max_tokens":20,"messages":[{"role":"user","content":"wait"}]}'
	for i in $(seq 1 40); do
		curl -s -o "$d/t$i" -D "$d/th$i" --max-time 6 \
			-H 'Content-Type: application/json' \
			-H 'X-Tokstream-Failure: timeout' -d "$body" \
			"$BASE/v1/chat/completions" &
		pids="$pids $!"
	done
	# 80 sequences would fill the 64 slots; each ends before its first
	# token, so none stays in a slot or counts as held
	for i in $(seq 1 100); do
		e=$(curl -s "$BASE/_debug/generated" | jq -c .engine)
		[ "$(jq '.running + .waiting + .held' <<<"$e")" -eq 0 ] && break
		sleep 0.05
	done
	echo "engine with 40 silent requests: $e"
	[ "$(jq '.running + .waiting + .held' <<<"$e")" -eq 0 ]
	[ "$(post '{"model":"tokstream-sim","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' "$d/ok")" = 200 ]
	# still silent: no byte, not even a head, until each client gives up
	for i in $(seq 1 40); do
		[ ! -s "$d/th$i" ]
	done
	rc=0
	for p in $pids; do
		wait "$p" || rc=$?
		[ "$rc" -eq 28 ]
	done
	for i in $(seq 1 40); do
		[ ! -s "$d/th$i" ]
		[ ! -s "$d/t$i" ]
	done
}

@test "failure injection by header: each type's status, body and headers; midstream errors and cuts after K tokens; a timeout answers nothing; /metrics counts each type" {
	local d=$BATS_TEST_TMPDIR body='{"model":"tokstream-sim","max_tokens":20,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}]}'
	local sbody='{"model":"tokstream-sim","max_tokens":20,"ignore_eos":true,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
	local before
	before=$(curl -s "$BASE/metrics" | unlabel_model | grep '^tokstream:injected_failures_total')
	[ "$(post "$body" "$d/r" -D "$d/h" -H 'X-Tokstream-Failure: rate_limit')" = 429 ]
	jq -e '.error.code == "rate_limit_exceeded" and .error.type == "requests"' "$d/r"
	[ "$(header_of "$d/h" Retry-After)" = 1 ]
	[ "$(post "$body" "$d/r" -H 'X-Tokstream-Failure: server_error')" = 500 ]
	jq -e '.error.type == "server_error"' "$d/r"
	[ "$(post "$body" "$d/r" -H 'X-Tokstream-Failure: overloaded')" = 503 ]
	jq -e '.error.code == "overloaded"' "$d/r"
	[ "$(post "$body" "$d/r" -H 'X-Tokstream-Failure: context_length')" = 400 ]
	jq -e '.error.code == "context_length_exceeded" and (.error.message | test("maximum context length"))' "$d/r"
	[ "$(post "$body" "$d/r" -D "$d/h" -H 'X-Tokstream-Failure: invalid_api_key')" = 401 ]
	jq -e '.error.code == "invalid_api_key"' "$d/r"
	[ "$(header_of "$d/h" WWW-Authenticate)" = Bearer ]
	# mid-stream: K tokens, then an error event and [DONE]
	[ "$(post "$sbody" "$d/s" -H 'X-Tokstream-Failure: midstream_error; after=7')" = 200 ]
	[ "$(chunks "$d/s" | jq -s '[.[] | select(.choices) | .choices[0].delta.content // empty | select(. != "")] | length')" = 7 ]
	chunks "$d/s" | tail -n 1 | jq -e '.error.type == "server_error"'
	tail -c 20 "$d/s" | grep -q 'data: \[DONE\]'
	# mid-stream cut: K tokens, then the body ends without [DONE]
	[ "$(post "$sbody" "$d/c" -H 'X-Tokstream-Failure: midstream_cut; after=4')" = 200 ]
	[ "$(chunks "$d/c" | jq -s '[.[] | .choices[0].delta.content // empty | select(. != "")] | length')" = 4 ]
	! grep -q '\[DONE\]' "$d/c" || false
	! grep -q finish_reason\":\" "$d/c" || false
	# timeout: nothing at all until the client gives up
	local t0 rc=0
	t0=$(date +%s%N)
	curl -s -o "$d/t" -D "$d/th" --max-time 2 -H 'Content-Type: application/json' -H 'X-Tokstream-Failure: timeout' -d "$body" "$BASE/v1/chat/completions" || rc=$?
	[ "$rc" -eq 28 ]
	[ ! -s "$d/th" ]
	[ ! -s "$d/t" ]
	# a bad header is a 400
	[ "$(post "$body" "$d/r" -H 'X-Tokstream-Failure: sometimes')" = 400 ]
	jq -e '.error.message | test("X-Tokstream-Failure")' "$d/r"
	[ "$(post "$body" "$d/r" -H 'X-Tokstream-Failure: rate_limit; after=3')" = 400 ]
	# a mid-stream failure after the answer's last token never fires:
	# a normal end, not counted
	[ "$(post "$sbody" "$d/late" -H 'X-Tokstream-Failure: midstream_error; after=500')" = 200 ]
	tail -c 20 "$d/late" | grep -q 'data: \[DONE\]'
	chunks "$d/late" | jq -s -e '[.[] | .choices[0].finish_reason // empty] == ["length"]'
	# each counted once by type
	local after t
	after=$(curl -s "$BASE/metrics" | unlabel_model | grep '^tokstream:injected_failures_total')
	for t in rate_limit server_error overloaded context_length invalid_api_key midstream_error midstream_cut timeout; do
		local b a
		b=$(awk -v k="tokstream:injected_failures_total{type=\"$t\"}" '$1 == k { print $2 }' <<<"$before")
		a=$(awk -v k="tokstream:injected_failures_total{type=\"$t\"}" '$1 == k { print $2 }' <<<"$after")
		echo "$t: $b -> $a"
		[ "$a" = $((b + 1)) ]
	done
}

@test "failure injection by rate: 10% of 1,000 requests fail, within binomial bounds, over the configured types, reproducibly with a seed; /metrics agrees" {
	own_server --tpot-ms 1 --prefill-base-ms 0 --prefill-per-token-ms 0 \
		--failure-injection-rate 10 --failure-types rate_limit,server_error,overloaded,context_length --failure-seed 7
	local d=$BATS_TEST_TMPDIR i
	run1() {
		local i
		for i in $(seq 1 1000); do
			curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
				-d '{"model":"tokstream-sim","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}' \
				"$BASE/v1/chat/completions"
		done
	}
	run1 >"$d/codes"
	sort "$d/codes" | uniq -c
	local fails
	fails=$(grep -vc '^200$' "$d/codes")
	# binomial(1000, 0.1): mean 100, sd 9.5; 4 sd
	[ "$fails" -ge 62 ]
	[ "$fails" -le 138 ]
	# only the configured types
	! grep -vqE '^(200|429|500|503|400)$' "$d/codes" || false
	local k
	for k in 429 500 503 400; do
		[ "$(grep -c "^$k$" "$d/codes")" -ge 5 ]
	done
	local sum
	sum=$(curl -s "$BASE/metrics" | awk '$1 ~ /^tokstream:injected_failures_total/ { s += $2 } END { print s }')
	[ "$sum" = "$fails" ]
	# the same seed, the same order: the same failures
	ts_stop
	own_server --tpot-ms 1 --prefill-base-ms 0 --prefill-per-token-ms 0 \
		--failure-injection-rate 10 --failure-types rate_limit,server_error,overloaded,context_length --failure-seed 7
	run1 >"$d/codes2"
	cmp "$d/codes" "$d/codes2"
}

@test "prefix cache: a repeated 2,000-token prompt pays only its uncached tail (TTFT), cached_tokens in usage and /_debug; a partial hit; metrics" {
	own_server --tpot-ms 5 --prefill-base-ms 10 --prefill-per-token-ms 0.5 --block-size 16
	local d=$BATS_TEST_TMPDIR p
	p=$(for i in $(seq 1 400); do printf 'the quiet river %d ' "$i"; done)
	local n
	n=$("$TOKGEN" -p "<|user|>
$p
<|assistant|>
" --count)
	echo "prompt tokens: $n"
	[ "$n" -ge 2000 ]
	local b1 b2
	b1=$(jq -nc --arg p "$p" '{model:"tokstream-sim",max_tokens:1,messages:[{role:"user",content:$p}]}')
	curl -s -o "$d/1" -w '%{time_starttransfer}\n' -H 'Content-Type: application/json' -d "$b1" "$BASE/v1/chat/completions" >"$d/t1"
	curl -s -o "$d/2" -w '%{time_starttransfer}\n' -H 'Content-Type: application/json' -d "$b1" "$BASE/v1/chat/completions" >"$d/t2"
	jq -e '.usage.prompt_tokens_details.cached_tokens == 0' "$d/1"
	jq -e --argjson n "$n" '.usage.prompt_tokens == $n and
		.usage.prompt_tokens_details.cached_tokens == (($n - 1) / 16 | floor) * 16' "$d/2"
	local id
	id=$(jq -r '.id | sub("chatcmpl-"; "")' "$d/2")
	[ "$(debug_field "$id" cached_tokens)" = "$(jq '.usage.prompt_tokens_details.cached_tokens' "$d/2")" ]
	echo "TTFT first $(cat "$d/t1") s, second $(cat "$d/t2") s"
	# first: 10 + 0.5 x n ms (> 1 s); second: 10 + 0.5 x (n - hit) <= 18 ms, plus overheads
	holds "$(cat "$d/t1") > 0.9 && $(cat "$d/t2") < 0.3"
	# partial: the same first half, another second half
	local half
	half=$(for i in $(seq 1 200); do printf 'the quiet river %d ' "$i"; done; for i in $(seq 1 200); do printf 'a loud sea %d ' "$i"; done)
	curl -s -o "$d/3" -H 'Content-Type: application/json' -d "$(jq -nc --arg p "$half" '{model:"tokstream-sim",max_tokens:1,messages:[{role:"user",content:$p}]}')" "$BASE/v1/chat/completions"
	jq -e '.usage.prompt_tokens_details.cached_tokens > 0 and
		.usage.prompt_tokens_details.cached_tokens < .usage.prompt_tokens / 2 + 16' "$d/3"
	# vLLM's counters
	local q h
	q=$(metric tokstream:prefix_cache_queries_total)
	h=$(metric tokstream:prefix_cache_hits_total)
	echo "queries $q hits $h"
	[ "$h" -ge $(( $(jq '.usage.prompt_tokens_details.cached_tokens' "$d/2") + $(jq '.usage.prompt_tokens_details.cached_tokens' "$d/3") )) ]
	[ "$q" -ge $((3 * n - 100)) ]
}

@test "prefix cache: eviction in a small cache (LRU), and a cancelled stream frees its blocks (kv_cache_usage_perc back to 0)" {
	own_server --tpot-ms 20 --prefill-base-ms 0 --prefill-per-token-ms 0.1 --block-size 16 --kv-cache-blocks 64
	local d=$BATS_TEST_TMPDIR a b
	a=$(for i in $(seq 1 150); do printf 'alpha %d ' "$i"; done)
	b=$(for i in $(seq 1 150); do printf 'beta %d ' "$i"; done)
	req() {
		curl -s -o "$d/$2" -H 'Content-Type: application/json' -d "$(jq -nc --arg p "$1" '{model:"tokstream-sim",max_tokens:1,messages:[{role:"user",content:$p}]}')" "$BASE/v1/chat/completions"
		jq '.usage.prompt_tokens_details.cached_tokens' "$d/$2"
	}
	req "$a" a1 >/dev/null
	[ "$(req "$a" a2)" -gt 0 ]
	# b fills the 64 blocks (a's ~20 blocks are evicted)
	req "$b" b1 >/dev/null
	req "$b" b2 >/dev/null
	[ "$(req "$a" a3)" -lt "$(jq '.usage.prompt_tokens_details.cached_tokens' "$d/a2")" ]
	# a stream holds blocks while it runs; cancelled, it frees them
	curl -s -N --max-time 1 -H 'Content-Type: application/json' -d '{"model":"tokstream-sim","max_tokens":2000,"ignore_eos":true,"stream":true,"messages":[{"role":"user","content":"hold blocks"}]}' "$BASE/v1/chat/completions" >/dev/null &
	local pid=$! u i
	for i in $(seq 1 50); do
		u=$(metric tokstream:kv_cache_usage_perc)
		holds "$u > 0" && break
		sleep 0.02
	done
	holds "$u > 0"
	wait "$pid" || true
	for i in $(seq 1 100); do
		u=$(metric tokstream:kv_cache_usage_perc)
		holds "$u == 0" && break
		sleep 0.05
	done
	echo "usage after cancel: $u"
	holds "$u == 0"
}

@test "echo mode: the answer repeats the last user message token by token (chat, completions, responses); max_tokens cuts it" {
	own_server --mode echo --tpot-ms 1 --prefill-base-ms 0 --prefill-per-token-ms 0
	local d=$BATS_TEST_TMPDIR msg='Echo this back, please: ünïcödé 🚀 and "quotes".'
	[ "$(post "$(jq -nc --arg m "$msg" '{model:"tokstream-sim",messages:[{role:"system",content:"sys"},{role:"user",content:"first"},{role:"assistant",content:"x"},{role:"user",content:$m}]}')" "$d/c")" = 200 ]
	jq -e --arg m "$msg" '.choices[0].message.content == $m and .choices[0].finish_reason == "stop"' "$d/c"
	[ "$(post "$(jq -nc --arg m "$msg" '{model:"tokstream-sim",stream:true,messages:[{role:"user",content:$m}]}')" "$d/s")" = 200 ]
	[ "$(chunks "$d/s" | jq -rj '.choices[0].delta.content // empty')" = "$msg" ]
	[ "$(chunks "$d/s" | jq -s '[.[] | select(.choices[0].delta.content // "" | length > 0)] | length')" -gt 5 ]
	PATHV1=/v1/completions post '{"model":"tokstream-sim","prompt":"say it twice","max_tokens":50}' "$d/p" >/dev/null
	jq -e '.choices[0].text == "say it twice"' "$d/p"
	PATHV1=/v1/responses post '{"model":"tokstream-sim","input":"respond in kind"}' "$d/r" >/dev/null
	jq -e '.output[0].content[0].text == "respond in kind"' "$d/r"
	post "$(jq -nc --arg m "$msg" '{model:"tokstream-sim",max_tokens:3,messages:[{role:"user",content:$m}]}')" "$d/l" >/dev/null
	jq -e --arg m "$msg" '. as $in | .choices[0].finish_reason == "length" and
		($m | startswith($in.choices[0].message.content))' "$d/l"
}
