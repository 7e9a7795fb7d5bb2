/*
 * server/options.h - tokstream-fcgi's command line: fills the settings
 * every handler reads (handlers/settings.h) from argv, with the defaults
 * and ranges of docs/OPERATIONS.md "Responder options".
 */
#ifndef TS_SERVER_OPTIONS_H
#define TS_SERVER_OPTIONS_H

#include <stdio.h>

#include "handlers/settings.h"

struct backend_args;

/* Fills *o from argv (the defaults first); on a bad option prints one
 * line and exits with status 2; on --help or --version prints and exits
 * with status 0. */
void options_parse(struct options *o, int argc, char **argv);

/* The backend's share of the options (server/backends.h). */
void options_backend_args(const struct options *o, struct backend_args *a);

/* The usage text. */
void options_usage(FILE *f);

#endif /* TS_SERVER_OPTIONS_H */
