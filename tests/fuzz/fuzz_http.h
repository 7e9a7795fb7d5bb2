/*
 * fuzz_http.h - checks shared by fuzz_query.c and fuzz_json.c.
 */
#ifndef TS_TESTS_FUZZ_FUZZ_HTTP_H
#define TS_TESTS_FUZZ_FUZZ_HTTP_H

#include <stddef.h>

#include "proto/http.h"

/* The integer request parameters and their documented caps and error
 * codes (docs/API.md "Request parameters"), as the fuzz models know them. */
struct fuzz_int_param {
	const char *name;
	long max;
	const char *code;
};
extern const struct fuzz_int_param fuzz_int_params[4];

/* True when (s, len) is valid UTF-8 (jansson's own check). */
int fuzz_is_utf8(const char *s, size_t len);

/*
 * http_error_json must give {"error":{"message","type","code"}} that
 * jansson loads back: the same type and code, and the message itself
 * unless it is not UTF-8 (it can quote input; then a generic one).
 * Aborts on a violation.
 */
void fuzz_check_error_json(const struct http_error *err);

#endif /* TS_TESTS_FUZZ_FUZZ_HTTP_H */
