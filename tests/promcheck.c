/*
 * promcheck.c - checks a text in the Prometheus text exposition format
 * 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats, "Text
 * format details"), for tests: what metrics_render() writes
 * (test_metrics.c) and what GET /metrics answers (bats).
 *
 *   promcheck [FILE]    FILE, or standard input when absent or "-"
 *
 * Exit status: 0 when the text is valid; 1 when it is not, with one line
 * "FILE:LINE: what is wrong" on stderr for the first error; 2 on a usage
 * or read error.
 *
 * What it checks:
 *  - every line ends in "\n" (the last one too), is valid UTF-8 without
 *    NUL or CR, and is at most 1 MiB; blank lines are ignored;
 *  - "# HELP name text" (escapes \\ and \n only) and "# TYPE name type"
 *    (counter, gauge, histogram, summary, untyped): at most one of each
 *    per name, TYPE before the name's first sample; other lines starting
 *    with '#' are comments;
 *  - samples: name [{label="value",...}] value [timestamp]. Metric names
 *    match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
 *    and do not start with "__" nor repeat within a sample; label values
 *    escape only \\, \" and \n; the value is a float as Go's ParseFloat
 *    reads it (decimal, Inf/+Inf/-Inf/Infinity, NaN; hexadecimal floats
 *    are refused), the timestamp an int64 (ms);
 *  - the lines of one metric family are together, and no sample (name
 *    and label set) appears twice;
 *  - counter values are not negative;
 *  - histograms have only name_bucket samples (with le) and name_sum and
 *    name_count (without); for each label set, le increases and ends with
 *    "+Inf", bucket counts are non-negative and never decrease, _sum and
 *    _count are present, and _count equals the +Inf bucket;
 *  - summaries: name samples carry a quantile label, _count is not
 *    negative.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/ts.h"

#define PC_LINE_MAX (1u << 20)  /* bytes per line, "\n" excluded */
#define PC_LABELS_MAX 64        /* labels per sample */
#define PC_NUMBER_MAX 400       /* bytes of a value or timestamp */

enum pc_type { PC_UNTYPED, PC_COUNTER, PC_GAUGE, PC_HISTOGRAM, PC_SUMMARY };

static const char *const pc_type_name[] = {
	[PC_UNTYPED] = "untyped", [PC_COUNTER] = "counter",
	[PC_GAUGE] = "gauge", [PC_HISTOGRAM] = "histogram",
	[PC_SUMMARY] = "summary",
};

/* What a sample is to its family: by the suffix of its name. */
enum pc_part { PC_PLAIN, PC_BUCKET, PC_SUM, PC_COUNT };

struct pc_family {
	char *name;
	enum pc_type type;
	long help_line;         /* 0: none yet */
	long type_line;
	long last_line;         /* its last line so far */
	int has_samples;
	int closed;             /* another family's lines came after it */
};

/* One histogram's label set (le excluded) within the current family. */
struct pc_series {
	char *key;
	long first_line;
	int nbuckets;
	double last_le;
	double last_count;
	long last_bucket_line;
	int has_inf, has_sum, has_count;
	double inf;
	double count;
	long count_line;
};

struct pc_label {
	const char *name;
	size_t nlen;
	const char *val;        /* raw, escapes included */
	size_t vlen;
};

struct pc {
	const char *file;
	long line;
	struct pc_family *fam;
	size_t nfam, capfam;
	const char *start;      /* the line being read */
	long cur;               /* the family being read, -1 before any */
	char **keys;            /* samples of the current family */
	size_t nkeys, capkeys;
	struct pc_series *ser;  /* its histogram series */
	size_t nser, capser;
};

static int pc_fail(const struct pc *pc, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "FILE:LINE: message"; returns -1 for the caller to return. */
static int
pc_fail(const struct pc *pc, long line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%ld: ", pc->file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *
skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

static int
name_start(char c, int colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    (colon && c == ':');
}

static int
name_char(char c, int colon)
{
	return name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Length of the metric name (colon) or label name at p; 0 if none. */
static size_t
name_len(const char *p, const char *end, int colon)
{
	const char *q = p;

	if (q >= end || !name_start(*q, colon))
		return 0;
	while (q < end && name_char(*q, colon))
		q++;
	return (size_t)(q - p);
}

/* Whether (p, n) is valid UTF-8 (no overlong forms, no surrogates). */
static int
utf8_valid(const unsigned char *p, size_t n)
{
	size_t i = 0, k, len;
	uint32_t c;

	while (i < n) {
		c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, c &= 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, c &= 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, c &= 0x07;
		else
			return 0;
		if (n - i < len)
			return 0;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			c = (c << 6) | (p[i + k] & 0x3f);
		}
		if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

static int
equal_nocase(const char *p, size_t n, const char *word)
{
	size_t i;

	if (strlen(word) != n)
		return 0;
	for (i = 0; i < n; i++) {
		char c = p[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != word[i])
			return 0;
	}
	return 1;
}

/*
 * Parses (p, n) as Go's strconv.ParseFloat would a decimal float: [+-]
 * digits [. digits] [e [+-] digits], or Inf, Infinity (any case, signed
 * or not), or NaN (any case). Returns 0 and *out, or -1.
 */
static int
parse_float(const char *p, size_t n, double *out)
{
	char buf[PC_NUMBER_MAX + 1];
	size_t i = 0, digits = 0;
	int neg = 0;

	if (n == 0 || n > PC_NUMBER_MAX)
		return -1;
	if (p[0] == '+' || p[0] == '-') {
		neg = p[0] == '-';
		i = 1;
	}
	if (equal_nocase(p + i, n - i, "inf") ||
	    equal_nocase(p + i, n - i, "infinity")) {
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (i == 0 && equal_nocase(p, n, "nan")) {
		*out = NAN;
		return 0;
	}
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		digits++;
	if (i < n && p[i] == '.')
		for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			digits++;
	if (digits == 0)
		return -1;
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		i++;
		if (i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		for (digits = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			digits++;
		if (digits == 0)
			return -1;
	}
	if (i != n)
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	*out = strtod(buf, NULL);      /* ERANGE: +-Inf or 0, as Go's */
	return 0;
}

/* An int64 timestamp: [-] digits. */
static int
timestamp_valid(const char *p, size_t n)
{
	char buf[32], *end;
	size_t i = p[0] == '-';

	if (n == 0 || n >= sizeof(buf) || i == n)
		return 0;
	for (; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	memcpy(buf, p, n);
	buf[n] = '\0';
	errno = 0;
	(void)strtoll(buf, &end, 10);
	return errno == 0;
}

/* ---- families ------------------------------------------------------- */

static long
family_find(const struct pc *pc, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < pc->nfam; i++)
		if (strlen(pc->fam[i].name) == n &&
		    memcmp(pc->fam[i].name, name, n) == 0)
			return (long)i;
	return -1;
}

static long
family_add(struct pc *pc, const char *name, size_t n)
{
	struct pc_family *f;

	if (pc->nfam == pc->capfam) {
		pc->capfam = pc->capfam ? 2 * pc->capfam : 16;
		pc->fam = xrealloc(pc->fam, pc->capfam * sizeof(*pc->fam));
	}
	f = &pc->fam[pc->nfam];
	memset(f, 0, sizeof(*f));
	f->name = xstrndup(name, n);
	f->type = PC_UNTYPED;
	return (long)pc->nfam++;
}

static void
family_clear(struct pc *pc)
{
	size_t i;

	for (i = 0; i < pc->nkeys; i++)
		free(pc->keys[i]);
	for (i = 0; i < pc->nser; i++)
		free(pc->ser[i].key);
	pc->nkeys = 0;
	pc->nser = 0;
}

/* The checks that need all of a family's lines: its histograms. */
static int
family_finish(struct pc *pc)
{
	const struct pc_family *f = &pc->fam[pc->cur];
	const struct pc_series *s;
	size_t i;

	if (f->type != PC_HISTOGRAM)
		return 0;
	for (i = 0; i < pc->nser; i++) {
		s = &pc->ser[i];
		if (!s->has_inf)
			return pc_fail(pc, s->nbuckets ? s->last_bucket_line :
			    s->first_line, "histogram %s%s has no "
			    "le=\"+Inf\" bucket", f->name, s->key);
		if (!s->has_count)
			return pc_fail(pc, s->first_line,
			    "histogram %s%s has no %s_count", f->name, s->key,
			    f->name);
		if (!s->has_sum)
			return pc_fail(pc, s->first_line,
			    "histogram %s%s has no %s_sum", f->name, s->key,
			    f->name);
		if (s->count != s->inf)
			return pc_fail(pc, s->count_line,
			    "%s_count%s is %.17g but its le=\"+Inf\" bucket "
			    "is %.17g", f->name, s->key, s->count, s->inf);
	}
	return 0;
}

/* Makes family idx the current one: its lines must be together. */
static int
family_enter(struct pc *pc, long idx)
{
	if (pc->cur == idx)
		return 0;
	if (pc->cur >= 0) {
		if (family_finish(pc) != 0)
			return -1;
		pc->fam[pc->cur].closed = 1;
		family_clear(pc);
	}
	pc->cur = idx;
	if (pc->fam[idx].closed)
		return pc_fail(pc, pc->line, "the lines of %s are not "
		    "together: its family ended at line %ld",
		    pc->fam[idx].name, pc->fam[idx].last_line);
	return 0;
}

/* ---- comments: # HELP, # TYPE ------------------------------------- */

static int
check_help_text(struct pc *pc, const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p == '\\') {
			if (p + 1 == end || (p[1] != '\\' && p[1] != 'n'))
				return pc_fail(pc, pc->line, "HELP text has "
				    "an escape other than \\\\ and \\n");
			p++;
		}
	return 0;
}

static int
check_comment(struct pc *pc, const char *p, const char *end)
{
	const char *word, *name;
	size_t wlen, nlen;
	long idx;
	int help, t;

	p = skip_blanks(p + 1, end);
	for (word = p; p < end && !is_blank(*p); p++)
		;
	wlen = (size_t)(p - word);
	help = wlen == 4 && memcmp(word, "HELP", 4) == 0;
	if (!help && !(wlen == 4 && memcmp(word, "TYPE", 4) == 0))
		return 0;               /* a plain comment */
	p = skip_blanks(p, end);
	name = p;
	nlen = name_len(p, end, 1);
	if (nlen == 0)
		return pc_fail(pc, pc->line, "%s without a valid metric name",
		    help ? "HELP" : "TYPE");
	p += nlen;
	if (p < end && !is_blank(*p))
		return pc_fail(pc, pc->line, "invalid metric name in %s",
		    help ? "HELP" : "TYPE");
	if ((idx = family_find(pc, name, nlen)) < 0)
		idx = family_add(pc, name, nlen);
	if (family_enter(pc, idx) != 0)
		return -1;
	pc->fam[idx].last_line = pc->line;
	if (help) {
		if (pc->fam[idx].help_line)
			return pc_fail(pc, pc->line, "second HELP for %s "
			    "(first at line %ld)", pc->fam[idx].name,
			    pc->fam[idx].help_line);
		pc->fam[idx].help_line = pc->line;
		return check_help_text(pc, skip_blanks(p, end), end);
	}
	if (pc->fam[idx].type_line)
		return pc_fail(pc, pc->line, "second TYPE for %s (first at "
		    "line %ld)", pc->fam[idx].name, pc->fam[idx].type_line);
	if (pc->fam[idx].has_samples)
		return pc_fail(pc, pc->line, "TYPE for %s after its samples",
		    pc->fam[idx].name);
	p = skip_blanks(p, end);
	for (word = p; p < end && !is_blank(*p); p++)
		;
	wlen = (size_t)(p - word);
	for (t = PC_UNTYPED; t <= PC_SUMMARY; t++)
		if (strlen(pc_type_name[t]) == wlen &&
		    memcmp(pc_type_name[t], word, wlen) == 0)
			break;
	if (t > PC_SUMMARY)
		return pc_fail(pc, pc->line, "TYPE of %s is \"%.*s\", not "
		    "counter, gauge, histogram, summary or untyped",
		    pc->fam[idx].name, (int)wlen, word);
	if (skip_blanks(p, end) != end)
		return pc_fail(pc, pc->line, "text after the TYPE");
	pc->fam[idx].type = (enum pc_type)t;
	pc->fam[idx].type_line = pc->line;
	return 0;
}

/* ---- samples ------------------------------------------------------- */

/*
 * Parses {label="value",...} at *pp (after the '{'), into labels[];
 * returns the number of labels, or -1 after reporting the error.
 */
static int
parse_labels(struct pc *pc, const char **pp, const char *end,
    struct pc_label *labels)
{
	const char *p = *pp;
	int n = 0, i;
	size_t len;

	for (;;) {
		p = skip_blanks(p, end);
		if (p < end && *p == '}')
			break;
		if ((len = name_len(p, end, 0)) == 0)
			return pc_fail(pc, pc->line, "invalid label name at "
			    "column %ld", (long)(p - pc->start) + 1);
		if (n == PC_LABELS_MAX)
			return pc_fail(pc, pc->line, "more than %d labels",
			    PC_LABELS_MAX);
		labels[n].name = p;
		labels[n].nlen = len;
		if (len >= 2 && p[0] == '_' && p[1] == '_')
			return pc_fail(pc, pc->line, "label name %.*s is "
			    "reserved (starts with __)", (int)len, p);
		for (i = 0; i < n; i++)
			if (labels[i].nlen == len &&
			    memcmp(labels[i].name, p, len) == 0)
				return pc_fail(pc, pc->line, "label %.*s "
				    "twice", (int)len, p);
		p = skip_blanks(p + len, end);
		if (p == end || *p != '=')
			return pc_fail(pc, pc->line, "no '=' after label "
			    "%.*s", (int)len, labels[n].name);
		p = skip_blanks(p + 1, end);
		if (p == end || *p != '"')
			return pc_fail(pc, pc->line, "value of label %.*s "
			    "not in double quotes", (int)len, labels[n].name);
		labels[n].val = ++p;
		for (; p < end && *p != '"'; p++) {
			if (*p != '\\')
				continue;
			if (p + 1 == end || (p[1] != '\\' && p[1] != '"' &&
			    p[1] != 'n'))
				return pc_fail(pc, pc->line, "value of label "
				    "%.*s has an escape other than \\\\, \\\" "
				    "and \\n", (int)len, labels[n].name);
			p++;
		}
		if (p == end)
			return pc_fail(pc, pc->line, "value of label %.*s "
			    "not terminated", (int)len, labels[n].name);
		labels[n].vlen = (size_t)(p - labels[n].val);
		n++;
		p = skip_blanks(p + 1, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			break;
		return pc_fail(pc, pc->line, "expected ',' or '}' after "
		    "label %.*s", (int)len, labels[n - 1].name);
	}
	*pp = p + 1;
	return n;
}

/*
 * The canonical text of a label set, sorted by name, skipping label
 * `skip` (-1: none): "{a=\"1\",b=\"2\"}", or "" when empty. Caller frees.
 */
static char *
labels_key(const struct pc_label *labels, int n, int skip)
{
	int order[PC_LABELS_MAX], k = 0, i, j;
	struct ts_buf b;

	for (i = 0; i < n; i++) {
		if (i == skip)
			continue;
		for (j = k; j > 0; j--) {
			const struct pc_label *a = &labels[order[j - 1]];
			size_t m = a->nlen < labels[i].nlen ? a->nlen :
			    labels[i].nlen;
			int c = memcmp(a->name, labels[i].name, m);

			if (c < 0 || (c == 0 && a->nlen <= labels[i].nlen))
				break;
			order[j] = order[j - 1];
		}
		order[j] = i;
		k++;
	}
	ts_buf_init(&b, SIZE_MAX / 2);
	ts_buf_append(&b, "", 0);
	for (i = 0; i < k; i++) {
		const struct pc_label *l = &labels[order[i]];

		ts_buf_append(&b, i == 0 ? "{" : ",", 1);
		ts_buf_append(&b, l->name, l->nlen);
		ts_buf_append(&b, "=\"", 2);
		ts_buf_append(&b, l->val, l->vlen);
		ts_buf_append(&b, "\"", 1);
	}
	if (k > 0)
		ts_buf_append(&b, "}", 1);
	return b.p;
}

static struct pc_series *
series_get(struct pc *pc, char *key)
{
	struct pc_series *s;
	size_t i;

	for (i = 0; i < pc->nser; i++)
		if (strcmp(pc->ser[i].key, key) == 0) {
			free(key);
			return &pc->ser[i];
		}
	if (pc->nser == pc->capser) {
		pc->capser = pc->capser ? 2 * pc->capser : 8;
		pc->ser = xrealloc(pc->ser, pc->capser * sizeof(*pc->ser));
	}
	s = &pc->ser[pc->nser++];
	memset(s, 0, sizeof(*s));
	s->key = key;
	s->first_line = pc->line;
	return s;
}

/* The family of sample name (p, n), and which part of it the name is. */
static long
sample_family(struct pc *pc, const char *p, size_t n, enum pc_part *part)
{
	static const struct {
		const char *suffix;
		enum pc_part part;
	} suffixes[] = {
		{ "_bucket", PC_BUCKET }, { "_sum", PC_SUM },
		{ "_count", PC_COUNT },
	};
	size_t i, sl;
	long idx;

	*part = PC_PLAIN;
	if ((idx = family_find(pc, p, n)) >= 0)
		return idx;
	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		sl = strlen(suffixes[i].suffix);
		if (n <= sl || memcmp(p + n - sl, suffixes[i].suffix, sl) != 0)
			continue;
		idx = family_find(pc, p, n - sl);
		if (idx >= 0 && (pc->fam[idx].type == PC_HISTOGRAM ||
		    (pc->fam[idx].type == PC_SUMMARY &&
		    suffixes[i].part != PC_BUCKET))) {
			*part = suffixes[i].part;
			return idx;
		}
	}
	return family_add(pc, p, n);
}

static int
find_label(const struct pc_label *labels, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (labels[i].nlen == strlen(name) &&
		    memcmp(labels[i].name, name, labels[i].nlen) == 0)
			return i;
	return -1;
}

/* A histogram sample: see the header comment. */
static int
check_histogram(struct pc *pc, const char *name, enum pc_part part,
    const struct pc_label *labels, int n, double v)
{
	const struct pc_label *le_label;
	struct pc_series *s;
	int le = find_label(labels, n, "le");
	double le_v;

	if (part == PC_PLAIN)
		return pc_fail(pc, pc->line, "a sample of histogram %s must "
		    "be %s_bucket, %s_sum or %s_count", name, name, name,
		    name);
	if (part != PC_BUCKET && le >= 0)
		return pc_fail(pc, pc->line, "%s_%s has an le label", name,
		    part == PC_SUM ? "sum" : "count");
	if (part == PC_BUCKET && le < 0)
		return pc_fail(pc, pc->line, "%s_bucket without an le label",
		    name);
	if (part != PC_SUM && !(v >= 0))
		return pc_fail(pc, pc->line, "negative or NaN count in "
		    "histogram %s", name);
	s = series_get(pc, labels_key(labels, n, le));
	if (part == PC_SUM) {
		s->has_sum = 1;
		return 0;
	}
	if (part == PC_COUNT) {
		s->has_count = 1;
		s->count = v;
		s->count_line = pc->line;
		return 0;
	}
	le_label = &labels[le];
	if (parse_float(le_label->val, le_label->vlen, &le_v) != 0 ||
	    isnan(le_v))
		return pc_fail(pc, pc->line, "le=\"%.*s\" is not a number",
		    (int)le_label->vlen, le_label->val);
	if (s->has_inf)
		return pc_fail(pc, pc->line, "bucket after the le=\"+Inf\" "
		    "bucket of %s%s", name, s->key);
	if (s->nbuckets > 0 && !(le_v > s->last_le))
		return pc_fail(pc, pc->line, "le=\"%.*s\" is not above the "
		    "previous bucket's le (%.17g)", (int)le_label->vlen,
		    le_label->val, s->last_le);
	if (s->nbuckets > 0 && v < s->last_count)
		return pc_fail(pc, pc->line, "bucket count %.17g is below "
		    "the previous bucket's %.17g: buckets are cumulative", v,
		    s->last_count);
	s->nbuckets++;
	s->last_bucket_line = pc->line;
	s->last_le = le_v;
	s->last_count = v;
	if (isinf(le_v) && le_v > 0) {
		s->has_inf = 1;
		s->inf = v;
	}
	return 0;
}

static int
check_sample(struct pc *pc, const char *p, const char *end)
{
	struct pc_label labels[PC_LABELS_MAX];
	const char *name = p, *tok;
	size_t nlen = name_len(p, end, 1), i;
	enum pc_part part;
	struct pc_family *f;
	int n = 0;
	double v;
	char *key;
	long idx;

	if (nlen == 0)
		return pc_fail(pc, pc->line, "not a sample: a metric name "
		    "starts with a letter, '_' or ':'");
	p += nlen;
	if (p < end && !is_blank(*p) && *p != '{')
		return pc_fail(pc, pc->line, "invalid character '%c' in "
		    "metric name %.*s", *p, (int)(nlen + 1), name);
	tok = skip_blanks(p, end);
	if (tok < end && *tok == '{') {
		p = tok + 1;
		if ((n = parse_labels(pc, &p, end, labels)) < 0)
			return -1;
	}
	if (p == end || !is_blank(*p))
		return pc_fail(pc, pc->line, p == end ? "no value" :
		    "expected a blank before the value");
	p = skip_blanks(p, end);
	for (tok = p; p < end && !is_blank(*p); p++)
		;
	if (parse_float(tok, (size_t)(p - tok), &v) != 0)
		return pc_fail(pc, pc->line, "value \"%.*s\" is not a float",
		    (int)(p - tok), tok);
	p = skip_blanks(p, end);
	if (p < end) {
		for (tok = p; p < end && !is_blank(*p); p++)
			;
		if (!timestamp_valid(tok, (size_t)(p - tok)))
			return pc_fail(pc, pc->line, "timestamp \"%.*s\" is "
			    "not an int64", (int)(p - tok), tok);
		if (skip_blanks(p, end) != end)
			return pc_fail(pc, pc->line, "text after the "
			    "timestamp");
	}

	idx = sample_family(pc, name, nlen, &part);
	if (family_enter(pc, idx) != 0)
		return -1;
	f = &pc->fam[idx];
	f->has_samples = 1;
	f->last_line = pc->line;
	key = labels_key(labels, n, -1);
	{
		struct ts_buf b;

		ts_buf_init(&b, SIZE_MAX / 2);
		ts_buf_append(&b, name, nlen);
		ts_buf_append(&b, key, strlen(key));
		free(key);
		key = b.p;
	}
	for (i = 0; i < pc->nkeys; i++)
		if (strcmp(pc->keys[i], key) == 0) {
			free(key);
			return pc_fail(pc, pc->line, "sample twice");
		}
	if (pc->nkeys == pc->capkeys) {
		pc->capkeys = pc->capkeys ? 2 * pc->capkeys : 16;
		pc->keys = xrealloc(pc->keys, pc->capkeys * sizeof(char *));
	}
	pc->keys[pc->nkeys++] = key;

	switch (f->type) {
	case PC_COUNTER:
		if (v < 0)
			return pc_fail(pc, pc->line, "counter %s is negative",
			    f->name);
		break;
	case PC_HISTOGRAM:
		return check_histogram(pc, f->name, part, labels, n, v);
	case PC_SUMMARY:
		if (part == PC_PLAIN && find_label(labels, n, "quantile") < 0)
			return pc_fail(pc, pc->line, "summary %s sample "
			    "without a quantile label", f->name);
		if (part == PC_COUNT && !(v >= 0))
			return pc_fail(pc, pc->line, "negative or NaN "
			    "%s_count", f->name);
		break;
	case PC_GAUGE:
	case PC_UNTYPED:
		break;
	}
	return 0;
}

static int
check_line(struct pc *pc, const char *line, size_t len)
{
	const char *end = line + len, *p;

	pc->start = line;
	if (memchr(line, '\0', len) != NULL)
		return pc_fail(pc, pc->line, "NUL byte");
	if (memchr(line, '\r', len) != NULL)
		return pc_fail(pc, pc->line, "carriage return (lines end in "
		    "\\n only)");
	if (!utf8_valid((const unsigned char *)line, len))
		return pc_fail(pc, pc->line, "not valid UTF-8");
	p = skip_blanks(line, end);
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return 0;               /* blank lines are ignored */
	if (*p == '#')
		return check_comment(pc, p, end);
	return check_sample(pc, p, end);
}

static int
check_stream(struct pc *pc, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	while (rc == 0 && (n = getline(&line, &cap, in)) > 0) {
		pc->line++;
		if (line[n - 1] != '\n') {
			rc = pc_fail(pc, pc->line, "no newline at the end "
			    "of the last line");
			break;
		}
		if ((size_t)n - 1 > PC_LINE_MAX) {
			rc = pc_fail(pc, pc->line, "line longer than %u bytes",
			    PC_LINE_MAX);
			break;
		}
		rc = check_line(pc, line, (size_t)n - 1);
	}
	free(line);
	if (rc == 0 && ferror(in)) {
		fprintf(stderr, "promcheck: cannot read %s: %s\n", pc->file,
		    strerror(errno));
		return 2;
	}
	if (rc == 0 && pc->cur >= 0)
		rc = family_finish(pc);
	return rc == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct pc pc;
	FILE *in = stdin;
	size_t i;
	int rc;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-' && argv[1][1])) {
		fprintf(stderr, "usage: promcheck [FILE]\n");
		return 2;
	}
	memset(&pc, 0, sizeof(pc));
	pc.cur = -1;
	pc.file = "(stdin)";
	if (argc == 2 && strcmp(argv[1], "-") != 0) {
		pc.file = argv[1];
		if ((in = fopen(argv[1], "r")) == NULL) {
			fprintf(stderr, "promcheck: cannot open %s: %s\n",
			    argv[1], strerror(errno));
			return 2;
		}
	}
	rc = check_stream(&pc, in);
	if (in != stdin)
		fclose(in);
	family_clear(&pc);
	for (i = 0; i < pc.nfam; i++)
		free(pc.fam[i].name);
	free(pc.fam);
	free(pc.keys);
	free(pc.ser);
	return rc;
}
