/*
 * openai/openai.h - what the OpenAI-compatible API's parser (parse.h) and
 * encoders (encode.h) share: the documented limits, which endpoint, why
 * generation ended. Pure modules: no sockets, no libfcgi, no engine; the
 * server's v1.c does the I/O and the engine the generation.
 *
 * Wire format: the OpenAI API reference, "Completions" (legacy), "Chat
 * Completions" (create, the chat completion object, the chunk object,
 * stream_options.include_usage), "Responses" (create, the response
 * object, its streaming events; text output) and "Models" (list,
 * retrieve); vLLM's OpenAI
 * server for the extension ignore_eos, max_completion_tokens beating
 * max_tokens, and model-not-found being a 404.
 */
#ifndef TS_OPENAI_OPENAI_H
#define TS_OPENAI_OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "proto/http.h"

/* Documented limits and defaults (docs/API.md "OpenAI API"). */
#define OPENAI_MAX_TOKENS_CAP HTTP_MAX_TOKENS_CAP   /* max_tokens: 8192 */
#define OPENAI_COMPLETIONS_DEFAULT_MAX_TOKENS 16    /* as OpenAI's */
#define OPENAI_CHAT_DEFAULT_MAX_TOKENS 256          /* tokstream's choice,
						     * also /v1/responses' */
#define OPENAI_MAX_MESSAGES 256            /* chat messages per request */
#define OPENAI_MAX_CONTENT_PARTS 256       /* text parts per message */
#define OPENAI_MAX_CONTENT_BYTES (1u << 20) /* prompt, or all content */
#define OPENAI_MAX_STOP 4                  /* stop sequences, as OpenAI */
#define OPENAI_MAX_STOP_BYTES 64           /* bytes per stop sequence */
#define OPENAI_MAX_N 16                    /* choices per request ("n") */
#define OPENAI_MAX_DEPTH HTTP_MAX_JSON_DEPTH /* nesting of a body's arrays
					    * and objects: every endpoint's */
#define OPENAI_MAX_TOOLS 128               /* tools per request, as OpenAI */
#define OPENAI_MAX_TOOL_NAME 64            /* a function name's bytes */
#define OPENAI_MAX_TOP_LOGPROBS 20         /* chat top_logprobs, as OpenAI */
#define OPENAI_MAX_COMPLETION_LOGPROBS 5   /* completions logprobs, as
					    * OpenAI */

/* Which endpoint a body was sent to. */
enum openai_kind {
	OPENAI_COMPLETIONS,      /* POST /v1/completions */
	OPENAI_CHAT,             /* POST /v1/chat/completions */
	OPENAI_RESPONSES         /* POST /v1/responses (text output) */
};

/* A chat message's author. "developer" is parsed as OPENAI_ROLE_SYSTEM
 * (OpenAI's newer name for system instructions). */
enum openai_role {
	OPENAI_ROLE_SYSTEM,
	OPENAI_ROLE_USER,
	OPENAI_ROLE_ASSISTANT,
	OPENAI_ROLE_TOOL          /* a tool's result (chat; tool_call_id) */
};

/* Why generation ended: "stop" (EOS or a stop sequence), "length"
 * (max_tokens reached). */
enum openai_finish {
	OPENAI_FINISH_STOP,
	OPENAI_FINISH_LENGTH,
	OPENAI_FINISH_TOOL_CALLS  /* "tool_calls": the answer is tool calls */
};

#endif /* TS_OPENAI_OPENAI_H */
