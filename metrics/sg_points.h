/*
 * Many load points in one table: the rows of a sweep (sweep_summary.json/.csv) and the probes of a capacity search
 * (search.json/.csv), one row per point with its load, what it achieved, the key percentiles, its errors and its
 * --slo verdicts. Each point's own files (the full table, every request) are in its sub-directory; these rows are
 * taken from the same merged metrics. Main thread, after each point.
 */
#ifndef SG_POINTS_H
#define SG_POINTS_H

#include "sg_slo.h"

#include <jansson.h>
#include <stdio.h>

typedef struct sg_point_row {
    bool closed;    /* a closed loop (value = concurrency) or an open loop (value = requests/s offered) */
    double value;   /* the load asked for */
    unsigned trial; /* search: 1..--search-trials; a sweep: 1 */
    char dir[128];  /* the point's sub-directory of the artifact directory */
    int exit_code;  /* the point's own exit status (docs/cli.md) */
    bool interrupted;
    /* a search probe */
    bool stopped_early;       /* stopped before its end once an --slo could no longer be met */
    bool overloaded;          /* the requests outstanding grew through the sending: the server fell behind */
    bool pass;                /* the probe's verdict: every --slo passed, not overloaded, not interrupted */
    sg_slo_outcome_t verdict; /* pass, fail or inconclusive: the value's verdict on the probes pooled so far */
    unsigned pooled;          /* how many probes of this value the verdicts rest on (1: this one alone) */
    char why[256];            /* why it failed or is inconclusive, in words ("" when it passed) */
    /* figures (times in ms; NAN when the point has none) */
    uint64_t ok, errors, cancelled; /* ok, failed, cancelled by surge (neither: docs/metrics.md) */
    uint64_t cancelled_by_test;     /* cut by the cancellation test (--request-cancellation-rate): neither either */
    bool cancel_test;               /* the point ran a cancellation test: its column shows even at 0 */
    double duration_s;
    double offered_rate;       /* requests issued (ok + failed + cancelled) per second of the sending */
    double request_throughput; /* ok requests per second of the duration */
    double output_token_throughput;
    double ttft_p50, ttft_p99, itl_p50, itl_p99, latency_p50, latency_p99, lag_p99;
    size_t n_slo;
    sg_slo_verdict_t verdicts[SG_SLO_MAX]; /* a probe: on its value's pooled probes */
    bool slo_pass;
    sg_slo_outcome_t slo_outcome; /* sg_slo_overall of the verdicts */
} sg_point_row_t;

/* Fill the figures of row from a point's merged metrics (load, dir and verdicts are the caller's). */
void sg_point_row_fill(sg_point_row_t *row, const sg_metrics_t *m);

/*
 * The console table: one row per point. checks names the --slo columns (n_slo of them, may be 0); probes adds the
 * search's columns (trial, verdict, why).
 */
void sg_points_table(FILE *out, const char *title, const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks,
                     size_t n_slo, bool probes);

/* The rows as a JSON array (new reference; NULL on OOM). */
json_t *sg_points_json(const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks, size_t n_slo);

/* <path>.csv: a header, then one line per row. 0 or -errno; written whole or not at all. */
SG_WUR int sg_points_csv(const char *path, const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks,
                         size_t n_slo);

#endif
