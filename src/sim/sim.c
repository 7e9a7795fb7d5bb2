/*
 * sim/sim.c - the simulator behind the engine's backend interface
 * (sim/sim.h): one sequence is a sim_lab or a sim_lm, a step draws each
 * sequence's next id.
 */
#include "sim/sim.h"

#include <stdlib.h>

#include "common/ts.h"
#include "sim/lab.h"
#include "sim/lm.h"
#include "sim/vocab.h"

static const char *const sim_models[] = { "tokstream-sim", "tokstream-lab" };

/* One simulated sequence: the lab generator or the language model; with
 * a guide, the language model scores each step but the guide's ids are
 * taken (sim_lm_force), then EOS. */
struct sim_seq {
	enum sim_model model;
	struct sim_lab lab;
	struct sim_lm lm;
	uint32_t *guide;        /* the guide's ids, or NULL */
	size_t guide_n, guide_pos;
	uint32_t logprob_k;     /* alternatives asked for */
};

/* The next id of a language-model sequence. */
static uint32_t
sim_seq_next(struct sim_seq *q)
{
	if (q->guide == NULL)
		return sim_lm_next(&q->lm);
	return sim_lm_force(&q->lm, q->guide_pos < q->guide_n ?
	    q->guide[q->guide_pos++] : SIM_EOS_ID);
}

static enum ts_err
sim_seq_start(void *impl, uint32_t model, const char *prompt, size_t len,
    uint32_t skip, const struct engine_sampling *samp, void **seq)
{
	struct sim_seq *q;
	uint32_t i;

	(void)impl;
	*seq = NULL;
	if (model != SIM_MODEL_LM && model != SIM_MODEL_LAB)
		return TS_EINVAL;
	q = xcalloc(1, sizeof(*q));
	q->model = (enum sim_model)model;
	if (q->model == SIM_MODEL_LM) {
		sim_lm_init(&q->lm, prompt, len, samp);
		if (samp != NULL && samp->guide != NULL) {
			q->guide_n = sim_tokenize(samp->guide, samp->guide_len,
			    NULL, 0);
			q->guide = xcalloc(q->guide_n + 1, sizeof(*q->guide));
			(void)sim_tokenize(samp->guide, samp->guide_len,
			    q->guide, q->guide_n);
		}
	} else {
		sim_lab_init(&q->lab, prompt, len);
	}
	for (i = 0; i < skip; i++) {
		if (q->model == SIM_MODEL_LM)
			sim_seq_next(q);
		else
			sim_lab_next(&q->lab);
	}
	*seq = q;
	return TS_OK;
}

static enum ts_err
sim_step(void *impl, void *const *seqs, size_t n, uint32_t *ids)
{
	size_t i;

	(void)impl;
	for (i = 0; i < n; i++) {
		struct sim_seq *q = seqs[i];

		ids[i] = q->model == SIM_MODEL_LM ? sim_seq_next(q) :
		    sim_lab_next(&q->lab);
	}
	return TS_OK;
}

static const char *
sim_text(void *impl, uint32_t id, size_t *len)
{
	(void)impl;
	return sim_token_text(id, len);
}

static void
sim_seq_free(void *impl, void *seq)
{
	struct sim_seq *q = seq;

	(void)impl;
	if (q != NULL && q->model == SIM_MODEL_LM)
		sim_lm_free(&q->lm);
	if (q != NULL)
		free(q->guide);
	free(q);
}

/* The lab model has no distribution: its token is certain. */
static void
sim_logprobs(void *impl, void *seq, uint32_t id, uint32_t k,
    struct engine_logprob *out)
{
	struct sim_seq *q = seq;
	uint32_t j;

	(void)impl;
	if (q->model == SIM_MODEL_LM) {
		sim_lm_logprobs(&q->lm, id, k, out);
		return;
	}
	out[0].id = id;
	out[0].logprob = 0.0f;
	for (j = 1; j <= k; j++) {
		out[j].id = j == 1 ? id : SIM_EOS_ID;
		out[j].logprob = j == 1 ? 0.0f : ENGINE_LOGPROB_MASKED;
	}
}

static size_t
sim_tokenize_prompt(void *impl, uint32_t model, const char *prompt,
    size_t len, uint32_t *ids, size_t cap)
{
	(void)impl;
	(void)model;
	return sim_tokenize(prompt, len, ids, cap);
}

static enum ts_err
sim_count_tokens(void *impl, uint32_t model, const char *prompt, size_t len,
    uint64_t *n)
{
	(void)impl;
	(void)model;
	*n = sim_tokenize(prompt, len, NULL, 0);
	return TS_OK;
}

static uint32_t
sim_context_len(void *impl)
{
	(void)impl;
	return 0;
}

void
sim_backend(struct engine_backend *out)
{
	*out = (struct engine_backend){
		.impl = NULL,
		.name = "sim",
		.models = sim_models,
		.nmodels = 2,
		.lab_model = SIM_MODEL_LAB,
		.physical = 0,
		.eos_ids = { SIM_EOS_ID },
		.n_eos = 1,
		.max_token_bytes = SIM_TOKEN_MAX_BYTES,
		.vocab_size = sim_vocab_size(),
		.guided = 1,
		.seq_start = sim_seq_start,
		.step = sim_step,
		.token_text = sim_text,
		.seq_free = sim_seq_free,
		.logprobs = sim_logprobs,
		.tokenize = sim_tokenize_prompt,
		.count_tokens = sim_count_tokens,
		.context_len = sim_context_len,
		.close = NULL,
	};
}
