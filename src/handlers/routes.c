/*
 * handlers/routes.c - path and method to handler (routes.h).
 */
#include "handlers/routes.h"

#include <stdio.h>
#include <string.h>

#include "handlers/auth.h"
#include "transport/conn.h"
#include "handlers/debug.h"
#include "proto/http.h"
#include "handlers/lab.h"
#include "handlers/ollama.h"
#include "handlers/messages.h"
#include "handlers/replay.h"
#include "transport/reply.h"
#include "handlers/server.h"
#include "handlers/tokenize.h"
#include "handlers/v1.h"

/* The methods of an endpoint: GET includes HEAD (RFC 9110 section 9.1),
 * and every path answers OPTIONS. */
enum { M_GET = 1, M_POST = 2 };

enum endpoint_id {
	EP_PAGE,                 /* the demo page: lighttpd serves GET/HEAD */
	EP_STREAM, EP_GENERATE, EP_HEALTH,
	EP_COMPLETIONS, EP_CHAT, EP_RESPONSES, EP_MODELS, EP_MODEL,
	EP_DEBUG, EP_METRICS,
	EP_OLLAMA_CHAT, EP_OLLAMA_GENERATE, EP_OLLAMA_TAGS, EP_OLLAMA_PS,
	EP_OLLAMA_SHOW, EP_OLLAMA_VERSION,
	EP_TOKENIZE, EP_DETOKENIZE,
	EP_MESSAGES, EP_COUNT_TOKENS,
	EP_NONE
};

struct endpoint {
	const char *path;        /* exact, or a prefix when `prefix` */
	enum endpoint_id id;
	unsigned methods;
	int prefix;              /* path + one or more bytes */
	int local;               /* loopback only, no CORS */
};

static const struct endpoint endpoints[] = {
	{ "/", EP_PAGE, M_GET, 0, 0 },
	{ "/index.html", EP_PAGE, M_GET, 0, 0 },
	{ "/stream", EP_STREAM, M_GET, 0, 0 },
	{ "/generate", EP_GENERATE, M_POST, 0, 0 },
	{ "/health", EP_HEALTH, M_GET, 0, 0 },
	{ "/v1/completions", EP_COMPLETIONS, M_POST, 0, 0 },
	{ "/v1/chat/completions", EP_CHAT, M_POST, 0, 0 },
	{ "/v1/responses", EP_RESPONSES, M_POST, 0, 0 },
	{ "/v1/models", EP_MODELS, M_GET, 0, 0 },
	{ "/v1/models/", EP_MODEL, M_GET, 1, 0 },
	{ "/v1/messages", EP_MESSAGES, M_POST, 0, 0 },
	{ "/v1/messages/count_tokens", EP_COUNT_TOKENS, M_POST, 0, 0 },
	{ "/_debug/generated", EP_DEBUG, M_GET, 0, 1 },
	{ "/metrics", EP_METRICS, M_GET, 0, 1 },
	{ "/api/chat", EP_OLLAMA_CHAT, M_POST, 0, 0 },
	{ "/api/generate", EP_OLLAMA_GENERATE, M_POST, 0, 0 },
	{ "/api/tags", EP_OLLAMA_TAGS, M_GET, 0, 0 },
	{ "/api/ps", EP_OLLAMA_PS, M_GET, 0, 0 },
	{ "/api/show", EP_OLLAMA_SHOW, M_POST, 0, 0 },
	{ "/api/version", EP_OLLAMA_VERSION, M_GET, 0, 0 },
	/* vLLM's, beside /v1 (vllm/entrypoints/serve/tokenize/) */
	{ "/tokenize", EP_TOKENIZE, M_POST, 0, 0 },
	{ "/detokenize", EP_DETOKENIZE, M_POST, 0, 0 },
};

/* 1 for a path whose answers are in the OpenAI shape: /v1/ and vLLM's
 * tokenizer endpoints. */
static int
openai_path(const char *uri)
{
	size_t plen = strcspn(uri, "?");

	return strncmp(uri, "/v1/", 4) == 0 ||
	    (plen == 9 && memcmp(uri, "/tokenize", 9) == 0) ||
	    (plen == 11 && memcmp(uri, "/detokenize", 11) == 0);
}

/* 1 for a path of Anthropic's Messages API (/v1/messages...), whose
 * errors take Anthropic's shape (handlers/messages.h). */
static int
anthropic_path(const char *uri, size_t plen)
{
	return plen >= 12 && memcmp(uri, "/v1/messages", 12) == 0 &&
	    (plen == 12 || uri[12] == '/');
}

/* An error in the shape of the path's dialect: Anthropic's on its
 * paths, OpenAI's on the rest of /v1/ and vLLM's tokenizer endpoints,
 * Ollama's under /api/, the lab's elsewhere. extra: more head lines or
 * NULL. */
static void
route_error(struct reply *c, const char *uri, size_t plen,
    struct http_error *err, const char *extra)
{
	if (anthropic_path(uri, plen))
		messages_fail(c, err, extra);
	else if (openai_path(uri))
		reply_error_v1(c, err, extra, 0);
	else if (plen >= 5 && memcmp(uri, "/api/", 5) == 0)
		ollama_fail(c, err, extra);
	else
		reply_error(c, err, extra, 0);
}

/* The endpoint at path (uri, plen), or NULL. */
static const struct endpoint *
endpoint_at(const char *uri, size_t plen)
{
	size_t k;

	for (k = 0; k < sizeof(endpoints) / sizeof(endpoints[0]); k++) {
		const struct endpoint *e = &endpoints[k];
		size_t n = strlen(e->path);

		if (e->prefix ? plen > n && memcmp(uri, e->path, n) == 0 :
		    plen == n && memcmp(uri, e->path, n) == 0)
			return e;
	}
	return NULL;
}

/* The Allow header of an endpoint's methods (RFC 9110 section 10.2.1). */
static const char *
allow_of(unsigned methods)
{
	return methods == M_POST ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
}

/*
 * The headers a CORS preflight may allow (Fetch standard, "CORS-preflight
 * request"): the ones the page asks for when they are a plain list of
 * header names (SDKs send their own, e.g. the OpenAI SDK's X-Stainless-*),
 * else the ones tokstream reads. A borrowed static string or `asked`.
 */
static const char *
cors_request_headers(const char *asked)
{
	size_t n = strlen(asked);

	if (n == 0 || n > 512 || strspn(asked, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_, ") != n)
		return "Content-Type, Last-Event-ID, Authorization";
	return asked;
}

/*
 * OPTIONS on a known path: 204 with Allow, and with the CORS preflight's
 * answer (Fetch standard) when CORS is on for the path. The preflight
 * headers go to any OPTIONS there (a plain one, such as a load
 * balancer's health check, ignores them).
 */
static void
options_answer(struct reply *c, const struct endpoint *e)
{
	char head[800];
	const char *allow = allow_of(e->methods);

	if (c->cors != NULL)
		snprintf(head, sizeof(head), "Allow: %s\r\n"
		    "Access-Control-Allow-Methods: %s\r\n"
		    "Access-Control-Allow-Headers: %s\r\n"
		    "Access-Control-Max-Age: 600\r\n", allow, allow,
		    cors_request_headers(conn_param(c->conn,
		    "HTTP_ACCESS_CONTROL_REQUEST_HEADERS")));
	else
		snprintf(head, sizeof(head), "Allow: %s\r\n", allow);
	reply_head(c, 204, NULL, 0, head);
}

/* 405 for a method the endpoint does not take, with Allow, in the shape
 * of the path's dialect (route_error). */
static void
not_allowed(struct reply *c, const struct endpoint *e, const char *method,
    const char *uri, size_t plen)
{
	struct http_error err;
	char allow[64];

	http_error_set(&err, 405, "invalid_request_error",
	    "method_not_allowed", "%.16s %.*s is not allowed; use %s",
	    method, (int)(plen > 128 ? 128 : plen), uri,
	    e->methods == M_POST ? "POST" : "GET or HEAD");
	snprintf(allow, sizeof(allow), "Allow: %s\r\n", allow_of(e->methods));
	route_error(c, uri, plen, &err, allow);
}

/* /v1/models/{id}: the id after the prefix, percent-decoded as a path
 * segment (RFC 3986: '+' is itself; the SDKs send a '/' in a name as
 * %2F). */
static void
model_at(struct server *srv, struct reply *c, const char *id, size_t len)
{
	struct http_error err;
	char name[256];
	size_t i, n = 0;

	for (i = 0; i < len && n < sizeof(name); i++, n++) {
		if (id[i] != '%') {
			name[n] = id[i];
		} else if (i + 2 < len &&
		    http_hex_digit((unsigned char)id[i + 1]) >= 0 &&
		    http_hex_digit((unsigned char)id[i + 2]) >= 0) {
			name[n] = (char)(http_hex_digit((unsigned char)id[i + 1]) <<
			    4 | http_hex_digit((unsigned char)id[i + 2]));
			i += 2;
		} else {
			break;
		}
	}
	if (i < len) {
		http_error_set(&err, 404, "invalid_request_error",
		    "model_not_found", "The model does not exist: the path "
		    "does not name a served model.");
		reply_error_v1(c, &err, NULL, 0);
		return;
	}
	v1_model(srv, c, name, n);
}

/*
 * 1 when the request must carry the API key (--api-key): any method but
 * OPTIONS on a /v1/ or /api/ (Ollama's) path, known or not, on vLLM's
 * /tokenize and /detokenize (vLLM's AuthenticationMiddleware,
 * server_utils.py, checks /v1 paths only and leaves them open; here they
 * cost work as /v1 does, so they take its rule), and on the lab
 * endpoints that generate (/stream, /generate) unless
 * --open-lab-endpoints. A CORS preflight passes: a browser sends it
 * without credentials (Fetch standard, "CORS-preflight request").
 * /health, /metrics, /_debug/ and the demo page never need the key.
 */
static int
key_needed(const struct options *o, const struct endpoint *e,
    const char *uri, size_t plen, const char *method)
{
	if (o->api_key == NULL || strcmp(method, "OPTIONS") == 0)
		return 0;
	if ((plen >= 4 && memcmp(uri, "/v1/", 4) == 0) ||
	    (plen >= 5 && memcmp(uri, "/api/", 5) == 0) || (e != NULL &&
	    (e->id == EP_TOKENIZE || e->id == EP_DETOKENIZE)))
		return 1;
	return e != NULL && !o->open_lab &&
	    (e->id == EP_STREAM || e->id == EP_GENERATE);
}

/* route(), with the request's body buffer for a replay (NULL: no
 * --replay), which the caller frees once the request is answered. */
static void
route_request(struct server *srv, struct conn *conn, int64_t t0,
    struct ts_buf *body)
{
	struct reply rp = { srv->opt->id_prefix, conn, NULL, 0, t0 }, *c = &rp;
	struct http_error err;
	const char *method = conn_param(conn, "REQUEST_METHOD");
	const char *uri = conn_param(conn, "REQUEST_URI");
	size_t plen = strcspn(uri, "?");
	const struct endpoint *e = endpoint_at(uri, plen);
	int get = strcmp(method, "GET") == 0;

	/* CORS on every public answer, errors included (a page must see
	 * the JSON error, not "Failed to fetch"); never on /_debug/ or
	 * /metrics. */
	if (srv->opt->cors_origin[0] != '\0' && (e == NULL || !e->local))
		rp.cors = srv->opt->cors_origin;
	if (strlen(uri + plen) > HTTP_MAX_QUERY_BYTES + 1) {
		/* lighttpd sends these here without their query (its site
		 * config); a direct request gets the same answer */
		http_error_set(&err, 414, "invalid_request_error",
		    "uri_too_long", "the query string is %zu bytes, over "
		    "tokstream's limit of %d (lighttpd passes it to the "
		    "responder twice in one 64 KiB FastCGI record); send "
		    "long prompts with POST /generate or the /v1 endpoints",
		    strlen(uri + plen) - 1, HTTP_MAX_QUERY_BYTES);
		route_error(c, uri, plen, &err, NULL);
		return;
	}
	if (key_needed(srv->opt, e, uri, plen, method) &&
	    !auth_bearer_ok(conn_param(conn, "HTTP_AUTHORIZATION"),
	    srv->opt->api_key) && !(anthropic_path(uri, plen) &&
	    auth_key_ok(conn_param(conn, "HTTP_X_API_KEY"),
	    srv->opt->api_key))) {
		/* OpenAI's answer to a missing or wrong key, in the shape of
		 * the path's dialect; RFC 6750 section 3: a 401 names the
		 * scheme in WWW-Authenticate */
		http_error_set(&err, 401, "invalid_request_error",
		    "invalid_api_key", "%s: send the server's key as "
		    "'Authorization: Bearer KEY' (--api-key)",
		    conn_param(conn, "HTTP_AUTHORIZATION")[0] == '\0' ?
		    "You didn't provide an API key" :
		    "Incorrect API key provided");
		if (anthropic_path(uri, plen))
			snprintf(err.message, sizeof(err.message), "%s",
			    conn_param(conn, "HTTP_X_API_KEY")[0] == '\0' &&
			    conn_param(conn, "HTTP_AUTHORIZATION")[0] ==
			    '\0' ? "x-api-key header is required" :
			    conn_param(conn, "HTTP_X_API_KEY")[0] == '\0' ?
			    "invalid API key in Authorization: Bearer" :
			    "invalid x-api-key");
		route_error(c, uri, plen, &err,
		    "WWW-Authenticate: Bearer\r\n");
		return;
	}
	if (body != NULL && replay_route(srv, c, method, uri, body))
		return;
	if (e == NULL) {
		if (plen >= 4 && memcmp(uri, "/v1/", 4) == 0) {
			http_error_set(&err, 404, "invalid_request_error",
			    "unknown_url", "no endpoint at %.*s; tokstream "
			    "serves /v1/completions, /v1/chat/completions, "
			    "/v1/responses, /v1/models and /v1/messages",
			    (int)(plen > 128 ? 128 : plen), uri);
			route_error(c, uri, plen, &err, NULL);
		} else if (plen >= 5 && memcmp(uri, "/api/", 5) == 0) {
			http_error_set(&err, 404, "not_found_error",
			    "unknown_path", "no endpoint at %.*s; tokstream "
			    "serves Ollama's /api/chat, /api/generate, "
			    "/api/tags, /api/show, /api/ps and /api/version",
			    (int)(plen > 128 ? 128 : plen), uri);
			route_error(c, uri, plen, &err, NULL);
		} else {
			http_error_set(&err, 404, "not_found_error",
			    "unknown_path", "no endpoint at %.*s; try GET "
			    "/stream?prompt=hello, POST /generate or GET "
			    "/_debug/generated",
			    (int)(plen > 128 ? 128 : plen), uri);
			route_error(c, uri, plen, &err, NULL);
		}
		return;
	}
	if (strcmp(method, "OPTIONS") == 0) {
		options_answer(c, e);
		return;
	}
	if (strcmp(method, "HEAD") == 0 && (e->methods & M_GET)) {
		/* answered as GET, the body dropped (conn_write) */
		conn->head_only = 1;
		get = 1;
	}
	if (!(e->methods & M_GET ? get : strcmp(method, "POST") == 0) ||
	    e->id == EP_PAGE) {
		/* lighttpd serves the page's GET and HEAD itself */
		not_allowed(c, e, method, uri, plen);
		return;
	}
	if (atomic_load(&srv->stopping)) {
		http_error_set(&err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		route_error(c, uri, plen, &err, "Retry-After: 1\r\n");
		return;
	}
	switch (e->id) {
	case EP_STREAM: lab_stream(srv, c); break;
	case EP_GENERATE: lab_generate(srv, c); break;
	case EP_HEALTH: debug_health(srv, c); break;
	case EP_COMPLETIONS: v1_generate(srv, c, OPENAI_COMPLETIONS); break;
	case EP_CHAT: v1_generate(srv, c, OPENAI_CHAT); break;
	case EP_RESPONSES: v1_generate(srv, c, OPENAI_RESPONSES); break;
	case EP_MODELS: v1_models(srv, c); break;
	case EP_MODEL:
		model_at(srv, c, uri + strlen(e->path),
		    plen - strlen(e->path));
		break;
	case EP_MESSAGES: messages_create(srv, c); break;
	case EP_COUNT_TOKENS: messages_count_tokens(srv, c); break;
	case EP_DEBUG: debug_generated(srv, c); break;
	case EP_METRICS: debug_metrics(srv, c); break;
	case EP_OLLAMA_CHAT: ollama_generate(srv, c, OLLAMA_CHAT); break;
	case EP_OLLAMA_GENERATE: ollama_generate(srv, c, OLLAMA_GENERATE);
		break;
	case EP_OLLAMA_TAGS: ollama_models(srv, c, 0); break;
	case EP_OLLAMA_PS: ollama_models(srv, c, 1); break;
	case EP_OLLAMA_SHOW: ollama_show(srv, c); break;
	case EP_OLLAMA_VERSION: ollama_version(srv, c); break;
	case EP_TOKENIZE: tokenize_answer(srv, c); break;
	case EP_DETOKENIZE: detokenize_answer(srv, c); break;
	case EP_PAGE:
	case EP_NONE:
		break;
	}
}

void
route(struct server *srv, struct conn *conn, int64_t t0)
{
	struct ts_buf body;

	if (srv->replay == NULL) {
		route_request(srv, conn, t0, NULL);
		return;
	}
	/* a replay reads the body first and may give it back (conn.h:
	 * unread) to the endpoint it routes to */
	ts_buf_init(&body, HTTP_MAX_BODY_BYTES);
	route_request(srv, conn, t0, &body);
	ts_buf_free(&body);
}
