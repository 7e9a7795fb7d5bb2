/*
 * sim/lm.c - the deterministic language model and sampler of sim/lm.h.
 *
 * The per-token tables (log-weights, kind masses) are static, filled once
 * under pthread_once and read-only afterwards, so any number of threads
 * may run their own sim_lm. Floating point: see the determinism note in
 * sim/lm.h; sim_lm_exp2 and sim_lm_log below are why libm's exp and log
 * are not used.
 */
#include "sim/lm.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/ts.h"
#include "sim/vocab_table.h"

/* Shares of the probability mass (before normalisation). */
#define SIM_LM_OFF 0.002        /* all unexpected text tokens together */
#define SIM_LM_BYTES 0.004      /* all lead-byte tokens together */
#define SIM_LM_NL_AFTER_END 0.25        /* a newline after a sentence end
					 * (sim_lab_next: 1 in SIM_NL_ODDS) */
#define SIM_LM_END_EARLY 0.002  /* a sentence end before 6 words */
#define SIM_LM_END_LATE 0.995   /* a sentence end from 18 words on */
#define SIM_LM_EOS_SCALE 300.0  /* p(EOS) after a sentence end or a
				 * newline: (n + 1) / this */
#define SIM_LM_EOS_MAX 0.9      /* ... at most */
#define SIM_LM_EOS_ELSEWHERE 0.01       /* ... times this elsewhere */
#define SIM_LM_NOISE 2.0        /* context term in (-NOISE, +NOISE) */
#define SIM_LM_REPEAT 3.0       /* less for a repeat of the last 3 ids */

/* Sentence lengths in words, as lab.c's SIM_SENTENCE_MIN and _MAX. */
#define SIM_LM_SENTENCE_MIN 6u
#define SIM_LM_SENTENCE_MAX 18u

#define SIM_LM_LN2 0.693147180559945309417232121458
#define SIM_LM_LOG2E 1.44269504088896340735992468100

/* A candidate and its weight, for the top_p sort. */
struct sim_lm_cand {
	double p;
	uint32_t k;             /* candidate index */
};

/* Where in the text the model is; decides which kinds it expects. */
enum sim_lm_sit {
	SIM_LM_START,           /* first token or after a newline: "The" */
	SIM_LM_AFTER_END,       /* after a sentence end: " The", "\n", EOS */
	SIM_LM_AFTER_PUNCT,     /* after punctuation: no punctuation, no end */
	SIM_LM_BODY,            /* mid-sentence */
	SIM_LM_UTF8             /* spelling a character in byte tokens */
};

/*
 * Lead bytes the model may start a character with, and the range of each
 * continuation byte after it (UTF-8, RFC 3629; all in the valid ranges
 * of Unicode table 3-7): Latin-1 letters, Greek, Cyrillic, CJK
 * U+4000..U+9FFF and emoji U+1F600..U+1F67F.
 */
static const struct {
	unsigned char lead;
	uint8_t need;           /* continuation bytes */
	unsigned char lo[3], hi[3];
} sim_lm_leads[] = {
	{ 0xc3, 1, { 0x80 }, { 0xbf } },
	{ 0xce, 1, { 0x80 }, { 0xbf } },
	{ 0xd0, 1, { 0x80 }, { 0xbf } },
	{ 0xd1, 1, { 0x80 }, { 0xbf } },
	{ 0xe4, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xe5, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xe6, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xe7, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xe8, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xe9, 2, { 0x80, 0x80 }, { 0xbf, 0xbf } },
	{ 0xf0, 3, { 0x9f, 0x98, 0x80 }, { 0x9f, 0x99, 0xbf } },
};

#define SIM_LM_NLEADS (sizeof(sim_lm_leads) / sizeof(sim_lm_leads[0]))

/* Built once by sim_lm_build under sim_lm_once, read-only afterwards. */
static pthread_once_t sim_lm_once = PTHREAD_ONCE_INIT;
static double sim_lm_lnw[SIM_VOCAB_MAX_TEXT];   /* ln max(weight, 1) */
static double sim_lm_kind_mass[SIM_K_SSTART + 1];       /* sum of weights */
static double sim_lm_ln_all;    /* ln of the sum of max(weight, 1) */
static signed char sim_lm_lead_of[256]; /* index in sim_lm_leads, or -1 */

/* 2^(j/32) for j = 0..31: the correctly rounded values (from 60-digit
 * decimal arithmetic) as exact hexadecimal literals. */
static const double sim_lm_exp2_tab[32] = {
	0x1.0000000000000p+0, 0x1.059b0d3158574p+0,
	0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
	0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0,
	0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
	0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
	0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
	0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0,
	0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
	0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0,
	0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
	0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0,
	0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
	0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0,
	0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
	0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
	0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};

/*
 * 2^y for y <= 0; 0 below -1000 (-INFINITY and NaN give 0 too). With
 * y = k + j/32 + r, k = floor(y), j in 0..31, r in [0, 1/32) (all three
 * exact): 2^(j/32) from the table, 2^r = e^u, u = r ln 2 < 0.022, by its
 * Taylor polynomial to degree 6 (relative error about 1e-16), and 2^k by
 * writing the exponent field (exact; the result stays a normal number).
 * Only correctly rounded operations, so the result is the same on every
 * IEEE-754 machine - which libm's exp does not promise - and no library
 * call (this runs for every candidate of every step).
 */
static double
sim_lm_exp2(double y)
{
	union {
		uint64_t u;
		double d;
	} scale;
	double f, u, p;
	int64_t k;
	int j;

	if (!(y >= -1000.0))
		return 0.0;
	if (y > 0.0)
		y = 0.0;
	k = (int64_t)y;                 /* towards zero ... */
	if ((double)k > y)
		k--;                    /* ... then down: floor */
	f = y - (double)k;              /* [0, 1) */
	j = (int)(f * 32.0);
	u = (f - (double)j / 32.0) * SIM_LM_LN2;
	p = 1.0 / 720.0;
	p = p * u + 1.0 / 120.0;
	p = p * u + 1.0 / 24.0;
	p = p * u + 1.0 / 6.0;
	p = p * u + 0.5;
	p = p * u + 1.0;
	p = p * u + 1.0;
	scale.u = (uint64_t)(k + 1023) << 52;
	return sim_lm_exp2_tab[j] * p * scale.d;
}

/*
 * ln x for x > 0 (finite): x = m 2^e with m in [sqrt(1/2), sqrt(2)) by
 * frexp (exact), then ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <
 * 0.172, by its series to s^17 (error below 1e-15). Same reason as
 * sim_lm_exp2. Returns -INFINITY for x <= 0.
 */
static double
sim_lm_log(double x)
{
	double m, s, s2, t;
	int e;

	if (!(x > 0.0))
		return -INFINITY;
	m = frexp(x, &e);
	if (m < 0.70710678118654752440) {
		m *= 2.0;
		e--;
	}
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	t = 1.0 / 17.0;
	t = t * s2 + 1.0 / 15.0;
	t = t * s2 + 1.0 / 13.0;
	t = t * s2 + 1.0 / 11.0;
	t = t * s2 + 1.0 / 9.0;
	t = t * s2 + 1.0 / 7.0;
	t = t * s2 + 1.0 / 5.0;
	t = t * s2 + 1.0 / 3.0;
	t = t * s2 + 1.0;
	return (double)e * SIM_LM_LN2 + 2.0 * s * t;
}

/* Fills the static tables (run once by pthread_once). */
static void
sim_lm_build(void)
{
	double all = 0.0;
	uint32_t i, w;

	for (i = 0; i < sim_vocab_ntext && i < SIM_VOCAB_MAX_TEXT; i++) {
		w = sim_vocab_text[i].weight;
		sim_lm_lnw[i] = sim_lm_log(w > 0 ? (double)w : 1.0);
		all += w > 0 ? (double)w : 1.0;
		if (w > 0 && sim_vocab_text[i].kind <= SIM_K_SSTART)
			sim_lm_kind_mass[sim_vocab_text[i].kind] += w;
	}
	sim_lm_ln_all = sim_lm_log(all);
	memset(sim_lm_lead_of, -1, sizeof(sim_lm_lead_of));
	for (i = 0; i < SIM_LM_NLEADS; i++)
		sim_lm_lead_of[sim_lm_leads[i].lead] = (signed char)i;
}

size_t
sim_lm_ncand(void)
{
	return (size_t)sim_vocab_size() + 1;
}

/* The id of candidate index k (see sim_lm_ncand). */
static uint32_t
sim_lm_id(size_t k, size_t ncand)
{
	return k + 1 == ncand ? SIM_EOS_ID : (uint32_t)k;
}

void
sim_lm_init(struct sim_lm *lm, const char *prompt, size_t len,
    const struct engine_sampling *p)
{
	size_t n = sim_lm_ncand();
	struct engine_sampling *q;

	pthread_once(&sim_lm_once, sim_lm_build);
	memset(lm, 0, sizeof(*lm));
	q = &lm->params;
	if (p != NULL)
		*q = *p;
	else
		engine_sampling_defaults(q);
	/* Out of range: see struct engine_sampling. NaN fails every test. */
	if (!(q->temperature >= 0.0))
		q->temperature = 0.0;
	if (q->temperature > ENGINE_TEMPERATURE_MAX)
		q->temperature = ENGINE_TEMPERATURE_MAX;
	if (!(q->top_p > 0.0))
		q->top_p = 0.0;
	if (q->top_p > 1.0)
		q->top_p = 1.0;
	lm->prompt_hash = rng_seed_of(prompt, len);
	rng_seed(&lm->rng, q->has_seed ? q->seed : lm->prompt_hash);
	lm->hist[0] = lm->hist[1] = lm->hist[2] = SIM_EOS_ID;
	lm->logit = xcalloc(n, sizeof(*lm->logit));
	lm->prob = xcalloc(n, sizeof(*lm->prob));
	lm->order = xcalloc(2 * n, sizeof(*lm->order));  /* and the sort's */
}

void
sim_lm_free(struct sim_lm *lm)
{
	if (lm == NULL)
		return;
	free(lm->logit);
	free(lm->prob);
	free(lm->order);
	lm->logit = NULL;
	lm->prob = NULL;
	lm->order = NULL;
}

/* Kind of the last token `id` for the sentence structure: a character
 * spelt in byte tokens counts as a stress token, "no token" as a line
 * break. */
static unsigned
sim_lm_kind(uint32_t id)
{
	if (id < SIM_FIRST_TEXT_ID)
		return SIM_K_STRESS;
	if (id - SIM_FIRST_TEXT_ID < sim_vocab_ntext)
		return sim_vocab_text[id - SIM_FIRST_TEXT_ID].kind;
	return SIM_K_NL;
}

static enum sim_lm_sit
sim_lm_situation(const struct sim_lm *lm)
{
	if (lm->utf8_lead != 0)
		return SIM_LM_UTF8;
	switch (sim_lm_kind(lm->hist[0])) {
	case SIM_K_NL:
		return SIM_LM_START;
	case SIM_K_END:
		return SIM_LM_AFTER_END;
	case SIM_K_PUNCT:
		return SIM_LM_AFTER_PUNCT;
	default:
		return SIM_LM_BODY;
	}
}

/* A uniform double in [0, 1) from the top 53 bits of h (exact). */
static double
sim_lm_unit(uint64_t h)
{
	return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * The context term of candidate `id` in (-SIM_LM_NOISE, +SIM_LM_NOISE):
 * two uniform numbers from hashes of the context (h1: prompt and last id;
 * h3: prompt and last three ids) and the id, by rng_mix64 (a bijection,
 * so distinct ids give unrelated numbers).
 */
static double
sim_lm_noise(uint64_t h1, uint64_t h3, uint32_t id)
{
	uint64_t k = ((uint64_t)id + 1) * UINT64_C(0x9e3779b97f4a7c15);

	return SIM_LM_NOISE * (sim_lm_unit(rng_mix64(h1 ^ k)) +
	    sim_lm_unit(rng_mix64(h3 + k)) - 1.0);
}

/* The probability of EOS after a sentence end or a newline for the
 * next token. */
static double
sim_lm_p_eos(const struct sim_lm *lm)
{
	double p = ((double)lm->produced + 1.0) / SIM_LM_EOS_SCALE;

	return p < SIM_LM_EOS_MAX ? p : SIM_LM_EOS_MAX;
}

/* The probability that the sentence ends with the next token (BODY). */
static double
sim_lm_p_end(const struct sim_lm *lm)
{
	if (lm->words < SIM_LM_SENTENCE_MIN)
		return SIM_LM_END_EARLY;
	if (lm->words >= SIM_LM_SENTENCE_MAX)
		return SIM_LM_END_LATE;
	return (double)(lm->words - SIM_LM_SENTENCE_MIN + 1) / 16.0;
}

/*
 * Per-kind terms of a situation: for a kind the model expects, add[kind]
 * = ln(share of its group) - ln(mass of its group), so that a token of it
 * gets ln(share x weight / mass); for any other kind off[kind] is set.
 */
static void
sim_lm_kind_terms(const struct sim_lm *lm, enum sim_lm_sit sit,
    double add[SIM_K_SSTART + 1], int off[SIM_K_SSTART + 1])
{
	static const unsigned body[] = {
		SIM_K_WORD, SIM_K_PIECE, SIM_K_NUM, SIM_K_STRESS, SIM_K_NL
	};
	double mass = 0.0, share, pe, t;
	unsigned k;
	size_t i;

	for (k = 0; k <= SIM_K_SSTART; k++)
		off[k] = 1;
	switch (sit) {
	case SIM_LM_START:
		pe = lm->produced == 0 ? 0.0 : sim_lm_p_eos(lm);
		off[SIM_K_START] = 0;
		add[SIM_K_START] = sim_lm_log(1.0 - pe) -
		    sim_lm_log(sim_lm_kind_mass[SIM_K_START]);
		break;
	case SIM_LM_AFTER_END:
		pe = sim_lm_p_eos(lm);
		off[SIM_K_SSTART] = 0;
		add[SIM_K_SSTART] = sim_lm_log((1.0 - SIM_LM_NL_AFTER_END) *
		    (1.0 - pe)) - sim_lm_log(sim_lm_kind_mass[SIM_K_SSTART]);
		off[SIM_K_NL] = 0;
		add[SIM_K_NL] = sim_lm_log(SIM_LM_NL_AFTER_END * (1.0 - pe)) -
		    sim_lm_log(sim_lm_kind_mass[SIM_K_NL]);
		break;
	case SIM_LM_AFTER_PUNCT:
	case SIM_LM_BODY:
		/* sim_lab_next draws these kinds from one table, by weight */
		for (i = 0; i < sizeof(body) / sizeof(body[0]); i++)
			mass += sim_lm_kind_mass[body[i]];
		share = 1.0;
		if (sit == SIM_LM_BODY) {
			mass += sim_lm_kind_mass[SIM_K_PUNCT];
			share = 1.0 - sim_lm_p_end(lm);
			off[SIM_K_END] = 0;
			add[SIM_K_END] = sim_lm_log(sim_lm_p_end(lm)) -
			    sim_lm_log(sim_lm_kind_mass[SIM_K_END]);
		}
		t = sim_lm_log(share) - sim_lm_log(mass);
		for (i = 0; i < sizeof(body) / sizeof(body[0]); i++) {
			off[body[i]] = 0;
			add[body[i]] = t;
		}
		if (sit == SIM_LM_BODY) {
			off[SIM_K_PUNCT] = 0;
			add[SIM_K_PUNCT] = t;
		}
		break;
	case SIM_LM_UTF8:
		break;
	}
}

/*
 * Scores every candidate for the next step into lm->logit (see sim/lm.h
 * for the model). Masked candidates get -INFINITY.
 */
static void
sim_lm_score(struct sim_lm *lm)
{
	enum sim_lm_sit sit = sim_lm_situation(lm);
	size_t n = sim_lm_ncand(), k;
	double add[SIM_K_SSTART + 1], off_add, lead_logit, pe;
	int off[SIM_K_SSTART + 1];
	uint64_t h1, h3;
	uint32_t i;
	unsigned kind, j;

	h1 = rng_mix64(lm->prompt_hash ^ rng_mix64(lm->hist[0]));
	h3 = rng_mix64(h1 + rng_mix64(((uint64_t)lm->hist[1] << 32) |
	    lm->hist[2]));
	for (k = 0; k < n; k++)
		lm->logit[k] = -INFINITY;

	if (sit == SIM_LM_UTF8) {
		/* Only the continuation bytes that keep the character
		 * valid; no text token, no EOS. */
		j = (unsigned)sim_lm_lead_of[lm->utf8_lead];
		for (i = sim_lm_leads[j].lo[lm->utf8_done];
		    i <= sim_lm_leads[j].hi[lm->utf8_done]; i++)
			lm->logit[i] = sim_lm_noise(h1, h3, i);
		return;
	}

	/* Byte tokens: lead bytes mid-sentence only. */
	if (sit == SIM_LM_BODY || sit == SIM_LM_AFTER_PUNCT) {
		lead_logit = sim_lm_log(SIM_LM_BYTES / (double)SIM_LM_NLEADS);
		for (j = 0; j < SIM_LM_NLEADS; j++) {
			i = sim_lm_leads[j].lead;
			lm->logit[i] = lead_logit + sim_lm_noise(h1, h3, i);
		}
	}

	/* Text tokens. */
	sim_lm_kind_terms(lm, sit, add, off);
	off_add = sim_lm_log(SIM_LM_OFF) - sim_lm_ln_all;
	for (i = 0; i < sim_vocab_ntext && i < SIM_VOCAB_MAX_TEXT; i++) {
		kind = sim_vocab_text[i].kind;
		if (kind <= SIM_K_SSTART && !off[kind] &&
		    sim_vocab_text[i].weight > 0)
			lm->logit[SIM_FIRST_TEXT_ID + i] = sim_lm_lnw[i] +
			    add[kind];
		else
			lm->logit[SIM_FIRST_TEXT_ID + i] = sim_lm_lnw[i] +
			    off_add;
		lm->logit[SIM_FIRST_TEXT_ID + i] += sim_lm_noise(h1, h3,
		    SIM_FIRST_TEXT_ID + i);
	}
	/* A model learns not to repeat itself: "for, for, for". */
	for (j = 0; j < 3; j++)
		if (lm->hist[j] >= SIM_FIRST_TEXT_ID && lm->hist[j] < n - 1)
			lm->logit[lm->hist[j]] -= SIM_LM_REPEAT;

	/* EOS, without a context term. */
	pe = sim_lm_p_eos(lm);
	if (sit != SIM_LM_AFTER_END && (sit != SIM_LM_START ||
	    lm->produced == 0))
		pe *= SIM_LM_EOS_ELSEWHERE;
	lm->logit[n - 1] = sim_lm_log(pe);
}

const double *
sim_lm_logits(struct sim_lm *lm)
{
	sim_lm_score(lm);
	return lm->logit;
}

/* Byte `pass` (0: least significant) of the sort key of weight p >= 0:
 * the complement of its bits, as doubles >= 0 order like their bits. */
static unsigned
sim_lm_key_byte(double p, unsigned pass)
{
	uint64_t u;

	memcpy(&u, &p, sizeof(u));
	return (unsigned)((~u >> (8 * pass)) & 0xff);
}

/*
 * Sorts a[0..m), m >= 1, most probable first and equal weights by lower
 * index (a unique order: no two entries have the same index): an LSD
 * radix sort, 8 bits a pass, on sim_lm_key_byte. Each pass is stable, so
 * equal weights keep the candidate order they were gathered in; a pass in
 * which every key has the same byte is skipped. O(m) per pass where qsort
 * took ten times as long. Uses tmp[0..m); the result is in a.
 */
static void
sim_lm_sort(struct sim_lm_cand *a, struct sim_lm_cand *tmp, size_t m)
{
	struct sim_lm_cand *src = a, *dst = tmp, *t;
	size_t count[256], i, pos, c;
	unsigned pass, b;

	for (pass = 0; pass < 8; pass++) {
		memset(count, 0, sizeof(count));
		for (i = 0; i < m; i++)
			count[sim_lm_key_byte(src[i].p, pass)]++;
		if (count[sim_lm_key_byte(src[0].p, pass)] == m)
			continue;
		for (pos = 0, b = 0; b < 256; b++) {
			c = count[b];
			count[b] = pos;
			pos += c;
		}
		for (i = 0; i < m; i++)
			dst[count[sim_lm_key_byte(src[i].p, pass)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, m * sizeof(*a));
}

/*
 * Draws a candidate index from the weights lm->prob[0..n) (sum `total`,
 * > 0), restricted to the top_p nucleus: a uniform point below the mass
 * kept, then a walk in candidate order (all kept) or in sorted order.
 */
static size_t
sim_lm_draw(struct sim_lm *lm, size_t n, double total)
{
	double kept = 0.0, r, acc = 0.0, cut;
	size_t k, m = 0, last = 0;

	if (lm->params.top_p >= 1.0) {
		r = sim_lm_unit(rng_next(&lm->rng)) * total;
		for (k = 0; k < n; k++) {
			if (lm->prob[k] <= 0.0)
				continue;
			last = k;
			acc += lm->prob[k];
			if (r < acc)
				return k;
		}
		return last;    /* rounding: r at the very top */
	}
	/* A candidate below `cut` cannot be in the nucleus: if it were, the
	 * candidates after the nucleus, each smaller still, would hold more
	 * than 1 - top_p of the mass, with at most n of them under
	 * (1 - top_p) x total / n each. A factor 4 covers rounding. Leaving
	 * them out of the sort changes nothing but its cost. */
	cut = (1.0 - lm->params.top_p) * total / (double)n / 4.0;
	for (k = 0; k < n; k++)
		if (lm->prob[k] > 0.0 && lm->prob[k] >= cut) {
			lm->order[m].p = lm->prob[k];
			lm->order[m].k = (uint32_t)k;
			m++;
		}
	if (m == 0)
		return 0;       /* cannot happen: the argmax has weight 1 */
	sim_lm_sort(lm->order, lm->order + n, m);
	/* The smallest prefix whose mass reaches top_p of the total (at
	 * least one candidate). */
	for (k = 0; k < m; k++) {
		kept += lm->order[k].p;
		if (kept >= lm->params.top_p * total) {
			k++;
			break;
		}
	}
	m = k;
	r = sim_lm_unit(rng_next(&lm->rng)) * kept;
	for (k = 0; k < m; k++) {
		acc += lm->order[k].p;
		if (r < acc)
			return lm->order[k].k;
	}
	return lm->order[m - 1].k;
}

/* Advances the sentence and UTF-8 state past token `id`. */
static void
sim_lm_push(struct sim_lm *lm, uint32_t id)
{
	int j;

	lm->hist[2] = lm->hist[1];
	lm->hist[1] = lm->hist[0];
	lm->hist[0] = id;
	if (lm->produced < UINT32_MAX)
		lm->produced++;
	if (id < SIM_FIRST_TEXT_ID) {
		if (lm->utf8_lead == 0) {
			j = sim_lm_lead_of[id];
			lm->utf8_lead = (uint8_t)id;
			lm->utf8_done = 0;
			lm->utf8_need = j >= 0 ? sim_lm_leads[j].need : 0;
		} else {
			lm->utf8_done++;
			lm->utf8_need--;
		}
		if (lm->utf8_need == 0) {
			lm->utf8_lead = 0;
			lm->words++;
		}
		return;
	}
	switch (sim_lm_kind(id)) {
	case SIM_K_END:
	case SIM_K_NL:
		lm->words = 0;
		break;
	case SIM_K_START:
	case SIM_K_SSTART:
		lm->words = 1;
		break;
	case SIM_K_PUNCT:
		break;
	default:
		lm->words++;
		break;
	}
}

/* The step's token is id: EOS ends the generation, any other advances
 * the state past it. Returns id. */
static uint32_t
sim_lm_take(struct sim_lm *lm, uint32_t id)
{
	if (id == SIM_EOS_ID) {
		lm->ended = 1;
		if (lm->produced < UINT32_MAX)
			lm->produced++;
		return id;
	}
	sim_lm_push(lm, id);
	return id;
}

/*
 * One step: score, mask EOS if asked, then greedy or temperature + top_p
 * sampling (sim/lm.h). The weights are e^((logit - max) / T) =
 * 2^((logit - max) x log2(e) / T), so the most probable candidate has
 * weight 1 and nothing overflows; their sum runs in candidate order.
 */
uint32_t
sim_lm_next(struct sim_lm *lm)
{
	size_t n = sim_lm_ncand(), k, best = 0;
	double max = -INFINITY, total = 0.0, t = lm->params.temperature, c;

	if (lm->ended)
		return SIM_EOS_ID;
	sim_lm_score(lm);
	if (lm->params.ignore_eos || lm->produced < lm->params.min_tokens)
		lm->logit[n - 1] = -INFINITY;
	for (k = 0; k < n; k++)
		if (lm->logit[k] > max) {
			max = lm->logit[k];
			best = k;
		}
	if (t >= ENGINE_GREEDY_BELOW) {
		c = SIM_LM_LOG2E / t;
		for (k = 0; k < n; k++) {
			lm->prob[k] = sim_lm_exp2((lm->logit[k] - max) * c);
			total += lm->prob[k];
		}
		best = sim_lm_draw(lm, n, total);
	}
	return sim_lm_take(lm, sim_lm_id(best, n));
}

uint32_t
sim_lm_force(struct sim_lm *lm, uint32_t id)
{
	if (lm->ended)
		return SIM_EOS_ID;
	sim_lm_score(lm);
	if (lm->params.ignore_eos || lm->produced < lm->params.min_tokens)
		lm->logit[sim_lm_ncand() - 1] = -INFINITY;
	return sim_lm_take(lm, id);
}

/* ln p of a logit given the step's max and ln of its sum of weights; a
 * masked candidate is ENGINE_LOGPROB_MASKED. */
static float
sim_lm_lp(double logit, double max, double ln_sum)
{
	double v;

	if (!(logit > -INFINITY))
		return ENGINE_LOGPROB_MASKED;
	v = logit - max - ln_sum;
	if (v > 0.0)
		v = 0.0;        /* rounding at the top */
	return v < (double)ENGINE_LOGPROB_MASKED ? ENGINE_LOGPROB_MASKED :
	    (float)v;
}

void
sim_lm_logprobs(const struct sim_lm *lm, uint32_t id, uint32_t k,
    struct engine_logprob *out)
{
	size_t n = sim_lm_ncand(), c, j, have = 0;
	double max = -INFINITY, sum = 0.0, ln_sum;
	size_t top[ENGINE_MAX_TOP_LOGPROBS];

	if (k > ENGINE_MAX_TOP_LOGPROBS)
		k = ENGINE_MAX_TOP_LOGPROBS;
	for (c = 0; c < n; c++)
		if (lm->logit[c] > max)
			max = lm->logit[c];
	for (c = 0; c < n; c++)
		sum += sim_lm_exp2((lm->logit[c] - max) * SIM_LM_LOG2E);
	ln_sum = sim_lm_log(sum);
	/* the k highest logits, ties by lower index (= lower id, EOS
	 * last): an insertion into a sorted list of at most k */
	for (c = 0; c < n && k > 0; c++) {
		if (!(lm->logit[c] > -INFINITY))
			continue;
		if (have == k && !(lm->logit[c] > lm->logit[top[k - 1]]))
			continue;
		j = have < k ? have++ : k - 1;
		while (j > 0 && lm->logit[c] > lm->logit[top[j - 1]]) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = c;
	}
	c = id == SIM_EOS_ID ? n - 1 : id;
	out[0].id = id;
	out[0].logprob = c < n ? sim_lm_lp(lm->logit[c], max, ln_sum) :
	    ENGINE_LOGPROB_MASKED;
	for (j = 0; j < k; j++) {
		if (j < have) {
			out[1 + j].id = sim_lm_id(top[j], n);
			out[1 + j].logprob = sim_lm_lp(lm->logit[top[j]], max,
			    ln_sum);
		} else {
			/* fewer candidates than asked: masked fillers */
			out[1 + j].id = SIM_EOS_ID;
			out[1 + j].logprob = ENGINE_LOGPROB_MASKED;
		}
	}
}
