#!/usr/bin/env bats
# Least privilege (issue #5): started as root, tokstream-ctl runs lighttpd
# and every responder as www-data, in a run directory that stays root's
# (docs/OPERATIONS.md "Least privilege"). Needs root, the www-data user and
# setpriv (scripts/check runs as root, and deps.sh installs lighttpd, which
# makes www-data). A build tree www-data cannot reach (a checkout under
# /root) runs from a copy it can read (tests/lib/stage.bash).

TS_USER=www-data
load helpers

# as_www CMD...: CMD as www-data with its groups, the responders' identity
as_www() {
	setpriv --reuid=www-data --regid=www-data --init-groups -- "$@"
}

# The reason these tests cannot run here, or nothing.
why_skip() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root: tokstream-ctl drops privileges only when started as root"
	elif ! getent passwd www-data >/dev/null; then
		echo "no www-data user (Debian's lighttpd package creates it)"
	elif ! command -v setpriv >/dev/null; then
		echo "no setpriv (util-linux) to act as www-data"
	fi
}

setup_file() {
	[ -z "$(why_skip)" ] || return 0
	stage_for_user www-data "$TS_BUILDDIR" "$TS_SRCDIR" ||
		{ echo "cannot copy the responder where www-data can run it" >&2; return 1; }
	# the responder and the site config, as www-data reaches them
	TS_BINDIR=$STAGE_BINDIR
	TOKSTREAM_SITECONF=$STAGE_SITECONF
	SITEDIR=$(dirname "$STAGE_SITECONF")
	export STAGE_DIR STAGE_CTL TS_BINDIR TOKSTREAM_SITECONF SITEDIR
	# bats' own temp directories are 0700: www-data could not reach a
	# run directory below them
	PRIVDIR=$(mktemp -d /tmp/tokstream-priv.XXXXXX)
	chmod 755 "$PRIVDIR"
	export PRIVDIR
	TS_RUNDIR=$PRIVDIR/run TS_PROCS=2 ts_start --keepalive-ms 300
}

teardown_file() {
	[ -n "${PRIVDIR:-}" ] || return 0
	ts_stop
	TOKSTREAM_RUNDIR=$PRIVDIR/nonroot "$CTL" stop >/dev/null 2>&1 || true
	rm -rf "$PRIVDIR"
	stage_remove
}

setup() {
	local why
	why=$(why_skip)
	[ -z "$why" ] || skip "$why"
}

# responder_pids: the live responder pids, one a line
responder_pids() {
	local p
	for p in $(cat "$RUNDIR/tokstream-fcgi.pid"); do
		kill -0 "$p" 2>/dev/null && echo "$p"
	done
	return 0
}

@test "lighttpd and every responder run as www-data, with no way back to root" {
	uid=$(id -u www-data) gid=$(id -g www-data)
	pids="$(responder_pids) $(cat "$RUNDIR/lighttpd.pid")"
	[ "$(echo $pids | wc -w)" -eq 3 ]
	for pid in $pids; do
		echo "pid $pid: $(ps -o user=,group=,args= -p "$pid")"
		[ "$(ps -o user= -p "$pid")" = www-data ]
		[ "$(ps -o group= -p "$pid")" = www-data ]
		# real, effective, saved and file-system ids; no root group;
		# no capability left
		grep -Eq "^Uid:\s+$uid\s+$uid\s+$uid\s+$uid\s*$" "/proc/$pid/status"
		grep -Eq "^Gid:\s+$gid\s+$gid\s+$gid\s+$gid\s*$" "/proc/$pid/status"
		! grep '^Groups:' "/proc/$pid/status" | grep -qw 0 || false
		grep -Eq '^CapPrm:\s+0+$' "/proc/$pid/status"
		grep -Eq '^CapEff:\s+0+$' "/proc/$pid/status"
	done
}

@test "the run directory stays root's (root:www-data 0750); the daemons' files and the sockets (0660) are www-data's" {
	[ "$(stat -c '%U:%G %a' "$RUNDIR")" = "root:www-data 750" ]
	for f in state metrics tokstream-fcgi.log lighttpd-error.log; do
		[ -f "$RUNDIR/$f" ]
		[ ! -L "$RUNDIR/$f" ]
		[ "$(stat -c '%U:%G %a' "$RUNDIR/$f")" = "www-data:www-data 640" ]
	done
	# the state file is the real one (4,096 + 2 x 128 records of 144 bytes
	# + header: two responders of 64 slots and 64 waiting), not a fallback
	[ "$(stat -c %s "$RUNDIR/state")" -eq 626816 ]
	! grep -q 'counting in this process' "$RUNDIR/tokstream-fcgi.log" || false
	! grep -q 'counts this process only' "$RUNDIR/tokstream-fcgi.log" || false
	for s in "$RUNDIR/tokstream-1.sock" "$RUNDIR/tokstream-2.sock"; do
		[ "$(stat -c '%U:%G %a %F' "$s")" = "www-data:www-data 660 socket" ]
	done
	[ "$(stat -c '%U:%G %a' "$RUNDIR/upload")" = "www-data:www-data 700" ]
	# what root writes and reads again stays root's
	for f in lighttpd.conf lighttpd.pid tokstream-fcgi.pid \
	    tokstream-fcgi-1.pid supervisor.pid; do
		[ "$(stat -c %U "$RUNDIR/$f")" = root ]
	done
	grep -qx 'server.username  = "www-data"' "$RUNDIR/lighttpd.conf"
}

@test "dropped: streams, a 1 MB POST body (lighttpd spools it as www-data), /_debug and /metrics work" {
	run curl -sSN -D "$BATS_TEST_TMPDIR/h" "$BASE/stream?prompt=priv&max_tokens=5"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 5 ]
	id=$(header_of "$BATS_TEST_TMPDIR/h" X-Request-Id)
	[ "$(debug_field "$id" status)" = done ]
	[ "$(debug_field "$id" generated)" -eq 5 ]
	head -c 1000000 /dev/zero | tr '\0' a |
		jq -Rs '{prompt: ., max_tokens: 2, prefill_ms: 0}' > "$BATS_TEST_TMPDIR/big.json"
	run curl -sS -o "$BATS_TEST_TMPDIR/g" -w '%{http_code}' \
		--data-binary @"$BATS_TEST_TMPDIR/big.json" "$BASE/generate"
	[ "$output" = 200 ]
	[ "$(jq .usage.completion_tokens "$BATS_TEST_TMPDIR/g")" -eq 2 ]
	run curl -sS -o "$BATS_TEST_TMPDIR/m" -w '%{http_code}' "$BASE/metrics"
	[ "$output" = 200 ]
	"$TS_BUILDDIR/tests/promcheck" "$BATS_TEST_TMPDIR/m"
	unlabel_model <"$BATS_TEST_TMPDIR/m" >"$BATS_TEST_TMPDIR/mu"
	grep -Eq '^tokstream:generation_tokens_total [0-9]+' "$BATS_TEST_TMPDIR/mu"
	[ "$(awk '$1 == "tokstream:responder_processes" { print $2 }' "$BATS_TEST_TMPDIR/mu")" -eq 2 ]
}

@test "www-data cannot write the site config, lighttpd.conf, the pid files, tokstream-ctl or the binaries, nor add a name to the run directory" {
	for f in "$TOKSTREAM_SITECONF" \
	    "$SITEDIR/errors/status-503.html" "$RUNDIR/lighttpd.conf" \
	    "$RUNDIR/lighttpd.pid" "$RUNDIR/tokstream-fcgi.pid" \
	    "$RUNDIR/supervisor.pid" "$CTL" "$STAGE_CTL" "$TS_BINDIR/tokstream-fcgi"; do
		run as_www sh -c ': >> "$1"' sh "$f"
		echo "$f: $status $output"
		[ "$status" -ne 0 ]
	done
	run as_www touch "$RUNDIR/planted"
	[ "$status" -ne 0 ]
	run as_www ln -s /etc/passwd "$RUNDIR/planted"
	[ "$status" -ne 0 ]
	run as_www mv "$RUNDIR/lighttpd-error.log" "$RUNDIR/planted"
	[ "$status" -ne 0 ]
	[ ! -e "$RUNDIR/planted" ]
	# while what it must write, it can
	as_www sh -c ': >> "$1"' sh "$RUNDIR/state"
	as_www touch "$RUNDIR/upload/probe"
	rm -f "$RUNDIR/upload/probe"
}

@test "kill -9 of a responder: the supervisor starts it again as www-data" {
	victim=$(responder_pids | head -n 1)
	kill -9 "$victim"
	for i in $(seq 1 60); do
		pids=$(responder_pids)
		[ "$(echo $pids | wc -w)" -eq 2 ] && ! grep -qw "$victim" <<<"$pids" && break
		sleep 0.1
	done
	[ "$(echo $pids | wc -w)" -eq 2 ]
	! grep -qw "$victim" <<<"$pids" || false
	for pid in $pids; do
		[ "$(ps -o user= -p "$pid")" = www-data ]
	done
	sleep 1.2   # lighttpd's disable-time for the restarted socket
	for n in 1 2 3 4; do
		run curl -sSN "$BASE/stream?prompt=back$n&max_tokens=3"
		[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 3 ]
	done
}

@test "a run directory www-data cannot reach: a clear error, nothing started" {
	d=$(mktemp -d "$BATS_TEST_TMPDIR/closed.XXXXXX")   # below 0700 dirs
	run env TOKSTREAM_USER=www-data TOKSTREAM_PORT="$(free_port)" \
		TOKSTREAM_RUNDIR="$d/run" TOKSTREAM_BINDIR="$TS_BINDIR" \
		TOKSTREAM_SITECONF="$TOKSTREAM_SITECONF" "$CTL" start
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"www-data cannot reach $d/run"*"TOKSTREAM_USER=root"* ]]
	[ ! -e "$d/run/lighttpd.pid" ]
	[ ! -e "$d/run/tokstream-fcgi.pid" ]
}

@test "TOKSTREAM_USER names no user: a clear error, nothing started" {
	run env TOKSTREAM_USER=tokstream-no-such-user TOKSTREAM_PORT="$(free_port)" \
		TOKSTREAM_RUNDIR="$PRIVDIR/nouser" TOKSTREAM_BINDIR="$TS_BINDIR" \
		TOKSTREAM_SITECONF="$TOKSTREAM_SITECONF" "$CTL" start
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"user tokstream-no-such-user does not exist"* ]]
	[ ! -e "$PRIVDIR/nouser" ]
}

@test "a run directory shared with others (sticky, or holding other directories) is refused, its mode untouched" {
	mkdir -p "$PRIVDIR/shared/sub"
	chmod 1777 "$PRIVDIR/shared"
	for d in "$PRIVDIR/shared" "$PRIVDIR"; do
		before=$(stat -c '%U:%G %a' "$d")
		run env TOKSTREAM_USER=www-data TOKSTREAM_PORT="$(free_port)" \
			TOKSTREAM_RUNDIR="$d" TOKSTREAM_BINDIR="$TS_BINDIR" \
			TOKSTREAM_SITECONF="$TOKSTREAM_SITECONF" "$CTL" start
		echo "$output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"is not a run directory of its own"* ]]
		[ "$(stat -c '%U:%G %a' "$d")" = "$before" ]
	done
	rm -rf "$PRIVDIR/shared"
}

@test "started by a user other than root: it keeps that user and touches no ownership" {
	mkdir -p "$PRIVDIR/nonroot"
	chown www-data:www-data "$PRIVDIR/nonroot"
	chmod 700 "$PRIVDIR/nonroot"
	port=$(free_port)
	run as_www env TOKSTREAM_USER=root TOKSTREAM_PORT="$port" \
		TOKSTREAM_RUNDIR="$PRIVDIR/nonroot" TOKSTREAM_BINDIR="$TS_BINDIR" \
		TOKSTREAM_SITECONF="$TOKSTREAM_SITECONF" "$STAGE_CTL" start
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"ignored"* ]]
	for pid in $(cat "$PRIVDIR/nonroot/tokstream-fcgi.pid") \
	    $(cat "$PRIVDIR/nonroot/lighttpd.pid"); do
		[ "$(ps -o user= -p "$pid")" = www-data ]
	done
	[ "$(stat -c '%U:%G %a' "$PRIVDIR/nonroot")" = "www-data:www-data 700" ]
	! grep -q server.username "$PRIVDIR/nonroot/lighttpd.conf" || false
	run curl -sSN "http://127.0.0.1:$port/stream?prompt=me&max_tokens=2"
	[ "$(grep -c '^data: {"token"' <<<"$output")" -eq 2 ]
	as_www env TOKSTREAM_RUNDIR="$PRIVDIR/nonroot" "$STAGE_CTL" stop
}

# Last: it restarts the server of this file.
@test "restart over a run directory a root run left (and a planted symlink): taken over, the link removed not followed, counters kept" {
	before=$(curl -sS "$BASE/_debug/generated" | jq .total_generated)
	[ "$before" -gt 0 ]
	ts_stop
	# as an earlier run as root leaves it
	chown root:root "$RUNDIR" "$RUNDIR/state" "$RUNDIR/metrics" \
		"$RUNDIR/tokstream-fcgi.log"
	chmod 755 "$RUNDIR"
	# a link where root writes (what a compromised www-data would plant
	# in a run directory it could write)
	echo keep > "$PRIVDIR/victim"
	chmod 600 "$PRIVDIR/victim"
	rm -f "$RUNDIR/lighttpd-error.log"
	ln -s "$PRIVDIR/victim" "$RUNDIR/lighttpd-error.log"
	TS_RUNDIR=$RUNDIR TS_PROCS=2 ts_start --keepalive-ms 300
	[ "$(cat "$PRIVDIR/victim")" = keep ]
	[ "$(stat -c '%U:%G %a' "$PRIVDIR/victim")" = "root:root 600" ]
	[ ! -L "$RUNDIR/lighttpd-error.log" ]
	[ "$(stat -c '%U:%G %a' "$RUNDIR")" = "root:www-data 750" ]
	[ "$(stat -c %U "$RUNDIR/state")" = www-data ]
	curl -sSN "$BASE/stream?prompt=again&max_tokens=4" >/dev/null
	after=$(curl -sS "$BASE/_debug/generated" | jq .total_generated)
	[ "$after" -eq $((before + 4)) ]
	for pid in $(responder_pids); do
		[ "$(ps -o user= -p "$pid")" = www-data ]
	done
}
