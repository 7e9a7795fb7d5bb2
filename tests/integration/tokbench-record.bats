#!/usr/bin/env bats
# tokbench record (docs/TOKBENCH.md, "Record"): load's workload against a
# server, load's report, and the trace of the run (JSONL, version 1: a
# header, one line per request in start order, the concurrency). Against
# tokstream's endpoints (/v1/chat/completions, /v1/completions,
# /v1/messages, /api/chat, /api/generate, /stream), against a server that
# is not tokstream (tests/node/openai-mini.mjs), a 4xx recorded with its
# body, the memory bound, and the refusals. Every check is of shapes,
# orders and counts; nothing here asserts a duration.

load helpers

setup_file() {
	ts_start --tpot-ms 2 --prefill-base-ms 0 --prefill-per-token-ms 0 \
		--max-num-seqs 64
}

teardown_file() {
	ts_stop
}

teardown() {
	[ -n "${MINI_PID:-}" ] && kill "$MINI_PID" 2>/dev/null || true
}

# start_mini: the tiny OpenAI-style server on a free port; sets MINI
# (load-v1.bats' way)
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

# tq FILE EXPR: the trace's lines, slurped into one array, satisfy the jq
# expression EXPR (prints the failing expression and the lines if not).
# $joined is each request's chunks in order, their bytes joined.
tq() {
	if ! jq -e -s "def joined: [.chunks[][1] | if type == \"string\"
		then . else (.b64 | @base64d) end] | join(\"\");
		def reqs: map(select(.type == \"request\")); $2" "$1" >/dev/null
	then
		echo "not true: $2" >&2
		jq -c '.chunks |= (length | tostring + " chunks") |
			del(.body, .options)' "$1" | head -n 4 >&2
		return 1
	fi
}

# check_trace FILE N C END: what every recorded stream's trace shows: the
# header (version 1) first and the concurrency line last, N request
# lines between them numbered 0.. in start order; each a 200 with one
# Content-Type, chunks non-empty, their t_us non-decreasing, every token
# event at the arrival of a chunk, as many token events as the usage's
# output tokens, no error, the chunks joined a whole stream (END: a jq
# test on joined); the concurrency at most C, back to 0 at the end.
check_trace() {
	local f=$1 n=$2 c=$3 end=$4
	[ "$(wc -l < "$f")" -eq $((n + 2)) ]
	tq "$f" '.[0].type == "header" and .[0].tokstream_trace == 1 and
		.[-1].type == "concurrency"'
	tq "$f" "reqs | length == $n and
		([.[].i] == [range(0; $n)]) and
		([.[].start_us] | . == sort)"
	tq "$f" 'reqs | all(.status == 200 and .error == null and
		([.headers[] | select(.[0] | ascii_downcase == "content-type")]
		 | length == 1) and
		(.chunks | length > 0) and
		([.chunks[][0]] | . == sort) and
		([.token_events[][0]] | . == sort) and
		([.chunks[][0]] as $t | all(.token_events[]; .[0] as $e |
		 $t | index([$e]) != null)) and
		((.token_events | length) == .output_tokens))'
	tq "$f" "reqs | all(joined | $end)"
	tq "$f" ".[-1].samples | length > 0 and .[-1][1] == 0 and
		all(.[]; .[1] >= 0 and .[1] <= $c) and
		([.[][0]] | . == sort)"
}

SSE_DONE='endswith("data: [DONE]\n\n")'

@test "record /v1/chat/completions -c 4 -n 12 --warmup 2: load's report on stdout; a trace of 14 requests (2 warm-up), each its body, 200, headers, chunks that join into the whole SSE stream, token events matching usage, the concurrency back to 0" {
	f=$BATS_TEST_TMPDIR/chat.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" \
		--endpoint /v1/chat/completions --concurrency 4 --requests 12 \
		--output-tokens 8 --ignore-eos --dataset repeat --warmup 2 \
		--quiet
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"Successful requests:                     12"* ]]
	[[ $output == *"Mean TTFT (ms):"* ]]
	check_trace "$f" 14 4 "$SSE_DONE"
	tq "$f" ".[0].tool == \"tokbench record\" and
		.[0].target == \"$BASE\" and
		.[0].endpoint == \"/v1/chat/completions\" and
		.[0].options.model == \"tokstream-sim\" and
		.[0].options.concurrency == 4 and .[0].options.requests == 12"
	# the warm-up first, marked; then the measured requests
	tq "$f" 'reqs | ([.[].warmup] == [true, true] + [range(12) | false])'
	# the body as sent, the path without the base URL, the usage counts
	tq "$f" 'reqs | all(.method == "POST" and
		.path == "/v1/chat/completions" and
		(.body | fromjson | .stream == true and .max_tokens == 8 and
		 .messages[0].role == "user") and
		.output_tokens == 8 and .prompt_tokens > 32 and
		(.cached_tokens | type == "number"))'
	# a request's end is after its last chunk
	tq "$f" 'reqs | all(.end_us >= .chunks[-1][0])'
}

@test "record /v1/completions and /stream: each request's chunks join into an SSE stream ending in data: [DONE]; /stream is a GET whose path has the query, and the counts are tokbench's own" {
	f=$BATS_TEST_TMPDIR/comp.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" \
		--endpoint /v1/completions --concurrency 3 --requests 6 \
		--output-tokens 6 --ignore-eos --dataset repeat --quiet
	[ "$status" -eq 0 ]
	check_trace "$f" 6 3 "$SSE_DONE"
	tq "$f" 'reqs | all((.body | fromjson | .prompt | startswith("hello"))
		and .output_tokens == 6)'

	f=$BATS_TEST_TMPDIR/stream.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" --concurrency 2 \
		--requests 4 --output-tokens 6 --dataset repeat --quiet
	[ "$status" -eq 0 ]
	check_trace "$f" 4 2 "$SSE_DONE"
	tq "$f" 'reqs | all(.method == "GET" and .body == "" and
		(.path | startswith("/stream?prompt=hello+hello")) and
		(.path | contains("max_tokens=6")) and
		.output_tokens == 6 and .prompt_tokens == 32 and
		.cached_tokens == null)'
}

@test "record /v1/messages: Anthropic's named events, the chunks joined end at event: message_stop; the tokens from message_delta's usage" {
	f=$BATS_TEST_TMPDIR/msg.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" \
		--endpoint /v1/messages --concurrency 2 --requests 4 \
		--output-tokens 6 --dataset repeat --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	check_trace "$f" 4 2 \
		'endswith("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")'
	tq "$f" 'reqs | all((joined | startswith("event: message_start\n")) and
		(.body | fromjson | .messages[0].role == "user") and
		(.cached_tokens | type == "number"))'
}

@test "record /api/chat and /api/generate: Ollama's NDJSON, the chunks joined are lines whose last says done:true with eval_count = the token events" {
	for ep in /api/chat /api/generate; do
		f=$BATS_TEST_TMPDIR/ollama${ep//\//_}.jsonl
		run "$TOKBENCH" record -o "$f" --url "$BASE" --endpoint "$ep" \
			--concurrency 2 --requests 4 --output-tokens 6 \
			--dataset repeat --quiet
		echo "$ep: $output"
		[ "$status" -eq 0 ]
		check_trace "$f" 4 2 'endswith("\n") and
			(rtrimstr("\n") | split("\n") | all(fromjson | type == "object")) and
			(rtrimstr("\n") | split("\n") | last | fromjson | .done == true)'
		tq "$f" 'reqs | all((joined | rtrimstr("\n") | split("\n") | last |
			fromjson | .eval_count) == (.token_events | length))'
		tq "$f" 'reqs | all([.headers[] | select(.[0] | ascii_downcase ==
			"content-type") | .[1]] == ["application/x-ndjson"])'
	done
}

@test "record against a server that is not tokstream (openai-mini.mjs): its role-only first chunk is in the chunks but no token event; token events are its deltas, output tokens its usage" {
	need_node
	start_mini
	f=$BATS_TEST_TMPDIR/mini.jsonl
	run "$TOKBENCH" record -o "$f" --url "$MINI" \
		--endpoint /v1/chat/completions --concurrency 2 --requests 3 \
		--output-tokens 7 --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(wc -l < "$f")" -eq 5 ]
	tq "$f" ".[0].target == \"$MINI\" and
		.[0].options.model == \"mini-model\""
	# 7 tokens in 6 deltas (every third delta carries two): 6 token
	# events, usage's 7 output tokens
	tq "$f" 'reqs | all(.status == 200 and .error == null and
		(.token_events | length == 6) and .output_tokens == 7 and
		(joined | endswith("data: [DONE]\n\n")) and
		(joined | contains("\"role\":\"assistant\"")) and
		([.chunks[][0]] | . == sort) and
		(.chunks[0][0] <= .token_events[0][0]) and
		([.headers[] | select(.[0] | ascii_downcase == "content-type")]
		 | length == 1))'
	tq "$f" '.[-1].samples[-1][1] == 0'
}

@test "record a 4xx: an unknown model's 404 is in the trace with its status, headers and JSON error body, no token events, the error text; exit status 1 (nothing measured)" {
	f=$BATS_TEST_TMPDIR/err.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" \
		--endpoint /v1/chat/completions --model no-such-model \
		--requests 2 --quiet
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(wc -l < "$f")" -eq 4 ]
	tq "$f" 'reqs | length == 2 and all(.status == 404 and
		(.token_events | length == 0) and
		(.error | startswith("HTTP 404")) and
		(joined | fromjson | .error.code == "model_not_found") and
		([.headers[] | select(.[0] | ascii_downcase == "content-type") |
		 .[1]] | length == 1 and (.[0] | startswith("application/json"))))'
	tq "$f" '.[-1].samples[-1][1] == 0'
}

@test "record against a port where nothing listens: each request in the trace with status 0, no headers, no chunks, the connect error; exit 1 with load's one line" {
	f=$BATS_TEST_TMPDIR/down.jsonl
	p=$(free_port)
	run "$TOKBENCH" record -o "$f" --url "http://127.0.0.1:$p" \
		--requests 2 --quiet
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"cannot reach http://127.0.0.1:$p"* ]]
	[ "$(wc -l < "$f")" -eq 4 ]
	tq "$f" 'reqs | length == 2 and all(.status == 0 and .method == "GET"
		and (.headers | length == 0) and (.chunks | length == 0) and
		(.token_events | length == 0) and (.error | length > 0))'
	tq "$f" '.[-1].samples[-1][1] == 0'
}

@test "record --record-max-bytes 64K: past the bound the run starts nothing more, cuts the requests in flight and says so in their lines and on stderr, exits 1; the trace is still whole lines, the concurrency back to 0" {
	f=$BATS_TEST_TMPDIR/cut.jsonl
	run "$TOKBENCH" record -o "$f" --url "$BASE" \
		--endpoint /v1/chat/completions --concurrency 2 --requests 50 \
		--output-tokens 1000 --ignore-eos --dataset repeat \
		--record-max-bytes 64K --quiet
	echo "$output"
	[ "$status" -eq 1 ]
	[[ $output == *"more than --record-max-bytes 65536 bytes"* ]]
	n=$(( $(wc -l < "$f") - 2 ))
	[ "$n" -ge 1 ]
	[ "$n" -lt 50 ]
	tq "$f" '.[0].type == "header" and .[-1].type == "concurrency" and
		.[-1].samples[-1][1] == 0'
	tq "$f" 'reqs | any(.error | . != null and
		contains("reached --record-max-bytes"))'
	# what it holds is about the bound: no line is much larger
	tq "$f" 'reqs | all(tojson | length < 4 * 65536)'
}

@test "record's command line: -o is required and not stdout, --record-max-bytes is checked, --help and tokbench --help describe it" {
	run "$TOKBENCH" record --url "$BASE" --requests 1
	[ "$status" -eq 2 ]
	[[ $output == *"give -o TRACE"* ]]
	run "$TOKBENCH" record -o - --url "$BASE" --requests 1
	[ "$status" -eq 2 ]
	run "$TOKBENCH" record -o "$BATS_TEST_TMPDIR/x" --record-max-bytes 12 \
		--url "$BASE" --requests 1
	[ "$status" -eq 2 ]
	[[ $output == *"bad --record-max-bytes '12'"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/x" ]
	# a load option's error is load's usage error
	run "$TOKBENCH" record -o "$BATS_TEST_TMPDIR/x" --concurrency 0 \
		--requests 1
	[ "$status" -eq 2 ]
	run "$TOKBENCH" record --help
	[ "$status" -eq 0 ]
	[[ $output == *"usage: tokbench record -o TRACE"* ]]
	[[ $output == *"--record-max-bytes N"* ]]
	[[ $output == *"--concurrency C"* ]]
	run "$TOKBENCH" --help
	[[ $output == *"  record "* ]]
}
