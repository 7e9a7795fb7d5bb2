/*
 * handlers/routes.h - which handler answers a request: by path and method,
 * with the CORS preflight of the public endpoints, the API key of the
 * endpoints that generate (401 invalid_api_key, before anything else),
 * 405 (with Allow) for a known path with another method, 404 for anything
 * else, and 503 while the server stops.
 */
#ifndef TS_HANDLERS_ROUTES_H
#define TS_HANDLERS_ROUTES_H

#include <stdint.h>

struct conn;
struct server;

/* Answers the request on c, which arrived at t0 (CLOCK_MONOTONIC ns).
 * Returns when the response is complete or handed to srv->stream. */
void route(struct server *srv, struct conn *c, int64_t t0);

#endif /* TS_HANDLERS_ROUTES_H */
