/*
 * model/model_load.h - what model_file.c's opener and its loaders
 * (model_gguf.c, model_hf.c) share: struct model_file, the loaders and
 * their helpers. Below both, so that the opener and the loaders do not
 * include each other; users open models with model_file.h.
 */
#ifndef TS_MODEL_MODEL_LOAD_H
#define TS_MODEL_MODEL_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/ts.h"
#include "backend/backend.h"

struct model;
struct tokenizer;

/* The context a sequence gets when the caller asks for none and the
 * model allows more: a Llama 3.1 file says 131,072 positions, whose KV
 * cache would be gigabytes per sequence (--context raises it). */
#define MODEL_FILE_DEFAULT_CONTEXT 4096u

struct model_file {
	struct model *m;
	struct tokenizer *tok;
	const char *format;        /* "gguf", "hf" or "llama2.c" */
	char *name;                /* the served name: GGUF general.name,
				    * else the file's or folder's name */
	char *weight_types;        /* "q8_0 (f32 norms)", "f32": for logs */
	uint32_t eos[ENGINE_MAX_EOS]; /* the ids that end a text */
	uint32_t n_eos;
	char *chat_template;       /* the model's Jinja template, or NULL */
	char *bos_text;            /* its bos_token / eos_token ("" when */
	char *eos_text;            /* the model has none) */
	unsigned gen_has;          /* ENGINE_GIVEN_* of the defaults below */
	double temperature;        /* the model's sampling defaults */
	double top_p;
	uint32_t top_k;
	uint32_t context_length;   /* the longest the model was made for */
};


/* The loaders model_file_open dispatches to; f is zeroed, and on error
 * whatever they set is freed by model_file_close. */
enum ts_err model_gguf_load(struct model_file *f, const char *path,
    char *err, size_t errlen);
enum ts_err model_hf_load(struct model_file *f, const char *dir,
    char *err, size_t errlen);

/*
 * Adds id to f's EOS list unless it is there, out of the vocabulary
 * (vocab) or the list is full. For the loaders (inline, so that they
 * and model_file.c, which calls them, do not include each other).
 */
static inline void
model_file_add_eos(struct model_file *f, uint32_t id, uint32_t vocab)
{
	uint32_t i;

	if (id >= vocab || f->n_eos >= ENGINE_MAX_EOS)
		return;
	for (i = 0; i < f->n_eos; i++)
		if (f->eos[i] == id)
			return;
	f->eos[f->n_eos++] = id;
}

/* A malloc'd copy of (s, len), NUL-terminated. */
static inline char *
model_file_strdup(const char *s, size_t len)
{
	char *p = xmalloc(len + 1);

	if (len > 0)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

#endif /* TS_MODEL_MODEL_LOAD_H */
