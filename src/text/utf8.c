/*
 * text/utf8.c - the UTF-8 holdback of text/utf8.h: the WHATWG Encoding
 * Standard's UTF-8 decoder (section 9.1.1, "UTF-8 decoder"), keeping the
 * bytes of a character instead of its code point.
 */
#include "text/utf8.h"

#include <string.h>

static const char utf8_fffd[3] = { '\xef', '\xbf', '\xbd' };

void
utf8_repair_init(struct utf8_repair *u)
{
	memset(u, 0, sizeof(*u));
	u->lo = 0x80;
	u->hi = 0xbf;
}

/* Drops the incomplete character (the decoder's reset). */
static void
utf8_repair_reset(struct utf8_repair *u)
{
	u->seen = 0;
	u->need = 0;
	u->lo = 0x80;
	u->hi = 0xbf;
}

/*
 * The decoder's steps for one byte, state by state: with nothing pending
 * (need 0) an ASCII byte is written, a lead byte starts a character with
 * its continuation range (E0: A0..BF, no overlong; ED: 80..9F, no
 * surrogate; F0: 90..BF; F4: 80..8F, nothing above U+10FFFF), anything
 * else is U+FFFD; pending, a byte in range extends the character (written
 * once complete), a byte out of range makes the pending bytes one U+FFFD
 * and is then looked at afresh ("restore byte to ioQueue").
 */
size_t
utf8_repair_feed(struct utf8_repair *u, const char *p, size_t len, char *out)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t i, n = 0;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = b[i];
		if (u->need != 0) {
			if (c >= u->lo && c <= u->hi) {
				u->lo = 0x80;
				u->hi = 0xbf;
				u->seq[u->seen++] = c;
				if (--u->need == 0) {
					memcpy(out + n, u->seq, u->seen);
					n += u->seen;
					u->seen = 0;
				}
				continue;
			}
			memcpy(out + n, utf8_fffd, 3);
			n += 3;
			utf8_repair_reset(u);
			/* and c afresh, below */
		}
		if (c < 0x80) {
			out[n++] = (char)c;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			u->need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			if (c == 0xe0)
				u->lo = 0xa0;
			else if (c == 0xed)
				u->hi = 0x9f;
			u->need = 2;
		} else if (c >= 0xf0 && c <= 0xf4) {
			if (c == 0xf0)
				u->lo = 0x90;
			else if (c == 0xf4)
				u->hi = 0x8f;
			u->need = 3;
		} else {
			memcpy(out + n, utf8_fffd, 3);
			n += 3;
			continue;
		}
		u->seq[0] = c;
		u->seen = 1;
	}
	return n;
}

size_t
utf8_repair_finish(struct utf8_repair *u, char *out)
{
	if (u->need == 0)
		return 0;
	utf8_repair_reset(u);
	memcpy(out, utf8_fffd, 3);
	return 3;
}

int
utf8_valid(const char *p, size_t len)
{
	struct utf8_repair u;
	const unsigned char *b = (const unsigned char *)p;
	size_t i;
	unsigned char c;

	/* The decoder again, failing where it would write U+FFFD. */
	utf8_repair_init(&u);
	for (i = 0; i < len; i++) {
		c = b[i];
		if (u.need != 0) {
			if (c < u.lo || c > u.hi)
				return 0;
			u.lo = 0x80;
			u.hi = 0xbf;
			u.need--;
			continue;
		}
		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf) {
			u.need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			u.lo = c == 0xe0 ? 0xa0 : 0x80;
			u.hi = c == 0xed ? 0x9f : 0xbf;
			u.need = 2;
		} else if (c >= 0xf0 && c <= 0xf4) {
			u.lo = c == 0xf0 ? 0x90 : 0x80;
			u.hi = c == 0xf4 ? 0x8f : 0xbf;
			u.need = 3;
		} else {
			return 0;
		}
	}
	return u.need == 0;
}
