#!/bin/sh
# run-corpus.sh DRIVER - the TAP face of a plain fuzz driver for
# `make check`: runs DRIVER (tests/fuzz/<target>.fuzz, built with
# driver.c) over tests/fuzz/corpus/<target>/ and prints "1..1" and
# "ok 1 - <target>: N inputs ok", or "not ok 1" with the driver's output
# (the violated property and the input it was running) as TAP comments.
# TS_SRCDIR (set by Makefile.am) locates the corpus in a VPATH build.
set -u
prog=$1
target=$(basename "$prog")
target=${target%.fuzz}
top=${TS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
corpus=$top/tests/fuzz/corpus/$target

echo "1..1"
out=$("$prog" "$corpus" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
if [ $rc -eq 0 ]; then
	echo "ok 1 - $target: ${out##*fuzz-driver: }"
else
	echo "not ok 1 - $target: exit $rc over $corpus"
fi
