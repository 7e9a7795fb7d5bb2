/*
 * jsonschema/schema_path.c - the JSON pointer (RFC 6901) of the subschema
 * the passes are at, and the first error, which names it: "schema at
 * /properties/x: \"pattern\" is not supported". Paths live in the
 * fixed buffer of struct ctx; a segment that does not fit is counted and
 * shown as "/...". See schema_int.h.
 */
#include "jsonschema/schema_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PATH_SHOWN 64                  /* bytes of a path in a message */

void
schema_path_text(const struct ctx *c, char *out, size_t size)
{
	snprintf(out, size, "%s%s", c->plen ? c->path : "",
	    c->pover ? "/..." : "");
}

static void vfailat(struct ctx *c, enum ts_err rc, const char *path,
    const char *fmt, va_list ap) ATTR_FMT(4, 0);

/*
 * Keeps the first error: "schema at PATH: TEXT". A path over PATH_SHOWN
 * bytes shows as "..." and its last segments, so that the keyword fits
 * the callers' 200-byte messages.
 */
static void
vfailat(struct ctx *c, enum ts_err rc, const char *path, const char *fmt,
    va_list ap)
{
	size_t len = strlen(path);
	const char *tail = path, *cut;
	int k;

	if (c->rc != TS_OK)
		return;
	c->rc = rc;
	if (len > PATH_SHOWN) {
		tail = path + len - (PATH_SHOWN - 3);
		if ((cut = strchr(tail, '/')) != NULL)
			tail = cut;
	}
	k = snprintf(c->msg, sizeof(c->msg), "schema at %s%s: ",
	    tail != path ? "..." : "", path[0] != '\0' ? tail : "(root)");
	if (k < 0 || (size_t)k >= sizeof(c->msg))
		return;
	vsnprintf(c->msg + k, sizeof(c->msg) - (size_t)k, fmt, ap);
}

void
schema_path_failat(struct ctx *c, enum ts_err rc, const char *path,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfailat(c, rc, path, fmt, ap);
	va_end(ap);
}

/* An error at the subschema being compiled. */
void
schema_path_fail(struct ctx *c, enum ts_err rc, const char *fmt, ...)
{
	char p[PATH_BYTES + 8];
	va_list ap;

	schema_path_text(c, p, sizeof(p));
	va_start(ap, fmt);
	vfailat(c, rc, p, fmt, ap);
	va_end(ap);
}

/* Appends "/seg" with JSON pointer escapes (RFC 6901 section 3); returns
 * what schema_path_pop needs. A segment that does not fit is counted
 * instead. */
size_t
schema_path_push(struct ctx *c, const char *seg, size_t len)
{
	size_t old = c->plen, need = 1, i;

	for (i = 0; i < len; i++)
		need += (seg[i] == '~' || seg[i] == '/') ? 2 : 1;
	if (c->pover > 0 || c->plen + need + 8 > sizeof(c->path)) {
		c->pover++;
		return SIZE_MAX;
	}
	c->path[c->plen++] = '/';
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)seg[i];

		if (ch == '~' || ch == '/') {
			c->path[c->plen++] = '~';
			c->path[c->plen++] = ch == '~' ? '0' : '1';
		} else {
			c->path[c->plen++] = ch < 0x20 ? '?' : (char)ch;
		}
	}
	c->path[c->plen] = '\0';
	return old;
}

size_t
schema_path_push_str(struct ctx *c, const char *seg)
{
	return schema_path_push(c, seg, strlen(seg));
}

size_t
schema_path_push_index(struct ctx *c, size_t i)
{
	char b[24];

	snprintf(b, sizeof(b), "%zu", i);
	return schema_path_push_str(c, b);
}

void
schema_path_pop(struct ctx *c, size_t old)
{
	if (old == SIZE_MAX) {
		c->pover--;
		return;
	}
	c->plen = old;
	c->path[old] = '\0';
}

void
schema_path_save(const struct ctx *c, struct psave *s)
{
	memcpy(s->p, c->path, c->plen + 1);
	s->len = c->plen;
	s->over = c->pover;
}

void
schema_path_restore(struct ctx *c, const struct psave *s)
{
	memcpy(c->path, s->p, s->len + 1);
	c->plen = s->len;
	c->pover = s->over;
}

/* Sets the path to p, a schema_path_text of another place (its "/..."
 * of segments that did not fit becomes a count again). */
void
schema_path_load(struct ctx *c, const char *p)
{
	size_t len = strlen(p);
	unsigned over = 0;

	if (len >= 4 && strcmp(p + len - 4, "/...") == 0) {
		len -= 4;
		over = 1;
	}
	while (len > sizeof(c->path) - 16) {
		while (len > 0 && p[--len] != '/')
			;
		over = 1;
	}
	memcpy(c->path, p, len);
	c->path[len] = '\0';
	c->plen = len;
	c->pover = over;
}

char *
schema_path_copy(const struct ctx *c)
{
	char p[PATH_BYTES + 8];

	schema_path_text(c, p, sizeof(p));
	return xstrndup(p, strlen(p));
}

int
schema_step(struct ctx *c, uint64_t n)
{
	c->steps += n;
	if (c->steps <= c->max_steps && c->rc == TS_OK)
		return 0;
	if (c->steps > c->max_steps)
		schema_path_failat(c, TS_ELIMIT, "", "checking the schema "
		    "takes more than %llu steps, tokstream's limit for the "
		    "schemas of one request",
		    (unsigned long long)c->max_steps);
	return -1;
}
