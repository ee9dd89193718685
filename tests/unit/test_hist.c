/* sg_hist against exact nearest-rank percentiles of sorted arrays, plus merge, clamp and the exact moments. */
#include "sg_hist.h"
#include "test.h"

#include <stdlib.h>

#define HOUR_NS (3600ULL * 1000000000ULL)

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

/* splitmix64: tiny and good enough to draw test data. */
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double next_unit(void) /* (0, 1) */
{
    return ((double)(next_u64() >> 11) + 0.5) / 9007199254740992.0;
}

static double next_normal(void)
{
    return sqrt(-2.0 * log(next_unit())) * cos(6.283185307179586 * next_unit());
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Percentiles to check, in thousandths of a percent so the reference rank is exact integer arithmetic. */
static const uint64_t pcts_milli[] = {0,     1,     100,   1000,  5000,  10000, 25000, 33333, 50000, 66667,
                                      75000, 90000, 95000, 99000, 99500, 99900, 99990, 99999, 100000};

static uint64_t ref_percentile(const uint64_t *sorted, size_t n, uint64_t p_milli)
{
    /* nearest rank: ceil(p/100 * n), at least 1 */
    uint64_t rank = (p_milli * (uint64_t)n + 99999) / 100000;
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

/* Records v[0..n) and checks every statistic against the exact answer. */
static void check_against(const char *name, uint64_t *v, size_t n, uint64_t max_value)
{
    sg_hist_t *h = sg_hist_new(max_value);
    CHECK(h != NULL);
    if (!h)
        return;
    for (size_t i = 0; i < n; i++)
        sg_hist_record(h, v[i]);
    qsort(v, n, sizeof(*v), cmp_u64);

    CHECK_EQ_INT(sg_hist_count(h), n);
    CHECK_EQ_INT(sg_hist_clamped(h), 0);
    CHECK_EQ_INT(sg_hist_min(h), n ? v[0] : 0);
    CHECK_EQ_INT(sg_hist_max(h), n ? v[n - 1] : 0);

    unsigned __int128 sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    long double mean = n ? (long double)sum / n : 0;
    long double var = 0;
    for (size_t i = 0; i < n; i++)
        var += ((long double)v[i] - mean) * ((long double)v[i] - mean);
    double std = n ? (double)sqrtl(var / n) : 0;
    CHECK_NEAR(sg_hist_mean(h), (double)mean, fabs((double)mean) * 1e-12);
    CHECK_NEAR(sg_hist_stddev(h), std, std * 1e-9 + 1e-9);

    int bad = 0;
    for (size_t i = 0; i < SG_ARRAY_LEN(pcts_milli); i++) {
        double got = sg_hist_percentile(h, (double)pcts_milli[i] / 1000.0);
        if (n == 0) {
            bad += got != 0.0;
            continue;
        }
        uint64_t want = ref_percentile(v, n, pcts_milli[i]);
        /* Exact below 2048; within 0.1% above (we promise 1/2048). */
        double tol = want < 2048 ? 0.0 : (double)want / 2048.0;
        if (!(fabs(got - (double)want) <= tol)) {
            bad++;
            fprintf(stderr, "%s: p%.3f got %.3f want %" PRIu64 " (rel err %.3g)\n", name,
                    (double)pcts_milli[i] / 1000.0, got, want, fabs(got - (double)want) / (double)want);
        }
    }
    /* Also every rank boundary for a few random p. */
    for (int k = 0; k < 200 && n; k++) {
        uint64_t pm = next_u64() % 100001;
        double got = sg_hist_percentile(h, (double)pm / 1000.0);
        uint64_t want = ref_percentile(v, n, pm);
        double tol = want < 2048 ? 0.0 : (double)want / 2048.0;
        bad += !(fabs(got - (double)want) <= tol);
    }
    CHECK_EQ_INT(bad, 0);
    sg_hist_free(h);
}

static void test_distributions(void)
{
    enum { N = 200000 };
    uint64_t *v = malloc(N * sizeof(*v));
    CHECK(v != NULL);
    if (!v)
        return;

    for (size_t i = 0; i < N; i++) /* uniform up to 1 s */
        v[i] = next_u64() % 1000000000ULL;
    check_against("uniform", v, N, HOUR_NS);

    for (size_t i = 0; i < N; i++) /* exponential, mean 20 ms */
        v[i] = (uint64_t)(-log(next_unit()) * 20e6);
    check_against("exponential", v, N, HOUR_NS);

    for (size_t i = 0; i < N; i++) /* lognormal around 5 ms, heavy tail */
        v[i] = (uint64_t)exp(log(5e6) + 1.5 * next_normal());
    check_against("lognormal", v, N, HOUR_NS);

    for (size_t i = 0; i < N; i++) /* log-uniform over 1 ns .. 1 hour: every power of two */
        v[i] = (uint64_t)exp(next_unit() * log((double)HOUR_NS));
    check_against("huge range", v, N, HOUR_NS);

    for (size_t i = 0; i < N; i++) /* small ints: must be exact */
        v[i] = next_u64() % 2048;
    check_against("small ints", v, N, HOUR_NS);

    for (size_t i = 0; i < N; i++) /* token counts with a max just past the exact range */
        v[i] = 1900 + next_u64() % 400;
    check_against("tokens", v, N, 1u << 24);

    for (size_t i = 0; i < 7; i++)
        v[i] = 123456789;
    check_against("single value", v, 7, HOUR_NS);
    v[0] = 0;
    check_against("one zero", v, 1, HOUR_NS);
    v[0] = HOUR_NS;
    check_against("exactly max", v, 1, HOUR_NS);
    check_against("empty", v, 0, HOUR_NS);

    /* Small counts, where p*n/100 lands exactly on integers: p99 of 100 values is the 99th, not the 100th. */
    for (size_t i = 0; i < 100; i++)
        v[i] = (i + 1) * 1000;
    check_against("1..100", v, 100, HOUR_NS);
    for (size_t i = 0; i < 1000; i++)
        v[i] = i + 1;
    check_against("1..1000", v, 1000, HOUR_NS);
    free(v);
}

static void test_exact_ranks(void)
{
    sg_hist_t *h = sg_hist_new(1000000);
    for (uint64_t i = 1; i <= 100; i++)
        sg_hist_record(h, i);
    CHECK_NEAR(sg_hist_percentile(h, 99), 99, 0);
    CHECK_NEAR(sg_hist_percentile(h, 50), 50, 0);
    CHECK_NEAR(sg_hist_percentile(h, 50.5), 51, 0);
    CHECK_NEAR(sg_hist_percentile(h, 0), 1, 0);
    CHECK_NEAR(sg_hist_percentile(h, 100), 100, 0);
    CHECK_NEAR(sg_hist_mean(h), 50.5, 1e-12);
    CHECK_NEAR(sg_hist_stddev(h), sqrt((100.0 * 100.0 - 1) / 12.0), 1e-9);
    sg_hist_free(h);
}

static void test_merge(void)
{
    sg_hist_t *all = sg_hist_new(HOUR_NS), *part[3];
    for (int i = 0; i < 3; i++)
        part[i] = sg_hist_new(HOUR_NS);
    for (int i = 0; i < 100000; i++) {
        uint64_t x = (uint64_t)exp(log(5e6) + 2.0 * next_normal());
        sg_hist_record(all, x);
        sg_hist_record(part[next_u64() % 3], x);
    }
    sg_hist_record(part[2], HOUR_NS * 2); /* a clamp in one part */
    sg_hist_record(all, HOUR_NS * 2);
    sg_hist_t *merged = sg_hist_new(HOUR_NS);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(sg_hist_merge(merged, part[i]), 0);
    CHECK_EQ_INT(sg_hist_count(merged), sg_hist_count(all));
    CHECK_EQ_INT(sg_hist_clamped(merged), 1);
    CHECK_EQ_INT(sg_hist_min(merged), sg_hist_min(all));
    CHECK_EQ_INT(sg_hist_max(merged), sg_hist_max(all));
    CHECK(sg_hist_mean(merged) == sg_hist_mean(all));
    CHECK(sg_hist_stddev(merged) == sg_hist_stddev(all));
    int diff = 0;
    for (int p = 0; p <= 100000; p += 7)
        diff += sg_hist_percentile(merged, p / 1000.0) != sg_hist_percentile(all, p / 1000.0);
    CHECK_EQ_INT(diff, 0);

    /* Merging an empty one changes nothing, and into an empty one copies. */
    sg_hist_t *empty = sg_hist_new(HOUR_NS);
    CHECK_EQ_INT(sg_hist_merge(merged, empty), 0);
    CHECK_EQ_INT(sg_hist_count(merged), sg_hist_count(all));
    CHECK_EQ_INT(sg_hist_merge(empty, all), 0);
    CHECK_EQ_INT(sg_hist_min(empty), sg_hist_min(all));
    CHECK(sg_hist_percentile(empty, 99.9) == sg_hist_percentile(all, 99.9));

    sg_hist_t *other = sg_hist_new(1000);
    CHECK_EQ_INT(sg_hist_merge(other, all), SG_EINVAL);
    CHECK_EQ_INT(sg_hist_count(other), 0);

    sg_hist_free(other);
    sg_hist_free(empty);
    sg_hist_free(merged);
    sg_hist_free(all);
    for (int i = 0; i < 3; i++)
        sg_hist_free(part[i]);
}

static void test_clamp_reset_record_n(void)
{
    sg_hist_t *h = sg_hist_new(10000);
    CHECK_EQ_INT(sg_hist_max_value(h), 10000);
    sg_hist_record(h, 5);
    sg_hist_record(h, 50000);
    sg_hist_record(h, UINT64_MAX);
    CHECK_EQ_INT(sg_hist_count(h), 3);
    CHECK_EQ_INT(sg_hist_clamped(h), 2);
    CHECK_EQ_INT(sg_hist_max(h), 10000);
    CHECK_NEAR(sg_hist_percentile(h, 100), 10000, 0);
    CHECK_NEAR(sg_hist_percentile(h, 50), 10000, 10000 / 2048.0);
    CHECK_NEAR(sg_hist_mean(h), (5 + 20000) / 3.0, 1e-9);

    sg_hist_reset(h);
    CHECK_EQ_INT(sg_hist_count(h), 0);
    CHECK_EQ_INT(sg_hist_clamped(h), 0);
    CHECK_EQ_INT(sg_hist_min(h), 0);
    CHECK_EQ_INT(sg_hist_max(h), 0);
    CHECK_NEAR(sg_hist_percentile(h, 50), 0, 0);
    CHECK_NEAR(sg_hist_mean(h), 0, 0);
    CHECK_NEAR(sg_hist_stddev(h), 0, 0);

    sg_hist_t *one = sg_hist_new(HOUR_NS), *many = sg_hist_new(HOUR_NS);
    uint64_t vals[] = {7, 3000, 123456, 987654321};
    uint64_t reps[] = {3, 1000, 0, 17};
    for (size_t i = 0; i < SG_ARRAY_LEN(vals); i++) {
        sg_hist_record_n(many, vals[i], reps[i]);
        for (uint64_t k = 0; k < reps[i]; k++)
            sg_hist_record(one, vals[i]);
    }
    CHECK_EQ_INT(sg_hist_count(many), sg_hist_count(one));
    CHECK_EQ_INT(sg_hist_min(many), 7);
    CHECK_EQ_INT(sg_hist_max(many), 987654321);
    CHECK(sg_hist_mean(many) == sg_hist_mean(one));
    CHECK(sg_hist_stddev(many) == sg_hist_stddev(one));
    CHECK(sg_hist_percentile(many, 50) == sg_hist_percentile(one, 50));
    sg_hist_record_n(many, HOUR_NS + 1, 5);
    CHECK_EQ_INT(sg_hist_clamped(many), 5);

    CHECK(sg_hist_new(0) == NULL);
    sg_hist_t *tiny = sg_hist_new(1);
    sg_hist_record(tiny, 1);
    sg_hist_record(tiny, 2);
    CHECK_EQ_INT(sg_hist_max(tiny), 1);
    CHECK_EQ_INT(sg_hist_clamped(tiny), 1);
    sg_hist_t *top = sg_hist_new(UINT64_MAX);
    CHECK(top != NULL);
    sg_hist_record(top, UINT64_MAX);
    CHECK(sg_hist_percentile(top, 50) == (double)UINT64_MAX);
    CHECK_NEAR(sg_hist_mean(top), (double)UINT64_MAX, 0);
    sg_hist_free(top);
    sg_hist_free(tiny);
    sg_hist_free(one);
    sg_hist_free(many);
    sg_hist_free(h);
}

/* The moments stay exact where naive double sums would lose digits: large values, tiny spread. */
static void test_exact_moments(void)
{
    sg_hist_t *h = sg_hist_new(HOUR_NS);
    uint64_t base = 3000000000000ULL; /* 50 minutes in ns */
    for (int i = 0; i < 1000; i++)
        sg_hist_record(h, base + (uint64_t)(i % 2)); /* std exactly 0.5 */
    CHECK_NEAR(sg_hist_mean(h), (double)base + 0.5, 0);
    CHECK_NEAR(sg_hist_stddev(h), 0.5, 1e-9);
    sg_hist_free(h);
}

static void test_size(void)
{
    sg_hist_t *h = sg_hist_new(HOUR_NS);
    size_t b = sg_hist_bytes(h);
    printf("one histogram (max 1 hour in ns): %zu bytes\n", b);
    CHECK(b < 300 * 1024);
    sg_hist_free(h);
}

/* Values above a threshold, as the search's futility rule counts them: exact below 2048, to the bucket above. */
static void test_count_above(void)
{
    sg_hist_t *h = sg_hist_new(HOUR_NS);
    CHECK_EQ_INT(sg_hist_count_above(h, 5), 0);
    for (uint64_t v = 1; v <= 1000; v++)
        sg_hist_record(h, v);
    for (uint64_t i = 0; i < 10; i++)
        sg_hist_record(h, 60000000 + i * 1000000); /* 60..69 ms */
    CHECK_EQ_INT(sg_hist_count_above(h, 0), 1010);
    CHECK_EQ_INT(sg_hist_count_above(h, 990), 20);
    CHECK_EQ_INT(sg_hist_count_above(h, 1000), 10);
    CHECK_EQ_INT(sg_hist_count_above(h, 59000000), 10);
    CHECK_EQ_INT(sg_hist_count_above(h, 64500000), 5);
    CHECK_EQ_INT(sg_hist_count_above(h, 69000000), 0);
    CHECK_EQ_INT(sg_hist_count_above(h, UINT64_MAX), 0);
    sg_hist_free(h);
}

int main(void)
{
    test_distributions();
    test_count_above();
    test_exact_ranks();
    test_merge();
    test_clamp_reset_record_n();
    test_exact_moments();
    test_size();
    return test_finish("test_hist");
}
