/*
 * fit.c - the latency profile's least-squares fit (fit.h): steps
 * reconstructed from token events, the regressions, the tests that keep
 * or drop a term, the residuals' percentiles.
 */
#include "bench/fit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double fit_pcts[FIT_NPCT] = {1, 5, 10, 25, 50, 75, 90, 95, 99};

/* The columns of a row, by index. */
enum { FIT_C1, FIT_CN, FIT_CC, FIT_CJ, FIT_CSU, FIT_CSU2 };

static const char *const fit_col_name[FIT_MAXK] = {
	"base", "per_seq_ms", "per_ctx_token_ms", "prefill base_ms",
	"prefill per_token_ms", "prefill per_token2_ms"
};

#define FIT_BIT(c) (1u << (c))
#define FIT_DECODE_COLS (FIT_BIT(FIT_C1) | FIT_BIT(FIT_CN) | \
	FIT_BIT(FIT_CC))
#define FIT_JOIN_COLS (FIT_DECODE_COLS | FIT_BIT(FIT_CJ) | \
	FIT_BIT(FIT_CSU))
#define FIT_PREFILL_COLS (FIT_BIT(FIT_C1) | FIT_BIT(FIT_CSU))

/* Relative size of a pivot below which a column is the others' sum. */
#define FIT_PIVOT_EPS 1e-9

static void
fit_note(struct fit_result *res, const char *fmt, ...)
{
	va_list ap;

	if (res->nnotes >= FIT_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(res->notes[res->nnotes++], FIT_NOTE_LEN, fmt, ap);
	va_end(ap);
}

static int
fit_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
fit_percentile_sorted(const double *v, size_t n, double p)
{
	double h = p / 100.0 * (double)(n - 1);
	size_t lo = (size_t)floor(h);

	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (h - (double)lo) * (v[lo + 1] - v[lo]);
}

/* ---- observations -------------------------------------------------- */

void
fit_rows_add(struct fit_rows *rows, const struct fit_row *r)
{
	if (rows->len == rows->cap) {
		rows->cap = rows->cap ? rows->cap * 2 : 256;
		rows->v = xrealloc(rows->v, rows->cap * sizeof(*rows->v));
	}
	rows->v[rows->len++] = *r;
	if (r->solo)
		rows->solo_rows++;
	else
		rows->step_rows++;
}

void
fit_rows_free(struct fit_rows *rows)
{
	if (rows == NULL)
		return;
	free(rows->v);
	memset(rows, 0, sizeof(*rows));
}

/* A token event on a trace's time line. */
struct fit_ev {
	int64_t t;              /* from the run's start, us */
	uint32_t r, i;          /* request, its event */
};

static int
fit_cmp_ev(const void *a, const void *b)
{
	const struct fit_ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

/* A request's index, by start. */
struct fit_by_start {
	int64_t start, end;     /* from the run's start */
	size_t r;
};

static int
fit_cmp_start(const void *a, const void *b)
{
	const struct fit_by_start *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

/* What one step gathered. */
struct fit_acc {
	uint32_t members, joiners, cont;
	long long active;       /* a difference: +1 at a first step,
				 * -1 after a last */
	int unclean;
	double c, cj, su, su2, gap;
};

/* The TTFT rows of the requests of t that were alone from their start
 * to their first token. */
static void
fit_solo_rows(const struct fit_trace *t, struct fit_rows *rows)
{
	struct fit_by_start *s;
	int64_t maxend = INT64_MIN;
	size_t i;

	if (t->nreqs == 0)
		return;
	s = xmalloc(t->nreqs * sizeof(*s));
	for (i = 0; i < t->nreqs; i++) {
		s[i].start = t->reqs[i].start_us;
		s[i].end = t->reqs[i].start_us + t->reqs[i].end_us;
		s[i].r = i;
	}
	qsort(s, t->nreqs, sizeof(*s), fit_cmp_start);
	for (i = 0; i < t->nreqs; i++) {
		const struct fit_req *q = &t->reqs[s[i].r];
		int64_t first;

		if (q->nev > 0) {
			first = s[i].start + q->ev_us[0];
			if (maxend <= s[i].start && (i + 1 == t->nreqs ||
			    s[i + 1].start >= first)) {
				struct fit_row row;
				double u = q->uncached;

				row.y = (double)q->ev_us[0] / 1000.0;
				row.n = 1;
				row.c = q->prompt_tokens;
				row.cj = q->prompt_tokens;
				row.j = 1;
				row.su = u;
				row.su2 = u * u;
				row.solo = 1;
				fit_rows_add(rows, &row);
			}
		}
		if (s[i].end > maxend)
			maxend = s[i].end;
	}
	free(s);
}

/* Checks the events of q: in time order, each with tokens. */
static enum ts_err
fit_req_check(const struct fit_req *q, size_t r, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < q->nev; i++) {
		if (q->ev_n[i] == 0 || q->ev_us[i] < 0 ||
		    (i > 0 && q->ev_us[i] < q->ev_us[i - 1])) {
			snprintf(err, errlen, "request %zu: token event %zu "
			    "is %s", r, i, q->ev_n[i] == 0 ? "empty" :
			    "out of time order");
			return TS_EINVAL;
		}
	}
	return TS_OK;
}

/* The step rows of one trace (step 1 of fit.h). */
static enum ts_err
fit_trace_rows(const struct fit_trace *t, size_t ti, struct fit_rows *rows,
    char *err, size_t errlen)
{
	struct fit_ev *ev = NULL;
	struct fit_acc *acc = NULL;
	size_t *off = NULL, *cl = NULL, *stamp = NULL;
	double *gaps = NULL, tol_us;
	size_t i, k, e, ne = 0, ngaps = 0, ncl = 0;
	long long active = 0;
	enum ts_err rc = TS_OK;

	off = xmalloc((t->nreqs + 1) * sizeof(*off));
	for (i = 0; i < t->nreqs; i++) {
		if ((rc = fit_req_check(&t->reqs[i], i, err, errlen)) !=
		    TS_OK)
			goto out;
		off[i] = ne;
		ne += t->reqs[i].nev;
	}
	off[t->nreqs] = ne;
	rows->requests += t->nreqs;
	rows->events += ne;
	if (ne == 0)
		goto out;
	ev = xmalloc(ne * sizeof(*ev));
	gaps = xmalloc(ne * sizeof(*gaps));
	for (i = 0, e = 0; i < t->nreqs; i++) {
		const struct fit_req *q = &t->reqs[i];

		for (k = 0; k < q->nev; k++, e++) {
			ev[e].t = q->start_us + q->ev_us[k];
			ev[e].r = (uint32_t)i;
			ev[e].i = (uint32_t)k;
			if (k > 0)
				gaps[ngaps++] = (double)(q->ev_us[k] -
				    q->ev_us[k - 1]);
		}
	}
	/* half a typical gap: a step's tokens arrive closer than that */
	tol_us = 1000.0;
	if (ngaps > 0) {
		qsort(gaps, ngaps, sizeof(*gaps), fit_cmp_double);
		tol_us = 0.5 * fit_percentile_sorted(gaps, ngaps, 50);
	}
	if (ti < sizeof(rows->tol_ms) / sizeof(rows->tol_ms[0]))
		rows->tol_ms[ti] = tol_us / 1000.0;
	qsort(ev, ne, sizeof(*ev), fit_cmp_ev);

	/* group into steps: cl[off[r] + i] is the step of event i of r */
	cl = xmalloc(ne * sizeof(*cl));
	stamp = xmalloc(t->nreqs * sizeof(*stamp));
	for (i = 0; i < t->nreqs; i++)
		stamp[i] = SIZE_MAX;
	{
		int64_t t0 = 0;

		for (e = 0; e < ne; e++) {
			if (ncl == 0 || (double)(ev[e].t - t0) > tol_us ||
			    stamp[ev[e].r] == ncl - 1) {
				ncl++;
				t0 = ev[e].t;
			}
			stamp[ev[e].r] = ncl - 1;
			cl[off[ev[e].r] + ev[e].i] = ncl - 1;
		}
	}
	rows->steps += ncl;

	/* what each step gathered; acc[k].active is a difference array */
	acc = xcalloc(ncl + 1, sizeof(*acc));
	for (i = 0; i < t->nreqs; i++) {
		const struct fit_req *q = &t->reqs[i];
		double before = 0;

		if (q->nev == 0)
			continue;
		acc[cl[off[i]]].active++;
		acc[cl[off[i] + q->nev - 1] + 1].active--;
		for (k = 0; k < q->nev; k++) {
			struct fit_acc *a = &acc[cl[off[i] + k]];
			size_t kc = cl[off[i] + k];

			a->members++;
			a->c += q->prompt_tokens + before;
			before += q->ev_n[k];
			if (q->ev_n[k] > 1)
				a->unclean = 1;
			if (k == 0) {
				double u = q->uncached;

				a->joiners++;
				a->cj += q->prompt_tokens;
				a->su += u;
				a->su2 += u * u;
			} else if (cl[off[i] + k - 1] + 1 == kc) {
				a->gap += (double)(q->ev_us[k] -
				    q->ev_us[k - 1]) / 1000.0;
				a->cont++;
			}
		}
	}
	for (k = 0; k < ncl; k++) {
		struct fit_acc *a = &acc[k];
		struct fit_row row;

		active += a->active;
		if (a->cont == 0) {
			rows->skipped_idle++;
			continue;
		}
		if (a->unclean || active != (long long)a->members) {
			rows->skipped_gap++;
			continue;
		}
		row.y = a->gap / a->cont;
		row.n = a->members;
		row.c = a->c;
		row.j = a->joiners;
		row.cj = a->cj;
		row.su = a->su;
		row.su2 = a->su2;
		row.solo = 0;
		fit_rows_add(rows, &row);
	}
	fit_solo_rows(t, rows);
out:
	free(acc);
	free(stamp);
	free(cl);
	free(gaps);
	free(ev);
	free(off);
	return rc;
}

enum ts_err
fit_rows_build(const struct fit_trace *traces, size_t ntraces,
    struct fit_rows *rows, char *err, size_t errlen)
{
	size_t i;
	enum ts_err rc;

	memset(rows, 0, sizeof(*rows));
	for (i = 0; i < ntraces; i++) {
		if ((rc = fit_trace_rows(&traces[i], i, rows, err, errlen)) !=
		    TS_OK) {
			fit_rows_free(rows);
			return rc;
		}
	}
	return TS_OK;
}

/* ---- least squares ------------------------------------------------- */

/* The columns of a row: n and C with the joiners (shares_step) or
 * without them (beside). */
static void
fit_row_x(const struct fit_row *r, int shares, double *x)
{
	x[FIT_C1] = 1;
	x[FIT_CN] = shares ? r->n : r->n - r->j;
	x[FIT_CC] = shares ? r->c : r->c - r->cj;
	x[FIT_CJ] = r->j;
	x[FIT_CSU] = r->su;
	x[FIT_CSU2] = r->su2;
}

static double
fit_predict(const struct fit_reg *r, const double *x)
{
	double s = 0;
	int j;

	for (j = 0; j < FIT_MAXK; j++)
		if (r->kept[j])
			s += r->coef[j] * x[j];
	return s;
}

enum ts_err
fit_ols(const double *x, const double *y, const unsigned char *mask,
    size_t n, unsigned use, struct fit_reg *r)
{
	double scale[FIT_MAXK], a[FIT_MAXK][FIT_MAXK], b[FIT_MAXK];
	double l[FIT_MAXK][FIT_MAXK], z[FIT_MAXK], beta[FIT_MAXK];
	double ymean = 0, tss = 0, sigma2;
	int kept[FIT_MAXK], idx[FIT_MAXK], m = 0, p, q, j, kk = 0;
	size_t i, nobs = 0;

	memset(r, 0, sizeof(*r));
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(l, 0, sizeof(l));
	for (j = 0; j < FIT_MAXK; j++) {
		scale[j] = 0;
		if (use & FIT_BIT(j))
			r->k++;
	}
	for (i = 0; i < n; i++) {
		if (mask != NULL && !mask[i])
			continue;
		nobs++;
		ymean += y[i];
		for (j = 0; j < FIT_MAXK; j++)
			scale[j] += x[i * FIT_MAXK + j] * x[i * FIT_MAXK + j];
	}
	if (nobs == 0)
		return TS_EINVAL;
	ymean /= (double)nobs;
	for (j = 0; j < FIT_MAXK; j++) {
		kept[j] = 0;
		if ((use & FIT_BIT(j)) && scale[j] > 0) {
			scale[j] = sqrt(scale[j] / (double)nobs);
			idx[m++] = j;
		}
	}
	for (i = 0; i < n; i++) {
		double xs[FIT_MAXK];

		if (mask != NULL && !mask[i])
			continue;
		tss += (y[i] - ymean) * (y[i] - ymean);
		for (p = 0; p < m; p++)
			xs[p] = x[i * FIT_MAXK + idx[p]] / scale[idx[p]];
		for (p = 0; p < m; p++) {
			b[p] += xs[p] * y[i];
			for (q = 0; q < m; q++)
				a[p][q] += xs[p] * xs[q];
		}
	}
	/* Cholesky in column order; a column the kept ones explain leaves */
	for (p = 0; p < m; p++) {
		double d = a[p][p];

		for (q = 0; q < p; q++)
			if (kept[q])
				d -= l[p][q] * l[p][q];
		if (!(d > FIT_PIVOT_EPS * a[p][p]))
			continue;
		kept[p] = 1;
		kk++;
		l[p][p] = sqrt(d);
		for (j = p + 1; j < m; j++) {
			double s = a[j][p];

			for (q = 0; q < p; q++)
				if (kept[q])
					s -= l[j][q] * l[p][q];
			l[j][p] = s / l[p][p];
		}
	}
	if (nobs < (size_t)kk + 2)
		return TS_EINVAL;
	/* L z = b, L^T beta = z, over the kept columns */
	for (p = 0; p < m; p++) {
		if (!kept[p])
			continue;
		z[p] = b[p];
		for (q = 0; q < p; q++)
			if (kept[q])
				z[p] -= l[p][q] * z[q];
		z[p] /= l[p][p];
	}
	for (p = m - 1; p >= 0; p--) {
		if (!kept[p])
			continue;
		beta[p] = z[p];
		for (q = p + 1; q < m; q++)
			if (kept[q])
				beta[p] -= l[q][p] * beta[q];
		beta[p] /= l[p][p];
	}
	for (p = 0; p < m; p++) {
		r->kept[idx[p]] = kept[p];
		r->coef[idx[p]] = kept[p] ? beta[p] / scale[idx[p]] : 0;
	}
	r->nobs = nobs;
	for (i = 0; i < n; i++) {
		double e;

		if (mask != NULL && !mask[i])
			continue;
		e = y[i] - fit_predict(r, &x[i * FIT_MAXK]);
		r->rss += e * e;
	}
	r->r2 = tss > 0 ? 1 - r->rss / tss : 1;
	r->rms = sqrt(r->rss / (double)nobs);
	sigma2 = r->rss / (double)(nobs - (size_t)kk);
	/* standard errors: sigma^2 (X'X)^-1's diagonal, one solve each */
	for (p = 0; p < m; p++) {
		double w[FIT_MAXK] = {0}, v[FIT_MAXK] = {0};
		int s;

		if (!kept[p])
			continue;
		for (s = 0; s < m; s++) {
			if (!kept[s])
				continue;
			w[s] = s == p ? 1 : 0;
			for (q = 0; q < s; q++)
				if (kept[q])
					w[s] -= l[s][q] * w[q];
			w[s] /= l[s][s];
		}
		for (s = m - 1; s >= 0; s--) {
			if (!kept[s])
				continue;
			v[s] = w[s];
			for (q = s + 1; q < m; q++)
				if (kept[q])
					v[s] -= l[q][s] * v[q];
			v[s] /= l[s][s];
		}
		/* v[p] > 0 in exact arithmetic; rounding may say otherwise */
		r->se[idx[p]] = v[p] > 0 ? sqrt(sigma2 * v[p]) /
		    scale[idx[p]] : 0;
	}
	return TS_OK;
}

/* ---- the profile --------------------------------------------------- */

/* The data of a fit: the rows' columns and values, and a row mask. */
struct fit_data {
	double *x, *y;
	unsigned char *mask, *base;
	size_t n;
};

/* The outlier pass (step 3): fits `use` over d->base, then leaves the
 * rows beyond the bound out of d->mask; returns how many left. */
static size_t
fit_outliers(struct fit_data *d, unsigned use)
{
	struct fit_reg r;
	double *res_abs, sigma, bound;
	size_t i, m = 0, dropped = 0;

	memcpy(d->mask, d->base, d->n);
	if (fit_ols(d->x, d->y, d->mask, d->n, use, &r) != TS_OK)
		return 0;
	res_abs = xmalloc((d->n ? d->n : 1) * sizeof(*res_abs));
	for (i = 0; i < d->n; i++)
		if (d->mask[i])
			res_abs[m++] = fabs(d->y[i] - fit_predict(&r,
			    &d->x[i * FIT_MAXK]));
	qsort(res_abs, m, sizeof(*res_abs), fit_cmp_double);
	/* the residuals' mean is 0: |e| about 0 is the MAD's stand-in */
	sigma = 1.4826 * fit_percentile_sorted(res_abs, m, 50);
	free(res_abs);
	bound = FIT_OUTLIER_SIGMAS * sigma;
	if (bound < FIT_OUTLIER_MIN_MS)
		bound = FIT_OUTLIER_MIN_MS;
	for (i = 0; i < d->n; i++)
		if (d->mask[i] && fabs(d->y[i] - fit_predict(&r,
		    &d->x[i * FIT_MAXK])) > bound) {
			d->mask[i] = 0;
			dropped++;
		}
	return dropped;
}

/* Least squares of `use` over d->mask, dropping the columns the data
 * cannot identify and the slopes that come out negative, one at a time
 * (step 3), each with a note. */
static enum ts_err
fit_settle(struct fit_data *d, unsigned use, struct fit_reg *r,
    struct fit_result *res, const char *what)
{
	enum ts_err rc;
	int j, again;

	do {
		if ((rc = fit_ols(d->x, d->y, d->mask, d->n, use, r)) !=
		    TS_OK)
			return rc;
		again = 0;
		for (j = 1; j < FIT_MAXK; j++) {
			if (!(use & FIT_BIT(j)))
				continue;
			if (!r->kept[j]) {
				fit_note(res, "%s: %s not identifiable (the "
				    "other terms explain its column: e.g. "
				    "one batch size or one prompt length "
				    "only): 0", what, fit_col_name[j]);
				use &= ~FIT_BIT(j);
			} else if (r->coef[j] < 0) {
				fit_note(res, "%s: %s came out negative "
				    "(%.4g +- %.2g): dropped, 0", what,
				    fit_col_name[j], r->coef[j], r->se[j]);
				use &= ~FIT_BIT(j);
				again = 1;
				break;
			}
		}
	} while (again);
	return TS_OK;
}

static unsigned fit_quadratic(struct fit_data *d, unsigned use,
    struct fit_result *res, const char *what);

/*
 * The fit of `use` over the rows of d->base (step 3 and 4 of fit.h): the
 * outlier pass (with u^2 when `quad`, so that a curve is not taken for
 * outliers), the u^2 test when `quad`, then fit_settle. d->mask holds
 * the rows used. `what` names the regression in the notes.
 */
static enum ts_err
fit_robust(struct fit_data *d, unsigned use, int quad, struct fit_reg *r,
    struct fit_result *res, const char *what)
{
	size_t dropped;
	enum ts_err rc;

	dropped = fit_outliers(d, use | (quad ? FIT_BIT(FIT_CSU2) : 0));
	if (quad)
		use = fit_quadratic(d, use, res, what);
	if ((rc = fit_settle(d, use, r, res, what)) != TS_OK)
		return rc;
	r->dropped = dropped;
	return TS_OK;
}

/* The F statistic of the fit `full` against `restr`, over the same
 * rows. 0 when it cannot be told (no column more, no residual). */
static double
fit_f(const struct fit_reg *full, const struct fit_reg *restr)
{
	int kf = 0, kr = 0, j;
	double den;

	for (j = 0; j < FIT_MAXK; j++) {
		kf += full->kept[j];
		kr += restr->kept[j];
	}
	if (kf <= kr || full->nobs <= (size_t)kf)
		return 0;
	den = full->rss / (double)(full->nobs - (size_t)kf);
	if (!(den > 0))
		return restr->rss > full->rss ? 1e9 : 0;
	return (restr->rss - full->rss) / (double)(kf - kr) / den;
}

/* Percentiles and standard deviation of v[0..n) (sorted here). */
static void
fit_jitter(double *v, size_t n, double *pct, double *std)
{
	double mean = 0, var = 0;
	size_t i;
	int p;

	qsort(v, n, sizeof(*v), fit_cmp_double);
	for (p = 0; p < FIT_NPCT; p++)
		pct[p] = fit_percentile_sorted(v, n, fit_pcts[p]);
	for (i = 0; i < n; i++)
		mean += v[i];
	mean /= (double)n;
	for (i = 0; i < n; i++)
		var += (v[i] - mean) * (v[i] - mean);
	*std = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
}

/* The residuals of r over the rows of d->mask where pick(row) holds,
 * into out[]; returns how many. */
static size_t
fit_residuals(const struct fit_data *d, const struct fit_rows *rows,
    const struct fit_reg *r, int (*pick)(const struct fit_row *),
    double *out)
{
	size_t i, m = 0;

	for (i = 0; i < d->n; i++)
		if (d->mask[i] && pick(&rows->v[i]))
			out[m++] = d->y[i] - fit_predict(r,
			    &d->x[i * FIT_MAXK]);
	return m;
}

static int
fit_pick_nojoin(const struct fit_row *r)
{
	return r->j == 0;
}

static int
fit_pick_onejoin(const struct fit_row *r)
{
	return r->j == 1;
}

static int
fit_pick_any(const struct fit_row *r)
{
	(void)r;
	return 1;
}

/* The quadratic term's test (step 4) over d->mask: `use` with u^2
 * against `use`; returns the columns to keep. */
static unsigned
fit_quadratic(struct fit_data *d, unsigned use, struct fit_result *res,
    const char *what)
{
	struct fit_reg q, lin;

	if (fit_ols(d->x, d->y, d->mask, d->n, use, &lin) != TS_OK ||
	    fit_ols(d->x, d->y, d->mask, d->n, use | FIT_BIT(FIT_CSU2), &q) !=
	    TS_OK || !q.kept[FIT_CSU2]) {
		fit_note(res, "%s: per_token2_ms not identifiable: 0", what);
		return use;
	}
	res->f_quad = fit_f(&q, &lin);
	if (res->f_quad > FIT_F_KEEP && q.coef[FIT_CSU2] > 0) {
		fit_note(res, "%s: per_token2_ms kept (F = %.1f > %.0f, "
		    "%.3g > 0)", what, res->f_quad, FIT_F_KEEP,
		    q.coef[FIT_CSU2]);
		return use | FIT_BIT(FIT_CSU2);
	}
	fit_note(res, "%s: per_token2_ms dropped (F = %.2f, coefficient "
	    "%.3g: the linear prefill fits)", what, res->f_quad,
	    q.coef[FIT_CSU2]);
	return use;
}

static int
fit_finite(const struct fit_result *r)
{
	int p;

	if (!isfinite(r->p0) || !isfinite(r->p1) || !isfinite(r->p2) ||
	    !isfinite(r->d0) || !isfinite(r->d1) || !isfinite(r->d2) ||
	    !isfinite(r->jit_prefill_std) || !isfinite(r->jit_decode_std) ||
	    !isfinite(r->decode.r2) || !isfinite(r->prefill.r2))
		return 0;
	for (p = 0; p < FIT_NPCT; p++)
		if (!isfinite(r->jit_prefill[p]) ||
		    !isfinite(r->jit_decode[p]))
			return 0;
	return 1;
}

/* shares_step's test (step 4): the step fit with the joiner terms
 * against the one without, over the steps of d->base. */
static void
fit_test_shares(struct fit_data *d, const struct fit_rows *rows,
    struct fit_result *res)
{
	struct fit_reg full, restr;
	size_t i, nj = 0;
	double cost = 0;

	for (i = 0; i < d->n; i++)
		if (d->base[i] && rows->v[i].j > 0)
			nj++;
	if (nj < FIT_MIN_JOIN) {
		fit_note(res, "shares_step: %zu steps with a joiner (need "
		    "%d): false, not tested (record at concurrency >= 2)",
		    nj, FIT_MIN_JOIN);
		return;
	}
	/* unconstrained both (a negative term is the test's answer) */
	(void)fit_outliers(d, FIT_JOIN_COLS | FIT_BIT(FIT_CSU2));
	if (fit_ols(d->x, d->y, d->mask, d->n, FIT_JOIN_COLS |
	    FIT_BIT(FIT_CSU2), &full) != TS_OK || fit_ols(d->x, d->y,
	    d->mask, d->n, FIT_DECODE_COLS, &restr) != TS_OK)
		return;
	res->f_shares = fit_f(&full, &restr);
	for (i = 0, nj = 0; i < d->n; i++)
		if (d->mask[i] && rows->v[i].j > 0) {
			cost += (full.coef[FIT_CJ] * rows->v[i].j +
			    full.coef[FIT_CSU] * rows->v[i].su +
			    full.coef[FIT_CSU2] * rows->v[i].su2) /
			    rows->v[i].j;
			nj++;
		}
	res->joiner_ms = nj ? cost / (double)nj : 0;
	res->shares_step = res->f_shares > FIT_F_KEEP && res->joiner_ms > 0;
	fit_note(res, "shares_step %s: steps with joiners take %.3f ms more "
	    "per joiner than the same steps without them (F = %.1f over %zu "
	    "steps, %zu with joiners; true when F > %.0f and the cost > 0)",
	    res->shares_step ? "true" : "false", res->joiner_ms,
	    res->f_shares, full.nobs, nj, FIT_F_KEEP);
}

/* shares_step: one regression over the steps and the lone TTFTs. */
static enum ts_err
fit_solve_shares(struct fit_data *d, const struct fit_rows *rows,
    struct fit_result *res, double *tmp)
{
	struct fit_reg *r = &res->decode;
	double vd, vj, scale;
	size_t i, m, mj;
	enum ts_err rc;

	for (i = 0; i < d->n; i++)
		d->base[i] = 1;
	if ((rc = fit_robust(d, FIT_JOIN_COLS, 1, r, res, "steps")) != TS_OK)
		return rc;
	res->d0 = r->coef[FIT_C1];
	res->d1 = r->coef[FIT_CN];
	res->d2 = r->coef[FIT_CC];
	res->p0 = r->coef[FIT_CJ];
	res->p1 = r->coef[FIT_CSU];
	res->p2 = r->coef[FIT_CSU2];
	m = fit_residuals(d, rows, r, fit_pick_nojoin, tmp);
	if (m >= 2) {
		fit_jitter(tmp, m, res->jit_decode, &res->jit_decode_std);
		res->has_jit_decode = 1;
	}
	mj = fit_residuals(d, rows, r, fit_pick_onejoin, tmp);
	if (mj >= 2 && res->has_jit_decode) {
		fit_jitter(tmp, mj, res->jit_prefill, &res->jit_prefill_std);
		vd = res->jit_decode_std * res->jit_decode_std;
		vj = res->jit_prefill_std * res->jit_prefill_std;
		scale = vj > vd ? sqrt(1 - vd / vj) : 0;
		for (i = 0; i < FIT_NPCT; i++)
			res->jit_prefill[i] *= scale;
		res->jit_prefill_std *= scale;
		res->has_jit_prefill = 1;
		fit_note(res, "prefill jitter: the residuals of %zu steps "
		    "with one joiner x %.3f (their spread less the decode "
		    "step's)", mj, scale);
	}
	/* the cross-check: lone TTFTs less their step, against u */
	for (i = 0, m = 0; i < d->n; i++) {
		d->base[i] = rows->v[i].solo;
		if (rows->v[i].solo) {
			tmp[i] = d->y[i];
			d->y[i] -= res->d0 + res->d1 + res->d2 *
			    rows->v[i].c;
			m++;
		}
	}
	if (m >= FIT_MIN_SOLO)
		(void)fit_robust(d, FIT_PREFILL_COLS | (r->kept[FIT_CSU2] ?
		    FIT_BIT(FIT_CSU2) : 0), 0, &res->prefill, res,
		    "cross-check");
	for (i = 0; i < d->n; i++)
		if (rows->v[i].solo)
			d->y[i] = tmp[i];
	if (res->prefill.nobs > 0)
		fit_note(res, "cross-check: the %zu lone TTFTs less their "
		    "step give prefill %.3f + %.5f u ms (the steps: %.3f + "
		    "%.5f u)", res->prefill.nobs,
		    res->prefill.coef[FIT_C1], res->prefill.coef[FIT_CSU],
		    res->p0, res->p1);
	return TS_OK;
}

/* beside: the steps alone, then the lone TTFTs. */
static enum ts_err
fit_solve_beside(struct fit_data *d, const struct fit_rows *rows,
    struct fit_result *res, double *tmp, char *err, size_t errlen)
{
	size_t i, m, nsolo = 0;
	enum ts_err rc;

	for (i = 0; i < d->n; i++)
		d->base[i] = !rows->v[i].solo;
	if ((rc = fit_robust(d, FIT_DECODE_COLS, 0, &res->decode, res,
	    "steps")) != TS_OK)
		return rc;
	res->d0 = res->decode.coef[FIT_C1];
	res->d1 = res->decode.coef[FIT_CN];
	res->d2 = res->decode.coef[FIT_CC];
	m = fit_residuals(d, rows, &res->decode, fit_pick_nojoin, tmp);
	if (m >= 2) {
		fit_jitter(tmp, m, res->jit_decode, &res->jit_decode_std);
		res->has_jit_decode = 1;
	}
	for (i = 0; i < d->n; i++) {
		d->base[i] = rows->v[i].solo != 0;
		nsolo += d->base[i];
	}
	if (nsolo < FIT_MIN_SOLO) {
		snprintf(err, errlen, "%zu requests ran alone (need %d): the "
		    "prefill is fitted from their TTFTs; record at "
		    "concurrency 1 too", nsolo, FIT_MIN_SOLO);
		return TS_EINVAL;
	}
	if ((rc = fit_robust(d, FIT_PREFILL_COLS, 1, &res->prefill, res,
	    "prefill")) != TS_OK) {
		snprintf(err, errlen, "the prefill fit over %zu lone TTFTs "
		    "failed", nsolo);
		return rc;
	}
	res->p0 = res->prefill.coef[FIT_C1];
	res->p1 = res->prefill.coef[FIT_CSU];
	res->p2 = res->prefill.coef[FIT_CSU2];
	m = fit_residuals(d, rows, &res->prefill, fit_pick_any, tmp);
	if (m >= 2) {
		fit_jitter(tmp, m, res->jit_prefill, &res->jit_prefill_std);
		res->has_jit_prefill = 1;
	}
	return TS_OK;
}

/* Takes the stack's own spread (std noise_ms) out of a jitter: the
 * variances subtract, the percentiles scale by the ratio of the std's. */
static void
fit_denoise(double *pct, double *std, double noise_ms,
    struct fit_result *res, const char *what)
{
	double v = *std * *std, nv = noise_ms * noise_ms, scale;
	int p;

	if (noise_ms <= 0)
		return;
	scale = v > nv ? sqrt(1 - nv / v) : 0;
	for (p = 0; p < FIT_NPCT; p++)
		pct[p] *= scale;
	*std *= scale;
	fit_note(res, "%s jitter: the stack's noise (std %.3f ms) taken "
	    "out: x %.3f", what, noise_ms, scale);
}

enum ts_err
fit_solve(const struct fit_rows *rows, const struct fit_opts *opts,
    struct fit_result *res, char *err, size_t errlen)
{
	static const struct fit_opts none;
	struct fit_data d;
	double *tmp = NULL;
	size_t i, nstep = 0;
	enum ts_err rc;

	memset(res, 0, sizeof(*res));
	if (errlen > 0)
		err[0] = '\0';
	if (opts == NULL)
		opts = &none;
	for (i = 0; i < rows->len; i++)
		nstep += !rows->v[i].solo;
	if (nstep < FIT_MIN_STEPS) {
		snprintf(err, errlen, "%zu decode steps observed (need %d): "
		    "record more requests or more output tokens each",
		    nstep, FIT_MIN_STEPS);
		return TS_EINVAL;
	}
	d.n = rows->len;
	d.x = xmalloc(d.n * FIT_MAXK * sizeof(*d.x));
	d.y = xmalloc(d.n * sizeof(*d.y));
	d.mask = xmalloc(d.n);
	d.base = xmalloc(d.n);
	tmp = xmalloc(d.n * sizeof(*tmp));
	for (i = 0; i < d.n; i++) {
		fit_row_x(&rows->v[i], 0, &d.x[i * FIT_MAXK]);
		d.y[i] = rows->v[i].y - (rows->v[i].solo ?
		    opts->ttft_offset_ms : 0);
		d.base[i] = !rows->v[i].solo;
	}
	if (opts->ttft_offset_ms != 0)
		fit_note(res, "the stack's TTFT offset, %.3f ms, taken from "
		    "every lone TTFT", opts->ttft_offset_ms);
	fit_test_shares(&d, rows, res);
	for (i = 0; res->shares_step && i < d.n; i++)
		fit_row_x(&rows->v[i], 1, &d.x[i * FIT_MAXK]);
	if (res->shares_step)
		rc = fit_solve_shares(&d, rows, res, tmp);
	else
		rc = fit_solve_beside(&d, rows, res, tmp, err, errlen);
	if (rc == TS_OK && res->has_jit_decode)
		fit_denoise(res->jit_decode, &res->jit_decode_std,
		    opts->noise_decode_ms, res, "decode");
	/* shares_step's prefill jitter is already a difference */
	if (rc == TS_OK && res->has_jit_prefill && !res->shares_step)
		fit_denoise(res->jit_prefill, &res->jit_prefill_std,
		    opts->noise_prefill_ms, res, "prefill");
	/* a profile's bases are at least 0 (engine/profile.h): an offset
	 * larger than the data's base, or an intercept a little below 0,
	 * is clamped, and said */
	if (rc == TS_OK && res->p0 < 0) {
		fit_note(res, "the prefill base came out %.3f ms (the TTFT "
		    "offset taken out is larger than the data's): 0 in the "
		    "profile", res->p0);
		res->p0 = 0;
	}
	if (rc == TS_OK && res->d0 < 0) {
		fit_note(res, "the decode base came out %.3f ms: 0 in the "
		    "profile", res->d0);
		res->d0 = 0;
	}
	if (rc == TS_OK && !fit_finite(res)) {
		snprintf(err, errlen, "the fit is not finite (degenerate "
		    "data)");
		rc = TS_EINVAL;
	} else if (rc != TS_OK && err[0] == '\0')
		snprintf(err, errlen, "too few observations for the fit");
	free(tmp);
	free(d.base);
	free(d.mask);
	free(d.y);
	free(d.x);
	return rc;
}
