/*
 * handlers/debug.h - GET /_debug/generated, GET /metrics and GET /health
 * (debug.c).
 */
#ifndef TS_HANDLERS_DEBUG_H
#define TS_HANDLERS_DEBUG_H

#include "proto/http.h"

struct conn;
struct reply;
struct server;

/*
 * A request is local when it comes from the loopback address, no proxy
 * forwarded it (X-Forwarded-For, Forwarded: RFC 7239, X-Real-IP), and its
 * Host is a loopback name or address (localhost, *.localhost: RFC 6761,
 * 127.0.0.0/8, [::1]; any port; absent allowed), which a DNS-rebinding
 * page cannot send. 0 when local; else -1 with *err a 403 loopback_only
 * that says which rule failed, for `what` (the path, in the message).
 */
int debug_check_local(struct conn *c, const char *what,
    struct http_error *err);

void debug_generated(struct server *srv, struct reply *rp);
void debug_metrics(struct server *srv, struct reply *rp);
void debug_health(struct server *srv, struct reply *rp);

#endif /* TS_HANDLERS_DEBUG_H */
