/*
 * backends.c - the table of backends (backends.h): the simulator and the
 * llama backend.
 */
#include "server/backends.h"

#include <stdio.h>
#include <string.h>

#include "model/llama.h"
#include "sim/sim.h"

static const char *
sim_check(const struct backend_args *a)
{
	if (a->model_path != NULL || a->tokenizer_path != NULL)
		return "--model and --tokenizer go with --backend llama";
	return NULL;
}

static enum ts_err
sim_open(struct engine_backend *out, const struct backend_args *a,
    char *err, size_t errlen)
{
	(void)a;
	(void)err;
	(void)errlen;
	sim_backend(out);
	return TS_OK;
}

static const char *
llama_check(const struct backend_args *a)
{
	if (a->model_path == NULL)
		return "--backend llama needs --model: a GGUF file, a Hugging "
		    "Face folder, or a llama2.c checkpoint with --tokenizer "
		    "FILE (tokstream-mkmodel makes all three)";
	return NULL;
}

static enum ts_err
llama_open(struct engine_backend *out, const struct backend_args *a,
    char *err, size_t errlen)
{
	struct model_options mo;

	model_options_defaults(&mo);
	mo.threads = a->threads;
	mo.context = a->context;
	/* rows of one forward pass: the batch, up to the model's limit */
	mo.max_batch = a->max_batch < 4096 ? a->max_batch : 4096;
	return llama_backend_open(out, a->model_path, a->tokenizer_path, &mo,
	    err, errlen);
}

static const struct backend_entry table[] = {
	{ "sim", sim_check, sim_open },
	{ "llama", llama_check, llama_open },
};

const struct backend_entry *
backends_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

const char *
backends_names(void)
{
	return "sim or llama";
}
