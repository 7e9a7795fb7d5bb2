#!/usr/bin/env bats
# Reasoning (docs/API.md "Reasoning"): thinking tokens before the answer
# on OpenAI's chat (reasoning_effort: delta.reasoning or
# delta.reasoning_content, message.reasoning, completion_tokens_details),
# OpenAI's Responses API (reasoning {effort, summary}: the reasoning item
# and its events, output_tokens_details), Ollama's think (message.thinking,
# generate's thinking) and --reasoning always in every dialect, checked
# with curl and jq; then with the official openai and ollama clients
# (tests/node/reasoning.mjs), and a client that leaves during the
# thinking.

load helpers

MODEL=tokstream-sim

# Two servers: R answers reasoning when a request asks (the default);
# A reasons always and names the chat field reasoning_content.
setup_file() {
	ts_start --keepalive-ms 500
	export BASE_R=$BASE RUNDIR_R=$RUNDIR PORT_R=$PORT
	ts_start --keepalive-ms 500 --reasoning always \
		--reasoning-field reasoning_content
	export BASE_A=$BASE RUNDIR_A=$RUNDIR PORT_A=$PORT
	export BASE=$BASE_R RUNDIR=$RUNDIR_R PORT=$PORT_R
}

teardown_file() {
	RUNDIR=$RUNDIR_A PORT=$PORT_A ts_stop
	RUNDIR=$RUNDIR_R PORT=$PORT_R ts_stop
}

# chat CONTENT [JSON]: a chat request of one user message merged with
# JSON; no latency, a fixed seed, EOS ignored (the counts are exact)
chat() {
	jq -nc --arg c "$1" --argjson x "${2:-{\}}" --arg m "$MODEL" \
		'{model:$m, messages:[{role:"user", content:$c}], seed:7,
		  ignore_eos:true, prefill_ms:0, tpot_ms:0} + $x'
}

# post URL BODY: the body of a POST
post() {
	curl -sS -N -H 'Content-Type: application/json' -d "$2" "$1"
}

# sse FILE: the JSON data lines of an SSE stream, [DONE] left out
sse() {
	sed -n 's/^data: //p' "$1" | grep -v '^\[DONE\]$'
}

@test "chat stream: reasoning_effort low gives 64 delta.reasoning chunks (the first with the role), then the content; usage counts them in completion_tokens and completion_tokens_details.reasoning_tokens" {
	d=$BATS_TEST_TMPDIR
	post "$BASE/v1/chat/completions" "$(chat think '{"reasoning_effort":"low",
		"max_tokens":80,"stream":true,
		"stream_options":{"include_usage":true}}')" >"$d/s"
	sse "$d/s" | jq -c 'select(.choices | length > 0) | .choices[0].delta' \
		>"$d/deltas"
	# 64 thinking chunks, then 16 content chunks and the finish's {}
	[ "$(jq -s '[.[] | select(has("reasoning"))] | length' "$d/deltas")" -eq 64 ]
	[ "$(jq -s '[.[] | select((.content // "") != "")] | length' "$d/deltas")" -eq 16 ]
	jq -s -e '(map(has("reasoning")) | index(false)) == 64' "$d/deltas"
	jq -s -e '.[0].role == "assistant" and .[0].content == null and
		(.[0].reasoning | length > 0)' "$d/deltas"
	jq -s -e 'all(.[]; has("reasoning_content") | not)' "$d/deltas"
	sse "$d/s" | tail -n 1 | jq -e '.usage.completion_tokens == 80 and
		.usage.completion_tokens_details.reasoning_tokens == 64 and
		.usage.total_tokens == .usage.prompt_tokens + 80'
}

@test "chat without stream: message.reasoning is the streamed thinking, content the streamed answer; the same usage" {
	d=$BATS_TEST_TMPDIR
	post "$BASE/v1/chat/completions" "$(chat same '{"reasoning_effort":"minimal",
		"max_tokens":30,"stream":true}')" >"$d/s"
	post "$BASE/v1/chat/completions" "$(chat same '{"reasoning_effort":"minimal",
		"max_tokens":30}')" >"$d/a"
	think=$(sse "$d/s" | jq -j '.choices[0].delta.reasoning // empty')
	text=$(sse "$d/s" | jq -j '.choices[0].delta.content // empty')
	[ -n "$think" ]
	[ -n "$text" ]
	[ "$(jq -j '.choices[0].message.reasoning' "$d/a")" = "$think" ]
	[ "$(jq -j '.choices[0].message.content' "$d/a")" = "$text" ]
	jq -e '.usage.completion_tokens == 30 and
		.usage.completion_tokens_details.reasoning_tokens == 16' "$d/a"
}

@test "chat efforts: none 0, minimal 16, low 64, medium 256, high 1024 (capped at max_tokens - 1); an unknown effort is a 400 naming reasoning_effort; no effort, no thinking" {
	d=$BATS_TEST_TMPDIR
	for e in minimal:16 low:64 medium:256 high:1024; do
		post "$BASE/v1/chat/completions" "$(chat e "{\"reasoning_effort\":\"${e%%:*}\",
			\"max_tokens\":1100}")" >"$d/a"
		jq -e --argjson n "${e##*:}" \
			'.usage.completion_tokens_details.reasoning_tokens == $n' "$d/a"
	done
	post "$BASE/v1/chat/completions" "$(chat e '{"reasoning_effort":"high",
		"max_tokens":40}')" >"$d/a"
	jq -e '.usage.completion_tokens_details.reasoning_tokens == 39 and
		.usage.completion_tokens == 40 and
		(.choices[0].message.content | length > 0)' "$d/a"
	for x in '{"reasoning_effort":"none"}' '{}' '{"reasoning_effort":null}'; do
		post "$BASE/v1/chat/completions" "$(chat e "$x")" >"$d/a"
		jq -e '(.choices[0].message | has("reasoning") | not) and
			(.usage | has("completion_tokens_details") | not)' "$d/a"
	done
	curl -sS -o "$d/err" -w '%{http_code}' -H 'Content-Type: application/json' \
		-d "$(chat e '{"reasoning_effort":"extreme"}')" \
		"$BASE/v1/chat/completions" >"$d/code"
	[ "$(cat "$d/code")" = 400 ]
	jq -e '.error.param == "reasoning_effort" and
		.error.code == "invalid_value"' "$d/err"
}

@test "--reasoning always --reasoning-field reasoning_content: chat thinks 256 tokens (medium) unprompted, in delta.reasoning_content and message.reasoning_content; reasoning_effort none turns it off" {
	d=$BATS_TEST_TMPDIR
	post "$BASE_A/v1/chat/completions" "$(chat a '{"max_tokens":260,
		"stream":true,"stream_options":{"include_usage":true}}')" >"$d/s"
	# a chunk per token, but for the tokens whose text is a part of a
	# character (held back, sent with the next)
	n=$(sse "$d/s" | jq -c 'select(.choices[0].delta.reasoning_content != null)' |
		wc -l)
	[ "$n" -gt 200 ]
	[ "$n" -le 256 ]
	sse "$d/s" | jq -s -e '[.[] | select(.choices | length > 0) |
		.choices[0].delta | has("reasoning_content")] | index(false) as $i |
		.[$i:] | all(. == false)'
	[ "$(grep -c '"reasoning":' "$d/s")" -eq 0 ]
	sse "$d/s" | tail -n 1 |
		jq -e '.usage.completion_tokens_details.reasoning_tokens == 256'
	post "$BASE_A/v1/chat/completions" "$(chat a '{"max_tokens":260}')" >"$d/a"
	jq -e '(.choices[0].message.reasoning_content | length > 0) and
		(.choices[0].message | has("reasoning") | not) and
		.usage.completion_tokens_details.reasoning_tokens == 256' "$d/a"
	post "$BASE_A/v1/chat/completions" "$(chat a '{"max_tokens":20,
		"reasoning_effort":"none"}')" >"$d/a"
	jq -e '(.choices[0].message | has("reasoning_content") | not)' "$d/a"
}

@test "--reasoning always reaches Anthropic's Messages (a thinking block unless thinking is disabled) and Ollama (thinking unless think is false)" {
	d=$BATS_TEST_TMPDIR
	m='{"model":"tokstream-sim","max_tokens":300,"messages":[{"role":"user","content":"hi"}],"tpot_ms":0,"prefill_ms":0}'
	post "$BASE_A/v1/messages" "$m" >"$d/a"
	jq -e '.content[0].type == "thinking" and
		(.content[0].thinking | length > 0) and
		.content[1].type == "text"' "$d/a"
	post "$BASE_A/v1/messages" "$(jq -c '. + {thinking:{type:"disabled"}}' <<<"$m")" >"$d/a"
	jq -e '[.content[].type] == ["text"]' "$d/a"
	# the request-mode server: no thinking without the request's
	post "$BASE/v1/messages" "$m" >"$d/a"
	jq -e '[.content[].type] == ["text"]' "$d/a"
	o='{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":260},"tpot_ms":0,"prefill_ms":0}'
	post "$BASE_A/api/chat" "$o" >"$d/a"
	jq -e '(.message.thinking | length > 0) and .eval_count >= 257' "$d/a"
	post "$BASE_A/api/chat" "$(jq -c '. + {think:false}' <<<"$o")" >"$d/a"
	jq -e '.message | has("thinking") | not' "$d/a"
}

@test "Responses: reasoning {effort minimal} gives a reasoning item (reasoning_text) before the message, reasoning echoed, output_tokens_details.reasoning_tokens 16" {
	d=$BATS_TEST_TMPDIR
	r='{"model":"tokstream-sim","input":"hi","reasoning":{"effort":"minimal"},"max_output_tokens":24,"seed":7,"ignore_eos":true,"tpot_ms":0,"prefill_ms":0}'
	post "$BASE/v1/responses" "$r" >"$d/a"
	jq -e '[.output[].type] == ["reasoning", "message"] and
		(.output[0].id | startswith("rs_")) and
		.output[0].summary == [] and
		.output[0].content[0].type == "reasoning_text" and
		(.output[0].content[0].text | length > 0) and
		.reasoning.effort == "minimal" and .reasoning.summary == null and
		.usage.output_tokens == 24 and
		.usage.output_tokens_details.reasoning_tokens == 16' "$d/a"
	# streamed: the reasoning item's events, then the message's at 1
	post "$BASE/v1/responses" "$(jq -c '. + {stream:true}' <<<"$r")" >"$d/s"
	sed -n 's/^data: //p' "$d/s" | jq -r '.type' | uniq -c |
		awk '{print $2 "x" $1}' >"$d/types"
	cat "$d/types"
	diff - "$d/types" <<EOF
response.createdx1
response.in_progressx1
response.output_item.addedx1
response.reasoning_text.deltax16
response.reasoning_text.donex1
response.output_item.donex1
response.output_item.addedx1
response.content_part.addedx1
response.output_text.deltax8
response.output_text.donex1
response.content_part.donex1
response.output_item.donex1
response.incompletex1
EOF
	sed -n 's/^data: //p' "$d/s" | jq -s -e '
		(map(select(.type == "response.output_item.added")) |
		 [.[].item.type, .[].output_index] == ["reasoning", "message", 0, 1]) and
		([.[] | select(.type == "response.reasoning_text.delta") | .delta] |
		 join("")) as $t |
		(.[] | select(.type == "response.reasoning_text.done") | .text) == $t and
		(.[-1].response.output[0].content[0].text == $t) and
		.[-1].response.usage.output_tokens_details.reasoning_tokens == 16'
	# the same thinking as the whole answer's
	t=$(sed -n 's/^data: //p' "$d/s" | jq -j 'select(.type == "response.reasoning_text.delta") | .delta')
	[ "$(jq -j '.output[0].content[0].text' "$d/a")" = "$t" ]
}

@test "Responses: reasoning.summary auto streams the thinking as a summary (reasoning_summary_part and reasoning_summary_text events)" {
	d=$BATS_TEST_TMPDIR
	post "$BASE/v1/responses" '{"model":"tokstream-sim","input":"hi","reasoning":{"effort":"minimal","summary":"auto"},"max_output_tokens":20,"stream":true,"tpot_ms":0,"prefill_ms":0}' >"$d/s"
	sed -n 's/^data: //p' "$d/s" | jq -r .type | uniq | sed -n 3,8p >"$d/types"
	diff - "$d/types" <<EOF
response.output_item.added
response.reasoning_summary_part.added
response.reasoning_summary_text.delta
response.reasoning_summary_text.done
response.reasoning_summary_part.done
response.output_item.done
EOF
	sed -n 's/^data: //p' "$d/s" | jq -s -e '
		[.[] | select(.type == "response.reasoning_summary_text.delta")] |
		length == 16 and all(.[]; .summary_index == 0 and .output_index == 0)'
	sed -n 's/^data: //p' "$d/s" | tail -n 1 | jq -e '
		.response.reasoning.summary == "auto" and
		.response.output[0].summary[0].type == "summary_text" and
		(.response.output[0] | has("content") | not)'
}

@test "Ollama think: /api/chat streams message.thinking objects (content \"\") before the content; /api/generate's thinking; the whole answers carry them; think false none" {
	d=$BATS_TEST_TMPDIR
	c='{"model":"tokstream-sim","messages":[{"role":"user","content":"hi"}],"think":"low","options":{"num_predict":70,"seed":3},"tpot_ms":0,"prefill_ms":0}'
	post "$BASE/api/chat" "$c" >"$d/s"
	[ "$(jq -s '[.[] | select(.message.thinking != null)] | length' "$d/s")" -eq 64 ]
	jq -s -e '(map(.message.thinking != null) | index(false)) == 64 and
		all(.[:64][]; .message.content == "" and .done == false) and
		.[-1].done == true and .[-1].eval_count >= 65' "$d/s"
	post "$BASE/api/chat" "$(jq -c '. + {stream:false}' <<<"$c")" >"$d/a"
	[ "$(jq -j '.message.thinking' "$d/a")" = "$(jq -j '.message.thinking // empty' "$d/s")" ]
	[ "$(jq -j '.message.content' "$d/a")" = "$(jq -j '.message.content' "$d/s")" ]
	g='{"model":"tokstream-sim","prompt":"hi","think":true,"options":{"num_predict":258},"tpot_ms":0,"prefill_ms":0}'
	post "$BASE/api/generate" "$g" >"$d/g"
	[ "$(jq -s '[.[] | select(.thinking != null)] | length' "$d/g")" -eq 256 ]
	jq -s -e 'all(.[:256][]; .response == "")' "$d/g"
	post "$BASE/api/generate" "$(jq -c '. + {stream:false}' <<<"$g")" >"$d/a"
	jq -e '(.thinking | length > 0) and (.response | length > 0)' "$d/a"
	post "$BASE/api/generate" "$(jq -c '. + {stream:false, think:false}' <<<"$g")" >"$d/a"
	jq -e 'has("thinking") | not' "$d/a"
}

@test "tokstream-fcgi refuses a --reasoning other than always or request, and a --reasoning-field other than reasoning or reasoning_content (exit 2)" {
	run "$TS_BUILDDIR/src/tokstream-fcgi" --reasoning sometimes
	[ "$status" -eq 2 ]
	[[ "$output" == *"--reasoning is always or request"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --reasoning-field thoughts
	[ "$status" -eq 2 ]
	[[ "$output" == *"--reasoning-field is reasoning or reasoning_content"* ]]
}

@test "the openai SDK reads delta.reasoning and message.reasoning (chat, stream and not) and the Responses API's reasoning item and events" {
	need_node openai
	run timeout 120 node "$TS_SRCDIR/tests/node/reasoning.mjs" "$BASE" openai reasoning
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the openai SDK reads delta.reasoning_content and message.reasoning_content (--reasoning-field reasoning_content, --reasoning always)" {
	need_node openai
	run timeout 120 node "$TS_SRCDIR/tests/node/reasoning.mjs" "$BASE_A" openai reasoning_content
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the ollama npm client reads think's thinking (chat and generate, stream and not)" {
	need_node ollama
	run timeout 120 node "$TS_SRCDIR/tests/node/reasoning.mjs" "$BASE" ollama
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a client that leaves after 3 reasoning deltas (the openai SDK's stream, broken off) stops the generation: at most one token more" {
	need_node openai
	run timeout 60 node "$TS_SRCDIR/tests/node/reasoning.mjs" "$BASE" cancel
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(echo "$output" | sed -n 's/^id //p')
	[ -n "$id" ]
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" cancel_cause)" = client_gone ]
	[ "$(debug_field "$id" generated)" -le 4 ]
}
