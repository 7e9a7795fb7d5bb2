/*
 * handlers/inject.c - failure injection: kind names, the option and header
 * parsers, the seeded draw, the error bodies and the decision every
 * dialect's handler asks for (inject.h). Fills struct http_error's fields
 * itself.
 */
#include "handlers/inject.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "common/rng.h"
#include "engine/engine.h"
#include "handlers/server.h"
#include "stores/metrics.h"
#include "transport/conn.h"

_Static_assert(INJECT_NKINDS <= 32, "a types mask is 32 bits");

/* The names, indexed by kind: the public interface (inject.h). */
static const char *const kind_names[INJECT_NKINDS] = {
	[INJECT_NONE] = "none",
	[INJECT_RATE_LIMIT] = "rate_limit",
	[INJECT_SERVER_ERROR] = "server_error",
	[INJECT_OVERLOADED] = "overloaded",
	[INJECT_CONTEXT_LENGTH] = "context_length",
	[INJECT_INVALID_API_KEY] = "invalid_api_key",
	[INJECT_TIMEOUT] = "timeout",
	[INJECT_MIDSTREAM_ERROR] = "midstream_error",
	[INJECT_MIDSTREAM_CUT] = "midstream_cut",
};

/* Longest quote of input in a message, bytes (then "..."). */
#define QUOTE_MAX 32

/* Keeps inject_decide's draws apart from other users of the same seed
 * ("inject" in ASCII); part of the seeded sequence: never change it. */
#define SEED_TAG UINT64_C(0x696e6a656374)
/* SplitMix64's increment, the golden ratio in 64 bits. */
#define GOLDEN_GAMMA UINT64_C(0x9e3779b97f4a7c15)
/* 2^53: inject_decide draws 53-bit fractions. */
#define TWO_POW_53 (UINT64_C(1) << 53)

static int
is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

static unsigned char
ascii_lower(unsigned char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (unsigned char)(ch - 'A' + 'a') : ch;
}

/* 1 when (s, len) is the NUL-terminated lowercase `word`, ignoring ASCII
 * case. */
static int
word_eq(const char *s, size_t len, const char *word)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (word[i] == '\0' ||
		    ascii_lower((unsigned char)s[i]) != (unsigned char)word[i])
			return 0;
	return word[len] == '\0';
}

/* Writes at most QUOTE_MAX bytes of (s, len) to out (QUOTE_MAX + 4 bytes)
 * as printable ASCII, '?' for any other byte, "..." when cut: input that
 * is quoted into a JSON message must be valid UTF-8 and short. */
static const char *
quote(char out[QUOTE_MAX + 4], const char *s, size_t len)
{
	size_t i, n = len > QUOTE_MAX ? QUOTE_MAX : len;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	if (n < len) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

/* The failure kinds' names joined by ", ", from rate_limit on; prefixed
 * by "none, " when with_none. buf holds n bytes. */
static const char *
valid_names(char *buf, size_t n, int with_none)
{
	size_t used = 0;
	int k, w;

	buf[0] = '\0';
	for (k = with_none ? INJECT_NONE : INJECT_RATE_LIMIT;
	    k < INJECT_NKINDS; k++) {
		w = snprintf(buf + used, n - used, "%s%s",
		    used > 0 ? ", " : "", kind_names[k]);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
	return buf;
}

/* snprintf into the caller's message buffer, if it has one. */
static void
set_msg(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_msg(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (msg == NULL || msglen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

const char *
inject_kind_name(enum inject_kind k)
{
	if ((int)k < 0 || k >= INJECT_NKINDS)
		return "unknown";
	return kind_names[k];
}

int
inject_kind_parse(const char *s, size_t len)
{
	int k;

	if (s == NULL)
		return -1;
	for (k = 0; k < INJECT_NKINDS; k++)
		if (word_eq(s, len, kind_names[k]))
			return k;
	return -1;
}

void
inject_config_defaults(struct inject_config *c)
{
	c->rate = 0.0;
	c->types = INJECT_TYPES_DEFAULT;
	c->after_tokens = INJECT_DEFAULT_AFTER_TOKENS;
	c->retry_after_s = INJECT_DEFAULT_RETRY_AFTER_S;
	c->seed = 0;
}

/*
 * The percent is read as an integer count of millionths of a percent
 * (0..10^8), so "10" and "10.000000" give the same double, 10^7 / 10^8,
 * correctly rounded, and no locale's decimal point is involved.
 */
enum ts_err
inject_parse_rate(const char *s, double *rate, char *msg, size_t msglen)
{
	char q[QUOTE_MAX + 4];
	uint64_t ip = 0, frac = 0;
	size_t i = 0, nint = 0, nfrac = 0, len;

	if (s == NULL)
		s = "";
	len = strlen(s);
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, nint++)
		if (ip <= 1000)
			ip = ip * 10 + (uint64_t)(s[i] - '0');
	if (i < len && s[i] == '.')
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			if (++nfrac <= 6)
				frac = frac * 10 + (uint64_t)(s[i] - '0');
	if (nint == 0 || i < len || (s[nint] == '.' && nfrac == 0)) {
		set_msg(msg, msglen, "--failure-injection-rate takes a "
		    "percent 0..100 (\"10\", \"2.5\"), not '%s'",
		    quote(q, s, len));
		return TS_EINVAL;
	}
	if (nfrac > 6) {
		set_msg(msg, msglen, "--failure-injection-rate: '%s' has "
		    "more than 6 decimals", quote(q, s, len));
		return TS_EINVAL;
	}
	for (; nfrac < 6; nfrac++)
		frac *= 10;
	if (ip > 100 || ip * 1000000 + frac > 100000000) {
		set_msg(msg, msglen, "--failure-injection-rate: '%s' is "
		    "over 100 (percent)", quote(q, s, len));
		return TS_EINVAL;
	}
	*rate = (double)(ip * 1000000 + frac) / 1e8;
	return TS_OK;
}

enum ts_err
inject_parse_types(const char *s, uint32_t *types, char *msg, size_t msglen)
{
	char q[QUOTE_MAX + 4], names[192];
	const char *p, *end, *a, *b;
	uint32_t mask = 0;
	size_t item = 0;
	int k;

	if (s == NULL)
		s = "";
	p = s;
	end = s + strlen(s);
	for (;;) {
		item++;
		for (a = p; a < end && *a != ','; a++)
			;
		/* (p, a) is the item; b is past its trailing blanks */
		for (b = a; b > p && is_ows(b[-1]); b--)
			;
		while (p < b && is_ows(*p))
			p++;
		if (p == b) {
			set_msg(msg, msglen, "--failure-types: item %zu is "
			    "empty; give a comma-separated list of %s", item,
			    valid_names(names, sizeof(names), 0));
			return TS_EINVAL;
		}
		k = inject_kind_parse(p, (size_t)(b - p));
		if (k <= INJECT_NONE) {
			/* "none" too: it is no kind to draw from */
			set_msg(msg, msglen, "--failure-types: item %zu, "
			    "'%s', is not a failure type; valid: %s", item,
			    quote(q, p, (size_t)(b - p)),
			    valid_names(names, sizeof(names), 0));
			return TS_EINVAL;
		}
		mask |= INJECT_BIT(k);
		if (a == end)
			break;
		p = a + 1;
	}
	*types = mask;
	return TS_OK;
}

/* The header's prefix in every message. */
#define HDR INJECT_HEADER ": "

enum ts_err
inject_parse_header(const char *v, size_t len,
    const struct inject_config *c, enum inject_kind *kind, uint32_t *after,
    char *msg, size_t msglen)
{
	char q[QUOTE_MAX + 4], names[192];
	const char *p = v, *e = v + len, *a;
	uint32_t k_after = c != NULL ? c->after_tokens :
	    INJECT_DEFAULT_AFTER_TOKENS;
	uint64_t val = 0;
	int k;

	if (v == NULL)
		p = e = "";
	while (p < e && is_ows(*p))
		p++;
	for (a = p; p < e && *p != ';' && !is_ows(*p); p++)
		;
	if (a == p) {
		set_msg(msg, msglen, HDR "%s; send a failure type (%s), "
		    "optionally \"; after=K\"", p == e ? "the value is empty" :
		    "no failure type before ';'",
		    valid_names(names, sizeof(names), 1));
		return TS_EINVAL;
	}
	k = inject_kind_parse(a, (size_t)(p - a));
	if (k < 0) {
		set_msg(msg, msglen, HDR "unknown failure type '%s'; "
		    "valid: %s",
		    quote(q, a, (size_t)(p - a)),
		    valid_names(names, sizeof(names), 1));
		return TS_EINVAL;
	}
	while (p < e && is_ows(*p))
		p++;
	if (p == e)
		goto ok;
	if (*p != ';') {
		set_msg(msg, msglen, HDR "unexpected '%s' after the failure "
		    "type (one type, then optionally \"; after=K\")",
		    quote(q, p, (size_t)(e - p)));
		return TS_EINVAL;
	}
	for (p++; p < e && is_ows(*p); p++)
		;
	for (a = p; p < e && *p != '=' && !is_ows(*p); p++)
		;
	if (!word_eq(a, (size_t)(p - a), "after")) {
		set_msg(msg, msglen, HDR "unknown parameter '%s'; the only "
		    "one is after=K (tokens, for midstream_error and "
		    "midstream_cut)", quote(q, a, (size_t)(p - a)));
		return TS_EINVAL;
	}
	while (p < e && is_ows(*p))
		p++;
	if (p == e || *p != '=') {
		set_msg(msg, msglen, HDR "after needs a value: after=K, K "
		    "0..%u tokens", INJECT_MAX_AFTER);
		return TS_EINVAL;
	}
	for (p++; p < e && is_ows(*p); p++)
		;
	for (a = p; p < e && *p >= '0' && *p <= '9'; p++)
		if (val <= INJECT_MAX_AFTER)
			val = val * 10 + (uint64_t)(*p - '0');
	if (a == p) {
		set_msg(msg, msglen, HDR "after= takes a whole number of "
		    "tokens 0..%u, not '%s'", INJECT_MAX_AFTER,
		    quote(q, p, (size_t)(e - p)));
		return TS_EINVAL;
	}
	if (val > INJECT_MAX_AFTER) {
		set_msg(msg, msglen, HDR "after=%s is over %u tokens",
		    quote(q, a, (size_t)(p - a)), INJECT_MAX_AFTER);
		return TS_EINVAL;
	}
	while (p < e && is_ows(*p))
		p++;
	if (p != e) {
		set_msg(msg, msglen, HDR "unexpected '%s' after after=%u",
		    quote(q, p, (size_t)(e - p)), (unsigned)val);
		return TS_EINVAL;
	}
	if (k != INJECT_MIDSTREAM_ERROR && k != INJECT_MIDSTREAM_CUT) {
		set_msg(msg, msglen, HDR "after= applies to midstream_error "
		    "and midstream_cut only, not to %s", kind_names[k]);
		return TS_EINVAL;
	}
	k_after = (uint32_t)val;
ok:
	*kind = (enum inject_kind)k;
	*after = k_after;
	return TS_OK;
}

/* rate as a count of 53-bit fractions: a draw x in [0, 2^53) fails when
 * x < threshold(rate). */
static uint64_t
threshold(double rate)
{
	if (!(rate > 0.0))
		return 0;       /* 0, negative or NaN */
	if (rate >= 1.0)
		return TWO_POW_53;
	/* rate * 2^53 is exact (a power-of-two scale); round it */
	return (uint64_t)(rate * (double)TWO_POW_53 + 0.5);
}

enum inject_kind
inject_decide(const struct inject_config *c, uint64_t n)
{
	uint32_t types = c->types & INJECT_TYPES_ALL;
	uint64_t t = threshold(c->rate), x, idx;
	unsigned m = 0;
	int k;

	for (k = INJECT_RATE_LIMIT; k < INJECT_NKINDS; k++)
		m += (types >> k) & 1u;
	if (t == 0 || m == 0)
		return INJECT_NONE;
	x = rng_mix64(rng_mix64(c->seed ^ SEED_TAG) + (n + 1) * GOLDEN_GAMMA)
	    >> 11;
	if (x >= t)
		return INJECT_NONE;
	/* x < t <= 2^53 and m < 32: the product fits in 64 bits */
	idx = x * m / t;
	for (k = INJECT_RATE_LIMIT; k < INJECT_NKINDS; k++)
		if (((types >> k) & 1u) && idx-- == 0)
			break;
	return (enum inject_kind)k;
}

static void
err_set(struct http_error *err, int status, const char *type,
    const char *code, const char *param)
{
	err->status = status;
	err->type = type;
	err->code = code;
	snprintf(err->param, sizeof(err->param), "%s", param);
}

int
inject_error(enum inject_kind k, const struct inject_config *c,
    uint32_t context_len, uint64_t prompt_tokens, struct http_error *err)
{
	uint64_t lim, got;

	switch (k) {
	case INJECT_RATE_LIMIT:
		/* OpenAI's type names the limit that was hit: "requests"
		 * (per minute), "tokens" (per minute) */
		err_set(err, 429, "requests", "rate_limit_exceeded", "");
		snprintf(err->message, sizeof(err->message), "Rate limit "
		    "reached for requests (injected by tokstream). Please "
		    "try again in %us.", c != NULL ? c->retry_after_s :
		    INJECT_DEFAULT_RETRY_AFTER_S);
		return 1;
	case INJECT_SERVER_ERROR:
		err_set(err, 500, "server_error", "server_error", "");
		snprintf(err->message, sizeof(err->message), "%s", "The "
		    "server had an error while processing your request. "
		    "Sorry about that!");
		return 1;
	case INJECT_OVERLOADED:
		err_set(err, 503, "server_error", "overloaded", "");
		snprintf(err->message, sizeof(err->message), "%s", "The "
		    "engine is currently overloaded, please try again later.");
		return 1;
	case INJECT_CONTEXT_LENGTH:
		/* P > L always (inject.h): a real excess is reported as it
		 * is, else a limit one token below the prompt */
		if (context_len > 0 && prompt_tokens > context_len) {
			lim = context_len;
			got = prompt_tokens;
		} else if (prompt_tokens > 0) {
			lim = prompt_tokens - 1;
			got = prompt_tokens;
		} else {
			lim = 0;
			got = 1;
		}
		err_set(err, 400, "invalid_request_error",
		    "context_length_exceeded", "messages");
		snprintf(err->message, sizeof(err->message), "This model's "
		    "maximum context length is %llu tokens. However, your "
		    "messages resulted in %llu tokens. Please reduce the "
		    "length of the messages.", (unsigned long long)lim,
		    (unsigned long long)got);
		return 1;
	case INJECT_INVALID_API_KEY:
		err_set(err, 401, "invalid_request_error", "invalid_api_key",
		    "");
		snprintf(err->message, sizeof(err->message), "%s",
		    "Incorrect API key provided. (Injected by tokstream: the "
		    "key sent was not at fault.)");
		return 1;
	default:
		/* none, timeout, midstream_*: nothing to answer now */
		return 0;
	}
}

/* Fits the engine request to a verdict that goes on (inject.h). */
static void
arrange(const struct inject_verdict *v, struct engine_request *job)
{
	switch (v->kind) {
	case INJECT_MIDSTREAM_ERROR:
	case INJECT_MIDSTREAM_CUT:
		job->error_after = (int32_t)v->after;
		break;
	case INJECT_TIMEOUT:
		job->prefill_ms = 0.0;
		job->prefill_per_token_ms = 0.0;
		job->max_tokens = 1;
		job->error_after = 0;
		break;
	default:
		break;
	}
}

int
inject_request(struct server *srv, struct conn *c, int draw,
    const char *off_hint, struct engine_request *job,
    struct inject_verdict *v)
{
	const struct inject_config *ic = &srv->opt->inject;
	const char *hv = conn_param(c, INJECT_HEADER_PARAM);
	char msg[200];

	v->kind = INJECT_NONE;
	v->after = ic->after_tokens;
	v->on_fire = INJECT_NONE;
	v->silence = INJECT_SPEAKS;
	v->extra[0] = '\0';
	if (hv != NULL && hv[0] != '\0') {
		if (!srv->opt->allow_failure_header) {
			/* off by default: the header would let any client
			 * make the server fail, or hold a connection silent
			 * (timeout) */
			err_set(&v->err, 400, "invalid_request_error",
			    "failure_header_disabled", "");
			snprintf(v->err.message, sizeof(v->err.message),
			    "%s is off on this server: its operator enables "
			    "it with --allow-failure-header%s", INJECT_HEADER,
			    off_hint != NULL ? off_hint : "");
			return 1;
		}
		if (inject_parse_header(hv, strlen(hv), ic, &v->kind,
		    &v->after, msg, sizeof(msg)) != TS_OK) {
			err_set(&v->err, 400, "invalid_request_error",
			    "invalid_value", "");
			snprintf(v->err.message, sizeof(v->err.message), "%s",
			    msg);
			return 1;
		}
	} else if (draw && ic->rate > 0) {
		v->kind = inject_decide(ic, atomic_fetch_add(
		    &srv->v1_requests, 1));
	}
	if (v->kind == INJECT_NONE)
		return 0;
	if (v->kind == INJECT_MIDSTREAM_ERROR ||
	    v->kind == INJECT_MIDSTREAM_CUT) {
		/* counted when it fires: one after the answer's last token
		 * never does */
		v->on_fire = v->kind;
		if (v->kind == INJECT_MIDSTREAM_CUT)
			v->silence = INJECT_SILENT_END;
		arrange(v, job);
		return 0;
	}
	metrics_injected(srv->metrics, (int)v->kind);
	if (v->kind == INJECT_TIMEOUT)
		v->silence = INJECT_SILENT_ALL;
	if (!inject_error(v->kind, ic, srv->backend->context_len(
	    srv->backend->impl), job->prompt_tokens, &v->err)) {
		arrange(v, job);
		return 0;
	}
	if (v->kind == INJECT_RATE_LIMIT)
		snprintf(v->extra, sizeof(v->extra), "Retry-After: %u\r\n",
		    (unsigned)ic->retry_after_s);
	else if (v->kind == INJECT_INVALID_API_KEY)
		snprintf(v->extra, sizeof(v->extra),
		    "WWW-Authenticate: Bearer\r\n");
	return 1;
}
