/*
 * SLO verdicts (--slo): a statement about a whole load point, such as "p99 of time_to_first_token below 500 ms"
 * or "error rate below 1%", checked on the merged metrics after the point ran. Unlike --goodput (a per-request
 * threshold, sg_slo_t in sg_metrics.h), a verdict is one outcome per point, pass, fail or inconclusive, with the
 * evidence it rests on (how many values, and an exact interval at a stated confidence level); sweeps and the
 * capacity search (engine/search.c) decide with them.
 *
 * Text form: METRIC:STAT OP VALUE for a per-request distribution (time_to_first_token:p99<500,
 * inter_token_latency:p95<=30, request_latency:avg<2000, output_token_throughput_per_user:p10>20), or
 * QUANTITY OP VALUE for a point-level quantity (error_rate<0.01, request_throughput>100,
 * output_token_throughput>5000). METRIC takes the --goodput names (ttft, tpot, e2el, ... and the metric tags);
 * STAT is avg, min, max, std or pNN (p50, p90, p99, p99.9); OP is <, <=, > or >=. Values are in the exported unit
 * (ms for times, tokens, tokens/s, requests/s, a fraction for error_rate).
 */
#ifndef SG_SLO_H
#define SG_SLO_H

#include "sg_metrics.h"

#include <jansson.h>

typedef enum { SG_SLO_OP_LT = 0, SG_SLO_OP_LE, SG_SLO_OP_GT, SG_SLO_OP_GE } sg_slo_op_t;

typedef enum {
    SG_SLO_DIST = 0,                /* a statistic of a per-request distribution: metric + stat */
    SG_SLO_ERROR_RATE,              /* failed / (ok + failed), a fraction: requests surge cancelled are in neither */
    SG_SLO_REQUEST_THROUGHPUT,      /* successful requests / duration, per s */
    SG_SLO_OUTPUT_TOKEN_THROUGHPUT, /* output tokens / duration, per s */
} sg_slo_kind_t;

typedef enum { SG_SLO_STAT_AVG = 0, SG_SLO_STAT_MIN, SG_SLO_STAT_MAX, SG_SLO_STAT_STD, SG_SLO_STAT_PCT } sg_slo_stat_t;

typedef struct sg_slo_check {
    sg_slo_kind_t kind;
    sg_metric_id_t metric; /* SG_SLO_DIST only */
    sg_slo_stat_t stat;    /* SG_SLO_DIST only */
    double pct;            /* SG_SLO_STAT_PCT: 0 < pct < 100 */
    sg_slo_op_t op;
    double target;  /* in the exported unit */
    char text[160]; /* canonical form, e.g. "time_to_first_token:p99<500", for tables and files */
} sg_slo_check_t;

/* A verdict's outcome at its confidence level (docs/capacity.md, "Verdicts and their evidence"). */
typedef enum { SG_SLO_PASS = 0, SG_SLO_FAIL, SG_SLO_INCONCLUSIVE } sg_slo_outcome_t;

typedef struct sg_slo_verdict {
    bool measurable; /* false when the point has no value for it (no request had the metric, nothing ran) */
    double measured; /* the point estimate, in the target's unit; 0 when not measurable */
    bool point_pass; /* measurable and measured OP target: what the point estimate alone says */
    sg_slo_outcome_t outcome;
    bool pass;         /* outcome == SG_SLO_PASS; a check that cannot be measured fails */
    uint64_t n;        /* the values it rests on: requests (gaps for inter_chunk_latency; 0 for throughputs) */
    bool has_interval; /* a percentile, an average or error_rate: lo..hi is its interval at `level` */
    double lo, hi;     /* in the target's unit; -INFINITY / INFINITY for an end the evidence cannot bound */
    double level;      /* the confidence level, e.g. 0.95 */
    double dispersion; /* a percentile's: the n values count as n / dispersion independent ones (1: as themselves;
                        * sg_slo_eval_clustered) */
} sg_slo_verdict_t;

/* The unit of a check's target and measured value: "ms", "tokens/sec/user", "requests/sec", "" for a fraction. */
const char *sg_slo_unit(const sg_slo_check_t *c);

/* Parse one --slo text. 0, or SG_EINVAL with a message naming the problem in err (without the flag's name). */
SG_WUR int sg_slo_parse(const char *text, sg_slo_check_t *out, char *err, size_t errlen);

/*
 * The verdict of each of n checks on a point's merged metrics; duration_s is sg_metrics_duration_s(m), level the
 * confidence level (0.95 by default). A percentile's interval is bounded by order statistics (sg_stats.h), an
 * average's by Student's t, error_rate's by Clopper-Pearson; the check passes when the whole interval meets the
 * target, fails when none of it does, and is inconclusive otherwise. min, max, std and the throughputs have no
 * interval: their point estimate decides (pass or fail). A request_latency percentile is the larger of the
 * completed requests' and sg_metrics_latency_at_least (the cancelled requests at their waits): the point's is known
 * to be at least that, and so is its interval's lower end.
 */
void sg_slo_eval(const sg_slo_check_t *checks, size_t n, const sg_metrics_t *m, double duration_s, double level,
                 sg_slo_verdict_t *out);

/*
 * The same, with each percentile check's values clustered: dispersion[i] >= 1 (NULL, or a value <= 1: none) says
 * that the spread of check i's count on the wrong side of its target is that many times a binomial's, as when slow
 * requests come in bursts (docs/capacity.md, "Clustered evidence"). Its interval is then the one n / dispersion
 * independent values would give, its ranks scaled back to the n measured: wider, never narrower.
 */
void sg_slo_eval_clustered(const sg_slo_check_t *checks, size_t n, const sg_metrics_t *m, double duration_s,
                           double level, const double *dispersion, sg_slo_verdict_t *out);

/*
 * How clustered a check's wrong-side requests are, from their counts in consecutive blocks (seconds of intended
 * start): Pearson's chi-square of the blocks' counts against one share, over its degrees of freedom, where that
 * chi-square is past its 99th percentile for independent requests (sg_slo_chi2_dispersion); else 1. s2 is the sum
 * over blocks of k_b^2 / n_b, k and n the totals, blocks the blocks with n_b > 0. 1 also when it cannot be told
 * (fewer than two blocks, or no count, or every request on the wrong side).
 */
double sg_slo_dispersion(double s2, uint64_t k, uint64_t n, uint64_t blocks);
/* chi2 / df where chi2 is past the 99th percentile of a chi-square with df degrees of freedom, else 1: chance alone
 * does not make independent requests look clustered (1 in 100). */
double sg_slo_chi2_dispersion(double chi2, double df);

/* The outcome of a point with these verdicts: fail when one fails, else inconclusive when one is, else pass (n > 0;
 * none at all: fail). */
sg_slo_outcome_t sg_slo_overall(const sg_slo_verdict_t *v, size_t n);

/* True when every verdict passes (and n > 0). */
bool sg_slo_all_pass(const sg_slo_verdict_t *v, size_t n);

/* A verdict's interval as a JSON pair [lo, hi], null for an end the evidence cannot bound; null when it has none. */
json_t *sg_slo_interval_json(const sg_slo_verdict_t *v);

/* "pass", "fail" or "inconclusive". */
const char *sg_slo_outcome_name(sg_slo_outcome_t o);

/*
 * The fewest values with which a percentile check can pass at this level (its upper bound must be a recorded value:
 * the largest of n bounds p only once p^n <= (1 - level)/2, so p99 needs 368 at 95%, p99.9 3,688), or an
 * error-rate ceiling T (with no failure, the rate's upper bound 1 - ((1-level)/2)^(1/n) must be under T: 368 for
 * error_rate<0.01); 0 for a check that needs no such count.
 */
uint64_t sg_slo_min_n(const sg_slo_check_t *c, double level);

/*
 * For a probe that can stop early: a check decided by how many requests exceed a per-request bound, i.e. a
 * percentile ceiling (STAT pNN with < or <= on a metric where smaller is better) or floor (pNN with > or >= on
 * output_token_throughput_per_user). Such a check fails once more than a share of the point's requests are on
 * the wrong side of target: 1 - pct/100 for a ceiling, pct/100 for a floor. Returns true and sets *share_allowed
 * to it; false for other checks, and for inter_chunk_latency, whose distribution holds every gap between events
 * (many per request), not one value per request.
 */
bool sg_slo_per_request_bound(const sg_slo_check_t *c, double *share_allowed);

/*
 * For such a check, how many of `planned` requests may be on the wrong side of the target before its failure is
 * significant at `level` whatever the rest do (and however many fewer end up measured): the probe stops once more
 * are. planned itself when the check could not fail significantly.
 */
uint64_t sg_slo_significant_room(const sg_slo_check_t *c, uint64_t planned, double level);
/* The same for requests clustered by dispersion (>= 1; sg_slo_eval_clustered): the room of planned / dispersion
 * independent values, scaled back. */
uint64_t sg_slo_significant_room_clustered(const sg_slo_check_t *c, uint64_t planned, double level, double dispersion);

#endif
