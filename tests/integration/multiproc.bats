#!/usr/bin/env bats
# Two spawn-fcgi processes (-F 2) share one state file: determinism across
# processes, unique ids, totals that add up.

load helpers

setup_file() {
	TS_PROCS=2 ts_start
}

teardown_file() {
	ts_stop
}

# state_size RECORDS: the state file's bytes for that many records (a
# 128-byte header, 144 bytes a record; docs/OPERATIONS.md "The state file")
state_size() {
	echo $((128 + $1 * 144))
}

@test "two responder processes run and share one state file, sized for both" {
	[ "$(grep -c . "$RUNDIR/tokstream-fcgi.pid")" -eq 2 ]
	# 4,096 records of history + 2 x (64 slots + 64 waiting)
	[ "$(stat -c %s "$RUNDIR/state")" -eq "$(state_size 4352)" ]
	[ "$(grep -c 'state .*/state (4352 records)' "$RUNDIR/tokstream-fcgi.log")" -eq 2 ]
	! grep -q 'unrecorded\|capped\|in use by other processes' "$RUNDIR/tokstream-fcgi.log" || false
}

@test "determinism and shared totals across two processes" {
	before=$(curl -sS "$BASE/_debug/generated" | jq '.total_generated // 0' || echo 0)
	[ -n "$before" ] || before=0
	# 16 concurrent streams: both processes serve some (each process its own engine and I/O threads)
	for i in $(seq 1 16); do
		curl -sS -N -D "$BATS_TEST_TMPDIR/h$i" -o "$BATS_TEST_TMPDIR/b$i" \
			"$BASE/stream?prompt=same&max_tokens=25&tpot_ms=40" &
	done
	wait
	pids=""
	for i in $(seq 1 16); do
		# same events (ids differ: they name each stream)
		cmp <(grep '^data: ' "$BATS_TEST_TMPDIR/b1") \
			<(grep '^data: ' "$BATS_TEST_TMPDIR/b$i")
		[ "$(grep -c '^data: {"token":' "$BATS_TEST_TMPDIR/b$i")" -eq 25 ]
		id=$(header_of "$BATS_TEST_TMPDIR/h$i" X-Request-Id)
		pids="$pids $(debug_field "$id" pid)"
		echo "$id" >> "$BATS_TEST_TMPDIR/ids"
	done
	# ids are unique across processes
	[ "$(sort -u "$BATS_TEST_TMPDIR/ids" | wc -l)" -eq 16 ]
	# both processes served
	echo "pids:$pids"
	[ "$(echo $pids | tr ' ' '\n' | sort -u | wc -l)" -eq 2 ]
	after=$(curl -sS "$BASE/_debug/generated" | jq .total_generated)
	[ $((after - before)) -eq $((16 * 25)) ]
}

# le64 N: N as 8 little-endian bytes, in printf's \x escapes
le64() {
	local n=$1 i out=""
	for i in 1 2 3 4 5 6 7 8; do
		out="$out$(printf '\\x%02x' $((n & 255)))"
		n=$((n >> 8))
	done
	printf '%s' "$out"
}

# Last: it restarts the server of this file.
@test "restarted with more slots the state file grows, keeping totals and records; a version 3 file is converted" {
	id=$(curl -sS "$BASE/_debug/generated" | jq -r .id)
	before=$(curl -sS "$BASE/_debug/generated?id=$id")
	total=$(jq .total_generated <<<"$before")
	[ "$total" -gt 0 ]
	ts_stop
	TS_RUNDIR=$RUNDIR TS_PROCS=2 ts_start --max-num-seqs 100
	# 4,096 + 2 x (100 + 64)
	[ "$(stat -c %s "$RUNDIR/state")" -eq "$(state_size 4424)" ]
	after=$(curl -sS "$BASE/_debug/generated?id=$id")
	[ "$(jq .total_generated <<<"$after")" -eq "$total" ]
	[ "$(jq -c '[.status, .generated, .started_ms]' <<<"$after")" = \
		"$(jq -c '[.status, .generated, .started_ms]' <<<"$before")" ]
	[ "$(jq .unrecorded_streams <<<"$after")" -eq 0 ]
	ts_stop
	# The file as the previous release left it: version 3, 4,096 records
	# of 136 bytes (no lock word); next id 301, 9000 tokens over 300
	# streams, stream 300 done with 30 of 40 tokens.
	{
		printf 'TOKSTAT1'
		printf "$(le64 $((3 | 136 << 32)))$(le64 4096)"
		printf "$(le64 301)$(le64 9000)$(le64 300)"
	} > "$RUNDIR/state"
	truncate -s 557184 "$RUNDIR/state"
	{
		printf "$(le64 300)$(le64 40)$(le64 30)$(le64 2)$(le64 1)"
		printf "$(le64 5)$(le64 1700000000000)$(le64 1700000000900)$(le64 1)"
	} | dd of="$RUNDIR/state" bs=1 seek=$((128 + 299 * 136)) conv=notrunc status=none
	TS_RUNDIR=$RUNDIR TS_PROCS=2 ts_start
	[ "$(stat -c %s "$RUNDIR/state")" -eq "$(state_size 4352)" ]
	r=$(curl -sS "$BASE/_debug/generated?id=300")
	[ "$(jq -c '[.id, .status, .requested, .generated, .finish_reason, .total_generated, .total_streams]' <<<"$r")" = \
		'["300","done",40,30,"stop",9000,300]' ]
	curl -sSN "$BASE/stream?prompt=after&max_tokens=3" -D "$BATS_TEST_TMPDIR/h" >/dev/null
	[ "$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)" = 301 ]
	! grep -q 'counting in this process' "$RUNDIR/tokstream-fcgi.log" || false
}
