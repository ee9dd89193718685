/*
 * A multi-run's statistics (--num-profile-runs, engine/multirun.c): every metric of the runs' summaries
 * (profile_export_surge.json) as its mean across the runs with a Student's t confidence interval, in AIPerf's
 * aggregate shape (aggregate/profile_export_aiperf_aggregate.json and .csv, the same per-metric fields and
 * "<metric>_<stat>" keys). Main thread, after each run.
 */
#ifndef SG_CONFIDENCE_H
#define SG_CONFIDENCE_H

#include "sg_common.h"
#include "sg_stats.h"

#include <jansson.h>
#include <stdio.h>

/* One metric across the runs: the sample statistics of its finite values and the interval on their mean. */
typedef struct {
    size_t n;         /* finite values used */
    double mean, std; /* std: the sample standard deviation (n - 1); 0 for one value */
    double min, max;
    double cv;              /* std / |mean|; NAN when the mean is 0 */
    double se;              /* std / sqrt(n) */
    double t_critical;      /* t quantile at (1 + level) / 2 with n - 1 degrees of freedom; NAN for n < 2 */
    double ci_low, ci_high; /* mean -/+ t_critical * se; both the mean for n < 2 */
} sg_ci_t;

/* The statistics of v[0..n) (non-finite values skipped) at a confidence level in (0, 1). n == 0 in the result
 * when no value was finite (then every figure is NAN). */
void sg_ci_compute(const double *v, size_t n, double level, sg_ci_t *out);

/*
 * The aggregate of the runs' summaries (each a parsed profile_export_surge.json; n >= 1): for every metric (a
 * member that is an object with a "unit") and every statistic of it that is a number in some run, key
 * "<metric>_<stat>" -> {mean, std, min, max, cv, se, ci_low, ci_high, t_critical, unit, n}, in the runs' order.
 * Returns a new object, or NULL on OOM.
 */
json_t *sg_ci_metrics(json_t *const *summaries, size_t n, double level);

/* aggregate/<...>.csv: AIPerf's layout (a metric table, a blank line, the metadata as key-value rows), figures at
 * full precision. agg is the whole aggregate ({"metadata", "metrics"}). 0 or -errno; whole or not at all. */
SG_WUR int sg_ci_csv(const char *path, json_t *agg);

/* The console table: the key metrics (TTFT, ITL, latency: avg, p50, p90, p99; the throughputs) as mean +/- the
 * interval's half-width, with CV, min and max. */
void sg_ci_table(FILE *out, json_t *agg);

/* A sweep of multi-runs: one row per load value, the key metrics as mean +/- the interval's half-width. aggs[i] is
 * value i's aggregate (NULL: none). */
void sg_ci_sweep_table(FILE *out, bool closed, const double *values, json_t *const *aggs, size_t n);

#endif
