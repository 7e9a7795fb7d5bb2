#!/usr/bin/env bats
# GET /stream and POST /generate: exact formats, SSE framing, agreement,
# pacing. Cases are named by their ids (docs/RELIABILITY.md "The case ids").

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# stream_body QUERY: the raw body of /stream?QUERY into $BATS_TEST_TMPDIR/body
stream_body() {
	curl -sS -N -D "$BATS_TEST_TMPDIR/head" -o "$BATS_TEST_TMPDIR/body" \
		"$BASE/stream?$1"
}

# token_text FILE: concatenated tokens of a stream body, exact bytes
token_text() {
	grep '^data: {' "$1" | sed 's/^data: //' | jq -j '.token'
}

@test "C02: /stream answers 200 with SSE headers and no Content-Length" {
	stream_body 'prompt=hello&max_tokens=3'
	tr -d '\r' < "$BATS_TEST_TMPDIR/head" > "$BATS_TEST_TMPDIR/h"
	grep -q '^HTTP/1.1 200' "$BATS_TEST_TMPDIR/h"
	grep -qx 'Content-Type: text/event-stream; charset=utf-8' "$BATS_TEST_TMPDIR/h"
	grep -qx 'Cache-Control: no-cache' "$BATS_TEST_TMPDIR/h"
	grep -qx 'X-Accel-Buffering: no' "$BATS_TEST_TMPDIR/h"
	grep -qE '^X-Request-Id: [0-9]+$' "$BATS_TEST_TMPDIR/h"
	! grep -qi '^Content-Length:' "$BATS_TEST_TMPDIR/h" || false
}

@test "C11 C12: byte-level framing of a max_tokens=20 stream" {
	stream_body 'prompt=hello&max_tokens=20'
	b=$BATS_TEST_TMPDIR/body
	# no CR anywhere in the body
	! grep -q $'\r' "$b" || false
	# 20 token events, then [DONE] exactly once, last
	[ "$(grep -c '^data: {"token":' "$b")" -eq 20 ]
	[ "$(grep -c '^data: \[DONE\]$' "$b")" -eq 1 ]
	[ "$(grep -v '^$' "$b" | grep -v '^:' | tail -n 1)" = 'data: [DONE]' ]
	# the body ends with the [DONE] event's empty line
	[ "$(tail -c 14 "$b" | od -An -c | tr -d ' \n')" = 'data:[DONE]\n\n' ]
	# the first event carries "retry: 1000" after its id, once
	[ "$(sed -n 1p "$b" | cut -c1-4)" = 'id: ' ]
	[ "$(sed -n 2p "$b")" = 'retry: 1000' ]
	[ "$(grep -c '^retry:' "$b")" -eq 1 ]
	# every event is exactly "id: ..." then one data line then an empty
	# line (the first with its retry line between); nothing else appears
	# (comments aside)
	awk 'NR == 2 { next }
	     prev ~ /^id: / && !/^data: / { bad = 1 }
	     prev ~ /^data: / && $0 != "" { bad = 1 }
	     /^data: / && prev !~ /^id: / { bad = 1 }
	     !/^(data|id): / && !/^: / && $0 != "" { bad = 1 }
	     { prev = $0 } END { exit bad }' "$b"
	# ids: <stream>-<key>-<index>, index 0..19, then <stream>-<key>-end
	id=$(header_of "$BATS_TEST_TMPDIR/head" X-Request-Id)
	grep '^id: ' "$b" | sed 's/^id: //' > "$BATS_TEST_TMPDIR/ids"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/ids")" -eq 21 ]
	[ "$(cut -d- -f1 "$BATS_TEST_TMPDIR/ids" | sort -u)" = "$id" ]
	[ "$(cut -d- -f2 "$BATS_TEST_TMPDIR/ids" | sort -u | grep -cE '^[0-9a-f]{16}$')" -eq 1 ]
	[ "$(cut -d- -f3 "$BATS_TEST_TMPDIR/ids" | tr '\n' ' ')" = "$(seq 0 19 | tr '\n' ' ')end " ]
	# every token event is one line of valid JSON with only "token"
	grep '^data: {' "$b" | sed 's/^data: //' |
		jq -e -s 'all(.[]; (keys == ["token"]) and (.token|type) == "string")'
}

# no_dataless_blocks FILE: every SSE block of FILE has a data line or is
# only comments, and the one retry line is in the first block that is not
# a comment (@microsoft/fetch-event-source 2.0.1 hands a block without
# data to onmessage as an event whose data is "")
no_dataless_blocks() {
	awk 'BEGIN { RS = "" } {
		n = split($0, l, "\n"); data = 0; comment = 1; retry = 0
		for (i = 1; i <= n; i++) {
			if (l[i] ~ /^data: /) data = 1
			if (l[i] !~ /^:/) comment = 0
			if (l[i] ~ /^retry: /) retry++
		}
		if (comment) next
		events++
		if (!data) { print "a block without data: " $0; bad = 1 }
		if (retry != (events == 1)) { print "retry in block " events ": " $0; bad = 1 }
	} END { exit bad || events == 0 }' "$1"
}

@test "every /stream block carries data or is a comment: the first bytes after the head are an event with data and the retry field" {
	b=$BATS_TEST_TMPDIR/body
	for q in 'max_tokens=3' 'max_tokens=0' 'max_tokens=5&error_after=0'; do
		stream_body "prompt=hello&$q"
		echo "$q: $(head -c 200 "$b")"
		no_dataless_blocks "$b"
		# the very first block is an event with data
		awk 'BEGIN { RS = "" } NR == 1 { exit !/(^|\n)data: / }' "$b"
	done
	# a stream that waits (prefill over the 500 ms keep-alive): comments
	# first, then the first event with the retry
	stream_body 'prompt=hello&max_tokens=2&prefill_ms=1200'
	echo "waits: $(head -c 200 "$b")"
	[ "$(head -c 1 "$b")" = ':' ]
	no_dataless_blocks "$b"
}

@test "C10: streamed text equals POST /generate text byte for byte, valid UTF-8" {
	for p in hello 'the model' '你好' 'x'; do
		q=$(jq -rn --arg p "$p" '$p|@uri')
		stream_body "prompt=$q&max_tokens=300"
		token_text "$BATS_TEST_TMPDIR/body" > "$BATS_TEST_TMPDIR/s.txt"
		jq -n --arg p "$p" '{prompt:$p,max_tokens:300}' |
			curl -sS -X POST --data-binary @- "$BASE/generate" |
			jq -j .text > "$BATS_TEST_TMPDIR/g.txt"
		cmp "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/g.txt"
		iconv -f UTF-8 -t UTF-8 "$BATS_TEST_TMPDIR/s.txt" >/dev/null
		# the stream equals tokgen's output too
		"$TOKGEN" --prompt "$p" -n 300 | cmp - "$BATS_TEST_TMPDIR/s.txt"
	done
}

@test "C10 C11: generation exercises the stress tokens and they survive JSON" {
	stream_body 'prompt=stress&max_tokens=2000'
	token_text "$BATS_TEST_TMPDIR/body" > "$BATS_TEST_TMPDIR/t"
	grep -q '"' "$BATS_TEST_TMPDIR/t"
	grep -qF '\' "$BATS_TEST_TMPDIR/t"
	grep -q $'\t' "$BATS_TEST_TMPDIR/t"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/t")" -gt 0 ]
	grep -qP '[\x{4e00}-\x{9fff}]' "$BATS_TEST_TMPDIR/t"
	grep -qP '[\x{1F300}-\x{1FAFF}]' "$BATS_TEST_TMPDIR/t"
	# each token is still exactly one data line: 2000 events
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/body")" -eq 2000 ]
}

@test "POST /generate answers the exact JSON shape" {
	run curl -sS -w '\n%{http_code} %{content_type}' -X POST \
		-d '{"prompt":"hello","max_tokens":20}' "$BASE/generate"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "200 application/json" ]
	echo "${lines[0]}" | jq -e '(keys == ["text","usage"]) and
		(.usage | keys == ["completion_tokens","prompt_tokens"]) and
		.usage.completion_tokens == 20 and .usage.prompt_tokens == 1'
	[ "$(echo "${lines[0]}" | jq -j .text)" = "$("$TOKGEN" --prompt hello -n 20)" ]
}

@test "C07: max_tokens=1 and 2 give exactly 1 and 2 tokens, stream and POST" {
	for n in 1 2; do
		stream_body "prompt=hello&max_tokens=$n"
		[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/body")" -eq "$n" ]
		c=$(curl -sS -d "{\"prompt\":\"hello\",\"max_tokens\":$n}" \
			"$BASE/generate" | jq .usage.completion_tokens)
		[ "$c" -eq "$n" ]
	done
}

@test "max_tokens 0 gives no token, missing max_tokens gives 16" {
	stream_body 'prompt=hello&max_tokens=0'
	[ "$(grep -c '^data: ' "$BATS_TEST_TMPDIR/body")" -eq 1 ]
	grep -qx 'data: \[DONE\]' "$BATS_TEST_TMPDIR/body"
	stream_body 'prompt=hello'
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/body")" -eq 16 ]
	r=$(curl -sS -d '{"prompt":"hello","max_tokens":0}' "$BASE/generate")
	[ "$(echo "$r" | jq -r '.text + "|" + (.usage.completion_tokens|tostring)')" = "|0" ]
	r=$(curl -sS -d '{"prompt":"hello"}' "$BASE/generate")
	[ "$(echo "$r" | jq .usage.completion_tokens)" -eq 16 ]
}

@test "C15: completion_tokens equals the token events, prompt not added" {
	stream_body 'prompt=count+me+please&max_tokens=37'
	n=$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/body")
	r=$(curl -sS -d '{"prompt":"count me please","max_tokens":37}' "$BASE/generate")
	[ "$(echo "$r" | jq .usage.completion_tokens)" -eq "$n" ]
	[ "$n" -eq 37 ]
	pt=$(echo "$r" | jq .usage.prompt_tokens)
	[ "$pt" -eq "$("$TOKGEN" --count --prompt 'count me please')" ]
	id=$(header_of "$BATS_TEST_TMPDIR/head" X-Request-Id)
	[ "$(debug_field "$id" generated)" -eq 37 ]
}

@test "C06: '+' and percent escapes decode like the same POST prompt" {
	for pair in '1%2B1%3D2|1+1=2' 'a+b|a b' '%E4%BD%A0%E5%A5%BD|你好' \
	    '%7e%7E|~~'; do
		q=${pair%%|*}; p=${pair#*|}
		stream_body "prompt=$q&max_tokens=12"
		token_text "$BATS_TEST_TMPDIR/body" > "$BATS_TEST_TMPDIR/s"
		id=$(header_of "$BATS_TEST_TMPDIR/head" X-Request-Id)
		r=$(jq -n --arg p "$p" '{prompt:$p,max_tokens:12}' |
			curl -sS --data-binary @- "$BASE/generate")
		echo "$r" | jq -j .text | cmp - "$BATS_TEST_TMPDIR/s"
		[ "$(debug_field "$id" prompt_tokens)" = "$(echo "$r" | jq .usage.prompt_tokens)" ]
		[ "$(debug_field "$id" prompt_tokens)" = "$("$TOKGEN" --count --prompt "$p")" ]
	done
}

@test "C05: a 70 KB POST prompt is read whole" {
	head -c 52500 /dev/urandom | base64 -w 0 > "$BATS_TEST_TMPDIR/p"
	[ "$(wc -c < "$BATS_TEST_TMPDIR/p")" -eq 70000 ]
	jq -Rn --rawfile p "$BATS_TEST_TMPDIR/p" '{prompt:$p,max_tokens:3}' \
		> "$BATS_TEST_TMPDIR/req.json"
	r=$(curl -sS --data-binary @"$BATS_TEST_TMPDIR/req.json" "$BASE/generate")
	want=$("$TOKGEN" --count --prompt-file "$BATS_TEST_TMPDIR/p")
	[ "$(echo "$r" | jq .usage.prompt_tokens)" -eq "$want" ]
	[ "$want" -gt 10000 ]
}

@test "C12: an error injected mid-stream: error event, then one [DONE], then EOF" {
	stream_body 'prompt=hello&max_tokens=10&error_after=3'
	b=$BATS_TEST_TMPDIR/body
	[ "$(grep -c '^data: {"token":' "$b")" -eq 3 ]
	[ "$(grep '^data: ' "$b" | sed -n 4p | sed 's/^data: //' | jq -r .error.code)" = injected_error ]
	[ "$(grep '^data: ' "$b" | tail -n 1)" = 'data: [DONE]' ]
	[ "$(grep -c '^data: \[DONE\]' "$b")" -eq 1 ]
	[ "$(grep -c '^data: ' "$b")" -eq 5 ]
	id=$(header_of "$BATS_TEST_TMPDIR/head" X-Request-Id)
	[ "$(debug_field "$id" status)" = error ]
}

@test "C01: with TPOT 300 ms events arrive about 300 ms apart" {
	run "$TOKBENCH" stream --url "$BASE" --prompt hello --max-tokens 5 \
		--tpot-ms 300 --json
	[ "$status" -eq 0 ]
	echo "$output" | jq -c .itl_ms
	# Each decode step is due on the schedule, so one event this machine
	# delays by d makes its gap 300 + d and the next 300 - d: each gap
	# within 150 ms of 300, the four together within 100 ms of 1,200.
	echo "$output" | jq -e '.itl_ms | length == 4 and
		all(.[]; . > 150 and . < 450) and (add | . > 1100 and . < 1300)'
}

@test "C14: TTFT is clocked on the first token, not on headers or keep-alives" {
	run "$TOKBENCH" stream --url "$BASE" --prompt hello --max-tokens 2 \
		--prefill-ms 2000 --json
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.ttft_ms >= 2000 and .ttft_ms < 3000 and .comments >= 3'
}

@test "C13: a 12 s prefill keeps comment lines coming every keep-alive interval" {
	curl -sS -N "$BASE/stream?prompt=hello&max_tokens=1&prefill_ms=12000" |
	while IFS= read -r line; do
		echo "$EPOCHREALTIME $line"
	done > "$BATS_TEST_TMPDIR/t"
	# comments every 500 ms: at least 20 of them before the token
	[ "$(grep -c ' : keep-alive$' "$BATS_TEST_TMPDIR/t")" -ge 20 ]
	# no silent gap longer than 800 ms between any two lines
	awk '{ t = $1 + 0; if (NR > 1 && t - prev > 0.8) bad = 1; prev = t }
	     END { exit bad }' "$BATS_TEST_TMPDIR/t"
	grep -q ' data: {"token":' "$BATS_TEST_TMPDIR/t"
	[ "$(tail -n 2 "$BATS_TEST_TMPDIR/t" | head -n 1 | cut -d' ' -f2-)" = 'data: [DONE]' ]
}

@test "GET /health and /_debug/generated answer JSON" {
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
	stream_body 'prompt=dbg&max_tokens=4'
	id=$(header_of "$BATS_TEST_TMPDIR/head" X-Request-Id)
	r=$(curl -sS "$BASE/_debug/generated?id=$id")
	echo "$r" | jq -e --arg id "$id" '.id == $id and .requested == 4 and
		.generated == 4 and .status == "done" and .kind == "stream" and
		.total_generated >= 4'
	# without id: the most recently started stream
	[ "$(curl -sS "$BASE/_debug/generated" | jq -r .id)" = "$id" ]
}
