/*
 * server/debug.h - GET /_debug/generated, GET /metrics and GET /health
 * (debug.c).
 */
#ifndef TS_SERVER_DEBUG_H
#define TS_SERVER_DEBUG_H

struct conn;
struct reply;
struct server;

/*
 * A request is local when it comes from the loopback address and no proxy
 * forwarded it (X-Forwarded-For, Forwarded: RFC 7239, X-Real-IP). 1 or 0.
 */
int debug_is_local(struct conn *c);

void debug_generated(struct server *srv, struct reply *rp);
void debug_metrics(struct server *srv, struct reply *rp);
void debug_health(struct server *srv, struct reply *rp);

#endif /* TS_SERVER_DEBUG_H */
