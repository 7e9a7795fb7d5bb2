#!/usr/bin/env bats
# Every response body and every streamed event of the /v1 endpoints
# (docs/API.md "OpenAI API") validated against the OpenAI OpenAPI
# specification's schemas (CreateChatCompletionResponse,
# CreateChatCompletionStreamResponse, CreateCompletionResponse,
# ListModelsResponse, Model, ErrorResponse, Response and the Responses
# stream events) with a real JSON Schema validator, ajv (npm, in
# tests/node), by tests/node/schemas.mjs. The schemas are tokstream's
# draft-07 transcription of OpenAI's openapi.json in
# tests/node/openai-schemas.json; its "$comment" (and schemas.mjs's header)
# name the spec commit, what the conversion relaxes, and the exceptions
# where the test follows OpenAI's wire behaviour over the spec.

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

@test "every /v1 body, chunk and event validates against OpenAI's schemas (ajv): models, chat and completions stream and not, responses and their events, errors" {
	need_node ajv
	run timeout 90 node "$TS_SRCDIR/tests/node/schemas.mjs" "$BASE"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the validator fails on broken objects (a chat.completion without choices, a message without refusal, ...) and accepts the controls" {
	need_node ajv
	run timeout 30 node "$TS_SRCDIR/tests/node/schemas.mjs" --selftest
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"FAIL: selftest a chat.completion without \"choices\""*"must have required property 'choices'"* ]]
	[[ "$output" == *"FAIL: selftest a chat.completion whose message has no \"refusal\""*"/choices/0/message must have required property 'refusal'"* ]]
	[[ "$output" != *SELFTEST-ACCEPTED* ]]
	[[ "$output" != *SELFTEST-CONTROL-REJECTED* ]]
	[[ "$output" == *"selftest: 7 of 7 broken objects rejected, 3 of 3 controls accepted"* ]]
}
