/*
 * handlers/replay_set.c - recorded responses and their keys
 * (replay_set.h).
 */
#include "handlers/replay_set.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/rng.h"

/* The recordings that share one key, served in turn. */
struct replay_group {
	int canonical;             /* 1: a canonical key, 0: an exact one */
	uint64_t hash;
	char *key;                 /* method NUL path NUL body-or-canonical */
	size_t key_len;
	uint32_t *recs;            /* indices into the set's recordings */
	uint32_t n;
	_Atomic uint64_t turn;     /* requests that found this key */
};

/* A (method, path) pair that some recording has. */
struct replay_route {
	char *method;
	char *path;
};

struct replay_set {
	struct replay_rec **recs;
	uint32_t nrecs;
	struct replay_group *groups;
	uint32_t ngroups, cap_groups;
	uint32_t *table;           /* open addressing: group index + 1, 0
				    * empty; size a power of two */
	uint32_t table_size;
	struct replay_route *routes;
	uint32_t nroutes;
	uint32_t exact_keys, canonical_keys;
};

/* ---- recordings ------------------------------------------------------ */

struct replay_rec *
replay_rec_new(int status)
{
	struct replay_rec *r = xcalloc(1, sizeof(*r));

	r->status = status;
	r->head = xcalloc(1, 1);
	return r;
}

void
replay_rec_free(struct replay_rec *r)
{
	if (r == NULL)
		return;
	free(r->head);
	free(r->bytes);
	free(r->chunks);
	free(r->sched_ns);
	free(r);
}

/* The headers a replay does not repeat (replay_set.h). */
static int
header_dropped(const char *name)
{
	static const char *const drop[] = { "content-length",
	    "transfer-encoding", "connection", "keep-alive", "date", "server",
	    "status", "x-request-id" };
	size_t i;

	if (name[0] == ':' || strncasecmp(name, "access-control-", 15) == 0)
		return 1;
	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strcasecmp(name, drop[i]) == 0)
			return 1;
	return 0;
}

/* 1 when s is n bytes of visible ASCII or spaces and tabs (allow_space),
 * else 0: a header line that cannot break the CGI head. */
static int
header_clean(const char *s, size_t n, int allow_space)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch == ' ' || ch == '\t') && allow_space)
			continue;
		if (ch <= 0x20 || ch >= 0x7f || (!allow_space && ch == ':'))
			return 0;
	}
	return 1;
}

void
replay_rec_header(struct replay_rec *r, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	if (nl == 0 || header_dropped(name) || !header_clean(name, nl, 0) ||
	    !header_clean(value, vl, 1) ||
	    r->head_len + nl + vl + 4 > REPLAY_MAX_HEAD_BYTES) {
		r->dropped_headers++;
		return;
	}
	r->head = xrealloc(r->head, r->head_len + nl + vl + 5);
	memcpy(r->head + r->head_len, name, nl);
	memcpy(r->head + r->head_len + nl, ": ", 2);
	memcpy(r->head + r->head_len + nl + 2, value, vl);
	memcpy(r->head + r->head_len + nl + 2 + vl, "\r\n", 3);
	r->head_len += nl + vl + 4;
}

enum ts_err
replay_rec_chunk(struct replay_rec *r, int64_t t_us, const void *p,
    size_t len)
{
	if (t_us < 0 || t_us > REPLAY_MAX_CHUNK_US)
		return TS_EINVAL;
	if (r->nchunks >= REPLAY_MAX_CHUNKS || len > REPLAY_MAX_CHUNK_BYTES ||
	    r->nbytes + len > REPLAY_MAX_BYTES)
		return TS_ELIMIT;
	if ((r->nchunks & (r->nchunks - 1)) == 0)   /* 0, 1, 2, 4, ... */
		r->chunks = xrealloc(r->chunks, (r->nchunks ? 2u * r->nchunks :
		    1u) * sizeof(*r->chunks));
	r->bytes = xrealloc(r->bytes, r->nbytes + len + 1);
	memcpy(r->bytes + r->nbytes, p, len);
	r->chunks[r->nchunks].t_us = t_us;
	r->chunks[r->nchunks].off = (uint32_t)r->nbytes;
	r->chunks[r->nchunks].len = (uint32_t)len;
	r->nchunks++;
	r->nbytes += len;
	return TS_OK;
}

/* ---- keys ------------------------------------------------------------ */

/* The key of (method, path, body) into a new string (caller frees). */
static char *
key_make(const char *method, const char *path, const char *body,
    size_t body_len, size_t *len)
{
	size_t ml = strlen(method), pl = strlen(path);
	char *k = xmalloc(ml + pl + body_len + 3);

	memcpy(k, method, ml + 1);
	memcpy(k + ml + 1, path, pl + 1);
	if (body_len > 0)
		memcpy(k + ml + pl + 2, body, body_len);
	k[ml + pl + 2 + body_len] = '\0';
	*len = ml + pl + 2 + body_len;
	return k;
}

/*
 * The canonical form of a JSON body ("the prompt with the settings"):
 * jansson's compact dump with sorted keys, into a new string (caller
 * frees), or NULL when the body is not JSON.
 */
static char *
canonical_json(const char *body, size_t len, size_t *out_len)
{
	json_error_t jerr;
	json_t *v = json_loadb(body, len, JSON_DECODE_ANY, &jerr);
	char *s;

	if (v == NULL)
		return NULL;
	s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(v);
	if (s != NULL)
		*out_len = strlen(s);
	return s;
}

static uint64_t
key_hash(int canonical, const char *k, size_t len)
{
	return rng_fnv1a(canonical ? 0x9e3779b97f4a7c15ull : 0x6a09e667ull,
	    k, len);
}

/* The group of (canonical, key), or NULL. */
static struct replay_group *
group_find(const struct replay_set *s, int canonical, const char *k,
    size_t len, uint64_t h)
{
	uint32_t i, mask = s->table_size - 1;

	if (s->table_size == 0)
		return NULL;
	for (i = (uint32_t)h & mask; s->table[i] != 0; i = (i + 1) & mask) {
		struct replay_group *g = &s->groups[s->table[i] - 1];

		if (g->hash == h && g->canonical == canonical &&
		    g->key_len == len && memcmp(g->key, k, len) == 0)
			return g;
	}
	return NULL;
}

static void
table_put(struct replay_set *s, uint32_t gi)
{
	uint32_t i, mask = s->table_size - 1;

	for (i = (uint32_t)s->groups[gi].hash & mask; s->table[i] != 0;
	    i = (i + 1) & mask)
		;
	s->table[i] = gi + 1;
}

/* Adds recording ri under (canonical, key); takes k. */
static void
group_add(struct replay_set *s, int canonical, char *k, size_t len,
    uint32_t ri)
{
	uint64_t h = key_hash(canonical, k, len);
	struct replay_group *g = group_find(s, canonical, k, len, h);
	uint32_t i;

	if (g != NULL) {
		free(k);
	} else {
		if (s->ngroups == s->cap_groups) {
			s->cap_groups = s->cap_groups ? 2 * s->cap_groups : 16;
			s->groups = xrealloc(s->groups, s->cap_groups *
			    sizeof(*s->groups));
		}
		if (2u * (s->ngroups + 1u) > s->table_size) {
			s->table_size = s->table_size ? 2 * s->table_size :
			    64;
			free(s->table);
			s->table = xcalloc(s->table_size, sizeof(*s->table));
			for (i = 0; i < s->ngroups; i++)
				table_put(s, i);
		}
		g = &s->groups[s->ngroups];
		memset(g, 0, sizeof(*g));
		g->canonical = canonical;
		g->hash = h;
		g->key = k;
		g->key_len = len;
		atomic_init(&g->turn, 0);
		table_put(s, s->ngroups);
		s->ngroups++;
		if (canonical)
			s->canonical_keys++;
		else
			s->exact_keys++;
	}
	g->recs = xrealloc(g->recs, (g->n + 1u) * sizeof(*g->recs));
	g->recs[g->n++] = ri;
}

/* ---- the set --------------------------------------------------------- */

struct replay_set *
replay_set_new(void)
{
	return xcalloc(1, sizeof(struct replay_set));
}

void
replay_set_free(struct replay_set *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nrecs; i++)
		replay_rec_free(s->recs[i]);
	for (i = 0; i < s->ngroups; i++) {
		free(s->groups[i].key);
		free(s->groups[i].recs);
	}
	for (i = 0; i < s->nroutes; i++) {
		free(s->routes[i].method);
		free(s->routes[i].path);
	}
	free(s->recs);
	free(s->groups);
	free(s->table);
	free(s->routes);
	free(s);
}

static char *
dup_str(const char *p)
{
	size_t n = strlen(p);
	char *d = xmalloc(n + 1);

	memcpy(d, p, n + 1);
	return d;
}

enum ts_err
replay_set_add(struct replay_set *s, const char *method, const char *path,
    const char *body, size_t body_len, struct replay_rec *r)
{
	size_t len, clen = 0;
	char *k, *canon;
	uint32_t ri;

	if (s->nrecs >= REPLAY_MAX_RECORDINGS) {
		replay_rec_free(r);
		return TS_ELIMIT;
	}
	ri = s->nrecs;
	s->recs = xrealloc(s->recs, (s->nrecs + 1u) * sizeof(*s->recs));
	s->recs[s->nrecs++] = r;
	if (!replay_set_has_route(s, method, path)) {
		s->routes = xrealloc(s->routes, (s->nroutes + 1u) *
		    sizeof(*s->routes));
		s->routes[s->nroutes].method = dup_str(method);
		s->routes[s->nroutes].path = dup_str(path);
		s->nroutes++;
	}
	k = key_make(method, path, body, body_len, &len);
	group_add(s, 0, k, len, ri);
	canon = canonical_json(body, body_len, &clen);
	if (canon != NULL) {
		/* the key first, then its length: the order in which a
		 * call's arguments are evaluated is unspecified */
		k = key_make(method, path, canon, clen, &len);
		free(canon);
		group_add(s, 1, k, len, ri);
	}
	return TS_OK;
}

void
replay_set_schedule(struct replay_set *s, double speed)
{
	uint32_t i, k;

	for (i = 0; i < s->nrecs; i++) {
		struct replay_rec *r = s->recs[i];
		int64_t prev = 0;

		free(r->sched_ns);
		r->sched_ns = xcalloc(r->nchunks ? r->nchunks : 1,
		    sizeof(*r->sched_ns));
		for (k = 0; k < r->nchunks; k++) {
			int64_t t = (int64_t)((double)r->chunks[k].t_us *
			    1000.0 / speed);

			prev = t > prev ? t : prev;
			r->sched_ns[k] = prev;
		}
	}
}

void
replay_set_stats(const struct replay_set *s, struct replay_stats *st)
{
	st->recordings = s->nrecs;
	st->exact_keys = s->exact_keys;
	st->canonical_keys = s->canonical_keys;
	st->routes = s->nroutes;
}

int
replay_set_has_route(const struct replay_set *s, const char *method,
    const char *path)
{
	uint32_t i;

	for (i = 0; i < s->nroutes; i++)
		if (strcmp(s->routes[i].method, method) == 0 &&
		    strcmp(s->routes[i].path, path) == 0)
			return 1;
	return 0;
}

/* The group's next recording, in turn. */
static const struct replay_rec *
group_take(struct replay_set *s, struct replay_group *g)
{
	uint64_t t = atomic_fetch_add(&g->turn, 1);

	return s->recs[g->recs[t % g->n]];
}

const struct replay_rec *
replay_set_match(struct replay_set *s, const char *method, const char *path,
    const char *body, size_t body_len, enum replay_how *how)
{
	struct replay_group *g;
	size_t len, clen = 0;
	char *k = key_make(method, path, body, body_len, &len), *canon;

	*how = REPLAY_MISS;
	g = group_find(s, 0, k, len, key_hash(0, k, len));
	free(k);
	if (g != NULL) {
		*how = REPLAY_EXACT;
		return group_take(s, g);
	}
	canon = canonical_json(body, body_len, &clen);
	if (canon == NULL)
		return NULL;
	k = key_make(method, path, canon, clen, &len);
	free(canon);
	g = group_find(s, 1, k, len, key_hash(1, k, len));
	free(k);
	if (g == NULL)
		return NULL;
	*how = REPLAY_CANONICAL;
	return group_take(s, g);
}
