/*
 * fuzz_query.c - http_parse_query and http_form_decode (src/proto/http.h) on
 * arbitrary bytes, as a GET /stream query string.
 *
 * Properties, each checked with abort():
 *  - http_form_decode of the whole input never writes more bytes than it
 *    read (the output buffer is exactly the input's size) and agrees with
 *    a reference decoder written from the WHATWG "urlencoded parser"
 *    rules: the same bytes, or the same offset of the first bad '%';
 *  - http_parse_query agrees with a reference model of the rules of
 *    docs/API.md "Request parameters" and "Errors": on TS_OK the prompt
 *    is non-NULL, NUL-terminated at prompt_len and equal to the decoded
 *    value, every number is the decoded one or its default and within
 *    its cap; on
 *    TS_EINVAL status is 400, type and code are set, the code is the
 *    model's, the message is NUL-terminated and the request owns nothing;
 *  - http_error_json of any error is JSON that jansson loads back, with
 *    the same type and code, and the message when it is UTF-8;
 *  - nothing leaks (LeakSanitizer under libFuzzer).
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_http.h"
#include "proto/http.h"

/* Names longer than this (encoded) are skipped undecoded by http.c: no
 * parameter name tokstream knows is that long even fully escaped. */
#define NAME_MAX_ENCODED 128

static int
hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Reference percent-decoder: '+' is a space, "%XY" is byte XY, any other
 * '%' is an error at its offset (tokstream refuses what WHATWG would pass
 * through). Returns the decoded length or -1 with *bad set.
 */
static long
ref_decode(const char *s, size_t len, char *out, size_t *bad)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '%') {
			if (len - i < 3 ||
			    hex((unsigned char)s[i + 1]) < 0 ||
			    hex((unsigned char)s[i + 2]) < 0) {
				*bad = i;
				return -1;
			}
			out[n++] = (char)(hex((unsigned char)s[i + 1]) << 4 |
			    hex((unsigned char)s[i + 2]));
			i += 2;
		} else {
			out[n++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	return (long)n;
}

/* The model's verdict on a query string. */
struct model {
	const char *code;               /* NULL: accepted */
	const char *prompt;             /* decoded, in `scratch` */
	size_t prompt_len;
	const char *leid;               /* last_event_id, or NULL */
	size_t leid_len;
	long ints[4];                   /* -1: not given */
};


/* A plain non-negative decimal no larger than max: the value, or -1. */
static long
ref_uint(const char *s, size_t len, long max)
{
	long v = 0;
	size_t i;

	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	return v;
}

/*
 * The rules of docs/API.md "Request parameters", left to right, first
 * error wins: empty pairs are skipped; more than 64 pairs is
 * too_many_params; a bad escape in a name
 * or value is invalid_percent_encoding, known name or not; unknown names
 * are ignored (and so are names that decode to NUL or to NAME_MAX_ENCODED
 * bytes or more, after their value is decoded); a known
 * name twice is duplicate_param; numbers are plain decimals within their
 * cap; no prompt is missing_prompt. `scratch` holds the decoded values
 * (2 * len bytes).
 */
static void
model_run(const char *qs, size_t len, char *scratch, struct model *m)
{
	size_t pos = 0, nparams = 0, used = 0, bad;
	unsigned seen = 0;
	int k;

	memset(m, 0, sizeof(*m));
	for (k = 0; k < 4; k++)
		m->ints[k] = -1;
	while (pos < len) {
		const char *pair = qs + pos, *amp, *eq, *val;
		size_t plen, nlen, vlen;
		char *name = scratch + used;   /* decoded name, then value */
		long n, v;
		int known;

		amp = memchr(pair, '&', len - pos);
		plen = amp ? (size_t)(amp - pair) : len - pos;
		pos += plen + 1;
		if (plen == 0)
			continue;
		if (++nparams > HTTP_MAX_QUERY_PARAMS) {
			m->code = "too_many_params";
			return;
		}
		eq = memchr(pair, '=', plen);
		nlen = eq ? (size_t)(eq - pair) : plen;
		n = ref_decode(pair, nlen, name, &bad);
		if (n < 0) {
			m->code = "invalid_percent_encoding";
			return;
		}
		known = n < NAME_MAX_ENCODED &&
		    memchr(name, '\0', (size_t)n) == NULL;
		used += (size_t)n;
		val = eq ? eq + 1 : pair + plen;
		vlen = (size_t)(pair + plen - val);
		v = ref_decode(val, vlen, scratch + used, &bad);
		if (v < 0) {
			m->code = "invalid_percent_encoding";
			return;
		}
		if (!known)
			continue;
		if ((size_t)n == 6 && memcmp(name, "prompt", 6) == 0) {
			if (seen & 16) {
				m->code = "duplicate_param";
				return;
			}
			seen |= 16;
			m->prompt = scratch + used;
			m->prompt_len = (size_t)v;
		} else if ((size_t)n == 13 &&
		    memcmp(name, "last_event_id", 13) == 0) {
			if (seen & 32) {
				m->code = "duplicate_param";
				return;
			}
			seen |= 32;
			m->leid = scratch + used;
			m->leid_len = (size_t)v;
		} else {
			for (k = 0; k < 4; k++) {
				if (strlen(fuzz_int_params[k].name) != (size_t)n ||
				    memcmp(name, fuzz_int_params[k].name, (size_t)n) != 0)
					continue;
				if (seen & 1u << k) {
					m->code = "duplicate_param";
					return;
				}
				seen |= 1u << k;
				m->ints[k] = ref_uint(scratch + used,
				    (size_t)v, fuzz_int_params[k].max);
				if (m->ints[k] < 0) {
					m->code = fuzz_int_params[k].code;
					return;
				}
			}
		}
		used += (size_t)v;
	}
	if (m->prompt == NULL)
		m->code = "missing_prompt";
}


/* http_form_decode against ref_decode on the whole input. */
static void
check_form_decode(const char *s, size_t len)
{
	char *out = malloc(len ? len : 1), *want = malloc(len ? len : 1);
	size_t out_len = (size_t)-1, bad = (size_t)-1, want_bad = 0;
	long n;

	FUZZ_CHECK(out != NULL && want != NULL);
	n = ref_decode(s, len, want, &want_bad);
	if (http_form_decode(s, len, out, &out_len, &bad) == TS_OK) {
		FUZZ_CHECK(n >= 0);
		FUZZ_CHECK(out_len <= len && out_len == (size_t)n);
		FUZZ_CHECK(memcmp(out, want, out_len) == 0);
	} else {
		FUZZ_CHECK(n < 0);
		FUZZ_CHECK(bad < len && s[bad] == '%' && bad == want_bad);
	}
	free(out);
	free(want);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *qs = (const char *)data;
	struct http_gen_request req;
	struct http_error err;
	struct model m;
	char *scratch;

	check_form_decode(qs, size);

	scratch = malloc(size ? size : 1);
	FUZZ_CHECK(scratch != NULL);
	model_run(qs, size, scratch, &m);

	/* Poison the outputs: the parser must set what it promises. */
	memset(&req, 0x5a, sizeof(req));
	memset(&err, 0, sizeof(err));
	memset(err.message, 'x', sizeof(err.message));
	if (http_parse_query(qs, size, &req, &err) == TS_OK) {
		FUZZ_CHECK(m.code == NULL);
		FUZZ_CHECK(req.prompt != NULL);
		FUZZ_CHECK(req.prompt_len <= size);
		FUZZ_CHECK(req.prompt[req.prompt_len] == '\0');
		FUZZ_CHECK(req.prompt_len == m.prompt_len &&
		    memcmp(req.prompt, m.prompt, m.prompt_len) == 0);
		FUZZ_CHECK(req.max_tokens <= HTTP_MAX_TOKENS_CAP);
		FUZZ_CHECK(req.max_tokens == (m.ints[0] < 0 ?
		    HTTP_DEFAULT_MAX_TOKENS : (uint32_t)m.ints[0]));
		FUZZ_CHECK(req.knobs.prefill_ms >= -1 &&
		    req.knobs.prefill_ms <= HTTP_MAX_PREFILL_MS);
		FUZZ_CHECK(req.knobs.prefill_ms == m.ints[1]);
		FUZZ_CHECK(req.knobs.tpot_ms >= -1 &&
		    req.knobs.tpot_ms <= HTTP_MAX_TPOT_MS);
		FUZZ_CHECK(req.knobs.tpot_ms == m.ints[2]);
		FUZZ_CHECK(req.knobs.error_after >= -1 &&
		    req.knobs.error_after <= HTTP_MAX_TOKENS_CAP);
		FUZZ_CHECK(req.knobs.error_after == m.ints[3]);
		if (m.leid == NULL) {
			FUZZ_CHECK(req.last_event_id == NULL &&
			    req.last_event_id_len == 0);
		} else {
			FUZZ_CHECK(req.last_event_id != NULL);
			FUZZ_CHECK(req.last_event_id_len == m.leid_len);
			FUZZ_CHECK(memcmp(req.last_event_id, m.leid,
			    m.leid_len) == 0);
			FUZZ_CHECK(req.last_event_id[m.leid_len] == '\0');
		}
	} else {
		FUZZ_CHECK(err.status == 400);
		FUZZ_CHECK(err.type != NULL && err.code != NULL);
		FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) !=
		    NULL);
		FUZZ_CHECK(err.message[0] != '\0');
		FUZZ_CHECK(m.code != NULL && strcmp(err.code, m.code) == 0);
		/* Nothing is left for the caller to free. */
		FUZZ_CHECK(req.prompt == NULL && req.last_event_id == NULL);
		fuzz_check_error_json(&err);
	}
	/* Freeing twice is harmless: the free function resets the fields. */
	http_gen_request_free(&req);
	http_gen_request_free(&req);
	free(scratch);
	return 0;
}
