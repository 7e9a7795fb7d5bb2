#!/usr/bin/env bats
# C01: the proxy must not buffer the stream. The same check is run against
# a lighttpd with server.stream-response-body = 0 and must fail there, so
# the test proves it can catch the fault.

load helpers

# itl_near_300 BASE: events of a TPOT 300 ms stream arrive ~300 ms apart:
# the two middle gaps of the four within 250..450 ms and the four together
# over 900 ms. A buffering proxy gives four gaps near 0. Not every gap: on
# a loaded machine one event written late makes its gap long and the
# next one short (one such run in 20 of `scripts/check --repeat`).
itl_near_300() {
	"$TOKBENCH" stream --url "$1" --prompt hello --max-tokens 5 \
		--tpot-ms 300 --json |
		jq -e '.itl_ms | . as $g | ("ITL ms: " + tostring | stderr) |
			$g | length == 4 and (sort | .[1] > 250 and .[2] < 450)
			and add > 900'
}

teardown() {
	ts_stop
}

@test "C01: events arrive ~300 ms apart with stream-response-body = 2" {
	ts_start
	itl_near_300 "$BASE"
}

@test "C01: the same check fails when lighttpd buffers (stream-response-body = 0)" {
	sed 's/^server.stream-response-body = 2/server.stream-response-body = 0/' \
		"$TS_SRCDIR/etc/tokstream-site.conf" > "$BATS_TEST_TMPDIR/site0.conf"
	grep -q 'stream-response-body = 0' "$BATS_TEST_TMPDIR/site0.conf"
	TOKSTREAM_SITECONF=$BATS_TEST_TMPDIR/site0.conf
	export TOKSTREAM_SITECONF
	ts_start
	run itl_near_300 "$BASE"
	[ "$status" -ne 0 ]
	# and the whole answer indeed arrived at once
	"$TOKBENCH" stream --url "$BASE" --prompt hello --max-tokens 5 \
		--tpot-ms 300 --json | jq -e '.itl_ms | all(.[]; . < 50)'
}
