#!/usr/bin/env bats
# The state directory on a real full or read-only file system (issue #5,
# docs/OPERATIONS.md "The state file"): a tmpfs mounted as the responder's
# --state-dir while the run directory (socket, logs) stays writable. The
# responder keeps serving, counts in memory, and logs each file's problem
# once. Needs root and permission to mount; skipped otherwise.

load helpers

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a tmpfs"
	MNT=$BATS_TEST_TMPDIR/state
	mkdir -p "$MNT"
	# a tmpfs of 64 KiB: smaller than the state file (594 KiB: 4,224
	# records of 144 bytes, the header)
	mount -t tmpfs -o size=64k,mode=0755 tmpfs "$MNT" 2>"$BATS_TEST_TMPDIR/mount.err" ||
		skip "cannot mount a tmpfs here: $(cat "$BATS_TEST_TMPDIR/mount.err")"
}

teardown() {
	ts_stop
	# always, even after a failure: the responder is stopped, so the
	# mount is not busy; lazily if something still holds it
	if mountpoint -q "$MNT"; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
}

# serve_and_count: 3 streams of 4 tokens and a /generate of 3 work; prints
# nothing, fails otherwise
serve_and_count() {
	local n
	for n in 1 2 3; do
		run curl -sSN -D "$BATS_TEST_TMPDIR/h$n" "$BASE/stream?prompt=disk$n&max_tokens=4"
		[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 4 ]
		tail -n 2 <<<"$output" | grep -qx 'data: \[DONE\]'
	done
	r=$(curl -sS -d '{"prompt":"disk","max_tokens":3}' "$BASE/generate")
	[ "$(jq .usage.completion_tokens <<<"$r")" -eq 3 ]
	# /_debug/generated answers from the responder's memory
	id=$(header_of "$BATS_TEST_TMPDIR/h2" X-Request-Id)
	[ "$(debug_field "$id" status)" = done ]
	[ "$(debug_field "$id" generated)" -eq 4 ]
	[ "$(curl -sS "$BASE/_debug/generated" | jq .total_generated)" -eq 15 ]
	curl -sS "$BASE/metrics" | unlabel_model > "$BATS_TEST_TMPDIR/m"
	grep -qx 'tokstream:generation_tokens_total 15' "$BATS_TEST_TMPDIR/m"
}

# log_count PATTERN: lines matching PATTERN (ERE) that the running
# responder logged: those after the last stop (ts_start retries a start
# that failed, on a port taken meanwhile, in the same run directory)
log_count() {
	awk -v re="$1" '/stopped by signal/ { n = 0; next } $0 ~ re { n++ }
		END { print n + 0 }' "$RUNDIR/tokstream-fcgi.log"
}

@test "a state disk too small for the state file: served, counted in memory, logged once; the metrics file fits" {
	ts_start --state-dir "$MNT"
	serve_and_count
	cat "$RUNDIR/tokstream-fcgi.log"
	[ "$(log_count "cannot reserve 608384 bytes for $MNT/state: No space left on device; counting in this process's memory")" -eq 1 ]
	[ "$(log_count "$MNT/state:")" -eq 1 ]
	[ "$(log_count "$MNT/metrics")" -eq 0 ]
	[ "$(stat -c %s "$MNT/metrics")" -gt 0 ]
}

@test "a full state disk: served, counted in memory, the state file and the metrics file logged once each" {
	dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null || true
	[ "$(df --output=avail "$MNT" | tail -n 1 | tr -d ' ')" -eq 0 ]
	ts_start --state-dir "$MNT"
	serve_and_count
	cat "$RUNDIR/tokstream-fcgi.log"
	[ "$(log_count "$MNT/state: No space left on device; counting in this process's memory")" -eq 1 ]
	[ "$(log_count "$MNT/state:")" -eq 1 ]
	[ "$(log_count "$MNT/metrics: No space left on device; /metrics counts this process only")" -eq 1 ]
	[ "$(log_count "$MNT/metrics")" -eq 1 ]
}

@test "a read-only state disk (remounted ro under its files): served, counted in memory, each file logged once" {
	: > "$MNT/state"
	: > "$MNT/metrics"
	mount -o remount,ro "$MNT"
	run touch "$MNT/probe"
	[ "$status" -ne 0 ]
	ts_start --state-dir "$MNT"
	serve_and_count
	cat "$RUNDIR/tokstream-fcgi.log"
	[ "$(log_count "cannot open $MNT/state: Read-only file system; counting in this process's memory")" -eq 1 ]
	[ "$(log_count "$MNT/state:")" -eq 1 ]
	[ "$(log_count "cannot open $MNT/metrics: Read-only file system; /metrics counts this process only")" -eq 1 ]
	[ "$(log_count "$MNT/metrics")" -eq 1 ]
}

@test "a state disk that fills up while serving: the state and metrics files keep counting (their pages were allocated at open; no SIGBUS)" {
	umount "$MNT"
	mount -t tmpfs -o size=1m,mode=0755 tmpfs "$MNT"
	ts_start --state-dir "$MNT"
	pid=$(head -n 1 "$RUNDIR/tokstream-fcgi.pid")
	dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null || true
	[ "$(df --output=avail "$MNT" | tail -n 1 | tr -d ' ')" -eq 0 ]
	# 200 streams: 200 records (25 KB of the file) written after the disk
	# is full
	for round in 1 2 3 4; do
		for n in $(seq 1 50); do
			curl -sSN "$BASE/stream?prompt=f$round-$n&max_tokens=2&prefill_ms=0&tpot_ms=1" >/dev/null &
		done
		wait
	done
	kill -0 "$pid"
	[ "$(curl -sS "$BASE/_debug/generated" | jq .total_generated)" -eq 400 ]
	[ "$(curl -sS "$BASE/_debug/generated" | jq -r .id)" -eq 200 ]
	grep -qx 'tokstream:generation_tokens_total 400' <(curl -sS "$BASE/metrics" | unlabel_model)
	[ "$(log_count "$MNT/(state|metrics):")" -eq 0 ]
	[ "$(log_count 'counting in this process|counts this process only')" -eq 0 ]
}
