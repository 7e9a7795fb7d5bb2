#!/usr/bin/env bats
# --no-cancel, the failure mode tokstream exists to avoid, really happens
# when asked for: the sequence keeps its slot and decodes to max_tokens for
# a client that left, and /_debug/generated counts the waste.
#
# "wasted" counts the tokens never written to lighttpd. lighttpd takes a
# client's FIN as a half-close: it writes on, and closes the FastCGI
# socket only after the client's RST, so one or two tokens past the five
# read are written before the responder sees the hang-up (6 written in 8
# of 8 tries on an idle machine; one more when lighttpd is slow to see
# the RST). With cancellation on, the same client costs
# about 7 generated tokens in all, so "92 or more wasted" can only hold
# when --no-cancel really kept decoding.

load helpers

setup_file() {
	ts_start --no-cancel --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

@test "--no-cancel: read 5 of 100 and close; all 100 are still generated, 92+ wasted" {
	id=$("$TOKBENCH" cancel --url "$BASE" --read 5 --max-tokens 100 --id-only)
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" generated)" -eq 100 ]
	[ "$(debug_field "$id" wasted)" -ge 92 ]
	[ "$(curl -s "$BASE/_debug/generated" | jq .engine.no_cancel)" = true ]
}
