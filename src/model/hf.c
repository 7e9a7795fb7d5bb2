/*
 * model/hf.c - Hugging Face llama folders (see hf.h): config.json,
 * generation_config.json and tokenizer_config.json, the expected
 * weights, the RoPE row permutation, and the writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "model/hf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "model/model.h"

/* ---- config.json --------------------------------------------------- */

/* Why a known architecture is not a llama (what its layers add). */
static const struct {
	const char *arch;
	const char *why;
} hf_refused[] = {
	{ "Qwen2ForCausalLM", "its q/k/v projections have biases" },
	{ "Qwen3ForCausalLM", "it normalizes q and k per head (q_norm, "
	    "k_norm)" },
	{ "Qwen2MoeForCausalLM", "its FFN is a mixture of experts" },
	{ "Qwen3MoeForCausalLM", "its FFN is a mixture of experts" },
	{ "MixtralForCausalLM", "its FFN is a mixture of experts" },
	{ "DeepseekV2ForCausalLM", "its attention is latent (MLA) and its "
	    "FFN a mixture of experts" },
	{ "DeepseekV3ForCausalLM", "its attention is latent (MLA) and its "
	    "FFN a mixture of experts" },
	{ "GemmaForCausalLM", "it scales embeddings by sqrt(hidden_size), "
	    "its RMSNorm multiplies by (1 + weight) and its FFN uses GELU" },
	{ "Gemma2ForCausalLM", "it scales embeddings, norms by (1 + weight), "
	    "uses GELU, soft-caps logits and alternates sliding windows" },
	{ "Gemma3ForCausalLM", "it scales embeddings, norms by (1 + weight), "
	    "uses GELU, normalizes q and k and alternates sliding windows" },
	{ "Phi3ForCausalLM", "it fuses q/k/v (qkv_proj) and gate/up "
	    "(gate_up_proj) into single weights" },
	{ "PhiForCausalLM", "it uses LayerNorm with biases, partial rotary "
	    "embeddings and a GELU FFN" },
	{ "GPT2LMHeadModel", "it uses LayerNorm, learned positions and a "
	    "GELU FFN" },
	{ "GPTNeoXForCausalLM", "it uses LayerNorm, parallel attention and "
	    "FFN, and partial rotary embeddings" },
	{ "LlamaModel", "it has no language-model head" },
};

#define HF_LLAMA_ONLY "llama only: LlamaForCausalLM, or MistralForCausalLM " \
	"without a sliding window"

static void
hf_refuse_arch(const char *arch, char *err, size_t errlen)
{
	const char *why = "its layers differ from Llama's";
	size_t i;

	for (i = 0; i < sizeof(hf_refused) / sizeof(hf_refused[0]); i++)
		if (strcmp(arch, hf_refused[i].arch) == 0)
			why = hf_refused[i].why;
	snprintf(err, errlen, "architecture '%.60s' is not supported (%s): "
	    "%s", arch, HF_LLAMA_ONLY, why);
}

/* A present, non-null member (absent and null are the same to
 * transformers' from_dict: the default). */
static json_t *
hf_get(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_null(v) ? NULL : v;
}

/* An integer field in [lo, hi]; absent gives def (or an error when
 * required). */
static enum ts_err
hf_u32(const json_t *o, const char *key, int required, uint32_t def,
    uint32_t lo, uint32_t hi, uint32_t *out, char *err, size_t errlen)
{
	json_t *v = hf_get(o, key);
	json_int_t x;

	if (v == NULL) {
		if (required) {
			snprintf(err, errlen, "%s is missing", key);
			return TS_EFORMAT;
		}
		*out = def;
		return TS_OK;
	}
	if (!json_is_integer(v)) {
		snprintf(err, errlen, "%s is not an integer", key);
		return TS_EFORMAT;
	}
	x = json_integer_value(v);
	if (x < (json_int_t)lo || x > (json_int_t)hi) {
		snprintf(err, errlen, "%s %" JSON_INTEGER_FORMAT " is out of "
		    "range [%" PRIu32 ", %" PRIu32 "]", key, x, lo, hi);
		return x > (json_int_t)hi ? TS_ELIMIT : TS_EFORMAT;
	}
	*out = (uint32_t)x;
	return TS_OK;
}

/* A finite number field > 0 (and < hi); absent gives def, or an error
 * when def is negative (required). */
static enum ts_err
hf_num(const json_t *o, const char *key, double def, double hi,
    double *out, char *err, size_t errlen)
{
	json_t *v = hf_get(o, key);
	double x;

	if (v == NULL) {
		if (def < 0) {
			snprintf(err, errlen, "%s is missing", key);
			return TS_EFORMAT;
		}
		*out = def;
		return TS_OK;
	}
	if (!json_is_number(v)) {
		snprintf(err, errlen, "%s is not a number", key);
		return TS_EFORMAT;
	}
	x = json_number_value(v);
	if (!isfinite(x) || x <= 0 || x >= hi) {
		snprintf(err, errlen, "%s %g is out of range (0, %g)", key, x,
		    hi);
		return TS_EFORMAT;
	}
	*out = x;
	return TS_OK;
}

static enum ts_err
hf_bool(const json_t *o, const char *key, int *has, int *out, char *err,
    size_t errlen)
{
	json_t *v = hf_get(o, key);

	if (has != NULL)
		*has = v != NULL;
	if (v == NULL)
		return TS_OK;
	if (!json_is_boolean(v)) {
		snprintf(err, errlen, "%s is not true or false", key);
		return TS_EFORMAT;
	}
	*out = json_is_true(v);
	return TS_OK;
}

/* A token id: an integer in [0, 2^31). */
static int
hf_token_id(const json_t *v, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > INT32_MAX)
		return -1;
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* eos_token_id: an int or a list of ints (null: none). */
static enum ts_err
hf_eos(const json_t *o, uint32_t *n, uint32_t *ids, char *err,
    size_t errlen)
{
	json_t *v = hf_get(o, "eos_token_id"), *x;
	size_t i;

	*n = 0;
	if (v == NULL)
		return TS_OK;
	if (json_is_integer(v)) {
		if (hf_token_id(v, &ids[0]) != 0)
			goto bad;
		*n = 1;
		return TS_OK;
	}
	if (!json_is_array(v))
		goto bad;
	if (json_array_size(v) > HF_MAX_EOS) {
		snprintf(err, errlen, "eos_token_id lists %zu ids, over the "
		    "limit %u", json_array_size(v), HF_MAX_EOS);
		return TS_ELIMIT;
	}
	json_array_foreach(v, i, x) {
		if (hf_token_id(x, &ids[i]) != 0)
			goto bad;
	}
	*n = (uint32_t)json_array_size(v);
	return TS_OK;
bad:
	snprintf(err, errlen, "eos_token_id is not a token id or a list of "
	    "them");
	return TS_EFORMAT;
}

static enum ts_err
hf_bos(const json_t *o, int *has, uint32_t *id, char *err, size_t errlen)
{
	json_t *v = hf_get(o, "bos_token_id");

	*has = 0;
	if (v == NULL)
		return TS_OK;
	if (hf_token_id(v, id) != 0) {
		snprintf(err, errlen, "bos_token_id is not a token id");
		return TS_EFORMAT;
	}
	*has = 1;
	return TS_OK;
}

/* The architecture: architectures[] must name one we run; without it,
 * model_type decides. */
static enum ts_err
hf_arch(struct hf_config *c, const json_t *root, char *err, size_t errlen)
{
	json_t *archs = hf_get(root, "architectures"), *x;
	json_t *type = hf_get(root, "model_type");
	const char *first = NULL;
	size_t i;

	c->architecture[0] = '\0';
	if (archs != NULL) {
		if (!json_is_array(archs)) {
			snprintf(err, errlen, "architectures is not a list");
			return TS_EFORMAT;
		}
		json_array_foreach(archs, i, x) {
			const char *s = json_string_value(x);

			if (s == NULL)
				continue;
			if (first == NULL)
				first = s;
			if (strcmp(s, "LlamaForCausalLM") == 0 ||
			    strcmp(s, "MistralForCausalLM") == 0) {
				snprintf(c->architecture,
				    sizeof(c->architecture), "%s", s);
				break;
			}
		}
		if (c->architecture[0] == '\0') {
			hf_refuse_arch(first != NULL ? first : "(none)", err,
			    errlen);
			return TS_EFORMAT;
		}
	} else if (json_is_string(type) &&
	    strcmp(json_string_value(type), "llama") == 0) {
		snprintf(c->architecture, sizeof(c->architecture),
		    "LlamaForCausalLM");
	} else if (json_is_string(type) &&
	    strcmp(json_string_value(type), "mistral") == 0) {
		snprintf(c->architecture, sizeof(c->architecture),
		    "MistralForCausalLM");
	} else {
		snprintf(err, errlen, "no architectures, and model_type %s%.60s"
		    "%s is not supported (%s)", json_is_string(type) ? "'" :
		    "", json_is_string(type) ? json_string_value(type) :
		    "absent", json_is_string(type) ? "'" : "",
		    HF_LLAMA_ONLY);
		return TS_EFORMAT;
	}
	if (strcmp(c->architecture, "MistralForCausalLM") == 0) {
		/* MistralConfig's sliding_window defaults to 4096: only an
		 * explicit null means full attention */
		json_t *w = json_object_get(root, "sliding_window");

		if (w == NULL || !json_is_null(w)) {
			snprintf(err, errlen, "MistralForCausalLM with "
			    "sliding_window %s is not supported (%s): "
			    "tokstream's attention has no sliding window",
			    w == NULL ? "absent (4096)" : "set",
			    HF_LLAMA_ONLY);
			return TS_EFORMAT;
		}
	}
	return TS_OK;
}

/*
 * rope_scaling (or, in newer transformers, rope_parameters): null or
 * {"rope_type" (or "type"): "default" | "linear" | "llama3", ...}, the
 * keys of modeling_rope_utils.py's _compute_*_parameters.
 */
static enum ts_err
hf_rope(struct hf_config *c, const json_t *root, char *err, size_t errlen)
{
	json_t *rs = hf_get(root, "rope_scaling"), *t;
	const char *type;
	enum ts_err rc;

	c->rope_scaling = HF_ROPE_NONE;
	if (rs == NULL)
		rs = hf_get(root, "rope_parameters");
	if (rs == NULL)
		return TS_OK;
	if (!json_is_object(rs)) {
		snprintf(err, errlen, "rope_scaling is not an object");
		return TS_EFORMAT;
	}
	if (hf_get(rs, "rope_theta") != NULL) {
		rc = hf_num(rs, "rope_theta", 0, 1e12, &c->rope_theta, err,
		    errlen);
		if (rc != TS_OK)
			return rc;
	}
	t = hf_get(rs, "rope_type");
	if (t == NULL)
		t = hf_get(rs, "type");
	type = json_string_value(t);
	if (type == NULL || strcmp(type, "default") == 0) {
		if (t != NULL && type == NULL) {
			snprintf(err, errlen, "rope_scaling's rope_type is "
			    "not a string");
			return TS_EFORMAT;
		}
		return TS_OK;
	}
	if (strcmp(type, "linear") == 0) {
		c->rope_scaling = HF_ROPE_LINEAR;
		return hf_num(rs, "factor", -1, 1e6, &c->rope_factor, err,
		    errlen);
	}
	if (strcmp(type, "llama3") == 0) {
		c->rope_scaling = HF_ROPE_LLAMA3;
		if ((rc = hf_num(rs, "factor", -1, 1e6, &c->rope_factor, err,
		    errlen)) != TS_OK ||
		    (rc = hf_num(rs, "low_freq_factor", -1, 1e6,
		    &c->rope_low_freq_factor, err, errlen)) != TS_OK ||
		    (rc = hf_num(rs, "high_freq_factor", -1, 1e6,
		    &c->rope_high_freq_factor, err, errlen)) != TS_OK ||
		    (rc = hf_u32(rs, "original_max_position_embeddings", 1, 0,
		    1, MODEL_MAX_SEQ_LEN,
		    &c->rope_original_max_position_embeddings, err, errlen)) !=
		    TS_OK)
			return rc;
		if (c->rope_high_freq_factor <= c->rope_low_freq_factor) {
			snprintf(err, errlen, "rope_scaling: high_freq_factor "
			    "%g must be above low_freq_factor %g",
			    c->rope_high_freq_factor,
			    c->rope_low_freq_factor);
			return TS_EFORMAT;
		}
		return TS_OK;
	}
	snprintf(err, errlen, "rope_scaling type '%.40s' is not supported "
	    "(only linear and llama3)", type);
	return TS_EFORMAT;
}

enum ts_err
hf_config_parse(struct hf_config *c, const char *text, size_t len,
    char *err, size_t errlen)
{
	json_t *root, *v;
	json_error_t jerr;
	enum ts_err rc = TS_EFORMAT;
	int mistral, has = 0;

	memset(c, 0, sizeof(*c));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "not valid JSON: %s (line %d column %d)",
		    jerr.text, jerr.line, jerr.column);
		return TS_EFORMAT;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if ((rc = hf_arch(c, root, err, errlen)) != TS_OK)
		goto out;
	mistral = strcmp(c->architecture, "MistralForCausalLM") == 0;
	if ((rc = hf_u32(root, "hidden_size", 1, 0, 1, MODEL_MAX_DIM,
	    &c->hidden_size, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "intermediate_size", 1, 0, 1,
	    MODEL_MAX_HIDDEN, &c->intermediate_size, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "num_hidden_layers", 1, 0, 1,
	    MODEL_MAX_LAYERS, &c->num_hidden_layers, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "num_attention_heads", 1, 0, 1,
	    MODEL_MAX_HEADS, &c->num_attention_heads, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "num_key_value_heads", 0,
	    c->num_attention_heads, 1, MODEL_MAX_HEADS,
	    &c->num_key_value_heads, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "vocab_size", 1, 0, 1, MODEL_MAX_VOCAB,
	    &c->vocab_size, err, errlen)) != TS_OK ||
	    (rc = hf_u32(root, "max_position_embeddings", 0,
	    mistral ? 4096 * 32 : 2048, 1, MODEL_MAX_SEQ_LEN,
	    &c->max_position_embeddings, err, errlen)) != TS_OK ||
	    (rc = hf_num(root, "rms_norm_eps", 1e-6, 1, &c->rms_norm_eps,
	    err, errlen)) != TS_OK ||
	    (rc = hf_num(root, "rope_theta", 10000, 1e12, &c->rope_theta,
	    err, errlen)) != TS_OK ||
	    (rc = hf_rope(c, root, err, errlen)) != TS_OK ||
	    (rc = hf_bool(root, "tie_word_embeddings", NULL,
	    &c->tie_word_embeddings, err, errlen)) != TS_OK ||
	    (rc = hf_bos(root, &c->has_bos_token_id, &c->bos_token_id, err,
	    errlen)) != TS_OK ||
	    (rc = hf_eos(root, &c->n_eos, c->eos_token_ids, err, errlen)) !=
	    TS_OK)
		goto out;
	rc = TS_EFORMAT;
	if (c->hidden_size % c->num_attention_heads != 0 ||
	    (c->hidden_size / c->num_attention_heads) % 2 != 0) {
		snprintf(err, errlen, "hidden_size %u is not an even head size "
		    "times num_attention_heads %u", c->hidden_size,
		    c->num_attention_heads);
		goto out;
	}
	c->head_dim = c->hidden_size / c->num_attention_heads;
	if (c->num_key_value_heads > c->num_attention_heads ||
	    c->num_attention_heads % c->num_key_value_heads != 0) {
		snprintf(err, errlen, "num_attention_heads %u is not a "
		    "multiple of num_key_value_heads %u",
		    c->num_attention_heads, c->num_key_value_heads);
		goto out;
	}
	v = hf_get(root, "head_dim");
	if (v != NULL && (!json_is_integer(v) ||
	    json_integer_value(v) != (json_int_t)c->head_dim)) {
		snprintf(err, errlen, "head_dim is not hidden_size / "
		    "num_attention_heads = %u (a separate head size is not "
		    "supported)", c->head_dim);
		goto out;
	}
	v = hf_get(root, "hidden_act");
	if (v != NULL && (!json_is_string(v) ||
	    strcmp(json_string_value(v), "silu") != 0)) {
		snprintf(err, errlen, "hidden_act %s%.40s%s is not supported "
		    "(silu only)", json_is_string(v) ? "'" : "",
		    json_is_string(v) ? json_string_value(v) : "(not a string)",
		    json_is_string(v) ? "'" : "");
		goto out;
	}
	if ((rc = hf_bool(root, "attention_bias", NULL, &has, err,
	    errlen)) != TS_OK)
		goto out;
	if (has) {
		snprintf(err, errlen, "attention_bias is true: biases are not "
		    "supported");
		rc = TS_EFORMAT;
		goto out;
	}
	if ((rc = hf_bool(root, "mlp_bias", NULL, &has, err, errlen)) !=
	    TS_OK)
		goto out;
	if (has) {
		snprintf(err, errlen, "mlp_bias is true: biases are not "
		    "supported");
		rc = TS_EFORMAT;
		goto out;
	}
	/* GPTQ, AWQ, bitsandbytes, FP8...: packed integer weights and
	 * scales that the tensor check would refuse one by one */
	v = hf_get(root, "quantization_config");
	if (v != NULL) {
		const char *qm = json_string_value(json_object_get(v,
		    "quant_method"));

		snprintf(err, errlen, "quantization_config%s%.40s%s is not "
		    "supported (weights must be F32, F16 or BF16)",
		    qm != NULL ? " (" : "", qm != NULL ? qm : "",
		    qm != NULL ? ")" : "");
		rc = TS_EFORMAT;
		goto out;
	}
	/* transformers 5 renamed torch_dtype to dtype */
	v = hf_get(root, "torch_dtype");
	if (v == NULL)
		v = hf_get(root, "dtype");
	if (json_is_string(v))
		snprintf(c->torch_dtype, sizeof(c->torch_dtype), "%s",
		    json_string_value(v));
	rc = TS_OK;
out:
	json_decref(root);
	return rc;
}

/* ---- generation_config.json ---------------------------------------- */

enum ts_err
hf_generation_parse(struct hf_generation *g, const char *text, size_t len,
    char *err, size_t errlen)
{
	json_t *root, *v;
	json_error_t jerr;
	enum ts_err rc = TS_EFORMAT;
	double x;

	memset(g, 0, sizeof(*g));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "not valid JSON: %s (line %d column %d)",
		    jerr.text, jerr.line, jerr.column);
		return TS_EFORMAT;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if ((rc = hf_bos(root, &g->has_bos_token_id, &g->bos_token_id, err,
	    errlen)) != TS_OK ||
	    (rc = hf_eos(root, &g->n_eos, g->eos_token_ids, err, errlen)) !=
	    TS_OK ||
	    (rc = hf_bool(root, "do_sample", &g->has_do_sample,
	    &g->do_sample, err, errlen)) != TS_OK)
		goto out;
	rc = TS_EFORMAT;
	if ((v = hf_get(root, "temperature")) != NULL) {
		x = json_number_value(v);
		if (!json_is_number(v) || !isfinite(x) || x < 0) {
			snprintf(err, errlen, "temperature is not a number "
			    ">= 0");
			goto out;
		}
		g->has_temperature = 1;
		g->temperature = x;
	}
	if ((v = hf_get(root, "top_p")) != NULL) {
		x = json_number_value(v);
		if (!json_is_number(v) || !(x >= 0 && x <= 1)) {
			snprintf(err, errlen, "top_p is not a number in "
			    "[0, 1]");
			goto out;
		}
		g->has_top_p = 1;
		g->top_p = x;
	}
	if ((v = hf_get(root, "top_k")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > INT32_MAX) {
			snprintf(err, errlen, "top_k is not an integer >= 0");
			goto out;
		}
		g->has_top_k = 1;
		g->top_k = (uint32_t)json_integer_value(v);
	}
	g->present = 1;
	rc = TS_OK;
out:
	json_decref(root);
	return rc;
}

/* ---- tokenizer_config.json ----------------------------------------- */

void
hf_tokenizer_config_free(struct hf_tokenizer_config *t)
{
	if (t == NULL)
		return;
	free((char *)t->chat_template);
	free((char *)t->bos_token);
	free((char *)t->eos_token);
	t->chat_template = t->bos_token = t->eos_token = NULL;
}

/* A copy of a JSON string (NULs refused). */
static char *
hf_strdup(const json_t *v)
{
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return xstrndup(json_string_value(v), json_string_length(v));
}

/* bos_token / eos_token: a string, an AddedToken {"content": ...}, or
 * null. */
static enum ts_err
hf_token_text(const json_t *root, const char *key, const char **out,
    char *err, size_t errlen)
{
	json_t *v = hf_get(root, key);

	*out = NULL;
	if (v == NULL)
		return TS_OK;
	if (json_is_object(v))
		v = json_object_get(v, "content");
	*out = hf_strdup(v);
	if (*out == NULL) {
		snprintf(err, errlen, "%s is not a string or an AddedToken "
		    "with a content string", key);
		return TS_EFORMAT;
	}
	return TS_OK;
}

/* chat_template: a string, or a list of {"name", "template"} of which
 * the "default" one is used (tokenization_utils_base.py
 * get_chat_template). */
static enum ts_err
hf_template(const json_t *root, const char **tpl, char *err, size_t errlen)
{
	json_t *v = hf_get(root, "chat_template"), *x;
	char *out = NULL;
	size_t i;

	*tpl = NULL;
	if (v == NULL)
		return TS_OK;
	if (json_is_string(v)) {
		out = hf_strdup(v);
		if (out == NULL)
			goto bad;
		*tpl = out;
		return TS_OK;
	}
	if (!json_is_array(v))
		goto bad;
	json_array_foreach(v, i, x) {
		const char *name = json_string_value(json_object_get(x,
		    "name"));
		json_t *t = json_object_get(x, "template");

		if (name == NULL || !json_is_string(t))
			goto bad;
		if (strcmp(name, "default") == 0 && out == NULL) {
			out = hf_strdup(t);
			if (out == NULL)
				goto bad;
		}
	}
	*tpl = out;
	return TS_OK;
bad:
	free(out);
	snprintf(err, errlen, "chat_template is not a string or a list of "
	    "{\"name\", \"template\"} strings");
	return TS_EFORMAT;
}

enum ts_err
hf_tokenizer_config_parse(struct hf_tokenizer_config *t, const char *text,
    size_t len, char *err, size_t errlen)
{
	json_t *root, *v;
	json_error_t jerr;
	enum ts_err rc = TS_EFORMAT;

	memset(t, 0, sizeof(*t));
	/* model_max_length is often 1e30 written as an integer, beyond
	 * jansson's json_int_t: read every number as a double */
	root = json_loadb(text, len,
	    JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "not valid JSON: %s (line %d column %d)",
		    jerr.text, jerr.line, jerr.column);
		return TS_EFORMAT;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if ((rc = hf_template(root, &t->chat_template, err, errlen)) !=
	    TS_OK ||
	    (rc = hf_bool(root, "add_bos_token", &t->has_add_bos_token,
	    &t->add_bos_token, err, errlen)) != TS_OK ||
	    (rc = hf_bool(root, "add_eos_token", &t->has_add_eos_token,
	    &t->add_eos_token, err, errlen)) != TS_OK ||
	    (rc = hf_token_text(root, "bos_token", &t->bos_token, err,
	    errlen)) != TS_OK ||
	    (rc = hf_token_text(root, "eos_token", &t->eos_token, err,
	    errlen)) != TS_OK)
		goto out;
	if ((v = hf_get(root, "model_max_length")) != NULL) {
		double x = json_number_value(v);

		if (!json_is_number(v) || !(x >= 0)) {
			snprintf(err, errlen, "model_max_length is not a "
			    "number >= 0");
			rc = TS_EFORMAT;
			goto out;
		}
		t->has_model_max_length = 1;
		t->model_max_length = x >= 18446744073709551615.0 ?
		    UINT64_MAX : (uint64_t)x;
	}
	t->present = 1;
	rc = TS_OK;
out:
	if (rc != TS_OK)
		hf_tokenizer_config_free(t);
	json_decref(root);
	return rc;
}

/* ---- weights ------------------------------------------------------- */

static const char *const hf_weight_names[HF_W_COUNT] = {
	[HF_W_EMBED] = "model.embed_tokens.weight",
	[HF_W_ATTN_NORM] = "input_layernorm.weight",
	[HF_W_Q] = "self_attn.q_proj.weight",
	[HF_W_K] = "self_attn.k_proj.weight",
	[HF_W_V] = "self_attn.v_proj.weight",
	[HF_W_O] = "self_attn.o_proj.weight",
	[HF_W_FFN_NORM] = "post_attention_layernorm.weight",
	[HF_W_GATE] = "mlp.gate_proj.weight",
	[HF_W_UP] = "mlp.up_proj.weight",
	[HF_W_DOWN] = "mlp.down_proj.weight",
	[HF_W_NORM] = "model.norm.weight",
	[HF_W_LM_HEAD] = "lm_head.weight",
};

static int
hf_per_layer(enum hf_weight w)
{
	return w != HF_W_EMBED && w != HF_W_NORM && w != HF_W_LM_HEAD;
}

int
hf_weight_name(enum hf_weight w, uint32_t layer, char *buf, size_t len)
{
	if ((unsigned)w >= HF_W_COUNT)
		return snprintf(buf, len, "?");
	if (hf_per_layer(w))
		return snprintf(buf, len, "model.layers.%" PRIu32 ".%s",
		    layer, hf_weight_names[w]);
	return snprintf(buf, len, "%s", hf_weight_names[w]);
}

uint32_t
hf_weight_shape(const struct hf_config *c, enum hf_weight w,
    uint64_t shape[2])
{
	uint64_t q = (uint64_t)c->num_attention_heads * c->head_dim;
	uint64_t kv = (uint64_t)c->num_key_value_heads * c->head_dim;

	switch (w) {
	case HF_W_EMBED:
	case HF_W_LM_HEAD:
		shape[0] = c->vocab_size;
		shape[1] = c->hidden_size;
		return 2;
	case HF_W_Q:
		shape[0] = q;
		shape[1] = c->hidden_size;
		return 2;
	case HF_W_K:
	case HF_W_V:
		shape[0] = kv;
		shape[1] = c->hidden_size;
		return 2;
	case HF_W_O:
		shape[0] = c->hidden_size;
		shape[1] = q;
		return 2;
	case HF_W_GATE:
	case HF_W_UP:
		shape[0] = c->intermediate_size;
		shape[1] = c->hidden_size;
		return 2;
	case HF_W_DOWN:
		shape[0] = c->hidden_size;
		shape[1] = c->intermediate_size;
		return 2;
	default:
		shape[0] = c->hidden_size;
		return 1;
	}
}

static void
hf_shape_string(char *s, size_t len, uint32_t n, const uint64_t *shape)
{
	size_t at = (size_t)snprintf(s, len, "[");
	uint32_t i;

	for (i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(s + at, len - at, "%s%" PRIu64,
		    i > 0 ? ", " : "", shape[i]);
	if (at < len)
		snprintf(s + at, len - at, "]");
}

/* Checks one weight: present (unless optional) with its shape. */
static enum ts_err
hf_check_one(const struct hf_config *c, const struct safetensors_set *ws,
    enum hf_weight w, uint32_t layer, char *err, size_t errlen)
{
	const struct st_tensor *t;
	uint64_t shape[2];
	uint32_t n = hf_weight_shape(c, w, shape);
	char name[128], have[200], want[64];

	hf_weight_name(w, layer, name, sizeof(name));
	t = safetensors_set_find(ws, name);
	if (t == NULL) {
		snprintf(err, errlen, "tensor '%s' is missing", name);
		return TS_EFORMAT;
	}
	if (t->n_dims != n || t->shape[0] != shape[0] ||
	    (n == 2 && t->shape[1] != shape[1])) {
		hf_shape_string(have, sizeof(have), t->n_dims, t->shape);
		hf_shape_string(want, sizeof(want), n, shape);
		snprintf(err, errlen, "tensor '%s' has shape %s but the "
		    "config needs %s", name, have, want);
		return TS_EFORMAT;
	}
	return TS_OK;
}

enum ts_err
hf_check_weights(const struct hf_config *c,
    const struct safetensors_set *weights, char *err, size_t errlen)
{
	enum ts_err rc;
	uint32_t l;
	size_t i, n;
	int w;

	n = safetensors_set_count(weights);
	for (i = 0; i < n; i++) {
		const char *name = safetensors_set_at(weights, i)->name;
		size_t len = strlen(name);

		if (len >= 5 && strcmp(name + len - 5, ".bias") == 0) {
			snprintf(err, errlen, "tensor '%.200s': biases are not "
			    "supported", name);
			return TS_EFORMAT;
		}
	}
	for (w = 0; w < HF_W_COUNT; w++) {
		if (w == HF_W_LM_HEAD && c->tie_word_embeddings)
			continue;
		if (!hf_per_layer((enum hf_weight)w)) {
			rc = hf_check_one(c, weights, (enum hf_weight)w, 0,
			    err, errlen);
			if (rc != TS_OK)
				return rc;
			continue;
		}
		for (l = 0; l < c->num_hidden_layers; l++) {
			rc = hf_check_one(c, weights, (enum hf_weight)w, l,
			    err, errlen);
			if (rc != TS_OK)
				return rc;
		}
	}
	return TS_OK;
}

const struct st_tensor *
hf_find(const struct hf_model *m, const char *name)
{
	return safetensors_set_find(m->weights, name);
}

const struct st_tensor *
hf_weight(const struct hf_model *m, enum hf_weight w, uint32_t layer)
{
	char name[128];

	if ((unsigned)w >= HF_W_COUNT ||
	    (hf_per_layer(w) && layer >= m->cfg.num_hidden_layers))
		return NULL;
	if (w == HF_W_LM_HEAD && m->cfg.tie_word_embeddings)
		w = HF_W_EMBED;
	hf_weight_name(w, layer, name, sizeof(name));
	return hf_find(m, name);
}

const uint32_t *
hf_eos_ids(const struct hf_model *m, uint32_t *n)
{
	if (m->gen.present && m->gen.n_eos > 0) {
		*n = m->gen.n_eos;
		return m->gen.eos_token_ids;
	}
	*n = m->cfg.n_eos;
	return m->cfg.eos_token_ids;
}

/* ---- RoPE row order ------------------------------------------------ */

static enum ts_err
hf_move_rows(const void *src, void *dst, enum model_dtype dtype,
    uint32_t n_head, uint64_t rows, uint64_t cols, int to_hf)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	uint64_t hd, half, h, i, row, esz;
	int j;

	esz = dtype == MODEL_DTYPE_F32 ? 4 :
	    (dtype == MODEL_DTYPE_F16 || dtype == MODEL_DTYPE_BF16) ? 2 : 0;
	if (esz == 0 || n_head == 0 || rows % (2 * (uint64_t)n_head) != 0 ||
	    cols > UINT64_MAX / esz)
		return TS_EINVAL;
	row = cols * esz;
	hd = rows / n_head;
	half = hd / 2;
	for (h = 0; h < n_head; h++) {
		for (i = 0; i < half; i++) {
			for (j = 0; j < 2; j++) {
				uint64_t hf = h * hd + (uint64_t)j * half + i;
				uint64_t il = h * hd + 2 * i + (uint64_t)j;

				if (to_hf)
					memcpy(d + hf * row, s + il * row,
					    (size_t)row);
				else
					memcpy(d + il * row, s + hf * row,
					    (size_t)row);
			}
		}
	}
	return TS_OK;
}

enum ts_err
hf_unpermute_rows(const void *src, void *dst, enum model_dtype dtype,
    uint32_t n_head, uint64_t rows, uint64_t cols)
{
	return hf_move_rows(src, dst, dtype, n_head, rows, cols, 0);
}

enum ts_err
hf_permute_rows(const void *src, void *dst, enum model_dtype dtype,
    uint32_t n_head, uint64_t rows, uint64_t cols)
{
	return hf_move_rows(src, dst, dtype, n_head, rows, cols, 1);
}

/* ---- the folder ---------------------------------------------------- */

static char *
hf_path(const char *dir, const char *file)
{
	size_t len = strlen(dir) + strlen(file) + 2;
	char *p = xmalloc(len);

	snprintf(p, len, "%s/%s", dir, file);
	return p;
}

/*
 * Reads DIR/file (at most max bytes). TS_OK with the text; TS_OK with
 * *text NULL when an optional file does not exist; errors name the
 * file.
 */
static enum ts_err
hf_read(const char *dir, const char *file, size_t max, int optional,
    char **text, size_t *len, char *err, size_t errlen)
{
	char *path = hf_path(dir, file);
	enum ts_err rc;

	rc = st_read_file(path, max, text, len, err, errlen);
	if (rc == TS_ESYS && errno == ENOENT && optional)
		rc = TS_OK;
	free(path);
	return rc;
}

void
hf_close(struct hf_model *m)
{
	if (m == NULL)
		return;
	hf_tokenizer_config_free(&m->tok);
	safetensors_set_close(m->weights);
	free(m->tokenizer_json);
	free(m->dir);
	free(m);
}

enum ts_err
hf_open(struct hf_model **out, const char *dir, char *err, size_t errlen)
{
	struct hf_model *m = xcalloc(1, sizeof(*m));
	char *text = NULL, why[400];
	const char *file = NULL;
	struct stat sb;
	enum ts_err rc;
	size_t len;

	*out = NULL;
	m->dir = xstrndup(dir, strlen(dir));
	file = "config.json";
	rc = hf_read(dir, file, HF_MAX_CONFIG_BYTES, 0, &text, &len, err,
	    errlen);
	if (rc != TS_OK)
		goto out;
	if ((rc = hf_config_parse(&m->cfg, text, len, why, sizeof(why))) !=
	    TS_OK)
		goto bad;
	free(text);
	text = NULL;

	file = "generation_config.json";
	rc = hf_read(dir, file, HF_MAX_CONFIG_BYTES, 1, &text, &len, err,
	    errlen);
	if (rc != TS_OK)
		goto out;
	if (text != NULL && (rc = hf_generation_parse(&m->gen, text, len,
	    why, sizeof(why))) != TS_OK)
		goto bad;
	free(text);
	text = NULL;

	file = "tokenizer_config.json";
	rc = hf_read(dir, file, HF_MAX_TOKENIZER_CONFIG_BYTES, 1, &text,
	    &len, err, errlen);
	if (rc != TS_OK)
		goto out;
	if (text != NULL && (rc = hf_tokenizer_config_parse(&m->tok, text,
	    len, why, sizeof(why))) != TS_OK)
		goto bad;
	free(text);
	text = NULL;

	/* newer transformers save the template in its own file, and "if
	 * independent chat template file(s) exist, they take priority over
	 * template entries in the tokenizer config"
	 * (tokenization_utils_base.py _from_pretrained) */
	file = "chat_template.jinja";
	rc = hf_read(dir, file, HF_MAX_TEMPLATE_BYTES, 1, &text, &len, err,
	    errlen);
	if (rc != TS_OK)
		goto out;
	if (text != NULL) {
		if (strlen(text) != len) {
			snprintf(why, sizeof(why), "contains a NUL byte");
			rc = TS_EFORMAT;
			goto bad;
		}
		free((char *)m->tok.chat_template);
		m->tok.chat_template = text;
		text = NULL;
	}

	m->tokenizer_json = hf_path(dir, "tokenizer.json");
	if (stat(m->tokenizer_json, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		free(m->tokenizer_json);
		m->tokenizer_json = NULL;
	}

	rc = safetensors_set_open_dir(&m->weights, dir, err, errlen);
	if (rc != TS_OK)
		goto out;
	rc = hf_check_weights(&m->cfg, m->weights, why, sizeof(why));
	if (rc != TS_OK) {
		snprintf(err, errlen, "%s: %s", dir, why);
		goto out;
	}
	*out = m;
	m = NULL;
	goto out;
bad:
	snprintf(err, errlen, "%s/%s: %s", dir, file, why);
out:
	free(text);
	hf_close(m);
	return rc;
}

/* ---- the writer ---------------------------------------------------- */

/* Writes root as DIR/file (compact JSON plus a newline). */
static enum ts_err
hf_write_json(const char *dir, const char *file, json_t *root, char *err,
    size_t errlen)
{
	char *path = hf_path(dir, file);
	enum ts_err rc = TS_OK;
	int saved;

	if (json_dump_file(root, path, JSON_COMPACT) != 0) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot write", path);
		errno = saved;
		rc = TS_ESYS;
	}
	free(path);
	return rc;
}

static json_t *
hf_eos_json(uint32_t n, const uint32_t *ids)
{
	json_t *a;
	uint32_t i;

	if (n == 1)
		return json_integer(ids[0]);
	a = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
}

static enum ts_err
hf_write_config(const char *dir, const struct hf_config *c, char *err,
    size_t errlen)
{
	const char *arch = c->architecture[0] != '\0' ? c->architecture :
	    "LlamaForCausalLM";
	int mistral = strcmp(arch, "MistralForCausalLM") == 0;
	json_t *o = json_object(), *rs = json_null();
	enum ts_err rc;

	json_object_set_new(o, "architectures", json_pack("[s]", arch));
	json_object_set_new(o, "model_type",
	    json_string(mistral ? "mistral" : "llama"));
	json_object_set_new(o, "hidden_size", json_integer(c->hidden_size));
	json_object_set_new(o, "intermediate_size",
	    json_integer(c->intermediate_size));
	json_object_set_new(o, "num_hidden_layers",
	    json_integer(c->num_hidden_layers));
	json_object_set_new(o, "num_attention_heads",
	    json_integer(c->num_attention_heads));
	json_object_set_new(o, "num_key_value_heads",
	    json_integer(c->num_key_value_heads));
	if (c->num_attention_heads != 0)
		json_object_set_new(o, "head_dim", json_integer(
		    c->hidden_size / c->num_attention_heads));
	json_object_set_new(o, "vocab_size", json_integer(c->vocab_size));
	json_object_set_new(o, "max_position_embeddings",
	    json_integer(c->max_position_embeddings));
	json_object_set_new(o, "rms_norm_eps", json_real(c->rms_norm_eps));
	json_object_set_new(o, "rope_theta", json_real(c->rope_theta));
	if (c->rope_scaling == HF_ROPE_LINEAR) {
		json_decref(rs);
		rs = json_pack("{s:s, s:f}", "rope_type", "linear", "factor",
		    c->rope_factor);
	} else if (c->rope_scaling == HF_ROPE_LLAMA3) {
		json_decref(rs);
		rs = json_pack("{s:s, s:f, s:f, s:f, s:I}", "rope_type",
		    "llama3", "factor", c->rope_factor, "low_freq_factor",
		    c->rope_low_freq_factor, "high_freq_factor",
		    c->rope_high_freq_factor,
		    "original_max_position_embeddings",
		    (json_int_t)c->rope_original_max_position_embeddings);
	}
	json_object_set_new(o, "rope_scaling", rs);
	json_object_set_new(o, "tie_word_embeddings",
	    json_boolean(c->tie_word_embeddings));
	json_object_set_new(o, "hidden_act", json_string("silu"));
	json_object_set_new(o, "attention_bias", json_false());
	json_object_set_new(o, "mlp_bias", json_false());
	if (mistral)
		json_object_set_new(o, "sliding_window", json_null());
	if (c->torch_dtype[0] != '\0')
		json_object_set_new(o, "torch_dtype",
		    json_string(c->torch_dtype));
	if (c->has_bos_token_id)
		json_object_set_new(o, "bos_token_id",
		    json_integer(c->bos_token_id));
	if (c->n_eos > 0)
		json_object_set_new(o, "eos_token_id",
		    hf_eos_json(c->n_eos, c->eos_token_ids));
	rc = hf_write_json(dir, "config.json", o, err, errlen);
	json_decref(o);
	return rc;
}

static enum ts_err
hf_write_generation(const char *dir, const struct hf_generation *g,
    char *err, size_t errlen)
{
	json_t *o = json_object();
	enum ts_err rc;

	if (g->has_bos_token_id)
		json_object_set_new(o, "bos_token_id",
		    json_integer(g->bos_token_id));
	if (g->n_eos > 0)
		json_object_set_new(o, "eos_token_id",
		    hf_eos_json(g->n_eos, g->eos_token_ids));
	if (g->has_do_sample)
		json_object_set_new(o, "do_sample",
		    json_boolean(g->do_sample));
	if (g->has_temperature)
		json_object_set_new(o, "temperature",
		    json_real(g->temperature));
	if (g->has_top_p)
		json_object_set_new(o, "top_p", json_real(g->top_p));
	if (g->has_top_k)
		json_object_set_new(o, "top_k", json_integer(g->top_k));
	rc = hf_write_json(dir, "generation_config.json", o, err, errlen);
	json_decref(o);
	return rc;
}

static enum ts_err
hf_write_tokenizer_config(const char *dir,
    const struct hf_tokenizer_config *t, char *err, size_t errlen)
{
	json_t *o = json_object();
	enum ts_err rc;

	if (t->chat_template != NULL)
		json_object_set_new(o, "chat_template",
		    json_string(t->chat_template));
	if (t->has_add_bos_token)
		json_object_set_new(o, "add_bos_token",
		    json_boolean(t->add_bos_token));
	if (t->has_add_eos_token)
		json_object_set_new(o, "add_eos_token",
		    json_boolean(t->add_eos_token));
	if (t->bos_token != NULL)
		json_object_set_new(o, "bos_token", json_string(t->bos_token));
	if (t->eos_token != NULL)
		json_object_set_new(o, "eos_token", json_string(t->eos_token));
	if (t->has_model_max_length)
		json_object_set_new(o, "model_max_length",
		    json_integer(t->model_max_length > INT64_MAX ? INT64_MAX :
		    (json_int_t)t->model_max_length));
	rc = hf_write_json(dir, "tokenizer_config.json", o, err, errlen);
	json_decref(o);
	return rc;
}

/* Converts one tensor to its dtype (caller frees *bytes). */
static void *
hf_convert(const struct hf_write_tensor *t, uint64_t n)
{
	unsigned char *b;
	uint64_t i;

	if (t->dtype == MODEL_DTYPE_F32) {
		b = xmalloc(n > 0 ? (size_t)n * 4 : 1);
		for (i = 0; i < n; i++) {
			uint32_t x;

			memcpy(&x, &t->data[i], 4);
			b[4 * i] = (unsigned char)x;
			b[4 * i + 1] = (unsigned char)(x >> 8);
			b[4 * i + 2] = (unsigned char)(x >> 16);
			b[4 * i + 3] = (unsigned char)(x >> 24);
		}
		return b;
	}
	b = xmalloc(n > 0 ? (size_t)n * 2 : 1);
	for (i = 0; i < n; i++) {
		uint16_t h = t->dtype == MODEL_DTYPE_F16 ?
		    st_f32_to_f16(t->data[i]) : st_f32_to_bf16(t->data[i]);

		b[2 * i] = (unsigned char)h;
		b[2 * i + 1] = (unsigned char)(h >> 8);
	}
	return b;
}

static int
hf_cmp_str(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

static enum ts_err
hf_write_weights(const char *dir, const struct hf_write_spec *spec,
    char *err, size_t errlen)
{
	static const char *const meta[] = { "format", "pt" };
	size_t n = spec->n_tensors, i, k, n_shards = 0, *shard = NULL;
	struct st_write_tensor *w = NULL;
	void **conv = NULL;
	uint64_t *bytes = NULL, fill = 0, total = 0;
	json_t *map = NULL, *index;
	enum ts_err rc = TS_EINVAL;
	const char **names = NULL;
	char file[64], *path;

	w = xcalloc(n + 1, sizeof(*w));
	conv = xcalloc(n + 1, sizeof(*conv));
	bytes = xcalloc(n + 1, sizeof(*bytes));
	shard = xcalloc(n + 1, sizeof(*shard));
	for (i = 0; i < n; i++) {
		const struct hf_write_tensor *t = &spec->tensors[i];

		bytes[i] = st_tensor_bytes(t->dtype, t->n_dims, t->shape);
		if (t->n_dims > ST_MAX_DIMS ||
		    (bytes[i] == 0 && st_tensor_bytes(MODEL_DTYPE_F32,
		    t->n_dims, t->shape) != 0) ||
		    (bytes[i] > 0 && t->data == NULL)) {
			snprintf(err, errlen, "tensor %zu: bad dtype, shape "
			    "or data", i);
			goto out;
		}
		conv[i] = hf_convert(t, bytes[i] /
		    (t->dtype == MODEL_DTYPE_F32 ? 4 : 2));
		w[i].name = t->name;
		w[i].dtype = t->dtype;
		w[i].n_dims = t->n_dims;
		memcpy(w[i].shape, t->shape, sizeof(w[i].shape));
		w[i].data = conv[i];
		total += bytes[i];
		/* a new shard when this tensor would overflow the current */
		if (spec->max_shard_bytes > 0 && (n_shards == 0 ||
		    (fill > 0 && fill + bytes[i] > spec->max_shard_bytes))) {
			n_shards++;
			fill = 0;
		}
		shard[i] = n_shards > 0 ? n_shards - 1 : 0;
		fill += bytes[i];
	}
	/* safetensors_write finds a name twice within a file; across
	 * shards the index would silently keep one */
	names = xcalloc(n + 1, sizeof(*names));
	for (i = 0; i < n; i++)
		names[i] = w[i].name != NULL ? w[i].name : "";
	qsort(names, n, sizeof(*names), hf_cmp_str);
	for (i = 1; i < n; i++) {
		if (strcmp(names[i - 1], names[i]) == 0) {
			snprintf(err, errlen, "tensor '%.200s' twice",
			    names[i]);
			rc = TS_EINVAL;
			goto out;
		}
	}
	if (spec->max_shard_bytes == 0) {
		path = hf_path(dir, "model.safetensors");
		rc = safetensors_write(path, w, n, meta, 1, err, errlen);
		free(path);
		goto out;
	}
	if (n_shards == 0)
		n_shards = 1;
	map = json_object();
	for (k = 0, i = 0; k < n_shards; k++) {
		size_t first = i;

		snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors",
		    k + 1, n_shards);
		while (i < n && shard[i] == k) {
			json_object_set_new(map, w[i].name, json_string(file));
			i++;
		}
		path = hf_path(dir, file);
		rc = safetensors_write(path, w + first, i - first, meta, 1,
		    err, errlen);
		free(path);
		if (rc != TS_OK)
			goto out;
	}
	index = json_pack("{s:{s:I}, s:O}", "metadata", "total_size",
	    (json_int_t)total, "weight_map", map);
	rc = hf_write_json(dir, "model.safetensors.index.json", index, err,
	    errlen);
	json_decref(index);
out:
	json_decref(map);
	free(names);
	for (i = 0; i < n; i++)
		free(conv[i]);
	free(conv);
	free(w);
	free(bytes);
	free(shard);
	return rc;
}

enum ts_err
hf_write(const char *dir, const struct hf_write_spec *spec, char *err,
    size_t errlen)
{
	enum ts_err rc;
	int saved;

	if (spec->cfg == NULL) {
		snprintf(err, errlen, "no config to write");
		return TS_EINVAL;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot create: %s", dir,
		    strerror(saved));
		errno = saved;
		return TS_ESYS;
	}
	if ((rc = hf_write_config(dir, spec->cfg, err, errlen)) != TS_OK ||
	    (rc = hf_write_weights(dir, spec, err, errlen)) != TS_OK)
		return rc;
	if (spec->gen != NULL &&
	    (rc = hf_write_generation(dir, spec->gen, err, errlen)) != TS_OK)
		return rc;
	if (spec->tok != NULL &&
	    (rc = hf_write_tokenizer_config(dir, spec->tok, err, errlen)) !=
	    TS_OK)
		return rc;
	return TS_OK;
}
