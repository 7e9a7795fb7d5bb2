/*
 * server/routes.c - path and method to handler (routes.h).
 */
#include "server/routes.h"

#include <stdio.h>
#include <string.h>

#include "server/conn.h"
#include "server/debug.h"
#include "server/http.h"
#include "server/lab.h"
#include "server/reply.h"
#include "server/server.h"
#include "server/v1.h"

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

void
route(struct server *srv, struct conn *conn, int64_t t0)
{
	struct reply rp = { srv, conn, NULL, 0, t0 }, *c = &rp;
	struct http_error err;
	const char *method = conn_param(conn, "REQUEST_METHOD");
	const char *uri = conn_param(conn, "REQUEST_URI");
	size_t plen = strcspn(uri, "?");
	int cors;

#define PATH_IS(s) (plen == sizeof(s) - 1 && memcmp(uri, s, plen) == 0)
	cors = srv->opt->cors_origin[0] != '\0' && (PATH_IS("/stream") ||
	    PATH_IS("/generate") || PATH_IS("/health") ||
	    PATH_IS("/v1/completions") || PATH_IS("/v1/chat/completions") ||
	    PATH_IS("/v1/models"));
	if (cors)
		rp.cors = srv->opt->cors_origin;
	if (cors && strcmp(method, "OPTIONS") == 0) {
		/* CORS preflight (Fetch standard): a POST of JSON, or a GET
		 * with Last-Event-ID, from a page of another origin. */
		char allow[700];

		snprintf(allow, sizeof(allow), "Access-Control-Allow-Methods: "
		    "GET, POST, OPTIONS\r\nAccess-Control-Allow-Headers: %s\r\n"
		    "Access-Control-Max-Age: 600\r\n", cors_request_headers(
		    conn_param(conn, "HTTP_ACCESS_CONTROL_REQUEST_HEADERS")));
		reply_head(c, 204, NULL, 0, allow);
	} else if (atomic_load(&srv->stopping)) {
		http_error_set(&err, 503, "server_error", "shutdown",
		    "the server is shutting down");
		reply_error(c, &err, "Retry-After: 1\r\n", 0);
	} else if (PATH_IS("/stream")) {
		if (strcmp(method, "GET") == 0)
			lab_stream(srv, c);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/generate")) {
		if (strcmp(method, "POST") == 0) {
			lab_generate(srv, c);
		} else {
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s /generate is not "
			    "allowed; use POST", method);
			reply_error(c, &err, "Allow: POST\r\n", 0);
		}
	} else if (PATH_IS("/_debug/generated")) {
		if (strcmp(method, "GET") == 0)
			debug_generated(srv, c);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/v1/completions") ||
	    PATH_IS("/v1/chat/completions")) {
		if (strcmp(method, "POST") == 0) {
			v1_generate(srv, c, PATH_IS("/v1/completions") ?
			    OPENAI_COMPLETIONS : OPENAI_CHAT);
		} else {
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s %.*s is not allowed; use "
			    "POST", method, (int)plen, uri);
			reply_error_v1(c, &err, "Allow: POST\r\n", 0);
		}
	} else if (PATH_IS("/v1/models")) {
		if (strcmp(method, "GET") == 0) {
			v1_models(srv, c);
		} else {
			/* /v1 errors carry "param" (OpenAI's shape) */
			http_error_set(&err, 405, "invalid_request_error",
			    "method_not_allowed", "%s /v1/models is not "
			    "allowed; use GET", method);
			reply_error_v1(c, &err, "Allow: GET\r\n", 0);
		}
	} else if (plen >= 4 && memcmp(uri, "/v1/", 4) == 0) {
		http_error_set(&err, 404, "invalid_request_error",
		    "unknown_url", "no endpoint at %.*s; tokstream serves "
		    "/v1/completions, /v1/chat/completions and /v1/models",
		    (int)(plen > 128 ? 128 : plen), uri);
		reply_error_v1(c, &err, NULL, 0);
	} else if (PATH_IS("/metrics")) {
		if (strcmp(method, "GET") == 0)
			debug_metrics(srv, c);
		else
			goto not_allowed_get;
	} else if (PATH_IS("/health")) {
		if (strcmp(method, "GET") == 0)
			debug_health(srv, c);
		else
			goto not_allowed_get;
	} else {
		http_error_set(&err, 404, "not_found_error", "unknown_path",
		    "no endpoint at %.*s; try GET /stream?prompt=hello, "
		    "POST /generate or GET /_debug/generated",
		    (int)(plen > 128 ? 128 : plen), uri);
		reply_error(c, &err, NULL, 0);
	}
	return;
not_allowed_get:
	http_error_set(&err, 405, "invalid_request_error",
	    "method_not_allowed", "%s %.*s is not allowed; use GET", method,
	    (int)(plen > 128 ? 128 : plen), uri);
	reply_error(c, &err, "Allow: GET\r\n", 0);
#undef PATH_IS
}

