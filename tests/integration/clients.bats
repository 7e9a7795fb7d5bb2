#!/usr/bin/env bats
# Third-party JavaScript clients that people point at OpenAI-compatible
# servers, against tokstream's /v1 endpoints through lighttpd
# (tests/node/clients.mjs): the Vercel AI SDK over /v1/responses and
# /v1/chat/completions, LangChain's ChatOpenAI, and Hugging Face's
# InferenceClient with endpointUrl. For each: streamed text equal to the
# non-stream text, usage against /_debug/generated, finish reasons (EOS,
# stop string, max_tokens), keep-alive comments before the first event,
# and an aborted stream being cancelled. The official openai SDK's tests
# are in v1.bats. The last test is the AI SDK's Anthropic provider over
# /v1/messages (tests/node/ai-sdk-anthropic.mjs).

load helpers

setup_file() {
	# 500 ms: the clients' 1.2 s prefills get ": keep-alive" comments
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

@test "the Vercel AI SDK (ai, @ai-sdk/openai): generateText and streamText over openai() (/v1/responses) and openai.chat() (/v1/chat/completions)" {
	need_node ai @ai-sdk/openai
	run timeout 90 node "$TS_SRCDIR/tests/node/clients.mjs" "$BASE" ai-sdk
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "LangChain JS (@langchain/openai ChatOpenAI, @langchain/core): invoke and stream, usage_metadata, finish_reason, abort" {
	need_node @langchain/openai @langchain/core
	run timeout 90 node "$TS_SRCDIR/tests/node/clients.mjs" "$BASE" \
		langchain
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "Hugging Face's @huggingface/inference (InferenceClient with endpointUrl): chatCompletion and chatCompletionStream, usage, finish_reason, abort" {
	need_node @huggingface/inference
	run timeout 90 node "$TS_SRCDIR/tests/node/clients.mjs" "$BASE" \
		huggingface
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the Vercel AI SDK's Anthropic provider (ai, @ai-sdk/anthropic) over /v1/messages: generateText, streamText with thinking (reasoning before text, signature), a tool call" {
	need_node ai @ai-sdk/anthropic
	run timeout 90 node "$TS_SRCDIR/tests/node/ai-sdk-anthropic.mjs" "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "ok: "* ]]
}
