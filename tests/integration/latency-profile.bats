#!/usr/bin/env bats
# Latency profiles (docs/API.md "Latency profiles"): --latency-profile
# FILE|preset:NAME replaces the simulator's latency model; /v1/models and
# the startup log show the profile in use; a knob beside it overrides its
# field; a bad profile, an unknown preset or a profile for the llama
# backend is refused at startup with one line that says why.

load helpers

PROFILE=$TS_SRCDIR/tests/data/profile-slow.json

teardown() {
	ts_stop
}

# profile_of: the latency profile /v1/models shows, compact JSON
profile_of() {
	curl -sS "$BASE/v1/models" | jq -c '.data[0].tokstream.latency_profile'
}

@test "a profile file is the model in use: /v1/models and the startup log show it, and a stream keeps its 100 ms decode steps" {
	ts_start --latency-profile "$PROFILE"
	p=$(profile_of)
	[ "$(jq -r .name <<<"$p")" = slow-test-profile ]
	[ "$(jq -r .decode.base_ms <<<"$p")" = 100 ]
	[ "$(jq -r .decode.per_ctx_token_ms <<<"$p")" = 0.05 ]
	[ "$(jq -r .prefill.per_token_ms <<<"$p")" = 0.4 ]
	[ "$(jq -r '.jitter.decode_ms.percentiles["99"]' <<<"$p")" = 1 ]
	grep -q 'latency profile slow-test-profile' "$RUNDIR/tokstream-fcgi.log"
	grep -q '"per_ctx_token_ms":0.05' "$RUNDIR/tokstream-fcgi.log"
	# 6 tokens: 5 decode steps of at least 99 ms each after the first
	start=$(date +%s%N)
	curl -sSN "$BASE/v1/completions" -H 'Content-Type: application/json' \
		-d '{"model":"tokstream-sim","prompt":"hi","max_tokens":6,"stream":true,"ignore_eos":true}' \
		>"$BATS_TEST_TMPDIR/out"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	grep -q '^data: \[DONE\]' "$BATS_TEST_TMPDIR/out"
	[ "$ms" -ge 495 ] || { echo "took $ms ms"; false; }
}

@test "the default profile is the knobs: named default, TPOT from --tpot-ms" {
	ts_start --tpot-ms 7
	p=$(profile_of)
	[ "$(jq -r .name <<<"$p")" = default ]
	[ "$(jq -r .decode.base_ms <<<"$p")" = 7 ]
	[ "$(jq -r .prefill.shares_step <<<"$p")" = false ]
}

@test "a knob given beside a profile overrides its field; the rest stays the profile's" {
	ts_start --latency-profile "$PROFILE" --tpot-ms 9
	p=$(profile_of)
	[ "$(jq -r .decode.base_ms <<<"$p")" = 9 ]
	[ "$(jq -r .decode.per_ctx_token_ms <<<"$p")" = 0.05 ]
	[ "$(jq -r .name <<<"$p")" = slow-test-profile ]
}

@test "preset:llama-3.1-8b-h100 is the documented arithmetic: 16.06 GB / (0.8 x 3.35 TB/s) a step, prefill in the step" {
	ts_start --latency-profile preset:llama-3.1-8b-h100
	p=$(profile_of)
	[ "$(jq -r .name <<<"$p")" = preset:llama-3.1-8b-h100 ]
	[ "$(jq -r '.decode.base_ms * 1000 | round' <<<"$p")" = 5993 ]
	[ "$(jq -r '.prefill.per_token_ms * 100000 | round' <<<"$p")" = 3248 ]
	[ "$(jq -r .prefill.shares_step <<<"$p")" = true ]
}

@test "tokstream-fcgi refuses a bad profile, an unknown preset and a profile for the llama backend, naming why (exit 2), and tokstream-ctl start shows that line" {
	f=$BATS_TEST_TMPDIR/p.json
	echo '{"tokstream_latency_profile":1,"prefill":{},"decode":{"base_ms":-4}}' >"$f"
	run "$TS_BUILDDIR/src/tokstream-fcgi" --latency-profile "$f"
	[ "$status" -eq 2 ]
	[[ "$output" == *"decode.base_ms is -4"* ]]
	echo '{"tokstream_latency_profile":3}' >"$f"
	run "$TS_BUILDDIR/src/tokstream-fcgi" --latency-profile "$f"
	[ "$status" -eq 2 ]
	[[ "$output" == *"version 3"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --latency-profile "$BATS_TEST_TMPDIR/none.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"No such file"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --latency-profile preset:nope
	[ "$status" -eq 2 ]
	[[ "$output" == *"no latency profile preset 'nope'"*"llama-3.1-8b-h100"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama --model /nonexistent --latency-profile "$PROFILE"
	[ "$status" -eq 2 ]
	[[ "$output" == *"latency-profile"* ]]
	# through tokstream-ctl, the responder's own line is shown (spawn-fcgi
	# sends its stderr nowhere; --log gets it first)
	echo '{"tokstream_latency_profile":1,"decode":{"base_ms":-4}}' >"$f"
	chmod a+rx "$BATS_TEST_TMPDIR"; chmod a+r "$f"
	p=$(free_port)
	run env TOKSTREAM_PORT="$p" TOKSTREAM_RUNDIR="$BATS_TEST_TMPDIR/rd" \
		TOKSTREAM_BINDIR="$TS_BUILDDIR/src" \
		TOKSTREAM_SITECONF="$TS_SRCDIR/etc/tokstream-site.conf" \
		TOKSTREAM_FCGI_ARGS="--latency-profile $f" "$CTL" start
	TOKSTREAM_PORT="$p" TOKSTREAM_RUNDIR="$BATS_TEST_TMPDIR/rd" "$CTL" stop \
		>/dev/null 2>&1 || true
	[ "$status" -ne 0 ]
	[[ "$output" == *"tokstream-fcgi: --latency-profile $f: latency profile: decode.base_ms is -4"* ]]
}
