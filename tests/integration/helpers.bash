# Shared setup for tokstream's bats tests: each test file starts its own
# lighttpd + spawn-fcgi on a free port with its own run/state directory
# (never 8170, never /run/tokstream) and stops them at the end.

TS_SRCDIR=${TS_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
TS_BUILDDIR=${TS_BUILDDIR:-$TS_SRCDIR}
CTL=$TS_SRCDIR/scripts/tokstream-ctl
TOKGEN=$TS_BUILDDIR/src/tokgen
TOKBENCH=$TS_BUILDDIR/src/bench/tokbench
. "$TS_SRCDIR/tests/lib/stage.bash"

# Run as root, tokstream-ctl drops lighttpd and the responders to www-data,
# which cannot reach the run directories below bats' 0700 temp directories:
# the tests keep root unless they set TS_USER (privileges.bats does, with a
# run directory of its own).
TOKSTREAM_USER=${TS_USER:-root}
export TOKSTREAM_USER

# The tests read UTF-8 (CJK, emoji, grep -P code points): they run in
# glibc's built-in C.UTF-8 locale whatever the caller's (a fresh Debian
# has no LANG at all), so no test depends on the machine's locale.
LC_ALL=C.UTF-8
export LC_ALL

# holds EXPR: true when the awk expression EXPR holds (numbers with a
# decimal point, + - * /, comparisons, && ||): the tests' arithmetic on
# timings, without bc (which a fresh Debian does not have).
holds() {
	# a missing number (jq's null, an empty $(...)) would be awk's 0 and
	# pass a "<" quietly: that is a failure, not a pass
	local ops='[<>=!&|]'
	if [[ " $* " =~ [^[:alnum:]_]null[^[:alnum:]_] ||
	    "$*" =~ ^[[:space:]]*$ops || "$*" =~ $ops[[:space:]]*$ ||
	    "$*" =~ [\<\>=][[:space:]]+$ops ]]; then
		echo "holds: an operand is missing in: $*" >&2
		return 1
	fi
	awk "BEGIN { exit !($*) }"
}

# calc EXPR: prints the value of the awk expression EXPR, with six
# decimals (awk's own print would write a large sum as 1.76e+12).
calc() {
	awk "BEGIN { printf \"%.6f\\n\", ($*) }"
}

# A TCP port nobody listens on (checked by trying to connect).
# unlabel_model: /metrics text (stdin) with every series' model_name
# label left out. Every series carries model_name="NAME" (as vLLM's:
# docs/API.md "GET /metrics"), so tests name a series NAME or
# NAME{label="v"} and metrics.bats checks the label itself.
unlabel_model() {
	sed -E 's/\{model_name="([^"\\]|\\.)*"\}//; s/\{model_name="([^"\\]|\\.)*",/{/'
}

free_port() {
	local p i
	for i in $(seq 1 50); do
		# below the kernel's ephemeral range (32768-60999 here): a
		# port that is the local end of some client's connection
		# refuses a connect but cannot be bound either
		p=$(( 10000 + (RANDOM * 32768 + RANDOM) % 22000 ))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# ts_start [responder options...]: starts the stack; sets BASE, RUNDIR.
# TS_PROCS (default 1) responder processes; TS_RUNDIR a run directory
# (default: a new one under bats' temp directory).
ts_start() {
	local tries
	RUNDIR=${TS_RUNDIR:-$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/ts.XXXXXX")}
	mkdir -p "$RUNDIR"
	for tries in 1 2 3; do
		PORT=$(free_port)
		if TOKSTREAM_PORT=$PORT TOKSTREAM_RUNDIR=$RUNDIR \
		   TOKSTREAM_PROCS=${TS_PROCS:-1} \
		   TOKSTREAM_BINDIR=${TS_BINDIR:-$TS_BUILDDIR/src} \
		   TOKSTREAM_SITECONF=${TOKSTREAM_SITECONF:-$TS_SRCDIR/etc/tokstream-site.conf} \
		   TOKSTREAM_FCGI_ARGS="$*" "$CTL" start >>"$RUNDIR/ctl.log" 2>&1; then
			BASE=http://127.0.0.1:$PORT
			export BASE RUNDIR PORT
			return 0
		fi
		ts_stop
	done
	echo "could not start tokstream; logs:" >&2
	cat "$RUNDIR"/*.log >&2 || true
	return 1
}

ts_stop() {
	[ -n "${RUNDIR:-}" ] || return 0
	TOKSTREAM_PORT=${PORT:-0} TOKSTREAM_RUNDIR=$RUNDIR "$CTL" stop \
		>/dev/null 2>&1 || true
}

# debug_field ID FIELD: one top-level field of /_debug/generated?id=ID
# ("null" prints as empty)
debug_field() {
	curl -s "$BASE/_debug/generated?id=$1" | jq -r ".$2 // empty"
}

# wait_not_running ID: polls until the stream has ended (10 s max).
wait_not_running() {
	local i
	for i in $(seq 1 500); do
		[ "$(debug_field "$1" status)" != running ] && return 0
		sleep 0.02
	done
	return 1
}

# Header value from a curl -D dump file: header_of FILE NAME
header_of() {
	tr -d '\r' < "$1" | sed -n "s/^$2: //Ip" | tail -n 1
}

# need_node MODULE...: the TS_REQUIRE_NODE rule of the real-client tests
# (resume.bats): returns 0 when node and tests/node/node_modules/MODULE
# are there; otherwise fails the test when TS_REQUIRE_NODE=1 (scripts/check
# has installed them, so they must run), or skips it with the reason.
need_node() {
	local m missing=""
	command -v node >/dev/null || missing=" node"
	for m in "$@"; do
		[ -d "$TS_SRCDIR/tests/node/node_modules/$m" ] ||
			missing="$missing tests/node/node_modules/$m"
	done
	[ -z "$missing" ] && return 0
	if [ "${TS_REQUIRE_NODE:-0}" = 1 ]; then
		echo "missing:$missing; run 'npm ci' in tests/node" \
		     "(TS_REQUIRE_NODE=1)" >&2
		return 1
	fi
	skip "missing:$missing (npm ci in tests/node)"
}

# need_chromium: the same rule for Debian's chromium (CHROMIUM, default
# /usr/bin/chromium), which scripts/deps.sh installs.
need_chromium() {
	[ -x "${CHROMIUM:-/usr/bin/chromium}" ] && return 0
	if [ "${TS_REQUIRE_NODE:-0}" = 1 ]; then
		echo "${CHROMIUM:-/usr/bin/chromium} is missing: apt-get" \
		     "install chromium (TS_REQUIRE_NODE=1)" >&2
		return 1
	fi
	skip "${CHROMIUM:-/usr/bin/chromium} is missing (apt-get install chromium)"
}

# need_command CMD PACKAGE: the same rule for a Debian package's program
# that scripts/deps.sh installs for the tests (haproxy, prometheus)
need_command() {
	command -v "$1" >/dev/null && return 0
	if [ "${TS_REQUIRE_NODE:-0}" = 1 ]; then
		echo "$1 is missing: apt-get install $2 (TS_REQUIRE_NODE=1)" >&2
		return 1
	fi
	skip "$1 is not installed (apt-get install $2; scripts/deps.sh does)"
}

# heavy_alone: for a bats file that loads the whole machine (hundreds of
# streams at once) and asserts what its streams feel: it runs alone among
# the files that call it. `make -j2 check` runs two files at once, and two
# such files beside each other starve both (under ASan: capacity.bats'
# 200 stallers beside load-v1.bats' 100 streams, in a fresh Debian 12
# root's pass 2 on 2026-12-02). Called first in setup_file; the lock is
# the file process's descriptor 9, let go when that process ends.
heavy_alone() {
	exec 9>>"${TS_BUILDDIR:-${BATS_RUN_TMPDIR:-/tmp}}/heavy-tests.lock"
	flock 9
}
