/*
 * handlers/server.c - what the handlers ask of the server context
 * (server.h).
 */
#include "handlers/server.h"

#include "backend/backend.h"
#include "transport/io.h"

const char *
server_model_name(const struct server *srv)
{
	if (srv->opt->n_served_models > 0)
		return srv->opt->served_models[0];
	return srv->backend->models[0];
}

size_t
server_model_names(const struct server *srv, const char *const **names)
{
	if (srv->opt->n_served_models > 0) {
		*names = srv->opt->served_models;
		return (size_t)srv->opt->n_served_models;
	}
	*names = srv->backend->models;
	return 1;
}

void
server_init_costs(struct server *srv)
{
	openai_token_cost_of(srv->backend, &srv->tokcost);
}

struct relay_env
server_relay_env(const struct server *srv)
{
	struct relay_env env = {
		.engine = srv->engine,
		.backend = srv->backend,
		.metrics = srv->metrics,
		.now = srv->now,
		.keepalive_ms = srv->opt->keepalive_ms,
	};

	return env;
}

void
server_stream(struct server *srv, struct conn *c, struct relay *r)
{
	if (srv->io != NULL)
		io_stream(srv->io, c, r);
	else
		relay_run(c, r);
}
