/*
 * openai/encode.c - the OpenAI-compatible API's response encoders (OpenAI
 * API reference: the completion, chat completion and chunk objects,
 * stream_options.include_usage, logprobs, the model list). See encode.h.
 * No I/O.
 *
 * The answers and chunks are written straight into the caller's buffer
 * (a small JSON writer below), not built as jansson trees and dumped: a
 * token's chunk, or a whole answer with every token's logprobs, costs
 * its bytes. The bytes are those jansson 2.14 dumps with JSON_COMPACT
 * for the same tree, as before: its escapes (dump.c, dump_string), its
 * reals (strconv.c, jsonp_dtostr: "%.17g", ".0" added to an integral
 * value, the exponent's "+" and leading zeros dropped; the C locale's
 * decimal point, which tokstream never changes), its integers ("%lld"),
 * keys in insertion order; test_openai_agent.c compares the two on
 * generated inputs.
 */
#include "openai/encode.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jw.h"
#include "proto/sse.h"
#include "text/utf8.h"

/* ---- JSON: proto/jw.h's writer, and reals as jansson dumps them ---- */

/* A real as jansson dumps it (strconv.c, jsonp_dtostr, precision 17);
 * TS_EINVAL for NaN and infinities, which json_real refuses. */
static void
jw_real(struct jw *w, double v)
{
	char d[48], *e;
	size_t n, from, to;

	if (w->rc != TS_OK)
		return;
	if (!isfinite(v)) {
		w->rc = TS_EINVAL;
		return;
	}
	n = (size_t)snprintf(d, sizeof(d), "%.17g", v);
	if (strchr(d, '.') == NULL && strchr(d, 'e') == NULL) {
		d[n++] = '.';
		d[n++] = '0';
		d[n] = '\0';
	}
	if ((e = strchr(d, 'e')) != NULL) {
		/* drop the exponent's "+" and its leading zeros */
		from = (size_t)(e - d) + 1;
		to = from;
		if (d[from] == '-')
			to = ++from;
		else if (d[from] == '+')
			from++;
		while (d[from] == '0' && from + 1 < n)
			from++;
		memmove(d + to, d + from, n - from + 1);
		n -= from - to;
	}
	jw_raw(w, d, n);
}

/* ---- encoders ----------------------------------------------------------- */

const char *
openai_finish_reason(enum openai_finish f)
{
	return f == OPENAI_FINISH_LENGTH ? "length" :
	    f == OPENAI_FINISH_TOOL_CALLS ? "tool_calls" : "stop";
}

/*
 * The fields every object of a response starts with, its "{" open:
 * {"id","object","created","model". TS_EINVAL when the model name is
 * not UTF-8.
 */
static void
head(struct jw *w, const struct openai_meta *m, const char *object)
{
	char id[40];

	snprintf(id, sizeof(id), "%s-%s%llu",
	    m->kind == OPENAI_CHAT ? "chatcmpl" : "cmpl",
	    m->id_prefix ? m->id_prefix : "", (unsigned long long)m->id);
	JW_LIT(w, "{\"id\":");
	jw_cstr(w, id);
	JW_LIT(w, ",\"object\":");
	jw_cstr(w, object);
	JW_LIT(w, ",\"created\":");
	jw_int(w, (long long)m->created);
	JW_LIT(w, ",\"model\":");
	jw_str(w, m->model, m->model_len);
}

/* {"prompt_tokens","completion_tokens","total_tokens",
 * "prompt_tokens_details":{"cached_tokens"}} */
static void
usage(struct jw *w, const struct openai_usage *u)
{
	JW_LIT(w, "{\"prompt_tokens\":");
	jw_int(w, (long long)u->prompt_tokens);
	JW_LIT(w, ",\"completion_tokens\":");
	jw_int(w, (long long)u->completion_tokens);
	JW_LIT(w, ",\"total_tokens\":");
	jw_int(w, (long long)u->prompt_tokens +
	    (long long)u->completion_tokens);
	JW_LIT(w, ",\"prompt_tokens_details\":{\"cached_tokens\":");
	jw_int(w, (long long)u->cached_tokens);
	JW_LIT(w, "}");
	if (u->reasoning) {
		JW_LIT(w, ",\"completion_tokens_details\":{"
		    "\"reasoning_tokens\":");
		jw_int(w, (long long)u->reasoning_tokens);
		JW_LIT(w, "}");
	}
	JW_LIT(w, "}");
}

/* The chat field of the thinking (meta.reasoning_field). */
static const char *
reasoning_field(const struct openai_meta *m)
{
	return m->reasoning_field != NULL ? m->reasoning_field : "reasoning";
}

/* ---- logprobs ----------------------------------------------------------- */

static void
lp_array_get(void *ctx, size_t i, struct openai_lp_token *t)
{
	*t = ((const struct openai_lp_token *)ctx)[i];
}

void
openai_lp_src_array(struct openai_lp_src *src,
    const struct openai_lp_token *t, size_t n)
{
	src->n = n;
	src->get = lp_array_get;
	src->ctx = (void *)t;
}

/* The bytes: form of a text that is not UTF-8 into buf (at least
 * 4 * 64 + 8 bytes): "bytes:" and \xNN for each of its first 64 bytes;
 * its length. */
static size_t
bytes_form(const char *p, size_t len, char *buf, size_t cap)
{
	size_t i, at = (size_t)snprintf(buf, cap, "bytes:");

	for (i = 0; i < len && at + 5 < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "\\x%02x",
		    (unsigned char)p[i]);
	return at;
}

/* A token's text as a JSON string: itself when it is UTF-8, else
 * OpenAI's "bytes:\xNN..." form (at most 64 bytes shown), whose
 * backslashes are then escaped. */
static void
token_string(struct jw *w, const char *p, size_t len)
{
	char buf[4 * 64 + 8];

	if (utf8_valid(p, len))
		jw_str(w, p, len);
	else
		jw_str(w, buf, bytes_form(p, len, buf, sizeof(buf)));
}

/* [b0,b1,...]: a token's bytes as integers */
static void
bytes_array(struct jw *w, const char *p, size_t len)
{
	size_t i;

	JW_LIT(w, "[");
	for (i = 0; i < len; i++) {
		if (i > 0)
			JW_LIT(w, ",");
		jw_int(w, (unsigned char)p[i]);
	}
	JW_LIT(w, "]");
}

/* {"token","logprob","bytes" (its "}" left open) */
static void
lp_entry(struct jw *w, const struct openai_lp_entry *e)
{
	JW_LIT(w, "{\"token\":");
	token_string(w, e->text, e->len);
	JW_LIT(w, ",\"logprob\":");
	jw_real(w, e->logprob);
	JW_LIT(w, ",\"bytes\":");
	bytes_array(w, e->text, e->len);
}

/* The key jansson gives an alternative of a completions top_logprobs
 * object, unescaped: its token string's value up to a NUL
 * (json_object_set_new takes a C string); *p points at e's text or into
 * buf (4 * 64 + 8 bytes). Its length. */
static size_t
lp_key(const struct openai_lp_entry *e, char *buf, size_t cap,
    const char **p)
{
	size_t len = e->len, i;

	*p = e->text;
	if (!utf8_valid(e->text, e->len)) {
		len = bytes_form(e->text, e->len, buf, cap);
		*p = buf;
	}
	for (i = 0; i < len && (*p)[i] != '\0'; i++)
		;
	return i;
}

/* Whether alternatives a and b of one token have the same key. */
static int
same_key(const struct openai_lp_entry *a, const struct openai_lp_entry *b)
{
	char ba[4 * 64 + 8], bb[4 * 64 + 8];
	const char *pa, *pb;
	size_t la = lp_key(a, ba, sizeof(ba), &pa);
	size_t lb = lp_key(b, bb, sizeof(bb), &pb);

	return la == lb && memcmp(pa, pb, la) == 0;
}

/* A completions top_logprobs object {TOKEN: logprob, ...}: jansson's
 * object keeps a key once, at its first place, with its last value
 * (hashtable_set replaces the value of a key it has). */
static void
lp_top_object(struct jw *w, const struct openai_lp_token *t)
{
	char buf[4 * 64 + 8];
	const char *p;
	size_t i, j, len;
	int first = 1;
	double v;

	JW_LIT(w, "{");
	for (i = 0; i < t->ntop && w->rc == TS_OK; i++) {
		for (j = 0; j < i && !same_key(&t->top[j], &t->top[i]); j++)
			;
		if (j < i)
			continue;       /* written at its first place */
		v = t->top[i].logprob;
		for (j = i + 1; j < t->ntop; j++)
			if (same_key(&t->top[j], &t->top[i]))
				v = t->top[j].logprob;
		if (!first)
			JW_LIT(w, ",");
		first = 0;
		len = lp_key(&t->top[i], buf, sizeof(buf), &p);
		jw_str(w, p, len);
		JW_LIT(w, ":");
		jw_real(w, v);
	}
	JW_LIT(w, "}");
}

static void
logprobs(struct jw *w, enum openai_kind kind, const struct openai_lp_src *src)
{
	struct openai_lp_token t;
	size_t i, j, pass;

	if (kind == OPENAI_CHAT) {
		JW_LIT(w, "{\"content\":[");
		for (i = 0; i < src->n && w->rc == TS_OK; i++) {
			src->get(src->ctx, i, &t);
			if (i > 0)
				JW_LIT(w, ",");
			lp_entry(w, &t.tok);
			JW_LIT(w, ",\"top_logprobs\":[");
			for (j = 0; j < t.ntop; j++) {
				if (j > 0)
					JW_LIT(w, ",");
				lp_entry(w, &t.top[j]);
				JW_LIT(w, "}");
			}
			JW_LIT(w, "]}");
		}
		JW_LIT(w, "],\"refusal\":null}");
		return;
	}
	/* completions: four arrays, a pass over the tokens each */
	for (pass = 0; pass < 4 && w->rc == TS_OK; pass++) {
		static const char *const key[4] = { "{\"tokens\":[",
		    "],\"token_logprobs\":[", "],\"top_logprobs\":[",
		    "],\"text_offset\":[" };

		jw_raw(w, key[pass], strlen(key[pass]));
		for (i = 0; i < src->n && w->rc == TS_OK; i++) {
			src->get(src->ctx, i, &t);
			if (i > 0)
				JW_LIT(w, ",");
			if (pass == 0)
				token_string(w, t.tok.text, t.tok.len);
			else if (pass == 1)
				jw_real(w, t.tok.logprob);
			else if (pass == 2)
				lp_top_object(w, &t);
			else
				jw_int(w, (long long)t.text_offset);
		}
	}
	JW_LIT(w, "]}");
}

enum ts_err
openai_encode_logprobs(struct ts_buf *b, enum openai_kind kind,
    const struct openai_lp_src *src)
{
	struct jw w;

	jw_begin(&w, b);
	logprobs(&w, kind, src);
	return jw_end(&w);
}

/* ,"logprobs":LP (null for NULL) */
static void
logprobs_field(struct jw *w, enum openai_kind kind,
    const struct openai_lp_src *src)
{
	JW_LIT(w, ",\"logprobs\":");
	if (src == NULL)
		JW_LIT(w, "null");
	else
		logprobs(w, kind, src);
}

/* ---- whole answers ------------------------------------------------------ */

/* The tool_calls array of a whole answer. */
static void
calls_json(struct jw *w, const struct openai_tool_call *c, size_t n)
{
	size_t i;

	JW_LIT(w, "[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			JW_LIT(w, ",");
		JW_LIT(w, "{\"id\":");
		jw_cstr(w, c[i].id);
		JW_LIT(w, ",\"type\":\"function\",\"function\":{\"name\":");
		jw_cstr(w, c[i].name);
		JW_LIT(w, ",\"arguments\":");
		jw_str(w, c[i].args, c[i].args_len);
		JW_LIT(w, "}}");
	}
	JW_LIT(w, "]");
}

/* One choice object of a whole answer. */
static void
choice_json(struct jw *w, const struct openai_meta *m, uint32_t index,
    const struct openai_choice *c)
{
	const struct openai_extra *x = &c->x;
	enum openai_kind kind = m->kind;

	JW_LIT(w, "{\"index\":");
	jw_int(w, (long long)index);
	if (kind == OPENAI_CHAT && x->ncalls > 0) {
		JW_LIT(w, ",\"message\":{\"role\":\"assistant\",\"content\":"
		    "null,\"tool_calls\":");
		calls_json(w, x->calls, x->ncalls);
		JW_LIT(w, ",\"refusal\":null}");
	} else if (kind == OPENAI_CHAT) {
		/* "refusal" is required by OpenAI's schema, and OpenAI
		 * sends null when the model did not refuse */
		JW_LIT(w, ",\"message\":{\"role\":\"assistant\",\"content\":");
		jw_str(w, c->text, c->len);
		if (x->reasoning != NULL) {
			const char *field = reasoning_field(m);

			JW_LIT(w, ",\"");
			jw_raw(w, field, strlen(field));
			JW_LIT(w, "\":");
			jw_str(w, x->reasoning, x->reasoning_len);
		}
		JW_LIT(w, ",\"refusal\":null}");
	} else {
		JW_LIT(w, ",\"text\":");
		jw_str(w, c->text, c->len);
	}
	logprobs_field(w, kind, x->logprobs);
	JW_LIT(w, ",\"finish_reason\":");
	jw_cstr(w, openai_finish_reason(c->finish));
	JW_LIT(w, "}");
}

enum ts_err
openai_encode_response_n(struct ts_buf *b, const struct openai_meta *m,
    const struct openai_choice *c, size_t n, const struct openai_usage *u)
{
	struct jw w;
	size_t i;

	jw_begin(&w, b);
	head(&w, m, m->kind == OPENAI_CHAT ? "chat.completion" :
	    "text_completion");
	JW_LIT(&w, ",\"choices\":[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			JW_LIT(&w, ",");
		choice_json(&w, m, (uint32_t)i, &c[i]);
	}
	JW_LIT(&w, "],\"usage\":");
	usage(&w, u);
	JW_LIT(&w, "}");
	return jw_end(&w);
}

enum ts_err
openai_encode_response_x(struct ts_buf *b, const struct openai_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u, const struct openai_extra *x)
{
	struct openai_choice c;

	memset(&c, 0, sizeof(c));
	c.text = text;
	c.len = len;
	c.finish = finish;
	if (x != NULL)
		c.x = *x;
	return openai_encode_response_n(b, m, &c, 1, u);
}

enum ts_err
openai_encode_response(struct ts_buf *b, const struct openai_meta *m,
    const char *text, size_t len, enum openai_finish finish,
    const struct openai_usage *u)
{
	return openai_encode_response_x(b, m, text, len, finish, u, NULL);
}

/* ---- stream chunks ------------------------------------------------------ */

void
openai_stream_init(struct openai_stream *s, const struct openai_meta *m,
    int include_usage)
{
	s->meta = *m;
	s->include_usage = include_usage != 0;
	s->role_sent = 0;
	s->index = 0;
}

/* The start of a chunk event, up to its one choice's "{" ("data: " and
 * the head, "choices":[); chunk_close ends it. */
static void
chunk_open(struct jw *w, const struct openai_stream *s)
{
	JW_LIT(w, "data: ");
	head(w, &s->meta, s->meta.kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion");
	JW_LIT(w, ",\"choices\":[{\"index\":");
	jw_int(w, (long long)s->index);
}

/* ... after the choice's last field: "}]", "usage":null when the stream
 * includes usage, "}" and the event's end. */
static void
chunk_close(struct jw *w, const struct openai_stream *s)
{
	JW_LIT(w, "}]");
	if (s->include_usage)
		JW_LIT(w, ",\"usage\":null");
	JW_LIT(w, "}\n\n");
}

enum ts_err
openai_encode_chunk_lp(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len, const struct openai_lp_src *logprobs)
{
	struct jw w;

	jw_begin(&w, b);
	chunk_open(&w, s);
	if (s->meta.kind != OPENAI_CHAT)
		JW_LIT(&w, ",\"text\":");
	else if (!s->role_sent)
		JW_LIT(&w, ",\"delta\":{\"role\":\"assistant\",\"content\":");
	else
		JW_LIT(&w, ",\"delta\":{\"content\":");
	jw_str(&w, text, len);
	if (s->meta.kind == OPENAI_CHAT)
		JW_LIT(&w, "}");
	logprobs_field(&w, s->meta.kind, logprobs);
	JW_LIT(&w, ",\"finish_reason\":null");
	chunk_close(&w, s);
	if (jw_end(&w) != TS_OK)
		return w.rc;
	if (s->meta.kind == OPENAI_CHAT)
		s->role_sent = 1;
	return TS_OK;
}

enum ts_err
openai_encode_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len)
{
	return openai_encode_chunk_lp(b, s, text, len, NULL);
}

enum ts_err
openai_encode_reasoning_chunk(struct ts_buf *b, struct openai_stream *s,
    const char *text, size_t len, const struct openai_lp_src *logprobs)
{
	const char *field = reasoning_field(&s->meta);
	struct jw w;

	jw_begin(&w, b);
	chunk_open(&w, s);
	JW_LIT(&w, ",\"delta\":{");
	if (!s->role_sent)
		JW_LIT(&w, "\"role\":\"assistant\",\"content\":null,");
	JW_LIT(&w, "\"");
	jw_raw(&w, field, strlen(field));
	JW_LIT(&w, "\":");
	jw_str(&w, text, len);
	JW_LIT(&w, "}");
	logprobs_field(&w, s->meta.kind, logprobs);
	JW_LIT(&w, ",\"finish_reason\":null");
	chunk_close(&w, s);
	if (jw_end(&w) != TS_OK)
		return w.rc;
	s->role_sent = 1;
	return TS_OK;
}

enum ts_err
openai_encode_tool_delta(struct ts_buf *b, struct openai_stream *s,
    uint32_t index, const char *id, const char *name, const char *frag,
    size_t frag_len, const struct openai_lp_src *logprobs)
{
	int role_sent = s->role_sent;
	struct jw w;

	jw_begin(&w, b);
	if (id != NULL) {
		/* the call's head, as OpenAI sends it: arguments "" */
		chunk_open(&w, s);
		JW_LIT(&w, ",\"delta\":{");
		if (!s->role_sent)
			JW_LIT(&w, "\"role\":\"assistant\",\"content\":null,");
		JW_LIT(&w, "\"tool_calls\":[{\"index\":");
		jw_int(&w, (long long)index);
		JW_LIT(&w, ",\"id\":");
		jw_cstr(&w, id);
		JW_LIT(&w, ",\"type\":\"function\",\"function\":{\"name\":");
		jw_cstr(&w, name);
		JW_LIT(&w, ",\"arguments\":\"\"}}]},\"logprobs\":null,"
		    "\"finish_reason\":null");
		chunk_close(&w, s);
		s->role_sent = 1;
		if (w.rc == TS_OK && frag_len == 0 && logprobs == NULL)
			return TS_OK;
	}
	chunk_open(&w, s);
	JW_LIT(&w, ",\"delta\":{\"tool_calls\":[{\"index\":");
	jw_int(&w, (long long)index);
	JW_LIT(&w, ",\"function\":{\"arguments\":");
	jw_str(&w, frag, frag_len);
	JW_LIT(&w, "}}]}");
	logprobs_field(&w, s->meta.kind, logprobs);
	JW_LIT(&w, ",\"finish_reason\":null");
	chunk_close(&w, s);
	if (jw_end(&w) != TS_OK)
		s->role_sent = role_sent;
	return w.rc;
}

enum ts_err
openai_encode_finish(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish)
{
	struct jw w;

	jw_begin(&w, b);
	chunk_open(&w, s);
	if (s->meta.kind != OPENAI_CHAT)
		JW_LIT(&w, ",\"text\":\"\"");
	else if (!s->role_sent)
		JW_LIT(&w, ",\"delta\":{\"role\":\"assistant\",\"content\":"
		    "\"\"}");
	else
		JW_LIT(&w, ",\"delta\":{}");
	JW_LIT(&w, ",\"logprobs\":null,\"finish_reason\":");
	jw_cstr(&w, openai_finish_reason(finish));
	chunk_close(&w, s);
	if (jw_end(&w) != TS_OK)
		return w.rc;
	if (s->meta.kind == OPENAI_CHAT)
		s->role_sent = 1;
	return TS_OK;
}

enum ts_err
openai_encode_usage(struct ts_buf *b, const struct openai_stream *s,
    const struct openai_usage *u)
{
	struct jw w;

	if (!s->include_usage)
		return TS_OK;
	jw_begin(&w, b);
	JW_LIT(&w, "data: ");
	head(&w, &s->meta, s->meta.kind == OPENAI_CHAT ?
	    "chat.completion.chunk" : "text_completion");
	JW_LIT(&w, ",\"choices\":[],\"usage\":");
	usage(&w, u);
	JW_LIT(&w, "}\n\n");
	return jw_end(&w);
}

/* ---- what carries no tokens: jansson -------------------------------------- */

/* encode.h; responses.c uses it too */
json_t *
openai_json_set(json_t *o, const char *key, json_t *v)
{
	if (o == NULL || v == NULL || json_object_set_new(o, key, v) != 0) {
		json_decref(o);
		json_decref(v);
		return NULL;
	}
	return o;
}

/*
 * Dumps o compactly (taking its reference) and appends it. NULL o is
 * TS_EINVAL (a string that was not UTF-8).
 */
static enum ts_err
emit(struct ts_buf *b, json_t *o)
{
	enum ts_err rc;
	char *s;

	if (o == NULL)
		return TS_EINVAL;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL)
		return TS_ENOMEM;
	rc = ts_buf_append(b, s, strlen(s));
	free(s);
	return rc;
}

enum ts_err
openai_encode_end(struct ts_buf *b, struct openai_stream *s,
    enum openai_finish finish, const struct openai_usage *u)
{
	size_t start = b->len;
	int role_sent = s->role_sent;
	enum ts_err rc;

	if ((rc = openai_encode_finish(b, s, finish)) != TS_OK ||
	    (rc = openai_encode_usage(b, s, u)) != TS_OK ||
	    (rc = sse_encode_done(b)) != TS_OK) {
		b->len = start;
		s->role_sent = role_sent;
	}
	return rc;
}

enum ts_err
openai_encode_stream_error(struct ts_buf *b, const struct http_error *err)
{
	struct ts_buf e;
	size_t start = b->len;
	enum ts_err rc;

	/* The error body is bounded by http_error's fixed-size fields. */
	ts_buf_init(&e, 4096);
	rc = http_error_json_openai(err, &e);
	if (rc == TS_OK)
		rc = sse_encode_data(b, e.p, e.len);
	if (rc == TS_OK)
		rc = sse_encode_done(b);
	if (rc != TS_OK)
		b->len = start;
	ts_buf_free(&e);
	return rc;
}

/* The model object of m; NULL when a string is not UTF-8. */
static json_t *
model_json(const struct openai_model_info *m)
{
	json_t *model, *ext = NULL;

	model = json_pack("{s:s%,s:s,s:I,s:s}", "id", m->id, m->id_len,
	    "object", "model", "created", (json_int_t)m->created, "owned_by",
	    "tokstream");
	if (m->max_model_len > 0)
		model = openai_json_set(model, "max_model_len",
		    json_integer((json_int_t)m->max_model_len));
	if (m->backend != NULL || m->chat_template != NULL ||
	    m->latency_profile != NULL) {
		ext = json_object();
		if (m->backend != NULL)
			ext = openai_json_set(ext, "backend",
			    json_string(m->backend));
		if (m->chat_template != NULL)
			ext = openai_json_set(ext, "chat_template",
			    json_string(m->chat_template));
		if (m->chat_template_source != NULL)
			ext = openai_json_set(ext, "chat_template_source",
			    json_string(m->chat_template_source));
		if (m->model_meta != NULL && ext != NULL)
			json_object_update(ext, m->model_meta);
		if (m->latency_profile != NULL)
			ext = openai_json_set(ext, "latency_profile",
			    json_incref(m->latency_profile));
		model = openai_json_set(model, "tokstream", ext);
	}
	return model;
}

enum ts_err
openai_encode_models(struct ts_buf *b, const struct openai_model_info *m,
    const char *const *names, size_t n)
{
	struct openai_model_info one = *m;
	json_t *data = json_array();
	size_t k;

	for (k = 0; k < n && data != NULL; k++) {
		json_t *o;

		one.id = names[k];
		one.id_len = strlen(names[k]);
		o = model_json(&one);
		if (o == NULL || json_array_append_new(data, o) != 0) {
			json_decref(data);
			data = NULL;
		}
	}
	return emit(b, data ? json_pack("{s:s,s:o}", "object", "list",
	    "data", data) : NULL);
}

enum ts_err
openai_encode_model(struct ts_buf *b, const struct openai_model_info *m)
{
	return emit(b, model_json(m));
}

/* ---- vLLM's tokenizer endpoints ----------------------------------------- */

enum ts_err
openai_encode_tokenize(struct ts_buf *b, const struct openai_tokens *t)
{
	struct jw w;
	size_t i, len;
	const char *p;

	jw_begin(&w, b);
	JW_LIT(&w, "{\"count\":");
	jw_int(&w, (long long)t->n);
	JW_LIT(&w, ",\"max_model_len\":");
	jw_int(&w, (long long)t->max_model_len);
	JW_LIT(&w, ",\"tokens\":[");
	for (i = 0; i < t->n && w.rc == TS_OK; i++) {
		if (i > 0)
			JW_LIT(&w, ",");
		jw_int(&w, (long long)t->ids[i]);
	}
	JW_LIT(&w, "],\"token_strs\":");
	if (t->text == NULL) {
		JW_LIT(&w, "null");
	} else {
		JW_LIT(&w, "[");
		for (i = 0; i < t->n && w.rc == TS_OK; i++) {
			if (i > 0)
				JW_LIT(&w, ",");
			p = t->text(t->ctx, t->ids[i], &len);
			token_string(&w, p != NULL ? p : "", p != NULL ? len :
			    0);
		}
		JW_LIT(&w, "]");
	}
	JW_LIT(&w, "}");
	return jw_end(&w);
}

size_t
openai_tokenize_bound(size_t n, size_t text_bytes, int strs)
{
	/* the fixed part: {"count":N,"max_model_len":N,"tokens":[],
	 * "token_strs":null} with two 20-digit numbers, 97 bytes, rounded
	 * up (an empty prompt's answer is that and no more); per id
	 * "4294967295,"; per string its quotes and comma, its text escaped
	 * (6 bytes a byte at most: \u00XX), or the bytes: form of a text
	 * that is not UTF-8 (6 + 64 x 5 bytes at most, escaped) */
	return 128 + n * 11 + (strs ? n * (3 + 6 + 64 * 5) + 6 * text_bytes :
	    0);
}

enum ts_err
openai_encode_detokenize(struct ts_buf *b, const char *text, size_t len)
{
	struct jw w;

	jw_begin(&w, b);
	JW_LIT(&w, "{\"prompt\":");
	jw_str(&w, text, len);
	JW_LIT(&w, "}");
	return jw_end(&w);
}
