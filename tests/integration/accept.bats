#!/usr/bin/env bats
# The accept path (issue #23; docs/RELIABILITY.md "The accept path"):
# FastCGI connections that send nothing, or part of a request, hold no
# accept thread and are closed at --accept-timeout-ms (default 5,000 ms),
# beside normal traffic, on the unix socket behind lighttpd and on a
# backend host's TCP port; a request larger than the gate holds whose body
# stops holds an accept thread only until that deadline; accept(2)
# failing because descriptors ran out is logged, backed off and retried,
# /health says "degraded", and the same process serves again once
# descriptors are free. tests/fcgiconn is the FastCGI client.

load helpers

FCGICONN=$TS_BUILDDIR/tests/fcgiconn
TIMEOUT_MS=5000

teardown() {
	local p
	for p in "$BATS_TEST_TMPDIR"/*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	ts_stop
	if [ -n "${BD:-}" ]; then
		TOKSTREAM_RUNDIR=$BD TOKSTREAM_LISTEN=127.0.0.1:$BP \
			TOKSTREAM_INSTANCE=b1 "$CTL" stop >/dev/null 2>&1 || true
	fi
	return 0
}

responder_pid() {
	head -n 1 "$1/tokstream-fcgi.pid"
}

# wait_grep FILE REGEX SECONDS: until a line of FILE matches
wait_grep() {
	local i
	for i in $(seq 1 $(($3 * 20))); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "no line /$2/ in $1 after $3 s:" >&2
	cat "$1" >&2 || true
	return 1
}

# hold NAME ADDRESS MODE COUNT: COUNT connections of MODE (fcgiconn) in
# the background, held up to 120 s, until all are connected; their
# report goes to $BATS_TEST_TMPDIR/NAME
hold() {
	"$FCGICONN" "$2" "$3" "$4" 120 >"$BATS_TEST_TMPDIR/$1" 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/$1.pid"
	wait_grep "$BATS_TEST_TMPDIR/$1" "^connected $4\$" 30
}

# closed_in_time NAME LOW HIGH: every connection of NAME was closed by the
# server, each LOW to HIGH ms after it connected
closed_in_time() {
	local f=$BATS_TEST_TMPDIR/$1
	wait_grep "$f" '^held 0 closed [0-9]+$' 120
	awk -v lo="$2" -v hi="$3" '$1 == "closed" && ($3 < lo || $3 > hi) {
		print "closed at " $3 " ms, not in [" lo ", " hi "]"; bad = 1 }
		END { exit bad }' "$f"
}

@test "16 silent FastCGI connections on the unix socket (4 accept threads): /health and a stream answer while all are open; each is closed at --accept-timeout-ms" {
	ts_start
	d=$BATS_TEST_TMPDIR
	# ahead of lighttpd's connections in the listen queue: libfcgi's
	# accept threads kept each silent unix connection 2 s
	# (OS_Accept's is_af_unix_keeper), four at a time
	hold silent "unix:$RUNDIR/tokstream.sock" silent 16
	[ "$(curl -sS -m 60 "$BASE/health" | jq -r .status)" = ok ]
	curl -sS -m 60 -N "$BASE/stream?prompt=beside&max_tokens=5" >"$d/s"
	[ "$(grep -c '^data: {"token"' "$d/s")" -eq 5 ]
	# the order: both answered while every silent connection was open
	! grep -q '^closed' "$d/silent" || false
	# then each is closed at its deadline, never before (the deadline
	# runs from the accept, after the connect), late only by the machine
	closed_in_time silent $((TIMEOUT_MS - 50)) $((TIMEOUT_MS + 20000))
	grep -q "closed a FastCGI connection that sent no whole request within --accept-timeout-ms $TIMEOUT_MS" \
		"$RUNDIR/tokstream-fcgi.log"
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
}

@test "a backend host's TCP port: silent connections, half-sent heads and POSTs whose body never comes, 8 each, hold nothing; /health and a stream straight to the port answer meanwhile" {
	BP=$(free_port)
	BD=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/b1.XXXXXX")
	TOKSTREAM_RUNDIR=$BD TOKSTREAM_LISTEN=127.0.0.1:$BP \
		TOKSTREAM_INSTANCE=b1 \
		TOKSTREAM_BINDIR="${TS_BINDIR:-$TS_BUILDDIR/src}" \
		"$CTL" start >>"$BD/ctl.log" 2>&1
	d=$BATS_TEST_TMPDIR
	hold silent "127.0.0.1:$BP" silent 8
	hold begin "127.0.0.1:$BP" begin 8
	hold nobody "127.0.0.1:$BP" nobody 8
	# over TCP libfcgi's accept threads waited for these for ever
	run "$FCGICONN" "127.0.0.1:$BP" get 1 60 /health
	[ "$status" -eq 0 ]
	grep -q '^Status: 200' <<<"$output"
	grep -q '^{"status":"ok","instance":"b1"}' <<<"$output"
	run "$FCGICONN" "127.0.0.1:$BP" get 1 60 "/stream?prompt=tcp&max_tokens=3"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 3 ]
	! grep -q '^closed' "$d/silent" "$d/begin" "$d/nobody" || false
	closed_in_time silent $((TIMEOUT_MS - 50)) $((TIMEOUT_MS + 20000))
	closed_in_time begin $((TIMEOUT_MS - 50)) $((TIMEOUT_MS + 20000))
	closed_in_time nobody $((TIMEOUT_MS - 50)) $((TIMEOUT_MS + 20000))
}

@test "8 POSTs larger than the gate holds whose body stops: each holds an accept thread only until --accept-timeout-ms, then /health answers" {
	ts_start
	d=$BATS_TEST_TMPDIR
	hold big "unix:$RUNDIR/tokstream.sock" bigbody 8
	# the 8 were handed to the 4 accept threads (or queued for them)
	# before /health came: it waits for two rounds of deadlines at most
	run "$FCGICONN" "unix:$RUNDIR/tokstream.sock" get 1 120 /health
	[ "$status" -eq 0 ]
	grep -q '^{"status":"ok"}' <<<"$output"
	# every one was cut by its watch: at least one deadline after its
	# connect, at most two (two rounds of four) and the machine's slack
	closed_in_time big $((TIMEOUT_MS - 50)) $((2 * TIMEOUT_MS + 20000))
	grep -q "closed a FastCGI connection whose request or answer an accept thread was still reading or writing" \
		"$RUNDIR/tokstream-fcgi.log"
}

@test "descriptors run out (ulimit -n 48): accept fails, is logged and backed off, /health says degraded once they are back, and the same process serves" {
	TOKSTREAM_FCGI_WRAPPER="$(command -v prlimit) --nofile=48:48 --" ts_start
	d=$BATS_TEST_TMPDIR
	pid=$(responder_pid "$RUNDIR")
	grep -q '^Max open files *48 *48 ' "/proc/$pid/limits"
	# more connections than descriptors: the last ones wait in the
	# listen queue, each accept of them fails
	hold many "unix:$RUNDIR/tokstream.sock" silent 80
	wait_grep "$RUNDIR/tokstream-fcgi.log" 'accept failed: Too many open files; .*/health says degraded' 30
	# let it fail for a while: a loop without a back-off would fail
	# thousands of times a second
	sleep 1.5
	kill "$(cat "$d/many.pid")"
	wait_grep "$d/many" '^held' 10
	# back: /health through lighttpd answers, degraded, with the cause
	for i in $(seq 1 200); do
		code=$(curl -s -m 5 -o "$d/h" -w '%{http_code}' "$BASE/health") || true
		[ "$code" = 200 ] && break
		sleep 0.1
	done
	[ "$code" = 200 ]
	cat "$d/h"
	[ "$(jq -r .status "$d/h")" = degraded ]
	[ "$(jq -r .accept.last_error "$d/h")" = "Too many open files" ]
	[ "$(jq -r .accept.failures "$d/h")" -ge 1 ]
	curl -sS -m 60 -N "$BASE/stream?prompt=after&max_tokens=4" >"$d/s"
	[ "$(grep -c '^data: {"token"' "$d/s")" -eq 4 ]
	# the same process: no thread of it ended, nothing restarted it
	[ "$(responder_pid "$RUNDIR")" = "$pid" ]
	kill -0 "$pid"
	# the back-off: the line that ends the first episode of failures
	# says how many in how long; doubling from 10 ms to 1,000 ms allows
	# at most 9 + T/1000 in T ms (retries come late on a loaded machine,
	# never early)
	line=$(grep -m 1 'accept works again after' "$RUNDIR/tokstream-fcgi.log")
	echo "$line"
	n=$(sed -E 's/.*after ([0-9]+) failures in ([0-9]+) ms.*/\1/' <<<"$line")
	t=$(sed -E 's/.*after ([0-9]+) failures in ([0-9]+) ms.*/\2/' <<<"$line")
	holds "$n >= 1 && $n <= 9 + $t / 1000"
}

# big_posts NAME COUNT: COUNT HTTP clients, from one python3 process,
# that each POST the 1 MiB /tokenize body (349,500 x U+0800: a 4.2 MB
# answer of ids) through lighttpd and read nothing (a small receive
# buffer) until the file NAME.go exists; each says "started I" once the
# first bytes of its answer reached its socket (the responder is
# writing it), then, after NAME.go, reads it slowly to its end and says
# "whole I STATUS BYTES IDS" (IDS -1: the body is not JSON; -2: tokens
# is not count long).
big_posts() {
	cat >"$BATS_TEST_TMPDIR/big.py" <<'EOF'
import fcntl, json, os, socket, struct, sys, termios, threading, time
port, n, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = json.dumps({"model": "tokstream-sim", "prompt": "\u0800" * 349500},
                  ensure_ascii=False).encode()
out = threading.Lock()
def say(s):
    with out:
        print(s, flush=True)
def one(i):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /tokenize HTTP/1.0\r\nHost: x\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n"
              b"\r\n" % len(body) + body)
    while struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD,
                                         b"\0\0\0\0"))[0] == 0:
        time.sleep(0.02)
    say("started %d" % i)
    while not os.path.exists(go):
        time.sleep(0.05)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
        time.sleep(0.001)
    head, _, rest = data.partition(b"\r\n\r\n")
    try:
        j = json.loads(rest)
        ids = j["count"] if len(j["tokens"]) == j["count"] else -2
    except Exception:
        ids = -1
    say("whole %d %s %d %d" % (i, head.split(b" ")[1].decode(), len(rest),
                                ids))
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
EOF
	python3 "$BATS_TEST_TMPDIR/big.py" "$PORT" "$2" \
		"$BATS_TEST_TMPDIR/$1.go" >"$BATS_TEST_TMPDIR/$1" 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/$1.pid"
	wait_grep "$BATS_TEST_TMPDIR/$1" "started" 60
	for i in $(seq 1 600); do
		[ "$(grep -c '^started' "$BATS_TEST_TMPDIR/$1")" -eq "$2" ] &&
			return 0
		sleep 0.05
	done
	cat "$BATS_TEST_TMPDIR/$1" >&2
	return 1
}

@test "4 clients that do not read their 4.2 MB /tokenize answers hold no accept thread: a chat completion and a short /tokenize answer meanwhile; then every answer arrives whole, and to curl --limit-rate 500K" {
	need_command python3 python3
	# an accept thread held by an unread answer is let go only at
	# --accept-timeout-ms: 30 s here, so what waits for one cannot be
	# mistaken for a slow machine
	ts_start --accept-timeout-ms 30000 --write-stall-ms 60000
	d=$BATS_TEST_TMPDIR
	big_posts big 4
	# the four answers are being written; every accept thread that takes
	# a body is free (gate.h: light_only): both answer at once
	curl -sS -m 10 "$BASE/v1/chat/completions" \
		-H 'Content-Type: application/json' \
		-d '{"model":"tokstream-sim","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}' \
		>"$d/chat"
	[ "$(jq -r '.choices[0].finish_reason' "$d/chat")" = length ]
	curl -sS -m 10 "$BASE/tokenize" -H 'Content-Type: application/json' \
		-d '{"model":"tokstream-sim","prompt":"hello"}' >"$d/short"
	[ "$(jq '.tokens | length' "$d/short")" -ge 1 ]
	# the order: both answered while no big answer had been read
	! grep -q '^whole' "$d/big" || false
	# then each big answer arrives whole to its (late) reader
	touch "$d/big.go"
	wait_grep "$d/big" '^whole' 60
	for i in $(seq 1 1200); do
		[ "$(grep -c '^whole' "$d/big")" -eq 4 ] && break
		sleep 0.05
	done
	cat "$d/big" >&2
	[ "$(grep -Ec '^whole [0-9] 200 [0-9]{7} [1-9][0-9]{5,}$' "$d/big")" -eq 4 ]
	# and to a client that reads at 500 KB/s throughout
	python3 -c 'import json,sys; sys.stdout.write(json.dumps({"model":"tokstream-sim","prompt":"\u0800"*349500},ensure_ascii=False))' >"$d/body"
	code=$(curl -sS -m 60 --limit-rate 500K -o "$d/slow" -w '%{http_code}' \
		"$BASE/tokenize" -H 'Content-Type: application/json' \
		--data-binary @"$d/body")
	[ "$code" = 200 ]
	jq -e '(.tokens | length) == .count and .count > 100000' "$d/slow"
	[ "$(stat -c %s "$d/slow")" -gt 4000000 ]
	[ "$(curl -sS "$BASE/health" | jq -r .status)" = ok ]
}
