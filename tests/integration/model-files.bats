#!/usr/bin/env bats
# Real model files (issue #26) through lighttpd: a GGUF file and a Hugging
# Face folder that tokstream-mkmodel writes from the same weights, served
# by --backend llama with the model's own tokenizer, chat template, EOS
# list and sampling defaults, through every endpoint.

load helpers

setup_file() {
	MODEL_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/model.XXXXXX")
	local mk="$TS_BUILDDIR/src/tools/tokstream-mkmodel"
	local shape="--dim 64 --hidden-dim 192 --layers 2 --heads 4 --kv-heads 2 --vocab 512 --seq-len 256 --seed 9"
	"$mk" --format gguf --out "$MODEL_DIR/m.gguf" --name synth-gguf \
		$shape >/dev/null
	"$mk" --format gguf --type q8_0 --out "$MODEL_DIR/q8.gguf" $shape \
		>/dev/null
	"$mk" --format hf --out "$MODEL_DIR/hf" $shape >/dev/null
	"$mk" --format gguf --out "$MODEL_DIR/greedy.gguf" --temperature 0 \
		$shape >/dev/null
	# a Llama 3 style model: byte-level BPE, the Llama 3 template, two
	# EOS ids (<|end_of_text|> 544, <|eot_id|> 547)
	local l3="--tokenizer-json $TS_SRCDIR/tests/data/tokenizers/llama3-bpe.json --bos <|begin_of_text|> --eos <|end_of_text|> --eos <|eot_id|> --chat-template $TS_SRCDIR/tests/data/templates/llama-3-instruct.jinja --dim 64 --hidden-dim 192 --layers 2 --heads 4 --kv-heads 2 --seed 4"
	"$mk" --format gguf --out "$MODEL_DIR/l3.gguf" $l3 >/dev/null
	"$mk" --format hf --out "$MODEL_DIR/l3" $l3 >/dev/null
	export MODEL_DIR
	ts_start --backend llama --model "$MODEL_DIR/m.gguf" --max-num-seqs 8
}

teardown_file() {
	ts_stop
}

# served: the model's name (the first /v1/models lists)
served() {
	curl -s "$BASE/v1/models" | jq -r '.data[0].id'
}

# chat MESSAGES_JSON: a non-streamed chat's answer, greedy
chat() {
	curl -s "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
		-d "{\"model\":\"$(served)\",\"messages\":$1,\"max_tokens\":16,\"temperature\":0}"
}

# completion BODY_FIELDS: a non-streamed completion's text (or "null")
completion() {
	curl -s "$BASE/v1/completions" -H 'Content-Type: application/json' \
		-d "{\"model\":\"$(served)\",$1}" | jq -r '.choices[0].text'
}

@test "model files: /v1/models shows the GGUF's name, format, template, EOS ids" {
	m=$(curl -s "$BASE/v1/models")
	echo "$m" | jq .
	[ "$(echo "$m" | jq -r '.data[0].id')" = synth-gguf ]
	[ "$(echo "$m" | jq -r '.data[0].tokstream.format')" = gguf ]
	[ "$(echo "$m" | jq -r '.data[0].tokstream.weights')" = f32 ]
	[ "$(echo "$m" | jq -r '.data[0].tokstream.chat_template_source')" = model ]
	echo "$m" | jq -e '.data[0].tokstream.chat_template | contains("<|user|>")'
	[ "$(echo "$m" | jq -c '.data[0].tokstream.eos_token_ids')" = '[2]' ]
	[ "$(echo "$m" | jq -r '.data[0].max_model_len')" = 256 ]
	[ "$(echo "$m" | jq -r '.data[0].tokstream.context_length')" = 256 ]
}

@test "model files: a chat is rendered with the model's template, its </s> the special token" {
	# TinyLlama's template: "<|user|>\nhello</s>\n<|assistant|>\n", BOS
	# added by the tokenizer; "</s>" in the text is EOS (id 2)
	a=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
		-d '{"messages":[{"role":"user","content":"hello"}]}' | jq -c .tokens)
	b=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
		-d '{"prompt":"<|user|>\nhello</s>\n<|assistant|>\n"}' | jq -c .tokens)
	echo "messages $a"
	echo "prompt   $b"
	[ "$a" = "$b" ]
	echo "$a" | jq -e '.[0] == 1 and (.[1:] | index(2)) != null'
	# no BOS doubled when the text starts with it
	c=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
		-d '{"prompt":"<s><|user|>\nhello</s>\n<|assistant|>\n"}' | jq -c .tokens)
	[ "$c" = "$b" ]
}

@test "model files: every endpoint serves the GGUF" {
	chat '[{"role":"user","content":"hi"}]' |
		jq -e '.choices[0].message.content | type == "string" and length > 0'
	curl -sN "$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
		-d '{"model":"synth-gguf","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}' \
		>"$BATS_TEST_TMPDIR/sse"
	grep -c '"delta":{"content"' "$BATS_TEST_TMPDIR/sse"
	tail -n 2 "$BATS_TEST_TMPDIR/sse" | grep -q '^data: \[DONE\]'
	t=$(completion '"prompt":"Once upon","max_tokens":8')
	[ "$t" != null ]
	[ -n "$t" ]
	curl -s "$BASE/v1/responses" -H 'Content-Type: application/json' \
		-d '{"model":"synth-gguf","input":"hi","max_output_tokens":8}' |
		jq -e '(.status == "completed" or .status == "incomplete") and (.output[0].content[0].text | length > 0)'
	curl -s "$BASE/v1/messages" -H 'Content-Type: application/json' \
		-d '{"model":"synth-gguf","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}' |
		jq -e '.content[0].text | length > 0'
	curl -s "$BASE/api/chat" -d '{"model":"synth-gguf","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":8}}' |
		jq -e '.message.content | length > 0'
	curl -s "$BASE/api/generate" -d '{"model":"synth-gguf","stream":false,"prompt":"hi","options":{"num_predict":8}}' |
		jq -e '.response | length > 0'
	curl -sN "$BASE/stream?prompt=hello&max_tokens=8" | tail -n 2 | grep -q '^data: \[DONE\]'
}

@test "model files: the Hugging Face folder of the same weights answers the same" {
	g=$(chat '[{"role":"user","content":"Once upon a time"}]' | jq -r '.choices[0].message.content')
	[ "$g" != null ]
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/hf
		ts_start --backend llama --model "$MODEL_DIR/hf" --max-num-seqs 4
		trap ts_stop EXIT
		m=$(curl -s "$BASE/v1/models")
		[ "$(echo "$m" | jq -r '.data[0].id')" = hf ]
		[ "$(echo "$m" | jq -r '.data[0].tokstream.format')" = hf ]
		h=$(chat '[{"role":"user","content":"Once upon a time"}]' | jq -r '.choices[0].message.content')
		echo "gguf: $g"
		echo "hf:   $h"
		[ -n "$g" ]
		[ "$g" = "$h" ]
	)
}

@test "model files: a Llama 3 style GGUF and folder: byte-level BPE, special tokens in the template, two EOS ids" {
	local want='<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'
	for m in l3.gguf l3; do
		(
			TS_RUNDIR=$BATS_TEST_TMPDIR/$m
			ts_start --backend llama --model "$MODEL_DIR/$m" --max-num-seqs 4
			trap ts_stop EXIT
			curl -s "$BASE/v1/models" >"$BATS_TEST_TMPDIR/models-$m"
			jq -e '.data[0].tokstream.eos_token_ids == [544, 547]' "$BATS_TEST_TMPDIR/models-$m"
			jq -e '.data[0].tokstream.chat_template_source == "model"' "$BATS_TEST_TMPDIR/models-$m"
			curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
				-d '{"messages":[{"role":"user","content":"hello"}]}' |
				jq -c .tokens >"$BATS_TEST_TMPDIR/chat-$m"
			curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
				-d "{\"prompt\":\"$want\"}" | jq -c .tokens >"$BATS_TEST_TMPDIR/text-$m"
			chat '[{"role":"user","content":"Once upon a time"}]' |
				jq -r '.choices[0].message.content' >"$BATS_TEST_TMPDIR/answer-$m"
		)
		cat "$BATS_TEST_TMPDIR/chat-$m"
		# one BOS (the template's), the header and end-of-turn specials
		cmp "$BATS_TEST_TMPDIR/chat-$m" "$BATS_TEST_TMPDIR/text-$m"
		jq -e '.[0] == 543 and (.[1:] | index(543)) == null and
			index(545) == 1 and (index(547) != null)' "$BATS_TEST_TMPDIR/chat-$m"
	done
	# the folder and the GGUF: the same tokens, the same greedy answer
	cmp "$BATS_TEST_TMPDIR/chat-l3.gguf" "$BATS_TEST_TMPDIR/chat-l3"
	cat "$BATS_TEST_TMPDIR/answer-l3.gguf"
	grep -qv '^null$' "$BATS_TEST_TMPDIR/answer-l3.gguf"
	cmp "$BATS_TEST_TMPDIR/answer-l3.gguf" "$BATS_TEST_TMPDIR/answer-l3"
}

@test "model files: a Q8_0 GGUF serves, and its greedy text starts as the F32 one" {
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/q8
		ts_start --backend llama --model "$MODEL_DIR/q8.gguf" --max-num-seqs 4
		trap ts_stop EXIT
		[ "$(curl -s "$BASE/v1/models" | jq -r '.data[0].tokstream.weights')" = q8_0 ]
		t=$(completion '"prompt":"Once upon","max_tokens":8,"temperature":0')
		[ "$t" != null ]
		[ -n "$t" ]
	)
}

@test "model files: the model's sampling defaults apply only where a request gives none" {
	# greedy.gguf says temperature 0: a request without one is greedy
	# (the same text every time, and the text of temperature 0 given);
	# a request's own temperature wins
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/greedy
		ts_start --backend llama --model "$MODEL_DIR/greedy.gguf" --max-num-seqs 4
		trap ts_stop EXIT
		curl -s "$BASE/v1/models" | jq -e '.data[0].tokstream.generation_defaults.temperature == 0'
		body='"prompt":"Once upon","max_tokens":24'
		a=$(completion "$body,\"seed\":1")
		b=$(completion "$body,\"seed\":2")
		z=$(completion "$body,\"temperature\":0")
		h=$(completion "$body,\"temperature\":2,\"seed\":1")
		# the Responses API echoes the temperature the model gave
		curl -s "$BASE/v1/responses" -H 'Content-Type: application/json' \
			-d "{\"model\":\"$(served)\",\"input\":\"hi\",\"max_output_tokens\":4}" |
			jq -e '.temperature == 0'
		echo "default seed 1: $a"
		echo "default seed 2: $b"
		echo "temperature 0:  $z"
		echo "temperature 2:  $h"
		[ "$a" != null ]
		[ "$a" = "$b" ]
		[ "$a" = "$z" ]
		[ "$h" != "$z" ]
	)
}

@test "model files: --chat-template FILE replaces the model's; a template's refusal is a 400 with its reason" {
	cat >"$BATS_TEST_TMPDIR/strict.jinja" <<'EOF'
{% for message in messages %}{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}[{{ message['role'] }}] {{ message['content'] }}
{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}
EOF
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/tpl
		ts_start --backend llama --model "$MODEL_DIR/m.gguf" \
			--chat-template "$BATS_TEST_TMPDIR/strict.jinja"
		trap ts_stop EXIT
		[ "$(curl -s "$BASE/v1/models" | jq -r '.data[0].tokstream.chat_template_source')" = file ]
		a=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
			-d '{"messages":[{"role":"user","content":"hello"}]}' | jq -c .tokens)
		b=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
			-d '{"prompt":"[user] hello\n[assistant] "}' | jq -c .tokens)
		[ "$a" = "$b" ]
		code=$(curl -s -o "$BATS_TEST_TMPDIR/err" -w '%{http_code}' \
			"$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
			-d '{"model":"synth-gguf","messages":[{"role":"system","content":"x"},{"role":"user","content":"hi"}]}')
		cat "$BATS_TEST_TMPDIR/err"
		[ "$code" = 400 ]
		jq -e '.error.message | contains("System role not supported")' "$BATS_TEST_TMPDIR/err"
		code=$(curl -s -o "$BATS_TEST_TMPDIR/err2" -w '%{http_code}' "$BASE/v1/messages" \
			-H 'Content-Type: application/json' \
			-d '{"model":"synth-gguf","max_tokens":8,"system":"x","messages":[{"role":"user","content":"hi"}]}')
		[ "$code" = 400 ]
		jq -e '.error.message | contains("System role not supported")' "$BATS_TEST_TMPDIR/err2"
	)
	# a template that runs away: its limit named, not the client's text
	printf '{%% for i in range(1000000000) %%}x{%% endfor %%}' >"$BATS_TEST_TMPDIR/loop.jinja"
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/loop
		ts_start --backend llama --model "$MODEL_DIR/m.gguf" \
			--chat-template "$BATS_TEST_TMPDIR/loop.jinja"
		trap ts_stop EXIT
		code=$(curl -s -o "$BATS_TEST_TMPDIR/err3" -w '%{http_code}' \
			"$BASE/v1/chat/completions" -H 'Content-Type: application/json' \
			-d '{"model":"synth-gguf","messages":[{"role":"user","content":"hi"}]}')
		cat "$BATS_TEST_TMPDIR/err3"
		[ "$code" = 400 ]
		jq -e '.error.message | startswith("the --chat-template chat template failed: ")' "$BATS_TEST_TMPDIR/err3"
	)
}

@test "model files: --chat-template NAME: chatml, llama3's and the built-in one by name" {
	local name want
	for name in chatml tokstream; do
		case $name in
		chatml) want='<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n' ;;
		tokstream) want='<|user|>\nhello\n<|assistant|>\n' ;;
		esac
		(
			TS_RUNDIR=$BATS_TEST_TMPDIR/$name
			ts_start --backend llama --model "$MODEL_DIR/m.gguf" \
				--chat-template $name
			trap ts_stop EXIT
			curl -s "$BASE/v1/models" | jq -e --arg n $name \
				'.data[0].tokstream.chat_template_source == $n'
			a=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
				-d '{"messages":[{"role":"user","content":"hello"}]}' | jq -c .tokens)
			b=$(curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
				-d "{\"prompt\":\"$want\"}" | jq -c .tokens)
			echo "$name: $a"
			[ "$a" != null ]
			[ "$a" = "$b" ]
		)
	done
	# llama3's on the Llama 3 style model: its bos_token and specials
	(
		TS_RUNDIR=$BATS_TEST_TMPDIR/llama3
		ts_start --backend llama --model "$MODEL_DIR/l3.gguf" --chat-template llama3
		trap ts_stop EXIT
		curl -s "$BASE/tokenize" -H 'Content-Type: application/json' \
			-d '{"messages":[{"role":"user","content":"hello"}]}' |
			jq -e '.tokens[0] == 543 and .tokens[1] == 545'
	)
}

@test "model files: a broken model or template is refused at start with one clear line" {
	head -c 3000 "$MODEL_DIR/m.gguf" >"$BATS_TEST_TMPDIR/cut.gguf"
	run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama \
		--model "$BATS_TEST_TMPDIR/cut.gguf" --socket "$BATS_TEST_TMPDIR/s"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *cut.gguf* ]]
	printf '{%% for x in %%}' >"$BATS_TEST_TMPDIR/bad.jinja"
	run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama \
		--model "$MODEL_DIR/m.gguf" --chat-template "$BATS_TEST_TMPDIR/bad.jinja" \
		--socket "$BATS_TEST_TMPDIR/s2"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *bad.jinja*line* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama \
		--model "$MODEL_DIR/m.gguf" --tokenizer "$MODEL_DIR/m.gguf" \
		--socket "$BATS_TEST_TMPDIR/s3"
	[ "$status" -ne 0 ]
	[[ "$output" == *"drop --tokenizer"* ]]
	# a template that is not UTF-8, empty, or a folder
	printf '\377\376 {{ messages[0].content }}' >"$BATS_TEST_TMPDIR/bad-utf8.jinja"
	: >"$BATS_TEST_TMPDIR/empty.jinja"
	for t in bad-utf8.jinja empty.jinja; do
		run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama \
			--model "$MODEL_DIR/m.gguf" --chat-template "$BATS_TEST_TMPDIR/$t" \
			--socket "$BATS_TEST_TMPDIR/s4"
		echo "$output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"$t chat template is"* ]]
	done
	run "$TS_BUILDDIR/src/tokstream-fcgi" --backend llama \
		--model "$MODEL_DIR/m.gguf" --chat-template "$BATS_TEST_TMPDIR" \
		--socket "$BATS_TEST_TMPDIR/s5"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not a regular file"* ]]
}
