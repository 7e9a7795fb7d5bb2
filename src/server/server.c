/*
 * server/server.c - what the handlers ask of the server context
 * (server.h).
 */
#include "server/server.h"

#include "engine/backend.h"

const char *
server_model_name(const struct server *srv)
{
	if (srv->opt->served_model != NULL)
		return srv->opt->served_model;
	return srv->backend->models[0];
}
