/*
 * proto/fcgi_scan.c - how far a FastCGI 1.0 request has come (fcgi_scan.h).
 *
 * One pass over the bytes from the start, record by record, the way
 * libfcgi 2.4.2's FillBuffProc and ProcessHeader (fcgiapp.c) read them
 * while FCGX_Accept_r waits for a request:
 *   - before FCGI_BEGIN_REQUEST, a record of request id 0 is a management
 *     record (ProcessManagementRecord answers it) and a record of another
 *     id is skipped;
 *   - FCGI_BEGIN_REQUEST must have a request id other than 0 and 8 bytes
 *     (ProcessBeginRecord), and a role from 1 to 3 (FCGX_Accept_r's role
 *     switch); a second one, of any id, is answered FCGI_CANT_MPX_CONN
 *     and skipped;
 *   - then, for the request's id, only FCGI_PARAMS records until the empty
 *     one (any other type is FCGX_PROTOCOL_ERROR), and their content must
 *     end on a whole name-value pair (ReadParams: a length of 1 byte, or 4
 *     with the high bit set, for the name and then the value, then the
 *     bytes);
 *   - then FCGI_STDIN records until the empty one.
 * Every record's version must be 1 (FCGX_UNSUPPORTED_VERSION).
 */
#include "proto/fcgi_scan.h"

#include <stdint.h>

/* Record types (FastCGI 1.0 section 8). */
#define FCGI_SCAN_BEGIN_REQUEST 1u
#define FCGI_SCAN_PARAMS 4u
#define FCGI_SCAN_STDIN 5u

/* Where the name-value pair reader is (section 3.4). */
enum fcgi_scan_phase {
	FCGI_SCAN_NAME_LEN,          /* a pair's first byte, or the end */
	FCGI_SCAN_NAME_LEN4,         /* the 3 more bytes of a 4-byte length */
	FCGI_SCAN_VALUE_LEN,
	FCGI_SCAN_VALUE_LEN4,
	FCGI_SCAN_PAIR_BYTES         /* the name's and the value's bytes */
};

struct fcgi_scan_pairs {
	enum fcgi_scan_phase phase;
	unsigned len_left;           /* bytes of a 4-byte length to come */
	uint64_t bytes_left;         /* PAIR_BYTES: the name's and value's */
};

/* Moves the pair reader over n bytes of params content. */
static void
fcgi_scan_pairs(struct fcgi_scan_pairs *pr, const unsigned char *p, size_t n)
{
	uint32_t len;

	while (n > 0) {
		switch (pr->phase) {
		case FCGI_SCAN_NAME_LEN:
		case FCGI_SCAN_VALUE_LEN:
			len = *p++;
			n--;
			if (len & 0x80u) {
				/* the rest of a 4-byte length follows */
				pr->len_left = 3;
				pr->bytes_left += (uint64_t)(len & 0x7fu) << 24;
				pr->phase = pr->phase == FCGI_SCAN_NAME_LEN ?
				    FCGI_SCAN_NAME_LEN4 : FCGI_SCAN_VALUE_LEN4;
				break;
			}
			pr->bytes_left += len;
			pr->phase = pr->phase == FCGI_SCAN_NAME_LEN ?
			    FCGI_SCAN_VALUE_LEN : FCGI_SCAN_PAIR_BYTES;
			break;
		case FCGI_SCAN_NAME_LEN4:
		case FCGI_SCAN_VALUE_LEN4:
			pr->len_left--;
			pr->bytes_left += (uint64_t)*p++ << (8u * pr->len_left);
			n--;
			if (pr->len_left == 0)
				pr->phase = pr->phase == FCGI_SCAN_NAME_LEN4 ?
				    FCGI_SCAN_VALUE_LEN : FCGI_SCAN_PAIR_BYTES;
			break;
		case FCGI_SCAN_PAIR_BYTES:
			if (pr->bytes_left > n) {
				pr->bytes_left -= n;
				n = 0;
				break;
			}
			p += pr->bytes_left;
			n -= (size_t)pr->bytes_left;
			pr->bytes_left = 0;
			break;
		}
		if (pr->phase == FCGI_SCAN_PAIR_BYTES && pr->bytes_left == 0)
			pr->phase = FCGI_SCAN_NAME_LEN;
	}
	if (pr->phase == FCGI_SCAN_PAIR_BYTES && pr->bytes_left == 0)
		pr->phase = FCGI_SCAN_NAME_LEN;
}

static enum ts_err
fcgi_scan_refuse(struct fcgi_scan *s, const char *why)
{
	s->why = why;
	return TS_EINVAL;
}

enum ts_err
fcgi_scan(const unsigned char *p, size_t n, struct fcgi_scan *s)
{
	struct fcgi_scan_pairs pairs = { FCGI_SCAN_NAME_LEN, 0, 0 };
	unsigned id = 0;             /* the request's id: 0 before BEGIN */
	size_t off = 0;

	s->need = 0;
	s->head_end = 0;
	s->records = 0;
	s->body = 0;
	s->whole = 0;
	s->why = NULL;
	for (;;) {
		const unsigned char *h = p + off;
		unsigned type, rid, clen;
		size_t end;

		if (n - off < FCGI_SCAN_HEADER) {
			s->need = off + FCGI_SCAN_HEADER;
			return TS_OK;
		}
		if (h[0] != 1)
			return fcgi_scan_refuse(s, "a record version other "
			    "than 1");
		type = h[1];
		rid = (unsigned)h[2] << 8 | h[3];
		clen = (unsigned)h[4] << 8 | h[5];
		end = off + FCGI_SCAN_HEADER + clen + h[6];
		if (end > n) {
			s->need = end;
			return TS_OK;
		}
		s->records++;
		if (type == FCGI_SCAN_BEGIN_REQUEST) {
			unsigned role;

			if (rid == 0 || clen != 8)
				return fcgi_scan_refuse(s, "an "
				    "FCGI_BEGIN_REQUEST of request id 0 or "
				    "not 8 bytes long");
			role = (unsigned)h[8] << 8 | h[9];
			if (id == 0 && (role < 1 || role > 3))
				return fcgi_scan_refuse(s, "a role other than "
				    "1 to 3");
			if (id == 0)
				id = rid;
			/* else: a second request on the connection, which
			 * libfcgi answers FCGI_CANT_MPX_CONN and skips */
		} else if (rid == 0 || rid != id) {
			/* a management record, or another request's */
		} else if (s->head_end == 0) {
			if (type != FCGI_SCAN_PARAMS)
				return fcgi_scan_refuse(s, "a record other "
				    "than FCGI_PARAMS before the params end");
			if (clen == 0) {
				if (pairs.phase != FCGI_SCAN_NAME_LEN)
					return fcgi_scan_refuse(s, "params "
					    "that end inside a name-value "
					    "pair");
				s->head_end = end;
			} else {
				fcgi_scan_pairs(&pairs, h + FCGI_SCAN_HEADER,
				    clen);
			}
		} else if (type != FCGI_SCAN_STDIN || clen == 0) {
			s->whole = 1;
			return TS_OK;
		} else {
			s->body += clen;
		}
		off = end;
	}
}
