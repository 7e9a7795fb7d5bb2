/*
 * handlers/v1.h - the OpenAI-compatible endpoints (v1.c).
 */
#ifndef TS_HANDLERS_V1_H
#define TS_HANDLERS_V1_H

#include "openai/openai.h"   /* enum openai_kind */

struct reply;
struct server;

/* POST /v1/completions (OPENAI_COMPLETIONS), /v1/chat/completions
 * (OPENAI_CHAT), /v1/responses (OPENAI_RESPONSES). */
void v1_generate(struct server *srv, struct reply *rp,
    enum openai_kind kind);

/* GET /v1/models: every served name (OpenAI API reference, "List
 * models"). */
void v1_models(struct server *srv, struct reply *rp);

/* GET /v1/models/{model} (OpenAI API reference, "Retrieve model"): the
 * model object when (id, len), the decoded path segment, is a served
 * name, else 404 model_not_found in OpenAI's error shape. */
void v1_model(struct server *srv, struct reply *rp, const char *id,
    size_t len);

#endif /* TS_HANDLERS_V1_H */
