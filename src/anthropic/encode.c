/*
 * anthropic/encode.c - Anthropic Messages API answers and events
 * (encode.h), written with a small JSON writer into the caller's buffer:
 * strings escaped as jansson's dump_string escapes them (what
 * openai/encode.c writes too), integers in decimal, compact.
 */
#include "anthropic/encode.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/rng.h"
#include "proto/jw.h"
#include "proto/sse.h"
#include "text/utf8.h"

#define LIT(s) (s), (sizeof(s) - 1)

/* JSON through proto/jw.h; JW writes a literal. */
#define JW(w, s) jw_raw((w), LIT(s))

/* "event: NAME\ndata: " ... "\n\n" around one line of JSON. */
static void
ev_begin(struct jw *w, struct ts_buf *b, const char *name)
{
	jw_begin(w, b);
	JW(w, "event: ");
	jw_raw(w, name, strlen(name));
	JW(w, "\ndata: ");
}

static enum ts_err
ev_end(struct jw *w)
{
	JW(w, "\n\n");
	return jw_end(w);
}

/* ---- errors ------------------------------------------------------------ */

const char *
anthropic_error_type(int status)
{
	switch (status) {
	case 400: return "invalid_request_error";
	case 401: return "authentication_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 413: return "request_too_large";
	case 429: return "rate_limit_error";
	case 503:
	case 529: return "overloaded_error";
	default: return status >= 500 ? "api_error" : "invalid_request_error";
	}
}

static void
jw_error(struct jw *w, const struct http_error *err)
{
	const char *msg = err->message;

	if (!utf8_valid(msg, strlen(msg)))
		msg = "invalid request";
	JW(w, "{\"type\":\"error\",\"error\":{\"type\":");
	jw_cstr(w, anthropic_error_type(err->status));
	JW(w, ",\"message\":");
	jw_cstr(w, msg);
	JW(w, "},\"request_id\":null}");
}

enum ts_err
anthropic_encode_error(struct ts_buf *b, const struct http_error *err)
{
	struct jw w;

	jw_begin(&w, b);
	jw_error(&w, err);
	return jw_end(&w);
}

enum ts_err
anthropic_encode_error_event(struct ts_buf *b, const struct http_error *err)
{
	struct jw w;

	ev_begin(&w, b, "error");
	jw_error(&w, err);
	return ev_end(&w);
}

/* ---- the message ------------------------------------------------------- */

const char *
anthropic_stop_name(enum anthropic_stop s)
{
	switch (s) {
	case ANTHROPIC_STOP_MAX_TOKENS: return "max_tokens";
	case ANTHROPIC_STOP_SEQUENCE: return "stop_sequence";
	case ANTHROPIC_STOP_TOOL_USE: return "tool_use";
	case ANTHROPIC_STOP_END_TURN:
	default: return "end_turn";
	}
}

/* usage: Usage (delta 0) or MessageDeltaUsage (delta 1), with output
 * tokens `output`. */
static void
jw_usage(struct jw *w, const struct anthropic_usage *u, uint32_t output,
    int delta)
{
	JW(w, "{\"input_tokens\":");
	jw_u64(w, u->input_tokens);
	JW(w, ",\"cache_creation_input_tokens\":");
	jw_u64(w, u->cache_creation_input_tokens);
	JW(w, ",\"cache_read_input_tokens\":");
	jw_u64(w, u->cache_read_input_tokens);
	if (!delta)
		JW(w, ",\"cache_creation\":{\"ephemeral_5m_input_tokens\":0,"
		    "\"ephemeral_1h_input_tokens\":0}");
	JW(w, ",\"output_tokens\":");
	jw_u64(w, output);
	JW(w, ",\"output_tokens_details\":{\"thinking_tokens\":");
	jw_u64(w, output == 0 ? 0 : u->thinking_tokens);
	JW(w, "},\"server_tool_use\":null");
	if (!delta)
		JW(w, ",\"service_tier\":\"standard\",\"inference_geo\":null,"
		    "\"speed\":null");
	JW(w, "}");
}

/* A tool_use's input: the JSON text as it is when it is one whole
 * value, else {} (empty, or cut short by max_tokens). */
static void
jw_input(struct jw *w, const char *p, size_t len)
{
	json_error_t e;
	json_t *v;

	if (len == 0) {
		JW(w, "{}");
		return;
	}
	v = json_loadb(p, len, JSON_DECODE_ANY, &e);
	if (v == NULL) {
		JW(w, "{}");    /* cut by max_tokens: not a whole value */
		return;
	}
	json_decref(v);
	jw_raw(w, p, len);
}

/* A block, whole (empty: at content_block_start). */
static void
jw_block(struct jw *w, const struct anthropic_block *blk, int empty)
{
	switch (blk->kind) {
	case ANTHROPIC_BLOCK_THINKING:
		JW(w, "{\"type\":\"thinking\",\"thinking\":");
		jw_str(w, empty ? "" : blk->text, empty ? 0 : blk->len);
		JW(w, ",\"signature\":");
		jw_cstr(w, empty || blk->signature == NULL ? "" :
		    blk->signature);
		JW(w, "}");
		break;
	case ANTHROPIC_BLOCK_TOOL_USE:
		JW(w, "{\"type\":\"tool_use\",\"id\":");
		jw_cstr(w, blk->id);
		JW(w, ",\"name\":");
		jw_cstr(w, blk->name);
		JW(w, ",\"input\":");
		if (empty)
			JW(w, "{}");
		else
			jw_input(w, blk->text, blk->len);
		JW(w, ",\"caller\":{\"type\":\"direct\"}}");
		break;
	case ANTHROPIC_BLOCK_TEXT:
	default:
		/* no "citations": the SDK's TextBlock declares it
		 * (Array<TextCitation> | null), but Anthropic's service
		 * leaves it out of a block that has none (its documentation's
		 * examples), and @ai-sdk/anthropic refuses a null one */
		JW(w, "{\"type\":\"text\",\"text\":");
		jw_str(w, empty ? "" : blk->text, empty ? 0 : blk->len);
		JW(w, "}");
		break;
	}
}

static void
jw_stop(struct jw *w, enum anthropic_stop stop, const char *seq,
    size_t len)
{
	JW(w, "\"stop_reason\":");
	jw_cstr(w, anthropic_stop_name(stop));
	JW(w, ",\"stop_sequence\":");
	if (seq != NULL)
		jw_str(w, seq, len);
	else
		JW(w, "null");
	JW(w, ",\"stop_details\":null,\"container\":null");
}

static void
jw_message_head(struct jw *w, const struct anthropic_meta *m)
{
	JW(w, "{\"id\":");
	jw_cstr(w, m->id);
	JW(w, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
	jw_str(w, m->model, m->model_len);
	JW(w, ",\"content\":[");
}

enum ts_err
anthropic_encode_message(struct ts_buf *b, const struct anthropic_meta *m,
    const struct anthropic_block *blocks, size_t n, enum anthropic_stop stop,
    const char *stop_seq, size_t stop_seq_len,
    const struct anthropic_usage *u)
{
	struct jw w;
	size_t i;

	jw_begin(&w, b);
	jw_message_head(&w, m);
	for (i = 0; i < n; i++) {
		if (i > 0)
			JW(&w, ",");
		jw_block(&w, &blocks[i], 0);
	}
	JW(&w, "],");
	jw_stop(&w, stop, stop_seq, stop_seq_len);
	JW(&w, ",\"diagnostics\":null,\"usage\":");
	jw_usage(&w, u, u->output_tokens, 0);
	JW(&w, "}");
	return jw_end(&w);
}

enum ts_err
anthropic_encode_message_start(struct ts_buf *b,
    const struct anthropic_meta *m, const struct anthropic_usage *u)
{
	struct jw w;

	ev_begin(&w, b, "message_start");
	JW(&w, "{\"type\":\"message_start\",\"message\":");
	jw_message_head(&w, m);
	JW(&w, "],\"stop_reason\":null,\"stop_sequence\":null,"
	    "\"stop_details\":null,\"container\":null,\"diagnostics\":null,"
	    "\"usage\":");
	jw_usage(&w, u, 0, 0);
	JW(&w, "}}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_block_start(struct ts_buf *b, uint32_t index,
    const struct anthropic_block *blk)
{
	struct jw w;

	ev_begin(&w, b, "content_block_start");
	JW(&w, "{\"type\":\"content_block_start\",\"index\":");
	jw_u64(&w, index);
	JW(&w, ",\"content_block\":");
	jw_block(&w, blk, 1);
	JW(&w, "}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_delta(struct ts_buf *b, uint32_t index,
    enum anthropic_block_kind k, const char *text, size_t len)
{
	struct jw w;

	ev_begin(&w, b, "content_block_delta");
	JW(&w, "{\"type\":\"content_block_delta\",\"index\":");
	jw_u64(&w, index);
	switch (k) {
	case ANTHROPIC_BLOCK_THINKING:
		JW(&w, ",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":");
		break;
	case ANTHROPIC_BLOCK_TOOL_USE:
		JW(&w, ",\"delta\":{\"type\":\"input_json_delta\","
		    "\"partial_json\":");
		break;
	case ANTHROPIC_BLOCK_TEXT:
	default:
		JW(&w, ",\"delta\":{\"type\":\"text_delta\",\"text\":");
		break;
	}
	jw_str(&w, text, len);
	JW(&w, "}}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_signature(struct ts_buf *b, uint32_t index, const char *sig)
{
	struct jw w;

	ev_begin(&w, b, "content_block_delta");
	JW(&w, "{\"type\":\"content_block_delta\",\"index\":");
	jw_u64(&w, index);
	JW(&w, ",\"delta\":{\"type\":\"signature_delta\",\"signature\":");
	jw_cstr(&w, sig);
	JW(&w, "}}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_block_stop(struct ts_buf *b, uint32_t index)
{
	struct jw w;

	ev_begin(&w, b, "content_block_stop");
	JW(&w, "{\"type\":\"content_block_stop\",\"index\":");
	jw_u64(&w, index);
	JW(&w, "}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_end(struct ts_buf *b, enum anthropic_stop stop,
    const char *stop_seq, size_t stop_seq_len,
    const struct anthropic_usage *u, const char *stop_id)
{
	struct jw w;

	ev_begin(&w, b, "message_delta");
	JW(&w, "{\"type\":\"message_delta\",\"delta\":{");
	jw_stop(&w, stop, stop_seq, stop_seq_len);
	JW(&w, "},\"usage\":");
	jw_usage(&w, u, u->output_tokens, 1);
	JW(&w, "}\n\n");
	if (stop_id != NULL) {
		if (strpbrk(stop_id, "\r\n") != NULL)
			w.rc = TS_EINVAL;
		JW(&w, "id: ");
		jw_raw(&w, stop_id, strlen(stop_id));
		JW(&w, "\n");
	}
	JW(&w, "event: message_stop\ndata: {\"type\":\"message_stop\"}");
	return ev_end(&w);
}

enum ts_err
anthropic_encode_ping(struct ts_buf *b)
{
	return ts_buf_append(b, LIT("event: ping\ndata: {\"type\":\"ping\"}\n\n"));
}

enum ts_err
anthropic_encode_count(struct ts_buf *b, uint64_t n)
{
	struct jw w;

	jw_begin(&w, b);
	JW(&w, "{\"input_tokens\":");
	jw_u64(&w, n);
	JW(&w, "}");
	return jw_end(&w);
}

/* ---- ids and signatures ---------------------------------------------- */

void
anthropic_id(const char *prefix, uint64_t seed, int digits, char *out,
    size_t cap)
{
	static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz";
	uint64_t base = digits ? 10 : 62;
	size_t n = strlen(prefix), j;
	uint64_t h = 0;

	if (cap < n + 25) {
		if (cap > 0)
			out[0] = '\0';
		return;
	}
	memcpy(out, prefix, n);
	for (j = 0; j < 24; j++) {
		/* 10 characters of 62 per fresh 64-bit word (62^10 < 2^60) */
		if (j % 10 == 0)
			h = rng_mix64(seed + 0x9e3779b97f4a7c15ULL * (j / 10 + 1));
		out[n + j] = alnum[h % base];
		h /= base;
	}
	out[n + 24] = '\0';
}

void
anthropic_signature(const char *text, size_t len, char *out)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char raw[48];
	uint64_t h = rng_fnv1a(RNG_FNV1A_INIT, text, len), x = 0;
	size_t i, o = 0;

	for (i = 0; i < sizeof(raw); i++) {
		if (i % 8 == 0)
			x = rng_mix64(h + 0x9e3779b97f4a7c15ULL * (i / 8 + 1));
		raw[i] = (unsigned char)(x >> (8 * (i % 8)));
	}
	for (i = 0; i < sizeof(raw); i += 3) {
		uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 |
		    raw[i + 2];

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	out[o] = '\0';
}
