/*
 * text/utf8.h - UTF-8 holdback: turns a byte stream cut anywhere (byte
 * tokens can split a character) into chunks of valid UTF-8. No I/O, no
 * allocation.
 *
 * Each feed writes the complete characters it can; the bytes of a
 * character still incomplete at the end of the feed are held (at most 3)
 * until the bytes that complete it arrive. Invalid bytes - the generator
 * never produces them, but a real model can - become U+FFFD (EF BF BD) by
 * the WHATWG Encoding Standard's UTF-8 decoder (section 9.1.1; Unicode's
 * "maximal subpart" practice, as Python's errors="replace" and browsers):
 * one U+FFFD per maximal invalid subsequence, and a byte that breaks off a
 * sequence starts afresh. A character still incomplete at the end of the
 * text is one U+FFFD (utf8_repair_finish). The output of any split of the
 * input is the same, and valid UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF); a valid input comes out unchanged.
 */
#ifndef TS_TEXT_UTF8_H
#define TS_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Most bytes utf8_repair_feed writes for len input bytes (every invalid byte
 * can become 3, and the sequence held from before one U+FFFD). */
#define UTF8_OUT_MAX(len) (3 * (size_t)(len) + 3)

/* The state between feeds; the caller provides the storage. */
struct utf8_repair {
	unsigned char seq[4];   /* bytes of the incomplete character */
	uint8_t seen;           /* bytes in seq */
	uint8_t need;           /* continuation bytes still to come */
	unsigned char lo, hi;   /* range of the next continuation byte */
};

/* An empty holdback (nothing held). Cannot fail. */
void utf8_repair_init(struct utf8_repair *u);

/*
 * Feeds (p, len) (p may be NULL if len is 0) and writes the valid UTF-8
 * that is complete now to out, which has room for UTF8_OUT_MAX(len)
 * bytes. Returns the number of bytes written.
 */
size_t utf8_repair_feed(struct utf8_repair *u, const char *p, size_t len,
    char *out);

/*
 * The end of the input: writes U+FFFD (3 bytes, room for which `out`
 * must have) if a character was left incomplete, and returns the number
 * of bytes written (0 or 3). The holdback is then empty again.
 */
size_t utf8_repair_finish(struct utf8_repair *u, char *out);

/* Whether (p, len) is valid UTF-8 (RFC 3629). */
int utf8_valid(const char *p, size_t len);

#endif /* TS_TEXT_UTF8_H */
