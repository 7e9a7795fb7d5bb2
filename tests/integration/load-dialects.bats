#!/usr/bin/env bats
# tokbench load in the other dialects tokstream speaks: Anthropic's
# Messages API (--endpoint /v1/messages: named SSE events, x-api-key,
# thinking and its TTFR) and Ollama's API (--endpoint /api/chat and
# /api/generate: NDJSON lines, eval_count). Every count is checked
# against the server's own: tokstream:generation_tokens_total on
# /metrics counts every token the engine made, so its increase over a run
# is what the run's output tokens must add up to. Durations are only
# compared as orders (TTFR before TTFT). OpenAI's reasoning deltas come
# from tests/node/openai-mini.mjs (tokstream's /v1 sends none yet).

load helpers

KEY=sk-dialects-test

setup_file() {
	ts_start --tpot-ms 10 --keepalive-ms 200 --api-key "$KEY"
}

teardown_file() {
	ts_stop
}

teardown() {
	[ -n "${MINI_PID:-}" ] && kill "$MINI_PID" 2>/dev/null || true
	# a second server of a test: stopped, and the file's one back
	if [ -n "${BASE0:-}" ]; then
		ts_stop
		BASE=$BASE0 RUNDIR=$RUNDIR0 PORT=$PORT0
	fi
}

# start_mini: the tiny OpenAI-style server of load-v1.bats, which
# streams reasoning deltas when asked (tokstream's /v1 does not yet)
start_mini() {
	local p i
	p=$(free_port)
	node "$TS_SRCDIR/tests/node/openai-mini.mjs" "$p" 2>/dev/null &
	MINI_PID=$!
	MINI=http://127.0.0.1:$p
	for i in $(seq 1 50); do
		curl -s -o /dev/null "$MINI/v1/models" && return 0
		sleep 0.1
	done
	return 1
}

# jqt FILE EXPR: the JSON report must satisfy EXPR (prints it if not).
jqt() {
	if ! jq -e "$2" "$1" >/dev/null; then
		echo "not true: $2" >&2
		jq -c . "$1" >&2
		return 1
	fi
}

# generated: the server's count of every token it generated so far
generated() {
	curl -s -H "Authorization: Bearer $KEY" "$BASE/metrics" | unlabel_model |
		awk '$1 == "tokstream:generation_tokens_total" { print $2 }'
}

@test "/v1/messages without thinking: every request completes, output tokens are the server's (message_delta usage, /metrics), no TTFR" {
	d=$BATS_TEST_TMPDIR
	before=$(generated)
	[ -n "$before" ]
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--model tokstream-sim --api-key "$KEY" --concurrency 5 --requests 20 \
		--output-tokens 12 --prompt-tokens 8 --json "$d/m.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	after=$(generated)
	jqt "$d/m.json" '.completed == 20 and .failed == 0 and
		.endpoint == "/v1/messages" and .count_ttft == 20'
	# the server's count, and never more than asked
	jqt "$d/m.json" ".total_output_tokens == $after - $before and
		.total_output_tokens <= 20 * 12 and .total_output_tokens >= 20"
	# a text_delta per token that released text; EOS releases none
	jqt "$d/m.json" '.total_token_events <= .total_output_tokens and
		.total_token_events >= 20'
	# input tokens from message_start: the chat template's prompt
	jqt "$d/m.json" '.total_input_tokens > 20 * 8'
	jqt "$d/m.json" '.count_ttfr == 0 and .median_ttfr_ms == null and
		.total_reasoning_events == 0'
	[[ $output == *"Median TTFT (ms):"* ]]
	[[ $output != *"TTFR"* ]]
}

@test "/v1/messages with --thinking-budget: thinking sent, TTFR before TTFT, reasoning deltas and text both counted, output tokens the server's" {
	d=$BATS_TEST_TMPDIR
	before=$(generated)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--model tokstream-sim --api-key "$KEY" --concurrency 5 --requests 20 \
		--output-tokens 12 --thinking-budget 4 --json "$d/t.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	after=$(generated)
	jqt "$d/t.json" '.completed == 20 and .failed == 0 and
		.settings.thinking_budget == 4'
	jqt "$d/t.json" ".total_output_tokens == $after - $before and
		.total_output_tokens <= 20 * 12"
	# every request thought first: 4 thinking tokens, then text; each
	# request's TTFR below its TTFT puts every order statistic below
	jqt "$d/t.json" '.count_ttfr == 20 and .count_ttft == 20 and
		.total_reasoning_events >= 20 and .total_reasoning_events <= 80'
	jqt "$d/t.json" '.median_ttfr_ms < .median_ttft_ms and
		.p99_ttfr_ms < .p99_ttft_ms and .min_ttfr_ms < .min_ttft_ms'
	for k in "Median TTFR (ms):" "P99 TTFR (ms):" \
		"Time to First Reasoning Token" "Total reasoning deltas:"; do
		[[ $output == *"$k"* ]]
	done
	# a budget that leaves no room for text is a usage error
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--requests 1 --output-tokens 4 --thinking-budget 4
	[ "$status" -eq 2 ]
	run "$TOKBENCH" load --url "$BASE" --endpoint /api/chat \
		--requests 1 --thinking-budget 2
	[ "$status" -eq 2 ]
}

@test "/v1/messages: the key goes as x-api-key (a wrong one is http_401 with Anthropic's error)" {
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--model tokstream-sim --api-key "$KEY" --requests 2 --output-tokens 3
	[ "$status" -eq 0 ]
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--model tokstream-sim --api-key wrong --requests 2 \
		--json "$d/w.json" --quiet
	jqt "$d/w.json" '.completed == 0 and .failures.http_401 == 2'
	[[ $(jq -r '.failure_examples.http_401' "$d/w.json") == *"HTTP 401"*"authentication_error"* ]]
}

@test "/api/chat and /api/generate: NDJSON lines, output tokens from eval_count (the server's count), input from prompt_eval_count; --think is sent and accepted" {
	d=$BATS_TEST_TMPDIR
	before=$(generated)
	run "$TOKBENCH" load --url "$BASE" --endpoint /api/chat \
		--api-key "$KEY" --concurrency 5 --requests 20 \
		--output-tokens 10 --prompt-tokens 8 --json "$d/c.json"
	echo "$output"
	[ "$status" -eq 0 ]
	after=$(generated)
	jqt "$d/c.json" '.completed == 20 and .failed == 0 and
		.endpoint == "/api/chat" and .count_ttft == 20'
	jqt "$d/c.json" ".total_output_tokens == $after - $before and
		.total_output_tokens <= 20 * 10 and .total_output_tokens >= 20"
	jqt "$d/c.json" '.total_token_events <= .total_output_tokens and
		.total_input_tokens > 20 * 8 and .count_ttfr == 0'
	[[ $output == *"model tokstream-sim"* ]]
	before=$(generated)
	run "$TOKBENCH" load --url "$BASE" --endpoint /api/generate \
		--api-key "$KEY" --concurrency 4 --requests 8 \
		--output-tokens 6 --think --json "$d/g.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	after=$(generated)
	jqt "$d/g.json" ".completed == 8 and .failed == 0 and
		.total_output_tokens == $after - $before and
		.total_output_tokens <= 48 and .settings.think == true"
	# this server thinks on /v1/messages only: asked, none came
	[[ $output == *"Median TTFR (ms):"*"n/a"* ]]
	# no key: Ollama's 401
	run "$TOKBENCH" load --url "$BASE" --endpoint /api/chat \
		--model tokstream-sim --requests 1 --json "$d/n.json" --quiet
	jqt "$d/n.json" '.failures.http_401 == 1'
	run "$TOKBENCH" load --url "$BASE" --endpoint /api/chat \
		--requests 1 --ignore-eos
	[ "$status" -eq 2 ]
}

@test "/v1/chat/completions with --reasoning-effort: sent; TTFR from delta.reasoning and from delta.reasoning_content, before TTFT; reasoning in the output tokens, not in the content deltas" {
	need_node
	start_mini
	d=$BATS_TEST_TMPDIR
	for effort in medium low; do
		run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
			--reasoning-effort $effort --concurrency 3 --requests 6 \
			--output-tokens 10 --json "$d/$effort.json" --quiet
		echo "$output"
		[ "$status" -eq 0 ]
		# 3 reasoning deltas, then 7 tokens as 6 content deltas
		jqt "$d/$effort.json" ".completed == 6 and
			.settings.reasoning_effort == \"$effort\" and
			.count_ttfr == 6 and .total_reasoning_events == 18 and
			.total_output_tokens == 60 and .total_token_events == 36"
		# each request's TTFR is below its TTFT, so every order
		# statistic is too
		jqt "$d/$effort.json" '.median_ttfr_ms < .median_ttft_ms and
			.p99_ttfr_ms < .p99_ttft_ms and .min_ttfr_ms < .min_ttft_ms'
		[[ $output == *"Median TTFR (ms):"* ]]
	done
	# without it the mini sends none, and the report has no TTFR
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
		--requests 2 --output-tokens 4 --json "$d/none.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$d/none.json" '.count_ttfr == 0 and .total_reasoning_events == 0'
	[[ $output != *"TTFR"* ]]
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/completions \
		--requests 1 --reasoning-effort low
	[ "$status" -eq 2 ]
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
		--requests 1 --reasoning-effort extreme
	[ "$status" -eq 2 ]
}

@test "/v1/messages failing mid-stream (injected at random on a server of its own): an error event is sse_error_event with Anthropic's error, a cut stream is truncated before message_stop" {
	d=$BATS_TEST_TMPDIR
	BASE0=$BASE RUNDIR0=$RUNDIR PORT0=$PORT
	TS_RUNDIR=$d/ts2 ts_start --failure-injection-rate 100 \
		--failure-types midstream_error,midstream_cut --tpot-ms 5
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/messages \
		--model tokstream-sim --concurrency 3 --requests 6 \
		--output-tokens 40 --json "$d/f.json" --quiet
	echo "$output"
	jqt "$d/f.json" '.completed == 0 and .failed == 6 and
		.failures.sse_error_event > 0 and .failures.truncated > 0 and
		.failures.sse_error_event + .failures.truncated == 6'
	[[ $(jq -r '.failure_examples.sse_error_event' "$d/f.json") == *"error event after"*"(type api_error)"* ]]
	[[ $(jq -r '.failure_examples.truncated' "$d/f.json") == *"before event: message_stop"* ]]
}
