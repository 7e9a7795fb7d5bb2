/*
 * server/v1.h - the OpenAI-compatible endpoints (v1.c).
 */
#ifndef TS_SERVER_V1_H
#define TS_SERVER_V1_H

#include "openai/openai.h"   /* enum openai_kind */

struct reply;
struct server;

/* POST /v1/completions (OPENAI_COMPLETIONS), /v1/chat/completions. */
void v1_generate(struct server *srv, struct reply *rp,
    enum openai_kind kind);

/* GET /v1/models. */
void v1_models(struct server *srv, struct reply *rp);

#endif /* TS_SERVER_V1_H */
