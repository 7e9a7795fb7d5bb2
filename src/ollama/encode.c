/*
 * ollama/encode.c - Ollama's API answers. See encode.h.
 *
 * The stream's objects go straight into the caller's buffer through the
 * dialects' JSON writer, proto/jw.h (strings escaped as jansson's
 * dump_string escapes them without flags); the answers of the model
 * endpoints, once per request, are jansson trees.
 */
#define _DEFAULT_SOURCE /* gmtime_r */
#include "ollama/encode.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rng.h"
#include "proto/jw.h"
#include "text/utf8.h"

#define LIT(s) (s), (sizeof(s) - 1)

size_t
ollama_time(int64_t unix_ns, char *buf, size_t cap)
{
	time_t s = (time_t)(unix_ns / 1000000000);
	long ns = (long)(unix_ns % 1000000000);
	struct tm tm;
	size_t n;
	char frac[16];
	int k;

	if (ns < 0) {
		ns += 1000000000;
		s--;
	}
	gmtime_r(&s, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ns > 0) {
		snprintf(frac, sizeof(frac), ".%09ld", ns);
		for (k = 9; frac[k] == '0'; k--)
			frac[k] = '\0';
		n += (size_t)snprintf(buf + n, cap - n, "%s", frac);
	}
	n += (size_t)snprintf(buf + n, cap - n, "Z");
	return n;
}

const char *
ollama_done_name(enum ollama_done d)
{
	switch (d) {
	case OLLAMA_DONE_LENGTH: return "length";
	case OLLAMA_DONE_LOAD: return "load";
	default: return "stop";
	}
}

/* {"model":M,"created_at":T, */
static void
open_obj(struct jw *w, const struct ollama_meta *m, int64_t now_ns)
{
	char t[48];
	size_t n = ollama_time(now_ns, t, sizeof(t));

	jw_raw(w, LIT("{\"model\":"));
	jw_str(w, m->model, m->model_len);
	jw_raw(w, LIT(",\"created_at\":\""));
	jw_raw(w, t, n);
	jw_raw(w, LIT("\","));
}

/* "tool_calls":[{"function":{"name":N,"arguments":ARGS}},...] */
static void
calls_json(struct jw *w, const struct ollama_call *c, size_t n)
{
	size_t i;

	jw_raw(w, LIT(",\"tool_calls\":["));
	for (i = 0; i < n; i++) {
		if (i > 0)
			jw_raw(w, LIT(","));
		jw_raw(w, LIT("{\"function\":{\"name\":"));
		jw_str(w, c[i].name, c[i].name_len);
		jw_raw(w, LIT(",\"arguments\":"));
		jw_raw(w, c[i].args, c[i].args_len);
		jw_raw(w, LIT("}}"));
	}
	jw_raw(w, LIT("]"));
}

/* "message":{"role":"assistant","content":TEXT[,"tool_calls":...]} */
static void
message(struct jw *w, const char *text, size_t len,
    const struct ollama_call *calls, size_t n, const char *think,
    size_t think_len)
{
	jw_raw(w, LIT("\"message\":{\"role\":\"assistant\",\"content\":"));
	jw_str(w, text, len);
	if (think != NULL) {
		jw_raw(w, LIT(",\"thinking\":"));
		jw_str(w, think, think_len);
	}
	if (n > 0)
		calls_json(w, calls, n);
	jw_raw(w, LIT("}"));
}

enum ts_err
ollama_encode_chunk(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len)
{
	struct jw w;

	jw_begin(&w, b);
	open_obj(&w, m, now_ns);
	if (m->kind == OLLAMA_CHAT) {
		message(&w, text, len, NULL, 0, NULL, 0);
	} else {
		jw_raw(&w, LIT("\"response\":"));
		jw_str(&w, text, len);
	}
	jw_raw(&w, LIT(",\"done\":false}\n"));
	return jw_end(&w);
}

enum ts_err
ollama_encode_thinking_chunk(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len)
{
	struct jw w;

	jw_begin(&w, b);
	open_obj(&w, m, now_ns);
	if (m->kind == OLLAMA_CHAT) {
		message(&w, "", 0, NULL, 0, text, len);
	} else {
		jw_raw(&w, LIT("\"response\":\"\",\"thinking\":"));
		jw_str(&w, text, len);
	}
	jw_raw(&w, LIT(",\"done\":false}\n"));
	return jw_end(&w);
}

enum ts_err
ollama_encode_calls_chunk(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const struct ollama_call *calls, size_t n)
{
	struct jw w;

	jw_begin(&w, b);
	open_obj(&w, m, now_ns);
	message(&w, "", 0, calls, n, NULL, 0);
	jw_raw(&w, LIT(",\"done\":false}\n"));
	return jw_end(&w);
}

/* ,"total_duration":...,"eval_duration":N */
static void
metrics(struct jw *w, const struct ollama_stats *st)
{
	jw_raw(w, LIT(",\"total_duration\":"));
	jw_int(w, st->total_ns);
	jw_raw(w, LIT(",\"load_duration\":"));
	jw_int(w, st->load_ns);
	jw_raw(w, LIT(",\"prompt_eval_count\":"));
	jw_int(w, (long long)st->prompt_eval_count);
	jw_raw(w, LIT(",\"prompt_eval_duration\":"));
	jw_int(w, st->prompt_eval_ns);
	jw_raw(w, LIT(",\"eval_count\":"));
	jw_int(w, (long long)st->eval_count);
	jw_raw(w, LIT(",\"eval_duration\":"));
	jw_int(w, st->eval_ns);
}

enum ts_err
ollama_encode_final(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len,
    const struct ollama_call *calls, size_t n,
    const struct ollama_stats *st)
{
	return ollama_encode_final_think(b, m, now_ns, text, len, NULL, 0,
	    calls, n, st);
}

enum ts_err
ollama_encode_final_think(struct ts_buf *b, const struct ollama_meta *m,
    int64_t now_ns, const char *text, size_t len, const char *think,
    size_t think_len, const struct ollama_call *calls, size_t n,
    const struct ollama_stats *st)
{
	const char *reason = ollama_done_name(st->done);
	struct jw w;

	jw_begin(&w, b);
	open_obj(&w, m, now_ns);
	if (m->kind == OLLAMA_CHAT) {
		message(&w, text, len, calls, n, think, think_len);
		jw_raw(&w, LIT(",\"done_reason\":\""));
		jw_raw(&w, reason, strlen(reason));
		jw_raw(&w, LIT("\",\"done\":true"));
	} else {
		jw_raw(&w, LIT("\"response\":"));
		jw_str(&w, text, len);
		if (think != NULL) {
			jw_raw(&w, LIT(",\"thinking\":"));
			jw_str(&w, think, think_len);
		}
		jw_raw(&w, LIT(",\"done\":true,\"done_reason\":\""));
		jw_raw(&w, reason, strlen(reason));
		jw_raw(&w, LIT("\""));
	}
	/* a model only loaded reports no metrics (docs/api.md "Load a
	 * model") */
	if (st->done != OLLAMA_DONE_LOAD)
		metrics(&w, st);
	jw_raw(&w, LIT("}\n"));
	return jw_end(&w);
}

enum ts_err
ollama_error_json(const struct http_error *err, struct ts_buf *b)
{
	size_t len = strlen(err->message);
	struct jw w;

	jw_begin(&w, b);
	jw_raw(&w, LIT("{\"error\":"));
	if (utf8_valid(err->message, len))
		jw_str(&w, err->message, len);
	else
		jw_raw(&w, LIT("\"invalid request\""));
	jw_raw(&w, LIT("}"));
	return jw_end(&w);
}

/* Dumps o (stolen) compactly onto b. */
static enum ts_err
emit(struct ts_buf *b, json_t *o)
{
	size_t n;
	char *s;
	enum ts_err rc;

	if (o == NULL)
		return TS_ENOMEM;
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (s == NULL)
		return TS_ENOMEM;
	n = strlen(s);
	rc = ts_buf_append(b, s, n);
	free(s);
	return rc;
}

/* name with ":latest" when it has no tag, into out (cap bytes). */
static const char *
tagged(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s%s", name, strchr(name, ':') != NULL ? "" :
	    ":latest");
	return out;
}

/* 64 hex digits from the name: a stand-in for a blob's sha256. */
static void
digest_of(const char *name, char out[65])
{
	uint64_t h = rng_seed_of(name, strlen(name));
	int i;

	for (i = 0; i < 4; i++) {
		snprintf(out + 16 * i, 17, "%016llx", (unsigned long long)h);
		h = rng_mix64(h + (uint64_t)i + 1);
	}
}

static json_t *
details(const struct ollama_model_info *mi)
{
	return json_pack("{s:s,s:s,s:s,s:[s],s:s,s:s}", "parent_model", "",
	    "format", mi->format, "family", mi->family, "families",
	    mi->family, "parameter_size", mi->parameter_size,
	    "quantization_level", mi->quantization);
}

enum ts_err
ollama_encode_models(struct ts_buf *b, const char *const *names, size_t n,
    const struct ollama_model_info *mi, int ps, int64_t expires_ns)
{
	json_t *arr = json_array(), *o;
	char name[320], t[48], dg[65];
	size_t k;

	if (arr == NULL)
		return TS_ENOMEM;
	for (k = 0; k < n; k++) {
		tagged(names[k], name, sizeof(name));
		digest_of(names[k], dg);
		if (!ps) {
			(void)ollama_time(mi->modified_ns, t, sizeof(t));
			o = json_pack("{s:s,s:s,s:s,s:I,s:s,s:o}", "name", name,
			    "model", name, "modified_at", t, "size",
			    (json_int_t)mi->size, "digest", dg, "details",
			    details(mi));
		} else {
			(void)ollama_time(expires_ns, t, sizeof(t));
			o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:s,s:I,s:I}",
			    "name", name, "model", name, "size",
			    (json_int_t)mi->size, "digest", dg, "details",
			    details(mi), "expires_at", t, "size_vram",
			    (json_int_t)0, "context_length",
			    (json_int_t)mi->context_length);
		}
		if (o == NULL || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return TS_ENOMEM;
		}
	}
	return emit(b, json_pack("{s:o}", "models", arr));
}

enum ts_err
ollama_encode_show(struct ts_buf *b, const char *name,
    const struct ollama_model_info *mi)
{
	char t[48], key[96], modelfile[512];
	json_t *info;

	(void)ollama_time(mi->modified_ns, t, sizeof(t));
	snprintf(key, sizeof(key), "%s.context_length", mi->family);
	snprintf(modelfile, sizeof(modelfile), "# tokstream serves %s with "
	    "its %s backend\nFROM %s\n", name, mi->family, name);
	info = json_pack("{s:s,s:I,s:I}", "general.architecture", mi->family,
	    "general.parameter_count", (json_int_t)0, key,
	    (json_int_t)mi->context_length);
	return emit(b, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:[s,s],s:s}",
	    "license", "", "modelfile", modelfile, "parameters", "",
	    "template", mi->template_text, "details", details(mi),
	    "model_info", info, "capabilities", "completion", "tools",
	    "modified_at", t));
}

enum ts_err
ollama_encode_version(struct ts_buf *b, const char *version)
{
	return emit(b, json_pack("{s:s}", "version", version));
}
