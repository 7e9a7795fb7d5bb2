/*
 * text/stop.c - the incremental stop-string matcher of text/stop.h: one
 * Knuth-Morris-Pratt automaton per stop string (Knuth, Morris and Pratt,
 * "Fast pattern matching in strings", 1977), run side by side.
 */
#include "text/stop.h"

#include <string.h>

/*
 * The KMP failure function of s (len >= 1): fail[q], for a state q in
 * 1..len-1 (q bytes of s matched), is the length of the longest proper
 * prefix of s[0..q) that is also a suffix of it. fail[0] is 0.
 */
static void
stop_fail(const unsigned char *s, size_t len, uint8_t *fail)
{
	size_t q, k = 0;

	fail[0] = 0;
	if (len > 1)
		fail[1] = 0;
	for (q = 1; q + 1 < len; q++) {
		/* k: border of s[0..q); extend it by s[q] */
		while (k > 0 && s[q] != s[k])
			k = fail[k];
		if (s[q] == s[k])
			k++;
		fail[q + 1] = (uint8_t)k;
	}
}

enum ts_err
stop_init(struct stop_matcher *st, const char *const strs[],
    const size_t lens[], size_t n)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	if (n > STOP_MAX)
		return TS_ELIMIT;
	for (i = 0; i < n; i++) {
		if (strs[i] == NULL || lens[i] == 0)
			return TS_EINVAL;
		if (lens[i] > STOP_MAX_BYTES)
			return TS_ELIMIT;
	}
	for (i = 0; i < n; i++) {
		memcpy(st->str[i], strs[i], lens[i]);
		st->len[i] = (uint8_t)lens[i];
		stop_fail(st->str[i], lens[i], st->fail[i]);
	}
	st->n = n;
	return TS_OK;
}

/*
 * Byte by byte: advance every automaton; if one reaches the end of its
 * string, the text stops before that occurrence (the longest of those
 * ending here); otherwise all but the longest live prefix (the largest
 * state) may go. Every state is below its string's length between bytes,
 * as the first full match ends the matching.
 */
size_t
stop_feed(struct stop_matcher *st, const char *p, size_t len, int *matched)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t i, j, q, h, released = 0;
	int best;

	for (j = 0; j < len && st->matched == 0; j++) {
		st->held++;
		best = -1;
		h = 0;
		for (i = 0; i < st->n; i++) {
			q = st->state[i];
			while (q > 0 && st->str[i][q] != b[j])
				q = st->fail[i][q];
			if (st->str[i][q] == b[j])
				q++;
			if (q == st->len[i]) {
				if (best < 0 || st->len[i] > st->len[best])
					best = (int)i;
				q = 0;
			} else if (q > h) {
				h = q;
			}
			st->state[i] = (uint8_t)q;
		}
		if (best >= 0) {
			/* The match is the last len[best] bytes held. */
			released += st->held - st->len[best];
			st->held = 0;
			st->matched = best + 1;
			break;
		}
		released += st->held - h;
		st->held = h;
	}
	if (matched != NULL)
		*matched = st->matched;
	return released;
}

size_t
stop_flush(struct stop_matcher *st)
{
	size_t held = st->held;

	st->held = 0;
	memset(st->state, 0, sizeof(st->state));
	return held;
}
