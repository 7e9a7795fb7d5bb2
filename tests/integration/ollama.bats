#!/usr/bin/env bats
# Ollama's API (docs/API.md "Ollama API"): /api/chat and /api/generate as
# NDJSON streams and as one object, /api/tags, /api/show, /api/version,
# /api/ps, driven by Ollama's own npm client (tests/node/ollama-client.mjs)
# and by curl for the raw lines and the errors; a client that leaves
# cancels its generation (/_debug/generated), as on /v1.

load helpers

setup_file() {
	ts_start --allow-failure-header
}

teardown_file() {
	ts_stop
}

# A test's second server (other_server), stopped even if the test fails.
teardown() {
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

# other_server ARGS...: a second server with these responder options, at
# BASE2 (RUNDIR2, PORT2: teardown stops it); BASE stays the first one's.
other_server() {
	local base=$BASE rundir=$RUNDIR port=$PORT
	TS_RUNDIR=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX") ts_start "$@"
	BASE2=$BASE RUNDIR2=$RUNDIR PORT2=$PORT
	BASE=$base RUNDIR=$rundir PORT=$port
}

client() {
	need_node ollama ajv
	run timeout 60 node "$TS_SRCDIR/tests/node/ollama-client.mjs" "$BASE" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok: $1"* ]]
}

CHAT='{"model":"tokstream-sim","messages":[{"role":"user","content":"hello"}]'

@test "ollama client: chat streamed and not, same seed: every part has model, created_at, message, done; the streamed text is the answer's" {
	client chat
}

@test "ollama client: generate streamed and not (system, prompt): the same checks on response" {
	client generate
}

@test "ollama client: list, show, version and ps in Ollama's shapes, the served model as NAME:latest" {
	client list
	client show
	client version
	client ps
}

@test "ollama client: format as a JSON Schema: the output, streamed and not, parses and validates (ajv)" {
	client format
}

@test "ollama client: tools: message.tool_calls with object arguments valid against the parameters, streamed and not; a tool's result gets text" {
	client tools
}

@test "ollama client: an error after 3 tokens reaches the client as the stream's last line; an unknown model is its 404" {
	client error
	client notfound
}

# aborted_after_5 CASE: ollama-client.mjs CASE aborts its stream after 5
# parts; the stream's record says cancelled, client_gone, at most 6
# tokens generated
aborted_after_5() {
	run timeout 60 node "$TS_SRCDIR/tests/node/ollama-client.mjs" "$BASE" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ id=([0-9]+)\ parts=5 ]]
	id=${BASH_REMATCH[1]}
	wait_not_running "$id"
	g=$(debug_field "$id" generated)
	echo "generated $g"
	[ "$(debug_field "$id" status)" = cancelled ]
	[ "$(debug_field "$id" cancel_cause)" = client_gone ]
	[ "$g" -le 6 ]
}

@test "ollama client: a stream aborted after 5 parts stops generating (at most 6 tokens, cancelled, client_gone)" {
	need_node ollama
	# the control: the same request read to its end makes far more
	curl -sS -f -o "$BATS_TEST_TMPDIR/full" -d '{"model":"tokstream-sim","messages":[{"role":"user","content":"tell me about the sea"}],"options":{"seed":11,"num_predict":2000}}' \
		"$BASE/api/chat"
	full=$(tail -n 1 "$BATS_TEST_TMPDIR/full" | jq .eval_count)
	echo "full: $full tokens"
	[ "$full" -ge 20 ]
	aborted_after_5 abort
}

@test "ollama client: a think stream aborted after 5 thinking parts stops generating (at most 6 tokens, cancelled, client_gone)" {
	need_node ollama
	aborted_after_5 abort-think
}

@test "a chat stream is NDJSON: application/x-ndjson, one object a line, a line per token, the last done with done_reason and the metrics in ns" {
	d=$BATS_TEST_TMPDIR
	curl -sS -N -D "$d/h" -o "$d/b" -d "$CHAT"',"options":{"num_predict":7,"seed":5}}' "$BASE/api/chat"
	[ "$(header_of "$d/h" Content-Type)" = application/x-ndjson ]
	id=$(header_of "$d/h" X-Request-Id)
	n=$(wc -l < "$d/b")
	[ "$n" -eq 8 ]
	# every line is an object; all but the last are tokens
	jq -e -s 'length == 8' "$d/b"
	head -n 7 "$d/b" | jq -e -s 'all(.[]; .done == false and .model == "tokstream-sim" and
		(.created_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$")) and
		.message.role == "assistant" and (.message.content | length > 0) and
		(keys == ["created_at","done","message","model"]))'
	tail -n 1 "$d/b" | jq -e '.done == true and .done_reason == "length" and .message.content == "" and
		.eval_count == 7 and .prompt_eval_count > 0 and
		([.total_duration, .load_duration, .prompt_eval_duration, .eval_duration] | all(type == "number" and . >= 0 and floor == .)) and
		.load_duration + .prompt_eval_duration + .eval_duration <= .total_duration and
		.eval_duration > 0 and .prompt_eval_duration > 0'
	# the record: its prompt and tokens are the final object's counts
	wait_not_running "$id"
	[ "$(debug_field "$id" generated)" -eq 7 ]
	[ "$(debug_field "$id" prompt_tokens)" -eq "$(tail -n 1 "$d/b" | jq .prompt_eval_count)" ]
}

@test "a line goes out per token through lighttpd: the first line arrives while the stream still runs" {
	d=$BATS_TEST_TMPDIR
	exec 5< <(curl -sS -N -d '{"model":"tokstream-sim","prompt":"slow","tpot_ms":1000,"options":{"num_predict":4,"seed":1}}' "$BASE/api/generate")
	read -r first <&5
	rec=$(curl -sS "$BASE/_debug/generated")
	cat <&5 > "$d/rest"
	exec 5<&-
	echo "$first"
	echo "$rec" | jq -c '{id, status, generated}'
	echo "$first" | jq -e '.done == false and (.response | length > 0)'
	echo "$rec" | jq -e '.status == "running" and .generated < 4'
	tail -n 1 "$d/rest" | jq -e '.done == true and .eval_count == 4'
}

@test "stream false: one object with the whole text, application/json, the same metrics" {
	d=$BATS_TEST_TMPDIR
	curl -sS -D "$d/h" -o "$d/b" -d '{"model":"tokstream-sim:latest","prompt":"hi","stream":false,"options":{"num_predict":5,"seed":2}}' "$BASE/api/generate"
	[ "$(header_of "$d/h" Content-Type)" = application/json ]
	[ "$(wc -l < "$d/b")" -eq 1 ]
	jq -e '.done == true and .done_reason == "length" and .model == "tokstream-sim:latest" and
		(.response | length > 0) and .eval_count == 5' "$d/b"
	# streamed, the same request gives the same text
	s=$(curl -sS -N -d '{"model":"tokstream-sim:latest","prompt":"hi","options":{"num_predict":5,"seed":2}}' "$BASE/api/generate" |
		jq -j 'select(.done == false) | .response')
	[ "$s" = "$(jq -j .response "$d/b")" ]
}

@test "a stop string ends the answer with done_reason stop, the stop string left out" {
	s=$(curl -sS -N -d "$CHAT"',"options":{"num_predict":30,"seed":5}}' "$BASE/api/chat" |
		jq -j 'select(.done == false) | .message.content')
	echo "text: $s"
	# the third word's first two bytes as the stop string
	stop=$(echo "$s" | awk '{ print substr($3, 1, 2) }')
	[ -n "$stop" ]
	curl -sS -d "$CHAT"',"stream":false,"options":{"num_predict":30,"seed":5,"stop":["'"$stop"'"]}}' "$BASE/api/chat" > "$BATS_TEST_TMPDIR/b"
	cat "$BATS_TEST_TMPDIR/b"
	jq -e --arg stop "$stop" '.done_reason == "stop" and (.message.content | contains($stop) | not) and
		.eval_count < 30' "$BATS_TEST_TMPDIR/b"
}

@test "format json gives a JSON object; think and keep_alive are accepted; a chat without messages is done_reason load" {
	r=$(curl -sS -d '{"model":"tokstream-sim","prompt":"hi","format":"json","stream":false,"think":true,"keep_alive":"5m"}' "$BASE/api/generate")
	echo "$r"
	echo "$r" | jq -e '.done == true' >/dev/null
	echo "$r" | jq -r .response | jq -e 'type == "object"'
	r=$(curl -sS -d '{"model":"tokstream-sim","messages":[],"keep_alive":0}' "$BASE/api/chat")
	echo "$r"
	echo "$r" | jq -e '.done == true and .done_reason == "load" and .message.content == "" and (has("eval_count") | not)'
}

@test "an error after the stream began: a 200 whose last line is {\"error\"}; not streamed, the error's own status" {
	d=$BATS_TEST_TMPDIR
	run curl -sS -N -o "$d/b" -w '%{http_code}' -d "$CHAT"',"error_after":3,"options":{"seed":1}}' "$BASE/api/chat"
	[ "$output" = 200 ]
	cat "$d/b"
	[ "$(wc -l < "$d/b")" -eq 4 ]
	head -n 3 "$d/b" | jq -e -s 'all(.[]; .done == false)'
	tail -n 1 "$d/b" | jq -e '. == {"error":"injected error after 3 tokens (error_after)"}'
	run curl -sS -o "$d/e" -w '%{http_code}' -d "$CHAT"',"stream":false,"error_after":3}' "$BASE/api/chat"
	[ "$output" = 500 ]
	jq -e '.error == "injected error after 3 tokens (error_after)"' "$d/e"
}

@test "errors in Ollama's shape: 404 unknown model, 400 model missing, bad JSON, bad option, bad format, bad role; 405; unknown /api path" {
	d=$BATS_TEST_TMPDIR
	check() {   # check STATUS JQ-FILTER BODY [PATH]
		run curl -sS -o "$d/e" -w '%{http_code}' -d "$3" "$BASE${4:-/api/chat}"
		echo "$3 -> $output $(cat "$d/e")"
		[ "$output" = "$1" ]
		jq -e "(keys == [\"error\"]) and ($2)" "$d/e"
	}
	check 404 '.error == "model \"llama3.2\" not found, try pulling it first"' \
		'{"model":"llama3.2","messages":[{"role":"user","content":"x"}]}'
	check 404 '.error == "model \"llama3.2\" not found, try pulling it first"' \
		'{"model":"llama3.2","prompt":"x"}' /api/generate
	check 404 '.error | test("not found")' '{"model":"llama3.2"}' /api/show
	check 400 '.error == "model is required"' '{"messages":[]}'
	check 400 '.error | startswith("invalid JSON")' '{"model":'
	check 400 '.error | test("temperature")' "$CHAT"',"options":{"temperature":"hot"}}'
	check 400 '.error | test("num_predict")' "$CHAT"',"options":{"num_predict":1.5}}'
	check 400 '.error | test("invalid format")' "$CHAT"',"format":"yaml"}'
	check 400 '.error | test("invalid format.*pattern")' "$CHAT"',"format":{"type":"string","pattern":"a+"}}'
	check 400 '.error | test("invalid role")' '{"model":"tokstream-sim","messages":[{"role":"robot","content":"x"}]}'
	check 400 '.error | test("cannot unmarshal number into Go struct field ChatRequest.messages.content")' \
		'{"model":"tokstream-sim","messages":[{"role":"user","content":5}]}'
	run curl -sS -o "$d/e" -w '%{http_code}' "$BASE/api/chat"
	[ "$output" = 405 ]
	jq -e 'keys == ["error"]' "$d/e"
	run curl -sS -o "$d/e" -w '%{http_code}' "$BASE/api/pull" -d '{}'
	[ "$output" = 404 ]
	jq -e '.error | test("no endpoint at /api/pull")' "$d/e"
}

@test "every option Ollama knows is type-checked, used or not: num_ctx \"big\", repeat_penalty \"x\", mirostat \"x\", num_gpu true, num_keep 1.5, use_mmap \"yes\" are 400 {\"error\"}; right types and unknown names answer" {
	d=$BATS_TEST_TMPDIR
	for o in '"num_ctx":"big"' '"repeat_penalty":"x"' '"mirostat":"x"' \
	    '"num_gpu":true' '"num_keep":1.5' '"use_mmap":"yes"'; do
		name=$(jq -rn "{$o} | keys[0]")
		run curl -sS -o "$d/e" -w '%{http_code}' \
			-d "{\"model\":\"tokstream-sim\",\"prompt\":\"hi\",\"stream\":false,\"options\":{$o,\"num_predict\":1}}" \
			"$BASE/api/generate"
		echo "$o -> $output $(cat "$d/e")"
		[ "$output" = 400 ]
		jq -e --arg n "$name" 'keys == ["error"] and
			(.error | startswith("option \"" + $n + "\" must be of type "))' "$d/e"
	done
	run curl -sS -o "$d/g" -w '%{http_code}' \
		-d '{"model":"tokstream-sim","prompt":"hi","stream":false,"options":{"num_ctx":4096,"repeat_penalty":1.1,"mirostat":0,"num_gpu":-1,"num_keep":4,"use_mmap":true,"no_such_option":"x","num_predict":1}}' \
		"$BASE/api/generate"
	[ "$output" = 200 ]
	jq -e '.done == true and .eval_count == 1' "$d/g"
}

@test "lighttpd's own errors under /api/ are in Ollama's shape: a 413 for a body over 2 MiB, a 503 with the responder down; /v1/chat/completions keeps OpenAI's" {
	d=$BATS_TEST_TMPDIR
	# ollama_shape FILE: exactly {"error":"MESSAGE"}
	ollama_shape() {
		cat "$1"; echo
		jq -e 'keys == ["error"] and (.error | type == "string" and length > 10)' "$1"
	}
	# a body over lighttpd's 2 MiB, which refuses it before the responder
	head -c 2200000 /dev/zero | tr '\0' x |
		jq -Rsc '{model:"tokstream-sim", messages:[{role:"user", content:.}]}' >"$d/huge"
	for p in /api/chat /api/generate /v1/chat/completions; do
		run curl -sS -m 30 -o "$d/e" -w '%{http_code} %{content_type}' \
			--data-binary @"$d/huge" "$BASE$p"
		[ "$output" = "413 application/json" ]
		if [ "$p" = /v1/chat/completions ]; then
			jq -e '.error.code == "body_too_large" and .error.param == null' "$d/e"
		else
			ollama_shape "$d/e"
			jq -e '.error | test("2 MiB")' "$d/e"
		fi
	done
	# the responder down on a second server (its supervisor first, or it
	# brings the responder back)
	other_server
	kill "$(cat "$RUNDIR2/supervisor.pid")"
	kill "$(head -n 1 "$RUNDIR2/tokstream-fcgi.pid")"
	for i in $(seq 1 50); do
		code=$(curl -sS -o "$d/e" -w '%{http_code}' -d "$CHAT}" "$BASE2/api/chat")
		[ "$code" = 503 ] && break
		sleep 0.1
	done
	[ "$code" = 503 ]
	ollama_shape "$d/e"
	run curl -sS -o "$d/e" -w '%{http_code} %{content_type}' "$BASE2/api/tags"
	[ "$output" = "503 application/json" ]
	ollama_shape "$d/e"
	run curl -sS -o "$d/e" -w '%{http_code}' -d '{}' "$BASE2/v1/chat/completions"
	[ "$output" = 503 ]
	jq -e '.error.code == "backend_unavailable" and
		.error.type == "server_error" and .error.param == null' "$d/e"
}

@test "failure injection (X-Tokstream-Failure): rate_limit is a 429 in Ollama's shape; midstream_error ends the stream with an error line, midstream_cut with nothing; a timeout answers nothing; each counted" {
	d=$BATS_TEST_TMPDIR
	before=$(curl -sS "$BASE/metrics" | unlabel_model | awk '$1 ~ /^tokstream:injected_failures_total/ { s += $2 } END { print s + 0 }')
	run curl -sS -D "$d/h" -o "$d/e" -w '%{http_code}' -H 'X-Tokstream-Failure: rate_limit' -d "$CHAT}" "$BASE/api/chat"
	[ "$output" = 429 ]
	[ "$(header_of "$d/h" Retry-After)" = 1 ]
	jq -e 'keys == ["error"] and (.error | test("Rate limit"))' "$d/e"
	curl -sS -N -o "$d/b" -H 'X-Tokstream-Failure: midstream_error; after=2' -d "$CHAT"',"options":{"seed":1}}' "$BASE/api/chat"
	[ "$(wc -l < "$d/b")" -eq 3 ]
	tail -n 1 "$d/b" | jq -e 'keys == ["error"]'
	# a cut: 4 token lines, then the body ends: no final object, no error
	curl -sS -N -o "$d/c" -H 'X-Tokstream-Failure: midstream_cut; after=4' -d "$CHAT"',"options":{"seed":1}}' "$BASE/api/chat"
	cat "$d/c"
	[ "$(wc -l < "$d/c")" -eq 4 ]
	jq -e -s 'all(.[]; .done == false and (.message.content | length > 0))' "$d/c"
	# a timeout: not a byte until the client gives up
	local rc=0
	curl -s -o "$d/t" -D "$d/th" --max-time 2 -H 'X-Tokstream-Failure: timeout' -d "$CHAT}" "$BASE/api/chat" || rc=$?
	[ "$rc" -eq 28 ]
	[ ! -s "$d/th" ]
	[ ! -s "$d/t" ]
	# ... and it holds a connection, not a slot
	[ "$(curl -sS "$BASE/_debug/generated" | jq .engine.running)" -eq 0 ]
	after=$(curl -sS "$BASE/metrics" | unlabel_model | awk '$1 ~ /^tokstream:injected_failures_total/ { s += $2 } END { print s + 0 }')
	[ "$after" -eq $((before + 4)) ]
}

@test "\\u0000 in a string is a byte of it, as Go's encoding/json takes it: /api/chat answers 200" {
	r=$(curl -sS -w '\n%{http_code}' -d '{"model":"tokstream-sim","stream":false,"messages":[{"role":"user","content":"a\u0000b"}],"options":{"num_predict":3,"stop":["\u0000"]}}' "$BASE/api/chat")
	echo "$r"
	[ "$(tail -n 1 <<<"$r")" = 200 ]
	head -n 1 <<<"$r" | jq -e '.done == true'
}

@test "metrics count /api requests: generation and prompt tokens grow by the final object's counts" {
	m() { curl -sS "$BASE/metrics" | unlabel_model | awk -v k="$1" '$1 == k { print $2 }'; }
	g0=$(m tokstream:generation_tokens_total)
	p0=$(m tokstream:prompt_tokens_total)
	r=$(curl -sS -d "$CHAT"',"stream":false,"options":{"num_predict":6,"seed":3}}' "$BASE/api/chat")
	echo "$r"
	sleep 0.2
	[ "$(m tokstream:generation_tokens_total)" -eq $((g0 + $(echo "$r" | jq .eval_count))) ]
	[ "$(m tokstream:prompt_tokens_total)" -eq $((p0 + $(echo "$r" | jq .prompt_eval_count))) ]
}

@test "--api-key guards /api/ paths: 401 {\"error\"} without the key, answers with it (the npm client's Authorization header)" {
	other_server --api-key sk-ollama-test
	d=$BATS_TEST_TMPDIR
	for p in /api/tags /api/version /api/ps; do
		run curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' "$BASE2$p"
		[ "$output" = 401 ]
		[ "$(header_of "$d/h" WWW-Authenticate)" = Bearer ]
		jq -e 'keys == ["error"]' "$d/e"
	done
	run curl -sS -o "$d/e" -w '%{http_code}' -d "$CHAT}" "$BASE2/api/chat"
	[ "$output" = 401 ]
	curl -sS -f -H 'Authorization: Bearer sk-ollama-test' "$BASE2/api/tags" | jq -e '.models[0].name == "tokstream-sim:latest"'
	curl -sS -f -H 'Authorization: Bearer sk-ollama-test' -d "$CHAT"',"stream":false,"options":{"num_predict":2}}' "$BASE2/api/chat" |
		jq -e '.eval_count == 2'
}

@test "load_duration is the queue: behind another stream on a 1-slot server, a request's load_duration is its /_debug/generated queue_ms" {
	other_server --max-num-seqs 1
	d=$BATS_TEST_TMPDIR
	# the first holds the only slot for 7 more steps of 100 ms once its
	# first line is here
	exec 5< <(curl -sS -N -d '{"model":"tokstream-sim","prompt":"first","tpot_ms":100,"options":{"num_predict":8}}' "$BASE2/api/generate")
	read -r first <&5
	echo "$first" | jq -e '.done == false'
	curl -sS -D "$d/h" -o "$d/b" -d '{"model":"tokstream-sim","prompt":"second","stream":false,"options":{"num_predict":2}}' "$BASE2/api/generate"
	cat <&5 > "$d/rest"
	exec 5<&-
	cat "$d/b"
	id=$(header_of "$d/h" X-Request-Id)
	q=$(curl -sS "$BASE2/_debug/generated?id=$id" | jq .queue_ms)
	echo "queue_ms $q"
	# the same clock: the engine's admission less the arrival, in ns and
	# in ms with microseconds
	jq -e --argjson q "$q" '.load_duration >= 200000000 and
		((.load_duration / 1000 | floor) == ($q * 1000 | round))' "$d/b"
	# it got the slot only once the first had ended
	tail -n 1 "$d/rest" | jq -e '.done == true and .eval_count == 8'
}
