#!/usr/bin/env bats
# tokstream-ctl: start does not restart a live server, stop stops only
# what its pid files name (and only tokstream processes), and a stop ends
# open streams cleanly with the shutdown event and [DONE].

load helpers

setup() {
	ts_start
}

teardown() {
	ts_stop
}

ctl() {
	TOKSTREAM_PORT=$PORT TOKSTREAM_RUNDIR=$RUNDIR \
	TOKSTREAM_BINDIR=$TS_BUILDDIR/src \
	TOKSTREAM_SITECONF=$TS_SRCDIR/etc/tokstream-site.conf "$CTL" "$@"
}

@test "start on a running server does not restart it" {
	before=$(cat "$RUNDIR/tokstream-fcgi.pid")
	curl -sS -N -o "$BATS_TEST_TMPDIR/s" "$BASE/stream?prompt=a&max_tokens=30&tpot_ms=50" &
	pid=$!
	sleep 0.3
	run ctl start
	[ "$status" -eq 0 ]
	[[ "$output" == *"already running"* ]]
	[ "$(cat "$RUNDIR/tokstream-fcgi.pid")" = "$before" ]
	wait "$pid"
	[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/s")" -eq 30 ]
	run ctl status
	[ "$status" -eq 0 ]
	[[ "$output" == *"tokstream-fcgi: running"* ]]
	[[ "$output" == *"lighttpd: running"* ]]
}

@test "status with only TOKSTREAM_RUNDIR asks the port that run directory's server was started on" {
	[ "$PORT" != 8170 ]
	run env -u TOKSTREAM_PORT TOKSTREAM_RUNDIR="$RUNDIR" \
		TOKSTREAM_BINDIR="$TS_BUILDDIR/src" \
		TOKSTREAM_SITECONF="$TS_SRCDIR/etc/tokstream-site.conf" "$CTL" status
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"on http://127.0.0.1:$PORT"* ]]
	[[ "$output" == *"health: http://127.0.0.1:$PORT/health answers"* ]]
}

@test "stop ends an open stream with the shutdown error event and [DONE]" {
	curl -sS -N -o "$BATS_TEST_TMPDIR/s" "$BASE/stream?prompt=a&max_tokens=300&tpot_ms=50" &
	pid=$!
	sleep 0.5
	ctl stop
	wait "$pid"
	b=$BATS_TEST_TMPDIR/s
	grep '^data: {"error"' "$b" | sed 's/^data: //' | jq -e '.error.code == "shutdown"'
	[ "$(grep '^data: ' "$b" | tail -n 1)" = 'data: [DONE]' ]
	[ "$(grep -c '^data: {"token":' "$b")" -lt 300 ]
	run ctl status
	[ "$status" -eq 3 ]
}

@test "a stale pid file never kills an unrelated process" {
	ctl stop
	sleep 300 &
	victim=$!
	echo "$victim" > "$RUNDIR/tokstream-fcgi.pid"
	echo "$victim" > "$RUNDIR/lighttpd.pid"
	run ctl stop
	kill -0 "$victim"
	run ctl status
	[ "$status" -eq 3 ]
	[[ "$output" == *"tokstream-fcgi: stopped"* ]]
	kill "$victim"
}

@test "after a stop mid-stream the client resumes on the restarted server" {
	q='prompt=restart&max_tokens=60&tpot_ms=40'
	curl -sS -N -o "$BATS_TEST_TMPDIR/s" "$BASE/stream?$q" &
	pid=$!
	sleep 0.8
	ctl stop
	wait "$pid"
	b=$BATS_TEST_TMPDIR/s
	# the shutdown [DONE] carries no id: the last id is a token's
	last=$(grep '^id: ' "$b" | tail -n 1 | sed 's/^id: //')
	[[ $last =~ -[0-9]+$ ]]
	[ "$(grep -B1 '^data: \[DONE\]' "$b" | head -n 1)" != "id: ${last%-*}-end" ]
	ctl start
	curl -sS -N -H "Last-Event-ID: $last" -o "$BATS_TEST_TMPDIR/r" "$BASE/stream?$q"
	cat <(grep '^data: {"token"' "$b") <(grep '^data: {"token"' "$BATS_TEST_TMPDIR/r") |
		sed 's/^data: //' | jq -j .token > "$BATS_TEST_TMPDIR/joined"
	"$TOKGEN" --prompt restart -n 60 | cmp - "$BATS_TEST_TMPDIR/joined"
}

@test "a state directory that cannot be written: the responder still serves and logs it once" {
	ctl stop
	TOKSTREAM_FCGI_ARGS="--state-dir /proc/tokstream-no-such-dir" ctl start
	r=$(curl -sS -d '{"prompt":"ro","max_tokens":3}' "$BASE/generate")
	[ "$(echo "$r" | jq .usage.completion_tokens)" -eq 3 ]
	curl -sS -N "$BASE/stream?prompt=ro&max_tokens=2" | grep -c '^data: {"token"' | grep -qx 2
	[ "$(curl -sS "$BASE/_debug/generated" | jq .total_generated)" -eq 5 ]
	[ "$(grep -c 'counting in this process' "$RUNDIR/tokstream-fcgi.log")" -eq 1 ]
	grep -q '/proc/tokstream-no-such-dir' "$RUNDIR/tokstream-fcgi.log"
}

@test "the responder down: lighttpd answers 503 with a JSON error body" {
	# without its supervisor, which would start it again at once
	kill "$(cat "$RUNDIR/supervisor.pid")"
	kill "$(head -n 1 "$RUNDIR/tokstream-fcgi.pid")"
	sleep 0.5
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code} %{content_type}' \
		"$BASE/stream?prompt=a&max_tokens=1"
	[ "$output" = "503 application/json" ]
	jq -e '.error.code == "backend_unavailable" and .error.type == "server_error"' \
		"$BATS_TEST_TMPDIR/e"
}

@test "--help names every variable the script reads, with its default, and the commands" {
	run "$CTL" --help
	[ "$status" -eq 0 ]
	help=$output
	# What the script reads: every TOKSTREAM_ name in it, and every
	# other upper-case variable it expands (${LIGHTTPD:-}, ...). Read
	# from the script itself, so a variable added to the code and not
	# to usage() fails here.
	names=$({ grep -o 'TOKSTREAM_[A-Z_]*' "$CTL"
		grep -o '\${[A-Z][A-Z0-9_]*' "$CTL" | cut -c3-; } | sort -u)
	# the greps found them at all (16 TOKSTREAM_ names, GLIBC_TUNABLES,
	# LIGHTTPD, SPAWN_FCGI on the day this was written)
	[ "$(echo "$names" | wc -l)" -ge 19 ]
	missing=""
	for n in $names; do
		grep -qw -- "$n" <<< "$help" || missing="$missing $n"
	done
	echo "missing from --help:$missing"
	[ -z "$missing" ]
	# a default written in the code (${NAME:-VALUE}) is the one shown
	wrong=""
	while read -r d; do
		n=${d#\$\{}; n=${n%%[:-]*}
		v=${d#*-}; v=${v%\}}
		grep -qF -- "  $n=$v" <<< "$help" || wrong="$wrong $n=$v"
	done < <(grep -o '\${[A-Z][A-Z0-9_]*:\?-[^}$]\+}' "$CTL" | sort -u)
	echo "defaults not shown:$wrong"
	[ -z "$wrong" ]
	for c in start stop restart status help; do
		grep -qE "^  $c +[a-z]" <<< "$help"
	done
	run "$CTL" help
	[ "$output" = "$help" ]
	run "$CTL" no-such-command
	[ "$status" -eq 2 ]
	[[ "$output" == *"--help"* ]]
}
