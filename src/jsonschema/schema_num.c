/*
 * jsonschema/schema_num.c - the numbers a schema allows: its minimum,
 * maximum, exclusive bounds and multipleOf turned into a grid of
 * integers (struct ispec) or of decimals (struct dspec) that the checks
 * count and generation draws from, in int64 arithmetic wherever a double
 * could round; and the saturating size arithmetic the passes share. See
 * schema_int.h.
 */
#include "jsonschema/schema_int.h"

uint64_t
schema_num_sat_mul(uint64_t a, uint64_t b, uint64_t cap)
{
	if (a == 0 || b == 0)
		return 0;
	if (a > cap / b)
		return cap;
	return a * b > cap ? cap : a * b;
}

size_t
schema_num_zmin(size_t a, size_t b)
{
	return a < b ? a : b;
}

size_t
schema_num_zmax(size_t a, size_t b)
{
	return a > b ? a : b;
}

int
schema_num_integral(double d)
{
	return d > -9.2e18 && d < 9.2e18 && (double)(int64_t)d == d;
}

/* ---- numbers ------------------------------------------------------------ */

static int
lo_ok(const struct bounds *b, double v)
{
	return !b->has_lo || (b->lo_excl ? v > b->lo : v >= b->lo);
}

static int
hi_ok(const struct bounds *b, double v)
{
	return !b->has_hi || (b->hi_excl ? v < b->hi : v <= b->hi);
}

/* multipleOf as ajv and python-jsonschema test it: v / mult is an
 * integer in IEEE double. */
int
schema_num_mult_ok(const struct bounds *b, double v)
{
	return b->mult == 0 || schema_num_integral(v / b->mult);
}

int
schema_num_ok(const struct bounds *b, double v)
{
	return lo_ok(b, v) && hi_ok(b, v) && schema_num_mult_ok(b, v);
}

/* multipleOf as m / 10^f with f <= 9: the shortest such decimal whose
 * nearest double is the keyword's value. */
int
schema_num_decimal(const json_t *v, int64_t *m, int64_t *p, int *f)
{
	double x, y;
	int64_t k, q = 1;
	int i;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 1 ||
		    json_integer_value(v) > INT_LIMIT)
			return 0;
		*m = json_integer_value(v);
		*p = 1;
		*f = 0;
		return 1;
	}
	x = json_real_value(v);
	for (i = 0; i <= 9; i++, q *= 10) {
		y = x * (double)q;
		if (y >= (double)INT_LIMIT)
			return 0;
		k = (int64_t)(y + 0.5);
		if (k >= 1 && (double)k / (double)q == x) {
			*m = k;
			*p = q;
			*f = i;
			return 1;
		}
	}
	return 0;
}

int64_t
schema_num_ceil_div(int64_t a, int64_t s)
{
	int64_t q = a / s;

	return (a % s != 0 && a > 0) ? q + 1 : q;
}

int64_t
schema_num_floor_div(int64_t a, int64_t s)
{
	int64_t q = a / s;

	return (a % s != 0 && a < 0) ? q - 1 : q;
}

int64_t
schema_num_gcd(int64_t a, int64_t b)
{
	while (b != 0) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The smallest integer above the lower bound x, |x| <= 2^53. */
static int64_t
ceil_bound(double x, int excl)
{
	int64_t t = (int64_t)x;

	if ((double)t < x)
		t++;
	if (excl && (double)t == x)
		t++;
	return t;
}

static int64_t
floor_bound(double x, int excl)
{
	int64_t t = (int64_t)x;

	if ((double)t > x)
		t--;
	if (excl && (double)t == x)
		t--;
	return t;
}

/*
 * The integers a schema allows, as k * step: bounds clamped to +-2^53
 * (int32 range for format int32); an unbounded side stays within SPAN of
 * the other (0..100 when both are open). 0, or -1 after schema_path_fail().
 */
int
schema_num_int_spec(struct ctx *c, const struct bounds *b, struct ispec *is)
{
	int64_t lim_lo = -INT_LIMIT, lim_hi = INT_LIMIT, lo = 0, hi = 0;
	int64_t s = 1, w, kl = 0, kh = 0, k, n;

	if (b->int32) {
		lim_lo = INT32_MIN;
		lim_hi = INT32_MAX;
	}
	if (b->beyond)
		goto empty;
	if (b->has_lo) {
		if (b->lo > (double)lim_hi)
			goto empty;
		lo = b->lo < (double)lim_lo ? lim_lo :
		    ceil_bound(b->lo, b->lo_excl);
	}
	if (b->has_hi) {
		if (b->hi < (double)lim_lo)
			goto empty;
		hi = b->hi > (double)lim_hi ? lim_hi :
		    floor_bound(b->hi, b->hi_excl);
	}
	is->verify = 0;
	if (b->mult > 0) {
		if (b->f == 0) {
			s = b->m;
		} else {
			s = b->m / schema_num_gcd(b->m, b->p);
			is->verify = 1;
		}
	}
	w = SPAN / s;
	if (b->has_lo)
		kl = schema_num_ceil_div(lo, s);
	if (b->has_hi)
		kh = schema_num_floor_div(hi, s);
	if (!b->has_lo && !b->has_hi) {
		kl = 0;
		kh = w;
	} else if (!b->has_hi) {
		kh = kl + (w < 1 ? 1 : w);
	} else if (!b->has_lo) {
		kl = kh - (w < 1 ? 1 : w);
		if (kh >= 0 && kl < 0)
			kl = 0;
	}
	if (kl < schema_num_ceil_div(lim_lo, s))
		kl = schema_num_ceil_div(lim_lo, s);
	if (kh > schema_num_floor_div(lim_hi, s))
		kh = schema_num_floor_div(lim_hi, s);
	if (kl > kh)
		goto empty;
	is->klo = kl;
	is->khi = kh;
	is->step = s;
	is->good = kl;
	if (!is->verify)
		return 0;
	for (n = 0; n < 64; n++) {
		k = (n % 2 == 0) ? kl + n / 2 : kh - n / 2;
		if (k >= kl && k <= kh &&
		    schema_num_mult_ok(b, (double)(k * s))) {
			is->good = k;
			return 0;
		}
	}
	schema_path_fail(c, TS_EINVAL, "no integer in range is a "
	    "\"multipleOf\" %.17g in IEEE division", b->mult);
	return -1;
empty:
	schema_path_fail(c, TS_EINVAL, "no integer within +-2^53 satisfies "
	    "\"minimum\", \"maximum\" and \"multipleOf\"");
	return -1;
}

double
schema_num_dec_val(const struct dspec *d, int64_t n)
{
	return (double)(n * d->m) / (double)d->p;
}

/* The grid n * m / p within the bounds; 1 when it is not empty. */
static int
dec_try(const struct bounds *b, int64_t m, int64_t p, int f,
    struct dspec *d)
{
	int64_t nmax = INT_LIMIT / m, w = SPAN * p / m, nl = 0, nh = 0, x;
	double a;
	int i;

	d->m = m;
	d->p = p;
	d->f = f;
	d->single = 0;
	if (w < 1)
		w = 1;
	if (b->has_lo) {
		a = b->lo * (double)p / (double)m;
		if (a > (double)nmax)
			return 0;
		if (a < -(double)nmax) {
			nl = -nmax;
		} else {
			nl = (int64_t)a;
			for (i = 0; i < 16 && nl > -nmax &&
			    lo_ok(b, schema_num_dec_val(d, nl - 1)); i++)
				nl--;
			for (i = 0; i < 16 && nl <= nmax &&
			    !lo_ok(b, schema_num_dec_val(d, nl)); i++)
				nl++;
			if (!lo_ok(b, schema_num_dec_val(d, nl)))
				return 0;
		}
	}
	if (b->has_hi) {
		a = b->hi * (double)p / (double)m;
		if (a < -(double)nmax)
			return 0;
		if (a > (double)nmax) {
			nh = nmax;
		} else {
			nh = (int64_t)a;
			for (i = 0; i < 16 && nh < nmax &&
			    hi_ok(b, schema_num_dec_val(d, nh + 1)); i++)
				nh++;
			for (i = 0; i < 16 && nh >= -nmax &&
			    !hi_ok(b, schema_num_dec_val(d, nh)); i++)
				nh--;
			if (!hi_ok(b, schema_num_dec_val(d, nh)))
				return 0;
		}
	}
	if (!b->has_lo && !b->has_hi) {
		nl = 0;
		nh = SPAN * p / m;
	} else if (!b->has_hi) {
		nh = nl + w;
	} else if (!b->has_lo) {
		nl = nh - w;
		if (nh >= 0 && nl < 0)
			nl = 0;
	}
	if (nl < -nmax)
		nl = -nmax;
	if (nh > nmax)
		nh = nmax;
	if (nl > nh)
		return 0;
	d->nlo = nl;
	d->nhi = nh;
	d->good = nl;
	if (b->mult == 0)
		return 1;
	for (i = 0; i < 64; i++) {
		x = (i % 2 == 0) ? nl + i / 2 : nh - i / 2;
		if (x >= nl && x <= nh &&
		    schema_num_mult_ok(b, schema_num_dec_val(d, x))) {
			d->good = x;
			return 1;
		}
	}
	return 0;
}

/*
 * The numbers a schema allows: a multipleOf grid, or the first of the
 * grids 0.01, 0.1, 1, 0.001 ... 1e-9 that meets the bounds, or one
 * bound itself. 0, or -1 after schema_path_fail().
 */
int
schema_num_dec_spec(struct ctx *c, const struct bounds *b, struct dspec *d)
{
	static const int order[] = { 2, 1, 0, 3, 4, 5, 6, 7, 8, 9 };
	int64_t p;
	size_t i;
	int j;
	double mid;

	if (b->beyond) {
		schema_path_fail(c, TS_EINVAL, "no number within +-2^53 "
		    "satisfies \"minimum\" and \"maximum\"");
		return -1;
	}
	if (b->mult > 0) {
		if (dec_try(b, b->m, b->p, b->f, d))
			return 0;
		schema_path_fail(c, TS_EINVAL, "no number within +-2^53 "
		    "satisfies \"minimum\", \"maximum\" and \"multipleOf\"");
		return -1;
	}
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		for (p = 1, j = 0; j < order[i]; j++)
			p *= 10;
		if (dec_try(b, 1, p, order[i], d))
			return 0;
	}
	d->single = 1;
	if (b->has_lo && !b->lo_excl && hi_ok(b, b->lo)) {
		d->value = b->lo;
		return 0;
	}
	if (b->has_hi && !b->hi_excl && lo_ok(b, b->hi)) {
		d->value = b->hi;
		return 0;
	}
	if (b->has_lo && b->has_hi) {
		mid = b->lo / 2 + b->hi / 2;
		if (lo_ok(b, mid) && hi_ok(b, mid)) {
			d->value = mid;
			return 0;
		}
	}
	schema_path_fail(c, TS_EINVAL, "no number satisfies \"minimum\" and "
	    "\"maximum\"");
	return -1;
}

