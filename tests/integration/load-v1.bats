#!/usr/bin/env bats
# tokbench load against OpenAI-compatible servers (--endpoint /v1/...):
# tokstream's own /v1 endpoints give the numbers of its /stream run; a
# tiny OpenAI-style server that is not tokstream (tests/node/openai-mini.mjs:
# a role-only first chunk, deltas of two tokens, a usage chunk, a key)
# shows TTFT at the first content delta, output tokens from the usage
# chunk, the model from GET /v1/models and --api-key.

load helpers

setup_file() {
	heavy_alone
	ts_start --tpot-ms 20 --keepalive-ms 200 --max-num-seqs 128 \
		--prefill-base-ms 0 --prefill-per-token-ms 0
}

teardown_file() {
	ts_stop
}

teardown() {
	[ -n "${MINI_PID:-}" ] && kill "$MINI_PID" 2>/dev/null || true
}

# jqt FILE EXPR: the JSON report must satisfy EXPR (prints it if not).
jqt() {
	if ! jq -e "$2" "$1" >/dev/null; then
		echo "not true: $2" >&2
		jq -c . "$1" >&2
		return 1
	fi
}

# start_mini [KEY]: the tiny server on a free port; sets MINI
start_mini() {
	local p i
	p=$(free_port)
	node "$TS_SRCDIR/tests/node/openai-mini.mjs" "$p" "$@" 2>/dev/null &
	MINI_PID=$!
	MINI=http://127.0.0.1:$p
	for i in $(seq 1 50); do
		curl -s -o /dev/null "$MINI/v1/models" && return 0
		sleep 0.1
	done
	return 1
}

@test "tokbench load --endpoint /v1/chat/completions -c 50 -n 200 against tokstream: TTFT, TPOT, ITL, E2E and goodput, the numbers of a /stream run beside it" {
	d=$BATS_TEST_TMPDIR
	# The /v1 run and the /stream run go at the same moment (100 streams,
	# 128 slots), so whatever else loads this machine loads both alike.
	# The goodput SLOs are ones a paced run meets on a loaded machine too
	# (TTFT 500 ms was missed by 17 of 200 under ASan at load average
	# 9): what goodput counts is load.bats' test; here, that /v1 has it.
	"$TOKBENCH" load --url "$BASE" --concurrency 50 --requests 200 \
		--output-tokens 20 --goodput "ttft:5000 tpot:200" \
		--json "$d/st.json" --quiet >/dev/null &
	st_pid=$!
	# --dataset repeat: the prompt this test was written with, whose
	# 20-token answers spell no character in byte tokens (a random
	# prompt's may: a held byte is a token without a content delta)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/chat/completions \
		--concurrency 50 --requests 200 --output-tokens 20 --ignore-eos \
		--dataset repeat \
		--goodput "ttft:5000 tpot:200" --json "$d/v1.json" --quiet
	st_rc=0
	wait "$st_pid" || st_rc=$?
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$st_rc" -eq 0 ]
	for k in "Mean TTFT (ms):" "Median TPOT (ms):" "P99 ITL (ms):" \
		"Median E2EL (ms):" "Request goodput (req/s):" "Total content deltas:"; do
		[[ $output == *"$k"* ]]
	done
	jqt "$d/v1.json" '.completed == 200 and .failed == 0 and
		.total_output_tokens == 4000 and .total_token_events == 4000 and
		.endpoint == "/v1/chat/completions" and .good_requests == 200'
	# input tokens: the usage chunks' (the chat template's), not the plan
	jqt "$d/v1.json" '.total_input_tokens > 200 * 32'
	jqt "$d/st.json" '.completed == 200 and .total_output_tokens == 4000'
	# the same pacing. Paced by the 20 ms step, never faster: every
	# request's 20th token comes at least 19 steps after it was sent
	# (min E2EL; a late client only sees it later, while its TPOT and
	# ITL can look shorter when the first token is read late and the
	# rest bunch: 13 ms seen). And /v1's TPOT, ITL and
	# TTFT are those of the /stream run beside it, within slack taken
	# from the runs' own spread (p99 - median, the larger of the two):
	# a loaded machine or ASan stretches both runs but not evenly (fixed
	# "20 +- 2 ms, TTFT +- 15 ms" failed under ASan on loaded runs,
	# /v1's TTFT once 43 ms above, once 84 ms below; the /stream run's
	# spread alone failed once in CI's ASan pass). Not the median ITL: a
	# client that reads late sees gaps of 0 between bunched events (a
	# median ITL of 0 was seen under ASan), while TPOT, from the first
	# and last token, is the pace. The medians are printed first.
	jq -n -r --slurpfile a "$d/v1.json" --slurpfile b "$d/st.json" '
		"median TPOT / ITL / TTFT / E2EL ms: /v1 \($a[0].median_tpot_ms) / \($a[0].median_itl_ms) / \($a[0].median_ttft_ms) / \($a[0].median_e2el_ms), /stream \($b[0].median_tpot_ms) / \($b[0].median_itl_ms) / \($b[0].median_ttft_ms) / \($b[0].median_e2el_ms); p99 TPOT /v1 \($a[0].p99_tpot_ms), /stream \($b[0].p99_tpot_ms); p99 TTFT /v1 \($a[0].p99_ttft_ms), /stream \($b[0].p99_ttft_ms); min E2EL /v1 \($a[0].min_e2el_ms), /stream \($b[0].min_e2el_ms)"'
	jq -n -e --slurpfile a "$d/v1.json" --slurpfile b "$d/st.json" '
		($a[0]) as $v | ($b[0]) as $s |
		([$s.p99_tpot_ms - $s.median_tpot_ms,
		  $v.p99_tpot_ms - $v.median_tpot_ms] | max) as $tpot_spread |
		([$s.p99_ttft_ms - $s.median_ttft_ms,
		  $v.p99_ttft_ms - $v.median_ttft_ms] | max) as $ttft_spread |
		$v.min_e2el_ms >= 19 * 19 and $s.min_e2el_ms >= 19 * 19 and
		(($v.median_tpot_ms - $s.median_tpot_ms) | fabs) < 2 + $tpot_spread and
		(($v.median_ttft_ms - $s.median_ttft_ms) | fabs) < 15 + $ttft_spread'
	# and /v1/completions
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--concurrency 10 --requests 20 --output-tokens 10 --ignore-eos \
		--prompt-tokens 8 --json "$d/c.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$d/c.json" '.completed == 20 and .total_output_tokens == 200 and
		.total_input_tokens == 160'
}

@test "against another OpenAI-style server: the model from GET /v1/models, TTFT at the first content delta (not the role chunk), output tokens from the usage chunk, deltas as the cross-check" {
	need_node
	start_mini
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
		--concurrency 5 --requests 10 --output-tokens 10 \
		--json "$d/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"model mini-model"* ]]
	# 10 tokens as 8 deltas (every third carries two); usage says 10
	jqt "$d/m.json" '.completed == 10 and .total_output_tokens == 100 and
		.total_token_events == 80 and .total_input_tokens == 70'
	# the role chunk comes at once, the first content at 100 ms
	jqt "$d/m.json" '.median_ttft_ms >= 99 and .median_ttft_ms < 180'
	jqt "$d/m.json" '.count_itl == 70 and (.median_itl_ms - 20 | fabs) < 5'
	# TPOT divides by the usage count: (E2E - TTFT) / 9, with the last
	# delta at 100 + 7 x 20 ms
	jqt "$d/m.json" '.median_tpot_ms > 14 and .median_tpot_ms < 22'
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/completions \
		--requests 3 --output-tokens 4 --json "$d/c.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$d/c.json" '.completed == 3 and .total_output_tokens == 12 and
		.total_token_events == 9'
}

@test "--api-key: sent as Authorization: Bearer; a wrong key is a 401 failure with the server's message; a /v1 flag (--model) without --endpoint is a usage error" {
	need_node
	start_mini sk-mini-key
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
		--api-key sk-mini-key --requests 2 --output-tokens 3 --json "$d/k.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$d/k.json" '.completed == 2'
	# no key: the model lookup itself is refused, with a way out
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions --requests 1
	[ "$status" -ne 0 ]
	[[ $output == *"HTTP 401"*"--model"* ]]
	run "$TOKBENCH" load --url "$MINI" --endpoint /v1/chat/completions \
		--model mini-model --api-key wrong --requests 2 --json "$d/w.json" --quiet
	jqt "$d/w.json" '.completed == 0 and .failed == 2 and .failures.http_401 == 2 and .failures.http_other == 0'
	[[ $(jq -r '.failure_examples.http_401' "$d/w.json") == *"HTTP 401"*"invalid_api_key"* ]]
	run "$TOKBENCH" load --url "$BASE" --model x --requests 1
	[ "$status" -eq 2 ]
	[[ $output == *"--endpoint"* ]]
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/embeddings --requests 1
	[ "$status" -eq 2 ]
}
