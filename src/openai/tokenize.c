/*
 * openai/tokenize.c - the bodies of vLLM's POST /tokenize and POST
 * /detokenize (tokenize.h). No I/O.
 */
#include "openai/tokenize.h"
#include "openai/chat.h"
#include "openai/parse_field.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http.h"

#define ERR_TYPE FIELD_ERR_TYPE

/*
 * The body as a JSON object, or NULL with *err: empty (400 empty_body,
 * with an example), or as field_body_object refuses it (too deep, not
 * JSON, duplicate keys, not an object), as openai_parse_request does.
 */
static json_t *
body_object(const char *body, size_t len, const char *example,
    struct http_error *err)
{
	if (len == 0) {
		http_error_set(err, 400, ERR_TYPE, "empty_body",
		    "The request body is empty: send a JSON object such as "
		    "%s", example);
		return NULL;
	}
	return field_body_object(body, len, err);
}

/* "model": absent or null (vLLM's default: the served model), or a
 * string. Returns 0, or -1 with *err (400 invalid_type). */
static int
model_type_ok(const json_t *root, struct http_error *err)
{
	const json_t *m = json_object_get(root, "model");

	if (field_given(m) && !json_is_string(m)) {
		field_err_type(err, "model", "a string", m);
		return -1;
	}
	return 0;
}

/* "model", when given, names a served model: 0, or -1 with the 404
 * model_not_found of /v1 (vLLM's _check_model answers 404 too). */
static int
model_served(const json_t *root, const char *const *models,
    size_t n_models, struct http_error *err)
{
	const json_t *m = json_object_get(root, "model");
	size_t k;

	if (!field_given(m))
		return 0;
	for (k = 0; k < n_models; k++)
		if (json_string_length(m) == strlen(models[k]) &&
		    memcmp(json_string_value(m), models[k],
		    strlen(models[k])) == 0)
			return 0;
	openai_model_not_found(err, field_quotable(m, 64) ?
	    json_string_value(m) : NULL, json_string_length(m), models,
	    n_models);
	return -1;
}

/* The tokenize-only fields of a body of kind `kind` into *t: 0, or -1
 * with *err. */
static int
tokenize_fields(const json_t *root, enum openai_kind kind,
    struct openai_tokenize *t, struct http_error *err)
{
	int gen_given = 0, tmp;

	t->add_special_tokens = kind == OPENAI_COMPLETIONS;
	t->add_generation_prompt = 1;
	t->continue_final_message = 0;
	t->return_token_strs = 0;
	if (field_get_bool(root, "add_special_tokens", "add_special_tokens",
	    &t->add_special_tokens, err) < 0 ||
	    field_get_bool(root, "return_token_strs", "return_token_strs",
	    &t->return_token_strs, err) < 0)
		return -1;
	if (kind == OPENAI_COMPLETIONS)
		return 0;
	tmp = field_get_bool(root, "add_generation_prompt",
	    "add_generation_prompt", &t->add_generation_prompt, err);
	if (tmp < 0 || field_get_bool(root, "continue_final_message",
	    "continue_final_message", &t->continue_final_message, err) < 0)
		return -1;
	gen_given = tmp > 0 && t->add_generation_prompt;
	if (gen_given && t->continue_final_message) {
		/* vLLM's TokenizeChatRequest.check_generation_prompt */
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Cannot set both `continue_final_message` and "
		    "`add_generation_prompt` to True.");
		http_error_set_param(err, "continue_final_message");
		return -1;
	}
	/* continue_final_message alone: the final message stays open, and
	 * no generation prompt follows it */
	if (t->continue_final_message)
		t->add_generation_prompt = 0;
	if (field_given(json_object_get(root, "chat_template"))) {
		http_error_set(err, 400, ERR_TYPE, "unsupported_parameter",
		    "tokstream renders every chat with its own template "
		    "(GET /v1/models shows it): a request's chat_template is "
		    "not used.");
		http_error_set_param(err, "chat_template");
		return -1;
	}
	return 0;
}

enum ts_err
openai_parse_tokenize(const char *body, size_t len,
    const char *const *models, size_t n_models, struct openai_tokenize *t,
    struct http_error *err)
{
	enum openai_kind kind;
	json_t *root;
	char *dump = NULL;
	size_t n;
	enum ts_err rc = TS_EINVAL;

	memset(t, 0, sizeof(*t));
	root = body_object(body, len, "{\"prompt\":\"hi\"} or "
	    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", err);
	if (root == NULL)
		return TS_EINVAL;
	if (model_type_ok(root, err) != 0)
		goto out;
	if (field_given(json_object_get(root, "prompt")) &&
	    field_given(json_object_get(root, "messages"))) {
		/* vLLM's two request types each have one of them; a body
		 * with both would be read as one and drop the other */
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Give 'prompt' (TokenizeCompletionRequest) or 'messages' "
		    "(TokenizeChatRequest), not both.");
		http_error_set_param(err, "messages");
		goto out;
	}
	if (field_given(json_object_get(root, "prompt")))
		kind = OPENAI_COMPLETIONS;
	else if (field_given(json_object_get(root, "messages")))
		kind = OPENAI_CHAT;
	else {
		http_error_set(err, 400, ERR_TYPE,
		    "missing_required_parameter", "Missing required "
		    "parameter: 'prompt' (TokenizeCompletionRequest) or "
		    "'messages' (TokenizeChatRequest).");
		http_error_set_param(err, "prompt");
		goto out;
	}
	if (tokenize_fields(root, kind, t, err) != 0)
		goto out;
	/* the rest is read as /v1 reads it, which wants a model: the
	 * served one when the body names none (vLLM's default) */
	if (!field_given(json_object_get(root, "model"))) {
		if (json_object_set_new(root, "model",
		    json_string(models[0])) != 0)
			goto out;
		n = json_dumpb(root, NULL, 0, JSON_COMPACT);
		dump = xmalloc(n + 1);
		if (json_dumpb(root, dump, n, JSON_COMPACT) != n)
			goto out;
		body = dump;
		len = n;
	}
	rc = openai_parse_request(kind, body, len, models, n_models, &t->req,
	    err);
out:
	free(dump);
	json_decref(root);
	if (rc != TS_OK)
		openai_tokenize_free(t);
	return rc;
}

void
openai_tokenize_free(struct openai_tokenize *t)
{
	if (t != NULL)
		openai_request_free(&t->req);
}

enum ts_err
openai_tokenize_text(const struct openai_tokenize *t, struct ts_buf *b)
{
	if (t->req.kind == OPENAI_COMPLETIONS)
		return ts_buf_append(b, t->req.prompt != NULL ? t->req.prompt :
		    "", t->req.prompt_len);
	return openai_chat_prompt_opts(&t->req, t->add_generation_prompt,
	    t->continue_final_message, b);
}

void
openai_token_out_of_vocab(struct http_error *err, size_t index, uint64_t id,
    uint64_t vocab)
{
	if (vocab > 0)
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid 'tokens[%zu]': token id %llu is out of vocabulary "
		    "(the model's ids are 0 to %llu and its special tokens).",
		    index, (unsigned long long)id,
		    (unsigned long long)(vocab - 1));
	else
		http_error_set(err, 400, ERR_TYPE, "invalid_value",
		    "Invalid 'tokens[%zu]': token id %llu is out of "
		    "vocabulary.", index, (unsigned long long)id);
	/* the element, as every other refusal of one names it */
	http_error_set_param(err, "tokens[%zu]", index);
}

enum ts_err
openai_parse_detokenize(const char *body, size_t len,
    const char *const *models, size_t n_models, uint32_t **ids, size_t *n,
    struct http_error *err)
{
	const json_t *toks, *v;
	json_t *root;
	size_t i, k;
	char path[48];
	enum ts_err rc = TS_EINVAL;

	*ids = NULL;
	*n = 0;
	root = body_object(body, len, "{\"tokens\":[1,2,3]}", err);
	if (root == NULL)
		return TS_EINVAL;
	if (model_type_ok(root, err) != 0)
		goto out;
	toks = json_object_get(root, "tokens");
	if (!field_given(toks)) {
		field_err_missing(err, "tokens");
		goto out;
	}
	if (!json_is_array(toks)) {
		field_err_type(err, "tokens", "an array of integers", toks);
		goto out;
	}
	k = json_array_size(toks);
	if (k > OPENAI_MAX_DETOKENIZE_IDS) {
		field_err_array_long(err, "tokens", OPENAI_MAX_DETOKENIZE_IDS,
		    k);
		rc = TS_ELIMIT;
		goto out;
	}
	*ids = k > 0 ? xcalloc(k, sizeof(**ids)) : NULL;
	for (i = 0; i < k; i++) {
		v = json_array_get(toks, i);
		snprintf(path, sizeof(path), "tokens[%zu]", i);
		if (!json_is_integer(v)) {
			field_err_type(err, path, "an integer", v);
			goto out;
		}
		if (json_integer_value(v) < 0) {
			/* vLLM: Field(ge=0) */
			http_error_set(err, 400, ERR_TYPE,
			    "integer_below_min_value", "Invalid '%s': "
			    "integer below minimum value. Expected a value "
			    ">= 0, but got %lld instead.", path,
			    (long long)json_integer_value(v));
			http_error_set_param(err, "%s", path);
			goto out;
		}
		if ((unsigned long long)json_integer_value(v) >= UINT32_MAX) {
			openai_token_out_of_vocab(err, i,
			    (uint64_t)json_integer_value(v), 0);
			goto out;
		}
		(*ids)[i] = (uint32_t)json_integer_value(v);
	}
	/* last, as /v1: a malformed request is a 400 whatever its model */
	if (model_served(root, models, n_models, err) != 0)
		goto out;
	*n = k;
	rc = TS_OK;
out:
	json_decref(root);
	if (rc != TS_OK) {
		free(*ids);
		*ids = NULL;
	}
	return rc;
}
