#!/usr/bin/env bats
# Docs that cannot drift: every example in README.md and docs/*.md that
# shows a command and what it prints runs here against a live server and
# must print that again (docs/RELIABILITY.md "docs.bats").
#
# The convention (tests/node/doctest.mjs reads it and says the rules in
# full): an HTML comment on the line directly above a ```sh block
#
#   <!-- doctest: exact -->          the output block that follows (```json,
#                                    ```text or a plain ```) byte for byte,
#                                    trailing white space trimmed
#   <!-- doctest: shape -->          ids, times (created, *_ms), pids and
#                                    counters of other requests by shape
#                                    (same keys, same types), the rest
#                                    (text, token counts, finish reasons)
#                                    exactly; SSE event by event, text
#                                    line by line with any number; a line
#                                    "..." stands for any lines (events)
#   <!-- doctest: skip REASON -->    not run, for the reason given
#
# Options after exact or shape: server-args="ARGS" (a server of its own,
# started with these tokstream-fcgi options: words split at spaces) and
# loose="K1,K2" (more JSON keys compared by shape only).
#
# How an example runs: in a scratch directory whose src/ is the build
# tree's (README's src/bench/tokbench), with tokbench, tokgen and
# tokstream-mkmodel on PATH, standard input empty, 60 s at most; every
# http://127.0.0.1:8170 in the command becomes the test server's base URL,
# and back in what it prints. Only standard output is compared; a command
# that exits non-zero fails. A tokbench command that talks to a server
# must name the URL (its default is the real :8170). The other servers
# are the defaults (`tokstream-ctl start` with no options), as a reader
# who tries the examples has.

load helpers

DOCTEST=$TS_SRCDIR/tests/node/doctest.mjs
DOC_BASE=http://127.0.0.1:8170

setup_file() {
	ts_start
}

teardown_file() {
	ts_stop
}

# An example's own server (server-args), stopped even if the test fails.
teardown() {
	if [ -n "${RUNDIR2:-}" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
	fi
}

# doccmp MODE LOOSE EXPECTED ACTUAL: the comparison of two texts (the
# self-tests below); its status is doctest.mjs's
doccmp() {
	printf '%s\n' "$3" >"$BATS_TEST_TMPDIR/e"
	printf '%s\n' "$4" >"$BATS_TEST_TMPDIR/a"
	node "$DOCTEST" compare "$1" "$2" "$BATS_TEST_TMPDIR/e" \
		"$BATS_TEST_TMPDIR/a"
}

# run_example DIR N WHERE MODE SERVER-ARGS LOOSE: runs DIR/N.cmd as
# described at the top and compares what it prints with DIR/N.out; says
# why when it does not match (with a diff), and returns 1
run_example() {
	local d=$1 n=$2 where=$3 mode=$4 sargs=$5 loose=$6
	local base=$BASE rc=0 keep_rundir=$RUNDIR keep_port=$PORT keep_base=$BASE
	local t0=$EPOCHREALTIME
	if grep -Eq 'tokbench +(cancel|lab|load|stream|ttft|itl)\b' \
	    "$d/$n.cmd" && ! grep -qF "$DOC_BASE" "$d/$n.cmd"; then
		echo "FAIL $where: tokbench with no --url $DOC_BASE (it would" \
		     "measure the server on :8170, not the test's)"
		return 1
	fi
	if [ -n "$sargs" ]; then
		# shellcheck disable=SC2086
		TS_RUNDIR='' ts_start $sargs </dev/null || rc=$?
		RUNDIR2=$RUNDIR PORT2=$PORT base=$BASE
		RUNDIR=$keep_rundir PORT=$keep_port BASE=$keep_base
		if [ "$rc" -ne 0 ]; then
			echo "FAIL $where: no server with $sargs"
			return 1
		fi
	fi
	sed "s|http://127\.0\.0\.1:8170|$base|g" "$d/$n.cmd" >"$d/$n.run"
	(cd "$d/work" &&
	 PATH=$TS_BUILDDIR/src/bench:$TS_BUILDDIR/src:$TS_BUILDDIR/src/tools:$PATH \
	 timeout 60 bash "$d/$n.run") </dev/null >"$d/$n.act" 2>"$d/$n.err" ||
		rc=$?
	if [ -n "$sargs" ]; then
		RUNDIR=$RUNDIR2 PORT=$PORT2 ts_stop
		RUNDIR2=''
	fi
	sed -i "s|$base|$DOC_BASE|g" "$d/$n.act"
	if [ "$rc" -ne 0 ]; then
		echo "FAIL $where: the command exited $rc; its stderr:"
		head -n 20 "$d/$n.err"
		return 1
	fi
	if ! node "$DOCTEST" compare "$mode" "$loose" "$d/$n.out" \
	    "$d/$n.act" >"$d/$n.why"; then
		echo "FAIL $where ($mode): $(cat "$d/$n.why")"
		diff -u --label "$where (documented)" \
		     --label "what it prints now" "$d/$n.out" "$d/$n.act" |
			head -n 60 || true
		return 1
	fi
	echo "ok $where ($mode, $(calc "$EPOCHREALTIME - $t0" | cut -c1-4) s)"
}

@test "every command with its output in README.md and docs/*.md has a doctest marker" {
	need_node
	run node "$DOCTEST" check "$TS_SRCDIR"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "every relative link in README.md and docs/*.md names a file and a heading that exist" {
	need_node
	run node "$DOCTEST" links "$TS_SRCDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	# ... and the check fails on a missing file, a missing heading and a
	# heading renamed under its link, and passes on an explicit anchor
	local d=$BATS_TEST_TMPDIR/links
	mkdir -p "$d/docs"
	printf '%s\n' '# Top' '[ok](docs/A.md#a-b-c)' >"$d/README.md"
	printf '%s\n' '# A: b (c)' '<a id="kept"></a>' '[x](#kept)' \
		'[y](B.md)' '[z](#top)' '`[not a link](nowhere.md)`' \
		>"$d/docs/A.md"
	run node "$DOCTEST" links "$d"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"docs/A.md:4: B.md: no such file"* ]]
	[[ "$output" == *"docs/A.md:5: #top: no heading #top"* ]]
	[[ "$output" == *"2 broken links"* ]]
}

@test "the marker check fails on an unmarked example, a stray marker and a skip without reason" {
	need_node
	local d=$BATS_TEST_TMPDIR/tree
	mkdir -p "$d/docs"
	printf '%s\n' '# A' '' '```sh' "curl -s $DOC_BASE/health" '```' \
		'```json' '{"status":"ok"}' '```' >"$d/docs/A.md"
	printf '%s\n' '# B' '<!-- doctest: exact -->' '' '```sh' \
		"tokgen -p hi -n 2" '```' '```' 'x' '```' \
		'<!-- doctest: skip -->' '```sh' 'tokgen -p hi' '```' \
		>"$d/README.md"
	run node "$DOCTEST" check "$d"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"ERROR docs/A.md:3: a command and its output without a doctest marker"* ]]
	[[ "$output" == *"ERROR README.md:2: a doctest marker that is not on the line directly above"* ]]
	[[ "$output" == *"ERROR README.md:10: doctest: skip needs a reason"* ]]
	[[ "$output" == *"ERROR README.md:4: a command and its output without"* ]]
	# marked, it passes
	sed -i '3i <!-- doctest: shape -->' "$d/docs/A.md"
	sed -i -e '2d' -e '4i <!-- doctest: exact -->' \
		-e 's/doctest: skip -->/doctest: skip needs a model -->/' \
		"$d/README.md"
	run node "$DOCTEST" check "$d"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 examples, 0 errors"* ]]
}

@test "the comparison fails on drift and passes on what only varies between runs" {
	need_node
	# JSON: ids, times and counters of other requests by shape only
	run doccmp shape '' '{"id":"chatcmpl-1","created":1795969327,"usage":{"prompt_tokens":21,"total_generated":36,"x_ms":1.5}}' \
		'{"id":"chatcmpl-17","created":1796000000,"usage":{"prompt_tokens":21,"total_generated":99,"x_ms":null}}'
	[ "$status" -eq 1 ]
	[[ "$output" == *'$.usage.x_ms: expected number 1.5, got null'* ]]
	doccmp shape '' '{"id":"chatcmpl-1","created":1795969327,"usage":{"prompt_tokens":21,"total_generated":36,"x_ms":1.5}}' \
		'{"id":"chatcmpl-17","created":1796000000,"usage":{"prompt_tokens":21,"total_generated":99,"x_ms":7}}'
	# a text, a count, a key, a type, an id's form that drifted
	run doccmp shape '' '{"text":"Each no","n":5}' '{"text":"Each on","n":5}'
	[ "$status" -eq 1 ]
	[[ "$output" == *'$.text: expected "Each no", got "Each on"'* ]]
	run doccmp shape '' '{"text":"a","n":5}' '{"text":"a","n":6}'
	[ "$status" -eq 1 ]
	run doccmp shape '' '{"u":{"a":1}}' '{"u":{"a":1,"b":{"c":0}}}'
	[ "$status" -eq 1 ]
	[[ "$output" == *'$.u: keys differ'* ]]
	run doccmp shape '' '{"created":1}' '{"created":"1"}'
	[ "$status" -eq 1 ]
	run doccmp shape '' '{"id":"chatcmpl-1"}' '{"id":"cmpl-1"}'
	[ "$status" -eq 1 ]
	run doccmp shape 'n' '{"text":"a","n":5}' '{"text":"a","n":6}'
	[ "$status" -eq 0 ]
	# exact: any byte
	run doccmp exact '' 'After almost were' 'After almost were '
	[ "$status" -eq 0 ]
	run doccmp exact '' 'After almost were' 'After almost wer'
	[ "$status" -eq 1 ]
	# SSE: the stream part of an id by shape, keep-alives dropped, "..."
	doccmp shape '' "$(printf 'id: 24-5023-0\ndata: {"token":"After"}\n\n...\n\nid: 24-5023-end\ndata: [DONE]\n')" \
		"$(printf ': keep-alive\n\nid: 3-5023-0\ndata: {"token":"After"}\n\nid: 3-5023-1\ndata: {"token":" x"}\n\nid: 3-5023-end\ndata: [DONE]\n')"
	run doccmp shape '' "$(printf 'id: 24-5023-0\ndata: {"token":"After"}\n\nid: 24-5023-end\ndata: [DONE]\n')" \
		"$(printf 'id: 3-5023-0\ndata: {"token":"After"}\n\nid: 3-5023-1\ndata: {"token":" x"}\n\nid: 3-5023-end\ndata: [DONE]\n')"
	[ "$status" -eq 1 ]
	run doccmp shape '' "$(printf 'id: 24-5023-0\ndata: {"token":"After"}\n')" \
		"$(printf 'id: 24-5024-0\ndata: {"token":"After"}\n')"
	[ "$status" -eq 1 ]
	run doccmp shape '' "$(printf 'retry: 1000\n\nid: 1-5-0\ndata: {"token":"a"}\n')" \
		"$(printf 'retry: 1000\nid: 1-5-0\ndata: {"token":"a"}\n')"
	[ "$status" -eq 1 ]
	# text: any number, but the same lines
	doccmp shape '' "$(printf 'Successful requests:   181\nP99 TTFT (ms):   108.48\n')" \
		"$(printf 'Successful requests:   59\nP99 TTFT (ms):   99.01\n')"
	run doccmp shape '' "$(printf 'Successful requests:   181\nP99 TTFT (ms):   108.48\n')" \
		"$(printf 'Successful requests:   59\nClient CPU time (s):   0.15\nP99 TTFT (ms):   99.01\n')"
	[ "$status" -eq 1 ]
	run doccmp shape '' 'P99 TTFT (ms):   108.48' 'P90 TTFT (ms):   108.48'
	[ "$status" -eq 1 ]
}

@test "every marked example in README.md and docs/*.md prints what the docs show" {
	need_node
	local d=$BATS_TEST_TMPDIR n=0 failed=0 i where mode a1 a2
	mkdir -p "$d/work"
	ln -s "$TS_BUILDDIR/src" "$d/work/src"
	node "$DOCTEST" list "$TS_SRCDIR" "$d" >"$d/list"
	while IFS=$'\x1f' read -r -u 3 i where mode a1 a2; do
		if [ "$mode" = skip ]; then
			echo "skip $where: $a1"
			continue
		fi
		n=$((n + 1))
		run_example "$d" "$i" "$where" "$mode" "$a1" "$a2" ||
			failed=$((failed + 1))
	done 3<"$d/list"
	echo "$n examples run, $failed failed"
	[ "$n" -gt 0 ]
	[ "$failed" -eq 0 ]
}
