#!/usr/bin/env bats
# The llama backend's KV caches: allocated when a sequence's prefill
# starts, freed when it ends or its client leaves (issue #7).

load helpers

setup_file() {
	MODEL_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/model.XXXXXX")
	# context 4096 x 4 layers x kv_dim 128 x 2 (K and V) x 4 bytes:
	# 16 MiB of KV cache per sequence
	"$TS_BUILDDIR/src/tools/tokstream-mkmodel" \
		--out-model "$MODEL_DIR/model.bin" \
		--out-tokenizer "$MODEL_DIR/tokenizer.bin" \
		--dim 128 --hidden-dim 344 --layers 4 --heads 4 --kv-heads 4 \
		--vocab 512 --seq-len 4096 --seed 5 >/dev/null
	export MODEL_DIR
	ts_start --backend llama --model "$MODEL_DIR/model.bin" \
		--tokenizer "$MODEL_DIR/tokenizer.bin" --max-num-seqs 8 \
		--keepalive-ms 300
}

teardown_file() {
	ts_stop
}

rss_kb() {
	awk '/^VmRSS/ { print $2 }' "/proc/$(head -n 1 "$RUNDIR/tokstream-fcgi.pid")/status"
}

@test "llama: 8 streams hold 8 KV caches; when their clients leave the memory goes back" {
	curl -s "$BASE/stream?prompt=warm&max_tokens=4" >/dev/null
	before=$(rss_kb)
	for n in $(seq 1 8); do
		"$TOKBENCH" cancel --url "$BASE" --read 1500 --max-tokens 4000 \
			--prompt "kv $n" --id-only >"$BATS_TEST_TMPDIR/id$n" &
	done
	# while they run: 8 x 16 MiB more (the highest of 40 samples)
	during=0
	for i in $(seq 1 40); do
		r=$(rss_kb)
		[ "$r" -gt "$during" ] && during=$r
		sleep 0.02
	done
	wait
	for n in $(seq 1 8); do
		wait_not_running "$(cat "$BATS_TEST_TMPDIR/id$n")"
		[ "$(debug_field "$(cat "$BATS_TEST_TMPDIR/id$n")" status)" = cancelled ]
	done
	after=$(rss_kb)
	echo "VmRSS kB: before $before, during $during, after $after"
	[ $((during - before)) -ge $((8 * 16384 * 9 / 10)) ]
	if [ -n "${ASAN_OPTIONS:-}" ]; then
		# ASan's quarantine holds the small allocations freed with them;
		# the 128 MiB of caches must still have gone back
		[ $((after - before)) -le $(((during - before) / 3)) ]
	else
		[ $((after - before)) -le 8192 ]
	fi
}
