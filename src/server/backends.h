/*
 * backends.h - the backends tokstream-fcgi can run (--backend NAME), each
 * behind the engine's struct engine_backend (backend/backend.h). Adding a
 * backend is its folder under src/, one entry in backends.c and its
 * sources in Makefile.am: neither the engine nor the server changes.
 */
#ifndef TS_BACKENDS_H
#define TS_BACKENDS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* What the command line gives a backend (docs/OPERATIONS.md). */
struct backend_args {
	const char *model_path;      /* --model FILE, or NULL */
	const char *tokenizer_path;  /* --tokenizer FILE, or NULL */
	uint32_t threads;            /* --model-threads, 0 = one per CPU */
	uint32_t context;            /* --model-context, 0 = the model's */
	uint32_t max_batch;          /* rows per forward pass: max-num-seqs */
};

struct backend_entry {
	const char *name;            /* --backend NAME */
	/* The arguments it needs or refuses, before anything starts: NULL
	 * when fine, else a one-line message. */
	const char *(*check)(const struct backend_args *a);
	/* Opens it into *out; on failure a message in err. */
	enum ts_err (*open)(struct engine_backend *out,
	    const struct backend_args *a, char *err, size_t errlen);
};

/* The entry named `name`, or NULL. */
const struct backend_entry *backends_find(const char *name);

/* "sim or llama": the names, for messages and --help. */
const char *backends_names(void);

#endif /* TS_BACKENDS_H */
