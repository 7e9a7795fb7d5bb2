/*
 * openai_fixtures.c - what the OpenAI API unit tests share
 * (openai_fixtures.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "openai_fixtures.h"

const char *const served[1] = { MODEL };

char *
q(const char *s, size_t *len)
{
	char *out = xstrndup(s, strlen(s));
	char *p;

	for (p = out; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	*len = strlen(out);
	return out;
}

enum ts_err
parse(enum openai_kind kind, const char *qbody, struct openai_request *r,
    struct http_error *err)
{
	size_t len;
	char *body = q(qbody, &len);
	enum ts_err rc;

	rc = openai_parse_request(kind, body, len, served, 1, r, err);
	free(body);
	return rc;
}

void
meta(struct openai_meta *m, enum openai_kind kind)
{
	m->kind = kind;
	m->id = 42;
	m->created = 1700000000;
	m->model = MODEL;
	m->model_len = strlen(MODEL);
	m->id_prefix = NULL;
}
