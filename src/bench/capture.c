/*
 * capture.c - one request's recorded bytes (capture.h).
 */
#include "bench/capture.h"

#include <stdlib.h>
#include <string.h>

enum ts_err
capture_budget_take(struct capture_budget *b, size_t n)
{
	if (n > b->max || b->used > b->max - n) {
		b->over = 1;
		return TS_ELIMIT;
	}
	b->used += n;
	return TS_OK;
}

void
capture_budget_give(struct capture_budget *b, size_t n)
{
	b->used = n < b->used ? b->used - n : 0;
}

struct capture *
capture_new(struct capture_budget *b, uint64_t seq)
{
	struct capture *c = xcalloc(1, sizeof(*c));

	c->budget = b;
	c->seq = seq;
	return c;
}

/* Charges n bytes to c's budget. */
static enum ts_err
capture_take(struct capture *c, size_t n)
{
	/* once one request went over, every one stops keeping bytes */
	if (c->budget->over || capture_budget_take(c->budget, n) != TS_OK) {
		c->budget->over = 1;
		c->cut = 1;
		return TS_ELIMIT;
	}
	c->held += n;
	return TS_OK;
}

enum ts_err
capture_chunk(struct capture *c, int64_t t_us, const char *p, size_t n)
{
	struct trace_chunk *k;

	/* the bytes, their NUL and their slot */
	if (capture_take(c, n + 1 + sizeof(*k)) != TS_OK)
		return TS_ELIMIT;
	if (c->nchunks == c->chunk_cap) {
		c->chunk_cap = c->chunk_cap ? c->chunk_cap * 2 : 64;
		c->chunks = xrealloc(c->chunks,
		    c->chunk_cap * sizeof(*c->chunks));
	}
	k = &c->chunks[c->nchunks++];
	k->t_us = t_us;
	k->bytes = xmalloc(n + 1);
	if (n > 0)
		memcpy(k->bytes, p, n);
	k->bytes[n] = '\0';
	k->len = n;
	return TS_OK;
}

/* Frees the headers kept so far and gives their bytes back. */
static void
capture_drop_headers(struct capture *c)
{
	size_t i, n = 0;

	for (i = 0; i < c->nheaders; i++) {
		n += c->headers[i].name_len + c->headers[i].value_len + 2 +
		    sizeof(c->headers[i]);
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	c->nheaders = 0;
	capture_budget_give(c->budget, n);
	c->held -= n < c->held ? n : c->held;
}

/* True for the blanks around a header value (RFC 9110 section 5.6.3,
 * OWS) and the line end. */
static int
capture_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

enum ts_err
capture_header_line(struct capture *c, const char *line, size_t n)
{
	const char *colon, *v, *e = line + n;
	struct trace_hdr *h;
	size_t nlen;

	if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
		capture_drop_headers(c);
		return TS_OK;
	}
	while (e > line && capture_blank(e[-1]))
		e--;
	if (e == line || (colon = memchr(line, ':', (size_t)(e - line))) ==
	    NULL)
		return TS_OK;   /* the end of the head; or no header */
	nlen = (size_t)(colon - line);
	for (v = colon + 1; v < e && capture_blank(*v); v++)
		;
	if (capture_take(c, nlen + (size_t)(e - v) + 2 + sizeof(*h)) !=
	    TS_OK)
		return TS_ELIMIT;
	if (c->nheaders == c->header_cap) {
		c->header_cap = c->header_cap ? c->header_cap * 2 : 16;
		c->headers = xrealloc(c->headers,
		    c->header_cap * sizeof(*c->headers));
	}
	h = &c->headers[c->nheaders++];
	h->name = xstrndup(line, nlen);
	h->name_len = nlen;
	h->value = xstrndup(v, (size_t)(e - v));
	h->value_len = (size_t)(e - v);
	return TS_OK;
}

void
capture_free(struct capture *c)
{
	size_t i;

	if (c == NULL)
		return;
	capture_drop_headers(c);
	for (i = 0; i < c->nchunks; i++)
		free(c->chunks[i].bytes);
	capture_budget_give(c->budget, c->held);
	free(c->chunks);
	free(c->headers);
	free(c);
}
