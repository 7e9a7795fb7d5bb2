#!/usr/bin/env bats
# --api-key-file (docs/API.md "API key"): every /v1 request needs
# "Authorization: Bearer KEY", else a 401 in OpenAI's shape; /health, the
# lab endpoints and CORS preflights stay open; the key is not in ps; and
# tokstream-ctl warns when it listens beyond the loopback without a key.

load helpers

setup_file() {
	KEYFILE=$BATS_FILE_TMPDIR/key
	printf 'sk-tokstream-test-4f2a\n' >"$KEYFILE"
	export KEYFILE
	ts_start --api-key-file "$KEYFILE"
}

teardown_file() {
	ts_stop
}

teardown() {
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

KEY=sk-tokstream-test-4f2a
CHAT='{"model":"tokstream-sim","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}'

@test "without the key, or with another, every /v1 path is 401 invalid_api_key (OpenAI's shape, WWW-Authenticate: Bearer) and generates nothing" {
	d=$BATS_TEST_TMPDIR
	for auth in "" "Authorization: Bearer sk-wrong" "Authorization: Bearer ${KEY}x" \
		"Authorization: Basic $(printf 'x:%s' "$KEY" | base64)" "Authorization: $KEY"; do
		for p in /v1/models /v1/models/tokstream-sim /v1/nope; do
			run curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' ${auth:+-H "$auth"} "$BASE$p"
			echo "$auth $p: $output $(cat "$d/e")"
			[ "$output" = 401 ]
			[ "$(header_of "$d/h" WWW-Authenticate)" = Bearer ]
			jq -e '.error.code == "invalid_api_key" and .error.param == null and
				.error.type == "invalid_request_error"' "$d/e"
		done
		run curl -sS -o /dev/null -w '%{http_code}' ${auth:+-H "$auth"} -d "$CHAT" "$BASE/v1/chat/completions"
		[ "$output" = 401 ]
	done
	[ "$(curl -sS "$BASE/metrics" | awk '$1 == "tokstream:generation_tokens_total" { print $2 }')" -eq 0 ]
}

@test "with the key: chat, completions, responses and models answer; the lab endpoints, /health and a preflight need none" {
	d=$BATS_TEST_TMPDIR
	curl -sS -f -H "Authorization: Bearer $KEY" "$BASE/v1/models" | jq -e '.data[0].id == "tokstream-sim"'
	curl -sS -f -H "Authorization: Bearer $KEY" -d "$CHAT" "$BASE/v1/chat/completions" |
		jq -e '.usage.completion_tokens == 3'
	curl -sS -f -H "Authorization: Bearer $KEY" -d '{"model":"tokstream-sim","input":"hi","max_output_tokens":2}' \
		"$BASE/v1/responses" | jq -e '.usage.output_tokens == 2'
	curl -sS -f -H "authorization: bearer $KEY" -d '{"model":"tokstream-sim","prompt":"hi","max_tokens":2}' \
		"$BASE/v1/completions" | jq -e '.usage.completion_tokens == 2'
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
	[ "$(curl -sS -N "$BASE/stream?prompt=k&max_tokens=2" | grep -c '^data: {"token"')" -eq 2 ]
	run curl -sS -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: http://ui.example' \
		-H 'Access-Control-Request-Method: POST' \
		-H 'Access-Control-Request-Headers: authorization, content-type' "$BASE/v1/chat/completions"
	[ "$output" = 204 ]
}

@test "the official OpenAI SDK: the right apiKey works, a wrong one is the SDK's AuthenticationError" {
	need_node openai
	run timeout 30 node --input-type=module -e "
		import OpenAI from '$TS_SRCDIR/tests/node/node_modules/openai/index.mjs';
		const mk = (k) => new OpenAI({ baseURL: '$BASE/v1', apiKey: k, maxRetries: 0 });
		const ok = await mk('$KEY').chat.completions.create({ model: 'tokstream-sim',
			messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
		if (ok.usage.completion_tokens !== 2) throw new Error('usage ' + JSON.stringify(ok.usage));
		try {
			await mk('sk-wrong').models.list();
			throw new Error('no error with a wrong key');
		} catch (e) {
			if (!(e instanceof OpenAI.AuthenticationError) || e.status !== 401 ||
			    e.code !== 'invalid_api_key') throw e;
		}
		console.log('ok');"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "the key from --api-key-file is not in the responder's command line; a bad key file stops the responder with a message" {
	pid=$(head -n 1 "$RUNDIR/tokstream-fcgi.pid")
	! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$KEY" || false
	printf 'has a space\n' >"$BATS_TEST_TMPDIR/bad"
	run "$TS_BUILDDIR/src/tokstream-fcgi" --api-key-file "$BATS_TEST_TMPDIR/bad"
	[ "$status" -eq 2 ]
	[[ $output == *"--api-key-file"*"visible ASCII"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --api-key-file "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 2 ]
	[[ $output == *"No such file"* ]]
	run "$TS_BUILDDIR/src/tokstream-fcgi" --api-key ''
	[ "$status" -eq 2 ]
}

@test "tokstream-ctl warns when it listens beyond the loopback without a key, and not with one" {
	RUNDIR2=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX")
	PORT2=$(free_port)
	run env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 TOKSTREAM_BIND=0.0.0.0 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		"$CTL" start
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"warning: listening on 0.0.0.0:$PORT2 without --api-key"* ]]
	[ "$(curl -sS "http://127.0.0.1:$PORT2/health" | jq -r .status)" = ok ]
	RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	run env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 TOKSTREAM_BIND=0.0.0.0 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		TOKSTREAM_FCGI_ARGS="--api-key-file $KEYFILE" "$CTL" start
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *warning* ]]
}

@test "tokstream-ctl refuses, before it stops anything, a key file it cannot read and a TOKSTREAM_BIND that is no IPv4 address" {
	RUNDIR2=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX")
	PORT2=$(free_port)
	env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		"$CTL" start
	# (as a user the responder drops to, the same check is "USER cannot
	# read the --api-key-file": docs/OPERATIONS.md)
	run env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		TOKSTREAM_FCGI_ARGS="--api-key-file $BATS_TEST_TMPDIR/no-such-key" "$CTL" restart
	echo "$output"
	[ "$status" -ne 0 ]
	[[ $output == *"read the --api-key-file $BATS_TEST_TMPDIR/no-such-key"* ]]
	# the running server was not stopped
	[ "$(curl -sS "http://127.0.0.1:$PORT2/health" | jq -r .status)" = ok ]
	run env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 TOKSTREAM_BIND='0.0.0.0;x' \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		"$CTL" restart
	[ "$status" -ne 0 ]
	[[ $output == *"TOKSTREAM_BIND=0.0.0.0;x: want an IPv4 address"* ]]
	[ "$(curl -sS "http://127.0.0.1:$PORT2/health" | jq -r .status)" = ok ]
}
