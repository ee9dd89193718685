/*
 * Exact intervals: incomplete beta, binomial tails, order-statistic ranks, Clopper-Pearson, Student's t
 * (sg_stats.h).
 *
 * The t distribution's tail is a regularized incomplete beta function: P(T > x) = I_{df/(df+x^2)}(df/2, 1/2) / 2
 * for x >= 0. The quantile inverts the tail probability (not 1 - the CDF, so no precision is lost near 1) by
 * Newton's method on the t density, kept inside a bracket that bisection narrows whenever a Newton step would
 * leave it.
 */
#define _GNU_SOURCE
#include "sg_stats.h"

#include <math.h>

/*
 * The continued fraction of I_x(a, b) (Abramowitz and Stegun 26.5.8), evaluated with the modified Lentz method.
 * It converges fast for x < (a + 1) / (a + b + 2); the caller uses the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
 * otherwise. Its terms grow with sqrt(max(a, b)), so the limit on them is generous (a binomial over millions of
 * requests needs a few thousand).
 */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 200000; m++) {
        double m2 = 2.0 * m;
        /* the even step */
        double num = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
        d = 1 + num * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + num / c;
        if (fabs(c) < tiny)
            c = tiny;
        h *= d * c;
        /* the odd step */
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
        d = 1 + num * d;
        d = fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + num / c;
        if (fabs(c) < tiny)
            c = tiny;
        double step = d * c;
        h *= step;
        if (fabs(step - 1) < eps)
            break;
    }
    return h;
}

double sg_betai(double a, double b, double x)
{
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1))
        return NAN;
    if (x == 0 || x == 1)
        return x;
    /* log of x^a (1-x)^b / B(a, b) */
    double front = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1) / (a + b + 2))
        return exp(front) * beta_cf(a, b, x) / a;
    return 1 - exp(front) * beta_cf(b, a, 1 - x) / b;
}

double sg_binom_cdf(int64_t k, uint64_t n, double p)
{
    if (k < 0)
        return 0;
    if ((uint64_t)k >= n)
        return 1;
    /* P(B <= k) = I_{1-p}(n - k, k + 1) */
    return sg_betai((double)(n - (uint64_t)k), (double)k + 1, 1 - p);
}

void sg_quantile_ranks(uint64_t n, double p, double level, uint64_t *lo_rank, uint64_t *hi_rank)
{
    double tail = (1 - level) / 2;
    /* the largest j with P(B <= j) <= tail (j = -1 when none): the lower bound is the (j+1)-th value, since it is
     * below the quantile unless at most j values are */
    int64_t lo = -1, hi = (int64_t)n;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sg_binom_cdf(mid, n, p) <= tail)
            lo = mid;
        else
            hi = mid;
    }
    *lo_rank = (uint64_t)(lo + 1);
    /* the smallest j with P(B <= j) >= 1 - tail: the upper bound is the (j+1)-th value (n + 1: none) */
    lo = -1;
    hi = (int64_t)n;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sg_binom_cdf(mid, n, p) >= 1 - tail)
            hi = mid;
        else
            lo = mid;
    }
    *hi_rank = (uint64_t)hi + 1;
}

uint64_t sg_quantile_min_n(double p, double level)
{
    /* the largest of n values bounds the quantile from above once P(all n below it) = p^n <= (1 - level) / 2 */
    double n = ceil(log((1 - level) / 2) / log(p) - 1e-9);
    return n < 1 ? 1 : (uint64_t)n;
}

/* The x with I_x(a, b) = q, by bisection (I is increasing in x): to the last bit, a few hundred steps at most. */
static double beta_inv(double q, double a, double b)
{
    double lo = 0, hi = 1;
    for (int i = 0; i < 2000; i++) {
        double mid = lo + (hi - lo) / 2;
        if (mid <= lo || mid >= hi)
            break;
        if (sg_betai(a, b, mid) < q)
            lo = mid;
        else
            hi = mid;
    }
    return lo + (hi - lo) / 2;
}

void sg_proportion_interval(uint64_t k, uint64_t n, double level, double *lo, double *hi)
{
    double tail = (1 - level) / 2;
    *lo = k == 0 ? 0 : beta_inv(tail, (double)k, (double)(n - k) + 1);
    *hi = k >= n ? 1 : beta_inv(1 - tail, (double)k + 1, (double)(n - k));
}

/* P(T > x) for x >= 0. */
static double t_tail(double x, double df)
{
    double x2 = x * x;
    /* df / (df + x^2), and its complement without cancellation: the series picks whichever side converges */
    double z = df / (df + x2);
    if (z > 0.5) /* small x: I_z(df/2, 1/2) = 1 - I_{1-z}(1/2, df/2), 1 - z = x^2 / (df + x^2) exactly */
        return 0.5 * (1 - sg_betai(0.5, df / 2, x2 / (df + x2)));
    return 0.5 * sg_betai(df / 2, 0.5, z);
}

double sg_t_cdf(double x, double df)
{
    if (isnan(x) || !(df > 0))
        return NAN;
    if (isinf(x))
        return x > 0 ? 1 : 0;
    return x >= 0 ? 1 - t_tail(x, df) : t_tail(-x, df);
}

/* The t density at x. */
static double t_pdf(double x, double df)
{
    double l = lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI) - (df + 1) / 2 * log1p(x * x / df);
    return exp(l);
}

double sg_t_quantile(double p, double df)
{
    if (!(p > 0) || !(p < 1) || !(df > 0))
        return NAN;
    if (p == 0.5)
        return 0;
    double q = p < 0.5 ? p : 1 - p; /* the upper tail wanted, at x >= 0 (1 - p is exact for p >= 0.5) */
    /* bracket: t_tail(lo) > q >= t_tail(hi) */
    double lo = 0, hi = 1;
    while (t_tail(hi, df) > q) {
        lo = hi;
        hi *= 2;
        if (hi > 1e300)
            return p > 0.5 ? INFINITY : -INFINITY;
    }
    double x = (lo + hi) / 2;
    for (int it = 0; it < 400; it++) {
        double f = t_tail(x, df) - q; /* decreasing in x */
        if (f > 0)
            lo = x;
        else
            hi = x;
        if (f == 0)
            break;
        double step = f / t_pdf(x, df); /* Newton on t_tail(x) - q: derivative -pdf */
        double nx = x + step;
        if (!(nx > lo && nx < hi))
            nx = (lo + hi) / 2;
        if (fabs(nx - x) <= 1e-15 * fabs(nx) || hi - lo <= 1e-15 * hi) {
            x = nx;
            break;
        }
        x = nx;
    }
    return p > 0.5 ? x : -x;
}
