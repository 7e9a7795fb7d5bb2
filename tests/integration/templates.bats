#!/usr/bin/env bats
# Chat templates rendered by src/jinja (tests/jinja_render) and by
# @huggingface/jinja (npm, tests/node/jinja-render.mjs: the renderer of
# Transformers.js' apply_chat_template), byte for byte: the published
# templates of eight families (tests/data/templates/*.jinja; README.md
# there names each one's source) with the message sets of
# tests/data/templates/ctx/*.json, the same raise_exception() errors,
# and the language pieces of tests/data/templates/lang/features.jinja.
# No server: both renderers read the same two files.

load helpers

TPL=$TS_SRCDIR/tests/data/templates
RENDER=$TS_BUILDDIR/tests/jinja_render

# render_both TEMPLATE CONTEXT: runs both renderers into $BATS_TEST_TMPDIR
# (js.out, js.err, c.out, c.err) and sets JS_RC and C_RC. strftime_now()
# reads the same fixed clock in both (26 Jul 2024, UTC).
render_both() {
	local tpl=$1 ctx=$2
	JS_RC=0
	C_RC=0
	TZ=UTC timeout 30 node "$TS_SRCDIR/tests/node/jinja-render.mjs" \
		"$tpl" "$ctx" >"$BATS_TEST_TMPDIR/js.out" \
		2>"$BATS_TEST_TMPDIR/js.err" || JS_RC=$?
	timeout 30 "$RENDER" "$tpl" "$ctx" >"$BATS_TEST_TMPDIR/c.out" \
		2>"$BATS_TEST_TMPDIR/c.err" || C_RC=$?
}

# same FAMILY CTX...: for each message set, both render it, and the
# bytes are the same (and not empty).
same() {
	local family=$1 ctx
	shift
	for ctx in "$@"; do
		render_both "$TPL/$family.jinja" "$TPL/ctx/$ctx.json"
		if [ "$JS_RC" -ne 0 ] || [ "$C_RC" -ne 0 ]; then
			echo "$family $ctx: @huggingface/jinja exit $JS_RC" \
			    "($(cat "$BATS_TEST_TMPDIR/js.err")), src/jinja exit" \
			    "$C_RC ($(cat "$BATS_TEST_TMPDIR/c.err"))"
			return 1
		fi
		[ -s "$BATS_TEST_TMPDIR/js.out" ] || {
			echo "$family $ctx: empty output"
			return 1
		}
		if ! cmp "$BATS_TEST_TMPDIR/js.out" "$BATS_TEST_TMPDIR/c.out"
		then
			echo "$family $ctx differs; @huggingface/jinja:"
			cat -A "$BATS_TEST_TMPDIR/js.out"
			echo "src/jinja:"
			cat -A "$BATS_TEST_TMPDIR/c.out"
			return 1
		fi
	done
}

# raises FAMILY CTX MESSAGE: both refuse the set, with the message the
# template's raise_exception() gives, and print nothing.
raises() {
	render_both "$TPL/$1.jinja" "$TPL/ctx/$2.json"
	echo "js: $JS_RC $(cat "$BATS_TEST_TMPDIR/js.err")"
	echo "c: $C_RC $(cat "$BATS_TEST_TMPDIR/c.err")"
	[ "$JS_RC" -eq 1 ]
	[ "$C_RC" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/js.err")" = \
	    "render: template raised: $3" ]
	[ "$(cat "$BATS_TEST_TMPDIR/c.err")" = \
	    "render: template raised: $3" ]
	[ ! -s "$BATS_TEST_TMPDIR/c.out" ]
}

@test "Llama 2 chat: system+user, user, multi-turn, special characters, tools ignored: the same bytes" {
	need_node @huggingface/jinja
	same llama-2-chat sys-user user multi multi-sys special date-string tools
}

@test "Llama 2 chat: roles that do not alternate raise the template's error in both" {
	need_node @huggingface/jinja
	raises llama-2-chat alternate-error \
	    "Conversation roles must alternate user/assistant/user/assistant/..."
}

@test "Llama 3 Instruct: every message set, with and without the generation prompt: the same bytes" {
	need_node @huggingface/jinja
	same llama-3-instruct sys-user user multi multi-sys special
}

@test "Llama 3.1 Instruct: plain sets, tools in the user message (tojson indent=4), tool calls and results, date_string: the same bytes" {
	need_node @huggingface/jinja
	same llama-3.1-instruct sys-user user multi multi-sys special tools \
	    tool-calls date-string
	grep -q '^Today Date: 06 Dec 2026$' "$BATS_TEST_TMPDIR/c.out"
}

@test "TinyLlama chat (Zephyr's format): every message set: the same bytes" {
	need_node @huggingface/jinja
	same tinyllama-chat sys-user user multi multi-sys special
}

@test "Mistral Instruct v0.1: user and multi-turn the same; a system role after a user and non-alternating roles raise the template's errors" {
	need_node @huggingface/jinja
	same mistral-instruct-v0.1 user multi date-string
	raises mistral-instruct-v0.1 other-role \
	    "Only user and assistant roles are supported!"
	raises mistral-instruct-v0.1 alternate-error \
	    "Conversation roles must alternate user/assistant/user/assistant/..."
}

@test "Mistral Instruct v0.3: plain sets, [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS]: the same bytes; non-alternating roles raise" {
	need_node @huggingface/jinja
	same mistral-instruct-v0.3 sys-user user multi multi-sys special \
	    tools tool-calls
	grep -q 'TOOL_CALLS' "$BATS_TEST_TMPDIR/c.out"
	raises mistral-instruct-v0.3 alternate-error \
	    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."
}

@test "Qwen2.5 Instruct (ChatML): plain sets, tools, tool calls and tool responses: the same bytes" {
	need_node @huggingface/jinja
	same qwen2.5-instruct sys-user user multi multi-sys special tools \
	    tool-calls
	grep -q '<tool_response>' "$BATS_TEST_TMPDIR/c.out"
}

@test "SmolLM2 Instruct (ChatML with a default system prompt): every message set: the same bytes" {
	need_node @huggingface/jinja
	same smollm2-instruct sys-user user multi multi-sys special
}

@test "the language pieces (loops, set, namespace, operators, slices, tests, filters, tojson, methods, strftime_now, whitespace control): the same bytes" {
	need_node @huggingface/jinja
	render_both "$TPL/lang/features.jinja" "$TPL/lang/features.json"
	cat "$BATS_TEST_TMPDIR/js.err" "$BATS_TEST_TMPDIR/c.err"
	[ "$JS_RC" -eq 0 ]
	[ "$C_RC" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/js.out" "$BATS_TEST_TMPDIR/c.out"
	grep -q '^2024-07-26 00:00 Jul July % 26 Jul 2024' "$BATS_TEST_TMPDIR/c.out"
}

@test "the comparison catches a one-byte difference: a template changed by one space renders apart" {
	need_node @huggingface/jinja
	sed 's/\[INST\] /[INST]  /' "$TPL/llama-2-chat.jinja" \
	    >"$BATS_TEST_TMPDIR/changed.jinja"
	TZ=UTC node "$TS_SRCDIR/tests/node/jinja-render.mjs" \
	    "$TPL/llama-2-chat.jinja" "$TPL/ctx/multi.json" \
	    >"$BATS_TEST_TMPDIR/js.out"
	"$RENDER" "$BATS_TEST_TMPDIR/changed.jinja" "$TPL/ctx/multi.json" \
	    >"$BATS_TEST_TMPDIR/c.out"
	! cmp -s "$BATS_TEST_TMPDIR/js.out" "$BATS_TEST_TMPDIR/c.out" || false
}
