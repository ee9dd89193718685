/*
 * sg_stats.h against exact values: binomial sums and order-statistic ranks computed with exact rational
 * arithmetic (Python's fractions and math.comb), Clopper-Pearson bounds from the exact binomial tails, and the
 * t quantiles of the standard tables.
 */
#include "sg_stats.h"
#include "test.h"

static void ranks_are(uint64_t n, double p, double level, uint64_t lo, uint64_t hi, int line)
{
    uint64_t l, u;
    sg_quantile_ranks(n, p, level, &l, &u);
    test_checks++;
    if (l != lo || u != hi) {
        test_failures++;
        fprintf(stderr, "test_stats.c:%d: ranks of p=%g among %llu at %g: got %llu..%llu, want %llu..%llu\n", line, p,
                (unsigned long long)n, level, (unsigned long long)l, (unsigned long long)u, (unsigned long long)lo,
                (unsigned long long)hi);
    }
}

int main(void)
{
    /* binomial sums: exact values to 1e-12 */
    CHECK_NEAR(sg_binom_cdf(5, 20, 0.3), 0.4163708294474814, 1e-12);
    CHECK_NEAR(sg_binom_cdf(985, 1000, 0.99), 0.08241231951608875, 1e-12);
    CHECK_NEAR(sg_binom_cdf(-1, 10, 0.5), 0, 0);
    CHECK_NEAR(sg_binom_cdf(10, 10, 0.5), 1, 0);
    CHECK_NEAR(sg_binom_cdf(149, 150, 0.99), 1 - pow(0.99, 150), 1e-12);

    /* the ranks bounding a quantile at 95%: n + 1 means no upper bound */
    ranks_are(500, 0.99, 0.95, 490, 500, __LINE__);
    ranks_are(1000, 0.5, 0.95, 469, 532, __LINE__);
    ranks_are(366, 0.99, 0.95, 358, 367, __LINE__);
    ranks_are(367, 0.99, 0.95, 359, 368, __LINE__);
    ranks_are(150, 0.99, 0.95, 146, 151, __LINE__);
    ranks_are(2000, 0.95, 0.95, 1880, 1920, __LINE__);
    ranks_are(40, 0.9, 0.95, 32, 40, __LINE__);
    ranks_are(1000, 0.999, 0.99, 996, 1001, __LINE__);
    /* the largest value bounds p99 from 368 values on (ln 0.025 / ln 0.99 = 367.04), p99.9 from 3,688 */
    CHECK_EQ_INT(sg_quantile_min_n(0.99, 0.95), 368);
    CHECK_EQ_INT(sg_quantile_min_n(0.999, 0.95), 3688);
    CHECK_EQ_INT(sg_quantile_min_n(0.99, 0.99), 528);
    uint64_t l, u;
    sg_quantile_ranks(368, 0.99, 0.95, &l, &u);
    CHECK(u <= 368);
    /* a large sample: the interval is about n p -+ 1.96 sqrt(n p (1-p)) and holds 95% */
    sg_quantile_ranks(1000000, 0.99, 0.95, &l, &u);
    CHECK(l > 989790 && l < 989810 && u > 990190 && u < 990210);
    CHECK(sg_binom_cdf((int64_t)l - 1, 1000000, 0.99) <= 0.025 && sg_binom_cdf((int64_t)l, 1000000, 0.99) > 0.025);
    CHECK(sg_binom_cdf((int64_t)u - 1, 1000000, 0.99) >= 0.975 && sg_binom_cdf((int64_t)u - 2, 1000000, 0.99) < 0.975);

    /* Clopper-Pearson, against bisection on the exact binomial tails */
    double lo, hi;
    sg_proportion_interval(3, 100, 0.95, &lo, &hi);
    CHECK_NEAR(lo, 0.006229971538306392, 1e-9);
    CHECK_NEAR(hi, 0.08517605297428002, 1e-9);
    sg_proportion_interval(0, 50, 0.95, &lo, &hi);
    CHECK_NEAR(lo, 0, 0);
    CHECK_NEAR(hi, 0.07112173646419764, 1e-9);
    sg_proportion_interval(12, 40, 0.95, &lo, &hi);
    CHECK_NEAR(lo, 0.16562720439323558, 1e-9);
    CHECK_NEAR(hi, 0.4653162852541234, 1e-9);

    /* Student's t */
    CHECK_NEAR(sg_t_quantile(0.975, 1), 12.7062047, 1e-6);
    CHECK_NEAR(sg_t_quantile(0.975, 4), 2.7764451, 1e-6);
    CHECK_NEAR(sg_t_quantile(0.975, 9), 2.2621572, 1e-6);
    CHECK_NEAR(sg_t_quantile(0.995, 29), 2.7563859, 1e-6);
    CHECK_NEAR(sg_t_quantile(0.025, 9), -2.2621572, 1e-6);
    CHECK_NEAR(sg_t_quantile(0.975, 1e6), 1.959966, 1e-5);
    return test_finish("test_stats");
}
