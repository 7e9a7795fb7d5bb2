/*
 * backend/backend.h - what the engine asks of a backend: the code that
 * turns a prompt into token ids. Two implement it: the simulator
 * (src/sim/sim.h, named simulated models over a synthetic vocabulary)
 * and the llama backend (src/model/llama.h, a transformer on the CPU).
 * A third fills in a struct engine_backend and is passed to
 * engine_create; nothing in the engine or the server changes.
 *
 * The engine makes every call but token_text and count_tokens one at a
 * time from its own thread. With `physical` set they take real time
 * (milliseconds to seconds), so the engine makes them without holding
 * its lock and lets the time they took be the latency; without it the
 * engine's latency model (engine/latency.h) paces them.
 *
 * Sampling follows the OpenAI API's parameters (temperature, top_p, seed)
 * plus vLLM's ignore_eos; every sequence gets them, filled with
 * engine_sampling_defaults where the request gave none.
 */
#ifndef TS_BACKEND_BACKEND_H
#define TS_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

/* Sampling defaults, as OpenAI's: temperature 1, top_p 1. */
#define ENGINE_TEMPERATURE_DEFAULT 1.0
#define ENGINE_TEMPERATURE_MAX 2.0
#define ENGINE_TOP_P_DEFAULT 1.0

/* A temperature below this is greedy decoding (as vLLM's 1e-5). */
#define ENGINE_GREEDY_BELOW 1e-5

/*
 * How a sequence samples. Ranges are checked by the HTTP layer; a backend
 * takes a temperature < 0 (or NaN) as greedy and over the maximum as the
 * maximum, a top_p <= 0 (or NaN) as "only the most probable candidate",
 * over 1 as 1.
 */
struct engine_sampling {
	double temperature;     /* 0..ENGINE_TEMPERATURE_MAX; 0: greedy */
	double top_p;           /* (0, 1]; 1: no nucleus cut */
	uint64_t seed;          /* the sampler's seed, used if has_seed */
	int has_seed;           /* 0: the seed comes from the prompt's bytes
				 * (rng_seed_of), so a request without one
				 * still gets the same tokens every time */
	int ignore_eos;         /* nonzero: never end with an EOS token */
	uint32_t min_tokens;    /* vLLM's min_tokens: no EOS among the
				 * first min_tokens generated tokens (a
				 * thinking phase is followed by an
				 * answer: text/think.h); 0: none */
	/* Guided decoding (vLLM's guided_decoding, here by forcing): when
	 * guide is not NULL the sequence's text is exactly (guide,
	 * guide_len) bytes, tokenized by the backend, then an EOS token
	 * (ignore_eos or not); max_tokens may cut it short. The server
	 * makes the text: the echo mode's user message, a tool call's
	 * arguments, a JSON Schema instance. Borrowed by seq_start for the
	 * call; engine_submit copies it. */
	const char *guide;
	size_t guide_len;       /* bytes, <= ENGINE_MAX_GUIDE_BYTES */
	/* top-k (vLLM's top_k, Anthropic's top_k, Ollama's
	 * options.top_k): only the k most probable candidates, before
	 * top_p; 0: no cut */
	uint32_t top_k;
	/* Which of temperature, top_p, top_k the request gave
	 * (ENGINE_GIVEN_*): a backend with sampling defaults of its own (a
	 * model's generation_config.json) applies them to the others */
	unsigned given;
	/* Logprobs (the OpenAI API's logprobs/top_logprobs): 0 none, else
	 * 1 + the number of alternatives, <= 1 + ENGINE_MAX_TOP_LOGPROBS;
	 * every token then carries the sampled token's logprob and the top
	 * alternatives' (engine_view.lp). */
	uint32_t logprobs;
};

/* The most EOS ids a backend may list. */
#define ENGINE_MAX_EOS 8

/* engine_sampling.given's bits */
#define ENGINE_GIVEN_TEMPERATURE 1u
#define ENGINE_GIVEN_TOP_P 2u
#define ENGINE_GIVEN_TOP_K 4u
#define ENGINE_GIVEN_ALL 7u

/* The most alternatives per token (OpenAI's top_logprobs cap, 20). */
#define ENGINE_MAX_TOP_LOGPROBS 20
/* The longest guide text, bytes. */
#define ENGINE_MAX_GUIDE_BYTES (1u << 20)

/* One candidate's log-probability (natural log, <= 0): the model's
 * distribution before temperature and top_p (vLLM's raw logprobs). A
 * candidate the model masks has ENGINE_LOGPROB_MASKED (vLLM's -9999). */
struct engine_logprob {
	uint32_t id;
	float logprob;
};
#define ENGINE_LOGPROB_MASKED (-9999.0f)

/* Fills *s with OpenAI's defaults: temperature 1, top_p 1, no seed,
 * ignore_eos off. */
void engine_sampling_defaults(struct engine_sampling *s);

/* Greedy decoding: temperature 0, top_p 1, no seed, ignore_eos off, all
 * given (a model's defaults do not apply: the lab endpoints' sampling). */
void engine_sampling_greedy(struct engine_sampling *s);

/*
 * A backend. `impl` is its own; the engine copies the struct.
 *
 * Models: a backend serves one or more named models (models[0..nmodels),
 * the first the default). The simulator has "tokstream-sim", the language
 * model the OpenAI endpoints serve, and "tokstream-lab", the lab
 * generator of /stream and /generate (canonical text, never EOS, no
 * sampling); the llama backend has its checkpoint. `lab_model` is the
 * index /stream and /generate use.
 */
struct engine_backend {
	void *impl;
	const char *name;             /* "sim", "llama": /v1/models, /_debug */
	const char *const *models;    /* names, borrowed for the backend's
				       * life */
	uint32_t nmodels;             /* >= 1 */
	uint32_t lab_model;           /* < nmodels */
	int physical;                 /* calls take real time: the latency
				       * model is off */
	uint32_t eos_ids[ENGINE_MAX_EOS]; /* ids that end a sequence with
				       * finish_reason "stop": the first
				       * n_eos (a model's list: Llama 3.1
				       * has three) */
	uint32_t n_eos;               /* 0..ENGINE_MAX_EOS */
	uint32_t max_token_bytes;     /* longest text of one token, bytes */
	/* The model's own sampling defaults (a model file's
	 * generation_config.json or general.sampling.*), for what a
	 * request does not give: ENGINE_GIVEN_* bits of the fields set. */
	unsigned gen_has;
	double gen_temperature;
	double gen_top_p;
	uint32_t gen_top_k;
	int bos_first;                /* tokenize and count_tokens start
				       * every prompt with one BOS token (a
				       * special token: /tokenize's
				       * add_special_tokens false drops
				       * it); 0: no special tokens */
	uint32_t vocab_size;          /* ids 0..vocab_size - 1 and eos_ids
				       * are every id step and logprobs
				       * give (their texts bound the size
				       * of an answer: openai/cost.h); 0:
				       * not told */
	int guided;                   /* seq_start honours sampling.guide;
				       * its tokens are a greedy longest
				       * match of at most max_token_bytes
				       * bytes each, so a guide's first k
				       * tokens depend only on its first
				       * k x max_token_bytes bytes, and g
				       * bytes make at least
				       * g / max_token_bytes tokens: the
				       * server makes no more of a guide
				       * than max_tokens can carry
				       * (openai/plan.h) */

	/* Starts a sequence of model `model` for (prompt, len), borrowed for
	 * the call, and skips its first `skip` tokens (a resumed stream
	 * recomputes what was sent). For a physical backend this is the
	 * prefill. TS_ELIMIT: the prompt does not fit the context;
	 * TS_ENOMEM: no memory for its state (KV cache). */
	enum ts_err (*seq_start)(void *impl, uint32_t model,
	    const char *prompt, size_t len, uint32_t skip,
	    const struct engine_sampling *samp, void **seq);
	/* One forward pass for n sequences: ids[i] gets seqs[i]'s next
	 * token. Used for the token a prefill yields and for decode steps.
	 * An error fails every sequence of the pass. */
	enum ts_err (*step)(void *impl, void *const *seqs, size_t n,
	    uint32_t *ids);
	/* Text of token `id`, borrowed for the backend's life; NULL for an
	 * id out of range. Any thread, any time. */
	const char *(*token_text)(void *impl, uint32_t id, size_t *len);
	/* Optional (NULL: the backend has no logprobs; the server refuses
	 * a request for them with 400). Right after a step that gave seq
	 * the token `id`: fills out[0] with that token's logprob and
	 * out[1..k] with the k most probable candidates of the step, by
	 * descending logprob, ties by lower id (k <=
	 * ENGINE_MAX_TOP_LOGPROBS; only asked of sequences whose sampling
	 * has logprobs = k + 1). Cannot fail. */
	void (*logprobs)(void *impl, void *seq, uint32_t id, uint32_t k,
	    struct engine_logprob *out);
	/* Optional (NULL: the engine's prefix-cache model is off for this
	 * backend, and POST /tokenize answers 501). The ids of (prompt,
	 * len) for model `model` as seq_start would take them, as many as
	 * count_tokens counts when it fits: writes up to cap of them to ids
	 * and returns how many there are (all, even beyond cap). Any
	 * thread. */
	size_t (*tokenize)(void *impl, uint32_t model, const char *prompt,
	    size_t len, uint32_t *ids, size_t cap);
	/* Frees a sequence (accepts NULL). */
	void (*seq_free)(void *impl, void *seq);
	/* The number of prompt tokens seq_start would take for (prompt, len)
	 * with model `model`: for usage counts, the prefill time and
	 * refusing a long prompt before it is queued. TS_OK, or TS_ELIMIT
	 * when it does not fit the context: *n is then the count when the
	 * backend made it (the refusal tells the client how long the
	 * prompt was), or 0 when it refused on the byte length alone
	 * (len / max_token_bytes tokens at least, without encoding). Any
	 * thread. */
	enum ts_err (*count_tokens)(void *impl, uint32_t model,
	    const char *prompt, size_t len, uint64_t *n);
	/* Positions per sequence (prompt + generated), 0 when there is no
	 * limit (the simulator). */
	uint32_t (*context_len)(void *impl);
	/* Optional (NULL: the name says enough). What tokstream-fcgi's
	 * start-up log says of the backend after its name: one line
	 * without a newline, e.g. the llama backend's "model FILE (dim 288,
	 * 6 layers, ...), context 256 tokens, 2 compute threads". Writes
	 * at most cap bytes, NUL included, and returns the length it
	 * wanted, as snprintf. Called once, after opening. */
	int (*describe)(void *impl, char *buf, size_t cap);
	/* Frees impl; every sequence must have been freed. May be NULL. */
	void (*close)(void *impl);
};

/* The index of model `name` (len bytes) in b->models, or -1. */
int engine_backend_model(const struct engine_backend *b, const char *name,
    size_t len);

/* 1 when id is one of b's EOS ids (eos_ids[0..n_eos)), else 0. */
int engine_backend_is_eos(const struct engine_backend *b, uint32_t id);

/*
 * The sampling a sequence runs with: the request's temperature, top_p
 * and top_k where it gave them (samp->given), else b's model defaults
 * (gen_has), else samp's own (the dialect's defaults). vLLM's
 * --generation-config auto precedence. Writes *s (a copy of *samp with
 * those three fields resolved).
 */
void engine_sampling_effective(const struct engine_backend *b,
    const struct engine_sampling *samp, struct engine_sampling *s);

#endif /* TS_BACKEND_BACKEND_H */
