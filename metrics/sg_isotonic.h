/*
 * Isotonic regression and where its fit crosses zero: the capacity search's point estimate (engine/search.c,
 * docs/capacity.md "The point estimate"). Pure functions; no I/O.
 *
 * The fit is the weighted least-squares non-decreasing sequence through y (pool-adjacent-violators): where two
 * neighbours are out of order they are pooled into their weighted mean, until none is. For shares k_i / n_i
 * weighted by n_i it is the maximum-likelihood estimate of binomial probabilities that rise with the load (Ayer et
 * al., 1955): a pooled block's value is its pooled share.
 */
#ifndef SG_ISOTONIC_H
#define SG_ISOTONIC_H

#include <stddef.h>

/* What a fit's crossing is: none (no points), a crossing between two values, at least the highest value (the fit is
 * <= 0 throughout), or below the lowest (> 0 throughout). */
typedef enum { SG_ISO_NONE = 0, SG_ISO_CROSSING, SG_ISO_AT_LEAST, SG_ISO_BELOW } sg_iso_kind_t;

/*
 * The weighted isotonic (non-decreasing) fit of y[0..n) in the order given (the points sorted by x), each with
 * weight w[i] > 0: fit[i] minimizes sum w_i (y_i - fit_i)^2 subject to fit[0] <= fit[1] <= ... fit may be y.
 * 0, or -1 when out of memory (fit untouched).
 */
int sg_isotonic_fit(const double *y, const double *w, size_t n, double *fit);

/*
 * Where a non-decreasing fit over ascending x[0..n) goes from <= 0 to > 0: at the first fit[j] > 0, linearly
 * interpolated between (x[j-1], fit[j-1]) and (x[j], fit[j]), so x[j-1] <= *at < x[j] (SG_ISO_CROSSING);
 * SG_ISO_AT_LEAST with *at = x[n-1] when no fit is > 0, SG_ISO_BELOW with *at = x[0] when fit[0] is; SG_ISO_NONE
 * (*at untouched) for n == 0.
 */
sg_iso_kind_t sg_isotonic_crossing(const double *x, const double *fit, size_t n, double *at);

/* "crossing", "at_least", "below", or "none". */
const char *sg_iso_kind_name(sg_iso_kind_t k);

#endif
