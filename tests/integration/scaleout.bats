#!/usr/bin/env bats
# Several hosts (docs/OPERATIONS.md "Several hosts"), simulated on the
# loopback's own addresses: backend hosts b1 on 127.0.0.2 and b2 on
# 127.0.0.3 (responders on TCP, tokstream-ctl with TOKSTREAM_LISTEN and
# TOKSTREAM_INSTANCE), a front on 127.0.0.1 balancing over both
# (TOKSTREAM_BACKENDS), a second front on 127.0.0.4, and HAProxy over the
# two fronts (etc/haproxy/tokstream.cfg). Every test file's processes are
# its own (own ports and run directories) and stopped at the end.

load helpers

# so_port ADDR: a TCP port nobody listens on at ADDR
so_port() {
	local p i
	for i in $(seq 1 50); do
		p=$(( 10000 + (RANDOM * 32768 + RANDOM) % 22000 ))
		if ! (exec 3<>"/dev/tcp/$1/$p") 2>/dev/null &&
		   ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# ctl DIR ACTION [ENV=VALUE...]: tokstream-ctl for the host whose run
# directory is DIR, with that host's settings
ctl() {
	local dir=$1 act=$2
	shift 2
	env TOKSTREAM_RUNDIR="$dir" \
	    TOKSTREAM_BINDIR="${TS_BINDIR:-$TS_BUILDDIR/src}" \
	    TOKSTREAM_SITECONF="$TS_SRCDIR/etc/tokstream-site.conf" \
	    "$@" "$CTL" "$act"
}

# backend NAME ADDR PORT ACTION [ENV=VALUE...]: a backend host
backend() {
	local name=$1 addr=$2 port=$3 act=$4
	shift 4
	ctl "$SO/$name" "$act" TOKSTREAM_LISTEN="$addr:$port" \
	    TOKSTREAM_INSTANCE="$name" \
	    TOKSTREAM_FCGI_ARGS="--prefill-base-ms 0 --prefill-per-token-ms 0 --max-num-seqs 256" \
	    "$@"
}

# front NAME BIND PORT ACTION BACKENDS: a front
front() {
	ctl "$SO/$1" "$4" TOKSTREAM_BIND="$2" TOKSTREAM_PORT="$3" \
	    TOKSTREAM_BACKENDS="$5"
}

setup_file() {
	SO=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/so.XXXXXX")
	P1=$(so_port 127.0.0.2)
	P2=$(so_port 127.0.0.3)
	PF=$(so_port 127.0.0.1)
	BACKENDS="b1=127.0.0.2:$P1 b2=127.0.0.3:$P2"
	export SO P1 P2 PF BACKENDS
	backend b1 127.0.0.2 "$P1" start >> "$SO/ctl.log" 2>&1
	backend b2 127.0.0.3 "$P2" start >> "$SO/ctl.log" 2>&1
	front f1 127.0.0.1 "$PF" start "$BACKENDS" >> "$SO/ctl.log" 2>&1
	BASE=http://127.0.0.1:$PF
	export BASE
}

teardown_file() {
	[ -n "${SO:-}" ] || return 0
	if [ -f "$SO/haproxy.pid" ]; then
		kill "$(cat "$SO/haproxy.pid")" 2>/dev/null || true
	fi
	front f2 127.0.0.4 "$PF" stop "$BACKENDS" >/dev/null 2>&1 || true
	front f1 127.0.0.1 "$PF" stop "$BACKENDS" >/dev/null 2>&1 || true
	front f3 127.0.0.1 "${PF3:-1}" stop "b3=127.0.0.5:${P3:-1}" \
		>/dev/null 2>&1 || true
	backend b3 127.0.0.5 "${P3:-1}" stop >/dev/null 2>&1 || true
	backend b1 127.0.0.2 "$P1" stop >/dev/null 2>&1 || true
	backend b2 127.0.0.3 "$P2" stop >/dev/null 2>&1 || true
}

# totals NAME: "total_streams total_generated" of backend NAME, asked at
# the front with one of its ids (any id routes to its state file)
totals() {
	curl -sS "$BASE/_debug/generated?id=$1-1" |
		jq -r '"\(.total_streams) \(.total_generated)"'
}

# sse_tokens FILE: the token texts of the SSE text in FILE, one a line
sse_tokens() {
	sed -n 's/^data: \({"token":.*\)$/\1/p' "$1"
}

@test "two backends behind one front: 100 streams spread over both, ids name their backend, /_debug at the front finds every one" {
	for i in $(seq 1 100); do
		curl -sS -N -D "$BATS_TEST_TMPDIR/h$i" -o "$BATS_TEST_TMPDIR/b$i" \
			"$BASE/stream?prompt=spread&max_tokens=20&tpot_ms=20" &
	done
	wait
	: > "$BATS_TEST_TMPDIR/ids"
	for i in $(seq 1 100); do
		header_of "$BATS_TEST_TMPDIR/h$i" X-Request-Id >> "$BATS_TEST_TMPDIR/ids"
		# the same 20 tokens from either backend
		cmp <(sse_tokens "$BATS_TEST_TMPDIR/b1") <(sse_tokens "$BATS_TEST_TMPDIR/b$i")
		[ "$(sse_tokens "$BATS_TEST_TMPDIR/b$i" | wc -l)" -eq 20 ]
	done
	n1=$(grep -c '^b1-[1-9][0-9]*$' "$BATS_TEST_TMPDIR/ids" || true)
	n2=$(grep -c '^b2-[1-9][0-9]*$' "$BATS_TEST_TMPDIR/ids" || true)
	echo "b1 served $n1, b2 served $n2"
	[ $((n1 + n2)) -eq 100 ]
	# least-connection over streams opened at once: both take a share
	[ "$n1" -ge 25 ]
	[ "$n2" -ge 25 ]
	[ "$(sort -u "$BATS_TEST_TMPDIR/ids" | wc -l)" -eq 100 ]
	# every id is found at the front, on the backend it names
	while read -r id; do
		rec=$(curl -sS "$BASE/_debug/generated?id=$id")
		[ "$(jq -r .id <<<"$rec")" = "$id" ]
		[ "$(jq -r .status <<<"$rec")" = done ]
		[ "$(jq -r .generated <<<"$rec")" -eq 20 ]
	done < "$BATS_TEST_TMPDIR/ids"
}

@test "an id is never answered by the wrong host: a backend refuses another's id (421) and a bare number (400)" {
	# b9 has no route at the front: the balanced backend that gets it
	# says whose it is
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "$BASE/_debug/generated?id=b9-1"
	[ "$output" = 421 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = misdirected_request ]
	grep -q 'belongs to instance b9' "$BATS_TEST_TMPDIR/e"
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "$BASE/_debug/generated?id=1"
	[ "$output" = 400 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = invalid_id ]
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "$BASE/health?instance=b9"
	[ "$output" = 421 ]
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "$BASE/_debug/generated?id=b1-1&x=1"
	[ "$output" = 400 ]
	[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = invalid_query ]
	# the /v1 ids carry the instance too
	curl -sS "$BASE/v1/completions" -H 'Content-Type: application/json' \
		-d '{"model":"tokstream-sim","prompt":"hi","max_tokens":3}' > "$BATS_TEST_TMPDIR/v1"
	jq -r .id "$BATS_TEST_TMPDIR/v1" | grep -Eq '^cmpl-b[12]-[1-9][0-9]*$'
}

@test "cancellation works through either backend: a client that reads 5 tokens and leaves costs at most 6 (FIN) and 5 (RST)" {
	# least-connection sends a request to the backend with the fewest:
	# idle, b1 (the first); with a long stream held on b1, b2
	for target in b1 b2; do
		holder=
		if [ $target = b2 ]; then
			curl -sS -N -o /dev/null "$BASE/stream?prompt=hold&max_tokens=300&tpot_ms=20" &
			holder=$!
			sleep 0.3
		fi
		for how in "" --rst; do
			run "$TOKBENCH" cancel --url "$BASE" $how
			echo "$output"
			[ "$status" -eq 0 ]
			id=$(sed -n 's/.*request_id=\([^ ]*\).*/\1/p' <<<"$output")
			gen=$(sed -n 's/.*generated=\([0-9]*\).*/\1/p' <<<"$output")
			[ "${id%%-*}" = $target ]
			if [ -z "$how" ]; then [ "$gen" -le 6 ]; else [ "$gen" -le 5 ]; fi
		done
		[ -z "$holder" ] || kill "$holder"
	done
}

@test "each backend's /metrics and /health through the front (?instance=), and the front's summary of which backends are up" {
	for b in b1 b2; do
		curl -sS "$BASE/metrics?instance=$b" | unlabel_model > "$BATS_TEST_TMPDIR/m.$b"
		grep -qx "tokstream:backend_info{tokstream_instance=\"$b\"} 1" "$BATS_TEST_TMPDIR/m.$b"
		grep -q '^tokstream:generation_tokens_total ' "$BATS_TEST_TMPDIR/m.$b"
		[ "$(curl -sS "$BASE/health?instance=$b" | jq -r .instance)" = "$b" ]
	done
	# the two backends' counters are their own
	t1=$(sed -n 's/^tokstream:generation_tokens_total //p' "$BATS_TEST_TMPDIR/m.b1")
	[ "$t1" = "$(totals b1 | cut -d' ' -f2)" ]
	run front f1 127.0.0.1 "$PF" status "$BACKENDS"
	echo "$output"
	[[ $output == *"backend b1 (127.0.0.2:$P1): up"* ]]
	[[ $output == *"backend b2 (127.0.0.3:$P2): up"* ]]
	curl -sS "$BASE/_front/statistics" > "$BATS_TEST_TMPDIR/st"
	grep -q "^gw.backend.b1-$P1.0.connected: [1-9]" "$BATS_TEST_TMPDIR/st"
	grep -q "^gw.backend.b2-$P2.0.connected: [1-9]" "$BATS_TEST_TMPDIR/st"
	# loopback only, never through a proxy, never for another host name
	for h in "X-Forwarded-For: 10.0.0.1" "Forwarded: for=10.0.0.1" "Host: evil.example"; do
		run curl -sS -o /dev/null -w '%{http_code}' -H "$h" "$BASE/_front/statistics"
		[ "$output" = 404 ]
	done
	# a backend whose supervisor died: status says so (3), start brings
	# the supervisor back without touching the responder
	pid=$(cat "$SO/b2/tokstream-fcgi.pid")
	kill -9 "$(cat "$SO/b2/supervisor.pid")"
	run backend b2 127.0.0.3 "$P2" status
	[ "$status" -eq 3 ]
	[[ $output == *"supervisor: stopped"* ]]
	run backend b2 127.0.0.3 "$P2" start
	[[ $output == *"started it"* ]]
	run backend b2 127.0.0.3 "$P2" status
	[ "$status" -eq 0 ]
	[ "$(cat "$SO/b2/tokstream-fcgi.pid")" = "$pid" ]
}

@test "Prometheus scrapes each backend through the front with the documented scrape config: one target per backend, labelled by its name" {
	need_command prometheus prometheus
	PP=$(so_port 127.0.0.1)
	# the documented config, scraping this front every second
	{ printf 'global:\n  scrape_interval: 1s\n'
	  sed "s/127.0.0.1:8170/127.0.0.1:$PF/" "$TS_SRCDIR/etc/prometheus/tokstream-scrape.yml"
	} > "$SO/prom.yml"
	prometheus --config.file="$SO/prom.yml" --storage.tsdb.path="$SO/prom" \
		--web.listen-address="127.0.0.1:$PP" > "$SO/prom.log" 2>&1 &
	prom=$!
	q() { curl -sS "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
	for i in $(seq 1 100); do
		n=$(q 'up{job="tokstream"} == 1' 2>/dev/null | jq '.data.result | length' 2>/dev/null || echo 0)
		[ "$n" = 2 ] && break
		sleep 0.1
	done
	info=$(q 'tokstream:backend_info')
	gen=$(q 'tokstream:generation_tokens_total')
	kill "$prom"
	wait "$prom" || true
	echo "$info"
	[ "$n" = 2 ]
	# each target's series is its own backend's: the instance label (the
	# scrape config's) and the backend's own name agree
	[ "$(jq -r '[.data.result[] | "\(.metric.instance)=\(.metric.tokstream_instance)"] | sort | join(" ")' <<<"$info")" = "b1=b1 b2=b2" ]
	[ "$(jq '.data.result | length' <<<"$gen")" -eq 2 ]
}

@test "a backend accepts FastCGI connections only from its fronts (FCGI_WEB_SERVER_ADDRS)" {
	P3=$(so_port 127.0.0.5)
	PF3=$(so_port 127.0.0.1)
	export P3 PF3
	# b3 accepts only a front at 127.0.0.9; the front here connects
	# from 127.0.0.1
	backend b3 127.0.0.5 "$P3" start TOKSTREAM_FRONTS=127.0.0.9
	front f3 127.0.0.1 "$PF3" start "b3=127.0.0.5:$P3"
	run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "http://127.0.0.1:$PF3/health"
	front f3 127.0.0.1 "$PF3" stop "b3=127.0.0.5:$P3"
	backend b3 127.0.0.5 "$P3" stop
	# libfcgi accepts and closes at once: lighttpd's request gets a
	# reset where the answer should be (a 500, not a dead backend's 503)
	[ "$output" = 500 ]
	grep -q "response not received, request sent: .* tcp:127.0.0.5:$P3" "$SO/f3/lighttpd-error.log"
	# and the same backend with the front's address answers
	backend b3 127.0.0.5 "$P3" start TOKSTREAM_FRONTS=127.0.0.9,127.0.0.1
	front f3 127.0.0.1 "$PF3" start "b3=127.0.0.5:$P3"
	run curl -sS "http://127.0.0.1:$PF3/health"
	front f3 127.0.0.1 "$PF3" stop "b3=127.0.0.5:$P3"
	backend b3 127.0.0.5 "$P3" stop
	[ "$(jq -r .instance <<<"$output")" = b3 ]
	# a backend without an instance name, or on every interface, is refused
	run ctl "$SO/bx" start TOKSTREAM_LISTEN=127.0.0.5:$P3
	[ "$status" -ne 0 ]
	[[ $output == *"needs TOKSTREAM_INSTANCE"* ]]
	run ctl "$SO/bx" start TOKSTREAM_LISTEN=0.0.0.0:$P3 TOKSTREAM_INSTANCE=bx
	[ "$status" -ne 0 ]
	[[ $output == *"not on every"* ]]
	# names that are no instance names, and fronts without backends
	run ctl "$SO/bx" start TOKSTREAM_LISTEN=127.0.0.5:$P3 TOKSTREAM_INSTANCE=B1
	[ "$status" -ne 0 ]
	[[ $output == *"want 1 to 8 of a-z and 0-9"* ]]
	run ctl "$SO/bx" start TOKSTREAM_BACKENDS="b1=127.0.0.2:$P1 b1=127.0.0.3:$P2"
	[ "$status" -ne 0 ]
	[[ $output == *"named twice"* ]]
	run ctl "$SO/bx" start TOKSTREAM_BACKENDS="b1"
	[ "$status" -ne 0 ]
	[[ $output == *"want NAME=ADDR:PORT"* ]]
	[ ! -e "$SO/bx/lighttpd.pid" ]
	# a backend whose second port is taken (b2's): it fails and leaves
	# no responder behind on its first
	if ! (exec 3<>"/dev/tcp/127.0.0.3/$((P2 - 1))") 2>/dev/null; then
		run ctl "$SO/bx" start TOKSTREAM_LISTEN=127.0.0.3:$((P2 - 1)) \
			TOKSTREAM_INSTANCE=bx TOKSTREAM_PROCS=2
		echo "$output"
		[ "$status" -ne 0 ]
		[[ $output == *"responder 2 did not start"* ]]
		run bash -c "exec 3<>/dev/tcp/127.0.0.3/$((P2 - 1))"
		[ "$status" -ne 0 ]
	fi
}

@test "kill -9 one backend mid-stream: its streams are cut, new requests go to the other, Last-Event-ID resumes on it with the exact continuation, totals add up" {
	read -r s1 g1 <<<"$(totals b1)"
	read -r s2 g2 <<<"$(totals b2)"
	for i in $(seq 1 12); do
		( rc=0
		  curl -sS -N -D "$BATS_TEST_TMPDIR/h$i" -o "$BATS_TEST_TMPDIR/b$i" \
			"$BASE/stream?prompt=cut$i&max_tokens=100&tpot_ms=20" || rc=$?
		  echo $rc > "$BATS_TEST_TMPDIR/rc$i" ) &
	done
	sleep 0.8
	# the host "dies": its supervisor first, so nothing brings it back
	kill -9 $(cat "$SO/b1/supervisor.pid") $(cat "$SO/b1/tokstream-fcgi.pid")
	killed=$(date +%s%N)
	# new requests right after: all answered, by b2 (lighttpd retries a
	# refused connect on the next backend and takes b1 out)
	for i in $(seq 1 20); do
		curl -sS -D "$BATS_TEST_TMPDIR/nh$i" -o /dev/null "$BASE/stream?prompt=after&max_tokens=2"
		[ "$(header_of "$BATS_TEST_TMPDIR/nh$i" X-Request-Id | cut -d- -f1)" = b2 ]
	done
	echo "20 new requests served by b2 in $(( ($(date +%s%N) - killed) / 1000000 )) ms after the kill"
	# the front's summary says b1 is down (exit status 3)
	run front f1 127.0.0.1 "$PF" status "$BACKENDS"
	[ "$status" -eq 3 ]
	[[ $output == *"backend b1 (127.0.0.2:$P1): down"* ]]
	[[ $output == *"backend b2 (127.0.0.3:$P2): up"* ]]
	wait
	cut=0 total_recv=0
	for i in $(seq 1 12); do
		id=$(header_of "$BATS_TEST_TMPDIR/h$i" X-Request-Id)
		n=$(sse_tokens "$BATS_TEST_TMPDIR/b$i" | wc -l)
		total_recv=$((total_recv + n))
		if [ "${id%%-*}" = b2 ]; then
			[ "$(cat "$BATS_TEST_TMPDIR/rc$i")" -eq 0 ]
			[ "$n" -eq 100 ]
			continue
		fi
		# b1's: truncated (curl 18: the chunked body never ended), no [DONE]
		[ "$(cat "$BATS_TEST_TMPDIR/rc$i")" -eq 18 ]
		run grep -c '^data: \[DONE\]' "$BATS_TEST_TMPDIR/b$i"
		[ "$output" = 0 ]
		[ "$n" -lt 100 ]
		cut=$((cut + 1))
		# resume as EventSource does: the last id, at the front
		last=$(sed -n 's/^id: //p' "$BATS_TEST_TMPDIR/b$i" | tail -n 1)
		curl -sS -N -D "$BATS_TEST_TMPDIR/rh$i" -o "$BATS_TEST_TMPDIR/r$i" \
			-H "Last-Event-ID: $last" \
			"$BASE/stream?prompt=cut$i&max_tokens=100&tpot_ms=20"
		rid=$(header_of "$BATS_TEST_TMPDIR/rh$i" X-Request-Id)
		[ "${rid%%-*}" = b2 ]
		# the cut part and the resumed part are exactly the whole stream
		curl -sS -N -o "$BATS_TEST_TMPDIR/w$i" "$BASE/stream?prompt=cut$i&max_tokens=100&tpot_ms=0"
		cmp <(sse_tokens "$BATS_TEST_TMPDIR/b$i"; sse_tokens "$BATS_TEST_TMPDIR/r$i") \
			<(sse_tokens "$BATS_TEST_TMPDIR/w$i")
		grep -q '^data: \[DONE\]' "$BATS_TEST_TMPDIR/r$i"
		# the resumed record links to the lost one, on the other instance
		rec=$(curl -sS "$BASE/_debug/generated?id=$rid")
		[ "$(jq -r .resumed_from <<<"$rec")" = "$id" ]
		[ "$(jq -r .resumed_from_record <<<"$rec")" = other_instance ]
		[ "$(jq -r .resume_index <<<"$rec")" -eq "$n" ]
		# which the front says it cannot reach while b1 is down
		run curl -sS -o "$BATS_TEST_TMPDIR/e" -w '%{http_code}' "$BASE/_debug/generated?id=$id"
		[ "$output" = 503 ]
		[ "$(jq -r .error.code "$BATS_TEST_TMPDIR/e")" = backend_unavailable ]
		echo "$id $n $rid" >> "$SO/cut"
		total_recv=$((total_recv + $(sse_tokens "$BATS_TEST_TMPDIR/r$i" | wc -l)))
	done
	echo "$cut of 12 streams were on b1 and cut"
	[ "$cut" -ge 3 ]
	[ "$cut" -le 9 ]
	# b2's totals: its 12 - cut first streams, 20 new ones, cut resumes
	# and cut whole runs; every token b2 made was received
	read -r s2b g2b <<<"$(totals b2)"
	[ $((s2b - s2)) -eq $(( (12 - cut) + 20 + 2 * cut )) ]
	echo "b2 generated $((g2b - g2))"
	[ $((g2b - g2)) -eq $(( (12 - cut) * 100 + 20 * 2 + cut * 100 + $(awk '{ s += 100 - $2 } END { print s }' "$SO/cut") )) ]
	echo "$s1 $g1 $cut" > "$SO/b1-before"
}

@test "the backend comes back: the front uses it again, and the lost records are reachable again" {
	[ -f "$SO/cut" ]
	backend b1 127.0.0.2 "$P1" start
	back=$(date +%s%N)
	# within disable-time (1 s) of its return, the front sends it streams
	for try in $(seq 1 30); do
		for i in $(seq 1 6); do
			curl -sS -D "$BATS_TEST_TMPDIR/h$i" -o /dev/null \
				"$BASE/stream?prompt=back&max_tokens=5&tpot_ms=20" &
		done
		wait
		cat "$BATS_TEST_TMPDIR"/h[1-6] | tr -d '\r' | grep -qi '^x-request-id: b1-' && break
		sleep 0.2
	done
	echo "b1 served again $(( ($(date +%s%N) - back) / 1000000 )) ms after its start"
	cat "$BATS_TEST_TMPDIR"/h[1-6] | tr -d '\r' | grep -qi '^x-request-id: b1-'
	# the cut streams' records survive in b1's state file: ended with the
	# process ("error"), with at least the tokens their clients received
	read -r s1 g1 cut < "$SO/b1-before"
	while read -r id n rid; do
		# the route of b1's ids is a pool of its own, which lighttpd
		# disabled when b1 was down and takes back the same way
		for try in $(seq 1 50); do
			rec=$(curl -sS "$BASE/_debug/generated?id=$id")
			[ "$(jq -r .error.code <<<"$rec")" = backend_unavailable ] || break
			sleep 0.1
		done
		echo "$rec"
		[ "$(jq -r .status <<<"$rec")" = error ]
		[ "$(jq -r .generated <<<"$rec")" -ge "$n" ]
	done < "$SO/cut"
	# b1 counted its cut streams and every later one
	read -r s1b g1b <<<"$(totals b1)"
	[ $((s1b - s1)) -ge "$cut" ]
}

@test "a real EventSource client resumes by itself on the other backend when the one serving it is killed" {
	need_node eventsource
	run timeout 60 node "$TS_SRCDIR/tests/node/eventsource-failover.mjs" "$BASE" \
		"b1=$SO/b1/supervisor.pid,$SO/b1/tokstream-fcgi.pid" \
		"b2=$SO/b2/supervisor.pid,$SO/b2/tokstream-fcgi.pid"
	echo "$output"
	# bring the killed one back for the next test
	for b in b1 b2; do
		if [[ $output == *"killed $b,"* ]]; then
			if [ $b = b1 ]; then backend b1 127.0.0.2 "$P1" start
			else backend b2 127.0.0.3 "$P2" start; fi
		fi
	done
	[ "$status" -eq 0 ]
	[[ $output == "killed b"[12]", resumed on b"[12] ]]
}

@test "HAProxy over two fronts: streams unbuffered, cancels pass through (FIN and RST), resume works, a dead front is taken out" {
	need_command haproxy haproxy
	PH=$(so_port 127.0.0.1)
	front f2 127.0.0.4 "$PF" start "$BACKENDS"
	TOKSTREAM_HAPROXY_BIND=127.0.0.1:$PH TOKSTREAM_FRONT1=127.0.0.1:$PF \
	TOKSTREAM_FRONT2=127.0.0.4:$PF \
		haproxy -D -p "$SO/haproxy.pid" -f "$TS_SRCDIR/etc/haproxy/tokstream.cfg"
	H=http://127.0.0.1:$PH
	for i in $(seq 1 50); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$H/health")" = 200 ] && break
		sleep 0.1
	done
	# each event as it is made: first token at once, then one per 50 ms
	run "$TOKBENCH" stream --url "$H" --max-tokens 20 --tpot-ms 50
	echo "$output"
	[ "$status" -eq 0 ]
	holds "$(sed -n 's/^ttft_ms=//p' <<<"$output") < 300"
	holds "$(sed -n 's/^itl_p50_ms=//p' <<<"$output") > 40"
	holds "$(sed -n 's/^itl_p50_ms=//p' <<<"$output") < 60"
	[ "$(sed -n 's/^tokens=//p' <<<"$output")" -eq 20 ]
	# HAProxy says who the client is (X-Forwarded-For): /_debug refuses it
	run curl -sS -o /dev/null -w '%{http_code}' "$H/_debug/generated"
	[ "$output" = 403 ]
	# a client that reads 5 and leaves, through three tiers
	for how in "" --rst; do
		run "$TOKBENCH" cancel --url "$H" --debug-url "$BASE" $how
		echo "$output"
		[ "$status" -eq 0 ]
		gen=$(sed -n 's/.*generated=\([0-9]*\).*/\1/p' <<<"$output")
		[ "$gen" -le 8 ]
	done
	# resume through HAProxy
	curl -sS -N -m 0.5 -o "$BATS_TEST_TMPDIR/c" "$H/stream?prompt=ha&max_tokens=60&tpot_ms=20" || true
	last=$(sed -n 's/^id: //p' "$BATS_TEST_TMPDIR/c" | tail -n 1)
	[ -n "$last" ]
	curl -sS -N -o "$BATS_TEST_TMPDIR/r" -H "Last-Event-ID: $last" "$H/stream?prompt=ha&max_tokens=60&tpot_ms=20"
	curl -sS -N -o "$BATS_TEST_TMPDIR/w" "$H/stream?prompt=ha&max_tokens=60&tpot_ms=0"
	cmp <(sse_tokens "$BATS_TEST_TMPDIR/c"; sse_tokens "$BATS_TEST_TMPDIR/r") <(sse_tokens "$BATS_TEST_TMPDIR/w")
	# one front dies: HAProxy sends every request to the other
	front f1 127.0.0.1 "$PF" stop "$BACKENDS"
	for i in $(seq 1 20); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$H/stream?prompt=x&max_tokens=2")" = 200 ]
	done
	front f1 127.0.0.1 "$PF" start "$BACKENDS"
}
