/*
 * handlers/resume.c - where a resumed stream starts (resume.h).
 */
#include "handlers/resume.h"

#include <string.h>

#include "proto/resume.h"
#include "stores/state.h"

int
resume_decide(struct server *srv, const char *s, size_t len, uint64_t key,
    uint64_t rec_key, uint32_t max_tokens, int32_t error_after, const char *params,
    struct resume_start *out, struct http_error *err)
{
	uint64_t last;
	struct resume_id id;
	struct state_record rec;
	const char *why;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return 0;       /* an empty Last-Event-ID resumes nothing */
	if (resume_id_parse(s, len, &id, &why) != TS_OK) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_last_event_id", "the last event id is not a "
		    "tokstream event id: %s", why);
		return 400;
	}
	if (id.key != key) {
		http_error_set(err, 400, "invalid_request_error",
		    "foreign_last_event_id", "the last event id belongs to a "
		    "stream with other parameters (%s); resume with the same "
		    "request", params);
		return 400;
	}
	if (id.index == RESUME_INDEX_END)
		return 204;
	/* The last index this request can send: max_tokens - 1, or the
	 * one before an injected error. */
	last = max_tokens == 0 ? 0 : max_tokens - 1u;
	if (error_after >= 0 && (uint64_t)error_after <= last)
		last = error_after == 0 ? 0 : (uint64_t)error_after - 1;
	if (max_tokens == 0 || error_after == 0 || id.index > last) {
		http_error_set(err, 400, "invalid_request_error",
		    "invalid_last_event_id", "the last event id names token "
		    "%llu, which this request never sends",
		    (unsigned long long)id.index);
		return 400;
	}
	if (id.index + 1 >= max_tokens)
		return 204;
	out->start = (uint32_t)(id.index + 1);
	if (id.instance != srv->opt->instance) {
		if (id.instance != 0) {      /* an unnamed server's: no link */
			out->from = id.stream;
			out->from_inst = id.instance;
		}
		return 0;
	}
	if (state_lookup(srv->state, id.stream, &rec) == TS_OK &&
	    rec.kind == STATE_KIND_STREAM && rec.key == rec_key)
		out->from = id.stream;
	return 0;
}
