/*
 * Exact intervals for the statements surge makes about a load point (docs/capacity.md, "Verdicts and their
 * evidence"): which order statistics bound a quantile, Clopper-Pearson bounds on a proportion, Student's t for a
 * mean. Pure functions; no I/O.
 *
 * A quantile's interval is distribution-free: with n independent values, the number B of them below the true
 * p-quantile is Binomial(n, p), so the l-th and u-th smallest values bound it with probability
 * P(l <= B < u). sg_quantile_ranks picks the narrowest such ranks, each tail holding at most (1 - level)/2.
 */
#ifndef SG_STATS_H
#define SG_STATS_H

#include <stdint.h>

/* The regularized incomplete beta function I_x(a, b), a, b > 0, x in [0, 1]; NAN outside. */
double sg_betai(double a, double b, double x);

/* P(B <= k) for B ~ Binomial(n, p): 0 for k < 0, 1 for k >= n. */
double sg_binom_cdf(int64_t k, uint64_t n, double p);

/*
 * The ranks (1-based, among n values sorted ascending) whose values bound the p-quantile (0 < p < 1) at the given
 * confidence level (e.g. 0.95): *lo_rank = 0 when no value is low enough to be a lower bound at that level (the
 * bound is then -infinity), *hi_rank = n + 1 when none is high enough for an upper bound (+infinity).
 */
void sg_quantile_ranks(uint64_t n, double p, double level, uint64_t *lo_rank, uint64_t *hi_rank);

/* The fewest values whose largest is an upper bound of the p-quantile at this level: ceil(ln((1-level)/2)/ln p). */
uint64_t sg_quantile_min_n(double p, double level);

/* Clopper-Pearson bounds on a proportion from k successes in n trials (n > 0) at the given level. */
void sg_proportion_interval(uint64_t k, uint64_t n, double level, double *lo, double *hi);

/* Student's t distribution with df > 0 degrees of freedom (df need not be whole). */
double sg_t_cdf(double x, double df);
/* The x with P(T <= x) = p, for 0 < p < 1; NAN outside. Accurate to ~1e-12 relative. */
double sg_t_quantile(double p, double df);

#endif
