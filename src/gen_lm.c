/*
 * gen_lm.c - the deterministic language model and sampler of gen_lm.h.
 *
 * The per-token tables (log-weights, kind masses) are static, filled once
 * under pthread_once and read-only afterwards, so any number of threads
 * may run their own gen_lm. Floating point: see the determinism note in
 * gen_lm.h; gen_lm_exp2 and gen_lm_log below are why libm's exp and log
 * are not used.
 */
#include "gen_lm.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "ts.h"

/* Shares of the probability mass (before normalisation). */
#define GEN_LM_OFF 0.002        /* all unexpected text tokens together */
#define GEN_LM_BYTES 0.004      /* all lead-byte tokens together */
#define GEN_LM_NL_AFTER_END 0.25        /* a newline after a sentence end
					 * (gen_next: 1 in GEN_NL_ODDS) */
#define GEN_LM_END_EARLY 0.002  /* a sentence end before 6 words */
#define GEN_LM_END_LATE 0.995   /* a sentence end from 18 words on */
#define GEN_LM_EOS_SCALE 300.0  /* p(EOS) after a sentence end or a
				 * newline: (n + 1) / this */
#define GEN_LM_EOS_MAX 0.9      /* ... at most */
#define GEN_LM_EOS_ELSEWHERE 0.01       /* ... times this elsewhere */
#define GEN_LM_NOISE 2.0        /* context term in (-NOISE, +NOISE) */
#define GEN_LM_REPEAT 3.0       /* less for a repeat of the last 3 ids */

/* Sentence lengths in words, as gen.c's GEN_SENTENCE_MIN and _MAX. */
#define GEN_LM_SENTENCE_MIN 6u
#define GEN_LM_SENTENCE_MAX 18u

#define GEN_LM_LN2 0.693147180559945309417232121458
#define GEN_LM_LOG2E 1.44269504088896340735992468100

/* A candidate and its weight, for the top_p sort. */
struct gen_lm_cand {
	double p;
	uint32_t k;             /* candidate index */
};

/* Where in the text the model is; decides which kinds it expects. */
enum gen_lm_sit {
	GEN_LM_START,           /* first token or after a newline: "The" */
	GEN_LM_AFTER_END,       /* after a sentence end: " The", "\n", EOS */
	GEN_LM_AFTER_PUNCT,     /* after punctuation: no punctuation, no end */
	GEN_LM_BODY,            /* mid-sentence */
	GEN_LM_UTF8             /* spelling a character in byte tokens */
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
} gen_lm_leads[] = {
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

#define GEN_LM_NLEADS (sizeof(gen_lm_leads) / sizeof(gen_lm_leads[0]))

/* Built once by gen_lm_build under gen_lm_once, read-only afterwards. */
static pthread_once_t gen_lm_once = PTHREAD_ONCE_INIT;
static double gen_lm_lnw[GEN_VOCAB_MAX_TEXT];   /* ln max(weight, 1) */
static double gen_lm_kind_mass[GEN_K_SSTART + 1];       /* sum of weights */
static double gen_lm_ln_all;    /* ln of the sum of max(weight, 1) */
static signed char gen_lm_lead_of[256]; /* index in gen_lm_leads, or -1 */

/* 2^(j/32) for j = 0..31: the correctly rounded values (from 60-digit
 * decimal arithmetic) as exact hexadecimal literals. */
static const double gen_lm_exp2_tab[32] = {
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
gen_lm_exp2(double y)
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
	u = (f - (double)j / 32.0) * GEN_LM_LN2;
	p = 1.0 / 720.0;
	p = p * u + 1.0 / 120.0;
	p = p * u + 1.0 / 24.0;
	p = p * u + 1.0 / 6.0;
	p = p * u + 0.5;
	p = p * u + 1.0;
	p = p * u + 1.0;
	scale.u = (uint64_t)(k + 1023) << 52;
	return gen_lm_exp2_tab[j] * p * scale.d;
}

/*
 * ln x for x > 0 (finite): x = m 2^e with m in [sqrt(1/2), sqrt(2)) by
 * frexp (exact), then ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <
 * 0.172, by its series to s^17 (error below 1e-15). Same reason as
 * gen_lm_exp2. Returns -INFINITY for x <= 0.
 */
static double
gen_lm_log(double x)
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
	return (double)e * GEN_LM_LN2 + 2.0 * s * t;
}

/* Fills the static tables (run once by pthread_once). */
static void
gen_lm_build(void)
{
	double all = 0.0;
	uint32_t i, w;

	for (i = 0; i < gen_vocab_ntext && i < GEN_VOCAB_MAX_TEXT; i++) {
		w = gen_vocab_text[i].weight;
		gen_lm_lnw[i] = gen_lm_log(w > 0 ? (double)w : 1.0);
		all += w > 0 ? (double)w : 1.0;
		if (w > 0 && gen_vocab_text[i].kind <= GEN_K_SSTART)
			gen_lm_kind_mass[gen_vocab_text[i].kind] += w;
	}
	gen_lm_ln_all = gen_lm_log(all);
	memset(gen_lm_lead_of, -1, sizeof(gen_lm_lead_of));
	for (i = 0; i < GEN_LM_NLEADS; i++)
		gen_lm_lead_of[gen_lm_leads[i].lead] = (signed char)i;
}

void
gen_params_defaults(struct gen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->temperature = GEN_TEMPERATURE_DEFAULT;
	p->top_p = GEN_TOP_P_DEFAULT;
	p->seed = 0;
	p->has_seed = 0;
	p->ignore_eos = 0;
}

size_t
gen_lm_ncand(void)
{
	return (size_t)gen_vocab_size() + 1;
}

/* The id of candidate index k (see gen_lm_ncand). */
static uint32_t
gen_lm_id(size_t k, size_t ncand)
{
	return k + 1 == ncand ? GEN_EOS_ID : (uint32_t)k;
}

void
gen_lm_init(struct gen_lm *lm, const char *prompt, size_t len,
    const struct gen_params *p)
{
	size_t n = gen_lm_ncand();
	struct gen_params *q;

	pthread_once(&gen_lm_once, gen_lm_build);
	memset(lm, 0, sizeof(*lm));
	q = &lm->params;
	if (p != NULL)
		*q = *p;
	else
		gen_params_defaults(q);
	/* Out of range: see struct gen_params. NaN fails every test. */
	if (!(q->temperature >= 0.0))
		q->temperature = 0.0;
	if (q->temperature > GEN_TEMPERATURE_MAX)
		q->temperature = GEN_TEMPERATURE_MAX;
	if (!(q->top_p > 0.0))
		q->top_p = 0.0;
	if (q->top_p > 1.0)
		q->top_p = 1.0;
	lm->prompt_hash = gen_seed(prompt, len);
	gen_prng_seed(lm->s, q->has_seed ? q->seed : lm->prompt_hash);
	lm->hist[0] = lm->hist[1] = lm->hist[2] = GEN_EOS_ID;
	lm->logit = xcalloc(n, sizeof(*lm->logit));
	lm->prob = xcalloc(n, sizeof(*lm->prob));
	lm->order = xcalloc(2 * n, sizeof(*lm->order));  /* and the sort's */
}

void
gen_lm_free(struct gen_lm *lm)
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
gen_lm_kind(uint32_t id)
{
	if (id < GEN_FIRST_TEXT_ID)
		return GEN_K_STRESS;
	if (id - GEN_FIRST_TEXT_ID < gen_vocab_ntext)
		return gen_vocab_text[id - GEN_FIRST_TEXT_ID].kind;
	return GEN_K_NL;
}

static enum gen_lm_sit
gen_lm_situation(const struct gen_lm *lm)
{
	if (lm->utf8_lead != 0)
		return GEN_LM_UTF8;
	switch (gen_lm_kind(lm->hist[0])) {
	case GEN_K_NL:
		return GEN_LM_START;
	case GEN_K_END:
		return GEN_LM_AFTER_END;
	case GEN_K_PUNCT:
		return GEN_LM_AFTER_PUNCT;
	default:
		return GEN_LM_BODY;
	}
}

/* A uniform double in [0, 1) from the top 53 bits of h (exact). */
static double
gen_lm_unit(uint64_t h)
{
	return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * The context term of candidate `id` in (-GEN_LM_NOISE, +GEN_LM_NOISE):
 * two uniform numbers from hashes of the context (h1: prompt and last id;
 * h3: prompt and last three ids) and the id, by gen_mix64 (a bijection,
 * so distinct ids give unrelated numbers).
 */
static double
gen_lm_noise(uint64_t h1, uint64_t h3, uint32_t id)
{
	uint64_t k = ((uint64_t)id + 1) * UINT64_C(0x9e3779b97f4a7c15);

	return GEN_LM_NOISE * (gen_lm_unit(gen_mix64(h1 ^ k)) +
	    gen_lm_unit(gen_mix64(h3 + k)) - 1.0);
}

/* The probability of EOS after a sentence end or a newline for the
 * next token. */
static double
gen_lm_p_eos(const struct gen_lm *lm)
{
	double p = ((double)lm->produced + 1.0) / GEN_LM_EOS_SCALE;

	return p < GEN_LM_EOS_MAX ? p : GEN_LM_EOS_MAX;
}

/* The probability that the sentence ends with the next token (BODY). */
static double
gen_lm_p_end(const struct gen_lm *lm)
{
	if (lm->words < GEN_LM_SENTENCE_MIN)
		return GEN_LM_END_EARLY;
	if (lm->words >= GEN_LM_SENTENCE_MAX)
		return GEN_LM_END_LATE;
	return (double)(lm->words - GEN_LM_SENTENCE_MIN + 1) / 16.0;
}

/*
 * Per-kind terms of a situation: for a kind the model expects, add[kind]
 * = ln(share of its group) - ln(mass of its group), so that a token of it
 * gets ln(share x weight / mass); for any other kind off[kind] is set.
 */
static void
gen_lm_kind_terms(const struct gen_lm *lm, enum gen_lm_sit sit,
    double add[GEN_K_SSTART + 1], int off[GEN_K_SSTART + 1])
{
	static const unsigned body[] = {
		GEN_K_WORD, GEN_K_PIECE, GEN_K_NUM, GEN_K_STRESS, GEN_K_NL
	};
	double mass = 0.0, share, pe, t;
	unsigned k;
	size_t i;

	for (k = 0; k <= GEN_K_SSTART; k++)
		off[k] = 1;
	switch (sit) {
	case GEN_LM_START:
		pe = lm->produced == 0 ? 0.0 : gen_lm_p_eos(lm);
		off[GEN_K_START] = 0;
		add[GEN_K_START] = gen_lm_log(1.0 - pe) -
		    gen_lm_log(gen_lm_kind_mass[GEN_K_START]);
		break;
	case GEN_LM_AFTER_END:
		pe = gen_lm_p_eos(lm);
		off[GEN_K_SSTART] = 0;
		add[GEN_K_SSTART] = gen_lm_log((1.0 - GEN_LM_NL_AFTER_END) *
		    (1.0 - pe)) - gen_lm_log(gen_lm_kind_mass[GEN_K_SSTART]);
		off[GEN_K_NL] = 0;
		add[GEN_K_NL] = gen_lm_log(GEN_LM_NL_AFTER_END * (1.0 - pe)) -
		    gen_lm_log(gen_lm_kind_mass[GEN_K_NL]);
		break;
	case GEN_LM_AFTER_PUNCT:
	case GEN_LM_BODY:
		/* gen_next draws these kinds from one table, by weight */
		for (i = 0; i < sizeof(body) / sizeof(body[0]); i++)
			mass += gen_lm_kind_mass[body[i]];
		share = 1.0;
		if (sit == GEN_LM_BODY) {
			mass += gen_lm_kind_mass[GEN_K_PUNCT];
			share = 1.0 - gen_lm_p_end(lm);
			off[GEN_K_END] = 0;
			add[GEN_K_END] = gen_lm_log(gen_lm_p_end(lm)) -
			    gen_lm_log(gen_lm_kind_mass[GEN_K_END]);
		}
		t = gen_lm_log(share) - gen_lm_log(mass);
		for (i = 0; i < sizeof(body) / sizeof(body[0]); i++) {
			off[body[i]] = 0;
			add[body[i]] = t;
		}
		if (sit == GEN_LM_BODY) {
			off[GEN_K_PUNCT] = 0;
			add[GEN_K_PUNCT] = t;
		}
		break;
	case GEN_LM_UTF8:
		break;
	}
}

/*
 * Scores every candidate for the next step into lm->logit (see gen_lm.h
 * for the model). Masked candidates get -INFINITY.
 */
static void
gen_lm_score(struct gen_lm *lm)
{
	enum gen_lm_sit sit = gen_lm_situation(lm);
	size_t n = gen_lm_ncand(), k;
	double add[GEN_K_SSTART + 1], off_add, lead_logit, pe;
	int off[GEN_K_SSTART + 1];
	uint64_t h1, h3;
	uint32_t i;
	unsigned kind, j;

	h1 = gen_mix64(lm->prompt_hash ^ gen_mix64(lm->hist[0]));
	h3 = gen_mix64(h1 + gen_mix64(((uint64_t)lm->hist[1] << 32) |
	    lm->hist[2]));
	for (k = 0; k < n; k++)
		lm->logit[k] = -INFINITY;

	if (sit == GEN_LM_UTF8) {
		/* Only the continuation bytes that keep the character
		 * valid; no text token, no EOS. */
		j = (unsigned)gen_lm_lead_of[lm->utf8_lead];
		for (i = gen_lm_leads[j].lo[lm->utf8_done];
		    i <= gen_lm_leads[j].hi[lm->utf8_done]; i++)
			lm->logit[i] = gen_lm_noise(h1, h3, i);
		return;
	}

	/* Byte tokens: lead bytes mid-sentence only. */
	if (sit == GEN_LM_BODY || sit == GEN_LM_AFTER_PUNCT) {
		lead_logit = gen_lm_log(GEN_LM_BYTES / (double)GEN_LM_NLEADS);
		for (j = 0; j < GEN_LM_NLEADS; j++) {
			i = gen_lm_leads[j].lead;
			lm->logit[i] = lead_logit + gen_lm_noise(h1, h3, i);
		}
	}

	/* Text tokens. */
	gen_lm_kind_terms(lm, sit, add, off);
	off_add = gen_lm_log(GEN_LM_OFF) - gen_lm_ln_all;
	for (i = 0; i < gen_vocab_ntext && i < GEN_VOCAB_MAX_TEXT; i++) {
		kind = gen_vocab_text[i].kind;
		if (kind <= GEN_K_SSTART && !off[kind] &&
		    gen_vocab_text[i].weight > 0)
			lm->logit[GEN_FIRST_TEXT_ID + i] = gen_lm_lnw[i] +
			    add[kind];
		else
			lm->logit[GEN_FIRST_TEXT_ID + i] = gen_lm_lnw[i] +
			    off_add;
		lm->logit[GEN_FIRST_TEXT_ID + i] += gen_lm_noise(h1, h3,
		    GEN_FIRST_TEXT_ID + i);
	}
	/* A model learns not to repeat itself: "for, for, for". */
	for (j = 0; j < 3; j++)
		if (lm->hist[j] >= GEN_FIRST_TEXT_ID && lm->hist[j] < n - 1)
			lm->logit[lm->hist[j]] -= GEN_LM_REPEAT;

	/* EOS, without a context term. */
	pe = gen_lm_p_eos(lm);
	if (sit != GEN_LM_AFTER_END && (sit != GEN_LM_START ||
	    lm->produced == 0))
		pe *= GEN_LM_EOS_ELSEWHERE;
	lm->logit[n - 1] = gen_lm_log(pe);
}

const double *
gen_lm_logits(struct gen_lm *lm)
{
	gen_lm_score(lm);
	return lm->logit;
}

/* Byte `pass` (0: least significant) of the sort key of weight p >= 0:
 * the complement of its bits, as doubles >= 0 order like their bits. */
static unsigned
gen_lm_key_byte(double p, unsigned pass)
{
	uint64_t u;

	memcpy(&u, &p, sizeof(u));
	return (unsigned)((~u >> (8 * pass)) & 0xff);
}

/*
 * Sorts a[0..m), m >= 1, most probable first and equal weights by lower
 * index (a unique order: no two entries have the same index): an LSD
 * radix sort, 8 bits a pass, on gen_lm_key_byte. Each pass is stable, so
 * equal weights keep the candidate order they were gathered in; a pass in
 * which every key has the same byte is skipped. O(m) per pass where qsort
 * took ten times as long. Uses tmp[0..m); the result is in a.
 */
static void
gen_lm_sort(struct gen_lm_cand *a, struct gen_lm_cand *tmp, size_t m)
{
	struct gen_lm_cand *src = a, *dst = tmp, *t;
	size_t count[256], i, pos, c;
	unsigned pass, b;

	for (pass = 0; pass < 8; pass++) {
		memset(count, 0, sizeof(count));
		for (i = 0; i < m; i++)
			count[gen_lm_key_byte(src[i].p, pass)]++;
		if (count[gen_lm_key_byte(src[0].p, pass)] == m)
			continue;
		for (pos = 0, b = 0; b < 256; b++) {
			c = count[b];
			count[b] = pos;
			pos += c;
		}
		for (i = 0; i < m; i++)
			dst[count[gen_lm_key_byte(src[i].p, pass)]++] = src[i];
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
gen_lm_draw(struct gen_lm *lm, size_t n, double total)
{
	double kept = 0.0, r, acc = 0.0, cut;
	size_t k, m = 0, last = 0;

	if (lm->params.top_p >= 1.0) {
		r = gen_lm_unit(gen_xoshiro(lm->s)) * total;
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
	gen_lm_sort(lm->order, lm->order + n, m);
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
	r = gen_lm_unit(gen_xoshiro(lm->s)) * kept;
	for (k = 0; k < m; k++) {
		acc += lm->order[k].p;
		if (r < acc)
			return lm->order[k].k;
	}
	return lm->order[m - 1].k;
}

/* Advances the sentence and UTF-8 state past token `id`. */
static void
gen_lm_push(struct gen_lm *lm, uint32_t id)
{
	int j;

	lm->hist[2] = lm->hist[1];
	lm->hist[1] = lm->hist[0];
	lm->hist[0] = id;
	if (lm->produced < UINT32_MAX)
		lm->produced++;
	if (id < GEN_FIRST_TEXT_ID) {
		if (lm->utf8_lead == 0) {
			j = gen_lm_lead_of[id];
			lm->utf8_lead = (uint8_t)id;
			lm->utf8_done = 0;
			lm->utf8_need = j >= 0 ? gen_lm_leads[j].need : 0;
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
	switch (gen_lm_kind(id)) {
	case GEN_K_END:
	case GEN_K_NL:
		lm->words = 0;
		break;
	case GEN_K_START:
	case GEN_K_SSTART:
		lm->words = 1;
		break;
	case GEN_K_PUNCT:
		break;
	default:
		lm->words++;
		break;
	}
}

/*
 * One step: score, mask EOS if asked, then greedy or temperature + top_p
 * sampling (gen_lm.h). The weights are e^((logit - max) / T) =
 * 2^((logit - max) x log2(e) / T), so the most probable candidate has
 * weight 1 and nothing overflows; their sum runs in candidate order.
 */
uint32_t
gen_lm_next(struct gen_lm *lm)
{
	size_t n = gen_lm_ncand(), k, best = 0;
	double max = -INFINITY, total = 0.0, t = lm->params.temperature, c;
	uint32_t id;

	if (lm->ended)
		return GEN_EOS_ID;
	gen_lm_score(lm);
	if (lm->params.ignore_eos)
		lm->logit[n - 1] = -INFINITY;
	for (k = 0; k < n; k++)
		if (lm->logit[k] > max) {
			max = lm->logit[k];
			best = k;
		}
	if (t >= GEN_LM_GREEDY_BELOW) {
		c = GEN_LM_LOG2E / t;
		for (k = 0; k < n; k++) {
			lm->prob[k] = gen_lm_exp2((lm->logit[k] - max) * c);
			total += lm->prob[k];
		}
		best = gen_lm_draw(lm, n, total);
	}
	id = gen_lm_id(best, n);
	if (id == GEN_EOS_ID) {
		lm->ended = 1;
		if (lm->produced < UINT32_MAX)
			lm->produced++;
		return id;
	}
	gen_lm_push(lm, id);
	return id;
}
