/*
 * openai/cost.h - what a /v1 request may cost before it is run: the
 * upper bound of its answer's encoded size when it is not streamed
 * (docs/API.md "What a request may cost"), from its parameters and the
 * worst token of the backend's vocabulary, so that an answer that could
 * outgrow the buffer it is encoded into is refused with a 400 before
 * anything is queued or generated. Pure: no I/O.
 */
#ifndef TS_OPENAI_COST_H
#define TS_OPENAI_COST_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "openai/parse.h"
#include "proto/http_error.h"

/* The most bytes a non-streamed /v1 answer may have (its status line and
 * headers apart): a request whose answer could be larger is a 400
 * answer_too_large. Below the I/O thread's 8 MiB output buffer, which
 * holds the whole answer and its head. */
#define OPENAI_MAX_ANSWER_BYTES 8000000u

/* The longest a JSON real of a logprob can be: jansson prints %.17g
 * ("-1.2345678901234567e-38"; a float's exponent has two digits) and
 * adds ".0" to an integral value ("-9999.0"). */
#define OPENAI_LOGPROB_BYTES 24u

/*
 * The worst-case JSON bytes of one token of a vocabulary, as the /v1
 * encoders write it (encode.c; jansson's escapes, dump.c dump_string:
 * \" \\ \b \f \n \r \t, \u00XX for other control characters, everything
 * else as it is).
 */
struct openai_token_cost {
	/* Its released text inside a JSON string ("content", "text",
	 * "arguments"): 1 byte per byte, 2 for " and \, up to 6 for a
	 * control character; a token that is not UTF-8 by itself may have
	 * its bytes of 0x80 and over repaired to U+FFFD (text/utf8.h), 3
	 * bytes each. */
	uint32_t text;
	/* Its chat logprobs entry {"token","logprob","bytes"} (logprob at
	 * OPENAI_LOGPROB_BYTES). */
	uint32_t lp_entry;
	/* Its "token" string with quotes (a JSON string, or OpenAI's
	 * "bytes:\\xNN" form for a text that is not UTF-8), as completions
	 * logprobs list it and key its alternatives. */
	uint32_t lp_token;
};

/*
 * The costs of be's tokens: the maxima over ids 0..be->vocab_size - 1 and
 * its EOS ids, by be->token_text; with no vocab_size (0), the worst any
 * text of be->max_token_bytes bytes can cost.
 */
void openai_token_cost_of(const struct engine_backend *be,
    struct openai_token_cost *tc);

/*
 * An upper bound, in bytes, of the JSON answer to req when it is not
 * streamed, whatever is generated (the response object of encode.h or
 * responses.h, without the HTTP head): n choices of max_tokens tokens at
 * tc's worst, each with its logprobs and up to OPENAI_PLAN_MAX_CALLS tool
 * calls, the model's name at model_len bytes; for /v1/responses the echo
 * of its instructions and tools too. *param (when not NULL) names the
 * request field whose part of the bound is largest ("top_logprobs",
 * "logprobs", "max_tokens", "max_output_tokens", "instructions",
 * "tools").
 */
uint64_t openai_answer_bound(const struct openai_request *req,
    const struct openai_token_cost *tc, size_t model_len,
    const char **param);

/*
 * Refuses a request whose answer is not streamed and could be over
 * OPENAI_MAX_ANSWER_BYTES (openai_answer_bound): TS_ELIMIT with *err a
 * 400 answer_too_large whose param is the largest part and whose message
 * gives the bound, the limit and the fields to lower (n, max_tokens,
 * top_logprobs or logprobs, as they apply) or stream: true. TS_OK for a
 * streamed request or one within the limit.
 */
enum ts_err openai_answer_check(const struct openai_request *req,
    const struct openai_token_cost *tc, size_t model_len,
    struct http_error *err);

#endif /* TS_OPENAI_COST_H */
