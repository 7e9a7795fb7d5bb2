#!/usr/bin/env bats
# GET /metrics in vLLM's dialect (--metrics-prefix vllm; docs/API.md
# "vLLM's metrics"): every metric vLLM's published Grafana dashboard
# queries is there with vLLM's name and type and the model_name label,
# every series carries model_name, the text passes tests/promcheck and
# promtool; and the counts move as requests run: num_requests_running
# during a stream, request_success_total{finished_reason="length"} and the
# request histograms after it, "abort" after a client that left. The
# default dialect stays tokstream's (metrics.bats, promcheck.bats).

load helpers

MODEL=tokstream-sim

setup_file() {
	ts_start --metrics-prefix vllm --max-num-seqs 4 --keepalive-ms 300
}

teardown_file() {
	ts_stop
}

teardown() {
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
}

# The metrics vLLM's Grafana dashboard queries, name and type: every
# "vllm:..." of its panels' "expr" fields, in
# examples/observability/prometheus_grafana/grafana.json of
# vllm-project/vllm at commit 4b5c627c23e6690b8987100d1cbf78e34ac14bf9
# (before, examples/online_serving/prometheus_grafana/grafana.json), and
# request_time_per_output_token_seconds of its "Time Per Output Token
# (TPOT)" panel in the version docs.vllm.ai/en/latest publishes
# (examples/observability/prometheus_grafana, 2026-09-23). The Gateway
# API Inference Extension's endpoint picker reads three of them
# (docs/proposals/003-model-server-protocol: num_requests_waiting,
# num_requests_running, kv_cache_usage_perc).
DASHBOARD_METRICS="
e2e_request_latency_seconds histogram
prompt_tokens_total counter
generation_tokens_total counter
inter_token_latency_seconds histogram
request_time_per_output_token_seconds histogram
num_requests_running gauge
num_requests_waiting gauge
time_to_first_token_seconds histogram
kv_cache_usage_perc gauge
request_prompt_tokens histogram
request_generation_tokens histogram
request_success_total counter
request_queue_time_seconds histogram
request_prefill_time_seconds histogram
request_decode_time_seconds histogram
request_max_num_generation_tokens histogram
"

scrape() {
	curl -sf "$BASE/metrics" >"$BATS_TEST_TMPDIR/m"
}

# metric NAME: the value of one sample line (name with labels, exact)
metric() {
	awk -v n="$1" '$1 == n { print $2 }' "$BATS_TEST_TMPDIR/m"
}

# m NAME [LABELS]: metric of vllm:NAME{model_name="...",LABELS}
m() {
	metric "vllm:$1{model_name=\"$MODEL\"${2:+,$2}}"
}

@test "--metrics-prefix vllm: every metric of vLLM's dashboard, with its type and model_name; every series has model_name" {
	# one request first, so every histogram has an observation
	curl -sf -d '{"model":"tokstream-sim","prompt":"hi","max_tokens":3,"stream":true,"prefill_ms":0,"tpot_ms":1}' \
		"$BASE/v1/completions" >/dev/null
	scrape
	n=0
	while read -r name type; do
		[ -n "$name" ] || continue
		n=$((n + 1))
		grep -qx "# TYPE vllm:$name $type" "$BATS_TEST_TMPDIR/m" ||
			{ echo "no '# TYPE vllm:$name $type'"; return 1; }
		case $type in
		histogram) sfx="_bucket _sum _count" ;;
		*) sfx="" ;;
		esac
		for s in ${sfx:-""}; do
			grep -Eq "^vllm:$name$s\{model_name=\"$MODEL\"[,}]" "$BATS_TEST_TMPDIR/m" ||
				{ echo "no vllm:$name$s{model_name=\"$MODEL\"...}"; return 1; }
		done
	done <<<"$DASHBOARD_METRICS"
	[ "$n" = 16 ]
	# every sample line carries the label, and nothing is tokstream:
	samples=$(grep -vc '^#' "$BATS_TEST_TMPDIR/m")
	labelled=$(grep -c "^vllm:[a-z0-9_]*{model_name=\"$MODEL\"[,}]" "$BATS_TEST_TMPDIR/m")
	echo "samples $samples, with model_name $labelled"
	[ "$samples" -gt 100 ]
	[ "$samples" = "$labelled" ]
	[ -z "$(grep '^tokstream:' "$BATS_TEST_TMPDIR/m")" ]
	# request_success_total has vLLM's finish reasons
	for r in stop length abort; do
		[ -n "$(m request_success_total "finished_reason=\"$r\"")" ]
	done
	# kv_cache_usage_perc is a fraction
	holds "$(m kv_cache_usage_perc) >= 0 && $(m kv_cache_usage_perc) <= 1"
}

@test "the vllm dialect passes tests/promcheck and promtool check metrics (but for its lint of vLLM's ':' names)" {
	curl -sf -d '{"model":"tokstream-sim","prompt":"hi","max_tokens":2,"prefill_ms":0,"tpot_ms":1}' \
		"$BASE/v1/completions" >/dev/null
	scrape
	run "$TS_BUILDDIR/tests/promcheck" "$BATS_TEST_TMPDIR/m"
	echo "$output"
	[ "$status" -eq 0 ]
	need_command promtool prometheus
	run bash -c 'promtool check metrics <"$1" 2>&1' _ "$BATS_TEST_TMPDIR/m"
	echo "$output"
	# promtool lints every name with a colon, vLLM's own included; any
	# other finding fails
	[ -z "$(grep -v "metric names should not contain ':'" <<<"$output")" ]
}

@test "counts move: num_requests_running during a stream, request_success_total{length} and the request histograms after it, abort after a client that left" {
	scrape
	len0=$(m request_success_total 'finished_reason="length"')
	abort0=$(m request_success_total 'finished_reason="abort"')
	gen0=$(m request_generation_tokens_count)
	gsum0=$(m request_generation_tokens_sum)
	psum0=$(m request_prompt_tokens_sum)
	tok0=$(m generation_tokens_total)
	tpot0=$(m request_time_per_output_token_seconds_count)
	# a stream of 30 tokens at 100 ms: running while it streams
	curl -sN -d '{"model":"tokstream-sim","prompt":"count me","max_tokens":30,"stream":true,"stream_options":{"include_usage":true},"prefill_ms":0,"tpot_ms":100}' \
		"$BASE/v1/completions" >"$BATS_TEST_TMPDIR/s" &
	BG_PID=$!
	running=0
	for i in $(seq 1 100); do
		scrape
		running=$(m num_requests_running)
		[ "$running" -ge 1 ] && break
		sleep 0.05
	done
	echo "running during the stream: $running"
	[ "$running" -ge 1 ]
	wait "$BG_PID"
	BG_PID=
	grep -q '^data: \[DONE\]' "$BATS_TEST_TMPDIR/s"
	prompt=$(grep '"usage":{' "$BATS_TEST_TMPDIR/s" | sed 's/^data: //' | jq .usage.prompt_tokens)
	for i in $(seq 1 100); do
		scrape
		[ "$(m request_success_total 'finished_reason="length"')" -gt "$len0" ] && break
		sleep 0.05
	done
	[ "$(m request_success_total 'finished_reason="length"')" = $((len0 + 1)) ]
	[ "$(m request_generation_tokens_count)" = $((gen0 + 1)) ]
	holds "$(m request_generation_tokens_sum) == $gsum0 + 30"
	holds "$(m request_prompt_tokens_sum) == $psum0 + $prompt"
	[ "$(m generation_tokens_total)" = $((tok0 + 30)) ]
	[ "$(m request_time_per_output_token_seconds_count)" = $((tpot0 + 1)) ]
	[ "$(m num_requests_running)" = 0 ]
	# a client that leaves mid-stream: finished_reason="abort"
	timeout 1 curl -sN -d '{"model":"tokstream-sim","prompt":"leave","max_tokens":200,"stream":true,"prefill_ms":0,"tpot_ms":50}' \
		"$BASE/v1/completions" >/dev/null || true
	for i in $(seq 1 200); do
		scrape
		[ "$(m request_success_total 'finished_reason="abort"')" -gt "$abort0" ] && break
		sleep 0.05
	done
	[ "$(m request_success_total 'finished_reason="abort"')" = $((abort0 + 1)) ]
	[ "$(m num_requests_running)" = 0 ]
}

@test "--metrics-prefix takes tokstream or vllm only" {
	run "$TS_BUILDDIR/src/tokstream-fcgi" --metrics-prefix prom --help
	[ "$status" -eq 2 ]
	[[ "$output" == *"--metrics-prefix is tokstream or vllm"* ]]
}

# yaml_block N: the Nth ```yaml block of OPERATIONS.md's "vLLM's metric
# names" section
yaml_block() {
	awk -v want="$1" '
		/^## / { in_sec = ($0 == "## vLLM'"'"'s metric names") }
		in_sec && /^```yaml$/ { n++; if (n == want) { on = 1; next } }
		on && /^```$/ { exit }
		on { print }
	' "$TS_SRCDIR/docs/OPERATIONS.md"
}

@test "OPERATIONS.md's relabel config and recording rules pass promtool" {
	need_command promtool prometheus
	yaml_block 1 >"$BATS_TEST_TMPDIR/prometheus.yml"
	yaml_block 2 >"$BATS_TEST_TMPDIR/rules.yml"
	grep -q 'replacement: "vllm:$1"' "$BATS_TEST_TMPDIR/prometheus.yml"
	grep -q 'record: vllm:time_per_output_token_seconds_bucket' "$BATS_TEST_TMPDIR/rules.yml"
	run promtool check config --syntax-only "$BATS_TEST_TMPDIR/prometheus.yml"
	echo "$output"
	[ "$status" -eq 0 ]
	run promtool check rules "$BATS_TEST_TMPDIR/rules.yml"
	echo "$output"
	[ "$status" -eq 0 ]
}
