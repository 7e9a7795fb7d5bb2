/*
 * fuzz_sse_parse.c - tokbench's incremental SSE parser
 * (src/bench/sse_parse.h) on arbitrary bytes, as a server's response.
 *
 * The input is fed four ways: whole, and in chunks of pseudo-random sizes
 * (1 to 64 bytes, sometimes larger; drawn from a generator seeded with a
 * hash of the input), each with the default limit and with a small
 * max_bytes (16..527, from the same hash). Every chunk is its own
 * exact-size allocation, so a sanitizer catches a read past a chunk.
 *
 * Properties, each checked with abort():
 *  - chunked and whole feeds give identical events (type, data, id),
 *    comments, result, retry value and last event id;
 *  - both agree with a reference parser below, a direct non-incremental
 *    transcription of WHATWG HTML 9.2.6 "Interpreting an event stream"
 *    plus tokbench's documented limit (a line, or the data buffer with
 *    its LFs, over max_bytes is TS_ELIMIT);
 *  - TS_ELIMIT is the only error, and once returned every later feed
 *    returns it again.
 */
#include <limits.h>
#include <string.h>

#include "bench/sse_parse.h"
#include "fuzz.h"

/* A growable byte log. */
struct log {
	char *p;
	size_t len, cap;
};

static void
log_put(struct log *l, const void *s, size_t n)
{
	if (l->len + n > l->cap) {
		l->cap = (l->len + n) * 2 + 64;
		l->p = realloc(l->p, l->cap);
		FUZZ_CHECK(l->p != NULL);
	}
	if (n > 0)
		memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* A tag and length-prefixed fields, so no content can fake a boundary. */
static void
log_field(struct log *l, const char *s, size_t n)
{
	log_put(l, &n, sizeof(n));
	log_put(l, s, n);
}

static void
log_event(struct log *l, const char *type, size_t type_len,
    const char *data, size_t data_len, const char *id, size_t id_len)
{
	log_put(l, "E", 1);
	log_field(l, type, type_len);
	log_field(l, data, data_len);
	log_field(l, id, id_len);
}

static void
log_comment(struct log *l, const char *text, size_t len)
{
	log_put(l, "C", 1);
	log_field(l, text, len);
}

static enum ts_err
on_event(void *ud, const struct sse_event *ev)
{
	log_event(ud, ev->type, ev->type_len, ev->data, ev->data_len, ev->id,
	    ev->id_len);
	return TS_OK;
}

static void
on_comment(void *ud, const char *text, size_t len)
{
	log_comment(ud, text, len);
}

/* What one way of parsing produced. */
struct outcome {
	struct log log;
	enum ts_err rc;
	long retry_ms;
	char *id;               /* last event id at the end */
	size_t id_len;
};

static void
outcome_free(struct outcome *o)
{
	free(o->log.p);
	free(o->id);
}

static int
outcome_equal(const struct outcome *a, const struct outcome *b)
{
	return a->rc == b->rc && a->retry_ms == b->retry_ms &&
	    a->log.len == b->log.len &&
	    (a->log.len == 0 || memcmp(a->log.p, b->log.p, a->log.len) == 0) &&
	    a->id_len == b->id_len &&
	    (a->id_len == 0 || memcmp(a->id, b->id, a->id_len) == 0);
}

/* Feeds (s, n) from a private exact-size copy. */
static enum ts_err
feed_copy(struct sse_parser *p, const char *s, size_t n)
{
	char *copy = malloc(n ? n : 1);
	enum ts_err rc;

	FUZZ_CHECK(copy != NULL);
	if (n > 0)
		memcpy(copy, s, n);
	rc = sse_parser_feed(p, copy, n);
	free(copy);
	return rc;
}

/*
 * Parses (in, len) with the incremental parser, whole when seed is 0,
 * else in chunks drawn from `seed`; stops at the first error, which must
 * be TS_ELIMIT and must stick.
 */
static void
run_parser(const char *in, size_t len, size_t max_bytes, uint64_t seed,
    struct outcome *o)
{
	struct sse_parser p;
	size_t pos = 0, n;

	memset(o, 0, sizeof(*o));
	sse_parser_init(&p, on_event, on_comment, &o->log);
	p.max_bytes = max_bytes;
	o->rc = TS_OK;
	if (seed == 0) {
		o->rc = feed_copy(&p, in, len);
	} else {
		while (pos < len && o->rc == TS_OK) {
			uint64_t r = fuzz_next(&seed);

			/* Mostly small pieces; now and then an empty or a
			 * large one. */
			n = (r & 0xf) == 0 ? (size_t)(r >> 8) % 4096 :
			    1 + (size_t)(r >> 8) % 64;
			if (n > len - pos)
				n = len - pos;
			o->rc = feed_copy(&p, in + pos, n);
			pos += n;
		}
	}
	FUZZ_CHECK(o->rc == TS_OK || o->rc == TS_ELIMIT);
	if (o->rc == TS_ELIMIT) {
		FUZZ_CHECK(feed_copy(&p, "\n\n", 2) == TS_ELIMIT);
		FUZZ_CHECK(feed_copy(&p, "", 0) == TS_ELIMIT);
	}
	o->retry_ms = p.retry_ms;
	o->id_len = p.id_len;
	o->id = malloc(p.id_len ? p.id_len : 1);
	FUZZ_CHECK(o->id != NULL);
	if (p.id_len > 0)
		memcpy(o->id, p.id, p.id_len);
	sse_parser_free(&p);
}

/* Reference parser state (WHATWG's "buffers"). */
struct ref {
	struct log data, type, id;
	long retry_ms;
	size_t max;
};

/* WHATWG "process the field" (tokbench: data over the limit fails). */
static enum ts_err
ref_field(struct ref *r, const char *name, size_t nlen, const char *val,
    size_t vlen)
{
	size_t i;
	long n = 0;

	if (nlen == 4 && memcmp(name, "data", 4) == 0) {
		if (r->data.len + vlen + 1 > r->max)
			return TS_ELIMIT;
		log_put(&r->data, val, vlen);
		log_put(&r->data, "\n", 1);
	} else if (nlen == 5 && memcmp(name, "event", 5) == 0) {
		r->type.len = 0;
		log_put(&r->type, val, vlen);
	} else if (nlen == 2 && memcmp(name, "id", 2) == 0) {
		if (vlen == 0 || memchr(val, '\0', vlen) == NULL) {
			r->id.len = 0;
			log_put(&r->id, val, vlen);
		}
	} else if (nlen == 5 && memcmp(name, "retry", 5) == 0) {
		if (vlen == 0)
			return TS_OK;
		for (i = 0; i < vlen; i++)
			if (val[i] < '0' || val[i] > '9')
				return TS_OK;
		for (i = 0; i < vlen; i++) {
			/* tokbench saturates instead of overflowing */
			if (n > (LONG_MAX - (val[i] - '0')) / 10) {
				n = LONG_MAX;
				break;
			}
			n = n * 10 + (val[i] - '0');
		}
		r->retry_ms = n;
	}
	return TS_OK;
}

/*
 * WHATWG 9.2.6 over the whole input at once: skip one leading BOM; split
 * into lines at CRLF, LF or CR; an unterminated last line is never
 * processed (but still counts against the line limit, which tokbench
 * checks as bytes arrive); empty line dispatches (data without its last
 * LF, type or "message", last event id; nothing if data is empty); ':'
 * starts a comment; "name:value" drops one space after the colon.
 */
static void
ref_parse(const char *in, size_t len, size_t max, struct outcome *o)
{
	struct ref r;
	size_t pos = 0;

	memset(&r, 0, sizeof(r));
	memset(o, 0, sizeof(*o));
	r.retry_ms = -1;
	r.max = max;
	o->rc = TS_OK;
	if (len >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0)
		pos = 3;
	while (pos < len) {
		const char *line = in + pos, *colon;
		size_t j = pos, n;

		while (j < len && in[j] != '\r' && in[j] != '\n')
			j++;
		n = j - pos;
		if (n > max) {
			o->rc = TS_ELIMIT;
			break;
		}
		if (j == len)
			break;          /* unterminated: never processed */
		pos = j + 1;
		if (in[j] == '\r' && pos < len && in[pos] == '\n')
			pos++;
		if (n == 0) {
			if (r.data.len > 0)
				log_event(&o->log,
				    r.type.len ? r.type.p : "message",
				    r.type.len ? r.type.len : 7, r.data.p,
				    r.data.len - 1, r.id.len ? r.id.p : "",
				    r.id.len);
			r.data.len = 0;
			r.type.len = 0;
			continue;
		}
		if (line[0] == ':') {
			log_comment(&o->log, line + 1, n - 1);
			continue;
		}
		colon = memchr(line, ':', n);
		if (colon == NULL) {
			o->rc = ref_field(&r, line, n, line + n, 0);
		} else {
			const char *v = colon + 1;
			size_t vlen = n - (size_t)(v - line);

			if (vlen > 0 && v[0] == ' ') {
				v++;
				vlen--;
			}
			o->rc = ref_field(&r, line, (size_t)(colon - line), v,
			    vlen);
		}
		if (o->rc != TS_OK)
			break;
	}
	o->retry_ms = r.retry_ms;
	o->id_len = r.id.len;
	o->id = malloc(r.id.len ? r.id.len : 1);
	FUZZ_CHECK(o->id != NULL);
	if (r.id.len > 0)
		memcpy(o->id, r.id.p, r.id.len);
	free(r.data.p);
	free(r.type.p);
	free(r.id.p);
}

/* All ways agree for one limit. */
static void
check_limit(const char *in, size_t len, size_t max, uint64_t seed)
{
	struct outcome whole, chunked, ref;

	run_parser(in, len, max, 0, &whole);
	run_parser(in, len, max, seed | 1, &chunked);
	ref_parse(in, len, max, &ref);
	FUZZ_CHECK(outcome_equal(&whole, &chunked));
	FUZZ_CHECK(outcome_equal(&whole, &ref));
	outcome_free(&whole);
	outcome_free(&chunked);
	outcome_free(&ref);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	uint64_t h = fuzz_hash(FUZZ_HASH_INIT, data, size);

	check_limit(in, size, SSE_PARSE_DEFAULT_MAX, h);
	check_limit(in, size, 16 + (size_t)(h >> 40) % 512,
	    fuzz_hash(h, "small", 5));
	return 0;
}
