/*
 * transport/io.h - the I/O threads of one responder process: a few threads
 * (one per core) own every open stream through epoll, in the manner of
 * nginx's and lighttpd's event loops. A thread writes a stream's bytes
 * only when its socket can take them without blocking, notices a client
 * that hung up (EPOLLRDHUP: lighttpd closes the backend connection when
 * its client is gone), sends keep-alives to silent streams, and cancels a
 * stream whose client stopped reading for write_stall_ms. The engine wakes
 * each thread once per step with the streams that have news (its
 * listener, engine.h), not once per token per stream. A stalled stream
 * costs no thread: its unsent tokens wait in the engine's record and go
 * out together when its client drains.
 */
#ifndef TS_TRANSPORT_IO_H
#define TS_TRANSPORT_IO_H

#include <stdint.h>

#include "common/ts.h"

struct conn;
struct io;
struct relay;
struct ts_buf;

#define IO_MAX_THREADS 64

/*
 * Starts n I/O threads (1..IO_MAX_THREADS; 0: one per online CPU) on the
 * clock `now` (CLOCK_MONOTONIC ns), whose write-stall time (ms; 0 =
 * never) is `stall_ms`. TS_OK, or
 * TS_ESYS when a thread, an epoll or an eventfd cannot be made.
 */
enum ts_err io_start(struct io **out, int64_t (*now)(void), int n,
    double stall_ms);

/* The number of threads. */
int io_threads(const struct io *io);

/* The thread a new connection is relayed on: the threads in turn (round
 * robin). Sets c->shard, and c->threads to io (reply_send). */
void io_assign(struct io *io, struct conn *c);

/*
 * The server's stream driver (handlers/server.h: server_stream): hands
 * the connection and its relay to c->shard's thread and returns at once, having set
 * *c->handed_off. The thread owns both from then on (it may finish and
 * free them before io_stream returns), and finishes the connection when
 * the response is complete or its client is gone.
 */
void io_stream(struct io *io, struct conn *c, struct relay *r);

/*
 * The driver of an answer made whole (transport/reply.h: reply_send):
 * hands the connection and b's bytes (the CGI head and body; b is taken
 * and left empty) to c->shard's thread and returns at once, having set
 * *c->handed_off. The thread writes them as it writes a stream's: only
 * what the socket takes without blocking (EPOLLOUT), the connection
 * cancelled when its client stopped reading for write_stall_ms or hung
 * up, then finished (FCGI_END_REQUEST) and freed. Nothing may be written
 * to c after the call.
 */
void io_answer(struct io *io, struct conn *c, struct ts_buf *b);

/* Streams and answers held by the I/O threads right now. */
int io_active(const struct io *io);

#endif /* TS_TRANSPORT_IO_H */
