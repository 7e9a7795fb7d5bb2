#!/usr/bin/env bats
# tokgen and `tokbench lab`: the lab's result files and their invariants.

load helpers

setup_file() {
	ts_start
}

teardown_file() {
	ts_stop
}

@test "tokgen: two runs are identical; --json prints one JSON string per line" {
	"$TOKGEN" --prompt hello -n 20 > "$BATS_TEST_TMPDIR/a"
	"$TOKGEN" --prompt hello -n 20 > "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	[ -s "$BATS_TEST_TMPDIR/a" ]
	"$TOKGEN" --prompt hello -n 20 --json > "$BATS_TEST_TMPDIR/j"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/j")" -eq 20 ]
	jq -e -s 'length == 20 and all(.[]; type == "string")' "$BATS_TEST_TMPDIR/j"
	jq -j . "$BATS_TEST_TMPDIR/j" | cmp - "$BATS_TEST_TMPDIR/a"
}

@test "tokgen: prefix property (first k of n equal generate k)" {
	"$TOKGEN" --prompt prefix -n 200 --json > "$BATS_TEST_TMPDIR/n"
	for k in 1 7 50 199; do
		"$TOKGEN" --prompt prefix -n "$k" --json | cmp - <(head -n "$k" "$BATS_TEST_TMPDIR/n")
	done
}

@test "tokgen: bad arguments are a clear error" {
	run "$TOKGEN" --prompt hi -n -3
	[ "$status" -eq 2 ]
	[[ "$output" == *"-n"* ]]
	run "$TOKGEN" --bogus
	[ "$status" -eq 2 ]
}

@test "tokgen --lm: deterministic, seeds differ, --json chunks join to the text" {
	d=$BATS_TEST_TMPDIR
	"$TOKGEN" --chat -p "What is a token?" -n 300 > "$d/a"
	"$TOKGEN" --chat -p "What is a token?" -n 300 > "$d/b"
	cmp "$d/a" "$d/b"
	[ -s "$d/a" ]
	"$TOKGEN" --lm -p hello -n 100 --seed 1 --ignore-eos > "$d/s1"
	"$TOKGEN" --lm -p hello -n 100 --seed 2 --ignore-eos > "$d/s2"
	run cmp -s "$d/s1" "$d/s2"
	[ "$status" -ne 0 ]
	"$TOKGEN" --lm -p hello -n 100 --seed 1 --ignore-eos --json > "$d/j"
	jq -e -s 'length >= 100 and all(.[]; type == "string")' "$d/j"
	jq -j . "$d/j" | cmp - "$d/s1"
}

@test "tokgen --lm: a stop string ends the text just before it; --usage" {
	d=$BATS_TEST_TMPDIR
	"$TOKGEN" --lm -p hello -n 300 --ignore-eos > "$d/full"
	off=$(grep -b -o -F " the" "$d/full" | head -n 1 | cut -d: -f1)
	[ -n "$off" ]
	"$TOKGEN" --lm -p hello -n 300 --ignore-eos --stop " the" --usage \
		> "$d/cut" 2> "$d/usage"
	head -c "$off" "$d/full" | cmp - "$d/cut"
	grep -q "finish_reason=stop" "$d/usage"
	"$TOKGEN" --lm -p hello -n 5 --ignore-eos --usage > /dev/null \
		2> "$d/usage"
	grep -q "completion_tokens=5 finish_reason=length" "$d/usage"
	run "$TOKGEN" --lm -p hi --top-p 0
	[ "$status" -eq 2 ]
	run "$TOKGEN" --lm -p hi --stop a --stop b --stop c --stop d --stop e
	[ "$status" -eq 2 ]
}

@test "tokbench lab writes every result file with sane numbers" {
	out=$BATS_TEST_TMPDIR/lab
	run "$TOKBENCH" lab --url "$BASE" --out "$out" --tokgen "$TOKGEN"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$out/gen1.txt" "$out/gen2.txt"
	[ -s "$out/gen1.txt" ]
	[[ "$(cat "$out/ttft.txt")" =~ ^ttft_ms=([0-9]+)$ ]]
	t=${BASH_REMATCH[1]}
	[ "$t" -gt 0 ]
	[ "$t" -lt 3000 ]
	[[ "$(cat "$out/itl.txt")" =~ ^count=19\ p50_ms=[0-9.]+\ p99_ms=[0-9.]+$ ]]
	[[ "$(cat "$out/cancel.txt")" =~ ^requested=100\ generated=([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -le 30 ]
	[ "$(wc -l < "$out/report.txt")" -eq 4 ]
	sed -n 1p "$out/report.txt" | grep -qE '^ttft_ms=[0-9]+$'
	sed -n 2p "$out/report.txt" | grep -qE '^itl_p50_ms=[0-9.]+$'
	sed -n 3p "$out/report.txt" | grep -qx 'tokens=20'
	sed -n 4p "$out/report.txt" | grep -qE '^throughput_tps=[0-9.]+$'
	jq -e . "$out/report.json" >/dev/null
	# ITL p50 is close to the modeled TPOT (20 ms)
	awk -F= '/itl_p50_ms/ { exit !($2 > 15 && $2 < 40) }' "$out/report.txt"
}

@test "tokbench: a server that is down gives one line naming the URL and a non-zero exit" {
	port=$(free_port)
	run "$TOKBENCH" stream --url "http://127.0.0.1:$port"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"http://127.0.0.1:$port"* ]]
	[[ "$output" == *"tokstream-ctl start"* ]]
}

@test "tokstream-ctl status reports running; stop stops only what it started" {
	run env TOKSTREAM_PORT=$PORT TOKSTREAM_RUNDIR=$RUNDIR "$CTL" status
	[ "$status" -eq 0 ]
	[[ "$output" == *"tokstream-fcgi: running"* ]]
	[[ "$output" == *"lighttpd: running"* ]]
}
