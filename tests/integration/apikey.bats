#!/usr/bin/env bats
# --api-key-file (docs/API.md "API key"): every request that generates
# needs "Authorization: Bearer KEY", else a 401: /v1 in OpenAI's shape,
# the lab endpoints (/stream, /generate) in the lab's, unless
# --open-lab-endpoints opens them; /health and CORS preflights stay open;
# X-Tokstream-Failure is refused unless --allow-failure-header; the key is
# not in ps; and tokstream-ctl warns when it listens beyond the loopback
# without a key, or with the lab endpoints opened.

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

# other_server ARGS...: a second server with these responder options, at
# BASE2 (RUNDIR2, PORT2: teardown stops it); BASE stays the first one's.
other_server() {
	local base=$BASE rundir=$RUNDIR port=$PORT
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
	TS_RUNDIR=$(mktemp -d "$BATS_FILE_TMPDIR/ts2.XXXXXX") ts_start "$@"
	BASE2=$BASE RUNDIR2=$RUNDIR PORT2=$PORT
	BASE=$base RUNDIR=$rundir PORT=$port
}

# generated BASE: the server's tokstream:generation_tokens_total
generated() {
	curl -sS "$1/metrics" | unlabel_model | awk '$1 == "tokstream:generation_tokens_total" { print $2 }'
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
	[ "$(curl -sS "$BASE/metrics" | unlabel_model | awk '$1 == "tokstream:generation_tokens_total" { print $2 }')" -eq 0 ]
}

@test "with the key: chat, completions, responses, models and the lab endpoints answer; /health and a preflight need none" {
	d=$BATS_TEST_TMPDIR
	curl -sS -f -H "Authorization: Bearer $KEY" "$BASE/v1/models" | jq -e '.data[0].id == "tokstream-sim"'
	curl -sS -f -H "Authorization: Bearer $KEY" -d "$CHAT" "$BASE/v1/chat/completions" |
		jq -e '.usage.completion_tokens == 3'
	curl -sS -f -H "Authorization: Bearer $KEY" -d '{"model":"tokstream-sim","input":"hi","max_output_tokens":2}' \
		"$BASE/v1/responses" | jq -e '.usage.output_tokens == 2'
	curl -sS -f -H "authorization: bearer $KEY" -d '{"model":"tokstream-sim","prompt":"hi","max_tokens":2}' \
		"$BASE/v1/completions" | jq -e '.usage.completion_tokens == 2'
	[ "$(curl -sS -N -H "Authorization: Bearer $KEY" "$BASE/stream?prompt=k&max_tokens=2" |
		grep -c '^data: {"token"')" -eq 2 ]
	curl -sS -f -H "Authorization: Bearer $KEY" -d '{"prompt":"k","max_tokens":2}' "$BASE/generate" |
		jq -e '.usage.completion_tokens == 2'
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
	for p in /v1/chat/completions /stream /generate; do
		run curl -sS -o /dev/null -w '%{http_code}' -X OPTIONS -H 'Origin: http://ui.example' \
			-H 'Access-Control-Request-Method: POST' \
			-H 'Access-Control-Request-Headers: authorization, content-type' "$BASE$p"
		[ "$output" = 204 ]
	done
}

@test "without the key, or with another, /stream and /generate are 401 invalid_api_key in the lab's shape (WWW-Authenticate: Bearer, CORS) and generate nothing" {
	d=$BATS_TEST_TMPDIR
	g0=$(generated "$BASE")
	for auth in "" "Authorization: Bearer sk-wrong" "Authorization: Basic $(printf 'x:%s' "$KEY" | base64)"; do
		for req in "GET /stream?prompt=k&max_tokens=2" "HEAD /stream?prompt=k&max_tokens=2" \
			"POST /generate" "GET /generate"; do
			case $req in
			HEAD*) how=(--head) ;;
			POST*) how=(-d '{"prompt":"k","max_tokens":2}') ;;
			*) how=() ;;
			esac
			run curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' ${auth:+-H "$auth"} \
				"${how[@]}" "$BASE${req#* }"
			echo "$auth $req: $output $(cat "$d/e")"
			[ "$output" = 401 ]
			[ "$(header_of "$d/h" WWW-Authenticate)" = Bearer ]
			[ "$(header_of "$d/h" Access-Control-Allow-Origin)" = '*' ]
			[ "${req%% *}" = HEAD ] && continue
			# the lab's shape: no "param"
			jq -e '.error.code == "invalid_api_key" and .error.type == "invalid_request_error" and
				(.error | has("param") | not) and (.error.message | test("Authorization: Bearer"))' "$d/e"
		done
	done
	[ "$(generated "$BASE")" = "$g0" ]
}

@test "tokbench load against a keyed server's /stream: --api-key sends the key and every stream completes; without it every request is a 401 failure" {
	d=$BATS_TEST_TMPDIR
	run "$TOKBENCH" load --url "$BASE" --api-key "$KEY" --concurrency 4 \
		--requests 8 --output-tokens 5 --json "$d/k.json" --quiet
	echo "$output"
	[ "$status" -eq 0 ]
	jq -e '.completed == 8 and .failed == 0 and .total_output_tokens == 40' "$d/k.json"
	run "$TOKBENCH" load --url "$BASE" --concurrency 4 --requests 4 \
		--output-tokens 5 --json "$d/n.json" --quiet
	jq -e '.completed == 0 and .failures.http_401 == 4' "$d/n.json"
}

@test "--open-lab-endpoints: with a key, the lab endpoints need none; /v1 still does" {
	other_server --api-key-file "$KEYFILE" --open-lab-endpoints
	[ "$(curl -sS -N "$BASE2/stream?prompt=k&max_tokens=2" | grep -c '^data: {"token"')" -eq 2 ]
	curl -sS -f -d '{"prompt":"k","max_tokens":2}' "$BASE2/generate" | jq -e '.usage.completion_tokens == 2'
	run curl -sS -o /dev/null -w '%{http_code}' -d "$CHAT" "$BASE2/v1/chat/completions"
	[ "$output" = 401 ]
	curl -sS -f -H "Authorization: Bearer $KEY" -d "$CHAT" "$BASE2/v1/chat/completions" |
		jq -e '.usage.completion_tokens == 3'
}

@test "X-Tokstream-Failure is a 400 failure_header_disabled unless --allow-failure-header; --failure-injection-rate needs no option" {
	d=$BATS_TEST_TMPDIR
	# the default: refused with a code and the option that enables it,
	# whatever its value ("none" too), and nothing is generated
	g0=$(generated "$BASE")
	for v in rate_limit none 'midstream_cut; after=1'; do
		run curl -sS -o "$d/e" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
			-H "X-Tokstream-Failure: $v" -d "$CHAT" "$BASE/v1/chat/completions"
		echo "$v: $output $(cat "$d/e")"
		[ "$output" = 400 ]
		jq -e '.error.code == "failure_header_disabled" and .error.type == "invalid_request_error" and
			.error.param == null and (.error.message | test("--allow-failure-header"))' "$d/e"
	done
	[ "$(generated "$BASE")" = "$g0" ]
	# the operator's draw works without the option; the header still not
	other_server --failure-injection-rate 100 --failure-types overloaded
	run curl -sS -o "$d/e" -w '%{http_code}' -d "$CHAT" "$BASE2/v1/chat/completions"
	[ "$output" = 503 ]
	jq -e '.error.code == "overloaded"' "$d/e"
	run curl -sS -o "$d/e" -w '%{http_code}' -H 'X-Tokstream-Failure: none' -d "$CHAT" "$BASE2/v1/chat/completions"
	[ "$output" = 400 ]
	jq -e '.error.code == "failure_header_disabled"' "$d/e"
	# with the option: honoured, behind the key
	other_server --api-key-file "$KEYFILE" --allow-failure-header
	run curl -sS -o "$d/e" -D "$d/h" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
		-H 'X-Tokstream-Failure: rate_limit' -d "$CHAT" "$BASE2/v1/chat/completions"
	[ "$output" = 429 ]
	jq -e '.error.code == "rate_limit_exceeded"' "$d/e"
	[ "$(header_of "$d/h" Retry-After)" = 1 ]
	run curl -sS -o "$d/e" -w '%{http_code}' -H 'X-Tokstream-Failure: rate_limit' -d "$CHAT" \
		"$BASE2/v1/chat/completions"
	[ "$output" = 401 ]
	jq -e '.error.code == "invalid_api_key"' "$d/e"
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

@test "tokstream-ctl warns when it listens beyond the loopback without a key, not with one, and with one when the lab endpoints are opened" {
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
	RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	run env TOKSTREAM_PORT=$PORT2 TOKSTREAM_RUNDIR=$RUNDIR2 TOKSTREAM_BIND=0.0.0.0 \
		TOKSTREAM_BINDIR=$TS_BUILDDIR/src TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf \
		TOKSTREAM_FCGI_ARGS="--api-key-file $KEYFILE --open-lab-endpoints" "$CTL" start
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"warning: listening on 0.0.0.0:$PORT2 with --open-lab-endpoints"* ]]
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
