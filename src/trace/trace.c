/*
 * trace/trace.c - trace files, version 1: the reader, the line encoders
 * and the writer (trace.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "trace/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- base64 (RFC 4648 section 4, padded) ------------------------------ */

static const char trace_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* (p, len) in base64 with padding; caller frees. */
static char *
trace_b64_encode(const unsigned char *p, size_t len, size_t *out_len)
{
	size_t n = (len + 2) / 3 * 4, i, k = 0;
	char *s = xmalloc(n + 1);
	uint32_t v;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		s[k++] = trace_b64_alphabet[v >> 18 & 63];
		s[k++] = trace_b64_alphabet[v >> 12 & 63];
		s[k++] = trace_b64_alphabet[v >> 6 & 63];
		s[k++] = trace_b64_alphabet[v & 63];
	}
	if (i < len) {
		v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		s[k++] = trace_b64_alphabet[v >> 18 & 63];
		s[k++] = trace_b64_alphabet[v >> 12 & 63];
		s[k++] = i + 1 < len ? trace_b64_alphabet[v >> 6 & 63] : '=';
		s[k++] = '=';
	}
	s[k] = '\0';
	*out_len = k;
	return s;
}

/* The value of base64 digit c, or -1. */
static int
trace_b64_digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decodes padded base64 (s, n) into a new buffer (NUL-terminated one past
 * *out_len; caller frees). Returns NULL when s is not base64: a length
 * that is not a multiple of 4, a byte outside the alphabet, or padding
 * anywhere but at the end.
 */
static unsigned char *
trace_b64_decode(const char *s, size_t n, size_t *out_len)
{
	unsigned char *o;
	size_t i, k = 0, pad = 0;
	uint32_t v;
	int d, j;

	if (n % 4 != 0)
		return NULL;
	if (n > 0 && s[n - 1] == '=')
		pad = n > 1 && s[n - 2] == '=' ? 2 : 1;
	o = xmalloc(n / 4 * 3 + 1);
	for (i = 0; i < n; i += 4) {
		v = 0;
		for (j = 0; j < 4; j++) {
			if (i + 4 == n && j >= 4 - (int)pad) {
				v <<= 6;
				continue;
			}
			if ((d = trace_b64_digit((unsigned char)s[i +
			    (size_t)j])) < 0) {
				free(o);
				return NULL;
			}
			v = v << 6 | (uint32_t)d;
		}
		o[k++] = (unsigned char)(v >> 16);
		if (i + 4 < n || pad < 2)
			o[k++] = (unsigned char)(v >> 8);
		if (i + 4 < n || pad < 1)
			o[k++] = (unsigned char)v;
	}
	o[k] = '\0';
	*out_len = k;
	return o;
}

/* ---- encoders ----------------------------------------------------------- */

json_t *
trace_bytes_json(const void *p, size_t len)
{
	json_t *j = json_stringn(p != NULL ? p : "", len);
	char *s;
	size_t n;

	if (j != NULL)
		return j;       /* valid UTF-8 */
	s = trace_b64_encode(p, len, &n);
	j = json_pack("{s:s#}", "b64", s, (int)n);
	free(s);
	if (j == NULL)
		abort();        /* base64 is ASCII: allocation only */
	return j;
}

/* Adds integer v to o as key, or null when v < 0 and `null_below`,
 * or nothing when v < 0 otherwise. */
static void
trace_set_count(json_t *o, const char *key, long v, int null_below)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
	else if (null_below)
		json_object_set_new(o, key, json_null());
}

/* Dumps o (a reference taken) compact, with "\n", onto out. */
static enum ts_err
trace_put_json(json_t *o, struct ts_buf *out)
{
	char *s = json_dumps(o, JSON_COMPACT);
	size_t n, before = out->len;
	enum ts_err rc;

	json_decref(o);
	if (s == NULL)
		abort();        /* every string was checked: allocation */
	n = strlen(s);
	rc = ts_buf_append(out, s, n);
	if (rc == TS_OK && (rc = ts_buf_append(out, "\n", 1)) != TS_OK)
		out->len = before;
	free(s);
	return rc;
}

/* A NUL-terminated string, or "" for NULL, as trace_bytes_json(). */
static json_t *
trace_str_json(const char *s)
{
	return trace_bytes_json(s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

enum ts_err
trace_encode_header(const struct trace *t, struct ts_buf *out)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("header"));
	json_object_set_new(o, "tokstream_trace",
	    json_integer(TRACE_VERSION));
	json_object_set_new(o, "tool", trace_str_json(t->tool));
	json_object_set_new(o, "created", trace_str_json(t->created));
	json_object_set_new(o, "target", trace_str_json(t->target));
	json_object_set_new(o, "endpoint", trace_str_json(t->endpoint));
	json_object_set_new(o, "options", t->options != NULL ?
	    json_incref(t->options) : json_object());
	return trace_put_json(o, out);
}

enum ts_err
trace_encode_request(const struct trace_request *r, struct ts_buf *out)
{
	json_t *o = json_object(), *a, *body;
	size_t i;

	json_object_set_new(o, "type", json_string("request"));
	json_object_set_new(o, "i", json_integer(r->i));
	json_object_set_new(o, "start_us", json_integer(r->start_us));
	json_object_set_new(o, "end_us", json_integer(r->end_us));
	json_object_set_new(o, "method", trace_str_json(r->method));
	json_object_set_new(o, "path", trace_str_json(r->path));
	body = trace_bytes_json(r->body, r->body_len);
	if (json_is_string(body)) {
		json_object_set_new(o, "body", body);
	} else {
		json_object_set(o, "body_b64", json_object_get(body, "b64"));
		json_decref(body);
	}
	json_object_set_new(o, "status", json_integer(r->status));
	a = json_array();
	for (i = 0; i < r->nheaders; i++)
		json_array_append_new(a, json_pack("[o,o]",
		    trace_bytes_json(r->headers[i].name,
		    r->headers[i].name_len),
		    trace_bytes_json(r->headers[i].value,
		    r->headers[i].value_len)));
	json_object_set_new(o, "headers", a);
	a = json_array();
	for (i = 0; i < r->nchunks; i++)
		json_array_append_new(a, json_pack("[I,o]",
		    (json_int_t)r->chunks[i].t_us,
		    trace_bytes_json(r->chunks[i].bytes, r->chunks[i].len)));
	json_object_set_new(o, "chunks", a);
	a = json_array();
	for (i = 0; i < r->ntoken_events; i++)
		json_array_append_new(a, json_pack("[I,I]",
		    (json_int_t)r->token_events[i].t_us,
		    (json_int_t)r->token_events[i].n));
	json_object_set_new(o, "token_events", a);
	trace_set_count(o, "prompt_tokens", r->prompt_tokens, 0);
	trace_set_count(o, "output_tokens", r->output_tokens, 0);
	trace_set_count(o, "cached_tokens", r->cached_tokens, 1);
	json_object_set_new(o, "warmup", json_boolean(r->warmup));
	json_object_set_new(o, "error", r->error != NULL ?
	    trace_str_json(r->error) : json_null());
	return trace_put_json(o, out);
}

enum ts_err
trace_encode_concurrency(const struct trace_sample *s, size_t n,
    struct ts_buf *out)
{
	json_t *o = json_object(), *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, json_pack("[I,I]",
		    (json_int_t)s[i].t_us, (json_int_t)s[i].n));
	json_object_set_new(o, "type", json_string("concurrency"));
	json_object_set_new(o, "samples", a);
	return trace_put_json(o, out);
}

/* ---- writer ------------------------------------------------------------- */

enum ts_err
trace_writer_open(struct trace_writer *w, const char *path)
{
	memset(w, 0, sizeof(*w));
	if (strcmp(path, "-") == 0) {
		w->f = stdout;
		w->is_stdout = 1;
		return TS_OK;
	}
	if ((w->f = fopen(path, "w")) == NULL) {
		w->saved_errno = errno;
		return TS_ESYS;
	}
	return TS_OK;
}

enum ts_err
trace_writer_put(struct trace_writer *w, const char *line, size_t len)
{
	if (w->f == NULL || w->saved_errno != 0)
		return TS_ESYS;
	if (fwrite(line, 1, len, w->f) != len) {
		w->saved_errno = errno != 0 ? errno : EIO;
		return TS_ESYS;
	}
	w->bytes += len;
	return TS_OK;
}

enum ts_err
trace_writer_close(struct trace_writer *w)
{
	int failed = w->saved_errno != 0;

	if (w->f == NULL)
		return TS_ESYS;
	if (fflush(w->f) != 0 && !failed) {
		w->saved_errno = errno;
		failed = 1;
	}
	if (!w->is_stdout && fclose(w->f) != 0 && !failed) {
		w->saved_errno = errno;
		failed = 1;
	}
	w->f = NULL;
	return failed ? TS_ESYS : TS_OK;
}

/* ---- reader ------------------------------------------------------------- */

static enum ts_err trace_fail(struct trace_error *err, long line,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fills *err; returns TS_EFORMAT. */
static enum ts_err
trace_fail(struct trace_error *err, long line, const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return TS_EFORMAT;
}

/*
 * The bytes of j, a JSON string or {"b64":"..."}, into a new buffer
 * (NUL-terminated one past *len; caller frees). NULL when j is neither.
 */
static unsigned char *
trace_bytes_of(const json_t *j, size_t *len)
{
	const json_t *b;
	unsigned char *p;

	if (json_is_string(j)) {
		*len = json_string_length(j);
		p = xmalloc(*len + 1);
		memcpy(p, json_string_value(j), *len);
		p[*len] = '\0';
		return p;
	}
	b = json_object_get(j, "b64");
	if (!json_is_string(b))
		return NULL;
	return trace_b64_decode(json_string_value(b), json_string_length(b),
	    len);
}

/* A string member of the header: copied, "" when absent. Returns TS_OK
 * or TS_EFORMAT naming key. */
static enum ts_err
trace_header_str(const json_t *o, const char *key, char **out, long line,
    struct trace_error *err)
{
	const json_t *j = json_object_get(o, key);
	size_t n;

	if (j == NULL) {
		*out = xstrndup("", 0);
		return TS_OK;
	}
	if ((*out = (char *)trace_bytes_of(j, &n)) == NULL)
		return trace_fail(err, line, "header: \"%s\" is not a string",
		    key);
	return TS_OK;
}

/* The header line o into t. */
static enum ts_err
trace_read_header(const json_t *o, struct trace *t, long line,
    struct trace_error *err)
{
	const json_t *v = json_object_get(o, "tokstream_trace"), *opt;
	enum ts_err rc;

	if (!json_is_integer(v))
		return trace_fail(err, line, "header: no integer "
		    "\"tokstream_trace\" (the version)");
	if (json_integer_value(v) != TRACE_VERSION)
		return trace_fail(err, line, "trace version %" JSON_INTEGER_FORMAT
		    ": this reader knows version %d only",
		    json_integer_value(v), TRACE_VERSION);
	t->version = TRACE_VERSION;
	if ((rc = trace_header_str(o, "tool", &t->tool, line, err)) !=
	    TS_OK ||
	    (rc = trace_header_str(o, "created", &t->created, line, err)) !=
	    TS_OK ||
	    (rc = trace_header_str(o, "target", &t->target, line, err)) !=
	    TS_OK ||
	    (rc = trace_header_str(o, "endpoint", &t->endpoint, line, err)) !=
	    TS_OK)
		return rc;
	opt = json_object_get(o, "options");
	if (opt != NULL && !json_is_object(opt))
		return trace_fail(err, line, "header: \"options\" is not an "
		    "object");
	t->options = opt != NULL ? json_deep_copy(opt) : json_object();
	return TS_OK;
}

/*
 * An integer member key of o into *out: absent gives `dflt` when
 * `optional` (a null too when null_ok), else an error; present it must
 * be an integer >= lo.
 */
static enum ts_err
trace_int(const json_t *o, const char *key, int optional, int null_ok,
    int64_t lo, int64_t dflt, int64_t *out, long line,
    struct trace_error *err)
{
	const json_t *j = json_object_get(o, key);

	if (j == NULL || (null_ok && json_is_null(j))) {
		if (!optional)
			return trace_fail(err, line, "request: no \"%s\"", key);
		*out = dflt;
		return TS_OK;
	}
	if (!json_is_integer(j) || json_integer_value(j) < lo)
		return trace_fail(err, line, "request: \"%s\" is not an "
		    "integer >= %" PRId64, key, lo);
	*out = json_integer_value(j);
	return TS_OK;
}

/* A string member (JSON string or {"b64"}) into *out, owned; absent or
 * null gives NULL when optional. */
static enum ts_err
trace_str(const json_t *o, const char *key, int optional, char **out,
    long line, struct trace_error *err)
{
	const json_t *j = json_object_get(o, key);
	size_t n;

	*out = NULL;
	if (j == NULL || json_is_null(j)) {
		if (optional)
			return TS_OK;
		return trace_fail(err, line, "request: no \"%s\"", key);
	}
	if ((*out = (char *)trace_bytes_of(j, &n)) == NULL)
		return trace_fail(err, line, "request: \"%s\" is not a string "
		    "or {\"b64\":...}", key);
	return TS_OK;
}

/* The array member key of o into *out: NULL when it is absent and
 * optional (json_array_size(NULL) is 0). TS_EFORMAT when it is
 * something else, or absent and required. */
static enum ts_err
trace_array(const json_t *o, const char *key, int optional,
    const json_t **out, long line, struct trace_error *err)
{
	const json_t *j = json_object_get(o, key);

	*out = j;
	if (j == NULL && optional)
		return TS_OK;
	if (!json_is_array(j))
		return trace_fail(err, line, "request: \"%s\" is %s", key,
		    j == NULL ? "missing" : "not an array");
	return TS_OK;
}

/* The pair [t_us, x] element k of array `what`: t_us an integer >= 0
 * into *t_us, x returned (NULL and err filled on a bad shape). */
static const json_t *
trace_pair(const json_t *e, const char *what, size_t k, int64_t *t_us,
    long line, struct trace_error *err)
{
	const json_t *t = json_array_get(e, 0);

	if (!json_is_array(e) || json_array_size(e) < 2 ||
	    !json_is_integer(t) || json_integer_value(t) < 0) {
		trace_fail(err, line, "request: %s[%zu] is not [t_us >= 0, "
		    "...]", what, k);
		return NULL;
	}
	*t_us = json_integer_value(t);
	return json_array_get(e, 1);
}

/* The headers array of o into r. */
static enum ts_err
trace_read_headers(const json_t *o, struct trace_request *r, long line,
    struct trace_error *err)
{
	const json_t *a, *e;
	struct trace_hdr *h;
	size_t k;

	if (trace_array(o, "headers", 1, &a, line, err) != TS_OK)
		return TS_EFORMAT;
	r->headers = xcalloc(json_array_size(a) + 1, sizeof(*r->headers));
	for (k = 0; k < json_array_size(a); k++) {
		e = json_array_get(a, k);
		h = &r->headers[r->nheaders];
		if (!json_is_array(e) || json_array_size(e) < 2 ||
		    (h->name = (char *)trace_bytes_of(json_array_get(e, 0),
		    &h->name_len)) == NULL ||
		    (h->value = (char *)trace_bytes_of(json_array_get(e, 1),
		    &h->value_len)) == NULL) {
			free(h->name);
			h->name = NULL;
			return trace_fail(err, line, "request: headers[%zu] is "
			    "not [name, value]", k);
		}
		r->nheaders++;
	}
	return TS_OK;
}

/* The chunks and token_events arrays of o into r. */
static enum ts_err
trace_read_chunks(const json_t *o, struct trace_request *r, long line,
    struct trace_error *err)
{
	const json_t *a, *x;
	struct trace_chunk *c;
	struct trace_token_event *te;
	size_t k;

	if (trace_array(o, "chunks", 0, &a, line, err) != TS_OK)
		return TS_EFORMAT;
	r->chunks = xcalloc(json_array_size(a) + 1, sizeof(*r->chunks));
	for (k = 0; k < json_array_size(a); k++) {
		c = &r->chunks[r->nchunks];
		if ((x = trace_pair(json_array_get(a, k), "chunks", k,
		    &c->t_us, line, err)) == NULL)
			return TS_EFORMAT;
		if ((c->bytes = trace_bytes_of(x, &c->len)) == NULL)
			return trace_fail(err, line, "request: chunks[%zu]'s "
			    "bytes are not a string or {\"b64\":...}", k);
		r->nchunks++;
	}
	if (trace_array(o, "token_events", 1, &a, line, err) != TS_OK)
		return TS_EFORMAT;
	r->token_events = xcalloc(json_array_size(a) + 1,
	    sizeof(*r->token_events));
	for (k = 0; k < json_array_size(a); k++) {
		te = &r->token_events[k];
		if ((x = trace_pair(json_array_get(a, k), "token_events", k,
		    &te->t_us, line, err)) == NULL)
			return TS_EFORMAT;
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return trace_fail(err, line, "request: token_events"
			    "[%zu]'s count is not an integer >= 0", k);
		te->n = (long)json_integer_value(x);
		r->ntoken_events++;
	}
	return TS_OK;
}

/* A request line o into r (zeroed by the caller). */
static enum ts_err
trace_read_request(const json_t *o, struct trace_request *r, long line,
    struct trace_error *err)
{
	const json_t *j;
	enum ts_err rc;
	int64_t v;

	r->prompt_tokens = r->output_tokens = r->cached_tokens = -1;
	if ((rc = trace_int(o, "i", 0, 0, 0, 0, &v, line, err)) != TS_OK)
		return rc;
	r->i = (long)v;
	if ((rc = trace_int(o, "start_us", 0, 0, 0, 0, &r->start_us, line,
	    err)) != TS_OK ||
	    (rc = trace_int(o, "end_us", 0, 0, 0, 0, &r->end_us, line,
	    err)) != TS_OK ||
	    (rc = trace_str(o, "method", 0, &r->method, line, err)) != TS_OK ||
	    (rc = trace_str(o, "path", 0, &r->path, line, err)) != TS_OK)
		return rc;
	if ((j = json_object_get(o, "body_b64")) != NULL &&
	    json_object_get(o, "body") == NULL) {
		r->body = json_is_string(j) ? trace_b64_decode(
		    json_string_value(j), json_string_length(j),
		    &r->body_len) : NULL;
		if (r->body == NULL)
			return trace_fail(err, line, "request: \"body_b64\" is "
			    "not base64");
	} else if ((j = json_object_get(o, "body")) != NULL &&
	    !json_is_null(j)) {
		if ((r->body = trace_bytes_of(j, &r->body_len)) == NULL)
			return trace_fail(err, line, "request: \"body\" is not "
			    "a string");
	} else {
		r->body = (unsigned char *)xstrndup("", 0);
	}
	if ((rc = trace_int(o, "status", 0, 0, 0, 0, &v, line, err)) != TS_OK)
		return rc;
	r->status = (long)v;
	if ((rc = trace_read_headers(o, r, line, err)) != TS_OK ||
	    (rc = trace_read_chunks(o, r, line, err)) != TS_OK)
		return rc;
	if ((rc = trace_int(o, "prompt_tokens", 1, 1, 0, -1, &v, line,
	    err)) != TS_OK)
		return rc;
	r->prompt_tokens = (long)v;
	if ((rc = trace_int(o, "output_tokens", 1, 1, 0, -1, &v, line,
	    err)) != TS_OK)
		return rc;
	r->output_tokens = (long)v;
	if ((rc = trace_int(o, "cached_tokens", 1, 1, 0, -1, &v, line,
	    err)) != TS_OK)
		return rc;
	r->cached_tokens = (long)v;
	j = json_object_get(o, "warmup");
	if (j != NULL && !json_is_boolean(j))
		return trace_fail(err, line, "request: \"warmup\" is not a "
		    "boolean");
	r->warmup = json_is_true(j);
	return trace_str(o, "error", 1, &r->error, line, err);
}

/* The concurrency line o into t. */
static enum ts_err
trace_read_concurrency(const json_t *o, struct trace *t, long line,
    struct trace_error *err)
{
	const json_t *a = json_object_get(o, "samples"), *x;
	size_t k;

	if (t->has_concurrency)
		return trace_fail(err, line, "a second concurrency line");
	if (!json_is_array(a))
		return trace_fail(err, line, "concurrency: \"samples\" is not "
		    "an array");
	t->samples = xcalloc(json_array_size(a) + 1, sizeof(*t->samples));
	for (k = 0; k < json_array_size(a); k++) {
		if ((x = trace_pair(json_array_get(a, k), "samples", k,
		    &t->samples[k].t_us, line, err)) == NULL) {
			/* trace_pair's text says "request:": say which */
			return trace_fail(err, line, "concurrency: samples"
			    "[%zu] is not [t_us >= 0, n >= 0]", k);
		}
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return trace_fail(err, line, "concurrency: samples"
			    "[%zu] is not [t_us >= 0, n >= 0]", k);
		t->samples[k].n = (long)json_integer_value(x);
		t->nsamples++;
	}
	t->has_concurrency = 1;
	return TS_OK;
}

/* One line (s, n), number `line`, into t; *seen_header says whether the
 * header came. */
static enum ts_err
trace_read_line(const char *s, size_t n, long line, int *seen_header,
    struct trace *t, size_t *cap, struct trace_error *err)
{
	json_error_t jerr;
	json_t *o;
	const char *type;
	enum ts_err rc;

	o = json_loadb(s, n, JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(o)) {
		if (o == NULL)
			rc = trace_fail(err, line, "not JSON: %s (column %d)",
			    jerr.text, jerr.column);
		else
			rc = trace_fail(err, line, "not a JSON object");
		json_decref(o);
		return rc;
	}
	type = json_string_value(json_object_get(o, "type"));
	if (!*seen_header) {
		if (type == NULL || strcmp(type, "header") != 0)
			rc = trace_fail(err, line, "the first line is not a "
			    "trace header ({\"type\":\"header\","
			    "\"tokstream_trace\":1,...})");
		else
			rc = trace_read_header(o, t, line, err);
		*seen_header = 1;
	} else if (type == NULL) {
		rc = trace_fail(err, line, "no string \"type\"");
	} else if (strcmp(type, "header") == 0) {
		rc = trace_fail(err, line, "a second header");
	} else if (strcmp(type, "request") == 0) {
		if (t->nrequests == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			t->requests = xrealloc(t->requests,
			    *cap * sizeof(*t->requests));
		}
		memset(&t->requests[t->nrequests], 0,
		    sizeof(t->requests[0]));
		/* counted before reading, so trace_free() frees a half */
		rc = trace_read_request(o, &t->requests[t->nrequests++], line,
		    err);
	} else if (strcmp(type, "concurrency") == 0) {
		rc = trace_read_concurrency(o, t, line, err);
	} else {
		rc = TS_OK;     /* a later minor version's line: skipped */
	}
	json_decref(o);
	return rc;
}

enum ts_err
trace_load_mem(const char *buf, size_t len, size_t max_bytes,
    struct trace *t, struct trace_error *err)
{
	const char *p = buf, *end = buf + len, *nl;
	size_t n, k, cap = 0;
	long line = 0;
	int seen_header = 0;
	enum ts_err rc;

	memset(t, 0, sizeof(*t));
	memset(err, 0, sizeof(*err));
	if (len > max_bytes) {
		snprintf(err->text, sizeof(err->text), "the trace is %zu "
		    "bytes, more than the limit of %zu", len, max_bytes);
		return TS_ELIMIT;
	}
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		line++;
		for (k = 0; k < n && (p[k] == ' ' || p[k] == '\t' ||
		    p[k] == '\r'); k++)
			;
		if (k < n && (rc = trace_read_line(p, n, line, &seen_header,
		    t, &cap, err)) != TS_OK)
			return rc;
		p += n + (nl != NULL);
	}
	if (!seen_header)
		return trace_fail(err, 0, "no trace header: the file is "
		    "empty");
	return TS_OK;
}

enum ts_err
trace_load(const char *path, size_t max_bytes, struct trace *t,
    struct trace_error *err)
{
	struct stat st;
	FILE *f;
	char *buf;
	size_t len = 0, got, cap;
	enum ts_err rc;
	int e;

	memset(t, 0, sizeof(*t));
	memset(err, 0, sizeof(*err));
	if (max_bytes > SIZE_MAX / 4)
		max_bytes = SIZE_MAX / 4;       /* max_bytes + 1 stays sane */
	if ((f = fopen(path, "rb")) == NULL) {
		e = errno;
		snprintf(err->text, sizeof(err->text), "cannot open: %s",
		    strerror(e));
		return TS_ESYS;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > (uint64_t)max_bytes) {
		fclose(f);
		snprintf(err->text, sizeof(err->text), "the trace is %lld "
		    "bytes, more than the limit of %zu",
		    (long long)st.st_size, max_bytes);
		return TS_ELIMIT;
	}
	/* read at most one byte past the limit: a pipe, or a file that
	 * grew since fstat() */
	cap = max_bytes < 65536 ? max_bytes + 1 : 65536;
	buf = xmalloc(cap);
	for (;;) {
		if (len == cap) {
			if (cap > max_bytes)
				break;
			cap = cap > max_bytes / 2 ? max_bytes + 1 : cap * 2;
			buf = xrealloc(buf, cap);
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		e = errno;
		fclose(f);
		free(buf);
		snprintf(err->text, sizeof(err->text), "cannot read: %s",
		    strerror(e));
		return TS_ESYS;
	}
	fclose(f);
	if (len > max_bytes) {
		free(buf);
		snprintf(err->text, sizeof(err->text), "the trace is more "
		    "than the limit of %zu bytes", max_bytes);
		return TS_ELIMIT;
	}
	rc = trace_load_mem(buf, len, max_bytes, t, err);
	free(buf);
	return rc;
}

void
trace_free(struct trace *t)
{
	struct trace_request *r;
	size_t i, k;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrequests; i++) {
		r = &t->requests[i];
		free(r->method);
		free(r->path);
		free(r->body);
		for (k = 0; k < r->nheaders; k++) {
			free(r->headers[k].name);
			free(r->headers[k].value);
		}
		free(r->headers);
		for (k = 0; k < r->nchunks; k++)
			free(r->chunks[k].bytes);
		free(r->chunks);
		free(r->token_events);
		free(r->error);
	}
	free(t->requests);
	free(t->samples);
	free(t->tool);
	free(t->created);
	free(t->target);
	free(t->endpoint);
	json_decref(t->options);
	memset(t, 0, sizeof(*t));
}
