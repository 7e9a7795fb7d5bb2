/*
 * handlers/lab.h - the lab endpoints GET /stream and POST /generate
 * (lab.c).
 */
#ifndef TS_HANDLERS_LAB_H
#define TS_HANDLERS_LAB_H

struct reply;
struct server;

void lab_stream(struct server *srv, struct reply *rp);
void lab_generate(struct server *srv, struct reply *rp);

#endif /* TS_HANDLERS_LAB_H */
