/*
 * handlers/server.h - what every handler of one responder process shares:
 * its options, the engine and its backend, the state file, the metrics,
 * the I/O threads and the clock. server/main.c fills one; the unit tests
 * fill their own, with a manual engine and a synthetic clock.
 */
#ifndef TS_HANDLERS_SERVER_H
#define TS_HANDLERS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "handlers/settings.h"
#include "openai/cost.h"
#include "transport/relay.h"

struct conn;
struct engine;
struct io;
struct engine_backend;
struct gate;
struct metrics;
struct relay;
struct replay_set;
struct state;

struct server {
	const struct options *opt;
	struct engine *engine;
	const struct engine_backend *backend;  /* the engine's */
	struct state *state;          /* never NULL (memory fallback) */
	struct metrics *metrics;      /* NULL: every metrics_* is a no-op */
	struct io *io;                /* the I/O threads; NULL: streams are
				       * relayed on the caller's thread
				       * (relay_run: the unit tests) */
	struct gate *gate;            /* the accept path (transport/gate.h);
				       * NULL in the unit tests: healthy */
	time_t started_at;            /* /v1/models "created" */
	atomic_int stopping;          /* SIGTERM: new requests get 503 */
	_Atomic uint64_t v1_requests; /* /v1 requests drawn for failure
				       * injection (inject_decide's n) */
	/* CLOCK_MONOTONIC now, in ns (engine_now_ns, or a test's clock) */
	int64_t (*now)(void);
	/* the backend's worst tokens (openai/cost.h), which bound a /v1
	 * answer's size: server_init_costs; zeros bound nothing */
	struct openai_token_cost tokcost;
	/* the latency profile in use (engine/profile.h), for /v1/models;
	 * NULL with a physical backend: server_init_costs sets it */
	json_t *profile;
	/* the chat template in use (server/chat_model.h), its source
	 * ("model", "file", "tokstream"), and what the llama backend tells
	 * of its model (llama_backend_meta), for /v1/models; NULL: the
	 * built-in template / a simulator */
	const char *chat_template;
	const char *chat_template_source;
	json_t *model_meta;
	/* --replay's recordings (handlers/replay.h); NULL: no replay */
	struct replay_set *replay;
};

/* Fills srv->tokcost from srv->backend (openai_token_cost_of: a pass
 * over its vocabulary), once, after the backend is set. */
void server_init_costs(struct server *srv);

/* What a relay of this server needs (transport/relay.h): its engine,
 * backend, metrics, clock and --keepalive-ms. */
struct relay_env server_relay_env(const struct server *srv);

/* Runs the rest of a streamed response (transport/relay.h): hands it to
 * an I/O thread (io_stream) and returns at once, or, with no I/O threads,
 * relays it on this thread until it is complete (relay_run). */
void server_stream(struct server *srv, struct conn *c, struct relay *r);

/* The model name the OpenAI endpoints answer to: --served-model-name, or
 * the backend's default model ("tokstream-sim", the checkpoint's file). */
const char *server_model_name(const struct server *srv);

/* All the names the OpenAI endpoints answer to (--served-model-name's,
 * or the backend's default one): sets *names (borrowed for the server's
 * life) and returns how many, >= 1. */
size_t server_model_names(const struct server *srv,
    const char *const **names);

#endif /* TS_HANDLERS_SERVER_H */
