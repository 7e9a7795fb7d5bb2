/*
 * fuzz_sse_roundtrip.c - the SSE encoder (src/proto/sse.h) against tokbench's
 * parser (src/bench/sse_parse.h): whatever the server encodes, a WHATWG
 * client reads back unchanged. The input is a token's bytes.
 *
 * Properties, each checked with abort():
 *  - token: if the input is valid UTF-8 (json_stringn accepts it),
 *    sse_encode_id(<resume id>) + sse_encode_token succeed, the bytes are
 *    "id: <id>\n" "data: <one line>\n\n" with no CR, and the parser, fed
 *    the stream in two pieces split at a point derived from the input,
 *    gives exactly one "message" event with that id whose data is the JSON
 *    object {"token": <exactly the input bytes>}; if it is not UTF-8,
 *    sse_encode_token returns TS_EINVAL and appends nothing;
 *  - for every encoder, a buffer limit too small for what it appends
 *    gives TS_ELIMIT and leaves the buffer as it was;
 *  - data: sse_encode_data(input), any bytes, parses back to one event
 *    whose data is the input with CRLF and CR turned into LF;
 *  - id: sse_encode_id(input) refuses CR, LF and NUL with TS_EINVAL and
 *    otherwise round-trips exactly as the event's id;
 *  - comment: sse_encode_comment(input) refuses CR and LF, otherwise the
 *    parser reports the comment " <input>" and no event;
 *  - error: sse_encode_error with the input (up to its first NUL) as the
 *    message parses back to {"error":{"message":<it>,...}} when UTF-8.
 */
#include <jansson.h>
#include <string.h>

#include "bench/sse_parse.h"
#include "fuzz.h"
#include "proto/resume.h"
#include "proto/sse.h"

#define OUT_MAX (1u << 24)      /* bytes; far above any input's event */

/* What the parser reported: the first event (copied), counts, comments. */
struct seen {
	size_t events;
	char *type, *data, *id;
	size_t type_len, data_len, id_len;
	size_t comments;
	char *comment;
	size_t comment_len;
};

static char *
dup_bytes(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);

	FUZZ_CHECK(p != NULL);
	if (n > 0)
		memcpy(p, s, n);
	return p;
}

static enum ts_err
on_event(void *ud, const struct sse_event *ev)
{
	struct seen *s = ud;

	if (s->events++ == 0) {
		s->type = dup_bytes(ev->type, ev->type_len);
		s->type_len = ev->type_len;
		s->data = dup_bytes(ev->data, ev->data_len);
		s->data_len = ev->data_len;
		s->id = dup_bytes(ev->id, ev->id_len);
		s->id_len = ev->id_len;
	}
	return TS_OK;
}

static void
on_comment(void *ud, const char *text, size_t len)
{
	struct seen *s = ud;

	if (s->comments++ == 0) {
		s->comment = dup_bytes(text, len);
		s->comment_len = len;
	}
}

static void
seen_free(struct seen *s)
{
	free(s->type);
	free(s->data);
	free(s->id);
	free(s->comment);
	memset(s, 0, sizeof(*s));
}

/*
 * Parses (p, len) fed as two exact-size copies cut at `cut` (a sanitizer
 * then catches a read past either piece) and records what it saw.
 */
static void
parse_split(const char *p, size_t len, size_t cut, struct seen *s)
{
	struct sse_parser ps;
	char *a, *b;

	memset(s, 0, sizeof(*s));
	cut = len ? cut % (len + 1) : 0;
	a = dup_bytes(p, cut);
	b = dup_bytes(p + cut, len - cut);
	sse_parser_init(&ps, on_event, on_comment, s);
	ps.max_bytes = OUT_MAX;
	FUZZ_CHECK(sse_parser_feed(&ps, a, cut) == TS_OK);
	FUZZ_CHECK(sse_parser_feed(&ps, b, len - cut) == TS_OK);
	sse_parser_free(&ps);
	free(a);
	free(b);
}

static int
has_byte(const char *s, size_t len, char c)
{
	return len > 0 && memchr(s, c, len) != NULL;
}

static size_t
count_byte(const char *s, size_t len, char c)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += s[i] == c;
	return n;
}

/* The data a WHATWG parser rebuilds: CRLF and lone CR become LF. */
static size_t
normalise_eol(const char *in, size_t len, char *out)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (in[i] == '\r') {
			out[n++] = '\n';
			if (i + 1 < len && in[i + 1] == '\n')
				i++;
		} else {
			out[n++] = in[i];
		}
	}
	return n;
}

typedef enum ts_err (*encode_fn)(struct ts_buf *, const char *, size_t);

/*
 * With room for less than the `need` bytes the encoder appends, it must
 * return TS_ELIMIT and leave the buffer as it was (sse.h).
 */
static void
check_too_small(encode_fn encode, const char *in, size_t len, size_t need,
    uint64_t h)
{
	struct ts_buf b;

	ts_buf_init(&b, 1 + (size_t)h % need);
	FUZZ_CHECK(ts_buf_append(&b, "x", 1) == TS_OK);
	FUZZ_CHECK(encode(&b, in, len) == TS_ELIMIT);
	FUZZ_CHECK(b.len == 1 && b.p[0] == 'x');
	ts_buf_free(&b);
}

/* The token event: id + data round trip, and the limit behaviour. */
static void
check_token(const char *tok, size_t len, uint64_t h)
{
	struct resume_id rid;
	char idbuf[RESUME_ID_MAX + 1];
	size_t idlen, cut;
	struct ts_buf b;
	struct seen s;
	json_t *str, *root, *t;
	json_error_t jerr;
	int utf8;

	str = json_stringn(tok, len);
	utf8 = str != NULL;
	json_decref(str);

	/* An id as the server makes them, its parts derived from input. */
	rid.stream = 1 + h % 1000000007u;
	rid.key = fuzz_hash(h, "key", 3);
	rid.index = (h & 0x100) ? RESUME_INDEX_END : (h >> 9) % 100000;
	rid.instance = 0;               /* an unnamed server's, or b1's */
	if (h & 0x200)
		FUZZ_CHECK(resume_instance_parse("b1", 2, &rid.instance) ==
		    TS_OK);
	idlen = resume_id_format(idbuf, sizeof(idbuf), &rid);
	FUZZ_CHECK(idlen > 0);

	ts_buf_init(&b, OUT_MAX);
	FUZZ_CHECK(sse_encode_id(&b, idbuf, idlen) == TS_OK);
	FUZZ_CHECK(b.len == idlen + 5);
	if (!utf8) {
		FUZZ_CHECK(sse_encode_token(&b, tok, len) == TS_EINVAL);
		FUZZ_CHECK(b.len == idlen + 5);
		ts_buf_free(&b);
		return;
	}
	FUZZ_CHECK(sse_encode_token(&b, tok, len) == TS_OK);
	/* "id: ...\n" "data: {...}\n" "\n": three LFs, never a CR. */
	FUZZ_CHECK(count_byte(b.p, b.len, '\n') == 3);
	FUZZ_CHECK(!has_byte(b.p, b.len, '\r'));
	FUZZ_CHECK(memcmp(b.p + idlen + 5, "data: {", 7) == 0);
	FUZZ_CHECK(memcmp(b.p + b.len - 3, "}\n\n", 3) == 0);

	cut = (size_t)(h >> 17);
	parse_split(b.p, b.len, cut, &s);
	FUZZ_CHECK(s.events == 1 && s.comments == 0);
	FUZZ_CHECK(s.type_len == 7 && memcmp(s.type, "message", 7) == 0);
	FUZZ_CHECK(s.id_len == idlen && memcmp(s.id, idbuf, idlen) == 0);
	root = json_loadb(s.data, s.data_len,
	    JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	FUZZ_CHECK(json_is_object(root) && json_object_size(root) == 1);
	t = json_object_get(root, "token");
	FUZZ_CHECK(json_is_string(t));
	FUZZ_CHECK(json_string_length(t) == len);
	FUZZ_CHECK(len == 0 || memcmp(json_string_value(t), tok, len) == 0);
	json_decref(root);
	seen_free(&s);

	check_too_small(sse_encode_token, tok, len, b.len - (idlen + 5),
	    h >> 23);
	ts_buf_free(&b);
}

/* Any bytes as event data: back with line ends normalised to LF. */
static void
check_data(const char *in, size_t len, uint64_t h)
{
	struct ts_buf b;
	struct seen s;
	char *want = malloc(len ? len : 1);
	size_t want_len;

	FUZZ_CHECK(want != NULL);
	want_len = normalise_eol(in, len, want);
	ts_buf_init(&b, OUT_MAX);
	FUZZ_CHECK(sse_encode_data(&b, in, len) == TS_OK);
	FUZZ_CHECK(!has_byte(b.p, b.len, '\r'));
	FUZZ_CHECK(b.len >= 8 && memcmp(b.p, "data: ", 6) == 0);
	FUZZ_CHECK(memcmp(b.p + b.len - 2, "\n\n", 2) == 0);
	/* One "data: " line per line of the input, then the empty line. */
	FUZZ_CHECK(count_byte(b.p, b.len, '\n') ==
	    count_byte(want, want_len, '\n') + 2);
	parse_split(b.p, b.len, (size_t)(h >> 7), &s);
	FUZZ_CHECK(s.events == 1 && s.comments == 0);
	FUZZ_CHECK(s.type_len == 7 && memcmp(s.type, "message", 7) == 0);
	FUZZ_CHECK(s.id_len == 0);
	FUZZ_CHECK(s.data_len == want_len);
	FUZZ_CHECK(want_len == 0 || memcmp(s.data, want, want_len) == 0);
	seen_free(&s);
	check_too_small(sse_encode_data, in, len, b.len, h >> 29);
	ts_buf_free(&b);
	free(want);
}

/* The input as an event id, then as a comment. */
static void
check_id_and_comment(const char *in, size_t len, uint64_t h)
{
	struct ts_buf b;
	struct seen s;
	int bad_id = has_byte(in, len, '\n') || has_byte(in, len, '\r') ||
	    has_byte(in, len, '\0');
	int bad_comment = has_byte(in, len, '\n') || has_byte(in, len, '\r');

	ts_buf_init(&b, OUT_MAX);
	if (bad_id) {
		FUZZ_CHECK(sse_encode_id(&b, in, len) == TS_EINVAL);
		FUZZ_CHECK(b.len == 0);
	} else {
		FUZZ_CHECK(sse_encode_id(&b, in, len) == TS_OK);
		FUZZ_CHECK(b.len == len + 5);
		check_too_small(sse_encode_id, in, len, b.len, h >> 13);
		FUZZ_CHECK(sse_encode_data(&b, "x", 1) == TS_OK);
		parse_split(b.p, b.len, (size_t)(h >> 3), &s);
		FUZZ_CHECK(s.events == 1);
		FUZZ_CHECK(s.data_len == 1 && s.data[0] == 'x');
		FUZZ_CHECK(s.id_len == len &&
		    (len == 0 || memcmp(s.id, in, len) == 0));
		seen_free(&s);
	}
	ts_buf_reset(&b);
	if (bad_comment) {
		FUZZ_CHECK(sse_encode_comment(&b, in, len) == TS_EINVAL);
		FUZZ_CHECK(b.len == 0);
	} else {
		FUZZ_CHECK(sse_encode_comment(&b, in, len) == TS_OK);
		FUZZ_CHECK(b.len == len + 4);
		check_too_small(sse_encode_comment, in, len, b.len, h >> 19);
		parse_split(b.p, b.len, (size_t)(h >> 5), &s);
		FUZZ_CHECK(s.events == 0 && s.comments == 1);
		FUZZ_CHECK(s.comment_len == len + 1 && s.comment[0] == ' ');
		FUZZ_CHECK(len == 0 || memcmp(s.comment + 1, in, len) == 0);
		seen_free(&s);
	}
	ts_buf_free(&b);
}

/* The input (to its first NUL) as an error event's message. */
static void
check_error(const char *in, size_t len, uint64_t h)
{
	size_t mlen = len > 0 && memchr(in, '\0', len) != NULL ?
	    (size_t)((const char *)memchr(in, '\0', len) - in) : len;
	char *msg = malloc(mlen + 1);
	json_t *str, *root, *e;
	json_error_t jerr;
	struct ts_buf b;
	struct seen s;
	enum ts_err rc;

	FUZZ_CHECK(msg != NULL);
	if (mlen > 0)
		memcpy(msg, in, mlen);
	msg[mlen] = '\0';
	str = json_stringn(msg, mlen);
	ts_buf_init(&b, OUT_MAX);
	rc = sse_encode_error(&b, msg, "invalid_request_error", "fuzz");
	if (str == NULL) {
		FUZZ_CHECK(rc == TS_EINVAL && b.len == 0);
	} else {
		FUZZ_CHECK(rc == TS_OK);
		parse_split(b.p, b.len, (size_t)(h >> 11), &s);
		FUZZ_CHECK(s.events == 1);
		root = json_loadb(s.data, s.data_len, JSON_REJECT_DUPLICATES,
		    &jerr);
		e = json_object_get(root, "error");
		FUZZ_CHECK(json_is_object(e) && json_object_size(e) == 3);
		FUZZ_CHECK(json_equal(json_object_get(e, "message"), str));
		FUZZ_CHECK(strcmp(json_string_value(json_object_get(e,
		    "code")), "fuzz") == 0);
		json_decref(root);
		seen_free(&s);
	}
	json_decref(str);
	ts_buf_free(&b);
	free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	uint64_t h = fuzz_hash(FUZZ_HASH_INIT, data, size);

	check_token(in, size, h);
	check_data(in, size, h);
	check_id_and_comment(in, size, h);
	check_error(in, size, h);
	return 0;
}
