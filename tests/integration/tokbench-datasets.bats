#!/usr/bin/env bats
# tokbench load's workloads (docs/TOKBENCH.md, "Workloads"), after vllm
# bench serve's: --dataset random (the default: each request its own
# words, so the server's prefix cache hits nothing) and its shared
# --random-prefix-len, --dataset sharegpt and jsonl files, --warmup left
# out of the numbers, --save-detailed's per-request arrays, vLLM's
# --percentile-metrics and --metric-percentiles, --burstiness and the
# ramp-up, prompts over 4,000 tokens on the POST endpoints, and the
# refusals of bad options and files. The server's own counters
# (/metrics) say what it saw; nothing here asserts a duration.

load helpers

setup_file() {
	# the default prefix cache (65536 blocks of 16 tokens); no modeled
	# prefill, so that runs are short whatever the prompts
	ts_start --tpot-ms 2 --prefill-base-ms 0 --prefill-per-token-ms 0 \
		--max-num-seqs 64
}

teardown_file() {
	ts_stop
}

# jqt FILE EXPR: the JSON report must satisfy EXPR (prints it if not).
jqt() {
	if ! jq -e "$2" "$1" >/dev/null; then
		echo "not true: $2" >&2
		jq -c . "$1" >&2
		return 1
	fi
}

# metric NAME: the value of the unlabelled (model_name only) series NAME
# of /metrics, summed over its other labels
metric() {
	curl -s "$BASE/metrics" | unlabel_model |
		awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 }
			END { printf "%d\n", s }'
}

SHAREGPT=$TS_SRCDIR/tests/data/sharegpt-small.json

@test "--dataset random (the default): 40 prompts of 64 tokens, no prefix cache hit; --dataset repeat, the old prompt, hits on every request after the first" {
	d=$BATS_TEST_TMPDIR
	q0=$(metric tokstream:prefix_cache_queries_total)
	h0=$(metric tokstream:prefix_cache_hits_total)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--concurrency 4 --requests 40 --prompt-tokens 64 \
		--output-tokens 2 --seed 5 --json "$d/r.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$d/r.json" '.completed == 40 and .total_input_tokens == 2560 and
		.settings.dataset == "random"'
	q1=$(metric tokstream:prefix_cache_queries_total)
	h1=$(metric tokstream:prefix_cache_hits_total)
	echo "random: queries +$((q1 - q0)), hits +$((h1 - h0))"
	[ "$((q1 - q0))" -eq 2560 ]
	[ "$((h1 - h0))" -eq 0 ]
	# the same seed again: the same 40 prompts, now all cached but
	# their last block (each 64-token prompt hits its first 3 blocks)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--concurrency 4 --requests 40 --prompt-tokens 64 \
		--output-tokens 2 --seed 5 --quiet
	[ "$status" -eq 0 ]
	h2=$(metric tokstream:prefix_cache_hits_total)
	echo "random, same seed again: hits +$((h2 - h1))"
	[ "$((h2 - h1))" -eq $((40 * 48)) ]
	# the old prompt: "hello" 64 times, the same for all
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--concurrency 1 --requests 10 --prompt-tokens 64 \
		--output-tokens 2 --dataset repeat --seed 5 --quiet
	[ "$status" -eq 0 ]
	h3=$(metric tokstream:prefix_cache_hits_total)
	echo "repeat: hits +$((h3 - h2))"
	[ "$((h3 - h2))" -ge $((9 * 48)) ]
}

@test "--random-prefix-len 64: every prompt after the first hits the shared prefix's 4 blocks, and nothing more" {
	h0=$(metric tokstream:prefix_cache_hits_total)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--concurrency 1 --requests 10 --prompt-tokens 40 \
		--random-prefix-len 64 --output-tokens 2 --seed 6 \
		--json "$BATS_TEST_TMPDIR/p.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$BATS_TEST_TMPDIR/p.json" '.completed == 10 and
		.total_input_tokens == 1040 and
		.settings.random_prefix_len == 64'
	h1=$(metric tokstream:prefix_cache_hits_total)
	echo "prefix 64: hits +$((h1 - h0))"
	[ "$((h1 - h0))" -eq $((9 * 64)) ]
}

@test "--dataset sharegpt FILE: the first turns as prompts, the replies' lengths (4 bytes a token) as max_tokens, vLLM's filter dropping 3 entries; --output-tokens overrides the lengths" {
	d=$BATS_TEST_TMPDIR
	h0=$(metric tokstream:prefix_cache_hits_total)
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--dataset sharegpt "$SHAREGPT" --concurrency 4 --requests 12 \
		--ignore-eos --save-detailed --json "$d/s.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$d/s.json" '.completed == 12 and .dataset_entries == 12 and
		.dataset_skipped == 3 and .settings.dataset == "sharegpt"'
	# the output lengths the server generated (--ignore-eos: all of
	# max_tokens) are the kept replies' lengths, each entry once
	want=$(jq -c '[.[] | select((.conversations | length) >= 2) |
		(.conversations[0].value | length) as $p |
		(.conversations[1].value | length) as $r |
		select((($p + 3) / 4 | floor) >= 4 and (($r + 3) / 4 | floor) >= 4) |
		(($r + 3) / 4 | floor)] | sort' "$SHAREGPT")
	got=$(jq -c '.output_lens | sort' "$d/s.json")
	echo "want $want got $got"
	[ "$want" = "$got" ]
	jqt "$d/s.json" '[.input_lens[] | select(. >= 8)] | length == 12'
	# 12 distinct prompts, the first time: no two alike, no hit
	h1=$(metric tokstream:prefix_cache_hits_total)
	[ "$((h1 - h0))" -eq 0 ]
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--dataset sharegpt "$SHAREGPT" --concurrency 1 --requests 12 \
		--seed 1 --output-tokens 3 --ignore-eos --json "$d/s3.json" \
		--quiet
	[ "$status" -eq 0 ]
	jqt "$d/s3.json" '.completed == 12 and .total_output_tokens == 36'
	h2=$(metric tokstream:prefix_cache_hits_total)
	q=$(jq '.total_input_tokens' "$d/s3.json")
	echo "sharegpt, a second pass of the same 12: hits +$((h2 - h1)) of $q"
	# a second pass of the same prompts hits their full blocks
	[ "$((h2 - h1))" -gt 0 ]
}

@test "--dataset jsonl FILE: prompt lines on /v1/completions, messages lines on /v1/chat/completions, each line's output_tokens sent" {
	d=$BATS_TEST_TMPDIR
	cat >"$d/p.jsonl" <<'EOF'
{"prompt": "the first prompt of the file", "output_tokens": 3}

{"prompt": "a second prompt, with no length of its own"}
{"prompt": "the third one", "output_tokens": 5, "id": "ignored"}
EOF
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--dataset jsonl "$d/p.jsonl" --concurrency 1 --requests 6 \
		--output-tokens 7 --ignore-eos --save-detailed \
		--json "$d/j.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	# --output-tokens given: it overrides every line's
	jqt "$d/j.json" '.completed == 6 and ([.output_lens[] | select(. == 7)] | length) == 6'
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--dataset jsonl "$d/p.jsonl" --concurrency 1 --requests 6 \
		--ignore-eos --save-detailed --json "$d/j2.json" --quiet
	[ "$status" -eq 0 ]
	# each line twice: 3, 64 (the default) and 5
	jqt "$d/j2.json" '(.output_lens | sort) == [3, 3, 5, 5, 64, 64] and
		.dataset_entries == 3'
	cat >"$d/m.jsonl" <<'EOF'
{"messages": [{"role": "system", "content": "answer briefly"}, {"role": "user", "content": "what is a token"}], "output_tokens": 4}
{"messages": [{"role": "user", "content": "and a decode step"}], "output_tokens": 6}
EOF
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/chat/completions \
		--dataset jsonl "$d/m.jsonl" --concurrency 2 --requests 4 \
		--ignore-eos --save-detailed --json "$d/m.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$d/m.json" '(.output_lens | sort) == [4, 4, 6, 6]'
	# the system message went too: its prompt is the longer one
	jqt "$d/m.json" '(.input_lens | unique | length) == 2'
}

@test "malformed dataset files and bad workload options: exit 2 with the reason (a JSONL fault names its line)" {
	d=$BATS_TEST_TMPDIR
	printf '{"prompt": "fine"}\n\n{"prompt": "no end"\n' >"$d/bad.jsonl"
	run "$TOKBENCH" load --url "$BASE" --dataset jsonl "$d/bad.jsonl" -n 1
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.jsonl:3: not JSON"* ]]
	printf '{"prompt": "a"}\n{"prompt": "b", "output_tokens": 0}\n' >"$d/zero.jsonl"
	run "$TOKBENCH" load --url "$BASE" --dataset jsonl "$d/zero.jsonl" -n 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"zero.jsonl:2: \"output_tokens\""* ]]
	printf '{"messages": [{"role": "user", "content": "x"}]}\n' >"$d/m.jsonl"
	run "$TOKBENCH" load --url "$BASE" --dataset jsonl "$d/m.jsonl" -n 1 \
		--endpoint /v1/completions
	[ "$status" -eq 2 ]
	[[ "$output" == *"m.jsonl:1: \"messages\" is for"* ]]
	printf '{"conversations": 3' >"$d/bad.json"
	run "$TOKBENCH" load --url "$BASE" --dataset sharegpt "$d/bad.json" -n 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.json:1: not JSON"* ]]
	run "$TOKBENCH" load --url "$BASE" --dataset sharegpt "$d/none.json" -n 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot open"*"none.json"* ]]
	run "$TOKBENCH" load --url "$BASE" --dataset sharegpt -n 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs a FILE"* ]]
	for bad in "--dataset words" "--burstiness 0 --rate 5" \
		"--burstiness 2" "--ramp-up-strategy linear" \
		"--ramp-up-strategy linear --ramp-up-start-rps 9 --ramp-up-end-rps 3" \
		"--ramp-up-strategy exponential --ramp-up-start-rps 0 --ramp-up-end-rps 3" \
		"--ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 3 --rate 2" \
		"--percentile-metrics ttft,latency" "--metric-percentiles 0" \
		"--metric-percentiles 99,101" "--warmup -1" \
		"--random-prefix-len 8 --dataset repeat" \
		"--prompt-tokens 4001" "--prompt-tokens 3990 --random-prefix-len 20" \
		"--endpoint /v1/completions --prompt-tokens 131073" \
		"--dataset sharegpt $SHAREGPT --prompt-tokens 8"; do
		run "$TOKBENCH" load --url "$BASE" -n 1 $bad
		echo "$bad -> $status: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"tokbench load: "* ]]
	done
}

@test "--warmup 3: the 3 run first and are left out of every count; the server saw 3 more" {
	d=$BATS_TEST_TMPDIR
	s0=$(metric tokstream:request_success_total)
	run "$TOKBENCH" load --url "$BASE" --concurrency 2 --requests 5 \
		--warmup 3 --output-tokens 4 --save-detailed \
		--json "$d/w.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	s1=$(metric tokstream:request_success_total)
	echo "server: +$((s1 - s0)) requests"
	[ "$((s1 - s0))" -eq 8 ]
	jqt "$d/w.json" '.started == 5 and .completed == 5 and
		.warmup_completed == 3 and .warmup_failed == 0 and
		.count_ttft == 5 and .count_e2el == 5 and
		.total_output_tokens == 20 and (.ttfts | length) == 5 and
		.settings.warmup == 3'
	# the same run without a warm-up: the server sees 5
	run "$TOKBENCH" load --url "$BASE" --concurrency 2 --requests 5 \
		--output-tokens 4 --quiet
	[ "$status" -eq 0 ]
	[ "$(( $(metric tokstream:request_success_total) - s1 ))" -eq 5 ]
}

@test "--save-detailed: vLLM's input_lens, output_lens, ttfts, itls (seconds) and errors, one entry a request; a failure's error named" {
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$BASE" --concurrency 3 --requests 9 \
		--prompt-tokens 10:20 --output-tokens 3:8 --seed 4 \
		--save-detailed --json "$d/x.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$d/x.json" '([.input_lens, .output_lens, .ttfts, .itls, .errors]
		| map(length) | unique) == [9]'
	jqt "$d/x.json" '[range(9) as $i | (.itls[$i] | length) ==
		.output_lens[$i] - 1] | all'
	jqt "$d/x.json" '(.input_lens | map(. >= 10 and . <= 20) | all) and
		(.output_lens | map(. >= 3 and . <= 8) | all) and
		(.ttfts | map(. > 0) | all) and (.errors | unique) == [""]'
	jqt "$d/x.json" '([.output_lens[]] | add) == .total_output_tokens'
	# ttfts are seconds, the report's ms
	jqt "$d/x.json" '((.ttfts | max) * 1000 - .max_ttft_ms | fabs) < 0.001'
	# without the flag: no arrays
	run "$TOKBENCH" load --url "$BASE" --requests 2 --json "$d/n.json" --quiet
	jqt "$d/n.json" 'has("ttfts") | not'
	# every request a 404 (no such model): the errors say so
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--model no-such-model --requests 2 --save-detailed \
		--json "$d/f.json" --quiet
	[ "$status" -eq 1 ]
	jqt "$d/f.json" '.failed == 2 and (.errors | map(startswith("HTTP 404")) | all) and
		.output_lens == [0, 0]'
}

@test "--percentile-metrics and --metric-percentiles: vLLM's p<P>_<metric>_ms keys and P<P> lines, for the metrics named only" {
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$BASE" --concurrency 2 --requests 10 \
		--output-tokens 5 --percentile-metrics ttft,e2el \
		--metric-percentiles 50,99.9 --json "$d/p.json"
	echo "$output"
	[ "$status" -eq 0 ]
	for k in "P50 TTFT (ms):" "P99.9 TTFT (ms):" "P50 E2EL (ms):" \
		"P99.9 E2EL (ms):"; do
		[[ "$output" == *"$k"* ]]
	done
	[[ "$output" != *"Inter-token Latency"* ]]
	[[ "$output" != *"P90 TTFT"* ]]
	jqt "$d/p.json" '.p50_ttft_ms > 0 and ."p99.9_ttft_ms" >= .p50_ttft_ms
		and ."p99.9_e2el_ms" >= .p50_e2el_ms and (has("p50_itl_ms") | not)
		and .settings.metric_percentiles == [50, 99.9]'
	# the median by the same nearest rank as the report's
	jqt "$d/p.json" '.p50_ttft_ms == .median_ttft_ms'
	# --percentile-metrics alone: vLLM's default percentile, 99
	run "$TOKBENCH" load --url "$BASE" --requests 3 --output-tokens 3 \
		--percentile-metrics itl
	[ "$status" -eq 0 ]
	[[ "$output" == *"P99 ITL (ms):"* ]]
	[[ "$output" != *"Time to First Token"* ]]
}

@test "--burstiness 0.5 and a linear ramp-up: open loops that start every request; the settings in the report" {
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$BASE" --rate 200 --burstiness 0.5 \
		--requests 30 --output-tokens 3 --seed 2 --json "$d/b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"open loop, gamma 200 req/s"* ]]
	[[ "$output" == *"Gamma distribution"* ]]
	jqt "$d/b.json" '.completed == 30 and .settings.burstiness == 0.5 and
		.settings.traffic == "open"'
	run "$TOKBENCH" load --url "$BASE" --ramp-up-strategy linear \
		--ramp-up-start-rps 50 --ramp-up-end-rps 400 --requests 30 \
		--max-concurrency 8 --output-tokens 3 --json "$d/l.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"linear ramp-up 50 to 400 req/s"* ]]
	jqt "$d/l.json" '.completed == 30 and .max_concurrent_requests <= 8 and
		.settings.ramp_up_strategy == "linear" and
		.settings.ramp_up_start_rps == 50 and .settings.ramp_up_end_rps == 400'
	run "$TOKBENCH" load --url "$BASE" --ramp-up-strategy exponential \
		--ramp-up-start-rps 20 --ramp-up-end-rps 320 --requests 20 \
		--output-tokens 2 --burstiness 4 --json "$d/e.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$d/e.json" '.completed == 20 and .settings.ramp_up_strategy == "exponential"'
}

@test "the POST endpoints take prompts over 4,000 tokens: 6,000 random words are 6,000 prompt tokens; /stream keeps its 4,000" {
	run "$TOKBENCH" load --url "$BASE" --endpoint /v1/completions \
		--prompt-tokens 6000 --requests 2 --output-tokens 2 \
		--json "$BATS_TEST_TMPDIR/big.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jqt "$BATS_TEST_TMPDIR/big.json" '.completed == 2 and .total_input_tokens == 12000'
	# /stream: 4,000 random words fit its URI, and the server counts
	# 4,000 prompt tokens
	p0=$(metric tokstream:prompt_tokens_total)
	run "$TOKBENCH" load --url "$BASE" --prompt-tokens 4000 --requests 1 \
		--output-tokens 2 --json "$BATS_TEST_TMPDIR/s.json" --quiet
	[ "$status" -eq 0 ]
	jqt "$BATS_TEST_TMPDIR/s.json" '.completed == 1'
	[ "$(( $(metric tokstream:prompt_tokens_total) - p0 ))" -eq 4000 ]
}
