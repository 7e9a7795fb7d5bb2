/*
 * handlers/resume.h - where a resumed stream starts: the check of the last
 * event id a client sends back (WHATWG HTML 9.2: EventSource's
 * Last-Event-ID header) against the request it resumes, shared by the
 * endpoints whose SSE events carry ids (GET /stream, POST /v1/messages).
 * The id format is proto/resume.h's; docs/API.md "Resuming a stream".
 */
#ifndef TS_HANDLERS_RESUME_H
#define TS_HANDLERS_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "handlers/server.h"
#include "proto/http.h"

/* What a resume decides: the first token index to generate and the
 * stream it resumes. */
struct resume_start {
	uint32_t start;         /* first token index to send; 0: from the
				 * start */
	uint64_t from;          /* the stream resumed, when the state file
				 * confirms it (same key) or another
				 * instance sent the id; else 0 */
	uint64_t from_inst;     /* that instance (packed), else 0 */
};

/*
 * Decides where a stream starts from the last event id (s, len) (len 0:
 * none, the stream starts at token 0). key is the key the id must carry
 * (the RESUME_KEY of this request's generation parameters, or for an id
 * whose key depends on its index that key), rec_key the key this
 * request's streams are recorded with, max_tokens its limit, error_after its
 * injected error's token (-1 none); `params` names those parameters for
 * the 400 ("prompt, max_tokens or error_after"). Returns 0 to stream from
 * out->start; 204 when the stream had already ended (an "end" id, or one
 * of the last token: nothing is generated again); 400 with *err filled
 * (invalid_last_event_id, foreign_last_event_id) for an id that is
 * malformed, belongs to other parameters, or names a token this request
 * could never send. out->from is the stream resumed when the state file
 * holds it with rec_key (kind STATE_KIND_STREAM); for an id another
 * instance sent (docs/OPERATIONS.md "Several hosts") it cannot be checked
 * here: out->from is its stream and out->from_inst its instance.
 */
int resume_decide(struct server *srv, const char *s, size_t len,
    uint64_t key, uint64_t rec_key, uint32_t max_tokens, int32_t error_after,
    const char *params, struct resume_start *out, struct http_error *err);

#endif /* TS_HANDLERS_RESUME_H */
