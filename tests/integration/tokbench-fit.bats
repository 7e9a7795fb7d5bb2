#!/usr/bin/env bats
# tokbench fit (docs/TOKBENCH.md, "fit"): traces that tokbench record took
# of tokstream's simulator running a known latency profile, at
# concurrency 1, 2 and 4, fitted together; the profile it writes has the
# known parameters back within a loose bound (15%: a timing test on a
# shared machine must not flake; scripts/bench-fit measures the real
# accuracy), says shares_step as the server ran it, and is a profile the
# server loads. A file that is no trace, a trace of another version and a
# trace with too little in it are refused with one line that says why.

load helpers

# record NAME C N: a trace of N requests at concurrency C against $BASE
# (prompts of 16..400 tokens, 8..24 output tokens)
record() {
	"$TOKBENCH" record -o "$BATS_FILE_TMPDIR/$1.trace" --url "$BASE" \
		--endpoint /v1/completions --concurrency "$2" --requests "$3" \
		--prompt-tokens 16:400 --output-tokens 8:24 --seed "$2" \
		--quiet >/dev/null 2>&1
}

# known SHARES: a profile with the parameters below, prefill beside the
# batch (false) or in its step (true); jitter 0.5 ms. The fit here takes
# no --ttft-offset-ms, so the stack's ~1 ms in every TTFT lands in the
# prefill's base: a base of 40 ms keeps that to a few percent.
known() {
	jq -n --argjson sh "$1" '{tokstream_latency_profile: 1,
		name: "fit-test-truth",
		prefill: {base_ms: 40, per_token_ms: 0.2, shares_step: $sh},
		decode: {base_ms: 10, per_seq_ms: 2, per_ctx_token_ms: 0.02},
		jitter: {prefill_ms: {std: 0.5}, decode_ms: {std: 0.5}}}' \
		>"$BATS_FILE_TMPDIR/known-$1.json"
}

# within FILE FIELD WANT: the fitted FIELD within 15% of WANT
within() {
	local got
	got=$(jq ".$2" "$1")
	if ! awk -v g="$got" -v w="$3" 'BEGIN { d = g - w; if (d < 0) d = -d;
		exit !(d <= 0.15 * w) }'; then
		echo "$2: fitted $got, true $3 (more than 15% off)" >&2
		jq -c '.fit.notes' "$1" >&2
		return 1
	fi
}

# fit_known SHARES: records the known profile at 1, 2 and 4 and fits it
fit_known() {
	known "$1"
	ts_start --latency-profile "$BATS_FILE_TMPDIR/known-$1.json" \
		--seed 5
	record "k$1-c1" 1 24
	record "k$1-c2" 2 24
	record "k$1-c4" 4 40
	ts_stop
	run "$TOKBENCH" fit -o "$BATS_FILE_TMPDIR/fit-$1.json" \
		"$BATS_FILE_TMPDIR/k$1-c1.trace" "$BATS_FILE_TMPDIR/k$1-c2.trace" \
		"$BATS_FILE_TMPDIR/k$1-c4.trace"
	echo "$output"
	[ "$status" -eq 0 ]
}

teardown() {
	ts_stop
}

@test "fit of a simulator beside the batch: prefill and decode step back within 15%, shares_step false, residual percentiles in order" {
	fit_known false
	f=$BATS_FILE_TMPDIR/fit-false.json
	[ "$(jq .tokstream_latency_profile "$f")" = 1 ]
	[ "$(jq .prefill.shares_step "$f")" = false ]
	within "$f" prefill.base_ms 40
	within "$f" prefill.per_token_ms 0.2
	within "$f" decode.base_ms 10
	within "$f" decode.per_seq_ms 2
	within "$f" decode.per_ctx_token_ms 0.02
	[ "$(jq .decode.load_factor_max "$f")" = 1 ]
	# the residuals' percentiles, 1 to 99, non-decreasing, both kinds
	for j in prefill_ms decode_ms; do
		jq -e ".jitter.$j.percentiles | [.\"1\", .\"5\", .\"10\",
			.\"25\", .\"50\", .\"75\", .\"90\", .\"95\", .\"99\"] |
			length == 9 and . == sort" "$f" >/dev/null
	done
	# what was observed, and the notes are there
	jq -e '.fit.observations.lone_ttfts >= 20 and
		.fit.steps.rows > 100 and (.fit.notes | length) >= 1' "$f" \
		>/dev/null
}

@test "fit of a simulator whose prefill shares the step: shares_step true, the parameters within 15%, and the server loads the profile it wrote" {
	fit_known true
	f=$BATS_FILE_TMPDIR/fit-true.json
	[ "$(jq .prefill.shares_step "$f")" = true ]
	within "$f" prefill.base_ms 40
	within "$f" prefill.per_token_ms 0.2
	within "$f" decode.base_ms 10
	within "$f" decode.per_ctx_token_ms 0.02
	ts_start --latency-profile "$f"
	p=$(curl -sS "$BASE/v1/models" |
		jq -c '.data[0].tokstream.latency_profile')
	[ "$(jq -r .name <<<"$p")" = "fit of ktrue-c1.trace, ktrue-c2.trace, ktrue-c4.trace" ]
	[ "$(jq -r .prefill.shares_step <<<"$p")" = true ]
	jq -e '.jitter.decode_ms.percentiles["99"] > 0' <<<"$p" >/dev/null
}

@test "tokbench fit refuses what is no trace, another version and a trace too short to fit, with one line that says why (exit 1); no file: usage (exit 2)" {
	d=$BATS_FILE_TMPDIR
	echo '{"type":"request","i":0}' >"$d/nohead.trace"
	run "$TOKBENCH" fit "$d/nohead.trace"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nohead.trace: line 1:"*"header"* ]]
	echo '{"type":"header","tokstream_trace":2}' >"$d/v2.trace"
	run "$TOKBENCH" fit "$d/v2.trace"
	[ "$status" -eq 1 ]
	[[ "$output" == *"2"* ]]
	run "$TOKBENCH" fit "$d/missing.trace"
	[ "$status" -eq 1 ]
	[[ "$output" == *"missing.trace"* ]]
	# a real trace of two short requests: too few decode steps
	ts_start --tpot-ms 2 --prefill-base-ms 0 --prefill-per-token-ms 0
	"$TOKBENCH" record -o "$d/short.trace" --url "$BASE" \
		--endpoint /v1/completions --concurrency 1 --requests 2 \
		--prompt-tokens 16 --output-tokens 3 --quiet >/dev/null 2>&1
	run "$TOKBENCH" fit -o "$d/short.json" "$d/short.trace"
	[ "$status" -eq 1 ]
	[[ "$output" == *"decode steps observed (need 20)"* ]]
	[ ! -s "$d/short.json" ]
	run "$TOKBENCH" fit
	[ "$status" -eq 2 ]
	[[ "$output" == *"give one trace file or more"* ]]
}
