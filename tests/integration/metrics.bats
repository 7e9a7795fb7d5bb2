#!/usr/bin/env bats
# GET /metrics (Prometheus text format) over two responder processes: it
# parses, its counters agree with the per-request counts after a mixed
# load with abandonment and refusals, and its gauges sum both processes.

load helpers

setup_file() {
	TS_PROCS=2 ts_start --max-num-seqs 4 --max-waiting 4 --keepalive-ms 300
}

teardown_file() {
	ts_stop
}

# metric NAME: the value of one sample line (name with labels, exact)
metric() {
	unlabel_model <"$BATS_TEST_TMPDIR/m" | awk -v n="$1" '$1 == n { print $2 }'
}

scrape() {
	curl -sf -D "$BATS_TEST_TMPDIR/m.h" "$BASE/metrics" >"$BATS_TEST_TMPDIR/m"
}

# in_flight N: the last scrape shows N requests running or waiting
in_flight() {
	[ "$(($(metric tokstream:num_requests_running) +
		$(metric tokstream:num_requests_waiting)))" -eq "$1" ]
}

# placed REJ0 N: the last scrape accounts for N requests since the one
# that read REJ0 queue_full refusals: each running, waiting or refused
placed() {
	[ "$(($(metric 'tokstream:requests_rejected_total{reason="queue_full"}')
		- $1 + $(metric tokstream:num_requests_running) +
		$(metric tokstream:num_requests_waiting)))" -eq "$2" ]
}

# until_scraped CMD...: scrapes /metrics until CMD holds of the scrape
# (every 50 ms, 20 s at most): the state the server reaches, waited for
# rather than slept for, so a loaded machine only makes it later. Fails
# with the gauges it last saw.
until_scraped() {
	local i
	for i in $(seq 1 400); do
		scrape && "$@" && return 0
		sleep 0.05
	done
	echo "not reached: $*; running" \
	     "$(metric tokstream:num_requests_running) waiting" \
	     "$(metric tokstream:num_requests_waiting)" >&2
	return 1
}

@test "/metrics is Prometheus text that promcheck accepts, with the vLLM-style names and model_name on every series" {
	curl -s "$BASE/stream?prompt=hello&max_tokens=3" >/dev/null
	scrape
	"$TS_BUILDDIR/tests/promcheck" "$BATS_TEST_TMPDIR/m"
	header_of "$BATS_TEST_TMPDIR/m.h" Content-Type | grep -q '^text/plain; version=0.0.4'
	for n in time_to_first_token_seconds inter_token_latency_seconds \
		e2e_request_latency_seconds request_queue_time_seconds; do
		grep -q "^# TYPE tokstream:$n histogram" "$BATS_TEST_TMPDIR/m"
	done
	for n in num_requests_running num_requests_waiting; do
		grep -q "^# TYPE tokstream:$n gauge" "$BATS_TEST_TMPDIR/m"
	done
	for n in generation_tokens_total wasted_tokens_total \
		request_success_total; do
		grep -q "^# TYPE tokstream:$n counter" "$BATS_TEST_TMPDIR/m"
	done
	[ "$(metric tokstream:responder_processes)" -eq 2 ]
	# every sample line carries vLLM's model_name label, the served
	# model's first name (docs/API.md "GET /metrics")
	samples=$(grep -vc '^#' "$BATS_TEST_TMPDIR/m")
	labelled=$(grep -c '^tokstream:[a-z0-9_]*{model_name="tokstream-sim"[,}]' "$BATS_TEST_TMPDIR/m")
	echo "samples $samples, with model_name $labelled"
	[ "$samples" -gt 50 ]
	[ "$samples" = "$labelled" ]
}

@test "gauges sum both processes while 8 streams run or wait" {
	# streams of 100 s (1000 tokens at 100 ms): none can end before the
	# last has arrived, however slowly a loaded machine starts them;
	# their clients leave once the gauges have been read
	pids=()
	for n in $(seq 1 8); do
		curl -s "$BASE/stream?prompt=g$n&max_tokens=1000&tpot_ms=100" \
			>/dev/null &
		pids+=($!)
	done
	# all 8 in, in the gauges both processes' counts sum to
	until_scraped in_flight 8
	r=$(metric tokstream:num_requests_running)
	w=$(metric tokstream:num_requests_waiting)
	echo "running $r waiting $w"
	[ $((r + w)) -eq 8 ]
	[ "$r" -ge 4 ]
	kill "${pids[@]}"
	wait
	until_scraped in_flight 0
	[ "$(metric tokstream:num_requests_running)" -eq 0 ]
	[ "$(metric tokstream:num_requests_waiting)" -eq 0 ]
}

@test "after a mixed load (abandonment, resets, refusals, errors) the counters agree with the per-request counts" {
	scrape
	before_tokens=$(metric tokstream:generation_tokens_total)
	"$TOKBENCH" load --url "$BASE" --concurrency 12 --requests 120 \
		--output-tokens 5:40 --abandon 0.3:3 --seed 7 --quiet \
		--json "$BATS_TEST_TMPDIR/a.json" >/dev/null
	"$TOKBENCH" load --url "$BASE" --concurrency 8 --requests 30 \
		--output-tokens 20 --abandon 0.5:2 --abandon-rst --seed 8 \
		--quiet --json "$BATS_TEST_TMPDIR/b.json" >/dev/null
	for n in 1 2 3; do
		curl -s "$BASE/stream?prompt=e&max_tokens=9&error_after=4" >/dev/null
	done
	# a burst over the 16 places (2 processes x (4 slots + 4 waiting)),
	# once the abandoned sequences above have left: 24 streams of 100 s
	# (1000 tokens at 100 ms), so that every one still holds its place
	# when the last arrives, however slowly a loaded machine starts them
	until_scraped in_flight 0
	rej0=$(metric 'tokstream:requests_rejected_total{reason="queue_full"}')
	pids=()
	for n in $(seq 1 24); do
		curl -s -o /dev/null -w '%{http_code}\n' \
			"$BASE/stream?prompt=b$n&max_tokens=1000&tpot_ms=100" \
			>>"$BATS_TEST_TMPDIR/codes" &
		pids+=($!)
	done
	# every one in (running, waiting or refused), and every refused
	# client has its answer; then the others leave
	until_scraped placed "$rej0" 24
	rej=$(metric 'tokstream:requests_rejected_total{reason="queue_full"}')
	for i in $(seq 1 400); do
		[ "$(grep -c '^429$' "$BATS_TEST_TMPDIR/codes")" -ge \
		  $((rej - rej0)) ] && break
		sleep 0.05
	done
	kill "${pids[@]}" 2>/dev/null || true
	wait
	n429=$(grep -c '^429$' "$BATS_TEST_TMPDIR/codes" || true)
	echo "burst: $n429 refused"
	[ "$n429" -ge 1 ]
	jq -c '.failures' "$BATS_TEST_TMPDIR/a.json"
	# every cancelled sequence has left
	until_scraped in_flight 0
	scrape
	grep -v '^#' "$BATS_TEST_TMPDIR/m" | grep -v _bucket
	"$TS_BUILDDIR/tests/promcheck" "$BATS_TEST_TMPDIR/m"
	# the sum of per-request generated counts equals generation_tokens_total
	last=$(curl -s "$BASE/_debug/generated" | jq -r .id)
	sum=0
	for id in $(seq 1 "$last"); do
		g=$(curl -s "$BASE/_debug/generated?id=$id" | jq -r '.generated // 0')
		sum=$((sum + g))
	done
	total=$(metric tokstream:generation_tokens_total)
	echo "per-request sum $sum, generation_tokens_total $total"
	[ "$sum" -eq "$total" ]
	[ "$total" -eq "$(curl -s "$BASE/_debug/generated" | jq .total_generated)" ]
	[ "$total" -gt "$before_tokens" ]
	# every request that got a slot finished with one reason
	fin=0
	for r in stop length abort error; do
		v=$(metric "tokstream:request_success_total{finished_reason=\"$r\"}")
		fin=$((fin + v))
	done
	[ "$fin" -eq "$last" ]
	[ "$(metric 'tokstream:request_success_total{finished_reason="error"}')" -ge 3 ]
	[ "$(metric 'tokstream:request_success_total{finished_reason="abort"}')" -ge 25 ]
	rej=$(metric 'tokstream:requests_rejected_total{reason="queue_full"}')
	[ $((rej - rej0)) -eq "$n429" ]
	[ "$(metric tokstream:num_requests_running)" -eq 0 ]
	# TTFT was observed at most once per request
	[ "$(metric tokstream:time_to_first_token_seconds_count)" -le "$last" ]
}
