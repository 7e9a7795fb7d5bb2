/*
 * fuzz_release.c - the per-sequence detokenizer (src/text/release.h): stop
 * strings (text/stop.h) and UTF-8 holdback (text/utf8.h) over arbitrary
 * bytes cut at arbitrary points.
 *
 * Input: byte 0 & 7 is the number of stop strings (5..7 must be refused
 * with TS_ELIMIT); each is a length byte (0: TS_EINVAL, over 64:
 * TS_ELIMIT) and that many bytes (fewer if the input ends); the rest is
 * the generated text. A refused set of stop strings leaves a releaser
 * without any, which is then tested as such.
 *
 * The text is fed twice: in pseudo-random pieces of 0..64 bytes (drawn
 * from a hash of the input; now and then a 65-byte piece, which must be
 * refused with TS_ELIMIT and change nothing) and in 64-byte pieces.
 * Properties, each checked with abort():
 *  - release_init's result is the documented one;
 *  - every chunk is valid UTF-8, whatever the input;
 *  - the chunks and the finish chunk, concatenated, equal a reference: the
 *    text decoded by a direct transcription of Unicode's "maximal subpart"
 *    replacement (one U+FFFD per maximal invalid subsequence, or for an
 *    incomplete character at the end), cut before the stop string that
 *    ends first (the longest of those ending at the same byte);
 *  - holdback is minimal: after each feed without a match, the text not
 *    yet released is exactly the longest suffix of the complete characters
 *    so far that is a proper prefix of a stop string;
 *  - after a match, later feeds release nothing and report the same stop.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/release.h"

/* A growable byte log. */
struct log {
	char *p;
	size_t len, cap;
};

static void
log_put(struct log *l, const void *s, size_t n)
{
	if (l->len + n > l->cap) {
		l->cap = (l->len + n) * 2 + 64;
		l->p = realloc(l->p, l->cap);
		FUZZ_CHECK(l->p != NULL);
	}
	if (n > 0)
		memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* The stop strings read from the input. */
struct stops {
	size_t n;                       /* as read: may be over 4 */
	const char *s[8];
	size_t len[8];
	enum ts_err want;               /* what release_init must say */
};

/* Unicode table 3-7: the range of the second byte after lead c, and the
 * number of continuation bytes; 0 for a byte that starts no character. */
static size_t
ref_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 1;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0;
		if (c == 0xed)
			*hi = 0x9f;
		return 2;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;
		if (c == 0xf4)
			*hi = 0x8f;
		return 3;
	}
	return 0;
}

/*
 * Decodes all of (in, n) with maximal-subpart replacement into out, and
 * sets upto[i] (i = 0..n) to the output length once the first i input
 * bytes are in (an online decoder's output at that point: a replacement
 * is due when the byte that breaks a sequence arrives, a character when
 * its last byte does). The final U+FFFD for an incomplete character at
 * the end is in out but in no upto[].
 */
static void
ref_decode(const unsigned char *in, size_t n, struct log *out, size_t *upto)
{
	size_t i = 0, k, need, j;
	unsigned char lo, hi, c;

	upto[0] = 0;
	while (i < n) {
		if (in[i] < 0x80) {
			log_put(out, in + i, 1);
			upto[++i] = out->len;
			continue;
		}
		need = ref_lead(in[i], &lo, &hi);
		if (need == 0) {
			log_put(out, "\xef\xbf\xbd", 3);
			upto[++i] = out->len;
			continue;
		}
		/* k: the continuation bytes that fit, up to need */
		for (k = 0; k < need && i + 1 + k < n; k++) {
			c = in[i + 1 + k];
			if (k == 0 ? (c < lo || c > hi) : (c < 0x80 ||
			    c > 0xbf))
				break;
		}
		/* Nothing comes out while they arrive (nor when the byte
		 * after them arrives: it is counted with its own output). */
		for (j = i + 1; j <= i + 1 + k && j <= n; j++)
			upto[j] = out->len;
		if (k == need) {
			log_put(out, in + i, need + 1);
			i += need + 1;
			upto[i] = out->len;
		} else if (i + 1 + k == n) {
			log_put(out, "\xef\xbf\xbd", 3);    /* at the end */
			i = n;
		} else {
			/* in[i + 1 + k] breaks the sequence: U+FFFD when it
			 * arrives, then that byte afresh. */
			log_put(out, "\xef\xbf\xbd", 3);
			i += 1 + k;
		}
	}
}

/* Where (r, n) ends under the stops: the length before the first match. */
static size_t
ref_cut(const char *r, size_t n, const struct stops *st, size_t nstops)
{
	size_t e, i, best;

	for (e = 1; e <= n; e++) {
		best = 0;
		for (i = 0; i < nstops; i++)
			if (st->len[i] <= e && st->len[i] > best &&
			    memcmp(r + e - st->len[i], st->s[i],
			    st->len[i]) == 0)
				best = st->len[i];
		if (best > 0)
			return e - best;
	}
	return n;
}

/* The longest suffix of (r, n) that is a proper prefix of a stop. */
static size_t
ref_live(const char *r, size_t n, const struct stops *st, size_t nstops)
{
	size_t i, k, best = 0;

	for (i = 0; i < nstops; i++)
		for (k = st->len[i] - 1; k > best; k--)
			if (k <= n && memcmp(r + n - k, st->s[i], k) == 0) {
				best = k;
				break;
			}
	return best;
}

/*
 * Feeds the text through a fresh releaser in pieces (seed 0: 64 bytes
 * each) and checks every property against the reference.
 */
static void
run(const struct stops *st, const char *text, size_t len, uint64_t seed,
    const struct log *ref, const size_t *upto, size_t cut)
{
	struct release r;
	struct release_chunk c;
	struct log out = { NULL, 0, 0 };
	size_t pos = 0, n, nstops, live;
	enum ts_err rc;
	int stop = 0, s;

	rc = release_init(&r, st->s, st->len, st->n);
	FUZZ_CHECK(rc == st->want);
	nstops = rc == TS_OK ? st->n : 0;
	while (pos < len) {
		uint64_t x = seed ? fuzz_next(&seed) : 64;

		n = seed ? (size_t)(x >> 8) % 65 : 64;
		if (seed && (x & 0x1f) == 0 && len - pos > 64) {
			rc = release_bytes(&r, text + pos, 65, &c, &s);
			FUZZ_CHECK(rc == TS_ELIMIT && c.len == 0);
			FUZZ_CHECK(s == stop);
		}
		if (n > len - pos)
			n = len - pos;
		rc = release_bytes(&r, text + pos, n, &c, &s);
		FUZZ_CHECK(rc == TS_OK);
		FUZZ_CHECK(utf8_valid(c.p, c.len));
		if (stop != 0)
			FUZZ_CHECK(c.len == 0 && s == stop);
		log_put(&out, c.p, c.len);
		pos += n;
		stop = s;
		if (stop == 0) {
			/* Minimal holdback over the complete characters. */
			FUZZ_CHECK(upto[pos] >= out.len);
			live = ref_live(ref->p, upto[pos], st, nstops);
			FUZZ_CHECK(out.len + live == upto[pos]);
		} else {
			FUZZ_CHECK(stop >= 1 && (size_t)stop <= nstops);
		}
	}
	release_finish(&r, &c);
	FUZZ_CHECK(utf8_valid(c.p, c.len));
	log_put(&out, c.p, c.len);
	FUZZ_CHECK(release_bytes(&r, "x", 1, &c, &s) == TS_EINVAL);
	FUZZ_CHECK(c.len == 0);
	FUZZ_CHECK(out.len == cut);
	FUZZ_CHECK(cut == 0 || memcmp(out.p, ref->p, cut) == 0);
	FUZZ_CHECK(utf8_valid(out.p, out.len));
	free(out.p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stops st;
	struct log ref = { NULL, 0, 0 };
	size_t pos = 1, i, l, *upto, cut;
	uint64_t h = fuzz_hash(FUZZ_HASH_INIT, data, size);
	const char *text;

	memset(&st, 0, sizeof(st));
	if (size == 0)
		return 0;
	st.n = data[0] & 7;
	st.want = st.n > STOP_MAX ? TS_ELIMIT : TS_OK;
	for (i = 0; i < st.n; i++) {
		l = pos < size ? data[pos++] : 0;
		if (l > size - pos)
			l = size - pos;
		st.s[i] = (const char *)data + pos;
		st.len[i] = l;
		pos += l;
		/* stop_init checks the count, then each string in
		 * order; release_init then UTF-8. */
		if (st.want == TS_OK) {
			if (l == 0)
				st.want = TS_EINVAL;
			else if (l > STOP_MAX_BYTES)
				st.want = TS_ELIMIT;
		}
	}
	if (st.want == TS_OK)
		for (i = 0; i < st.n; i++)
			if (!utf8_valid(st.s[i], st.len[i]))
				st.want = TS_EINVAL;
	text = (const char *)data + pos;
	upto = malloc((size - pos + 1) * sizeof(*upto));
	FUZZ_CHECK(upto != NULL);
	ref_decode((const unsigned char *)text, size - pos, &ref, upto);
	cut = ref_cut(ref.p, ref.len, &st, st.want == TS_OK ? st.n : 0);
	run(&st, text, size - pos, h | 1, &ref, upto, cut);
	run(&st, text, size - pos, 0, &ref, upto, cut);
	free(upto);
	free(ref.p);
	return 0;
}
