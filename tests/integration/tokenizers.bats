#!/usr/bin/env bats
# The model tokenizers (src/model/tok_*.c; docs/ARCHITECTURE.md
# "Tokenizers") against an independent implementation: Hugging Face's
# tokenizers.js (@huggingface/tokenizers, npm, in tests/node) reads the
# same tokenizer.json files and must give the same ids for every line of
# tests/data/tokenizers/corpus.jsonl (spaces, newlines, \r\n, tabs, digit
# runs, contractions, CJK, emoji and ZWJ sequences, combining marks,
# special-token text, the empty string, a lone U+2581), and tokstream's
# stream decode must give the text back. The tokenizer files are the
# project's own, made by tests/node/tok-train.mjs: byte-level BPE with
# Llama 3's pre-tokenizer and ignore_merges, with GPT-2's, Qwen 2's and
# SmolLM's, and SentencePiece-style BPE as Llama 2's (normalizers) and
# Mistral's (Metaspace) tokenizer.json. The byte-level ones are checked
# a second time built as from GGUF metadata (tok_encode --gguf PRE).

load helpers

DATA=$TS_SRCDIR/tests/data/tokenizers
DRIVER=$TS_BUILDDIR/tests/tok_encode

# crosscheck [--gguf PRE] FILE (in tests/data/tokenizers)
crosscheck() {
	local gguf=()
	[ "$1" = --gguf ] && gguf=(--gguf "$2") && shift 2
	crosscheck_file "${gguf[@]}" "$DATA/$1"
}

# crosscheck_file [--gguf PRE] PATH
crosscheck_file() {
	need_node @huggingface/tokenizers
	run timeout 120 node "$TS_SRCDIR/tests/node/tok-crosscheck.mjs" \
		"${@:1:$#-1}" "$DRIVER" "${@: -1}" "$DATA/corpus.jsonl"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ok 66 lines"* ]]
}

@test "byte-level BPE, Llama 3 pre-tokenizer, ignore_merges, special tokens: ids as tokenizers.js, decode gives the text back" {
	crosscheck llama3-bpe.json
}

@test "byte-level BPE, GPT-2 regex (ByteLevel use_regex), merges as pairs: ids as tokenizers.js, decode gives the text back" {
	crosscheck gpt2-bpe.json
}

@test "byte-level BPE, Qwen 2's Split regex (single digits), no BOS: ids as tokenizers.js, decode gives the text back" {
	crosscheck qwen2-bpe.json
}

@test "byte-level BPE, SmolLM's Digits then GPT-2's regex (two splits in turn): ids as tokenizers.js, decode gives the text back" {
	crosscheck smollm-bpe.json
}

@test "the same vocabularies built as from GGUF metadata (tokenizer_from_vocab, tokenizer.ggml.pre llama-bpe, gpt2, qwen2, smollm): ids as tokenizers.js" {
	crosscheck --gguf llama-bpe llama3-bpe.json
	crosscheck --gguf gpt2 gpt2-bpe.json
	crosscheck --gguf qwen2 qwen2-bpe.json
	crosscheck --gguf smollm smollm-bpe.json
}

@test "a GGUF pre-tokenizer name that is not the file's gives other ids (the names are not all one regex)" {
	need_node @huggingface/tokenizers
	run timeout 120 node "$TS_SRCDIR/tests/node/tok-crosscheck.mjs" \
		--gguf gpt2 "$DRIVER" "$DATA/llama3-bpe.json" "$DATA/corpus.jsonl"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"ids differ"* ]]
	run "$DRIVER" --gguf llama-4-nonesuch "$DATA/llama3-bpe.json" "$DATA/corpus.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *'unknown pre-tokenizer "llama-4-nonesuch"'* ]]
}

@test "SentencePiece-style BPE (Prepend/Replace normalizers, byte fallback): ids as tokenizers.js, decode gives the text back" {
	crosscheck spm-bpe.json
}

@test "SentencePiece-style BPE (Metaspace prepend_scheme first): ids and decoded text as tokenizers.js" {
	crosscheck spm-meta.json
}

@test "Metaspace with prepend_scheme always, first and never, split true and false: ids and decoded text as tokenizers.js" {
	command -v jq >/dev/null || skip "no jq"
	local scheme split
	for scheme in always first never; do
		for split in true false; do
			jq ".pre_tokenizer.split = $split |
			    .pre_tokenizer.prepend_scheme = \"$scheme\" |
			    .decoder.decoders[0].prepend_scheme = \"$scheme\"" \
				"$DATA/spm-meta.json" >"$BATS_TEST_TMPDIR/meta-$scheme-$split.json"
			echo "prepend_scheme $scheme, split $split"
			crosscheck_file "$BATS_TEST_TMPDIR/meta-$scheme-$split.json"
		done
	done
}

@test "the tokenizer.json of a tokstream-mkmodel Hugging Face folder (Llama 2 style): ids and decoded text as tokenizers.js" {
	"$TS_BUILDDIR/src/tools/tokstream-mkmodel" --format hf \
		--out "$BATS_TEST_TMPDIR/hf" --dim 64 --hidden-dim 128 --layers 1 \
		--heads 2 --kv-heads 2 --seq-len 64
	crosscheck_file "$BATS_TEST_TMPDIR/hf/tokenizer.json"
}

@test "the cross-check fails when the ids differ (a driver that drops each line's last id)" {
	need_node @huggingface/tokenizers
	cat >"$BATS_TEST_TMPDIR/wrong" <<-EOF
		#!/bin/sh
		"$DRIVER" "\$@" | sed -e 's/,[0-9]*\],"text"/],"text"/'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/wrong"
	run timeout 120 node "$TS_SRCDIR/tests/node/tok-crosscheck.mjs" \
		"$BATS_TEST_TMPDIR/wrong" "$DATA/llama3-bpe.json" \
		"$DATA/corpus.jsonl"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *'line 2 "The quick brown fox jumps over the lazy dog.": ids differ'* ]]
	[[ "$output" == *"differences in"* ]]
}

@test "the committed tokenizer files are what tests/node/tok-train.mjs makes" {
	command -v node >/dev/null || skip "no node"
	run node "$TS_SRCDIR/tests/node/tok-train.mjs" "$BATS_TEST_TMPDIR/gen"
	[ "$status" -eq 0 ]
	for f in llama3-bpe.json gpt2-bpe.json qwen2-bpe.json smollm-bpe.json \
		spm-bpe.json spm-meta.json; do
		cmp "$DATA/$f" "$BATS_TEST_TMPDIR/gen/$f"
	done
}

@test "a tokenizer.json tokstream does not implement is refused naming what (WordPiece, an unknown normalizer, a merge of unknown pieces)" {
	command -v jq >/dev/null || skip "no jq"
	jq '.model.type = "WordPiece"' "$DATA/llama3-bpe.json" >"$BATS_TEST_TMPDIR/wp.json"
	run "$DRIVER" "$BATS_TEST_TMPDIR/wp.json" "$DATA/corpus.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *'model type "WordPiece" is not supported'* ]]
	jq '.normalizer = {"type": "NFKC"}' "$DATA/spm-bpe.json" >"$BATS_TEST_TMPDIR/nf.json"
	run "$DRIVER" "$BATS_TEST_TMPDIR/nf.json" "$DATA/corpus.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *'normalizer "NFKC" is not supported'* ]]
	jq '.model.merges[3] = "zz qq"' "$DATA/llama3-bpe.json" >"$BATS_TEST_TMPDIR/mg.json"
	run "$DRIVER" "$BATS_TEST_TMPDIR/mg.json" "$DATA/corpus.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == *'merge 3 names "zz", which is not in the vocabulary'* ]]
}
