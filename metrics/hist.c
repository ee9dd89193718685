/*
 * Log-linear histogram (the HdrHistogram idea, our own code).
 *
 * Layout: values below 2048 get one bucket each, so they are exact. Above that, every power of two
 * [2^m, 2^(m+1)) is cut into 1024 equal buckets of width 2^(m-10). With HdrHistogram's vocabulary this is a
 * sub-bucket count of 2048 per power of two (the lower half of each range is shared with the range below).
 * A bucket's width is at most 1/1024 of its lowest value; reporting the bucket's midpoint puts every
 * percentile within 1/2048 (< 0.05%) of the recorded value it stands for.
 *
 * The index needs no branch: with shift = max(msb(v), 10) - 10, idx = shift * 1024 + (v >> shift). For v < 2048
 * shift is 0 and idx = v; for larger v, (v >> shift) lies in [1024, 2047], so consecutive powers of two tile
 * the index space without gaps.
 */
#include "sg_hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SUB_BITS 10u                 /* 1024 linear buckets per power of two above the exact range */
#define EXACT_LIMIT (2u << SUB_BITS) /* 2048: values below are exact */

struct sg_hist {
    uint64_t max_value;
    uint64_t count;
    uint64_t clamped;
    uint64_t min; /* UINT64_MAX while empty, so the hot path needs no "first value" branch */
    uint64_t max;
    /* Exact sums: 3.6e12 ns squared is ~1.3e25, so 128 bits hold ~2.6e13 samples of an hour each. */
    unsigned __int128 sum;
    unsigned __int128 sum_sq;
    size_t n_buckets;
    uint64_t buckets[];
};

static inline size_t bucket_index(uint64_t v)
{
    /* (v | (EXACT_LIMIT - 1)) has its top bit at 10 or above, which also keeps clzll away from 0. */
    unsigned msb = 63u - (unsigned)__builtin_clzll(v | (EXACT_LIMIT - 1));
    unsigned shift = msb - SUB_BITS;
    return ((size_t)shift << SUB_BITS) + (size_t)(v >> shift);
}

/* Lowest value and width of bucket idx (inverse of bucket_index). */
static void bucket_range(size_t idx, uint64_t *lo, uint64_t *width)
{
    if (idx < EXACT_LIMIT) {
        *lo = idx;
        *width = 1;
        return;
    }
    unsigned shift = (unsigned)(idx >> SUB_BITS) - 1u;
    uint64_t sub = idx - ((size_t)shift << SUB_BITS);
    *lo = sub << shift;
    *width = (uint64_t)1 << shift;
}

sg_hist_t *sg_hist_new(uint64_t max_value)
{
    if (max_value < 1)
        return NULL;
    size_t n = bucket_index(max_value) + 1;
    /* calloc: pages of buckets never hit stay untouched, so RSS follows the values actually seen. */
    sg_hist_t *h = calloc(1, sizeof(*h) + n * sizeof(h->buckets[0]));
    if (!h)
        return NULL;
    h->max_value = max_value;
    h->n_buckets = n;
    h->min = UINT64_MAX;
    return h;
}

void sg_hist_free(sg_hist_t *h)
{
    free(h);
}

size_t sg_hist_bytes(const sg_hist_t *h)
{
    return sizeof(*h) + h->n_buckets * sizeof(h->buckets[0]);
}

uint64_t sg_hist_max_value(const sg_hist_t *h)
{
    return h->max_value;
}

void sg_hist_reset(sg_hist_t *h)
{
    memset(h->buckets, 0, h->n_buckets * sizeof(h->buckets[0]));
    h->count = 0;
    h->clamped = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->sum = 0;
    h->sum_sq = 0;
}

void sg_hist_record(sg_hist_t *h, uint64_t value)
{
    if (SG_UNLIKELY(value > h->max_value)) {
        value = h->max_value;
        h->clamped++;
    }
    h->buckets[bucket_index(value)]++;
    h->count++;
    h->sum += value;
    h->sum_sq += (unsigned __int128)value * value;
    h->min = value < h->min ? value : h->min;
    h->max = value > h->max ? value : h->max;
}

void sg_hist_record_n(sg_hist_t *h, uint64_t value, uint64_t n)
{
    if (n == 0)
        return;
    if (value > h->max_value) {
        value = h->max_value;
        h->clamped += n;
    }
    h->buckets[bucket_index(value)] += n;
    h->count += n;
    h->sum += (unsigned __int128)value * n;
    h->sum_sq += (unsigned __int128)value * value * n;
    h->min = value < h->min ? value : h->min;
    h->max = value > h->max ? value : h->max;
}

int sg_hist_merge(sg_hist_t *dst, const sg_hist_t *src)
{
    if (dst->max_value != src->max_value || dst->n_buckets != src->n_buckets)
        return SG_EINVAL;
    if (src->count == 0)
        return 0;
    for (size_t i = 0; i < src->n_buckets; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->clamped += src->clamped;
    dst->sum += src->sum;
    dst->sum_sq += src->sum_sq;
    dst->min = src->min < dst->min ? src->min : dst->min;
    dst->max = src->max > dst->max ? src->max : dst->max;
    return 0;
}

uint64_t sg_hist_count(const sg_hist_t *h)
{
    return h->count;
}

uint64_t sg_hist_clamped(const sg_hist_t *h)
{
    return h->clamped;
}

uint64_t sg_hist_min(const sg_hist_t *h)
{
    return h->count ? h->min : 0;
}

uint64_t sg_hist_max(const sg_hist_t *h)
{
    return h->count ? h->max : 0;
}

double sg_hist_mean(const sg_hist_t *h)
{
    if (h->count == 0)
        return 0.0;
    /* Divide in integers first so the double conversion loses nothing the quotient can show. */
    unsigned __int128 q = h->sum / h->count, r = h->sum % h->count;
    return (double)q + (double)r / (double)h->count;
}

double sg_hist_stddev(const sg_hist_t *h)
{
    if (h->count < 2)
        return 0.0;
    /*
     * n^2 * var = n * sum_sq - sum^2, exact in integers when it fits. sum^2 may not fit in 128 bits for
     * large inputs, so compute var = (sum_sq - sum * mean) / n via the integer quotient and remainder of the
     * mean, keeping everything exact except the final fraction.
     */
    unsigned __int128 n = h->count;
    unsigned __int128 q = h->sum / n, r = h->sum % n;
    /* sum * (q + r/n) = sum*q + sum*r/n; sum*q <= sum_sq by Cauchy-Schwarz-like bound (q <= max). */
    unsigned __int128 sq = h->sum * q;
    if (sq > h->sum_sq)
        return 0.0;
    unsigned __int128 rest = h->sum_sq - sq;
    /* var = (rest - sum*r/n) / n; sum*r/n = (q*n + r)*r/n = q*r + r*r/n */
    unsigned __int128 qr = q * r;
    if (qr > rest)
        return 0.0;
    rest -= qr;
    double var = ((double)rest - (double)(r * r) / (double)n) / (double)n;
    return var > 0 ? sqrt(var) : 0.0;
}

double sg_hist_percentile(const sg_hist_t *h, double p)
{
    if (h->count == 0)
        return 0.0;
    if (!(p > 0.0)) /* also catches NaN */
        return (double)h->min;
    if (p >= 100.0)
        return (double)h->max;
    /*
     * Nearest rank: ceil(p/100 * n). p*n is formed before dividing so that round p and n give an exact
     * product; the small slack keeps an exact integer from rounding up to the next rank.
     */
    double x = p * (double)h->count / 100.0;
    double c = ceil(x - x * 1e-12);
    return sg_hist_at_rank(h, c < 1.0 ? 1 : c >= (double)h->count ? h->count : (uint64_t)c);
}

uint64_t sg_hist_count_above(const sg_hist_t *h, uint64_t v)
{
    if (h->count == 0 || v >= h->max)
        return 0;
    if (v < h->min)
        return h->count;
    uint64_t n = 0;
    for (size_t i = bucket_index(v) + 1; i < h->n_buckets; i++)
        n += h->buckets[i];
    return n;
}

double sg_hist_at_rank(const sg_hist_t *h, uint64_t rank)
{
    if (h->count == 0)
        return 0.0;
    /* The first and last ranks are the exact min and max: small samples then read p99 == max, as users expect. */
    if (rank <= 1)
        return (double)h->min;
    if (rank >= h->count)
        return (double)h->max;
    uint64_t seen = 0;
    size_t i = 0;
    for (; i < h->n_buckets; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            break;
    }
    uint64_t lo, width;
    bucket_range(i, &lo, &width);
    uint64_t hi = lo + (width - 1);
    /* The exact min and max narrow the bucket that holds them, so p0/p100 are exact and the ends tighter. */
    lo = lo < h->min ? h->min : lo;
    hi = hi > h->max ? h->max : hi;
    return (double)lo + (double)(hi - lo) / 2.0;
}
