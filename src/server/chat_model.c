/*
 * server/chat_model.c - the model's chat template as the dialects'
 * renderer (chat_model.h).
 */
#include "server/chat_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <sys/stat.h>

#include "jinja/jinja.h"
#include "text/utf8.h"
#include "model/model_export.h"
#include "proto/chat.h"

/* The largest --chat-template file. */
#define CHAT_MODEL_MAX_FILE (1u << 20)

/*
 * Templates --chat-template names (besides tokstream, the built-in one
 * of proto/chat.h), as their models' tokenizer_config.json has them.
 */
static const struct {
	const char *name;
	const char *text;
} chat_model_named[] = {
	/* TinyLlama/TinyLlama-1.1B-Chat-v1.0 (Zephyr's markers) */
	{ "tinyllama", MODEL_EXPORT_TEMPLATE_TINYLLAMA },
	/* the ChatML template of transformers' chat templating docs
	 * (Qwen's, SmolLM's without their system defaults) */
	{ "chatml", "{% for message in messages %}{{'<|im_start|>' + "
	    "message['role'] + '\n' + message['content'] + '<|im_end|>' + "
	    "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
	    "'<|im_start|>assistant\n' }}{% endif %}" },
	/* meta-llama/Meta-Llama-3-8B-Instruct */
	{ "llama3", "{% set loop_messages = messages %}{% for message in "
	    "loop_messages %}{% set content = '<|start_header_id|>' + "
	    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] "
	    "| trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content "
	    "= bos_token + content %}{% endif %}{{ content }}{% endfor %}{% "
	    "if add_generation_prompt %}{{ '<|start_header_id|>assistant<|"
	    "end_header_id|>\n\n' }}{% endif %}" },
};

struct chat_model {
	struct jinja_template *t;
	char *text;
	char *bos;
	char *eos;
	const char *who;         /* "the model's", "--chat-template's" */
};

static struct chat_model chat_model;
static struct chat_renderer chat_model_renderer;

/*
 * Renders msgs as apply_chat_template would: the messages as
 * [{"role", "content"}], the request's tools, add_generation_prompt.
 * open_last (vLLM's continue_final_message) renders without the
 * generation prompt and cuts the text after the last message's content,
 * as vLLM's apply_hf_chat_template does (rfind of the content).
 */
static enum ts_err
chat_model_render(void *impl, const struct chat_msg *msgs, size_t n,
    const char *tools, size_t tools_len, int gen, int open_last,
    struct ts_buf *out, char *err, size_t errlen)
{
	const struct chat_model *cm = impl;
	json_t *ctx = json_object(), *ms = json_array(), *tj = NULL;
	char *s = NULL;
	size_t sl = 0, i, room;
	enum ts_err rc;

	for (i = 0; i < n; i++) {
		json_t *m = json_object();
		const char *role = chat_role_name(msgs[i].role);

		json_object_set_new(m, "role", json_string(role != NULL ?
		    role : "user"));
		json_object_set_new(m, "content", json_stringn(
		    msgs[i].content != NULL ? msgs[i].content : "",
		    msgs[i].len));
		json_array_append_new(ms, m);
	}
	json_object_set_new(ctx, "messages", ms);
	if (tools != NULL && tools_len > 0) {
		tj = json_loadb(tools, tools_len, 0, NULL);
		if (tj != NULL)
			json_object_set_new(ctx, "tools", tj);
	}
	json_object_set_new(ctx, "add_generation_prompt",
	    json_boolean(gen && !open_last));
	json_object_set_new(ctx, "bos_token", json_string(cm->bos));
	json_object_set_new(ctx, "eos_token", json_string(cm->eos));
	room = out->max > out->len ? out->max - out->len : 0;
	rc = jinja_render(cm->t, ctx, room, &s, &sl, err, errlen);
	json_decref(ctx);
	if (rc != TS_OK) {
		char why[200];

		/* the template's raise_exception() speaks for itself
		 * ("template raised: ..."); a limit the render hit or a
		 * template that fails is named as the template's */
		if (strncmp(err, "template raised", 15) != 0) {
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%s chat template failed: %s",
			    cm->who, why);
		}
		return TS_EINVAL;
	}
	if (open_last && n > 0 && msgs[n - 1].len > 0) {
		const char *c = msgs[n - 1].content;
		size_t cl = msgs[n - 1].len, k;

		for (k = sl >= cl ? sl - cl + 1 : 0; k-- > 0;)
			if (memcmp(s + k, c, cl) == 0) {
				sl = k + cl;
				break;
			}
	}
	rc = ts_buf_append(out, s, sl);
	free(s);
	return rc == TS_OK ? TS_OK : TS_ELIMIT;
}

/* Reads the file at path (at most CHAT_MODEL_MAX_FILE bytes). */
static enum ts_err
read_file(const char *path, char **text, size_t *len, char *err,
    size_t errlen)
{
	struct stat sb;
	FILE *f;
	char *p;
	size_t n;

	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "--chat-template %s: not a regular file "
		    "(a Jinja file, or one of tokstream, tinyllama, chatml, "
		    "llama3)", path);
		return TS_EINVAL;
	}
	f = fopen(path, "rb");
	if (f == NULL) {
		snprintf(err, errlen, "--chat-template %s: cannot open: %s "
		    "(a Jinja file, or one of tokstream, tinyllama, chatml, "
		    "llama3)",
		    path, strerror(errno));
		return TS_ESYS;
	}
	p = xmalloc(CHAT_MODEL_MAX_FILE + 1);
	n = fread(p, 1, CHAT_MODEL_MAX_FILE + 1, f);
	fclose(f);
	if (n > CHAT_MODEL_MAX_FILE) {
		free(p);
		snprintf(err, errlen, "--chat-template %s: over %u bytes",
		    path, CHAT_MODEL_MAX_FILE);
		return TS_ELIMIT;
	}
	p[n] = '\0';
	*text = p;
	*len = n;
	return TS_OK;
}

enum ts_err
chat_model_init(const char *option, const char *model_template,
    const char *bos, const char *eos, const char **text,
    const char **source, char *err, size_t errlen)
{
	char why[400], *t = NULL;
	size_t len = 0;
	enum ts_err rc;

	*text = NULL;
	*source = "tokstream";
	if (option != NULL && strcmp(option, "tokstream") == 0)
		return TS_OK;
	if (option != NULL) {
		size_t i;

		for (i = 0; i < sizeof(chat_model_named) /
		    sizeof(chat_model_named[0]); i++)
			if (strcmp(option, chat_model_named[i].name) == 0)
				break;
		if (i < sizeof(chat_model_named) /
		    sizeof(chat_model_named[0])) {
			len = strlen(chat_model_named[i].text);
			t = xmalloc(len + 1);
			memcpy(t, chat_model_named[i].text, len + 1);
			*source = chat_model_named[i].name;
		} else {
			rc = read_file(option, &t, &len, err, errlen);
			if (rc != TS_OK)
				return rc;
			*source = "file";
		}
	} else if (model_template != NULL) {
		len = strlen(model_template);
		t = xmalloc(len + 1);
		memcpy(t, model_template, len + 1);
		*source = "model";
	} else {
		return TS_OK;
	}
	chat_model.who = option != NULL ? "the --chat-template" :
	    "the model's";
	if (len == 0 || !utf8_valid(t, len)) {
		snprintf(err, errlen, "%s chat template is %s (--chat-template "
		    "tokstream or a file replaces it)", option != NULL ?
		    option : "the model's", len == 0 ? "empty" :
		    "not valid UTF-8");
		free(t);
		return TS_EFORMAT;
	}
	rc = jinja_parse(&chat_model.t, t, len, why, sizeof(why));
	if (rc != TS_OK) {
		snprintf(err, errlen, "%s chat template: %s", option != NULL ?
		    option : "the model's", why);
		free(t);
		return rc;
	}
	chat_model.text = t;
	chat_model.bos = xmalloc(strlen(bos != NULL ? bos : "") + 1);
	strcpy(chat_model.bos, bos != NULL ? bos : "");
	chat_model.eos = xmalloc(strlen(eos != NULL ? eos : "") + 1);
	strcpy(chat_model.eos, eos != NULL ? eos : "");
	chat_model_renderer.render = chat_model_render;
	chat_model_renderer.impl = &chat_model;
	chat_set_renderer(&chat_model_renderer);
	*text = chat_model.text;
	return TS_OK;
}
