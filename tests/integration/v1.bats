#!/usr/bin/env bats
# The OpenAI-compatible API (docs/API.md "OpenAI API") against a real
# lighttpd + responder: POST /v1/chat/completions and /v1/completions,
# stream and not, GET /v1/models; what a client of the OpenAI API relies
# on (chunk order, usage, seeds, stop strings, finish reasons, errors),
# checked with curl and jq against tokgen, which runs the same language
# model offline. The official SDK's test is v1-sdk.bats.

load helpers

MODEL=tokstream-sim

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# A second server some tests start (429); stopped even if the test fails.
teardown() {
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

# chat CONTENT [JSON]: a chat request of one user message, merged with
# the fields of JSON; prefill_ms 0 and tpot_ms 1 unless JSON says
# otherwise, so that the whole file runs in seconds.
chat() {
	jq -nc --arg c "$1" --argjson x "${2:-{\}}" --arg m "$MODEL" \
		'{model:$m, messages:[{role:"user", content:$c}],
		  prefill_ms:0, tpot_ms:1} + $x'
}

# comp PROMPT [JSON]: a completions request, as chat
comp() {
	jq -nc --arg p "$1" --argjson x "${2:-{\}}" --arg m "$MODEL" \
		'{model:$m, prompt:$p, prefill_ms:0, tpot_ms:1} + $x'
}

# post PATH BODY OUT: POSTs BODY; OUT gets the body, OUT.h the headers;
# prints the HTTP status
post() {
	curl -sS -m 30 -o "$3" -D "$3.h" -w '%{http_code}' \
		-H 'Content-Type: application/json' --data-binary "$2" \
		"$BASE$1"
}

# streamed BODY: BODY with stream true and include_usage
streamed() {
	jq -c '. + {stream:true, stream_options:{include_usage:true}}' <<<"$1"
}

# chunks FILE: the JSON of every data: line of an SSE response but the
# [DONE], one a line
chunks() {
	sed -n 's/^data: //p' "$1" | grep -vx '\[DONE\]' || true
}

# joined FILE: the text of a stream (chat deltas or completion texts),
# concatenated, exact bytes
joined() {
	chunks "$1" | jq -R -j 'fromjson | .choices[0] |
		(.delta.content // .text // empty)'
}

# text FILE: the text of a non-stream answer, exact bytes
text() {
	jq -j '.choices[0] | (.message.content // .text)' "$1"
}

# pair PATH BODY NAME: the request without and with stream (and
# include_usage): $d/NAME (JSON) and $d/NAME.s (SSE). Checks that both
# are 200, that the stream's text is the non-stream text byte for byte,
# and that finish_reason and usage agree.
pair() {
	local d=$BATS_TEST_TMPDIR
	[ "$(post "$1" "$2" "$d/$3")" = 200 ]
	[ "$(post "$1" "$(streamed "$2")" "$d/$3.s")" = 200 ]
	text "$d/$3" >"$d/$3.text"
	joined "$d/$3.s" >"$d/$3.s.text"
	cmp "$d/$3.text" "$d/$3.s.text"
	[ "$(jq -r '.choices[0].finish_reason' "$d/$3")" = \
	  "$(chunks "$d/$3.s" | jq -R -r 'fromjson | .choices[0].finish_reason
		// empty')" ]
	# the same counts (cached_tokens aside: the second request finds
	# the first's prompt in the prefix cache)
	[ "$(jq -c '.usage | del(.prompt_tokens_details)' "$d/$3")" = \
	  "$(chunks "$d/$3.s" | tail -n 1 |
		jq -c '.usage | del(.prompt_tokens_details)')" ]
}

# expect_v1_error STATUS CODE PARAM CURL-ARGS...: the status, and an
# error body in the OpenAI shape {"error":{"message","type","param",
# "code"}} with that code and param (- for null)
expect_v1_error() {
	local want=$1 code=$2 param=$3 f=$BATS_TEST_TMPDIR/err
	shift 3
	run curl -sS -m 10 -o "$f" -w '%{http_code} %{content_type}' "$@"
	echo "got: $output $(cat "$f")"
	[ "$status" -eq 0 ]
	[ "$output" = "$want application/json" ]
	jq -e --arg c "$code" --arg p "$param" '
		(.error | keys == ["code","message","param","type"]) and
		.error.code == $c and (.error.message | length > 10) and
		(.error.type | type == "string") and
		.error.param == (if $p == "-" then null else $p end)' "$f"
}

# ---- text, streaming format, usage ---------------------------------------

@test "chat and completions: the stream's deltas joined equal the non-stream text byte for byte (default seed), and tokgen's" {
	d=$BATS_TEST_TMPDIR
	# 300 tokens with characters split over byte tokens (held back)
	pair /v1/chat/completions \
		"$(chat utf8 '{"max_tokens":300,"ignore_eos":true}')" c1
	"$TOKGEN" --chat -p utf8 --ignore-eos -n 300 >"$d/c1.tokgen"
	cmp "$d/c1.text" "$d/c1.tokgen"
	LC_ALL=C grep -q '[^ -~]' "$d/c1.text"     # non-ASCII text in it
	# ended by EOS
	pair /v1/chat/completions "$(chat hi '{"max_tokens":1000}')" c2
	"$TOKGEN" --chat -p hi -n 1000 >"$d/c2.tokgen"
	cmp "$d/c2.text" "$d/c2.tokgen"
	# completions, with and without max_tokens (default 16)
	pair /v1/completions "$(comp hello '{"max_tokens":200}')" p1
	"$TOKGEN" --lm -p hello -n 200 >"$d/p1.tokgen"
	cmp "$d/p1.text" "$d/p1.tokgen"
	pair /v1/completions "$(comp 'Once upon a time')" p2
	"$TOKGEN" --lm -p 'Once upon a time' >"$d/p2.tokgen"
	cmp "$d/p2.text" "$d/p2.tokgen"
	# a prompt with quotes, a newline, a NUL and non-ASCII, as JSON
	pair /v1/completions \
		'{"model":"tokstream-sim","prompt":"a \"q\"\n\u0000 é 字","max_tokens":30,"tpot_ms":1}' p3
	printf 'a "q"\n\0 é 字' >"$d/p3.prompt"
	"$TOKGEN" --lm -f "$d/p3.prompt" -n 30 >"$d/p3.tokgen"
	cmp "$d/p3.text" "$d/p3.tokgen"
}

@test "chat stream: role only in the first chunk, with its first token; the finish chunk, then the usage chunk (choices []), then [DONE]; every chunk one UTF-8 JSON event" {
	d=$BATS_TEST_TMPDIR
	body=$(chat utf8 '{"max_tokens":300,"ignore_eos":true}')
	[ "$(post /v1/chat/completions "$(streamed "$body")" "$d/s")" = 200 ]
	id=$(header_of "$d/s.h" X-Request-Id)
	[ "$(header_of "$d/s.h" Content-Type)" = "text/event-stream; charset=utf-8" ]
	[ "$(header_of "$d/s.h" Cache-Control)" = no-cache ]
	# framing: "data: <json>" then an empty line, LF endings, nothing else
	# (keep-alive comments allowed), valid UTF-8 throughout
	! grep -v -e '^data: ' -e '^$' -e '^: keep-alive$' "$d/s" || false
	! grep -q $'\r' "$d/s" || false
	awk 'NR % 2 == 1 && $0 == "" { bad = 1 } NR % 2 == 0 && $0 != "" \
		{ bad = 1 } END { exit bad }' "$d/s"
	iconv -f UTF-8 -t UTF-8 "$d/s" >/dev/null
	[ "$(sed -n 's/^data: //p' "$d/s" | tail -n 1)" = '[DONE]' ]
	[ "$(grep -c '^data: \[DONE\]$' "$d/s")" -eq 1 ]
	# every other event is one JSON object (fromjson fails otherwise)
	chunks "$d/s" | jq -R -c 'fromjson' >"$d/c"
	[ "$(wc -l <"$d/c")" -eq "$(chunks "$d/s" | wc -l)" ]
	prompt=$("$TOKGEN" --chat -p utf8 --count)
	# tokens whose text was held back (a split character) send nothing
	want=$("$TOKGEN" --chat -p utf8 --ignore-eos -n 300 --json |
		grep -vcx '""')
	echo "token chunks expected: $want of 300 tokens"
	[ "$want" -lt 300 ]
	jq -s -e --arg id "chatcmpl-$id" --argjson want "$want" \
		--argjson prompt "$prompt" '
		.[:-2] as $tok | .[-2] as $fin | .[-1] as $use |
		($tok | length) == $want and
		all(.[]; .id == $id and .model == "tokstream-sim" and
		    .object == "chat.completion.chunk" and
		    (.created | type == "number") and has("usage")) and
		([.[].created] | unique | length) == 1 and
		($tok[0].choices[0].delta | keys_unsorted) == ["role","content"] and
		$tok[0].choices[0].delta.role == "assistant" and
		($tok[0].choices[0].delta.content | length) > 0 and
		all($tok[1:][]; .choices[0].delta | keys == ["content"]) and
		all($tok[]; (.choices | length) == 1 and
		    .choices[0].index == 0 and
		    .choices[0].finish_reason == null and
		    .choices[0].logprobs == null and .usage == null and
		    (.choices[0].delta.content | length) > 0) and
		$fin.choices[0].delta == {} and
		$fin.choices[0].finish_reason == "length" and
		$fin.usage == null and
		$use.choices == [] and
		($use.usage | del(.prompt_tokens_details)) == {prompt_tokens:
		    $prompt, completion_tokens: 300, total_tokens: ($prompt +
		    300)} and
		($use.usage.prompt_tokens_details.cached_tokens | type) ==
		    "number"' "$d/c"
	# without include_usage: no usage anywhere, the finish chunk is last
	[ "$(post /v1/chat/completions "$(jq -c '. + {stream:true}' \
		<<<"$body")" "$d/n")" = 200 ]
	chunks "$d/n" | jq -s -e 'all(.[]; has("usage") | not) and
		.[-1].choices[0].finish_reason == "length" and
		(.[0].choices[0].delta.role == "assistant")'
	[ "$(sed -n 's/^data: //p' "$d/n" | tail -n 1)" = '[DONE]' ]
	cmp <(joined "$d/s") <(joined "$d/n")
}

@test "completions stream: text_completion chunks, a finish chunk with empty text, usage chunk, [DONE]" {
	d=$BATS_TEST_TMPDIR
	body=$(comp hello '{"max_tokens":40,"ignore_eos":true}')
	[ "$(post /v1/completions "$(streamed "$body")" "$d/s")" = 200 ]
	id=$(header_of "$d/s.h" X-Request-Id)
	iconv -f UTF-8 -t UTF-8 "$d/s" >/dev/null
	[ "$(sed -n 's/^data: //p' "$d/s" | tail -n 1)" = '[DONE]' ]
	chunks "$d/s" | jq -R -c fromjson | jq -s -e --arg id "cmpl-$id" '
		.[:-2] as $tok |
		all(.[]; .id == $id and .object == "text_completion") and
		all($tok[]; (.choices[0].text | length) > 0 and
		    .choices[0].finish_reason == null and
		    (.choices[0] | has("delta") | not)) and
		.[-2].choices[0].text == "" and
		.[-2].choices[0].finish_reason == "length" and
		.[-1].choices == [] and .[-1].usage.completion_tokens == 40 and
		.[-1].usage.prompt_tokens == 1'
	# max_tokens 0: prefill only, the stream is the finish chunk
	[ "$(post /v1/completions "$(streamed "$(comp hello \
		'{"max_tokens":0}')")" "$d/z")" = 200 ]
	chunks "$d/z" | jq -s -e 'length == 2 and
		.[0].choices[0].text == "" and
		.[0].choices[0].finish_reason == "length" and
		.[1].usage.completion_tokens == 0'
}

@test "non-stream answers: chat.completion and text_completion objects, id from X-Request-Id" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/chat/completions "$(chat hi '{"max_tokens":5}')" \
		"$d/c")" = 200 ]
	id=$(header_of "$d/c.h" X-Request-Id)
	[ "$(header_of "$d/c.h" Content-Type)" = application/json ]
	jq -e --arg id "chatcmpl-$id" '.id == $id and
		.object == "chat.completion" and .model == "tokstream-sim" and
		(.created | type == "number") and (.choices | length) == 1 and
		(.choices[0] | keys) == ["finish_reason","index","logprobs",
		    "message"] and
		.choices[0].message.role == "assistant" and
		.choices[0].finish_reason == "length" and
		.usage.completion_tokens == 5' "$d/c"
	[ "$(post /v1/completions "$(comp hi '{"max_tokens":5}')" \
		"$d/p")" = 200 ]
	id=$(header_of "$d/p.h" X-Request-Id)
	jq -e --arg id "cmpl-$id" --argjson n "$("$TOKGEN" -p hi --count)" '
		.id == $id and .object == "text_completion" and
		(.choices[0] | keys) == ["finish_reason","index","logprobs",
		    "text"] and (.usage | del(.prompt_tokens_details)) ==
		    {prompt_tokens: $n, completion_tokens: 5, total_tokens:
		    ($n + 5)}' "$d/p"
}

@test "usage: prompt_tokens is counted after the chat template; completion_tokens is every token generated (EOS included)" {
	d=$BATS_TEST_TMPDIR
	# one user message: the template's text, tokenized
	[ "$(post /v1/chat/completions "$(chat hi '{"max_tokens":1000}')" \
		"$d/a")" = 200 ]
	n=$(printf '<|user|>\nhi\n<|assistant|>\n' | "$TOKGEN" -f - --count)
	[ "$n" -eq "$("$TOKGEN" --chat -p hi --count)" ]
	[ "$(jq .usage.prompt_tokens "$d/a")" -eq "$n" ]
	# ended by EOS: the EOS token is counted; it has no text
	[ "$(jq -r '.choices[0].finish_reason' "$d/a")" = stop ]
	ids=$("$TOKGEN" --chat -p hi -n 1000 --ids | wc -l)
	"$TOKGEN" --chat -p hi -n 1000 --usage 2>"$d/u" >/dev/null
	grep -q "completion_tokens=$ids " "$d/u"
	[ "$(jq .usage.completion_tokens "$d/a")" -eq "$ids" ]
	id=$(header_of "$d/a.h" X-Request-Id)
	[ "$(debug_field "$id" generated)" -eq "$ids" ]
	[ "$(debug_field "$id" prompt_tokens)" -eq "$n" ]
	jq -e '.usage.total_tokens == .usage.prompt_tokens +
		.usage.completion_tokens' "$d/a"
	# a conversation: system (and "developer", the same marker), user,
	# assistant, user
	conv='[{"role":"system","content":"Be brief."},
	       {"role":"user","content":"What is a token?"},
	       {"role":"assistant","content":"A piece of text."},
	       {"role":"user","content":"And TTFT?"}]'
	printf '<|system|>\nBe brief.\n<|user|>\nWhat is a token?\n<|assistant|>\nA piece of text.\n<|user|>\nAnd TTFT?\n<|assistant|>\n' \
		>"$d/rendered"
	n=$("$TOKGEN" -f "$d/rendered" --count)
	for role in system developer; do
		body=$(jq -nc --argjson m "$conv" --arg r "$role" '{
			model:"tokstream-sim", max_tokens:8, tpot_ms:1,
			messages:($m | .[0].role = $r)}')
		[ "$(post /v1/chat/completions "$body" "$d/$role")" = 200 ]
		[ "$(jq .usage.prompt_tokens "$d/$role")" -eq "$n" ]
	done
	cmp <(text "$d/system") <(text "$d/developer")
	# the same conversation as a completions prompt: same count
	[ "$(post /v1/completions "$(comp "$(cat "$d/rendered")" \
		'{"max_tokens":1}')" "$d/p")" = 200 ]
	# (the command substitution dropped the final newline)
	[ "$(jq .usage.prompt_tokens "$d/p")" -eq \
	  "$("$TOKGEN" -f <(head -c -1 "$d/rendered") --count)" ]
	# content as text parts is the parts joined with "\n": same prompt,
	# same default seed, same answer
	parts=$(jq -nc '{model:"tokstream-sim", max_tokens:20, tpot_ms:1,
		messages:[{role:"user", content:[{type:"text", text:"two"},
		    {type:"text", text:"lines"}]}]}')
	[ "$(post /v1/chat/completions "$parts" "$d/parts")" = 200 ]
	[ "$(post /v1/chat/completions "$(chat $'two\nlines' \
		'{"max_tokens":20}')" "$d/joined")" = 200 ]
	cmp <(text "$d/parts") <(text "$d/joined")
	[ "$(jq .usage.prompt_tokens "$d/parts")" -eq \
	  "$(jq .usage.prompt_tokens "$d/joined")" ]
}

# ---- sampling --------------------------------------------------------------

@test "seed: the same seed gives the same output, different seeds differ; temperature 0 is deterministic and ignores the seed" {
	d=$BATS_TEST_TMPDIR
	for s in 7 7b 8; do
		[ "$(post /v1/chat/completions "$(chat hi \
			"{\"max_tokens\":40,\"seed\":${s%b}}")" "$d/s$s")" = 200 ]
		text "$d/s$s" >"$d/s$s.t"
	done
	cmp "$d/s7.t" "$d/s7b.t"
	! cmp -s "$d/s7.t" "$d/s8.t" || false
	"$TOKGEN" --chat -p hi -n 40 --seed 7 | cmp - "$d/s7.t"
	# streamed with the same seed: the same text
	[ "$(post /v1/chat/completions "$(streamed "$(chat hi \
		'{"max_tokens":40,"seed":7}')")" "$d/ss")" = 200 ]
	joined "$d/ss" | cmp - "$d/s7.t"
	# no seed (from the prompt) differs from both
	[ "$(post /v1/chat/completions "$(chat hi '{"max_tokens":40}')" \
		"$d/def")" = 200 ]
	! cmp -s <(text "$d/def") "$d/s7.t" || false
	# any int64 is accepted, as OpenAI's; a negative seed is taken
	# modulo 2^64 (-1 is tokgen's --seed 2^64-1)
	[ "$(post /v1/chat/completions "$(chat hi \
		'{"max_tokens":10,"seed":-1}')" "$d/neg")" = 200 ]
	"$TOKGEN" --chat -p hi -n 10 --seed 18446744073709551615 |
		cmp - <(text "$d/neg")
	# completions too
	for s in 1 1b 2; do
		[ "$(post /v1/completions "$(comp hello \
			"{\"max_tokens\":30,\"seed\":${s%b}}")" "$d/p$s")" = 200 ]
	done
	cmp <(text "$d/p1") <(text "$d/p1b")
	! cmp -s <(text "$d/p1") <(text "$d/p2") || false
	# temperature 0: greedy, the same text whatever the seed
	for s in 1 2 3; do
		[ "$(post /v1/chat/completions "$(chat hi \
			"{\"max_tokens\":40,\"temperature\":0,\"seed\":$s}")" \
			"$d/g$s")" = 200 ]
	done
	cmp <(text "$d/g1") <(text "$d/g2")
	cmp <(text "$d/g1") <(text "$d/g3")
	"$TOKGEN" --chat -p hi -n 40 --temperature 0 | cmp - <(text "$d/g1")
	# top_p below 1 changes the draw, reproducibly
	for s in a b; do
		[ "$(post /v1/chat/completions "$(chat hi \
			'{"max_tokens":40,"top_p":0.5,"seed":7}')" \
			"$d/t$s")" = 200 ]
	done
	cmp <(text "$d/ta") <(text "$d/tb")
	! cmp -s <(text "$d/ta") "$d/s7.t" || false
}

# ---- stop strings, finish reasons --------------------------------------------

# stop_case FILE: from the chunks of a stream without stop strings, the
# first boundary after the second chunk that a 4-character ASCII string
# spans (the last 2 characters of one chunk and the first 2 of the next)
# whose first occurrence in the whole text is there: prints
# {"stop": S, "before": the text before S, "i": chunk index}
stop_case() {
	joined_chunks() {
		chunks "$1" | jq -R 'fromjson | .choices[0] |
			(.delta.content // .text // empty)'
	}
	joined_chunks "$1" | jq -s -c '. as $c | ($c | add) as $full |
		first(range(2; length - 1) as $i |
		select(($c[$i] | length) >= 2 and ($c[$i + 1] | length) >= 2) |
		($c[$i][-2:] + $c[$i + 1][:2]) as $s |
		select($s | test("^[ -~]+$")) |
		(($c[:$i] | add // "") + $c[$i][:-2]) as $before |
		select(($full | split($s))[0] == $before) |
		{stop: $s, before: $before, i: $i})'
}

@test "stop strings: matched across token boundaries, never in the text, finish_reason stop, stream equals non-stream" {
	d=$BATS_TEST_TMPDIR
	for ep in chat comp; do
		if [ $ep = chat ]; then
			path=/v1/chat/completions
			base=$(chat 'stop here' '{"max_tokens":120,"ignore_eos":true}')
			tg=(--chat -p 'stop here')
		else
			path=/v1/completions
			base=$(comp 'stop here' '{"max_tokens":120,"ignore_eos":true}')
			tg=(--lm -p 'stop here')
		fi
		[ "$(post $path "$(streamed "$base")" "$d/$ep.free")" = 200 ]
		case=$(stop_case "$d/$ep.free")
		echo "$ep: $case"
		[ -n "$case" ]
		s=$(jq -r .stop <<<"$case")
		jq -j .before <<<"$case" >"$d/$ep.before"
		# the stop string as a string, as an array, and behind one
		# that never matches
		for form in str arr two; do
			case $form in
			str) x=$(jq -c '{stop: .stop}' <<<"$case") ;;
			arr) x=$(jq -c '{stop: [.stop]}' <<<"$case") ;;
			two) x=$(jq -c '{stop: ["\u0001never", .stop]}' \
				<<<"$case") ;;
			esac
			body=$(jq -c --argjson x "$x" '. + $x' <<<"$base")
			pair $path "$body" "$ep.$form"
			cmp "$d/$ep.$form.text" "$d/$ep.before"
			! grep -qF -- "$s" "$d/$ep.$form.text" || false
			[ "$(jq -r '.choices[0].finish_reason' \
				"$d/$ep.$form")" = stop ]
			# no chunk carries any part of the stop string's
			# own occurrence: the stream ends right before it
			[ "$(joined "$d/$ep.$form.s" | wc -c)" -eq \
			  "$(wc -c <"$d/$ep.before")" ]
		done
		# completion_tokens: up to the token that completed the stop
		# string, as tokgen and /_debug/generated count them
		ids=$("$TOKGEN" "${tg[@]}" --ignore-eos -n 120 --stop "$s" --ids |
			wc -l)
		[ "$(jq .usage.completion_tokens "$d/$ep.arr")" -eq "$ids" ]
		[ "$ids" -lt 120 ]
		"$TOKGEN" "${tg[@]}" --ignore-eos -n 120 --stop "$s" |
			cmp - "$d/$ep.before"
		id=$(header_of "$d/$ep.arr.h" X-Request-Id)
		[ "$(debug_field "$id" generated)" -eq "$ids" ]
		[ "$(debug_field "$id" finish_reason)" = stop ]
	done
}

@test "max_tokens gives finish_reason length; max_completion_tokens wins; defaults 16 (completions) and 256 (chat)" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/chat/completions "$(chat hi '{"max_tokens":5}')" \
		"$d/a")" = 200 ]
	jq -e '.choices[0].finish_reason == "length" and
		.usage.completion_tokens == 5' "$d/a"
	id=$(header_of "$d/a.h" X-Request-Id)
	[ "$(debug_field "$id" finish_reason)" = length ]
	[ "$(post /v1/chat/completions "$(chat hi \
		'{"max_tokens":5,"max_completion_tokens":3}')" "$d/b")" = 200 ]
	jq -e '.usage.completion_tokens == 3' "$d/b"
	# the defaults, with ignore_eos so that EOS cannot end them first
	[ "$(post /v1/completions "$(comp hi '{"ignore_eos":true}')" \
		"$d/c")" = 200 ]
	jq -e '.choices[0].finish_reason == "length" and
		.usage.completion_tokens == 16' "$d/c"
	[ "$(post /v1/chat/completions "$(chat hi '{"ignore_eos":true}')" \
		"$d/e")" = 200 ]
	jq -e '.choices[0].finish_reason == "length" and
		.usage.completion_tokens == 256' "$d/e"
}

@test "EOS gives finish_reason stop; ignore_eos runs the same chat to length" {
	d=$BATS_TEST_TMPDIR
	pair /v1/chat/completions "$(chat 'tell me a story' \
		'{"max_tokens":1000}')" eos
	jq -e '.choices[0].finish_reason == "stop"' "$d/eos"
	n=$(jq .usage.completion_tokens "$d/eos")
	echo "ended by EOS after $n tokens"
	[ "$n" -lt 1000 ]
	id=$(header_of "$d/eos.h" X-Request-Id)
	[ "$(debug_field "$id" status)" = done ]
	[ "$(debug_field "$id" finish_reason)" = stop ]
	# the finish chunk of the stream says stop as well
	chunks "$d/eos.s" | jq -s -e '.[-2].choices[0].finish_reason == "stop"'
	m=$((n + 20))
	pair /v1/chat/completions "$(chat 'tell me a story' \
		"{\"max_tokens\":$m,\"ignore_eos\":true}")" ign
	jq -e --argjson m "$m" '.choices[0].finish_reason == "length" and
		.usage.completion_tokens == $m' "$d/ign"
	# completions end by EOS too
	pair /v1/completions "$(comp hello '{"max_tokens":1000}')" peos
	jq -e '.choices[0].finish_reason == "stop" and
		.usage.completion_tokens < 1000' "$d/peos"
}

# ---- errors ----------------------------------------------------------------

@test "400 in the OpenAI shape: bad temperature, top_p 0, n 2, bad stop, bad messages, bad JSON" {
	C=$BASE/v1/chat/completions
	U='"messages":[{"role":"user","content":"hi"}]'
	M='"model":"tokstream-sim"'
	expect_v1_error 400 decimal_above_max_value temperature \
		-d "{$M,$U,\"temperature\":2.5}" "$C"
	expect_v1_error 400 decimal_below_min_value temperature \
		-d "{$M,$U,\"temperature\":-0.1}" "$C"
	expect_v1_error 400 invalid_type temperature \
		-d "{$M,$U,\"temperature\":\"hot\"}" "$C"
	expect_v1_error 400 decimal_below_min_value top_p \
		-d "{$M,$U,\"top_p\":0}" "$C"
	expect_v1_error 400 decimal_above_max_value top_p \
		-d "{$M,$U,\"top_p\":1.5}" "$C"
	expect_v1_error 400 integer_above_max_value n -d "{$M,$U,\"n\":17}" "$C"
	expect_v1_error 400 invalid_value 'stop[0]' \
		-d "{$M,$U,\"stop\":[\"\"]}" "$C"
	expect_v1_error 400 array_above_max_length stop \
		-d "{$M,$U,\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}" "$C"
	long=$(printf '%065d' 0)
	expect_v1_error 400 string_above_max_length stop \
		-d "{$M,$U,\"stop\":\"$long\"}" "$C"
	expect_v1_error 400 invalid_type stop -d "{$M,$U,\"stop\":5}" "$C"
	expect_v1_error 400 missing_required_parameter messages -d "{$M}" "$C"
	expect_v1_error 400 empty_array messages -d "{$M,\"messages\":[]}" "$C"
	expect_v1_error 400 invalid_value 'messages[0].role' \
		-d "{$M,\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}" "$C"
	expect_v1_error 400 invalid_type messages \
		-d "{$M,\"messages\":\"hi\"}" "$C"
	expect_v1_error 400 missing_required_parameter model -d "{$U}" "$C"
	expect_v1_error 400 invalid_json - -d 'not json' "$C"
	expect_v1_error 400 empty_body - -d '' "$C"
	expect_v1_error 400 missing_required_parameter prompt \
		-d "{$M}" "$BASE/v1/completions"
	expect_v1_error 400 integer_above_max_value max_tokens \
		-d "{$M,\"prompt\":\"a\",\"max_tokens\":9000}" "$BASE/v1/completions"
	expect_v1_error 400 invalid_value stream_options \
		-d "{$M,$U,\"stream_options\":{\"include_usage\":true}}" "$C"
	# the server is unharmed
	[ "$(post /v1/chat/completions "$(chat ok '{"max_tokens":2}')" \
		"$BATS_TEST_TMPDIR/ok")" = 200 ]
}

@test "404 unknown model and unknown /v1 path, 405 wrong method, 413 body over 1 MiB: OpenAI shape" {
	d=$BATS_TEST_TMPDIR
	U='"messages":[{"role":"user","content":"hi"}]'
	expect_v1_error 404 model_not_found - \
		-d "{\"model\":\"gpt-4o\",$U}" "$BASE/v1/chat/completions"
	expect_v1_error 404 model_not_found - \
		-d '{"model":"gpt-3.5-turbo-instruct","prompt":"x"}' \
		"$BASE/v1/completions"
	expect_v1_error 404 unknown_url - "$BASE/v1/embeddings"
	expect_v1_error 404 unknown_url - -d '{}' "$BASE/v1/chat/completion"
	expect_v1_error 405 method_not_allowed - -D "$d/h" \
		"$BASE/v1/chat/completions"
	[ "$(header_of "$d/h" Allow)" = "POST, OPTIONS" ]
	expect_v1_error 405 method_not_allowed - -D "$d/h" -X DELETE \
		"$BASE/v1/completions"
	expect_v1_error 405 method_not_allowed - -D "$d/h" -d '{}' \
		"$BASE/v1/models"
	[ "$(header_of "$d/h" Allow)" = "GET, HEAD, OPTIONS" ]
	head -c 1048577 /dev/zero | tr '\0' ' ' >"$d/big"
	expect_v1_error 413 body_too_large - --data-binary @"$d/big" \
		"$BASE/v1/chat/completions"
}

@test "429 queue_full in the OpenAI shape while the only slot is held by a long stream (--max-num-seqs 1 --max-waiting 0)" {
	d=$BATS_TEST_TMPDIR
	local base1=$BASE rundir1=$RUNDIR port1=$PORT
	ts_start --max-num-seqs 1 --max-waiting 0
	RUNDIR2=$RUNDIR PORT2=$PORT
	RUNDIR=$rundir1 PORT=$port1
	# hold the slot: 2000 tokens at 50 ms, read in the background: a
	# stream of 100 s, which no loaded machine's slowness in the steps
	# below can outlast (it ends when the test kills its client)
	curl -sS -N -o "$d/hold" -H 'Content-Type: application/json' \
		--data-binary "$(streamed "$(chat hold \
		'{"max_tokens":2000,"ignore_eos":true,"tpot_ms":50}')")" \
		"$BASE/v1/chat/completions" &
	BG_PID=$!
	# wait until it holds the slot (20 s at most)
	for i in $(seq 1 400); do
		[ "$(curl -s "$BASE/_debug/generated" |
			jq -r .engine.running)" = 1 ] && break
		sleep 0.05
	done
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.running)" = 1 ]
	for s in false true; do
		expect_v1_error 429 queue_full - -D "$d/h" \
			-d "$(chat late "{\"stream\":$s}")" \
			"$BASE/v1/chat/completions"
		jq -e '.error.type == "rate_limit_error"' "$d/err"
		[ "$(header_of "$d/h" Retry-After)" = 1 ]
	done
	expect_v1_error 429 queue_full - -d "$(comp late)" \
		"$BASE/v1/completions"
	# the refusals did not touch the stream that holds the slot (the
	# most recent stream: refused requests start none)
	curl -s "$BASE/_debug/generated" | jq -e '.status == "running" and
		.requested == 2000 and .generated > 0'
	kill "$BG_PID"
	BG_PID=
	BASE=$base1
}

@test "500 after streaming began: the error_after extension gives data: {\"error\":...} then [DONE]; without stream a 500" {
	d=$BATS_TEST_TMPDIR
	[ "$(post /v1/chat/completions "$(streamed "$(chat hi \
		'{"max_tokens":10,"error_after":3}')")" "$d/s")" = 200 ]
	cat "$d/s"
	sed -n 's/^data: //p' "$d/s" >"$d/ev"
	[ "$(wc -l <"$d/ev")" -eq 5 ]
	[ "$(tail -n 1 "$d/ev")" = '[DONE]' ]
	head -n 3 "$d/ev" | jq -s -e 'all(.[]; .choices[0].finish_reason ==
		null and (.choices[0].delta.content | length) > 0)'
	sed -n 4p "$d/ev" | jq -e '(.error | keys ==
		["code","message","param","type"]) and
		.error.code == "injected_error" and
		.error.type == "server_error" and .error.param == null'
	# no finish chunk, no usage chunk
	! grep -q '"finish_reason":"' "$d/s" || false
	! grep -q '"usage":{' "$d/s" || false
	id=$(header_of "$d/s.h" X-Request-Id)
	[ "$(debug_field "$id" status)" = error ]
	[ "$(debug_field "$id" generated)" -eq 3 ]
	# completions the same
	[ "$(post /v1/completions "$(streamed "$(comp hi \
		'{"max_tokens":10,"error_after":0}')")" "$d/p")" = 200 ]
	[ "$(sed -n 's/^data: //p' "$d/p" | head -n 1 |
		jq -r .error.code)" = injected_error ]
	[ "$(sed -n 's/^data: //p' "$d/p" | tail -n 1)" = '[DONE]' ]
	# not streamed: the status says it
	expect_v1_error 500 injected_error - -D "$d/h" \
		-d "$(chat hi '{"max_tokens":10,"error_after":3}')" \
		"$BASE/v1/chat/completions"
	[ -n "$(header_of "$d/h" X-Request-Id)" ]
}

# ---- models, cancellation, the lab endpoints -------------------------------

@test "GET /v1/models: the one served model, in the list shape" {
	d=$BATS_TEST_TMPDIR
	run curl -sS -o "$d/m" -w '%{http_code} %{content_type}' \
		"$BASE/v1/models"
	[ "$output" = "200 application/json" ]
	jq -e '.object == "list" and (.data | length) == 1 and
		(.data[0] | .id == "tokstream-sim" and .object == "model" and
		 .owned_by == "tokstream" and (.created | type == "number") and
		 .created > 1600000000 and (.max_model_len | not) and
		 .tokstream.backend == "sim" and
		 (.tokstream.chat_template | contains("<|assistant|>")))' "$d/m"
	# the id it lists is the one the endpoints accept
	model=$(jq -r '.data[0].id' "$d/m")
	[ "$(post /v1/chat/completions "$(chat hi "{\"model\":\"$model\",
		\"max_tokens\":1}")" "$d/c")" = 200 ]
}

# cut_v1 K PATH BODY OUT: reads the SSE response into OUT until it holds
# K data lines, then leaves: kills curl, which closes the connection. OUT
# holds every byte curl had received when it died (-N: written as they
# come), which on a loaded machine is often more than K: what the client
# had, not what this poll saw, is what the server's bound counts from.
# OUT.h gets the headers.
cut_v1() {
	local k=$1 path=$2 body=$3 out=$4 pid i
	: >"$out"
	curl -sS -N -o "$out" -D "$out.h" -H 'Content-Type: application/json' \
		--data-binary "$body" "$BASE$path" 2>/dev/null &
	pid=$!
	for i in $(seq 1 1000); do
		[ "$(grep -c '^data: {' "$out")" -ge "$k" ] && break
		sleep 0.01
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" || true
}

@test "a client that leaves a /v1 stream mid-way is cancelled: status cancelled, finish_reason abort, generation stops" {
	d=$BATS_TEST_TMPDIR
	for path in /v1/chat/completions /v1/completions /v1/responses; do
		k=5
		if [ $path = /v1/completions ]; then
			body=$(comp leave '{"max_tokens":200,"ignore_eos":true}')
		elif [ $path = /v1/responses ]; then
			# 4 events before the first delta, then 5 deltas
			k=9
			body='{"model":"tokstream-sim","input":"leave","max_output_tokens":200,"ignore_eos":true,"prefill_ms":0}'
		else
			body=$(chat leave '{"max_tokens":200,"ignore_eos":true}')
		fi
		# steps of 50 ms: the bound below counts tokens, so a step
		# long beside the few tens of ms a loaded machine may take to
		# run curl, lighttpd or the responder keeps it a count of
		# steps and not of that machine's delays
		body=$(jq -c '. + {stream:true, tpot_ms:50}' <<<"$body")
		cut_v1 $k $path "$body" "$d/cut"
		n=$(grep -c '^data: {' "$d/cut")
		[ "$n" -ge $k ]
		# the tokens the client had when it left: one a data line (the
		# responses stream's 4 opening events carry none)
		had=$((n - k + 5))
		id=$(header_of "$d/cut.h" X-Request-Id)
		wait_not_running "$id"
		curl -s "$BASE/_debug/generated?id=$id"
		echo "the client had $had tokens"
		[ "$(debug_field "$id" status)" = cancelled ]
		[ "$(debug_field "$id" finish_reason)" = abort ]
		[ "$(debug_field "$id" cancel_cause)" = client_gone ]
		# at most 3 more after them (8 for a client that had read 5):
		# one on its way when the client left, the one lighttpd must
		# write to see the FIN, and the step that was decoding when
		# the hang-up reached the responder (docs/RELIABILITY.md "How
		# a client that leaves is noticed")
		[ "$(debug_field "$id" generated)" -le $((had + 3)) ]
	done
	# without stream: a client that gives up (the answer is committed
	# after one keep-alive interval and sends whitespace until done)
	run curl -sS -m 1.2 -H 'Content-Type: application/json' \
		-D "$d/ns.h" --data-binary "$(chat leave \
		'{"max_tokens":200,"ignore_eos":true,"tpot_ms":20}')" \
		"$BASE/v1/chat/completions"
	[ "$status" -eq 28 ]
	id=$(header_of "$d/ns.h" X-Request-Id)
	wait_not_running "$id"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" finish_reason)" = abort ]
	[ "$(debug_field "$id" generated)" -lt 200 ]
}

@test "POST /v1/responses: the response object, or OpenAI's named events in order; the text of the chat request with the same messages; usage; no [DONE]" {
	d=$BATS_TEST_TMPDIR
	req='{"model":"tokstream-sim","instructions":"be brief","input":"tell me a story","max_output_tokens":30,"seed":3}'
	run curl -sS -o "$d/r" -D "$d/r.h" -w '%{http_code} %{content_type}' \
		-H 'Content-Type: application/json' -d "$req" "$BASE/v1/responses"
	[ "$output" = "200 application/json" ]
	id=$(header_of "$d/r.h" X-Request-Id)
	jq -e --arg id "resp_$id" '.id == $id and .object == "response" and
		(.status == "completed" or .status == "incomplete") and
		.error == null and .instructions == "be brief" and
		.max_output_tokens == 30 and .model == "tokstream-sim" and
		(.output | length) == 1 and .output[0].type == "message" and
		.output[0].role == "assistant" and
		.output[0].content[0].type == "output_text" and
		.usage.total_tokens == .usage.input_tokens + .usage.output_tokens' "$d/r"
	[ "$(jq .usage.output_tokens "$d/r")" -eq "$(debug_field "$id" generated)" ]
	jq -j '.output[0].content[0].text' "$d/r" >"$d/text"
	# the chat request with instructions as the system message
	curl -sS -H 'Content-Type: application/json' -d '{"model":"tokstream-sim","max_tokens":30,"seed":3,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"tell me a story"}]}' \
		"$BASE/v1/chat/completions" | jq -j '.choices[0].message.content' | cmp - "$d/text"
	# streamed: event lines, sequence numbers, deltas that join to it
	curl -sS -N -D "$d/s.h" -H 'Content-Type: application/json' \
		-d "$(jq -c '. + {stream:true}' <<<"$req")" "$BASE/v1/responses" >"$d/s"
	[ "$(header_of "$d/s.h" Content-Type)" = "text/event-stream; charset=utf-8" ]
	! grep -q '\[DONE\]' "$d/s" || false
	sed -n 's/^event: //p' "$d/s" >"$d/types"
	sed -n 's/^data: //p' "$d/s" >"$d/data"
	[ "$(wc -l <"$d/types")" -eq "$(wc -l <"$d/data")" ]
	jq -s -e --rawfile types "$d/types" '
		($types | split("\n") | map(select(. != ""))) as $t
		| [.[].type] == $t
		and ([.[].sequence_number] == [range(0; length)])
		and $t[0:4] == ["response.created", "response.in_progress",
			"response.output_item.added", "response.content_part.added"]
		and ($t[-4:-1] == ["response.output_text.done",
			"response.content_part.done", "response.output_item.done"])
		and ($t[-1] == "response.completed" or $t[-1] == "response.incomplete")
		and ($t[4:-4] | all(. == "response.output_text.delta"))' "$d/data"
	jq -s -j '[.[] | select(.type == "response.output_text.delta") | .delta] | join("")' "$d/data" |
		cmp - "$d/text"
	jq -s -j '.[-1].response.output[0].content[0].text' "$d/data" | cmp - "$d/text"
}

@test "the official OpenAI SDK's Responses API (responses.create, stream and not, responses.stream, abort) against /v1/responses" {
	need_node openai
	run timeout 60 node "$TS_SRCDIR/tests/node/openai-responses.mjs" "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the lab endpoints are unchanged: /stream and /generate give tokgen's lab text, with their own event ids and error shape" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N "$BASE/stream?prompt=hello&max_tokens=20" >"$d/s"
	[ "$(grep -m1 -A1 '^id: ' "$d/s" | sed -n 2p)" = 'retry: 1000' ]
	[ "$(grep -c '^id: ' "$d/s")" -eq 21 ]
	sed -n 's/^data: \({"token":.*\)$/\1/p' "$d/s" | jq -j .token >"$d/st"
	"$TOKGEN" --prompt hello -n 20 | cmp - "$d/st"
	curl -sS -d '{"prompt":"hello","max_tokens":20}' "$BASE/generate" \
		>"$d/g"
	jq -j .text "$d/g" | cmp - "$d/st"
	jq -e '.usage == {prompt_tokens: 1, completion_tokens: 20} and
		(keys == ["text","usage"])' "$d/g"
	# the lab's errors keep their shape (no "param")
	curl -sS "$BASE/stream?max_tokens=3" >"$d/e"
	jq -e '(.error | keys == ["code","message","type"]) and
		.error.code == "missing_prompt"' "$d/e"
	curl -sS "$BASE/nowhere" >"$d/e"
	jq -e '.error.code == "unknown_path"' "$d/e"
	# /v1 streams carry no event ids (a POST is not resumed)
	[ "$(post /v1/chat/completions "$(streamed "$(chat hi \
		'{"max_tokens":3}')")" "$d/v")" = 200 ]
	! grep -q '^id:' "$d/v" || false
	! grep -q '^retry:' "$d/v" || false
}

@test "the official OpenAI SDK (npm openai) through lighttpd: chat and completions, stream and not, usage, stop, seed, typed errors, abort" {
	need_node openai
	TOKGEN=$TOKGEN run timeout 60 node "$TS_SRCDIR/tests/node/openai-sdk.mjs" \
		"$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
}
