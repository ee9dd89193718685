/*
 * A multi-run's statistics (sg_confidence.h): the Student's t quantile against published table values and the
 * closed forms for 1 and 2 degrees of freedom, its round trip through the CDF, the incomplete beta function's own
 * closed forms, and the interval arithmetic (mean, sample std, se, cv, mean -/+ t se) on values worked by hand,
 * including the degenerate cases (one value, non-finite values, a zero mean) and the aggregate's keys.
 */
#include "sg_confidence.h"
#include "test.h"

#include <stdlib.h>

/* |a - b| <= rel * |b| */
#define CHECK_REL(a, b, rel) CHECK_NEAR((a), (b), (rel)*fabs((double)(b)))

static void test_table_values(void)
{
    /* Student's t tables (two-sided 95% and 99%, one-sided 95% and 99.9%), 4 decimals as printed */
    static const struct {
        double p, df, t;
    } table[] = {
        {0.975, 1, 12.7062},  {0.975, 2, 4.3027},  {0.975, 3, 3.1824},    {0.975, 4, 2.7764},  {0.975, 5, 2.5706},
        {0.975, 9, 2.2622},   {0.975, 10, 2.2281}, {0.975, 20, 2.0860},   {0.975, 29, 2.0452}, {0.975, 30, 2.0423},
        {0.975, 120, 1.9799}, {0.995, 1, 63.6567}, {0.995, 4, 4.6041},    {0.995, 29, 2.7564}, {0.95, 10, 1.8125},
        {0.95, 1, 6.3138},    {0.999, 5, 5.8934},  {0.9995, 1, 636.6192}, {0.9, 3, 1.6377},    {0.99, 15, 2.6025},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        double t = sg_t_quantile(table[i].p, table[i].df);
        if (fabs(t - table[i].t) > 5e-5 * (table[i].t > 100 ? 10 : 1))
            fprintf(stderr, "t(%g, %g) = %.6f, table %.4f\n", table[i].p, table[i].df, t, table[i].t);
        CHECK_NEAR(t, table[i].t, 5e-5 * (table[i].t > 100 ? 10 : 1));
        /* the lower tail is the mirror image */
        CHECK_REL(sg_t_quantile(1 - table[i].p, table[i].df), -t, 1e-12);
    }
    /* the brief's four, to their printed digits */
    CHECK_NEAR(sg_t_quantile(0.975, 1), 12.7062, 5e-5);
    CHECK_NEAR(sg_t_quantile(0.975, 4), 2.7764, 5e-5);
    CHECK_NEAR(sg_t_quantile(0.975, 9), 2.2622, 5e-5);
    CHECK_NEAR(sg_t_quantile(0.995, 29), 2.7564, 5e-5);
}

static void test_closed_forms(void)
{
    /* df = 1 is Cauchy: t = tan(pi (p - 1/2)); df = 2: t = (2p - 1) / sqrt(2 p (1 - p)) */
    static const double ps[] = {0.001, 0.01, 0.1, 0.3, 0.5, 0.6, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 0.999999};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        double p = ps[i];
        double c1 = tan(M_PI * (p - 0.5));
        double c2 = (2 * p - 1) / sqrt(2 * p * (1 - p));
        CHECK_NEAR(sg_t_quantile(p, 1), c1, 1e-10 * (1 + fabs(c1)));
        CHECK_NEAR(sg_t_quantile(p, 2), c2, 1e-10 * (1 + fabs(c2)));
        /* the CDFs too: Cauchy's 1/2 + atan(x)/pi, and x / (2 sqrt(2 + x^2)) + 1/2 */
        double x = p * 20 - 10;
        CHECK_NEAR(sg_t_cdf(x, 1), 0.5 + atan(x) / M_PI, 1e-13);
        CHECK_NEAR(sg_t_cdf(x, 2), 0.5 + x / (2 * sqrt(2 + x * x)), 1e-13);
    }
    /* many degrees of freedom: the normal quantile z plus the Cornish-Fisher terms (z^3 + z) / 4df + ... */
    CHECK_NEAR(sg_t_quantile(0.975, 1e5), 1.9599877075346095, 1e-9);
    CHECK_NEAR(sg_t_quantile(0.995, 1e5), 2.575878469908375, 1e-9);
}

static void test_round_trip(void)
{
    static const double dfs[] = {1, 1.5, 2, 3, 7, 29, 100, 1000};
    static const double ps[] = {1e-9, 1e-4, 0.02, 0.25, 0.5, 0.7, 0.975, 0.9999, 1 - 1e-9};
    for (size_t d = 0; d < sizeof dfs / sizeof dfs[0]; d++)
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            double x = sg_t_quantile(ps[i], dfs[d]);
            double back = sg_t_cdf(x, dfs[d]);
            /* relative in the tail that is small */
            double tail = ps[i] < 0.5 ? ps[i] : 1 - ps[i];
            double got = ps[i] < 0.5 ? back : 1 - back;
            CHECK_NEAR(got, tail, 1e-9 * tail + 1e-15);
        }
    /* the quantile grows with p and falls with df */
    CHECK(sg_t_quantile(0.99, 5) > sg_t_quantile(0.95, 5));
    CHECK(sg_t_quantile(0.975, 5) > sg_t_quantile(0.975, 6));
    /* outside the domain */
    CHECK(isnan(sg_t_quantile(0, 3)));
    CHECK(isnan(sg_t_quantile(1, 3)));
    CHECK(isnan(sg_t_quantile(0.9, 0)));
    CHECK(sg_t_quantile(0.5, 4) == 0);
}

static void test_betainc(void)
{
    /* I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; I_x(1/2, 1/2) = 2 asin(sqrt x) / pi; symmetry */
    for (double x = 0.05; x < 1; x += 0.1) {
        CHECK_NEAR(sg_betai(3.5, 1, x), pow(x, 3.5), 1e-14);
        CHECK_NEAR(sg_betai(1, 4.25, x), 1 - pow(1 - x, 4.25), 1e-14);
        CHECK_NEAR(sg_betai(0.5, 0.5, x), 2 * asin(sqrt(x)) / M_PI, 1e-13);
        CHECK_NEAR(sg_betai(2.5, 7, x) + sg_betai(7, 2.5, 1 - x), 1, 1e-13);
    }
    CHECK(sg_betai(2, 3, 0) == 0 && sg_betai(2, 3, 1) == 1);
    CHECK(isnan(sg_betai(0, 3, 0.5)) && isnan(sg_betai(2, 3, 1.5)));
}

static void test_interval(void)
{
    /* 10, 12, 14, 16, 18: mean 14, sample std sqrt(10), se sqrt(2), t(0.975, 4) */
    double v[] = {10, 12, 14, 16, 18};
    sg_ci_t c;
    sg_ci_compute(v, 5, 0.95, &c);
    double t = sg_t_quantile(0.975, 4);
    CHECK_EQ_INT(c.n, 5);
    CHECK_NEAR(c.mean, 14, 1e-12);
    CHECK_NEAR(c.std, sqrt(10), 1e-12);
    CHECK_NEAR(c.se, sqrt(2), 1e-12);
    CHECK_NEAR(c.cv, sqrt(10) / 14, 1e-12);
    CHECK_NEAR(c.min, 10, 0);
    CHECK_NEAR(c.max, 18, 0);
    CHECK_NEAR(c.t_critical, t, 0);
    CHECK_NEAR(c.ci_low, 14 - t * sqrt(2), 1e-12);
    CHECK_NEAR(c.ci_high, 14 + t * sqrt(2), 1e-12);
    CHECK_NEAR(c.ci_high - c.ci_low, 2 * 2.7764451 * sqrt(2), 1e-6);

    /* the level moves the interval: 99% is wider, t(0.995, 4) */
    sg_ci_t c99;
    sg_ci_compute(v, 5, 0.99, &c99);
    CHECK_NEAR(c99.t_critical, 4.6041, 5e-5);
    CHECK(c99.ci_high - c99.ci_low > c.ci_high - c.ci_low);

    /* non-finite values are skipped: the same as the three finite ones */
    double w[] = {NAN, 1, INFINITY, 2, 6};
    sg_ci_compute(w, 5, 0.95, &c);
    CHECK_EQ_INT(c.n, 3);
    CHECK_NEAR(c.mean, 3, 1e-12);
    CHECK_NEAR(c.std, sqrt(7), 1e-12); /* (4 + 1 + 9) / 2 */
    CHECK_NEAR(c.ci_high, 3 + 4.30265273 * sqrt(7.0 / 3), 1e-7);

    /* one value: the point estimate, no interval */
    double one[] = {42};
    sg_ci_compute(one, 1, 0.95, &c);
    CHECK(c.n == 1 && c.mean == 42 && c.std == 0 && c.ci_low == 42 && c.ci_high == 42 && isnan(c.t_critical));

    /* a zero mean has no CV; none finite has nothing */
    double z[] = {-1, 1};
    sg_ci_compute(z, 2, 0.95, &c);
    CHECK(c.mean == 0 && isnan(c.cv) && c.ci_low < 0 && c.ci_high > 0);
    double none[] = {NAN, NAN};
    sg_ci_compute(none, 2, 0.95, &c);
    CHECK(c.n == 0 && isnan(c.mean) && isnan(c.ci_low));

    /* identical runs: zero width */
    double same[] = {5, 5, 5};
    sg_ci_compute(same, 3, 0.95, &c);
    CHECK(c.std == 0 && c.ci_low == 5 && c.ci_high == 5 && c.cv == 0);
}

static void test_metrics(void)
{
    /* three summaries: every numeric stat of an object with a unit is aggregated under <metric>_<stat> */
    json_t *s[3];
    double ttft[] = {10, 12, 17};
    for (int i = 0; i < 3; i++) {
        s[i] = json_pack("{s:{s:s,s:f,s:f,s:i},s:{s:s,s:f},s:s,s:{s:f}}", "time_to_first_token", "unit", "ms", "avg",
                         ttft[i], "p99", ttft[i] * 2, "count", 100, "request_throughput", "unit", "requests/sec", "avg",
                         100.0 + i, "io_backend", "epoll", "no_unit", "avg", 1.0);
    }
    json_object_del(s[2], "request_throughput"); /* a metric one run lacks: aggregated over the others */
    json_t *m = sg_ci_metrics(s, 3, 0.95);
    CHECK(m != NULL);
    json_t *a = json_object_get(m, "time_to_first_token_avg");
    CHECK(a != NULL);
    CHECK_NEAR(json_real_value(json_object_get(a, "mean")), 13, 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(a, "std")), sqrt(13), 1e-12); /* (9 + 1 + 16) / 2 */
    double t = sg_t_quantile(0.975, 2);
    CHECK_NEAR(json_real_value(json_object_get(a, "ci_low")), 13 - t * sqrt(13.0 / 3), 1e-12);
    CHECK_NEAR(json_real_value(json_object_get(a, "t_critical")), 4.30265273, 1e-8);
    CHECK(strcmp(json_string_value(json_object_get(a, "unit")), "ms") == 0);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(m, "time_to_first_token_p99"), "mean")), 26, 1e-12);
    CHECK(json_object_get(m, "time_to_first_token_count") == NULL); /* a count is not a statistic */
    json_t *rt = json_object_get(m, "request_throughput_avg");
    CHECK(rt && json_integer_value(json_object_get(rt, "n")) == 2);
    CHECK_NEAR(json_real_value(json_object_get(rt, "mean")), 100.5, 1e-12);
    CHECK(json_object_get(m, "no_unit_avg") == NULL);
    CHECK(json_object_size(m) == 3);
    /* one run: the figures, with null for what one run cannot say */
    json_t *m1 = sg_ci_metrics(s, 1, 0.95);
    json_t *a1 = json_object_get(m1, "time_to_first_token_avg");
    CHECK(json_is_null(json_object_get(a1, "t_critical")) && json_real_value(json_object_get(a1, "ci_low")) == 10);
    json_decref(m1);
    json_decref(m);
    for (int i = 0; i < 3; i++)
        json_decref(s[i]);
}

int main(void)
{
    test_table_values();
    test_closed_forms();
    test_round_trip();
    test_betainc();
    test_interval();
    test_metrics();
    return test_finish("test_confidence");
}
