#!/usr/bin/env bats
# tokbench load against a real server: closed loop, open loop (Poisson),
# duration bound, goodput SLOs, abandoned streams (FIN and RST) checked
# against /_debug/generated, failures by kind, bad command lines. TPOT is
# 10 ms so that every run takes a second or two.

load helpers

setup_file() {
	heavy_alone
	# room for the 200-stream test: 128 slots + 128 waiting
	ts_start --tpot-ms 10 --keepalive-ms 200 --max-num-seqs 128 \
		--max-waiting 128
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

@test "load closed loop: concurrency 4, 20 requests; counts exact, latencies plausible" {
	j=$BATS_TEST_TMPDIR/r.json
	run "$TOKBENCH" load --url "$BASE" --concurrency 4 --requests 20 \
		--prompt-tokens 16 --output-tokens 20 --json "$j" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"============ Serving Benchmark Result ============"* ]]
	[[ "$output" == *"Successful requests:                     20"* ]]
	[[ "$output" == *"Median ITL (ms):"* ]]
	jqt "$j" '.completed == 20 and .failed == 0 and .abandoned == 0'
	jqt "$j" '.started == 20 and .max_concurrent_requests == 4'
	jqt "$j" '.total_output_tokens == 400 and .total_input_tokens == 320'
	jqt "$j" '.count_ttft == 20 and .count_tpot == 20 and .count_itl == 380'
	jqt "$j" '[.failures[]] | add == 0'
	# TTFT: prefill 40 ms + 16 * 0.25 ms, plus the stack
	jqt "$j" '.median_ttft_ms >= 40 and .median_ttft_ms < 200'
	# TPOT: the server's TPOT, 10 ms. Each request's (E2E - TTFT) /
	# (tokens - 1) is paced by the engine's absolute token deadlines,
	# however its tokens bunch on the way; the ITL median is not: on a
	# loaded machine lighttpd or the client reads several tokens at once
	# and most gaps are ~0 (median ITL 0.002 and 6.1 ms seen under
	# make -j2 beside other builds, with median TPOT 9.5-10.3 ms)
	jqt "$j" '.median_tpot_ms > 7 and .median_tpot_ms < 20'
	jqt "$j" '.mean_tpot_ms > 7 and .mean_tpot_ms < 20'
	jqt "$j" '.p99_itl_ms >= .median_itl_ms and .mean_itl_ms > 0'
	# E2E: 44 + 19 * 10 ms
	jqt "$j" '.median_e2el_ms > 200 and .median_e2el_ms < 1000'
	# the rates are counts over the benchmark duration
	jqt "$j" '.request_throughput * .duration | . > 19.99 and . < 20.01'
	jqt "$j" '.output_throughput * .duration | . > 399.9 and . < 400.1'
	jqt "$j" '.percentile_method == "nearest-rank"'
	jqt "$j" '.request_goodput == null'
}

@test "load --abandon 0.25:5 (FIN): abandoned counted apart; each abandoned stream is cancelled on the server" {
	j=$BATS_TEST_TMPDIR/a.json
	run "$TOKBENCH" load --url "$BASE" --concurrency 8 --requests 40 \
		--output-tokens 50 --abandon 0.25:5 --seed 1 --json "$j" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Abandoned requests (after 5 tok, FIN):"* ]]
	jqt "$j" '.completed + .abandoned == 40 and .failed == 0'
	# binomial(40, 0.25): about 10
	jqt "$j" '.abandoned >= 4 and .abandoned <= 18'
	jqt "$j" '(.abandoned_ids | length) == .abandoned'
	jqt "$j" '.abandoned_output_tokens == 5 * .abandoned'
	# latencies and throughput are over the completed requests only
	jqt "$j" '.total_output_tokens == 50 * .completed'
	jqt "$j" '.count_e2el == .completed and .count_ttft == .completed'
	for id in $(jq -r '.abandoned_ids[]' "$j"); do
		wait_not_running "$id"
		s=$(debug_field "$id" status)
		g=$(debug_field "$id" generated)
		echo "stream $id: $s, generated $g, wasted $(debug_field "$id" wasted), left $(debug_field "$id" cancel_to_leave_ms) ms after the close was seen"
		[ "$s" = cancelled ]
		[ "$g" -ge 5 ]
		# the client closes after its 5th token, but a busy client (an
		# ASan build on a loaded machine: 12 seen) reads late and more
		# tokens reach it first; a server that missed the close would
		# make all 50, one that saw it only at a 200 ms keep-alive 25
		[ "$g" -le 20 ]
	done
}

@test "load --abandon-rst: the abandoned streams are reset and cancelled" {
	j=$BATS_TEST_TMPDIR/rst.json
	run "$TOKBENCH" load --url "$BASE" --concurrency 6 --requests 20 \
		--output-tokens 60 --abandon 0.5:4 --abandon-rst --seed 2 \
		--json "$j" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"(after 4 tok, RST)"* ]]
	jqt "$j" '.completed + .abandoned == 20 and .failed == 0'
	jqt "$j" '.abandoned >= 3 and (.abandoned_ids | length) == .abandoned'
	jqt "$j" '.settings.abandon_rst == true'
	for id in $(jq -r '.abandoned_ids[]' "$j"); do
		wait_not_running "$id"
		[ "$(debug_field "$id" status)" = cancelled ]
		echo "stream $id: generated $(debug_field "$id" generated), left $(debug_field "$id" cancel_to_leave_ms) ms after the reset was seen"
		# as with FIN, a margin for a late client (of 60 tokens)
		[ "$(debug_field "$id" generated)" -le 20 ]
	done
}

@test "load open loop: Poisson arrivals with --max-concurrency finish; the same seed gives the same plan" {
	for k in 1 2; do
		run "$TOKBENCH" load --url "$BASE" --rate 40 --requests 30 \
			--max-concurrency 8 --prompt-tokens 4:12 \
			--output-tokens 5:15 --seed 3 --json "$BATS_TEST_TMPDIR/o$k.json" \
			--quiet
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"open loop, Poisson 40 req/s"* ]]
	done
	j=$BATS_TEST_TMPDIR/o1.json
	jqt "$j" '.completed == 30 and .failed == 0 and .not_started == 0'
	jqt "$j" '.settings.traffic == "open" and .max_concurrent_requests <= 8'
	jqt "$j" '.total_output_tokens >= 150 and .total_output_tokens <= 450'
	jqt "$j" '.total_input_tokens >= 120 and .total_input_tokens <= 360'
	# 30 arrivals at 40/s take about 0.75 s; far less would not be Poisson
	jqt "$j" '.duration > 0.2 and .duration < 10'
	a=$(jq -c '[.total_input_tokens, .total_output_tokens]' "$j")
	b=$(jq -c '[.total_input_tokens, .total_output_tokens]' "$BATS_TEST_TMPDIR/o2.json")
	[ "$a" = "$b" ]
}

@test "load --duration: starts no request after it; those in flight finish" {
	j=$BATS_TEST_TMPDIR/d.json
	t0=$EPOCHREALTIME
	run "$TOKBENCH" load --url "$BASE" --concurrency 2 --duration 1 \
		--output-tokens 10 --json "$j"
	t1=$EPOCHREALTIME
	echo "$output"
	[ "$status" -eq 0 ]
	# progress lines on stderr (bats mixes them into $output)
	[[ "$output" == *"in_flight="* ]]
	jqt "$j" '.completed >= 4 and .started == .completed and .failed == 0'
	jqt "$j" '.duration >= 1 and .duration < 3'
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }'
}

@test "load --goodput: SLOs every request meets, and one none can" {
	j=$BATS_TEST_TMPDIR/g.json
	run "$TOKBENCH" load --url "$BASE" --concurrency 3 --requests 6 \
		--output-tokens 5 --goodput "ttft:10000 tpot:1000" \
		--goodput e2el:20000 --json "$j" --quiet
	[ "$status" -eq 0 ]
	[[ "$output" == *"Request goodput (req/s):"* ]]
	jqt "$j" '.good_requests == 6 and .request_goodput == .request_throughput'
	jqt "$j" '.settings.goodput_slo_ms == {"ttft": 10000, "tpot": 1000, "e2el": 20000}'
	# TTFT is at least the 40 ms prefill: nobody meets 1 ms
	run "$TOKBENCH" load --url "$BASE" --concurrency 3 --requests 6 \
		--output-tokens 5 --goodput ttft:1 --json "$j" --quiet
	[ "$status" -eq 0 ]
	jqt "$j" '.completed == 6 and .good_requests == 0 and .request_goodput == 0'
}

@test "load: 200 streams at once over one thread" {
	j=$BATS_TEST_TMPDIR/many.json
	# 200 are in flight at once when every start comes before the first
	# end: the client's start backlog (0.07-1.2 s seen plain and ASan
	# under make -j2 beside other builds, 3.3 s once; it changes 7-fold
	# from one run to the next there) must be shorter than the shortest
	# stream (40 ms prefill + (n - 1) x 10 ms: token deadlines are
	# absolute). Streams of 100 tokens first; when a run's backlog was
	# longer than its shortest stream, again with streams four times
	# that backlog (at least twice as long), up to four runs. Every run
	# must complete all 200 without a failure.
	n=100
	for try in 1 2 3 4; do
		run "$TOKBENCH" load --url "$BASE" --concurrency 200 \
			--requests 200 --output-tokens "$n" --prompt-tokens 1 \
			--json "$j" --quiet
		echo "$output"
		[ "$status" -eq 0 ]
		jqt "$j" '.completed == 200 and .failed == 0'
		jqt "$j" ".total_output_tokens == 200 * $n"
		b=$(jq .start_backlog_ms "$j")
		echo "run $try: $n tokens a stream, start backlog $b ms, shortest stream $(jq .min_e2el_ms "$j") ms"
		jq -e '.start_backlog_ms < .min_e2el_ms' "$j" >/dev/null && break
		n=$(awk -v b="$b" -v n="$n" 'BEGIN { m = int((4 * b - 40) / 10) + 2;
			if (m < 2 * n) m = 2 * n; print (m > 8000 ? 8000 : m) }')
	done
	# the order that makes them concurrent: every start came before the
	# first end
	jqt "$j" '.start_backlog_ms < .min_e2el_ms'
	jqt "$j" '.max_concurrent_requests == 200'
}

@test "load: failures by kind (http_other, timeout); latencies only over completed requests" {
	j=$BATS_TEST_TMPDIR/f.json
	run "$TOKBENCH" load --url "$BASE/nope" --concurrency 2 --requests 4 \
		--json "$j" --quiet
	echo "$output"
	[ "$status" -eq 1 ]             # nothing measured
	[[ "$output" == *"http_other"*"HTTP 404"* ]]
	jqt "$j" '.completed == 0 and .failed == 4 and .failures.http_other == 4'
	jqt "$j" '.mean_ttft_ms == null and .count_itl == 0'
	# 100 tokens at 10 ms cannot finish in 0.3 s
	run "$TOKBENCH" load --url "$BASE" --concurrency 2 --requests 4 \
		--output-tokens 100 --timeout 0.3 --json "$j" --quiet
	echo "$output"
	jqt "$j" '.failures.timeout == 4 and .completed == 0'
}

@test "load: a server that is down gives one line and exit 1" {
	port=$(free_port)
	run "$TOKBENCH" load --url "http://127.0.0.1:$port" --requests 3 --quiet
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot reach http://127.0.0.1:$port"*"tokstream-ctl start"* ]]
}

@test "load: bad command lines exit 2 with a reason" {
	bad() {
		run "$TOKBENCH" load --url "$BASE" "$@"
		echo "$* -> $status: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == "tokbench load: "*"(see tokbench load --help)" ]]
	}
	bad
	bad --requests 5 --concurrency 2 --rate 3
	bad --requests 5 --max-concurrency 3
	bad --requests 5 --abandon-rst
	bad --requests 5 --abandon 1.5:2
	bad --requests 5 --abandon 0.5
	bad --requests 5 --abandon 0.5:100 --output-tokens 10
	bad --requests 5 --goodput ttft
	bad --requests 5 --goodput bogus:5
	bad --requests 5 --goodput ttft:5 --goodput ttft:6
	bad --requests 5 --output-tokens 9:3
	bad --requests 5 --prompt-tokens 0
	bad --requests 0
	bad --duration -1
	bad --requests 5 --rate 0
	bad --requests 5 --seed x
	bad --requests 5 --bogus
	bad --requests 5 extra
	run "$TOKBENCH" load --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--abandon P:K"* ]]
}
