/*
 * handlers/ollama.h - Ollama's API (ollama.c; docs/API.md "Ollama API").
 */
#ifndef TS_HANDLERS_OLLAMA_H
#define TS_HANDLERS_OLLAMA_H

#include "ollama/parse.h"   /* enum ollama_kind */

struct http_error;
struct reply;
struct server;

/* POST /api/chat (OLLAMA_CHAT) and POST /api/generate (OLLAMA_GENERATE):
 * an NDJSON stream of objects, or one object with "stream": false. */
void ollama_generate(struct server *srv, struct reply *rp,
    enum ollama_kind kind);

/* GET /api/tags (ps 0) and GET /api/ps (ps 1): the served names. */
void ollama_models(struct server *srv, struct reply *rp, int ps);

/* POST /api/show {"model"}: the model's details, or 404. */
void ollama_show(struct server *srv, struct reply *rp);

/* GET /api/version. */
void ollama_version(struct server *srv, struct reply *rp);

/* An error answered before anything else was sent, in Ollama's shape
 * {"error":"..."} with err->status (the routes' errors on /api/ paths);
 * extra: header lines, or NULL. */
void ollama_fail(struct reply *rp, const struct http_error *err,
    const char *extra);

#endif /* TS_HANDLERS_OLLAMA_H */
