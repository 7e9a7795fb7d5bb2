/*
 * server/server.c - what the handlers ask of the server context
 * (server.h).
 */
#include "server/server.h"

#include "engine/backend.h"

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
