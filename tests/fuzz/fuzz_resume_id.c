/*
 * fuzz_resume_id.c - resume_id_parse and resume_id_format (src/proto/resume.h)
 * on arbitrary bytes, as a Last-Event-ID header or last_event_id value.
 *
 * Properties, each checked with abort():
 *  - parse then format is the identity: on TS_OK, resume_id_format of the
 *    result reproduces exactly the input bytes (the format is canonical:
 *    no signs, no leading zeros, lowercase hex), so no two spellings are
 *    accepted for one id; the stream is never 0;
 *  - on TS_EINVAL, `why` is a non-empty static string;
 *  - resume_id_format refuses a buffer with no room for the NUL (returns
 *    0) and fits any id in RESUME_ID_MAX bytes;
 *  - format then parse is the identity too, for an id built from the
 *    input's first 24 bytes (stream, key, index), without an instance
 *    and with one made from the next bytes (1 to 8 of a-z, 0-9);
 *  - the same two properties for request ids (resume_request_id_parse /
 *    _format: "[<instance>-]<stream>").
 */
#include <string.h>

#include "fuzz.h"
#include "proto/resume.h"

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* format(id) parses back to id (stream 0 is refused, as it must be). */
static void
check_format_parse(const struct resume_id *id)
{
	char buf[RESUME_ID_MAX + 1];
	struct resume_id back;
	const char *why = NULL;
	size_t n = resume_id_format(buf, sizeof(buf), id);
	enum ts_err rc;

	FUZZ_CHECK(n > 0 && n <= RESUME_ID_MAX && buf[n] == '\0');
	rc = resume_id_parse(buf, n, &back, &why);
	if (id->stream == 0) {
		FUZZ_CHECK(rc == TS_EINVAL && why != NULL);
		return;
	}
	FUZZ_CHECK(rc == TS_OK);
	FUZZ_CHECK(back.stream == id->stream && back.key == id->key &&
	    back.index == id->index && back.instance == id->instance);
}

/* A valid instance name from bytes p[0..n): the first a letter. */
static uint64_t
instance_of(const uint8_t *p, size_t n)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char name[RESUME_INSTANCE_MAX];
	uint64_t v = 0;
	size_t i, len = n == 0 ? 0 : 1 + p[0] % RESUME_INSTANCE_MAX;

	if (len == 0 || len > n)
		return 0;
	name[0] = alnum[p[0] % 26];
	for (i = 1; i < len; i++)
		name[i] = alnum[p[i] % 36];
	FUZZ_CHECK(resume_instance_parse(name, len, &v) == TS_OK && v != 0);
	return v;
}

/* Request ids: parse then format, and format then parse. */
static void
check_request_id(const char *s, size_t size, uint64_t inst, uint64_t stream)
{
	char buf[RESUME_REQUEST_ID_MAX + 1];
	uint64_t i2, s2;
	const char *why = NULL;
	size_t n;

	if (resume_request_id_parse(s, size, &i2, &s2, &why) == TS_OK) {
		FUZZ_CHECK(s2 != 0);
		n = resume_request_id_format(buf, sizeof(buf), i2, s2);
		FUZZ_CHECK(n == size && memcmp(buf, s, size) == 0);
	} else {
		FUZZ_CHECK(why != NULL && why[0] != '\0');
	}
	if (stream == 0)
		return;
	n = resume_request_id_format(buf, sizeof(buf), inst, stream);
	FUZZ_CHECK(n > 0 && n <= RESUME_REQUEST_ID_MAX);
	FUZZ_CHECK(resume_request_id_parse(buf, n, &i2, &s2, &why) == TS_OK);
	FUZZ_CHECK(i2 == inst && s2 == stream);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct resume_id id;
	const char *why = NULL;
	char buf[RESUME_ID_MAX + 1];
	size_t n;

	memset(&id, 0xa5, sizeof(id));
	if (resume_id_parse(s, size, &id, &why) == TS_OK) {
		FUZZ_CHECK(size > 0 && size <= RESUME_ID_MAX);
		FUZZ_CHECK(id.stream != 0);
		n = resume_id_format(buf, sizeof(buf), &id);
		FUZZ_CHECK(n == size && memcmp(buf, s, size) == 0);
		/* No room for the NUL: refused. */
		FUZZ_CHECK(resume_id_format(buf, size, &id) == 0);
		FUZZ_CHECK(resume_id_format(buf, size + 1, &id) == size);
	} else {
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		FUZZ_CHECK(strlen(why) < 200);
	}

	if (size >= 24) {
		id.stream = le64(data);
		id.key = le64(data + 8);
		id.index = le64(data + 16);
		id.instance = 0;
		check_format_parse(&id);
		id.index = RESUME_INDEX_END;
		check_format_parse(&id);
		id.instance = instance_of(data + 24, size - 24);
		check_format_parse(&id);
		id.index = le64(data + 16);
		check_format_parse(&id);
	}
	check_request_id(s, size, size >= 24 ? id.instance : 0,
	    size >= 8 ? le64(data) : 0);
	return 0;
}
