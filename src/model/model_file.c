/*
 * model/model_file.c - opening a model of any supported format
 * (model_file.h): the dispatch, and llama2.c checkpoints.
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "model/tokenizer.h"

void
model_file_close(struct model_file *f)
{
	if (f == NULL)
		return;
	model_close(f->m);
	tokenizer_free(f->tok);
	free(f->name);
	free(f->weight_types);
	free(f->chat_template);
	free(f->bos_text);
	free(f->eos_text);
	free(f);
}

/* The last part of a path, without trailing slashes, into buf. */
static void
base_name(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path), b;

	while (n > 1 && path[n - 1] == '/')
		n--;
	b = n;
	while (b > 0 && path[b - 1] != '/')
		b--;
	snprintf(buf, len, "%.*s", (int)(n - b), path + b);
}

/* 1 when the file at path starts with "GGUF", 0 when not, -1 when it
 * cannot be read (errno set). */
static int
is_gguf(const char *path)
{
	char magic[4];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	if (fd < 0)
		return -1;
	n = read(fd, magic, sizeof(magic));
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return -1;
	return n == 4 && memcmp(magic, "GGUF", 4) == 0;
}

static enum ts_err
llama2c_load(struct model_file *f, const char *path, const char *tokenizer,
    char *err, size_t errlen)
{
	char name[256];
	enum ts_err rc;

	rc = model_open(&f->m, path, err, errlen);
	if (rc != TS_OK)
		return rc;
	rc = tokenizer_open(&f->tok, tokenizer, f->m->cfg.vocab_size, err,
	    errlen);
	if (rc != TS_OK)
		return rc;
	f->format = "llama2.c";
	base_name(path, name, sizeof(name));
	f->name = model_file_strdup(name, strlen(name));
	f->weight_types = model_file_strdup("f32", 3);
	/* EOS, and BOS, which llama2.c's story models emit between
	 * stories */
	model_file_add_eos(f, MODEL_TOKEN_EOS, f->m->cfg.vocab_size);
	model_file_add_eos(f, MODEL_TOKEN_BOS, f->m->cfg.vocab_size);
	f->bos_text = model_file_strdup("<s>", 3);
	f->eos_text = model_file_strdup("</s>", 4);
	f->context_length = f->m->cfg.seq_len;
	return TS_OK;
}

enum ts_err
model_file_open(struct model_file **out, const char *path,
    const char *tokenizer, char *err, size_t errlen)
{
	struct model_file *f = xcalloc(1, sizeof(*f));
	struct stat sb;
	enum ts_err rc;
	int g;

	*out = NULL;
	if (stat(path, &sb) != 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
		    strerror(errno));
		rc = TS_ESYS;
		goto fail;
	}
	if (S_ISDIR(sb.st_mode)) {
		if (tokenizer != NULL) {
			snprintf(err, errlen, "%s: a Hugging Face folder "
			    "brings its own tokenizer (tokenizer.json): "
			    "drop --tokenizer", path);
			rc = TS_EINVAL;
			goto fail;
		}
		rc = model_hf_load(f, path, err, errlen);
	} else if ((g = is_gguf(path)) == 1) {
		if (tokenizer != NULL) {
			snprintf(err, errlen, "%s: a GGUF file brings its own "
			    "tokenizer: drop --tokenizer", path);
			rc = TS_EINVAL;
			goto fail;
		}
		rc = model_gguf_load(f, path, err, errlen);
	} else if (g < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path,
		    strerror(errno));
		rc = TS_ESYS;
	} else if (tokenizer == NULL) {
		snprintf(err, errlen, "%s: not a GGUF file or a Hugging Face "
		    "folder; a llama2.c checkpoint needs --tokenizer", path);
		rc = TS_EINVAL;
	} else {
		rc = llama2c_load(f, path, tokenizer, err, errlen);
	}
	if (rc != TS_OK)
		goto fail;
	if (f->n_eos == 0) {
		snprintf(err, errlen, "%s: the model names no EOS token",
		    path);
		rc = TS_EFORMAT;
		goto fail;
	}
	*out = f;
	return TS_OK;
fail:
	model_file_close(f);
	return rc;
}
