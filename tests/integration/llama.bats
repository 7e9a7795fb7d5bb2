#!/usr/bin/env bats
# The llama backend (issue #7) through lighttpd, on a small model that
# tokstream-mkmodel makes: the same endpoints, deterministic output, valid
# UTF-8 in every event, TTFT that grows with the prompt, and a client that
# leaves stops the compute as with the simulator.

load helpers

setup_file() {
	MODEL_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/model.XXXXXX")
	"$TS_BUILDDIR/src/tools/tokstream-mkmodel" \
		--out-model "$MODEL_DIR/model.bin" \
		--out-tokenizer "$MODEL_DIR/tokenizer.bin" \
		--dim 128 --hidden-dim 344 --layers 4 --heads 4 --kv-heads 2 \
		--vocab 1024 --seq-len 512 --seed 3 >/dev/null
	export MODEL_DIR
	ts_start --backend llama --model "$MODEL_DIR/model.bin" \
		--tokenizer "$MODEL_DIR/tokenizer.bin" --max-num-seqs 8 \
		--keepalive-ms 300
}

teardown_file() {
	ts_stop
}

@test "llama: /stream gives max_tokens events of valid UTF-8 JSON, the same for the same request" {
	curl -sN "$BASE/stream?prompt=Once%20upon%20a%20time&max_tokens=24" \
		>"$BATS_TEST_TMPDIR/a"
	curl -sN "$BASE/stream?prompt=Once%20upon%20a%20time&max_tokens=24" \
		>"$BATS_TEST_TMPDIR/b"
	[ "$(grep -c '^data: {"token"' "$BATS_TEST_TMPDIR/a")" -ge 1 ]
	tail -n 2 "$BATS_TEST_TMPDIR/a" | grep -q '^data: \[DONE\]'
	grep '^data: {' "$BATS_TEST_TMPDIR/a" | cut -c7- | jq -e .token >/dev/null
	cmp <(grep '^data: ' "$BATS_TEST_TMPDIR/a") \
		<(grep '^data: ' "$BATS_TEST_TMPDIR/b")
	[ "$(curl -s "$BASE/_debug/generated" | jq -r .engine.backend)" = llama ]
}

@test "llama: POST /generate text equals the streamed text" {
	s=$(curl -sN "$BASE/stream?prompt=hello&max_tokens=20" |
		sed -n 's/^data: \({"token".*\)/\1/p' | jq -j .token)
	g=$(curl -s -d '{"prompt":"hello","max_tokens":20}' "$BASE/generate" |
		jq -j .text)
	[ "$s" = "$g" ]
}

@test "llama: TTFT grows with the prompt (real prefill)" {
	# the fastest of three of each (a loaded machine only adds to a
	# TTFT), the long prompt 354 tokens (about 70 ms of prefill here,
	# against a few ms for "hi"), each run's first word its own so that
	# the prefix cache finds none of it
	local t short long x
	for t in 1 2 3; do
		x=$("$TOKBENCH" stream --url "$BASE" --prompt "hi" --json |
			jq .ttft_ms)
		short=$(calc "${short:-$x} < $x ? ${short:-$x} : $x")
		x=$("$TOKBENCH" stream --url "$BASE" --prompt "run$t $(printf \
			'the quick brown fox jumps over the lazy dog %.0s' \
			$(seq 1 16))" --json | jq .ttft_ms)
		long=$(calc "${long:-$x} < $x ? ${long:-$x} : $x")
	done
	echo "ttft short $short ms, long $long ms"
	holds "$long > 2 * $short"
}

@test "llama: a client that leaves stops the compute (cancel proof)" {
	# a step of this small model takes about a millisecond: at that pace
	# the time a loaded machine takes to carry the hang-up from the
	# client through lighttpd to the responder is a token a ms (200
	# seen; and 1.2 s once, 64 tokens at 20 ms a step). Paced at 50 ms
	# a step (tpot_ms; the model still computes every one), the bound
	# counts steps, not the machine's load. What the server promises is
	# the second half: once the hang-up reaches it, decoding stops
	# within a step (cancel_to_leave_ms) and stays stopped. How long the
	# hang-up takes to arrive is the machine's: 1.8 s once (42 tokens)
	# on a 2-core machine at load average 17, so the bound is 100 steps,
	# a quarter of the 400 a server that missed the close would make
	id=$("$TOKBENCH" cancel --url "$BASE" --read 5 --max-tokens 400 \
		--tpot-ms 50 --id-only)
	wait_not_running "$id"
	g=$(debug_field "$id" generated)
	l=$(debug_field "$id" cancel_to_leave_ms)
	echo "generated $g, cancel_to_leave_ms $l"
	# what matters is that decoding stopped far short of 400 and within
	# a step of the hang-up being seen
	[ "$g" -le 100 ]
	holds "$l < 50"
	sleep 0.3
	[ "$(debug_field "$id" generated)" -eq "$g" ]
	[ "$(debug_field "$id" status)" = cancelled ]
}

@test "llama: a prompt longer than the model's context is 400 context_length_exceeded" {
	p=$(printf 'lorem ipsum dolor sit amet %.0s' $(seq 1 400))
	code=$(curl -s -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
		--data-binary "{\"prompt\":\"$p\",\"max_tokens\":2}" "$BASE/generate")
	cat "$BATS_TEST_TMPDIR/e"
	[ "$code" = 400 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = context_length_exceeded ]
}

@test "llama: a prompt too long only in the model's tokens is a 400 too, on /stream and /v1 (nothing is streamed)" {
	p=$(printf 'hello %.0s' $(seq 1 300))
	code=$(curl -s -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
		"$BASE/stream?prompt=$(printf '%s' "$p" | sed 's/ /+/g')&max_tokens=2")
	[ "$code" = 400 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = context_length_exceeded ]
	model=$(curl -s "$BASE/v1/models" | jq -r '.data[0].id')
	code=$(curl -s -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
		"$BASE/v1/completions" \
		-d "{\"model\":\"$model\",\"prompt\":\"$p\",\"max_tokens\":1}")
	cat "$BATS_TEST_TMPDIR/e"
	[ "$code" = 400 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = context_length_exceeded ]
}

@test "llama: the refusal of a prompt over the context says how many tokens it had (vLLM's message), on /stream, /generate and /v1" {
	local d=$BATS_TEST_TMPDIR model a b p n
	model=$(curl -s "$BASE/v1/models" | jq -r '.data[0].id')
	# the count the server gives a prompt of k "hello "s, measured where
	# it fits (usage.prompt_tokens): k of them are a + (k - 100) * b
	count() {
		curl -s "$BASE/v1/completions" -d "{\"model\":\"$model\",\"prompt\":\"$(printf 'hello %.0s' $(seq 1 "$1"))\",\"max_tokens\":1}" |
			jq -r .usage.prompt_tokens
	}
	a=$(count 100)
	b=$(( $(count 101) - a ))
	[ "$(count 150)" -eq $(( a + 50 * b )) ]
	n=$(( a + 200 * b ))
	echo "300 hellos: $n tokens"
	[ "$n" -gt 512 ]
	p=$(printf 'hello %.0s' $(seq 1 300))
	curl -s -o "$d/s" "$BASE/stream?prompt=$(printf '%s' "$p" | sed 's/ /+/g')&max_tokens=2"
	curl -s -o "$d/g" --data-binary "{\"prompt\":\"$p\",\"max_tokens\":2}" "$BASE/generate"
	curl -s -o "$d/v" "$BASE/v1/completions" \
		-d "{\"model\":\"$model\",\"prompt\":\"$p\",\"max_tokens\":1}"
	curl -s -o "$d/c" "$BASE/v1/chat/completions" \
		-d "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"$p\"}]}"
	curl -s -o "$d/r" "$BASE/v1/responses" \
		-d "{\"model\":\"$model\",\"input\":\"$p\"}"
	for f in s g v; do
		cat "$d/$f"; echo
		jq -e --arg m "You passed $n input tokens. However, the model's context length is only 512 tokens, resulting in a maximum input length of 511 tokens. Please reduce the length of the input prompt." \
			'.error.code == "context_length_exceeded" and .error.message == $m' "$d/$f"
	done
	# chat and responses add the template's tokens: more than n
	for f in c r; do
		cat "$d/$f"; echo
		jq -e --argjson n "$n" '.error.code == "context_length_exceeded" and
			(.error.message | test("^You passed [0-9]+ input tokens\\. However, the model.s context length is only 512 tokens, resulting in a maximum input length of 511 tokens\\.")) and
			(.error.message | capture("passed (?<k>[0-9]+) ") | .k | tonumber) > $n' "$d/$f"
	done
}

@test "llama: a prompt too long in bytes alone is refused unencoded, the message giving its bytes" {
	p=$(printf 'lorem ipsum dolor sit amet %.0s' $(seq 1 400))
	code=$(curl -s -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' \
		--data-binary "{\"prompt\":\"$p\",\"max_tokens\":2}" "$BASE/generate")
	cat "$BATS_TEST_TMPDIR/e"
	[ "$code" = 400 ]
	jq -e --arg b "${#p}" '.error.code == "context_length_exceeded" and
		(.error.message | startswith("You passed \($b) input bytes. However, the model'"'"'s context length is only 512 tokens of at most "))' \
		"$BATS_TEST_TMPDIR/e"
}

@test "llama: the start-up log names the backend, the model file, its dimensions, the context and the compute threads, not the simulator's TPOT" {
	local log=$RUNDIR/tokstream-fcgi.log line params size
	line=$(grep 'tokstream-fcgi [^:]*: pid ' "$log")
	echo "$line"
	# the checkpoint's parameters from its size: a 28-byte header, then
	# f32 weights and the RoPE tables (seq_len x head_size floats)
	size=$(stat -c %s "$MODEL_DIR/model.bin")
	params=$(( (size - 28) / 4 - 512 * (128 / 4) ))
	[[ "$line" == *", backend llama: model $MODEL_DIR/model.bin (dim 128, 4 layers, 4 heads, 2 kv heads, vocab 1024, hidden dim 344, $params parameters, $(( params * 4 )) weight bytes), context 512 tokens, "* ]]
	[[ "$line" =~ ,\ [1-9][0-9]*\ compute\ threads,\ 8\ slots, ]]
	! grep -q 'TPOT [0-9]' "$log" || false
	! grep -q 'prefill [0-9]' "$log" || false
}

@test "llama: logprobs are the model's own (log-softmax of its logits): <= 0, sorted, greedy picks the top one; guided output (tools, JSON, echo) is a clear 400" {
	local d=$BATS_TEST_TMPDIR model
	model=$(curl -s "$BASE/v1/models" | jq -r '.data[0].id')
	curl -s -o "$d/l" -H 'Content-Type: application/json' -d '{"model":"'"$model"'","temperature":0,"max_tokens":8,"logprobs":true,"top_logprobs":4,"messages":[{"role":"user","content":"Once upon a time"}]}' "$BASE/v1/chat/completions"
	jq -e '.choices[0].logprobs.content | length > 0 and
		all(.[]; .logprob <= 0 and (.top_logprobs | length) == 4 and
		    .token == .top_logprobs[0].token and
		    ([.top_logprobs[].logprob] | . == (sort | reverse)))' "$d/l"
	[ "$(curl -s -o "$d/t" -w '%{http_code}' -H 'Content-Type: application/json' -d '{"model":"'"$model"'","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","messages":[{"role":"user","content":"hi"}]}' "$BASE/v1/chat/completions")" = 400 ]
	jq -e '.error.code == "unsupported_parameter" and (.error.message | test("guided"))' "$d/t"
}
