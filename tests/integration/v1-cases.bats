#!/usr/bin/env bats
# Cases C10, C11, C12 and C15 (docs/RELIABILITY.md "The case ids")
# through the OpenAI endpoints (the lab endpoints have theirs in stream.bats).

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# chat BODY-EXTRA: a /v1/chat/completions body for prompt $PROMPT
chat() {
	printf '{"model":"tokstream-sim","messages":[{"role":"user","content":"%s"}]%s}' \
		"$PROMPT" "$1"
}

# deltas FILE: the concatenated delta contents of a saved chat stream
deltas() {
	sed -n 's/^data: \({.*\)/\1/p' "$1" |
		jq -j '.choices[0].delta.content // empty'
}

@test "C10 (/v1): multi-byte characters split over byte tokens arrive whole; stream text equals the non-stream text" {
	split=0
	for seed in 1 2 3 4 5 6 7 8; do
		PROMPT="tell me about caf\u00e9s and \u6771\u4eac $seed"
		curl -sN "$BASE/v1/chat/completions" \
			-d "$(chat ",\"max_tokens\":200,\"seed\":$seed,\"temperature\":1.5,\"ignore_eos\":true,\"stream\":true")" \
			>"$BATS_TEST_TMPDIR/s$seed"
		curl -s "$BASE/v1/chat/completions" \
			-d "$(chat ",\"max_tokens\":200,\"seed\":$seed,\"temperature\":1.5,\"ignore_eos\":true")" \
			>"$BATS_TEST_TMPDIR/n$seed"
		# every event is JSON, every text valid UTF-8
		sed -n 's/^data: \({.*\)/\1/p' "$BATS_TEST_TMPDIR/s$seed" |
			jq -e . >/dev/null
		deltas "$BATS_TEST_TMPDIR/s$seed" >"$BATS_TEST_TMPDIR/t$seed"
		iconv -f UTF-8 -t UTF-8 "$BATS_TEST_TMPDIR/t$seed" >/dev/null
		jq -j '.choices[0].message.content' "$BATS_TEST_TMPDIR/n$seed" \
			>"$BATS_TEST_TMPDIR/u$seed"
		cmp "$BATS_TEST_TMPDIR/t$seed" "$BATS_TEST_TMPDIR/u$seed"
		# chunks that carried no text: a character was being spelt
		n=$(jq -r '.usage.completion_tokens' "$BATS_TEST_TMPDIR/n$seed")
		c=$(grep -c '"delta":{"\(role":"assistant","\)\{0,1\}content"' \
			"$BATS_TEST_TMPDIR/s$seed")
		[ "$c" -lt "$n" ] && split=$((split + 1))
	done
	echo "streams with held-back bytes: $split of 8"
	[ "$split" -ge 1 ]
}

@test "C11 (/v1): quotes, backslashes, newlines and control characters stay inside one data line of JSON" {
	PROMPT='say \"quoted\" \\\\ and a tab\t and a\nnew line'
	curl -sN "$BASE/v1/chat/completions" \
		-d "$(chat ',"max_tokens":300,"seed":3,"stream":true')" \
		>"$BATS_TEST_TMPDIR/s"
	# events are separated by one blank line and hold exactly one line
	awk 'BEGIN { RS = "" } { if (split($0, l, "\n") != 1) bad++ }
	     END { exit bad ? 1 : 0 }' "$BATS_TEST_TMPDIR/s"
	grep -v '^data: \[DONE\]$' "$BATS_TEST_TMPDIR/s" | grep . |
		while IFS= read -r line; do
			case $line in data:\ \{*) ;; *) exit 1 ;; esac
			printf '%s' "${line#data: }" | jq -e . >/dev/null
		done
	deltas "$BATS_TEST_TMPDIR/s" | grep -q '[\\"]'
}

@test "C12 (/v1): normal end, max_tokens end and an injected error each end with one [DONE], then EOF" {
	PROMPT=hello
	for extra in ',"max_tokens":300' ',"max_tokens":7' \
		',"max_tokens":30,"error_after":4'; do
		curl -sN "$BASE/v1/chat/completions" \
			-d "$(chat "$extra,\"stream\":true")" >"$BATS_TEST_TMPDIR/s"
		[ "$(grep -c '^data: \[DONE\]$' "$BATS_TEST_TMPDIR/s")" -eq 1 ]
		# [DONE] is the last event
		[ "$(grep . "$BATS_TEST_TMPDIR/s" | tail -n 1)" = "data: [DONE]" ]
	done
	# the error event comes right before [DONE], with no finish chunk
	grep . "$BATS_TEST_TMPDIR/s" | tail -n 2 | head -n 1 |
		grep -q '^data: {"error":{'
	! grep -q '"finish_reason":"' "$BATS_TEST_TMPDIR/s" || false
}

@test "C15 (/v1): completion_tokens counts the generated tokens, stream and non-stream alike; the prompt is never added" {
	PROMPT="count me"
	curl -sN -D "$BATS_TEST_TMPDIR/h" "$BASE/v1/chat/completions" \
		-d "$(chat ',"max_tokens":25,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}')" \
		>"$BATS_TEST_TMPDIR/s"
	curl -s "$BASE/v1/chat/completions" \
		-d "$(chat ',"max_tokens":25,"ignore_eos":true')" >"$BATS_TEST_TMPDIR/n"
	# the same counts; the second request finds the first's prompt in
	# the prefix cache (cached_tokens), which is not what C15 is about
	su=$(grep '"usage":{' "$BATS_TEST_TMPDIR/s" | sed 's/^data: //' |
		jq -c '.usage | del(.prompt_tokens_details)')
	nu=$(jq -c '.usage | del(.prompt_tokens_details)' "$BATS_TEST_TMPDIR/n")
	echo "stream $su, non-stream $nu"
	[ "$su" = "$nu" ]
	[ "$(echo "$su" | jq .completion_tokens)" -eq 25 ]
	[ "$(echo "$su" | jq '.total_tokens == .prompt_tokens + .completion_tokens')" = true ]
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	[ "$(debug_field "$id" generated)" -eq 25 ]
	# without holdback, one chunk per token
	[ "$(grep -c '"delta":{"\(role":"assistant","\)\{0,1\}content"' \
		"$BATS_TEST_TMPDIR/s")" -le 25 ]
}

@test "CORS preflight allows the headers a browser SDK asks for (the OpenAI SDK's X-Stainless-*)" {
	curl -s -D "$BATS_TEST_TMPDIR/h" -o /dev/null -X OPTIONS \
		-H 'Origin: http://example.test' \
		-H 'Access-Control-Request-Method: POST' \
		-H 'Access-Control-Request-Headers: authorization, content-type, x-stainless-lang, x-stainless-retry-count' \
		"$BASE/v1/chat/completions"
	header_of "$BATS_TEST_TMPDIR/h" Access-Control-Allow-Headers |
		grep -q 'x-stainless-retry-count'
	# a header list that is not plain names is not echoed
	curl -s -D "$BATS_TEST_TMPDIR/h2" -o /dev/null -X OPTIONS \
		-H 'Access-Control-Request-Headers: x-a;evil' "$BASE/v1/models"
	[ "$(header_of "$BATS_TEST_TMPDIR/h2" Access-Control-Allow-Headers)" = \
	  "Content-Type, Last-Event-ID, Authorization" ]
}
