#!/usr/bin/env bats
# --no-cancel, the failure mode tokstream exists to avoid, really happens
# when asked for: the sequence keeps its slot and decodes to max_tokens for
# a client that left, and /_debug/generated counts the waste.

load helpers

setup_file() {
	ts_start --no-cancel --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

@test "--no-cancel: read 5 of 100 and close; all 100 are still generated, 94+ wasted" {
	id=$("$TOKBENCH" cancel --url "$BASE" --read 5 --max-tokens 100 --id-only)
	wait_not_running "$id"
	curl -s "$BASE/_debug/generated?id=$id"
	[ "$(debug_field "$id" generated)" -eq 100 ]
	[ "$(debug_field "$id" wasted)" -ge 94 ]
	[ "$(curl -s "$BASE/_debug/generated" | jq .engine.no_cancel)" = true ]
}
