/*
 * text.h - text from the network made fit for a terminal or a message:
 * control bytes replaced and long text cut (text_sanitize), the message
 * of a tokstream error object (text_error), and one SSE event's data
 * printed as one line (text_print_escaped). Every message tokbench
 * prints about what a server said goes through here.
 */
#ifndef BENCH_TEXT_H
#define BENCH_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "bench/client.h"

/* Longest server text, in bytes, that a message quotes. */
#define TEXT_MSG_MAX 300

/*
 * Copies network text (s, n) for a message on a terminal: control bytes,
 * NUL included, become '?', and at most TEXT_MSG_MAX bytes are kept
 * ("..." marks a cut). Returns a NUL-terminated string the caller frees.
 */
char *text_sanitize(const char *s, size_t n);

/*
 * Text of a tokstream error object, {"error":{"message":..,"type":..,
 * "code":..}}, as "message (type TYPE, code CODE)", sanitised; a bare
 * string as "error" is its message. Returns NULL when `root` (borrowed;
 * may be NULL) has no "error", else a string the caller frees.
 */
char *text_error(json_t *root);

/*
 * text_error() of an HTTP answer's JSON body (client.h). Returns NULL
 * when the body is empty, was cut, is not JSON or has no "error"; else a
 * string the caller frees.
 */
char *text_error_body(const struct client_body *b);

/*
 * Writes (s, n) to f with C-style escapes for control bytes, so that one
 * SSE event (multi-line data included) prints as one line. Backslashes
 * are left alone: tokstream's data is one line of JSON, which then prints
 * as is (e.g. for jq).
 */
void text_print_escaped(FILE *f, const char *s, size_t n);

#endif /* BENCH_TEXT_H */
