/*
 * HDR-style histogram of non-negative integers: log-linear buckets with 2048 sub-buckets per power of two, so
 * any reported percentile is within 0.1% (relative) of the recorded value it stands for. count, min, max, mean
 * and standard deviation are exact (kept beside the buckets). Mergeable, so each worker keeps its own and the
 * controller merges after the workers join: no sharing on the hot path.
 *
 * Buckets: values below 2048 are exact; each power of two above is cut into 1024 linear buckets (HdrHistogram's
 * "2048 sub-buckets"), and a percentile reports its bucket's midpoint, so it is within 1/2048 of the true value.
 * Size: about 8 * 1024 * (log2(max_value) - 8) bytes, e.g. 270 KB for one hour in ns; allocated zeroed, so pages
 * of buckets never hit cost no RSS.
 *
 * Ownership: the creator frees with sg_hist_free. Not thread-safe: one writer, readers after it is done.
 */
#ifndef SG_HIST_H
#define SG_HIST_H

#include "sg_common.h"

typedef struct sg_hist sg_hist_t;

/* Values above max_value are clamped to it (and counted in sg_hist_clamped). max_value >= 1. NULL on OOM. */
SG_WUR sg_hist_t *sg_hist_new(uint64_t max_value);
void sg_hist_free(sg_hist_t *h);
void sg_hist_reset(sg_hist_t *h);
/* Hot path: no allocation, no branches beyond the clamp. */
void sg_hist_record(sg_hist_t *h, uint64_t value);
void sg_hist_record_n(sg_hist_t *h, uint64_t value, uint64_t n);
/* dst += src. Both must have been made with the same max_value, else SG_EINVAL. */
SG_WUR int sg_hist_merge(sg_hist_t *dst, const sg_hist_t *src);

uint64_t sg_hist_count(const sg_hist_t *h);
uint64_t sg_hist_clamped(const sg_hist_t *h);
uint64_t sg_hist_min(const sg_hist_t *h);  /* exact; 0 when empty */
uint64_t sg_hist_max(const sg_hist_t *h);  /* exact; 0 when empty */
double sg_hist_mean(const sg_hist_t *h);   /* exact (up to double rounding); 0 when empty */
double sg_hist_stddev(const sg_hist_t *h); /* population standard deviation (numpy's default) */
/* Bytes one histogram holds (for sizing reports). */
size_t sg_hist_bytes(const sg_hist_t *h);
/* The max_value it was made with. */
uint64_t sg_hist_max_value(const sg_hist_t *h);
/*
 * Nearest-rank percentile, p in [0, 100]: the value v such that ceil(p/100 * count) recorded values are <= v,
 * reported within 0.1% of the true recorded value at that rank and clamped to [min, max]. 0 when empty.
 */
double sg_hist_percentile(const sg_hist_t *h, double p);
/* The rank-th smallest recorded value (1-based, clamped to [1, count]), to the same precision. 0 when empty. */
double sg_hist_at_rank(const sg_hist_t *h, uint64_t rank);
/* How many recorded values are above v, to the buckets' precision: a value in v's own bucket counts as not above. */
uint64_t sg_hist_count_above(const sg_hist_t *h, uint64_t v);

#endif
