/*
 * model/model_synth.c - seeded random checkpoints and a synthetic vocabulary
 * (see model_synth.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model/model_synth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_sample.h"

/* A few UTF-8 pieces, then frequent English words in order of frequency
 * (after the usual lists): the synthetic vocabulary holds their
 * prefixes, as many as fit. */
static const char *const synth_words[] = {
	"\xc3\xa9", " caf\xc3\xa9", "\xe2\x80\x99s",   /* é, café, ’s */
	" the", " of", " and", " to", " a", " in", " is", " it", " you",
	" that", " he", " was", " for", " on", " are", " with", " as", " I",
	" his", " they", " be", " at", " one", " have", " this", " from",
	" or", " had", " by", " not", " word", " but", " what", " some",
	" we", " can", " out", " other", " were", " all", " there", " when",
	" up", " use", " your", " how", " said", " an", " each", " she",
	" which", " do", " their", " time", " if", " will", " way", " about",
	" many", " then", " them", " write", " would", " like", " so",
	" these", " her", " long", " make", " thing", " see", " him", " two",
	" has", " look", " more", " day", " could", " go", " come", " did",
	" number", " sound", " no", " most", " people", " my", " over",
	" know", " water", " than", " call", " first", " who", " may",
	" down", " side", " been", " now", " find", " Once", " upon",
	" little", " girl", " named", " Lily", " play", " happy", " big",
	"The", "He", "She", "It", "They", "ing", "ed", "er", "ly", "es",
};

/* Id of the first piece after the specials and byte tokens. */
#define SYNTH_FIRST_PIECE 259u

struct synth_rng {
	uint64_t s;
};

/* Uniform in [-a, a). */
static float
synth_uniform(struct synth_rng *r, float a)
{
	return (2.0f * model_rng_f32(&r->s) - 1.0f) * a;
}

/* A buffered writer that remembers the first error. */
struct synth_out {
	FILE *f;
	const char *path;
	float buf[4096];
	size_t n;
	int err;                     /* errno of the first failure, or 0 */
};

static void
out_flush(struct synth_out *o)
{
	if (o->n > 0 && o->err == 0 &&
	    fwrite(o->buf, sizeof(float), o->n, o->f) != o->n)
		o->err = errno ? errno : EIO;
	o->n = 0;
}

static void
out_float(struct synth_out *o, float v)
{
	o->buf[o->n++] = v;
	if (o->n == sizeof(o->buf) / sizeof(o->buf[0]))
		out_flush(o);
}

/* count values uniform in +-a (a < 0: the constant -a). */
static void
out_tensor(struct synth_out *o, struct synth_rng *r, uint64_t count,
    float a)
{
	uint64_t i;

	for (i = 0; i < count; i++)
		out_float(o, a < 0 ? -a : synth_uniform(r, a));
}

void
model_synth_defaults(struct model_synth *s)
{
	memset(s, 0, sizeof(*s));
	s->cfg.dim = 64;
	s->cfg.hidden_dim = 172;
	s->cfg.n_layers = 2;
	s->cfg.n_heads = 4;
	s->cfg.n_kv_heads = 2;
	s->cfg.vocab_size = 512;
	s->cfg.seq_len = 256;
	s->cfg.shared_classifier = 0;
	s->seed = 1;
}

static enum ts_err
synth_check(const struct model_synth *s, struct model_config *c,
    char *err, size_t errlen)
{
	*c = s->cfg;
	if (model_config_check(c, err, errlen) != TS_OK)
		return TS_EFORMAT;
	if (c->vocab_size < MODEL_SYNTH_MIN_VOCAB) {
		snprintf(err, errlen, "vocab_size %u is below %u (specials, "
		    "bytes and printable characters)", c->vocab_size,
		    MODEL_SYNTH_MIN_VOCAB);
		return TS_EFORMAT;
	}
	return TS_OK;
}

/* Closes o->f and reports the first error of the file. */
static enum ts_err
out_close(struct synth_out *o, char *err, size_t errlen)
{
	out_flush(o);
	if (fclose(o->f) != 0 && o->err == 0)
		o->err = errno ? errno : EIO;
	if (o->err != 0) {
		snprintf(err, errlen, "%s: cannot write: %s", o->path,
		    strerror(o->err));
		errno = o->err;
		return TS_ESYS;
	}
	return TS_OK;
}

static struct synth_out *
out_open(const char *path, char *err, size_t errlen)
{
	struct synth_out *o;
	FILE *f = fopen(path, "wb");

	if (f == NULL) {
		int saved = errno;

		snprintf(err, errlen, "%s: cannot create: %s", path,
		    strerror(saved));
		errno = saved;
		return NULL;
	}
	o = xcalloc(1, sizeof(*o));
	o->f = f;
	o->path = path;
	return o;
}

enum ts_err
model_synth_write_checkpoint(const struct model_synth *s, const char *path,
    char *err, size_t errlen)
{
	struct model_config c;
	struct synth_rng r;
	struct synth_out *o;
	uint64_t l, d, h, kv, v, pos, i;
	int32_t hdr[7];
	float ad, ah;
	enum ts_err rc;

	rc = synth_check(s, &c, err, errlen);
	if (rc != TS_OK)
		return rc;
	o = out_open(path, err, errlen);
	if (o == NULL)
		return TS_ESYS;
	hdr[0] = (int32_t)c.dim;
	hdr[1] = (int32_t)c.hidden_dim;
	hdr[2] = (int32_t)c.n_layers;
	hdr[3] = (int32_t)c.n_heads;
	hdr[4] = (int32_t)c.n_kv_heads;
	hdr[5] = c.shared_classifier ? (int32_t)c.vocab_size :
	    -(int32_t)c.vocab_size;
	hdr[6] = (int32_t)c.seq_len;
	if (fwrite(hdr, sizeof(hdr), 1, o->f) != 1)
		o->err = errno ? errno : EIO;

	r.s = model_rng_seed(s->seed);
	l = c.n_layers;
	d = c.dim;
	h = c.hidden_dim;
	kv = c.kv_dim;
	v = c.vocab_size;
	ad = 1.0f / sqrtf((float)d);
	ah = 1.0f / sqrtf((float)h);
	out_tensor(o, &r, v * d, ad);           /* token_embedding_table */
	out_tensor(o, &r, l * d, -1.0f);        /* rms_att_weight */
	out_tensor(o, &r, l * d * d, ad);       /* wq */
	out_tensor(o, &r, l * kv * d, ad);      /* wk */
	out_tensor(o, &r, l * kv * d, ad);      /* wv */
	out_tensor(o, &r, l * d * d, ad);       /* wo */
	out_tensor(o, &r, l * d, -1.0f);        /* rms_ffn_weight */
	out_tensor(o, &r, l * h * d, ad);       /* w1 */
	out_tensor(o, &r, l * d * h, ah);       /* w2 */
	out_tensor(o, &r, l * h * d, ad);       /* w3 */
	out_tensor(o, &r, d, -1.0f);            /* rms_final_weight */
	/* freq_cis_real, then _imag, [seq_len][head_size / 2] */
	for (i = 0; i < 2; i++)
		for (pos = 0; pos < c.seq_len; pos++) {
			uint32_t k;

			for (k = 0; k < c.head_size / 2; k++) {
				double f = pow(10000.0, -2.0 * k /
				    c.head_size) * (double)pos;

				out_float(o, (float)(i == 0 ? cos(f) :
				    sin(f)));
			}
		}
	if (!c.shared_classifier)
		out_tensor(o, &r, v * d, ad);   /* wcls */
	rc = out_close(o, err, errlen);
	free(o);
	return rc;
}

/* ---- the synthetic vocabulary ----------------------------------------- */

/* Pieces being collected: a set (open addressing over an array). */
struct synth_vocab {
	char **piece;
	uint32_t *len;
	uint32_t n, cap;
	uint32_t *slots, mask;
};

static uint32_t
vocab_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;    /* FNV-1a 32 */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static int
vocab_has(const struct synth_vocab *v, const char *s, size_t n)
{
	uint32_t i;

	for (i = vocab_hash(s, n) & v->mask; v->slots[i] != 0;
	    i = (i + 1) & v->mask) {
		uint32_t k = v->slots[i] - 1;

		if (v->len[k] == n && memcmp(v->piece[k], s, n) == 0)
			return 1;
	}
	return 0;
}

/* Adds (s, n) unless present or full. */
static void
vocab_add(struct synth_vocab *v, const char *s, size_t n)
{
	uint32_t i;

	if (v->n == v->cap || vocab_has(v, s, n))
		return;
	for (i = vocab_hash(s, n) & v->mask; v->slots[i] != 0;
	    i = (i + 1) & v->mask)
		;
	v->slots[i] = v->n + 1;
	v->piece[v->n] = xstrndup(s, n);
	v->len[v->n] = (uint32_t)n;
	v->n++;
}

/* Whether piece k is a space or letters after an optional space: the
 * pieces grown one letter at a time. */
static int
growable(const struct synth_vocab *v, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < v->len[k]; i++) {
		char c = v->piece[k][i];

		if (!(c >= 'a' && c <= 'z') && !(c == ' ' && i == 0))
			return 0;
	}
	return 1;
}

static void
synth_vocab_build(struct synth_vocab *v, uint32_t size)
{
	char tmp[64];
	uint32_t i, k, from, to;
	size_t n;

	v->cap = size;
	v->piece = xcalloc(size, sizeof(*v->piece));
	v->len = xcalloc(size, sizeof(*v->len));
	for (k = 1024; k < 2 * size; k *= 2)
		;
	v->slots = xcalloc(k, sizeof(*v->slots));
	v->mask = k - 1;

	vocab_add(v, "<unk>", 5);
	vocab_add(v, "<s>", 3);
	vocab_add(v, "</s>", 4);
	for (i = 0; i < 256; i++) {
		snprintf(tmp, sizeof(tmp), "<0x%02X>", i);
		vocab_add(v, tmp, 6);
	}
	for (i = ' '; i <= '~'; i++) {
		tmp[0] = (char)i;
		vocab_add(v, tmp, 1);
	}
	/* the words' prefixes of two bytes and more, shortest first */
	for (i = 0; i < sizeof(synth_words) / sizeof(synth_words[0]); i++) {
		n = strlen(synth_words[i]);
		for (k = 2; k <= n; k++)
			if (k == n || ((unsigned char)synth_words[i][k] &
			    0xC0) != 0x80)  /* whole UTF-8 characters */
				vocab_add(v, synth_words[i], k);
	}
	/* then grow letter strings, level by level: each new piece is a
	 * piece already present plus a letter, so BPE can reach it */
	from = 0;
	while (v->n < v->cap) {
		to = v->n;
		for (k = from; k < to && v->n < v->cap; k++) {
			if (!growable(v, k) || v->len[k] + 1 >= sizeof(tmp))
				continue;
			memcpy(tmp, v->piece[k], v->len[k]);
			for (i = 'a'; i <= 'z' && v->n < v->cap; i++) {
				tmp[v->len[k]] = (char)i;
				vocab_add(v, tmp, v->len[k] + 1);
			}
		}
		if (v->n == to)
			break;          /* cannot happen below 2^20 pieces */
		from = to;
	}
}

static void
synth_vocab_free(struct synth_vocab *v)
{
	uint32_t i;

	for (i = 0; i < v->n; i++)
		free(v->piece[i]);
	free(v->piece);
	free(v->len);
	free(v->slots);
}

enum ts_err
model_synth_write_tokenizer(const struct model_synth *s, const char *path,
    char *err, size_t errlen)
{
	struct synth_vocab v;
	struct model_config c;
	enum ts_err rc;
	int32_t maxlen = 0;
	FILE *f;
	uint32_t i;
	int saved = 0;

	rc = synth_check(s, &c, err, errlen);
	if (rc != TS_OK)
		return rc;
	memset(&v, 0, sizeof(v));
	synth_vocab_build(&v, c.vocab_size);
	if (v.n != c.vocab_size) {
		snprintf(err, errlen, "cannot make %u distinct pieces",
		    c.vocab_size);
		synth_vocab_free(&v);
		return TS_EFORMAT;
	}
	for (i = 0; i < v.n; i++)
		if ((int32_t)v.len[i] > maxlen)
			maxlen = (int32_t)v.len[i];
	f = fopen(path, "wb");
	if (f == NULL) {
		saved = errno;
		snprintf(err, errlen, "%s: cannot create: %s", path,
		    strerror(saved));
		synth_vocab_free(&v);
		errno = saved;
		return TS_ESYS;
	}
	if (fwrite(&maxlen, sizeof(maxlen), 1, f) != 1)
		saved = errno ? errno : EIO;
	for (i = 0; i < v.n && saved == 0; i++) {
		/* specials and bytes score 0; then -1, -2, ... */
		float score = i < SYNTH_FIRST_PIECE ? 0.0f :
		    -(float)(i - SYNTH_FIRST_PIECE + 1);
		int32_t len = (int32_t)v.len[i];

		if (fwrite(&score, sizeof(score), 1, f) != 1 ||
		    fwrite(&len, sizeof(len), 1, f) != 1 ||
		    fwrite(v.piece[i], 1, v.len[i], f) != v.len[i])
			saved = errno ? errno : EIO;
	}
	if (fclose(f) != 0 && saved == 0)
		saved = errno ? errno : EIO;
	synth_vocab_free(&v);
	if (saved != 0) {
		snprintf(err, errlen, "%s: cannot write: %s", path,
		    strerror(saved));
		errno = saved;
		return TS_ESYS;
	}
	return TS_OK;
}
