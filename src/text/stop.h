/*
 * text/stop.h - stop strings: an incremental matcher over the generated
 * text, fed as it comes (a token's text at a time, or any other split).
 * No I/O, no allocation.
 *
 * Semantics (used by /v1/... "stop"): the text ends just before the first
 * occurrence of any stop string, "first" meaning the one whose last byte
 * comes first in the text; of several ending at the same byte, the longest
 * (it starts first). So with stops "world" and "lo w", "hello world" ends
 * as "hel". The result does not depend on how the text was split into
 * feeds. Matching is on bytes: no case folding, no normalisation.
 *
 * Holdback: a fed byte is held back only while it may still be part of a
 * match, i.e. the matcher keeps the longest suffix of the unreleased text
 * that is a proper prefix of some stop string (at most
 * STOP_MAX_BYTES - 1 bytes) and releases the rest. With no stop
 * strings every byte is released at once. The bytes themselves stay the
 * caller's: the matcher only counts (text/release.h keeps the text).
 *
 * Algorithm: one Knuth-Morris-Pratt automaton per stop string (the state
 * of string i is the length of the longest suffix of the text that is a
 * prefix of it), so a byte costs O(STOP_MAX) amortised steps.
 */
#ifndef TS_TEXT_STOP_H
#define TS_TEXT_STOP_H

#include <stddef.h>
#include <stdint.h>

#include "common/ts.h"

/* Stop strings per request (OpenAI allows up to 4). */
#define STOP_MAX 4
/* Bytes per stop string: 1..STOP_MAX_BYTES. */
#define STOP_MAX_BYTES 64

/* The fields are text/stop.c's; the caller provides the storage. */
struct stop_matcher {
	size_t n;                       /* stop strings */
	size_t held;                    /* bytes fed, not yet released */
	int matched;                    /* 0, or 1 + the index that matched */
	uint8_t len[STOP_MAX];
	uint8_t state[STOP_MAX];    /* KMP state: bytes matched */
	unsigned char str[STOP_MAX][STOP_MAX_BYTES];
	uint8_t fail[STOP_MAX][STOP_MAX_BYTES];  /* KMP failure */
};

/*
 * Sets up a matcher for the n stop strings (strs[i], lens[i]) (copied;
 * any bytes; duplicates allowed). n may be 0 (then strs and lens may be
 * NULL). Returns TS_ELIMIT if n > STOP_MAX or a string is longer than
 * STOP_MAX_BYTES, TS_EINVAL if one is empty or NULL; the matcher is
 * then one without stop strings.
 */
enum ts_err stop_init(struct stop_matcher *st, const char *const strs[],
    const size_t lens[], size_t n);

/*
 * Feeds the next len bytes of the text (p may be NULL if len is 0).
 * Returns how many of the unreleased bytes, oldest first, may be released
 * now, and sets *matched (may be NULL) to 0 or to 1 + the index of the
 * stop string that matched. On a match the bytes released are those
 * before the match; the rest of the text is never released, and later
 * feeds return 0 (and the same *matched).
 */
size_t stop_feed(struct stop_matcher *st, const char *p, size_t len,
    int *matched);

/*
 * The end of the text without a match: returns the number of bytes still
 * held, which may all be released now (0 after a match), and forgets
 * them. Feeding may go on afterwards as if the held bytes were never
 * there.
 */
size_t stop_flush(struct stop_matcher *st);

#endif /* TS_TEXT_STOP_H */
