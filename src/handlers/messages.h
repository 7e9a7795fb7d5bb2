/*
 * handlers/messages.h - Anthropic's Messages API (docs/API.md "Anthropic
 * Messages API"): POST /v1/messages, answered as one Message object or
 * streamed as its named SSE events, and POST /v1/messages/count_tokens.
 * Parsing and encoding are src/anthropic/'s; the request runs through the
 * engine as a /v1 request does (handlers/v1.c).
 */
#ifndef TS_HANDLERS_MESSAGES_H
#define TS_HANDLERS_MESSAGES_H

struct server;
struct reply;
struct http_error;

/* POST /v1/messages. */
void messages_create(struct server *srv, struct reply *rp);

/* POST /v1/messages/count_tokens: {"input_tokens":N}, N the prompt's
 * tokens as usage counts them (input + cache reads). */
void messages_count_tokens(struct server *srv, struct reply *rp);

/* An error answer in Anthropic's shape {"type":"error","error":{...}}
 * (before any other byte); extra: header lines or NULL. For the routes
 * of /v1/messages (401, 404, 405, 503). */
void messages_fail(struct reply *rp, const struct http_error *err,
    const char *extra);

#endif /* TS_HANDLERS_MESSAGES_H */
