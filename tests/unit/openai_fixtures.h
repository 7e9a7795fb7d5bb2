/*
 * openai_fixtures.h - what the OpenAI API unit tests share (test_openai.c,
 * test_responses.c, test_openai_agent.c, test_tokenize.c): test bodies
 * written with ' for ", the parser over them, and a response's metadata.
 */
#ifndef TS_TESTS_OPENAI_FIXTURES_H
#define TS_TESTS_OPENAI_FIXTURES_H

#include <stddef.h>

#include "openai/encode.h"
#include "openai/parse.h"

#define T(s) s, sizeof(s) - 1
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MODEL "tokstream-sim"
#define CMPL OPENAI_COMPLETIONS
#define CHAT OPENAI_CHAT
#define RESP OPENAI_RESPONSES

/* Pieces of test bodies (' for "): the model, one user message, a
 * prompt. */
#define M "'model':'tokstream-sim'"
#define U "'messages':[{'role':'user','content':'hi'}]"
#define P "'prompt':'hi'"

/* The start of a chunk and of a completion meta() describes, and the
 * usage object of `usage`. */
#define CH_HEAD "{\"id\":\"chatcmpl-42\",\"object\":" \
	"\"chat.completion.chunk\",\"created\":1700000000," \
	"\"model\":\"tokstream-sim\","
#define CM_HEAD "{\"id\":\"cmpl-42\",\"object\":\"text_completion\"," \
	"\"created\":1700000000,\"model\":\"tokstream-sim\","
#define USAGE "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2," \
	"\"total_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":0}}"

static const struct openai_usage usage = { 5, 2, 0, 0, 0 };

/* the served names the parser is given: { MODEL } */
extern const char *const served[1];

/* Fails naming the table row: cmocka's asserts name only the line. */
#define CHECK(i, cond)                                                    \
	do {                                                              \
		if (!(cond))                                              \
			fail_msg("row %zu: %s", (size_t)(i), #cond);      \
	} while (0)

/*
 * The bodies are written with ' for " to stay readable; q() turns them
 * into JSON (no test body needs a literal apostrophe) and sets *len.
 * Caller frees.
 */
char *q(const char *s, size_t *len);

/* openai_parse_request of kind over q(qbody), with `served`. */
enum ts_err parse(enum openai_kind kind, const char *qbody,
    struct openai_request *r, struct http_error *err);

/* A response's metadata: id 42, created 1700000000, MODEL. */
void meta(struct openai_meta *m, enum openai_kind kind);

#endif /* TS_TESTS_OPENAI_FIXTURES_H */
