/*
 * handlers/submit.h - what every generating endpoint does before it
 * relays: counts the prompt's tokens with the backend (and refuses a
 * prompt longer than its context), queues the request in the engine with
 * its state record, and turns the engine's refusals into answers: 429
 * queue_full (with Retry-After), 503 shutdown, or 400 for what the engine
 * cannot serve.
 */
#ifndef TS_HANDLERS_SUBMIT_H
#define TS_HANDLERS_SUBMIT_H

#include <stdint.h>

#include "engine/engine.h"
#include "proto/http.h"
#include "stores/state.h"

struct conn;
struct server;

/* The fields of the request's state record (state_begin) beyond what
 * the engine request holds. */
struct submit_record {
	enum state_kind kind;
	uint64_t resumed_from;     /* stream id it resumes, 0 if none */
	uint64_t resume_index;     /* its first token index */
	uint64_t key;              /* resume key of its parameters */
	uint64_t from_instance;    /* resumed_from's instance when it is
				    * another host's (resume.h), else 0 */
};

/*
 * Sets job->prompt_tokens from the backend's count of (prompt,
 * prompt_len); a prompt that, with `more` tokens to recompute (a resumed
 * stream), does not fit the model's context is refused. Returns 0, or 400
 * with *err filled (OpenAI's code context_length_exceeded).
 */
int submit_count_prompt(struct server *srv, struct engine_request *job,
    uint64_t more, struct http_error *err);

/*
 * Queues job for the connection c (engine_seq_user gives c back) with the
 * record rec. Returns TS_OK with *s, or engine_submit's error with *err
 * filled: TS_ELIMIT 429 queue_full when the waiting queue is full,
 * TS_ESHUTDOWN 503 shutdown when the server is stopping, TS_EINVAL 400
 * saying what the engine refused (engine_refusal: logprobs or a guide the
 * backend cannot serve, "unsupported_parameter"; an empty, too long or
 * not UTF-8 stop string, "invalid_value" with param "stop"); any other
 * error 500.
 */
enum ts_err submit(struct server *srv, struct engine_request *job,
    const struct submit_record *rec, struct conn *c,
    struct engine_seq **s, struct http_error *err);

#endif /* TS_HANDLERS_SUBMIT_H */
