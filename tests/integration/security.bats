#!/usr/bin/env bats
# /_debug/ and /metrics are loopback only, even behind a proxy (issue #5):
# a reverse proxy on the same host connects from 127.0.0.1 too, so a
# request that carries a proxy's forwarding header (X-Forwarded-For,
# Forwarded, X-Real-IP) is not local (docs/API.md "Loopback only, never
# through a proxy").

load helpers

setup_file() {
	ts_start --keepalive-ms 500
}

teardown_file() {
	ts_stop
}

# code_of PATH [curl options...]: "<status> <error code or ->"
code_of() {
	local path=$1 out=$BATS_TEST_TMPDIR/body st
	shift
	st=$(curl -sS -o "$out" -w '%{http_code}' "$@" "$BASE$path")
	echo "$st $(jq -r '.error.code // "-"' "$out" 2>/dev/null || echo -)"
}

@test "/_debug/generated and /metrics answer a loopback client that no proxy forwarded" {
	curl -sSN "$BASE/stream?prompt=sec&max_tokens=2" >/dev/null
	[ "$(code_of /_debug/generated)" = "200 -" ]
	[ "$(code_of /metrics)" = "200 -" ]
	# and the public endpoints do not care about forwarding headers
	[ "$(code_of /health -H 'X-Forwarded-For: 203.0.113.9')" = "200 -" ]
	run curl -sSN -H 'Forwarded: for=203.0.113.9' "$BASE/stream?prompt=sec&max_tokens=2"
	[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 2 ]
}

# A request that carries a forwarding header is not local (issue #5; the
# check is in handlers/debug.c).
@test "a request forwarded by a proxy is refused: 403 loopback_only on /_debug/generated and /metrics (X-Forwarded-For, Forwarded, X-Real-IP)" {
	for path in /_debug/generated /_debug/generated?id=1 /metrics; do
		for h in 'X-Forwarded-For: 203.0.113.9' \
		    'X-Forwarded-For: 127.0.0.1' \
		    'X-Forwarded-For: 203.0.113.9, 127.0.0.1' \
		    'Forwarded: for=203.0.113.9;proto=http' \
		    'Forwarded: for="[2001:db8::1]"' \
		    'X-Real-IP: 203.0.113.9'; do
			got=$(code_of "$path" -H "$h")
			echo "$path with '$h': $got"
			[ "$got" = "403 loopback_only" ]
		done
	done
	# the same requests without the header still answer
	[ "$(code_of /_debug/generated)" = "200 -" ]
	[ "$(code_of /metrics)" = "200 -" ]
}
