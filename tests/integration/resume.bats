#!/usr/bin/env bats
# Resumable streams (docs/API.md "Resuming a stream"): every token event has an
# SSE id, a dropped stream resumes from Last-Event-ID (header or the
# last_event_id parameter) with exactly the text it would have sent, ids
# of other parameters or malformed ones are 400s before any stream starts,
# a reconnect after [DONE] is a 204 that generates nothing, and a real
# EventSource client does all of it by itself.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# cut_stream K QUERY OUT [curl args...]: reads /stream?QUERY up to and
# including its K-th token event, then closes the connection (the reader
# leaves, curl dies on its next write). OUT gets the SSE text read, OUT.h
# the response headers. A bash read loop, not awk: mawk (Debian's awk)
# fills its input buffer before it looks at a line, so it would only see
# the K-th event when the stream ends.
cut_stream() {
	local k=$1 q=$2 out=$3 line n=0
	shift 3
	curl -sS -N -D "$out.h" "$@" "$BASE/stream?$q" 2>/dev/null | {
		while IFS= read -r line; do
			printf '%s\n' "$line"
			[[ $line == 'data: {"token"'* ]] || continue
			((++n == k)) && break
		done
	} >"$out"
}

# sse_tokens FILE: the concatenated token texts of the SSE text in FILE,
# exact bytes (JSON-decoded)
sse_tokens() {
	sed -n 's/^data: \({"token":.*\)$/\1/p' "$1" | jq -j .token
}

# sse_ids FILE: the id of every event in FILE, one a line
sse_ids() {
	sed -n 's/^id: //p' "$1"
}

# count_tokens FILE: the number of token events in FILE
count_tokens() {
	grep -c '^data: {"token"' "$1" || true
}

# totals: total_generated and total_streams of /_debug/generated
totals() {
	curl -sS "$BASE/_debug/generated" |
		jq -c '[.total_generated, .total_streams]'
}

# expected_ids STREAM KEY FROM N: the ids a stream sends from token FROM
# to N - 1, then the [DONE] event's
expected_ids() {
	local i
	for ((i = $3; i < $4; i++)); do
		echo "$1-$2-$i"
	done
	echo "$1-$2-end"
}

# resume_check K N PROMPT PROMPT_Q MODE: cuts a max_tokens=N stream after
# K token events, resumes it from the last id read (MODE header:
# Last-Event-ID; query: the last_event_id parameter), and checks the
# resumed stream and that before + after is byte for byte the
# uninterrupted text, /generate's text and tokgen's. PROMPT_Q is PROMPT
# percent-encoded.
resume_check() {
	local k=$1 n=$2 prompt=$3 pq=$4 mode=$5 d=$BATS_TEST_TMPDIR
	local q="prompt=$pq&max_tokens=$n" id1 id2 leid key

	cut_stream "$k" "$q" "$d/cut"
	id1=$(header_of "$d/cut.h" X-Request-Id)
	[ -n "$id1" ]
	[ "$(count_tokens "$d/cut")" -eq "$k" ]
	leid=$(sse_ids "$d/cut" | tail -n 1)
	echo "cut after $k: stream $id1, last id $leid"
	[[ $leid =~ ^$id1-([0-9a-f]{16})-$((k - 1))$ ]]
	key=${BASH_REMATCH[1]}
	wait_not_running "$id1"

	if [ "$mode" = header ]; then
		curl -sS -N -D "$d/res.h" -H "Last-Event-ID: $leid" \
			"$BASE/stream?$q" >"$d/res"
	else
		curl -sS -N -D "$d/res.h" \
			"$BASE/stream?$q&last_event_id=$leid" >"$d/res"
	fi
	head -n 1 "$d/res.h" | grep -q ' 200 '
	id2=$(header_of "$d/res.h" X-Request-Id)
	echo "resumed as stream $id2"
	[ -n "$id2" ]
	[ "$id2" != "$id1" ]
	# a resumed stream is a stream like any other: the first event
	# carries the retry, then the events from index K on, under its own
	# stream id and the same key
	[ "$(grep -m1 -A1 '^id: ' "$d/res" | sed -n 2p)" = "retry: 1000" ]
	[ "$(count_tokens "$d/res")" -eq $((n - k)) ]
	diff <(expected_ids "$id2" "$key" "$k" "$n") <(sse_ids "$d/res")
	[ "$(grep '^data: ' "$d/res" | tail -n 1)" = "data: [DONE]" ]

	sse_tokens "$d/cut" >"$d/before"
	sse_tokens "$d/res" >"$d/after"
	cat "$d/before" "$d/after" >"$d/joined"
	curl -sS -N "$BASE/stream?$q" >"$d/full"
	[ "$(count_tokens "$d/full")" -eq "$n" ]
	sse_tokens "$d/full" >"$d/full.txt"
	"$TOKGEN" --prompt "$prompt" -n "$n" >"$d/tokgen.txt"
	jq -n --arg p "$prompt" --argjson n "$n" \
		'{prompt: $p, max_tokens: $n}' | curl -sS -d @- "$BASE/generate" |
		jq -j .text >"$d/generate.txt"
	[ -s "$d/joined" ]
	cmp "$d/joined" "$d/full.txt"
	cmp "$d/joined" "$d/tokgen.txt"
	cmp "$d/joined" "$d/generate.txt"
}

# expect_400 QUERY ID CODE [header|query]: GET /stream?QUERY resuming from
# ID is a 400 JSON error with CODE, and no stream starts.
expect_400() {
	local d=$BATS_TEST_TMPDIR before code
	before=$(totals)
	if [ "${4:-header}" = header ]; then
		code=$(curl -sS -D "$d/e.h" -o "$d/e.body" -w '%{http_code}' \
			-H "Last-Event-ID: $2" "$BASE/stream?$1")
	else
		code=$(curl -sS -D "$d/e.h" -o "$d/e.body" -w '%{http_code}' \
			"$BASE/stream?$1&last_event_id=$2")
	fi
	echo "$1 with ${4:-header} id '$2': HTTP $code $(cat "$d/e.body")"
	[ "$code" = 400 ]
	[ "$(header_of "$d/e.h" Content-Type)" = application/json ]
	jq -e --arg c "$3" '.error.code == $c and
		.error.type == "invalid_request_error" and
		(.error.message | length > 0)' "$d/e.body" >/dev/null
	[ -z "$(header_of "$d/e.h" X-Request-Id)" ]
	[ "$(totals)" = "$before" ]
}

# ref_stream: a complete max_tokens=20 stream of prompt "tunnel" into
# $BATS_TEST_TMPDIR/ref; sets REF_STREAM (its id) and REF_KEY
ref_stream() {
	local d=$BATS_TEST_TMPDIR first
	curl -sS -N -D "$d/ref.h" "$BASE/stream?prompt=tunnel&max_tokens=20" \
		>"$d/ref"
	REF_STREAM=$(header_of "$d/ref.h" X-Request-Id)
	first=$(sse_ids "$d/ref" | head -n 1)
	[[ $first =~ ^$REF_STREAM-([0-9a-f]{16})-0$ ]]
	REF_KEY=${BASH_REMATCH[1]}
	wait_not_running "$REF_STREAM"
}

# The prompt "tunnel" gives, within 20 tokens, "data", a tab, "\n", a
# quote and non-ASCII: every escape must survive the resume.
@test "resume after k=1 of 20 tokens (Last-Event-ID): before + after == uninterrupted == tokgen" {
	resume_check 1 20 tunnel tunnel header
}

@test "resume after k=5 of 20 tokens (Last-Event-ID): before + after == uninterrupted == tokgen" {
	resume_check 5 20 tunnel tunnel header
}

@test "resume after k=19 of 20 tokens (max_tokens-1, Last-Event-ID): only the last token is sent again" {
	resume_check 19 20 tunnel tunnel header
}

@test "resume with the last_event_id query parameter works like the header (k=7, prompt with a '+' space)" {
	resume_check 7 20 'drop it' 'drop+it' query
}

@test "resume of an error_after=5 stream cut after 3 tokens: tokens 3 and 4, then the same error event and [DONE]" {
	d=$BATS_TEST_TMPDIR
	q='prompt=tunnel&max_tokens=20&error_after=5'
	curl -sS -N "$BASE/stream?$q" >"$d/full"
	cut_stream 3 "$q" "$d/cut"
	wait_not_running "$(header_of "$d/cut.h" X-Request-Id)"
	leid=$(sse_ids "$d/cut" | tail -n 1)
	curl -sS -N -D "$d/res.h" -H "Last-Event-ID: $leid" \
		"$BASE/stream?$q" >"$d/res"
	id2=$(header_of "$d/res.h" X-Request-Id)
	[[ $leid =~ ^[0-9]+-([0-9a-f]{16})-2$ ]]
	diff <(expected_ids "$id2" "${BASH_REMATCH[1]}" 3 5) <(sse_ids "$d/res")
	# the same events after the last token as the uninterrupted stream
	diff <(grep '^data: ' "$d/full" | tail -n 2) \
		<(grep '^data: ' "$d/res" | tail -n 2)
	grep '^data: ' "$d/res" | tail -n 2 | head -n 1 |
		sed 's/^data: //' |
		jq -e '.error.code == "injected_error"' >/dev/null
	cat <(sse_tokens "$d/cut") <(sse_tokens "$d/res") >"$d/joined"
	cmp "$d/joined" <(sse_tokens "$d/full")
	[ "$(curl -sS "$BASE/_debug/generated?id=$id2" | jq -r .status)" = error ]
}

@test "a resume past error_after (a forged index 9 of error_after=5) is 400: that token was never sent" {
	d=$BATS_TEST_TMPDIR
	q='prompt=tunnel&max_tokens=20&error_after=5'
	curl -sS -N -D "$d/h" "$BASE/stream?$q" >"$d/full"
	leid=$(sse_ids "$d/full" | head -n 1)
	leid=${leid%-0}-9
	run curl -sS -o "$d/res" -w '%{http_code}' -H "Last-Event-ID: $leid" "$BASE/stream?$q"
	[ "$output" = 400 ]
	jq -e '.error.code == "invalid_last_event_id"' "$d/res" >/dev/null
}

@test "with both a Last-Event-ID header and a last_event_id parameter the header wins" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N "$BASE/stream?prompt=tunnel&max_tokens=6" >"$d/s"
	a=$(sse_ids "$d/s" | sed -n 1p)
	b=$(sse_ids "$d/s" | sed -n 3p)
	# EventSource keeps the URL (parameter: token 0) and sends the newer
	# id (token 2) in the header: the stream goes on from token 3
	curl -sS -N -H "Last-Event-ID: $b" \
		"$BASE/stream?prompt=tunnel&max_tokens=6&last_event_id=$a" >"$d/r"
	[ "$(count_tokens "$d/r")" -eq 3 ]
	[[ $(sse_ids "$d/r" | head -n 1) =~ -3$ ]]
}

@test "an id naming a token the request never sends is 400; the resumed_from link is verified" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N "$BASE/stream?prompt=tunnel&max_tokens=5" >"$d/s"
	first=$(sse_ids "$d/s" | head -n 1)
	key=$(echo "$first" | cut -d- -f2)
	sid=$(echo "$first" | cut -d- -f1)
	for idx in 5 6 18446744073709551614; do
		run curl -sS -o "$d/e" -w '%{http_code}' -H "Last-Event-ID: $sid-$key-$idx" \
			"$BASE/stream?prompt=tunnel&max_tokens=5"
		[ "$output" = 400 ]
		jq -e '.error.code == "invalid_last_event_id"' "$d/e" >/dev/null
	done
	# past error_after: 400 too
	curl -sS -N "$BASE/stream?prompt=tunnel&max_tokens=10&error_after=3" >"$d/e3"
	k3=$(sse_ids "$d/e3" | head -n 1 | cut -d- -f2)
	run curl -sS -o "$d/e" -w '%{http_code}' -H "Last-Event-ID: $sid-$k3-3" \
		"$BASE/stream?prompt=tunnel&max_tokens=10&error_after=3"
	[ "$output" = 400 ]
	# a stream id the state file does not hold: resumed, but not linked
	curl -sS -N -D "$d/h" -H "Last-Event-ID: 999999999-$key-1" \
		"$BASE/stream?prompt=tunnel&max_tokens=5" >"$d/r"
	[ "$(count_tokens "$d/r")" -eq 3 ]
	id=$(header_of "$d/h" X-Request-Id)
	curl -sS "$BASE/_debug/generated?id=$id" |
		jq -e '.resumed_from == null and .resume_index == 2 and .resume == "recomputed"'
	# the real one is linked
	curl -sS -N -D "$d/h2" -H "Last-Event-ID: $sid-$key-1" \
		"$BASE/stream?prompt=tunnel&max_tokens=5" >"$d/r2"
	id2=$(header_of "$d/h2" X-Request-Id)
	curl -sS "$BASE/_debug/generated?id=$id2" | jq -e --arg s "$sid" '.resumed_from == $s'
}

@test "CORS: public endpoints allow any origin and answer a preflight; /_debug does not" {
	curl -sS -D "$BATS_TEST_TMPDIR/h" -o /dev/null -H 'Origin: http://example.test' \
		"$BASE/stream?prompt=a&max_tokens=1"
	[ "$(header_of "$BATS_TEST_TMPDIR/h" Access-Control-Allow-Origin)" = '*' ]
	[ "$(header_of "$BATS_TEST_TMPDIR/h" Access-Control-Expose-Headers)" = X-Request-Id ]
	run curl -sS -o /dev/null -w '%{http_code}' -X OPTIONS -D "$BATS_TEST_TMPDIR/p" "$BASE/generate"
	[ "$output" = 204 ]
	header_of "$BATS_TEST_TMPDIR/p" Access-Control-Allow-Headers | grep -q Last-Event-ID
	curl -sS -D "$BATS_TEST_TMPDIR/d" -o /dev/null "$BASE/_debug/generated"
	[ -z "$(header_of "$BATS_TEST_TMPDIR/d" Access-Control-Allow-Origin)" ]
}

@test "an empty Last-Event-ID resumes nothing: the stream starts at token 0" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N -D "$d/h" -H 'Last-Event-ID;' \
		"$BASE/stream?prompt=tunnel&max_tokens=3" >"$d/s"
	id=$(header_of "$d/h" X-Request-Id)
	[ "$(count_tokens "$d/s")" -eq 3 ]
	[[ $(sse_ids "$d/s" | head -n 1) =~ ^$id-[0-9a-f]{16}-0$ ]]
	curl -sS "$BASE/_debug/generated?id=$id" |
		jq -e '.resumed_from == null' >/dev/null
}

@test "a foreign Last-Event-ID (other prompt, max_tokens or error_after) is 400 foreign_last_event_id; no stream starts" {
	ref_stream
	leid=$REF_STREAM-$REF_KEY-4
	# the same request resumes (control: the id itself is good)
	cut_stream 1 'prompt=tunnel&max_tokens=20' "$BATS_TEST_TMPDIR/ok" \
		-H "Last-Event-ID: $leid"
	[[ $(sse_ids "$BATS_TEST_TMPDIR/ok" | head -n 1) =~ -$REF_KEY-5$ ]]
	wait_not_running "$(header_of "$BATS_TEST_TMPDIR/ok.h" X-Request-Id)"
	expect_400 'prompt=other&max_tokens=20' "$leid" foreign_last_event_id
	expect_400 'prompt=tunnel+&max_tokens=20' "$leid" foreign_last_event_id
	expect_400 'prompt=tunne&max_tokens=20' "$leid" foreign_last_event_id
	expect_400 'prompt=tunnel&max_tokens=21' "$leid" foreign_last_event_id
	expect_400 'prompt=tunnel' "$leid" foreign_last_event_id
	expect_400 'prompt=tunnel&max_tokens=20&error_after=10' "$leid" \
		foreign_last_event_id
	expect_400 'prompt=other&max_tokens=20' "$leid" foreign_last_event_id \
		query
	# a well-formed id whose key differs in its last hex digit
	if [ "${REF_KEY: -1}" = 0 ]; then other=${REF_KEY%?}1
	else other=${REF_KEY%?}0; fi
	expect_400 'prompt=tunnel&max_tokens=20' "$REF_STREAM-$other-4" \
		foreign_last_event_id
	# the end id of another request is foreign too, not a 204
	expect_400 'prompt=other&max_tokens=20' "$REF_STREAM-$REF_KEY-end" \
		foreign_last_event_id
}

@test "a malformed Last-Event-ID is 400 invalid_last_event_id; no stream starts" {
	ref_stream
	q='prompt=tunnel&max_tokens=20'
	s=$REF_STREAM
	k=$REF_KEY
	upper=$(printf '%s' "$k" | tr a-f A-F)
	for id in garbage 1-2-3 "$s-$k" "$s-$k-" "$s-$k-1-2" "-1-$k-1" \
	    "+$s-$k-1" "0$s-$k-1" "0-$k-1" "$s-$k-01" "$s-$k--1" \
	    "$s-${k:1}-1" "$s-${k}0-1" "$s-$upper-1" "$s-$k-END" \
	    "$s-$k-x" "$s-$k-1 2" "$s -$k-1" \
	    "18446744073709551616-$k-1" "$s-$k-18446744073709551616" \
	    "$s-$k-99999999999999999999" "$s-$k-18446744073709551615" \
	    "$s-$k-$(printf '1%.0s' $(seq 1 50))"; do
		expect_400 "$q" "$id" invalid_last_event_id
	done
}

@test "a malformed last_event_id parameter (NUL, '+' as space, sign, junk) is 400 invalid_last_event_id" {
	ref_stream
	q='prompt=tunnel&max_tokens=20'
	expect_400 "$q" "$REF_STREAM-$REF_KEY-1%00" invalid_last_event_id query
	expect_400 "$q" "$REF_STREAM-$REF_KEY-1+" invalid_last_event_id query
	expect_400 "$q" "$REF_STREAM-$REF_KEY-%2B1" invalid_last_event_id query
	expect_400 "$q" "$REF_STREAM-$REF_KEY-%31%30x" invalid_last_event_id \
		query
	expect_400 "$q" "%20$REF_STREAM-$REF_KEY-1" invalid_last_event_id query
	expect_400 "$q" "garbage" invalid_last_event_id query
}

@test "reconnect after [DONE] (the -end id, or the last token's id) is 204 and generates nothing" {
	ref_stream
	d=$BATS_TEST_TMPDIR
	endid=$(sse_ids "$d/ref" | tail -n 1)
	lastid=$(sse_ids "$d/ref" | tail -n 2 | head -n 1)
	[ "$endid" = "$REF_STREAM-$REF_KEY-end" ]
	[ "$lastid" = "$REF_STREAM-$REF_KEY-19" ]
	before=$(totals)
	echo "totals before: $before"
	for how in "-H Last-Event-ID:$endid" "-H Last-Event-ID:$lastid" \
	    "last_event_id=$endid"; do
		case $how in
		-H*) code=$(curl -sS -D "$d/h" -o "$d/body" -w '%{http_code}' \
			$how "$BASE/stream?prompt=tunnel&max_tokens=20") ;;
		*) code=$(curl -sS -D "$d/h" -o "$d/body" -w '%{http_code}' \
			"$BASE/stream?prompt=tunnel&max_tokens=20&$how") ;;
		esac
		echo "$how: HTTP $code"
		[ "$code" = 204 ]
		[ ! -s "$d/body" ]
		[ -z "$(header_of "$d/h" X-Request-Id)" ]
	done
	sleep 0.3
	after=$(totals)
	echo "totals after: $after"
	[ "$after" = "$before" ]
}

@test "/_debug/generated: the resumed stream links to the dropped one (resumed_from, resume_index=k, recomputed, generated=20-k); the dropped one is cancelled" {
	d=$BATS_TEST_TMPDIR
	q='prompt=tunnel&max_tokens=20&tpot_ms=50'
	cut_stream 5 "$q" "$d/cut"
	id1=$(header_of "$d/cut.h" X-Request-Id)
	leid=$(sse_ids "$d/cut" | tail -n 1)
	wait_not_running "$id1"
	curl -sS "$BASE/_debug/generated?id=$id1" | tee "$d/g1"
	echo
	jq -e '.status == "cancelled" and .generated >= 5 and
		.generated < 20 and .resumed_from == null and (has("resume_index") | not)' "$d/g1"
	curl -sS -N -D "$d/res.h" -H "Last-Event-ID: $leid" \
		"$BASE/stream?$q" >"$d/res"
	id2=$(header_of "$d/res.h" X-Request-Id)
	wait_not_running "$id2"
	curl -sS "$BASE/_debug/generated?id=$id2" | tee "$d/g2"
	echo
	jq -e --arg from "$id1" --arg id "$id2" '.id == $id and
		.kind == "stream" and .resumed_from == $from and
		.resume_index == 5 and .resume == "recomputed" and
		.generated == 15 and .status == "done"' "$d/g2"
}

# first_token CURL_ARGS...: reads a stream up to its first token event and
# leaves (curl dies on its next write); prints "TTFT_MS ID DATA_JSON", the
# TTFT measured from just before curl starts.
first_token() {
	local t0 line id=
	t0=$EPOCHREALTIME
	while IFS= read -r line; do
		case $line in
		'id: '*) id=${line#id: } ;;
		'data: {"token"'*)
			printf '%s %s %s\n' "$(awk -v a="$t0" \
			    -v b="$EPOCHREALTIME" \
			    'BEGIN { printf "%d", (b - a) * 1000 }')" \
			    "$id" "${line#data: }"
			return 0 ;;
		esac
	done < <(curl -sS -N "$@" 2>/dev/null)
	return 1
}

# The model: prefill = 40 ms + 0.25 ms * (prompt_tokens + tokens already
# produced). A resume at token 8191 of a 5-token prompt must wait
# 40 + 0.25 * 8196 = 2089 ms for its first token; a fresh stream ~41 ms.
# The id is forged from a real one (same stream and key): the server keeps
# no state, so it cannot tell, and the model must still be paid.
@test "honest latency: resuming after 8191 tokens pays prefill over them (TTFT >= 2 s; fresh < 1 s)" {
	q='prompt=tunnel&max_tokens=8192'
	read -r fresh id json < <(first_token "$BASE/stream?$q")
	echo "fresh: ttft ${fresh} ms, id $id"
	[[ $id =~ ^([0-9]+)-([0-9a-f]{16})-0$ ]]
	s=${BASH_REMATCH[1]}
	k=${BASH_REMATCH[2]}
	wait_not_running "$s"
	read -r resumed id2 json2 < <(first_token \
		-H "Last-Event-ID: $s-$k-8190" "$BASE/stream?$q")
	echo "resumed at 8191: ttft ${resumed} ms, id $id2, $json2"
	[[ $id2 =~ ^([0-9]+)-$k-8191$ ]]
	wait_not_running "${BASH_REMATCH[1]}"
	[ "$fresh" -lt 1000 ]
	[ "$resumed" -ge 2000 ]
	[ "$resumed" -lt 6000 ]
	[ "$resumed" -ge $((fresh + 1500)) ]
	# and the token is token 8191 of the uninterrupted sequence
	[ "$(jq -j .token <<<"$json2")" = \
	  "$("$TOKGEN" --prompt tunnel -n 8192 --json | tail -n 1 | jq -j .)" ]
}

@test "EventSource (npm eventsource): a mid-stream drop reconnects with Last-Event-ID, resumes with no duplicated or missing token, and stops on 204 after [DONE]" {
	if ! command -v node >/dev/null ||
	   [ ! -d "$TS_SRCDIR/tests/node/node_modules/eventsource" ]; then
		if [ "${TS_REQUIRE_NODE:-0}" = 1 ]; then
			echo "node or tests/node/node_modules is missing: run" \
			     "'npm ci' in tests/node (TS_REQUIRE_NODE=1)" >&2
			return 1
		fi
		skip "node or tests/node/node_modules missing (npm ci)"
	fi
	run timeout 40 node "$TS_SRCDIR/tests/node/eventsource-resume.mjs" \
		"$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
}
