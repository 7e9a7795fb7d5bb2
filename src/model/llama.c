/*
 * model/llama.c - the transformer as an engine backend (model/llama.h):
 * KV caches per sequence, prefill in seq_start, batched decode steps.
 */
#define _GNU_SOURCE             /* MAP_ANONYMOUS, MAP_POPULATE */
#include "model/llama.h"

#include <sys/mman.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "model/model.h"
#include "model/model_file.h"
#include "model/model_pool.h"
#include "model/model_sample.h"
#include "model/quant.h"
#include "model/tokenizer.h"

/* Most rows of one forward pass (the engine has at most 4,096 slots). */
#define MODEL_MAX_BATCH 4096u

struct model_backend {
	char name[128];              /* the checkpoint's file name */
	char *path;                  /* the checkpoint as opened, for the
				      * start-up log */
	const char *models[1];       /* its one model: name */
	struct model_file *file;     /* the model's files */
	struct model *m;             /* file's */
	struct tokenizer *tok;       /* file's */
	struct model_run *run;
	struct model_options opt;
	uint32_t ctx;                /* positions per sequence */
	struct model_row *rows;      /* [max_batch] */
	struct model_seq **rseq;     /* [max_batch]: whose row */
	size_t *ridx;                /* [max_batch]: its index in the step */
	uint32_t eos[ENGINE_MAX_EOS]; /* the ids that end a text */
	uint32_t n_eos;
	struct engine_backend be;    /* what llama_backend_open filled:
				      * the model's sampling defaults */
};

/* One sequence: its KV cache and where its stream stands. */
struct model_seq {
	float *kv;                   /* model_kv_floats(ctx), mmap'd */
	size_t kv_bytes;
	float *logits;               /* [vocab] */
	uint32_t pos;                /* positions in the cache */
	uint32_t last;               /* the token step() gave last, to
				      * feed at the next decode position */
	int fresh;                   /* logits hold the next token's
				      * distribution, not yet sampled */
	int full;                    /* cache full: EOS from now on */
	int busy;                    /* in the step being run */
	int decode;                  /* needs a decode position in it */
	uint64_t rng;                /* sampler state */
	float temperature;           /* this sequence's sampling */
	float top_p;
	uint32_t top_k;              /* 0: no cut */
	float *cut;                  /* [vocab] the top-k cut logits */
	int ignore_eos;              /* EOS and BOS masked before sampling */
	uint32_t min_tokens;         /* ... and while fewer than this many
				      * were sampled (sampling.min_tokens) */
	uint32_t sampled;            /* tokens sampled so far */
};

void
model_options_defaults(struct model_options *o)
{
	memset(o, 0, sizeof(*o));
	o->threads = 0;
	o->max_batch = MODEL_DEFAULT_MAX_BATCH;
	o->context = 0;
}

/*
 * The k-th largest of x[0..n) (1 <= k < n): a min-heap of the k largest
 * seen, O(n log k). NaN counts as -inf.
 */
static float
kth_largest(const float *x, uint32_t n, uint32_t k, float *heap)
{
	uint32_t i, j, c;

	for (i = 0; i < n; i++) {
		float v = x[i] == x[i] ? x[i] : -INFINITY;

		if (i < k) {            /* sift up */
			j = i;
			while (j > 0 && heap[(j - 1) / 2] > v) {
				heap[j] = heap[(j - 1) / 2];
				j = (j - 1) / 2;
			}
			heap[j] = v;
			continue;
		}
		if (!(v > heap[0]))
			continue;
		j = 0;                  /* replace the root, sift down */
		for (;;) {
			c = 2 * j + 1;
			if (c >= k)
				break;
			if (c + 1 < k && heap[c + 1] < heap[c])
				c++;
			if (!(heap[c] < v))
				break;
			heap[j] = heap[c];
			j = c;
		}
		heap[j] = v;
	}
	return heap[0];
}

static uint32_t
seq_sample(const struct model_backend *mb, struct model_seq *s)
{
	uint32_t n = mb->m->cfg.vocab_size, i;
	const float *l = s->logits;

	if (s->ignore_eos || s->sampled++ < s->min_tokens)
		for (i = 0; i < mb->n_eos; i++)
			s->logits[mb->eos[i]] = -INFINITY;
	/* top-k before top-p (vLLM's order); greedy needs no cut. Ties
	 * with the k-th are kept. The logits stay whole for logprobs. */
	if (s->top_k > 0 && s->top_k < n && s->temperature > 0.0f) {
		float t = kth_largest(s->logits, n, s->top_k, s->cut);

		for (i = 0; i < n; i++)
			s->cut[i] = s->logits[i] >= t ? s->logits[i] :
			    -INFINITY;
		l = s->cut;
	}
	return model_sample(l, n, s->temperature, s->top_p, &s->rng);
}

/* Runs rows[0..n) in passes of at most max_batch rows. */
static void
forward_rows(struct model_backend *mb, struct model_row *rows, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i += k) {
		k = n - i < mb->opt.max_batch ? n - i : mb->opt.max_batch;
		model_forward(mb->run, rows + i, (uint32_t)k);
	}
}

/* Feeds `token` at the sequence's next position and computes the logits
 * after it. The caller checked that the cache has room. */
static void
seq_feed(struct model_backend *mb, struct model_seq *s, uint32_t token)
{
	struct model_row row;

	row.kv = s->kv;
	row.token = token;
	row.pos = s->pos;
	row.logits = s->logits;
	model_forward(mb->run, &row, 1);
	s->pos++;
}

/*
 * The ids of a prompt: the text's tokens (special-token text is the
 * special token), with BOS first when the model adds one and the text
 * does not already start with it (a chat template that writes
 * {{ bos_token }} gives one BOS, as vLLM's add_special_tokens false
 * for templated chats and llama.cpp's check for a doubled BOS). EOS at
 * the end when the model adds one.
 */
static enum ts_err
encode_prompt(const struct model_backend *mb, const char *prompt,
    size_t len, uint32_t **ids, size_t *n)
{
	uint32_t bos = tokenizer_bos(mb->tok), *p;
	enum ts_err rc;

	rc = tokenizer_encode(mb->tok, prompt, len, 0,
	    tokenizer_add_eos(mb->tok), ids, n);
	if (rc != TS_OK || !tokenizer_add_bos(mb->tok) ||
	    bos == TOKENIZER_NONE || (*n > 0 && (*ids)[0] == bos))
		return rc;
	p = xmalloc((*n + 1) * sizeof(*p));
	p[0] = bos;
	memcpy(p + 1, *ids, *n * sizeof(*p));
	free(*ids);
	*ids = p;
	(*n)++;
	return TS_OK;
}

static void
backend_seq_free(void *impl, void *seq)
{
	struct model_seq *s = seq;

	(void)impl;
	if (s == NULL)
		return;
	if (s->kv != NULL)
		munmap(s->kv, s->kv_bytes);
	free(s->logits);
	free(s->cut);
	free(s);
}

static enum ts_err
backend_seq_start(void *impl, uint32_t model, const char *prompt, size_t len,
    uint32_t skip, const struct engine_sampling *samp, void **seq)
{
	struct model_backend *mb = impl;
	const struct model_config *c = &mb->m->cfg;
	struct engine_sampling eff;
	struct model_seq *s = NULL;
	struct model_row *rows = NULL;
	uint32_t *ids = NULL;
	size_t n = 0, i;
	enum ts_err rc;

	*seq = NULL;
	if (model != 0)
		return TS_EINVAL;
	/* a token covers at most max_token_length bytes: refuse a prompt
	 * that cannot fit before encoding it */
	if (len / tokenizer_max_token_length(mb->tok) >= mb->ctx)
		return TS_ELIMIT;
	rc = encode_prompt(mb, prompt, len, &ids, &n);
	if (rc != TS_OK)
		goto out;
	if (n > mb->ctx) {
		rc = TS_ELIMIT;
		goto out;
	}
	s = xcalloc(1, sizeof(*s));
	/* The KV cache is mapped, populated and unmapped on its own, as a
	 * serving engine reserves it: the memory is resident while the
	 * sequence lives and goes back to the system the moment it ends or
	 * is cancelled (malloc could keep it in an arena). */
	s->kv_bytes = model_kv_floats(c, mb->ctx) * sizeof(float);
	s->kv = mmap(NULL, s->kv_bytes, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (s->kv == MAP_FAILED)
		s->kv = NULL;
	s->logits = malloc((size_t)c->vocab_size * sizeof(float));
	if (s->kv == NULL || s->logits == NULL) {
		rc = TS_ENOMEM;
		goto out;
	}
	/* The request's sampling (the lab endpoints ask for greedy); the
	 * default seed comes from the prompt, so the same request gives
	 * the same tokens. */
	engine_sampling_effective(&mb->be, samp, &eff);
	s->temperature = (float)eff.temperature;
	s->top_p = (float)eff.top_p;
	s->top_k = eff.top_k;
	if (s->top_k > 0 && s->top_k < c->vocab_size)
		s->cut = xmalloc((size_t)c->vocab_size * sizeof(float));
	s->ignore_eos = samp->ignore_eos;
	s->min_tokens = samp->min_tokens;
	s->rng = model_rng_seed(samp->has_seed ? samp->seed :
	    rng_seed_of(prompt, len));

	/* prefill: the prompt's positions as rows of one sequence, in
	 * chunks of max_batch; logits for the last only */
	rows = xmalloc(n * sizeof(*rows));
	for (i = 0; i < n; i++) {
		rows[i].kv = s->kv;
		rows[i].token = ids[i];
		rows[i].pos = (uint32_t)i;
		rows[i].logits = i + 1 == n ? s->logits : NULL;
	}
	forward_rows(mb, rows, n);
	s->pos = (uint32_t)n;
	s->fresh = 1;

	/* a resumed stream: recompute the tokens already sent */
	for (i = 0; i < skip; i++) {
		s->last = seq_sample(mb, s);
		s->fresh = 0;
		if (s->pos >= mb->ctx) {
			s->full = 1;
			break;
		}
		seq_feed(mb, s, s->last);
		s->fresh = 1;
	}
	*seq = s;
	s = NULL;
	rc = TS_OK;
out:
	free(ids);
	free(rows);
	backend_seq_free(mb, s);
	return rc;
}

/* Runs the decode rows collected so far and hands out their tokens. */
static void
step_flush(struct model_backend *mb, uint32_t nr, uint32_t *ids)
{
	uint32_t j;

	model_forward(mb->run, mb->rows, nr);
	for (j = 0; j < nr; j++) {
		struct model_seq *s = mb->rseq[j];

		s->pos++;
		s->last = ids[mb->ridx[j]] = seq_sample(mb, s);
	}
}

static enum ts_err
backend_step(void *impl, void *const *seqs, size_t n, uint32_t *ids)
{
	struct model_backend *mb = impl;
	struct model_seq *s;
	enum ts_err rc = TS_OK;
	uint32_t nr = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		s = seqs[i];
		if (s == NULL || s->busy) {
			rc = TS_EINVAL;  /* NULL, or the same one twice */
			n = i;
			goto out;
		}
		s->busy = 1;
	}
	/* the tokens that need no compute */
	for (i = 0; i < n; i++) {
		s = seqs[i];
		s->decode = 0;
		if (s->fresh) {
			/* just prefilled: its logits are ready */
			s->last = ids[i] = seq_sample(mb, s);
			s->fresh = 0;
		} else if (s->full || s->pos >= mb->ctx) {
			s->full = 1;
			ids[i] = mb->eos[0];
		} else {
			s->decode = 1;
		}
	}
	/* the others: one decode position each, max_batch rows a pass */
	for (i = 0; i < n; i++) {
		s = seqs[i];
		if (!s->decode)
			continue;
		mb->rows[nr].kv = s->kv;
		mb->rows[nr].token = s->last;
		mb->rows[nr].pos = s->pos;
		mb->rows[nr].logits = s->logits;
		mb->rseq[nr] = s;
		mb->ridx[nr] = i;
		if (++nr == mb->opt.max_batch) {
			step_flush(mb, nr, ids);
			nr = 0;
		}
	}
	if (nr > 0)
		step_flush(mb, nr, ids);
out:
	for (i = 0; i < n; i++)
		((struct model_seq *)seqs[i])->busy = 0;
	return rc;
}

/* From the logits the step's token was sampled from (seq_sample leaves
 * them as they were, but for the ignore_eos mask): log-softmax in float,
 * the k best by insertion. */
static void
backend_logprobs(void *impl, void *seq, uint32_t id, uint32_t k,
    struct engine_logprob *out)
{
	struct model_backend *mb = impl;
	struct model_seq *s = seq;
	uint32_t n = mb->m->cfg.vocab_size, c, j, have = 0;
	uint32_t top[ENGINE_MAX_TOP_LOGPROBS];
	float max = -INFINITY, lse;
	double sum = 0.0;

	if (k > ENGINE_MAX_TOP_LOGPROBS)
		k = ENGINE_MAX_TOP_LOGPROBS;
	for (c = 0; c < n; c++)
		if (s->logits[c] > max)
			max = s->logits[c];
	for (c = 0; c < n; c++)
		if (s->logits[c] > -INFINITY)
			sum += exp((double)(s->logits[c] - max));
	lse = max + (float)log(sum);
	for (c = 0; c < n && k > 0; c++) {
		if (!(s->logits[c] > -INFINITY))
			continue;
		if (have == k && !(s->logits[c] > s->logits[top[k - 1]]))
			continue;
		j = have < k ? have++ : k - 1;
		while (j > 0 && s->logits[c] > s->logits[top[j - 1]]) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = c;
	}
#define LP(x) (!((x) > -INFINITY) ? ENGINE_LOGPROB_MASKED : \
	    ((x) - lse > 0.0f ? 0.0f : (x) - lse))
	out[0].id = id;
	out[0].logprob = id < n ? LP(s->logits[id]) : ENGINE_LOGPROB_MASKED;
	for (j = 0; j < k; j++) {
		out[1 + j].id = j < have ? top[j] : mb->eos[0];
		out[1 + j].logprob = j < have ? LP(s->logits[top[j]]) :
		    ENGINE_LOGPROB_MASKED;
	}
#undef LP
}

static const char *
backend_token_text(void *impl, uint32_t id, size_t *len)
{
	struct model_backend *mb = impl;

	return tokenizer_decode(mb->tok, UINT32_MAX, id, len);
}

static enum ts_err
backend_count_tokens(void *impl, uint32_t model, const char *prompt,
    size_t len, uint64_t *n)
{
	struct model_backend *mb = impl;
	uint32_t *ids;
	size_t k;
	enum ts_err rc;

	(void)model;
	*n = 0;
	/* too long even at the longest token: refused unencoded, *n 0 */
	if (len / tokenizer_max_token_length(mb->tok) >= mb->ctx)
		return TS_ELIMIT;
	rc = encode_prompt(mb, prompt, len, &ids, &k);
	if (rc != TS_OK)
		return rc;
	free(ids);
	*n = k;             /* kept on TS_ELIMIT: the refusal says it */
	return k > mb->ctx ? TS_ELIMIT : TS_OK;
}

/* The ids count_tokens counts (BOS, then the text's), for POST
 * /tokenize; on a failure to encode, none. Not the prefix cache's: the
 * engine prices no physical backend's prefill. */
static size_t
backend_tokenize(void *impl, uint32_t model, const char *prompt,
    size_t len, uint32_t *ids, size_t cap)
{
	struct model_backend *mb = impl;
	uint32_t *all;
	size_t k;

	(void)model;
	if (encode_prompt(mb, prompt, len, &all, &k) != TS_OK)
		return 0;
	if (ids != NULL)
		memcpy(ids, all, (k < cap ? k : cap) * sizeof(*ids));
	free(all);
	return k;
}

static uint32_t
backend_context_len(void *impl)
{
	const struct model_backend *mb = impl;

	return mb->ctx;
}

/*
 * The start-up log's words for this backend (backend.h describe): the
 * checkpoint as given to --model, its config (model.h; weight bytes are
 * the parameters at 4 bytes, the checkpoint's f32), the context per
 * sequence and the compute threads of the pool (the caller's included).
 */
static int
backend_describe(void *impl, char *buf, size_t cap)
{
	const struct model_backend *mb = impl;
	const struct model_config *c = &mb->m->cfg;
	uint64_t params = model_param_count(c);

	return snprintf(buf, cap, "model %s (dim %u, %u layers, %u heads, "
	    "%u kv heads, vocab %u, hidden dim %u, %llu parameters, %llu "
	    "weight bytes), context %u tokens, %u compute threads",
	    mb->path, c->dim, c->n_layers, c->n_heads, c->n_kv_heads,
	    c->vocab_size, c->hidden_dim, (unsigned long long)params,
	    (unsigned long long)model_weight_bytes(mb->m), mb->ctx,
	    model_run_threads(mb->run));
}

static void
backend_close(void *impl)
{
	struct model_backend *mb = impl;

	if (mb == NULL)
		return;
	free(mb->path);
	model_run_free(mb->run);
	model_file_close(mb->file);
	free(mb->rows);
	free(mb->rseq);
	free(mb->ridx);
	free(mb);
}

enum ts_err
llama_backend_open(struct engine_backend *out, const char *checkpoint,
    const char *tokenizer, const struct model_options *o, char *err,
    size_t errlen)
{
	struct model_backend *mb;
	enum ts_err rc;

	memset(out, 0, sizeof(*out));
	if (o->max_batch == 0 || o->max_batch > MODEL_MAX_BATCH) {
		snprintf(err, errlen, "max_batch %u is outside 1..%u",
		    o->max_batch, MODEL_MAX_BATCH);
		return TS_EINVAL;
	}
	if (o->threads > MODEL_POOL_MAX_THREADS) {
		snprintf(err, errlen, "threads %u is over the limit %u",
		    o->threads, MODEL_POOL_MAX_THREADS);
		return TS_EINVAL;
	}
	mb = xcalloc(1, sizeof(*mb));
	mb->opt = *o;
	rc = model_file_open(&mb->file, checkpoint, tokenizer, err, errlen);
	if (rc != TS_OK)
		goto fail;
	mb->m = mb->file->m;
	mb->tok = mb->file->tok;
	if (o->context > mb->m->cfg.seq_len) {
		snprintf(err, errlen, "context %u is over the model's "
		    "seq_len %u (its context length)", o->context,
		    mb->m->cfg.seq_len);
		rc = TS_EINVAL;
		goto fail;
	}
	mb->ctx = o->context ? o->context : mb->m->cfg.seq_len;
	if (o->context == 0 && strcmp(mb->file->format, "llama2.c") != 0 &&
	    mb->ctx > MODEL_FILE_DEFAULT_CONTEXT)
		mb->ctx = MODEL_FILE_DEFAULT_CONTEXT;
	rc = model_run_create(&mb->run, mb->m, o->max_batch, mb->ctx,
	    o->threads);
	if (rc != TS_OK) {
		snprintf(err, errlen, "cannot start %u compute threads: %s",
		    o->threads, strerror(errno));
		goto fail;
	}
	mb->rows = xmalloc(o->max_batch * sizeof(*mb->rows));
	mb->rseq = xmalloc(o->max_batch * sizeof(*mb->rseq));
	mb->ridx = xmalloc(o->max_batch * sizeof(*mb->ridx));
	snprintf(mb->name, sizeof(mb->name), "%s", mb->file->name);
	mb->models[0] = mb->name;
	mb->path = xmalloc(strlen(checkpoint) + 1);
	memcpy(mb->path, checkpoint, strlen(checkpoint) + 1);
	out->impl = mb;
	out->name = "llama";
	out->models = mb->models;
	out->nmodels = 1;
	out->lab_model = 0;
	out->physical = 1;
	out->max_token_bytes = tokenizer_max_token_length(mb->tok);
	out->vocab_size = mb->m->cfg.vocab_size;
	/* EOS, and BOS, which llama2.c's story models emit between
	 * stories */
	memcpy(mb->eos, mb->file->eos, sizeof(mb->eos));
	mb->n_eos = mb->file->n_eos;
	out->gen_has = mb->file->gen_has;
	out->gen_temperature = mb->file->temperature;
	out->gen_top_p = mb->file->top_p;
	out->gen_top_k = mb->file->top_k;
	memcpy(out->eos_ids, mb->eos, sizeof(mb->eos));
	out->n_eos = mb->n_eos;
	out->seq_start = backend_seq_start;
	out->step = backend_step;
	out->token_text = backend_token_text;
	out->seq_free = backend_seq_free;
	out->logprobs = backend_logprobs;
	out->count_tokens = backend_count_tokens;
	out->tokenize = backend_tokenize;
	out->bos_first = tokenizer_add_bos(mb->tok);
	out->context_len = backend_context_len;
	out->describe = backend_describe;
	out->close = backend_close;
	mb->be = *out;
	return TS_OK;
fail:
	model_file_close(mb->file);
	free(mb);
	return rc;
}

void
llama_backend_close(struct engine_backend *b)
{
	backend_close(b->impl);
	memset(b, 0, sizeof(*b));
}

const struct model_config *
llama_backend_config(const struct engine_backend *b)
{
	const struct model_backend *mb = b->impl;

	return &mb->m->cfg;
}

const char *
llama_backend_decode(const struct engine_backend *b, uint32_t prev,
    uint32_t id, size_t *len)
{
	const struct model_backend *mb = b->impl;

	return tokenizer_decode(mb->tok, prev, id, len);
}

const float *
llama_backend_seq_logits(const void *seq)
{
	const struct model_seq *s = seq;

	return s->fresh ? s->logits : NULL;
}

const struct model_file *
llama_backend_file(const struct engine_backend *b)
{
	const struct model_backend *mb = b->impl;

	return mb->file;
}

json_t *
llama_backend_meta(const struct engine_backend *b)
{
	const struct model_backend *mb = b->impl;
	const struct model_file *f = mb->file;
	json_t *o = json_object(), *eos = json_array(), *gen = json_object();
	uint32_t i;

	for (i = 0; i < f->n_eos; i++)
		json_array_append_new(eos, json_integer(f->eos[i]));
	if (f->gen_has & ENGINE_GIVEN_TEMPERATURE)
		json_object_set_new(gen, "temperature",
		    json_real(f->temperature));
	if (f->gen_has & ENGINE_GIVEN_TOP_P)
		json_object_set_new(gen, "top_p", json_real(f->top_p));
	if (f->gen_has & ENGINE_GIVEN_TOP_K)
		json_object_set_new(gen, "top_k", json_integer(f->top_k));
	json_object_set_new(o, "format", json_string(f->format));
	json_object_set_new(o, "weights", json_string(f->weight_types));
	json_object_set_new(o, "kernels", json_string(quant_kernel_name()));
	json_object_set_new(o, "context_length",
	    json_integer(f->context_length));
	json_object_set_new(o, "eos_token_ids", eos);
	json_object_set_new(o, "add_bos_token",
	    json_boolean(tokenizer_add_bos(f->tok)));
	json_object_set_new(o, "generation_defaults", gen);
	return o;
}
