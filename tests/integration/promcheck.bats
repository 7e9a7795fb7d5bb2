#!/usr/bin/env bats
# The Prometheus text format checker (tests/promcheck.c) on the cases of
# tests/data/promcheck/<case>/{input,expected}: `expected` is exactly
# what promcheck prints for `input`; empty means it is valid (exit 0),
# otherwise one "input:LINE: ..." line and exit 1. The good-* cases
# include the Prometheus documentation's example and a tokstream render;
# the bad-* cases make sure it fails where it should, naming the line.

TS_SRCDIR=${TS_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
TS_BUILDDIR=${TS_BUILDDIR:-$TS_SRCDIR}
PROMCHECK=$TS_BUILDDIR/tests/promcheck
CASES=$TS_SRCDIR/tests/data/promcheck

# check_case DIR: runs promcheck on DIR/input, compares with DIR/expected.
check_case() {
	local want
	want=$(cat "$1/expected")
	run bash -c 'cd "$1" && exec "$2" input' _ "$1" "$PROMCHECK"
	if [ -z "$want" ]; then
		[ "$status" -eq 0 ] || {
			echo "$1: exit $status: $output"
			return 1
		}
	else
		[ "$status" -eq 1 ] || {
			echo "$1: exit $status, want 1"
			return 1
		}
	fi
	[ "$output" = "$want" ] || {
		echo "$1: got:  $output"
		echo "$1: want: $want"
		return 1
	}
}

@test "promcheck accepts every good case" {
	local d n=0
	for d in "$CASES"/good-*/; do
		check_case "${d%/}"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "promcheck refuses every bad case with its line and reason" {
	local d n=0
	for d in "$CASES"/bad-*/; do
		check_case "${d%/}"
		n=$((n + 1))
	done
	[ "$n" -ge 40 ]
}

@test "promcheck reads standard input and names it" {
	run bash -c 'printf "a 1\nb x\n" | "$1"' _ "$PROMCHECK"
	[ "$status" -eq 1 ]
	[ "$output" = '(stdin):2: value "x" is not a float' ]
	run bash -c 'printf "a 1\n" | "$1" -' _ "$PROMCHECK"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "promcheck: usage and read errors exit 2" {
	run "$PROMCHECK" -x
	[ "$status" -eq 2 ]
	run "$PROMCHECK" a b
	[ "$status" -eq 2 ]
	run "$PROMCHECK" "$CASES/no-such-case/input"
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot open"* ]]
}
