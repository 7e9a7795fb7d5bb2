#!/usr/bin/env bats
# scripts/check-layers: the tree passes it, and it fails on each kind of
# offence it exists to catch (an include that points up, one sideways
# between two folders of the same rank, a folder of src/ with no row, a
# bare include, a doc table that differs from its own), each in a copy of
# the tree so the real one is never touched.

setup() {
	copy=$BATS_TEST_TMPDIR/tree
	mkdir -p "$copy/scripts" "$copy/docs"
	# the sources only (the tree may hold a build's objects)
	(cd "$TS_SRCDIR" && find src -type f -name '*.[ch]' \
		-exec cp --parents {} "$copy" \;)
	cp "$TS_SRCDIR/scripts/check-layers" "$copy/scripts/"
	cp "$TS_SRCDIR/docs/ARCHITECTURE.md" "$copy/docs/"
}

@test "the tree's includes all point down the table, and the doc draws it" {
	run "$TS_SRCDIR/scripts/check-layers"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "check-layers: ok"* ]]
	# the copy passes too, so each failure below is the edit's own
	run "$copy/scripts/check-layers"
	[ "$status" -eq 0 ]
}

@test "an include that points up fails, naming the file, line and layers" {
	echo '#include "handlers/server.h"' >> "$copy/src/proto/sse.h"
	run "$copy/scripts/check-layers"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/proto/sse.h:"*": proto/ includes handlers/server.h: handlers/ is not below proto/"* ]]
	[[ "$output" == *"check-layers: FAIL"* ]]
}

@test "an include between two backends (the same rank) fails" {
	echo '#include "model/llama.h"' >> "$copy/src/sim/sim.h"
	run "$copy/scripts/check-layers"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"sim/ includes model/llama.h"* ]]
}

@test "a folder with no row, a file outside every folder and a bare include fail" {
	mkdir "$copy/src/gemini"
	echo '#include "openai/encode.h"' > "$copy/src/gemini/encode.c"
	echo 'int x;' > "$copy/src/stray.c"
	echo '#include "buf.h"' >> "$copy/src/common/ts.h"
	run "$copy/scripts/check-layers"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"src/gemini/: not in the table of layers"* ]]
	[[ "$output" == *"src/stray.c: outside every layer"* ]]
	[[ "$output" == *"src/common/ts.h:"*'"buf.h" names no layer'* ]]
}

@test "a layer table in ARCHITECTURE.md that differs from the script's fails" {
	sed -i 's/^| `text\/` | `common\/` |$/| `text\/` | `common\/` `engine\/` |/' \
		"$copy/docs/ARCHITECTURE.md"
	grep -q '`text/` | `common/` `engine/`' "$copy/docs/ARCHITECTURE.md"
	run "$copy/scripts/check-layers"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"docs/ARCHITECTURE.md: the table between"* ]]
}
