/*
 * proto/resume.c - SSE event ids for resumable streams. See resume.h.
 */
#include "proto/resume.h"

#include "common/rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static uint64_t
fnv1a_u64(uint64_t h, uint64_t v)
{
	unsigned char le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	return rng_fnv1a(h, le, sizeof(le));
}

uint64_t
resume_key(const char *prompt, size_t len, uint32_t max_tokens,
    int32_t error_after)
{
	uint64_t h = rng_fnv1a(RNG_FNV1A_INIT, "tokstream-resume-v1", 19);

	h = fnv1a_u64(h, (uint64_t)len);
	h = rng_fnv1a(h, prompt, len);
	h = fnv1a_u64(h, max_tokens);
	h = fnv1a_u64(h, (uint64_t)(int64_t)error_after);
	return h;
}

/* Writes v in decimal at p (no NUL); returns the digits written (1..20). */
static size_t
put_dec(char *p, uint64_t v)
{
	char d[20];
	size_t n = 0, i;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		p[i] = d[n - 1 - i];
	return n;
}

enum ts_err
resume_instance_parse(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > RESUME_INSTANCE_MAX || s[0] < 'a' || s[0] > 'z')
		return TS_EINVAL;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9')))
			return TS_EINVAL;
		v |= (uint64_t)(unsigned char)s[i] << (8 * i);
	}
	*out = v;
	return TS_OK;
}

size_t
resume_instance_name(uint64_t inst, char *buf)
{
	size_t n = 0;

	while (n < RESUME_INSTANCE_MAX && (inst >> (8 * n) & 0xff) != 0) {
		buf[n] = (char)(inst >> (8 * n) & 0xff);
		n++;
	}
	buf[n] = '\0';
	return n;
}

/* Writes "<instance>-" at p (nothing for none); returns the bytes. */
static size_t
put_instance(char *p, uint64_t inst)
{
	char name[RESUME_INSTANCE_MAX + 1];
	size_t n = resume_instance_name(inst, name);

	if (n == 0)
		return 0;
	memcpy(p, name, n);
	p[n] = '-';
	return n + 1;
}

size_t
resume_request_id_format(char *buf, size_t cap, uint64_t instance,
    uint64_t stream)
{
	char tmp[RESUME_REQUEST_ID_MAX + 1];
	size_t n = put_instance(tmp, instance);

	n += put_dec(tmp + n, stream);
	if (n >= cap)
		return 0;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return n;
}

/* Formatted by hand, not with snprintf: it runs once a token event. */
size_t
resume_id_format(char *buf, size_t cap, const struct resume_id *id)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[RESUME_ID_MAX + 1];
	size_t n;
	int i;

	n = put_instance(tmp, id->instance);
	n += put_dec(tmp + n, id->stream);
	tmp[n++] = '-';
	for (i = 15; i >= 0; i--)
		tmp[n++] = hex[(id->key >> (4 * i)) & 0xf];
	tmp[n++] = '-';
	if (id->index == RESUME_INDEX_END) {
		memcpy(tmp + n, "end", 3);
		n += 3;
	} else {
		n += put_dec(tmp + n, id->index);
	}
	if (n >= cap || n > RESUME_ID_MAX)
		return 0;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return n;
}

/* A decimal u64 of 1..20 digits, no leading zero unless it is "0". */
static int
parse_dec(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20 || (len > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/*
 * Splits off a leading "<instance>-" when (s, len) has `parts` dashes
 * (one more than without an instance): stores the packed name in *inst
 * (0 when there is none) and advances *s, *len past it. -1 for a bad
 * name.
 */
static int
take_instance(const char **s, size_t *len, size_t parts, uint64_t *inst)
{
	const char *d;
	size_t i, dashes = 0;

	*inst = 0;
	for (i = 0; i < *len; i++)
		dashes += (*s)[i] == '-';
	if (dashes != parts)
		return 0;
	d = memchr(*s, '-', *len);
	if (resume_instance_parse(*s, (size_t)(d - *s), inst) != TS_OK)
		return -1;
	*len -= (size_t)(d + 1 - *s);
	*s = d + 1;
	return 0;
}

enum ts_err
resume_request_id_parse(const char *s, size_t len, uint64_t *instance,
    uint64_t *stream, const char **why)
{
	if (len == 0 || len > RESUME_REQUEST_ID_MAX) {
		*why = len == 0 ? "the id is empty" : "the id is too long";
		return TS_EINVAL;
	}
	if (take_instance(&s, &len, 1, instance) != 0) {
		*why = "the id has two parts and the first is not an "
		    "instance name (1 to 8 of a-z, 0-9, a letter first)";
		return TS_EINVAL;
	}
	if (parse_dec(s, len, stream) != 0 || *stream == 0) {
		*why = "the id's stream part is not a stream id";
		return TS_EINVAL;
	}
	return TS_OK;
}

enum ts_err
resume_id_parse(const char *s, size_t len, struct resume_id *id,
    const char **why)
{
	const char *d1, *d2;
	size_t i;
	uint64_t key = 0;

	if (len == 0) {
		*why = "the id is empty";
		return TS_EINVAL;
	}
	if (len > RESUME_ID_MAX) {
		*why = "the id is too long";
		return TS_EINVAL;
	}
	if (take_instance(&s, &len, 3, &id->instance) != 0) {
		*why = "the id has four parts and the first is not an "
		    "instance name (1 to 8 of a-z, 0-9, a letter first)";
		return TS_EINVAL;
	}
	d1 = memchr(s, '-', len);
	d2 = d1 ? memchr(d1 + 1, '-', len - (size_t)(d1 + 1 - s)) : NULL;
	if (d1 == NULL || d2 == NULL ||
	    memchr(d2 + 1, '-', len - (size_t)(d2 + 1 - s)) != NULL) {
		*why = "the id does not have three parts";
		return TS_EINVAL;
	}
	if (parse_dec(s, (size_t)(d1 - s), &id->stream) != 0 ||
	    id->stream == 0) {
		*why = "the id's stream part is not a stream id";
		return TS_EINVAL;
	}
	if (d2 - (d1 + 1) != 16) {
		*why = "the id's key is not 16 hex digits";
		return TS_EINVAL;
	}
	for (i = 0; i < 16; i++) {
		char c = d1[1 + i];
		unsigned v;

		if (c >= '0' && c <= '9')
			v = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = (unsigned)(c - 'a' + 10);
		else {
			*why = "the id's key is not 16 lowercase hex digits";
			return TS_EINVAL;
		}
		key = key << 4 | v;
	}
	id->key = key;
	len -= (size_t)(d2 + 1 - s);
	if (len == 3 && memcmp(d2 + 1, "end", 3) == 0) {
		id->index = RESUME_INDEX_END;
	} else if (parse_dec(d2 + 1, len, &id->index) != 0 ||
	    id->index == RESUME_INDEX_END) {
		*why = "the id's index is not a token index";
		return TS_EINVAL;
	}
	return TS_OK;
}
