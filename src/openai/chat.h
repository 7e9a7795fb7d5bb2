/*
 * openai/chat.h - the chat template (proto/chat.h) over a /v1 request:
 * how /v1/chat/completions turns a list of messages into the prompt text
 * the model (sim/lm.h) continues. No I/O.
 *
 * The template is proto/chat.h's: with "tools" the request's tools
 * array (compact JSON) comes first, a tool's result is a "<|tool|>"
 * message, and an assistant turn of tool calls has its tool_calls array
 * (compact JSON) on a line after its content, so all of it counts as
 * prompt tokens.
 */
#ifndef TS_OPENAI_CHAT_H
#define TS_OPENAI_CHAT_H

#include <stddef.h>

#include "common/buf.h"
#include "common/ts.h"
#include "openai/parse.h"
#include "proto/chat.h"

/*
 * Appends the prompt of a chat (or Responses API) request rendered with
 * tokstream's chat template (proto/chat.h, CHAT_TEMPLATE): for each
 * message "<|ROLE|>\nCONTENT\n" (ROLE system, user or assistant), then
 * the generation prompt "<|assistant|>\n" to start the answer.
 * TS_EINVAL for a request without messages (completions); TS_ELIMIT if
 * the buffer's limit would be exceeded (nothing is appended then).
 */
enum ts_err openai_chat_prompt(const struct openai_request *req,
    struct ts_buf *b);

#endif /* TS_OPENAI_CHAT_H */
