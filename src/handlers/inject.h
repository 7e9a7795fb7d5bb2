/*
 * handlers/inject.h - failure injection for gateway testing: which /v1
 * requests fail and how (llm-d-inference-sim's --failure-injection-rate
 * and --failure-types, extended with 503s, timeouts and failures in the
 * middle of a stream). No I/O: the module decides, fills error bodies
 * and fits the engine request; the handlers act on the decision.
 *
 * The server asks once per request (inject_request), after parsing and
 * auth, before submitting to the engine: the request's X-Tokstream-Failure header
 * (inject_parse_header) when it carries one and the server honours it
 * (--allow-failure-header; without it the header is a 400), else the
 * seeded draw of inject_decide for the request's number n. What each
 * kind means, and what the server does with it (the kinds' names are the
 * public interface: option values, header values, the /metrics label):
 *
 *   rate_limit       429 type "requests", code "rate_limit_exceeded"
 *                    (OpenAI's), and "Retry-After: retry_after_s".
 *   server_error     500 type and code "server_error", OpenAI's message.
 *   overloaded       503 type "server_error", code "overloaded".
 *   context_length   400 type "invalid_request_error", param "messages",
 *                    code "context_length_exceeded", OpenAI's message.
 *   invalid_api_key  401 type "invalid_request_error", code
 *                    "invalid_api_key"; the server adds
 *                    "WWW-Authenticate: Bearer" as for a real bad key.
 *   timeout          no answer at all: the server holds the request
 *                    until the client gives up (hangs up).
 *   midstream_error  the stream starts normally; after K tokens an SSE
 *                    error event, then [DONE] (the server's error_after
 *                    knob with K).
 *   midstream_cut    the stream starts; after K tokens the connection is
 *                    closed without an error event or [DONE].
 *
 * A non-streaming request cannot fail in the middle, so the two midstream
 * kinds become, for it: midstream_error -> a 500 server_error (the body
 * inject_error gives for INJECT_SERVER_ERROR) once the time K tokens take
 * has passed; midstream_cut -> the connection closed with no answer once
 * that time has passed. The module only reports the kind and K; timing
 * and closing are the server's.
 *
 * The first five kinds are answered by inject_error's body before any
 * token is generated; inject_error returns 0 for the last three.
 */
#ifndef TS_HANDLERS_INJECT_H
#define TS_HANDLERS_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"
#include "proto/http.h"

struct conn;
struct engine_request;
struct server;

/* The request header that picks a request's failure, and its CGI name as
 * FastCGI passes it (RFC 3875 section 4.1.18). */
#define INJECT_HEADER "X-Tokstream-Failure"
#define INJECT_HEADER_PARAM "HTTP_X_TOKSTREAM_FAILURE"

/* The largest K of "; after=K", tokens (http.h's HTTP_MAX_TOKENS_CAP: a
 * stream never has more tokens than that). */
#define INJECT_MAX_AFTER 8192u

/* The kinds of failure. INJECT_NONE: no failure. The order is the
 * order of the bits in a types mask and of the uniform draw among them;
 * append new kinds before INJECT_NKINDS, never reorder (a seeded run
 * would inject other failures). */
enum inject_kind {
	INJECT_NONE = 0,
	INJECT_RATE_LIMIT,
	INJECT_SERVER_ERROR,
	INJECT_OVERLOADED,
	INJECT_CONTEXT_LENGTH,
	INJECT_INVALID_API_KEY,
	INJECT_TIMEOUT,
	INJECT_MIDSTREAM_ERROR,
	INJECT_MIDSTREAM_CUT,
	INJECT_NKINDS
};

/* The bit of kind k in a types mask, every failure kind, and the default
 * set: all but timeout (a timeout ties up a client, and the server's
 * request, for as long as the client waits, so it is only injected when
 * asked for by name). */
#define INJECT_BIT(k) (UINT32_C(1) << (k))
#define INJECT_TYPES_ALL \
	((INJECT_BIT(INJECT_NKINDS) - 1) & ~INJECT_BIT(INJECT_NONE))
#define INJECT_TYPES_DEFAULT (INJECT_TYPES_ALL & ~INJECT_BIT(INJECT_TIMEOUT))

/* Defaults of struct inject_config. */
#define INJECT_DEFAULT_AFTER_TOKENS 5u
#define INJECT_DEFAULT_RETRY_AFTER_S 1u

/* The injection options of a server. Read-only once the server runs. */
struct inject_config {
	double rate;             /* 0..1: the fraction of requests that fail
				  * (--failure-injection-rate takes a
				  * percent, inject_parse_rate converts);
				  * default 0 */
	uint32_t types;          /* INJECT_BIT mask of the kinds drawn
				  * from; default INJECT_TYPES_DEFAULT */
	uint32_t after_tokens;   /* K of the midstream kinds, tokens,
				  * 0..INJECT_MAX_AFTER; default 5 */
	uint32_t retry_after_s;  /* Retry-After of rate_limit, seconds;
				  * default 1 */
	uint64_t seed;           /* of inject_decide's draw; default 0 */
};

/*
 * The name of kind k: "rate_limit", "server_error", "overloaded",
 * "context_length", "invalid_api_key", "timeout", "midstream_error",
 * "midstream_cut"; "none" for INJECT_NONE; "unknown" for a value out of
 * range. Static strings, lowercase, stable (a /metrics label).
 */
const char *inject_kind_name(enum inject_kind k);

/*
 * The kind named (s, len), ASCII case-insensitive, the whole of it (no
 * spaces): INJECT_NONE for "none", else a failure kind; -1 for anything
 * else. Reads exactly len bytes; s need not be NUL-terminated.
 */
int inject_kind_parse(const char *s, size_t len);

/* Fills *c with the defaults above. */
void inject_config_defaults(struct inject_config *c);

/*
 * Parses --failure-injection-rate, a percent as llm-d-inference-sim
 * takes it: a decimal number 0..100 with at most 6 digits after the
 * point ("10", "2.5", "0.001"; no sign, no exponent, no spaces), the
 * locale ignored. TS_OK with *rate = percent / 100 (0..1), else
 * TS_EINVAL with a message in msg (msglen bytes, NUL-terminated,
 * truncated to fit; msg may be NULL when msglen is 0) and *rate untouched.
 */
enum ts_err inject_parse_rate(const char *s, double *rate, char *msg,
    size_t msglen);

/*
 * Parses --failure-types, a comma-separated list of kind names
 * ("rate_limit,server_error"; spaces and tabs around a name allowed,
 * names case-insensitive, a name given twice counts once) into *types
 * (INJECT_BIT mask). TS_OK, else TS_EINVAL with a message naming the bad
 * item (by position and text) and listing the valid names, *types
 * untouched: for an empty item (so for an empty list: leave the option
 * out for the default), "none", or an unknown name. s is NUL-terminated;
 * msg as for inject_parse_rate.
 */
enum ts_err inject_parse_types(const char *s, uint32_t *types, char *msg,
    size_t msglen);

/*
 * Parses the value (v, len) of a request's X-Tokstream-Failure header,
 * which overrides the draw for that request:
 *
 *   value = OWS kind OWS [ ";" OWS "after" OWS "=" OWS K OWS ]
 *
 * (OWS: spaces and tabs, RFC 9110 section 5.6.3), kind and "after"
 * ASCII case-insensitive; kind "none" means never inject for this
 * request, whatever the rate. K is decimal digits, 0..INJECT_MAX_AFTER,
 * and is allowed only with midstream_error and midstream_cut (after=0:
 * the failure comes before the first token). Any kind may be asked for,
 * configured in c->types or not (timeout too): the header is an explicit
 * request. Whether to honour the header at all is the server's policy
 * (--allow-failure-header; refused by default).
 *
 * TS_OK with *kind and *after (c->after_tokens when no after= is given;
 * meaningful for the midstream kinds only). Else TS_EINVAL, *kind and
 * *after untouched, and a message for a 400 in msg: an empty or
 * all-blank value (the caller treats an absent or empty header as no
 * header and does not call), an unknown kind (the valid names listed),
 * a parameter other than after, after without a value, a value that is
 * not digits or is over INJECT_MAX_AFTER, after= with another kind, or
 * anything after K. Bytes quoted from the value in the message are
 * printable ASCII (others become '?'), at most 32 of them. Reads exactly
 * len bytes; v need not be NUL-terminated. msg as for inject_parse_rate.
 */
enum ts_err inject_parse_header(const char *v, size_t len,
    const struct inject_config *c, enum inject_kind *kind, uint32_t *after,
    char *msg, size_t msglen);

/*
 * The seeded decision for the n-th /v1 request of the process (n counts
 * from 0, in the order the server numbers requests): INJECT_NONE with
 * probability 1 - c->rate, else one of the kinds in c->types, uniformly.
 * A pure function of (c->seed, n, c->rate, c->types): a run with the same
 * options and the same order of requests injects the same failures, on
 * every machine.
 *
 * The draw (SplitMix64, Steele et al. 2014, indexed): h = rng_mix64(
 * rng_mix64(seed ^ tag) + (n + 1) * 0x9e3779b97f4a7c15), x = the top 53
 * bits of h; the request fails when x < T, T = rate * 2^53 rounded to
 * the nearest integer (exact integer comparison: over many n the count
 * of failures is binomial(rate), up to 2^-54 in rate). A failing
 * request gets the floor(x * m / T)-th of the m configured kinds (in
 * kind order): the failing x are split into m runs that differ in length
 * by at most one. A rate of 0 or below (or NaN) never fails, 1 or above
 * always does; bits of c->types outside INJECT_TYPES_ALL are ignored, and
 * no kind left means INJECT_NONE.
 */
enum inject_kind inject_decide(const struct inject_config *c, uint64_t n);

/*
 * Fills *err for the kinds answered with an HTTP error before streaming
 * and returns 1; returns 0 (*err untouched) for INJECT_NONE, timeout,
 * the midstream kinds and values out of range. Bodies as OpenAI sends
 * them (answer with err->status and http_error_json_openai; type and code
 * are static strings; param "" except for context_length):
 *
 *   rate_limit       429 "requests" "rate_limit_exceeded" "Rate limit
 *                    reached for requests ... Please try again in Ns."
 *                    with N = c->retry_after_s, the Retry-After value.
 *   server_error     500 "server_error" "server_error" "The server had
 *                    an error while processing your request. Sorry about
 *                    that!"
 *   overloaded       503 "server_error" "overloaded" "The engine is
 *                    currently overloaded, please try again later."
 *   context_length   400 "invalid_request_error" "context_length_exceeded",
 *                    param "messages", "This model's maximum context
 *                    length is L tokens. However, your messages resulted
 *                    in P tokens. Please reduce the length of the
 *                    messages."
 *   invalid_api_key  401 "invalid_request_error" "invalid_api_key"
 *                    "Incorrect API key provided. ..."
 *
 * For context_length, context_len is the model's context in tokens (0:
 * no limit, backend.h's context_len) and prompt_tokens the request's
 * prompt as counted by the backend. The message must read as a real
 * refusal, so P > L always: when the prompt exceeds a real context
 * (context_len > 0 and prompt_tokens > context_len), L = context_len and
 * P = prompt_tokens; otherwise (no limit, or a prompt that fits) the
 * limit claimed is just below the prompt, L = prompt_tokens - 1 and
 * P = prompt_tokens, or L = 0 and P = 1 for a prompt of 0 tokens. A
 * client that trims to L and retries thus sends one token less. c may be
 * NULL: rate_limit then says the default, 1s.
 */
int inject_error(enum inject_kind k, const struct inject_config *c,
    uint32_t context_len, uint64_t prompt_tokens, struct http_error *err);

/* How long an injected timeout holds its request silent before the
 * connection closes with no answer, ms (OpenAI's SDKs give up after
 * 600 s). It holds a connection, not a slot: behind lighttpd a client
 * that leaves a silent request is not noticed (lighttpd sees a FIN only
 * when it writes), so the connection stays until then. */
#define INJECT_TIMEOUT_MS 600000.0

/* What an injected failure keeps from the client; the handlers' relays
 * act on it (each dialect's *_SPEAKS, *_SILENT_ALL, *_SILENT_END are
 * these values). */
enum inject_silence {
	INJECT_SPEAKS = 0,      /* everything is sent */
	INJECT_SILENT_ALL = 1,  /* timeout: not a byte, not a keep-alive */
	INJECT_SILENT_END = 2   /* midstream_cut: no end after the tokens */
};

/* What inject_request decided for one request. */
struct inject_verdict {
	enum inject_kind kind;  /* INJECT_NONE: no failure (and for a
				 * refused header) */
	uint32_t after;         /* K of the midstream kinds, tokens */
	enum inject_kind on_fire; /* a midstream kind, counted when it
				 * fires (one after the answer's last token
				 * never does); else INJECT_NONE */
	enum inject_silence silence; /* what the relay keeps back */
	struct http_error err;  /* inject_request returned 1: the answer */
	char extra[64];         /* ... and its extra head lines ("" none;
				 * each ends in CRLF) */
};

/*
 * Decides a request's failure and prepares for it, once per request,
 * after parsing and auth, before submitting: the one decision of every
 * dialect (/v1, /v1/messages, Ollama's routes). From the header (c's
 * X-Tokstream-Failure) when it is not empty, else, when draw is 1 and
 * --failure-injection-rate > 0, from inject_decide's draw for the n
 * taken from srv->v1_requests (atomically; n counts the requests drawn
 * for, from 0, across the dialects that draw).
 *
 * Returns 1 when the request is to be answered now with v->err (status,
 * OpenAI's shape and wording: the dialect may restate it in its own) and
 * v->extra, and not run:
 *   - a header the server does not honour (no --allow-failure-header):
 *     400 invalid_request_error failure_header_disabled, its message
 *     followed by off_hint (NULL: nothing);
 *   - a header inject_parse_header refuses: 400 invalid_request_error
 *     invalid_value with its message;
 *     (for both, v->kind is INJECT_NONE and nothing is counted)
 *   - an HTTP kind: inject_error's body for it (context_length's L the
 *     backend's context_len, P job->prompt_tokens), with
 *     "Retry-After: N\r\n" (N = retry_after_s) for rate_limit and
 *     "WWW-Authenticate: Bearer\r\n" for invalid_api_key.
 * Returns 0 to go on, job fitted to v->kind: INJECT_NONE (job
 * untouched); midstream_error and midstream_cut fail after K = v->after
 * tokens (job->error_after = K; v->silence INJECT_SILENT_END for the
 * cut, whose end the relay keeps back); a timeout's sequence ends at
 * once with an error, before a first token (no prefill, max_tokens 1,
 * error_after 0: no slot is held), v->silence INJECT_SILENT_ALL (the
 * relay holds the connection silent, relay_hold, for
 * INJECT_TIMEOUT_MS).
 *
 * Counted in tokstream:injected_failures_total{type} here for the HTTP
 * kinds and timeout; a midstream kind is left in v->on_fire for the
 * relay to count when it fires. No I/O besides the counter.
 */
int inject_request(struct server *srv, struct conn *c, int draw,
    const char *off_hint, struct engine_request *job,
    struct inject_verdict *v);

#endif /* TS_HANDLERS_INJECT_H */
