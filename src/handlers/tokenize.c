/*
 * handlers/tokenize.c - vLLM's tokenizer endpoints, POST /tokenize and
 * POST /detokenize (tokenize.h), over the served backend's tokenizer:
 * the ids are the ones /v1/completions and /v1/chat/completions count as
 * usage.prompt_tokens for the same prompt (backend.h, tokenize and
 * count_tokens). Parsing and encoding are openai/tokenize.h's and
 * openai/encode.h's; vLLM's handling is
 * vllm/entrypoints/serve/tokenize/serving.py (ServingTokenization).
 */
#include "handlers/tokenize.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "openai/cost.h"
#include "openai/encode.h"
#include "openai/tokenize.h"
#include "proto/chat.h"
#include "text/utf8.h"
#include "transport/conn.h"
#include "transport/reply.h"
#include "handlers/server.h"

/* The context length /tokenize reports as max_model_len: the backend's,
 * or for a backend without one (the simulator) the most positions a
 * sequence can reach there, a prompt of OPENAI_MAX_CONTENT_BYTES at one
 * byte a token and then max_tokens' cap. */
static uint64_t
tokenize_max_model_len(const struct engine_backend *be)
{
	uint32_t ctx = be->context_len(be->impl);

	return ctx > 0 ? ctx : (uint64_t)OPENAI_MAX_CONTENT_BYTES +
	    OPENAI_MAX_TOKENS_CAP;
}

/* Token id's text for token_strs (openai_tokens.text). */
static const char *
tokenize_text_of(void *ctx, uint32_t id, size_t *len)
{
	const struct engine_backend *be = ctx;
	const char *t = be->token_text(be->impl, id, len);

	if (t == NULL)
		*len = 0;
	return t != NULL ? t : "";
}

/* The JSON body, or 1 when the request was answered (an error). */
static int
tokenize_body(struct reply *rp, struct ts_buf *body)
{
	struct http_error err;

	ts_buf_init(body, HTTP_MAX_BODY_BYTES);
	if (reply_read_json(rp->conn, body, &err) == TS_OK)
		return 0;
	reply_error_v1(rp, &err, NULL, 0);
	ts_buf_free(body);
	return 1;
}

/* Sends a JSON answer already encoded in b (after the head in b). */
static void
tokenize_send(struct reply *rp, struct ts_buf *b)
{
	if (ts_buf_append(b, "\n", 1) == TS_OK)
		reply_send(rp, b);      /* a large one from an I/O thread */
}

void
tokenize_answer(struct server *srv, struct reply *rp)
{
	const struct engine_backend *be = srv->backend;
	const char *const *models;
	size_t n_models = server_model_names(srv, &models);
	struct openai_tokenize t;
	struct openai_tokens out;
	struct http_error err;
	struct ts_buf body, text, b, ans;
	uint32_t *ids = NULL;
	size_t n, i, bytes = 0, skip = 0, bound;
	enum ts_err rc;

	if (tokenize_body(rp, &body) != 0)
		return;
	rc = openai_parse_tokenize(body.p ? body.p : "", body.len, models,
	    n_models, &t, &err);
	ts_buf_free(&body);
	if (rc != TS_OK) {
		reply_error_v1(rp, &err, NULL, 0);
		return;
	}
	ts_buf_init(&text, 2 * HTTP_MAX_BODY_BYTES);
	ts_buf_init(&b, 0);
	if (be->tokenize == NULL) {
		http_error_set(&err, 501, "server_error", "not_implemented",
		    "The %s backend does not expose its token ids.",
		    be->name);
		reply_error_v1(rp, &err, NULL, 0);
		goto out;
	}
	if (openai_tokenize_text(&t, &text) != TS_OK) {
		http_error_set(&err, 400, "invalid_request_error",
		    "invalid_value", "%s", chat_render_error()[0] ?
		    chat_render_error() : "the messages are too long");
		reply_error_v1(rp, &err, NULL, 0);
		goto out;
	}
	/* model 0: the model the /v1 endpoints serve (v1.c) */
	n = be->tokenize(be->impl, 0, text.p ? text.p : "", text.len, NULL,
	    0);
	ids = xcalloc(n > 0 ? n : 1, sizeof(*ids));
	n = be->tokenize(be->impl, 0, text.p ? text.p : "", text.len, ids, n);
	/* add_special_tokens false drops the BOS a completion's prompt gets
	 * (vLLM's TokenizeCompletionRequest); a chat's BOS is the template's
	 * here, kept whatever add_special_tokens says, as vLLM keeps what
	 * the template writes */
	if (t.req.kind == OPENAI_COMPLETIONS && !t.add_special_tokens &&
	    be->bos_first && n > 0)
		skip = 1;
	for (i = skip; t.return_token_strs && i < n; i++) {
		size_t len;

		(void)tokenize_text_of((void *)be, ids[i], &len);
		bytes += len;
	}
	out.ids = ids + skip;
	out.n = n - skip;
	out.max_model_len = tokenize_max_model_len(be);
	out.text = t.return_token_strs ? tokenize_text_of : NULL;
	out.ctx = (void *)be;
	/* the answer, in a buffer of at most the bound of every answer
	 * (docs/API.md "What a request may cost"): one that would be larger
	 * is refused when the buffer fills, so it costs at most 8 MB (a
	 * 1 MiB prompt of 3-byte characters with return_token_strs was an
	 * 18.9 MB answer) */
	bound = openai_tokenize_bound(out.n, bytes, t.return_token_strs);
	ts_buf_init(&ans, bound < OPENAI_MAX_ANSWER_BYTES ? bound :
	    OPENAI_MAX_ANSWER_BYTES);
	rc = openai_encode_tokenize(&ans, &out);
	if (rc == TS_OK) {
		ts_buf_init(&b, 4096 + ans.len);
		rc = reply_head_buf(rp, &b, 200, "application/json", 0, NULL);
		if (rc == TS_OK)
			rc = ts_buf_append(&b, ans.p, ans.len);
	}
	ts_buf_free(&ans);
	if (rc == TS_ELIMIT && bound > OPENAI_MAX_ANSWER_BYTES) {
		http_error_set(&err, 400, "invalid_request_error",
		    "answer_too_large", "the answer (%zu tokens%s) is over "
		    "tokstream's bound of %u bytes for an answer; send a "
		    "shorter prompt%s", out.n, t.return_token_strs ?
		    " with their texts" : "", OPENAI_MAX_ANSWER_BYTES,
		    t.return_token_strs ? " or leave out return_token_strs" :
		    "");
		http_error_set_param(&err, t.return_token_strs ?
		    "return_token_strs" : "prompt");
		reply_error_v1(rp, &err, NULL, 0);
		goto out;
	}
	if (rc != TS_OK) {
		http_error_set(&err, 500, "server_error", "encode_failed",
		    "the answer could not be encoded");
		reply_error_v1(rp, &err, NULL, 0);
		goto out;
	}
	tokenize_send(rp, &b);
out:
	free(ids);
	ts_buf_free(&b);
	ts_buf_free(&text);
	openai_tokenize_free(&t);
}

/* 1 when id is one of the backend's: 0..vocab_size - 1 and its EOS ids
 * (backend.h), or, when it does not tell its size, one it has a text
 * for. */
static int
tokenize_id_known(const struct engine_backend *be, uint32_t id)
{
	size_t len;

	if (engine_backend_is_eos(be, id))
		return 1;
	if (be->vocab_size > 0)
		return id < be->vocab_size;
	return be->token_text(be->impl, id, &len) != NULL;
}

void
detokenize_answer(struct server *srv, struct reply *rp)
{
	const struct engine_backend *be = srv->backend;
	const char *const *models;
	size_t n_models = server_model_names(srv, &models);
	struct http_error err;
	struct utf8_repair u;
	struct ts_buf body, b;
	uint32_t *ids = NULL;
	size_t n, i, len, bytes = 0, tl = 0;
	char *txt = NULL;
	const char *p;
	enum ts_err rc;

	if (tokenize_body(rp, &body) != 0)
		return;
	rc = openai_parse_detokenize(body.p ? body.p : "", body.len, models,
	    n_models, &ids, &n, &err);
	ts_buf_free(&body);
	if (rc != TS_OK) {
		reply_error_v1(rp, &err, NULL, 0);
		return;
	}
	ts_buf_init(&b, 0);
	for (i = 0; i < n; i++) {
		if (!tokenize_id_known(be, ids[i])) {
			openai_token_out_of_vocab(&err, i, ids[i],
			    be->vocab_size);
			reply_error_v1(rp, &err, NULL, 0);
			goto out;
		}
		p = be->token_text(be->impl, ids[i], &len);
		bytes += p != NULL ? len : 0;
	}
	/* the text is bounded as a prompt is: what /tokenize takes, it
	 * gives back; more is refused before any of it is made */
	if (bytes > OPENAI_MAX_CONTENT_BYTES) {
		http_error_set(&err, 400, "invalid_request_error",
		    "string_above_max_length", "The text of these tokens is "
		    "%zu bytes, over tokstream's limit of %u (a prompt's).",
		    bytes, OPENAI_MAX_CONTENT_BYTES);
		http_error_set_param(&err, "tokens");
		reply_error_v1(rp, &err, NULL, 0);
		goto out;
	}
	/* the texts joined, a character cut between byte tokens repaired
	 * to U+FFFD as a stream's (Python's errors="replace", which
	 * vLLM's decode uses) */
	txt = xmalloc(UTF8_OUT_MAX(bytes) + 1);
	utf8_repair_init(&u);
	for (i = 0; i < n; i++) {
		p = be->token_text(be->impl, ids[i], &len);
		if (p != NULL)
			tl += utf8_repair_feed(&u, p, len, txt + tl);
	}
	tl += utf8_repair_finish(&u, txt + tl);
	ts_buf_init(&b, 4096 + 6 * tl + 16);
	if (reply_head_buf(rp, &b, 200, "application/json", 0, NULL) !=
	    TS_OK || openai_encode_detokenize(&b, txt, tl) != TS_OK)
		goto fail;
	tokenize_send(rp, &b);
	goto out;
fail:
	http_error_set(&err, 500, "server_error", "encode_failed",
	    "the answer could not be encoded");
	reply_error_v1(rp, &err, NULL, 0);
out:
	free(ids);
	free(txt);
	ts_buf_free(&b);
}
