#!/bin/sh
# tests/valgrind-verdict.sh DIR - reads the memcheck logs that `make
# valgrind` left in DIR and fails unless every one reports zero errors and
# zero bytes definitely lost. Prints one line per log and a summary.
dir=$1
n=0
bad=0
for f in "$dir"/vg.*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$f" | tr -d ,)
	lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tr -d ,)
	echo "$(basename "$f"): errors=${errors:-?} definitely_lost=${lost:-0}"
	if [ "${errors:-1}" != 0 ] || [ "${lost:-0}" != 0 ]; then
		bad=$((bad + 1))
		sed -n '/==[0-9]*== [A-Z].*\(Invalid\|uninitialised\|definitely\)/,+12p' "$f" | head -n 40
	fi
done
if [ $n -eq 0 ]; then
	echo "valgrind: no memcheck log found in $dir"
	exit 1
fi
echo "valgrind: $n responder processes, $bad with errors or definite leaks"
[ $bad -eq 0 ]
