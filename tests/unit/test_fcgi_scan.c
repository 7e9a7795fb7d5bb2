/*
 * test_fcgi_scan.c - fcgi_scan (proto/fcgi_scan.h): a FastCGI request as
 * lighttpd sends it is whole only once its last byte is there, and every
 * shorter prefix asks for more (never past the request's end); what
 * libfcgi refuses is refused with a reason; management records, other
 * requests' records and padding are stepped over.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "proto/fcgi_scan.h"

#define BEGIN 1
#define ABORT 2
#define PARAMS 4
#define STDIN 5
#define GET_VALUES 9

struct msg {
	unsigned char b[4096];
	size_t n;
};

/* Appends a record: version, type, request id, content, padding. */
static void
rec_v(struct msg *m, unsigned version, unsigned type, unsigned id,
    const void *content, size_t clen, unsigned pad)
{
	unsigned char *h = m->b + m->n;

	assert_true(m->n + 8 + clen + pad <= sizeof(m->b));
	h[0] = (unsigned char)version;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(clen >> 8);
	h[5] = (unsigned char)clen;
	h[6] = (unsigned char)pad;
	h[7] = 0;
	if (clen > 0)
		memcpy(h + 8, content, clen);
	memset(h + 8 + clen, 0xee, pad);
	m->n += 8 + clen + pad;
}

static void
rec(struct msg *m, unsigned type, unsigned id, const void *content,
    size_t clen)
{
	rec_v(m, 1, type, id, content, clen, 0);
}

static void
begin(struct msg *m, unsigned id, unsigned role)
{
	unsigned char b[8] = { (unsigned char)(role >> 8), (unsigned char)role,
	    0, 0, 0, 0, 0, 0 };

	rec(m, BEGIN, id, b, sizeof(b));
}

/* Appends a name-value pair (section 3.4) to buf at *n; long4 forces the
 * 4-byte form of the value's length. */
static void
pair(unsigned char *buf, size_t *n, const char *name, const char *value,
    int long4)
{
	size_t nl = strlen(name), vl = strlen(value);

	buf[(*n)++] = (unsigned char)nl;
	if (long4 || vl > 127) {
		buf[(*n)++] = (unsigned char)(0x80u | (vl >> 24));
		buf[(*n)++] = (unsigned char)(vl >> 16);
		buf[(*n)++] = (unsigned char)(vl >> 8);
		buf[(*n)++] = (unsigned char)vl;
	} else {
		buf[(*n)++] = (unsigned char)vl;
	}
	memcpy(buf + *n, name, nl);
	*n += nl;
	memcpy(buf + *n, value, vl);
	*n += vl;
}

/* lighttpd's GET: begin, one params record, the empty one, empty stdin. */
static size_t
get_request(struct msg *m)
{
	unsigned char params[1024];
	size_t n = 0, head;

	begin(m, 1, 1);
	pair(params, &n, "REQUEST_METHOD", "GET", 0);
	pair(params, &n, "REQUEST_URI", "/health", 1);
	pair(params, &n, "EMPTY", "", 0);
	rec_v(m, 1, PARAMS, 1, params, n, 3);
	rec(m, PARAMS, 1, NULL, 0);
	head = m->n;
	rec(m, STDIN, 1, NULL, 0);
	return head;
}

static void
test_whole_get(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	size_t head = get_request(&m);

	(void)state;
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_true(s.whole);
	assert_int_equal(s.head_end, head);
	assert_int_equal(s.records, 4);
	assert_int_equal(s.body, 0);     /* the gate's light requests */
	assert_null(s.why);
}

/* Every prefix: not whole, no refusal, and a need past the prefix but
 * never past the request. The head is whole from its last byte on. */
static void
test_prefixes(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	size_t head = get_request(&m), k;

	(void)state;
	for (k = 0; k < m.n; k++) {
		assert_int_equal(fcgi_scan(m.b, k, &s), TS_OK);
		assert_false(s.whole);
		assert_true(s.need > k);
		assert_true(s.need <= m.n);
		assert_int_equal(s.head_end, k >= head ? head : 0);
	}
}

/* A POST's body in two records: whole only at the empty one. */
static void
test_post_body(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	unsigned char params[64];
	size_t n = 0, before;

	(void)state;
	begin(&m, 7, 1);
	pair(params, &n, "REQUEST_METHOD", "POST", 0);
	rec(&m, PARAMS, 7, params, n);
	rec(&m, PARAMS, 7, NULL, 0);
	rec(&m, STDIN, 7, "{\"prompt\":", 10);
	rec(&m, STDIN, 7, "\"hi\"}", 5);
	before = m.n;
	rec(&m, STDIN, 7, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, before, &s), TS_OK);
	assert_false(s.whole);
	assert_true(s.head_end > 0);
	assert_int_equal(s.need, before + 8);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_true(s.whole);
	assert_int_equal(s.records, 6);
	assert_int_equal(s.body, 15);    /* both records' bytes */
}

/* A pair split across two params records is one pair. */
static void
test_pair_across_records(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	unsigned char params[64];
	size_t n = 0;

	(void)state;
	begin(&m, 1, 1);
	pair(params, &n, "QUERY_STRING", "prompt=hi", 1);
	rec(&m, PARAMS, 1, params, 3);           /* inside the 4-byte length */
	rec(&m, PARAMS, 1, params + 3, n - 3);
	rec(&m, PARAMS, 1, NULL, 0);
	rec(&m, STDIN, 1, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_true(s.whole);
}

/* Management records, another request's records and padding are stepped
 * over, before the begin and between the params. */
static void
test_skipped_records(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	unsigned char params[64];
	size_t n = 0;

	(void)state;
	rec_v(&m, 1, GET_VALUES, 0, "\x0e\x00" "FCGI_MAX_CONNS", 16, 0);
	rec(&m, STDIN, 9, "other", 5);
	begin(&m, 2, 1);
	pair(params, &n, "A", "b", 0);
	rec_v(&m, 1, PARAMS, 2, params, n, 5);
	rec(&m, PARAMS, 3, "\x01", 1);           /* another id's: skipped */
	begin(&m, 4, 1);                         /* multiplexing: skipped */
	rec(&m, PARAMS, 2, NULL, 0);
	rec(&m, STDIN, 3, NULL, 0);              /* another id's end */
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_false(s.whole);
	assert_true(s.head_end > 0);
	rec(&m, STDIN, 2, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_true(s.whole);
}

/* After the head, a record of the request that is not FCGI_STDIN makes
 * libfcgi's next read fail at once: as good as whole. */
static void
test_other_type_after_head(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;

	(void)state;
	begin(&m, 1, 1);
	rec(&m, PARAMS, 1, NULL, 0);
	rec(&m, ABORT, 1, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_true(s.whole);
}

/* What libfcgi refuses, each with its reason. */
static void
test_refused(void **state)
{
	struct msg m;
	struct fcgi_scan s;
	unsigned char cut[4] = { 5, 0, 'A', 'B' };   /* name of 5: 2 came */
	unsigned char seven[7] = { 0 };

	(void)state;
	m.n = 0;
	rec_v(&m, 2, BEGIN, 1, "\0\1\0\0\0\0\0\0", 8, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
	assert_non_null(strstr(s.why, "version"));

	m.n = 0;
	begin(&m, 0, 1);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
	assert_non_null(strstr(s.why, "request id 0"));

	m.n = 0;
	rec(&m, BEGIN, 1, seven, sizeof(seven));
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);

	m.n = 0;
	begin(&m, 1, 9);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
	assert_non_null(strstr(s.why, "role"));

	m.n = 0;
	begin(&m, 1, 1);
	rec(&m, STDIN, 1, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
	assert_non_null(strstr(s.why, "FCGI_PARAMS"));

	m.n = 0;
	begin(&m, 1, 1);
	rec(&m, PARAMS, 1, cut, sizeof(cut));
	rec(&m, PARAMS, 1, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
	assert_non_null(strstr(s.why, "pair"));

	/* a bad version after a good begin, in the middle of the params */
	m.n = 0;
	begin(&m, 1, 1);
	rec_v(&m, 3, PARAMS, 1, NULL, 0, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
}

/* A huge 4-byte length is only a pair that has not ended: more is
 * needed, nothing is refused until the params' end says so. */
static void
test_huge_length(void **state)
{
	struct msg m = { .n = 0 };
	struct fcgi_scan s;
	unsigned char big[6] = { 0xff, 0xff, 0xff, 0xff, 1, 'x' };

	(void)state;
	begin(&m, 1, 1);
	rec(&m, PARAMS, 1, big, sizeof(big));
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_OK);
	assert_int_equal(s.head_end, 0);
	assert_int_equal(s.need, m.n + 8);
	rec(&m, PARAMS, 1, NULL, 0);
	assert_int_equal(fcgi_scan(m.b, m.n, &s), TS_EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_get),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_post_body),
		cmocka_unit_test(test_pair_across_records),
		cmocka_unit_test(test_skipped_records),
		cmocka_unit_test(test_other_type_after_head),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_huge_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
