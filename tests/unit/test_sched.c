/* Arrival schedules: Poisson gaps are exponential (KS test, mean, CV), the superposition of the workers'
 * streams is Poisson at the total rate, constant arrivals interleave into one evenly spaced stream. */
#include "sg_sched.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Kolmogorov-Smirnov statistic of n gaps (ns) against the exponential with the given rate (per second). */
static double ks_exp(int64_t *gaps, size_t n, double rate)
{
    qsort(gaps, n, sizeof(*gaps), cmp_i64);
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double cdf = 1.0 - exp(-rate * (double)gaps[i] / 1e9);
        double hi = (double)(i + 1) / (double)n - cdf, lo = cdf - (double)i / (double)n;
        if (hi > d)
            d = hi;
        if (lo > d)
            d = lo;
    }
    return d;
}

static void test_poisson_one_worker(void)
{
    enum { N = 100000 };
    int64_t *gaps = malloc(N * sizeof(*gaps));
    sg_sched_t s;
    sg_sched_init(&s, SG_SCHED_POISSON, 1000.0, 0, 1, 42, 0);
    int64_t prev = 0;
    double sum = 0, sum2 = 0;
    bool monotone = true;
    for (size_t i = 0; i < N; i++) {
        int64_t t = sg_sched_next(&s);
        monotone &= t >= prev;
        gaps[i] = t - prev;
        sum += (double)gaps[i];
        sum2 += (double)gaps[i] * (double)gaps[i];
        prev = t;
    }
    CHECK(monotone);
    double mean = sum / N, var = sum2 / N - mean * mean;
    CHECK_NEAR(mean, 1e6, 1e6 * 0.01);       /* 1 ms mean gap at 1000/s */
    CHECK_NEAR(sqrt(var) / mean, 1.0, 0.02); /* exponential: coefficient of variation 1 */
    double d = ks_exp(gaps, N, 1000.0);
    CHECK(d < 1.628 / sqrt((double)N)); /* alpha = 0.01 */
    /* and a KS test that must fail: the same gaps against the wrong rate */
    CHECK(ks_exp(gaps, N, 1100.0) > 1.628 / sqrt((double)N));
    free(gaps);
}

static void test_poisson_superposition(void)
{
    enum { W = 4, PER = 25000 };
    int64_t *all = malloc(W * PER * sizeof(*all));
    for (unsigned w = 0; w < W; w++) {
        sg_sched_t s;
        sg_sched_init(&s, SG_SCHED_POISSON, 2000.0, w, W, 7, 1000);
        for (size_t i = 0; i < PER; i++)
            all[w * PER + i] = sg_sched_next(&s);
    }
    /* only the window every stream covers */
    int64_t horizon = INT64_MAX;
    for (unsigned w = 0; w < W; w++)
        if (all[w * PER + PER - 1] < horizon)
            horizon = all[w * PER + PER - 1];
    qsort(all, W * PER, sizeof(*all), cmp_i64);
    size_t n = 0;
    while (n < W * PER && all[n] <= horizon)
        n++;
    int64_t *gaps = malloc(n * sizeof(*gaps));
    for (size_t i = 1; i < n; i++)
        gaps[i - 1] = all[i] - all[i - 1];
    double d = ks_exp(gaps, n - 1, 2000.0);
    CHECK(d < 1.628 / sqrt((double)(n - 1)));
    double rate = (double)(n - 1) / ((double)(all[n - 1] - all[0]) / 1e9);
    CHECK_NEAR(rate, 2000.0, 2000.0 * 0.02);
    free(gaps);
    free(all);
}

static void test_constant_interleaves(void)
{
    enum { W = 3, PER = 1000 };
    int64_t all[W * PER];
    for (unsigned w = 0; w < W; w++) {
        sg_sched_t s;
        sg_sched_init(&s, SG_SCHED_CONSTANT, 300.0, w, W, 0, 5000);
        for (size_t i = 0; i < PER; i++)
            all[w * PER + i] = sg_sched_next(&s);
    }
    qsort(all, W * PER, sizeof(*all), cmp_i64);
    CHECK_EQ_INT(all[0], 5000);
    int64_t worst = 0;
    for (size_t i = 0; i < W * PER; i++) {
        int64_t want = 5000 + llround((double)i * 1e9 / 300.0);
        int64_t err = llabs(all[i] - want);
        if (err > worst)
            worst = err;
    }
    CHECK(worst <= 1); /* no drift after 3000 arrivals */
}

static void test_deterministic(void)
{
    sg_sched_t a, b, c;
    sg_sched_init(&a, SG_SCHED_POISSON, 50.0, 1, 2, 99, 0);
    sg_sched_init(&b, SG_SCHED_POISSON, 50.0, 1, 2, 99, 0);
    sg_sched_init(&c, SG_SCHED_POISSON, 50.0, 0, 2, 99, 0);
    bool same = true, differ = false;
    for (int i = 0; i < 100; i++) {
        int64_t x = sg_sched_next(&a), y = sg_sched_next(&b), z = sg_sched_next(&c);
        same &= x == y;
        differ |= x != z;
    }
    CHECK(same);
    CHECK(differ);
}

/* Fixed schedule: entry i to worker i % W at start + t_i / speedup, each once, then INT64_MAX. */
static void test_fixed(void)
{
    int64_t times[10];
    for (int i = 0; i < 10; i++)
        times[i] = (int64_t)i * i * 1000000; /* uneven gaps, two equal at the start */
    times[1] = 0;
    const unsigned W = 3;
    int seen[10] = {0};
    bool ok = true;
    for (unsigned w = 0; w < W; w++) {
        sg_sched_t s;
        sg_sched_init_fixed(&s, times, 10, 2.0, w, W, 5000);
        int64_t prev = 0;
        for (unsigned k = 0;; k++) {
            int64_t t = sg_sched_next(&s);
            if (t == INT64_MAX)
                break;
            unsigned i = w + k * W;
            ok &= i < 10 && t == 5000 + times[i] / 2 && t >= prev;
            if (i < 10)
                seen[i]++;
            prev = t;
        }
        ok &= sg_sched_next(&s) == INT64_MAX; /* stays exhausted */
    }
    CHECK(ok);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(seen[i], 1);
    /* a speedup of 1 keeps the trace's times; more workers than entries leave some with none */
    sg_sched_t s;
    sg_sched_init_fixed(&s, times, 2, 1.0, 5, 8, 0);
    CHECK(sg_sched_next(&s) == INT64_MAX);
    sg_sched_init_fixed(&s, times + 2, 1, 1.0, 0, 8, 100);
    CHECK_EQ_INT(sg_sched_next(&s), 100 + times[2]);
}

/*
 * Gamma arrivals: for shapes 0.25, 1 and 4 the gaps have the mean 1/R and a coefficient of variation of 1/sqrt(k),
 * and their skewness is gamma's 2/sqrt(k) (so the shape is right, not only two moments); shape 1 passes the
 * exponential KS test. Four workers together produce exactly the one-worker sequence: the aggregate is the gamma
 * process, not a superposition of four.
 */
static void test_gamma(void)
{
    enum { N = 200000 };
    const double shapes[] = {0.25, 1, 4};
    int64_t *gaps = malloc(N * sizeof(*gaps));
    for (size_t si = 0; si < 3; si++) {
        double k = shapes[si];
        sg_sched_t s;
        sg_sched_init_gamma(&s, 500.0, k, 0, 1, 7, 0);
        int64_t prev = 0;
        double sum = 0, sum2 = 0, sum3 = 0;
        bool monotone = true;
        for (size_t i = 0; i < N; i++) {
            int64_t t = sg_sched_next(&s);
            monotone &= t >= prev;
            gaps[i] = t - prev;
            prev = t;
            sum += (double)gaps[i];
        }
        double mean = sum / N;
        for (size_t i = 0; i < N; i++) {
            double d = (double)gaps[i] - mean;
            sum2 += d * d;
            sum3 += d * d * d;
        }
        double sd = sqrt(sum2 / N), skew = sum3 / N / (sd * sd * sd);
        CHECK(monotone);
        CHECK_NEAR(mean, 2e6, 2e6 * 0.02); /* 2 ms at 500/s */
        CHECK_NEAR(sd / mean, 1 / sqrt(k), 0.03 / sqrt(k));
        CHECK_NEAR(skew, 2 / sqrt(k), 0.15 * 2 / sqrt(k));
        if (k == 1)
            CHECK(ks_exp(gaps, N, 500.0) < 1.628 / sqrt((double)N));
    }
    free(gaps);

    /* four workers = the one-worker sequence, interleaved */
    enum { W = 4, PER = 5000 };
    sg_sched_t one, w[W];
    sg_sched_init_gamma(&one, 1000.0, 0.5, 0, 1, 99, 123);
    for (unsigned i = 0; i < W; i++)
        sg_sched_init_gamma(&w[i], 1000.0, 0.5, i, W, 99, 123);
    bool same = true;
    for (size_t j = 0; j < (size_t)W * PER; j++)
        same &= sg_sched_next(&one) == sg_sched_next(&w[j % W]);
    CHECK(same);
    /* and another seed gives another sequence */
    sg_sched_t a, b;
    sg_sched_init_gamma(&a, 1000.0, 0.5, 0, 1, 1, 0);
    sg_sched_init_gamma(&b, 1000.0, 0.5, 0, 1, 2, 0);
    CHECK(sg_sched_next(&a) != sg_sched_next(&b));
}

/*
 * Ramps: arrivals in time bins against the cumulative intensity. Given the N arrivals in [0, T], a Poisson process's
 * bin counts are binomial(N, p) with p = (Lambda(b) - Lambda(a)) / Lambda(T); each bin must be within 5 sigma (the
 * bound is printed with the worst bin). Returns the worst bin's distance in sigmas, so a wrong shape can be shown
 * to fail the same check.
 */
static double ramp_bins(sg_sched_t *s, const sg_sched_t *model, double T, int bins, const char *what, bool total)
{
    int64_t tn = (int64_t)llround(T * 1e9);
    uint64_t *count = calloc((size_t)bins, sizeof *count), n = 0;
    for (;;) {
        int64_t t = sg_sched_next(s);
        if (t >= tn)
            break;
        count[(size_t)(t * bins / tn)]++;
        n++;
    }
    double worst = 0, lam_t = sg_ramp_cumulative(model, T);
    int worst_i = 0;
    for (int i = 0; i < bins; i++) {
        double a = T * i / bins, b = T * (i + 1) / bins;
        double p = (sg_ramp_cumulative(model, b) - sg_ramp_cumulative(model, a)) / lam_t;
        double mu = (double)n * p, sd = sqrt((double)n * p * (1 - p));
        double z = fabs((double)count[i] - mu) / (sd > 1 ? sd : 1);
        if (z > worst) {
            worst = z;
            worst_i = i;
        }
    }
    printf("%s: %llu arrivals in %.3g s (Lambda %.1f); worst of %d bins: %.2f sigma (bin %d), bound 5\n", what,
           (unsigned long long)n, T, lam_t, bins, worst, worst_i);
    if (total)
        CHECK_NEAR((double)n, lam_t, 5 * sqrt(lam_t)); /* the total: Poisson(Lambda(T)) */
    free(count);
    return worst;
}

static void test_ramp(void)
{
    sg_sched_t s, m;
    /* Lambda and its inverse agree, inside and past the ramp, for both shapes (and a ramp down) */
    const sg_ramp_t shapes[] = {SG_RAMP_LINEAR, SG_RAMP_EXPONENTIAL};
    const double r0s[] = {0, 5, 400};
    for (int si = 0; si < 2; si++)
        for (int ri = 0; ri < 3; ri++) {
            if (shapes[si] == SG_RAMP_EXPONENTIAL && r0s[ri] == 0)
                continue;
            sg_sched_init_ramp(&s, SG_SCHED_POISSON, 1, shapes[si], r0s[ri], 200, 4, 0, 1, 1, 0);
            for (double t = 0.01; t < 6; t += 0.37)
                CHECK_NEAR(sg_ramp_inverse(&s, sg_ramp_cumulative(&s, t)), t, 1e-9);
        }
    /* closed forms: linear 0 -> 200 over 4 s holds 400 expected arrivals, exponential 10 -> 1000 holds
     * 4 x 990 / ln(100) */
    sg_sched_init_ramp(&s, SG_SCHED_POISSON, 1, SG_RAMP_LINEAR, 0, 200, 4, 0, 1, 1, 0);
    CHECK_NEAR(sg_ramp_cumulative(&s, 4), 400, 1e-9);
    CHECK_NEAR(sg_ramp_cumulative(&s, 5), 600, 1e-9);
    CHECK_NEAR(sg_ramp_duration_for(SG_RAMP_LINEAR, 0, 200, 400), 4, 1e-12);
    sg_sched_init_ramp(&s, SG_SCHED_POISSON, 1, SG_RAMP_EXPONENTIAL, 10, 1000, 4, 0, 1, 1, 0);
    CHECK_NEAR(sg_ramp_cumulative(&s, 4), 4 * 990 / log(100), 1e-9);
    CHECK_NEAR(sg_ramp_duration_for(SG_RAMP_EXPONENTIAL, 10, 1000, 4 * 990 / log(100)), 4, 1e-12);

    /* Poisson counts in bins follow Lambda: linear 20 -> 2000/s over 5 s then 1 s flat, three workers merged */
    enum { W = 3 };
    sg_sched_init_ramp(&m, SG_SCHED_POISSON, 1, SG_RAMP_LINEAR, 20, 2000, 5, 0, 1, 1, 0);
    sg_sched_t w[W];
    int64_t tn = 6000000000LL;
    size_t cap = 16384, n = 0;
    int64_t *all = malloc(cap * sizeof *all);
    for (unsigned i = 0; i < W; i++) {
        sg_sched_init_ramp(&w[i], SG_SCHED_POISSON, 1, SG_RAMP_LINEAR, 20, 2000, 5, i, W, 11, 0);
        for (int64_t t; (t = sg_sched_next(&w[i])) < tn;) {
            if (n == cap)
                all = realloc(all, (cap *= 2) * sizeof *all);
            all[n++] = t;
        }
    }
    qsort(all, n, sizeof *all, cmp_i64);
    sg_sched_t fixed;
    sg_sched_init_fixed(&fixed, all, n, 1, 0, 1, 0);
    CHECK(ramp_bins(&fixed, &m, 6, 24, "linear ramp, 3 workers", true) < 5);
    /* the same arrivals against an exponential ramp between the same rates are far off (the check can fail) */
    sg_sched_t wrong;
    sg_sched_init_ramp(&wrong, SG_SCHED_POISSON, 1, SG_RAMP_EXPONENTIAL, 20, 2000, 5, 0, 1, 1, 0);
    sg_sched_init_fixed(&fixed, all, n, 1, 0, 1, 0);
    CHECK(ramp_bins(&fixed, &wrong, 5, 20, "the linear arrivals against an exponential model (must fail)", false) > 8);
    free(all);

    /* exponential 10 -> 1000/s over 4 s, and gamma (burstiness 4) on the same ramp */
    sg_sched_init_ramp(&s, SG_SCHED_POISSON, 1, SG_RAMP_EXPONENTIAL, 10, 1000, 4, 0, 1, 5, 0);
    sg_sched_init_ramp(&m, SG_SCHED_POISSON, 1, SG_RAMP_EXPONENTIAL, 10, 1000, 4, 0, 1, 5, 0);
    CHECK(ramp_bins(&s, &m, 4, 16, "exponential ramp", true) < 5);
    sg_sched_init_ramp(&s, SG_SCHED_GAMMA, 4, SG_RAMP_EXPONENTIAL, 10, 1000, 4, 0, 1, 5, 0);
    CHECK(ramp_bins(&s, &m, 4, 16, "exponential ramp, gamma k=4", true) < 5);

    /* constant: arrival k at exactly Lambda^-1(k), the workers interleaving */
    sg_sched_init_ramp(&m, SG_SCHED_CONSTANT, 1, SG_RAMP_LINEAR, 0, 100, 2, 0, 1, 0, 1000);
    for (unsigned i = 0; i < W; i++)
        sg_sched_init_ramp(&w[i], SG_SCHED_CONSTANT, 1, SG_RAMP_LINEAR, 0, 100, 2, i, W, 0, 1000);
    bool exact = true;
    for (int k = 0; k < 300; k++)
        exact &= sg_sched_next(&w[k % W]) == 1000 + (int64_t)llround(sg_ramp_inverse(&m, k) * 1e9);
    CHECK(exact);
    /* 100 arrivals in the 2 s ramp (Lambda(2) = 100), the 100th at 2 s, then one every 10 ms */
    CHECK_NEAR(sg_ramp_inverse(&m, 100), 2, 1e-12);
    CHECK_NEAR(sg_ramp_inverse(&m, 101), 2.01, 1e-12);
    CHECK_NEAR(sg_ramp_inverse(&m, 25), 1, 1e-12); /* Lambda(t) = 25 t^2 */
}

int main(void)
{
    test_ramp();
    test_gamma();
    test_fixed();
    test_poisson_one_worker();
    test_poisson_superposition();
    test_constant_interleaves();
    test_deterministic();
    return test_finish("test_sched");
}
