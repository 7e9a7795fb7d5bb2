/*
 * jinja/jinja.h - a Jinja subset interpreter for chat templates: the
 * tokenizer_config.json `chat_template` of a Hugging Face model folder, a
 * GGUF file's `tokenizer.chat_template`. Knows common/ only.
 *
 * It follows @huggingface/jinja (the renderer of Transformers.js'
 * apply_chat_template; src/lexer.ts, src/parser.ts, src/runtime.ts of
 * version 0.5.13) byte for byte on the templates of the families
 * tests/integration/templates.bats renders: trim_blocks and lstrip_blocks
 * on, one trailing newline of the template dropped, `{{ none }}` and
 * undefined print nothing, a list or dict prints as JSON, a boolean as
 * "true"/"false". docs/API.md "Chat templates" lists what is supported
 * and what is refused.
 */
#ifndef TS_JINJA_JINJA_H
#define TS_JINJA_JINJA_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "common/ts.h"

/* The largest template jinja_parse() takes, in bytes. */
#define JINJA_MAX_TEMPLATE (1024u * 1024u)
/* The deepest nesting of blocks ({% if %} in {% for %} ...) and of
 * parentheses, lists and dicts in one expression. */
#define JINJA_MAX_DEPTH 64
/* The deepest nesting of evaluations in a render (an expression inside
 * an expression, a block inside a block, a macro call inside a macro):
 * it bounds the stack a render takes (under 256 KiB, the server's
 * threads' stacks). */
#define JINJA_MAX_FRAMES 500
/* The work one render may do: one step per expression node evaluated,
 * per statement run, per loop iteration and per item range() makes. */
#define JINJA_MAX_STEPS 5000000ul
/* The memory one render may hold for its values (strings, lists, dicts),
 * in bytes, besides the output itself. */
#define JINJA_MAX_MEMORY (64u * 1024u * 1024u)

struct jinja_template;

/*
 * Parses template text (text, len bytes; copied). TS_OK with *out set
 * (caller frees with jinja_free), or TS_EFORMAT with err (errlen bytes,
 * NUL-terminated) such as "line 3, column 12: unexpected 'endfor'" (line
 * and column count from 1, the column in bytes); TS_ELIMIT when len is
 * over JINJA_MAX_TEMPLATE or blocks or expressions nest deeper than
 * JINJA_MAX_DEPTH. A template is read-only once parsed: several threads
 * may render it at once.
 */
enum ts_err jinja_parse(struct jinja_template **out, const char *text,
    size_t len, char *err, size_t errlen);

/*
 * Renders t with the variables of ctx (a JSON object, borrowed: messages,
 * add_generation_prompt, bos_token, eos_token, tools, ... any key; a key
 * that names a global such as "range" is refused as @huggingface/jinja
 * refuses it). On TS_OK *out is a malloc'd NUL-terminated string of
 * *out_len bytes (caller frees). Errors, with err set: TS_EINVAL for a
 * template that fails at run time ("template raised: MSG" for the
 * template's raise_exception('MSG'), else what went wrong), TS_ELIMIT
 * when the output would pass max_out bytes or the render would pass
 * JINJA_MAX_STEPS, JINJA_MAX_MEMORY or JINJA_MAX_FRAMES (or macro calls
 * JINJA_MAX_DEPTH). strftime_now() reads the clock (UTC).
 */
enum ts_err jinja_render(const struct jinja_template *t, const json_t *ctx,
    size_t max_out, char **out, size_t *out_len, char *err, size_t errlen);

/* jinja_render() with strftime_now() reading `now` (seconds since the
 * epoch, formatted in UTC) instead of the clock: for tests. */
enum ts_err jinja_render_at(const struct jinja_template *t,
    const json_t *ctx, size_t max_out, time_t now, char **out,
    size_t *out_len, char *err, size_t errlen);

/* Frees t; accepts NULL. */
void jinja_free(struct jinja_template *t);

#endif /* TS_JINJA_JINJA_H */
