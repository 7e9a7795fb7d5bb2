#!/usr/bin/env bats
# vLLM's tokenizer endpoints (docs/API.md "POST /tokenize, POST
# /detokenize") through lighttpd: a prompt's ids come back as its text,
# count is the usage.prompt_tokens /v1/completions and
# /v1/chat/completions report for the same prompt (the simulator, and the
# llama backend on a small model tokstream-mkmodel makes), the chat
# options change the rendered prompt, and the errors are /v1's: 400 for a
# bad body or an id out of vocabulary, 404 for an unknown model, 401
# without the key.

load helpers

MODEL=tokstream-sim

setup_file() {
	ts_start --served-model-name "$MODEL" other-name --api-key sk-tok-1
}

teardown_file() {
	ts_stop
}

teardown() {
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

# post [BASE] PATH JSON: POST with the key; the body to stdout, the status
# to $BATS_TEST_TMPDIR/code
post() {
	local base=$BASE
	if [ "$#" -eq 3 ]; then base=$1; shift; fi
	curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
		-H 'Authorization: Bearer sk-tok-1' \
		-H 'Content-Type: application/json' -d "$2" "$base$1" \
		>"$BATS_TEST_TMPDIR/code"
	cat "$BATS_TEST_TMPDIR/body"
}

code() {
	cat "$BATS_TEST_TMPDIR/code"
}

PROMPT='Once upon a time, a fox — "le renard" — ran 3 km: 狐狸 🦊.
Then it slept.'

@test "tokenize -> detokenize gives the prompt back (UTF-8, quotes, a newline, an emoji); token_strs joined are an ASCII prompt" {
	out=$(post /tokenize "$(jq -nc --arg p "$PROMPT" --arg m "$MODEL" \
		'{model:$m, prompt:$p, return_token_strs:true}')")
	[ "$(code)" = 200 ]
	echo "$out" | jq -e '(.tokens | length) == .count and .count > 10 and
		(.token_strs | length) == .count and (.max_model_len | type) == "number"'
	# a character the simulator spells in byte tokens has no text of
	# its own per token: token_strs joined is the prompt for ASCII
	ascii=$(post /tokenize "$(jq -nc '{prompt:"He said \"hi\",\n\tthen left.", return_token_strs:true}')")
	[ "$(echo "$ascii" | jq -c '.token_strs | join("")')" = '"He said \"hi\",\n\tthen left."' ]
	back=$(post /detokenize "$(echo "$out" | jq -c --arg m "$MODEL" \
		'{model:$m, tokens:.tokens}')")
	[ "$(code)" = 200 ]
	[ "$(echo "$back" | jq -j .prompt)" = "$PROMPT" ]
	# model is optional, as vLLM's; token_strs is null unless asked
	out2=$(post /tokenize "$(jq -nc --arg p "$PROMPT" '{prompt:$p}')")
	[ "$(code)" = 200 ]
	[ "$(echo "$out2" | jq -c .tokens)" = "$(echo "$out" | jq -c .tokens)" ]
	echo "$out2" | jq -e '.token_strs == null'
	# another served name answers too
	post /tokenize '{"model":"other-name","prompt":"hi"}' >/dev/null
	[ "$(code)" = 200 ]
}

@test "count equals usage.prompt_tokens of /v1/completions and /v1/chat/completions for the same prompt and messages; an empty prompt is count 0" {
	# an empty prompt: count 0, as vLLM (it was a 500 encode_failed)
	post /tokenize '{"model":"tokstream-sim","prompt":""}' |
		jq -e '.count == 0 and .tokens == [] and .max_model_len > 0'
	for p in "hi" "$PROMPT" "a b c d e f g h i j k l m n o p"; do
		n=$(post /tokenize "$(jq -nc --arg p "$p" '{model:"tokstream-sim", prompt:$p}')" | jq .count)
		u=$(post /v1/completions "$(jq -nc --arg p "$p" \
			'{model:"tokstream-sim", prompt:$p, max_tokens:1, prefill_ms:0, tpot_ms:1}')" |
			jq .usage.prompt_tokens)
		echo "prompt $p: tokenize $n, completions $u"
		[ "$n" -gt 0 ]
		[ "$n" = "$u" ]
	done
	msgs=$(jq -nc --arg p "$PROMPT" '[{role:"system",content:"be brief"},
		{role:"user",content:"hello there"},{role:"assistant",content:"hi"},
		{role:"user",content:$p}]')
	n=$(post /tokenize "{\"model\":\"tokstream-sim\",\"messages\":$msgs}" | jq .count)
	u=$(post /v1/chat/completions "{\"model\":\"tokstream-sim\",\"messages\":$msgs,\"max_tokens\":1,\"prefill_ms\":0,\"tpot_ms\":1}" |
		jq .usage.prompt_tokens)
	echo "chat: tokenize $n, chat completions $u"
	[ "$n" -gt 20 ]
	[ "$n" = "$u" ]
	# with tools, which the template renders into the prompt
	tools='[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]'
	n=$(post /tokenize "{\"messages\":$msgs,\"tools\":$tools}" | jq .count)
	u=$(post /v1/chat/completions "{\"model\":\"tokstream-sim\",\"messages\":$msgs,\"tools\":$tools,\"tool_choice\":\"none\",\"max_tokens\":1,\"prefill_ms\":0,\"tpot_ms\":1}" |
		jq .usage.prompt_tokens)
	echo "chat with tools: tokenize $n, chat completions $u"
	[ "$n" = "$u" ]
}

@test "chat: add_generation_prompt false drops the assistant marker, continue_final_message leaves the last turn open; both true is a 400" {
	m='[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello"}]'
	with=$(post /tokenize "{\"messages\":$m,\"return_token_strs\":true}" | jq -c '.token_strs | join("")')
	[ "$with" = '"<|user|>\nhi\n<|assistant|>\nHello\n<|assistant|>\n"' ]
	without=$(post /tokenize "{\"messages\":$m,\"add_generation_prompt\":false,\"return_token_strs\":true}" |
		jq -c '.token_strs | join("")')
	[ "$without" = '"<|user|>\nhi\n<|assistant|>\nHello\n"' ]
	open=$(post /tokenize "{\"messages\":$m,\"continue_final_message\":true,\"return_token_strs\":true}" |
		jq -c '.token_strs | join("")')
	[ "$open" = '"<|user|>\nhi\n<|assistant|>\nHello"' ]
	post /tokenize "{\"messages\":$m,\"continue_final_message\":true,\"add_generation_prompt\":true}" >"$BATS_TEST_TMPDIR/e"
	[ "$(code)" = 400 ]
	jq -e '.error.param == "continue_final_message"' "$BATS_TEST_TMPDIR/e"
}

@test "errors in /v1's shape: unknown model 404, bad bodies 400, ids out of vocabulary 400, no key 401, GET 405" {
	post /tokenize '{"model":"nope","prompt":"hi"}' >"$BATS_TEST_TMPDIR/e"
	[ "$(code)" = 404 ]
	jq -e '.error.code == "model_not_found" and .error.type == "invalid_request_error"' "$BATS_TEST_TMPDIR/e"
	post /detokenize '{"model":"nope","tokens":[1]}' >"$BATS_TEST_TMPDIR/e"
	[ "$(code)" = 404 ]
	jq -e '.error.code == "model_not_found"' "$BATS_TEST_TMPDIR/e"
	for body in '' 'not json' '[1]' '{"model":"tokstream-sim"}' '{"prompt":5}' \
		'{"prompt":"hi","add_special_tokens":"yes"}' '{"messages":[]}' \
		'{"messages":[{"role":"user","content":"x"}],"chat_template":"{{x}}"}'; do
		post /tokenize "$body" >"$BATS_TEST_TMPDIR/e"
		echo "tokenize $body: $(code) $(cat "$BATS_TEST_TMPDIR/e")"
		[ "$(code)" = 400 ]
		jq -e '.error.message | length > 0' "$BATS_TEST_TMPDIR/e"
	done
	for body in '' '{}' '{"tokens":"1 2"}' '{"tokens":[1,"2"]}' '{"tokens":[-1]}' \
		'{"tokens":[1.5]}'; do
		post /detokenize "$body" >"$BATS_TEST_TMPDIR/e"
		echo "detokenize $body: $(code) $(cat "$BATS_TEST_TMPDIR/e")"
		[ "$(code)" = 400 ]
	done
	for id in 99999999 4294967295 9223372036854775807; do
		post /detokenize "{\"tokens\":[5,$id]}" >"$BATS_TEST_TMPDIR/e"
		echo "detokenize id $id: $(code) $(cat "$BATS_TEST_TMPDIR/e")"
		[ "$(code)" = 400 ]
		jq -e '.error.param == "tokens[1]" and (.error.message | test("tokens\\[1\\].*out of vocabulary"))' \
			"$BATS_TEST_TMPDIR/e"
	done
	# an empty list is the empty text
	[ "$(post /detokenize '{"tokens":[]}' | jq -c .)" = '{"prompt":""}' ]
	for p in /tokenize /detokenize; do
		run curl -sS -o "$BATS_TEST_TMPDIR/e" -D "$BATS_TEST_TMPDIR/h" -w '%{http_code}' \
			-d '{"prompt":"hi","tokens":[1]}' "$BASE$p"
		[ "$output" = 401 ]
		[ "$(header_of "$BATS_TEST_TMPDIR/h" WWW-Authenticate)" = Bearer ]
		jq -e '.error.code == "invalid_api_key"' "$BATS_TEST_TMPDIR/e"
		run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
			-H 'Authorization: Bearer sk-tok-1' "$BASE$p"
		[ "$output" = 405 ]
		jq -e '.error.code == "method_not_allowed"' "$BATS_TEST_TMPDIR/e"
	done
}

@test "a character cut between byte tokens comes back as U+FFFD, as vLLM's decode (errors=replace)" {
	# the simulator's ids 0..255 are the bytes: the first two bytes of
	# a three-byte character, then "a"
	out=$(post /detokenize '{"tokens":[226,130,97]}' | jq -c .prompt)
	[ "$(code)" = 200 ]
	[ "$out" = "\"$(printf '\xef\xbf\xbd')a\"" ]
}

@test "llama backend: count equals usage.prompt_tokens, BOS first (add_special_tokens false drops it), detokenize gives the text" {
	MODEL_DIR=$BATS_FILE_TMPDIR/model
	mkdir -p "$MODEL_DIR"
	"$TS_BUILDDIR/src/tools/tokstream-mkmodel" \
		--out-model "$MODEL_DIR/model.bin" \
		--out-tokenizer "$MODEL_DIR/tokenizer.bin" \
		--dim 64 --hidden-dim 172 --layers 2 --heads 4 --kv-heads 2 \
		--vocab 512 --seq-len 256 --seed 3 >/dev/null
	local base=$BASE rundir=$RUNDIR port=$PORT
	TS_RUNDIR=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX") ts_start \
		--backend llama --model "$MODEL_DIR/model.bin" \
		--tokenizer "$MODEL_DIR/tokenizer.bin" --max-num-seqs 2
	BASE2=$BASE RUNDIR2=$RUNDIR PORT2=$PORT
	BASE=$base RUNDIR=$rundir PORT=$port
	name=$(curl -s "$BASE2/v1/models" | jq -r '.data[0].id')
	out=$(curl -s -d "$(jq -nc --arg m "$name" '{model:$m, prompt:"the quick brown fox"}')" "$BASE2/tokenize")
	echo "$out"
	n=$(echo "$out" | jq .count)
	u=$(curl -s -d "$(jq -nc --arg m "$name" '{model:$m, prompt:"the quick brown fox", max_tokens:1}')" \
		"$BASE2/v1/completions" | jq .usage.prompt_tokens)
	echo "llama: tokenize $n, completions $u"
	[ "$n" -gt 1 ]
	[ "$n" = "$u" ]
	[ "$(echo "$out" | jq .max_model_len)" = 256 ]
	[ "$(echo "$out" | jq '.tokens[0]')" = 1 ]     # BOS
	nobos=$(curl -s -d '{"prompt":"the quick brown fox","add_special_tokens":false}' "$BASE2/tokenize")
	[ "$(echo "$nobos" | jq .count)" = $((n - 1)) ]
	[ "$(echo "$nobos" | jq -c .tokens)" = "$(echo "$out" | jq -c '.tokens[1:]')" ]
	text=$(curl -s -d "$(echo "$out" | jq -c '{tokens:.tokens}')" "$BASE2/detokenize" | jq -j .prompt)
	# the llama tokenizer's dummy-prefix space stays (docs/API.md)
	[ "$text" = " the quick brown fox" ]
	n=$(curl -s -d "$(jq -nc --arg m "$name" '{model:$m, messages:[{role:"user",content:"hi"}]}')" "$BASE2/tokenize" | jq .count)
	u=$(curl -s -d "$(jq -nc --arg m "$name" '{model:$m, messages:[{role:"user",content:"hi"}], max_tokens:1}')" \
		"$BASE2/v1/chat/completions" | jq .usage.prompt_tokens)
	echo "llama chat: tokenize $n, chat completions $u"
	[ "$n" = "$u" ]
}

@test "an answer over the 8,000,000-byte bound is a 400 answer_too_large that cost at most the bound: a 1 MiB prompt of 3-byte characters with return_token_strs" {
	local f=$BATS_TEST_TMPDIR/big.json
	# 349,500 x U+0800: 1,048,541 bytes of body; its ids and their texts
	# were an 18.9 MB answer (the new-user trial of 2026-12-06)
	python3 -c 'import json,sys; sys.stdout.write(json.dumps({"model":"tokstream-sim","prompt":"\u0800"*349500,"return_token_strs":True},ensure_ascii=False))' >"$f"
	[ "$(wc -c <"$f")" -le 1048576 ]
	curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
		-H 'Authorization: Bearer sk-tok-1' \
		-H 'Content-Type: application/json' --data-binary "@$f" \
		"$BASE/tokenize" >"$BATS_TEST_TMPDIR/code"
	head -c 600 "$BATS_TEST_TMPDIR/body"
	[ "$(code)" = 400 ]
	jq -e '.error.code == "answer_too_large" and
		.error.param == "return_token_strs" and
		(.error.message | test("8000000"))' "$BATS_TEST_TMPDIR/body"
	# without the texts the same prompt's ids fit, and come whole
	sed 's/"return_token_strs": true/"return_token_strs": false/' "$f" >"$f.ids"
	grep -q '"return_token_strs": false' "$f.ids"
	curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
		-H 'Authorization: Bearer sk-tok-1' \
		-H 'Content-Type: application/json' --data-binary "@$f.ids" \
		"$BASE/tokenize" >"$BATS_TEST_TMPDIR/code"
	[ "$(code)" = 200 ]
	[ "$(wc -c <"$BATS_TEST_TMPDIR/body")" -le 8000000 ]
	jq -e '.count == (.tokens | length) and .count > 100000' "$BATS_TEST_TMPDIR/body"
}
